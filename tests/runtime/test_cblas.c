/* test_cblas.c - runtime/cblas.c's products (ein_sgemm) against plain
 * loops in double: every transpose of A and B and the row-major output
 * and its transpose (out_nm), padded leading dimensions, a batch over
 * strided matrices, and the shapes that go to cblas_sgemv and cblas_sdot
 * rather than cblas_sgemm (m or n 1, both 1); and a batch of two levels
 * (ein_sgemm_split: batch and heads, A's and C's heads interleaved in
 * their rows, B's apart).  The output buffer starts as NaN: every element
 * of C is written, nothing in its padding.  Half the products are scaled
 * (alpha: an epilogue that is a scale alone). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include "rnd.h"

void ein_sgemm(int ta, int tb, int out_nm, int64_t m, int64_t n, int64_t k,
               const float *a, int64_t lda, int64_t sa, const float *b, int64_t ldb, int64_t sb,
               float *c, int64_t ldc, int64_t sc, int64_t batch, float alpha);

void ein_sgemm_split(int ta, int tb, int out_nm, int64_t m, int64_t n, int64_t k,
                     const float *a, int64_t lda, int64_t sa, int64_t ssa,
                     const float *b, int64_t ldb, int64_t sb, int64_t ssb,
                     float *c, int64_t ldc, int64_t sc, int64_t ssc,
                     int64_t batch, int64_t split, float alpha);

static int failures, cases;

/* The largest relative error so far, err, or that of one matrix C =
 * alpha A B (out_nm: C stored [n][m]) against a sum in double. */
static double matrix_err(double err, int ta, int tb, int out_nm, int64_t m, int64_t n,
                         int64_t k, const float *aq, int64_t lda, const float *bq,
                         int64_t ldb, const float *cq, int64_t ldc, float alpha)
{
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0;
            for (int64_t l = 0; l < k; l++)
                s += (double)(ta ? aq[l * lda + i] : aq[i * lda + l]) *
                     (double)(tb ? bq[j * ldb + l] : bq[l * ldb + j]);
            s *= alpha;
            float got = out_nm ? cq[j * ldc + i] : cq[i * ldc + j];
            double e = fabs((double)got - s) / (1.0 + fabs(s));
            if (!(e <= err))
                err = isnan(e) ? INFINITY : e;
        }
    return err;
}

/* Batch o, head h of a two-level batch: A [O][rows][H][cols] (heads
 * interleaved in a row), B [O][H][rows][cols], C [O][rows][H][cols]. */
static void check_split(int ta, int tb, int out_nm, int64_t m, int64_t n, int64_t k)
{
    const int64_t O = 2, H = 3;
    int64_t ca = ta ? m : k, ra = ta ? k : m, cb = tb ? k : n, rb = tb ? n : k;
    int64_t cc = out_nm ? m : n, rc = out_nm ? n : m;
    int64_t lda = H * ca, ssa = ca, sa = ra * lda;
    int64_t ldb = cb, ssb = rb * cb, sb = H * ssb;
    int64_t ldc = H * cc, ssc = cc, sc = rc * ldc;
    float *a = rnd((size_t)(O * sa), 3), *b = rnd((size_t)(O * sb), 4);
    float *c = malloc((size_t)(O * sc) * sizeof *c);
    for (int64_t i = 0; i < O * sc; i++)
        c[i] = NAN;
    ein_sgemm_split(ta, tb, out_nm, m, n, k, a, lda, sa, ssa, b, ldb, sb, ssb, c, ldc, sc, ssc,
                    O * H, H, 0.125f);
    double err = 0;
    for (int64_t o = 0; o < O; o++)
        for (int64_t h = 0; h < H; h++)
            err = matrix_err(err, ta, tb, out_nm, m, n, k, a + o * sa + h * ssa, lda,
                             b + o * sb + h * ssb, ldb, c + o * sc + h * ssc, ldc, 0.125f);
    cases++;
    if (err > 1e-5) {
        failures++;
        printf("FAIL split ta=%d tb=%d out_nm=%d m=%lld n=%lld k=%lld: rel err %g\n", ta, tb,
               out_nm, (long long)m, (long long)n, (long long)k, err);
    }
    free(a);
    free(b);
    free(c);
}

/* One product: C (m x n, or n x m with out_nm) = A B over `batch`
 * matrices, each operand with a leading dimension `pad` past its least. */
static void check(int ta, int tb, int out_nm, int64_t m, int64_t n, int64_t k, int64_t batch,
                  int64_t pad)
{
    int64_t lda = (ta ? m : k) + pad, ldb = (tb ? k : n) + pad;
    int64_t ldc = (out_nm ? m : n) + pad;
    int64_t sa = (ta ? k : m) * lda + 3, sb = (tb ? n : k) * ldb + 5;
    int64_t sc = (out_nm ? n : m) * ldc + 7;
    float *a = rnd((size_t)(sa * batch), 1), *b = rnd((size_t)(sb * batch), 2);
    size_t nc = (size_t)(sc * batch);
    float *c = malloc(nc * sizeof *c);
    for (size_t i = 0; i < nc; i++)
        c[i] = NAN;
    float alpha = pad ? -0.25f : 1.0f;     /* an epilogue's scale, or none */
    ein_sgemm(ta, tb, out_nm, m, n, k, a, lda, sa, b, ldb, sb, c, ldc, sc, batch, alpha);
    double err = 0;
    int bad_pad = 0;
    for (int64_t q = 0; q < batch; q++) {
        const float *cq = c + q * sc;
        err = matrix_err(err, ta, tb, out_nm, m, n, k, a + q * sa, lda, b + q * sb, ldb, cq,
                         ldc, alpha);
        /* the padding of each row of C and the gap to the next matrix */
        int64_t rowsc = out_nm ? n : m, colsc = out_nm ? m : n;
        for (int64_t r = 0; r < rowsc; r++)
            for (int64_t x = colsc; x < (r + 1 < rowsc ? ldc : sc - r * ldc); x++)
                bad_pad |= !isnan(cq[r * ldc + x]);
    }
    cases++;
    if (err > 1e-5 || bad_pad) {
        failures++;
        printf("FAIL ta=%d tb=%d out_nm=%d m=%lld n=%lld k=%lld batch=%lld pad=%lld: "
               "rel err %g%s\n", ta, tb, out_nm, (long long)m, (long long)n, (long long)k,
               (long long)batch, (long long)pad, err, bad_pad ? ", padding written" : "");
    }
    free(a);
    free(b);
    free(c);
}

int main(void)
{
    static const int64_t shapes[][3] = {
        {1, 1, 7}, {1, 1, 768}, {5, 1, 3}, {37, 1, 300}, {1176, 1, 2}, {1, 6, 4},
        {1, 300, 37}, {1, 8192, 100}, {4, 5, 6}, {64, 48, 33}, {1, 2, 1}, {2, 1, 1},
    };
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++)
                for (int out_nm = 0; out_nm < 2; out_nm++)
                    for (int64_t pad = 0; pad < 3; pad += 2)
                        check(ta, tb, out_nm, shapes[s][0], shapes[s][1], shapes[s][2],
                              pad ? 3 : 1, pad);
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            for (int out_nm = 0; out_nm < 2; out_nm++) {
                check_split(ta, tb, out_nm, 5, 7, 4);
                check_split(ta, tb, out_nm, 40, 33, 17);
            }
    printf("test_cblas: %d products, %d failed\n", cases, failures);
    return failures ? 1 : 0;
}
