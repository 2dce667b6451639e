/* outview.c - output views: a banded matmul stores straight into the
 * reordering that follows it.  Where the only reader of a G2BMM's or
 * GBMM's output x is a map y that copies it to another layout (every
 * element of y one element of x and every element of x in one place:
 * Longformer's head merge, att[b, l, e] = o[b*H + e/D, l, e%D]), the
 * band operator writes each element where y would have put it, through
 * a view of y's buffer (plan.h, PlanBuf), and y's copy goes: one kernel
 * and a pass over the tensor less (two with the launch).  The band
 * kernels take the view as they take their operands' (match.h,
 * BandView): a batch index split into two strides, a row stride, columns
 * one apart, so the map's subscripts must say exactly that.  The operator
 * stores as many elements as before, so the cost model prices it the
 * same and the copy at 0: always cheaper.  Runs last, on the plan's
 * program (derive.c). */
#include "config.h"
#include "derive.h"

#include <stdlib.h>
#include <string.h>

/* One digit of the map's flat element number: a loop variable of its
 * stage, or that variable's quotient or remainder by a divisor, with its
 * extent, its weight in x's subscript (`coef`) and its stride in y's
 * row-major buffer (`addr`). */
typedef struct Digit {
    int64_t coef, ext, addr;
} Digit;

#define OV_MAX_DIGITS (2 * MATCH_MAX_VARS)

/* How y's loop variable at position l is used in x's subscripts: plain
 * once, or its quotient and its remainder by one divisor once each. */
typedef struct Use {
    int plain, quot, rem;
    int64_t div;
} Use;

/* The digit of term x (a plain variable, or one's quotient or remainder)
 * in y's stage s of strides st, counted in use; false for anything
 * else.  A quotient's extent is whole: the divisor divides the
 * variable's. */
static bool term_digit(const Stage *s, const int64_t *st, const IxTerm *x, Use *use, Digit *dg)
{
    int var = -1;
    if (x->kind == IX_VAR)
        var = x->var;
    else if ((x->kind == IX_DIV || x->kind == IX_MOD) && x->arg->n == 1 && x->arg->c == 0 &&
             x->arg->t[0].kind == IX_VAR && x->arg->t[0].coef == 1)
        var = x->arg->t[0].var;
    int l = -1;
    for (int k = 0; k < s->nloops; k++)
        if (s->loops[k].id == var)
            l = k;
    if (l < 0 || x->coef <= 0)
        return false;
    int64_t e = s->loops[l].hi;
    Use *u = &use[l];
    dg->coef = x->coef;
    if (x->kind == IX_VAR) {
        u->plain++;
        dg->ext = e;
        dg->addr = st[l];
        return true;
    }
    if ((u->div && u->div != x->d) || e % x->d)
        return false;
    u->div = x->d;
    if (x->kind == IX_DIV) {
        u->quot++;
        dg->ext = e / x->d;
        return i64_mul(st[l], x->d, &dg->addr);
    }
    u->rem++;
    dg->ext = x->d;
    dg->addr = st[l];
    return true;
}

static int by_coef(const void *a, const void *b)
{
    const Digit *x = a, *y = b;
    return (x->coef > y->coef) - (x->coef < y->coef);
}

/* Sort the n digits of one subscript by weight and check they are the
 * mixed-radix digits of a number in [0, size): weights 1, e0, e0 e1, ...,
 * the product of the extents size.  Digits of extent 1 are dropped.
 * Returns how many are left (-1: not a number of that form). */
static int radix(Digit *d, int n, int64_t size)
{
    int m = 0;
    for (int i = 0; i < n; i++)
        if (d[i].ext > 1)
            d[m++] = d[i];
    qsort(d, (size_t)m, sizeof *d, by_coef);
    int64_t w = 1;
    for (int i = 0; i < m; i++)
        if (d[i].coef != w || !i64_mul(w, d[i].ext, &w))
            return -1;
    return w == size ? m : -1;
}

/* Where element (bb, r, c) of x, y's stage `s` being a copy of it (a read
 * of x and nothing else, over all of y), lands in y's buffer: *v, when
 * that is a band view (off 0).  Each subscript of x must be a sum of
 * digits of y's element number that covers x's dim once (radix), each
 * digit in one subscript only; then the copy is one-to-one (x and y have
 * as many elements, each of x made of distinct digits). */
