/* cudnn.cu - the convolutions of a generated program through cuDNN 9's
 * graph (backend) API (emit/lib.c): per convolution one execution plan,
 * built when the context is created from the heuristics' engines (the
 * first that finalizes, is deterministic, sums in f32, for
 * --precision=fp32 uses no tensor cores, and asks for at most
 * EIN_CUDNN_WORKSPACE_LIMIT bytes of workspace; the engine the tuning
 * database chose for it, where it has one, first).  A forward
 * convolution with an epilogue of pointwise nodes (the plan's,
 * ein_pw_spec) is first planned as one graph, the convolution writing a
 * virtual tensor that the nodes read; where no engine takes that graph
 * the convolution is planned alone and the generated file runs the
 * epilogue's pass after it, with a note.  One cuDNN cannot plan at all
 * runs as its generated kernel instead, and so does every convolution
 * when cudnnCreate fails.  Pasted after api_cuda.cu when the program
 * calls cuDNN; the generated file describes its convolutions in a table
 * ein_convs[] of ein_conv_spec (cudnn_types.h), calls ein_dnn_create and
 * ein_dnn_destroy, and runs each with ein_conv_ok and ein_conv_run. */
#include <float.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cudnn.h>
#include "model.h" /* EMBED-SKIP */
#include "api_cuda.cu" /* EMBED-SKIP */

/* The most workspace one cuDNN convolution may ask for, in bytes: an
   engine configuration that wants more is passed over for the next (build
   with -DEIN_CUDNN_WORKSPACE_LIMIT=BYTES for another limit). */
#ifndef EIN_CUDNN_WORKSPACE_LIMIT
#define EIN_CUDNN_WORKSPACE_LIMIT ((int64_t)1 << 30)
#endif

/* cuDNN calls go through EIN_DNN: a failure returns MODEL_ECUDA with the
   call and cuDNN's message in ctx->err. */
#define EIN_DNN(call)                                                      \
    do {                                                                   \
        cudnnStatus_t ein_d_ = (call);                                     \
        if (ein_d_ != CUDNN_STATUS_SUCCESS)                                \
            return ein_fail(ctx, MODEL_ECUDA, "%s failed: %s", #call,         \
                            cudnnGetErrorString(ein_d_));                  \
    } while (0)

/* A backend descriptor owned by cv (destroyed with the context). */
RT_API cudnnStatus_t ein_dnn_make(ein_conv *cv, cudnnBackendDescriptorType_t type,
                                  cudnnBackendDescriptor_t *out)
{
    *out = NULL;
    if (cv->nd == cv->capd) {
        int cap = cv->capd ? 2 * cv->capd : 16;
        cudnnBackendDescriptor_t *d = (cudnnBackendDescriptor_t *)
            realloc(cv->d, sizeof *d * (size_t)cap);
        if (!d)
            return CUDNN_STATUS_ALLOC_FAILED;
        cv->d = d;
        cv->capd = cap;
    }
    cudnnStatus_t s = cudnnBackendCreateDescriptor(type, out);
    if (s == CUDNN_STATUS_SUCCESS)
        cv->d[cv->nd++] = *out;
    return s;
}

/* Everything cv made, destroyed; cv as new. */
RT_API void ein_conv_drop(ein_conv *cv)
{
    if (cv->pack)
        cudnnBackendDestroyDescriptor(cv->pack);
    for (int j = cv->nd - 1; j >= 0; j--)
        cudnnBackendDestroyDescriptor(cv->d[j]);
    free(cv->d);
    memset(cv, 0, sizeof *cv);
}

/* What a tensor of a graph is: read from or written to through the
   variant pack, an intermediate (CUDNN_ATTR_TENSOR_IS_VIRTUAL: "not read
   from or written to in global device memory"), or a scalar whose
   variant-pack pointer is host memory holding it (IS_BY_VALUE). */
enum { EIN_DNN_REAL, EIN_DNN_VIRTUAL, EIN_DNN_BY_VALUE };

/* A 4-d tensor of the graph, named by uid in the variant pack: strides in
   elements (NULL: packed NCHW), its pointers aligned to `align` bytes. */
