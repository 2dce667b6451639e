/* lib.c - vendor operators.  An operator the plan runs as a library call
 * (derive/search/plan.h, chosen by derive/pricing/libs.c) is written as
 * one:
 *
 *   CUDA  GEMMs         cublasGemmEx / cublasGemmStridedBatchedEx; row-major
 *                       through the column-major identity C^T = B^T A^T, so
 *                       no operand is ever copied; a batch of two levels
 *                       (batch and heads) is cublasGemmBatchedEx after
 *                       ein_gemm_ptrs_k writes its arrays of pointers for
 *                       the run's buffers; one whose epilogue
 *                       cuBLASLt applies (PlanOp.lt) is one cublasLtMatmul
 *                       (runtime/cublaslt.cu: descriptors and algorithm
 *                       made at create time), and where cuBLASLt cannot
 *                       run it, cublasGemmEx and the epilogue's pass
 *         convolutions  cuDNN 9's graph (backend) API: per convolution one
 *                       execution plan, built when the context is created
 *                       (heuristics, first engine that finalizes and keeps
 *                       the precision); a transposed convolution is the
 *                       backward-data operation; one cuDNN cannot plan
 *                       runs as its generated kernel, with a note
 *         G2BMM, GBMM   tiled generated kernels (band.c), f32, the
 *                       operands read through their views
 *   C     GEMMs         cblas_sgemm (OpenBLAS), a batch as a loop (of two
 *                       levels: ein_sgemm_split)
 *         convolutions  with --dnnl, oneDNN (runtime/dnnl.c): a
 *                       convolution or deconvolution primitive per
 *                       operator made in ein_lib_create, weights
 *                       reordered into its layout when they change;
 *                       else im2col + cblas_sgemm per image (one group);
 *                       transposed: cblas_sgemm + col2im
 *         G2BMM, GBMM   cblas_sgemm per block of rows of one residue class
 *                       against the key rows its band covers, the
 *                       operands' views as pointers and leading dimensions
 *
 * A call with an epilogue that no library applies is followed by the
 * epilogue's pass over its output (a generated kernel, kernel.c).
 *
 * --precision: fp32 is IEEE single precision throughout (cuBLAS compute
 * type 32F_PEDANTIC, which no math mode or environment variable can turn
 * to TF32 or BF16x9 emulation; cuDNN engines without tensor cores).  tf32,
 * fp16 and bf16 round the f32 operands of every library call to that
 * format (ein_rnd, to nearest even) into scratch buffers, in C and on CUDA
 * alike (lib_rounds); on CUDA the library then computes them exactly on
 * tensor cores (cuBLAS 32F_FAST_TF32, cuDNN engines with tensor cores:
 * TF32 holds every value of the three formats).  Generated kernels round
 * the operands of their summed products (kernel.c), so a contraction
 * computes the same wherever it runs. */
#include "config.h"
#include "emit_int.h"

#include <inttypes.h>
#include <math.h>
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

static const char *cuda_type(ElemType e)
{
    return e == ELEM_F16 ? "CUDA_R_16F" : e == ELEM_BF16 ? "CUDA_R_16BF" : "CUDA_R_32F";
}

/* fp32: _PEDANTIC, so that no math mode or environment (cuBLAS's TF32
 * math mode, CUBLAS_EMULATE_SINGLE_PRECISION's BF16x9 emulation) changes
 * the arithmetic.  Below fp32 the operands come rounded (lib_rounds), exact
 * in TF32: FAST_TF32 computes them exactly, as the C target does.  16-bit
 * operands: tensor cores, f32 sums (their products are exact). */
static const char *cublas_compute(const Emit *em, ElemType e)
{
    if (e != ELEM_F32)
        return "CUBLAS_COMPUTE_32F";
    return em->precision == PREC_FP32 ? "CUBLAS_COMPUTE_32F_PEDANTIC"
                                           : "CUBLAS_COMPUTE_32F_FAST_TF32";
}

/* A row-major GEMM as cuBLAS's column-major one: C^T = B^T A^T (operand
 * 1 first), or, for C stored [n][m], C = A B with both flipped. */
typedef struct CuGemm {
    const char *op[2];          /* transa, transb */
    int first;                  /* the operand passed as A */
    int64_t m, n;               /* of the column-major product */
} CuGemm;

static CuGemm cu_gemm(const OpMatch *m)
{
    bool nm = m->out_nm;
    CuGemm g;
    g.op[0] = nm ? (m->trans_a ? "CUBLAS_OP_N" : "CUBLAS_OP_T")
                 : (m->trans_b ? "CUBLAS_OP_T" : "CUBLAS_OP_N");
    g.op[1] = nm ? (m->trans_b ? "CUBLAS_OP_N" : "CUBLAS_OP_T")
                 : (m->trans_a ? "CUBLAS_OP_T" : "CUBLAS_OP_N");
    g.first = nm ? 0 : 1;
    g.m = nm ? m->m : m->n;
    g.n = nm ? m->n : m->m;
    return g;
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
            if (op->lt.fused) {
                em->libs |= LIB_CUBLASLT;
                em->slot[i] = em->nlt++;
            } else if (m->split > 1) {      /* arrays of A's, B's and C's pointers */
                em->slot[i] = (int)em->ptr_elems;
                em->ptr_elems += 3 * m->batch;
            }
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
        case IMPL_DNNL_CONV: case IMPL_DNNL_MATMUL:
            em->libs |= LIB_DNNL;
            em->slot[i] = em->ndnnl++;
            break;
        case IMPL_KERNEL:
            break;
        }
        em->nlib++;
        /* reduced precision: scratch for the rounded operands (on CUDA
         * the f32 products and convolutions; band kernels round as they
         * load, 16-bit operands are exact) */
        if (lib_rounds(em, t)) {
            em->helpers |= HELP_RND;
            for (int j = 0; j < 2; j++)
                if ((int64_t)ir_tensor_numel(m->in[j]) > em->rnd_elems[j])
                    em->rnd_elems[j] = (int64_t)ir_tensor_numel(m->in[j]);
        }
    }
}

/* Does the call of stage t round its operands first (ein_rnd into
 * ctx->rnd0 and rnd1)?  With --precision below fp32: in C every library
 * call; on CUDA the f32 GEMMs and convolutions, so that the library sees
 * operands exact in TF32 and computes what the C target does (cuDNN's
 * FLOAT engines would round to TF32, cuBLAS's FAST_16F and FAST_16BF "to
 * half or TF32"). */
bool lib_rounds(const Emit *em, const IrTensor *t)
{
    if (em->precision == PREC_FP32 || !lib_is_call(em, t))
        return false;
    if (!emit_is_cuda(em))
        return true;
    OpImpl impl = emit_op(em, t)->impl;
    return t->elem == ELEM_F32 && (impl == IMPL_CUBLAS_GEMM || impl == IMPL_CUDNN_CONV);
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
    if (em->libs & LIB_CUBLASLT)
        sb_puts(cmd, " -lcublasLt");
    if (em->libs & LIB_CUDNN)
        sb_puts(cmd, " -lcudnn");
    if (em->libs & LIB_DNNL)
        sb_puts(cmd, " -ldnnl");
    if (em->libs & LIB_CBLAS)
        sb_puts(cmd, " -lopenblas");
}

