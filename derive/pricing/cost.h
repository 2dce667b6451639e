/* cost.h - the cost model: time of one operator on a named device, as
 * launch cost + max(compute, memory).  Compute is FLOPs over the peak
 * rate of the operator's arithmetic (tensor cores for GEMMs and
 * convolutions at --precision tf32/fp16/bf16) scaled by an efficiency
 * that follows the shape: output tiles, waves of tiles over the units,
 * padding of partial tiles, and a k too short to amortise a tile's
 * prologue and epilogue.  Memory is the bytes a kernel moves from DRAM
 * and from the L2 cache (partly used sectors of strided reads, operands
 * re-read per tile or per term) over the bandwidths.  A tuning database
 * (--tune-db) replaces the estimate by a measured time for every
 * operator it holds.  Prefix: cost_ (tune_ for the database). */
#ifndef EINC_COST_H
#define EINC_COST_H

#include "match.h"

/* The arithmetic of vendor operators (--precision): fp32 is plain IEEE
 * single precision (TF32 off, as EinNet's evaluation ran); tf32, fp16 and
 * bf16 let GEMMs and convolutions round their operands to that format on
 * tensor cores while keeping f32 storage and accumulation. */
typedef enum { PREC_FP32, PREC_TF32, PREC_FP16, PREC_BF16 } Precision;
#define PREC_COUNT 4
const char *cost_precision_name(Precision p);       /* "fp32", ... */
bool cost_precision_parse(const char *name, Precision *out);

typedef struct Device {
    const char *name;
    double flops;               /* fp32 peak on the FMA units, FLOP/s */
    double peak[PREC_COUNT];    /* GEMM/convolution peak per Precision (dense,
                                   tensor cores; flops where there are none) */
    double bandwidth;           /* DRAM, bytes/s */
    double launch;              /* seconds per kernel or library call */
    int units;                  /* SMs (or cores) that tiles spread over */
    double lib_eff;             /* vendor GEMM: fraction of peak, big shapes */
    double conv_eff;            /* vendor convolution: the same */
    double kernel_eff;          /* generated kernels: fraction of fp32 peak */
    double mem_eff;             /* fraction of DRAM bandwidth reached */
} Device;

/* NULL for an unknown name (h200, a100, v100, cpu are known). */
const Device *cost_device(const char *name);

/* ---- what the target's libraries take (libs.c) ---------------------------
 * The plan is made for one target: the C+CUDA file (cuBLAS, cuDNN, tiled
 * band kernels) or the C file (CBLAS).  A matched operator runs as a
 * library call only where that target's library takes it as it is; else
 * it is a generated kernel, and is priced as one. */
typedef enum { TARGET_CUDA, TARGET_C } Target;
const char *cost_target_name(Target t);             /* "cuda", "c" */

/* How an operator runs on its target. */
typedef enum {
    IMPL_KERNEL,                /* a generated kernel (either target) */
    IMPL_CUBLAS_GEMM,           /* CUDA: cublasGemmEx, cublasGemmStridedBatchedEx,
                                   cublasGemmBatchedEx (a batch of two levels) */
    IMPL_CUDNN_CONV,            /* CUDA: a cuDNN 9 graph-API convolution (forward;
                                   backward data for a transposed one), made at
                                   create time; its generated kernel runs where
                                   cuDNN has no plan for it on the GPU at hand */
    IMPL_CUDA_BAND,             /* CUDA: a tiled G2BMM/GBMM kernel (emit/band.c) */
    IMPL_CBLAS_GEMM,            /* C: cblas_sgemm, a batch as a loop */
    IMPL_CBLAS_IM2COL,          /* C: Conv2d as im2col + cblas_sgemm per image */
    IMPL_CBLAS_COL2IM,          /* C: ConvTranspose2d as cblas_sgemm + col2im */
    IMPL_CBLAS_BAND,            /* C: G2BMM/GBMM as blocks of dense cblas_sgemm */
    IMPL_DNNL_CONV,             /* C with oneDNN: Conv2d as a oneDNN convolution,
                                   ConvTranspose2d as a deconvolution (runtime/dnnl.c) */
    IMPL_DNNL_MATMUL,           /* C with oneDNN: a GEMM as oneDNN's matmul primitive */
} OpImpl;
/* A short name ("kernel", "cublas", "cudnn", "band", "cblas", "im2col",
 * "col2im", "cblas-band", "dnnl": --emit=plan, plan-json) and what the generated
 * file calls it in its comments ("generated kernel", "cublasGemmEx", ...;
 * `batched`: a GEMM over a batch of matrices). */
const char *cost_impl_name(OpImpl i);
const char *cost_impl_call(OpImpl i, const OpMatch *m);

