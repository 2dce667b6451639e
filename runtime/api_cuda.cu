/* api_cuda.cu - the tensor buffers of the CUDA target, in device memory
 * on the current device, and the checks of every CUDA call and kernel
 * launch.  Pasted after api_base.c; api.c builds the API on these
 * functions, whose C counterparts are in api_host.c. */
#include <stdlib.h>
#include <string.h>
#include "model.h" /* EMBED-SKIP */

/* Every CUDA call goes through EIN_CUDA: a failure returns MODEL_ECUDA from
   the API function with the call and CUDA's message in ctx->err. */
RT_API int ein_cuda_fail(model_ctx *ctx, cudaError_t e, const char *call)
{
    /* Reported here, so cleared: else the next launch check, which asks
       cudaGetLastError, would report it again.  Its value is e. */
    (void)cudaGetLastError();
    return ein_fail(ctx, e == cudaErrorMemoryAllocation ? MODEL_ENOMEM : MODEL_ECUDA,
                    "%s failed: %s (%s)", call, cudaGetErrorString(e),
                    cudaGetErrorName(e));
}

#define EIN_CUDA(call)                                                     \
    do {                                                                   \
        cudaError_t ein_e_ = (call);                                       \
        if (ein_e_ != cudaSuccess)                                         \
            return ein_cuda_fail(ctx, ein_e_, #call);                      \
    } while (0)

/* A launch fails without a return value: ask for its error at once. */
RT_API int ein_launched(model_ctx *ctx, const char *kernel)
{
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess)
        return 0;
    return ein_fail(ctx, MODEL_ECUDA, "launching kernel %s failed: %s (%s)", kernel,
                    cudaGetErrorString(e), cudaGetErrorName(e));
}

/* Runs of a context wait for the one before (ctx->done), whatever stream
   they are on; copies from and to the host go on ctx->io; the run's CUDA
   graph is captured on ctx->cap (graph.cu), unless EIN_NO_GRAPH is set
   (not empty or "0") now. */
RT_API int ein_ctx_open(model_ctx *ctx)
{
    const char *ng = getenv("EIN_NO_GRAPH");
    ctx->no_graph = ng && *ng && strcmp(ng, "0") != 0;
    EIN_CUDA(cudaStreamCreateWithFlags(&ctx->io, cudaStreamNonBlocking));
    EIN_CUDA(cudaEventCreateWithFlags(&ctx->done, cudaEventDisableTiming));
    if (!ctx->no_graph)
        EIN_CUDA(cudaStreamCreateWithFlags(&ctx->cap, cudaStreamNonBlocking));
    return MODEL_OK;
}

/* Nothing is freed under a run in flight.  The context is going: a
   failure has no message. */
RT_API int ein_ctx_idle(model_ctx *ctx)
{
    return ctx->done && cudaEventSynchronize(ctx->done) != cudaSuccess ? MODEL_ECUDA
                                                                       : MODEL_OK;
}

RT_API int ein_ctx_close(model_ctx *ctx)
{
    int rc = MODEL_OK;
    if (ctx->graph && cudaGraphExecDestroy(ctx->graph) != cudaSuccess)
        rc = MODEL_ECUDA;
    if (ctx->cap && cudaStreamDestroy(ctx->cap) != cudaSuccess)
        rc = MODEL_ECUDA;
    if (ctx->done && cudaEventDestroy(ctx->done) != cudaSuccess)
        rc = MODEL_ECUDA;
    if (ctx->io && cudaStreamDestroy(ctx->io) != cudaSuccess)
        rc = MODEL_ECUDA;
    return rc;
}

/* *out: `bytes` of device memory for `what` (a tensor's name, or the
   arena of the intermediates: ""). */
RT_API int ein_mem_alloc(model_ctx *ctx, void **out, size_t bytes, const char *what)
{
    cudaError_t e = cudaMalloc(out, bytes);
    if (e != cudaSuccess) {
        *out = NULL;
        (void)cudaGetLastError();       /* reported below: clear it */
        return ein_fail(ctx, e == cudaErrorMemoryAllocation ? MODEL_ENOMEM : MODEL_ECUDA,
                        "cannot allocate %zu bytes of device memory for %s%s%s: %s", bytes,
                        *what ? "tensor '" : "the intermediates' arena", what,
                        *what ? "'" : "", cudaGetErrorString(e));
    }
    return MODEL_OK;
}

/* The context is gone by then: a failure has no message. */
RT_API int ein_buf_free(void *buf)
{
    return buf && cudaFree(buf) != cudaSuccess ? MODEL_ECUDA : MODEL_OK;
}

/* The context's copies wait for the runs already queued, whatever their
   streams: those read the old values, or write what a get copies. */
RT_API int ein_io_after_runs(model_ctx *ctx)
{
    EIN_CUDA(cudaStreamWaitEvent(ctx->io, ctx->done, 0));
    return MODEL_OK;
}

/* Weight i from the open file f, through host memory (where the file is
   already), to the device, on ctx->io; done when it returns (before the
   host copy is freed). */
RT_API int ein_buf_load(model_ctx *ctx, StFile *f, int i)
{
    const model_tensor_info *t = &ein_tensors[i];
    size_t bytes = t->nbytes;
    char msg[ST_ERRLEN];
    void *host = malloc(bytes);
    if (!host)
        return ein_fail(ctx, MODEL_ENOMEM, "out of host memory for weight '%s'",
                        t->name);
    int st = st_read(f, t->ext_name, ein_st_dtype(t->elem), t->rank, t->shape, host,
                     bytes, msg, sizeof msg);
    cudaError_t e = st == ST_OK ? cudaMemcpyAsync(ctx->buf[i], host, bytes,
                                                  cudaMemcpyHostToDevice, ctx->io)
                                : cudaSuccess;
    if (e == cudaSuccess && st == ST_OK)
        e = cudaStreamSynchronize(ctx->io);
    free(host);
    if (st != ST_OK)
        return ein_fail(ctx, ein_st_code(st), "%s", msg);
    if (e != cudaSuccess)
        return ein_cuda_fail(ctx, e, "cudaMemcpyAsync (loading a weight)");
    return MODEL_OK;
}

/* Before any run queued after this returns. */
RT_API int ein_buf_put(model_ctx *ctx, int i, const void *data, size_t nbytes)
{
    EIN_CUDA(cudaMemcpyAsync(ctx->buf[i], data, nbytes, cudaMemcpyHostToDevice, ctx->io));
    EIN_CUDA(cudaStreamSynchronize(ctx->io));
    return MODEL_OK;
}

RT_API int ein_buf_get(model_ctx *ctx, int i, void *data, size_t nbytes)
{
    EIN_CUDA(cudaMemcpyAsync(data, ctx->buf[i], nbytes, cudaMemcpyDeviceToHost, ctx->io));
    EIN_CUDA(cudaStreamSynchronize(ctx->io));
    return MODEL_OK;
}
