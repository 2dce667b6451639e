/* selftest.cpp - the mocks catch what they claim to catch.  Each check
 * makes a call the documentation forbids (or a correct one) and looks at
 * the status and at the mock's count of forbidden uses; the kernel
 * emulation's errors (a partial shuffle mask, a barrier part of a block
 * misses) and the leak report at exit run in child processes.  Built and
 * run by tests/emit/hostcuda.test with the generated programs' flags;
 * prints one line per failed check and `selftest: N checks, M failed`. */
#include "hostcuda.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>
#include "driver.h"

long hc_misuses(bool reset);     /* cudart.cpp: the count of forbidden uses */


/* a forbidden use was reported (and forget it) */
static bool reported()
{
    return hc_misuses(true) > 0;
}

/* ---- kernels ---------------------------------------------------------------------- */

static __global__ void k_warp_sum(const float *x, float *y)
{
    float v = x[threadIdx.x];
    for (int o = 16; o > 0; o /= 2)
        v += __shfl_down_sync(0xffffffffu, v, o);
    if (threadIdx.x % 32 == 0)
        y[threadIdx.x / 32] = v;
}

static __global__ void k_block_sum(const float *x, float *y)
{
    __shared__ float part[8];
    float v = x[blockIdx.x * blockDim.x + threadIdx.x];
    for (int o = 16; o > 0; o /= 2)
        v += __shfl_down_sync(0xffffffffu, v, o);
    if (threadIdx.x % 32 == 0)
        part[threadIdx.x / 32] = v;
    __syncthreads();
    if (threadIdx.x == 0) {
        float s = 0;
        for (int w = 0; w < 8; w++)
            s += part[w];
        y[blockIdx.x] = s;
    }
    __syncthreads();
}

static __global__ void k_partial_mask(float *y)
{
    y[threadIdx.x] = __shfl_down_sync(0x0000ffffu, 1.0f, 1);
}

static __global__ void k_divergent_barrier(float *y)
{
    if (threadIdx.x == 0)
        return;
    __syncthreads();
    y[threadIdx.x] = 1;
}

static __global__ void k_fill(float *y, float v, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        y[i] = v;
}

