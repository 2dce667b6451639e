/* rule_bound.c - boundary tightening and boundary relaxing.
 *
 * Both rest on one fact: a term is zero where a factor of the body reads
 * outside what it reads (a tensor outside its shape, a nested stage outside
 * its loop ranges), and a term is left out where a guard fails.
 *
 * Tightening shrinks each variable's range to where some term can be
 * non-zero and kept:
 *     L<h:0..9> Σ<c> { x[c, h - 1] .. }  =>  L<h:1..9> ..   (x has 8 rows)
 * For a loop variable the points dropped read as zero anyway (the stage's
 * output padding); for a sum variable only under Σ (under max a zero term
 * is still a term), while guards bound either kind under any reduction.
 * A subscript c*v + rest bounds v when v occurs in it only as that term;
 * rest ranges over the current ranges of the other variables.  Then guards
 * that the new ranges make true are dropped and div/mod atoms whose value
 * the ranges fix are folded.  One site per stage; it does everything.
 *
 * Relaxing is the inverse: a range grows where every new term is provably
 * zero or left out, e.g. a 5x5 kernel summed as 6x6 (w[f, c, r, s] reads
 * zero at r = 5).  Sites grow a range to the next multiple of 2, 3 and 4.
 * The root's loop ranges are its output box and are not relaxed. */
#include "config.h"
#include "rules_int.h"

#include <stdlib.h>
#include <string.h>

typedef __int128 i128;
#define INF ((i128)1 << 100)

static i128 fdiv(i128 a, i128 b)
{
    if (a >= INT64_MIN && a <= INT64_MAX && b >= INT64_MIN && b <= INT64_MAX && b != -1) {
        int64_t x = (int64_t)a, y = (int64_t)b, q = x / y;   /* no 128-bit division */
        return x % y != 0 && (x < 0) != (y < 0) ? q - 1 : q;
    }
    i128 q = a / b;
    return a % b != 0 && (a < 0) != (b < 0) ? q - 1 : q;
}

static i128 cdiv(i128 a, i128 b)
{
    return -fdiv(-a, b);
}

static const IrVar *bound_var(const Stage *s, int var, bool *loop)
{
    int p = ir_loop_pos(s, var);
    *loop = p >= 0;
    if (p >= 0)
        return &s->loops[p];
    p = ir_sum_pos(s, var);
    return p >= 0 ? &s->sums[p] : NULL;
}

/* ---- tightening ------------------------------------------------------------- */

/* One condition a non-zero kept term meets: a <= x <= b.  A subscript of
 * a factor's access (the read is zero outside the dim) or a guard. */
typedef struct Cond {
    const Ix *x;
    i128 a, b;
} Cond;

/* The conditions of a stage, gathered once for all its variables: the
 * factors' subscripts first (`nzero` of them: they bound a variable only
 * where a zero term may be dropped), then the guards. */
typedef struct Conds {
    Cond *c;                        /* small, or on the heap when more */
    int n, nzero, cap;
    Cond small[32];
} Conds;

static void cond_push(Conds *cs, const Ix *x, i128 a, i128 b)
{
    if (cs->n == cs->cap) {
        cs->cap *= 2;
        Cond *c = xmalloc((size_t)cs->cap * sizeof *c);
        memcpy(c, cs->c, (size_t)cs->n * sizeof *c);
        if (cs->c != cs->small)
            free(cs->c);
        cs->c = c;
    }
    cs->c[cs->n++] = (Cond){x, a, b};
}

static void cond_access(void *arg, const IExpr *acc, bool factor)
{
    Conds *cs = arg;
    if (!factor)
        return;
    for (int k = 0; k < acc->access.nidx; k++) {
        int64_t lo, hi;
        rc_dim_range(acc, k, &lo, &hi);
        cond_push(cs, acc->access.idx[k], lo, (i128)hi - 1);
    }
}

static void gather_conds(const Stage *s, Conds *cs)
{
    rc_each_access(s, cond_access, cs);
    cs->nzero = cs->n;
    for (int i = 0; i < s->nguards; i++) {
        const IExpr *g = s->guards[i];
        if (g->kind == IE_ICMP && g->icmp.op == OP_GE)
            cond_push(cs, g->icmp.ix, 0, INF);
        else if (g->kind == IE_ICMP && g->icmp.op == OP_EQ)
            cond_push(cs, g->icmp.ix, 0, 0);
    }
}

/* A plain term c*v of condition k's subscript, v in it only so. */
typedef struct Use {
    int var, k;                     /* v's position in the stage's list */
    int64_t coef;
} Use;

/* The uses of the stage's variables vars in the conditions, in the
 * conditions' order, into use (room for every term of every condition);
 * returns how many. */
