/* rule_subst.c - variable substitution: merge two iterators into one,
 * split one into two, fuse two into one.
 *
 *   merge  j = i1 + k*i2   (i1 := j - k*i2; i2 stays)
 *   split  i + o = k*p1 + p2, p2 in [0, k)
 *   fuse   z = (x - lo_x) + len(x)*(y - lo_y)   (or len(x)*(hi_y - 1 - y))
 *
 * Each is a change of basis of the focus's iteration space.  For sum
 * variables the stage just iterates the new box; where the box holds points
 * that are not images of old points, a guard excludes them.  For loop
 * variables the focus's output layout changes, so every access to it is
 * rewritten (focus[.., a1, .., a2, ..] -> focus'[.., a1 + k*a2, .., a2, ..]
 * for a merge); at the root a Σ-free wrapper keeps the output's layout.
 * The new points of a loop box are read only by accesses that used to read
 * outside the old box, i.e. zeros: a guard keeps them zero unless every
 * access provably reads inside.  A loop variable merges only with a loop
 * variable (merging a loop with a sum variable would make one output point
 * depend on another's terms); a sum variable merges with either.
 *
 * Sites come from the index expressions of the focus: pairs of variables
 * whose coefficients in one subscript divide (merge) or differ by the
 * length of one of them (fuse); for splits, the divisors of div/mod atoms,
 * ratios of coefficients, and small divisors of the variable's length. */
#include "config.h"
#include "rules_int.h"

#include <stdlib.h>
#include <string.h>

static const IrVar *bound_var(const Stage *s, int var, bool *loop)
{
    int p = ir_loop_pos(s, var);
    if (p >= 0) {
        *loop = true;
        return &s->loops[p];
    }
    p = ir_sum_pos(s, var);
    *loop = false;
    return p >= 0 ? &s->sums[p] : NULL;
}

static int64_t len(const IrVar *v)
{
    return v->hi - v->lo;
}

/* The focus with body and guards substituted (var := by), extra guards
 * added, and new variable lists. */
static const Stage *rebuild(RuleCtx *rc, const Stage *s, int var, const Ix *by,
                            const IExpr **extra, int nextra, const IrVar *loops,
                            int nloops, const IrVar *sums, int nsums)
{
    int ng = s->nguards + nextra;
    const IExpr *small[8];
    const IExpr **g = ng <= 8 ? small : xmalloc((size_t)ng * sizeof *g);
    for (int i = 0; i < s->nguards; i++)
        g[i] = ir_subst(rc->cx, s->guards[i], var, by);
    for (int i = 0; i < nextra; i++)
        g[s->nguards + i] = extra[i];
    const Stage *r = ir_stage(rc->cx, s->red, loops, nloops, sums, nsums, g, ng,
                              ir_subst(rc->cx, s->body, var, by));
    if (g != small)
        free(g);
    return r;
}

/* A copy of v (n entries) with entry `at` replaced by the m entries of w. */
static IrVar *splice(const IrVar *v, int n, int at, const IrVar *w, int m)
{
    IrVar *r = xmalloc((size_t)(n + m) * sizeof *r);
    for (int i = 0; i < at; i++)
        r[i] = v[i];
    for (int i = 0; i < m; i++)
        r[at + i] = w[i];
    for (int i = at + 1; i < n; i++)
        r[i - 1 + m] = v[i];
    return r;
}

/* ---- sites ------------------------------------------------------------------ */

/* k = a / b when b divides a (and the quotient fits). */
static bool ratio(int64_t a, int64_t b, int64_t *k)
{
    if (b == 0 || (b == -1 && a == INT64_MIN) || a % b != 0)
        return false;
    *k = a / b;
    return true;
}

typedef struct SiteScan {
    RuleCtx *rc;
    const RuleFocus *f;
    RuleSites *out;
} SiteScan;

