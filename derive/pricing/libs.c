/* libs.c - what each target's libraries take (cost.h: cost_impl).
 *
 *   CUDA  GEMMs         cuBLAS (cublasGemmEx, cublasGemmStridedBatchedEx,
 *                       cublasGemmBatchedEx for a batch of two levels),
 *                       any element types that are the same for the
 *                       output and both operands; cublasLtMatmul for an
 *                       f32 one whose epilogue cuBLASLt computes
 *                       (cost_lt_epilogue, below)
 *         convolutions  cuDNN 9's graph API, forward or backward data,
 *                       grouped ones too; its generated kernel runs where
 *                       cuDNN has no plan on the GPU at hand
 *         G2BMM, GBMM   the tiled band kernels of emit/band.c: f32, and
 *                       shapes the kernel indexes with in an int
 *   C     GEMMs         cblas_sgemm: f32 only
 *         convolutions  with --dnnl, oneDNN (runtime/dnnl.c): f32, any
 *                       groups, stride, dilation, padding; transposed ones
 *                       as deconvolutions, one group, no dilation.
 *                       Else im2col (col2im) around cblas_sgemm: f32,
 *                       one group
 *         G2BMM, GBMM   blocks of dense cblas_sgemm: f32
 *
 * On both, a library writes every element of its output, takes its sizes
 * as ints and computes in floating point, so a stage whose loops leave
 * part of its tensor to the zero fill of output padding, whose sizes
 * exceed an int, or that has an integer tensor stays a generated kernel.  This decides what the plan records; emit/ writes
 * what the plan says and decides nothing. */
#include "config.h"
#include "cost.h"

#include <math.h>
#include <string.h>

static const char *const target_names[] = {"cuda", "c"};

const char *cost_target_name(Target t)
{
    return (unsigned)t < 2 ? target_names[t] : "?";
}

const char *cost_impl_name(OpImpl i)
{
    static const char *const names[] = {
        [IMPL_KERNEL] = "kernel", [IMPL_CUBLAS_GEMM] = "cublas",
        [IMPL_CUDNN_CONV] = "cudnn", [IMPL_CUDA_BAND] = "band",
        [IMPL_CBLAS_GEMM] = "cblas", [IMPL_CBLAS_IM2COL] = "im2col",
        [IMPL_CBLAS_COL2IM] = "col2im", [IMPL_CBLAS_BAND] = "cblas-band",
        [IMPL_DNNL_CONV] = "dnnl", [IMPL_DNNL_MATMUL] = "dnnl",
    };
    return (unsigned)i < sizeof names / sizeof *names ? names[i] : "?";
}

const char *cost_impl_call(OpImpl i, const OpMatch *m)
{
    switch (i) {
    case IMPL_CUBLAS_GEMM:
        return m->split > 1 ? "cublasGemmBatchedEx"
             : m->batch > 1 ? "cublasGemmStridedBatchedEx" : "cublasGemmEx";
    case IMPL_CUDNN_CONV:
        return m->kind == OPK_CONV_TRANSPOSE2D ? "cuDNN convolution backward data"
                                            : "cuDNN convolution forward";
    case IMPL_CUDA_BAND: return "tiled band kernel";
    case IMPL_CBLAS_GEMM: return "cblas_sgemm";
    case IMPL_CBLAS_IM2COL: return "im2col + cblas_sgemm";
    case IMPL_CBLAS_COL2IM: return "cblas_sgemm + col2im";
    case IMPL_CBLAS_BAND: return "banded cblas_sgemm";
    case IMPL_DNNL_CONV:
        return m->kind == OPK_CONV_TRANSPOSE2D ? "oneDNN deconvolution" : "oneDNN convolution";
    case IMPL_DNNL_MATMUL: return "oneDNN matmul";
    case IMPL_KERNEL: break;
    }
    return "generated kernel";
}

static bool fits_int(int64_t v)
{
    return v >= 0 && v <= INT32_MAX;
}

/* The stage's loops are the output tensor's full shape: the library writes
 * every element, so none may be left to the zero fill of a padded stage. */
static bool covers_output(const IrTensor *t, const Stage *s)
{
    if (s->nloops != t->rank)
        return false;
    for (int d = 0; d < t->rank; d++)
        if (s->loops[d].lo != 0 || s->loops[d].hi != t->shape[d])
            return false;
    return true;
}

/* The leading dimension of a stored rows x cols row-major matrix. */
static bool lead_ok(int64_t ld, int64_t cols)
{
    return fits_int(ld) && ld >= (cols > 1 ? cols : 1);
}

/* The output matrices of a batch are apart in memory: each spans `span`
 * elements from its first; of two levels, the inner ones (heads) apart
 * within an outer one and the outer ones apart as wholes, or the other
 * way round (no negative stride there). */
