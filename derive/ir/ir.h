/* ir.h - the tensor-expression IR that derive/, the search and emit/ share.
 *
 * A stage is  L<loop vars in [lo,hi)> Σ<sum vars in [lo,hi)> { body }
 * with a reduction kind and guards.  It reads as zero outside its loop
 * ranges (EinNet's padding), so a stage whose ranges are tighter than its
 * tensor's shape carries output padding.  A body is a scalar expression
 * over accesses T[ix...] to tensors or to nested stages; each ix is an
 * index expression in canonical form (see Ix).  Tensors read as zero
 * outside their shape.
 *
 * All nodes are immutable after construction.  Constructors canonicalise
 * (affine terms sorted and merged, commutative operands ordered) and cache
 * a structural hash, so equal nodes compare equal with ir_*_equal in O(1)
 * on the hash and a constructor that changes nothing may return its input.
 * Prefix: ir_ (ix_ for index expressions). */
#ifndef EINC_IR_H
#define EINC_IR_H

#include <stdio.h>
#include "../../lang/ast.h"
#include "../../sema/sema.h"

typedef struct IrTensor IrTensor;
typedef struct Stage Stage;

/* ---- variables ---------------------------------------------------------- */
/* Every variable has an id unique in its IrCtx; stages bind them. */
typedef struct IrVar {
    int id;
    const char *name;               /* for printing; not part of identity */
    int64_t lo, hi;                 /* half-open range */
} IrVar;

/* ---- index expressions ---------------------------------------------------
 * Canonical form:  c + Σ coef_k * atom_k, with atoms sorted by
 * (kind, var id or arg hash, d), no two equal atoms, no zero coef.
 * An atom is a variable, floor(arg / d) or (arg mod d), d >= 2 (division
 * by a negative constant is rewritten to a positive one; by 1 vanishes;
 * constant args fold). */
typedef enum {
    IX_VAR,                         /* a variable */
    IX_DIV,                         /* floor(arg / d) */
    IX_MOD,                         /* arg mod d */
    IX_READ,                        /* the value of read, an element of an
                                       integer tensor (a gather): opaque */
} IxAtomKind;

typedef struct Ix Ix;
typedef struct IExpr IExpr;
typedef struct IxTerm {
    int64_t coef;
    IxAtomKind kind;
    int var;                        /* IX_VAR */
    const Ix *arg;                  /* IX_DIV, IX_MOD; IX_READ: the sum of
                                       the variables its subscripts use,
                                       so that what asks which variables
                                       an atom depends on (ix_uses) is
                                       right; never its value */
    int64_t d;                      /* IX_READ: 1 */
    const IExpr *read;              /* IX_READ: an IE_ACCESS of an integer
                                       tensor (0 outside its shape) */
} IxTerm;

struct Ix {
    uint64_t hash;
    int64_t c;
    int n;
    IxTerm t[];
};

/* ---- scalar expressions ---------------------------------------------- */
/* (IExpr is declared with IxTerm above.) */
typedef enum {
    IE_CONST,                       /* a real number */
    IE_INDEX,                       /* an index expression used as a value */
    IE_ACCESS,                      /* tensor or nested stage, read as 0 outside */
    IE_ADD,                         /* a + b    (commutative; operands ordered) */
    IE_SUB,                         /* a - b */
    IE_MUL,                         /* a * b    (commutative; operands ordered) */
    IE_DIV,                         /* a / b    (real division) */
    IE_NEG,                         /* -a */
    IE_CALL,                        /* func(args), Func from sema.h; FN_SELECT too */
    IE_CMP,                         /* a op b on reals: OP_EQ..OP_GE */
    IE_ICMP,                        /* ix op 0 on integers: OP_EQ, OP_NE, OP_GE */
    IE_AND,                         /* a && b */
    IE_OR,                          /* a || b */
    IE_NOT,                         /* !a */
} IExprKind;

