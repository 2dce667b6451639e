/* lib.c - vendor operators.  An operator the plan runs as a library call
 * (derive/search/plan.h, chosen by derive/pricing/libs.c) is written as
 * one:
 *
 *   CUDA  GEMMs         cublasGemmEx / cublasGemmStridedBatchedEx; row-major
 *                       through the column-major identity C^T = B^T A^T, so
 *                       no operand is ever copied
 *         convolutions  cuDNN 9's graph (backend) API: per convolution one
 *                       execution plan, built when the context is created
 *                       (heuristics, first engine that finalizes and keeps
 *                       the precision); a transposed convolution is the
 *                       backward-data operation; one cuDNN cannot plan
 *                       runs as its generated kernel, with a note
 *         G2BMM, GBMM   tiled generated kernels (band.c), f32
 *   C     GEMMs         cblas_sgemm (OpenBLAS), a batch as a loop
 *         convolutions  with --dnnl, oneDNN (runtime/dnnl.c, pasted into
 *                       the file): a convolution or deconvolution
 *                       primitive per operator made in M_create, weights
 *                       reordered into its layout when they change;
 *                       else im2col + cblas_sgemm per image (one group);
 *                       transposed: cblas_sgemm + col2im
 *         G2BMM, GBMM   cblas_sgemm per block of rows of one residue class
 *                       against the key rows its band covers
 *
 * A call with an epilogue is followed by the epilogue's pass over its
 * output (a generated kernel, kernel.c).
 *
 * --precision: fp32 is IEEE single precision throughout (cuBLAS compute
 * type 32F, cuDNN engines without tensor cores).  tf32, fp16 and bf16 let
 * the library round f32 operands to that format on tensor cores (cuBLAS
 * 32F_FAST_*; cuDNN engines with tensor cores).  The C target rounds the
 * operands of its library calls the same way (ein_rnd, to nearest even)
 * into scratch buffers, and generated kernels round the operands of their
 * summed products (kernel.c), so a contraction computes the same wherever
 * it runs. */
#include "config.h"
#include "emit_int.h"

#include <inttypes.h>
#include <string.h>

#define EMIT_DNNL_MAXD 6       /* runtime/dnnl_types.h: EIN_DNNL_MAXD */

/* ---- what the plan's calls need ------------------------------------------- */

/* The output's spatial sizes: its last two dims (the output channels may
 * be several dims, as the filter stores them). */
static int64_t out_h(const IrTensor *t)
{
    return t->shape[t->rank - 2];
}

static int64_t out_w(const IrTensor *t)
{
    return t->shape[t->rank - 1];
}

/* The libraries, helpers, cuDNN slots and scratch buffers that the plan's
 * library calls need (the plan says which operators are calls: plan.h). */
void lib_setup(Emit *em)
{
    const IrProgram *p = em->p;
    em->slot = arena_alloc(em->arena, sizeof *em->slot * (size_t)(p->ntensors + 1));
    for (int i = 0; i < p->ntensors; i++) {
        const IrTensor *t = p->tensors[i];
        em->slot[i] = -1;
        if (!lib_is_call(em, t))
            continue;
        const PlanOp *op = emit_op(em, t);
        const OpMatch *m = &op->op;
        switch (op->impl) {
        case IMPL_CUBLAS_GEMM:
            em->libs |= LIB_CUBLAS;
            break;
        case IMPL_CBLAS_GEMM:
            em->libs |= LIB_CBLAS | LIB_GEMM_C;
            break;
        case IMPL_CUDNN_CONV:
            em->libs |= LIB_CUDNN;
            em->slot[i] = em->nconv++;
            break;
        case IMPL_CBLAS_IM2COL: case IMPL_CBLAS_COL2IM: {
            em->libs |= LIB_CBLAS | (op->impl == IMPL_CBLAS_IM2COL ? LIB_CONV_C : LIB_CONVT_C);
            int64_t col = op->impl == IMPL_CBLAS_IM2COL
                              ? m->c * m->r * m->s * out_h(t) * out_w(t)
                              : m->f * m->r * m->s * m->h * m->w;
            if (col > em->col_elems)
                em->col_elems = col;
            break;
        }
        case IMPL_CUDA_BAND:
            em->libs |= LIB_BAND;
            if (em->precision != PREC_FP32)
                em->helpers |= HELP_RND;       /* band.c rounds its loads */
            break;
        case IMPL_CBLAS_BAND: {
            em->libs |= LIB_CBLAS | (m->kind == OPK_G2BMM ? LIB_G2BMM_C : LIB_GBMM_C);
            int64_t tile = BAND_C_ROWS * (BAND_C_ROWS + 2 * m->gw);
            if (tile > em->col_elems)
                em->col_elems = tile;
            break;
        }
        case IMPL_DNNL_CONV:
            em->libs |= LIB_DNNL;
            em->slot[i] = em->ndnnl++;
            break;
        case IMPL_KERNEL:
            break;
        }
        em->nlib++;
        /* C with reduced precision: scratch for the rounded operands */
        if (!emit_is_cuda(em) && em->precision != PREC_FP32) {
            em->helpers |= HELP_RND;
            for (int j = 0; j < 2; j++)
                if ((int64_t)ir_tensor_numel(m->in[j]) > em->rnd_elems[j])
                    em->rnd_elems[j] = (int64_t)ir_tensor_numel(m->in[j]);
        }
    }
}

/* The harness prints why a convolution fell back (after M_create). */
void lib_write_main_notes(Emit *em, const char *prog)
{
    if (em->libs & LIB_CUDNN)
        sb_printf(&em->out, "    if (ctx && ctx->dnn_note[0])\n"
                  "        fprintf(stderr, \"%%s: note: %%s\\n\", %s, ctx->dnn_note);\n", prog);
}

bool lib_is_call(const Emit *em, const IrTensor *t)
{
    return t->kind == IT_STAGE && emit_op(em, t)->impl != IMPL_KERNEL;
}

/* ---- what the file needs around the calls ------------------------------------ */

void lib_write_link_flags(const Emit *em, Sb *cmd)
{
    if (em->libs & LIB_CUBLAS)
        sb_puts(cmd, " -lcublas");
    if (em->libs & LIB_CUDNN)
        sb_puts(cmd, " -lcudnn");
    if (em->libs & LIB_DNNL)
        sb_puts(cmd, " -ldnnl");
    if (em->libs & LIB_CBLAS)
        sb_puts(cmd, " -lopenblas");
}

/* oneDNN's operators (runtime/dnnl_types.h, runtime/dnnl.c), pasted after
 * the other runtime pieces: the context holds their state. */
void lib_write_runtime(Emit *em)
{
    if (!(em->libs & LIB_DNNL))
        return;
    emit_paste_piece(em, "dnnl_types.h");
    emit_paste_piece(em, "dnnl.c");
}

/* New weights: each oneDNN operator whose weights are constant reorders
 * them again at its next run. */
void lib_write_weights_changed(Emit *em)
{
    if (em->libs & LIB_DNNL)
        sb_printf(&em->out, "        for (int i = 0; i < %d; i++)\n"
                  "            ctx->dnnl_op[i].wei_ready = 0;\n", em->ndnnl);
}