static int plain_uses(const Conds *cs, const IrVar *vars, int nv, Use *use)
{
    int n = 0;
    for (int k = 0; k < cs->n; k++) {
        const Ix *x = cs->c[k].x;
        int first = n;
        bool deep = false;
        for (int j = 0; j < x->n; j++) {
            if (x->t[j].kind != IX_VAR) {
                deep = true;
                continue;
            }
            for (int i = 0; i < nv; i++)
                if (vars[i].id == x->t[j].var) {
                    use[n++] = (Use){i, k, x->t[j].coef};
                    break;
                }
        }
        /* a variable also under a div or mod: its entry goes (the last
         * entry, of this condition too, takes its place) */
        for (int u = first; u < n && deep; u++)
            for (int j = 0; j < x->n; j++)
                if (x->t[j].kind != IX_VAR && ix_uses(x->t[j].arg, vars[use[u].var].id)) {
                    use[u--] = use[--n];
                    break;
                }
    }
    return n;
}

/* Narrows [*lo, *hi] (the feasible values of var, whose coefficient in
 * cd's subscript is c) to those meeting cd. */
static void constrain(RuleCtx *rc, int var, const Cond *cd, int64_t c, i128 *lo, i128 *hi)
{
    int64_t rmin, rmax;
    rc_bounds_at(rc, cd->x, var, 0, 1, &rmin, &rmax);
    /* the rest's bounds, INT64_MIN and INT64_MAX standing for no bound */
    i128 l = rmax == INT64_MAX ? -INF : cd->a - rmax;
    i128 h = rmin == INT64_MIN ? INF : cd->b - rmin;     /* c*v in [l, h] */
    i128 vl, vh;
    if (c == 1 || c == -1) {        /* most subscripts: no division */
        vl = c > 0 ? l : -h;
        vh = c > 0 ? h : -l;
    } else {
        vl = c > 0 ? cdiv(l, c) : cdiv(h, c);
        vh = c > 0 ? fdiv(h, c) : fdiv(l, c);
    }
    if (vl > *lo)
        *lo = vl;
    if (vh < *hi)
        *hi = vh;
}

/* Shrinks v (entry i of a copy of the stage's variables) in place, by the
 * conditions of its uses among u[0 .. n). */
static bool tighten_var(RuleCtx *rc, const Conds *cs, const Use *u, int n, int i, IrVar *v,
                        bool zeros)
{
    i128 tlo = v->lo, thi = (i128)v->hi - 1;
    for (int k = 0; k < n; k++)
        if (u[k].var == i && (zeros || u[k].k >= cs->nzero))
            constrain(rc, v->id, &cs->c[u[k].k], u[k].coef, &tlo, &thi);
    /* tlo and thi start at v's range and only move inwards. */
    int64_t lo = v->lo, hi = v->lo;     /* no term is ever non-zero */
    if (tlo <= thi) {
        lo = (int64_t)tlo;
        hi = (int64_t)thi + 1;
    }
    if (lo == v->lo && hi == v->hi)
        return false;
    v->lo = lo;
    v->hi = hi;
    rc_bind(rc, v, 1);
    return true;
}

void tighten_sites(RuleCtx *rc, const RuleFocus *f, RuleSites *out)
{
    (void)rc;
    rc_push(out, (RuleSite){.rule = RULE_TIGHTEN, .focus = f->stage});
}

const Stage *tighten_apply(RuleCtx *rc, const RuleFocus *f, const RuleSite *st)
{
    (void)st;
    const Stage *s = f->stage;
    int nl = s->nloops, ns = s->nsums;
    /* on the stack when small: this runs for every stage of every state */
    IrVar vsmall[16];
    IrVar *v = nl + ns <= 16 ? vsmall : xmalloc((size_t)(nl + ns) * sizeof *v);
    for (int i = 0; i < nl; i++)
        v[i] = s->loops[i];
    for (int i = 0; i < ns; i++)
        v[nl + i] = s->sums[i];
    /* A few rounds: a tighter range of one variable tightens another. */
    Conds cs;
    cs.c = cs.small;
    cs.n = cs.nzero = 0;
    cs.cap = (int)(sizeof cs.small / sizeof *cs.small);
    gather_conds(s, &cs);
    int nt = 0;
    for (int k = 0; k < cs.n; k++)
        nt += cs.c[k].x->n;
    Use small[64];
    Use *use = nt > 64 ? xmalloc((size_t)nt * sizeof *use) : small;
    int nuse = plain_uses(&cs, v, nl + ns, use);
    bool any = false;
    for (int round = 0; round < 4; round++) {
        bool changed = false;
        for (int i = 0; i < nl + ns; i++)
            changed |= tighten_var(rc, &cs, use, nuse, i, &v[i], i < nl || s->red == RED_SUM);
        any |= changed;
        if (!changed)
            break;
    }
    if (cs.c != cs.small)
        free(cs.c);
    if (use != small)
        free(use);
    const IExpr *gsmall[8];
    const IExpr **g = s->nguards <= 8 ? gsmall : xmalloc((size_t)s->nguards * sizeof *g);
    for (int i = 0; i < s->nguards; i++) {
        g[i] = ir_expr_fold(rc->cx, s->guards[i], rc->lo, rc->hi);
        any |= g[i] != s->guards[i];
    }
    const IExpr *body = ir_expr_fold(rc->cx, s->body, rc->lo, rc->hi);
    any |= body != s->body;
    /* mostly nothing changes: then s would be built again as it is */
    const Stage *to = any ? ir_stage(rc->cx, s->red, v, nl, v + nl, ns, g, s->nguards, body)
                          : s;
    if (v != vsmall)
        free(v);
    if (g != gsmall)
        free(g);
    return ir_stage_equal(to, s) ? NULL : rc_replace(rc, f, to);
}

