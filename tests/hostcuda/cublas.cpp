/* cublas.cpp - the cuBLAS calls einc's output makes, on the host, written
 * from the cuBLAS Library documentation (cublasGemmEx,
 * cublasGemmStridedBatchedEx, cublasGemmBatchedEx with its arrays of
 * pointers in device memory, cublasComputeType_t, cublasMath_t, "Floating
 * Point Emulation") and cublas_api.h:
 *
 *  - a column-major reference GEMM, queued on the handle's stream (alpha
 *    and beta read at the call, as the host pointer mode documents; beta
 *    = 0 never reads C, which "does not have to be a valid input");
 *    the reference and the checks of operands and types (hc::blas,
 *    mock.h) serve cublaslt.cpp too, with cuBLASLt's epilogue;
 *  - CUBLAS_STATUS_INVALID_VALUE where documented: m, n, k or batchCount
 *    below 0, an operation not N, T or C, lda < max(1, m) (transa N) or
 *    max(1, k), ldb < max(1, k) (transb N) or max(1, n), ldc < max(1, m),
 *    a null alpha or beta; CUBLAS_STATUS_NOT_SUPPORTED for a combination
 *    of compute type, Atype, Btype and Ctype not in the table of
 *    cublasGemmEx (only the real 16F, 16BF and 32F rows are implemented:
 *    others are reported as not implemented here);
 *  - an operand (every batch of it) outside one cudaMalloc allocation, a
 *    pointer not aligned to its element, a batch of C overlapping the
 *    next (undefined) are errors of the caller (mock.h);
 *  - the arithmetic the compute type and math mode allow, recorded in the
 *    exit report ("gemm fp32", "gemm tf32", "gemm bf16x9", ...):
 *      32F_PEDANTIC           IEEE fp32 products and sums
 *      32F                    the same, unless the handle's math mode is
 *                             CUBLAS_TF32_TENSOR_OP_MATH (TF32) or
 *                             CUBLAS_FP32_EMULATED_BF16X9_MATH, or
 *                             CUBLAS_EMULATE_SINGLE_PRECISION was set when
 *                             the handle was created (BF16x9 emulation)
 *      32F_FAST_TF32          operands to TF32
 *      32F_FAST_16F, _16BF    "down-converting inputs to half [bfloat16] or
 *                             TF32": TF32 here (HOSTCUDA_FAST_DOWNCONVERT=
 *                             narrow for half / bfloat16)
 *      16-bit operands        exact products, fp32 sums, C rounded to its
 *                             type (nearest even)
 *    NVIDIA_TF32_OVERRIDE=0 turns TF32 off everywhere, as documented;
 *  - cublasSetWorkspace ("CUDA Graphs Support", cublasSetWorkspace): the
 *    workspace device memory aligned to 256 bytes (else
 *    CUBLAS_STATUS_INVALID_VALUE), inside one allocation; cublasSetStream
 *    "unconditionally resets the cuBLAS library workspace back to the
 *    default workspace pool"; a workspace below 16 KiB "may cause some
 *    routines to fail with CUBLAS_STATUS_ALLOC_FAILED": it does here.  A
 *    GEMM captured into a graph without a workspace of the caller's would
 *    make the graph allocate its own (memory nodes, which child graphs do
 *    not support): counted as "cublas captured with the default workspace
 *    pool", which hostcuda.test requires to be 0.
 *
 * Ambiguities: how tensor cores convert f32 to TF32 is not documented
 * (the PTX mma instructions ignore the low 13 bits; cvt.rna rounds): the
 * mock truncates, which differs from a round-to-nearest caller.  Which of
 * half and TF32 the FAST_16F/16BF types pick is not documented either.
 * BF16x9 emulation is modelled as three bfloat16 pieces per operand and
 * nine products summed in fp32 (results differ from fp32 in the last
 * bits). */
#include "mock.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <set>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

struct cublasContext {
    cudaStream_t stream;
    cublasMath_t math;
    cublasPointerMode_t pmode;
    bool emulate;           /* CUBLAS_EMULATE_SINGLE_PRECISION at creation */
    void *ws;               /* cublasSetWorkspace's; null: the default pool */
    size_t ws_bytes;
};