void lib_write_includes(Emit *em)
{
    Sb *o = &em->out;
    if (em->libs & LIB_CUBLAS)
        sb_puts(o, "#include <cublas_v2.h>\n");
    if (em->libs & LIB_CUDNN)
        sb_puts(o, "#include <cudnn.h>\n");
    if (em->libs & LIB_CBLAS)
        sb_puts(o, "#include <cblas.h>\n");
    if (em->libs)
        sb_putc(o, '\n');
}

/* Types and fields of the context, written before `struct M_ctx`. */
void lib_write_types(Emit *em)
{
    if (!(em->libs & LIB_CUDNN))
        return;
    sb_puts(&em->out,
"/* One cuDNN convolution: its execution plan, the descriptors it was made\n"
"   from (kept until the context goes), and the variant pack of the\n"
"   pointers it last ran on (rebuilt when they change). */\n"
"typedef struct ein_conv {\n"
"    cudnnBackendDescriptor_t *d;\n"
"    int nd, capd;\n"
"    cudnnBackendDescriptor_t plan, pack;\n"
"    void *ptr[4];               /* x, w, y, workspace of `pack` */\n"
"    int64_t ws_bytes;\n"
"} ein_conv;\n"
"\n");
}

void lib_write_ctx_fields(Emit *em)
{
    Sb *o = &em->out;
    if (em->libs & LIB_CUBLAS)
        sb_puts(o, "    cublasHandle_t blas;            /* created once, stream set per call */\n");
    if (em->libs & LIB_CUDNN)
        sb_printf(o, "    cudnnHandle_t dnn;\n"
                  "    ein_conv conv[%d];\n"
                  "    void *ws;                       /* the convolutions' workspace */\n"
                  "    char dnn_note[600];             /* why a convolution fell back */\n",
                  em->nconv);
    if (em->libs & LIB_DNNL)
        sb_printf(o, "    ein_dnnl dnnl;                  /* engine, stream, workspace */\n"
                  "    ein_dnnl_op dnnl_op[%d];\n", em->ndnnl);
    if (em->col_elems)
        sb_puts(o, "    float *col;                     /* im2col / col2im buffer */\n");
    for (int j = 0; j < 2; j++)
        if (em->rnd_elems[j])
            sb_printf(o, "    float *rnd%d;                    /* operand %d rounded to "
                      "--precision=%s */\n", j, j, cost_precision_name(em->precision));
}

/* ---- support functions, written after ein_fail ------------------------------ */

static void write_cublas_support(Emit *em)
{
    emit_tpl(em,
"/* cuBLAS calls go through EIN_BLAS: a failure returns $M_ECUDA with the\n"
"   call and cuBLAS's message in ctx->err. */\n"
"#define EIN_BLAS(call)                                                     \\\n"
"    do {                                                                   \\\n"
"        cublasStatus_t ein_b_ = (call);                                    \\\n"
"        if (ein_b_ != CUBLAS_STATUS_SUCCESS)                               \\\n"
"            return ein_fail(ctx, $M_ECUDA, \"%s failed: %s\", #call,         \\\n"
"                            cublasGetStatusString(ein_b_));                \\\n"
"    } while (0)\n"
"\n"
"static const float ein_one = 1.0f, ein_zero = 0.0f;\n"
"\n");
}