/* New weights: each oneDNN operator whose weights are constant reorders
 * them again at its next run (in ein_run, when the load-time stages have
 * run again). */
void lib_write_weights_changed(Emit *em)
{
    if (em->libs & LIB_DNNL)
        sb_puts(&em->out, "        ein_dnnl_weights_changed(&ctx->dnnl);\n");
}

void lib_write_includes(Emit *em)
{
    Sb *o = &em->out;
    if (em->libs & LIB_CUBLAS)
        sb_puts(o, "#include <cublas_v2.h>\n");
    if (em->libs & LIB_CUBLASLT)
        sb_puts(o, "#include <cublasLt.h>\n");
    if (em->libs & LIB_CUDNN)
        sb_puts(o, "#include <cudnn.h>\n");
    if (em->libs & LIB_CBLAS)
        sb_puts(o, "#include <cblas.h>\n#define EIN_OPENBLAS 1\n");
    if (em->libs)
        sb_putc(o, '\n');
}

/* Types and fields of the context, written before `struct M_ctx`. */
void lib_write_types(Emit *em)
{
    if (em->libs & LIB_CUDNN)
        emit_paste(em, "cudnn_types.h");
    if (em->libs & LIB_CUBLASLT)
        emit_paste(em, "cublaslt_types.h");
    if (em->libs & LIB_DNNL)
        emit_paste(em, "dnnl_types.h");
}

void lib_write_ctx_fields(Emit *em)
{
    Sb *o = &em->out;
    if (em->libs & LIB_CUBLAS)
        sb_puts(o, "    cublasHandle_t blas;            /* created once, stream set per call */\n"
                   "    void *blas_ws;                  /* its workspace, set with the stream */\n");
    if (em->libs & LIB_CUBLASLT)
        sb_printf(o, "    cublasLtHandle_t lt;\n"
                  "    ein_lt lts[%d];                   /* the cuBLASLt GEMMs, ein_lts[] */\n",
                  em->nlt);
    if (em->libs & LIB_CUDNN)
        sb_printf(o, "    cudnnHandle_t dnn;\n"
                  "    ein_conv conv[%d];\n"
                  "    void *ws;                       /* the convolutions' workspace */\n"
                  "    int64_t ws_bytes;               /* its size */\n",
                  em->nconv);
    if (em->libs & LIB_DNNL)
        sb_puts(o, "    ein_dnnl dnnl;                  /* engine, stream, workspace, sets */\n"
                   "    ein_dnnl_op *dnnl_op;           /* the set of the run's thread count */\n");
    if (em->col_elems)
        sb_puts(o, "    float *col;                     /* im2col / col2im buffer */\n");
    for (int j = 0; j < 2; j++)
        if (em->rnd_elems[j])
            sb_printf(o, "    float *rnd%d;                    /* operand %d rounded to "
                      "--precision=%s */\n", j, j, cost_precision_name(em->precision));
    if (em->ptr_elems)
        sb_puts(o, "    const void **gemm_ptrs;         /* the matrices of cublasGemmBatchedEx */\n");
}

/* CUDA: the host side of ein_round_k (after ein_launched). */
static void write_round_support(Emit *em)
{
    emit_api_text(em,
"static int ein_round(model_ctx *ctx, float *dst, const float *src, int64_t n,\n"
"                     cudaStream_t stream)\n"
"{\n"
"    int64_t blocks = (n + 255) / 256;\n"
"    ein_round_k<<<blocks < 65536 ? (unsigned)blocks : 65536u, 256, 0, stream>>>(src, dst, n);\n"
"    return ein_launched(ctx, \"ein_round_k\");\n"
"}\n"
"\n");
}

/* ---- support code, written after api_host.c or api_cuda.cu ------------------- */

/* CUDA: the host side of ein_gemm_ptrs_k (after ein_launched). */
static void write_gemm_ptrs_support(Emit *em)
{
    emit_api_text(em,
"static int ein_gemm_ptrs(model_ctx *ctx, const void **ptrs, const void *a, int64_t sa,\n"
"                         int64_t ssa, const void *b, int64_t sb, int64_t ssb, void *c,\n"
"                         int64_t sc, int64_t ssc, int batch, int split, cudaStream_t stream)\n"
"{\n"
"    ein_gemm_ptrs_k<<<(batch + 255) / 256, 256, 0, stream>>>(ptrs, (const char *)a, sa, ssa,\n"
"                                                           (const char *)b, sb, ssb,\n"
"                                                           (const char *)c, sc, ssc,\n"
"                                                           batch, split);\n"
"    return ein_launched(ctx, \"ein_gemm_ptrs_k\");\n"
"}\n"
"\n");
}

void lib_write_support(Emit *em)
{
    if (emit_is_cuda(em) && (em->rnd_elems[0] || em->rnd_elems[1]))
        write_round_support(em);
    if (em->ptr_elems)
        write_gemm_ptrs_support(em);
    if (em->libs & LIB_CUBLAS)
        emit_paste(em, "cublas.cu");
    if (em->libs & LIB_CUBLASLT)
        emit_paste(em, "cublaslt.cu");
    if (em->libs & LIB_CUDNN)
        emit_paste(em, "cudnn.cu");
    if (em->libs & LIB_CBLAS) {
        sb_printf(&em->out, "#define EIN_BAND_ROWS %d  /* rows of a block of ein_g2bmm and "
                  "ein_gbmm */\n\n", BAND_C_ROWS);
        emit_paste(em, "cblas.c");
    }
    if (em->libs & LIB_DNNL)
        emit_paste(em, "dnnl.c");
    if (!emit_is_cuda(em) && (em->rnd_elems[0] || em->rnd_elems[1]))
        sb_puts(&em->out,
"/* A library operand rounded as a whole (ein_rnd) into a scratch buffer. */\n"
"static const float *ein_round(float *dst, const float *src, int64_t n)\n"
"{\n"
"    for (int64_t i = 0; i < n; i++)\n"
"        dst[i] = ein_rnd(src[i]);\n"
"    return dst;\n"
"}\n"
"\n");
}

/* ---- create and destroy ------------------------------------------------------- */

static const char *cudnn_type(ElemType e)
{
    return e == ELEM_F16 ? "CUDNN_DATA_HALF" : e == ELEM_BF16 ? "CUDNN_DATA_BFLOAT16"
                                                              : "CUDNN_DATA_FLOAT";
}

/* The pointwise nodes of the convolution computing t, as its graph
 * computes them (plan_pointwise): ein_pw_<id>[], in cuDNN's modes. */