struct IExpr {
    IExprKind kind;
    bool folds;                     /* ir_expr_fold may change it: it holds an
                                       IE_ICMP or a subscript with a div or
                                       mod (not inside a nested stage or a
                                       gather); false: fold returns it */
    uint64_t hash;                  /* structural, variable ids included */
    union {
        double value;               /* IE_CONST */
        const Ix *ix;               /* IE_INDEX */
        struct {                    /* IE_ACCESS: exactly one of tensor, stage */
            const IrTensor *tensor;
            const Stage *stage;
            const Ix **idx;
            int nidx;
        } access;
        struct {                    /* IE_CALL */
            Func fn;
            const IExpr **args;
            int nargs;
        } call;
        struct {                    /* IE_ICMP */
            BinOp op;
            const Ix *ix;
        } icmp;
        struct {                    /* binary kinds, IE_CMP (op), unary (a) */
            BinOp op;
            const IExpr *a, *b;
        } bin;
    };
};

/* ---- stages ---------------------------------------------------------- */
struct Stage {
    uint64_t hash;
    uint64_t vars_hash;             /* of red, loops and sums alone: where
                                       ir_stage_rebody starts */
    Reduce red;                     /* RED_NONE iff nsums == 0 */
    const IrVar *loops;
    int nloops;
    const IrVar *sums;
    int nsums;
    const IExpr **guards;           /* terms where one is false contribute nothing */
    int nguards;
    const IExpr *body;
};

/* ---- tensors and programs ------------------------------------------------ */
typedef enum {
    IT_INPUT,                       /* bound per run */
    IT_WEIGHT,                      /* loaded once */
    IT_STAGE,                       /* computed by `stage` */
} IrTensorKind;

struct IrTensor {
    int id;                         /* index in IrProgram.tensors */
    const char *name;
    IrTensorKind kind;
    ElemType elem;
    int rank;
    const int64_t *shape;
    Loc loc;                        /* .ein location of declaration/statement */
    bool is_output;
    bool weight_only;               /* depends on weights only: run at load */
    const Stage *stage;             /* IT_STAGE: nloops == rank; loop k ranges
                                       within [0, shape[k]) */
    const char *ext;                /* input, weight: the external name, or NULL */
};

typedef struct IrCtx IrCtx;
typedef struct IrProgram {
    IrCtx *cx;                      /* owns the nodes and variable names */
    const char *model;
    IrTensor **tensors;             /* topological: uses follow definitions */
    int ntensors;
    int *outputs;                   /* tensor ids in `output` order */
    int noutputs;
} IrProgram;

/* ---- context: the arena and the variable table ------------------------- */
IrCtx *ir_ctx_new(Arena *arena);
Arena *ir_arena(IrCtx *cx);
IrVar ir_var_new(IrCtx *cx, const char *name, int64_t lo, int64_t hi);
const char *ir_var_name(const IrCtx *cx, int id);
int ir_var_count(const IrCtx *cx);              /* ids are 0 .. count-1 */

/* ---- constructors (all canonicalise) --------------------------------- */
const Ix *ix_const(IrCtx *cx, int64_t c);
const Ix *ix_var(IrCtx *cx, int var);
const Ix *ix_add(IrCtx *cx, const Ix *a, const Ix *b);
const Ix *ix_sub(IrCtx *cx, const Ix *a, const Ix *b);
const Ix *ix_scale(IrCtx *cx, const Ix *a, int64_t k);
const Ix *ix_div(IrCtx *cx, const Ix *a, int64_t d);     /* floor; d != 0 */
const Ix *ix_mod(IrCtx *cx, const Ix *a, int64_t d);     /* sign of d; d != 0 */
/* Replace variable `var` by `by` everywhere (re-canonicalises). */
const Ix *ix_subst(IrCtx *cx, const Ix *a, int var, const Ix *by);
bool ix_equal(const Ix *a, const Ix *b);
bool ix_is_const(const Ix *a, int64_t *c);
int64_t ix_coef(const Ix *a, int var);         /* coefficient of a plain var term */
bool ix_uses(const Ix *a, int var);
/* Value under an assignment env[var id] (ids index into env).  An index
 * with a gather (IX_READ) needs the tensors' data, as the interpreter
 * holds them (data[tensor id], row-major doubles): ix_eval_data. */