static void write_cudnn_support(Emit *em)
{
    emit_tpl(em,
"/* cuDNN calls go through EIN_DNN: a failure returns $M_ECUDA with the\n"
"   call and cuDNN's message in ctx->err. */\n"
"#define EIN_DNN(call)                                                      \\\n"
"    do {                                                                   \\\n"
"        cudnnStatus_t ein_d_ = (call);                                     \\\n"
"        if (ein_d_ != CUDNN_STATUS_SUCCESS)                                \\\n"
"            return ein_fail(ctx, $M_ECUDA, \"%s failed: %s\", #call,         \\\n"
"                            cudnnGetErrorString(ein_d_));                  \\\n"
"    } while (0)\n"
"\n"
"/* A backend descriptor owned by cv (destroyed with the context). */\n"
"static cudnnStatus_t ein_dnn_make(ein_conv *cv, cudnnBackendDescriptorType_t type,\n"
"                                  cudnnBackendDescriptor_t *out)\n"
"{\n"
"    *out = NULL;\n"
"    if (cv->nd == cv->capd) {\n"
"        int cap = cv->capd ? 2 * cv->capd : 16;\n"
"        cudnnBackendDescriptor_t *d = (cudnnBackendDescriptor_t *)\n"
"            realloc(cv->d, sizeof *d * (size_t)cap);\n"
"        if (!d)\n"
"            return CUDNN_STATUS_ALLOC_FAILED;\n"
"        cv->d = d;\n"
"        cv->capd = cap;\n"
"    }\n"
"    cudnnStatus_t s = cudnnBackendCreateDescriptor(type, out);\n"
"    if (s == CUDNN_STATUS_SUCCESS)\n"
"        cv->d[cv->nd++] = *out;\n"
"    return s;\n"
"}\n"
"\n"
"/* Everything cv made, destroyed; cv as new. */\n"
"static void ein_conv_drop(ein_conv *cv)\n"
"{\n"
"    if (cv->pack)\n"
"        cudnnBackendDestroyDescriptor(cv->pack);\n"
"    for (int j = cv->nd - 1; j >= 0; j--)\n"
"        cudnnBackendDestroyDescriptor(cv->d[j]);\n"
"    free(cv->d);\n"
"    memset(cv, 0, sizeof *cv);\n"
"}\n"
"\n"
"/* A packed NCHW tensor of the convolution, named by uid in the variant pack. */\n"
"static cudnnStatus_t ein_dnn_tensor(ein_conv *cv, int64_t uid, cudnnDataType_t dt,\n"
"                                    const int64_t *dims, cudnnBackendDescriptor_t *out)\n"
"{\n"
"    int64_t strides[4], align = 16;\n"
"    strides[3] = 1;\n"
"    strides[2] = dims[3];\n"
"    strides[1] = dims[2] * dims[3];\n"
"    strides[0] = dims[1] * strides[1];\n"
"    cudnnStatus_t s;\n"
"    if ((s = ein_dnn_make(cv, CUDNN_BACKEND_TENSOR_DESCRIPTOR, out)) != CUDNN_STATUS_SUCCESS ||\n"
"        (s = cudnnBackendSetAttribute(*out, CUDNN_ATTR_TENSOR_DATA_TYPE,\n"
"                                      CUDNN_TYPE_DATA_TYPE, 1, &dt)) != CUDNN_STATUS_SUCCESS ||\n"
"        (s = cudnnBackendSetAttribute(*out, CUDNN_ATTR_TENSOR_DIMENSIONS,\n"
"                                      CUDNN_TYPE_INT64, 4, dims)) != CUDNN_STATUS_SUCCESS ||\n"
"        (s = cudnnBackendSetAttribute(*out, CUDNN_ATTR_TENSOR_STRIDES,\n"
"                                      CUDNN_TYPE_INT64, 4, strides)) != CUDNN_STATUS_SUCCESS ||\n"
"        (s = cudnnBackendSetAttribute(*out, CUDNN_ATTR_TENSOR_UNIQUE_ID,\n"
"                                      CUDNN_TYPE_INT64, 1, &uid)) != CUDNN_STATUS_SUCCESS ||\n"
"        (s = cudnnBackendSetAttribute(*out, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT,\n"
"                                      CUDNN_TYPE_INT64, 1, &align)) != CUDNN_STATUS_SUCCESS)\n"
"        return s;\n"
"    return cudnnBackendFinalize(*out);\n"
"}\n"
"\n"
"/* Does an engine configuration compute in plain fp32?  Tensor-core engines\n"
"   round f32 operands to TF32; --precision=fp32 excludes them. */\n"
"static int ein_dnn_plain_fp32(ein_conv *cv, cudnnBackendDescriptor_t cfg)\n"
"{\n"
"    cudnnBackendDescriptor_t engine;\n"
"    cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];\n"
"    int64_t n = 0;\n"
"    if (ein_dnn_make(cv, CUDNN_BACKEND_ENGINE_DESCRIPTOR, &engine) != CUDNN_STATUS_SUCCESS ||\n"
"        cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE,\n"
"                                 CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &engine) !=\n"
"            CUDNN_STATUS_SUCCESS ||\n"
"        cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,\n"
"                                 CUDNN_TYPE_NUMERICAL_NOTE, CUDNN_NUMERICAL_NOTE_TYPE_COUNT,\n"
"                                 &n, notes) != CUDNN_STATUS_SUCCESS)\n"
"        return 0;\n"
"    for (int64_t i = 0; i < n; i++)\n"
"        if (notes[i] == CUDNN_NUMERICAL_NOTE_TENSOR_CORE ||\n"
"            notes[i] == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS)\n"
"            return 0;\n"
"    return 1;\n"
"}\n"
"\n"
"/* Build the execution plan of one convolution: a forward convolution of x\n"
"   (uid 1) with w (uid 2) into y (uid 3), or for a transposed one the\n"
"   backward-data operation with dy = x and dx = y.  Sizes are NCHW and\n"
"   [K, C/groups, R, S]; pad[] is the same before and after. */\n"
"static int ein_conv_setup($m_ctx *ctx, ein_conv *cv, const char *name, int transposed,\n"
"                          cudnnDataType_t dt, const int64_t *xd, const int64_t *wd,\n"
"                          const int64_t *yd, const int64_t *pad, const int64_t *stride,\n"
"                          const int64_t *dil, int tensor_cores)\n"
"{\n"
"    cudnnBackendDescriptor_t x, w, y, conv, op, graph;\n"
"    cudnnDataType_t comp = CUDNN_DATA_FLOAT;\n"
"    cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;\n"
"    int64_t nsp = 2;\n"
"    float alpha = 1.0f, beta = 0.0f;\n"
"    EIN_DNN(ein_dnn_tensor(cv, 1, dt, xd, &x));\n"
"    EIN_DNN(ein_dnn_tensor(cv, 2, dt, wd, &w));\n"
"    EIN_DNN(ein_dnn_tensor(cv, 3, dt, yd, &y));\n"
"    EIN_DNN(ein_dnn_make(cv, CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, &conv));\n"
"    EIN_DNN(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS,\n"
"                                     CUDNN_TYPE_INT64, 1, &nsp));\n"
"    EIN_DNN(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE,\n"
"                                     CUDNN_TYPE_DATA_TYPE, 1, &comp));\n"
"    EIN_DNN(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE,\n"
"                                     CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode));\n"
"    EIN_DNN(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_DILATIONS,\n"
"                                     CUDNN_TYPE_INT64, 2, dil));\n"
"    EIN_DNN(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES,\n"
"                                     CUDNN_TYPE_INT64, 2, stride));\n"
"    EIN_DNN(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS,\n"
"                                     CUDNN_TYPE_INT64, 2, pad));\n"
"    EIN_DNN(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS,\n"
"                                     CUDNN_TYPE_INT64, 2, pad));\n"
"    EIN_DNN(cudnnBackendFinalize(conv));\n"
"    if (!transposed) {\n"
"        EIN_DNN(ein_dnn_make(cv, CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, &op));\n"
"        EIN_DNN(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,\n"
"                                         CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x));\n"
"        EIN_DNN(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,\n"
"                                         CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &w));\n"
"        EIN_DNN(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,\n"
"                                         CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y));\n"
"        EIN_DNN(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,\n"
"                                         CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv));\n"
"        EIN_DNN(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,\n"
"                                         CUDNN_TYPE_FLOAT, 1, &alpha));\n"
"        EIN_DNN(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA,\n"
"                                         CUDNN_TYPE_FLOAT, 1, &beta));\n"
"    } else {\n"
"        EIN_DNN(ein_dnn_make(cv, CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,\n"
"                             &op));\n"
"        EIN_DNN(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,\n"
"                                         CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x));\n"
"        EIN_DNN(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,\n"
"                                         CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &w));\n"
"        EIN_DNN(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,\n"
"                                         CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y));\n"
"        EIN_DNN(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,\n"
"                                         CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv));\n"
"        EIN_DNN(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,\n"
"                                         CUDNN_TYPE_FLOAT, 1, &alpha));\n"
"        EIN_DNN(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA,\n"
"                                         CUDNN_TYPE_FLOAT, 1, &beta));\n"
"    }\n"
"    EIN_DNN(cudnnBackendFinalize(op));\n"
"    EIN_DNN(ein_dnn_make(cv, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &graph));\n"
"    EIN_DNN(cudnnBackendSetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS,\n"
"                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op));\n"
"    EIN_DNN(cudnnBackendSetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE,\n"
"                                     CUDNN_TYPE_HANDLE, 1, &ctx->dnn));\n"
"    EIN_DNN(cudnnBackendFinalize(graph));\n"
"    /* The heuristics' engines in their order; the first one that builds a\n"
"       plan (and, for fp32, uses no tensor cores) is the one. */\n"
"    static const cudnnBackendHeurMode_t modes[] = {CUDNN_HEUR_MODE_A,\n"
"                                                   CUDNN_HEUR_MODE_FALLBACK};\n"
"    for (int mi = 0; mi < 2; mi++) {\n"
"        cudnnBackendDescriptor_t heur, cfg[16];\n"
"        cudnnBackendHeurMode_t hm = modes[mi];\n"
"        int64_t n = 0;\n"
"        EIN_DNN(ein_dnn_make(cv, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &heur));\n"
"        EIN_DNN(cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,\n"
"                                         CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph));\n"
"        EIN_DNN(cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_MODE,\n"
"                                         CUDNN_TYPE_HEUR_MODE, 1, &hm));\n"
"        if (cudnnBackendFinalize(heur) != CUDNN_STATUS_SUCCESS)\n"
"            continue;\n"
"        for (int i = 0; i < 16; i++)\n"
"            EIN_DNN(ein_dnn_make(cv, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &cfg[i]));\n"
"        if (cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,\n"
"                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, 16, &n, cfg) !=\n"
"            CUDNN_STATUS_SUCCESS)\n"
"            continue;\n"
"        for (int64_t i = 0; i < n && i < 16; i++) {\n"
"            cudnnBackendDescriptor_t plan;\n"
"            if (!tensor_cores && !ein_dnn_plain_fp32(cv, cfg[i]))\n"
"                continue;\n"
"            EIN_DNN(ein_dnn_make(cv, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan));\n"
"            if (cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE,\n"
"                                         CUDNN_TYPE_HANDLE, 1, &ctx->dnn) !=\n"
"                    CUDNN_STATUS_SUCCESS ||\n"
"                cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,\n"
"                                         CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg[i]) !=\n"
"                    CUDNN_STATUS_SUCCESS ||\n"
"                cudnnBackendFinalize(plan) != CUDNN_STATUS_SUCCESS)\n"
"                continue;\n"
"            EIN_DNN(cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,\n"
"                                             CUDNN_TYPE_INT64, 1, &n, &cv->ws_bytes));\n"
"            cv->plan = plan;\n"
"            return 0;\n"
"        }\n"
"    }\n"
"    return ein_fail(ctx, $M_ECUDA, \"cuDNN has no engine for the convolution computing \"\n"
"                    \"'%s'%s\", name, tensor_cores ? \"\" : \" without tensor cores (the \"\n"
"                    \"program was compiled with --precision=fp32)\");\n"
"}\n"
"\n"
"/* A convolution cuDNN cannot plan runs as its generated kernel instead\n"
"   (ein_op_N checks cv->plan); the first reason is kept in ctx->dnn_note,\n"
"   which the --main harness prints as a note. */\n"
"static void ein_conv_fall_back($m_ctx *ctx, ein_conv *cv)\n"
"{\n"
"    if (!ctx->dnn_note[0])\n"
"        snprintf(ctx->dnn_note, sizeof ctx->dnn_note, \"%s; it runs as a generated \"\n"
"                 \"kernel\", ctx->err);\n"
"    ctx->err[0] = 0;\n"
"    ein_conv_drop(cv);\n"
"}\n"
"\n"
"/* Run a convolution on the caller's stream; the variant pack is rebuilt\n"
"   only when the pointers differ from the last run's. */\n"
"static int ein_conv_run($m_ctx *ctx, ein_conv *cv, const void *x, const void *w, void *y,\n"
"                        cudaStream_t stream)\n"
"{\n"
"    void *ptr[4] = {(void *)x, (void *)w, y, ctx->ws};\n"
"    if (((uintptr_t)x | (uintptr_t)w | (uintptr_t)y) % 16 != 0)\n"
"        return ein_fail(ctx, $M_EINVAL, \"cuDNN needs 16-byte aligned tensors\");\n"
"    if (!cv->pack || memcmp(ptr, cv->ptr, sizeof ptr) != 0) {\n"
"        static const int64_t uids[3] = {1, 2, 3};\n"
"        cudnnBackendDescriptor_t pack;\n"
"        if (cv->pack)\n"
"            cudnnBackendDestroyDescriptor(cv->pack);\n"
"        cv->pack = NULL;\n"
"        EIN_DNN(cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &pack));\n"
"        if (cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS,\n"
"                                     CUDNN_TYPE_INT64, 3, uids) != CUDNN_STATUS_SUCCESS ||\n"
"            cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS,\n"
"                                     CUDNN_TYPE_VOID_PTR, 3, ptr) != CUDNN_STATUS_SUCCESS ||\n"
"            cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE,\n"
"                                     CUDNN_TYPE_VOID_PTR, 1, &ptr[3]) != CUDNN_STATUS_SUCCESS ||\n"
"            cudnnBackendFinalize(pack) != CUDNN_STATUS_SUCCESS) {\n"
"            cudnnBackendDestroyDescriptor(pack);\n"
"            return ein_fail(ctx, $M_ECUDA, \"cannot make the cuDNN variant pack\");\n"
"        }\n"
"        cv->pack = pack;\n"
"        memcpy(cv->ptr, ptr, sizeof ptr);\n"
"    }\n"
"    EIN_DNN(cudnnSetStream(ctx->dnn, stream));\n"
"    EIN_DNN(cudnnBackendExecute(ctx->dnn, cv->plan, cv->pack));\n"
"    return 0;\n"
"}\n"
"\n");
}

