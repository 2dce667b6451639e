/* cublaslt.cu - the GEMMs of a generated program whose epilogue cuBLASLt
 * applies (emit/lib.c, derive/pricing/libs.c: cost_lt_epilogue): one
 * cublasLtMatmul computes D = act(alpha op(A) op(B) + beta C + bias).
 * Per GEMM a matmul descriptor, four matrix layouts and the heuristics'
 * first algorithm, made when the context is created and kept; the
 * algorithm is asked for operands aligned to 16 bytes and a workspace of
 * at most the context's cuBLAS workspace (cublas.cu), which it then runs
 * in, so that a CUDA graph captures it without an allocation.  Where
 * cuBLASLt gives no algorithm (or cublasLtCreate fails) the GEMM runs as
 * cublasGemmEx followed by the epilogue's pass, with a note, and so does
 * a run whose buffers are below 16-byte alignment.  Pasted after
 * cublas.cu; the generated file describes its GEMMs in a table ein_lts[]
 * of ein_lt_spec (cublaslt_types.h) and calls ein_lt_create,
 * ein_lt_run and ein_lt_destroy. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cublasLt.h>
#include "model.h" /* EMBED-SKIP */
#include "cublas.cu" /* EMBED-SKIP */

/* cuBLASLt calls go through EIN_LT: a failure returns MODEL_ECUDA with the
   call and cuBLASLt's message in ctx->err. */
#define EIN_LT(call)                                                       \
    do {                                                                   \
        cublasStatus_t ein_l_ = (call);                                    \
        if (ein_l_ != CUBLAS_STATUS_SUCCESS)                               \
            return ein_fail(ctx, MODEL_ECUDA, "%s failed: %s", #call,         \
                            cublasLtGetStatusString(ein_l_));              \
    } while (0)

/* The alignment, in bytes, the algorithms are asked for and a run checks
   its buffers against. */
#define EIN_LT_ALIGN 16

/* One matrix layout: column-major rows x cols, its batch. */
RT_API int ein_lt_layout(model_ctx *ctx, cublasLtMatrixLayout_t *l, int64_t rows,
                         int64_t cols, int64_t ld, int batch, int64_t stride)
{
    EIN_LT(cublasLtMatrixLayoutCreate(l, CUDA_R_32F, (uint64_t)rows, (uint64_t)cols, ld));
    if (batch > 1) {
        EIN_LT(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                &batch, sizeof batch));
        EIN_LT(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                &stride, sizeof stride));
    }
    return 0;
}

/* Everything lt made, destroyed; lt as new.  The context is going or the
   GEMM falls back: a failure has no message (MODEL_ECUDA). */
RT_API int ein_lt_drop(ein_lt *lt)
{
    int rc = MODEL_OK;
    cublasLtMatrixLayout_t l[4] = {lt->a, lt->b, lt->c, lt->d};
    for (int i = 0; i < 4; i++)
        if (l[i] && cublasLtMatrixLayoutDestroy(l[i]) != CUBLAS_STATUS_SUCCESS)
            rc = MODEL_ECUDA;
    if (lt->desc && cublasLtMatmulDescDestroy(lt->desc) != CUBLAS_STATUS_SUCCESS)
        rc = MODEL_ECUDA;
    memset(lt, 0, sizeof *lt);
    return rc;
}

/* The heuristics' first algorithm for operands aligned to EIN_LT_ALIGN
   bytes within the workspace the context gives (the preference is made
   and destroyed here). */
RT_API int ein_lt_algo(model_ctx *ctx, ein_lt *lt)
{
    cublasLtMatmulPreference_t pref;
    cublasLtMatmulHeuristicResult_t res;
    uint64_t ws = EIN_CUBLAS_WORKSPACE;
    uint32_t align = EIN_LT_ALIGN;
    int n = 0;
    cublasStatus_t s;
    memset(&res, 0, sizeof res);
    EIN_LT(cublasLtMatmulPreferenceCreate(&pref));
    s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                             &ws, sizeof ws);
    static const cublasLtMatmulPreferenceAttributes_t aligns[4] = {
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
    for (int i = 0; i < 4 && s == CUBLAS_STATUS_SUCCESS; i++)
        s = cublasLtMatmulPreferenceSetAttribute(pref, aligns[i], &align, sizeof align);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulAlgoGetHeuristic(ctx->lt, lt->desc, lt->a, lt->b, lt->c, lt->d, pref,
                                           1, &res, &n);
    if (cublasLtMatmulPreferenceDestroy(pref) != CUBLAS_STATUS_SUCCESS &&
        s == CUBLAS_STATUS_SUCCESS)
        return ein_fail(ctx, MODEL_ECUDA, "cublasLtMatmulPreferenceDestroy failed");
    if (s != CUBLAS_STATUS_SUCCESS || n < 1 || res.state != CUBLAS_STATUS_SUCCESS)
        return ein_fail(ctx, MODEL_ECUDA, "cuBLASLt has no algorithm for the GEMM computing "
                        "'%s' (%s)", lt->sp->name,
                        cublasLtGetStatusString(s != CUBLAS_STATUS_SUCCESS ? s : res.state));
    lt->algo = res.algo;
    lt->algo_ok = 1;
    return 0;
}

