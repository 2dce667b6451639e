/* cpucal_gemm.c - times cblas_sgemm (row-major, as the C target calls it)
 * for the shapes given as arguments, one line of output per shape:
 *   M N K TA TB  median-microseconds  GFLOP/s
 * Each shape: a warm-up call, then at least 5 timed calls and 20 ms of
 * them, the median printed.  The operands are allocated per shape and
 * filled with small values; they stay in the caches that hold them, as
 * a layer's activations do when a model runs.  With -c (cold) every call
 * first writes 64 MiB elsewhere, so that A and B come from memory, as a
 * big layer's weights do.  Used by cpucal.sh (run it with
 * OPENBLAS_NUM_THREADS=1).
 *
 * Usage: cpucal_gemm [-c] M,N,K[,TA,TB]...
 * Build: cc -O2 cpucal_gemm.c -o cpucal_gemm -lopenblas */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec * 1e-3;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    int cold = argc > 1 && strcmp(argv[1], "-c") == 0;
    size_t nflush = (size_t)64 << 18;           /* 64 MiB of floats */
    float *flush = cold ? calloc(nflush, sizeof(float)) : NULL;
    if (cold && !flush) {
        fprintf(stderr, "cpucal_gemm: out of memory\n");
        return 1;
    }
    for (int i = 1 + cold; i < argc; i++) {
        int m, n, k, ta = 0, tb = 0;
        if (sscanf(argv[i], "%d,%d,%d,%d,%d", &m, &n, &k, &ta, &tb) < 3 || m < 1 || n < 1 ||
            k < 1) {
            fprintf(stderr, "cpucal_gemm: bad shape '%s' (M,N,K[,TA,TB])\n", argv[i]);
            return 2;
        }
        float *a = malloc(sizeof(float) * (size_t)m * k);
        float *b = malloc(sizeof(float) * (size_t)k * n);
        float *c = malloc(sizeof(float) * (size_t)m * n);
        if (!a || !b || !c) {
            fprintf(stderr, "cpucal_gemm: out of memory\n");
            return 1;
        }
        for (size_t j = 0; j < (size_t)m * k; j++)
            a[j] = (float)(j % 7) * 0.01f;
        for (size_t j = 0; j < (size_t)k * n; j++)
            b[j] = (float)(j % 5) * 0.01f;
        enum { MAXRUNS = 10000 };
        static double t[MAXRUNS];
        int runs = 0;
        double total = 0;
        for (int r = -1; r < MAXRUNS && (r < 5 || total < 20000); r++) {
            if (cold)
                for (size_t j = 0; j < nflush; j += 16)
                    flush[j] += 1.0f;
            double t0 = now_us();
            cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
                        tb ? CblasTrans : CblasNoTrans, m, n, k, 1.0f, a, ta ? m : k, b,
                        tb ? k : n, 0.0f, c, n);
            double dt = now_us() - t0;
            if (r >= 0) {
                t[runs++] = dt;
                total += dt;
            }
        }
        qsort(t, (size_t)runs, sizeof *t, cmp);
        double med = t[runs / 2];
        printf("%d %d %d %d %d %.3f %.2f\n", m, n, k, ta, tb, med, 2.0 * m * n * k / med * 1e-3);
        fflush(stdout);
        free(a);
        free(b);
        free(c);
    }
    free(flush);
    return 0;
}