namespace {

std::set<cublasContext *> handles;

bool handle_ok(const char *call, cublasHandle_t h)
{
    if (!h || !handles.count(h)) {
        if (h)
            hc::misuse(call, "handle %p was never created or was destroyed", (void *)h);
        return false;
    }
    return true;
}

} /* namespace */

/* ---- the GEMM reference, shared with cublaslt.cpp (mock.h) ----------------- */

namespace hc {
namespace blas {

const char *const arith_name[] = {"fp32", "tf32", "fp16", "bf16", "bf16x9"};

float bits_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

uint32_t float_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

float tf32_trunc(float x)
{
    if (!std::isfinite(x))
        return x;
    return bits_float(float_bits(x) & 0xffffe000u);
}

float bf16_rne(float x)
{
    return __bfloat162float(__float2bfloat16_rn(x));
}

float half_rne(float x)
{
    return __half2float(__float2half_rn(x));
}

float round_to(Arith a, float x)
{
    switch (a) {
    case TF32: return tf32_trunc(x);
    case HALF: return half_rne(x);
    case BF16: return bf16_rne(x);
    default: return x;
    }
}

size_t elem_size(cudaDataType t)
{
    return t == CUDA_R_32F ? 4 : 2;
}

float load(cudaDataType t, const void *p, size_t i)
{
    if (t == CUDA_R_32F)
        return ((const float *)p)[i];
    uint16_t u = ((const uint16_t *)p)[i];
    if (t == CUDA_R_16F)
        return __half2float(__ushort_as_half(u));
    return __bfloat162float(__ushort_as_bfloat16(u));
}

void store(cudaDataType t, void *p, size_t i, float v)
{
    if (t == CUDA_R_32F)
        ((float *)p)[i] = v;
    else if (t == CUDA_R_16F)
        ((uint16_t *)p)[i] = __half_as_ushort(__float2half_rn(v));
    else
        ((uint16_t *)p)[i] = __bfloat16_as_ushort(__float2bfloat16_rn(v));
}

/* Is (compute, A/B, C) a row of cublasGemmEx's table?  1 yes, 0 no, -1 a
 * row the mock does not implement. */
int combination(cublasComputeType_t ct, cudaDataType ab, cudaDataType c)
{
    bool f32 = ab == CUDA_R_32F && c == CUDA_R_32F;
    switch (ct) {
    case CUBLAS_COMPUTE_32F:
    case CUBLAS_COMPUTE_32F_PEDANTIC:
        if (f32 || (ab == CUDA_R_16F && (c == CUDA_R_16F || c == CUDA_R_32F)) ||
            (ab == CUDA_R_16BF && (c == CUDA_R_16BF || c == CUDA_R_32F)))
            return 1;
        if ((ab == CUDA_R_8I && c == CUDA_R_32F) || ab == CUDA_C_8I || ab == CUDA_C_32F)
            return -1;
        return 0;
    case CUBLAS_COMPUTE_32F_FAST_16F:
    case CUBLAS_COMPUTE_32F_FAST_16BF:
    case CUBLAS_COMPUTE_32F_FAST_TF32:
    case CUBLAS_COMPUTE_32F_EMULATED_16BFX9:
        if (f32)
            return 1;
        return ab == CUDA_C_32F && c == CUDA_C_32F ? -1 : 0;
    case CUBLAS_COMPUTE_16F:
    case CUBLAS_COMPUTE_16F_PEDANTIC:
    case CUBLAS_COMPUTE_64F:
    case CUBLAS_COMPUTE_64F_PEDANTIC:
    case CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT:
    case CUBLAS_COMPUTE_32I:
    case CUBLAS_COMPUTE_32I_PEDANTIC:
        return -1;
    }
    return 0;
}

/* The arithmetic a call may use (see the header): the handle's math mode
 * and whether CUBLAS_EMULATE_SINGLE_PRECISION was set at its creation. */
Arith arithmetic(cublasMath_t math, bool emulate, cublasComputeType_t ct, cudaDataType ab)
{
    if (ab != CUDA_R_32F)
        return EXACT;
    bool tf32_off = getenv("NVIDIA_TF32_OVERRIDE") && strcmp(getenv("NVIDIA_TF32_OVERRIDE"), "0") == 0;
    bool narrow = getenv("HOSTCUDA_FAST_DOWNCONVERT") &&
                  strcmp(getenv("HOSTCUDA_FAST_DOWNCONVERT"), "narrow") == 0;
    switch (ct) {
    case CUBLAS_COMPUTE_32F_PEDANTIC:
        return EXACT;
    case CUBLAS_COMPUTE_32F:
        if ((math & 0xf) == CUBLAS_TF32_TENSOR_OP_MATH && !tf32_off)
            return TF32;
        if ((math & 0xf) == CUBLAS_FP32_EMULATED_BF16X9_MATH || emulate)
            return BF16X9;
        return EXACT;
    case CUBLAS_COMPUTE_32F_FAST_TF32:
        return tf32_off ? EXACT : TF32;
    case CUBLAS_COMPUTE_32F_FAST_16F:
        return narrow ? HALF : tf32_off ? EXACT : TF32;
    case CUBLAS_COMPUTE_32F_FAST_16BF:
        return narrow ? BF16 : tf32_off ? EXACT : TF32;
    case CUBLAS_COMPUTE_32F_EMULATED_16BFX9:
        return BF16X9;
    default:
        return EXACT;
    }
}

/* x = x0 + x1 + x2 in bfloat16 pieces */
void split3(float x, float p[3])
{
    p[0] = bf16_rne(x);
    p[1] = bf16_rne(x - p[0]);
    p[2] = bf16_rne(x - p[0] - p[1]);
}

/* The epilogue of an element r of row i of D (cuBLASLt's: the bias, then
 * the activation). */
static float epilogue(const Gemm &g, const char *bias, size_t i, float r)
{
    if (bias)
        r += load(g.ct, bias, i);
    switch (g.act) {
    case ACT_RELU:
        /* "max(x, 0)"; NaN gives 0, as reported of cuBLASLt */
        return r > 0.0f ? r : 0.0f;
    case ACT_GELU:
        return 0.5f * r * (1.0f + tanhf(0.7978845608028654f * (r + 0.044715f * r * r * r)));
    case ACT_NONE:
        break;
    }
    return r;
}

/* D = act(alpha op(A) op(B) + beta C + bias), each element's sum over l in
 * ascending order; op(A) is unpacked as columns (k x m) so that the
 * innermost loop runs along a column of C. */
void run(const Gemm &g)
{
    size_t m = (size_t)g.m, n = (size_t)g.n, k = (size_t)g.k;
    std::vector<float> acol(k * m), bmat(k * n), acc(m);
    std::vector<float> a3, b3;
    for (int q = 0; q < g.batch; q++) {
        const char *a = (const char *)g.a + (size_t)q * g.sa * elem_size(g.at);
        const char *b = (const char *)g.b + (size_t)q * g.sb * elem_size(g.bt);
        const char *c = (const char *)g.c + (size_t)q * g.sc * elem_size(g.ct);
        char *d = (char *)g.d + (size_t)q * g.sd * elem_size(g.ct);
        const char *bias = g.bias ? (const char *)g.bias + (size_t)q * g.sbias * elem_size(g.ct)
                                  : nullptr;
        for (size_t l = 0; l < k; l++)
            for (size_t i = 0; i < m; i++)      /* op(A)[i][l] */
                acol[l * m + i] = round_to(g.arith, load(g.at, a, g.ta ? i * g.lda + l
                                                                        : l * g.lda + i));
        for (size_t j = 0; j < n; j++)
            for (size_t l = 0; l < k; l++)      /* op(B)[l][j] */
                bmat[j * k + l] = round_to(g.arith, load(g.bt, b, g.tb ? l * g.ldb + j
                                                                        : j * g.ldb + l));
        if (g.arith == BF16X9) {
            a3.resize(3 * k * m);
            b3.resize(3 * k * n);
            for (size_t e = 0; e < k * m; e++)
                split3(acol[e], &a3[3 * e]);
            for (size_t e = 0; e < k * n; e++)
                split3(bmat[e], &b3[3 * e]);
        }
        for (size_t j = 0; j < n; j++) {
            std::fill(acc.begin(), acc.end(), 0.0f);
            if (g.arith == BF16X9) {
                for (size_t l = 0; l < k; l++)
                    for (size_t i = 0; i < m; i++)
                        for (int u = 0; u < 3; u++)
                            for (int v = 0; v < 3; v++)
                                acc[i] += a3[3 * (l * m + i) + u] * b3[3 * (j * k + l) + v];
            } else {
                for (size_t l = 0; l < k; l++) {
                    const float bl = bmat[j * k + l], *ac = &acol[l * m];
                    float *out = acc.data();
                    for (size_t i = 0; i < m; i++)
                        out[i] += ac[i] * bl;
                }
            }
            for (size_t i = 0; i < m; i++) {
                float r = g.alpha * acc[i];
                if (g.beta != 0.0f)
                    r += g.beta * load(g.ct, c, j * (size_t)g.ldc + i);
                store(g.ct, d, j * (size_t)g.ldd + i, epilogue(g, bias, i, r));
            }
        }
    }
}

/* The extent in elements of a stored rows x cols column-major matrix. */
size_t extent(int rows, int cols, int ld)
{
    return rows == 0 || cols == 0 ? 0 : (size_t)(cols - 1) * (size_t)ld + (size_t)rows;
}

bool operand_ok(const char *call, const char *name, const void *p, cudaDataType t, int rows,
                int cols, int ld, long long stride, int batch)
{
    size_t n = extent(rows, cols, ld), es = elem_size(t);
    if (n == 0 || batch == 0)
        return true;
    if ((uintptr_t)p % es) {
        hc::misuse(call, "%s (%p) is not aligned to its %zu-byte elements", name, p, es);
        return false;
    }
    for (int q = 0; q < batch; q++) {
        const char *base = (const char *)p + (ptrdiff_t)(q * stride * (long long)es);
        if (!hc::device_range(base, n * es)) {
            hc::misuse(call, "%s%s%s: %zu elements at %p (%d x %d, ld %d) are not inside one "
                       "cudaMalloc allocation", name, batch > 1 ? " of batch " : "",
                       batch > 1 ? std::to_string(q).c_str() : "", n, (const void *)base, rows,
                       cols, ld);
            return false;
        }
    }
    return true;
}

} /* namespace blas */
} /* namespace hc */

