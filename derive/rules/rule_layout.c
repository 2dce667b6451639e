/* rule_layout.c - data-layout transformation: split, swap or merge a
 * dimension of a tensor into a relayout tensor, and reorder a stage's own
 * output dimensions.
 *
 * The relayout tensor is a Σ-free nested stage over the original, so the
 * derived expression stays one tree the interpreter can evaluate and the
 * emitter can turn into a relayout kernel (or a load-time step for
 * weights).  For x : [N, M] split in dimension 1 by k:
 *     x'  = L<x0:0..N, x1:0..ceil(M/k), x2:0..k> { x[x0, k*x1 + x2] }
 *     x[a, b]  =>  x'[a, b / k, b % k]
 * and the accesses of the focus (its body and guards) are rewritten, their
 * new subscripts simplified under the ranges in scope (so the dilation of
 * x[b, 4*p1 + p2 + 4*j] disappears into x'[b, p1 + j, p2]).  A split is
 * always exact: where k does not divide M the relayout tensor reads the
 * original's zero padding.  A swap permutes two dimensions.  A merge of
 * dimensions d and d + 1 needs every rewritten access to read d + 1
 * within its range, or two points would share one merged index.
 *
 * The target may also be a nested stage read by the focus (then the
 * relayout stage reads it).  Reordering the focus's own loops is a swap
 * of its output layout; every access to it is rewritten, and at the root a
 * wrapper keeps the output's layout. */
#include "config.h"
#include "rules_int.h"

#include <stdlib.h>
#include <string.h>

/* ---- sites ------------------------------------------------------------------ */

typedef struct Targets {
    const IExpr *acc[32];           /* one access per distinct target */
    int n;
} Targets;

static void target_scan(void *arg, const IExpr *acc, bool factor)
{
    (void)factor;
    Targets *t = arg;
    for (int i = 0; i < t->n; i++)
        if (rc_same_target(t->acc[i], acc->access.tensor, acc->access.stage))
            return;
    if (t->n < 32 && acc->access.nidx > 0)
        t->acc[t->n++] = acc;
}

static RuleSite site_for(const RuleFocus *f, RuleKind rule, const IExpr *acc)
{
    return (RuleSite){.rule = rule, .focus = f->stage, .tensor = acc->access.tensor,
                      .target = acc->access.stage};
}

void lswap_sites(RuleCtx *rc, const RuleFocus *f, RuleSites *out)
{
    (void)rc;
    Targets t = {.n = 0};
    rc_each_access(f->stage, target_scan, &t);
    for (int i = 0; i < t.n; i++)
        for (int a = 0; a < t.acc[i]->access.nidx; a++)
            for (int b = a + 1; b < t.acc[i]->access.nidx; b++) {
                RuleSite s = site_for(f, RULE_LAYOUT_SWAP, t.acc[i]);
                s.a = a;
                s.b = b;
                rc_push(out, s);
            }
}

void lmerge_sites(RuleCtx *rc, const RuleFocus *f, RuleSites *out)
{
    (void)rc;
    Targets t = {.n = 0};
    rc_each_access(f->stage, target_scan, &t);
    for (int i = 0; i < t.n; i++)
        for (int a = 0; a + 1 < t.acc[i]->access.nidx; a++) {
            RuleSite s = site_for(f, RULE_LAYOUT_MERGE, t.acc[i]);
            s.a = a;
            rc_push(out, s);
        }
}

typedef struct Factors {
    const IExpr *target;
    int64_t k[16];
    int nk;
    int dim;
} Factors;

static void add_factor(Factors *fs, int64_t k)
{
    k = k < 0 ? -k : k;
    for (int i = 0; i < fs->nk; i++)
        if (fs->k[i] == k)
            return;
    if (k >= 2 && fs->nk < 16)
        fs->k[fs->nk++] = k;
}

/* Split factors of one dimension: its coefficients (a dilation) and the
 * divisors of its div/mod atoms. */
static void factor_scan(void *arg, const IExpr *acc, bool factor)
{
    (void)factor;
    Factors *fs = arg;
    if (!rc_same_target(acc, fs->target->access.tensor, fs->target->access.stage))
        return;
    const Ix *x = acc->access.idx[fs->dim];
    for (int i = 0; i < x->n; i++)
        add_factor(fs, x->t[i].kind == IX_VAR ? x->t[i].coef : x->t[i].d);
}