/* The descriptors and the algorithm of the GEMM sp.  The bias pointer the
   heuristics see (they read its alignment, not its elements) is one
   EIN_LT_ALIGN bytes into the bias's own buffer, 16-aligned and no more,
   as a run's may be. */
RT_API int ein_lt_setup(model_ctx *ctx, ein_lt *lt, const ein_lt_spec *sp)
{
    int32_t ta = sp->transa, tb = sp->transb;
    uint32_t epi = sp->epilogue;
    int rc;
    lt->sp = sp;
    EIN_LT(cublasLtMatmulDescCreate(&lt->desc, sp->compute, CUDA_R_32F));
    EIN_LT(cublasLtMatmulDescSetAttribute(lt->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    EIN_LT(cublasLtMatmulDescSetAttribute(lt->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    EIN_LT(cublasLtMatmulDescSetAttribute(lt->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi,
                                          sizeof epi));
    if (sp->bias >= 0) {
        const void *probe = (const char *)ctx->buf[sp->bias] + EIN_LT_ALIGN;
        EIN_LT(cublasLtMatmulDescSetAttribute(lt->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                              &probe, sizeof probe));
    }
    int na = sp->transa == CUBLAS_OP_N;
    int nb = sp->transb == CUBLAS_OP_N;
    if ((rc = ein_lt_layout(ctx, &lt->a, na ? sp->m : sp->k, na ? sp->k : sp->m, sp->lda,
                            sp->batch, sp->stride_a)) != 0 ||
        (rc = ein_lt_layout(ctx, &lt->b, nb ? sp->k : sp->n, nb ? sp->n : sp->k, sp->ldb,
                            sp->batch, sp->stride_b)) != 0 ||
        (rc = ein_lt_layout(ctx, &lt->c, sp->m, sp->n, sp->ldc, sp->batch, sp->stride_c)) != 0 ||
        (rc = ein_lt_layout(ctx, &lt->d, sp->m, sp->n, sp->ldc, sp->batch, sp->stride_c)) != 0)
        return rc;
    return ein_lt_algo(ctx, lt);
}

/* The handle and the n GEMMs of spec[] (spec[i] in ctx->lts[i]), made by
   model_create.  One cuBLASLt gives no algorithm for, and every one when
   cublasLtCreate fails, runs as cublasGemmEx and its epilogue's pass; the
   first reason is kept in ctx->note, which the --main harness prints. */
RT_API int ein_lt_create(model_ctx *ctx, const ein_lt_spec *spec, int n)
{
    cublasStatus_t s = cublasLtCreate(&ctx->lt);
    if (s != CUBLAS_STATUS_SUCCESS) {
        ctx->lt = NULL;
        if (!ctx->note[0])
            snprintf(ctx->note, sizeof ctx->note, "cublasLtCreate failed: %s; the GEMMs "
                     "with epilogues run as cublasGemmEx and a pass",
                     cublasLtGetStatusString(s));
        return MODEL_OK;
    }
    for (int i = 0; i < n; i++) {
        if (ein_lt_setup(ctx, &ctx->lts[i], &spec[i]) == 0)
            continue;
        if (!ctx->note[0])
            snprintf(ctx->note, sizeof ctx->note, "%s; it runs as cublasGemmEx and a pass",
                     ctx->err);
        ctx->err[0] = 0;
        if (ein_lt_drop(&ctx->lts[i]) != MODEL_OK)
            return ein_fail(ctx, MODEL_ECUDA, "cuBLASLt cannot destroy the descriptors of "
                            "the GEMM computing '%s'", spec[i].name);
    }
    return MODEL_OK;
}

/* The GEMM lt on the caller's stream, in the context's cuBLAS workspace:
   0 or an error code; -1 where it cannot run (no algorithm, a buffer below
   EIN_LT_ALIGN bytes of alignment), for the caller's cublasGemmEx and
   pass.  c is NULL without C (D stands in for it, beta being 0). */
RT_API int ein_lt_run(model_ctx *ctx, ein_lt *lt, const void *a, const void *b, const void *c,
                      void *d, const void *bias, cudaStream_t stream)
{
    if (!lt->algo_ok ||
        ((uintptr_t)a | (uintptr_t)b | (uintptr_t)c | (uintptr_t)d | (uintptr_t)bias) %
                EIN_LT_ALIGN != 0)
        return -1;
    const ein_lt_spec *sp = lt->sp;
    if (bias)
        EIN_LT(cublasLtMatmulDescSetAttribute(lt->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                              &bias, sizeof bias));
    EIN_LT(cublasLtMatmul(ctx->lt, lt->desc, &sp->alpha, a, lt->a, b, lt->b, &sp->beta,
                          c ? c : d, lt->c, d, lt->d, &lt->algo, ctx->blas_ws,
                          EIN_CUBLAS_WORKSPACE, stream));
    return 0;
}

/* All of it freed, by model_destroy: the context is gone by then, so a
   failure has no message. */
RT_API int ein_lt_destroy(model_ctx *ctx, int n)
{
    int rc = MODEL_OK;
    for (int i = 0; i < n; i++)
        if (ein_lt_drop(&ctx->lts[i]) != MODEL_OK)
            rc = MODEL_ECUDA;
    if (ctx->lt && cublasLtDestroy(ctx->lt) != CUBLAS_STATUS_SUCCESS)
        rc = MODEL_ECUDA;
    return rc;
}
