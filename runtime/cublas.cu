/* cublas.cu - what the cuBLAS calls of a generated program (emit/lib.c:
 * cublasGemmEx, cublasGemmStridedBatchedEx) need around them.  Pasted
 * after api_cuda.cu when the program calls cuBLAS. */
#include <cublas_v2.h>
#include "model.h" /* EMBED-SKIP */

/* cuBLAS calls go through EIN_BLAS: a failure returns MODEL_ECUDA with the
   call and cuBLAS's message in ctx->err. */
#define EIN_BLAS(call)                                                     \
    do {                                                                   \
        cublasStatus_t ein_b_ = (call);                                    \
        if (ein_b_ != CUBLAS_STATUS_SUCCESS)                               \
            return ein_fail(ctx, MODEL_ECUDA, "%s failed: %s", #call,         \
                            cublasGetStatusString(ein_b_));                \
    } while (0)

/* The workspace of the context's handle, set after every cublasSetStream
   (which resets it to cuBLAS's own pool): the cuBLAS calls of a CUDA
   graph (graph.cu) then use memory the context owns.  32 MiB is NVIDIA's
   recommendation for Hopper (4 MiB before); -DEIN_CUBLAS_WORKSPACE=BYTES
   changes it (at least 16 KiB, which cuBLAS needs not to fail). */
#ifndef EIN_CUBLAS_WORKSPACE
#define EIN_CUBLAS_WORKSPACE ((size_t)32 << 20)
#endif

/* The alpha and beta of every call. */
RT_API const float ein_one = 1.0f, ein_zero = 0.0f;
