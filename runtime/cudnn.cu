/* cudnn.cu - the convolutions of a generated program through cuDNN 9's
 * graph (backend) API (emit/lib.c): per convolution one execution plan,
 * built when the context is created from the heuristics' engines (the
 * first that finalizes, is deterministic, sums in f32, for
 * --precision=fp32 uses no tensor cores, and asks for at most
 * EIN_CUDNN_WORKSPACE_LIMIT bytes of workspace; the engine the tuning
 * database chose for it, where it has one, first); one cuDNN cannot plan
 * runs as its generated kernel instead, and so does every convolution
 * when cudnnCreate fails.  Pasted
 * after api_cuda.cu when the program calls cuDNN; the generated file
 * describes its convolutions in a table ein_convs[] of ein_conv_spec
 * (cudnn_types.h) and calls ein_dnn_create and ein_dnn_destroy. */
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

/* A packed NCHW tensor of the convolution, named by uid in the variant pack. */
RT_API cudnnStatus_t ein_dnn_tensor(ein_conv *cv, int64_t uid, cudnnDataType_t dt,
                                    const int64_t *dims, cudnnBackendDescriptor_t *out)
{
    int64_t strides[4], align = 16;
    strides[3] = 1;
    strides[2] = dims[3];
    strides[1] = dims[2] * dims[3];
    strides[0] = dims[1] * strides[1];
    cudnnStatus_t s;
    if ((s = ein_dnn_make(cv, CUDNN_BACKEND_TENSOR_DESCRIPTOR, out)) != CUDNN_STATUS_SUCCESS ||
        (s = cudnnBackendSetAttribute(*out, CUDNN_ATTR_TENSOR_DATA_TYPE,
                                      CUDNN_TYPE_DATA_TYPE, 1, &dt)) != CUDNN_STATUS_SUCCESS ||
        (s = cudnnBackendSetAttribute(*out, CUDNN_ATTR_TENSOR_DIMENSIONS,
                                      CUDNN_TYPE_INT64, 4, dims)) != CUDNN_STATUS_SUCCESS ||
        (s = cudnnBackendSetAttribute(*out, CUDNN_ATTR_TENSOR_STRIDES,
                                      CUDNN_TYPE_INT64, 4, strides)) != CUDNN_STATUS_SUCCESS ||
        (s = cudnnBackendSetAttribute(*out, CUDNN_ATTR_TENSOR_UNIQUE_ID,
                                      CUDNN_TYPE_INT64, 1, &uid)) != CUDNN_STATUS_SUCCESS ||
        (s = cudnnBackendSetAttribute(*out, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT,
                                      CUDNN_TYPE_INT64, 1, &align)) != CUDNN_STATUS_SUCCESS)
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

/* Build the execution plan of the convolution sp (cudnn_types.h): x is
   uid 1, w uid 2, y uid 3 in the variant pack.  The first engine
   configuration that einc may use (ein_dnn_engine_ok), whose engine is
   none of skip[0..nskip), that builds a plan and whose workspace is at
   most ws_cap bytes: of the engine sp->engine first, where it is one,
   then in the heuristics' order (the tuner lists the engines it may time
   by skipping those it has). */
RT_API int ein_conv_setup(model_ctx *ctx, ein_conv *cv, const ein_conv_spec *sp,
                          int64_t ws_cap, const int64_t *skip, int nskip)
{
    cudnnBackendDescriptor_t x, w, y, conv, op, graph;
    cudnnDataType_t comp = CUDNN_DATA_FLOAT, dt = sp->dt;
    cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
    int64_t nsp = 2;
    float alpha = 1.0f, beta = 0.0f;
    EIN_DNN(ein_dnn_tensor(cv, 1, dt, sp->x, &x));
    EIN_DNN(ein_dnn_tensor(cv, 2, dt, sp->w, &w));
    EIN_DNN(ein_dnn_tensor(cv, 3, dt, sp->y, &y));
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
        EIN_DNN(ein_dnn_make(cv, CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, &op));
        EIN_DNN(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
                                         CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x));
        EIN_DNN(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
                                         CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &w));
        EIN_DNN(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
                                         CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y));
        EIN_DNN(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
                                         CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv));
        EIN_DNN(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
                                         CUDNN_TYPE_FLOAT, 1, &alpha));
        EIN_DNN(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA,
                                         CUDNN_TYPE_FLOAT, 1, &beta));
    } else {
        EIN_DNN(ein_dnn_make(cv, CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
                             &op));
        EIN_DNN(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
                                         CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x));
        EIN_DNN(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
                                         CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &w));
        EIN_DNN(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
                                         CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y));
        EIN_DNN(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
                                         CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv));
        EIN_DNN(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
                                         CUDNN_TYPE_FLOAT, 1, &alpha));
        EIN_DNN(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA,
                                         CUDNN_TYPE_FLOAT, 1, &beta));
    }
    EIN_DNN(cudnnBackendFinalize(op));
    EIN_DNN(ein_dnn_make(cv, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &graph));
    EIN_DNN(cudnnBackendSetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op));
    EIN_DNN(cudnnBackendSetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE,
                                     CUDNN_TYPE_HANDLE, 1, &ctx->dnn));
    EIN_DNN(cudnnBackendFinalize(graph));
    /* The heuristics' engines in their order (in a first pass only the
       chosen engine's); the first one einc may use that builds a plan
       within the workspace limit is the one. */
    static const cudnnBackendHeurMode_t modes[] = {CUDNN_HEUR_MODE_A,
                                                   CUDNN_HEUR_MODE_FALLBACK};
    for (int mp = sp->engine >= 0 ? 0 : 2; mp < 4; mp++) {
        cudnnBackendDescriptor_t heur, cfg[16];
        cudnnBackendHeurMode_t hm = modes[mp % 2];
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
            if (!ein_dnn_engine_ok(cv, cfg[i], sp->tensor_cores, &index))
                continue;
            for (int j = 0; j < nskip; j++)
                skipped |= skip[j] == index;
            if (skipped || (mp < 2 && index != sp->engine))
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
            return 0;
        }
    }
    return ein_fail(ctx, MODEL_ECUDA, "cuDNN has no deterministic engine for the convolution "
                    "computing '%s'%s with a workspace of at most %lld bytes", sp->name,
                    sp->tensor_cores ? "" : " without tensor cores (the program was compiled "
                    "with --precision=fp32)", (long long)ws_cap);
}