/* C target: a banded product runs as dense products of this many rows of
 * one residue class against the key rows their band covers. */
#define BAND_C_ROWS 64

/* CUDA target: the tiles of the band kernels (runtime/band.cu), chosen
 * from the operator's sizes alone by cost_band_tiles (libs.c), so that
 * emit/band.c writes the kernel the model prices.  The dilation is split
 * off (rows dil*i' + r of one residue meet only key rows of that
 * residue: a dilation-1 band in i'); a block computes ti = 8 ty rows i'
 * of one residue by tc = 4 pj tx columns (band entries of G2BMM, features
 * of GBMM), each of tx * ty threads 8 rows by pj groups of 4 columns,
 * staging the summed index (d of G2BMM, j of GBMM) in chunks; the block
 * has tx * ty threads rounded up to a warp (the others only stage).
 * Blocks are numbered (batch, residue, row tile, column tile). */
typedef struct BandTiles {
    bool g2;                    /* G2BMM, else GBMM */
    int64_t cols, inner;        /* columns (2w+1, k) and summed extent (k, 2w+1) */
    int64_t rows;               /* rows i' of residue 0: ceil(m / dil) */
    int tx, ty, pj;             /* threads across columns and rows; column groups */
    int threads;                /* of a block: tx * ty rounded up to 32 */
    int ti, tc;                 /* rows and columns of a block */
    int chunk;                  /* of the summed index, staged at once */
    int64_t nit, ncol;          /* row tiles of a residue, column tiles */
    int64_t blocks;             /* batch x dil x nit x ncol; INT64_MAX past it */
    int smem;                   /* static shared memory of a block, bytes */
} BandTiles;
#define BAND_MAX_THREADS 256
#define BAND_MAX_SMEM 49152     /* static shared memory a block may have */
void cost_band_tiles(const OpMatch *m, BandTiles *t);

typedef struct CostModel CostModel;

/* oneDNN's post-ops (libs.c): an epilogue that a convolution applies
 * before its store, as a chain over the operator's value v: element-wise
 * functions (alpha, beta as oneDNN's eltwise takes them: LINEAR is
 * alpha v + beta, CLIP clamps to [alpha, beta], infinite for no bound)
 * and binary operations with a tensor read at the element (src1 seen
 * through a view over the stage's loops: dims 1 where it broadcasts,
 * strides and offset in elements). */
typedef enum {
    POST_NONE, POST_RELU, POST_TANH, POST_LOGISTIC, POST_EXP, POST_ABS, POST_SQRT,
    POST_LINEAR, POST_CLIP, POST_GELU,                  /* eltwise (GELU: erf form) */
    POST_ADD, POST_SUB, POST_MUL, POST_DIV, POST_MAX, POST_MIN      /* binary */
} PostAlg;

#define LIB_POST_MAXD 6         /* runtime/dnnl_types.h: EIN_DNNL_MAXD */
#define LIB_POST_MAX 8          /* runtime/dnnl_types.h: EIN_DNNL_MAXPOST */

typedef struct LibPost {
    bool binary;
    PostAlg alg;
    double alpha, beta;         /* eltwise */
    const IrTensor *src1;       /* binary */
    int rank;
    int64_t dims[LIB_POST_MAXD], strides[LIB_POST_MAXD], offset;
} LibPost;

/* The epilogue `value` over the loop variables of the stage `s` (reads
 * of `self` at exactly those are the operator's value) as at most `max`
 * post-ops into post[]: their number, or -1 where it is no such chain (a
 * value read twice, a read of self elsewhere, an operand that is not a
 * constant or a plain read, a function oneDNN has not). */
int cost_post_ops(const Stage *s, const IrTensor *self, const IExpr *value, LibPost *post,
                  int max);

/* cuDNN's pointwise operations (libs.c): a chain of post-ops as the
 * pointwise nodes of a cuDNN graph after the convolution, each y =
 * mode(x) or y = mode(x, b) with x the node before's output (the
 * convolution's for the first), in the modes' documented arithmetic
 * (cudnnPointwiseMode_t): a binary one's b is a tensor (the post-op
 * post[i], read with broadcast) or a scalar; linear steps are a MUL and
 * an ADD of scalars, a clip a MAX and a MIN of scalars.  GELU is cuDNN's
 * GELU_FWD, the erf form (GELU_APPROX_TANH_FWD is the tanh one). */
typedef enum {
    PW_ADD, PW_SUB, PW_MUL, PW_DIV, PW_MAX, PW_MIN,             /* x OP b */
    PW_RELU, PW_TANH, PW_SIGMOID, PW_EXP, PW_ABS, PW_SQRT, PW_GELU,
} PwMode;

#define LIB_PW_MAX 16           /* runtime/cudnn_types.h: EIN_CUDNN_MAXPW */

