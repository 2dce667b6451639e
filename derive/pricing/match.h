/* match.h - instantiation: matching a stage against the vendor operator
 * patterns through an iterator mapping table.  Each iterator of the stage
 * is classified by the set of operands it indexes (the output included for
 * loop iterators) and by its coefficient in each dimension; a pattern
 * matches when the classes line up and the coefficients give a legal
 * stride, dilation, padding or band.  What matches nothing is an
 * eOperator: a generated kernel.  Prefix: match_. */
#ifndef EINC_MATCH_H
#define EINC_MATCH_H

#include "../ir/ir.h"

typedef enum {
    OPK_MATMUL,                 /* C[m, n] = A[m, k] B[k, n], any transposes */
    OPK_BATCH_MATMUL,           /* the same over a batch of strided matrices */
    OPK_CONV2D,                 /* NCHW x FCRS, stride, dilation, padding, groups */
    OPK_CONV_TRANSPOSE2D,       /* NCHW x CFRS, stride, padding */
    OPK_G2BMM,                  /* banded Q K^T: s[b, i, j] = sum_d q[b,i,d] k[b, i + dil (j - w), d] */
    OPK_GBMM,                   /* banded S V:  o[b, i, d] = sum_j s[b,i,j] v[b, i + dil (j - w), d] */
    OPK_KERNEL,                 /* a generated kernel (eOperator) */
} OpKind;
const char *op_kind_name(OpKind k);   /* "matmul", ..., "kernel" as in plan-json */

/* An operand of a G2BMM or GBMM read through a strided view: column c of
 * row r of batch bb, where r is the band's row (i for q and s, i + dil (j
 * - w) for k and v: rows outside [0, m) read as zero whatever the memory
 * there holds) and c counts from 0 over the operand's last index (d of q
 * and k, j of s, d of v), is the element
 *   off + (bb / split) * stride + (bb % split) * sstride + r * ld + c
 * of the tensor.  A dense [b, m, n] operand: ld n, stride m n (0 for one
 * batch), split 1, sstride 0, off 0.  Two batch strides take the heads
 * split out of a feature dimension: bb = (batch, head), a head's rows
 * interleaved with the others'. */
typedef struct BandView {
    int64_t ld, stride, split, sstride, off;
} BandView;

/* Where the operands come from and how a library call sees them. */
typedef struct OpMatch {
    OpKind kind;
    const IrTensor *in[2];      /* the two operands (GEMM: A, B; conv: x, w) */
    /* GEMMs: C[batch][m][n] = sum_k A[batch][m][k] * B[batch][k][n] */
    int64_t m, n, k, batch;
    bool trans_a, trans_b;      /* A stored k-major / B stored n-major */
    bool out_nm;                /* the output is stored [n][m] (C transposed) */
    int64_t lda, ldb, ldc;      /* leading dimensions, in elements */
    int64_t stride_a, stride_b, stride_c;   /* between batch matrices */
    /* A batch of two levels (batch and heads, the heads split out of a
     * feature dimension): matrix bb of X starts at
     *   off_X + (bb / split) * stride_X + (bb % split) * sstride_X;
     * split 0 (or 1) for one level, and then the sstrides are 0 */
    int64_t split, sstride_a, sstride_b, sstride_c;
    int64_t off_a, off_b;       /* element offset of the first one read */
    /* convolutions: input [cn, c, h, w], filter [f, c/groups, r, s] */
    int64_t cn, c, h, w, f, r, s, stride, dilation, pad, groups;
    int64_t pad_w;              /* padding of the width when it differs from pad */
    int64_t out_pad;            /* ConvTranspose2d: extra output rows/cols (< stride) */
    /* G2BMM / GBMM: b batches of m rows, band 2*w + 1, inner size k;
     * in[0] (q, s) and in[1] (k, v) read as the views gv[0] and gv[1] */
    int64_t gb, gm, gw, gk, gdil;
    BandView gv[2];
} OpMatch;

/* The columns of operand x (0 or 1) of G2BMM or GBMM m (k, or GBMM's
 * first operand 2w + 1), or of its output (x = 2: G2BMM's 2w + 1,
 * GBMM's k), and its view were it stored dense. */
int64_t match_band_cols(const OpMatch *m, int x);
void match_band_dense(const OpMatch *m, int x, BandView *v);

/* The sizes of a matched operator as (name, value) pairs, in the order the
 * plan views print them (--emit=plan and --emit=plan-json): m n k batch
 * trans_a trans_b trans_c lda ldb ldc [split sstride_a sstride_b
 * sstride_c] for GEMMs; n c h w f r s stride
 * dilation pad groups [pad_w] [output_pad] for convolutions; b m w k
 * dilation for G2BMM/GBMM, then for each operand read as another view
 * than the dense one lda stride_a [split_a sstride_a] off_a (ldb ... for
 * the second; split and sstride where split > 1); none for kernels.
 * Returns how many. */
typedef struct OpDim {
    const char *name;
    int64_t value;
    bool is_bool;
} OpDim;
#define OP_MAX_DIMS 16
int match_dims(const OpMatch *m, OpDim *out);

/* The most iterators (loops and sums) of a stage, and dimensions of an
 * operand or of the output, that a pattern can match: no library operator
 * takes more, and match_stage answers false past them. */
#define MATCH_MAX_VARS 16
#define MATCH_MAX_DIMS 8

/* Fill *out and return true when the stage is exactly one library
 * operator over tensors (no nested stages). */
bool match_stage(const Stage *s, OpMatch *out);
/* A GEMM is C = A B or, the same memory, C^T = B^T A^T: match_stage gives
 * the first with A the product's first operand (the IR's order: kind,
 * rank, tensor id); this gives the GEMM with the operands the other way round.
 * False where s is no GEMM that way. */
bool match_gemm_swapped(const Stage *s, OpMatch *out);

/* Floating-point operations of a stage or operator (2 per multiply-add). */
double match_flops(const Stage *s);

#endif
