/* cblas.c - the library operators of the C target (emit/lib.c) on
 * CBLAS (OpenBLAS): matrix products, convolutions as im2col + GEMM,
 * transposed ones as GEMM + col2im, banded products as dense blocks.
 * Pasted when the program calls CBLAS, after the generated file has
 * defined EIN_BAND_ROWS (emit/lib.c sizes the scratch buffer `tmp` of
 * ein_g2bmm and ein_gbmm with the same number).
 *
 * Every product goes through ein_gemm_batch: OpenBLAS computes on one
 * thread (api_host.c sets it so for each run), on blocks of the product
 * that the OpenMP threads share, the same threads as the generated
 * kernels' and oneDNN's: one set of threads, not two that wait for each
 * other's processors. */
#include <stdint.h>
#include <string.h>
#include <cblas.h>
#include "model.h" /* EMBED-SKIP */

#define EIN_GEMM_WORK 1048576   /* multiply-adds of a block of a product, at least */
#define EIN_GEMM_EDGE 16        /* rows (or columns) of a block, at least */
#define EIN_GEMM_BLOCKS 64      /* blocks of a product, at most */

/* One product of ein_gemm_batch, C = alpha A B.  A matrix-vector product (n or
   m 1: the summation split of an interpolation, a fully connected layer
   at batch 1) is cblas_sgemv, a dot product (both 1) cblas_sdot:
   OpenBLAS's sgemm takes about three times as long for them (0.3.21, one
   thread, an AMD EPYC: m = 1176, n = 1, k = 2 1.53 us against 0.54 us;
   1000 x 512 times a vector 180 us against 59).  C is zeroed before
   sgemv: OpenBLAS's gemv kernels have on some processors let a NaN
   already in y through a beta of 0 (its issues 746, 929), and einc's
   buffers are not cleared. */
static void ein_gemm_one(int ta, int tb, int64_t m, int64_t n, int64_t k,
                         const float *a, int64_t lda, const float *b, int64_t ldb,
                         float *c, int64_t ldc, float alpha)
{
    /* the strides of A's row 0 and of B's column 0 along k */
    int inca = ta ? (int)lda : 1, incb = tb ? 1 : (int)ldb;
    if (m == 1 && n == 1) {
        c[0] = alpha * cblas_sdot((int)k, a, inca, b, incb);
    } else if (n == 1) {
        /* c (stride ldc) = A b: A stored m x k, or k x m when ta */
        for (int64_t i = 0; i < m; i++)
            c[i * ldc] = 0.0f;
        cblas_sgemv(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, (int)(ta ? k : m),
                    (int)(ta ? m : k), alpha, a, (int)lda, b, incb, 0.0f, c, (int)ldc);
    } else if (m == 1) {
        /* c = B^T a: B stored k x n, or n x k when tb */
        memset(c, 0, (size_t)n * sizeof *c);
        cblas_sgemv(CblasRowMajor, tb ? CblasNoTrans : CblasTrans, (int)(tb ? n : k),
                    (int)(tb ? k : n), alpha, b, (int)ldb, a, inca, 0.0f, c, 1);
    } else {
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
                    tb ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k, alpha, a, (int)lda,
                    b, (int)ldb, 0.0f, c, (int)ldc);
    }
}

/* C = alpha A B for a batch of row-major matrices, C m x n (ldc), A m x k (ta:
   stored k x m), B k x n (tb: stored n x k), matrix i at a + i sa, b + i
   sb, c + i sc; or, where split > 1 (a batch of two levels: batch and
   heads), at a + (i / split) sa + (i % split) ssa, and so on.  Each
   matrix is cut into blocks of C's rows (m >= n) or columns, each a call
   of cblas_sgemm on one thread, and the OpenMP threads share the blocks
   of the batch.  The cut depends on the shape
   alone, so each element's sum is the same whatever the thread count
   (OpenBLAS's own threads give other roundings at other counts). */