typedef struct LibPw {
    PwMode mode;
    int post;                   /* binary: b is post[post]'s tensor; -1: `value` */
    double value;
} LibPw;

/* post[0..npost) as at most `max` pointwise nodes into pw[]: their number,
 * or -1 where cuDNN has no such chain (a leaky ReLU, too many nodes). */
int cost_pointwise(const LibPost *post, int npost, LibPw *pw, int max);
/* "add", "relu", ... (--emit=plan) */
const char *cost_pw_name(PwMode m);

/* cuBLASLt's epilogue (libs.c): what cublasLtMatmul applies to a GEMM's
 * product before its store, as NVIDIA documents it,
 *     D = act(alpha * op(A) op(B) + beta * C + bias)
 * with C laid out as D (a different buffer), bias a vector along the rows
 * of the column-major D (the row-major output's innermost dims: one value
 * per column of the row-major product), and act none, ReLU (max(x, 0))
 * or GELU in its tanh form (cuBLASLt's; an erf `gelu()` is not it). */
typedef enum { LT_ACT_NONE, LT_ACT_RELU, LT_ACT_GELU } LtAct;

typedef struct LibLt {
    bool fused;                 /* cuBLASLt applies the epilogue */
    bool scale;                 /* not fused, and the epilogue is alpha * AB:
                                   the alpha of the cuBLAS call (a GEMM
                                   cuBLASLt cannot take: a two-level batch) */
    double alpha, beta;         /* beta 0: no C */
    const IrTensor *c;          /* C, from element c_offset (NULL: none) */
    int64_t c_offset;
    const IrTensor *bias;       /* the bias, from element bias_offset (NULL: none) */
    int64_t bias_offset;
    LtAct act;
} LibLt;

/* The epilogue `value` over the loop variables of `s` (reads of `self`
 * at exactly those are the product's value), after the GEMM `m` whose
 * loops are its output's whole shape, as cuBLASLt's epilogue: true and
 * *lt filled where value is act(u) with u a sum of alpha * self, at most
 * one bias and at most one term beta * C (f32 tensors read as above),
 * and act one of LtAct's, recognised by its values (a grid of points in
 * double precision: relu(x), max(x, 0) and the tanh form written any way
 * agree to 1e-6 relative); false otherwise.  What it builds to decide is
 * released from cx before it returns. */
bool cost_lt_epilogue(IrCtx *cx, const Stage *s, const IrTensor *self, const IExpr *value,
                      const OpMatch *m, LibLt *lt);


/* The implementation of the stage `s`, matched as `m` (NULL or
 * OPK_KERNEL: none), computing the tensor `out` (its element type and
 * shape; `s` need not be out->stage) on cm's target: a library call where
 * the target's library takes the operator as it is (its sizes fit an
 * int, its element types are the same, the stage writes every element of
 * `out`, and the target's own limits: f32 only on C, and one group
 * without oneDNN; the band kernel's shapes on CUDA), IMPL_KERNEL
 * otherwise.  On C with cm->dnnl a convolution oneDNN takes is
 * IMPL_DNNL_CONV where that is priced no dearer than im2col or col2im
 * around OpenBLAS (or where those do not take it), and an f32 GEMM at
 * fp32 precision of the shapes and layouts oneDNN's matmul runs fast
 * (libs.c, dnnl_gemm_ok) IMPL_DNNL_MATMUL: one core of an AMD EPYC ran BERT's and GPT-2's
 * linear layers 4-11% faster on oneDNN 2.6.3 than on OpenBLAS 0.3.21
 * (dnnl_sgemm against cblas_sgemm), and the matmul applies their
 * epilogues as post-ops (libs.c says where OpenBLAS stays faster). */
OpImpl cost_impl(const CostModel *cm, const IrTensor *out, const Stage *s, const OpMatch *m);

/* Does the band operator m, run as impl (IMPL_CUDA_BAND or
 * IMPL_CBLAS_BAND), take v as its output's view inside the tensor `of`
 * (plan.h, PlanBuf): strides not negative, every element inside `of`,
 * and for runtime/cblas.c a leading dimension (ld times the dilation)
 * that is an int and at least a row's length. */
bool cost_band_out_ok(const OpMatch *m, OpImpl impl, const BandView *v, const IrTensor *of);

/* The same for a GEMM m run as impl (IMPL_CUBLAS_GEMM or
 * IMPL_CBLAS_GEMM) whose ldc and stride_c place its output inside `of`:
 * a leading dimension that is an int and at least a row's length, every
 * element inside `of`, and on cuBLAS batches whose spans (first element
 * to last) do not overlap, which cuBLAS leaves undefined. */
bool cost_gemm_out_ok(const OpMatch *m, OpImpl impl, const IrTensor *of);

