/* rules.c - the rule table, the context, and site enumeration: a walk
 * down the tree that keeps the variables bound above each stage, asks
 * every rule for its sites at each distinct stage, or finds the focus of
 * one site and applies its rule there. */
#include "config.h"
#include "rules_int.h"

#include <stdlib.h>
#include <string.h>

const Rule rule_table[RULE_COUNT] = {
    [RULE_SUM_SPLIT] = {"summation splitting", "sum-split", split_sites, split_apply},
    [RULE_VAR_MERGE] = {"variable substitution (merge)", "var-merge", merge_sites, merge_apply},
    [RULE_VAR_SPLIT] = {"variable substitution (split)", "var-split", vsplit_sites, vsplit_apply},
    [RULE_VAR_FUSE] = {"variable substitution (fuse)", "var-fuse", fuse_sites, fuse_apply},
    [RULE_VAR_DROP] = {"variable substitution (drop)", "var-drop", drop_sites, drop_apply},
    [RULE_INLINE] = {"traversal merging", "inline", inline_sites, inline_apply},
    [RULE_TIGHTEN] = {"boundary tightening", "tighten", tighten_sites, tighten_apply},
    [RULE_RELAX] = {"boundary relaxing", "relax", relax_sites, relax_apply},
    [RULE_LAYOUT_SPLIT] = {"data-layout transformation (split)", "layout-split", lsplit_sites, lsplit_apply},
    [RULE_LAYOUT_SWAP] = {"data-layout transformation (swap)", "layout-swap", lswap_sites, lswap_apply},
    [RULE_LAYOUT_MERGE] = {"data-layout transformation (merge)", "layout-merge", lmerge_sites, lmerge_apply},
    [RULE_LOOP_SWAP] = {"data-layout transformation (output)", "loop-swap", loopswap_sites, loopswap_apply},
    [RULE_SUM_TILE] = {"summation tiling (relax, split, split Σ)", "sum-tile", tile_sites, tile_apply},
    [RULE_FACTOR_OUT] = {"summation splitting (factors)", "factor-out", factor_sites, factor_apply},
    [RULE_MASK] = {"guard masking", "mask", mask_sites, mask_apply},
};

/* ---- context ------------------------------------------------------------------ */

RuleCtx *rule_ctx_new(IrCtx *cx)
{
    RuleCtx *rc = xcalloc(1, sizeof *rc);
    rc->cx = cx;
    return rc;
}

void rule_ctx_free(RuleCtx *rc)
{
    if (!rc)
        return;
    free(rc->lo);
    free(rc->hi);
    free(rc);
}

IrCtx *rule_ir(RuleCtx *rc)
{
    return rc->cx;
}

/* A walk down the tree that keeps the stack of variables bound above the
 * stage it is in.  It either enumerates sites at every distinct stage or
 * looks for one focus. */
typedef struct Walk {
    RuleCtx *rc;
    const Stage *root;
    IrVar *scope;                   /* scope_small, or on the heap when more */
    int n, cap;
    const Stage **seen;             /* distinct stages visited: seen_small... */
    int nseen, capseen;
    RuleKind only;
    RuleSites *out;                 /* enumerating */
    const Stage *want;              /* looking for this focus */
    RuleFocus *found;
    /* a walk is made for every rule application and every search of
     * sites (millions in a compile): most trees fit these */
    IrVar scope_small[24];
    const Stage *seen_small[32];
} Walk;

/* Every field but the inline arrays, which a walk fills as it goes (an
 * initializer would clear them, a kilobyte, on every walk). */
static void walk_init(Walk *w, RuleCtx *rc, const Stage *root, RuleKind only,
                      RuleSites *out, const Stage *want, RuleFocus *found)
{
    w->rc = rc;
    w->root = root;
    w->n = w->nseen = 0;
    w->only = only;
    w->out = out;
    w->want = want;
    w->found = found;
    w->scope = w->scope_small;
    w->cap = (int)(sizeof w->scope_small / sizeof *w->scope_small);
    w->seen = w->seen_small;
    w->capseen = (int)(sizeof w->seen_small / sizeof *w->seen_small);
}

static void walk_free(Walk *w)
{
    if (w->scope != w->scope_small)
        free(w->scope);
    if (w->seen != w->seen_small)
        free(w->seen);
}

/* Grows the array *p of *cap elements of size sz, inline (not freed) when
 * it is small, to hold at least need. */
static void grow(void **p, int *cap, int need, size_t sz, const void *small)
{
    int cap2 = 2 * need + 16;
    void *q = xmalloc((size_t)cap2 * sz);
    memcpy(q, *p, (size_t)*cap * sz);
    if (*p != small)
        free(*p);
    *p = q;
    *cap = cap2;
}

static void walk_stage(Walk *w, const Stage *s);

static void walk_access(void *arg, const IExpr *acc, bool factor)
{
    (void)factor;
    Walk *w = arg;
    if (acc->access.stage && !(w->want && w->found->stage))
        walk_stage(w, acc->access.stage);
}

