/* rule_util.c - what the rules share: the ranges of the variables in
 * scope, bounds, walks over a stage's direct parts, and the rebuild of the
 * tree around a rewritten focus, lists of sites (rc_push, rule_sites_free).
 *
 * Ranges are kept in two arrays indexed by variable id and overwritten as
 * a walk enters each stage.  No entry is ever restored: a variable is bound
 * once on any path from the root, so while a walk is inside a stage every
 * variable it can see holds the range of its one binder.  The arrays grow
 * with the context's variable count, so a rule never pays for the number
 * of variables in the context, only for the size of the tree it rewrites. */
#include "config.h"
#include "rules_int.h"

#include <stdlib.h>
#include <string.h>

/* ---- scope and bounds -------------------------------------------------------- */

void rc_reserve(RuleCtx *rc, int n)
{
    if (n <= rc->cap)
        return;
    int cap = rc->cap ? rc->cap : 64;
    while (cap < n)
        cap *= 2;
    rc->lo = xrealloc(rc->lo, (size_t)cap * sizeof *rc->lo);
    rc->hi = xrealloc(rc->hi, (size_t)cap * sizeof *rc->hi);
    memset(rc->lo + rc->cap, 0, (size_t)(cap - rc->cap) * sizeof *rc->lo);
    memset(rc->hi + rc->cap, 0, (size_t)(cap - rc->cap) * sizeof *rc->hi);
    rc->cap = cap;
}

void rc_bind(RuleCtx *rc, const IrVar *v, int n)
{
    int64_t *lo = rc->lo, *hi = rc->hi;
    for (int i = 0; i < n; i++) {
        if (v[i].id >= rc->cap) {
            rc_reserve(rc, v[i].id + 1);
            lo = rc->lo;
            hi = rc->hi;
        }
        lo[v[i].id] = v[i].lo;
        hi[v[i].id] = v[i].hi;
    }
}

void rc_bind_focus(RuleCtx *rc, const RuleFocus *f)
{
    rc_bind(rc, f->scope, f->nscope);
    rc_bind(rc, f->stage->loops, f->stage->nloops);
    rc_bind(rc, f->stage->sums, f->stage->nsums);
}

IrVar rc_fresh(RuleCtx *rc, const char *name, int64_t lo, int64_t hi)
{
    IrVar v = ir_var_new(rc->cx, name, lo, hi);
    rc_bind(rc, &v, 1);
    return v;
}

void rc_bounds(RuleCtx *rc, const Ix *x, int64_t *mn, int64_t *mx)
{
    ix_bounds(x, rc->lo, rc->hi, mn, mx);
}

bool rc_within(RuleCtx *rc, const Ix *x, int64_t lo, int64_t hi)
{
    int64_t mn, mx;
    rc_bounds(rc, x, &mn, &mx);
    return mn >= lo && mx < hi;
}

void rc_bounds_at(RuleCtx *rc, const Ix *x, int v, int64_t lo, int64_t hi,
                  int64_t *mn, int64_t *mx)
{
    int64_t l = rc->lo[v], h = rc->hi[v];
    rc->lo[v] = lo;
    rc->hi[v] = hi;
    rc_bounds(rc, x, mn, mx);
    rc->lo[v] = l;
    rc->hi[v] = h;
}

/* ---- stages, variables, expressions --------------------------------------- */

/* One variable at a time: the replacements never mention the variables
 * replaced (they are fresh, or from an enclosing scope). */
const IExpr *rc_subst_all(RuleCtx *rc, const IExpr *e, int n, const int *vars,
                          const Ix *const *by)
{
    for (int i = 0; i < n; i++)
        e = ir_subst(rc->cx, e, vars[i], by[i]);
    return e;
}

int rc_range_guards(RuleCtx *rc, const Ix *x, int64_t lo, int64_t hi,
                    const IExpr **g, bool prove)
{
    int64_t mn = INT64_MIN, mx = INT64_MAX;
    if (prove)
        rc_bounds(rc, x, &mn, &mx);
    int n = 0;
    if (mn < lo)
        g[n++] = ir_icmp(rc->cx, OP_GE, x, ix_const(rc->cx, lo));
    if (mx >= hi)
        g[n++] = ir_icmp(rc->cx, OP_LT, x, ix_const(rc->cx, hi));
    return n;
}