/* Run f in a child; its exit status (128 + signal when killed). */
template <class F> static int in_child(F f)
{
    fflush(stdout);
    fflush(stderr);
    pid_t p = fork();
    if (p == 0) {
        /* the child's messages are expected: keep them out of the log */
        if (!freopen("/dev/null", "w", stderr))
            _exit(99);
        f();
        _exit(0);
    }
    int st = 0;
    waitpid(p, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void test_kernels()
{
    float *x, *y;
    cudaMalloc((void **)&x, 512 * sizeof(float));
    cudaMalloc((void **)&y, 512 * sizeof(float));
    std::vector<float> h(512);
    for (int i = 0; i < 512; i++)
        h[i] = (float)(i % 7);
    cudaMemcpy(x, h.data(), 512 * 4, cudaMemcpyHostToDevice);
    HC_LAUNCH(k_warp_sum, 1, 256, 0, 0)(x, y);
    HC_LAUNCH(k_block_sum, 2, 256, 0, 0)(x, y + 16);
    float r[18];
    cudaMemcpy(r, y, sizeof r, cudaMemcpyDeviceToHost);
    for (int w = 0; w < 8; w++) {
        float want = 0;
        for (int i = 0; i < 32; i++)
            want += h[w * 32 + i];
        CHECK(r[w] == want, "warp %d sums to %g, not %g", w, r[w], want);
    }
    for (int b = 0; b < 2; b++) {
        float want = 0;
        for (int i = 0; i < 256; i++)
            want += h[b * 256 + i];
        CHECK(r[16 + b] == want, "block %d sums to %g, not %g", b, r[16 + b], want);
    }
    CHECK(cudaGetLastError() == cudaSuccess, "a launch set an error");
    HC_LAUNCH(k_fill, 1, 2048, 0, 0)(y, 1.0f, 4);
    CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration,
          "2048 threads a block is not cudaErrorInvalidConfiguration");
    CHECK(cudaGetLastError() == cudaSuccess, "cudaGetLastError does not clear");
    float host[4];
    HC_LAUNCH(k_fill, 1, 32, 0, 0)(host, 1.0f, 4);
    CHECK(reported(), "a host pointer passed to a kernel is not reported");
    int st = in_child([&]() {
        HC_LAUNCH(k_partial_mask, 1, 32, 0, 0)(y);
        cudaDeviceSynchronize();
    });
    CHECK(st != 0, "a partial shuffle mask runs (exit %d)", st);
    st = in_child([&]() {
        HC_LAUNCH(k_divergent_barrier, 1, 64, 0, 0)(y);
        cudaDeviceSynchronize();
    });
    CHECK(st != 0, "a barrier that thread 0 skips does not stop the kernel (exit %d)", st);
    cudaFree(x);
    cudaFree(y);
}

/* ---- memory and streams -------------------------------------------------------------- */

static void test_memory()
{
    float *d;
    CHECK(cudaMalloc((void **)&d, 16 * sizeof(float)) == cudaSuccess, "cudaMalloc");
    uint32_t bits;
    memcpy(&bits, &d[3], 4);
    /* the mock's memory is host memory: read it as the GPU would */
    CHECK(std::isnan(d[3]), "fresh device memory is not NaN (0x%08x)", bits);
    float h[16] = {0};
    CHECK(cudaMemcpy(d, h, sizeof h, cudaMemcpyDeviceToHost) != cudaSuccess && reported(),
          "a copy whose pointers contradict its kind is accepted");
    CHECK(cudaMemcpy(d + 8, h, sizeof h, cudaMemcpyHostToDevice) != cudaSuccess && reported(),
          "a copy past the end of an allocation is accepted");
    CHECK(cudaGetLastError() != cudaSuccess, "a failed copy leaves no error");
    CHECK(cudaMemcpy(d, h, sizeof h, cudaMemcpyDefault) == cudaSuccess && !reported(),
          "cudaMemcpyDefault");
    void *big;
    CHECK(cudaMalloc(&big, (size_t)64 << 30) == cudaErrorMemoryAllocation,
          "64 GiB of device memory are given");
    (void)cudaGetLastError();
    CHECK(cudaFree(h) != cudaSuccess && reported(), "cudaFree of host memory is accepted");

    /* ordering: a copy on the legacy stream waits for blocking streams,
     * not for non-blocking ones */
    cudaStream_t nb, bl;
    cudaStreamCreateWithFlags(&nb, cudaStreamNonBlocking);
    cudaStreamCreate(&bl);
    HC_LAUNCH(k_fill, 1, 32, 0, nb)(d, 5.0f, 16);
    float got = 0;
    cudaMemcpy(&got, d, 4, cudaMemcpyDeviceToHost);
    CHECK(got == 0.0f, "a blocking copy waited for a non-blocking stream (%g)", got);
    cudaStreamSynchronize(nb);
    cudaMemcpy(&got, d, 4, cudaMemcpyDeviceToHost);
    CHECK(got == 5.0f, "cudaStreamSynchronize did not run the stream (%g)", got);
    HC_LAUNCH(k_fill, 1, 32, 0, bl)(d, 6.0f, 16);
    cudaMemcpy(&got, d, 4, cudaMemcpyDeviceToHost);
    CHECK(got == 6.0f, "a blocking copy did not wait for a blocking stream (%g)", got);
    /* an event orders two streams */
    cudaEvent_t ev;
    cudaEventCreate(&ev);
    HC_LAUNCH(k_fill, 1, 32, 0, bl)(d, 7.0f, 16);
    cudaEventRecord(ev, bl);
    cudaMemcpyAsync(&got, d, 4, cudaMemcpyDeviceToHost, nb);
    cudaStreamSynchronize(nb);
    CHECK(got == 6.0f, "a non-blocking stream waited without an event (%g)", got);
    cudaStreamWaitEvent(nb, ev, 0);
    cudaMemcpyAsync(&got, d, 4, cudaMemcpyDeviceToHost, nb);
    cudaStreamSynchronize(nb);
    CHECK(got == 7.0f, "cudaStreamWaitEvent did not order the streams (%g)", got);
    cudaEventDestroy(ev);
    HC_LAUNCH(k_fill, 1, 32, 0, nb)(d, 8.0f, 16);
    cudaFree(d);
    CHECK(reported(), "cudaFree of memory queued work still uses is accepted");
    cudaStreamDestroy(nb);
    cudaStreamDestroy(bl);
    int st = in_child([]() {
        void *p;
        cudaMalloc(&p, 4);
        exit(0);
    });
    CHECK(st == 98, "a leaked allocation does not fail the exit (%d)", st);
}

/* ---- cuBLAS ----------------------------------------------------------------------------- */

static void test_cublas()
{
    cublasHandle_t h;
    CHECK(cublasCreate(&h) == CUBLAS_STATUS_SUCCESS, "cublasCreate");
    const int m = 5, n = 3, k = 4;
    float ha[m * k], hb[k * n], hc[m * n];
    for (int i = 0; i < m * k; i++)
        ha[i] = (float)(i % 5) - 2.0f + 1.0f / 3.0f;
    for (int i = 0; i < k * n; i++)
        hb[i] = (float)(i % 3) + 1.0f / 7.0f;
    float *a, *b, *c;
    cudaMalloc((void **)&a, sizeof ha);
    cudaMalloc((void **)&b, sizeof hb);
    cudaMalloc((void **)&c, sizeof hc);
    cudaMemcpy(a, ha, sizeof ha, cudaMemcpyHostToDevice);
    cudaMemcpy(b, hb, sizeof hb, cudaMemcpyHostToDevice);
    const float one = 1, zero = 0;
    auto gemm = [&](int lda, cublasComputeType_t ct, cudaDataType at, const float *A) {
        return cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, A, at, lda, b,
                            CUDA_R_32F, k, &zero, c, CUDA_R_32F, m, ct, CUBLAS_GEMM_DEFAULT);
    };
    CHECK(gemm(m, CUBLAS_COMPUTE_32F_PEDANTIC, CUDA_R_32F, a) == CUBLAS_STATUS_SUCCESS,
          "a plain GEMM");
    cudaMemcpy(hc, c, sizeof hc, cudaMemcpyDeviceToHost);
    double worst = 0;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int l = 0; l < k; l++)
                s += (double)ha[l * m + i] * hb[j * k + l];
            worst = std::max(worst, std::fabs(s - hc[j * m + i]));
        }
    CHECK(worst < 1e-5, "column-major GEMM off by %g", worst);
    CHECK(gemm(m - 1, CUBLAS_COMPUTE_32F, CUDA_R_32F, a) == CUBLAS_STATUS_INVALID_VALUE,
          "lda below the row count is accepted");
    CHECK(gemm(m, CUBLAS_COMPUTE_32F, CUDA_R_32F, a + 2) != CUBLAS_STATUS_SUCCESS && reported(),
          "A running past its allocation is accepted");
    CHECK(gemm(m, CUBLAS_COMPUTE_32F_FAST_TF32, CUDA_R_16F, a) == CUBLAS_STATUS_NOT_SUPPORTED,
          "COMPUTE_32F_FAST_TF32 with 16F operands is accepted");
    /* TF32 by the math mode: the mock counts the arithmetic it used */
    cublasSetMathMode(h, CUBLAS_TF32_TENSOR_OP_MATH);
    CHECK(gemm(m, CUBLAS_COMPUTE_32F, CUDA_R_32F, a) == CUBLAS_STATUS_SUCCESS, "TF32 mode");
    cudaMemcpy(hc, c, sizeof hc, cudaMemcpyDeviceToHost);
    double worst_tf32 = 0;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int l = 0; l < k; l++)
                s += (double)ha[l * m + i] * hb[j * k + l];
            worst_tf32 = std::max(worst_tf32, std::fabs(s - hc[j * m + i]));
        }
    CHECK(worst_tf32 > 1e-4, "CUBLAS_TF32_TENSOR_OP_MATH gave fp32 results (%g)", worst_tf32);
    cublasSetMathMode(h, CUBLAS_DEFAULT_MATH);
    /* the workspace: aligned, reset by cublasSetStream; a capture without
     * one is counted */
    void *ws;
    cudaMalloc(&ws, 1 << 20);
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    CHECK(cublasSetWorkspace(h, (char *)ws + 16, 1 << 16) == CUBLAS_STATUS_INVALID_VALUE,
          "a workspace below 256-byte alignment is accepted");
    CHECK(cublasSetWorkspace(h, ws, 4096) == CUBLAS_STATUS_SUCCESS &&
              gemm(m, CUBLAS_COMPUTE_32F, CUDA_R_32F, a) == CUBLAS_STATUS_ALLOC_FAILED,
          "a GEMM with a workspace below 16 KiB ran");
    const char *pool = "cublas captured with the default workspace pool";
    long pooled = hc_count(pool);
    cublasSetWorkspace(h, ws, 1 << 20);
    cublasSetStream(h, s);          /* back to the default pool */
    cudaGraph_t g;
    cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
    gemm(m, CUBLAS_COMPUTE_32F, CUDA_R_32F, a);
    CHECK(hc_count(pool) == pooled + 1, "cublasSetStream did not reset the workspace");
    CHECK(cublasSetWorkspace(h, ws, 1 << 20) == CUBLAS_STATUS_SUCCESS &&
              gemm(m, CUBLAS_COMPUTE_32F, CUDA_R_32F, a) == CUBLAS_STATUS_SUCCESS &&
              hc_count(pool) == pooled + 1, "a GEMM captured with a workspace is counted");
    CHECK(cudaStreamEndCapture(s, &g) == cudaSuccess && !reported(), "capturing cuBLAS");
    cudaGraphDestroy(g);
    cudaStreamDestroy(s);
    cudaFree(ws);
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
    cublasDestroy(h);
}

/* ---- cuBLASLt ---------------------------------------------------------------------------- */

/* One cuBLASLt GEMM of the test: D (m x n) = act(alpha A B + beta C + bias),
 * A m x k, B k x n, all column-major, a batch of `batch`. */
