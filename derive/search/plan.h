/* plan.h - the plan: the one record of what runs.
 *
 * A plan is made for one target (cost.h: the C+CUDA file or the C file)
 * and says, for every tensor computed at run time or at load, which
 * operator computes it and how: a library call of that target with its
 * full match (match.h), a tiled band kernel, or a generated kernel; the
 * stages fused into it as prologue reads; the element-wise maps applied
 * to its value before it is stored (its epilogue); a fused group of row
 * reductions; where its result lives; and whether it runs at load.  The
 * cost model prices exactly this record (plan_price), and every view of
 * the plan (--emit=plan, --emit=plan-json, --dot) and the C and CUDA
 * writers (emit/) read it; none of them matches or decides again.
 * README.md in this folder documents the record.
 *
 * Instantiation (plan_instantiate) turns a derived expression, which may
 * hold nested stages, into pieces: an intermediate tensor of its own for
 * each nested stage (shifted so its index space starts at 0), each priced
 * as the operator the target runs it as (plan_choose).  Prefix: plan_. */
#ifndef EINC_PLAN_H
#define EINC_PLAN_H

#include "../pricing/cost.h"

/* An epilogue: element-wise maps applied to an operator's value before
 * the store (a bias, a scale, an activation, a residual add).  `value` is
 * the element stored, an expression over the loop variables of the
 * operator's stage, in which reads of `self` at exactly those variables
 * are the operator's own value at that element (self is the tensor the
 * operator would have written: an f32 tensor of the output's shape that
 * is no longer in the program), and reads of other tensors of the
 * program are affine reads as anywhere else.  It applies to every element
 * of the output (self reads as 0 outside the stage's loop ranges).
 * `absorbed` lists the tensors of the program that the epilogue replaced
 * (self first, then the maps whose statements it carries), none of which
 * is in the program any more.  value == NULL: no epilogue. */
typedef struct PlanEpilogue {
    const IExpr *value;
    const IrTensor *self;
    const IrTensor *const *absorbed;
    int nabsorbed;
} PlanEpilogue;

/* A fused group of row reductions (softmax, layer norm): several
 * generated kernels over the same rows, run as one operator that
 * computes them one after the other on each row (rows.c).  The members
 * are tensors whose first `nrow` dims index the row, each a stage whose
 * first nrow loops are those dims (a reduction over the row's elements
 * or a map of them) and which reads the members before it only at its
 * own row; they are computed in order, and ops[i] is member i's operator
 * (a generated kernel, with its prologue and epilogue).  `stored[i]`:
 * member i keeps its buffer (it is in the program, read elsewhere or an
 * output; the last always); the others live in a buffer of one row
 * inside the operator and are no longer in the program (their ids are
 * stale: read them by pointer).  The group's operator is the last
 * member's: Plan.ops of that tensor, with `rows` set and the group's
 * cost; a stored member before it has `rows` set too and costs nothing
 * (the group computes it).  On the C target the group is a function whose
 * threads share the rows, a row-local member on a thread's stack; on CUDA
 * a kernel with a block of `threads` threads per row, which share each
 * member's elements or terms, a row-local member in shared memory. */
typedef struct PlanOp PlanOp;
typedef struct PlanRowGroup {
    int nrow;
    const IrTensor *const *members;
    const bool *stored;
    int nmembers;
    const PlanOp *ops;
    int threads;                /* CUDA: threads of the block of a row (32..256); C: 1 */
} PlanRowGroup;

/* Where an operator's result lives: a buffer of its own, or (BUF_VIEW)
 * inside the buffer of `of`, another tensor of the program, which is a
 * reordering of this one that nothing else computes (outview.c).  A
 * banded matmul (IMPL_CUDA_BAND, IMPL_CBLAS_BAND) or a cuBLAS or CBLAS
 * GEMM is written through a view: element e of the tensor in row-major
 * order, as (bb, r, c) = (e / (rows cols), e / cols % rows, e % cols),
 * lands at element
 *   (bb / split) * stride + (bb % split) * sstride + r * ld + c
 * of `of` (view, match.h's BandView with off 0), or with `trans` (a
 * GEMM's only) at (bb / split) * stride + r + c * ld: a GEMM's match then
 * has ldc = ld, stride_c = stride (split 1) and out_nm flipped with
 * trans; `of`'s operator has
 * `stored_by` set.  The tensor keeps its place in the program (the
 * interpreter and the plan's meaning read it as before), but nothing
 * reads it. */
typedef enum {
    BUF_OWN,                    /* a buffer of its own (by tensor id) */
    BUF_VIEW,                   /* inside `of`'s buffer, through `view` */
} PlanBufKind;

typedef struct PlanBuf {
    PlanBufKind kind;
    const IrTensor *of;
    BandView view;
    int64_t rows, cols;
    bool trans;
    /* a GEMM's own output layout and batch strides, before the view set
     * its match's (plan_op_alone) */
    int64_t own_ldc, own_stride[3], own_split, own_sstride[3];
    bool own_out_nm;
} PlanBuf;

