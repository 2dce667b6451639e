/* harness.c - command line, seeded values, tensor lists, timing (see
 * harness.h).  Plain C99 that also compiles as C++; the CUDA-event timing
 * of the GPU target is written by the emitter. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "harness.h" /* EMBED-SKIP */

/* ---- command line ------------------------------------------------------- */

RT_API void rt_usage(FILE *out, const char *prog)
{
    fprintf(out,
"usage: %s [--weights FILE] [--inputs FILE] [--outputs FILE] [--seed N]\n"
"          [--bench ITERS] [--threads N] [--runs N]\n"
"  --weights FILE  read the weights from a safetensors file; without it\n"
"                  they are seeded uniform(-1, 1) values\n"
"  --inputs FILE   read the inputs from a safetensors file; without it\n"
"                  they are seeded uniform(-1, 1) values\n"
"  --outputs FILE  write the outputs to a safetensors file\n"
"  --seed N        seed of the values made up for missing tensors\n"
"                  (default 0)\n"
"  --bench ITERS   after a warm-up run, run ITERS times and print the\n"
"                  median milliseconds per run\n"
"  --threads N     compute with at most N threads, fewer where fewer\n"
"                  ran faster (default: as many as OpenMP would use,\n"
"                  OMP_NUM_THREADS or every processor)\n"
"  --runs N        run N times (default 1) and take the outputs from the\n"
"                  last, which reuses what the runs before left in the\n"
"                  context (its CUDA graph, the intermediates' memory)\n"
"  -h, --help      print this help\n"
"An option's value follows it as the next argument or after '='\n"
"(--seed=3).\n", prog);
}