RT_API cudnnStatus_t ein_dnn_tensor(ein_conv *cv, int64_t uid, cudnnDataType_t dt,
                                    const int64_t *dims, const int64_t *strides, int64_t align,
                                    int kind, cudnnBackendDescriptor_t *out)
{
    int64_t packed[4];
    bool yes = true;
    packed[3] = 1;
    packed[2] = dims[3];
    packed[1] = dims[2] * dims[3];
    packed[0] = dims[1] * packed[1];
    cudnnStatus_t s;
    if ((s = ein_dnn_make(cv, CUDNN_BACKEND_TENSOR_DESCRIPTOR, out)) != CUDNN_STATUS_SUCCESS ||
        (s = cudnnBackendSetAttribute(*out, CUDNN_ATTR_TENSOR_DATA_TYPE,
                                      CUDNN_TYPE_DATA_TYPE, 1, &dt)) != CUDNN_STATUS_SUCCESS ||
        (s = cudnnBackendSetAttribute(*out, CUDNN_ATTR_TENSOR_DIMENSIONS,
                                      CUDNN_TYPE_INT64, 4, dims)) != CUDNN_STATUS_SUCCESS ||
        (s = cudnnBackendSetAttribute(*out, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4,
                                      strides ? strides : packed)) != CUDNN_STATUS_SUCCESS ||
        (s = cudnnBackendSetAttribute(*out, CUDNN_ATTR_TENSOR_UNIQUE_ID,
                                      CUDNN_TYPE_INT64, 1, &uid)) != CUDNN_STATUS_SUCCESS ||
        (s = cudnnBackendSetAttribute(*out, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT,
                                      CUDNN_TYPE_INT64, 1, &align)) != CUDNN_STATUS_SUCCESS)
        return s;
    if (kind != EIN_DNN_REAL &&
        (s = cudnnBackendSetAttribute(*out, kind == EIN_DNN_VIRTUAL ? CUDNN_ATTR_TENSOR_IS_VIRTUAL
                                                                     : CUDNN_ATTR_TENSOR_IS_BY_VALUE,
                                      CUDNN_TYPE_BOOLEAN, 1, &yes)) != CUDNN_STATUS_SUCCESS)
        return s;
    return cudnnBackendFinalize(*out);
}

/* May einc use this engine configuration?  Never one whose results may
   change from run to run (NONDETERMINISTIC: einc promises the same bits
   every run) or that sums in less than f32 (REDUCED_PRECISION_REDUCTION);
   for --precision=fp32 (tensor_cores 0) none that rounds f32 operands to
   TF32 (TENSOR_CORE, DOWN_CONVERT_INPUTS).  *index: its engine's global
   index. */
RT_API int ein_dnn_engine_ok(ein_conv *cv, cudnnBackendDescriptor_t cfg, int tensor_cores,
                             int64_t *index)
{
    cudnnBackendDescriptor_t engine;
    cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
    int64_t n = 0, got = 0;
    if (ein_dnn_make(cv, CUDNN_BACKEND_ENGINE_DESCRIPTOR, &engine) != CUDNN_STATUS_SUCCESS ||
        cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE,
                                 CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &engine) !=
            CUDNN_STATUS_SUCCESS ||
        cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1,
                                 &got, index) != CUDNN_STATUS_SUCCESS ||
        cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                                 CUDNN_TYPE_NUMERICAL_NOTE, CUDNN_NUMERICAL_NOTE_TYPE_COUNT,
                                 &n, notes) != CUDNN_STATUS_SUCCESS)
        return 0;
    for (int64_t i = 0; i < n && i < CUDNN_NUMERICAL_NOTE_TYPE_COUNT; i++)
        if (notes[i] == CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC ||
            notes[i] == CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION ||
            (!tensor_cores && (notes[i] == CUDNN_NUMERICAL_NOTE_TENSOR_CORE ||
                               notes[i] == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS)))
            return 0;
    return 1;
}