static bool gemm_apart(const OpMatch *m)
{
    if (m->batch <= 1)
        return true;
    int64_t rows = m->out_nm ? m->n : m->m, cols = m->out_nm ? m->m : m->n;
    if (rows <= 0 || cols <= 0)
        return true;
    int64_t span = (rows - 1) * m->ldc + cols;
    if (m->split <= 1)
        return (m->stride_c < 0 ? -m->stride_c : m->stride_c) >= span;
    int64_t in = m->sstride_c, out = m->stride_c, outer = m->batch / m->split, whole;
    if (in < 0 || out < 0)
        return false;
    if (in >= span && i64_mul(m->split - 1, in, &whole) && whole <= INT64_MAX - span &&
        (outer <= 1 || out >= whole + span))
        return true;
    return out >= span && i64_mul(outer - 1, out, &whole) && whole <= INT64_MAX - span &&
           in >= whole + span;
}

static bool gemm_ok(Target tg, const IrTensor *t, const OpMatch *m)
{
    if (!fits_int(m->m) || !fits_int(m->n) || !fits_int(m->k) || !fits_int(m->batch) ||
        !lead_ok(m->lda, m->trans_a ? m->m : m->k) ||
        !lead_ok(m->ldb, m->trans_b ? m->k : m->n) ||
        !lead_ok(m->ldc, m->out_nm ? m->m : m->n))
        return false;
    /* cuBLAS leaves a strided batch whose output matrices overlap in
     * memory undefined, even where their elements do not (heads
     * interleaved in the columns: stride 64, rows of H*64); the C target
     * calls one GEMM per matrix */
    if (tg == TARGET_CUDA && !gemm_apart(m))
        return false;
    return tg == TARGET_CUDA || t->elem == ELEM_F32;
}

/* oneDNN's matmul takes the operands as strided views: no negative
 * stride or offset.  Only for one product of
 * at least 16 rows and columns, with A and C row-major and B row-major
 * or constant (reordered once to oneDNN's own layout): oneDNN 2.6.3 runs
 * the others on its reference kernel (ResNet-18's downsampling products,
 * C stored transposed: 130 ms against OpenBLAS's 0.16 ms), and on one
 * core of an AMD EPYC it ran a batch of 128 1x768x1 ones (a layer norm's
 * variance) in 0.13 ms against OpenBLAS's 0.04 ms and the heads'
 * products of attention slower too (its gemm:jit kernel on the 4-D
 * strided views: BERT's scores 0.50 ms against 0.32 ms, GPT-2's 1.47
 * against 1.29 ms). */
static bool dnnl_gemm_ok(const OpMatch *m)
{
    bool b_const = m->in[1]->kind == IT_WEIGHT || m->in[1]->weight_only;
    return m->batch <= 1 && m->m >= 16 && m->n >= 16 && !m->trans_a && !m->out_nm &&
           (!m->trans_b || b_const) && m->lda >= 0 && m->ldb >= 0 && m->ldc >= 0 &&
           m->off_a >= 0 && m->off_b >= 0;
}

static bool conv_ok(Target tg, const IrTensor *t, const OpMatch *m)
{
    int64_t v[] = {m->cn, m->c, m->h, m->w, m->f, m->r, m->s, m->stride, m->dilation,
                   m->pad, m->pad_w, m->groups};
    for (size_t i = 0; i < sizeof v / sizeof *v; i++)
        if (!fits_int(v[i]))
            return false;
    if (tg == TARGET_CUDA)
        return true;
    /* C: im2col serves one group; a transposed convolution pads the same
     * on both axes (match.c makes it so). */
    return t->elem == ELEM_F32 && m->groups == 1;
}

/* The offset of batch bb of a view past its first element, or -1 past
 * 2^63. */
static int64_t band_batch_at(const BandView *v, int64_t bb)
{
    int64_t a, b, r;
    if (!i64_mul(bb / v->split, v->stride, &a) || !i64_mul(bb % v->split, v->sstride, &b) ||
        !i64_add(a, b, &r))
        return -1;
    return r;
}

/* The elements past the first that the view v of band operand x (2: the
 * output) reaches (the farthest batch: the last, or the last of the group
 * before; its last row and column), or -1 past 2^63.  Strides are not
 * negative. */
static int64_t band_reach(const OpMatch *m, const BandView *v, int x)
{
    int64_t last = m->gb - 1, r = band_batch_at(v, last), c;
    if (last >= v->split) {
        int64_t prev = band_batch_at(v, last - last % v->split - 1);
        r = r < 0 || prev < 0 ? -1 : r > prev ? r : prev;
    }
    if (r < 0 || !i64_mul(m->gm - 1, v->ld, &c) || !i64_add(r, c, &r) ||
        !i64_add(r, match_band_cols(m, x) - 1, &r))
        return -1;
    return r;
}

/* Each operand's view (match.h: BandView) stays inside its tensor, its
 * strides not negative: what match.c gives, checked again here, where
 * the kernel is granted, since it reads memory through the view
 * unchecked. */
static bool band_views_ok(const OpMatch *m)
{
    for (int x = 0; x < 2; x++) {
        const BandView *v = &m->gv[x];
        int64_t r;
        if (v->ld < 0 || v->stride < 0 || v->split < 1 || v->sstride < 0 || v->off < 0 ||
            m->gb < 1 || m->gm < 1 || (r = band_reach(m, v, x)) < 0 || v->off > INT64_MAX - r ||
            v->off + r >= (int64_t)ir_tensor_numel(m->in[x]))
            return false;
    }
    return true;
}

