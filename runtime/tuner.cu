/* tuner.cu - the main() of einc --emit=tuner (emit/tuner.c): times every
 * operator of the program and writes a tuning database that einc
 * --tune-db reads (derive/pricing/tunedb.c, einc(1) TUNING DATABASE):
 *
 *   usage: ./tune DB [--iters N]
 *
 * Every input buffer gets uniform values in [-1, 1) (16-bit types: values
 * of magnitude 0.25 to 1); each operator runs EIN_TUNE_WARMUP times to
 * warm up, then N times (default 20), each between two CUDA events on one
 * stream, and its median goes to DB as "MICROSECONDS KEY".  A cuDNN
 * convolution is timed so on each engine einc may use for it (at most
 * EIN_TUNE_ENGINES, in the heuristics' order, within the context's
 * workspace), and the fastest goes to DB, its time and then its engine
 * as "engine N KEY" (N its global index), which einc --tune-db writes
 * into the program for its M_create to try first.  Lines are
 * written and flushed as operators finish, so a run that fails half way
 * leaves a valid database of what it measured.  Every CUDA call is
 * checked.  The generated file defines before it the table
 * ein_tune_ops[EIN_TUNE_NOPS] (tensor id, its ein_op_N, key, its slot of
 * ein_convs[] or -1), EIN_TUNE_CONVS (1: the program has cuDNN
 * convolutions) and EIN_TUNE_DEVICE (the device name for the database). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "model.h" /* EMBED-SKIP */

#define EIN_TUNE_WARMUP 3
/* cuDNN engines timed per convolution, at most */
#define EIN_TUNE_ENGINES 8