/* One pointwise node, y = mode(x) or mode(x, b) in f32.  RELU_FWD asks
   for NaN propagation, as einc's relu keeps NaN (CUDNN_PROPAGATE_NAN, the
   value the documentation says is supported for "comparison based" modes
   like ReLU; the attribute is deprecated in cuDNN 9), with its clips at
   their documented defaults (0, the largest float, slope 0), all set as
   NVIDIA's frontend sets them.  MAX and MIN get no NaN attribute (the
   frontend sets none): what they do with NaN is not documented. */
RT_API int ein_dnn_pointwise(model_ctx *ctx, ein_conv *cv, const ein_pw_spec *pw,
                             cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t b,
                             cudnnBackendDescriptor_t y, cudnnBackendDescriptor_t *op)
{
    cudnnBackendDescriptor_t desc;
    cudnnDataType_t prec = CUDNN_DATA_FLOAT;
    cudnnNanPropagation_t nan = CUDNN_PROPAGATE_NAN;
    double lower = 0.0, upper = FLT_MAX, slope = 0.0;
    EIN_DNN(ein_dnn_make(cv, CUDNN_BACKEND_POINTWISE_DESCRIPTOR, &desc));
    EIN_DNN(cudnnBackendSetAttribute(desc, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE,
                                     1, &pw->mode));
    EIN_DNN(cudnnBackendSetAttribute(desc, CUDNN_ATTR_POINTWISE_MATH_PREC,
                                     CUDNN_TYPE_DATA_TYPE, 1, &prec));
    if (pw->mode == CUDNN_POINTWISE_RELU_FWD) {
        EIN_DNN(cudnnBackendSetAttribute(desc, CUDNN_ATTR_POINTWISE_NAN_PROPAGATION,
                                         CUDNN_TYPE_NAN_PROPOGATION, 1, &nan));
        EIN_DNN(cudnnBackendSetAttribute(desc, CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP,
                                         CUDNN_TYPE_DOUBLE, 1, &lower));
        EIN_DNN(cudnnBackendSetAttribute(desc, CUDNN_ATTR_POINTWISE_RELU_UPPER_CLIP,
                                         CUDNN_TYPE_DOUBLE, 1, &upper));
        EIN_DNN(cudnnBackendSetAttribute(desc, CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP_SLOPE,
                                         CUDNN_TYPE_DOUBLE, 1, &slope));
    }
    EIN_DNN(cudnnBackendFinalize(desc));
    EIN_DNN(ein_dnn_make(cv, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, op));
    EIN_DNN(cudnnBackendSetAttribute(*op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &desc));
    EIN_DNN(cudnnBackendSetAttribute(*op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x));
    if (b)
        EIN_DNN(cudnnBackendSetAttribute(*op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC,
                                         CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b));
    EIN_DNN(cudnnBackendSetAttribute(*op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y));
    EIN_DNN(cudnnBackendFinalize(*op));
    return 0;
}

/* The operation graph of the convolution sp (cudnn_types.h), with its
   pointwise nodes (fused) or without: x is uid 1, w uid 2, y uid 3 in
   the variant pack; with nodes the convolution writes the virtual uid 4,
   node i reads b as uid 100 + i and writes the virtual uid 200 + i (the
   last one y). */