struct Lt {
    cublasLtHandle_t h = nullptr;
    cublasLtMatmulDesc_t d = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr, dl = nullptr;
    cublasLtMatmulPreference_t pref = nullptr;
    cublasLtMatmulAlgo_t algo;
    size_t ws_need = 0;
    cublasStatus_t make(int m, int n, int k, uint32_t epi, const void *bias, int batch = 1)
    {
        cublasLtMatmulDescCreate(&d, CUBLAS_COMPUTE_32F_PEDANTIC, CUDA_R_32F);
        cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi);
        if (bias)
            cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                           sizeof bias);
        cublasLtMatrixLayoutCreate(&a, CUDA_R_32F, m, k, m);
        cublasLtMatrixLayoutCreate(&b, CUDA_R_32F, k, n, k);
        cublasLtMatrixLayoutCreate(&c, CUDA_R_32F, m, n, m);
        cublasLtMatrixLayoutCreate(&dl, CUDA_R_32F, m, n, m);
        if (batch > 1) {
            cublasLtMatrixLayout_t l[4] = {a, b, c, dl};
            int64_t st[4] = {(int64_t)m * k, (int64_t)k * n, (int64_t)m * n, (int64_t)m * n};
            for (int i = 0; i < 4; i++) {
                cublasLtMatrixLayoutSetAttribute(l[i], CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch,
                                                 sizeof batch);
                cublasLtMatrixLayoutSetAttribute(l[i], CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                 &st[i], sizeof st[i]);
            }
        }
        cublasLtMatmulPreferenceCreate(&pref);
        uint64_t ws = 1 << 16;
        uint32_t al = 16;
        cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                             sizeof ws);
        cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al,
                                             sizeof al);
        cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al,
                                             sizeof al);
        return heuristic();
    }
    cublasStatus_t heuristic()
    {
        cublasLtMatmulHeuristicResult_t r;
        int n = 0;
        cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(h, d, a, b, c, dl, pref, 1, &r, &n);
        if (s == CUBLAS_STATUS_SUCCESS && n == 1) {
            algo = r.algo;
            ws_need = r.workspaceSize;
        }
        return s;
    }
    cublasStatus_t run(const float *A, const float *B, const float *C, float *D, void *ws,
                       size_t wsn, float alpha = 1, float beta = 0,
                       const cublasLtMatmulAlgo_t *al = nullptr, cudaStream_t s = 0)
    {
        return cublasLtMatmul(h, d, &alpha, A, a, B, b, &beta, C, c, D, dl, al ? al : &algo, ws,
                              wsn, s);
    }
    void drop()
    {
        cublasLtMatrixLayout_t l[4] = {a, b, c, dl};
        for (auto x : l)
            cublasLtMatrixLayoutDestroy(x);
        cublasLtMatmulDescDestroy(d);
        cublasLtMatmulPreferenceDestroy(pref);
        a = b = c = dl = nullptr;
        d = nullptr;
        pref = nullptr;
    }
};