/* A short reduction: a sum, max or min with no guards of at most
 * COST_SHORT_TERMS terms (a pooling window, a small filter), which a
 * generated kernel writes out term by term, max and min without a
 * branch (emit/kernel.c).  Its number of terms, else 0. */
#define COST_SHORT_TERMS 16
int64_t cost_short_terms(const Stage *s);

/* The stages s[0..n-1] (generated kernels) run one after the other on
 * each of `rows` rows, the row in the cache (a fused row group, plan.h):
 * one call, their arithmetic, and no faster than streaming `bytes`, what
 * the group reads from other tensors and writes.  On a GPU one launch of
 * `threads` threads per row, which share each stage's terms. */
double cost_rows(const CostModel *cm, const Stage *const *s, int n, double bytes,
                 double rows, int threads);

/* Measured operator times, by operator key (tunedb.c). */
typedef struct TuneDb TuneDb;

/* What prices an operator: the device, the arithmetic of library calls,
 * measured times (db NULL: the model only), and the target whose
 * libraries take what (cost_impl). */
struct CostModel {
    const Device *dev;
    Precision precision;
    const TuneDb *db;
    Target target;              /* whose libraries the plan calls */
    bool dnnl;                  /* C: oneDNN takes the convolutions and GEMMs (einc --dnnl) */
};

/* Estimated seconds for the stage `s`, run as the operator `m` (or as a
 * generated kernel when m is NULL or m->kind == OPK_KERNEL): the measured
 * time when cm->db holds the operator's key, the model's otherwise.
 * *measured (when not NULL) says which. */
double cost_stage(const CostModel *cm, const Stage *s, const OpMatch *m);
double cost_stage_ex(const CostModel *cm, const Stage *s, const OpMatch *m, bool *measured);
/* The same for the implementation `impl` (cost_impl) of a library call:
 * on the CPU a convolution on oneDNN is priced as oneDNN runs it, not as
 * im2col. */
double cost_stage_impl(const CostModel *cm, const Stage *s, const OpMatch *m, OpImpl impl,
                       bool *measured);
/* What the cost model counts for a oneDNN convolution m's reorder of
 * `bytes` of activations into its layout (in) or out of it: what an
 * operator saves when it takes its input from the convolution before in
 * that layout, and that one its output's (handoff.c); 0 off the cpu. */
double cost_dnnl_reorder(const CostModel *cm, const OpMatch *m, double bytes, bool in);
/* The model alone. */
double cost_model(const Device *d, Precision prec, const Stage *s, const OpMatch *m);

/* ---- operator keys and the tuning database ------------------------------
 * The key of an operator is one line of printable ASCII without leading
 * or trailing blanks that says what the operator computes, independent of
 * the names and ids of its tensors and variables, so that the same
 * operator compiled again (from any program) gets the same key:
 *   library calls:  KIND PRECISION OUT<-IN,IN NAME=VALUE...  (match_dims)
 *     e.g. "matmul fp32 f32<-f32,f32 m=49 n=4608 k=512 batch=1 ..."
 *   generated kernels: "kernel " and a canonical text of the stage, its
 *     variables named by position and its tensors by first use with
 *     their element types and shapes.
 * (A generated G2BMM/GBMM is a library call here: its sizes say it all.)
 * m NULL or OPK_KERNEL: a kernel.  Allocated in a (NULL: malloc'ed, the
 * caller frees it). */
char *cost_op_key(Arena *a, const Stage *s, const OpMatch *m, Precision prec);

/* A tuning database in memory.  The file format (documented in einc(1)):
 *   einc-tune 1
 *   device NAME
 *   US KEY          one measured operator a line: median microseconds
 *   engine N KEY    a cuDNN convolution: the engine (global index) that
 *                   measured fastest for it, which the program prefers
 * with blank lines and lines starting with '#' ignored.  Loading reports
 * every problem at its place (FILE:LINE:COL: error: ..., through diag_error)
 * and returns NULL when there was one; a device line that is not `device`
 * (when not NULL) is one.  The file is read as a source file (src_load),
 * so make dependencies (-M, -MD) name it. */
TuneDb *tune_db_load(Arena *a, const char *path, const char *device);
/* The same from text in memory (tests); `path` names it in messages. */
TuneDb *tune_db_parse(Arena *a, const char *path, const char *text, size_t len,
                      const char *device);
const char *tune_db_device(const TuneDb *db);       /* the device line */
int tune_db_count(const TuneDb *db);                /* operators held */
/* The measured seconds of `key`, or a negative number when absent. */
double tune_db_lookup(const TuneDb *db, const char *key);
/* The cuDNN engine the database chose for `key`, or -1. */
int64_t tune_db_engine(const TuneDb *db, const char *key);

#endif