RT_API int ein_conv_graph(model_ctx *ctx, ein_conv *cv, const ein_conv_spec *sp, int fused,
                          cudnnBackendDescriptor_t *graph)
{
    cudnnBackendDescriptor_t x, w, y, out, conv, ops[1 + EIN_CUDNN_MAXPW];
    cudnnDataType_t comp = CUDNN_DATA_FLOAT, dt = sp->dt;
    cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
    int64_t nsp = 2, nops = 1, one[4] = {1, 1, 1, 1};
    float alpha = 1.0f, beta = 0.0f;
    int npw = fused ? sp->npw : 0, rc;
    EIN_DNN(ein_dnn_tensor(cv, 1, dt, sp->x, NULL, 16, EIN_DNN_REAL, &x));
    EIN_DNN(ein_dnn_tensor(cv, 2, dt, sp->w, NULL, 16, EIN_DNN_REAL, &w));
    EIN_DNN(ein_dnn_tensor(cv, 3, dt, sp->y, NULL, 16, EIN_DNN_REAL, &y));
    out = y;
    if (npw > 0)
        EIN_DNN(ein_dnn_tensor(cv, 4, dt, sp->y, NULL, 16, EIN_DNN_VIRTUAL, &out));
    EIN_DNN(ein_dnn_make(cv, CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, &conv));
    EIN_DNN(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS,
                                     CUDNN_TYPE_INT64, 1, &nsp));
    EIN_DNN(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE,
                                     CUDNN_TYPE_DATA_TYPE, 1, &comp));
    EIN_DNN(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE,
                                     CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode));
    EIN_DNN(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_DILATIONS,
                                     CUDNN_TYPE_INT64, 2, sp->dil));
    EIN_DNN(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES,
                                     CUDNN_TYPE_INT64, 2, sp->stride));
    EIN_DNN(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS,
                                     CUDNN_TYPE_INT64, 2, sp->pad));
    EIN_DNN(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS,
                                     CUDNN_TYPE_INT64, 2, sp->pad));
    EIN_DNN(cudnnBackendFinalize(conv));
    if (!sp->transposed) {
        EIN_DNN(ein_dnn_make(cv, CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, &ops[0]));
        EIN_DNN(cudnnBackendSetAttribute(ops[0], CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
                                         CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x));
        EIN_DNN(cudnnBackendSetAttribute(ops[0], CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
                                         CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &w));
        EIN_DNN(cudnnBackendSetAttribute(ops[0], CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
                                         CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &out));
        EIN_DNN(cudnnBackendSetAttribute(ops[0], CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
                                         CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv));
        EIN_DNN(cudnnBackendSetAttribute(ops[0], CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
                                         CUDNN_TYPE_FLOAT, 1, &alpha));
        EIN_DNN(cudnnBackendSetAttribute(ops[0], CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA,
                                         CUDNN_TYPE_FLOAT, 1, &beta));
    } else {
        EIN_DNN(ein_dnn_make(cv, CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
                             &ops[0]));
        EIN_DNN(cudnnBackendSetAttribute(ops[0], CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
                                         CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x));
        EIN_DNN(cudnnBackendSetAttribute(ops[0], CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
                                         CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &w));
        EIN_DNN(cudnnBackendSetAttribute(ops[0], CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
                                         CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &out));
        EIN_DNN(cudnnBackendSetAttribute(ops[0], CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
                                         CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv));
        EIN_DNN(cudnnBackendSetAttribute(ops[0], CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
                                         CUDNN_TYPE_FLOAT, 1, &alpha));
        EIN_DNN(cudnnBackendSetAttribute(ops[0], CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA,
                                         CUDNN_TYPE_FLOAT, 1, &beta));
    }
    EIN_DNN(cudnnBackendFinalize(ops[0]));
    for (int i = 0; i < npw; i++) {
        const ein_pw_spec *pw = &sp->pw[i];
        cudnnBackendDescriptor_t b = NULL, next = y;
        if (pw->kind == EIN_PW_TENSOR)
            EIN_DNN(ein_dnn_tensor(cv, 100 + i, CUDNN_DATA_FLOAT, pw->dims, pw->strides,
                                   pw->align, EIN_DNN_REAL, &b));
        else if (pw->kind == EIN_PW_SCALAR)
            EIN_DNN(ein_dnn_tensor(cv, 100 + i, CUDNN_DATA_FLOAT, one, one, 4, EIN_DNN_BY_VALUE,
                                   &b));
        if (i + 1 < npw)
            EIN_DNN(ein_dnn_tensor(cv, 200 + i, CUDNN_DATA_FLOAT, sp->y, NULL, 16,
                                   EIN_DNN_VIRTUAL, &next));
        if ((rc = ein_dnn_pointwise(ctx, cv, pw, out, b, next, &ops[nops++])) != 0)
            return rc;
        out = next;
    }
    EIN_DNN(ein_dnn_make(cv, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, graph));
    EIN_DNN(cudnnBackendSetAttribute(*graph, CUDNN_ATTR_OPERATIONGRAPH_OPS,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, nops, ops));
    EIN_DNN(cudnnBackendSetAttribute(*graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE,
                                     CUDNN_TYPE_HANDLE, 1, &ctx->dnn));
    EIN_DNN(cudnnBackendFinalize(*graph));
    return 0;
}

