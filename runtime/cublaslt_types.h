/* cublaslt_types.h - the types of the cuBLASLt GEMMs of a generated
 * program (cublaslt.cu): pasted before struct model_ctx, which holds one
 * ein_lt per GEMM whose epilogue cuBLASLt applies, when the program has
 * one. */
#ifndef EINC_CUBLASLT_TYPES_H
#define EINC_CUBLASLT_TYPES_H
#include <stdint.h>
#include <cublasLt.h>

/* One GEMM as the generated file describes it (ein_lts[]): the
   column-major D = act(alpha op(A) op(B) + beta C + bias) of an m x n
   product over k, A and B as stored (leading dimensions, batch strides),
   C laid out as D, the bias (tensor `bias`, -1 for none) one f32 per row
   of D; f32 throughout. */
typedef struct ein_lt_spec {
    const char *name;           /* the tensor it computes */
    cublasOperation_t transa, transb;
    int64_t m, n, k, lda, ldb, ldc;
    int64_t stride_a, stride_b, stride_c;
    int batch;
    cublasComputeType_t compute;
    cublasLtEpilogue_t epilogue;
    int bias;                   /* tensor id of the bias, or -1 */
    float alpha, beta;
} ein_lt_spec;

/* One cuBLASLt GEMM: its descriptors and the algorithm the heuristics
   gave (made when the context is created, kept until it goes); algo_ok
   0: it runs as cublasGemmEx and the epilogue's pass instead. */
typedef struct ein_lt {
    const ein_lt_spec *sp;
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t a, b, c, d;
    cublasLtMatmulAlgo_t algo;
    int algo_ok;
} ein_lt;

#endif