static void write_pw_table(Emit *em, const IrTensor *t)
{
    static const char *const modes[] = {
        [PW_ADD] = "ADD", [PW_SUB] = "SUB", [PW_MUL] = "MUL", [PW_DIV] = "DIV",
        [PW_MAX] = "MAX", [PW_MIN] = "MIN", [PW_RELU] = "RELU_FWD", [PW_TANH] = "TANH_FWD",
        [PW_SIGMOID] = "SIGMOID_FWD", [PW_EXP] = "EXP", [PW_ABS] = "ABS", [PW_SQRT] = "SQRT",
        [PW_GELU] = "GELU_FWD"};
    LibPost post[LIB_POST_MAX];
    LibPw pw[LIB_PW_MAX];
    int n = plan_pointwise(emit_op(em, t), post, pw);
    Sb *o = &em->out;
    char what[256];
    sb_puts(o, "/* ");
    emit_comment_text(o, t->name);
    sb_printf(o, ": %s */\nstatic const ein_pw_spec ein_pw_%d[%d] = {\n",
              plan_pw_name(emit_op(em, t), what, sizeof what), t->id, n);
    for (int i = 0; i < n; i++) {
        const LibPost *q = pw[i].post >= 0 ? &post[pw[i].post] : NULL;
        sb_printf(o, "    {CUDNN_POINTWISE_%s, %s, ", modes[pw[i].mode],
                  q ? "EIN_PW_TENSOR" : pw[i].mode <= PW_MIN ? "EIN_PW_SCALAR" : "EIN_PW_UNARY");
        emit_float(o, q ? 0 : pw[i].value);
        if (!q) {
            sb_puts(o, "},\n");
            continue;
        }
        /* a broadcast dim (1) strides over the dims inside it, as a packed
         * tensor's would (its stride is never used; NVIDIA's frontend
         * writes a bias [1, K, 1, 1] as strides [K, 1, 1, 1]) */
        int64_t st[4];
        for (int d = 3; d >= 0; d--)
            st[d] = q->dims[d] != 1 ? q->strides[d] : d == 3 ? 1 : st[d + 1] * q->dims[d + 1];
        /* b's pointer is the tensor's buffer `offset` elements in: aligned
         * as far as that keeps the buffer's 16 bytes */
        int64_t off = q->offset * 4;
        sb_printf(o, ", {%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 "}, {%" PRId64 ", %"
                  PRId64 ", %" PRId64 ", %" PRId64 "}, %d},\n", q->dims[0], q->dims[1],
                  q->dims[2], q->dims[3], st[0], st[1], st[2], st[3],
                  off % 16 == 0 ? 16 : off % 8 == 0 ? 8 : 4);
    }
    sb_puts(o, "};\n\n");
}

/* The convolutions as runtime/cudnn.cu takes them: ein_convs[i] is built
 * into ctx->conv[i]. */
static void write_conv_table(Emit *em)
{
    const IrProgram *p = em->p;
    Sb *o = &em->out;
    for (int i = 0; i < p->ntensors; i++)
        if (em->slot[i] >= 0 && emit_op(em, p->tensors[i])->impl == IMPL_CUDNN_CONV &&
            plan_dnn_fused(emit_op(em, p->tensors[i])))
            write_pw_table(em, p->tensors[i]);
    sb_printf(o, "/* The convolutions cuDNN runs, ctx->conv[i] for ein_convs[i]: name,\n"
                 "   transposed, data type, tensor cores, x, w, y, pad, stride, dilation,\n"
                 "   the engine to try first, the pointwise nodes of the epilogue\n"
                 "   (runtime/cudnn_types.h). */\n"
                 "static const ein_conv_spec ein_convs[%d] = {\n", em->nconv);
    for (int i = 0; i < p->ntensors; i++) {
        const IrTensor *t = p->tensors[i];
        if (em->slot[i] < 0 || emit_op(em, t)->impl != IMPL_CUDNN_CONV)
            continue;
        const OpMatch *m = &emit_op(em, t)->op;
        LibPost post[LIB_POST_MAX];
        LibPw pw[LIB_PW_MAX];
        int npw = plan_pointwise(emit_op(em, t), post, pw);
        bool tr = m->kind == OPK_CONV_TRANSPOSE2D;
        /* the filter as cuDNN sees it: [K, C/groups, R, S] of the forward
         * convolution (for a transposed one: K = c, C = f) */
        int64_t wk = tr ? m->c : m->f, wc = tr ? m->f : m->c / m->groups;
        bool tc = em->precision != PREC_FP32 || t->elem != ELEM_F32;
        sb_printf(o, "    /* %s: %s */\n", t->name, op_kind_name(m->kind));
        sb_printf(o, "    {\"%s\", %d, %s, %d,\n", t->name, tr, cudnn_type(t->elem), tc);
        sb_printf(o, "     {%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 "}, {%" PRId64
                  ", %" PRId64 ", %" PRId64 ", %" PRId64 "}, {%" PRId64 ", %" PRId64 ", %"
                  PRId64 ", %" PRId64 "},\n", m->cn, m->c, m->h, m->w, wk, wc, m->r, m->s,
                  m->cn, m->f, out_h(t), out_w(t));
        sb_printf(o, "     {%" PRId64 ", %" PRId64 "}, {%" PRId64 ", %" PRId64 "}, {%" PRId64
                  ", %" PRId64 "}, %" PRId64 ", ", m->pad, m->pad_w, m->stride, m->stride,
                  m->dilation, m->dilation, emit_op(em, t)->engine);
        if (npw > 0)
            sb_printf(o, "ein_pw_%d, %d},\n", t->id, npw);
        else
            sb_puts(o, "NULL, 0},\n");
    }
    sb_puts(o, "};\n\n");
}

/* The GEMMs whose epilogue cuBLASLt applies, as runtime/cublaslt.cu
 * takes them: ein_lts[i] is set up into ctx->lts[i]. */
static void write_lt_table(Emit *em)
{
    static const char *const epilogues[2][3] = {
        {"CUBLASLT_EPILOGUE_DEFAULT", "CUBLASLT_EPILOGUE_RELU", "CUBLASLT_EPILOGUE_GELU"},
        {"CUBLASLT_EPILOGUE_BIAS", "CUBLASLT_EPILOGUE_RELU_BIAS", "CUBLASLT_EPILOGUE_GELU_BIAS"},
    };
    const IrProgram *p = em->p;
    Sb *o = &em->out;
    sb_printf(o, "/* The GEMMs cuBLASLt runs with their epilogues, ctx->lts[i] for ein_lts[i]:\n"
                 "   name, transa, transb, m, n, k, lda, ldb, ldc, batch strides of A, B\n"
                 "   and C, batch, compute type, epilogue, bias tensor, alpha, beta\n"
                 "   (runtime/cublaslt_types.h). */\n"
                 "static const ein_lt_spec ein_lts[%d] = {\n", em->nlt);
    char what[128];
    for (int i = 0; i < p->ntensors; i++) {
        const IrTensor *t = p->tensors[i];
        if (!lib_is_call(em, t) || !emit_op(em, t)->lt.fused)
            continue;
        const PlanOp *op = emit_op(em, t);
        const OpMatch *m = &op->op;
        CuGemm g = cu_gemm(m);
        int64_t ld[2] = {m->lda, m->ldb}, st[2] = {m->stride_a, m->stride_b};
        int j0 = g.first, j1 = 1 - g.first;
        sb_puts(o, "    /* ");
        emit_comment_text(o, t->name);
        sb_printf(o, ": %s */\n    {", plan_lt_name(op, what, sizeof what));
        emit_c_string(o, t->name);
        sb_printf(o, ", %s, %s, %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64
                  ", %" PRId64 ",\n     %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64
                  ", %s, %s, %d, ", g.op[0], g.op[1], g.m, g.n, m->k, ld[j0], ld[j1], m->ldc,
                  m->batch > 1 ? st[j0] : 0, m->batch > 1 ? st[j1] : 0,
                  m->batch > 1 ? m->stride_c : 0, m->batch > 1 ? m->batch : 1,
                  cublas_compute(em, t->elem), epilogues[op->lt.bias != NULL][op->lt.act],
                  op->lt.bias ? op->lt.bias->id : -1);
        emit_float(o, op->lt.alpha);
        sb_puts(o, ", ");
        emit_float(o, op->lt.beta);
        sb_puts(o, "},\n");
    }
    sb_puts(o, "};\n\n");
}