/* The C target's library pieces. */
static void write_c_support(Emit *em)
{
    Sb *o = &em->out;
    if (em->libs & LIB_GEMM_C)
        sb_puts(o,
"/* C = A B for a batch of row-major matrices (out_nm: C stored [n][m],\n"
"   computed as C^T = B^T A^T).  ta: A stored [k][m]; tb: B stored [n][k]. */\n"
"static void ein_sgemm(int ta, int tb, int out_nm, int64_t m, int64_t n, int64_t k,\n"
"                      const float *a, int64_t lda, int64_t sa,\n"
"                      const float *b, int64_t ldb, int64_t sb,\n"
"                      float *c, int64_t ldc, int64_t sc, int64_t batch)\n"
"{\n"
"    for (int64_t i = 0; i < batch; i++) {\n"
"        if (!out_nm)\n"
"            cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,\n"
"                        tb ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k, 1.0f,\n"
"                        a + i * sa, (int)lda, b + i * sb, (int)ldb, 0.0f, c + i * sc,\n"
"                        (int)ldc);\n"
"        else\n"
"            cblas_sgemm(CblasRowMajor, tb ? CblasNoTrans : CblasTrans,\n"
"                        ta ? CblasNoTrans : CblasTrans, (int)n, (int)m, (int)k, 1.0f,\n"
"                        b + i * sb, (int)ldb, a + i * sa, (int)lda, 0.0f, c + i * sc,\n"
"                        (int)ldc);\n"
"    }\n"
"}\n"
"\n");
    if (em->libs & LIB_CONV_C)
        sb_puts(o,
"/* y[n, f, ho, wo] = sum x[n, c, st*ho + dil*r - ph, st*wo + dil*s - pw] w[f, c, r, s]\n"
"   (zero outside x): per image, the patches as a (c r s) x (ho wo) matrix\n"
"   (im2col) times the filters as f x (c r s).  A 1x1 convolution with\n"
"   stride 1 and no padding multiplies the image itself. */\n"
"static void ein_conv2d(const float *x, const float *w, float *y, float *col,\n"
"                       int64_t nn, int64_t c, int64_t h, int64_t wd, int64_t f,\n"
"                       int64_t r, int64_t s, int64_t ho, int64_t wo, int64_t st,\n"
"                       int64_t dil, int64_t ph, int64_t pw)\n"
"{\n"
"    int64_t kk = c * r * s, pp = ho * wo;\n"
"    int direct = r == 1 && s == 1 && st == 1 && ph == 0 && pw == 0 && ho == h && wo == wd;\n"
"    for (int64_t n = 0; n < nn; n++) {\n"
"        const float *xn = x + n * c * h * wd;\n"
"        if (!direct) {\n"
"#ifdef _OPENMP\n"
"#pragma omp parallel for schedule(static) if (kk * pp > 32768)\n"
"#endif\n"
"            for (int64_t row = 0; row < kk; row++) {\n"
"                int64_t ci = row / (r * s), ri = row / s % r, si = row % s;\n"
"                float *dst = col + row * pp;\n"
"                for (int64_t oh = 0; oh < ho; oh++) {\n"
"                    int64_t ih = st * oh + dil * ri - ph;\n"
"                    for (int64_t ow = 0; ow < wo; ow++) {\n"
"                        int64_t iw = st * ow + dil * si - pw;\n"
"                        dst[oh * wo + ow] = ih >= 0 && ih < h && iw >= 0 && iw < wd\n"
"                                                ? xn[(ci * h + ih) * wd + iw] : 0.0f;\n"
"                    }\n"
"                }\n"
"            }\n"
"        }\n"
"        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)f, (int)pp, (int)kk,\n"
"                    1.0f, w, (int)kk, direct ? xn : col, (int)pp, 0.0f, y + n * f * pp,\n"
"                    (int)pp);\n"
"    }\n"
"}\n"
"\n");
    if (em->libs & LIB_CONVT_C)
        sb_puts(o,
"/* The transposed convolution y[n, f, st*ih - pad + r, st*iw - pad + s] +=\n"
"   x[n, c, ih, iw] w[c, f, r, s]: per image, w^T as (f r s) x c times the\n"
"   image as c x (h w), then each column added where it lands (col2im). */\n"
"static void ein_conv_t2d(const float *x, const float *w, float *y, float *col,\n"
"                         int64_t nn, int64_t c, int64_t h, int64_t wd, int64_t f,\n"
"                         int64_t r, int64_t s, int64_t ho, int64_t wo, int64_t st,\n"
"                         int64_t pad)\n"
"{\n"
"    int64_t hw = h * wd, frs = f * r * s;\n"
"    for (int64_t n = 0; n < nn; n++) {\n"
"        float *yn = y + n * f * ho * wo;\n"
"        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)frs, (int)hw, (int)c,\n"
"                    1.0f, w, (int)frs, x + n * c * hw, (int)hw, 0.0f, col, (int)hw);\n"
"#ifdef _OPENMP\n"
"#pragma omp parallel for schedule(static) if (frs * hw > 32768)\n"
"#endif\n"
"        for (int64_t fi = 0; fi < f; fi++) {\n"
"            float *plane = yn + fi * ho * wo;\n"
"            memset(plane, 0, sizeof *plane * (size_t)(ho * wo));\n"
"            for (int64_t ri = 0; ri < r; ri++)\n"
"                for (int64_t si = 0; si < s; si++) {\n"
"                    const float *src = col + ((fi * r + ri) * s + si) * hw;\n"
"                    for (int64_t ih = 0; ih < h; ih++) {\n"
"                        int64_t oh = st * ih - pad + ri;\n"
"                        if (oh < 0 || oh >= ho)\n"
"                            continue;\n"
"                        for (int64_t iw = 0; iw < wd; iw++) {\n"
"                            int64_t ow = st * iw - pad + si;\n"
"                            if (ow >= 0 && ow < wo)\n"
"                                plane[oh * wo + ow] += src[ih * wd + iw];\n"
"                        }\n"
"                    }\n"
"                }\n"
"        }\n"
"    }\n"
"}\n"
"\n");
    if (em->libs & (LIB_G2BMM_C | LIB_GBMM_C))
        sb_puts(o,
"/* Banded products, b batches of m rows, band 2w + 1, inner size k, dilation\n"
"   d.  Row i = r + d*t (residue r) meets key rows r + d*u, u = t + j - w: a\n"
"   block of rows of one residue and the key rows of that residue its band\n"
"   covers make one dense product, whose band is the result (a block of T\n"
"   rows computes T (T + 2w) entries for T (2w + 1): little waste for a\n"
"   wide band).  Rows are d*k floats apart, a leading dimension as any.\n"
"   Key rows outside the sequence are zero. */\n");
    if (em->libs & LIB_G2BMM_C)
        sb_printf(o,
"/* s[b, i, j] = sum_c q[b, i, c] k[b, i + d (j - w), c] */\n"
"static void ein_g2bmm(const float *q, const float *k, float *s, float *tmp, int64_t nb,\n"
"                      int64_t m, int64_t w, int64_t kk, int64_t d)\n"
"{\n"
"    int64_t band = 2 * w + 1;\n"
"    for (int64_t b = 0; b < nb; b++)\n"
"        for (int64_t r = 0; r < d && r < m; r++) {\n"
"            int64_t nr = (m - r + d - 1) / d;\n"
"            const float *qr = q + (b * m + r) * kk, *kr = k + (b * m + r) * kk;\n"
"            float *sr = s + (b * m + r) * band;\n"
"            for (int64_t t0 = 0; t0 < nr; t0 += %d) {\n"
"                int64_t tn = nr - t0 < %d ? nr - t0 : %d;\n"
"                int64_t v0 = t0 - w > 0 ? t0 - w : 0;\n"
"                int64_t v1 = t0 + tn + w < nr ? t0 + tn + w : nr;\n"
"                int64_t len = v1 - v0;\n"
"                if (len > 0)\n"
"                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)tn, (int)len,\n"
"                                (int)kk, 1.0f, qr + t0 * d * kk, (int)(d * kk),\n"
"                                kr + v0 * d * kk, (int)(d * kk), 0.0f, tmp, (int)len);\n"
"                for (int64_t t = 0; t < tn; t++) {\n"
"                    float *row = sr + (t0 + t) * d * band;\n"
"                    for (int64_t j = 0; j < band; j++) {\n"
"                        int64_t u = t0 + t + j - w;\n"
"                        row[j] = u >= v0 && u < v1 ? tmp[t * len + (u - v0)] : 0.0f;\n"
"                    }\n"
"                }\n"
"            }\n"
"        }\n"
"}\n"
"\n", BAND_C_ROWS, BAND_C_ROWS, BAND_C_ROWS);
    if (em->libs & LIB_GBMM_C)
        sb_printf(o,
"/* o[b, i, c] = sum_j s[b, i, j] v[b, i + d (j - w), c] */\n"
"static void ein_gbmm(const float *s, const float *v, float *o, float *tmp, int64_t nb,\n"
"                     int64_t m, int64_t w, int64_t kk, int64_t d)\n"
"{\n"
"    int64_t band = 2 * w + 1;\n"
"    for (int64_t b = 0; b < nb; b++)\n"
"        for (int64_t r = 0; r < d && r < m; r++) {\n"
"            int64_t nr = (m - r + d - 1) / d;\n"
"            const float *sr = s + (b * m + r) * band, *vr = v + (b * m + r) * kk;\n"
"            float *orow = o + (b * m + r) * kk;\n"
"            for (int64_t t0 = 0; t0 < nr; t0 += %d) {\n"
"                int64_t tn = nr - t0 < %d ? nr - t0 : %d;\n"
"                int64_t v0 = t0 - w > 0 ? t0 - w : 0;\n"
"                int64_t v1 = t0 + tn + w < nr ? t0 + tn + w : nr;\n"
"                int64_t len = v1 - v0;\n"
"                if (len <= 0) {\n"
"                    for (int64_t t = 0; t < tn; t++)\n"
"                        memset(orow + (t0 + t) * d * kk, 0, sizeof(float) * (size_t)kk);\n"
"                    continue;\n"
"                }\n"
"                /* the block's band as dense rows over the key rows v0 .. v1 */\n"
"                memset(tmp, 0, sizeof(float) * (size_t)(tn * len));\n"
"                for (int64_t t = 0; t < tn; t++) {\n"
"                    const float *row = sr + (t0 + t) * d * band;\n"
"                    for (int64_t j = 0; j < band; j++) {\n"
"                        int64_t u = t0 + t + j - w;\n"
"                        if (u >= v0 && u < v1)\n"
"                            tmp[t * len + (u - v0)] = row[j];\n"
"                    }\n"
"                }\n"
"                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)tn, (int)kk,\n"
"                            (int)len, 1.0f, tmp, (int)len, vr + v0 * d * kk, (int)(d * kk),\n"
"                            0.0f, orow + t0 * d * kk, (int)(d * kk));\n"
"            }\n"
"        }\n"
"}\n"
"\n", BAND_C_ROWS, BAND_C_ROWS, BAND_C_ROWS);
    if (em->rnd_elems[0] || em->rnd_elems[1])
        sb_puts(o,
"/* A library operand rounded as a whole (ein_rnd) into a scratch buffer. */\n"
"static const float *ein_round(float *dst, const float *src, int64_t n)\n"
"{\n"
"    for (int64_t i = 0; i < n; i++)\n"
"        dst[i] = ein_rnd(src[i]);\n"
"    return dst;\n"
"}\n"
"\n");
}