void lsplit_sites(RuleCtx *rc, const RuleFocus *f, RuleSites *out)
{
    (void)rc;
    Targets t = {.n = 0};
    rc_each_access(f->stage, target_scan, &t);
    for (int i = 0; i < t.n; i++)
        for (int d = 0; d < t.acc[i]->access.nidx; d++) {
            Factors fs = {.target = t.acc[i], .dim = d};
            rc_each_access(f->stage, factor_scan, &fs);
            int64_t lo, hi;
            rc_dim_range(t.acc[i], d, &lo, &hi);
            for (int j = 0; j < fs.nk; j++) {
                if (fs.k[j] >= hi - lo)
                    continue;
                for (int order = 0; order < 2; order++) {
                    RuleSite s = site_for(f, RULE_LAYOUT_SPLIT, t.acc[i]);
                    s.a = d;
                    s.b = order;
                    s.k = fs.k[j];
                    rc_push(out, s);
                }
            }
        }
}

void loopswap_sites(RuleCtx *rc, const RuleFocus *f, RuleSites *out)
{
    (void)rc;
    for (int a = 0; a < f->stage->nloops; a++)
        for (int b = a + 1; b < f->stage->nloops; b++)
            rc_push(out, (RuleSite){.rule = RULE_LOOP_SWAP, .focus = f->stage, .a = a, .b = b});
}

/* ---- relayout ---------------------------------------------------------------- */

typedef struct Relayout {
    RuleCtx *rc;
    const RuleSite *site;
    const Stage *to;                /* the relayout stage */
    int rank;
    int64_t lo[2], len[2];          /* ranges of the dimensions split or merged */
    bool ok;
} Relayout;

/* The new subscripts of an access to the target. */
static const IExpr *relayout_access(void *arg, const IExpr *acc)
{
    Relayout *r = arg;
    RuleCtx *rc = r->rc;
    const RuleSite *st = r->site;
    if (!rc_same_target(acc, st->tensor, st->target))
        return acc;
    IrCtx *cx = rc->cx;
    const Ix *const *a = acc->access.idx;
    const Ix *idx[64];
    int n = 0, d = st->a;
    for (int k = 0; k < r->rank; k++) {
        if (st->rule == RULE_LAYOUT_SWAP) {
            idx[n++] = a[k == st->a ? st->b : k == st->b ? st->a : k];
        } else if (k != d) {
            if (st->rule != RULE_LAYOUT_MERGE || k != d + 1)
                idx[n++] = a[k];
        } else if (st->rule == RULE_LAYOUT_SPLIT) {
            const Ix *q = ix_div(cx, a[d], st->k), *m = ix_mod(cx, a[d], st->k);
            idx[n++] = st->b ? m : q;
            idx[n++] = st->b ? q : m;
        } else {
            r->ok &= rc_within(rc, a[d + 1], r->lo[1], r->lo[1] + r->len[1]);
            idx[n++] = ix_add(cx, ix_scale(cx, ix_sub(cx, a[d], ix_const(cx, r->lo[0])), r->len[1]),
                              ix_sub(cx, a[d + 1], ix_const(cx, r->lo[1])));
        }
    }
    for (int k = 0; k < n; k++)
        idx[k] = ix_simplify(cx, idx[k], rc->lo, rc->hi);
    return ir_access_stage(cx, r->to, idx, n);
}

/* n (0 to 99) in decimal: the position of a dim in a new layout. */
static void dim_number(char *buf, int n)
{
    int i = 0;
    if (n >= 10)
        buf[i++] = (char)('0' + n / 10);
    buf[i++] = (char)('0' + n % 10);
    buf[i] = '\0';
}