/* One view of an operand: dims, strides and the first element's offset,
 * in elements. */
static void write_dnnl_strided(Emit *em, const char *name, int rank, const int64_t *dims,
                               const int64_t *strides, int64_t offset)
{
    sb_printf(&em->out, "        sp.%s.rank = %d;\n", name, rank);
    if (offset)
        sb_printf(&em->out, "        sp.%s.offset = %" PRId64 ";\n", name, offset);
    for (int d = 0; d < rank; d++)
        sb_printf(&em->out, "        sp.%s.dims[%d] = %" PRId64 ", sp.%s.strides[%d] = %"
                  PRId64 ";\n", name, d, dims[d], name, d, strides[d]);
}

/* One view of a dense row-major operand: dims, and strides in elements
 * (perm: which stored dim each view dim is; NULL: the same order). */
static void write_dnnl_view(Emit *em, const char *name, int rank, const int64_t *dims,
                            const int *perm)
{
    int64_t stored[EMIT_DNNL_MAXD], st[EMIT_DNNL_MAXD], vs[EMIT_DNNL_MAXD], stride = 1;
    for (int d = 0; d < rank; d++)
        stored[perm ? perm[d] : d] = dims[d];
    for (int d = rank - 1; d >= 0; d--) {
        st[d] = stride;
        stride *= stored[d];
    }
    for (int d = 0; d < rank; d++)
        vs[d] = st[perm ? perm[d] : d];
    write_dnnl_strided(em, name, rank, dims, vs, 0);
}

/* A GEMM's three operands as oneDNN's matmul views: src [.., m, k],
 * weights [.., k, n], dst [.., m, n], one product (libs.c, dnnl_gemm_ok).
 * The leading dims, all 1, are as many as the output tensor's where the
 * output is the tensor itself (plan_gemm_dst_whole: the post-ops'
 * operands have its rank), else one. */
static void write_dnnl_gemm_views(Emit *em, const PlanOp *op)
{
    const OpMatch *m = &op->op;
    const IrTensor *t = op->out;
    int nb = plan_gemm_dst_whole(op) ? t->rank - 2 : 1, r = nb + 2;
    if (r > EMIT_DNNL_MAXD || m->batch > 1)
        ICE_AT(t->loc, "'%s' is no single product in at most %d dims for oneDNN", t->name,
               EMIT_DNNL_MAXD);
    const char *names[3] = {"src", "wei", "dst"};
    int64_t rows[3] = {m->m, m->k, m->m}, cols[3] = {m->k, m->n, m->n};
    int64_t ld[3] = {m->lda, m->ldb, m->ldc}, off[3] = {m->off_a, m->off_b, 0};
    bool tr[3] = {m->trans_a, m->trans_b, m->out_nm};
    for (int j = 0; j < 3; j++) {
        int64_t dims[EMIT_DNNL_MAXD], st[EMIT_DNNL_MAXD];
        dims[nb] = rows[j], dims[nb + 1] = cols[j];
        st[nb] = tr[j] ? 1 : ld[j];
        st[nb + 1] = tr[j] ? ld[j] : 1;
        /* a dim of 1 strides past the dims inside it, as a dense layout
         * would: oneDNN reads the layout's format from the strides, and
         * takes a 0 there for a permuted one it has no fast kernel for */
        int64_t past = st[nb] * rows[j] > st[nb + 1] * cols[j] ? st[nb] * rows[j]
                                                                : st[nb + 1] * cols[j];
        for (int d = 0; d < nb; d++)
            dims[d] = 1, st[d] = past;
        write_dnnl_strided(em, names[j], r, dims, st, off[j]);
    }
}

/* The plan's post-ops of a oneDNN operator (plan_post_ops): sp.post[],
 * the binary ones' operands numbered in order (the run's src1[]). */
static void write_dnnl_posts(Emit *em, const PlanOp *op)
{
    static const char *const algs[] = {
        [POST_RELU] = "dnnl_eltwise_relu", [POST_TANH] = "dnnl_eltwise_tanh",
        [POST_LOGISTIC] = "dnnl_eltwise_logistic", [POST_EXP] = "dnnl_eltwise_exp",
        [POST_ABS] = "dnnl_eltwise_abs", [POST_SQRT] = "dnnl_eltwise_sqrt",
        [POST_LINEAR] = "dnnl_eltwise_linear", [POST_CLIP] = "dnnl_eltwise_clip",
        [POST_GELU] = "dnnl_eltwise_gelu_erf",
        [POST_ADD] = "dnnl_binary_add", [POST_SUB] = "dnnl_binary_sub",
        [POST_MUL] = "dnnl_binary_mul", [POST_DIV] = "dnnl_binary_div",
        [POST_MAX] = "dnnl_binary_max", [POST_MIN] = "dnnl_binary_min"};
    LibPost post[LIB_POST_MAX];
    int n = plan_post_ops(op, post), arg = 0;
    Sb *o = &em->out;
    for (int i = 0; i < n; i++) {
        const LibPost *q = &post[i];
        sb_printf(o, "        sp.post[%d].kind = %s, sp.post[%d].alg = %s;\n", i,
                  q->binary ? "EIN_POST_BINARY" : "EIN_POST_ELTWISE", i, algs[q->alg]);
        if (!q->binary) {
            /* oneDNN takes floats: no bound is the largest one (FLT_MAX) */
            double ab[2] = {q->alpha, q->beta};
            for (int k = 0; k < 2; k++) {
                sb_printf(o, "        sp.post[%d].%s = ", i, k ? "beta" : "alpha");
                if (isinf(ab[k]))
                    sb_puts(o, ab[k] > 0 ? "3.40282347e+38f" : "-3.40282347e+38f");
                else
                    emit_float(o, ab[k]);
                sb_puts(o, ";\n");
            }
            continue;
        }
        sb_printf(o, "        sp.post[%d].arg = %d;\n"
                  "        sp.post[%d].src1.rank = %d, sp.post[%d].src1.offset = %" PRId64 ";\n",
                  i, arg++, i, q->rank, i, q->offset);
        for (int d = 0; d < q->rank; d++)
            sb_printf(o, "        sp.post[%d].src1.dims[%d] = %" PRId64
                      ", sp.post[%d].src1.strides[%d] = %" PRId64 ";\n",
                      i, d, q->dims[d], i, d, q->strides[d]);
    }
    if (n)
        sb_printf(o, "        sp.npost = %d;\n", n);
}