struct PlanOp {
    const IrTensor *out;        /* the tensor stored */
    const Stage *stage;         /* what the operator computes: for the result
                                   of a derivation its flattened expression,
                                   with prologue stages substituted into it;
                                   with an epilogue, self's value */
    OpMatch op;                 /* the match; op.kind == OPK_KERNEL exactly
                                   when impl == IMPL_KERNEL */
    OpImpl impl;                /* how the target runs it */
    /* Stages fused in as prologue reads: maps substituted into `stage`
     * (fuse.c), each a tensor no longer in the program. */
    const IrTensor *const *prologue;
    int nprologue;
    PlanEpilogue epi;
    /* A cuBLAS GEMM on CUDA whose epilogue cuBLASLt applies (lt.fused:
     * one cublasLtMatmul with the bias, scale, activation and C that
     * cost_lt_epilogue decoded from epi; set by plan_price), or, one
     * cuBLASLt cannot take (a two-level batch), whose epilogue is a scale
     * alone: the call's alpha (lt.scale, lt.alpha), no pass. */
    LibLt lt;
    const PlanRowGroup *rows;   /* NULL: not in a row group */
    PlanBuf buf;
    /* Every element of out is stored by the operator of this tensor,
     * written through its view (its buf is BUF_VIEW of out): out's own
     * operator is a copy that has no code and costs nothing.  NULL: out's
     * operator runs. */
    const IrTensor *stored_by;
    /* A oneDNN convolution whose input is the whole output of the
     * convolution of src_from, read by nothing else: the two pass it in
     * oneDNN's layout where their primitives agree (handoff.c). NULL:
     * from its buffer. */
    const IrTensor *src_from;
    bool at_load;               /* depends on weights only: runs at load */
    /* A cuDNN convolution: the engine (its global index) that the tuning
     * database measured fastest for it, which the program tries before
     * the heuristics' order; -1: none. */
    int64_t engine;
    double cost;                /* seconds, estimated (plan_price) */
    bool measured;              /* the stage's time is from the tuning database */
};

/* The pieces of one expression: intermediates first, the result last. */
typedef struct Pieces {
    VEC(PlanOp) ops;
    double cost;
} Pieces;

/* Flatten `s`, a derived form of the definition of `result`, into pieces;
 * new tensors are named "<result>@N" and get ids from *next_id.  The last
 * piece computes `result` itself: its stage is `s` with every nested stage
 * replaced by an access to its tensor.  An intermediate GEMM may store
 * its product either way round (C or C^T): where one does, the pieces are
 * made both ways and the cheaper kept, so the plan does not depend on the
 * order of a product's operands (the IR's: kind, rank, tensor id).  `out` must be empty.
 * Nothing existing is changed. */
void plan_instantiate(IrCtx *cx, const CostModel *cm, const IrTensor *result,
                      const Stage *s, int *next_id, Pieces *out);

/* The operator that computes `out` by the stage `s` (not necessarily
 * out->stage) on cm's target, with no fusion: matched (match.h), its
 * implementation chosen (cost_impl) and priced. */
PlanOp plan_choose(IrCtx *cx, const CostModel *cm, const IrTensor *out, const Stage *s);

/* Price *op as recorded: its stage as its implementation, plus its
 * epilogue (a pass over the output after a library call; fused into the
 * store of a generated kernel, into oneDNN's post-ops or cuBLASLt's
 * epilogue), plus the members of a row group.  Sets op->cost and
 * op->measured, and op->lt: on CUDA a cuBLAS GEMM's epilogue is
 * cuBLASLt's where cost_lt_epilogue takes it. */
void plan_price(IrCtx *cx, const CostModel *cm, PlanOp *op);

/* The epilogue of `op` as a kernel of its own: the Σ-free stage over the
 * loops of op->stage whose body is op->epi.value (NULL: no epilogue).
 * This is the pass a library call is followed by. */
const Stage *plan_epilogue_stage(IrCtx *cx, const PlanOp *op);

/* What op stores, as one stage over op->stage's loops: op->stage itself,
 * or, with an epilogue, the epilogue's value with its reads of self
 * replaced by op->stage's value there (a nested stage of fresh
 * variables).  This is the plan's meaning of the tensor: what an
 * interpreter evaluates to check a plan (tests/fuzz/fuzz_compile.c). */
const Stage *plan_stored_stage(IrCtx *cx, const PlanOp *op);

/* The bytes the generated code of op moves through memory, at best
 * (each tensor it reads once, what it stores): a generated kernel, a row
 * group (at its last member; 0 at a stored member before it) or a library
 * call's epilogue pass; 0 for a library call that has none (--emit=
 * plan-json's kernel_bytes). */
double plan_kernel_bytes(const PlanOp *op);

/* Does the generated file hold a generated kernel for op: a generated
 * kernel, or a cuDNN convolution's fallback. */
bool plan_has_kernel(const PlanOp *op);

/* Is op a stored member of a row group that the group's operator (that
 * of its last member) computes: no code of its own? */
