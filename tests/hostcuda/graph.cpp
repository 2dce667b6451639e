/* graph.cpp - the CUDA graph of a run (runtime/graph.cu, emit/README.md),
 * on the model of graph.ein: a load-time stage (w2 = 2 w + 1), a cuBLAS
 * product and its epilogue, y = relu(x w2 + b), b per row.  Built by
 * tests/emit/hostcuda.test with the generated file (its launches
 * rewritten) included as MODEL_CU; the mock records a capture and replays
 * it, and counts captures, launches and the work queued.
 *
 *  1. the first run captures once and is one graph launch, the only work
 *     it queues (the load-time stage aside);
 *  2. a run on the same buffers with new values in them replays the
 *     graph: new values, no capture;
 *  3. a run on other buffers captures again: the answer in the new
 *     buffers, the old ones untouched;
 *  4. a new weight: the load-time stage runs again, outside the graph,
 *     which is not captured again (it reads the context's buffers) and
 *     computes with the new weight;
 *  5. another stream (the legacy default stream, on which CUDA refuses to
 *     capture): the same graph, no capture;
 *  6. run_named: the context's own buffers, so a capture;
 *  7. a context made with EIN_NO_GRAPH=1 runs without a graph, launch by
 *     launch, to the same bits;
 *  8. destroy with a graph launch in flight;
 *  9. a capture that fails (the mock refuses it: HOSTCUDA_REFUSE_CAPTURE):
 *     the runs go without a graph, right, and the context says why.
 * Prints `graph: N checks, M failed`; exit 1 when one failed. */
#include MODEL_CU

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include "driver.h"


static const int n = 256;  /* graph.ein's N */
static const size_t bytes = sizeof(float) * n * n;

static std::vector<float> seeded(size_t count, unsigned seed)
{
    return seeded_values(count, seed);
}

/* max |y - relu(x (2 w + 1) + b[i])| / max |relu(...)| */
static double error(const std::vector<float> &x, const std::vector<float> &w,
                    const std::vector<float> &b, const std::vector<float> &y)
{
    double err = 0, mag = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double s = b[i];
            for (int k = 0; k < n; k++)
                s += (double)x[i * n + k] * (2.0 * w[k * n + j] + 1.0);
            s = s > 0 ? s : 0;
            mag = std::max(mag, std::fabs(s));
            double d = std::fabs(s - y[i * n + j]);
            err = std::isnan(d) ? INFINITY : std::max(err, d);
        }
    return err / mag;
}

static std::vector<float> device_get(const float *d)
{
    std::vector<float> h((size_t)n * n);
    cudaMemcpy(h.data(), d, bytes, cudaMemcpyDeviceToHost);
    return h;
}

