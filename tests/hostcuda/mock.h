/* mock.h - what the mock libraries share (cudart.cpp, cublas.cpp,
 * cublaslt.cpp, cudnn.cpp): the record of device memory, the stream
 * queues, reports and counts, and cuBLAS's GEMM reference.  Not for the
 * programs: they include hostcuda.h. */
#ifndef HC_MOCK_H
#define HC_MOCK_H

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace hc {

/* A use of an API that NVIDIA's documentation does not allow: printed as
 * "hostcuda: error: CALL: message", counted, and the program's exit status
 * becomes 97 (the call itself returns the documented error code, so the
 * caller's error path runs too). */
void misuse(const char *call, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* What the mock did that a reader of the log wants to know. */
void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* One more of KEY in the exit report ("hostcuda: count: KEY N"). */
void count(const std::string &key, long n = 1);

/* Environment: set and not "0"; a number (with a K, M or G suffix). */
bool env_flag(const char *name);
long long env_bytes(const char *name, long long dflt);

/* Device memory: cudaMalloc's allocations. */
struct Alloc {
    char *base;
    size_t size;
    unsigned long id;
};
const Alloc *find_alloc(const void *p);     /* the one holding byte p, or null */
bool is_device(const void *p);
/* [p, p + n) inside one allocation? */
bool device_range(const void *p, size_t n);

/* The streams.  Work is queued and runs only when the host must see it
 * (cudaStreamSynchronize, a blocking copy, an event waited for, ...), and
 * then only what that needs: work the API does not order is run in the
 * order least favourable to a caller who forgot to order it. */
using Fn = std::function<void()>;
bool stream_ok(const char *call, cudaStream_t s);
/* `uses`: the device pointers the work reads or writes (cudaFree of their
 * allocations while it is queued is reported). */
cudaError_t enqueue(cudaStream_t s, const char *what, Fn fn, std::vector<const void *> uses);
/* Is s capturing (its work recorded into a graph, cudaStreamBeginCapture)? */
bool is_capturing(cudaStream_t s);
/* A call that would wait for a capturing stream (cublasDestroy's implicit
 * cudaDeviceSynchronize): reported and the captures invalidated; true if
 * one is in progress. */
bool capture_conflict(const char *call, const char *why);
void drain_all();                           /* what cudaDeviceSynchronize does */
void set_last_error(cudaError_t e);

/* Live objects of the other mocks, for the exit report. */
extern long live_blas, live_dnn, live_desc, live_lt, live_lt_desc;

/* The GEMM reference of cublas.cpp, which cublaslt.cpp shares. */
namespace blas {
/* The arithmetic of a compute type: operands rounded to TF32, half or
 * bfloat16, or split into three bfloat16 (BF16x9 emulation). */
enum Arith { EXACT, TF32, HALF, BF16, BF16X9 };
extern const char *const arith_name[];      /* "fp32", "tf32", ... */
enum Act { ACT_NONE, ACT_RELU, ACT_GELU };  /* cuBLASLt's epilogue activations */

/* D = act(alpha op(A) op(B) + beta C + bias) over a strided batch, column
 * major; C is not read when beta is 0; the bias (null: none) is one value
 * of C's type per row of D. */
struct Gemm {
    bool ta, tb;
    int m, n, k;
    float alpha, beta;
    const void *a, *b, *c;
    void *d;
    cudaDataType at, bt, ct;        /* D's type is C's */
    int lda, ldb, ldc, ldd;
    long long sa, sb, sc, sd;
    int batch;
    Arith arith;
    const void *bias;
    long long sbias;
    Act act;
};
void run(const Gemm &g);
size_t elem_size(cudaDataType t);
/* Is (compute, A/B, C) a row of cublasGemmEx's table?  1 yes, 0 no, -1 a
 * row the mock does not implement. */
int combination(cublasComputeType_t ct, cudaDataType ab, cudaDataType c);
Arith arithmetic(cublasMath_t math, bool emulate, cublasComputeType_t ct, cudaDataType ab);
/* The extent in elements of a stored rows x cols column-major matrix. */
size_t extent(int rows, int cols, int ld);
/* The operand (every batch of it) inside one allocation and aligned to its
 * element, else reported. */
bool operand_ok(const char *call, const char *name, const void *p, cudaDataType t, int rows,
                int cols, int ld, long long stride, int batch);
} /* namespace blas */

} /* namespace hc */

#endif /* HC_MOCK_H */