RT_API void ein_gemm_split(int ta, int tb, int64_t m, int64_t n, int64_t k,
                           const float *a, int64_t lda, int64_t sa, int64_t ssa,
                           const float *b, int64_t ldb, int64_t sb, int64_t ssb,
                           float *c, int64_t ldc, int64_t sc, int64_t ssc,
                           int64_t batch, int64_t split, float alpha)
{
    if (split < 1)
        split = 1;
    int rows = m >= n;
    int64_t d = rows ? m : n, nb = m * n * k / EIN_GEMM_WORK;
    if (nb > d / EIN_GEMM_EDGE)
        nb = d / EIN_GEMM_EDGE;
    if (nb > EIN_GEMM_BLOCKS)
        nb = EIN_GEMM_BLOCKS;
    if (nb < 1)
        nb = 1;
    /* blocks of whole vectors (16 floats) but the last */
    int64_t size = ((d + nb - 1) / nb + 15) / 16 * 16;
    if (size < 1)
        size = 1;
    nb = (d + size - 1) / size;
    if (nb < 1)
        nb = 1;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) if (nb * batch > 1)
#endif
    for (int64_t j = 0; j < nb * batch; j++) {
        int64_t i = j / nb, lo = j % nb * size, len = d - lo < size ? d - lo : size;
        int64_t io = i / split, ii = i % split;
        const float *ai = a + io * sa + ii * ssa, *bi = b + io * sb + ii * ssb;
        float *ci = c + io * sc + ii * ssc;
        if (rows) {
            ai += ta ? lo : lo * lda;
            ci += lo * ldc;
        } else {
            bi += tb ? lo * ldb : lo;
            ci += lo;
        }
        ein_gemm_one(ta, tb, rows ? len : m, rows ? n : len, k, ai, lda, bi, ldb, ci, ldc,
                     alpha);
    }
}

/* The same for a batch of one level, alpha 1. */
RT_API void ein_gemm_batch(int ta, int tb, int64_t m, int64_t n, int64_t k,
                           const float *a, int64_t lda, int64_t sa,
                           const float *b, int64_t ldb, int64_t sb,
                           float *c, int64_t ldc, int64_t sc, int64_t batch)
{
    ein_gemm_split(ta, tb, m, n, k, a, lda, sa, 0, b, ldb, sb, 0, c, ldc, sc, 0, batch, 1,
                   1.0f);
}

/* C = alpha A B for a batch of row-major matrices (out_nm: C stored
   [n][m], computed as C^T = B^T A^T).  ta: A stored [k][m]; tb: B stored
   [n][k].  Of two levels where split > 1, as ein_gemm_split.  alpha is
   the scale of an epilogue that is nothing else (LibLt.scale), else 1. */
RT_API void ein_sgemm_split(int ta, int tb, int out_nm, int64_t m, int64_t n, int64_t k,
                            const float *a, int64_t lda, int64_t sa, int64_t ssa,
                            const float *b, int64_t ldb, int64_t sb, int64_t ssb,
                            float *c, int64_t ldc, int64_t sc, int64_t ssc,
                            int64_t batch, int64_t split, float alpha)
{
    if (!out_nm)
        ein_gemm_split(ta, tb, m, n, k, a, lda, sa, ssa, b, ldb, sb, ssb, c, ldc, sc, ssc,
                       batch, split, alpha);
    else
        ein_gemm_split(!tb, !ta, n, m, k, b, ldb, sb, ssb, a, lda, sa, ssa, c, ldc, sc, ssc,
                       batch, split, alpha);
}

RT_API void ein_sgemm(int ta, int tb, int out_nm, int64_t m, int64_t n, int64_t k,
                      const float *a, int64_t lda, int64_t sa,
                      const float *b, int64_t ldb, int64_t sb,
                      float *c, int64_t ldc, int64_t sc, int64_t batch, float alpha)
{
    ein_sgemm_split(ta, tb, out_nm, m, n, k, a, lda, sa, 0, b, ldb, sb, 0, c, ldc, sc, 0,
                    batch, 1, alpha);
}

/* y[n, f, ho, wo] = sum x[n, c, st*ho + dil*r - ph, st*wo + dil*s - pw] w[f, c, r, s]
   (zero outside x): per image, the patches as a (c r s) x (ho wo) matrix
   (im2col) times the filters as f x (c r s).  A 1x1 convolution with
   stride 1 and no padding multiplies the image itself. */