/* A convolution cuDNN cannot plan runs as its generated kernel instead
   (ein_op_N checks cv->plan); the first reason is kept in ctx->note,
   which the --main harness prints as a note. */
RT_API void ein_conv_fall_back(model_ctx *ctx, ein_conv *cv)
{
    if (!ctx->note[0])
        snprintf(ctx->note, sizeof ctx->note, "%s; it runs as a generated "
                 "kernel", ctx->err);
    ctx->err[0] = 0;
    ein_conv_drop(cv);
}

/* Run a convolution on the caller's stream; the variant pack is rebuilt
   only when the pointers differ from the last run's. */
RT_API int ein_conv_run(model_ctx *ctx, ein_conv *cv, const void *x, const void *w, void *y,
                        cudaStream_t stream)
{
    void *ptr[4] = {(void *)x, (void *)w, y, ctx->ws};
    if (((uintptr_t)x | (uintptr_t)w | (uintptr_t)y) % 16 != 0)
        return ein_fail(ctx, MODEL_EINVAL, "cuDNN needs 16-byte aligned tensors");
    if (!cv->pack || memcmp(ptr, cv->ptr, sizeof ptr) != 0) {
        static const int64_t uids[3] = {1, 2, 3};
        cudnnBackendDescriptor_t pack;
        if (cv->pack)
            cudnnBackendDestroyDescriptor(cv->pack);
        cv->pack = NULL;
        EIN_DNN(cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &pack));
        if (cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS,
                                     CUDNN_TYPE_INT64, 3, uids) != CUDNN_STATUS_SUCCESS ||
            cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS,
                                     CUDNN_TYPE_VOID_PTR, 3, ptr) != CUDNN_STATUS_SUCCESS ||
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