int64_t ix_eval(const Ix *a, const int64_t *env);
int64_t ix_eval_data(const Ix *a, const int64_t *env, double *const *data);
/* 1 * the value of `read`, an IE_ACCESS of an integer tensor. */
const Ix *ix_read(IrCtx *cx, const IExpr *read);
/* Whether an index expression holds a gather, at any depth. */
bool ix_has_read(const Ix *a);
/* The gathers of an index expression that are not inside another
 * gather's subscripts (those are the reads' own): up to max into out,
 * returning how many there are.  A walker that collects what a stage
 * reads calls itself on each (an IE_ACCESS), whose subscripts hold the
 * rest. */
int ix_gathers(const Ix *a, const IExpr **out, int max);
/* Stage evaluation needs env sized ir_var_count(cx). */
/* Conservative bounds given the ranges of variables (range_lo/hi by id):
 * every value lies in [*min, *max].  A bound that does not fit in 64 bits
 * comes back as INT64_MIN or INT64_MAX, so those two stand for "unbounded"
 * to a caller that computes with the bounds rather than compare them. */
void ix_bounds(const Ix *a, const int64_t *range_lo, const int64_t *range_hi,
               int64_t *min, int64_t *max);

const IExpr *ir_const(IrCtx *cx, double v);
const IExpr *ir_index(IrCtx *cx, const Ix *ix);
const IExpr *ir_access_tensor(IrCtx *cx, const IrTensor *t, const Ix **idx, int n);
const IExpr *ir_access_stage(IrCtx *cx, const Stage *s, const Ix **idx, int n);
const IExpr *ir_binary(IrCtx *cx, IExprKind k, const IExpr *a, const IExpr *b);
const IExpr *ir_cmp(IrCtx *cx, BinOp op, const IExpr *a, const IExpr *b);
const IExpr *ir_icmp(IrCtx *cx, BinOp op, const Ix *l, const Ix *r); /* l op r */
const IExpr *ir_unary(IrCtx *cx, IExprKind k, const IExpr *a);       /* NEG, NOT */
const IExpr *ir_call(IrCtx *cx, Func fn, const IExpr **args, int n);
const Stage *ir_stage(IrCtx *cx, Reduce red, const IrVar *loops, int nloops,
                      const IrVar *sums, int nsums, const IExpr **guards,
                      int nguards, const IExpr *body);
/* ir_stage(cx, s->red, s->loops, s->nloops, s->sums, s->nsums, guards,
 * nguards, body), the same stage, made without copying, checking or
 * hashing s's variables again: the new stage shares s's arrays. */
const Stage *ir_stage_rebody(IrCtx *cx, const Stage *s, const IExpr **guards, int nguards,
                             const IExpr *body);
/* Substitute variable `var` by `by` in an expression (through nested stages). */
const IExpr *ir_subst(IrCtx *cx, const IExpr *e, int var, const Ix *by);

/* ---- walking nodes ----------------------------------------------------------
 * What a node is made of is said once per kind, in expr.c: its expression
 * children (a call's arguments, the operands of the unary and binary
 * kinds), its index expressions (an access's subscripts, an index
 * value's, an integer comparison's) and, for an access, the nested stage
 * it reads.  ir_expr_rebuild makes a node of e's kind and operator from
 * new parts, and every walk is written over these (Halide's IRVisitor and
 * IRMutator), so a new kind of node is added here and in the functions
 * that give each kind its meaning (the constructors, order, hashing,
 * printing, the interpreter), not in every walk. */
#define IR_MAX_CHILDREN 3                   /* select(c, a, b) */
/* Stores e's expression children in kids, in order; returns how many. */
int ir_expr_children(const IExpr *e, const IExpr *kids[IR_MAX_CHILDREN]);
/* Points *ixs at e's index expressions; returns how many. */
int ir_expr_ixs(const IExpr *e, const Ix *const **ixs);
/* The nested stage an access reads; NULL for every other node. */
const Stage *ir_expr_stage(const IExpr *e);
/* e with its parts replaced, through the canonicalising constructors:
 * kids (as many as ir_expr_children gives), ixs (as ir_expr_ixs), stage (an
 * access to a stage); NULL keeps e's own.  e itself when every part is
 * the same pointer as e's. */
const IExpr *ir_expr_rebuild(IrCtx *cx, const IExpr *e, const IExpr *const *kids,
                             const Ix *const *ixs, const Stage *stage);
/* The same, but a node made in cx even where the parts are e's own (a
 * constant): what a copy from another context (a fork) needs.  (A
 * constructor may still give one of the parts, folding.) */