static void test_cublaslt()
{
    const int m = 6, n = 5, k = 7, batch = 2;
    Lt lt;
    CHECK(cublasLtCreate(&lt.h) == CUBLAS_STATUS_SUCCESS, "cublasLtCreate");
    std::vector<float> ha = seeded_values(batch * m * k, 1), hb = seeded_values(batch * k * n, 2),
                       hc = seeded_values(batch * m * n, 3), hbias = seeded_values(m, 4);
    float *a, *b, *c, *d, *bias;
    void *ws;
    cudaMalloc((void **)&a, ha.size() * 4);
    cudaMalloc((void **)&b, hb.size() * 4);
    cudaMalloc((void **)&c, hc.size() * 4);
    cudaMalloc((void **)&d, hc.size() * 4 + 64);
    cudaMalloc((void **)&bias, m * 4 + 64);
    cudaMalloc(&ws, 1 << 16);
    cudaMemcpy(a, ha.data(), ha.size() * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(b, hb.data(), hb.size() * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(c, hc.data(), hc.size() * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(bias, hbias.data(), m * 4, cudaMemcpyHostToDevice);
    /* the documented arithmetic of each epilogue, batched, with C */
    const uint32_t epis[] = {CUBLASLT_EPILOGUE_DEFAULT, CUBLASLT_EPILOGUE_RELU_BIAS,
                             CUBLASLT_EPILOGUE_GELU_BIAS, CUBLASLT_EPILOGUE_GELU};
    for (uint32_t epi : epis) {
        bool has_bias = epi & CUBLASLT_EPILOGUE_BIAS;
        CHECK(lt.make(m, n, k, epi, has_bias ? bias : nullptr, batch) == CUBLAS_STATUS_SUCCESS,
              "heuristics for epilogue %u", epi);
        CHECK(lt.run(a, b, c, d, ws, 1 << 16, 0.5f, 2.0f) == CUBLAS_STATUS_SUCCESS && !reported(),
              "a matmul with epilogue %u", epi);
        std::vector<float> hd(batch * m * n);
        cudaMemcpy(hd.data(), d, hd.size() * 4, cudaMemcpyDeviceToHost);
        double worst = 0;
        for (int q = 0; q < batch; q++)
            for (int i = 0; i < m; i++)
                for (int j = 0; j < n; j++) {
                    double s = 0;
                    for (int l = 0; l < k; l++)
                        s += (double)ha[q * m * k + l * m + i] * hb[q * k * n + j * k + l];
                    double v = 0.5 * s + 2.0 * hc[q * m * n + j * m + i] + (has_bias ? hbias[i] : 0);
                    if (epi == CUBLASLT_EPILOGUE_RELU_BIAS)
                        v = v > 0 ? v : 0;
                    else if (epi & CUBLASLT_EPILOGUE_GELU)
                        v = 0.5 * v * (1 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
                    worst = std::max(worst, std::fabs(v - hd[q * m * n + j * m + i]));
                }
        CHECK(worst < 1e-5, "epilogue %u off by %g", epi, worst);
        lt.drop();
    }
    lt.make(m, n, k, CUBLASLT_EPILOGUE_RELU_BIAS, bias);
    CHECK(lt.ws_need > 0, "the mock's algorithm takes no workspace");
    /* what the documentation rejects */
    int32_t big = 7;
    CHECK(cublasLtMatmulDescSetAttribute(lt.d, CUBLASLT_MATMUL_DESC_TRANSA, &big, 2) ==
              CUBLAS_STATUS_INVALID_VALUE, "an attribute of the wrong size is accepted");
    CHECK(cublasLtMatmulDescSetAttribute(lt.d, CUBLASLT_MATMUL_DESC_TRANSA, nullptr, 4) ==
              CUBLAS_STATUS_INVALID_VALUE, "an attribute from a null buffer is accepted");
    cublasLtMatmulHeuristicResult_t r;
    int nr = 0;
    CHECK(cublasLtMatmulAlgoGetHeuristic(lt.h, lt.d, lt.a, lt.b, lt.c, lt.dl, lt.pref, 0, &r, &nr) ==
              CUBLAS_STATUS_INVALID_VALUE, "requestedAlgoCount 0 is accepted");
    CHECK(lt.run(a, b, c, d, ws, lt.ws_need - 1) == CUBLAS_STATUS_INVALID_VALUE,
          "a workspace below the algorithm's is accepted");
    CHECK(lt.run(a, b, c, d, (char *)ws + 16, lt.ws_need) != CUBLAS_STATUS_SUCCESS && reported(),
          "a workspace below 256-byte alignment is accepted");
    CHECK(lt.run(a + 1, b, c, d, ws, 1 << 16) != CUBLAS_STATUS_SUCCESS && reported(),
          "A below the alignment the algorithm was chosen for is accepted");
    CHECK(lt.run(a, b, c, d + 1, ws, 1 << 16) != CUBLAS_STATUS_SUCCESS && reported(),
          "D below the 16-byte alignment the algorithm was chosen for is accepted");
    CHECK(lt.run(a, b, c + 4, d, ws, 1 << 16, 1, 1) != CUBLAS_STATUS_SUCCESS && reported(),
          "C below the default 256-byte alignment is accepted");
    CHECK(lt.run(a, b + 64, c, d, ws, 1 << 16) != CUBLAS_STATUS_SUCCESS && reported(),
          "B running past its allocation is accepted");
    const void *low = bias + 1;     /* 4 bytes past: below the 256 it was chosen for */
    cublasLtMatmulDescSetAttribute(lt.d, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &low, sizeof low);
    CHECK(lt.run(a, b, c, d, ws, 1 << 16) != CUBLAS_STATUS_SUCCESS && reported(),
          "a bias below the alignment the algorithm was chosen for is accepted");
    const void *none = nullptr;
    cublasLtMatmulDescSetAttribute(lt.d, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &none, sizeof none);
    CHECK(lt.run(a, b, c, d, ws, 1 << 16) == CUBLAS_STATUS_INVALID_VALUE,
          "a bias epilogue without a bias is accepted");
    cublasLtMatmulDescSetAttribute(lt.d, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias);
    CHECK(lt.run(a, b, c, c, ws, 1 << 16, 1, 1) == CUBLAS_STATUS_SUCCESS && !reported(),
          "C as D (in place) is refused");
    lt.run(a, b, c, c + 4, ws, 1 << 16, 1, 1);
    CHECK(reported(), "D overlapping C is accepted");
    int32_t tc = CUBLAS_OP_T;
    cublasLtMatmulDescSetAttribute(lt.d, CUBLASLT_MATMUL_DESC_TRANSC, &tc, sizeof tc);
    CHECK(lt.run(a, b, c, d, ws, 1 << 16) == CUBLAS_STATUS_NOT_SUPPORTED,
          "TRANSC other than CUBLAS_OP_N is accepted");
    tc = CUBLAS_OP_N;
    cublasLtMatmulDescSetAttribute(lt.d, CUBLASLT_MATMUL_DESC_TRANSC, &tc, sizeof tc);
    /* the algorithm belongs to its problem: the epilogue changed since */
    uint32_t gelu = CUBLASLT_EPILOGUE_GELU_BIAS;
    cublasLtMatmulDescSetAttribute(lt.d, CUBLASLT_MATMUL_DESC_EPILOGUE, &gelu, sizeof gelu);
    CHECK(lt.run(a, b, c, d, ws, 1 << 16) != CUBLAS_STATUS_SUCCESS && reported(),
          "an algorithm of another problem is accepted");
    cublasLtMatmulAlgo_t made{};
    CHECK(lt.run(a, b, c, d, ws, 1 << 16, 1, 0, &made) != CUBLAS_STATUS_SUCCESS && reported(),
          "an algorithm the heuristics never gave is accepted");
    /* sizes in conflict: B's rows are not A's columns */
    cublasLtMatrixLayout_t bad;
    cublasLtMatrixLayoutCreate(&bad, CUDA_R_32F, k + 1, n, k + 1);
    CHECK(cublasLtMatmulAlgoGetHeuristic(lt.h, lt.d, lt.a, bad, lt.c, lt.dl, lt.pref, 1, &r, &nr) ==
              CUBLAS_STATUS_INVALID_VALUE, "B of k + 1 rows is accepted");
    cublasLtMatrixLayoutDestroy(bad);
    cublasLtMatrixLayoutCreate(&bad, CUDA_R_32F, m, k, m - 1);
    CHECK(cublasLtMatmulAlgoGetHeuristic(lt.h, lt.d, bad, lt.b, lt.c, lt.dl, lt.pref, 1, &r, &nr) ==
              CUBLAS_STATUS_INVALID_VALUE, "a leading dimension below the rows is accepted");
    cublasLtMatrixLayoutDestroy(bad);
    cublasLtMatrixLayoutCreate(&bad, CUDA_R_16F, m, k, m);
    CHECK(cublasLtMatmulAlgoGetHeuristic(lt.h, lt.d, bad, lt.b, lt.c, lt.dl, lt.pref, 1, &r, &nr) ==
              CUBLAS_STATUS_NOT_SUPPORTED, "A of f16 with B of f32 is accepted");
    cublasLtMatrixLayoutDestroy(bad);
    lt.drop();
    /* captured: no allocation, the work in the graph; cublasLtDestroy in a
     * capture would synchronize the device */
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    lt.make(m, n, k, CUBLASLT_EPILOGUE_RELU, nullptr);
    cudaGraph_t g;
    cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
    CHECK(lt.run(a, b, c, d, ws, 1 << 16, 1, 0, nullptr, s) == CUBLAS_STATUS_SUCCESS,
          "a captured matmul");
    CHECK(cublasLtDestroy(lt.h) != CUBLAS_STATUS_SUCCESS && reported(),
          "cublasLtDestroy in a capture is accepted");
    cudaStreamEndCapture(s, &g);
    if (g)
        cudaGraphDestroy(g);
    (void)cudaGetLastError();
    lt.drop();
    cudaStreamDestroy(s);
    auto free_all = [&]() {
        for (void *p : {(void *)a, (void *)b, (void *)c, (void *)d, (void *)bias, ws})
            cudaFree(p);
    };
    /* descriptors alive at exit are leaks */
    int st = in_child([&]() {
        cublasLtMatrixLayout_t leak;
        cublasLtMatrixLayoutCreate(&leak, CUDA_R_32F, 2, 2, 2);
        cublasLtDestroy(lt.h);
        free_all();
        exit(0);
    });
    CHECK(st == 98, "a leaked cuBLASLt layout does not fail the exit (%d)", st);
    CHECK(cublasLtDestroy(lt.h) == CUBLAS_STATUS_SUCCESS, "cublasLtDestroy");
    free_all();
}

/* ---- cuDNN ------------------------------------------------------------------------------ */

struct Dnn {
    cudnnHandle_t h;
    std::vector<cudnnBackendDescriptor_t> made;
    cudnnBackendDescriptor_t make(cudnnBackendDescriptorType_t t)
    {
        cudnnBackendDescriptor_t d;
        cudnnBackendCreateDescriptor(t, &d);
        made.push_back(d);
        return d;
    }
    /* kind: 0 real, 1 virtual, 2 by value */
    cudnnBackendDescriptor_t tensor(int64_t uid, const int64_t *dims, int64_t align = 16,
                                    int kind = 0)
    {
        cudnnBackendDescriptor_t t = make(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
        int64_t st[4] = {dims[1] * dims[2] * dims[3], dims[2] * dims[3], dims[3], 1};
        cudnnDataType_t dt = CUDNN_DATA_FLOAT;
        bool yes = true;
        cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt);
        cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims);
        cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, st);
        cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
        cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1,
                                 &align);
        if (kind)
            cudnnBackendSetAttribute(t, kind == 1 ? CUDNN_ATTR_TENSOR_IS_VIRTUAL
                                                  : CUDNN_ATTR_TENSOR_IS_BY_VALUE,
                                     CUDNN_TYPE_BOOLEAN, 1, &yes);
        cudnnBackendFinalize(t);
        return t;
    }
    /* y = mode(x[, b]) in f32, NaN propagation asked for or not */
    cudnnStatus_t pointwise(cudnnPointwiseMode_t mode, cudnnBackendDescriptor_t x,
                            cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t y, bool nan,
                            cudnnBackendDescriptor_t *out, bool prec = true)
    {
        cudnnBackendDescriptor_t p = make(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
        cudnnDataType_t f = CUDNN_DATA_FLOAT;
        cudnnNanPropagation_t np = CUDNN_PROPAGATE_NAN;
        cudnnBackendSetAttribute(p, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
        if (prec)
            cudnnBackendSetAttribute(p, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &f);
        if (nan)
            cudnnBackendSetAttribute(p, CUDNN_ATTR_POINTWISE_NAN_PROPAGATION,
                                     CUDNN_TYPE_NAN_PROPOGATION, 1, &np);
        cudnnStatus_t s = cudnnBackendFinalize(p);
        if (s != CUDNN_STATUS_SUCCESS)
            return s;
        cudnnBackendDescriptor_t o = make(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
        cudnnBackendSetAttribute(o, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR,
                                 CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &p);
        cudnnBackendSetAttribute(o, CUDNN_ATTR_OPERATION_POINTWISE_XDESC,
                                 CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x);
        if (b)
            cudnnBackendSetAttribute(o, CUDNN_ATTR_OPERATION_POINTWISE_BDESC,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b);
        cudnnBackendSetAttribute(o, CUDNN_ATTR_OPERATION_POINTWISE_YDESC,
                                 CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y);
        *out = o;
        return cudnnBackendFinalize(o);
    }
    cudnnStatus_t graph(const std::vector<cudnnBackendDescriptor_t> &ops,
                        cudnnBackendDescriptor_t *out)
    {
        cudnnBackendDescriptor_t g = make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
        cudnnBackendSetAttribute(g, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                 (int64_t)ops.size(), ops.data());
        cudnnBackendSetAttribute(g, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h);
        *out = g;
        return cudnnBackendFinalize(g);
    }
    /* the plan of the heuristics' (mode) config i of graph g */
    cudnnStatus_t plan(cudnnBackendDescriptor_t g, cudnnBackendHeurMode_t mode, int i,
                       cudnnBackendDescriptor_t *out)
    {
        cudnnBackendDescriptor_t heur = make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR), cfg[8];
        cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
                                 CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g);
        cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
        cudnnBackendFinalize(heur);
        for (auto &c : cfg)
            c = make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
        int64_t n = 0;
        cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                 8, &n, cfg);
        cudnnBackendDescriptor_t p = make(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
        cudnnBackendSetAttribute(p, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h);
        cudnnBackendSetAttribute(p, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                                 CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg[i < n ? i : 0]);
        *out = p;
        return cudnnBackendFinalize(p);
    }
    cudnnStatus_t execute(cudnnBackendDescriptor_t plan, std::vector<int64_t> uids,
                          std::vector<void *> ptrs, void *ws)
    {
        cudnnBackendDescriptor_t pack;
        cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &pack);
        cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64,
                                 (int64_t)uids.size(), uids.data());
        cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR,
                                 (int64_t)ptrs.size(), ptrs.data());
        cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1,
                                 &ws);
        cudnnBackendFinalize(pack);
        cudnnStatus_t s = cudnnBackendExecute(h, plan, pack);
        cudnnBackendDestroyDescriptor(pack);
        return s;
    }
    cudnnBackendDescriptor_t conv(int64_t pad)
    {
        cudnnBackendDescriptor_t c = make(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
        int64_t nsp = 2, one2[2] = {1, 1}, pad2[2] = {pad, pad};
        cudnnDataType_t comp = CUDNN_DATA_FLOAT;
        cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
        cudnnBackendSetAttribute(c, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &nsp);
        cudnnBackendSetAttribute(c, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1,
                                 &comp);
        cudnnBackendSetAttribute(c, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE,
                                 1, &mode);
        cudnnBackendSetAttribute(c, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, one2);
        cudnnBackendSetAttribute(c, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2,
                                 one2);
        cudnnBackendSetAttribute(c, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pad2);
        cudnnBackendSetAttribute(c, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2,
                                 pad2);
        cudnnBackendFinalize(c);
        return c;
    }
    cudnnStatus_t op(cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t w,
                     cudnnBackendDescriptor_t y, cudnnBackendDescriptor_t c,
                     cudnnBackendDescriptor_t *out)
    {
        cudnnBackendDescriptor_t o = make(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
        float alpha = 1, beta = 0;
        cudnnBackendSetAttribute(o, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
                                 CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x);
        cudnnBackendSetAttribute(o, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
                                 CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &w);
        cudnnBackendSetAttribute(o, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
                                 CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y);
        cudnnBackendSetAttribute(o, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
                                 CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &c);
        cudnnBackendSetAttribute(o, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
                                 CUDNN_TYPE_FLOAT, 1, &alpha);
        cudnnBackendSetAttribute(o, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA,
                                 CUDNN_TYPE_FLOAT, 1, &beta);
        *out = o;
        return cudnnBackendFinalize(o);
    }
    ~Dnn()
    {
        for (auto d : made)
            cudnnBackendDestroyDescriptor(d);
    }
};

static void test_cudnn()
{
    Dnn d;
    CHECK(cudnnCreate(&d.h) == CUDNN_STATUS_SUCCESS, "cudnnCreate");
    int64_t xd[4] = {1, 2, 5, 5}, wd[4] = {3, 2, 3, 3}, yd[4] = {1, 3, 5, 5}, bad_yd[4] = {1, 3, 4, 5};
    cudnnBackendDescriptor_t x = d.tensor(1, xd), w = d.tensor(2, wd), y = d.tensor(3, yd);
    cudnnBackendDescriptor_t op;
    CHECK(d.op(x, w, d.tensor(3, bad_yd), d.conv(1), &op) == CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH &&
              reported(), "a y the convolution's arithmetic does not give is accepted");
    cudnnBackendDescriptor_t t = d.make(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    int32_t uid32 = 1;
    CHECK(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT32, 1, &uid32) ==
              CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE && reported(),
          "a uid set as INT32 is accepted");
    CHECK(cudnnBackendFinalize(t) != CUDNN_STATUS_SUCCESS && reported(),
          "a tensor without its required attributes finalizes");
    CHECK(cudnnBackendSetAttribute(x, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &xd[0]) !=
              CUDNN_STATUS_SUCCESS && reported(), "a finalized tensor takes an attribute");
    CHECK(d.op(x, w, y, d.conv(1), &op) == CUDNN_STATUS_SUCCESS && !reported(), "a right op");
    cudnnBackendDescriptor_t g = d.make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    cudnnBackendSetAttribute(g, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                             &op);
    cudnnBackendSetAttribute(g, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &d.h);
    CHECK(cudnnBackendFinalize(g) == CUDNN_STATUS_SUCCESS, "the graph");
    cudnnBackendDescriptor_t heur = d.make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
    cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
                             CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g);
    cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
    CHECK(cudnnBackendFinalize(heur) == CUDNN_STATUS_SUCCESS, "the heuristics");
    cudnnBackendDescriptor_t cfg[8];
    for (auto &c : cfg)
        c = d.make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    int64_t n = 0;
    CHECK(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                   CUDNN_TYPE_BACKEND_DESCRIPTOR, 8, &n, cfg) ==
              CUDNN_STATUS_SUCCESS && n >= 3, "heuristics give %lld configs", (long long)n);
    /* config 0 is a tensor-core engine, one asks for a large workspace */
    cudnnBackendDescriptor_t eng = d.make(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
    int64_t cnt;
    cudnnBackendGetAttribute(cfg[0], CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                             &cnt, &eng);
    cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
    cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                             CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &cnt, notes);
    CHECK(cnt >= 1 && notes[0] == CUDNN_NUMERICAL_NOTE_TENSOR_CORE,
          "the first engine is not a tensor-core one");
    int64_t ws_max = 0;
    for (int64_t i = 0; i < n && i < 8; i++) {
        int64_t ws = 0;
        cudnnBackendGetAttribute(cfg[i], CUDNN_ATTR_ENGINECFG_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1,
                                 &cnt, &ws);
        ws_max = std::max(ws_max, ws);
    }
    CHECK(ws_max >= (1LL << 30), "no config asks for a large workspace (%lld)",
          (long long)ws_max);
    /* a plan of the im2col engine (config 3): its workspace is checked */
    cudnnBackendDescriptor_t plan = d.make(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &d.h);
    cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                             CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg[3]);
    CHECK(cudnnBackendFinalize(plan) == CUDNN_STATUS_SUCCESS, "the plan");
    int64_t ws = 0;
    cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1,
                             &cnt, &ws);
    char *mem;
    cudaMalloc((void **)&mem, 4096 + (size_t)ws);
    float hx[50], hw[54];
    for (int i = 0; i < 50; i++)
        hx[i] = (float)(i % 9) - 4;
    for (int i = 0; i < 54; i++)
        hw[i] = (float)(i % 5) - 2;
    float *dx = (float *)mem, *dw = (float *)(mem + 256), *dy = (float *)(mem + 512);
    cudaMemcpy(dx, hx, sizeof hx, cudaMemcpyHostToDevice);
    cudaMemcpy(dw, hw, sizeof hw, cudaMemcpyHostToDevice);
    auto execute = [&](void *xp, void *wsp) {
        cudnnBackendDescriptor_t pack;
        cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &pack);
        int64_t uids[3] = {1, 2, 3};
        void *ptrs[3] = {xp, dw, dy};
        cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids);
        cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3,
                                 ptrs);
        cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1,
                                 &wsp);
        cudnnBackendFinalize(pack);
        cudnnStatus_t s = cudnnBackendExecute(d.h, plan, pack);
        cudnnBackendDestroyDescriptor(pack);
        return s;
    };
    CHECK(execute(dx, mem + 4096) == CUDNN_STATUS_SUCCESS && !reported(), "a right execute");
    float hy[75];
    cudaMemcpy(hy, dy, sizeof hy, cudaMemcpyDeviceToHost);
    double worst = 0;
    for (int k = 0; k < 3; k++)
        for (int p = 0; p < 5; p++)
            for (int q = 0; q < 5; q++) {
                double s = 0;
                for (int c = 0; c < 2; c++)
                    for (int r = 0; r < 3; r++)
                        for (int t2 = 0; t2 < 3; t2++) {
                            int h = p + r - 1, ww = q + t2 - 1;
                            if (h >= 0 && h < 5 && ww >= 0 && ww < 5)
                                s += (double)hx[(c * 5 + h) * 5 + ww] * hw[((k * 2 + c) * 3 + r) * 3 + t2];
                        }
                worst = std::max(worst, std::fabs(s - hy[(k * 5 + p) * 5 + q]));
            }
    CHECK(worst < 1e-5, "the reference convolution is off by %g", worst);
    CHECK(execute((char *)dx + 4, mem + 4096) == CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER &&
              reported(), "a pointer below its tensor's alignment is accepted");
    CHECK(execute(dx, mem + 4096 + 8) == CUDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT && reported(),
          "a workspace short of the plan's is accepted");
    cudaFree(mem);
    cudnnDestroy(d.h);
}