int main()
{
    std::vector<float> w = seeded((size_t)n * n, 1), w_new = seeded((size_t)n * n, 2);
    std::vector<float> b = seeded(n, 3), x1 = seeded((size_t)n * n, 4);
    std::vector<float> x1b = seeded((size_t)n * n, 5), x2 = seeded((size_t)n * n, 6);
    cudaStream_t s1, s2;
    cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking);
    float *dx1, *dy1, *dx2, *dy2;
    cudaMalloc((void **)&dx1, bytes);
    cudaMalloc((void **)&dy1, bytes);
    cudaMalloc((void **)&dx2, bytes);
    cudaMalloc((void **)&dy2, bytes);
    cudaMemcpy(dx1, x1.data(), bytes, cudaMemcpyHostToDevice);
    cudaMemcpy(dx2, x2.data(), bytes, cudaMemcpyHostToDevice);
    graph_ctx *ctx;
    CHECK(graph_create(&ctx) == GRAPH_OK, "create: %s", graph_last_error(ctx));
    graph_set_tensor(ctx, "w", w.data(), bytes);
    graph_set_tensor(ctx, "b", b.data(), sizeof(float) * n);

    /* 1. */
    long cap0 = hc_count("graph captures"), work0 = hc_count("work queued");
    long kern0 = hc_count("kernel launches");
    CHECK(graph_run(ctx, dx1, dy1, s1) == GRAPH_OK, "run: %s", graph_last_error(ctx));
    long load_kernels = hc_count("kernel launches") - kern0;
    CHECK(hc_count("graph captures") - cap0 == 1, "the first run captured %ld times",
          hc_count("graph captures") - cap0);
    CHECK(hc_count("graph launches") == 1, "the first run is %ld graph launches",
          hc_count("graph launches"));
    CHECK(load_kernels >= 1 && hc_count("work queued") - work0 == 1 + load_kernels,
          "the first run queued %ld pieces of work: not the load-time stage's %ld and one "
          "graph", hc_count("work queued") - work0, load_kernels);
    cudaStreamSynchronize(s1);
    std::vector<float> y1 = device_get(dy1);
    double e = error(x1, w, b, y1);
    CHECK(e < 1e-5, "the first run is wrong (err %g)", e);

    /* 2. */
    cudaMemcpy(dx1, x1b.data(), bytes, cudaMemcpyHostToDevice);
    work0 = hc_count("work queued");
    CHECK(graph_run(ctx, dx1, dy1, s1) == GRAPH_OK, "run: %s", graph_last_error(ctx));
    CHECK(hc_count("work queued") - work0 == 1, "a replay queued %ld pieces of work, not one "
          "graph launch", hc_count("work queued") - work0);
    CHECK(hc_count("graph captures") - cap0 == 1, "a run on the same buffers captured again");
    cudaStreamSynchronize(s1);
    y1 = device_get(dy1);
    e = error(x1b, w, b, y1);
    CHECK(e < 1e-5, "the replay on new values is wrong (err %g)", e);

    /* 3. */
    CHECK(graph_run(ctx, dx2, dy2, s2) == GRAPH_OK, "run: %s", graph_last_error(ctx));
    CHECK(hc_count("graph captures") - cap0 == 2, "a run on other buffers did not capture "
          "again (%ld captures)", hc_count("graph captures") - cap0);
    cudaStreamSynchronize(s2);
    std::vector<float> y2 = device_get(dy2);
    e = error(x2, w, b, y2);
    CHECK(e < 1e-5, "the run on other buffers is wrong (err %g)", e);
    CHECK(device_get(dy1) == y1, "the run on other buffers wrote the old output buffer");

    /* 4. */
    graph_set_tensor(ctx, "w", w_new.data(), bytes);
    kern0 = hc_count("kernel launches");
    CHECK(graph_run(ctx, dx2, dy2, s2) == GRAPH_OK, "run: %s", graph_last_error(ctx));
    CHECK(hc_count("kernel launches") - kern0 == load_kernels, "a new weight ran %ld kernels "
          "outside the graph, not the load-time stage's %ld", hc_count("kernel launches") - kern0,
          load_kernels);
    CHECK(hc_count("graph captures") - cap0 == 2, "a new weight captured again");
    cudaStreamSynchronize(s2);
    y2 = device_get(dy2);
    e = error(x2, w_new, b, y2);
    CHECK(e < 1e-5, "the run after a new weight is wrong (err %g)", e);

    /* 5. */
    cudaMemcpy(dx2, x1.data(), bytes, cudaMemcpyHostToDevice);
    CHECK(graph_run(ctx, dx2, dy2, 0) == GRAPH_OK, "run: %s", graph_last_error(ctx));
    CHECK(hc_count("graph captures") - cap0 == 2, "a run on another stream captured again");
    cudaStreamSynchronize(0);
    y2 = device_get(dy2);
    e = error(x1, w_new, b, y2);
    CHECK(e < 1e-5, "the run on the legacy stream is wrong (err %g)", e);

    /* 6. */
    graph_set_tensor(ctx, "x", x2.data(), bytes);
    CHECK(graph_run_named(ctx, s1) == GRAPH_OK, "run_named: %s", graph_last_error(ctx));
    CHECK(hc_count("graph captures") - cap0 == 3, "run_named did not capture (%ld captures)",
          hc_count("graph captures") - cap0);
    std::vector<float> y_named((size_t)n * n);
    CHECK(graph_get_tensor(ctx, "y", y_named.data(), bytes) == GRAPH_OK, "get: %s",
          graph_last_error(ctx));
    e = error(x2, w_new, b, y_named);
    CHECK(e < 1e-5, "run_named is wrong (err %g)", e);

    /* 7. */
    setenv("EIN_NO_GRAPH", "1", 1);
    graph_ctx *plain;
    CHECK(graph_create(&plain) == GRAPH_OK, "create: %s", graph_last_error(plain));
    unsetenv("EIN_NO_GRAPH");
    graph_set_tensor(plain, "w", w_new.data(), bytes);
    graph_set_tensor(plain, "b", b.data(), sizeof(float) * n);
    graph_set_tensor(plain, "x", x2.data(), bytes);
    CHECK(graph_run_named(plain, s2) == GRAPH_OK, "run_named: %s", graph_last_error(plain));
    long launches0 = hc_count("graph launches");
    work0 = hc_count("work queued");
    CHECK(graph_run_named(plain, s2) == GRAPH_OK, "run_named: %s", graph_last_error(plain));
    CHECK(hc_count("graph launches") == launches0, "EIN_NO_GRAPH=1 launched a graph");
    CHECK(hc_count("work queued") - work0 > 1, "without a graph a run queued %ld pieces of "
          "work", hc_count("work queued") - work0);
    std::vector<float> y_plain((size_t)n * n);
    CHECK(graph_get_tensor(plain, "y", y_plain.data(), bytes) == GRAPH_OK, "get: %s",
          graph_last_error(plain));
    CHECK(memcmp(y_plain.data(), y_named.data(), bytes) == 0,
          "the runs with and without a graph differ");
    CHECK(graph_destroy(plain) == GRAPH_OK, "destroy");

    /* 8. */
    CHECK(graph_run(ctx, dx1, dy1, s1) == GRAPH_OK, "run: %s", graph_last_error(ctx));
    CHECK(graph_destroy(ctx) == GRAPH_OK, "destroy with a graph launch in flight");
    cudaStreamSynchronize(s1);
    y1 = device_get(dy1);
    e = error(x1b, w_new, b, y1);
    CHECK(e < 1e-5, "the run in flight at destroy is wrong (err %g)", e);
    /* 9. */
    setenv("HOSTCUDA_REFUSE_CAPTURE", "1", 1);
    graph_ctx *refused;
    CHECK(graph_create(&refused) == GRAPH_OK, "create: %s", graph_last_error(refused));
    graph_set_tensor(refused, "w", w.data(), bytes);
    graph_set_tensor(refused, "b", b.data(), sizeof(float) * n);
    launches0 = hc_count("graph launches");
    CHECK(graph_run(refused, dx1, dy1, s1) == GRAPH_OK, "a run whose capture failed: %s",
          graph_last_error(refused));
    CHECK(graph_run(refused, dx1, dy1, s1) == GRAPH_OK, "run: %s", graph_last_error(refused));
    unsetenv("HOSTCUDA_REFUSE_CAPTURE");
    CHECK(hc_count("graph launches") == launches0, "a graph launched after a failed capture");
    CHECK(strstr(refused->note, "CUDA graph failed") != nullptr, "no note of the failed "
          "capture: '%s'", refused->note);
    cudaStreamSynchronize(s1);
    y1 = device_get(dy1);
    e = error(x1b, w, b, y1);
    CHECK(e < 1e-5, "the run without its graph is wrong (err %g)", e);
    CHECK(graph_destroy(refused) == GRAPH_OK, "destroy");

    cudaFree(dx1);
    cudaFree(dy1);
    cudaFree(dx2);
    cudaFree(dy2);
    cudaStreamDestroy(s1);
    cudaStreamDestroy(s2);
    printf("graph: %d checks, %d failed\n", checks, failed);
    return failed ? 1 : 0;
}