RT_API void ein_conv2d(const float *x, const float *w, float *y, float *col,
                       int64_t nn, int64_t c, int64_t h, int64_t wd, int64_t f,
                       int64_t r, int64_t s, int64_t ho, int64_t wo, int64_t st,
                       int64_t dil, int64_t ph, int64_t pw)
{
    int64_t kk = c * r * s, pp = ho * wo;
    int direct = r == 1 && s == 1 && st == 1 && ph == 0 && pw == 0 && ho == h && wo == wd;
    for (int64_t n = 0; n < nn; n++) {
        const float *xn = x + n * c * h * wd;
        if (!direct) {
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (kk * pp > 32768)
#endif
            for (int64_t row = 0; row < kk; row++) {
                int64_t ci = row / (r * s), ri = row / s % r, si = row % s;
                float *dst = col + row * pp;
                for (int64_t oh = 0; oh < ho; oh++) {
                    int64_t ih = st * oh + dil * ri - ph;
                    for (int64_t ow = 0; ow < wo; ow++) {
                        int64_t iw = st * ow + dil * si - pw;
                        dst[oh * wo + ow] = ih >= 0 && ih < h && iw >= 0 && iw < wd
                                                ? xn[(ci * h + ih) * wd + iw] : 0.0f;
                    }
                }
            }
        }
        ein_gemm_batch(0, 0, f, pp, kk, w, kk, 0, direct ? xn : col, pp, 0, y + n * f * pp,
                       pp, 0, 1);
    }
}

/* The transposed convolution y[n, f, st*ih - pad + r, st*iw - pad + s] +=
   x[n, c, ih, iw] w[c, f, r, s]: per image, w^T as (f r s) x c times the
   image as c x (h w), then each column added where it lands (col2im). */
RT_API void ein_conv_t2d(const float *x, const float *w, float *y, float *col,
                         int64_t nn, int64_t c, int64_t h, int64_t wd, int64_t f,
                         int64_t r, int64_t s, int64_t ho, int64_t wo, int64_t st,
                         int64_t pad)
{
    int64_t hw = h * wd, frs = f * r * s;
    for (int64_t n = 0; n < nn; n++) {
        float *yn = y + n * f * ho * wo;
        ein_gemm_batch(1, 0, frs, hw, c, w, frs, 0, x + n * c * hw, hw, 0, col, hw, 0, 1);
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (frs * hw > 32768)
#endif
        for (int64_t fi = 0; fi < f; fi++) {
            float *plane = yn + fi * ho * wo;
            memset(plane, 0, sizeof *plane * (size_t)(ho * wo));
            for (int64_t ri = 0; ri < r; ri++)
                for (int64_t si = 0; si < s; si++) {
                    const float *src = col + ((fi * r + ri) * s + si) * hw;
                    for (int64_t ih = 0; ih < h; ih++) {
                        int64_t oh = st * ih - pad + ri;
                        if (oh < 0 || oh >= ho)
                            continue;
                        for (int64_t iw = 0; iw < wd; iw++) {
                            int64_t ow = st * iw - pad + si;
                            if (ow >= 0 && ow < wo)
                                plane[oh * wo + ow] += src[ih * wd + iw];
                        }
                    }
                }
        }
    }
}

/* Banded products, b batches of m rows, band 2w + 1, inner size k, dilation
   d.  Row i = r + d*t (residue r) meets key rows r + d*u, u = t + j - w: a
   block of rows of one residue and the key rows of that residue its band
   covers make one dense product, whose band is the result (a block of T
   rows computes T (T + 2w) entries for T (2w + 1): little waste for a
   wide band).  The operands are views (ein_band_view): rows of one
   residue are d*ld floats apart, a leading dimension as any (libs.c
   grants the call where it is at least the row's length).  Key rows
   outside the sequence are zero. */

/* An operand read through a view (derive/pricing/match.h, BandView): row
   r of batch b at p + (b / split) * stride + (b % split) * sstride +
   r * ld, its columns consecutive. */
typedef struct ein_band_view {
    const float *p;
    int64_t ld, stride, split, sstride;
} ein_band_view;

/* The offset of row r of batch b in a view of these strides. */
static int64_t ein_band_at(int64_t ld, int64_t stride, int64_t split, int64_t sstride,
                           int64_t b, int64_t r)
{
    return b / split * stride + b % split * sstride + r * ld;
}

/* Row r of batch b. */
static const float *ein_band_row(const ein_band_view *v, int64_t b, int64_t r)
{
    return v->p + ein_band_at(v->ld, v->stride, v->split, v->sstride, b, r);
}