void rc_dim_range(const IExpr *acc, int k, int64_t *lo, int64_t *hi)
{
    if (acc->access.tensor) {
        *lo = 0;
        *hi = acc->access.tensor->shape[k];
    } else {
        *lo = acc->access.stage->loops[k].lo;
        *hi = acc->access.stage->loops[k].hi;
    }
}

bool rc_same_target(const IExpr *acc, const IrTensor *t, const Stage *s)
{
    if (acc->access.tensor)
        return acc->access.tensor == t;
    return s && ir_stage_equal(acc->access.stage, s);
}

/* Names of new variables say where they come from (h and r give hr),
 * kept short so that dumps stay readable after many steps. */
const char *rc_name2(RuleCtx *rc, const char *a, const char *b)
{
    char buf[16];                   /* what snprintf's "%s%s" would keep */
    size_t n = strnlen(a, sizeof buf - 1);
    memcpy(buf, a, n);
    size_t m = strnlen(b, sizeof buf - 1 - n);
    memcpy(buf + n, b, m);
    buf[n + m] = '\0';
    return arena_strdup(ir_arena(rc->cx), buf);
}

/* ---- walks ------------------------------------------------------------------ */

/* Whether a zero of e's child i makes e zero: the factors of a product,
 * a numerator, the operand of a negation. */
static bool zero_passes(const IExpr *e, int i)
{
    return e->kind == IE_MUL || e->kind == IE_NEG || (e->kind == IE_DIV && i == 0);
}

static void each_access(const IExpr *e, bool factor, RcAccessFn fn, void *arg)
{
    if (e->kind == IE_ACCESS) {
        fn(arg, e, factor);
        return;
    }
    const IExpr *kids[IR_MAX_CHILDREN];
    int n = ir_expr_children(e, kids);
    for (int i = 0; i < n; i++)
        each_access(kids[i], factor && zero_passes(e, i), fn, arg);
}

void rc_each_access(const Stage *s, RcAccessFn fn, void *arg)
{
    each_access(s->body, true, fn, arg);
    for (int i = 0; i < s->nguards; i++)
        each_access(s->guards[i], false, fn, arg);
}

static void each_ix(const IExpr *e, RcIxFn fn, void *arg)
{
    const Ix *const *ixs;
    int nx = ir_expr_ixs(e, &ixs);
    for (int k = 0; k < nx; k++)
        fn(arg, ixs[k]);
    const IExpr *kids[IR_MAX_CHILDREN];
    int n = ir_expr_children(e, kids);
    for (int i = 0; i < n; i++)
        each_ix(kids[i], fn, arg);
}

void rc_each_ix(const Stage *s, RcIxFn fn, void *arg)
{
    each_ix(s->body, fn, arg);
    for (int i = 0; i < s->nguards; i++)
        each_ix(s->guards[i], fn, arg);
}

const Stage *rc_map_stage(RuleCtx *rc, const Stage *s, IrAccessMap fn, void *arg)
{
    const IExpr *body = ir_map_access(rc->cx, s->body, fn, arg);
    bool changed = body != s->body;
    const IExpr *small[8];
    const IExpr **g = s->nguards <= 8 ? small : xmalloc((size_t)s->nguards * sizeof *g);
    for (int i = 0; i < s->nguards; i++) {
        g[i] = ir_map_access(rc->cx, s->guards[i], fn, arg);
        changed |= g[i] != s->guards[i];
    }
    const Stage *r = !changed ? s
                   : ir_stage_rebody(rc->cx, s, g, s->nguards, body);
    if (g != small)
        free(g);
    return r;
}

/* ---- the tree around the focus --------------------------------------------- */

typedef struct Repl {
    RuleCtx *rc;
    const Stage *from, *to;
    RcRemapFn remap;                /* NULL: same interface */
    const void *arg;
} Repl;