/* An execution plan of `graph` into cv: the first engine configuration
   that einc may use (ein_dnn_engine_ok), whose engine is none of
   skip[0..nskip) (and is `only`, where that is not -1), that builds a
   plan and whose workspace is at most ws_cap bytes, in the heuristics'
   order (mode A, then FALLBACK).  1: found; 0: none; else an error code. */
RT_API int ein_dnn_pick(model_ctx *ctx, ein_conv *cv, cudnnBackendDescriptor_t graph,
                        int tensor_cores, int64_t ws_cap, const int64_t *skip, int nskip,
                        int64_t only)
{
    static const cudnnBackendHeurMode_t modes[] = {CUDNN_HEUR_MODE_A,
                                                   CUDNN_HEUR_MODE_FALLBACK};
    for (int mp = 0; mp < 2; mp++) {
        cudnnBackendDescriptor_t heur, cfg[16];
        cudnnBackendHeurMode_t hm = modes[mp];
        int64_t n = 0;
        EIN_DNN(ein_dnn_make(cv, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &heur));
        EIN_DNN(cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
                                         CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph));
        EIN_DNN(cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_MODE,
                                         CUDNN_TYPE_HEUR_MODE, 1, &hm));
        if (cudnnBackendFinalize(heur) != CUDNN_STATUS_SUCCESS)
            continue;
        for (int i = 0; i < 16; i++)
            EIN_DNN(ein_dnn_make(cv, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &cfg[i]));
        if (cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, 16, &n, cfg) !=
            CUDNN_STATUS_SUCCESS)
            continue;
        for (int64_t i = 0; i < n && i < 16; i++) {
            cudnnBackendDescriptor_t plan;
            int64_t index = -1;
            int skipped = 0;
            if (!ein_dnn_engine_ok(cv, cfg[i], tensor_cores, &index))
                continue;
            for (int j = 0; j < nskip; j++)
                skipped |= skip[j] == index;
            if (skipped || (only >= 0 && index != only))
                continue;
            EIN_DNN(ein_dnn_make(cv, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan));
            if (cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE,
                                         CUDNN_TYPE_HANDLE, 1, &ctx->dnn) !=
                    CUDNN_STATUS_SUCCESS ||
                cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                                         CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg[i]) !=
                    CUDNN_STATUS_SUCCESS ||
                cudnnBackendFinalize(plan) != CUDNN_STATUS_SUCCESS)
                continue;
            int64_t got = 0;        /* not n: the loop goes on over the configs */
            EIN_DNN(cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                             CUDNN_TYPE_INT64, 1, &got, &cv->ws_bytes));
            if (cv->ws_bytes > ws_cap)
                continue;           /* too much workspace: the next one */
            cv->plan = plan;
            cv->engine = index;
            return 1;
        }
    }
    return 0;
}

/* Build the execution plan of the convolution sp (cudnn_types.h) into cv:
   of its graph with the pointwise nodes (cv->fused) where an engine takes
   it, else of the convolution alone, whose epilogue the generated file's
   pass then applies (with a note: ctx->note, which the --main harness
   prints).  In each graph the engine sp->engine first, where it is one
   (the tuning database's, measured with or without the nodes), then the
   heuristics' order (ein_dnn_pick; the tuner lists the engines it may
   time by skipping those it has). */
