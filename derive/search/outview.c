/* outview.c - output views: an operator stores straight into the
 * reordering that follows it.  Where the only reader of a G2BMM's, a
 * GBMM's or a GEMM's output x is a map y that copies it to another
 * layout (every element of y one element of x and every element of x in
 * one place: Longformer's head merge, att[b, l, e] = o[b*H + e/D, l,
 * e%D], or a transpose), the operator writes each element where y would
 * have put it, through a view of y's buffer (plan.h, PlanBuf), and y's
 * copy goes: one kernel and a pass over the tensor less (two with the
 * launch).  The band kernels take the view as they take their operands'
 * (match.h, BandView): a batch index split into two strides, a row
 * stride, columns one apart; a GEMM as its ldc and stride_c (and split
 * and sstride_c: heads merged into the features at batch > 1), or stored
 * transposed where the copy's rows are one apart.  The subscripts of the
 * map must say exactly that.  The operator stores as many elements as
 * before, so the cost model prices it the same and the copy at 0: always
 * cheaper.  Runs last, on the plan's program (derive.c). */
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

/* Merge the n digits of one group of dims, sorted by their weight in
 * the group's index, where neighbours flatten (the outer's stride is the
 * inner's span); returns how many are left. */
static int merge(Digit *d, int n)
{
    qsort(d, (size_t)n, sizeof *d, by_coef);
    int m = 0;
    for (int i = 0; i < n; i++) {
        int64_t span, ext;
        if (m > 0 && i64_mul(d[m - 1].addr, d[m - 1].ext, &span) && span == d[i].addr &&
            i64_mul(d[m - 1].ext, d[i].ext, &ext)) {
            d[m - 1].ext = ext;
            continue;
        }
        d[m++] = d[i];
    }
    return m;
}

/* Where x's elements land in y's buffer, y's stage `s` being a copy of x
 * (a read of x and nothing else, over all of y).  x's dims are in three
 * groups, consecutive (group[k]: 0 the batch, 1 the rows, 2 the
 * columns), each flattened row-major; element (bb, r, c) must land at
 *   (bb / split) * stride + (bb % split) * sstride + r * ld + c,
 * at most `nbatch` batch strides (1 or 2): *v (off 0); or, where `trans`
 * is not NULL and the rows are one apart instead, at r + c * ld (*trans
 * set).  Each subscript
 * of x must be a sum of digits of y's element number that covers x's dim
 * once (radix), each digit in one subscript only; then the copy is one
 * to one (x and y have as many elements, each of x made of distinct
 * digits).  The digits of a group, merged, must be one of columns one
 * apart, one of rows, and at most nbatch of the batch. */
static bool invert(const Stage *s, const IrTensor *x, const int *group, int nbatch,
                   BandView *v, bool *trans)
{
    const IExpr *e = s->body;
    int r = x->rank;
    if (r > MATCH_MAX_DIMS || s->nloops > MATCH_MAX_VARS || e->access.nidx != r)
        return false;
    int64_t st[MATCH_MAX_VARS], below = 1;
    for (int l = s->nloops - 1; l >= 0; l--) {
        st[l] = below;
        if (!i64_mul(below, s->loops[l].hi, &below))
            return false;
    }
    Use use[MATCH_MAX_VARS] = {{0}};
    /* the digits of each group, with their weights in its flat index */
    Digit gd[3][OV_MAX_DIGITS];
    int ng[3] = {0, 0, 0};
    int64_t inner[3] = {1, 1, 1};       /* elements of the group's dims after dim k */
    for (int k = r - 1; k >= 0; k--) {
        const Ix *ix = e->access.idx[k];
        Digit d[OV_MAX_DIGITS];
        int g = group[k];
        if (ix->c != 0 || ix->n > OV_MAX_DIGITS)
            return false;
        for (int t = 0; t < ix->n; t++)
            if (!term_digit(s, st, &ix->t[t], use, &d[t]))
                return false;
        int n = radix(d, ix->n, x->shape[k]);
        if (n < 0 || ng[g] + n > OV_MAX_DIGITS)
            return false;
        for (int t = 0; t < n; t++) {
            gd[g][ng[g]] = d[t];
            if (!i64_mul(d[t].coef, inner[g], &gd[g][ng[g]++].coef))
                return false;
        }
        if (!i64_mul(inner[g], x->shape[k], &inner[g]))
            return false;
    }
    /* every variable once, or its quotient and remainder once each */
    for (int l = 0; l < s->nloops; l++) {
        const Use *u = &use[l];
        bool split = u->quot == 1 && u->rem == 1 && !u->plain;
        if (!(u->plain == 1 && !u->quot && !u->rem) && !split && s->loops[l].hi > 1)
            return false;
    }
    int nb = merge(gd[0], ng[0]), nr = merge(gd[1], ng[1]), nc = merge(gd[2], ng[2]);
    if (nc > 1 || nr > 1 || nb > nbatch)
        return false;
    *v = (BandView){.ld = nr ? gd[1][0].addr : 0, .split = 1};
    if (nc == 1 && gd[2][0].addr != 1) {
        if (!trans || nr != 1 || gd[1][0].addr != 1)
            return false;
        *trans = true;
        v->ld = gd[2][0].addr;
    }
    if (nb == 1)
        v->stride = gd[0][0].addr;
    if (nb == 2) {
        v->split = gd[0][0].ext;
        v->sstride = gd[0][0].addr;
        v->stride = gd[0][1].addr;
    }
    return true;
}

/* The groups of x's dims (invert) for the band operator: the batch
 * dims, the row, the column. */
