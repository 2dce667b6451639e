/* rules.h - EinNet's intra-expression derivation rules over the IR of ir.h.
 *
 * A state of the search is one closed stage tree (a root Stage whose body
 * may access nested stages).  A rule rewrites one stage of the tree, its
 * focus, and returns the new root; everything else is shared.  Rules are
 * pure: they build new nodes with the ir.h constructors and never change
 * existing ones.  The search enumerates every application of every rule
 * with rule_sites() and performs one with rule_apply(), which returns NULL
 * when the rule's precondition does not hold at that site (a site is a
 * candidate, not a promise).  Each rule preserves the value of the root at
 * every point of its loop box (derive/rules/RULES.md has each rule's effect in
 * L/Σ notation, its precondition and its sites).
 *
 * Invariant kept by every rule (and expected of the root): the root binds
 * every variable it uses, no variable is bound twice on a path from the
 * root down (the interpreter keeps one value per variable id), and two
 * stages of the tree that bind a common variable are equal (so every copy
 * of a stage sees the same ranges, and a rule rewrites all copies of its
 * focus at once).  Rules that need new variables make fresh ones in the
 * IrCtx.  Prefix: rule_. */
#ifndef EINC_RULES_H
#define EINC_RULES_H

#include "../ir/ir.h"

typedef enum {
    RULE_SUM_SPLIT,                 /* summation splitting: Σ_S outside, Σ_rest in a stage */
    RULE_VAR_MERGE,                 /* variable substitution: j = i1 + k*i2 */
    RULE_VAR_SPLIT,                 /* variable substitution: i + k2 = k*p1 + p2 */
    RULE_VAR_FUSE,                  /* variable substitution: x, y -> z = x + len(x)*y */
    RULE_VAR_DROP,                  /* variable substitution: drop a loop the body ignores */
    RULE_INLINE,                    /* traversal merging: inline a nested stage */
    RULE_TIGHTEN,                   /* boundary tightening */
    RULE_RELAX,                     /* boundary relaxing */
    RULE_LAYOUT_SPLIT,              /* data layout: split a tensor dimension */
    RULE_LAYOUT_SWAP,               /* data layout: swap two tensor dimensions */
    RULE_LAYOUT_MERGE,              /* data layout: merge two adjacent dimensions */
    RULE_LOOP_SWAP,                 /* data layout of a stage's own output: swap loops */
    RULE_SUM_TILE,                  /* summation tiling: relax, split by k, split Σ */
    RULE_FACTOR_OUT,                /* summation splitting: factors without Σ vars outside */
    RULE_MASK,                      /* a guard on Σ vars into a masked copy of an operand */
    RULE_COUNT
} RuleKind;

/* One application of one rule.  `focus` points into the root's tree; the
 * other fields are per rule (RULES.md):
 *   SUM_SPLIT    k: bit i set = the focus's i-th sum variable stays outside
 *   VAR_MERGE    a: i1 (eliminated), b: i2, k: the ratio (variable ids)
 *   VAR_SPLIT    a: i, k: the factor, k2: the offset
 *   VAR_FUSE     a: x (minor), b: y (major), k: +-len(x)
 *   VAR_DROP     a: the loop variable
 *   INLINE       a: which direct access to a nested stage (counted in the
 *                focus's body, then its guards), target: that stage
 *   TIGHTEN      -
 *   RELAX        a: the variable, k, k2: its new range [k, k2)
 *   LAYOUT_*     tensor or target: what is relaid out (accesses in the
 *                focus's body and guards); SPLIT a: dim, k: factor,
 *                b: 0 for (i / k, i % k), 1 for (i % k, i / k);
 *                SWAP a < b: dims; MERGE a: dims a and a + 1
 *   LOOP_SWAP    a < b: loop positions of the focus
 *   SUM_TILE     k: bit i set = the focus's i-th sum variable is tiled;
 *                k2: the factor (root focus only)
 *   FACTOR_OUT   -
 *   MASK         a: the guard (index in the focus's guards), b: the factor
 *                access it masks (counted among the focus's factor accesses) */
typedef struct RuleSite {
    RuleKind rule;
    const Stage *focus;
    const IrTensor *tensor;
    const Stage *target;
    int a, b;
    int64_t k, k2;
} RuleSite;

typedef struct RuleSites {
    RuleSite *data;
    int len, cap;
} RuleSites;

typedef struct RuleCtx RuleCtx;     /* IrCtx plus scratch space */
typedef struct RuleFocus RuleFocus; /* a focus with the ranges in scope */

typedef struct Rule {
    const char *name;               /* as in the paper */
    const char *tag;                /* short, for dumps and options */
    /* Pushes the candidate sites at one focus (duplicates are dropped). */
    void (*sites)(RuleCtx *rc, const RuleFocus *f, RuleSites *out);
    /* The new root, or NULL when the precondition fails. */
    const Stage *(*apply)(RuleCtx *rc, const RuleFocus *f, const RuleSite *s);
} Rule;

extern const Rule rule_table[RULE_COUNT];

RuleCtx *rule_ctx_new(IrCtx *cx);
void rule_ctx_free(RuleCtx *rc);
IrCtx *rule_ir(RuleCtx *rc);

/* Appends the candidate sites of rule `only` (every rule for RULE_COUNT)
 * at every distinct stage of the tree under root. */
void rule_sites(RuleCtx *rc, const Stage *root, RuleKind only, RuleSites *out);
/* The root rewritten at the site, or NULL (precondition false, focus not
 * in this tree, or an index coefficient overflowed). */
const Stage *rule_apply(RuleCtx *rc, const Stage *root, const RuleSite *site);
void rule_sites_free(RuleSites *s);
/* "var-merge @2 a=h b=r k=1": for dumps and test failures. */
void rule_print_site(const IrCtx *cx, const Stage *root, const RuleSite *s, FILE *fp);

#endif
