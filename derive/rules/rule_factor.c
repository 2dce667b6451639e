/* rule_factor.c - what a sum does not depend on, taken out of it.
 *
 * Factoring out (RULE_FACTOR_OUT): factors of the body and guards that
 * use no sum variable leave the sum, which is then a plain product an
 * operator matches (the scale of attention, a per-row 1/z, a causal mask
 * on the output):
 *
 *   L<I> Σ<S> { c * f / d | g_I, g_S }
 *     =>  L<I> { select(g_I, c * (L<I'> Σ<S> { f | g_S' })[I'] / d, 0) }
 *
 * c and d are the factors of the numerator and of the denominator that
 * use no variable of S, g_I the guards that use none; f holds the rest
 * and must use S.  Σ_S c f / d = c (Σ_S f) / d, and a guard that holds
 * for every term or for none is a select outside.  Sums only: under max
 * and min a factor's sign would matter.
 *
 * Masking (RULE_MASK): a guard that uses sum variables, all of which are
 * plain subscripts of one factor access A, becomes a masked copy of what
 * A reads, so that the product loses its guard (the causal mask on
 * the operand of attention's second product):
 *
 *   L<I> Σ<S> { A[.., i, .., j, ..] * f | g(i, j), g' }
 *     =>  L<I> Σ<S> { (L<D> { select(g(d_i, d_j), A[D], 0) })[.., i, .., j, ..] * f | g' }
 *
 * D is one fresh variable per dimension of A's target, over its range.
 * A term whose guard fails now reads a zero factor instead of being left
 * out, which a sum cannot tell apart (a max could: sums only). */
#include "config.h"
#include "rules_int.h"

#include <stdlib.h>

/* Factors of a product: the numerator's and the denominator's, as the
 * top-level * / and unary - of the body give them (a denominator is taken
 * whole). */
#define MAX_FACTORS 32

typedef struct Factors {
    const IExpr *num[MAX_FACTORS], *den[MAX_FACTORS];
    int nnum, nden;
    bool neg;
} Factors;

static bool collect(const IExpr *e, Factors *f)
{
    switch (e->kind) {
    case IE_MUL:
        return collect(e->bin.a, f) && collect(e->bin.b, f);
    case IE_DIV:
        if (f->nden == MAX_FACTORS || !collect(e->bin.a, f))
            return false;
        f->den[f->nden++] = e->bin.b;
        return true;
    case IE_NEG:
        f->neg = !f->neg;
        return collect(e->bin.a, f);
    default:
        if (f->nnum == MAX_FACTORS)
            return false;
        f->num[f->nnum++] = e;
        return true;
    }
}

static bool uses_sums(const Stage *s, const IExpr *e)
{
    for (int i = 0; i < s->nsums; i++)
        if (ir_expr_uses(e, s->sums[i].id))
            return true;
    return false;
}

/* The product of es[0..n) times `first` (NULL: 1). */
static const IExpr *product(IrCtx *cx, const IExpr *first, const IExpr *const *es, int n)
{
    const IExpr *r = first;
    for (int i = 0; i < n; i++)
        r = r ? ir_binary(cx, IE_MUL, r, es[i]) : es[i];
    return r ? r : ir_const(cx, 1);
}

void factor_sites(RuleCtx *rc, const RuleFocus *f, RuleSites *out)
{
    (void)rc;
    const Stage *s = f->stage;
    Factors fs = {0};
    if (s->red != RED_SUM || s->nsums == 0 || !collect(s->body, &fs))
        return;
    bool outer = fs.neg, inner = false;
    for (int i = 0; i < fs.nnum + fs.nden; i++) {
        bool u = uses_sums(s, i < fs.nnum ? fs.num[i] : fs.den[i - fs.nnum]);
        inner |= u;
        outer |= !u && !(i < fs.nnum && fs.num[i]->kind == IE_CONST &&
                         fs.num[i]->value == 1);
    }
    for (int i = 0; i < s->nguards; i++)
        outer |= !uses_sums(s, s->guards[i]);
    if (outer && inner)
        rc_push(out, (RuleSite){.rule = RULE_FACTOR_OUT, .focus = s});
}

