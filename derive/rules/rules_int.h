/* rules_int.h - what the rule files share behind rules.h: the context with
 * the ranges of the variables in scope, the focus, fresh variables, bounds,
 * walks over the direct parts of a stage, and the rebuild of the tree
 * around a rewritten focus (rule_util.c).  Rules use only the public
 * API of ir.h. */
#ifndef EINC_RULES_INT_H
#define EINC_RULES_INT_H

#include "rules.h"

struct RuleCtx {
    IrCtx *cx;
    int64_t *lo, *hi;               /* range of each variable in scope, by id;
                                       entries of other variables are stale */
    int cap;
};

struct RuleFocus {
    const Stage *root;
    const Stage *stage;             /* the focus */
    bool is_root;
    const IrVar *scope;             /* bound above the focus, outermost first */
    int nscope;
};

/* The tree's invariant: no variable is bound twice on a path from the
 * root, and stages that bind a common variable are equal.  Then every
 * copy of a stage sees the same ranges for its free variables, and a rule
 * may rewrite all copies of its focus at once. */

/* ---- scope and bounds (rule_util.c) ---------------------------------------- */
void rc_reserve(RuleCtx *rc, int n);               /* ranges for ids < n */
void rc_bind(RuleCtx *rc, const IrVar *v, int n);
void rc_bind_focus(RuleCtx *rc, const RuleFocus *f);   /* scope + focus vars */
IrVar rc_fresh(RuleCtx *rc, const char *name, int64_t lo, int64_t hi);
void rc_bounds(RuleCtx *rc, const Ix *x, int64_t *mn, int64_t *mx);
bool rc_within(RuleCtx *rc, const Ix *x, int64_t lo, int64_t hi);  /* [lo, hi) */
/* Bounds of x with variable v restricted to [lo, hi). */
void rc_bounds_at(RuleCtx *rc, const Ix *x, int v, int64_t lo, int64_t hi,
                  int64_t *mn, int64_t *mx);

/* ---- stages, variables, expressions -------------------------------------- */
const IExpr *rc_subst_all(RuleCtx *rc, const IExpr *e, int n, const int *vars,
                          const Ix *const *by);
/* The variables of a[0..na) and then b[0..nb) that *body or one of
 * gin[0..ngin) uses, renamed for a stage of their own: fresh copies into
 * fresh[], the old variables as subscripts into idx[] (the reading
 * stage's access), substituted in *body and gin[]; returns how many. */
int rc_rename_used(RuleCtx *rc, const IrVar *a, int na, const IrVar *b, int nb,
                   const IExpr **body, const IExpr **gin, int ngin, IrVar *fresh,
                   const Ix **idx);
/* Appends lo <= x < hi to g as guards (with `prove`, only the sides not
 * provably true); returns how many. */
int rc_range_guards(RuleCtx *rc, const Ix *x, int64_t lo, int64_t hi,
                    const IExpr **g, bool prove);
/* The range of dimension k of what an access reads ([0, shape) of a
 * tensor, the loop range of a stage). */
void rc_dim_range(const IExpr *acc, int k, int64_t *lo, int64_t *hi);
bool rc_same_target(const IExpr *acc, const IrTensor *t, const Stage *s);
const char *rc_name2(RuleCtx *rc, const char *a, const char *b);

/* ---- walks over the direct parts of a stage ------------------------------
 * "Direct": the stage's body, then its guards, not the insides of nested
 * stages (an access to a nested stage, with its subscripts, is direct).
 * `factor`: the access sits where its zero makes the body zero (a factor
 * of the top product, a numerator, under a negation; never in a guard). */
typedef void (*RcAccessFn)(void *arg, const IExpr *acc, bool factor);
void rc_each_access(const Stage *s, RcAccessFn fn, void *arg);
typedef void (*RcIxFn)(void *arg, const Ix *x);
void rc_each_ix(const Stage *s, RcIxFn fn, void *arg);
/* ir_map_access over a stage's body, then its guards (the order
 * rc_each_access visits them in); s itself when nothing changed. */
const Stage *rc_map_stage(RuleCtx *rc, const Stage *s, IrAccessMap fn, void *arg);

/* ---- the tree around the focus ------------------------------------------- */
/* Replace the focus by `to` of the same interface (same value everywhere). */
const Stage *rc_replace(RuleCtx *rc, const RuleFocus *f, const Stage *to);
/* Replace the focus by `to` whose points are renamed: each access
 * focus[idx] becomes to[remap(idx)].  At the root, the new root is a
 * Σ-free wrapper L<loops'> { to[remap(loops')] } so the output keeps its
 * layout. */
typedef void (*RcRemapFn)(RuleCtx *rc, const void *arg, const Ix *const *idx,
                          const Ix **out);
const Stage *rc_replace_remap(RuleCtx *rc, const RuleFocus *f, const Stage *to,
                              RcRemapFn fn, const void *arg);
/* Whether every access to the focus in the tree reads dimension `pos`
 * provably within [lo, hi) (true at the root: the wrapper reads its own
 * loop variables).  Leaves the focus's scope bound. */
bool rc_reads_within(RuleCtx *rc, const RuleFocus *f, int pos, int64_t lo, int64_t hi);
/* How many accesses in the tree read stage q. */
int rc_reads(const Stage *root, const Stage *q);
/* e with every stage in it binding fresh variables: a copy of a subtree
 * that stays in the tree too must not share binders with it. */
const IExpr *rc_freshen(RuleCtx *rc, const IExpr *e);

/* Appends s unless the same site is there already. */
void rc_push(RuleSites *out, RuleSite s);

/* ---- the rules: one sites and one apply function each ------------------- */
#define RULE_FNS(name)                                                       \
    void name##_sites(RuleCtx *rc, const RuleFocus *f, RuleSites *out);      \
    const Stage *name##_apply(RuleCtx *rc, const RuleFocus *f, const RuleSite *s);
RULE_FNS(split)
RULE_FNS(merge)
RULE_FNS(vsplit)
RULE_FNS(fuse)
RULE_FNS(drop)
RULE_FNS(inline)
RULE_FNS(tighten)
RULE_FNS(relax)
RULE_FNS(lsplit)
RULE_FNS(lswap)
RULE_FNS(lmerge)
RULE_FNS(loopswap)
RULE_FNS(tile)
RULE_FNS(factor)
RULE_FNS(mask)
#undef RULE_FNS

#endif
