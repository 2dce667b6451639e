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

/* The alpha and beta of every call. */
RT_API const float ein_one = 1.0f, ein_zero = 0.0f;