RT_API int ein_conv_setup(model_ctx *ctx, ein_conv *cv, const ein_conv_spec *sp,
                          int64_t ws_cap, const int64_t *skip, int nskip)
{
    cudnnBackendDescriptor_t graph[2] = {NULL, NULL};      /* plain, fused */
    char why[sizeof ctx->err] = "";
    int rc;
    cv->sp = *sp;
    if (sp->npw > 0 && ein_conv_graph(ctx, cv, sp, 1, &graph[1]) != 0) {
        snprintf(why, sizeof why, "%s", ctx->err);         /* a node cuDNN refuses */
        ctx->err[0] = 0;
        graph[1] = NULL;
    }
    if ((rc = ein_conv_graph(ctx, cv, sp, 0, &graph[0])) != 0)
        return rc;
    for (int pass = sp->engine >= 0 ? 0 : 2; pass < 4; pass++) {
        int fused = pass % 2 == 0;
        if (!graph[fused])
            continue;
        rc = ein_dnn_pick(ctx, cv, graph[fused], sp->tensor_cores, ws_cap, skip, nskip,
                          pass < 2 ? sp->engine : -1);
        if (rc > 1)
            return rc;
        if (rc == 1) {
            cv->fused = fused;
            if (!fused && sp->npw > 0 && !ctx->note[0]) {
                if (!why[0])
                    snprintf(why, sizeof why, "cuDNN has no deterministic engine for the graph "
                             "of the convolution computing '%s' and its %d pointwise nodes%s",
                             sp->name, sp->npw, sp->tensor_cores ? "" : " without tensor cores");
                snprintf(ctx->note, sizeof ctx->note, "%.500s; it runs as the convolution and "
                         "a pass", why);
            }
            return 0;
        }
    }
    return ein_fail(ctx, MODEL_ECUDA, "cuDNN has no deterministic engine for the convolution "
                    "computing '%s'%s with a workspace of at most %lld bytes", sp->name,
                    sp->tensor_cores ? "" : " without tensor cores (the program was compiled "
                    "with --precision=fp32)", (long long)ws_cap);
}
/* A convolution cuDNN cannot plan runs as its generated kernel instead
   (ein_op_N checks ein_conv_ok); the first reason is kept in ctx->note,
   which the --main harness prints as a note. */
RT_API void ein_conv_fall_back(model_ctx *ctx, ein_conv *cv)
{
    if (!ctx->note[0])
        snprintf(ctx->note, sizeof ctx->note, "%.540s; it runs as a generated kernel", ctx->err);
    ctx->err[0] = 0;
    ein_conv_drop(cv);
}

/* Can cv's plan run on these pointers: is there a plan, are x, w and y
   aligned to the 16 bytes their tensors declare (a caller's buffer:
   device pointers of any alignment may be passed to run), and, where the
   plan computes the pointwise nodes, each node's b (b[], the tensor ones
   in their order) to its own?  Else the generated kernel runs. */
RT_API int ein_conv_ok(const ein_conv *cv, const void *x, const void *w, const void *y,
                       const void *const *b)
{
    if (!cv->plan || ((uintptr_t)x | (uintptr_t)w | (uintptr_t)y) % 16 != 0)
        return 0;
    for (int i = 0, j = 0; cv->fused && i < cv->sp.npw; i++)
        if (cv->sp.pw[i].kind == EIN_PW_TENSOR && (uintptr_t)b[j++] % cv->sp.pw[i].align != 0)
            return 0;
    return 1;
}

/* Run a convolution (ein_conv_ok) on the caller's stream, with its
   pointwise nodes where its plan has them (b[]: the tensor operands, in
   their order; the scalars are passed from the spec); the variant pack is
   rebuilt only when the pointers differ from the last run's. */
RT_API int ein_conv_run(model_ctx *ctx, ein_conv *cv, const void *x, const void *w, void *y,
                        const void *const *b, cudaStream_t stream)
{
    void *ptr[4 + EIN_CUDNN_MAXPW] = {(void *)x, (void *)w, y, ctx->ws};
    int64_t uids[3 + EIN_CUDNN_MAXPW] = {1, 2, 3};
    void *data[3 + EIN_CUDNN_MAXPW] = {(void *)x, (void *)w, y};
    int n = 3, nb = 0;
    if (!ein_conv_ok(cv, x, w, y, b))
        return ein_fail(ctx, MODEL_EINVAL, "cuDNN cannot run the convolution computing '%s' "
                        "on these pointers (alignment)", cv->sp.name);
    for (int i = 0; cv->fused && i < cv->sp.npw; i++) {
        const ein_pw_spec *pw = &cv->sp.pw[i];
        if (pw->kind == EIN_PW_UNARY)
            continue;
        uids[n] = 100 + i;
        data[n++] = pw->kind == EIN_PW_TENSOR ? (void *)b[nb] : (void *)&pw->value;
        if (pw->kind == EIN_PW_TENSOR)
            ptr[4 + nb] = (void *)b[nb], nb++;
    }
    if (!cv->pack || memcmp(ptr, cv->ptr, sizeof ptr) != 0) {
        cudnnBackendDescriptor_t pack;
        if (cv->pack)
            cudnnBackendDestroyDescriptor(cv->pack);
        cv->pack = NULL;
        EIN_DNN(cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &pack));
        if (cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS,
                                     CUDNN_TYPE_INT64, n, uids) != CUDNN_STATUS_SUCCESS ||
            cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS,
                                     CUDNN_TYPE_VOID_PTR, n, data) != CUDNN_STATUS_SUCCESS ||
            cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE,
                                     CUDNN_TYPE_VOID_PTR, 1, &ptr[3]) != CUDNN_STATUS_SUCCESS ||
            cudnnBackendFinalize(pack) != CUDNN_STATUS_SUCCESS) {
            cudnnBackendDestroyDescriptor(pack);
            return ein_fail(ctx, MODEL_ECUDA, "cannot make the cuDNN variant pack");
        }
        cv->pack = pack;
        memcpy(cv->ptr, ptr, sizeof ptr);
    }
    EIN_DNN(cudnnSetStream(ctx->dnn, stream));
    EIN_DNN(cudnnBackendExecute(ctx->dnn, cv->plan, cv->pack));
    return 0;
}

