/* cblas.c - the library operators of the C target (emit/lib.c) on
 * CBLAS (OpenBLAS): matrix products, convolutions as im2col + GEMM,
 * transposed ones as GEMM + col2im, banded products as dense blocks.
 * Pasted when the program calls CBLAS, after the generated file has
 * defined EIN_BAND_ROWS (emit/lib.c sizes the scratch buffer `tmp` of
 * ein_g2bmm and ein_gbmm with the same number). */
#include <stdint.h>
#include <string.h>
#include <cblas.h>
#include "model.h" /* EMBED-SKIP */

/* C = A B for a batch of row-major matrices (out_nm: C stored [n][m],
   computed as C^T = B^T A^T).  ta: A stored [k][m]; tb: B stored [n][k]. */
RT_API void ein_sgemm(int ta, int tb, int out_nm, int64_t m, int64_t n, int64_t k,
                      const float *a, int64_t lda, int64_t sa,
                      const float *b, int64_t ldb, int64_t sb,
                      float *c, int64_t ldc, int64_t sc, int64_t batch)
{
    for (int64_t i = 0; i < batch; i++) {
        if (!out_nm)
            cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
                        tb ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k, 1.0f,
                        a + i * sa, (int)lda, b + i * sb, (int)ldb, 0.0f, c + i * sc,
                        (int)ldc);
        else
            cblas_sgemm(CblasRowMajor, tb ? CblasNoTrans : CblasTrans,
                        ta ? CblasNoTrans : CblasTrans, (int)n, (int)m, (int)k, 1.0f,
                        b + i * sb, (int)ldb, a + i * sa, (int)lda, 0.0f, c + i * sc,
                        (int)ldc);
    }
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
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)f, (int)pp, (int)kk,
                    1.0f, w, (int)kk, direct ? xn : col, (int)pp, 0.0f, y + n * f * pp,
                    (int)pp);
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
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)frs, (int)hw, (int)c,
                    1.0f, w, (int)frs, x + n * c * hw, (int)hw, 0.0f, col, (int)hw);
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

/* Row r of batch b. */
static const float *ein_band_row(const ein_band_view *v, int64_t b, int64_t r)
{
    return v->p + b / v->split * v->stride + b % v->split * v->sstride + r * v->ld;
}

/* s[b, i, j] = sum_c q[b, i, c] k[b, i + d (j - w), c] */
RT_API void ein_g2bmm(ein_band_view q, ein_band_view k, float *s, float *tmp, int64_t nb,
                      int64_t m, int64_t w, int64_t kk, int64_t d)
{
    int64_t band = 2 * w + 1;
    for (int64_t b = 0; b < nb; b++)
        for (int64_t r = 0; r < d && r < m; r++) {
            int64_t nr = (m - r + d - 1) / d;
            const float *qr = ein_band_row(&q, b, r), *kr = ein_band_row(&k, b, r);
            float *sr = s + (b * m + r) * band;
            for (int64_t t0 = 0; t0 < nr; t0 += EIN_BAND_ROWS) {
                int64_t tn = nr - t0 < EIN_BAND_ROWS ? nr - t0 : EIN_BAND_ROWS;
                int64_t v0 = t0 - w > 0 ? t0 - w : 0;
                int64_t v1 = t0 + tn + w < nr ? t0 + tn + w : nr;
                int64_t len = v1 - v0;
                if (len > 0)
                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)tn, (int)len,
                                (int)kk, 1.0f, qr + t0 * d * q.ld, (int)(d * q.ld),
                                kr + v0 * d * k.ld, (int)(d * k.ld), 0.0f, tmp, (int)len);
                for (int64_t t = 0; t < tn; t++) {
                    float *row = sr + (t0 + t) * d * band;
                    for (int64_t j = 0; j < band; j++) {
                        int64_t u = t0 + t + j - w;
                        row[j] = u >= v0 && u < v1 ? tmp[t * len + (u - v0)] : 0.0f;
                    }
                }
            }
        }
}

/* o[b, i, c] = sum_j s[b, i, j] v[b, i + d (j - w), c] */
RT_API void ein_gbmm(ein_band_view s, ein_band_view v, float *o, float *tmp, int64_t nb,
                     int64_t m, int64_t w, int64_t kk, int64_t d)
{
    int64_t band = 2 * w + 1;
    for (int64_t b = 0; b < nb; b++)
        for (int64_t r = 0; r < d && r < m; r++) {
            int64_t nr = (m - r + d - 1) / d;
            const float *sr = ein_band_row(&s, b, r), *vr = ein_band_row(&v, b, r);
            float *orow = o + (b * m + r) * kk;
            for (int64_t t0 = 0; t0 < nr; t0 += EIN_BAND_ROWS) {
                int64_t tn = nr - t0 < EIN_BAND_ROWS ? nr - t0 : EIN_BAND_ROWS;
                int64_t v0 = t0 - w > 0 ? t0 - w : 0;
                int64_t v1 = t0 + tn + w < nr ? t0 + tn + w : nr;
                int64_t len = v1 - v0;
                if (len <= 0) {
                    for (int64_t t = 0; t < tn; t++)
                        memset(orow + (t0 + t) * d * kk, 0, sizeof(float) * (size_t)kk);
                    continue;
                }
                /* the block's band as dense rows over the key rows v0 .. v1 */
                memset(tmp, 0, sizeof(float) * (size_t)(tn * len));
                for (int64_t t = 0; t < tn; t++) {
                    const float *row = sr + (t0 + t) * d * s.ld;
                    for (int64_t j = 0; j < band; j++) {
                        int64_t u = t0 + t + j - w;
                        if (u >= v0 && u < v1)
                            tmp[t * len + (u - v0)] = row[j];
                    }
                }
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)tn, (int)kk,
                            (int)len, 1.0f, tmp, (int)len, vr + v0 * d * v.ld, (int)(d * v.ld),
                            0.0f, orow + t0 * d * kk, (int)(d * kk));
            }
        }
}
