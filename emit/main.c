/* main.c - the main() that --main adds: 
 *
 *   ./net [--weights F] [--inputs F] [--outputs F] [--seed N] [--bench ITERS]
 *
 * It goes through the public API only: weights and inputs come from the
 * safetensors files or, where an option is missing, from seeded
 * uniform(-1, 1) values (runtime/harness.c says so on stderr); one run;
 * the outputs go to --outputs under their .ein names, or a one-line
 * summary per output goes to stdout; --bench times ITERS more runs after
 * a warm-up (CUDA events on the GPU) and prints the median.  Being a
 * program, not a library, it prints its errors and exits with status 1. */
#include "config.h"
#include "emit_int.h"

static void tpl(Emit *em, const char *text)
{
    Sb *o = &em->out;
    for (const char *s = text; *s; s++) {
        if (*s == '$' && s[1] == 'm') {
            sb_puts(o, em->model);
            s++;
        } else if (*s == '$' && s[1] == 'M') {
            sb_puts(o, em->upper);
            s++;
        } else {
            sb_putc(o, *s);
        }
    }
}

static void write_bench(Emit *em)
{
    if (emit_is_cuda(em)) {
        tpl(em,
"/* ITERS timed runs after a warm-up, each between two CUDA events. */\n"
"static int ein_bench($m_ctx *ctx, long iters, const char *prog)\n"
"{\n"
"    double *ms = (double *)malloc((size_t)iters * sizeof *ms);\n"
"    cudaEvent_t t0 = NULL, t1 = NULL;\n"
"    cudaError_t e = cudaSuccess;\n"
"    float t = 0.0f;\n"
"    int rc = 1;\n"
"    if (!ms) {\n"
"        fprintf(stderr, \"%s: error: out of memory\\n\", prog);\n"
"        return 1;\n"
"    }\n"
"    if ((e = cudaEventCreate(&t0)) != cudaSuccess ||\n"
"        (e = cudaEventCreate(&t1)) != cudaSuccess)\n"
"        goto cuda_fail;\n"
"    if ($m_run_named(ctx, 0) != $M_OK)\n"
"        goto fail;\n"
"    for (long i = 0; i < iters; i++) {\n"
"        if ((e = cudaEventRecord(t0, 0)) != cudaSuccess)\n"
"            goto cuda_fail;\n"
"        if ($m_run_named(ctx, 0) != $M_OK)\n"
"            goto fail;\n"
"        if ((e = cudaEventRecord(t1, 0)) != cudaSuccess ||\n"
"            (e = cudaEventSynchronize(t1)) != cudaSuccess ||\n"
"            (e = cudaEventElapsedTime(&t, t0, t1)) != cudaSuccess)\n"
"            goto cuda_fail;\n"
"        ms[i] = t;\n"
"    }\n"
"    rt_print_bench(stdout, ms, (int)iters);\n"
"    rc = 0;\n"
"    goto done;\n"
"cuda_fail:\n"
"    fprintf(stderr, \"%s: error: timing with CUDA events failed: %s\\n\", prog,\n"
"            cudaGetErrorString(e));\n"
"    goto done;\n"
"fail:\n"
"    fprintf(stderr, \"%s: error: %s\\n\", prog, $m_last_error(ctx));\n"
"done:\n"
"    if (t0 && cudaEventDestroy(t0) != cudaSuccess)\n"
"        rc = 1;\n"
"    if (t1 && cudaEventDestroy(t1) != cudaSuccess)\n"
"        rc = 1;\n"
"    free(ms);\n"
"    return rc;\n"
"}\n"
"\n");
    } else {
        tpl(em,
"/* ITERS timed runs after a warm-up. */\n"
"static int ein_bench($m_ctx *ctx, long iters, const char *prog)\n"
"{\n"
"    double *ms = (double *)malloc((size_t)iters * sizeof *ms);\n"
"    if (!ms) {\n"
"        fprintf(stderr, \"%s: error: out of memory\\n\", prog);\n"
"        return 1;\n"
"    }\n"
"    if ($m_run_named(ctx) != $M_OK)\n"
"        goto fail;\n"
"    for (long i = 0; i < iters; i++) {\n"
"        double t0 = rt_now_ms();\n"
"        if ($m_run_named(ctx) != $M_OK)\n"
"            goto fail;\n"
"        ms[i] = rt_now_ms() - t0;\n"
"    }\n"
"    rt_print_bench(stdout, ms, (int)iters);\n"
"    free(ms);\n"
"    return 0;\n"
"fail:\n"
"    fprintf(stderr, \"%s: error: %s\\n\", prog, $m_last_error(ctx));\n"
"    free(ms);\n"
"    return 1;\n"
"}\n"
"\n");
    }
}