static const Stage *relayout(RuleCtx *rc, const RuleFocus *f, const RuleSite *st)
{
    IrCtx *cx = rc->cx;
    Targets t = {.n = 0};
    rc_each_access(f->stage, target_scan, &t);
    const IExpr *acc = NULL;
    for (int i = 0; i < t.n && !acc; i++)
        if (rc_same_target(t.acc[i], st->tensor, st->target))
            acc = t.acc[i];
    int rank = acc ? acc->access.nidx : 0, d = st->a;
    bool split = st->rule == RULE_LAYOUT_SPLIT, merge = st->rule == RULE_LAYOUT_MERGE;
    if (!acc || rank > 32 || d < 0 || d >= rank || (split && st->k < 2)
        || (merge && d + 1 >= rank)
        || (st->rule == RULE_LAYOUT_SWAP && (st->b <= d || st->b >= rank)))
        return NULL;
    const char *name = st->tensor ? st->tensor->name : "t";
    IrVar v[33];
    const Ix *src[32];              /* what the relayout stage reads */
    int nv = 0;
    Relayout r = {rc, st, NULL, rank, {0, 0}, {0, 0}, true};
    for (int k = 0; k < rank; k++) {
        int64_t lo, hi;
        rc_dim_range(acc, k, &lo, &hi);
        char num[4];
        dim_number(num, nv);
        if (st->rule == RULE_LAYOUT_SWAP) {
            int j = k == d ? st->b : k == st->b ? d : k;   /* new dim k reads old j */
            rc_dim_range(acc, j, &lo, &hi);
            v[nv] = rc_fresh(rc, rc_name2(rc, name, num), lo, hi);
            src[j] = ix_var(cx, v[nv++].id);
        } else if (k != d) {
            if (merge && k == d + 1)
                continue;
            v[nv] = rc_fresh(rc, rc_name2(rc, name, num), lo, hi);
            src[k] = ix_var(cx, v[nv++].id);
        } else if (split) {
            if (hi <= lo)
                return NULL;
            /* Named by their position in the new layout. */
            char num2[4];
            dim_number(num2, nv + 1);
            IrVar q = rc_fresh(rc, rc_name2(rc, name, st->b ? num2 : num), i64_floordiv(lo, st->k),
                               i64_floordiv(hi - 1, st->k) + 1);
            IrVar m = rc_fresh(rc, rc_name2(rc, name, st->b ? num : num2), 0, st->k);
            v[nv++] = st->b ? m : q;
            v[nv++] = st->b ? q : m;
            src[k] = ix_add(cx, ix_scale(cx, ix_var(cx, q.id), st->k), ix_var(cx, m.id));
        } else {
            int64_t lo1, hi1, size;
            rc_dim_range(acc, k + 1, &lo1, &hi1);
            r.lo[0] = lo;
            r.len[0] = hi - lo;
            r.lo[1] = lo1;
            r.len[1] = hi1 - lo1;
            if (r.len[0] <= 0 || r.len[1] <= 0 || !i64_mul(r.len[0], r.len[1], &size))
                return NULL;
            v[nv] = rc_fresh(rc, rc_name2(rc, name, num), 0, size);
            const Ix *m = ix_var(cx, v[nv++].id);
            src[k] = ix_add(cx, ix_div(cx, m, r.len[1]), ix_const(cx, lo));
            src[k + 1] = ix_add(cx, ix_mod(cx, m, r.len[1]), ix_const(cx, lo1));
        }
    }
    const IExpr *body = st->tensor ? ir_access_tensor(cx, st->tensor, src, rank)
                                   : ir_access_stage(cx, st->target, src, rank);
    r.to = ir_stage(cx, RED_NONE, v, nv, NULL, 0, NULL, 0, body);
    const Stage *s = rc_map_stage(rc, f->stage, relayout_access, &r);
    return r.ok ? rc_replace(rc, f, s) : NULL;
}

const Stage *lsplit_apply(RuleCtx *rc, const RuleFocus *f, const RuleSite *s)
{
    return s->rule == RULE_LAYOUT_SPLIT ? relayout(rc, f, s) : NULL;
}

const Stage *lswap_apply(RuleCtx *rc, const RuleFocus *f, const RuleSite *s)
{
    return s->rule == RULE_LAYOUT_SWAP ? relayout(rc, f, s) : NULL;
}

const Stage *lmerge_apply(RuleCtx *rc, const RuleFocus *f, const RuleSite *s)
{
    return s->rule == RULE_LAYOUT_MERGE ? relayout(rc, f, s) : NULL;
}

/* ---- the focus's own output order --------------------------------------------- */

typedef struct Swap {
    int a, b, n;
} Swap;

static void swap_remap(RuleCtx *rc, const void *arg, const Ix *const *idx, const Ix **out)
{
    (void)rc;
    const Swap *w = arg;
    memcpy(out, idx, (size_t)w->n * sizeof *out);
    out[w->a] = idx[w->b];
    out[w->b] = idx[w->a];
}

const Stage *loopswap_apply(RuleCtx *rc, const RuleFocus *f, const RuleSite *st)
{
    const Stage *s = f->stage;
    if (st->a < 0 || st->b <= st->a || st->b >= s->nloops)
        return NULL;
    IrVar *v = xmalloc((size_t)s->nloops * sizeof *v);
    memcpy(v, s->loops, (size_t)s->nloops * sizeof *v);
    v[st->a] = s->loops[st->b];
    v[st->b] = s->loops[st->a];
    const Stage *to = ir_stage(rc->cx, s->red, v, s->nloops, s->sums, s->nsums,
                               s->guards, s->nguards, s->body);
    free(v);
    Swap w = {st->a, st->b, s->nloops};
    return rc_replace_remap(rc, f, to, swap_remap, &w);
}