static void pair_sites(SiteScan *sc, const Ix *x)
{
    const Stage *s = sc->f->stage;
    for (int i = 0; i < x->n; i++) {
        if (x->t[i].kind != IX_VAR) {
            pair_sites(sc, x->t[i].arg);
            continue;
        }
        bool l1, l2;
        const IrVar *v1 = bound_var(s, x->t[i].var, &l1);
        if (!v1)
            continue;
        for (int j = 0; j < x->n; j++) {
            const IrVar *v2;
            if (j == i || x->t[j].kind != IX_VAR || !(v2 = bound_var(s, x->t[j].var, &l2)))
                continue;
            int64_t k;
            if (!ratio(x->t[j].coef, x->t[i].coef, &k))
                continue;
            if (!l1 || l2)
                rc_push(sc->out, (RuleSite){.rule = RULE_VAR_MERGE, .focus = s,
                                            .a = v1->id, .b = v2->id, .k = k});
            if (l1 == l2 && (k == len(v1) || k == -len(v1)))
                rc_push(sc->out, (RuleSite){.rule = RULE_VAR_FUSE, .focus = s,
                                            .a = v1->id, .b = v2->id, .k = k});
        }
    }
}

static void merge_scan(void *arg, const IExpr *acc, bool factor)
{
    (void)factor;
    SiteScan *sc = arg;
    for (int k = 0; k < acc->access.nidx; k++)
        pair_sites(sc, acc->access.idx[k]);
}

/* Merge and fuse sites come from the same scan; each rule keeps its own. */
static void pairs(RuleCtx *rc, const RuleFocus *f, RuleSites *out, RuleKind want)
{
    RuleSites all = {0};
    SiteScan sc = {rc, f, &all};
    rc_each_access(f->stage, merge_scan, &sc);
    for (int i = 0; i < all.len; i++)
        if (all.data[i].rule == want)
            rc_push(out, all.data[i]);
    rule_sites_free(&all);
}

void merge_sites(RuleCtx *rc, const RuleFocus *f, RuleSites *out)
{
    pairs(rc, f, out, RULE_VAR_MERGE);
}

void fuse_sites(RuleCtx *rc, const RuleFocus *f, RuleSites *out)
{
    pairs(rc, f, out, RULE_VAR_FUSE);
}

/* A split of v by k with offset sign*c (mod k). */
static void push_split(SiteScan *sc, const IrVar *v, int64_t k, int64_t c, int sign)
{
    if (k >= 2 && k < len(v))
        rc_push(sc->out, (RuleSite){.rule = RULE_VAR_SPLIT, .focus = sc->f->stage, .a = v->id,
                                    .k = k, .k2 = i64_floormod(sign * i64_floormod(c, k), k)});
}

/* A div/mod atom by d whose argument holds +-v suggests v + o = d*p1 + p2
 * with o the argument's constant: (h + 1 - r) / 2 gives h + 1 = 2*p1 + p2,
 * after which the atom becomes p1 + (p2 - r) / 2.  In a subscript, a
 * coefficient that is a multiple k of v's suggests v = k*p1 + p2 (a
 * dilation k). */
static void split_ix(SiteScan *sc, const Ix *x, bool top)
{
    const Stage *s = sc->f->stage;
    bool loop;
    for (int i = 0; i < x->n; i++) {
        const IxTerm *t = &x->t[i];
        if (t->kind != IX_VAR) {
            for (int j = 0; j < t->arg->n; j++) {
                const IxTerm *u = &t->arg->t[j];
                const IrVar *v;
                if (u->kind == IX_VAR && (u->coef == 1 || u->coef == -1)
                    && (v = bound_var(s, u->var, &loop)))
                    push_split(sc, v, t->d, t->arg->c, (int)u->coef);
            }
            split_ix(sc, t->arg, false);
            continue;
        }
        const IrVar *v = bound_var(s, t->var, &loop);
        if (!v || !top)
            continue;
        for (int j = 0; j < x->n; j++) {
            const IxTerm *u = &x->t[j];
            int64_t k;
            if (j == i || u->kind != IX_VAR || !ratio(u->coef, t->coef, &k) || k == INT64_MIN)
                continue;
            bool unit = t->coef == 1 || t->coef == -1;
            push_split(sc, v, k < 0 ? -k : k, unit ? x->c : 0, unit ? (int)t->coef : 1);
        }
    }
}

