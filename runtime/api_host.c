/* api_host.c - the tensor buffers of the C target: host memory,
 * allocated zeroed, read and written with memcpy.  Pasted after
 * api_base.c; api.c builds the API on these functions, whose CUDA
 * counterparts are in api_cuda.cu. */
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#ifdef EIN_OPENBLAS
#include <cblas.h>
#endif
#include "model.h" /* EMBED-SKIP */

/* A context has nothing of its own to make, wait for or free: its runs
   are done when they return. */
RT_API int ein_ctx_open(model_ctx *ctx)
{
    (void)ctx;
    return MODEL_OK;
}

RT_API int ein_ctx_idle(model_ctx *ctx)
{
    (void)ctx;
    return MODEL_OK;
}

RT_API int ein_ctx_close(model_ctx *ctx)
{
    (void)ctx;
    return MODEL_OK;
}

/* Before a run: the thread count of model_set_threads, OpenMP's (oneDNN
   runs on its threads) and, where the file calls OpenBLAS (EIN_OPENBLAS),
   its own pool's. */
RT_API void ein_set_threads(model_ctx *ctx)
{
    if (ctx->threads <= 0)
        return;
#ifdef _OPENMP
    omp_set_num_threads(ctx->threads);
#endif
#ifdef EIN_OPENBLAS
    openblas_set_num_threads(ctx->threads);
#endif
}

RT_API int ein_buf_alloc(model_ctx *ctx, int i)
{
    size_t bytes = ein_tensors[i].nbytes;
    ctx->buf[i] = calloc(bytes, 1);
    if (!ctx->buf[i])
        return ein_fail(ctx, MODEL_ENOMEM, "cannot allocate %zu bytes for tensor '%s'",
                        bytes, ein_tensors[i].name);
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
    memcpy(data, ctx->buf[i], nbytes);
    return MODEL_OK;
}