/* runtime/cblas.c: blocks of rows of one residue, dil * ld apart, the
 * leading dimension of a cblas_sgemm operand (an int, at least the row's
 * length: no rows that overlap); the output dense. */
static bool band_c_ok(const IrTensor *t, const OpMatch *m)
{
    int64_t v[] = {m->gb, m->gm, m->gw, m->gk, m->gdil, m->gk * m->gdil,
                   BAND_C_ROWS + 2 * m->gw, BAND_C_ROWS * (BAND_C_ROWS + 2 * m->gw)};
    for (size_t i = 0; i < sizeof v / sizeof *v; i++)
        if (!fits_int(v[i]))
            return false;
    if (t->elem != ELEM_F32 || m->gdil < 1 || !band_views_ok(m))
        return false;
    for (int x = 0; x < 2; x++) {
        int64_t ld;
        if (!i64_mul(m->gv[x].ld, m->gdil, &ld) || !fits_int(ld) ||
            m->gv[x].ld < match_band_cols(m, x))
            return false;
    }
    return true;
}

bool cost_band_out_ok(const OpMatch *m, OpImpl impl, const BandView *v, const IrTensor *of)
{
    int64_t r, ld;
    if ((m->kind != OPK_G2BMM && m->kind != OPK_GBMM) || v->ld < 0 || v->stride < 0 ||
        v->split < 1 || v->sstride < 0 || v->off < 0 || m->gb < 1 || m->gm < 1 ||
        (r = band_reach(m, v, 2)) < 0 || v->off > INT64_MAX - r ||
        v->off + r >= (int64_t)ir_tensor_numel(of) || of->elem != ELEM_F32)
        return false;
    if (impl == IMPL_CUDA_BAND)
        return true;
    return impl == IMPL_CBLAS_BAND && i64_mul(v->ld, m->gdil, &ld) && fits_int(ld) &&
           v->ld >= match_band_cols(m, 2);
}

bool cost_gemm_out_ok(const OpMatch *m, OpImpl impl, const IrTensor *of)
{
    int64_t batch = m->batch > 1 ? m->batch : 1, rows = m->out_nm ? m->n : m->m;
    int64_t cols = m->out_nm ? m->m : m->n, split = m->split > 1 ? m->split : 1, r, s, c;
    if ((impl != IMPL_CUBLAS_GEMM && impl != IMPL_CBLAS_GEMM) ||
        (m->kind != OPK_MATMUL && m->kind != OPK_BATCH_MATMUL) || of->elem != ELEM_F32 ||
        m->ldc < cols || !fits_int(m->ldc) || m->stride_c < 0 || m->sstride_c < 0 ||
        rows < 1 || cols < 1 || !i64_mul(batch / split - 1, m->stride_c, &r) ||
        !i64_mul(split - 1, m->sstride_c, &s) || !i64_add(r, s, &r) ||
        !i64_mul(rows - 1, m->ldc, &c) || !i64_add(r, c, &r) || !i64_add(r, cols - 1, &r))
        return false;
    /* cuBLAS leaves batches of C that overlap undefined, each taken as
     * the span from its first element to its last: interleaved heads
     * (strideC below that span) are left to the C target, whose
     * products are one call each */
    if (impl == IMPL_CUBLAS_GEMM && !gemm_apart(m))
        return false;
    return r < (int64_t)ir_tensor_numel(of);
}

/* Sizes above this are left to the generic kernel by the tiled band
 * kernels: every int they compute (rows, entries, tile numbers,
 * i0 + j0 - w + row) then stays below 2^31. */
#define BAND_LIMIT (INT64_C(1) << 29)