void main_write(Emit *em)
{
    const IrProgram *p = em->p;
    Sb *o = &em->out;
    sb_puts(o, "/* ---- main (einc --main) --------------------------------------------------- */\n");
    sb_printf(o, "#define EIN_NOUT %d\n", p->noutputs);
    sb_puts(o, "static const int ein_outputs[EIN_NOUT > 0 ? EIN_NOUT : 1] = {");
    for (int i = 0; i < p->noutputs; i++)
        sb_printf(o, "%s%d", i ? ", " : "", p->outputs[i]);
    sb_puts(o, p->noutputs ? "};\n\n" : "-1};\n\n");
    tpl(em,
"/* Host memory for a tensor, in its element type: the files and the\n"
"   seeded values have the tensor's dtype (F32, F16 or BF16). */\n"
"static void ein_host_tensor(RtTensor *r, const $m_tensor_info *t)\n"
"{\n"
"    r->name = t->kind == $M_COMPUTED ? t->name : t->ext_name;\n"
"    r->dtype = ein_st_dtype(t->elem);\n"
"    r->rank = t->rank;\n"
"    r->shape = t->shape;\n"
"    r->data = calloc(t->nbytes, 1);\n"
"}\n"
"\n"
"static double ein_host_value(const RtTensor *t, uint64_t j)\n"
"{\n"
"    switch (t->dtype) {\n"
"    case ST_F16: return st_f16_to_f32(((const uint16_t *)t->data)[j]);\n"
"    case ST_BF16: return st_bf16_to_f32(((const uint16_t *)t->data)[j]);\n"
"    case ST_I8: return ((const int8_t *)t->data)[j];\n"
"    case ST_I16: return ((const int16_t *)t->data)[j];\n"
"    case ST_I32: return ((const int32_t *)t->data)[j];\n"
"    case ST_I64: return (double)((const int64_t *)t->data)[j];\n"
"    case ST_U8: case ST_BOOL: return ((const uint8_t *)t->data)[j];\n"
"    default: return ((const float *)t->data)[j];\n"
"    }\n"
"}\n"
"\n"
"/* Without --outputs: one line per output to look at. */\n"
"static void ein_summary(const RtTensor *y, int n)\n"
"{\n"
"    for (int i = 0; i < n; i++) {\n"
"        uint64_t count = rt_nelem(&y[i]);\n"
"        double sum = 0, lo = ein_host_value(&y[i], 0), hi = lo;\n"
"        for (uint64_t j = 0; j < count; j++) {\n"
"            double v = ein_host_value(&y[i], j);\n"
"            sum += v;\n"
"            lo = v < lo ? v : lo;\n"
"            hi = v > hi ? v : hi;\n"
"        }\n"
"        printf(\"%s: %s[\", y[i].name, st_dtype_name(y[i].dtype));\n"
"        for (int d = 0; d < y[i].rank; d++)\n"
"            printf(\"%s%lld\", d ? \", \" : \"\", (long long)y[i].shape[d]);\n"
"        printf(\"] sum %.6g min %.6g max %.6g\\n\", sum, lo, hi);\n"
"    }\n"
"}\n"
"\n");
    write_bench(em);
    bool cuda = emit_is_cuda(em);
    tpl(em,
"int main(int argc, char **argv)\n"
"{\n"
"    RtArgs args;\n"
"    char err[ST_ERRLEN];\n"
"    static RtTensor w[EIN_NT], x[EIN_NT], y[EIN_NOUT > 0 ? EIN_NOUT : 1];\n"
"    int nw = 0, nx = 0, ny = 0, rc = 1, i;\n"
"    $m_ctx *ctx = NULL;\n"
"\n"
"    rt_main_args(argc, argv, &args);\n"
"    for (i = 0; i < EIN_NT; i++) {\n"
"        if (ein_tensors[i].kind == $M_WEIGHT)\n"
"            ein_host_tensor(&w[nw++], &ein_tensors[i]);\n"
"        else if (ein_tensors[i].kind == $M_INPUT)\n"
"            ein_host_tensor(&x[nx++], &ein_tensors[i]);\n"
"    }\n"
"    for (i = 0; i < EIN_NOUT; i++)\n"
"        ein_host_tensor(&y[ny++], &ein_tensors[ein_outputs[i]]);\n"
"    for (i = 0; i < nw + nx + ny; i++) {\n"
"        const RtTensor *r = i < nw ? &w[i] : i < nw + nx ? &x[i - nw] : &y[i - nw - nx];\n"
"        if (!r->data) {\n"
"            fprintf(stderr, \"%s: error: out of memory for tensor '%s'\\n\", args.prog,\n"
"                    r->name);\n"
"            goto out;\n"
"        }\n"
"    }\n"
"    if ($m_create(&ctx) != $M_OK)\n"
"        goto fail;\n");
    lib_write_main_notes(em, "args.prog");
    tpl(em,

"    if (rt_load_or_fill(args.prog, \"--weights\", args.weights, w, nw, args.seed, err,\n"
"                        sizeof err) != ST_OK ||\n"
"        rt_load_or_fill(args.prog, \"--inputs\", args.inputs, x, nx, args.seed, err,\n"
"                        sizeof err) != ST_OK) {\n"
"        fprintf(stderr, \"%s: error: %s\\n\", args.prog, err);\n"
"        goto out;\n"
"    }\n"
"    for (i = 0; i < nw; i++)\n"
"        if ($m_set_tensor(ctx, w[i].name, w[i].data, rt_nbytes(&w[i])) != $M_OK)\n"
"            goto fail;\n"
"    for (i = 0; i < nx; i++)\n"
"        if ($m_set_tensor(ctx, x[i].name, x[i].data, rt_nbytes(&x[i])) != $M_OK)\n"
"            goto fail;\n");
    tpl(em, cuda ? "    if ($m_run_named(ctx, 0) != $M_OK)\n" : "    if ($m_run_named(ctx) != $M_OK)\n");
    tpl(em,
"        goto fail;\n"
"    for (i = 0; i < ny; i++)\n"
"        if ($m_get_tensor(ctx, y[i].name, y[i].data, rt_nbytes(&y[i])) != $M_OK)\n"
"            goto fail;\n"
"    if (args.outputs) {\n"
"        if (rt_write_tensors(args.outputs, y, ny, err, sizeof err) != ST_OK) {\n"
"            fprintf(stderr, \"%s: error: %s\\n\", args.prog, err);\n"
"            goto out;\n"
"        }\n"
"    } else {\n"
"        ein_summary(y, ny);\n"
"    }\n"
"    if (args.bench > 0 && ein_bench(ctx, args.bench, args.prog) != 0)\n"
"        goto out;\n"
"    rc = 0;\n"
"    goto out;\n"
"fail:\n"
"    fprintf(stderr, \"%s: error: %s\\n\", args.prog, $m_last_error(ctx));\n"
"out:\n"
"    if ($m_destroy(ctx) != $M_OK && rc == 0) {\n"
"        fprintf(stderr, \"%s: error: freeing the context failed\\n\", args.prog);\n"
"        rc = 1;\n"
"    }\n"
"    for (i = 0; i < nw; i++)\n"
"        free(w[i].data);\n"
"    for (i = 0; i < nx; i++)\n"
"        free(x[i].data);\n"
"    for (i = 0; i < ny; i++)\n"
"        free(y[i].data);\n"
"    if (fflush(stdout) != 0 && rc == 0) {\n"
"        fprintf(stderr, \"%s: error: cannot write the standard output\\n\", args.prog);\n"
"        rc = 1;\n"
"    }\n"
"    return rc;\n"
"}\n"
"\n");
}