static void split_scan(void *arg, const Ix *x)
{
    split_ix(arg, x, true);
}

void vsplit_sites(RuleCtx *rc, const RuleFocus *f, RuleSites *out)
{
    SiteScan sc = {rc, f, out};
    rc_each_ix(f->stage, split_scan, &sc);
    const Stage *s = f->stage;
    for (int i = 0; i < s->nloops + s->nsums; i++) {
        const IrVar *v = i < s->nloops ? &s->loops[i] : &s->sums[i - s->nloops];
        for (int64_t k = 2; k <= 8; k++)
            if (len(v) % k == 0)
                push_split(&sc, v, k, v->lo, -1);
    }
}

/* ---- merge ----------------------------------------------------------------- */

typedef struct MergeMap {
    int p1, p2;
    int64_t k;
    int n;
} MergeMap;

static void merge_remap(RuleCtx *rc, const void *arg, const Ix *const *idx, const Ix **out)
{
    const MergeMap *m = arg;
    memcpy(out, idx, (size_t)m->n * sizeof *out);
    out[m->p1] = ix_add(rc->cx, idx[m->p1], ix_scale(rc->cx, idx[m->p2], m->k));
}

const Stage *merge_apply(RuleCtx *rc, const RuleFocus *f, const RuleSite *st)
{
    const Stage *s = f->stage;
    IrCtx *cx = rc->cx;
    bool l1, l2;
    const IrVar *v1 = bound_var(s, st->a, &l1), *v2 = bound_var(s, st->b, &l2);
    if (!v1 || !v2 || v1 == v2 || st->k == 0 || (l1 && !l2) || len(v1) <= 0 || len(v2) <= 0)
        return NULL;
    int64_t e1, e2, lo, hi;
    if (!i64_mul(st->k, v2->lo, &e1) || !i64_mul(st->k, v2->hi - 1, &e2)
        || !i64_add(v1->lo, e1 < e2 ? e1 : e2, &lo) || !i64_add(v1->hi, e1 < e2 ? e2 : e1, &hi))
        return NULL;
    IrVar j = rc_fresh(rc, rc_name2(rc, v1->name, v2->name), lo, hi);
    const Ix *by = ix_sub(cx, ix_var(cx, j.id), ix_scale(cx, ix_var(cx, v2->id), st->k));
    const IExpr *g[2];
    int ng = 0, p1 = ir_loop_pos(s, v1->id);
    if (!l1 || !rc_reads_within(rc, f, p1, v1->lo, v1->hi))
        ng = rc_range_guards(rc, by, v1->lo, v1->hi, g, true);
    IrVar *vars = l1 ? splice(s->loops, s->nloops, p1, &j, 1)
                     : splice(s->sums, s->nsums, ir_sum_pos(s, v1->id), &j, 1);
    const Stage *r;
    if (l1) {
        const Stage *to = rebuild(rc, s, v1->id, by, g, ng, vars, s->nloops, s->sums, s->nsums);
        MergeMap m = {p1, ir_loop_pos(s, v2->id), st->k, s->nloops};
        r = rc_replace_remap(rc, f, to, merge_remap, &m);
    } else {
        r = rc_replace(rc, f, rebuild(rc, s, v1->id, by, g, ng, s->loops, s->nloops,
                                      vars, s->nsums));
    }
    free(vars);
    return r;
}

/* ---- split ------------------------------------------------------------------ */

typedef struct SplitMap {
    int pos, n;
    int64_t k, off;
} SplitMap;

