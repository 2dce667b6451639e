/* api_host.c - the tensor buffers of the C target: host memory,
 * allocated zeroed, read and written with memcpy; and the thread count
 * of each run.  Pasted after api_base.c and pace.c; api.c builds the API
 * on these functions, whose CUDA counterparts are in api_cuda.cu. */
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#ifdef EIN_OPENBLAS
#include <cblas.h>
#endif
#include "model.h" /* EMBED-SKIP */
#include "pace.c" /* EMBED-SKIP */

/* A context has no device to wait for: its runs are done when they
   return.  It keeps the pace of its runs (pace.c); EIN_FIXED_THREADS set
   (and not 0) in the environment when it is created makes every run use
   the whole count, for measuring and debugging. */
RT_API int ein_ctx_open(model_ctx *ctx)
{
    const char *e = getenv("EIN_FIXED_THREADS");
    ctx->pace = (ein_pace *)calloc(1, sizeof *ctx->pace);
    if (!ctx->pace)
        return ein_fail(ctx, MODEL_ENOMEM, "out of host memory for the context");
    ctx->fixed_threads = e && *e && strcmp(e, "0") != 0;
    return MODEL_OK;
}

RT_API int ein_ctx_idle(model_ctx *ctx)
{
    (void)ctx;
    return MODEL_OK;
}

RT_API int ein_ctx_close(model_ctx *ctx)
{
    free(ctx->pace);
    ctx->pace = NULL;
    return MODEL_OK;
}

/* Wall-clock milliseconds, for timing runs; -1 without OpenMP. */
RT_API double ein_now_ms(void)
{
#ifdef _OPENMP
    return omp_get_wtime() * 1e3;
#else
    return -1.0;
#endif
}

#ifdef EIN_OPENBLAS
/* OpenBLAS's thread count is the process's, not the calling thread's: the
   runs under way of this program's contexts (on any threads) share one
   setting, made by the first to start and put back by the last to end
   (under OpenMP's lock of that name), so that no run computes while
   another has put the caller's count back. */
static int ein_blas_runs, ein_blas_saved;
#endif

/* Before a run: its thread count, `max` (model_set_threads, else as many
   as OpenMP would use now) or fewer where fewer ran faster (pace.c), set
   as OpenMP's count for the run (the generated kernels, the GEMMs of
   cblas.c and oneDNN share OpenMP's threads), and the libraries' state
   for it (ein_lib_threads: oneDNN's primitives for that count).  OpenBLAS
   computes on one thread, in the blocks cblas.c gives each OpenMP
   thread: its own pool would be a second set of threads waiting for
   processors, and its results depend on its thread count.  The caller's
   OpenMP and OpenBLAS counts are put back after the run (ein_threads_end). */
RT_API int ein_threads_begin(model_ctx *ctx)
{
    int max = ctx->threads;
#ifdef _OPENMP
    ctx->omp_saved = omp_get_max_threads();
    if (max <= 0)
        max = ctx->omp_saved;
#endif
    if (max <= 0)
        max = 1;
    if (max != ctx->pace_max || ctx->fixed_threads != ctx->pace->fixed) {
        ein_pace_init(ctx->pace, max, ctx->fixed_threads);
        ctx->pace_max = max;
    }
    int n = ein_pace_next(ctx->pace);
#ifdef EIN_OPENBLAS
#ifdef _OPENMP
#pragma omp critical(ein_blas)
#endif
    if (ein_blas_runs++ == 0) {
        ein_blas_saved = openblas_get_num_threads();
        openblas_set_num_threads(1);    /* before OpenMP's: an OpenMP build
                                           of OpenBLAS sets OpenMP's count too */
    }
#endif
#ifdef _OPENMP
    omp_set_num_threads(n);
#endif
    int cold = 0, rc = ein_lib_threads(ctx, n, &cold);
    /* a run that does more than usual is not timed: its load-time stages
       run too, or the libraries' first run on n threads (without OpenMP
       there is one thread, and nothing to choose) */
    ctx->run_t0 = ctx->weights_changed || cold || rc != MODEL_OK ? -1.0 : ein_now_ms();
    return rc;
}

/* After a run (rc: how it went): its time to the pace, the caller's
   counts back. */
RT_API void ein_threads_end(model_ctx *ctx, int rc)
{
    ein_pace_done(ctx->pace, rc == MODEL_OK && ctx->run_t0 >= 0 ? ein_now_ms() - ctx->run_t0
                                                                 : -1.0);
#ifdef EIN_OPENBLAS
#ifdef _OPENMP
#pragma omp critical(ein_blas)
#endif
    if (--ein_blas_runs == 0)
        openblas_set_num_threads(ein_blas_saved);
#endif
#ifdef _OPENMP
    omp_set_num_threads(ctx->omp_saved);
#endif
}

/* *out: `bytes` of zeroed memory for `what` (a tensor's name, or the
   arena of the intermediates: ""). */
RT_API int ein_mem_alloc(model_ctx *ctx, void **out, size_t bytes, const char *what)
{
    *out = calloc(bytes ? bytes : 1, 1);
    if (!*out)
        return ein_fail(ctx, MODEL_ENOMEM, "cannot allocate %zu bytes for %s%s%s", bytes,
                        *what ? "tensor '" : "the intermediates' arena", what,
                        *what ? "'" : "");
    return MODEL_OK;
}

RT_API int ein_buf_free(void *buf)
{
    free(buf);
    return MODEL_OK;
}

/* Weight i from the open file f, straight into its buffer. */
RT_API int ein_buf_load(model_ctx *ctx, StFile *f, int i)
{
    const model_tensor_info *t = &ein_tensors[i];
    char msg[ST_ERRLEN];
    int st = st_read(f, t->ext_name, ein_st_dtype(t->elem), t->rank, t->shape,
                     ctx->buf[i], t->nbytes, msg, sizeof msg);
    return st == ST_OK ? MODEL_OK : ein_fail(ctx, ein_st_code(st), "%s", msg);
}

/* Copies are done when they return, and so are the runs before them. */
RT_API int ein_io_after_runs(model_ctx *ctx)
{
    (void)ctx;
    return MODEL_OK;
}

RT_API int ein_buf_put(model_ctx *ctx, int i, const void *data, size_t nbytes)
{
    memcpy(ctx->buf[i], data, nbytes);
    return MODEL_OK;
}

RT_API int ein_buf_get(model_ctx *ctx, int i, void *data, size_t nbytes)
{
    int rc = ein_lib_fetch(ctx, i);     /* a value a library keeps in its own layout */
    if (rc != MODEL_OK)
        return rc;
    memcpy(data, ctx->buf[i], nbytes);
    return MODEL_OK;
}