const IExpr *ir_expr_clone(IrCtx *cx, const IExpr *e, const IExpr *const *kids,
                           const Ix *const *ixs, const Stage *stage);
/* e rebuilt with each child c replaced by fn(arg, c) and, where ix_fn is
 * given, each index expression x by ix_fn(arg, x) (a nested stage is
 * kept); e itself when nothing changed. */
typedef const IExpr *(*IrExprMap)(void *arg, const IExpr *e);
typedef const Ix *(*IrIxMap)(void *arg, const Ix *x);
const IExpr *ir_expr_map_children(IrCtx *cx, const IExpr *e, IrExprMap fn, IrIxMap ix_fn,
                                  void *arg);
/* Calls fn(arg, n) for e and, below each n for which fn returns true, for
 * n's children and the gathers of n's index expressions (each an
 * IE_ACCESS, ix_gathers), in pre-order; not into nested stages.  So a
 * walk that collects what is read sees every read. */
typedef bool (*IrExprVisit)(void *arg, const IExpr *e);
void ir_expr_visit(const IExpr *e, IrExprVisit fn, void *arg);
/* Does e read the tensor t (as ir_expr_visit walks: not inside nested
 * stages)? */
bool ir_expr_reads(const IExpr *e, const IrTensor *t);
/* e rebuilt with each access (to a tensor or a nested stage; not the
 * insides of nested stages) replaced by fn(arg, access); fn returns the
 * access itself to keep it.  e itself when nothing changed. */
typedef const IExpr *(*IrAccessMap)(void *arg, const IExpr *acc);
const IExpr *ir_map_access(IrCtx *cx, const IExpr *e, IrAccessMap fn, void *arg);
/* Position of variable `var` among s's loops (sums); -1 if it is none. */
int ir_loop_pos(const Stage *s, int var);
int ir_sum_pos(const Stage *s, int var);

bool ir_expr_equal(const IExpr *a, const IExpr *b);
bool ir_stage_equal(const Stage *a, const Stage *b);

/* ---- fingerprints ---------------------------------------------------------
 * Invariant under renaming bound variables (loop vars hashed by position
 * and range, sum vars by range only) and under the order of commutative
 * operands; changes when an index, range, tensor or operator changes. */
uint64_t ir_fingerprint(const Stage *s);
/* The same with each tensor hashed by what it is (kind, element type,
 * shape, weight_only) rather than which it is: equal for two statements
 * of one form over different tensors (a layer repeated). */
uint64_t ir_fingerprint_form(const Stage *s);

/* ---- the interpreter ---------------------------------------------------
 * Double precision.  data[t->id] holds tensor t row-major over its shape.
 * ir_eval_stage fills out[] (row-major over the loop ranges, i.e. element
 * (i0..ik) at offset of (i0-lo0, ...)) and returns the element count. */
size_t ir_eval_stage(const Stage *s, double *const *data, double *out);
/* Evaluate every IT_STAGE tensor of p in order; data[id] must be allocated
 * (shape product doubles) for every tensor and filled for inputs/weights.
 * Elements outside a stage's loop ranges are set to 0. */
void ir_eval_program(const IrProgram *p, double *const *data);

/* ---- lowering and printing -------------------------------------------- */
IrProgram *ir_lower(IrCtx *cx, const CProgram *cp);
/* How many index expressions ir_lower refused because their canonical
 * form computes a value past 64 bits where the source's does not (the
 * operand of a division or modulo with its constant folded, a difference
 * compared with 0): a refusal sema cannot foresee (lower.c). */
int ir_lower_inexact(const IrCtx *cx);
/* Stable text form used by `einc --emit=ir` and golden tests. */
void ir_print_program(const IrProgram *p, FILE *fp);
void ir_print_stage(const IrCtx *cx, const Stage *s, FILE *fp); /* L<..> Σ<..> { .. } */
void ir_print_expr(const IrCtx *cx, const IExpr *e, FILE *fp);
void ir_print_ix(const IrCtx *cx, const Ix *ix, FILE *fp);

/* ---- additions by derive/ (additive; see derive/README.md) -------------- */
/* A mark of the context: releasing it frees every node and forgets every
 * variable made after the mark (for a search that abandons a branch). */