const Stage *factor_apply(RuleCtx *rc, const RuleFocus *f, const RuleSite *site)
{
    (void)site;
    const Stage *s = f->stage;
    IrCtx *cx = rc->cx;
    Factors fs = {0};
    if (s->red != RED_SUM || s->nsums == 0 || !collect(s->body, &fs))
        return NULL;
    const IExpr *in_num[MAX_FACTORS], *in_den[MAX_FACTORS];
    const IExpr *out_num[MAX_FACTORS], *out_den[MAX_FACTORS];
    int nin = 0, nind = 0, nout = 0, noutd = 0;
    for (int i = 0; i < fs.nnum; i++) {
        if (uses_sums(s, fs.num[i]))
            in_num[nin++] = fs.num[i];
        else
            out_num[nout++] = fs.num[i];
    }
    for (int i = 0; i < fs.nden; i++) {
        if (uses_sums(s, fs.den[i]))
            in_den[nind++] = fs.den[i];
        else
            out_den[noutd++] = fs.den[i];
    }
    if (nin + nind == 0)
        return NULL;
    const IExpr **gin = xmalloc((size_t)(s->nguards + 1) * sizeof *gin);
    const IExpr *gout = NULL;
    int ngin = 0;
    for (int i = 0; i < s->nguards; i++) {
        if (uses_sums(s, s->guards[i]))
            gin[ngin++] = s->guards[i];
        else
            gout = gout ? ir_binary(cx, IE_AND, gout, s->guards[i]) : s->guards[i];
    }
    if (nout + noutd == 0 && !gout && !fs.neg) {
        free(gin);
        return NULL;
    }
    const IExpr *body = product(cx, NULL, in_num, nin);
    for (int i = 0; i < nind; i++)
        body = ir_binary(cx, IE_DIV, body, in_den[i]);

    /* the inner stage over fresh copies of the loops its parts use */
    IrVar *fresh = xmalloc((size_t)(s->nloops + 1) * sizeof *fresh);
    const Ix **idx = xmalloc((size_t)(s->nloops + 1) * sizeof *idx);
    int k = rc_rename_used(rc, s->loops, s->nloops, NULL, 0, &body, gin, ngin, fresh, idx);
    const Stage *inner = ir_stage(cx, RED_SUM, fresh, k, s->sums, s->nsums, gin, ngin, body);
    const IExpr *v = product(cx, ir_access_stage(cx, inner, idx, k), out_num, nout);
    for (int i = 0; i < noutd; i++)
        v = ir_binary(cx, IE_DIV, v, out_den[i]);
    if (fs.neg)
        v = ir_unary(cx, IE_NEG, v);
    if (gout) {
        const IExpr *args[3] = {gout, v, ir_const(cx, 0)};
        v = ir_call(cx, FN_SELECT, args, 3);
    }
    const Stage *outer = ir_stage(cx, RED_NONE, s->loops, s->nloops, NULL, 0, NULL, 0, v);
    const Stage *r = rc_replace(rc, f, outer);
    free(gin);
    free(fresh);
    free(idx);
    return r;
}

/* ---- masking -------------------------------------------------------------- */

/* The dimension of acc whose subscript is exactly variable v, or -1. */
static int plain_dim(const IExpr *acc, int v)
{
    for (int d = 0; d < acc->access.nidx; d++) {
        const Ix *x = acc->access.idx[d];
        if (x->c == 0 && x->n == 1 && x->t[0].kind == IX_VAR && x->t[0].coef == 1 &&
            x->t[0].var == v)
            return d;
    }
    return -1;
}

/* Whether every variable guard g uses is a plain subscript of acc; the
 * variables in scope are those of the focus and above it. */
static bool covers(const RuleFocus *f, const IExpr *g, const IExpr *acc)
{
    const Stage *s = f->stage;
    for (int pass = 0; pass < 3; pass++) {
        const IrVar *v = pass == 0 ? s->loops : pass == 1 ? s->sums : f->scope;
        int n = pass == 0 ? s->nloops : pass == 1 ? s->nsums : f->nscope;
        for (int i = 0; i < n; i++)
            if (ir_expr_uses(g, v[i].id) && plain_dim(acc, v[i].id) < 0)
                return false;
    }
    return true;
}

typedef struct MaskWalk {
    const RuleFocus *f;
    const IExpr *guard;
    int n;                          /* factor accesses seen */
    RuleSites *out;
    int want;                       /* apply: the ordinal to replace */
    const IExpr *found;
    int gi;
} MaskWalk;