/* ---- relaxing --------------------------------------------------------------- */

typedef struct Zero {
    RuleCtx *rc;
    int var;
    int64_t lo, hi;                 /* the new values of var */
    bool zero;
} Zero;

static void zero_access(void *arg, const IExpr *acc, bool factor)
{
    Zero *z = arg;
    for (int k = 0; k < acc->access.nidx && factor && !z->zero; k++) {
        int64_t lo, hi, mn, mx;
        rc_dim_range(acc, k, &lo, &hi);
        rc_bounds_at(z->rc, acc->access.idx[k], z->var, z->lo, z->hi, &mn, &mx);
        z->zero = mx < lo || mn >= hi;
    }
}

/* Whether every term with var in [lo, hi) is left out by a guard or (when
 * `zeros`) zero by a factor. */
static bool all_zero(RuleCtx *rc, const Stage *s, int var, int64_t lo, int64_t hi, bool zeros)
{
    if (lo >= hi)
        return true;
    for (int i = 0; i < s->nguards; i++) {
        const IExpr *g = s->guards[i];
        if (g->kind != IE_ICMP)
            continue;
        int64_t mn, mx;
        rc_bounds_at(rc, g->icmp.ix, var, lo, hi, &mn, &mx);
        if (g->icmp.op == OP_GE ? mx < 0 : g->icmp.op == OP_EQ && (mn > 0 || mx < 0))
            return true;
    }
    Zero z = {rc, var, lo, hi, false};
    if (zeros)
        rc_each_access(s, zero_access, &z);
    return z.zero;
}

void relax_sites(RuleCtx *rc, const RuleFocus *f, RuleSites *out)
{
    (void)rc;
    const Stage *s = f->stage;
    for (int i = f->is_root ? s->nloops : 0; i < s->nloops + s->nsums; i++) {
        const IrVar *v = i < s->nloops ? &s->loops[i] : &s->sums[i - s->nloops];
        int64_t len = v->hi - v->lo;
        for (int64_t k = 2; k <= 4 && len > 0; k++) {
            int64_t n = (len + k - 1) / k * k;
            if (n > len)
                rc_push(out, (RuleSite){.rule = RULE_RELAX, .focus = s, .a = v->id,
                                        .k = v->lo, .k2 = v->lo + n});
        }
    }
}

const Stage *relax_apply(RuleCtx *rc, const RuleFocus *f, const RuleSite *st)
{
    const Stage *s = f->stage;
    bool loop;
    const IrVar *v = bound_var(s, st->a, &loop);
    int64_t lo = st->k, hi = st->k2;
    if (!v || (loop && f->is_root) || lo > v->lo || hi < v->hi || v->lo >= v->hi
        || (lo == v->lo && hi == v->hi))
        return NULL;
    bool zeros = loop || s->red == RED_SUM;
    if (!all_zero(rc, s, v->id, lo, v->lo, zeros) || !all_zero(rc, s, v->id, v->hi, hi, zeros))
        return NULL;
    int n = loop ? s->nloops : s->nsums;
    IrVar *w = xmalloc((size_t)n * sizeof *w);
    for (int i = 0; i < n; i++) {
        w[i] = loop ? s->loops[i] : s->sums[i];
        if (w[i].id == v->id) {
            w[i].lo = lo;
            w[i].hi = hi;
        }
    }
    const Stage *to = ir_stage(rc->cx, s->red, loop ? w : s->loops, s->nloops,
                               loop ? s->sums : w, s->nsums, s->guards, s->nguards, s->body);
    free(w);
    return rc_replace(rc, f, to);
}