typedef struct IrMark {
    ArenaMark arena;
    int nvars, cap;
    void *vars, *var_ix;
} IrMark;
IrMark ir_ctx_mark(IrCtx *cx);
void ir_ctx_release(IrCtx *cx, IrMark m);
/* A context in `arena` that knows cx's variables (the same ids, names and
 * ranges) and its nodes, and makes its own after them: a search in a
 * thread of its own works in one (derive.c), then its result is copied
 * back into cx (ir_stage_copy).  cx must not change while a fork reads
 * it; nodes made in the fork are freed with its arena. */
IrCtx *ir_ctx_fork(const IrCtx *cx, Arena *arena);
/* Whether an index coefficient overflowed int64 since the last call (the
 * result of that constructor is then meaningless); clears the flag. */
bool ir_ctx_overflowed(IrCtx *cx);
const IrVar *ir_var_get(const IrCtx *cx, int id);    /* as made; NULL if none */
/* Fold div/mod atoms whose quotient is fixed by the variable ranges:
 * (2*a + b) / 2 with b in [0, 2) is a, and (2*a + b) % 2 is b. */
const Ix *ix_simplify(IrCtx *cx, const Ix *a, const int64_t *range_lo,
                      const int64_t *range_hi);
/* e with every index expression under it ix_simplify'd and each index
 * comparison the ranges make true folded to 1; e itself where nothing
 * changes. */
const IExpr *ir_expr_fold(IrCtx *cx, const IExpr *e, const int64_t *range_lo,
                          const int64_t *range_hi);
/* ir_expr_reads, inside the stages nested in e too. */
bool ir_expr_reads_deep(const IExpr *e, const IrTensor *t);
/* ir_subst on a stage (its free variables; a bound `var` is left alone). */
const Stage *ir_stage_subst(IrCtx *cx, const Stage *s, int var, const Ix *by);
/* A copy of the closed stage s in which every bound variable (s's and
 * those of the stages nested in it) is a new one of the same name and
 * range, and every read of from[i] reads to[i] (n pairs): the same
 * computation for another statement of its form.  NULL if s reads a
 * tensor that is none of from[]; with from NULL, every tensor is read as
 * itself (n is not looked at).  Every node of the copy is made in cx,
 * so s may be another context's (a fork's); the new variables are made
 * in the order of the old ones' ids, one for each (a variable bound in
 * two places stays one), so the copy's index expressions order their
 * terms as s's do. */
const Stage *ir_stage_copy(IrCtx *cx, const Stage *s, const IrTensor *const *from,
                           const IrTensor *const *to, int n);
/* The distinct tensors s reads (in nested stages and gathers too), in the
 * order of a walk of its guards and body, up to max of them into out;
 * returns how many there are. */
int ir_stage_tensors(const Stage *s, const IrTensor **out, int max);
/* A total order on expressions consistent with ir_expr_equal (the order
 * the constructors put commutative operands in). */
int ir_expr_compare(const IExpr *a, const IExpr *b);

/* Gives p the tensors `order` (n of them: each after the tensors it reads,
 * the outputs among them): ids become positions, and p's outputs follow
 * their tensors. */
void ir_program_reorder(IrProgram *p, IrTensor **order, int n);

/* x converted to element type t as a store into t does: f32, f16, bf16
 * round to nearest even (an infinity past the largest finite value);
 * integers truncate toward zero and saturate, NaN giving 0; bool is
 * x != 0.  The result is the value as a real. */
double ir_convert(ElemType t, double x);

/* Elements of a tensor (the product of its shape). */
size_t ir_tensor_numel(const IrTensor *t);

/* Whether variable `var` occurs free in e (through nested stages), or in
 * a stage's guards or body. */
bool ir_expr_uses(const IExpr *e, int var);
/* Whether a stage holds a gather (an integer tensor read in a subscript)
 * anywhere.  The operator matcher matches no such stage: no library
 * operator gathers, so it becomes a generated kernel. */
bool ir_stage_has_gather(const Stage *s);
bool ir_stage_uses(const Stage *s, int var);

/* Whether a stage reads only weights and weight-only tensors (so it can
 * run once, when weights are loaded). */
bool ir_stage_weight_only(const Stage *s);

#endif