void lib_write_support(Emit *em)
{
    if (em->libs & LIB_CUBLAS)
        write_cublas_support(em);
    if (em->libs & LIB_CUDNN)
        write_cudnn_support(em);
    if (em->libs & LIB_CBLAS)
        write_c_support(em);
}

/* ---- create and destroy ------------------------------------------------------- */

static const char *cudnn_type(ElemType e)
{
    return e == ELEM_F16 ? "CUDNN_DATA_HALF" : e == ELEM_BF16 ? "CUDNN_DATA_BFLOAT16"
                                                              : "CUDNN_DATA_FLOAT";
}

/* One view of a dense row-major operand: dims, and strides in elements
 * (perm: which stored dim each view dim is; NULL: the same order). */
static void write_dnnl_view(Emit *em, const char *name, int rank, const int64_t *dims,
                            const int *perm)
{
    int64_t stored[EMIT_DNNL_MAXD], st[EMIT_DNNL_MAXD], stride = 1;
    for (int d = 0; d < rank; d++)
        stored[perm ? perm[d] : d] = dims[d];
    for (int d = rank - 1; d >= 0; d--) {
        st[d] = stride;
        stride *= stored[d];
    }
    sb_printf(&em->out, "            sp.%s.rank = %d;\n", name, rank);
    for (int d = 0; d < rank; d++)
        sb_printf(&em->out, "            sp.%s.dims[%d] = %" PRId64 ", sp.%s.strides[%d] = %"
                  PRId64 ";\n", name, d, dims[d], name, d, st[perm ? perm[d] : d]);
}

