/* graph.cu - the run-time stages of a CUDA run as one CUDA graph.  Pasted
 * after the stage runners (ein_run_stages is the generated one).
 *
 * The first run captures the stages' launches, library calls and copies
 * into a graph on the context's own stream ctx->cap, instantiates it, and
 * every run is then one cudaGraphLaunch on the caller's stream, where
 * ein_run has already ordered it after the previous run (ctx->done) and
 * after the load-time stages, which stay outside the graph: they run only
 * when a weight changed, and the graph reads their results through the
 * context's buffers, whose addresses never change.
 *
 * A graph holds the device pointers it was captured with and the host
 * decisions taken then (which convolutions fall back to their kernels for
 * an unaligned buffer, cuDNN's variant packs): it is captured again when
 * the run's buffers p[] differ from the last capture's.  The caller's
 * stream is not part of it: a graph launches on any stream, so a run on
 * another stream replays it.  Capturing on ctx->cap rather than on the
 * caller's stream also allows the legacy default stream, on which CUDA
 * refuses to begin a capture.
 *
 * cudaStreamCaptureModeThreadLocal: the libraries' calls are captured
 * like the kernels (cuBLAS with the workspace the context owns, set after
 * every cublasSetStream; cuDNN executes into its plan's workspace), and a
 * potentially unsafe call in this thread (a cudaMalloc, a synchronising
 * call) fails the capture rather than being left out of the graph, while
 * other threads' CUDA calls are not restricted.
 *
 * EIN_NO_GRAPH in the environment at model_create (set and not "0") runs
 * the stages without a graph, each launch and call on the caller's
 * stream, for debugging.  A capture that fails (a library that cannot be
 * captured) does the same for the rest of the context's life, with the
 * reason in ctx->note; a failure of the stages themselves then shows in
 * the plain run. */
#include <stdio.h>
#include <string.h>
#include "model.h" /* EMBED-SKIP */

/* Capture the run-time stages on buffers p into ctx->graph; on failure
   the capture is ended and nothing is kept. */
RT_API int ein_graph_capture(model_ctx *ctx, void *const *p)
{
    cudaGraph_t g = NULL;
    cudaGraphExec_t x = NULL;
    cudaError_t e, d;
    int rc;
    if (ctx->graph) {
        /* one in flight is freed when it completes */
        cudaGraphExec_t old = ctx->graph;
        ctx->graph = NULL;
        if ((e = cudaGraphExecDestroy(old)) != cudaSuccess)
            return ein_cuda_fail(ctx, e, "cudaGraphExecDestroy (the run's previous graph)");
    }
    if ((e = cudaStreamBeginCapture(ctx->cap, cudaStreamCaptureModeThreadLocal)) !=
        cudaSuccess)
        return ein_cuda_fail(ctx, e, "cudaStreamBeginCapture (capturing the run)");
    rc = ein_run_stages(ctx, p, ctx->cap);
    e = cudaStreamEndCapture(ctx->cap, &g);     /* always: the stream leaves capture */
    if (rc != 0) {
        (void)cudaGetLastError();
        if (g)
            (void)cudaGraphDestroy(g);
        return rc;
    }
    if (e != cudaSuccess)
        return ein_cuda_fail(ctx, e, "cudaStreamEndCapture (capturing the run)");
    e = cudaGraphInstantiate(&x, g, 0);
    d = cudaGraphDestroy(g);                    /* the exec does not need it */
    if (e != cudaSuccess)
        return ein_cuda_fail(ctx, e, "cudaGraphInstantiate (the run's graph)");
    if (d != cudaSuccess) {
        (void)cudaGraphExecDestroy(x);
        return ein_cuda_fail(ctx, d, "cudaGraphDestroy (the run's captured graph)");
    }
    ctx->graph = x;
    memcpy(ctx->graph_p, p, sizeof ctx->graph_p);
    return MODEL_OK;
}

/* The run-time stages on buffers p, queued on stream: the graph, captured
   first where it is missing or was captured with other buffers. */
RT_API int ein_graph_run(model_ctx *ctx, void *const *p, cudaStream_t stream)
{
    if (!ctx->no_graph &&
        (!ctx->graph || memcmp(ctx->graph_p, p, sizeof ctx->graph_p) != 0) &&
        ein_graph_capture(ctx, p) != MODEL_OK) {
        /* without a graph from now on; the reason for the harness */
        snprintf(ctx->note, sizeof ctx->note, "capturing the run into a CUDA graph "
                 "failed (%s); the runs go without a graph", ctx->err);
        ctx->err[0] = 0;
        ctx->no_graph = 1;
    }
    if (ctx->no_graph)
        return ein_run_stages(ctx, p, stream);
    cudaError_t e = cudaGraphLaunch(ctx->graph, stream);
    return e == cudaSuccess ? MODEL_OK : ein_cuda_fail(ctx, e, "cudaGraphLaunch (the run)");
}