static int64_t cdiv(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

/* The most threads of a band kernel's block across its columns. */
#define BAND_MAX_TX 16

/* The row stride of an array runtime/band.cu stages with the summed
 * index major (G2BMM's query and key rows, GBMM's scores): n floats
 * rounded up to 8, and 4 more, so that the 8 lanes that store 8
 * consecutive values of the summed index, each to its own row, meet 8
 * different groups of 4 banks, while every row still starts on 16 bytes
 * (its 128-bit loads). */
static int64_t band_stride(int64_t n)
{
    return (n + 7) / 8 * 8 + 4;
}

/* Bytes of shared memory of a block of ty rows of threads (band.cu's
 * arrays): G2BMM qs[chunk][stride(ti)] and ks[chunk][stride(ti + tc)],
 * GBMM ss[chunk][stride(ti)] and vs[ti + chunk - 1][tc]. */
static int64_t band_smem(const BandTiles *t, int64_t ty)
{
    int64_t ti = 8 * ty;
    if (t->g2)
        return 4 * t->chunk * (band_stride(ti) + band_stride(ti + t->tc));
    return 4 * (t->chunk * band_stride(ti) + (ti + t->chunk - 1) * t->tc);
}

/* The tiles with pj groups of 4 columns a thread.  Columns: at most
 * BAND_MAX_TX threads across, in the fewest tiles of equal width: a band
 * of up to 128 entries (at pj = 2) is one tile, the narrow case.  The
 * summed index in chunks of 8 where it is that short, else G2BMM's d in
 * chunks of 16 and GBMM's j in chunks of 32 (16 for a band that short):
 * a chunk stages the ti + chunk - 1 value rows its tile meets.  Rows: as
 * many threads as BAND_MAX_THREADS and BAND_MAX_SMEM allow, then the row
 * tiles of a residue made equal. */
static void band_shape(const OpMatch *m, int pj, BandTiles *t)
{
    memset(t, 0, sizeof *t);
    t->g2 = m->kind == OPK_G2BMM;
    int64_t w2 = 2 * m->gw + 1, dil = m->gdil > 0 ? m->gdil : 1;
    t->cols = t->g2 ? w2 : m->gk;
    t->inner = t->g2 ? m->gk : w2;
    t->rows = cdiv(m->gm, dil);
    t->pj = pj;
    t->tx = (int)cdiv(t->cols, 4 * pj * cdiv(t->cols, 4 * pj * BAND_MAX_TX));
    t->tc = 4 * pj * t->tx;
    t->ncol = cdiv(t->cols, t->tc);
    t->chunk = t->inner <= 8 ? 8 : t->inner <= 16 || t->g2 ? 16 : 32;
    int64_t ty = BAND_MAX_THREADS / t->tx;
    while (ty > 1 && band_smem(t, ty) > BAND_MAX_SMEM)
        ty--;
    t->nit = cdiv(t->rows, 8 * ty);
    t->ty = (int)cdiv(t->rows, 8 * t->nit);
    t->ti = 8 * t->ty;
    t->threads = (t->tx * t->ty + 31) / 32 * 32;
    t->smem = (int)band_smem(t, t->ty);
    int64_t n = m->gb;
    if (!(i64_mul(n, dil, &n) && i64_mul(n, t->nit, &n) && i64_mul(n, t->ncol, &n)))
        n = INT64_MAX;
    t->blocks = n;
}

/* Threads a band kernel's grid needs to fill a GPU: 128 SMs (the H100's
 * and H200's 132) at the 256 threads an SM needs for its peak (cost.c's
 * band_cost).  A fixed figure, not --device's: emit/band.c, which
 * writes the tiles, knows no device. */
#define BAND_FILL_THREADS 32768

/* Two groups of 4 columns a thread (64 multiply-adds per step for 8 or 4
 * shared loads, against 32 for 5 or 3) where they pad no more columns than
 * one group and the grid still fills the GPU; else one group, which pads
 * at most 3 columns a tile and has twice the threads. */
void cost_band_tiles(const OpMatch *m, BandTiles *t)
{
    BandTiles one;
    band_shape(m, 2, t);
    band_shape(m, 1, &one);
    double threads = (double)t->blocks * t->tx * t->ty;
    if (t->ncol * t->tc > one.ncol * one.tc || threads < BAND_FILL_THREADS)
        *t = one;
}

/* The tiled band kernel's shapes (emit/band.c): operands read through
 * views (runtime/band.cu takes any, as constants: their loads stay
 * scalar, each a row of consecutive elements), the output [batch..., m,
 * 2w+1] or [batch..., m, k], all f32, and a grid of blocks
 * (cost_band_tiles) numbered in an int. */
static bool band_cuda_ok(const IrTensor *t, const OpMatch *mt)
{
    const IrTensor *a = mt->in[0], *b = mt->in[1];
    if (t->elem != ELEM_F32 || a->elem != ELEM_F32 || b->elem != ELEM_F32)
        return false;
    int r = t->rank;
    if (r < 2)
        return false;
    int64_t nb = 1;
    for (int i = 0; i < r - 2; i++)
        if (t->shape[i] > BAND_LIMIT || (nb *= t->shape[i]) > BAND_LIMIT)
            return false;
    int64_t m = mt->gm, w2 = 2 * mt->gw + 1, k = mt->gk, dil = mt->gdil;
    if (nb != mt->gb || m < 1 || mt->gw < 0 || k < 1 || dil < 1 || m > BAND_LIMIT ||
        w2 > BAND_LIMIT || k > BAND_LIMIT || dil > BAND_LIMIT || !band_views_ok(mt))
        return false;
    bool g2 = mt->kind == OPK_G2BMM;
    if (t->shape[r - 2] != m || t->shape[r - 1] != (g2 ? w2 : k))
        return false;
    BandTiles bt;
    cost_band_tiles(mt, &bt);
    return bt.blocks <= INT32_MAX;
}

/* oneDNN (runtime/dnnl.c): f32 convolutions of any groups, stride,
 * dilation and padding (match.c pads both sides alike, the output size
 * rounded down, which is oneDNN's rule with the right padding equal to
 * the left); deconvolutions with one group and no dilation whose output
 * padding is at most the padding (it becomes the right padding less, and
 * a negative one oneDNN refuses). */
static bool dnnl_ok(const IrTensor *t, const OpMatch *m)
{
    if (t->elem != ELEM_F32 || m->groups < 1 || m->c % m->groups || m->f % m->groups ||
        m->stride < 1 || m->dilation < 1 || m->pad < 0 || m->pad_w < 0)
        return false;
    if (m->kind == OPK_CONV_TRANSPOSE2D)
        return m->groups == 1 && m->dilation == 1 && m->out_pad <= m->pad;
    return true;
}

OpImpl cost_impl(const CostModel *cm, const IrTensor *out, const Stage *s, const OpMatch *m)
{
    Target tg = cm->target;
    if (!m || m->kind == OPK_KERNEL || !covers_output(out, s))
        return IMPL_KERNEL;
    /* the libraries compute in floating point: integer tensors are kernels */
    if (elem_is_int(out->elem) || elem_is_int(m->in[0]->elem) || elem_is_int(m->in[1]->elem))
        return IMPL_KERNEL;
    bool same = m->in[0]->elem == out->elem && m->in[1]->elem == out->elem;
    bool cuda = tg == TARGET_CUDA;
    switch (m->kind) {
    case OPK_MATMUL: case OPK_BATCH_MATMUL:
        if (same && gemm_ok(tg, out, m))
            return cuda ? IMPL_CUBLAS_GEMM
                 : cm->dnnl && cm->precision == PREC_FP32 && dnnl_gemm_ok(m) ? IMPL_DNNL_MATMUL
                                                                            : IMPL_CBLAS_GEMM;
        break;
    case OPK_CONV2D: case OPK_CONV_TRANSPOSE2D: {
        bool dnnl = !cuda && cm->dnnl && same && conv_ok(TARGET_CUDA, out, m) && dnnl_ok(out, m);
        OpImpl lib = cuda ? IMPL_CUDNN_CONV
                          : m->kind == OPK_CONV2D ? IMPL_CBLAS_IM2COL : IMPL_CBLAS_COL2IM;
        if (!(same && conv_ok(tg, out, m)))
            return dnnl ? IMPL_DNNL_CONV : IMPL_KERNEL;
        /* both: the cheaper (FSRCNN's 56->1 9x9/4 transposed one runs on
         * OpenBLAS and col2im in a tenth of oneDNN's time) */
        if (dnnl && cost_stage_impl(cm, s, m, IMPL_DNNL_CONV, NULL) <=
                        cost_stage_impl(cm, s, m, lib, NULL))
            return IMPL_DNNL_CONV;
        return lib;
    }
    case OPK_G2BMM: case OPK_GBMM:
        if (cuda ? band_cuda_ok(out, m) : same && band_c_ok(out, m))
            return cuda ? IMPL_CUDA_BAND : IMPL_CBLAS_BAND;
        break;
    case OPK_KERNEL:
        break;
    }
    return IMPL_KERNEL;
}

/* ---- oneDNN's post-ops: an epilogue the convolution applies itself ------- */

/* Is ix exactly loop variable d of s? */
static bool is_loop(const Ix *ix, const Stage *s, int d)
{
    return ix->c == 0 && ix->n == 1 && ix->t[0].kind == IX_VAR && ix->t[0].coef == 1 &&
           ix->t[0].var == s->loops[d].id;
}

typedef struct Chain {
    const Stage *s;
    const IrTensor *self;
    LibPost *post;
    int n, max;
} Chain;

static bool push(Chain *c, LibPost p)
{
    if (c->n >= c->max)
        return false;
    c->post[c->n++] = p;
    return true;
}

static bool push_eltwise(Chain *c, PostAlg alg, double alpha, double beta)
{
    return push(c, (LibPost){.binary = false, .alg = alg, .alpha = alpha, .beta = beta});
}

/* x, read by the operator at its element, as a binary post-op's operand:
 * a constant (then an eltwise linear one, alg ADD..DIV meaning x's place)
 * or an f32 tensor whose subscripts are each a loop variable of the
 * stage (distinct, within the tensor's extent) or a constant, broadcast
 * over the loops it does not use. */
static bool operand(const Stage *s, const IrTensor *self, const IExpr *x, LibPost *p)
{
    if (x->kind != IE_ACCESS || !x->access.tensor || x->access.tensor == self)
        return false;
    const IrTensor *t = x->access.tensor;
    if (t->elem != ELEM_F32 || s->nloops > LIB_POST_MAXD)
        return false;
    p->src1 = t;
    p->rank = s->nloops;
    p->offset = 0;
    for (int d = 0; d < s->nloops; d++) {
        p->dims[d] = 1;
        p->strides[d] = 1;
    }
    int64_t stride = 1;
    for (int k = x->access.nidx - 1; k >= 0; k--) {
        const Ix *ix = x->access.idx[k];
        int64_t v;
        int d = 0;
        if (ix_is_const(ix, &v)) {
            if (v < 0 || v >= t->shape[k])
                return false;
            p->offset += v * stride;
        } else {
            while (d < s->nloops && !is_loop(ix, s, d))
                d++;
            if (d == s->nloops || p->dims[d] != 1 || s->loops[d].lo != 0 ||
                s->loops[d].hi > t->shape[k])
                return false;
            p->dims[d] = s->loops[d].hi;
            p->strides[d] = stride;
        }
        stride *= t->shape[k];
    }
    return true;
}

static bool chain(Chain *c, const IExpr *e);

/* e = inner OP x (or x OP inner, `flipped`), inner reading self. */
static bool chain_binary(Chain *c, const IExpr *inner, const IExpr *x, PostAlg alg, bool flipped)
{
    if (ir_expr_reads(x, c->self) || !chain(c, inner))
        return false;
    if (x->kind == IE_CONST) {
        double v = x->value;
        switch (alg) {
        case POST_ADD: return push_eltwise(c, POST_LINEAR, 1, v);
        case POST_MUL: return push_eltwise(c, POST_LINEAR, v, 0);
        case POST_SUB: return flipped ? push_eltwise(c, POST_LINEAR, -1, v)
                                      : push_eltwise(c, POST_LINEAR, 1, -v);
        case POST_DIV: return !flipped && v != 0 && push_eltwise(c, POST_LINEAR, 1 / v, 0);
        case POST_MAX: return push_eltwise(c, v == 0 ? POST_RELU : POST_CLIP, v, HUGE_VAL);
        case POST_MIN: return push_eltwise(c, POST_CLIP, -HUGE_VAL, v);
        default: return false;
        }
    }
    LibPost p = {.binary = true, .alg = alg};
    if (!operand(c->s, c->self, x, &p))
        return false;
    if (flipped && alg == POST_SUB)       /* x - v = -v + x */
        return push_eltwise(c, POST_LINEAR, -1, 0) && (p.alg = POST_ADD, push(c, p));
    return !(flipped && alg == POST_DIV) && push(c, p);
}

/* Append e's post-ops after those of the operand that reads self. */
static bool chain(Chain *c, const IExpr *e)
{
    static const PostAlg unary[FN_TO_F32] = {
        [FN_RELU] = POST_RELU, [FN_TANH] = POST_TANH, [FN_SIGMOID] = POST_LOGISTIC,
        [FN_EXP] = POST_EXP, [FN_ABS] = POST_ABS, [FN_SQRT] = POST_SQRT,
        [FN_GELU] = POST_GELU};
    if (e->kind == IE_ACCESS && e->access.tensor == c->self) {
        /* the operator's own value: at its element, first in the chain */
        if (c->n || e->access.nidx != c->s->nloops)
            return false;
        for (int d = 0; d < e->access.nidx; d++)
            if (!is_loop(e->access.idx[d], c->s, d))
                return false;
        return true;
    }
    switch (e->kind) {
    case IE_ADD: case IE_MUL: case IE_SUB: case IE_DIV: {
        PostAlg alg = e->kind == IE_ADD ? POST_ADD : e->kind == IE_MUL ? POST_MUL
                    : e->kind == IE_SUB ? POST_SUB : POST_DIV;
        bool in_a = ir_expr_reads(e->bin.a, c->self);
        return chain_binary(c, in_a ? e->bin.a : e->bin.b, in_a ? e->bin.b : e->bin.a, alg,
                            !in_a);
    }
    case IE_NEG:
        return chain(c, e->bin.a) && push_eltwise(c, POST_LINEAR, -1, 0);
    case IE_CALL:
        if (e->call.nargs == 1 && (unsigned)e->call.fn < FN_TO_F32 && unary[e->call.fn])
            return chain(c, e->call.args[0]) && push_eltwise(c, unary[e->call.fn], 0, 0);
        if (e->call.nargs == 2 && (e->call.fn == FN_MAX || e->call.fn == FN_MIN)) {
            bool in_a = ir_expr_reads(e->call.args[0], c->self);
            return chain_binary(c, e->call.args[in_a ? 0 : 1], e->call.args[in_a ? 1 : 0],
                                e->call.fn == FN_MAX ? POST_MAX : POST_MIN, false);
        }
        return false;
    default:
        return false;
    }
}

int cost_post_ops(const Stage *s, const IrTensor *self, const IExpr *value, LibPost *post,
                  int max)
{
    Chain c = {s, self, post, 0, max};
    return value && chain(&c, value) ? c.n : -1;
}

/* ---- cuDNN's pointwise nodes: the post-ops in a convolution's graph ------ */

const char *cost_pw_name(PwMode m)
{
    static const char *const names[] = {"add", "sub", "mul", "div", "max", "min", "relu",
                                        "tanh", "sigmoid", "exp", "abs", "sqrt", "gelu"};
    return names[m];
}

int cost_pointwise(const LibPost *post, int npost, LibPw *pw, int max)
{
    static const PwMode unary[] = {
        [POST_RELU] = PW_RELU, [POST_TANH] = PW_TANH, [POST_LOGISTIC] = PW_SIGMOID,
        [POST_EXP] = PW_EXP, [POST_ABS] = PW_ABS, [POST_SQRT] = PW_SQRT, [POST_GELU] = PW_GELU};
    static const PwMode binary[] = {
        [POST_ADD] = PW_ADD, [POST_SUB] = PW_SUB, [POST_MUL] = PW_MUL, [POST_DIV] = PW_DIV,
        [POST_MAX] = PW_MAX, [POST_MIN] = PW_MIN};
    int n = 0;
#define PW_PUSH(m, i, v)                                                    \
    do {                                                                    \
        if (n == max)                                                       \
            return -1;                                                      \
        pw[n++] = (LibPw){.mode = (m), .post = (i), .value = (v)};          \
    } while (0)
    for (int i = 0; i < npost; i++) {
        const LibPost *p = &post[i];
        switch (p->alg) {
        case POST_RELU:         /* oneDNN's alpha is a leaky slope; RELU_FWD's is 0 */
            if (p->alpha != 0)
                return -1;
            /* fall through */
        case POST_TANH: case POST_LOGISTIC: case POST_EXP: case POST_ABS: case POST_SQRT:
        case POST_GELU:
            PW_PUSH(unary[p->alg], -1, 0);
            break;
        case POST_LINEAR:       /* alpha v + beta */
            if (p->alpha != 1)
                PW_PUSH(PW_MUL, -1, p->alpha);
            if (p->beta != 0)
                PW_PUSH(PW_ADD, -1, p->beta);
            break;
        case POST_CLIP:         /* [alpha, beta], infinite for no bound */
            if (isfinite(p->alpha))
                PW_PUSH(PW_MAX, -1, p->alpha);
            if (isfinite(p->beta))
                PW_PUSH(PW_MIN, -1, p->beta);
            break;
        case POST_ADD: case POST_SUB: case POST_MUL: case POST_DIV: case POST_MAX:
        case POST_MIN:
            PW_PUSH(binary[p->alg], i, 0);
            break;
        case POST_NONE:
            return -1;
        }
    }
#undef PW_PUSH
    return n;
}

/* ---- cuBLASLt's epilogue: act(alpha * AB + beta * C + bias) ------------- */

/* The sum u = alpha * self + beta * C + bias, term by term. */
typedef struct Lin {
    const Stage *s;
    const IrTensor *self;
    const OpMatch *m;
    bool has_self;
    LibLt *lt;
} Lin;

/* Row-major strides of the stage's loops as the output's dims. */
static int64_t out_stride(const Stage *s, int d)
{
    int64_t st = 1;
    for (int e = s->nloops - 1; e > d; e--)
        st *= s->loops[e].hi;
    return st;
}

/* p (a view over the stage's loops, operand()) reads each element of the
 * output at the offset `o mod inner`, o the output's own offset: the dims
 * from `first` on make the inner offset, the others are broadcast (inner
 * == the whole: p is laid out as the output). */
static bool view_is(const Stage *s, const LibPost *p, int first)
{
    for (int d = 0; d < s->nloops; d++) {
        if (s->loops[d].hi == 1)
            continue;
        if (d < first ? p->dims[d] != 1
                      : p->dims[d] != s->loops[d].hi || p->strides[d] != out_stride(s, d))
            return false;
    }
    return true;
}

/* x read as C (laid out as D: the output's own offsets) or as the bias
 * (one value per row of the column-major D, which runs along the
 * output's innermost dims: those of extent product d1, when d1 divides
 * the leading dimension and the batch stride, so that the inner offset
 * is the row). */
static bool lin_read(Lin *l, const IExpr *x, double coef)
{
    LibPost p;
    if (!operand(l->s, l->self, x, &p))
        return false;
    LibLt *lt = l->lt;
    if (!lt->c && view_is(l->s, &p, 0)) {
        lt->c = p.src1;
        lt->c_offset = p.offset;
        lt->beta = coef;
        return true;
    }
    const OpMatch *m = l->m;
    int64_t d1 = m->out_nm ? m->m : m->n, inner = 1;
    int first = l->s->nloops;
    while (first > 0 && inner < d1)
        inner *= l->s->loops[--first].hi;
    if (lt->bias || coef != 1 || inner != d1 || d1 <= 0 || m->ldc % d1 ||
        (m->batch > 1 && m->stride_c % d1) || !view_is(l->s, &p, first))
        return false;
    lt->bias = p.src1;
    lt->bias_offset = p.offset;
    return true;
}

/* One term of u, times `sign`: constants multiplying or dividing a read
 * of self (alpha) or of another tensor (C's beta; the bias takes none). */
static bool lin_term(Lin *l, const IExpr *e, double coef)
{
    switch (e->kind) {
    case IE_ADD:
        return lin_term(l, e->bin.a, coef) && lin_term(l, e->bin.b, coef);
    case IE_SUB:
        return lin_term(l, e->bin.a, coef) && lin_term(l, e->bin.b, -coef);
    case IE_NEG:
        return lin_term(l, e->bin.a, -coef);
    case IE_MUL:
        if (e->bin.a->kind == IE_CONST)
            return lin_term(l, e->bin.b, coef * e->bin.a->value);
        if (e->bin.b->kind == IE_CONST)
            return lin_term(l, e->bin.a, coef * e->bin.b->value);
        return false;
    case IE_DIV:
        return e->bin.b->kind == IE_CONST && e->bin.b->value != 0 &&
               lin_term(l, e->bin.a, coef / e->bin.b->value);
    case IE_ACCESS:
        if (e->access.tensor != l->self)
            return lin_read(l, e, coef);
        if (l->has_self || e->access.nidx != l->s->nloops)
            return false;
        for (int d = 0; d < e->access.nidx; d++)
            if (!is_loop(e->access.idx[d], l->s, d))
                return false;
        l->has_self = true;
        l->lt->alpha = coef;
        return true;
    default:
        return false;
    }
}

/* The activations cuBLASLt has, in double precision. */
static double act_value(LtAct a, double x)
{
    switch (a) {
    case LT_ACT_RELU:
        return x > 0 ? x : 0;
    case LT_ACT_GELU:
        return 0.5 * x * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
    case LT_ACT_NONE:
        break;
    }
    return x;
}

/* e with every occurrence of u replaced by `by`. */
static const IExpr *replaced(IrCtx *cx, const IExpr *e, const IExpr *u, const IExpr *by)
{
    if (ir_expr_equal(e, u))
        return by;
    const IExpr *kids[IR_MAX_CHILDREN];
    int n = ir_expr_children(e, kids);
    bool same = true;
    for (int i = 0; i < n; i++) {
        const IExpr *k = replaced(cx, kids[i], u, by);
        same &= k == kids[i];
        kids[i] = k;
    }
    return same ? e : ir_expr_rebuild(cx, e, kids, NULL, NULL);
}

/* Does e read anything but x (a tensor, an index value)? */
typedef struct OnlyX {
    const IrTensor *x;
    bool other;
} OnlyX;

static bool only_x_visit(void *arg, const IExpr *e)
{
    OnlyX *o = arg;
    if ((e->kind == IE_ACCESS && e->access.tensor != o->x) || e->kind == IE_INDEX ||
        e->kind == IE_ICMP)
        o->other = true;
    return !o->other;
}

/* Points where an activation is told by its values: a grid over [-12, 12]
 * (0 included) and a few far out. */
#define LT_GRID 2401
#define LT_POINTS (LT_GRID + 6)

static double lt_point(int i)
{
    static const double far[] = {-1e4, -100, -1e-6, 1e-6, 100, 1e4};
    return i < LT_GRID ? -12 + 24.0 * i / (LT_GRID - 1) : far[i - LT_GRID];
}

/* value with u replaced by x is act(x) for one of cuBLASLt's activations:
 * evaluated by the interpreter at lt_point()s. */
static bool lt_act(IrCtx *cx, const IExpr *value, const IExpr *u, LtAct *act)
{
    IrMark mark = ir_ctx_mark(cx);
    int64_t shape[1] = {LT_POINTS};
    IrTensor xt = {.id = 0, .name = "x", .kind = IT_INPUT, .elem = ELEM_F32, .rank = 1,
                   .shape = shape};
    IrVar i = ir_var_new(cx, "i", 0, LT_POINTS);
    const Ix *idx[1] = {ix_var(cx, i.id)};
    const IExpr *g = replaced(cx, value, u, ir_access_tensor(cx, &xt, idx, 1));
    OnlyX o = {&xt, false};
    ir_expr_visit(g, only_x_visit, &o);
    bool found = false;
    if (!o.other) {
        double x[LT_POINTS], y[LT_POINTS];
        double *data[1] = {x};
        for (int k = 0; k < LT_POINTS; k++)
            x[k] = lt_point(k);
        ir_eval_stage(ir_stage(cx, RED_NONE, &i, 1, NULL, 0, NULL, 0, g), data, y);
        static const LtAct acts[] = {LT_ACT_NONE, LT_ACT_RELU, LT_ACT_GELU};
        for (int a = 0; a < 3 && !found; a++) {
            found = true;
            for (int k = 0; k < LT_POINTS && found; k++) {
                double want = act_value(acts[a], x[k]);
                found = fabs(y[k] - want) <= 1e-6 * fabs(want) + 1e-12;
            }
            *act = acts[a];
        }
    }
    ir_ctx_release(cx, mark);
    return found;
}

/* Is e, as u, the sum and value act(u)?  Larger candidates first: the
 * activation's argument is the largest subexpression that is such a sum
 * and holds every read of self. */
static bool lt_try(IrCtx *cx, Lin *l, const IExpr *value, const IExpr *e, int *budget)
{
    if (!ir_expr_reads(e, l->self) || --*budget < 0)
        return false;
    LibLt keep = *l->lt;
    l->has_self = false;
    if (lin_term(l, e, 1) && l->has_self && lt_act(cx, value, e, &l->lt->act))
        return true;
    *l->lt = keep;
    const IExpr *kids[IR_MAX_CHILDREN];
    int n = ir_expr_children(e, kids);
    for (int k = 0; k < n; k++)
        if (lt_try(cx, l, value, kids[k], budget))
            return true;
    return false;
}

bool cost_lt_epilogue(IrCtx *cx, const Stage *s, const IrTensor *self, const IExpr *value,
                      const OpMatch *m, LibLt *lt)
{
    memset(lt, 0, sizeof *lt);
    if (!value)
        return false;
    Lin l = {s, self, m, false, lt};
    int budget = 64;
    if (!lt_try(cx, &l, value, value, &budget)) {
        memset(lt, 0, sizeof *lt);
        return false;
    }
    lt->fused = true;
    return true;
}
