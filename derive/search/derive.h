/* derive.h - the derive phase as the driver sees it: search every tensor
 * expression of a lowered program (or not, at -O0), assemble the chosen
 * plan, verify it with the interpreter, and show it (--emit=plan,
 * --emit=plan-json, --explain, --dot=derivation).  Prefix: derive_. */
#ifndef EINC_DERIVE_H
#define EINC_DERIVE_H

#include <stdio.h>
#include "search.h"

typedef struct DeriveOptions {
    int level;                  /* -O0: none; -O1: instantiate only; -O2: search */
    SearchOptions search;
    int verify;                 /* derive_verify: 0 no, 1 chosen plans, 2 every candidate */
    int jobs;                   /* threads that search (derive.c); 0: one per
                                   processor, at most 64 */
} DeriveOptions;

/* The search of one tensor's expression. */
typedef struct Derivation {
    const IrTensor *tensor;
    const Stage *original;      /* its stage before derivation */
    SearchResult res;
    int max_id;                 /* largest tensor id any candidate uses (verify) */
    uint64_t form;              /* ir_fingerprint_form of original */
    int alone;                  /* where the chosen candidate (now res.cands[0])
                                   stood by its own price: 0 the cheapest */
    int from;                   /* the derivation whose search res reuses, or -1 */
} Derivation;

/* A factor folded into a weight at load (scalefold.c): map's factor went
 * into the weight of sum, as the weight-only tensor weight. */
typedef struct DeriveFold {
    const char *map, *sum, *weight;
} DeriveFold;

typedef struct Derived {
    Plan *plan;                 /* the chosen program */
    DeriveFold *folds;          /* before the search (derive_fold_scales) */
    int nfolds;
    Derivation *ds;             /* one per searched tensor */
    int nds;
    long states;                /* in all searches */
    double ms;
    Precision precision;        /* of the search: operator keys (cost.h) */
    int reranked;               /* candidates tried in the whole plan (rerank) */
    double rerank_from, rerank_to;  /* the plan's estimate before and after, s */
} Derived;

/* Derive `p` (whose tensors it takes over: their stages and ids change).
 * With o->verify, the derivations are verified (derive_verify) as the
 * search leaves them, before fusion drops tensors they read and renumbers
 * the rest. */
Derived *derive_program(IrCtx *cx, IrProgram *p, const DeriveOptions *o);

/* Inter-expression merging: expressions of one form over the same input
 * that differ in one weight become one over the stacked weights, where the
 * cost model says that is cheaper (siblings.c).  Returns how many groups. */
int derive_merge_siblings(IrCtx *cx, IrProgram *p, const CostModel *cm);

/* Weight-only factors folded into weights: a map y that multiplies (or
 * divides) a sum of products a, read by y alone, by a factor g that reads
 * weights only, through loop variables that are plain subscripts of a
 * weight K read once in a's product, becomes a read of a over K' = K * g,
 * a weight-only tensor (run at load): batch norm's scale after a
 * convolution (scalefold.c).  With verify, y is checked on random data
 * (an ICE if it differs).  Before the search, until nothing folds;
 * returns the folds (*nfolds of them), in ir_arena(cx). */
DeriveFold *derive_fold_scales(IrCtx *cx, IrProgram *p, bool verify, int *nfolds);

/* Ranges by variable id, for the passes after the search, which run once
 * per rerank trial in a context the search left with hundreds of
 * thousands of variables: kept from run to run rather than filled each
 * time.  Between uses every entry holds rest_lo and rest_hi (zero, or
 * say INT64_MIN and INT64_MAX for "unbounded"); a pass sets those of the
 * variables at hand and sets them back after.  var_ranges_free when done. */
typedef struct VarRanges {
    int64_t *lo, *hi;
    int n;                          /* entries of each */
    int64_t rest_lo, rest_hi;
} VarRanges;

/* vr with at least n entries, those added at rest. */
void var_ranges_fit(VarRanges *vr, int n);
/* The loop and sum variables of s at their ranges, or back at rest. */
void var_ranges_bind(VarRanges *vr, const Stage *s);
void var_ranges_unbind(VarRanges *vr, const Stage *s);
void var_ranges_free(VarRanges *vr);

/* Masks no reader sees: a map select(c, x, 0) (or x under guards c)
 * whose every read that counts is made where c holds becomes x, the
 * points where c fails being dead (unmask.c); with verify, the outputs
 * that read what changed are checked on random data (an ICE if one
 * differs).  Runs first of the passes after the search.  Returns how
 * many masks went.  vr: ranges to use, unbounded at rest (left so). */