static void split_remap(RuleCtx *rc, const void *arg, const Ix *const *idx, const Ix **out)
{
    const SplitMap *m = arg;
    const Ix *a = ix_add(rc->cx, idx[m->pos], ix_const(rc->cx, m->off));
    memcpy(out, idx, (size_t)m->pos * sizeof *out);
    out[m->pos] = ix_div(rc->cx, a, m->k);
    out[m->pos + 1] = ix_mod(rc->cx, a, m->k);
    memcpy(out + m->pos + 2, idx + m->pos + 1, (size_t)(m->n - m->pos - 1) * sizeof *out);
}

const Stage *vsplit_apply(RuleCtx *rc, const RuleFocus *f, const RuleSite *st)
{
    const Stage *s = f->stage;
    IrCtx *cx = rc->cx;
    bool loop;
    const IrVar *v = bound_var(s, st->a, &loop);
    int64_t k = st->k, off = st->k2, a, b;
    if (!v || k < 2 || len(v) <= 0 || !i64_add(v->lo, off, &a) || !i64_add(v->hi, off, &b))
        return NULL;
    IrVar p[2];
    p[0] = rc_fresh(rc, rc_name2(rc, v->name, "1"), i64_floordiv(a, k),
                    i64_floordiv(b - 1, k) + 1);
    p[1] = rc_fresh(rc, rc_name2(rc, v->name, "2"), 0, k);
    const Ix *by = ix_add(cx, ix_add(cx, ix_scale(cx, ix_var(cx, p[0].id), k),
                                     ix_var(cx, p[1].id)), ix_const(cx, -off));
    bool aligned = i64_floormod(a, k) == 0 && i64_floormod(b, k) == 0;
    int pos = loop ? ir_loop_pos(s, v->id) : ir_sum_pos(s, v->id);
    const IExpr *g[2];
    int ng = 0;
    if (!aligned && (!loop || !rc_reads_within(rc, f, pos, v->lo, v->hi)))
        ng = rc_range_guards(rc, by, v->lo, v->hi, g, true);
    const Stage *r;
    if (loop) {
        IrVar *vars = splice(s->loops, s->nloops, pos, p, 2);
        const Stage *to = rebuild(rc, s, v->id, by, g, ng, vars, s->nloops + 1, s->sums, s->nsums);
        SplitMap m = {pos, s->nloops, k, off};
        r = rc_replace_remap(rc, f, to, split_remap, &m);
        free(vars);
    } else {
        IrVar *vars = splice(s->sums, s->nsums, pos, p, 2);
        r = rc_replace(rc, f, rebuild(rc, s, v->id, by, g, ng, s->loops, s->nloops,
                                      vars, s->nsums + 1));
        free(vars);
    }
    return r;
}

/* ---- fuse ------------------------------------------------------------------- */

typedef struct FuseMap {
    int px, py, n;                  /* positions in the old loop list */
    int64_t lx, ly, hy, len, sign;
} FuseMap;

static void fuse_remap(RuleCtx *rc, const void *arg, const Ix *const *idx, const Ix **out)
{
    const FuseMap *m = arg;
    IrCtx *cx = rc->cx;
    const Ix *y = m->sign > 0 ? ix_sub(cx, idx[m->py], ix_const(cx, m->ly))
                              : ix_sub(cx, ix_const(cx, m->hy - 1), idx[m->py]);
    const Ix *z = ix_add(cx, ix_sub(cx, idx[m->px], ix_const(cx, m->lx)), ix_scale(cx, y, m->len));
    int w = 0;
    for (int i = 0; i < m->n; i++)
        if (i != m->px)
            out[w++] = i == m->py ? z : idx[i];
}