/* The plans of the n convolutions of spec[] (spec[i] in ctx->conv[i]),
   each workspace at most cap bytes (one cuDNN cannot plan falls back to
   its generated kernel); the largest workspace. */
RT_API int64_t ein_dnn_plan(model_ctx *ctx, const ein_conv_spec *spec, int n, int64_t cap)
{
    int64_t ws = 0;
    ctx->note[0] = 0;
    for (int i = 0; i < n; i++) {
        if (ein_conv_setup(ctx, &ctx->conv[i], &spec[i], cap, NULL, 0) != 0)
            ein_conv_fall_back(ctx, &ctx->conv[i]);
        else if (ctx->conv[i].ws_bytes > ws)
            ws = ctx->conv[i].ws_bytes;
    }
    return ws;
}

/* The handle, the plans and their one workspace, made by model_create.
   Without cuDNN (no library, no device it supports) every convolution
   runs as its generated kernel, with a note.  When the device cannot give
   the largest workspace, plan again with less (the next configurations,
   at worst the generated kernels). */
RT_API int ein_dnn_create(model_ctx *ctx, const ein_conv_spec *spec, int n)
{
    cudnnStatus_t s = cudnnCreate(&ctx->dnn);
    if (s != CUDNN_STATUS_SUCCESS) {
        ctx->dnn = NULL;
        snprintf(ctx->note, sizeof ctx->note, "cudnnCreate failed: %s; the convolutions "
                 "run as generated kernels", cudnnGetErrorString(s));
        return MODEL_OK;
    }
    int64_t cap = EIN_CUDNN_WORKSPACE_LIMIT, ws;
    while ((ws = ein_dnn_plan(ctx, spec, n, cap)) > 0) {
        cudaError_t e = cudaMalloc(&ctx->ws, (size_t)ws);
        if (e == cudaSuccess) {
            ctx->ws_bytes = ws;
            break;
        }
        ctx->ws = NULL;
        if (e != cudaErrorMemoryAllocation)
            return ein_cuda_fail(ctx, e, "cudaMalloc (the cuDNN workspace)");
        (void)cudaGetLastError();
        for (int i = 0; i < n; i++)
            ein_conv_drop(&ctx->conv[i]);
        cap = ws - 1;
    }
    return MODEL_OK;
}

/* All of it freed, by model_destroy: the context is gone by then, so a
   failure has no message. */
RT_API int ein_dnn_destroy(model_ctx *ctx, int n)
{
    int rc = MODEL_OK;
    for (int i = 0; i < n; i++)
        ein_conv_drop(&ctx->conv[i]);
    if (ctx->dnn && cudnnDestroy(ctx->dnn) != CUDNN_STATUS_SUCCESS)
        rc = MODEL_ECUDA;
    if (ctx->ws && cudaFree(ctx->ws) != cudaSuccess)
        rc = MODEL_ECUDA;
    return rc;
}
