/* streams.cpp - what the C API promises about streams (emit/README.md),
 * on the model of streams.ein: a load-time stage (w2 = 2 w + 1, run when
 * a weight changed) and a cuBLAS product y = x w2.  Built by
 * tests/emit/hostcuda.test with the generated file (its launches
 * rewritten) included as MODEL_CU; the mock queues work and runs it only
 * when it must, so an order the API does not make shows as a wrong y.
 *
 *  1. a run queued on a non-blocking stream, then set_tensor of the weight:
 *     the run computes with the old weight;
 *  2. the next run, on another non-blocking stream, with the new one;
 *  3. runs back to back on two non-blocking streams (positional, into the
 *     caller's buffers), the second synchronised first: both right, the
 *     load-time stage of the first run seen by the second;
 *  4. destroy with a run in flight.
 * Prints `streams: N checks, M failed`; exit 1 when one failed. */
#include MODEL_CU

#include <cmath>
#include <cstdio>
#include <vector>

static int checks, failed;

#define CHECK(cond, ...)                                                   \
    do {                                                                   \
        checks++;                                                          \
        if (!(cond)) {                                                     \
            failed++;                                                      \
            fprintf(stderr, "streams.cpp:%d: FAIL: ", __LINE__);           \
            fprintf(stderr, __VA_ARGS__);                                  \
            fputc('\n', stderr);                                           \
        }                                                                  \
    } while (0)

static const int n = 160;

static std::vector<float> seeded(unsigned seed)
{
    std::vector<float> v((size_t)n * n);
    uint64_t s = 0x9e3779b97f4a7c15ull * (seed + 1);
    for (float &x : v) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        x = (float)((double)(s >> 11) / (double)(1ull << 53) * 2 - 1);
    }
    return v;
}

/* max |y - x (2 w + 1)| / max |x (2 w + 1)| */
static double error(const std::vector<float> &x, const std::vector<float> &w,
                    const std::vector<float> &y)
{
    double err = 0, mag = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int k = 0; k < n; k++)
                s += (double)x[i * n + k] * (2.0 * w[k * n + j] + 1.0);
            mag = std::max(mag, std::fabs(s));
            double d = std::fabs(s - y[i * n + j]);
            err = std::isnan(d) ? INFINITY : std::max(err, d);
        }
    return err / mag;
}

int main()
{
    const size_t bytes = sizeof(float) * n * n;
    std::vector<float> a = seeded(1), b = seeded(2), x = seeded(3), x2 = seeded(4);
    std::vector<float> y((size_t)n * n), y2((size_t)n * n);
    cudaStream_t s1, s2;
    cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking);
    streams_ctx *ctx;
    CHECK(streams_create(&ctx) == STREAMS_OK, "create: %s", streams_last_error(ctx));

    /* 1. */
    streams_set_tensor(ctx, "w", a.data(), bytes);
    streams_set_tensor(ctx, "x", x.data(), bytes);
    CHECK(streams_run_named(ctx, s1) == STREAMS_OK, "run: %s", streams_last_error(ctx));
    streams_set_tensor(ctx, "w", b.data(), bytes);
    CHECK(streams_get_tensor(ctx, "y", y.data(), bytes) == STREAMS_OK, "get: %s",
          streams_last_error(ctx));
    double e = error(x, a, y);
    CHECK(e < 1e-5, "a run queued before set_tensor computed with the new weight (err %g)", e);

    /* 2. */
    CHECK(streams_run_named(ctx, s2) == STREAMS_OK, "run: %s", streams_last_error(ctx));
    streams_get_tensor(ctx, "y", y.data(), bytes);
    e = error(x, b, y);
    CHECK(e < 1e-5, "the run after set_tensor, on another stream, is wrong (err %g)", e);

    /* 3. */
    float *dx, *dx2, *dy, *dy2;
    cudaMalloc((void **)&dx, bytes);
    cudaMalloc((void **)&dx2, bytes);
    cudaMalloc((void **)&dy, bytes);
    cudaMalloc((void **)&dy2, bytes);
    cudaMemcpy(dx, x.data(), bytes, cudaMemcpyHostToDevice);
    cudaMemcpy(dx2, x2.data(), bytes, cudaMemcpyHostToDevice);
    streams_set_tensor(ctx, "w", a.data(), bytes);      /* the load-time stage reruns */
    CHECK(streams_run(ctx, dx, dy, s1) == STREAMS_OK, "run: %s", streams_last_error(ctx));
    CHECK(streams_run(ctx, dx2, dy2, s2) == STREAMS_OK, "run: %s", streams_last_error(ctx));
    cudaStreamSynchronize(s2);
    cudaMemcpy(y2.data(), dy2, bytes, cudaMemcpyDeviceToHost);
    cudaStreamSynchronize(s1);
    cudaMemcpy(y.data(), dy, bytes, cudaMemcpyDeviceToHost);
    e = error(x2, a, y2);
    CHECK(e < 1e-5, "the second of two runs on two streams is wrong (err %g)", e);
    e = error(x, a, y);
    CHECK(e < 1e-5, "the first of two runs on two streams is wrong (err %g)", e);

    /* 4. */
    CHECK(streams_run(ctx, dx, dy, s1) == STREAMS_OK, "run: %s", streams_last_error(ctx));
    CHECK(streams_destroy(ctx) == STREAMS_OK, "destroy with a run in flight");
    cudaStreamSynchronize(s1);
    cudaFree(dx);
    cudaFree(dx2);
    cudaFree(dy);
    cudaFree(dy2);
    cudaStreamDestroy(s1);
    cudaStreamDestroy(s2);
    printf("streams: %d checks, %d failed\n", checks, failed);
    return failed ? 1 : 0;
}