using namespace hc::blas;

namespace {

/* What both calls check before their operands, and the Gemm they run
 * (operands, strides and batch left to the caller); SUCCESS to go on. */
cublasStatus_t gemm_setup(const char *call, cublasHandle_t h, cublasOperation_t transa,
                          cublasOperation_t transb, int m, int n, int k, const void *alpha,
                          cudaDataType at, int lda, cudaDataType bt, int ldb,
                          const void *beta, cudaDataType ct, int ldc, int batch,
                          cublasComputeType_t compute, cublasGemmAlgo_t algo, Gemm &g)
{
    if (!handle_ok(call, h))
        return CUBLAS_STATUS_NOT_INITIALIZED;
    auto op_ok = [](cublasOperation_t o) {
        return o == CUBLAS_OP_N || o == CUBLAS_OP_T || o == CUBLAS_OP_C;
    };
    bool ta = transa != CUBLAS_OP_N, tb = transb != CUBLAS_OP_N;
    int ar = ta ? k : m, br = tb ? n : k;
    if (m < 0 || n < 0 || k < 0 || batch < 0 || !op_ok(transa) || !op_ok(transb) ||
        lda < std::max(1, ar) || ldb < std::max(1, br) || ldc < std::max(1, m) || !alpha ||
        !beta) {
        hc::count("gemm rejected: invalid value");
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    if (at != bt) {
        hc::count("gemm rejected: not supported");
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    int comb = combination(compute, at, ct);
    if (comb < 0) {
        hc::misuse(call, "compute type %d with Atype %d and Ctype %d: a row of the table the "
                   "mock does not implement", (int)compute, (int)at, (int)ct);
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    if (comb == 0) {
        hc::count("gemm rejected: not supported");
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    if (!(algo == CUBLAS_GEMM_DEFAULT || algo == CUBLAS_GEMM_DEFAULT_TENSOR_OP ||
          (algo >= CUBLAS_GEMM_ALGO0 && algo <= CUBLAS_GEMM_ALGO23) ||
          (algo >= CUBLAS_GEMM_ALGO0_TENSOR_OP && algo <= CUBLAS_GEMM_ALGO15_TENSOR_OP)))
        return CUBLAS_STATUS_INVALID_VALUE;
    /* real types: CUBLAS_OP_C is CUBLAS_OP_T */
    if (h->pmode == CUBLAS_POINTER_MODE_HOST && (hc::is_device(alpha) || hc::is_device(beta)))
        hc::misuse(call, "alpha or beta is device memory in CUBLAS_POINTER_MODE_HOST");
    if (h->pmode != CUBLAS_POINTER_MODE_HOST) {
        hc::misuse(call, "CUBLAS_POINTER_MODE_DEVICE is not implemented by the mock");
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    g = Gemm{};
    g.ta = ta;
    g.tb = tb;
    g.m = m;
    g.n = n;
    g.k = k;
    g.alpha = *(const float *)alpha;
    g.beta = *(const float *)beta;
    g.at = at;
    g.bt = bt;
    g.ct = ct;
    g.lda = lda;
    g.ldb = ldb;
    g.ldc = ldc;
    g.ldd = ldc;
    g.batch = batch;
    g.arith = arithmetic(h->math, h->emulate, compute, at);
    return CUBLAS_STATUS_SUCCESS;
}

/* The workspace's check and the count of the arithmetic, last before the
 * work is queued; SUCCESS to queue it. */
cublasStatus_t gemm_ready(cublasHandle_t h, const Gemm &g)
{
    if (h->ws && h->ws_bytes < 16 * 1024) {
        hc::count("gemm failed: workspace below 16 KiB");
        return CUBLAS_STATUS_ALLOC_FAILED;
    }
    hc::count(std::string("gemm ") + arith_name[g.arith]);
    if (g.m > 0 && g.n > 0 && g.batch > 0 && hc::is_capturing(h->stream) && !h->ws)
        hc::count("cublas captured with the default workspace pool");
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t gemm(const char *call, cublasHandle_t h, cublasOperation_t transa,
                    cublasOperation_t transb, int m, int n, int k, const void *alpha,
                    const void *A, cudaDataType at, int lda, long long sa, const void *B,
                    cudaDataType bt, int ldb, long long sb, const void *beta, void *C,
                    cudaDataType ct, int ldc, long long sc, int batch,
                    cublasComputeType_t compute, cublasGemmAlgo_t algo)
{
    Gemm g;
    cublasStatus_t st = gemm_setup(call, h, transa, transb, m, n, k, alpha, at, lda, bt, ldb,
                                   beta, ct, ldc, batch, compute, algo, g);
    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    g.a = A;
    g.b = B;
    g.c = C;
    g.d = C;
    g.sa = sa;
    g.sb = sb;
    g.sc = sc;
    g.sd = sc;
    int ar = g.ta ? k : m, ac = g.ta ? m : k, br = g.tb ? n : k, bc = g.tb ? k : n;
    if (!operand_ok(call, "A", A, at, ar, ac, lda, sa, batch) ||
        !operand_ok(call, "B", B, bt, br, bc, ldb, sb, batch) ||
        !operand_ok(call, "C", C, ct, m, n, ldc, sc, batch))
        return CUBLAS_STATUS_INVALID_VALUE;
    if (batch > 1 && m > 0 && n > 0 && (size_t)std::llabs(sc) < extent(m, n, ldc))
        hc::misuse(call, "the batches of C overlap (strideC %lld, each %zu elements): "
                   "undefined", sc, extent(m, n, ldc));
    if ((st = gemm_ready(h, g)) != CUBLAS_STATUS_SUCCESS)
        return st;
    if (m == 0 || n == 0 || batch == 0)
        return CUBLAS_STATUS_SUCCESS;
    if (hc::enqueue(h->stream, call, [g]() { run(g); }, {A, B, C, h->ws}) != cudaSuccess)
        return CUBLAS_STATUS_EXECUTION_FAILED;
    return CUBLAS_STATUS_SUCCESS;
}

/* cublasGemmBatchedEx's matrices, read from its arrays when the work runs
 * (a kernel queued before may write them): each inside one allocation and
 * aligned, the C's apart from each other; then one GEMM each. */
void run_batched(const Gemm &g, const void *const *pa, const void *const *pb,
                 void *const *pc)
{
    const char *call = "cublasGemmBatchedEx";
    int ar = g.ta ? g.k : g.m, ac = g.ta ? g.m : g.k, br = g.tb ? g.n : g.k;
    int bc = g.tb ? g.k : g.n;
    size_t span = extent(g.m, g.n, g.ldc) * elem_size(g.ct);
    std::vector<std::pair<const char *, const char *>> cs;
    for (int q = 0; q < g.batch; q++) {
        std::string a = "A[" + std::to_string(q) + "]", b = "B[" + std::to_string(q) + "]",
                    c = "C[" + std::to_string(q) + "]";
        if (!operand_ok(call, a.c_str(), pa[q], g.at, ar, ac, g.lda, 0, 1) ||
            !operand_ok(call, b.c_str(), pb[q], g.bt, br, bc, g.ldb, 0, 1) ||
            !operand_ok(call, c.c_str(), pc[q], g.ct, g.m, g.n, g.ldc, 0, 1))
            return;
        cs.emplace_back((const char *)pc[q], (const char *)pc[q] + span);
    }
    std::sort(cs.begin(), cs.end());
    for (size_t q = 1; q < cs.size(); q++)
        if (cs[q].first < cs[q - 1].second) {
            hc::misuse(call, "two matrices of C overlap (%p and %p, each %zu bytes): "
                       "undefined", (const void *)cs[q - 1].first, (const void *)cs[q].first,
                       span);
            return;
        }
    for (int q = 0; q < g.batch; q++) {
        Gemm one = g;
        one.a = pa[q];
        one.b = pb[q];
        one.c = one.d = pc[q];
        one.batch = 1;
        run(one);
    }
}

} /* namespace */

/* The arrays are device memory, read when the work runs. */
cublasStatus_t cublasGemmBatchedEx(cublasHandle_t h, cublasOperation_t transa,
                                   cublasOperation_t transb, int m, int n, int k,
                                   const void *alpha, const void *const Aarray[],
                                   cudaDataType at, int lda, const void *const Barray[],
                                   cudaDataType bt, int ldb, const void *beta,
                                   void *const Carray[], cudaDataType ct, int ldc, int batch,
                                   cublasComputeType_t compute, cublasGemmAlgo_t algo)
{
    const char *call = "cublasGemmBatchedEx";
    Gemm g;
    cublasStatus_t st = gemm_setup(call, h, transa, transb, m, n, k, alpha, at, lda, bt, ldb,
                                   beta, ct, ldc, batch, compute, algo, g);
    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    size_t bytes = (size_t)batch * sizeof(void *);
    if (batch > 0 && (!hc::device_range(Aarray, bytes) || !hc::device_range(Barray, bytes) ||
                      !hc::device_range(Carray, bytes))) {
        hc::misuse(call, "an array of %d pointers is not inside one cudaMalloc allocation",
                   batch);
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    if ((st = gemm_ready(h, g)) != CUBLAS_STATUS_SUCCESS)
        return st;
    if (m == 0 || n == 0 || batch == 0)
        return CUBLAS_STATUS_SUCCESS;
    if (hc::enqueue(h->stream, call,
                    [g, Aarray, Barray, Carray]() { run_batched(g, Aarray, Barray, Carray); },
                    {Aarray, Barray, Carray, h->ws}) != cudaSuccess)
        return CUBLAS_STATUS_EXECUTION_FAILED;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasCreate_v2(cublasHandle_t *h)
{
    if (!h)
        return CUBLAS_STATUS_INVALID_VALUE;
    cublasContext *c = new cublasContext{nullptr, CUBLAS_DEFAULT_MATH, CUBLAS_POINTER_MODE_HOST,
                                         hc::env_flag("CUBLAS_EMULATE_SINGLE_PRECISION"),
                                         nullptr, 0};
    handles.insert(c);
    hc::live_blas++;
    hc::count("cublasCreate");
    *h = c;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t h)
{
    if (!handle_ok("cublasDestroy", h))
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (hc::capture_conflict("cublasDestroy", "an implicit cudaDeviceSynchronize"))
        return CUBLAS_STATUS_INTERNAL_ERROR;
    hc::drain_all();        /* "will implicitly call cudaDeviceSynchronize()" */
    handles.erase(h);
    delete h;
    hc::live_blas--;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream_v2(cublasHandle_t h, cudaStream_t s)
{
    if (!handle_ok("cublasSetStream", h))
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!hc::stream_ok("cublasSetStream", s))
        return CUBLAS_STATUS_INVALID_VALUE;
    h->stream = s;
    /* "unconditionally resets the cuBLAS library workspace back to the
     * default workspace pool" */
    h->ws = nullptr;
    h->ws_bytes = 0;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t h, void *ws, size_t bytes)
{
    if (!handle_ok("cublasSetWorkspace", h))
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if ((uintptr_t)ws % 256)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (ws && !hc::device_range(ws, bytes)) {
        hc::misuse("cublasSetWorkspace", "%zu bytes at %p are not inside one cudaMalloc "
                   "allocation", bytes, ws);
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    h->ws = ws;
    h->ws_bytes = ws ? bytes : 0;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetStream_v2(cublasHandle_t h, cudaStream_t *s)
{
    if (!handle_ok("cublasGetStream", h))
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!s)
        return CUBLAS_STATUS_INVALID_VALUE;
    *s = h->stream;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t mode)
{
    if (!handle_ok("cublasSetMathMode", h))
        return CUBLAS_STATUS_NOT_INITIALIZED;
    unsigned base = (unsigned)mode & 0xf, flags = (unsigned)mode & ~0xfu;
    if (base > CUBLAS_FP64_EMULATED_FIXEDPOINT_MATH ||
        (flags & ~(unsigned)CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION))
        return CUBLAS_STATUS_INVALID_VALUE;
    h->math = mode;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetMathMode(cublasHandle_t h, cublasMath_t *mode)
{
    if (!handle_ok("cublasGetMathMode", h))
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!mode)
        return CUBLAS_STATUS_INVALID_VALUE;
    *mode = h->math;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetPointerMode_v2(cublasHandle_t h, cublasPointerMode_t mode)
{
    if (!handle_ok("cublasSetPointerMode", h))
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (mode != CUBLAS_POINTER_MODE_HOST && mode != CUBLAS_POINTER_MODE_DEVICE)
        return CUBLAS_STATUS_INVALID_VALUE;
    h->pmode = mode;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetPointerMode_v2(cublasHandle_t h, cublasPointerMode_t *mode)
{
    if (!handle_ok("cublasGetPointerMode", h))
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!mode)
        return CUBLAS_STATUS_INVALID_VALUE;
    *mode = h->pmode;
    return CUBLAS_STATUS_SUCCESS;
}

const char *cublasGetStatusName(cublasStatus_t s)
{
    switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
    }
    return "unknown cuBLAS status";
}

const char *cublasGetStatusString(cublasStatus_t s)
{
    return cublasGetStatusName(s);
}

cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t transa, cublasOperation_t transb,
                            int m, int n, int k, const void *alpha, const void *A,
                            cudaDataType at, int lda, const void *B, cudaDataType bt, int ldb,
                            const void *beta, void *C, cudaDataType ct, int ldc,
                            cublasComputeType_t compute, cublasGemmAlgo_t algo)
{
    return gemm("cublasGemmEx", h, transa, transb, m, n, k, alpha, A, at, lda, 0, B, bt, ldb,
                0, beta, C, ct, ldc, 0, 1, compute, algo);
}

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t h, cublasOperation_t transa,
                                          cublasOperation_t transb, int m, int n, int k,
                                          const void *alpha, const void *A, cudaDataType at,
                                          int lda, long long sa, const void *B,
                                          cudaDataType bt, int ldb, long long sb,
                                          const void *beta, void *C, cudaDataType ct, int ldc,
                                          long long sc, int batch, cublasComputeType_t compute,
                                          cublasGemmAlgo_t algo)
{
    return gemm("cublasGemmStridedBatchedEx", h, transa, transb, m, n, k, alpha, A, at, lda, sa,
                B, bt, ldb, sb, beta, C, ct, ldc, sc, batch, compute, algo);
}
