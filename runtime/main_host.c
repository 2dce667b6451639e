/* main_host.c - the C target's part of the --main harness (main.c): one
 * run of the model, and the timing of --bench by the wall clock. */
#include <stdio.h>
#include <stdlib.h>
#include "model.h" /* EMBED-SKIP */
#include "pace.c" /* EMBED-SKIP */

RT_API int ein_main_run(model_ctx *ctx)
{
    return model_run_named(ctx);
}

/* ITERS timed runs after a warm-up; then how many ran at each thread
   count (pace.c chooses it). */
RT_API int ein_bench(model_ctx *ctx, long iters, const char *prog)
{
    double *ms = (double *)malloc((size_t)iters * sizeof *ms);
    long at[EIN_PACE_MAXC] = {0};
    if (!ms) {
        fprintf(stderr, "%s: error: out of memory\n", prog);
        return 1;
    }
    if (ein_main_run(ctx) != MODEL_OK)
        goto fail;
    for (long i = 0; i < iters; i++) {
        double t0 = rt_now_ms();
        if (ein_main_run(ctx) != MODEL_OK)
            goto fail;
        ms[i] = rt_now_ms() - t0;
        at[ctx->pace->run_at]++;
    }
    rt_print_bench(stdout, ms, (int)iters);
    printf("runs per thread count:");
    for (int k = 0; k < ctx->pace->nc; k++)
        if (at[k])
            printf(" %d: %ld", ctx->pace->count[k], at[k]);
    printf("%s\n", ctx->pace->fixed ? " (EIN_FIXED_THREADS)" : "");
    free(ms);
    return 0;
fail:
    fprintf(stderr, "%s: error: %s\n", prog, model_last_error(ctx));
    free(ms);
    return 1;
}