/* M_create: the engine, one primitive per oneDNN operator (with its
 * reorders, made from the operands' views), the shared workspace. */
static void write_dnnl_create(Emit *em)
{
    const IrProgram *p = em->p;
    Sb *o = &em->out;
    emit_tpl(em, "    {\n"
                 "        char msg[256];\n"
                 "        if (ein_dnnl_open(&ctx->dnnl, msg) != 0)\n"
                 "            return ein_fail(ctx, $M_ELIB, \"%s\", msg);\n");
    for (int i = 0; i < p->ntensors; i++) {
        const IrTensor *t = p->tensors[i];
        if (t->kind != IT_STAGE || emit_op(em, t)->impl != IMPL_DNNL_CONV)
            continue;
        const PlanOp *op = emit_op(em, t);
        const OpMatch *m = &op->op;
        bool tr = m->kind == OPK_CONV_TRANSPOSE2D;
        int64_t g = m->groups > 0 ? m->groups : 1, oh = out_h(t), ow = out_w(t);
        sb_printf(o, "        {   /* %s: %s */\n"
                  "            ein_dnnl_spec sp;\n"
                  "            memset(&sp, 0, sizeof sp);\n"
                  "            sp.kind = %s;\n", t->name, op_kind_name(m->kind),
                  tr ? "EIN_DNNL_DECONV" : "EIN_DNNL_CONV");
        int64_t src[4] = {m->cn, m->c, m->h, m->w}, dst[4] = {m->cn, m->f, oh, ow};
        write_dnnl_view(em, "src", 4, src, NULL);
        if (tr) {
            /* oneDNN's [f, c, r, s] over einc's [c, f, r, s] */
            static const int perm[4] = {1, 0, 2, 3};
            int64_t wd[4] = {m->f, m->c, m->r, m->s};
            write_dnnl_view(em, "wei", 4, wd, perm);
        } else if (g == 1) {
            int64_t wd[4] = {m->f, m->c, m->r, m->s};
            write_dnnl_view(em, "wei", 4, wd, NULL);
        } else {
            int64_t wd[5] = {g, m->f / g, m->c / g, m->r, m->s};
            write_dnnl_view(em, "wei", 5, wd, NULL);
        }
        write_dnnl_view(em, "dst", 4, dst, NULL);
        /* the right and bottom padding: a convolution's output size is
         * rounded down from the same padding on both sides (match.c); a
         * deconvolution's output padding takes from it */
        int64_t pr_h = tr ? m->pad - m->out_pad : m->pad, pr_w = tr ? m->pad_w - m->out_pad
                                                                      : m->pad_w;
        bool wconst = m->in[1]->kind == IT_WEIGHT ||
                      (m->in[1]->kind == IT_STAGE && emit_op(em, m->in[1])->at_load);
        sb_printf(o, "            sp.stride[0] = sp.stride[1] = %" PRId64 ";\n"
                  "            sp.dilate[0] = sp.dilate[1] = %" PRId64 ";\n"
                  "            sp.pad_l[0] = %" PRId64 ", sp.pad_l[1] = %" PRId64 ";\n"
                  "            sp.pad_r[0] = %" PRId64 ", sp.pad_r[1] = %" PRId64 ";\n"
                  "            sp.wei_const = %d;\n",
                  m->stride, m->dilation - 1, m->pad, m->pad_w, pr_h, pr_w,
                  wconst && em->precision == PREC_FP32);
        sb_printf(o, "            if (ein_dnnl_create(&ctx->dnnl, &ctx->dnnl_op[%d], &sp, msg) "
                  "!= 0)\n", em->slot[i]);
        emit_tpl(em, "                return ein_fail(ctx, $M_ELIB, \"");
        sb_printf(o, "%s: %%s\", msg);\n        }\n", t->name);
    }
    emit_tpl(em, "        if (ein_dnnl_alloc(&ctx->dnnl, msg) != 0)\n"
                 "            return ein_fail(ctx, $M_ENOMEM, \"%s\", msg);\n"
                 "    }\n");
}