RT_API int ein_tune_cmp(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* xorshift64*: a fixed seed, so every run fills the same values */
RT_API unsigned long long ein_tune_rng(unsigned long long *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545f4914f6cdd1dULL;
}

/* Uniform values in [-1, 1) for f32; for f16 and bf16 the bit patterns
   of values of magnitude 0.25 to 1, either sign. */
RT_API void ein_tune_fill(void *buf, const model_tensor_info *t, unsigned long long *s)
{
    size_t i;
    for (i = 0; i < t->count; i++) {
        unsigned long long r = ein_tune_rng(s);
        if (t->elem == MODEL_F32) {
            ((float *)buf)[i] = (float)((double)(r >> 11) / 9007199254740992.0 * 2 - 1);
        } else {
            unsigned sign = (unsigned)(r >> 63) << 15, bits = (unsigned)(r >> 20);
            unsigned e = t->elem == MODEL_F16 ? (13u + (bits & 1u)) << 10
                                            : (125u + (bits & 1u)) << 7;
            unsigned m = t->elem == MODEL_F16 ? (bits >> 1) & 0x3ffu : (bits >> 1) & 0x7fu;
            ((unsigned short *)buf)[i] = (unsigned short)(sign | e | m);
        }
    }
}

RT_API void ein_tune_usage(FILE *fp, const char *prog)
{
    fprintf(fp, "Usage: %s DB [--iters N]\n"
            "Time each of the %d operators of this program on the GPU (%d warm-up\n"
            "runs, then N timed runs, default 20) and write their medians to the\n"
            "tuning database DB, for einc --tune-db=DB.\n",
            prog, EIN_TUNE_NOPS, EIN_TUNE_WARMUP);
}

/* A failed CUDA call, said on stderr, then `fail` (a statement). */
#define EIN_TUNE_CUDA_OR(call, fail)                                       \
    do {                                                                   \
        cudaError_t ein_e_ = (call);                                       \
        if (ein_e_ != cudaSuccess) {                                       \
            fprintf(stderr, "%s: error: %s failed: %s\n", prog, #call,      \
                    cudaGetErrorString(ein_e_));                           \
            fail;                                                          \
        }                                                                  \
    } while (0)
#define EIN_TUNE_CUDA(call) EIN_TUNE_CUDA_OR(call, goto out)

/* What the timing of an operator needs. */
typedef struct ein_tune_clock {
    const char *prog;
    cudaStream_t stream;
    cudaEvent_t start, stop;
    float *times;
    long iters;
} ein_tune_clock;

/* The median microseconds of operator op in *us: EIN_TUNE_WARMUP runs,
   then c->iters each between two events.  0, or 1 when the operator
   failed (its message in ctx), 2 when a CUDA call did (said). */
RT_API int ein_tune_time(const ein_tune_clock *c, model_ctx *ctx, int op, float *us)
{
    const char *prog = c->prog;
    long it, n = c->iters;
    float ms;
    for (it = 0; it < EIN_TUNE_WARMUP; it++)
        if (ein_tune_ops[op].run(ctx, ctx->buf, c->stream) != 0)
            return 1;
    EIN_TUNE_CUDA_OR(cudaStreamSynchronize(c->stream), return 2);
    for (it = 0; it < n; it++) {
        EIN_TUNE_CUDA_OR(cudaEventRecord(c->start, c->stream), return 2);
        if (ein_tune_ops[op].run(ctx, ctx->buf, c->stream) != 0)
            return 1;
        EIN_TUNE_CUDA_OR(cudaEventRecord(c->stop, c->stream), return 2);
        EIN_TUNE_CUDA_OR(cudaEventSynchronize(c->stop), return 2);
        EIN_TUNE_CUDA_OR(cudaEventElapsedTime(&ms, c->start, c->stop), return 2);
        c->times[it] = ms * 1000.0f;
    }
    qsort(c->times, (size_t)n, sizeof *c->times, ein_tune_cmp);
    *us = n % 2 ? c->times[n / 2] : (c->times[n / 2 - 1] + c->times[n / 2]) / 2;
    return 0;
}

#if EIN_TUNE_CONVS
/* Operator op, a cuDNN convolution with a plan, timed on each engine
   einc may use for it (ein_conv_setup, each time skipping the engines
   timed already) within the context's workspace, and left on the
   fastest: its time in *us, its engine in *engine.  As ein_tune_time. */
RT_API int ein_tune_engines(const ein_tune_clock *c, model_ctx *ctx, int op, float *us,
                            int64_t *engine)
{
    int slot = ein_tune_ops[op].conv, n, best = 0, rc;
    ein_conv *cv = &ctx->conv[slot];
    ein_conv_spec sp = ein_convs[slot];
    int64_t tried[EIN_TUNE_ENGINES];
    float t[EIN_TUNE_ENGINES];
    sp.engine = -1;
    for (n = 0; n < EIN_TUNE_ENGINES; n++) {
        ein_conv_drop(cv);
        if (ein_conv_setup(ctx, cv, &sp, ctx->ws_bytes, tried, n) != 0) {
            if (n > 0)
                ctx->err[0] = 0;    /* no more engines; with none, why */
            break;
        }
        tried[n] = cv->engine;
        if ((rc = ein_tune_time(c, ctx, op, &t[n])) != 0)
            return rc;
        if (t[n] < t[best])
            best = n;
        fprintf(stderr, "%s: %d/%d: engine %lld: %.3f us\n", c->prog, op + 1, EIN_TUNE_NOPS,
                (long long)tried[n], t[n]);
    }
    /* the plan it had fitted the workspace: there was one engine */
    ein_conv_drop(cv);
    sp.engine = tried[best];
    if (n == 0 || ein_conv_setup(ctx, cv, &sp, ctx->ws_bytes, NULL, 0) != 0)
        return 1;
    *us = t[best];
    *engine = cv->engine;
    return 0;
}
#endif

int main(int argc, char **argv)
{
    const char *prog = argc > 0 ? argv[0] : "tune", *path = NULL;
    long iters = 20;
    int rc = 1, i, op;
    ein_tune_clock clock;
    model_ctx *ctx = NULL;
    cudaStream_t stream = NULL;
    cudaEvent_t start = NULL, stop = NULL;
    struct cudaDeviceProp prop;
    int dev = 0;
    float *times = NULL;
    void *host = NULL;
    size_t most = 1;
    unsigned long long seed = 0x9e3779b97f4a7c15ULL;
    FILE *db = NULL;
    char *end;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            ein_tune_usage(stdout, prog);
            return 0;
        } else if (strcmp(argv[i], "--iters") == 0 && i + 1 < argc) {
            iters = strtol(argv[++i], &end, 10);
            if (*argv[i] == 0 || *end || iters < 1 || iters > 100000) {
                fprintf(stderr, "%s: error: --iters wants 1 to 100000, not '%s'\n",
                        prog, argv[i]);
                return 2;
            }
        } else if (argv[i][0] == '-' && argv[i][1] != 0) {
            fprintf(stderr, "%s: error: unknown option '%s'\n", prog, argv[i]);
            ein_tune_usage(stderr, prog);
            return 2;
        } else if (path) {
            fprintf(stderr, "%s: error: more than one database: '%s'\n", prog, argv[i]);
            return 2;
        } else {
            path = argv[i];
        }
    }
    if (!path) {
        ein_tune_usage(stderr, prog);
        return 2;
    }
    times = (float *)malloc(sizeof *times * (size_t)iters);
    for (i = 0; i < EIN_NT; i++)
        if (model_tensor_at(i)->nbytes > most)
            most = model_tensor_at(i)->nbytes;
    host = malloc(most);
    if (!times || !host) {
        fprintf(stderr, "%s: error: out of memory\n", prog);
        goto out;
    }
    if (model_create(&ctx) != MODEL_OK) {
        fprintf(stderr, "%s: error: %s\n", prog, model_last_error(ctx));
        goto out;
    }
    for (i = 0; i < EIN_NT; i++) {
        const model_tensor_info *t = model_tensor_at(i);
        if (t->kind != MODEL_INPUT || t->nbytes == 0)
            continue;
        ein_tune_fill(host, t, &seed);
        EIN_TUNE_CUDA(cudaMemcpy(ctx->buf[i], host, t->nbytes, cudaMemcpyHostToDevice));
    }
    EIN_TUNE_CUDA(cudaGetDevice(&dev));
    EIN_TUNE_CUDA(cudaGetDeviceProperties(&prop, dev));
    EIN_TUNE_CUDA(cudaStreamCreate(&stream));
    EIN_TUNE_CUDA(cudaEventCreate(&start));
    EIN_TUNE_CUDA(cudaEventCreate(&stop));
    EIN_TUNE_CUDA(cudaDeviceSynchronize());
    if (!(db = fopen(path, "w"))) {
        fprintf(stderr, "%s: error: cannot write '%s'\n", prog, path);
        goto out;
    }
    fprintf(db, "einc-tune 1\ndevice %s\n# measured on %s (sm_%d%d): median of %ld "
            "runs after %d to warm up, microseconds\n", EIN_TUNE_DEVICE, prop.name,
            prop.major, prop.minor, iters, EIN_TUNE_WARMUP);
    fflush(db);
    clock.prog = prog;
    clock.stream = stream;
    clock.start = start;
    clock.stop = stop;
    clock.times = times;
    clock.iters = iters;
    for (op = 0; op < EIN_TUNE_NOPS; op++) {
        float us = 0;
        long long engine = -1;
        int got;
#if EIN_TUNE_CONVS
        if (ein_tune_ops[op].conv >= 0 && ctx->conv[ein_tune_ops[op].conv].plan) {
            int64_t e = -1;
            got = ein_tune_engines(&clock, ctx, op, &us, &e);
            engine = e;
        } else
#endif
            got = ein_tune_time(&clock, ctx, op, &us);
        if (got == 1)
            goto op_failed;
        if (got != 0)
            goto out;
        fprintf(db, "%.3f %s\n", us, ein_tune_ops[op].key);
        if (engine >= 0)
            fprintf(db, "engine %lld %s\n", engine, ein_tune_ops[op].key);
        fflush(db);
        fprintf(stderr, "%s: %d/%d: %.3f us  %.60s\n", prog, op + 1, EIN_TUNE_NOPS, us,
                ein_tune_ops[op].key);
    }
    if (ferror(db)) {
        fprintf(stderr, "%s: error: cannot write '%s'\n", prog, path);
        goto out;
    }
    rc = 0;
    goto out;
op_failed:
    fprintf(stderr, "%s: error: operator %d (tensor %d): %s\n", prog, op + 1,
            ein_tune_ops[op].id, model_last_error(ctx));
out:
    if (db && fclose(db) != 0 && rc == 0) {
        fprintf(stderr, "%s: error: cannot write '%s'\n", prog, path);
        rc = 1;
    }
    if (start)
        cudaEventDestroy(start);
    if (stop)
        cudaEventDestroy(stop);
    if (stream)
        cudaStreamDestroy(stream);
    if (ctx && model_destroy(ctx) != MODEL_OK && rc == 0)
        rc = 1;
    free(times);
    free(host);
    return rc;
}