static void push_scope(Walk *w, const IrVar *v, int n)
{
    if (n == 0)
        return;
    if (w->n + n > w->cap)
        grow((void **)&w->scope, &w->cap, w->n + n, sizeof *w->scope, w->scope_small);
    memcpy(w->scope + w->n, v, (size_t)n * sizeof *v);
    w->n += n;
}

static void walk_stage(Walk *w, const Stage *s)
{
    RuleFocus f = {w->root, s, s == w->root, w->scope, w->n};
    if (w->want) {
        if (s == w->want || ir_stage_equal(s, w->want)) {
            /* the walk ends here: w->scope[0 .. w->n) stays as it is */
            *w->found = f;
            return;
        }
    } else {
        for (int i = 0; i < w->nseen; i++)
            if (ir_stage_equal(w->seen[i], s))
                return;
        if (w->nseen == w->capseen)
            grow((void **)&w->seen, &w->capseen, w->nseen + 1, sizeof *w->seen, w->seen_small);
        w->seen[w->nseen++] = s;
        for (int r = 0; r < RULE_COUNT; r++) {
            if (w->only != RULE_COUNT && (int)w->only != r)
                continue;
            rc_bind_focus(w->rc, &f);
            rule_table[r].sites(w->rc, &f, w->out);
        }
    }
    int base = w->n;
    push_scope(w, s->loops, s->nloops);
    push_scope(w, s->sums, s->nsums);
    rc_each_access(s, walk_access, w);
    w->n = base;
}

void rule_sites(RuleCtx *rc, const Stage *root, RuleKind only, RuleSites *out)
{
    rc_reserve(rc, ir_var_count(rc->cx));
    Walk w;
    walk_init(&w, rc, root, only, out, NULL, NULL);
    walk_stage(&w, root);
    walk_free(&w);
}

const Stage *rule_apply(RuleCtx *rc, const Stage *root, const RuleSite *site)
{
    if ((unsigned)site->rule >= RULE_COUNT)
        return NULL;
    rc_reserve(rc, ir_var_count(rc->cx));
    RuleFocus f = {0};
    Walk w;
    walk_init(&w, rc, root, RULE_COUNT, NULL, site->focus, &f);
    walk_stage(&w, root);
    if (!f.stage) {
        walk_free(&w);
        return NULL;
    }
    rc_bind_focus(rc, &f);          /* f.scope is w's */
    ir_ctx_overflowed(rc->cx);
    const Stage *r = rule_table[site->rule].apply(rc, &f, site);
    walk_free(&w);
    if (ir_ctx_overflowed(rc->cx) || (r && ir_stage_equal(r, root)))
        return NULL;
    return r;
}

/* ---- printing --------------------------------------------------------------- */

typedef struct Index {
    const Stage *want;
    int n, at;
} Index;

static void index_access(void *arg, const IExpr *acc, bool factor);

static void index_stage(Index *x, const Stage *s)
{
    if (s == x->want && x->at < 0)
        x->at = x->n;
    x->n++;
    rc_each_access(s, index_access, x);
}

static void index_access(void *arg, const IExpr *acc, bool factor)
{
    (void)factor;
    if (acc->access.stage)
        index_stage(arg, acc->access.stage);
}

void rule_print_site(const IrCtx *cx, const Stage *root, const RuleSite *s, FILE *fp)
{
    Index x = {s->focus, 0, -1};
    index_stage(&x, root);
    fprintf(fp, "%s @%d", (unsigned)s->rule < RULE_COUNT ? rule_table[s->rule].tag : "?", x.at);
    switch (s->rule) {
    case RULE_VAR_MERGE: case RULE_VAR_FUSE:
        fprintf(fp, " %s %s k=%lld", ir_var_name(cx, s->a), ir_var_name(cx, s->b), (long long)s->k);
        break;
    case RULE_VAR_DROP:
        fprintf(fp, " %s", ir_var_name(cx, s->a));
        break;
    case RULE_VAR_SPLIT:
        fprintf(fp, " %s k=%lld off=%lld", ir_var_name(cx, s->a), (long long)s->k, (long long)s->k2);
        break;
    case RULE_RELAX:
        fprintf(fp, " %s %lld..%lld", ir_var_name(cx, s->a), (long long)s->k, (long long)s->k2);
        break;
    case RULE_SUM_SPLIT:
        fprintf(fp, " mask=%#llx", (unsigned long long)s->k);
        break;
    case RULE_SUM_TILE:
        fprintf(fp, " mask=%#llx k=%lld", (unsigned long long)s->k, (long long)s->k2);
        break;
    case RULE_TIGHTEN: case RULE_FACTOR_OUT:
        break;
    case RULE_MASK:
        fprintf(fp, " guard=%d access=%d", s->a, s->b);
        break;
    default:
        if (s->tensor)
            fprintf(fp, " %s", s->tensor->name);
        fprintf(fp, " a=%d b=%d k=%lld", s->a, s->b, (long long)s->k);
        break;
    }
}