static const IExpr *repl_access(void *arg, const IExpr *acc)
{
    Repl *r = arg;
    RuleCtx *rc = r->rc;
    const Stage *s = acc->access.stage;
    if (!s)
        return acc;
    if (s == r->from || ir_stage_equal(s, r->from)) {
        if (!r->remap)
            return ir_access_stage(rc->cx, r->to, acc->access.idx, acc->access.nidx);
        const Ix *small[16];
        int n = r->to->nloops;
        const Ix **idx = n <= 16 ? small : xmalloc((size_t)n * sizeof *idx);
        r->remap(rc, r->arg, acc->access.idx, idx);
        const IExpr *e = ir_access_stage(rc->cx, r->to, idx, n);
        if (idx != small)
            free(idx);
        return e;
    }
    const Stage *s2 = rc_map_stage(rc, s, repl_access, r);
    return s2 == s ? acc : ir_access_stage(rc->cx, s2, acc->access.idx, acc->access.nidx);
}

const Stage *rc_replace(RuleCtx *rc, const RuleFocus *f, const Stage *to)
{
    if (f->is_root)
        return to;
    Repl r = {rc, f->stage, to, NULL, NULL};
    return rc_map_stage(rc, f->root, repl_access, &r);
}

const Stage *rc_replace_remap(RuleCtx *rc, const RuleFocus *f, const Stage *to,
                              RcRemapFn fn, const void *arg)
{
    if (!f->is_root) {
        Repl r = {rc, f->stage, to, fn, arg};
        return rc_map_stage(rc, f->root, repl_access, &r);
    }
    const Stage *s = f->stage;
    int n = s->nloops, m = to->nloops;
    enum { SMALL = 12 };            /* on the stack when small */
    IrVar lv_small[SMALL];
    const Ix *idx_small[SMALL], *out_small[SMALL];
    IrVar *lv = n <= SMALL ? lv_small : xmalloc((size_t)n * sizeof *lv);
    const Ix **idx = n <= SMALL ? idx_small : xmalloc((size_t)n * sizeof *idx);
    const Ix **out = m <= SMALL ? out_small : xmalloc((size_t)m * sizeof *out);
    for (int k = 0; k < n; k++) {
        lv[k] = rc_fresh(rc, s->loops[k].name, s->loops[k].lo, s->loops[k].hi);
        idx[k] = ix_var(rc->cx, lv[k].id);
    }
    fn(rc, arg, idx, out);
    const Stage *w = ir_stage(rc->cx, RED_NONE, lv, n, NULL, 0, NULL, 0,
                              ir_access_stage(rc->cx, to, out, m));
    if (lv != lv_small)
        free(lv);
    if (idx != idx_small)
        free(idx);
    if (out != out_small)
        free(out);
    return w;
}

typedef struct Reads {
    RuleCtx *rc;
    const Stage *focus;
    int pos;
    int64_t lo, hi;
    bool ok;
} Reads;

static void reads_stage(Reads *r, const Stage *s);

static void reads_access(void *arg, const IExpr *acc, bool factor)
{
    (void)factor;
    Reads *r = arg;
    const Stage *s = acc->access.stage;
    if (!s || !r->ok)
        return;
    if (s == r->focus || ir_stage_equal(s, r->focus))
        r->ok = rc_within(r->rc, acc->access.idx[r->pos], r->lo, r->hi);
    else
        reads_stage(r, s);
}

static void reads_stage(Reads *r, const Stage *s)
{
    rc_bind(r->rc, s->loops, s->nloops);
    rc_bind(r->rc, s->sums, s->nsums);
    rc_each_access(s, reads_access, r);
}

bool rc_reads_within(RuleCtx *rc, const RuleFocus *f, int pos, int64_t lo, int64_t hi)
{
    if (f->is_root)
        return true;
    Reads r = {rc, f->stage, pos, lo, hi, true};
    reads_stage(&r, f->root);
    rc_bind_focus(rc, f);
    return r.ok;
}

typedef struct Count {
    const Stage *q;
    int n;
} Count;

static void count_access(void *arg, const IExpr *acc, bool factor)
{
    (void)factor;
    Count *c = arg;
    const Stage *s = acc->access.stage;
    if (!s)
        return;
    if (s == c->q || ir_stage_equal(s, c->q))
        c->n++;
    else
        rc_each_access(s, count_access, c);
}

int rc_reads(const Stage *root, const Stage *q)
{
    Count c = {q, 0};
    rc_each_access(root, count_access, &c);
    return c.n;
}