/* The end of one operator's block in ein_lib_create: its primitive made
 * from `sp`. */
static void write_dnnl_make(Emit *em, const IrTensor *t)
{
    sb_printf(&em->out, "        if (ein_dnnl_create(&ctx->dnnl, &ctx->dnnl_op[%d], &sp, NULL, "
              "msg) != 0)\n"
              "            return ein_fail(ctx, %s_ELIB, \"%s: %%s\", msg);\n    }\n",
              em->slot[t->id], em->upper, t->name);
}

/* In ein_lib_create: the engine, one primitive per oneDNN operator (with
 * its reorders, made from the operands' views), the shared workspace. */
static void write_dnnl_create(Emit *em)
{
    const IrProgram *p = em->p;
    Sb *o = &em->out;
    sb_printf(o, "    char msg[256];\n"
              "    if (ein_dnnl_open(&ctx->dnnl, %d, msg) != 0)\n"
              "        return ein_fail(ctx, %s_ELIB, \"%%s\", msg);\n"
              "    ctx->dnnl_op = ctx->dnnl.set[0];\n", em->ndnnl, em->upper);
    for (int i = 0; i < p->ntensors; i++) {
        const IrTensor *t = p->tensors[i];
        if (t->kind != IT_STAGE || (emit_op(em, t)->impl != IMPL_DNNL_CONV &&
                                    emit_op(em, t)->impl != IMPL_DNNL_MATMUL))
            continue;
        const PlanOp *op = emit_op(em, t);
        const OpMatch *m = &op->op;
        bool wconst = m->in[1]->kind == IT_WEIGHT ||
                      (m->in[1]->kind == IT_STAGE && emit_op(em, m->in[1])->at_load);
        if (op->impl == IMPL_DNNL_MATMUL) {
            sb_printf(o, "    {   /* %s: %s */\n"
                      "        ein_dnnl_spec sp;\n"
                      "        memset(&sp, 0, sizeof sp);\n"
                      "        sp.kind = EIN_DNNL_MATMUL;\n", t->name, op_kind_name(m->kind));
            write_dnnl_gemm_views(em, op);
            write_dnnl_posts(em, op);
            sb_printf(o, "        sp.wei_const = %d;\n", wconst);
            write_dnnl_make(em, t);
            continue;
        }
        bool tr = m->kind == OPK_CONV_TRANSPOSE2D;
        int64_t g = m->groups > 0 ? m->groups : 1, oh = out_h(t), ow = out_w(t);
        sb_printf(o, "    {   /* %s: %s */\n"
                  "        ein_dnnl_spec sp;\n"
                  "        memset(&sp, 0, sizeof sp);\n"
                  "        sp.kind = %s;\n", t->name, op_kind_name(m->kind),
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
        write_dnnl_posts(em, op);
        /* the right and bottom padding: a convolution's output size is
         * rounded down from the same padding on both sides (match.c); a
         * deconvolution's output padding takes from it */
        int64_t pr_h = tr ? m->pad - m->out_pad : m->pad, pr_w = tr ? m->pad_w - m->out_pad
                                                                      : m->pad_w;
        sb_printf(o, "        sp.stride[0] = sp.stride[1] = %" PRId64 ";\n"
                  "        sp.dilate[0] = sp.dilate[1] = %" PRId64 ";\n"
                  "        sp.pad_l[0] = %" PRId64 ", sp.pad_l[1] = %" PRId64 ";\n"
                  "        sp.pad_r[0] = %" PRId64 ", sp.pad_r[1] = %" PRId64 ";\n"
                  "        sp.wei_const = %d;\n",
                  m->stride, m->dilation - 1, m->pad, m->pad_w, pr_h, pr_w,
                  wconst && em->precision == PREC_FP32);
        if (op->src_from)
            sb_printf(o, "        sp.src_back = %d;   /* %s's operator */\n",
                      em->slot[t->id] - em->slot[op->src_from->id], op->src_from->name);
        write_dnnl_make(em, t);
    }
    emit_api_text(em, "    if (ein_dnnl_alloc(&ctx->dnnl, msg) != 0)\n"
                      "        return ein_fail(ctx, MODEL_ENOMEM, \"%s\", msg);\n");
}

void lib_write_create_destroy(Emit *em)
{
    Sb *o = &em->out;
    unsigned libs = em->libs;
    bool any = (libs & (LIB_CUBLAS | LIB_CUDNN | LIB_DNNL)) || em->col_elems ||
               em->rnd_elems[0] || em->rnd_elems[1] || em->ptr_elems;
    if (libs & LIB_CUDNN)
        write_conv_table(em);
    if (libs & LIB_CUBLASLT)
        write_lt_table(em);
    emit_api_text(em, "/* What the library calls need: made after the tensors' buffers, freed\n"
                      "   before them. */\n"
                      "static int ein_lib_create(model_ctx *ctx)\n{\n");
    if (libs & (LIB_CUDNN | LIB_CUBLASLT))
        sb_puts(o, "    int rc;\n");
    if (!any)
        sb_puts(o, "    (void)ctx;\n");
    if (libs & LIB_CUBLAS)
        sb_puts(o, "    EIN_BLAS(cublasCreate(&ctx->blas));\n"
                   "    EIN_CUDA(cudaMalloc(&ctx->blas_ws, EIN_CUBLAS_WORKSPACE));\n");
    if (libs & LIB_CUDNN)
        sb_printf(o, "    if ((rc = ein_dnn_create(ctx, ein_convs, %d)) != 0)\n"
                  "        return rc;\n", em->nconv);
    /* after cuDNN's, which clears the note it may leave */
    if (libs & LIB_CUBLASLT)
        sb_printf(o, "    if ((rc = ein_lt_create(ctx, ein_lts, %d)) != 0)\n"
                  "        return rc;\n", em->nlt);
    if (libs & LIB_DNNL)
        write_dnnl_create(em);
    if (em->col_elems)
        sb_printf(o, "    if (!(ctx->col = (float *)malloc(sizeof(float) * %" PRId64 ")))\n"
                  "        return ein_fail(ctx, %s_ENOMEM, \"out of memory for the im2col "
                  "buffer\");\n", em->col_elems, em->upper);
    if (em->ptr_elems)
        sb_printf(o, "    EIN_CUDA(cudaMalloc((void **)&ctx->gemm_ptrs, sizeof(void *) * %" PRId64
                  "));\n", em->ptr_elems);
    for (int j = 0; j < 2; j++)
        if (em->rnd_elems[j] && emit_is_cuda(em))
            sb_printf(o, "    EIN_CUDA(cudaMalloc((void **)&ctx->rnd%d, sizeof(float) * %" PRId64
                      "));\n", j, em->rnd_elems[j]);
        else if (em->rnd_elems[j])
            sb_printf(o, "    if (!(ctx->rnd%d = (float *)malloc(sizeof(float) * %" PRId64 ")))\n"
                      "        return ein_fail(ctx, %s_ENOMEM, \"out of memory for the "
                      "rounded operands\");\n", j, em->rnd_elems[j], em->upper);
    emit_api_text(em, "    return MODEL_OK;\n}\n\n"
                      "/* The context is gone by then: a failure has no message. */\n"
                      "static int ein_lib_destroy(model_ctx *ctx)\n{\n"
                      "    int rc = MODEL_OK;\n");
    if (!any)
        sb_puts(o, "    (void)ctx;\n");
    if (libs & LIB_CUBLASLT)
        sb_printf(o, "    if (ein_lt_destroy(ctx, %d) != 0)\n        rc = %s_ECUDA;\n",
                  em->nlt, em->upper);
    if (libs & LIB_CUBLAS)
        emit_api_text(em, "    if (ctx->blas && cublasDestroy(ctx->blas) != CUBLAS_STATUS_SUCCESS)\n"
                          "        rc = MODEL_ECUDA;\n"
                          "    if (ctx->blas_ws && cudaFree(ctx->blas_ws) != cudaSuccess)\n"
                          "        rc = MODEL_ECUDA;\n");
    if (libs & LIB_CUDNN)
        sb_printf(o, "    if (ein_dnn_destroy(ctx, %d) != 0)\n        rc = %s_ECUDA;\n",
                  em->nconv, em->upper);
    if (libs & LIB_DNNL)
        sb_puts(o, "    ein_dnnl_close(&ctx->dnnl);\n");
    if (em->col_elems)
        sb_puts(o, "    free(ctx->col);\n");
    if (em->ptr_elems)
        sb_printf(o, "    if (ctx->gemm_ptrs && cudaFree(ctx->gemm_ptrs) != cudaSuccess)\n"
                  "        rc = %s_ECUDA;\n", em->upper);
    for (int j = 0; j < 2; j++)
        if (em->rnd_elems[j] && emit_is_cuda(em))
            sb_printf(o, "    if (ctx->rnd%d && cudaFree(ctx->rnd%d) != cudaSuccess)\n"
                      "        rc = %s_ECUDA;\n", j, j, em->upper);
        else if (em->rnd_elems[j])
            sb_printf(o, "    free(ctx->rnd%d);\n", j);
    sb_puts(o, "    return rc;\n}\n\n");
    if (emit_is_cuda(em))
        return;
    emit_api_text(em, "/* Before a run on n threads (api_host.c): what the library calls need\n"
                      "   for that count; *cold: the run does more than usual. */\n"
                      "static int ein_lib_threads(model_ctx *ctx, int n, int *cold)\n{\n");
    if (libs & LIB_DNNL)
        emit_api_text(em, "    /* oneDNN: the operators made for n threads */\n"
                          "    char msg[256];\n"
                          "    if (ein_dnnl_use(&ctx->dnnl, n, &ctx->dnnl_op, cold, msg) != 0)\n"
                          "        return ein_fail(ctx, MODEL_ELIB, \"%s\", msg);\n");
    else
        sb_puts(o, "    (void)ctx;\n    (void)n;\n    *cold = 0;\n");
    emit_api_text(em, "    return MODEL_OK;\n}\n\n"
                      "/* Before tensor i is read from its buffer (api_host.c): a convolution\n"
                      "   that hands it to the next in oneDNN's layout puts it there. */\n"
                      "static int ein_lib_fetch(model_ctx *ctx, int i)\n{\n");
    const IrProgram *p = em->p;
    bool fetch = false;
    for (int i = 0; i < p->ntensors; i++) {
        const IrTensor *t = p->tensors[i];
        if (t->kind != IT_STAGE || !emit_op(em, t)->src_from)
            continue;
        const IrTensor *x = emit_op(em, t)->src_from;
        if (!fetch)
            sb_puts(o, "    char msg[256];\n");
        fetch = true;
        sb_printf(o, "    if (i == %d && ein_dnnl_fetch(&ctx->dnnl, &ctx->dnnl_op[%d], "
                  "ctx->buf[%d], msg) != 0)\n"
                  "        return ein_fail(ctx, %s_ELIB, \"%s: %%s\", msg);\n",
                  x->id, em->slot[x->id], x->id, em->upper, x->name);
    }
    if (!fetch)
        sb_puts(o, "    (void)ctx;\n    (void)i;\n");
    emit_api_text(em, "    return MODEL_OK;\n}\n\n");
}

/* ---- the calls ------------------------------------------------------------------ */

/* CUDA: operand j of stage t's call rounded into ctx->rndJ on the stream;
 * the operand is then that buffer. */
static void write_round(Emit *em, const OpMatch *m, int j, const char *in)
{
    sb_printf(&em->out, "%sif ((rc = ein_round(ctx, ctx->rnd%d, (const float *)p[%d], %" PRId64
              ", stream)) != 0)\n%s    return rc;\n", in, j, m->in[j]->id,
              (int64_t)ir_tensor_numel(m->in[j]), in);
}

static const char *cuda_operand(Emit *em, const IrTensor *t, const OpMatch *m, int j)
{
    return lib_rounds(em, t) ? arena_printf(em->arena, "ctx->rnd%d", j)
                             : arena_printf(em->arena, "p[%d]", m->in[j]->id);
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

/* A device pointer `elems` elements of `es` bytes into buf. */
static const char *at_elem(Emit *em, const char *buf, int64_t elems, size_t es)
{
    return elems ? arena_printf(em->arena, "(const char *)%s + %" PRId64, buf,
                                elems * (int64_t)es)
                 : buf;
}

/* CUDA: the cuBLASLt call of a GEMM with its epilogue (PlanOp.lt); it
 * returns, done or failed, unless cuBLASLt cannot run it. */
static void write_lt_call(Emit *em, const IrTensor *t, const OpMatch *m, const char *in)
{
    const LibLt *lt = &emit_op(em, t)->lt;
    CuGemm g = cu_gemm(m);
    int64_t off[2] = {m->off_a, m->off_b};
    int j0 = g.first, j1 = 1 - g.first;
    const char *c = lt->c ? at_elem(em, arena_printf(em->arena, "p[%d]", lt->c->id),
                                    lt->c_offset, 4) : "NULL";
    const char *bias = lt->bias ? at_elem(em, arena_printf(em->arena, "p[%d]", lt->bias->id),
                                          lt->bias_offset, 4) : "NULL";
    sb_printf(&em->out, "%sif ((rc = ein_lt_run(ctx, &ctx->lts[%d], %s,\n"
              "%s                     %s,\n%s                     %s, p[%d], %s, stream)) >= 0)\n"
              "%s    return rc;\n"
              "%s/* cuBLASLt cannot run it: cublasGemmEx and the epilogue's pass */\n",
              in, em->slot[t->id], at_elem(em, cuda_operand(em, t, m, j0), off[j0], 4),
              in, at_elem(em, cuda_operand(em, t, m, j1), off[j1], 4), in, c, t->id, bias,
              in, in);
}

/* CUDA: the alpha of a cuBLAS call, the epilogue's scale where it is one
 * (LibLt.scale; declared here), else ein_one. */
static const char *gemm_alpha(Emit *em, const IrTensor *t, const char *in)
{
    const LibLt *lt = &emit_op(em, t)->lt;
    if (!lt->scale)
        return "&ein_one";
    sb_printf(&em->out, "%sconst float ein_alpha = ", in);
    emit_float(&em->out, lt->alpha);
    sb_puts(&em->out, ";                /* the epilogue */\n");
    return "&ein_alpha";
}

/* C: the last argument of ein_sgemm and ein_sgemm_split, its alpha: the
 * epilogue's scale where it is one (LibLt.scale), else 1. */
static void c_alpha(Emit *em, const IrTensor *t)
{
    const LibLt *lt = &emit_op(em, t)->lt;
    emit_float(&em->out, lt->scale ? lt->alpha : 1);
    sb_puts(&em->out, lt->scale ? ");                /* the epilogue */\n" : ");\n");
}

/* CUDA: a GEMM of a batch of two levels (OpMatch.split): the pointers of
 * its matrices written for this run's buffers, then cublasGemmBatchedEx. */
static void write_gemm_batched(Emit *em, const IrTensor *t, const OpMatch *m, const char *in)
{
    Sb *o = &em->out;
    int64_t es = (int64_t)elem_size(t->elem);
    const char *ty = cuda_type(t->elem);
    CuGemm g = cu_gemm(m);
    int64_t off[2] = {m->off_a, m->off_b}, ld[2] = {m->lda, m->ldb};
    int64_t st[2] = {m->stride_a, m->stride_b}, sst[2] = {m->sstride_a, m->sstride_b};
    int at = em->slot[t->id];
    sb_printf(o, "%sif ((rc = ein_gemm_ptrs(ctx, ctx->gemm_ptrs + %d,\n", in, at);
    for (int q = 0; q < 2; q++) {
        int j = q == 0 ? g.first : 1 - g.first;
        sb_printf(o, "%s                       (const char *)%s + %" PRId64 ", %" PRId64 ", %"
                  PRId64 ",\n", in, cuda_operand(em, t, m, j), off[j] * es, st[j] * es,
                  sst[j] * es);
    }
    sb_printf(o, "%s                       p[%d], %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64
              ", stream)) != 0)\n%s    return rc;\n", in, emit_store_id(em, t),
              m->stride_c * es, m->sstride_c * es, m->batch, m->split, in);
    const char *alpha = gemm_alpha(em, t, in);
    sb_printf(o, "%sEIN_BLAS(cublasGemmBatchedEx(ctx->blas, %s, %s, %" PRId64 ", %" PRId64 ", %"
              PRId64 ", %s,\n", in, g.op[0], g.op[1], g.m, g.n, m->k, alpha);
    for (int q = 0; q < 2; q++) {
        int j = q == 0 ? g.first : 1 - g.first;
        sb_printf(o, "%s    (const void *const *)(ctx->gemm_ptrs + %" PRId64 "), %s, %" PRId64
                  ",\n", in, at + q * m->batch, ty, ld[j]);
    }
    sb_printf(o, "%s    &ein_zero, (void *const *)(ctx->gemm_ptrs + %" PRId64 "), %s, %" PRId64
              ", %" PRId64 ", %s, CUBLAS_GEMM_DEFAULT));\n", in, at + 2 * m->batch, ty, m->ldc,
              m->batch, cublas_compute(em, t->elem));
}

static void write_gemm(Emit *em, const IrTensor *t, const OpMatch *m, const char *in)
{
    Sb *o = &em->out;
    int64_t batch = m->batch ? m->batch : 1;
    if (!emit_is_cuda(em) && m->split > 1) {       /* two levels: batch and heads */
        sb_printf(o, "%sein_sgemm_split(%d, %d, %d, %" PRId64 ", %" PRId64 ", %" PRId64 ",\n"
                  "%s    %s + %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 ",\n"
                  "%s    %s + %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 ",\n"
                  "%s    (float *)p[%d], %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64
                  ", %" PRId64 ", ",
                  in, m->trans_a, m->trans_b, m->out_nm, m->m, m->n, m->k,
                  in, c_operand(em, m, 0), m->off_a, m->lda, m->stride_a, m->sstride_a,
                  in, c_operand(em, m, 1), m->off_b, m->ldb, m->stride_b, m->sstride_b,
                  in, emit_store_id(em, t), m->ldc, m->stride_c, m->sstride_c, batch,
                  m->split);
        c_alpha(em, t);
        return;
    }
    if (!emit_is_cuda(em)) {
        sb_printf(o, "%sein_sgemm(%d, %d, %d, %" PRId64 ", %" PRId64 ", %" PRId64 ",\n"
                  "%s          %s + %" PRId64 ", %" PRId64 ", %" PRId64 ",\n"
                  "%s          %s + %" PRId64 ", %" PRId64 ", %" PRId64 ",\n"
                  "%s          (float *)p[%d], %" PRId64 ", %" PRId64 ", %" PRId64 ", ",
                  in, m->trans_a, m->trans_b, m->out_nm, m->m, m->n, m->k,
                  in, c_operand(em, m, 0), m->off_a, m->lda, m->stride_a,
                  in, c_operand(em, m, 1), m->off_b, m->ldb, m->stride_b,
                  in, emit_store_id(em, t), m->ldc, m->stride_c, batch);
        c_alpha(em, t);
        return;
    }
    size_t es = elem_size(t->elem);
    const char *ty = cuda_type(t->elem);
    CuGemm g = cu_gemm(m);
    int64_t off[2] = {m->off_a, m->off_b}, ld[2] = {m->lda, m->ldb};
    int64_t st[2] = {m->stride_a, m->stride_b};
    if (lib_rounds(em, t)) {
        write_round(em, m, 0, in);
        write_round(em, m, 1, in);
    }
    if (emit_op(em, t)->lt.fused)
        write_lt_call(em, t, m, in);
    /* cublasSetStream resets the workspace to cuBLAS's own pool, which a
     * graph capture would turn into allocations of the graph's own */
    sb_printf(o, "%sEIN_BLAS(cublasSetStream(ctx->blas, stream));\n"
              "%sEIN_BLAS(cublasSetWorkspace(ctx->blas, ctx->blas_ws, EIN_CUBLAS_WORKSPACE));\n",
              in, in);
    if (m->split > 1) {
        write_gemm_batched(em, t, m, in);
        return;
    }
    const char *alpha = gemm_alpha(em, t, in);
    sb_printf(o, "%sEIN_BLAS(cublasGemm%sEx(ctx->blas, %s, %s, %" PRId64 ", %" PRId64 ", %"
              PRId64 ", %s,\n", in, batch > 1 ? "StridedBatched" : "", g.op[0], g.op[1],
              g.m, g.n, m->k, alpha);
    for (int q = 0; q < 2; q++) {
        int j = q == 0 ? g.first : 1 - g.first;
        sb_printf(o, "%s    (const char *)%s + %" PRId64 ", %s, %" PRId64, in,
                  cuda_operand(em, t, m, j), off[j] * (int64_t)es, ty, ld[j]);
        if (batch > 1)
            sb_printf(o, ", %" PRId64, st[j]);
        sb_puts(o, ",\n");
    }
    sb_printf(o, "%s    &ein_zero, p[%d], %s, %" PRId64, in, emit_store_id(em, t), ty, m->ldc);
    if (batch > 1)
        sb_printf(o, ", %" PRId64 ", %" PRId64, m->stride_c, batch);
    sb_printf(o, ", %s, CUBLAS_GEMM_DEFAULT));\n", cublas_compute(em, t->elem));
}

static void write_conv(Emit *em, const IrTensor *t, const OpMatch *m, const char *in)
{
    Sb *o = &em->out;
    if (emit_is_cuda(em)) {
        const Kernel *k = &em->kernels[em->kernel_of[t->id]];
        int slot = em->slot[t->id];
        LibPost post[LIB_POST_MAX];
        LibPw pw[LIB_PW_MAX];
        int npw = plan_pointwise(emit_op(em, t), post, pw), nb = 0;
        /* the tensor operands of the pointwise nodes, in their order */
        for (int i = 0; i < npw; i++) {
            const LibPost *q = pw[i].post >= 0 ? &post[pw[i].post] : NULL;
            if (!q)
                continue;
            sb_printf(o, "%s%s", nb++ ? ", " : arena_printf(em->arena, "%sconst void *const "
                                                            "b[] = {", in),
                      at_elem(em, arena_printf(em->arena, "p[%d]", q->src1->id), q->offset, 4));
        }
        if (nb)
            sb_puts(o, "};\n");
        /* its generated kernel where cuDNN had no plan, or where a pointer
         * is below the alignment its tensor declares (a caller's buffer:
         * device pointers of any alignment may be passed to run) */
        sb_printf(o, "%sif (!ein_conv_ok(&ctx->conv[%d], %s, %s, p[%d], %s)) {\n", in, slot,
                  cuda_operand(em, t, m, 0), cuda_operand(em, t, m, 1), t->id,
                  nb ? "b" : "NULL");
        cuda_write_launch(em, k, arena_printf(em->arena, "%s    ", in));
        sb_printf(o, "%s    return 0;\n%s}\n", in, in);
        if (lib_rounds(em, t)) {
            write_round(em, m, 0, in);
            write_round(em, m, 1, in);
        }
        sb_printf(o, "%sif ((rc = ein_conv_run(ctx, &ctx->conv[%d], %s, %s, p[%d], %s, "
                  "stream)) != 0)\n%s    return rc;\n", in, slot, cuda_operand(em, t, m, 0),
                  cuda_operand(em, t, m, 1), t->id, nb ? "b" : "NULL", in);
        if (npw > 0)
            sb_printf(o, "%sif (ctx->conv[%d].fused)\n%s    return 0;\n"
                      "%s/* cuDNN has no engine for the graph with the pointwise nodes: the "
                      "epilogue's pass */\n", in, slot, in, in);
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

/* A oneDNN operator's run: the operands' buffers into its primitive, and
 * those of its binary post-ops (src1[], in their order). */
static void write_dnnl_call(Emit *em, const IrTensor *t, const OpMatch *m, const char *in)
{
    LibPost post[LIB_POST_MAX];
    int n = plan_post_ops(emit_op(em, t), post), nsrc1 = 0;
    Sb *o = &em->out;
    sb_printf(o, "%s{\n%s    char msg[256];\n", in, in);
    for (int i = 0; i < n; i++) {
        if (!post[i].binary)
            continue;
        if (nsrc1++)
            sb_printf(o, ", p[%d]", post[i].src1->id);
        else
            sb_printf(o, "%s    const void *const src1[] = {p[%d]", in, post[i].src1->id);
    }
    if (nsrc1)
        sb_puts(o, "};\n");
    sb_printf(o, "%s    if (ein_dnnl_run(&ctx->dnnl, &ctx->dnnl_op[%d], %s, %s, NULL, p[%d], %s, "
              "msg) != 0)\n%s        return ein_fail(ctx, %s_ELIB, \"%s: %%s\", msg);\n%s}\n",
              in, em->slot[t->id], c_operand(em, m, 0), c_operand(em, m, 1), t->id,
              nsrc1 ? "src1" : "NULL", in, em->upper, t->name, in);
}

/* C: a banded product on CBLAS (runtime/cblas.c), each operand a view
 * (ein_band_view: the first row, ld, stride, split, sstride), the output
 * too (ein_band_out). */
static void write_cblas_band(Emit *em, const IrTensor *t, const OpMatch *m, const char *in)
{
    Sb *o = &em->out;
    sb_printf(o, "%sein_%s(", in, m->kind == OPK_G2BMM ? "g2bmm" : "gbmm");
    for (int j = 0; j < 2; j++) {
        const BandView *v = &m->gv[j];
        sb_printf(o, "(ein_band_view){%s + %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64
                  ", %" PRId64 "},\n%s    ", c_operand(em, m, j), v->off, v->ld, v->stride,
                  v->split, v->sstride, in);
    }
    /* the output: dense, or inside the buffer of the copy it stores
     * (plan.h, PlanBuf) */
    BandView v = emit_store_view(em, t);
    sb_printf(o, "(ein_band_out){(float *)p[%d], %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64
              "},\n%s    ctx->col, %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64
              ");\n", emit_store_id(em, t), v.ld, v.stride,
              v.split, v.sstride, in, m->gb, m->gm, m->gw, m->gk, m->gdil);
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
    case IMPL_DNNL_CONV: case IMPL_DNNL_MATMUL:
        write_dnnl_call(em, t, m, indent);
        break;
    case IMPL_CBLAS_BAND:
        write_cblas_band(em, t, m, indent);
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
    if (!emit_is_cuda(em))
        return;
    if (em->ptr_elems)
        sb_puts(&em->out,
"/* A GEMM of a batch of two levels (batch and heads): cublasGemmBatchedEx\n"
"   reads its matrices from arrays of pointers, which this writes for the\n"
"   run's buffers: matrix i of each operand (strides in bytes) at\n"
"   base + (i / split) stride + (i % split) sstride; ptrs holds A's, then\n"
"   B's, then C's. */\n"
"static __global__ void __launch_bounds__(256)\n"
"ein_gemm_ptrs_k(const void **ptrs, const char *a, int64_t sa, int64_t ssa, const char *b,\n"
"                int64_t sb, int64_t ssb, const char *c, int64_t sc, int64_t ssc, int batch,\n"
"                int split)\n"
"{\n"
"    const int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
"    if (i >= batch)\n"
"        return;\n"
"    const int64_t o = i / split, h = i % split;\n"
"    ptrs[i] = a + o * sa + h * ssa;\n"
"    ptrs[batch + i] = b + o * sb + h * ssb;\n"
"    ptrs[2 * batch + i] = c + o * sc + h * ssc;\n"
"}\n"
"\n");
    if (em->rnd_elems[0] || em->rnd_elems[1])
        sb_puts(&em->out,
"/* --precision below fp32: a library call's f32 operand rounded as a whole\n"
"   (ein_rnd) into a scratch buffer, as the C target rounds it. */\n"
"static __global__ void __launch_bounds__(256)\n"
"ein_round_k(const float *__restrict__ src, float *__restrict__ dst, int64_t n)\n"
"{\n"
"    const int64_t stride = (int64_t)gridDim.x * blockDim.x;\n"
"    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)\n"
"        dst[i] = ein_rnd(src[i]);\n"
"}\n"
"\n");
    if (!(em->libs & LIB_BAND))
        return;
    band_write_support(em);
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
    return plan_call_name(emit_op(em, t));
}