static void mask_visit(void *arg, const IExpr *acc, bool factor)
{
    MaskWalk *w = arg;
    if (!factor)
        return;
    int at = w->n++;
    if (w->out && covers(w->f, w->guard, acc))
        rc_push(w->out, (RuleSite){.rule = RULE_MASK, .focus = w->f->stage, .a = w->gi, .b = at});
    if (!w->out && at == w->want)
        w->found = acc;
}

void mask_sites(RuleCtx *rc, const RuleFocus *f, RuleSites *out)
{
    (void)rc;
    const Stage *s = f->stage;
    if (s->red != RED_SUM)
        return;
    for (int i = 0; i < s->nguards; i++) {
        if (!uses_sums(s, s->guards[i]))
            continue;
        MaskWalk w = {f, s->guards[i], 0, out, -1, NULL, i};
        rc_each_access(s, mask_visit, &w);
    }
}

/* Every occurrence of the masked access is replaced: each term whose
 * guard fails still has the masked factor, so it is zero. */
typedef struct MaskRepl {
    const IExpr *from, *by;
} MaskRepl;

/* IrAccessMap: the masked read for the access it masks, else the access. */
static const IExpr *mask_repl(void *arg, const IExpr *acc)
{
    MaskRepl *m = arg;
    return ir_expr_equal(acc, m->from) ? m->by : acc;
}

const Stage *mask_apply(RuleCtx *rc, const RuleFocus *f, const RuleSite *site)
{
    const Stage *s = f->stage;
    IrCtx *cx = rc->cx;
    if (s->red != RED_SUM || site->a < 0 || site->a >= s->nguards ||
        !uses_sums(s, s->guards[site->a]))
        return NULL;
    const IExpr *g = s->guards[site->a];
    MaskWalk w = {f, g, 0, NULL, site->b, NULL, site->a};
    rc_each_access(s, mask_visit, &w);
    const IExpr *acc = w.found;
    if (!acc || !covers(f, g, acc))
        return NULL;
    int n = acc->access.nidx;
    IrVar *dv = xmalloc((size_t)(n + 1) * sizeof *dv);
    const Ix **didx = xmalloc((size_t)(n + 1) * sizeof *didx);
    for (int d = 0; d < n; d++) {
        int64_t lo, hi;
        rc_dim_range(acc, d, &lo, &hi);
        const char *name = "d";
        const IxTerm *t = acc->access.idx[d]->n == 1 ? &acc->access.idx[d]->t[0] : NULL;
        if (t && t->kind == IX_VAR)
            name = ir_var_name(cx, t->var);
        dv[d] = rc_fresh(rc, name, lo, hi);
        didx[d] = ix_var(cx, dv[d].id);
    }
    /* the guard over the mask's own variables */
    const IExpr *mg = g;
    for (int pass = 0; pass < 3; pass++) {
        const IrVar *v = pass == 0 ? s->loops : pass == 1 ? s->sums : f->scope;
        int nv = pass == 0 ? s->nloops : pass == 1 ? s->nsums : f->nscope;
        for (int i = 0; i < nv; i++)
            if (ir_expr_uses(g, v[i].id))
                mg = ir_subst(cx, mg, v[i].id, didx[plain_dim(acc, v[i].id)]);
    }
    const IExpr *inner = acc->access.tensor ? ir_access_tensor(cx, acc->access.tensor, didx, n)
                                            : ir_access_stage(cx, acc->access.stage, didx, n);
    const IExpr *args[3] = {mg, inner, ir_const(cx, 0)};
    const Stage *mask = ir_stage(cx, RED_NONE, dv, n, NULL, 0, NULL, 0,
                                 ir_call(cx, FN_SELECT, args, 3));
    MaskRepl m = {acc, ir_access_stage(cx, mask, acc->access.idx, n)};
    const IExpr *body = ir_map_access(cx, s->body, mask_repl, &m);
    const IExpr **guards = xmalloc((size_t)(s->nguards + 1) * sizeof *guards);
    int ng = 0;
    for (int i = 0; i < s->nguards; i++)
        if (i != site->a)
            guards[ng++] = ir_map_access(cx, s->guards[i], mask_repl, &m);
    const Stage *to = ir_stage_rebody(cx, s, guards, ng, body);
    const Stage *r = rc_replace(rc, f, to);
    free(dv);
    free(didx);
    free(guards);
    return r;
}