const Stage *fuse_apply(RuleCtx *rc, const RuleFocus *f, const RuleSite *st)
{
    const Stage *s = f->stage;
    IrCtx *cx = rc->cx;
    bool lx, ly;
    const IrVar *x = bound_var(s, st->a, &lx), *y = bound_var(s, st->b, &ly);
    int64_t n, size;
    if (!x || !y || x == y || lx != ly || (n = len(x)) <= 0 || len(y) <= 0
        || (st->k != n && st->k != -n) || !i64_mul(n, len(y), &size))
        return NULL;
    int px = lx ? ir_loop_pos(s, x->id) : ir_sum_pos(s, x->id);
    int py = lx ? ir_loop_pos(s, y->id) : ir_sum_pos(s, y->id);
    if (lx && !rc_reads_within(rc, f, px, x->lo, x->hi))
        return NULL;
    IrVar z = rc_fresh(rc, rc_name2(rc, y->name, x->name), 0, size);
    const Ix *zx = ix_var(cx, z.id);
    const Ix *bx = ix_add(cx, ix_mod(cx, zx, n), ix_const(cx, x->lo));
    const Ix *q = ix_div(cx, zx, n);
    const Ix *byy = st->k > 0 ? ix_add(cx, q, ix_const(cx, y->lo))
                              : ix_sub(cx, ix_const(cx, y->hi - 1), q);
    const IrVar *old = lx ? s->loops : s->sums;
    int nold = lx ? s->nloops : s->nsums;
    IrVar *vars = xmalloc((size_t)nold * sizeof *vars);
    int w = 0;
    for (int i = 0; i < nold; i++)
        if (i != px)
            vars[w++] = i == py ? z : old[i];
    const Stage *to = rebuild(rc, s, x->id, bx, NULL, 0, lx ? vars : s->loops,
                              lx ? w : s->nloops, lx ? s->sums : vars, lx ? s->nsums : w);
    to = rebuild(rc, to, y->id, byy, NULL, 0, to->loops, to->nloops, to->sums, to->nsums);
    const Stage *r;
    if (lx) {
        FuseMap m = {px, py, nold, x->lo, y->lo, y->hi, n, st->k > 0 ? 1 : -1};
        r = rc_replace_remap(rc, f, to, fuse_remap, &m);
    } else {
        r = rc_replace(rc, f, to);
    }
    free(vars);
    return r;
}

/* ---- drop ------------------------------------------------------------------- */

/* A loop variable that the body and guards do not use: the output is the
 * same all along it, so an access that provably reads inside its range
 * can read a stage without that dimension.  (Splitting j + 1 = 2*j1 + j2
 * in x[(j + 1) / 2] leaves j2 unused: x[j1].) */
void drop_sites(RuleCtx *rc, const RuleFocus *f, RuleSites *out)
{
    (void)rc;
    const Stage *s = f->stage;
    for (int i = 0; i < s->nloops; i++)
        if (!ir_stage_uses(s, s->loops[i].id))
            rc_push(out, (RuleSite){.rule = RULE_VAR_DROP, .focus = s, .a = s->loops[i].id});
}

typedef struct DropMap {
    int pos, n;
} DropMap;

static void drop_remap(RuleCtx *rc, const void *arg, const Ix *const *idx, const Ix **out)
{
    (void)rc;
    const DropMap *m = arg;
    memcpy(out, idx, (size_t)m->pos * sizeof *out);
    memcpy(out + m->pos, idx + m->pos + 1, (size_t)(m->n - m->pos - 1) * sizeof *out);
}

const Stage *drop_apply(RuleCtx *rc, const RuleFocus *f, const RuleSite *st)
{
    const Stage *s = f->stage;
    int pos = ir_loop_pos(s, st->a);
    if (pos < 0 || ir_stage_uses(s, st->a)
        || !rc_reads_within(rc, f, pos, s->loops[pos].lo, s->loops[pos].hi))
        return NULL;
    IrVar *v = splice(s->loops, s->nloops, pos, NULL, 0);
    const Stage *to = ir_stage(rc->cx, s->red, v, s->nloops - 1, s->sums, s->nsums,
                               s->guards, s->nguards, s->body);
    free(v);
    DropMap m = {pos, s->nloops};
    return rc_replace_remap(rc, f, to, drop_remap, &m);
}