bool plan_in_rows(const PlanOp *op);

/* op as it runs on its own (the tuner's program times each operator
 * apart): storing into a buffer of its own, its match's output layout
 * restored where a view set it, and a copy another operator stores
 * through a view run as the copy. */
PlanOp plan_op_alone(const PlanOp *op);

/* Does op run code of its own: neither a stored member of a row group
 * (plan_in_rows) nor a tensor another operator stores through a view
 * (stored_by)? */
bool plan_runs(const PlanOp *op);

/* The price of a row group as one operator (cost_rows). */
double plan_rows_cost(IrCtx *cx, const CostModel *cm, const PlanRowGroup *g);

/* How op's epilogue runs after a library call: as oneDNN's post-ops
 * (plan_post_ops: their number, into post[LIB_POST_MAX], from
 * cost_post_ops; 0 where no library applies it), in cuBLASLt's epilogue
 * (op->lt.fused), as a cuBLAS call's alpha (op->lt.scale), as the
 * pointwise nodes of a cuDNN convolution's graph
 * (plan_pointwise: their number, into pw[LIB_PW_MAX] over post[], from
 * cost_pointwise; 0 where there are none), or as a pass of its own over
 * the output (plan_epilogue_pass).  A cuBLASLt GEMM and a cuDNN graph
 * keep that pass in the file for where the library cannot run them (no
 * algorithm or engine, an unaligned buffer): plan_has_pass. */
int plan_post_ops(const PlanOp *op, LibPost *post);
int plan_pointwise(const PlanOp *op, LibPost *post, LibPw *pw);
bool plan_dnn_fused(const PlanOp *op);          /* plan_pointwise > 0 */
/* A oneDNN matmul (one product) whose output is the tensor itself,
 * [1.., m, n] in row-major order: its dst is the tensor's shape, so
 * post-ops read the operator's loops as dst's dims. */
bool plan_gemm_dst_whole(const PlanOp *op);
bool plan_epilogue_pass(const PlanOp *op);
bool plan_has_pass(const PlanOp *op);
/* A cuBLAS product of a batch of two levels (OpMatch.split): a kernel
 * writes its matrices' pointers before cublasGemmBatchedEx. */
bool plan_gemm_ptrs(const PlanOp *op);
/* The library call that computes op, as the generated file names it
 * (cost_impl_call; "cublasLtMatmul" for op->lt.fused). */
const char *plan_call_name(const PlanOp *op);
/* cuBLASLt's epilogue of op as a formula over the product AB, for the
 * views ("gelu_tanh(AB + bias)", "0.125*AB + C"), in buf; "" where there
 * is none. */
const char *plan_lt_name(const PlanOp *op, char *buf, size_t size);
/* A cuDNN graph's pointwise nodes, for the views ("mul, add, relu",
 * a scalar operand after its mode: "mul 0.5"), in buf; "" where there are
 * none. */
const char *plan_pw_name(const PlanOp *op, char *buf, size_t size);

typedef struct Plan {
    IrProgram *prog;            /* derived program (tensors in dependence order) */
    PlanOp *ops;                /* per tensor id: set for IT_STAGE tensors */
    double cost;                /* seconds, estimated: the ops not at load */
    Target target;
    Precision precision;        /* what library calls compute in */
    const IrTensor **unmasked;  /* the maps whose mask no reader sees went */
    int nunmasked;              /* (derive_unmask) */
    /* Where the intermediates live (storage.c, derive_storage): per
     * tensor id, the byte offset of its buffer inside one arena that the
     * intermediates whose lives in a run (load-time stages first) do not
     * overlap share, or -1: a buffer of its own (inputs, weights,
     * outputs, what runs at load and a run reads) or none (a view).
     * NULL: every tensor has its own (--keep-intermediates;
     * plan_program's plans). */
    int64_t *at;
    int64_t arena;              /* bytes of the arena */
    int64_t apart;              /* bytes its tensors take in buffers of their own */
    int64_t peak;               /* the most of those bytes live at once in a run */
    int nshared;                /* tensors in it */
} Plan;

/* The plan of `p` as written (-O0 and hand-built programs): one operator
 * per stage, chosen by plan_choose; p's tensors keep their ids. */
Plan *plan_program(IrCtx *cx, const CostModel *cm, IrProgram *p);

/* Sum of the costs of the operators that do not run at load. */
double plan_total(const Plan *pl);

/* How many operators read each tensor (by id; xcalloc'd), their
 * epilogues included, an output one more: what reads a tensor once the
 * epilogues have absorbed the maps that read it (derive_readers counts
 * the program's stages). */
int *plan_readers(const Plan *pl);

/* Print one operator a line with shapes and estimated cost (--emit=plan). */
void plan_print(const Plan *pl, FILE *fp);
/* `s` as a JSON string, quotes included. */
void plan_json_string(const char *s, FILE *fp);
/* One operator as a JSON object (--emit=plan-json). */
void plan_print_json_op(const PlanOp *o, Precision prec, FILE *fp);

#endif
