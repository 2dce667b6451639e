/* vmath.c - the vector functions a C file's vectorized loops call
 * (_ZGVdN8v_expf, ...: the AVX2 ones; with -DAVX512 the AVX-512 ones,
 * _ZGVeN16v_expf, ...), from the library the build links (vmath.sh
 * builds it with SLEEF's GNU-ABI library and with glibc's libmvec): for
 * each of expf, logf, tanhf, erff, sinf, cosf, expm1f and log1pf, the
 * largest error in ulp against the double function of libm over 4
 * million arguments in its range, the values at -inf, inf, NaN and far
 * outside the range, and the nanoseconds per element of vectors of
 * ordinary arguments and of vectors with one lane -inf (a masked
 * softmax's exp) or out of range.  Prints Markdown. */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#ifdef AVX512
#define L 16
typedef __m512 vec;
#define VF(n) vec _ZGVeN16v_##n(vec);
#define LOAD _mm512_loadu_ps
#define STORE _mm512_storeu_ps
#define V(n) _ZGVeN16v_##n
#else
#define L 8
typedef __m256 vec;
#define VF(n) vec _ZGVdN8v_##n(vec);
#define LOAD _mm256_loadu_ps
#define STORE _mm256_storeu_ps
#define V(n) _ZGVdN8v_##n
#endif
VF(expf) VF(logf) VF(tanhf) VF(erff) VF(sinf) VF(cosf) VF(expm1f) VF(log1pf)

typedef vec (*vfn)(vec);

static const struct fn {
    const char *name;
    vfn f;
    double (*ref)(double);
    double lo, hi;              /* the arguments of the error sweep */
    int logscale;               /* drawn uniform in log(x) */
    float odd;                  /* an argument out of the fast range */
} fns[] = {
    {"expf", V(expf), exp, -104, 89, 0, -200},
    {"logf", V(logf), log, 1e-37, 3e38, 1, 0},
    {"tanhf", V(tanhf), tanh, -20, 20, 0, -200},
    {"erff", V(erff), erf, -6, 6, 0, -200},
    {"sinf", V(sinf), sin, -1e4, 1e4, 0, 1e30f},
    {"cosf", V(cosf), cos, -1e4, 1e4, 0, 1e30f},
    {"expm1f", V(expm1f), expm1, -100, 88, 0, -200},
    {"log1pf", V(log1pf), log1p, 1e-30, 1e30, 1, -1},
};

static uint64_t seed = 12345;

static double uniform(void)
{
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(seed >> 11) / 9007199254740992.0;
}

/* the unit in the last place of the float nearest r */
static double ulp(double r)
{
    int e;
    float f = (float)r;
    if (fabsf(f) < 1.17549435e-38f)
        return ldexp(1, -149);
    frexp(f, &e);
    return ldexp(1, e - 24);
}

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

/* ns per element over N vectors of x; lane 3 set to `odd` if asked */
static double speed(const struct fn *f, int with_odd, float odd)
{
    enum { N = 4096, REPS = 200 };
    static float x[N * L], y[N * L];
    for (int i = 0; i < N * L; i++)
        x[i] = (float)(f->logscale ? 0.5 + uniform() : -1 + 2 * uniform());
    if (with_odd)
        for (int i = 0; i < N; i++)
            x[i * L + 3] = odd;
    double best = 1e30;
    for (int r = 0; r < 5; r++) {
        double t0 = now_ns();
        for (int k = 0; k < REPS; k++)
            for (int i = 0; i < N; i++)
                STORE(y + i * L, f->f(LOAD(x + i * L)));
        double t = (now_ns() - t0) / ((double)REPS * N * L);
        if (t < best)
            best = t;
    }
    return best + 0 * y[0];
}

int main(void)
{
    printf("| function | max error, ulp | at | f(-inf) | f(inf) | f(NaN) | f(odd) "
           "| ns/element | with one lane -inf | with one lane odd |\n"
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (size_t k = 0; k < sizeof fns / sizeof *fns; k++) {
        const struct fn *f = &fns[k];
        double worst = 0, at = 0;
        for (long i = 0; i < 4000000; i += L) {
            float x[L], y[L];
            for (int j = 0; j < L; j++) {
                double u = uniform();
                x[j] = (float)(f->logscale ? exp(log(f->lo) + (log(f->hi) - log(f->lo)) * u)
                                           : f->lo + (f->hi - f->lo) * u);
            }
            STORE(y, f->f(LOAD(x)));
            for (int j = 0; j < L; j++) {
                double r = f->ref(x[j]);
                if (!isfinite((float)r))
                    continue;
                double e = fabs(y[j] - r) / ulp(r);
                if (e > worst)
                    worst = e, at = x[j];
            }
        }
        float sp[L] = {-INFINITY, INFINITY, NAN, f->odd}, o[L];
        STORE(o, f->f(LOAD(sp)));
        printf("| %s | %.3f | %g | %g | %g | %g | %g (%g) | %.3f | %.3f | %.3f |\n", f->name,
               worst, at, o[0], o[1], o[2], o[3], f->odd, speed(f, 0, 0),
               speed(f, 1, -INFINITY), speed(f, 1, f->odd));
    }
    return 0;
}