void lib_write_create(Emit *em)
{
    const IrProgram *p = em->p;
    Sb *o = &em->out;
    if (em->libs & LIB_CUBLAS)
        sb_puts(o, "    EIN_BLAS(cublasCreate(&ctx->blas));\n");
    if (em->libs & LIB_CUDNN) {
        sb_puts(o, "    EIN_DNN(cudnnCreate(&ctx->dnn));\n    {\n"
                   "        int64_t ws = 0;\n");
        for (int i = 0; i < p->ntensors; i++) {
            const IrTensor *t = p->tensors[i];
            if (em->slot[i] < 0)
                continue;
            const OpMatch *m = &emit_op(em, t)->op;
            bool tr = m->kind == OPK_CONV_TRANSPOSE2D;
            /* the filter as cuDNN sees it: [K, C/groups, R, S] of the
             * forward convolution (for a transposed one: K = c, C = f) */
            int64_t wk = tr ? m->c : m->f, wc = tr ? m->f : m->c / m->groups;
            bool tc = em->precision != PREC_FP32 || t->elem != ELEM_F32;
            sb_printf(o, "        {   /* %s: %s */\n", t->name, op_kind_name(m->kind));
            sb_printf(o, "            static const int64_t x[4] = {%" PRId64 ", %" PRId64
                      ", %" PRId64 ", %" PRId64 "};\n", m->cn, m->c, m->h, m->w);
            sb_printf(o, "            static const int64_t w[4] = {%" PRId64 ", %" PRId64
                      ", %" PRId64 ", %" PRId64 "};\n", wk, wc, m->r, m->s);
            sb_printf(o, "            static const int64_t y[4] = {%" PRId64 ", %" PRId64
                      ", %" PRId64 ", %" PRId64 "};\n", m->cn, m->f,
                      out_h(t), out_w(t));
            sb_printf(o, "            static const int64_t pad[2] = {%" PRId64 ", %" PRId64
                      "}, st[2] = {%" PRId64 ", %" PRId64 "}, dil[2] = {%" PRId64 ", %"
                      PRId64 "};\n", m->pad, m->pad_w, m->stride, m->stride, m->dilation,
                      m->dilation);
            sb_printf(o, "            if (ein_conv_setup(ctx, &ctx->conv[%d], \"%s\", %d, "
                      "%s, x, w, y, pad, st, dil, %d) != 0)\n"
                      "                ein_conv_fall_back(ctx, &ctx->conv[%d]);\n"
                      "            else if (ctx->conv[%d].ws_bytes > ws)\n"
                      "                ws = ctx->conv[%d].ws_bytes;\n        }\n",
                      em->slot[i], t->name, tr, cudnn_type(t->elem), tc, em->slot[i],
                      em->slot[i], em->slot[i]);
        }
        sb_puts(o, "        if (ws > 0)\n"
                   "            EIN_CUDA(cudaMalloc(&ctx->ws, (size_t)ws));\n    }\n");
    }
    if (em->libs & LIB_DNNL)
        write_dnnl_create(em);
    if (em->col_elems)
        sb_printf(o, "    if (!(ctx->col = (float *)malloc(sizeof(float) * %" PRId64 ")))\n"
                  "        return ein_fail(ctx, %s_ENOMEM, \"out of memory for the im2col "
                  "buffer\");\n", em->col_elems, em->upper);
    for (int j = 0; j < 2; j++)
        if (em->rnd_elems[j])
            sb_printf(o, "    if (!(ctx->rnd%d = (float *)malloc(sizeof(float) * %" PRId64 ")))\n"
                      "        return ein_fail(ctx, %s_ENOMEM, \"out of memory for the "
                      "rounded operands\");\n", j, em->rnd_elems[j], em->upper);
}

void lib_write_destroy(Emit *em)
{
    Sb *o = &em->out;
    if (em->libs & LIB_CUBLAS)
        sb_puts(o, "    if (ctx->blas && cublasDestroy(ctx->blas) != CUBLAS_STATUS_SUCCESS)\n"
                   "        rc = ");
    if (em->libs & LIB_CUBLAS)
        emit_tpl(em, "$M_ECUDA;\n");
    if (em->libs & LIB_CUDNN) {
        sb_printf(o, "    for (int i = 0; i < %d; i++)\n"
                  "        ein_conv_drop(&ctx->conv[i]);\n"
                  "    if (ctx->dnn && cudnnDestroy(ctx->dnn) != CUDNN_STATUS_SUCCESS)\n",
                  em->nconv);
        emit_tpl(em, "        rc = $M_ECUDA;\n"
                     "    if (ctx->ws && cudaFree(ctx->ws) != cudaSuccess)\n"
                     "        rc = $M_ECUDA;\n");
    }
    if (em->libs & LIB_DNNL)
        sb_printf(o, "    for (int i = 0; i < %d; i++)\n"
                  "        ein_dnnl_free(&ctx->dnnl_op[i]);\n"
                  "    ein_dnnl_close(&ctx->dnnl);\n", em->ndnnl);
    if (em->col_elems)
        sb_puts(o, "    free(ctx->col);\n");
    for (int j = 0; j < 2; j++)
        if (em->rnd_elems[j])
            sb_printf(o, "    free(ctx->rnd%d);\n", j);
}

/* ---- the calls ------------------------------------------------------------------ */

static const char *cuda_type(ElemType e)
{
    return e == ELEM_F16 ? "CUDA_R_16F" : e == ELEM_BF16 ? "CUDA_R_16BF" : "CUDA_R_32F";
}

static const char *cublas_compute(const Emit *em, ElemType e)
{
    if (e != ELEM_F32)
        return "CUBLAS_COMPUTE_32F";    /* 16-bit operands: tensor cores, f32 sums */
    switch (em->precision) {
    case PREC_TF32: return "CUBLAS_COMPUTE_32F_FAST_TF32";
    case PREC_FP16: return "CUBLAS_COMPUTE_32F_FAST_16F";
    case PREC_BF16: return "CUBLAS_COMPUTE_32F_FAST_16BF";
    default: return "CUBLAS_COMPUTE_32F";
    }
}

/* Operand j of a C library call: the buffer, or its rounded copy. */
static const char *c_operand(Emit *em, const OpMatch *m, int j)
{
    const IrTensor *x = m->in[j];
    if (em->precision == PREC_FP32)
        return arena_printf(em->arena, "(const float *)p[%d]", x->id);
    return arena_printf(em->arena, "ein_round(ctx->rnd%d, (const float *)p[%d], %" PRId64 ")",
                        j, x->id, (int64_t)ir_tensor_numel(x));
}