static void band_groups(const IrTensor *x, int *group)
{
    for (int k = 0; k < x->rank; k++)
        group[k] = k < x->rank - 2 ? 0 : k - x->rank + 3;
}

/* The groups of x's dims for the dense output of the GEMM m, in memory
 * order: the batch, the rows (m, or n where the output is stored
 * transposed) and the columns, each dims whose extents multiply to its
 * size; false where the output is not dense or its dims do not split so. */
static bool gemm_groups(const OpMatch *m, const IrTensor *x, int *group, int64_t *rows,
                        int64_t *cols)
{
    int64_t size[3] = {m->batch > 1 ? m->batch : 1, m->out_nm ? m->n : m->m,
                       m->out_nm ? m->m : m->n};
    int64_t mat = size[1] * size[2];
    if (m->ldc != size[2] ||
        (size[0] > 1 && (m->split > 1 ? m->sstride_c != mat || m->stride_c != m->split * mat
                                      : m->stride_c != mat)))
        return false;
    int k = x->rank - 1;
    for (int g = 2; g >= 0; g--) {
        int64_t p = 1;
        for (; k >= 0 && (g == 0 || p < size[g]); k--) {
            group[k] = g;
            if (!i64_mul(p, x->shape[k], &p))
                return false;
        }
        if (p != size[g])
            return false;
    }
    *rows = size[1];
    *cols = size[2];
    return true;
}

/* The batch of the GEMM g as the view v stores it: one stride, or two
 * levels of v->split matrices (heads merged into the features: BERT's at
 * B > 1).  A product of two levels keeps its split, which a view of two
 * must share; one of one level takes the view's, its operands' strides
 * the outer ones of split matrices. */
static bool view_batch(OpMatch *g, const BandView *v)
{
    int64_t own = g->split > 1 ? g->split : 1, to = v->split > 1 ? v->split : 1;
    if (to == 1 && own == 1) {
        g->stride_c = v->stride;
        return true;
    }
    if (to == 1) {
        g->sstride_c = v->stride;
        return i64_mul(own, v->stride, &g->stride_c);
    }
    if (own == 1) {
        if (g->batch % to)
            return false;
        g->split = to;
        g->sstride_a = g->stride_a;
        g->sstride_b = g->stride_b;
        if (!i64_mul(to, g->stride_a, &g->stride_a) || !i64_mul(to, g->stride_b, &g->stride_b))
            return false;
    } else if (own != to) {
        return false;
    }
    g->stride_c = v->stride;
    g->sstride_c = v->sstride;
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

/* Can x's operator xop store its output through a view into y's buffer
 * (y's stage ys a copy of x): *b.  A band operator, or a cuBLAS or CBLAS
 * GEMM not fused with cuBLASLt's epilogue, whose ldc, stride_c and
 * out_nm it then sets (a copy whose rows are one apart is the product
 * stored the other way round); libs.c checks that the library takes the
 * view. */
static bool view_of(PlanOp *xop, const IrTensor *x, const IrTensor *y, const Stage *ys,
                    PlanBuf *b)
{
    OpMatch *m = &xop->op;
    int group[MATCH_MAX_DIMS];
    if (x->rank > MATCH_MAX_DIMS)
        return false;
    if (xop->impl == IMPL_CUDA_BAND || xop->impl == IMPL_CBLAS_BAND) {
        if (x->rank < 2)
            return false;
        band_groups(x, group);
        b->rows = x->shape[x->rank - 2];
        b->cols = x->shape[x->rank - 1];
        return invert(ys, x, group, 2, &b->view, NULL) &&
               cost_band_out_ok(m, xop->impl, &b->view, y);
    }
    if ((xop->impl != IMPL_CUBLAS_GEMM && xop->impl != IMPL_CBLAS_GEMM) || xop->lt.fused ||
        !gemm_groups(m, x, group, &b->rows, &b->cols) ||
        !invert(ys, x, group, 2, &b->view, &b->trans))
        return false;
    /* rows one apart: the product stored the other way round */
    OpMatch g = *m;
    g.out_nm ^= b->trans;
    g.ldc = b->view.ld;
    if (!view_batch(&g, &b->view) || !cost_gemm_out_ok(&g, xop->impl, y))
        return false;
    *b = (PlanBuf){b->kind, b->of, b->view, b->rows, b->cols, b->trans, m->ldc,
                   {m->stride_a, m->stride_b, m->stride_c}, m->split,
                   {m->sstride_a, m->sstride_b, m->sstride_c}, m->out_nm};
    *m = g;
    return true;
}

int derive_out_views(Plan *pl)
{
    IrProgram *p = pl->prog;
    int *readers = plan_readers(pl);
    int made = 0;
    for (int i = 0; i < p->ntensors; i++) {
        const IrTensor *y = p->tensors[i], *x;
        PlanOp *yop = &pl->ops[i];
        if (y->kind != IT_STAGE || !(x = copied(y, yop)) || x->kind != IT_STAGE)
            continue;
        PlanOp *xop = &pl->ops[x->id];
        PlanBuf b = {.kind = BUF_VIEW, .of = y};
        if (x->is_output || readers[x->id] != 1 || x->elem != ELEM_F32 || xop->epi.value ||
            xop->rows || xop->at_load || xop->buf.kind != BUF_OWN ||
            !view_of(xop, x, y, yop->stage, &b))
            continue;
        xop->buf = b;
        yop->stored_by = x;
        yop->cost = 0;
        made++;
    }
    free(readers);
    if (made)
        pl->cost = plan_total(pl);
    return made;
}