/* A convolution and pointwise nodes in one graph: y = relu(conv(x, w) * s + b),
 * s a by-value scalar, b a bias per channel; what the mock refuses in such
 * graphs, its engines' answers, the arithmetic and NaN through RELU_FWD. */
static void test_cudnn_graph()
{
    Dnn d;
    CHECK(cudnnCreate(&d.h) == CUDNN_STATUS_SUCCESS, "cudnnCreate");
    int64_t xd[4] = {1, 2, 5, 5}, wd[4] = {3, 2, 3, 3}, yd[4] = {1, 3, 5, 5};
    int64_t bd[4] = {1, 3, 1, 1}, one[4] = {1, 1, 1, 1}, bad_bd[4] = {1, 2, 1, 1};
    auto build = [&](bool nan, cudnnBackendDescriptor_t *g) {
        cudnnBackendDescriptor_t x = d.tensor(1, xd), w = d.tensor(2, wd), y = d.tensor(3, yd);
        cudnnBackendDescriptor_t c = d.tensor(4, yd, 16, 1), t1 = d.tensor(5, yd, 16, 1);
        cudnnBackendDescriptor_t t2 = d.tensor(6, yd, 16, 1), b = d.tensor(7, bd);
        cudnnBackendDescriptor_t sc = d.tensor(8, one, 4, 2), ops[4];
        d.op(x, w, c, d.conv(1), &ops[0]);
        d.pointwise(CUDNN_POINTWISE_MUL, c, sc, t1, false, &ops[1]);
        d.pointwise(CUDNN_POINTWISE_ADD, t1, b, t2, false, &ops[2]);
        d.pointwise(CUDNN_POINTWISE_RELU_FWD, t2, nullptr, y, nan, &ops[3]);
        /* in another order: the mock runs them as they depend on each other */
        return d.graph({ops[3], ops[1], ops[0], ops[2]}, g);
    };
    /* what a pointwise operation must have */
    cudnnBackendDescriptor_t x = d.tensor(11, yd), y = d.tensor(12, yd), o;
    CHECK(d.pointwise(CUDNN_POINTWISE_ADD, x, nullptr, y, false, &o, false) !=
              CUDNN_STATUS_SUCCESS && reported(), "a pointwise descriptor without its math "
          "precision finalizes");
    CHECK(d.pointwise(CUDNN_POINTWISE_ADD, x, nullptr, y, false, &o) == CUDNN_STATUS_BAD_PARAM &&
              reported(), "ADD without a B is accepted");
    CHECK(d.pointwise(CUDNN_POINTWISE_RELU_FWD, x, d.tensor(13, bd), y, false, &o) ==
              CUDNN_STATUS_BAD_PARAM && reported(), "RELU_FWD with a B is accepted");
    CHECK(d.pointwise(CUDNN_POINTWISE_ADD, x, d.tensor(14, bad_bd), y, false, &o) ==
              CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH && reported(),
          "a B that does not broadcast to y is accepted");
    CHECK(d.tensor(15, yd, 16, 2) && reported(), "a by-value tensor of many elements finalizes");
    /* what a graph of them must be */
    cudnnBackendDescriptor_t g, ops[2], v = d.tensor(16, yd, 16, 1);
    d.pointwise(CUDNN_POINTWISE_ABS, x, nullptr, v, false, &ops[0]);
    CHECK(d.graph({ops[0]}, &g) == CUDNN_STATUS_BAD_PARAM && reported(),
          "a virtual tensor nobody reads is accepted");
    d.pointwise(CUDNN_POINTWISE_EXP, d.tensor(16, yd, 8, 1), nullptr, y, false, &ops[1]);
    CHECK(d.graph({ops[0], ops[1]}, &g) == CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES &&
              reported(), "two different tensors of one uid are accepted");
    d.pointwise(CUDNN_POINTWISE_EXP, y, nullptr, x, false, &ops[1]);
    d.pointwise(CUDNN_POINTWISE_EXP, x, nullptr, y, false, &ops[0]);
    CHECK(d.graph({ops[0], ops[1]}, &g) == CUDNN_STATUS_BAD_PARAM && reported(),
          "a graph whose operations read each other's outputs in a cycle is accepted");
    CHECK(build(true, &g) == CUDNN_STATUS_SUCCESS && !reported(), "a right graph");
    /* engine 3 (plain fp32) takes it, the fallback engine does not, and
     * HOSTCUDA_REFUSE_FUSION=1 makes none */
    cudnnBackendDescriptor_t plan, nan_plan, g2, p4;
    CHECK(d.plan(g, CUDNN_HEUR_MODE_A, 3, &plan) == CUDNN_STATUS_SUCCESS, "engine 3's plan");
    CHECK(d.plan(g, CUDNN_HEUR_MODE_FALLBACK, 0, &p4) == CUDNN_STATUS_NOT_SUPPORTED && !reported(),
          "the fallback engine takes the graph with pointwise nodes");
    setenv("HOSTCUDA_REFUSE_FUSION", "1", 1);
    CHECK(d.plan(g, CUDNN_HEUR_MODE_A, 3, &p4) == CUDNN_STATUS_NOT_SUPPORTED && !reported(),
          "HOSTCUDA_REFUSE_FUSION=1 does not refuse the graph");
    unsetenv("HOSTCUDA_REFUSE_FUSION");
    CHECK(build(false, &g2) == CUDNN_STATUS_SUCCESS &&
              d.plan(g2, CUDNN_HEUR_MODE_A, 3, &nan_plan) == CUDNN_STATUS_SUCCESS, "the graph "
          "without NaN propagation");
    char *mem;
    cudaMalloc((void **)&mem, 1 << 16);
    float hx[50], hw[54], hb[3] = {0.5f, -1, 2}, scale = 0.5f;
    for (int i = 0; i < 50; i++)
        hx[i] = (float)(i % 9) - 4;
    hx[12] = NAN;       /* the middle of channel 0: a NaN in every output channel there */
    for (int i = 0; i < 54; i++)
        hw[i] = (float)(i % 5) - 2;
    float *dx = (float *)mem, *dw = (float *)(mem + 256), *db = (float *)(mem + 512);
    float *dy = (float *)(mem + 768);
    void *ws = mem + 4096;
    cudaMemcpy(dx, hx, sizeof hx, cudaMemcpyHostToDevice);
    cudaMemcpy(dw, hw, sizeof hw, cudaMemcpyHostToDevice);
    cudaMemcpy(db, hb, sizeof hb, cudaMemcpyHostToDevice);
    std::vector<int64_t> uids = {1, 2, 3, 7, 8};
    std::vector<void *> ptrs = {dx, dw, dy, db, &scale};
    CHECK(d.execute(plan, uids, ptrs, ws) == CUDNN_STATUS_SUCCESS && !reported(),
          "a right execute of the graph");
    float hy[75];
    cudaMemcpy(hy, dy, sizeof hy, cudaMemcpyDeviceToHost);
    double worst = 0;
    int nans = 0;
    for (int k = 0; k < 3; k++)
        for (int p = 0; p < 5; p++)
            for (int q = 0; q < 5; q++) {
                double sum = 0;
                for (int c = 0; c < 2; c++)
                    for (int r = 0; r < 3; r++)
                        for (int t = 0; t < 3; t++) {
                            int h = p + r - 1, ww = q + t - 1;
                            if (h >= 0 && h < 5 && ww >= 0 && ww < 5)
                                sum += (double)hx[(c * 5 + h) * 5 + ww] *
                                       hw[((k * 2 + c) * 3 + r) * 3 + t];
                        }
                double want = sum * scale + hb[k];
                float got = hy[(k * 5 + p) * 5 + q];
                if (std::isnan(want))
                    nans += std::isnan(got);
                else
                    worst = std::max(worst, std::fabs((want < 0 ? 0 : want) - got));
            }
    CHECK(worst < 1e-5, "relu(conv * s + b) is off by %g", worst);
    CHECK(nans == 27, "%d of the 27 NaN sums came through RELU_FWD with CUDNN_PROPAGATE_NAN", nans);
    CHECK(d.execute(nan_plan, uids, ptrs, ws) == CUDNN_STATUS_SUCCESS, "the graph without NaN "
          "propagation");
    cudaMemcpy(hy, dy, sizeof hy, cudaMemcpyDeviceToHost);
    CHECK(!std::isnan(hy[12]) && hy[12] == 0.0f, "RELU_FWD without NaN propagation gave %g for "
          "NaN, not the lower clip", hy[12]);
    /* the variant pack: every real tensor, nothing virtual, scalars on the host */
    CHECK(d.execute(plan, {1, 2, 3, 7}, {dx, dw, dy, db}, ws) != CUDNN_STATUS_SUCCESS &&
              reported(), "an execute without the scalar's uid is accepted");
    CHECK(d.execute(plan, {1, 2, 3, 7, 8, 4}, {dx, dw, dy, db, &scale, dy}, ws) !=
              CUDNN_STATUS_SUCCESS && reported(), "a virtual tensor in the variant pack is "
          "accepted");
    CHECK(d.execute(plan, uids, {dx, dw, dy, db, db}, ws) != CUDNN_STATUS_SUCCESS && reported(),
          "a by-value scalar in device memory is accepted");
    CHECK(d.execute(plan, uids, {dx, dw, dy, db + 1, &scale}, ws) ==
              CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER && reported(),
          "a bias below its tensor's alignment is accepted");
    cudaFree(mem);
    cudnnDestroy(d.h);
}

