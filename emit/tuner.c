/* tuner.c - the main() of einc --emit=tuner: a CUDA program that times
 * every operator of the program emit.c wrote (each IT_STAGE tensor with a
 * key in EmitOptions.tune_keys, computed by its ein_op_<id> function) and
 * writes a tuning database that einc --tune-db reads (derive/pricing/tunedb.c,
 * einc(1) TUNING DATABASE):
 *
 *   usage: ./tune DB [--iters N]
 *
 * Every input buffer gets uniform values in [-1, 1) (16-bit types: values
 * of magnitude 0.25 to 1); each operator runs 3 times to warm up, then N
 * times (default 20), each between two CUDA events on one stream, and its
 * median goes to DB as "MICROSECONDS KEY".  Lines are written and flushed
 * as operators finish, so a run that fails half way leaves a valid
 * database of what it measured.  Every CUDA call is checked. */
#include "config.h"
#include "emit_int.h"

#include <string.h>

void tuner_write_main(Emit *em)
{
    Sb *o = &em->out;
    const IrProgram *p = em->p;
    const char *const *keys = em->opt->tune_keys;
    int n = 0;
    for (int i = 0; i < p->ntensors; i++)
        if (p->tensors[i]->kind == IT_STAGE && keys[i])
            n++;
    sb_puts(o, "\n/* ---- the tuner: times every operator, writes a tuning database ---- */\n\n");
    sb_printf(o, "typedef int (*ein_tune_fn)(%s_ctx *, void *const *, cudaStream_t);\n\n",
              em->model);
    sb_puts(o, "static const struct {\n    int id;\n    ein_tune_fn run;\n"
               "    const char *key;\n} ein_tune_ops[] = {\n");
    for (int i = 0; i < p->ntensors; i++) {
        if (p->tensors[i]->kind != IT_STAGE || !keys[i])
            continue;
        sb_printf(o, "    {%d, ein_op_%d,\n     ", i, i);
        emit_c_string(o, keys[i]);
        sb_puts(o, "},\n");
    }
    if (n == 0)
        sb_puts(o, "    {-1, 0, \"\"},\n");
    sb_puts(o, "};\n");
    sb_printf(o, "#define EIN_TUNE_NOPS %d\n", n);
    sb_puts(o, "#define EIN_TUNE_DEVICE ");
    emit_c_string(o, em->opt->tune_device ? em->opt->tune_device : "h200");
    sb_puts(o, "\n#define EIN_TUNE_WARMUP 3\n\n");
    emit_tpl(em,
"static int ein_tune_cmp(const void *a, const void *b)\n"
"{\n"
"    float x = *(const float *)a, y = *(const float *)b;\n"
"    return (x > y) - (x < y);\n"
"}\n"
"\n"
"/* xorshift64*: a fixed seed, so every run fills the same values */\n"
"static unsigned long long ein_tune_rng(unsigned long long *s)\n"
"{\n"
"    *s ^= *s >> 12;\n"
"    *s ^= *s << 25;\n"
"    *s ^= *s >> 27;\n"
"    return *s * 0x2545f4914f6cdd1dULL;\n"
"}\n"
"\n"
"/* Uniform values in [-1, 1) for f32; for f16 and bf16 the bit patterns\n"
"   of values of magnitude 0.25 to 1, either sign. */\n"
"static void ein_tune_fill(void *buf, const $m_tensor_info *t, unsigned long long *s)\n"
"{\n"
"    size_t i;\n"
"    for (i = 0; i < t->count; i++) {\n"
"        unsigned long long r = ein_tune_rng(s);\n"
"        if (t->elem == $M_F32) {\n"
"            ((float *)buf)[i] = (float)((double)(r >> 11) / 9007199254740992.0 * 2 - 1);\n"
"        } else {\n"
"            unsigned sign = (unsigned)(r >> 63) << 15, bits = (unsigned)(r >> 20);\n"
"            unsigned e = t->elem == $M_F16 ? (13u + (bits & 1u)) << 10\n"
"                                            : (125u + (bits & 1u)) << 7;\n"
"            unsigned m = t->elem == $M_F16 ? (bits >> 1) & 0x3ffu : (bits >> 1) & 0x7fu;\n"
"            ((unsigned short *)buf)[i] = (unsigned short)(sign | e | m);\n"
"        }\n"
"    }\n"
"}\n"
"\n"
"static void ein_tune_usage(FILE *fp, const char *prog)\n"
"{\n"
"    fprintf(fp, \"Usage: %s DB [--iters N]\\n\"\n"
"            \"Time each of the %d operators of this program on the GPU (%d warm-up\\n\"\n"
"            \"runs, then N timed runs, default 20) and write their medians to the\\n\"\n"
"            \"tuning database DB, for einc --tune-db=DB.\\n\",\n"
"            prog, EIN_TUNE_NOPS, EIN_TUNE_WARMUP);\n"
"}\n"
"\n"
"#define EIN_TUNE_CUDA(call)                                                \\\n"
"    do {                                                                   \\\n"
"        cudaError_t ein_e_ = (call);                                       \\\n"
"        if (ein_e_ != cudaSuccess) {                                       \\\n"
"            fprintf(stderr, \"%s: error: %s failed: %s\\n\", prog, #call,      \\\n"
"                    cudaGetErrorString(ein_e_));                           \\\n"
"            goto out;                                                      \\\n"
"        }                                                                  \\\n"
"    } while (0)\n"
"\n"
"int main(int argc, char **argv)\n"
"{\n"
"    const char *prog = argc > 0 ? argv[0] : \"tune\", *path = NULL;\n"
"    long iters = 20;\n"
"    int rc = 1, i, it, op;\n"
"    $m_ctx *ctx = NULL;\n"
"    cudaStream_t stream = NULL;\n"
"    cudaEvent_t start = NULL, stop = NULL;\n"
"    struct cudaDeviceProp prop;\n"
"    int dev = 0;\n"
"    float *times = NULL;\n"
"    void *host = NULL;\n"
"    size_t most = 1;\n"
"    unsigned long long seed = 0x9e3779b97f4a7c15ULL;\n"
"    FILE *db = NULL;\n"
"    char *end;\n"
"\n"
"    for (i = 1; i < argc; i++) {\n"
"        if (strcmp(argv[i], \"--help\") == 0 || strcmp(argv[i], \"-h\") == 0) {\n"
"            ein_tune_usage(stdout, prog);\n"
"            return 0;\n"
"        } else if (strcmp(argv[i], \"--iters\") == 0 && i + 1 < argc) {\n"
"            iters = strtol(argv[++i], &end, 10);\n"
"            if (*argv[i] == 0 || *end || iters < 1 || iters > 100000) {\n"
"                fprintf(stderr, \"%s: error: --iters wants 1 to 100000, not '%s'\\n\",\n"
"                        prog, argv[i]);\n"
"                return 2;\n"
"            }\n"
"        } else if (argv[i][0] == '-' && argv[i][1] != 0) {\n"
"            fprintf(stderr, \"%s: error: unknown option '%s'\\n\", prog, argv[i]);\n"
"            ein_tune_usage(stderr, prog);\n"
"            return 2;\n"
"        } else if (path) {\n"
"            fprintf(stderr, \"%s: error: more than one database: '%s'\\n\", prog, argv[i]);\n"
"            return 2;\n"
"        } else {\n"
"            path = argv[i];\n"
"        }\n"
"    }\n"
"    if (!path) {\n"
"        ein_tune_usage(stderr, prog);\n"
"        return 2;\n"
"    }\n"
"    times = (float *)malloc(sizeof *times * (size_t)iters);\n"
"    for (i = 0; i < EIN_NT; i++)\n"
"        if ($m_tensor_at(i)->nbytes > most)\n"
"            most = $m_tensor_at(i)->nbytes;\n"
"    host = malloc(most);\n"
"    if (!times || !host) {\n"
"        fprintf(stderr, \"%s: error: out of memory\\n\", prog);\n"
"        goto out;\n"
"    }\n"
"    if ($m_create(&ctx) != $M_OK) {\n"
"        fprintf(stderr, \"%s: error: %s\\n\", prog, $m_last_error(ctx));\n"
"        goto out;\n"
"    }\n"
"    for (i = 0; i < EIN_NT; i++) {\n"
"        const $m_tensor_info *t = $m_tensor_at(i);\n"
"        if (t->kind != $M_INPUT || t->nbytes == 0)\n"
"            continue;\n"
"        ein_tune_fill(host, t, &seed);\n"
"        EIN_TUNE_CUDA(cudaMemcpy(ctx->buf[i], host, t->nbytes, cudaMemcpyHostToDevice));\n"
"    }\n"
"    EIN_TUNE_CUDA(cudaGetDevice(&dev));\n"
"    EIN_TUNE_CUDA(cudaGetDeviceProperties(&prop, dev));\n"
"    EIN_TUNE_CUDA(cudaStreamCreate(&stream));\n"
"    EIN_TUNE_CUDA(cudaEventCreate(&start));\n"
"    EIN_TUNE_CUDA(cudaEventCreate(&stop));\n"
"    EIN_TUNE_CUDA(cudaDeviceSynchronize());\n"
"    if (!(db = fopen(path, \"w\"))) {\n"
"        fprintf(stderr, \"%s: error: cannot write '%s'\\n\", prog, path);\n"
"        goto out;\n"
"    }\n"
"    fprintf(db, \"einc-tune 1\\ndevice %s\\n# measured on %s (sm_%d%d): median of %ld \"\n"
"            \"runs after %d to warm up, microseconds\\n\", EIN_TUNE_DEVICE, prop.name,\n"
"            prop.major, prop.minor, iters, EIN_TUNE_WARMUP);\n"
"    fflush(db);\n"
"    for (op = 0; op < EIN_TUNE_NOPS; op++) {\n"
"        float ms, us;\n"
"        for (it = 0; it < EIN_TUNE_WARMUP; it++)\n"
"            if (ein_tune_ops[op].run(ctx, ctx->buf, stream) != 0)\n"
"                goto op_failed;\n"
"        EIN_TUNE_CUDA(cudaStreamSynchronize(stream));\n"
"        for (it = 0; it < iters; it++) {\n"
"            EIN_TUNE_CUDA(cudaEventRecord(start, stream));\n"
"            if (ein_tune_ops[op].run(ctx, ctx->buf, stream) != 0)\n"
"                goto op_failed;\n"
"            EIN_TUNE_CUDA(cudaEventRecord(stop, stream));\n"
"            EIN_TUNE_CUDA(cudaEventSynchronize(stop));\n"
"            EIN_TUNE_CUDA(cudaEventElapsedTime(&ms, start, stop));\n"
"            times[it] = ms * 1000.0f;\n"
"        }\n"
"        qsort(times, (size_t)iters, sizeof *times, ein_tune_cmp);\n"
"        us = iters % 2 ? times[iters / 2] : (times[iters / 2 - 1] + times[iters / 2]) / 2;\n"
"        fprintf(db, \"%.3f %s\\n\", us, ein_tune_ops[op].key);\n"
"        fflush(db);\n"
"        fprintf(stderr, \"%s: %d/%d: %.3f us  %.60s\\n\", prog, op + 1, EIN_TUNE_NOPS, us,\n"
"                ein_tune_ops[op].key);\n"
"    }\n"
"    if (ferror(db)) {\n"
"        fprintf(stderr, \"%s: error: cannot write '%s'\\n\", prog, path);\n"
"        goto out;\n"
"    }\n"
"    rc = 0;\n"
"    goto out;\n"
"op_failed:\n"
"    fprintf(stderr, \"%s: error: operator %d (tensor %d): %s\\n\", prog, op + 1,\n"
"            ein_tune_ops[op].id, $m_last_error(ctx));\n"
"out:\n"
"    if (db && fclose(db) != 0 && rc == 0) {\n"
"        fprintf(stderr, \"%s: error: cannot write '%s'\\n\", prog, path);\n"
"        rc = 1;\n"
"    }\n"
"    if (start)\n"
"        cudaEventDestroy(start);\n"
"    if (stop)\n"
"        cudaEventDestroy(stop);\n"
"    if (stream)\n"
"        cudaStreamDestroy(stream);\n"
"    if (ctx && $m_destroy(ctx) != $M_OK && rc == 0)\n"
"        rc = 1;\n"
"    free(times);\n"
"    free(host);\n"
"    return rc;\n"
"}\n");
}