static int rt_fail(char *err, size_t errlen, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static int rt_fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    if (err && errlen) {
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* Decimal digits only (no sign, no spaces), at most max. */
static int rt_parse_u64(const char *s, uint64_t max, uint64_t *out)
{
    uint64_t v = 0;
    if (!*s)
        return -1;
    for (; *s; s++) {
        unsigned d;
        if (*s < '0' || *s > '9')
            return -1;
        d = (unsigned)(*s - '0');
        if (v > (max - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

#define RT_BENCH_MAX 1000000000L
#define RT_THREADS_MAX 4096

RT_API int rt_parse_args(int argc, char **argv, RtArgs *a, char *err,
                         size_t errlen)
{
    static const char *const opts[] = {
        "--weights", "--inputs", "--outputs", "--seed", "--bench", "--threads", "--runs"
    };
    enum { NOPTS = sizeof opts / sizeof *opts };
    int seen[NOPTS] = { 0 };
    const char *slash;
    int i;

    memset(a, 0, sizeof *a);
    a->prog = argc > 0 && argv[0] && argv[0][0] ? argv[0] : "net";
    slash = strrchr(a->prog, '/');
    if (slash && slash[1])
        a->prog = slash + 1;
    for (i = 1; i < argc; i++) {
        const char *arg = argv[i], *val = NULL;
        size_t n;
        int k;
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            a->help = 1;
            return 0;
        }
        if (arg[0] != '-' || arg[1] == 0)
            return rt_fail(err, errlen, "unexpected argument '%s'", arg);
        for (k = 0; k < NOPTS; k++) {
            n = strlen(opts[k]);
            if (strncmp(arg, opts[k], n) == 0 &&
                (arg[n] == 0 || arg[n] == '='))
                break;
        }
        if (k == NOPTS)
            return rt_fail(err, errlen, "unknown option '%s'", arg);
        n = strlen(opts[k]);
        if (arg[n] == '=')
            val = arg + n + 1;
        else if (i + 1 < argc)
            val = argv[++i];
        if (!val || !*val)
            return rt_fail(err, errlen, "option '%s' needs %s", opts[k],
                           k < 3 ? "a file name" : "a number");
        if (seen[k]++)
            return rt_fail(err, errlen, "option '%s' given twice", opts[k]);
        switch (k) {
        case 0: a->weights = val; break;
        case 1: a->inputs = val; break;
        case 2: a->outputs = val; break;
        case 3:
            if (rt_parse_u64(val, UINT64_MAX, &a->seed) < 0)
                return rt_fail(err, errlen, "option '--seed': '%s' is not a "
                               "number from 0 to 18446744073709551615", val);
            break;
        case 4:
        case 6: {
            uint64_t v;
            if (rt_parse_u64(val, (uint64_t)RT_BENCH_MAX, &v) < 0 || v == 0)
                return rt_fail(err, errlen, "option '%s': '%s' is not "
                               "a count from 1 to %ld", opts[k], val, RT_BENCH_MAX);
            *(k == 4 ? &a->bench : &a->runs) = (long)v;
            break;
        }
        default: {
            uint64_t v;
            if (rt_parse_u64(val, (uint64_t)RT_THREADS_MAX, &v) < 0 || v == 0)
                return rt_fail(err, errlen, "option '--threads': '%s' is not "
                               "a count from 1 to %d", val, RT_THREADS_MAX);
            a->threads = (int)v;
            break;
        }
        }
    }
    return 0;
}

RT_API void rt_main_args(int argc, char **argv, RtArgs *a)
{
    char err[ST_ERRLEN];
    if (rt_parse_args(argc, argv, a, err, sizeof err) < 0) {
        fprintf(stderr, "%s: error: %s\nTry '%s --help' for more "
                "information.\n", a->prog, err, a->prog);
        exit(1);
    }
    if (a->help) {
        rt_usage(stdout, a->prog);
        exit(fflush(stdout) == 0 ? 0 : 1);
    }
}

/* ---- seeded values ------------------------------------------------------ */

/* SplitMix64's finalizer (Steele, Lea, Flood 2014). */
static uint64_t rt_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

RT_API uint64_t rt_stream(uint64_t seed, const char *name)
{
    uint64_t h = 0xCBF29CE484222325ULL;           /* FNV-1a of the name */
    const unsigned char *p = (const unsigned char *)name;
    for (; *p; p++) {
        h ^= *p;
        h *= 0x100000001B3ULL;
    }
    return rt_mix64(seed ^ rt_mix64(h));
}

/* The top 24 bits of the i-th SplitMix64 output, as k / 2^23 - 1: exact
 * in float, so no rounding mode or FMA can change it. */
RT_API float rt_uniform(uint64_t stream, uint64_t i)
{
    uint64_t z = rt_mix64(stream + (i + 1) * 0x9E3779B97F4A7C15ULL);
    int32_t k = (int32_t)(z >> 40) - (1 << 23);
    return (float)k * (1.0f / 8388608.0f);
}

RT_API void rt_fill_uniform(void *dst, StDtype dtype, uint64_t n,
                            uint64_t seed, const char *name)
{
    uint64_t s = rt_stream(seed, name), i;
    if (dtype == ST_F32) {
        float *d = (float *)dst;
        for (i = 0; i < n; i++)
            d[i] = rt_uniform(s, i);
    } else if (dtype == ST_F16 || dtype == ST_BF16) {
        uint16_t *d = (uint16_t *)dst;
        for (i = 0; i < n; i++)
            d[i] = dtype == ST_F16 ? st_f32_to_f16(rt_uniform(s, i))
                                   : st_f32_to_bf16(rt_uniform(s, i));
    } else {
        memset(dst, 0, (size_t)(n * st_dtype_size(dtype)));
    }
}

/* ---- tensor lists ------------------------------------------------------- */

RT_API uint64_t rt_nelem(const RtTensor *t)
{
    uint64_t n = 1;
    int i;
    for (i = 0; i < t->rank; i++)
        n *= (uint64_t)t->shape[i];
    return n;
}

RT_API size_t rt_nbytes(const RtTensor *t)
{
    return (size_t)(rt_nelem(t) * st_dtype_size(t->dtype));
}

RT_API int rt_load_or_fill(const char *prog, const char *option,
                           const char *path, const RtTensor *ts, int n,
                           uint64_t seed, char *err, size_t errlen)
{
    StFile *f;
    int i, rc;
    if (!path) {
        int nint = 0;       /* integer and bool tensors are zeros */
        for (i = 0; i < n; i++)
            nint += ts[i].dtype != ST_F32 && ts[i].dtype != ST_F16 && ts[i].dtype != ST_BF16;
        if (n > nint)
            fprintf(stderr, "%s: no %s given: filling %d tensor%s with "
                    "uniform(-1, 1) values from seed %llu\n", prog, option,
                    n - nint, n - nint == 1 ? "" : "s", (unsigned long long)seed);
        if (nint > 0)
            fprintf(stderr, "%s: no %s given: filling %d integer or bool tensor%s "
                    "with zeros\n", prog, option, nint, nint == 1 ? "" : "s");
        for (i = 0; i < n; i++)
            rt_fill_uniform(ts[i].data, ts[i].dtype, rt_nelem(&ts[i]), seed,
                            ts[i].name);
        return ST_OK;
    }
    rc = st_open(path, &f, err, errlen);
    if (rc != ST_OK)
        return rc;
    for (i = 0; i < n && rc == ST_OK; i++)
        rc = st_read(f, ts[i].name, ts[i].dtype, ts[i].rank, ts[i].shape,
                     ts[i].data, rt_nbytes(&ts[i]), err, errlen);
    st_close(f);
    return rc;
}

RT_API int rt_write_tensors(const char *path, const RtTensor *ts, int n,
                            char *err, size_t errlen)
{
    StOut *o = (StOut *)malloc((size_t)(n > 0 ? n : 1) * sizeof *o);
    int i, rc;
    if (!o) {
        if (err && errlen)
            snprintf(err, errlen, "%s: out of memory", path);
        return ST_ENOMEM;
    }
    for (i = 0; i < n; i++) {
        o[i].name = ts[i].name;
        o[i].dtype = ts[i].dtype;
        o[i].rank = ts[i].rank;
        o[i].shape = ts[i].shape;
        o[i].data = ts[i].data;
    }
    rc = st_write(path, o, n, NULL, 0, 0, err, errlen);
    free(o);
    return rc;
}

/* ---- timing ------------------------------------------------------------- */

RT_API double rt_now_ms(void)
{
#if defined(CLOCK_MONOTONIC)
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) == 0)
        return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
#endif
#if defined(TIME_UTC)
    {
        struct timespec u;
        if (timespec_get(&u, TIME_UTC) == TIME_UTC)
            return (double)u.tv_sec * 1e3 + (double)u.tv_nsec * 1e-6;
    }
#endif
    return (double)clock() * 1e3 / CLOCKS_PER_SEC;
}

static int rt_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

RT_API double rt_median(double *v, int n)
{
    if (n <= 0)
        return 0.0;
    qsort(v, (size_t)n, sizeof *v, rt_cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

RT_API void rt_print_bench(FILE *out, double *ms, int n)
{
    double med = rt_median(ms, n);
    if (n <= 0)
        return;
    fprintf(out, "median %.6f ms per run over %d run%s (min %.6f, max %.6f)\n",
            med, n, n == 1 ? "" : "s", ms[0], ms[n - 1]);
}