/* The output, written through a view as well: dense, or inside the
   buffer of a reordering of it that the product stores (plan.h,
   PlanBuf); its ld at least a row's length. */
typedef struct ein_band_out {
    float *p;
    int64_t ld, stride, split, sstride;
} ein_band_out;

static float *ein_band_out_row(const ein_band_out *v, int64_t b, int64_t r)
{
    return v->p + ein_band_at(v->ld, v->stride, v->split, v->sstride, b, r);
}

/* s[b, i, j] = sum_c q[b, i, c] k[b, i + d (j - w), c] */
RT_API void ein_g2bmm(ein_band_view q, ein_band_view k, ein_band_out s, float *tmp,
                      int64_t nb, int64_t m, int64_t w, int64_t kk, int64_t d)
{
    int64_t band = 2 * w + 1;
    for (int64_t b = 0; b < nb; b++)
        for (int64_t r = 0; r < d && r < m; r++) {
            int64_t nr = (m - r + d - 1) / d;
            const float *qr = ein_band_row(&q, b, r), *kr = ein_band_row(&k, b, r);
            float *sr = ein_band_out_row(&s, b, r);
            for (int64_t t0 = 0; t0 < nr; t0 += EIN_BAND_ROWS) {
                int64_t tn = nr - t0 < EIN_BAND_ROWS ? nr - t0 : EIN_BAND_ROWS;
                int64_t v0 = t0 - w > 0 ? t0 - w : 0;
                int64_t v1 = t0 + tn + w < nr ? t0 + tn + w : nr;
                int64_t len = v1 - v0;
                if (len > 0)
                    ein_gemm_batch(0, 1, tn, len, kk, qr + t0 * d * q.ld, d * q.ld, 0,
                                   kr + v0 * d * k.ld, d * k.ld, 0, tmp, len, 0, 1);
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (tn * band > 32768)
#endif
                for (int64_t t = 0; t < tn; t++) {
                    float *row = sr + (t0 + t) * d * s.ld;
                    for (int64_t j = 0; j < band; j++) {
                        int64_t u = t0 + t + j - w;
                        row[j] = u >= v0 && u < v1 ? tmp[t * len + (u - v0)] : 0.0f;
                    }
                }
            }
        }
}

/* o[b, i, c] = sum_j s[b, i, j] v[b, i + d (j - w), c] */
RT_API void ein_gbmm(ein_band_view s, ein_band_view v, ein_band_out o, float *tmp,
                     int64_t nb, int64_t m, int64_t w, int64_t kk, int64_t d)
{
    int64_t band = 2 * w + 1;
    for (int64_t b = 0; b < nb; b++)
        for (int64_t r = 0; r < d && r < m; r++) {
            int64_t nr = (m - r + d - 1) / d;
            const float *sr = ein_band_row(&s, b, r), *vr = ein_band_row(&v, b, r);
            float *orow = ein_band_out_row(&o, b, r);
            for (int64_t t0 = 0; t0 < nr; t0 += EIN_BAND_ROWS) {
                int64_t tn = nr - t0 < EIN_BAND_ROWS ? nr - t0 : EIN_BAND_ROWS;
                int64_t v0 = t0 - w > 0 ? t0 - w : 0;
                int64_t v1 = t0 + tn + w < nr ? t0 + tn + w : nr;
                int64_t len = v1 - v0;
                if (len <= 0) {
                    for (int64_t t = 0; t < tn; t++)
                        memset(orow + (t0 + t) * d * o.ld, 0, sizeof(float) * (size_t)kk);
                    continue;
                }
                /* the block's band as dense rows over the key rows v0 .. v1 */
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (tn * len > 32768)
#endif
                for (int64_t t = 0; t < tn; t++) {
                    const float *row = sr + (t0 + t) * d * s.ld;
                    memset(tmp + t * len, 0, sizeof(float) * (size_t)len);
                    for (int64_t j = 0; j < band; j++) {
                        int64_t u = t0 + t + j - w;
                        if (u >= v0 && u < v1)
                            tmp[t * len + (u - v0)] = row[j];
                    }
                }
                ein_gemm_batch(0, 0, tn, kk, len, tmp, len, 0, vr + v0 * d * v.ld, d * v.ld, 0,
                               orow + t0 * d * o.ld, d * o.ld, 0, 1);
            }
        }
}
