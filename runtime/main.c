/* main.c - the main() that einc --main adds (emit/README.md, "--main"):
 *
 *   ./net [--weights F] [--inputs F] [--outputs F] [--seed N] [--bench ITERS]
 *         [--threads N] [--runs N]
 *
 * It goes through the public API only: weights and inputs come from the
 * safetensors files or, where an option is missing, from seeded
 * uniform(-1, 1) values (runtime/harness.c says so on stderr); one run;
 * the outputs go to --outputs under their .ein names, or a one-line
 * summary per output goes to stdout; --bench times ITERS more runs after
 * a warm-up and prints the median.  Being a program, not a library, it
 * prints its errors and exits with status 1.  Both targets: what differs
 * (ein_main_run, ein_bench) is in main_host.c and main_cuda.cu, pasted
 * before it, after the generated table ein_outputs[EIN_NOUT]. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "model.h" /* EMBED-SKIP */


/* Host memory for a tensor, in its element type: the files and the
   seeded values have the tensor's dtype (F32, F16 or BF16). */
RT_API void ein_host_tensor(RtTensor *r, const model_tensor_info *t)
{
    r->name = t->kind == MODEL_COMPUTED ? t->name : t->ext_name;
    r->dtype = ein_st_dtype(t->elem);
    r->rank = t->rank;
    r->shape = t->shape;
    r->data = calloc(t->nbytes, 1);
}

RT_API double ein_host_value(const RtTensor *t, uint64_t j)
{
    switch (t->dtype) {
    case ST_F16: return st_f16_to_f32(((const uint16_t *)t->data)[j]);
    case ST_BF16: return st_bf16_to_f32(((const uint16_t *)t->data)[j]);
    case ST_I8: return ((const int8_t *)t->data)[j];
    case ST_I16: return ((const int16_t *)t->data)[j];
    case ST_I32: return ((const int32_t *)t->data)[j];
    case ST_I64: return (double)((const int64_t *)t->data)[j];
    case ST_U8: case ST_BOOL: return ((const uint8_t *)t->data)[j];
    default: return ((const float *)t->data)[j];
    }
}

/* Without --outputs: one line per output to look at. */
RT_API void ein_summary(const RtTensor *y, int n)
{
    for (int i = 0; i < n; i++) {
        uint64_t count = rt_nelem(&y[i]);
        double sum = 0, lo = ein_host_value(&y[i], 0), hi = lo;
        for (uint64_t j = 0; j < count; j++) {
            double v = ein_host_value(&y[i], j);
            sum += v;
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
        printf("%s: %s[", y[i].name, st_dtype_name(y[i].dtype));
        for (int d = 0; d < y[i].rank; d++)
            printf("%s%lld", d ? ", " : "", (long long)y[i].shape[d]);
        printf("] sum %.6g min %.6g max %.6g\n", sum, lo, hi);
    }
}

int main(int argc, char **argv)
{
    RtArgs args;
    char err[ST_ERRLEN];
    static RtTensor w[EIN_NT], x[EIN_NT], y[EIN_NOUT > 0 ? EIN_NOUT : 1];
    int nw = 0, nx = 0, ny = 0, rc = 1, i;
    model_ctx *ctx = NULL;

    rt_main_args(argc, argv, &args);
    for (i = 0; i < EIN_NT; i++) {
        if (ein_tensors[i].kind == MODEL_WEIGHT)
            ein_host_tensor(&w[nw++], &ein_tensors[i]);
        else if (ein_tensors[i].kind == MODEL_INPUT)
            ein_host_tensor(&x[nx++], &ein_tensors[i]);
    }
    for (i = 0; i < EIN_NOUT; i++)
        ein_host_tensor(&y[ny++], &ein_tensors[ein_outputs[i]]);
    for (i = 0; i < nw + nx + ny; i++) {
        const RtTensor *r = i < nw ? &w[i] : i < nw + nx ? &x[i - nw] : &y[i - nw - nx];
        if (!r->data) {
            fprintf(stderr, "%s: error: out of memory for tensor '%s'\n", args.prog,
                    r->name);
            goto out;
        }
    }
    if (model_create(&ctx) != MODEL_OK)
        goto fail;
    if (ctx->note[0])
        fprintf(stderr, "%s: note: %s\n", args.prog, ctx->note);
    ctx->note[0] = 0;           /* printed: a run may leave another */
    if (rt_load_or_fill(args.prog, "--weights", args.weights, w, nw, args.seed, err,
                        sizeof err) != ST_OK ||
        rt_load_or_fill(args.prog, "--inputs", args.inputs, x, nx, args.seed, err,
                        sizeof err) != ST_OK) {
        fprintf(stderr, "%s: error: %s\n", args.prog, err);
        goto out;
    }
    if (model_set_threads(ctx, args.threads) != MODEL_OK)
        goto fail;
    for (i = 0; i < nw; i++)
        if (model_set_tensor(ctx, w[i].name, w[i].data, rt_nbytes(&w[i])) != MODEL_OK)
            goto fail;
    for (i = 0; i < nx; i++)
        if (model_set_tensor(ctx, x[i].name, x[i].data, rt_nbytes(&x[i])) != MODEL_OK)
            goto fail;
    for (long r = 0; r < (args.runs ? args.runs : 1); r++)
        if (ein_main_run(ctx) != MODEL_OK)
            goto fail;
    if (ctx->note[0])
        fprintf(stderr, "%s: note: %s\n", args.prog, ctx->note);
    for (i = 0; i < ny; i++)
        if (model_get_tensor(ctx, y[i].name, y[i].data, rt_nbytes(&y[i])) != MODEL_OK)
            goto fail;
    if (args.outputs) {
        if (rt_write_tensors(args.outputs, y, ny, err, sizeof err) != ST_OK) {
            fprintf(stderr, "%s: error: %s\n", args.prog, err);
            goto out;
        }
    } else {
        ein_summary(y, ny);
    }
    if (args.bench > 0 && ein_bench(ctx, args.bench, args.prog) != 0)
        goto out;
    rc = 0;
    goto out;
fail:
    fprintf(stderr, "%s: error: %s\n", args.prog, model_last_error(ctx));
out:
    if (model_destroy(ctx) != MODEL_OK && rc == 0) {
        fprintf(stderr, "%s: error: freeing the context failed\n", args.prog);
        rc = 1;
    }
    for (i = 0; i < nw; i++)
        free(w[i].data);
    for (i = 0; i < nx; i++)
        free(x[i].data);
    for (i = 0; i < ny; i++)
        free(y[i].data);
    if (fflush(stdout) != 0 && rc == 0) {
        fprintf(stderr, "%s: error: cannot write the standard output\n", args.prog);
        rc = 1;
    }
    return rc;
}