int derive_unmask(IrCtx *cx, Plan *pl, const CostModel *cm, VarRanges *vr, bool verify);

/* Inter-expression fusion: substitute maps read by one other map into it
 * (fuse.c), while the compile is within budget_ms (search_budget_spent);
 * vr: ranges to use, zero at rest (left so).  With verify, each fused stage
 * is checked against the pair it replaces (derive_verify's data and
 * tolerance; an ICE if one differs).  Returns how many tensors went
 * away. */
int derive_fuse(IrCtx *cx, Plan *pl, const CostModel *cm, VarRanges *vr, double budget_ms,
                bool verify);

/* Epilogues: a map that reads an operator's output at its own element,
 * the output read nowhere else, is applied by that operator before its
 * store (plan.h, PlanEpilogue), where the cost model prices the operator
 * with it no dearer than the two apart (epilogue.c); verify as in
 * derive_fuse.  Returns how many maps became epilogues. */
int derive_epilogues(IrCtx *cx, Plan *pl, const CostModel *cm, bool verify);

/* Row groups: a run of generated kernels over the same rows (softmax,
 * layer norm) becomes one operator that computes them row by row (plan.h,
 * PlanRowGroup), on the C target, where the cost model prices that
 * cheaper than the kernels apart (rows.c).  Returns how many groups. */
int derive_rows(IrCtx *cx, Plan *pl, const CostModel *cm);

/* Output views: a G2BMM, GBMM or GEMM whose output only a copy to
 * another layout reads stores into that copy's buffer, through a view,
 * and the copy has no code of its own (outview.c; plan.h, PlanBuf).
 * Returns how many. */
int derive_out_views(Plan *pl);

/* oneDNN convolutions whose input only they read and the convolution
 * before computes take it in oneDNN's layout (PlanOp.src_from; the
 * runtime links the two where their primitives agree), the reorders'
 * prices off both (handoff.c).  Returns how many. */
int derive_handoffs(Plan *pl, const CostModel *cm);

/* Storage: the intermediates (computed tensors but outputs and what runs
 * at load and a run reads) share one arena, each at an offset where no
 * other tensor is live between its first write and its last read in the
 * run's order (greedy by size, 256-byte aligned); sets pl->at, arena,
 * apart, peak and nshared (plan.h).  The last pass: nothing may change
 * what runs or what reads what after it (storage.c). */
void derive_storage(IrCtx *cx, Plan *pl);

/* Does s with the epilogue epi (NULL: none) stay within fusion's bounds
 * on a kernel's depth and size (fuse.c), which the IR walks and the
 * emitters rely on? */
bool derive_fits(const IrProgram *p, const Stage *s, const IExpr *epi);

/* How many stages read each tensor (by id; an output counts one more):
 * an xmalloc'd array of p->ntensors (fuse.c). */
int *derive_readers(const IrProgram *p);

/* Drop the tensors marked dead from pl's program, renumbering the rest
 * (ids = positions) with their operators and the outputs, and price the
 * plan again (fuse.c). */
void derive_drop(Plan *pl, const bool *dead);

/* Check every chosen derivation (every kept candidate with
 * all_candidates) on random data in double precision; reports an error
 * (diag_error at the tensor) for each that differs, then, if one did, an
 * internal error (ICE: exit 3).  Returns only when all agree.  d->plan
 * must be unfused: derive_program calls it where o->verify says. */
void derive_verify(IrCtx *cx, const Derived *d, bool all_candidates);

/* derive_verify's means, which fusion's check shares: random data in
 * [-1, 1) for every tensor of p (ids to max_id, NULL past p's), freed by
 * derive_verify_free; a stage evaluated into the whole of t's buffer (0
 * outside its loops); and whether got agrees with want to 1e-9 of want's
 * largest magnitude (the max error and magnitude in *err, *scale). */
double **derive_verify_data(const IrProgram *p, int max_id);
void derive_verify_free(double **data, int max_id);
void derive_eval_into(const Stage *s, const IrTensor *t, double *const *data, double *out);
bool derive_agree(const double *want, const double *got, size_t n, double *err, double *scale);
/* Do stages a and b agree on t's elements (derive_eval_into, then
 * derive_agree)? */
bool derive_same(const Stage *a, const Stage *b, const IrTensor *t, double *const *data,
                 double *err, double *scale);

void derive_print_json(const IrCtx *cx, const Derived *d, FILE *fp);
void derive_explain(const IrCtx *cx, const Derived *d, FILE *fp);
void derive_dot(const IrCtx *cx, const Derived *d, FILE *fp);

#endif