/* ---- stream capture and graphs ---------------------------------------------------------- */

static float device_float(const float *d)
{
    float v = 0;
    cudaMemcpy(&v, d, 4, cudaMemcpyDeviceToHost);
    return v;
}

static void test_graphs()
{
    float *d, *e;
    cudaMalloc((void **)&d, 16 * sizeof(float));
    cudaMalloc((void **)&e, 16 * sizeof(float));
    cudaStream_t s, other;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking);
    HC_LAUNCH(k_fill, 1, 32, 0, s)(d, 1.0f, 16);
    cudaStreamSynchronize(s);

    /* recorded, not run; replayed in order, once per launch */
    CHECK(cudaStreamBeginCapture(0, cudaStreamCaptureModeThreadLocal) != cudaSuccess &&
              reported(), "a capture on the legacy stream is begun");
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) == cudaSuccess,
          "cudaStreamBeginCapture");
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) != cudaSuccess &&
              reported(), "a capture begun twice on one stream");
    HC_LAUNCH(k_fill, 1, 32, 0, s)(d, 2.0f, 16);
    cudaMemcpyAsync(e, d, 16 * sizeof(float), cudaMemcpyDeviceToDevice, s);
    HC_LAUNCH(k_fill, 1, 32, 0, s)(d, 3.0f, 8);
    cudaGraph_t g = nullptr;
    CHECK(cudaStreamEndCapture(s, &g) == cudaSuccess && g, "cudaStreamEndCapture");
    CHECK(device_float(d) == 1.0f, "captured work ran at the capture (%g)", device_float(d));
    cudaGraphExec_t x = nullptr;
    CHECK(cudaGraphInstantiate(&x, g, 0) == cudaSuccess && x, "cudaGraphInstantiate");
    cudaGraphDestroy(g);
    CHECK(cudaGraphLaunch(x, other) == cudaSuccess, "cudaGraphLaunch");
    CHECK(device_float(d) == 1.0f, "a graph launch ran before its stream was synchronised");
    cudaStreamSynchronize(other);
    CHECK(device_float(d) == 3.0f && device_float(d + 12) == 2.0f && device_float(e) == 2.0f,
          "the replay is not the recorded work in order (%g %g %g)", device_float(d),
          device_float(d + 12), device_float(e));
    HC_LAUNCH(k_fill, 1, 32, 0, s)(e, 9.0f, 16);
    cudaGraphLaunch(x, s);
    cudaStreamSynchronize(s);
    CHECK(device_float(e) == 2.0f, "a second launch did not replay the copy (%g)",
          device_float(e));
    CHECK(!reported(), "a correct capture and replay reported an error");

    /* what a capture forbids: the call fails, the capture is invalidated */
    void *p = nullptr;
    auto invalidated = [&](cudaStreamCaptureMode mode, const char *what, auto call) {
        cudaGraph_t bad = nullptr;
        (void)cudaGetLastError();
        cudaStreamBeginCapture(s, mode);
        HC_LAUNCH(k_fill, 1, 32, 0, s)(d, 4.0f, 16);
        cudaError_t r = call();
        bool rep = reported();
        cudaError_t end = cudaStreamEndCapture(s, &bad);
        CHECK(r != cudaSuccess && rep && end == cudaErrorStreamCaptureInvalidated && !bad,
              "%s while capturing: %s, capture %s", what, cudaGetErrorName(r),
              cudaGetErrorName(end));
        (void)cudaGetLastError();
    };
    invalidated(cudaStreamCaptureModeThreadLocal, "cudaMalloc",
                [&]() { return cudaMalloc(&p, 64); });
    invalidated(cudaStreamCaptureModeGlobal, "a synchronous cudaMemcpy", [&]() {
        float h = 0;
        return cudaMemcpy(&h, e, 4, cudaMemcpyDeviceToHost);
    });
    invalidated(cudaStreamCaptureModeRelaxed, "cudaStreamSynchronize of the capturing stream",
                [&]() { return cudaStreamSynchronize(s); });
    invalidated(cudaStreamCaptureModeThreadLocal, "cudaStreamSynchronize of another stream",
                [&]() { return cudaStreamSynchronize(other); });
    invalidated(cudaStreamCaptureModeRelaxed, "cudaDeviceSynchronize",
                [&]() { return cudaDeviceSynchronize(); });
    invalidated(cudaStreamCaptureModeRelaxed, "a copy from host memory into the capture",
                [&]() {
                    static float h = 1;
                    return cudaMemcpyAsync(e, &h, 4, cudaMemcpyHostToDevice, s);
                });
    /* relaxed mode allows a cudaMalloc */
    cudaGraph_t ok = nullptr;
    cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed);
    CHECK(cudaMalloc(&p, 64) == cudaSuccess && !reported(), "cudaMalloc refused in relaxed mode");
    CHECK(cudaStreamEndCapture(s, &ok) == cudaSuccess && ok, "relaxed capture");
    cudaGraphDestroy(ok);
    cudaFree(p);
    CHECK(cudaStreamEndCapture(s, &ok) != cudaSuccess && reported(),
          "cudaStreamEndCapture without a capture is accepted");
    CHECK(device_float(d) == 3.0f, "work of an invalidated capture ran (%g)", device_float(d));

    /* a launch whose recorded memory was freed */
    float *f;
    cudaMalloc((void **)&f, 64);
    cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
    HC_LAUNCH(k_fill, 1, 32, 0, s)(f, 5.0f, 16);
    cudaStreamEndCapture(s, &g);
    cudaGraphExec_t xf;
    cudaGraphInstantiate(&xf, g, 0);
    cudaGraphDestroy(g);
    cudaFree(f);
    CHECK(cudaGraphLaunch(xf, s) != cudaSuccess && reported(),
          "a graph on freed memory is launched");
    cudaGraphExecDestroy(xf);
    (void)cudaGetLastError();

    /* an exec left alive is a leak */
    int st = in_child([&]() {
        cudaGraphExec_t leak;
        cudaGraph_t lg;
        cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
        HC_LAUNCH(k_fill, 1, 32, 0, s)(d, 6.0f, 16);
        cudaStreamEndCapture(s, &lg);
        cudaGraphInstantiate(&leak, lg, 0);
        cudaGraphDestroy(lg);
        cudaGraphExecDestroy(x);
        cudaFree(d);
        cudaFree(e);
        cudaStreamDestroy(s);
        cudaStreamDestroy(other);
        exit(0);
    });
    CHECK(st == 98, "a leaked graph exec does not fail the exit (%d)", st);
    cudaGraphExecDestroy(x);
    cudaFree(d);
    cudaFree(e);
    cudaStreamDestroy(s);
    cudaStreamDestroy(other);
}

int main()
{
    test_kernels();
    test_memory();
    test_cublas();
    test_cublaslt();
    test_cudnn();
    test_cudnn_graph();
    test_graphs();
    hc_misuses(true);
    printf("selftest: %d checks, %d failed\n", checks, failed);
    return failed ? 1 : 0;
}