static void write_gemm(Emit *em, const IrTensor *t, const OpMatch *m, const char *in)
{
    Sb *o = &em->out;
    int64_t batch = m->batch ? m->batch : 1;
    if (!emit_is_cuda(em)) {
        sb_printf(o, "%sein_sgemm(%d, %d, %d, %" PRId64 ", %" PRId64 ", %" PRId64 ",\n"
                  "%s          %s + %" PRId64 ", %" PRId64 ", %" PRId64 ",\n"
                  "%s          %s + %" PRId64 ", %" PRId64 ", %" PRId64 ",\n"
                  "%s          (float *)p[%d], %" PRId64 ", %" PRId64 ", %" PRId64 ");\n",
                  in, m->trans_a, m->trans_b, m->out_nm, m->m, m->n, m->k,
                  in, c_operand(em, m, 0), m->off_a, m->lda, m->stride_a,
                  in, c_operand(em, m, 1), m->off_b, m->ldb, m->stride_b,
                  in, t->id, m->ldc, m->stride_c, batch);
        return;
    }
    /* Column-major cuBLAS sees a row-major [r][c] matrix as its transpose:
     * C^T = B^T A^T, or, for C stored [n][m], C = A B with both flipped. */
    size_t es = emit_elem_size(t->elem);
    const char *ty = cuda_type(t->elem);
    bool nm = m->out_nm;
    const char *op1 = nm ? (m->trans_a ? "CUBLAS_OP_N" : "CUBLAS_OP_T")
                         : (m->trans_b ? "CUBLAS_OP_T" : "CUBLAS_OP_N");
    const char *op2 = nm ? (m->trans_b ? "CUBLAS_OP_N" : "CUBLAS_OP_T")
                         : (m->trans_a ? "CUBLAS_OP_T" : "CUBLAS_OP_N");
    int first = nm ? 0 : 1;     /* operand passed first */
    int64_t d1 = nm ? m->m : m->n, d2 = nm ? m->n : m->m;
    int64_t off[2] = {m->off_a, m->off_b}, ld[2] = {m->lda, m->ldb};
    int64_t st[2] = {m->stride_a, m->stride_b};
    sb_printf(o, "%sEIN_BLAS(cublasSetStream(ctx->blas, stream));\n", in);
    sb_printf(o, "%sEIN_BLAS(cublasGemm%sEx(ctx->blas, %s, %s, %" PRId64 ", %" PRId64 ", %"
              PRId64 ", &ein_one,\n", in, batch > 1 ? "StridedBatched" : "", op1, op2, d1,
              d2, m->k);
    for (int q = 0; q < 2; q++) {
        int j = q == 0 ? first : 1 - first;
        sb_printf(o, "%s    (const char *)p[%d] + %" PRId64 ", %s, %" PRId64, in,
                  m->in[j]->id, off[j] * (int64_t)es, ty, ld[j]);
        if (batch > 1)
            sb_printf(o, ", %" PRId64, st[j]);
        sb_puts(o, ",\n");
    }
    sb_printf(o, "%s    &ein_zero, p[%d], %s, %" PRId64, in, t->id, ty, m->ldc);
    if (batch > 1)
        sb_printf(o, ", %" PRId64 ", %" PRId64, m->stride_c, batch);
    sb_printf(o, ", %s, CUBLAS_GEMM_DEFAULT));\n", cublas_compute(em, t->elem));
}

static void write_conv(Emit *em, const IrTensor *t, const OpMatch *m, const char *in)
{
    Sb *o = &em->out;
    if (emit_is_cuda(em)) {
        const Kernel *k = &em->kernels[em->kernel_of[t->id]];
        sb_printf(o, "%sif (!ctx->conv[%d].plan) {     /* cuDNN had no plan for it */\n",
                  in, em->slot[t->id]);
        cuda_write_launch(em, k, arena_printf(em->arena, "%s    ", in));
        sb_printf(o, "%s    return 0;\n%s}\n", in, in);
        sb_printf(o, "%sif ((rc = ein_conv_run(ctx, &ctx->conv[%d], p[%d], p[%d], p[%d], "
                  "stream)) != 0)\n%s    return rc;\n", in, em->slot[t->id], m->in[0]->id,
                  m->in[1]->id, t->id, in);
        return;
    }
    if (m->kind == OPK_CONV2D)
        sb_printf(o, "%sein_conv2d(%s, %s, (float *)p[%d], ctx->col,\n"
                  "%s           %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64
                  ", %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64
                  ", %" PRId64 ", %" PRId64 ");\n", in, c_operand(em, m, 0),
                  c_operand(em, m, 1), t->id, in, m->cn, m->c, m->h, m->w, m->f, m->r, m->s,
                  out_h(t), out_w(t), m->stride, m->dilation, m->pad, m->pad_w);
    else
        sb_printf(o, "%sein_conv_t2d(%s, %s, (float *)p[%d], ctx->col,\n"
                  "%s             %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 ", %"
                  PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64
                  ", %" PRId64 ");\n", in, c_operand(em, m, 0), c_operand(em, m, 1), t->id,
                  in, m->cn, m->c, m->h, m->w, m->f, m->r, m->s, out_h(t), out_w(t),
                  m->stride, m->pad);
}

/* A oneDNN operator's run: the operands' buffers into its primitive. */
static void write_dnnl_call(Emit *em, const IrTensor *t, const OpMatch *m, const char *in)
{
    Sb *o = &em->out;
    sb_printf(o, "%s{\n%s    char msg[256];\n"
              "%s    if (ein_dnnl_run(&ctx->dnnl, &ctx->dnnl_op[%d], %s, %s, NULL, p[%d], NULL, "
              "msg) != 0)\n", in, in, in, em->slot[t->id], c_operand(em, m, 0),
              c_operand(em, m, 1), t->id);
    sb_printf(o, "%s        return ein_fail(ctx, ", in);
    emit_tpl(em, "$M_ELIB");
    sb_printf(o, ", \"%s: %%s\", msg);\n%s}\n", t->name, in);
}

void lib_write_call(Emit *em, const IrTensor *t, const char *indent)
{
    const PlanOp *op = emit_op(em, t);
    const OpMatch *m = &op->op;
    switch (op->impl) {
    case IMPL_CUBLAS_GEMM: case IMPL_CBLAS_GEMM:
        write_gemm(em, t, m, indent);
        break;
    case IMPL_CUDNN_CONV: case IMPL_CBLAS_IM2COL: case IMPL_CBLAS_COL2IM:
        write_conv(em, t, m, indent);
        break;
    case IMPL_CUDA_BAND:
        band_write_launch(em, t, m, indent);
        break;
    case IMPL_DNNL_CONV:
        write_dnnl_call(em, t, m, indent);
        break;
    case IMPL_CBLAS_BAND:
        sb_printf(&em->out, "%sein_%s(%s, %s, (float *)p[%d], ctx->col, %"
                  PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 ");\n",
                  indent, m->kind == OPK_G2BMM ? "g2bmm" : "gbmm", c_operand(em, m, 0),
                  c_operand(em, m, 1), t->id, m->gb, m->gm, m->gw, m->gk, m->gdil);
        break;
    case IMPL_KERNEL:
        ICE_AT(t->loc, "'%s' is no library call", t->name);
    }
    /* the epilogue, as a pass of its own over the output */
    if (em->pass_of[t->id] >= 0) {
        const Kernel *k = &em->kernels[em->pass_of[t->id]];
        if (emit_is_cuda(em))
            cuda_write_launch(em, k, indent);
        else
            c_write_launch(em, k, indent);
    }
}

/* The kernels of the library operators that are generated: the tiled band
 * kernels. */
void lib_write_kernels(Emit *em)
{
    for (int i = 0; i < em->p->ntensors; i++) {
        const IrTensor *t = em->p->tensors[i];
        if (t->kind == IT_STAGE && emit_op(em, t)->impl == IMPL_CUDA_BAND)
            band_write_kernel(em, t, &emit_op(em, t)->op);
    }
}

/* One line of the kernel's comment in a .dot label or the file header:
 * what the call is. */
const char *lib_call_name(const Emit *em, const IrTensor *t)
{
    const PlanOp *op = emit_op(em, t);
    return cost_impl_call(op->impl, op->op.kind, op->op.batch > 1);
}
