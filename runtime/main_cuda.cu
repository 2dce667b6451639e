/* main_cuda.cu - the CUDA target's part of the --main harness (main.c):
 * one run of the model on the default stream, and the timing of --bench
 * by CUDA events. */
#include <stdio.h>
#include <stdlib.h>
#include "model.h" /* EMBED-SKIP */

RT_API int ein_main_run(model_ctx *ctx)
{
    return model_run_named(ctx, 0);
}

/* ITERS timed runs after a warm-up, each between two CUDA events. */
RT_API int ein_bench(model_ctx *ctx, long iters, const char *prog)
{
    double *ms = (double *)malloc((size_t)iters * sizeof *ms);
    cudaEvent_t t0 = NULL, t1 = NULL;
    cudaError_t e = cudaSuccess;
    float t = 0.0f;
    int rc = 1;
    if (!ms) {
        fprintf(stderr, "%s: error: out of memory\n", prog);
        return 1;
    }
    if ((e = cudaEventCreate(&t0)) != cudaSuccess ||
        (e = cudaEventCreate(&t1)) != cudaSuccess)
        goto cuda_fail;
    if (ein_main_run(ctx) != MODEL_OK)
        goto fail;
    for (long i = 0; i < iters; i++) {
        if ((e = cudaEventRecord(t0, 0)) != cudaSuccess)
            goto cuda_fail;
        if (ein_main_run(ctx) != MODEL_OK)
            goto fail;
        if ((e = cudaEventRecord(t1, 0)) != cudaSuccess ||
            (e = cudaEventSynchronize(t1)) != cudaSuccess ||
            (e = cudaEventElapsedTime(&t, t0, t1)) != cudaSuccess)
            goto cuda_fail;
        ms[i] = t;
    }
    rt_print_bench(stdout, ms, (int)iters);
    rc = 0;
    goto done;
cuda_fail:
    fprintf(stderr, "%s: error: timing with CUDA events failed: %s\n", prog,
            cudaGetErrorString(e));
    goto done;
fail:
    fprintf(stderr, "%s: error: %s\n", prog, model_last_error(ctx));
done:
    if (t0 && cudaEventDestroy(t0) != cudaSuccess)
        rc = 1;
    if (t1 && cudaEventDestroy(t1) != cudaSuccess)
        rc = 1;
    free(ms);
    return rc;
}