static const Stage *freshen_stage(RuleCtx *rc, const Stage *s);

static const IExpr *freshen_access(void *arg, const IExpr *acc)
{
    RuleCtx *rc = arg;
    if (!acc->access.stage)
        return acc;
    return ir_access_stage(rc->cx, freshen_stage(rc, acc->access.stage),
                           acc->access.idx, acc->access.nidx);
}

static const Stage *freshen_stage(RuleCtx *rc, const Stage *s)
{
    int n = s->nloops + s->nsums;
    IrVar *v = xmalloc((size_t)(n ? n : 1) * sizeof *v);
    int *ids = xmalloc((size_t)(n ? n : 1) * sizeof *ids);
    const Ix **by = xmalloc((size_t)(n ? n : 1) * sizeof *by);
    const IExpr **g = xmalloc((size_t)(s->nguards ? s->nguards : 1) * sizeof *g);
    for (int i = 0; i < n; i++) {
        const IrVar *o = i < s->nloops ? &s->loops[i] : &s->sums[i - s->nloops];
        v[i] = rc_fresh(rc, o->name, o->lo, o->hi);
        ids[i] = o->id;
        by[i] = ix_var(rc->cx, v[i].id);
    }
    for (int i = 0; i < s->nguards; i++)
        g[i] = rc_freshen(rc, rc_subst_all(rc, s->guards[i], n, ids, by));
    const IExpr *body = rc_freshen(rc, rc_subst_all(rc, s->body, n, ids, by));
    const Stage *r = ir_stage(rc->cx, s->red, v, s->nloops, v + s->nloops, s->nsums,
                              g, s->nguards, body);
    free(v);
    free(ids);
    free(by);
    free(g);
    return r;
}

const IExpr *rc_freshen(RuleCtx *rc, const IExpr *e)
{
    return ir_map_access(rc->cx, e, freshen_access, rc);
}

/* ---- lists of sites --------------------------------------------------------- */

static bool same_site(const RuleSite *a, const RuleSite *b)
{
    return a->rule == b->rule && a->focus == b->focus && a->tensor == b->tensor
        && a->target == b->target && a->a == b->a && a->b == b->b
        && a->k == b->k && a->k2 == b->k2;
}

/* Duplicates can only come from the same rule at the same focus, which
 * are pushed together at the end of the list. */
void rc_push(RuleSites *out, RuleSite s)
{
    for (int i = out->len - 1; i >= 0; i--) {
        const RuleSite *o = &out->data[i];
        if (o->rule != s.rule || o->focus != s.focus)
            break;
        if (same_site(o, &s))
            return;
    }
    if (out->len == out->cap) {
        out->cap = out->cap ? 2 * out->cap : 64;
        out->data = xrealloc(out->data, (size_t)out->cap * sizeof *out->data);
    }
    out->data[out->len++] = s;
}

void rule_sites_free(RuleSites *s)
{
    free(s->data);
    s->data = NULL;
    s->len = s->cap = 0;
}

int rc_rename_used(RuleCtx *rc, const IrVar *a, int na, const IrVar *b, int nb,
                   const IExpr **body, const IExpr **gin, int ngin, IrVar *fresh,
                   const Ix **idx)
{
    const Ix **by = xmalloc((size_t)(na + nb + 1) * sizeof *by);
    int *ids = xmalloc((size_t)(na + nb + 1) * sizeof *ids);
    int k = 0;
    for (int i = 0; i < na + nb; i++) {
        const IrVar *v = i < na ? &a[i] : &b[i - na];
        bool used = ir_expr_uses(*body, v->id);
        for (int j = 0; j < ngin && !used; j++)
            used = ir_expr_uses(gin[j], v->id);
        if (!used)
            continue;
        fresh[k] = rc_fresh(rc, v->name, v->lo, v->hi);
        ids[k] = v->id;
        idx[k] = ix_var(rc->cx, v->id);
        by[k] = ix_var(rc->cx, fresh[k].id);
        k++;
    }
    *body = rc_subst_all(rc, *body, k, ids, by);
    for (int j = 0; j < ngin; j++)
        gin[j] = rc_subst_all(rc, gin[j], k, ids, by);
    free(by);
    free(ids);
    return k;
}