static bool invert(const IrTensor *y, const Stage *s, const IrTensor *x, BandView *v)
{
    const IExpr *e = s->body;
    int r = x->rank;
    if (r < 2 || r > MATCH_MAX_DIMS || s->nloops > MATCH_MAX_VARS || e->access.nidx != r)
        return false;
    int64_t st[MATCH_MAX_VARS], below = 1;
    for (int l = s->nloops - 1; l >= 0; l--) {
        st[l] = below;
        if (!i64_mul(below, s->loops[l].hi, &below))
            return false;
    }
    Use use[MATCH_MAX_VARS] = {{0}};
    /* the digits of each subscript; the batch's with weights in bb, the
     * batch dims flattened */
    Digit bat[OV_MAX_DIGITS], row[OV_MAX_DIGITS], col[OV_MAX_DIGITS];
    int nbat = 0, nrow = 0, ncol = 0;
    int64_t inner = 1;          /* elements of the batch dims after dim k */
    for (int k = r - 1; k >= 0; k--) {
        const Ix *ix = e->access.idx[k];
        Digit d[OV_MAX_DIGITS];
        if (ix->c != 0 || ix->n > OV_MAX_DIGITS)
            return false;
        for (int t = 0; t < ix->n; t++)
            if (!term_digit(s, st, &ix->t[t], use, &d[t]))
                return false;
        int n = radix(d, ix->n, x->shape[k]);
        if (n < 0)
            return false;
        if (k == r - 1) {
            ncol = n;
            memcpy(col, d, sizeof *d * (size_t)n);
        } else if (k == r - 2) {
            nrow = n;
            memcpy(row, d, sizeof *d * (size_t)n);
        } else {
            for (int t = 0; t < n; t++) {
                bat[nbat] = d[t];
                if (!i64_mul(d[t].coef, inner, &bat[nbat++].coef))
                    return false;
            }
            if (!i64_mul(inner, x->shape[k], &inner))
                return false;
        }
    }
    /* every variable once, or its quotient and remainder once each */
    for (int l = 0; l < s->nloops; l++) {
        const Use *u = &use[l];
        bool split = u->quot == 1 && u->rem == 1 && !u->plain;
        if (!(u->plain == 1 && !u->quot && !u->rem) && !split && s->loops[l].hi > 1)
            return false;
    }
    /* columns one apart; one row stride; the batch digits, neighbours that
     * flatten merged, at most two */
    if (ncol > 1 || (ncol == 1 && col[0].addr != 1) || nrow > 1)
        return false;
    qsort(bat, (size_t)nbat, sizeof *bat, by_coef);
    int m = 0;
    for (int i = 0; i < nbat; i++) {
        int64_t span;
        if (m > 0 && i64_mul(bat[m - 1].addr, bat[m - 1].ext, &span) && span == bat[i].addr &&
            i64_mul(bat[m - 1].ext, bat[i].ext, &bat[m - 1].ext))
            continue;
        bat[m++] = bat[i];
    }
    if (m > 2)
        return false;
    *v = (BandView){.ld = nrow ? row[0].addr : 0, .split = 1};
    if (m == 1)
        v->stride = bat[0].addr;
    if (m == 2) {
        v->split = bat[0].ext;
        v->sstride = bat[0].addr;
        v->stride = bat[1].addr;
    }
    return true;
}

/* Is t's stage a copy of one f32 tensor of the program over all of t:
 * that tensor, else NULL. */
static const IrTensor *copied(const IrTensor *t, const PlanOp *op)
{
    const Stage *s = op->stage;
    if (t->elem != ELEM_F32 || op->impl != IMPL_KERNEL || op->epi.value || op->rows ||
        op->at_load || op->stored_by || s->nsums || s->nguards || s->nloops != t->rank ||
        s->body->kind != IE_ACCESS || !s->body->access.tensor)
        return NULL;
    for (int d = 0; d < t->rank; d++)
        if (s->loops[d].lo != 0 || s->loops[d].hi != t->shape[d])
            return NULL;
    return s->body->access.tensor;
}

int derive_out_views(Plan *pl)
{
    IrProgram *p = pl->prog;
    int *readers = derive_readers(p);
    int made = 0;
    for (int i = 0; i < p->ntensors; i++) {
        const IrTensor *y = p->tensors[i], *x;
        PlanOp *yop = &pl->ops[i];
        if (y->kind != IT_STAGE || !(x = copied(y, yop)) || x->kind != IT_STAGE)
            continue;
        PlanOp *xop = &pl->ops[x->id];
        BandView v;
        if ((xop->impl != IMPL_CUDA_BAND && xop->impl != IMPL_CBLAS_BAND) ||
            x->is_output || readers[x->id] != 1 || x->elem != ELEM_F32 ||
            xop->epi.value || xop->rows || xop->at_load || xop->buf.kind != BUF_OWN ||
            !invert(y, yop->stage, x, &v) || !cost_band_out_ok(&xop->op, xop->impl, &v, y))
            continue;
        xop->buf = (PlanBuf){BUF_VIEW, y, v};
        yop->stored_by = x;
        yop->cost = 0;
        made++;
    }
    free(readers);
    if (made)
        pl->cost = plan_total(pl);
    return made;
}
