/* scalefold.c - a factor that depends on weights only, applied to a sum
 * of products, goes into the product's weight at load: batch norm's
 * per-channel scale after a convolution (inference: scale * conv +
 * shift), a linear layer scaled per output feature.  A constant alone is
 * not folded: a BLAS call takes it free, as its alpha.
 *
 *   a = L<I> Σ<S> { X[..] * K[.., f, ..] }    a read by y alone, once
 *   y = L<I> { E(a[I] * G(f)) }               G reads weights, only
 *     =>  K' = L<D> { K[D] * G(d) }            weight-only: run at load
 *         a  = L<I> Σ<S> { X[..] * K'[.., f, ..] }
 *         y  = L<I> { E(a[I]) }
 *
 * since G(f) Σ x k = Σ x (k G(f)) (exact but for rounding).  Every loop
 * variable G uses must be a plain subscript of K's read in a, over the
 * whole of K's dimension, so that K' is K's shape; K is read once in a,
 * as a factor of its top-level product; a quotient a[I] / G folds as
 * K / G.  The operator that computes a is what it was, over another
 * weight; y loses a multiplication (a pointwise node of cuDNN's graph, a
 * oneDNN post-op, a term of a pass).  Runs before the search, on the
 * lowered program (-O1 and -O2), until nothing folds: a chain
 * (a * g) * c folds twice. */
#include "config.h"
#include "derive.h"

#include <stdlib.h>
#include <string.h>

/* Is x the plain variable var? */
static bool plain(const Ix *x, int var)
{
    return x->c == 0 && x->n == 1 && x->t[0].kind == IX_VAR && x->t[0].coef == 1 &&
           x->t[0].var == var;
}

/* Does e read t at exactly s's loop variables, in order? */
static bool identity_read(const IExpr *e, const IrTensor *t, const Stage *s)
{
    if (e->kind != IE_ACCESS || e->access.tensor != t || e->access.nidx != s->nloops)
        return false;
    for (int k = 0; k < s->nloops; k++)
        if (!plain(e->access.idx[k], s->loops[k].id))
            return false;
    return true;
}

/* Reads of one tensor counted, and whether any nested stage is read. */
typedef struct Count {
    const IrTensor *t;
    int n;
    bool nested;
} Count;

static bool count_visit(void *arg, const IExpr *e)
{
    Count *c = arg;
    if (e->kind == IE_ACCESS) {
        c->nested |= e->access.stage != NULL;
        c->n += e->access.tensor == c->t;
    }
    return true;
}

/* How many times s reads t (guards and body); -1 where s reads a nested
 * stage (then the count would not be the whole of it). */
static int reads_of(const Stage *s, const IrTensor *t)
{
    Count c = {t, 0, false};
    for (int i = 0; i < s->nguards; i++)
        ir_expr_visit(s->guards[i], count_visit, &c);
    ir_expr_visit(s->body, count_visit, &c);
    return c.nested ? -1 : c.n;
}

/* The dimension of the read kread whose subscript is the plain variable
 * var; -1 if none is. */
static int dim_of(const IExpr *kread, int var)
{
    for (int d = 0; d < kread->access.nidx; d++)
        if (plain(kread->access.idx[d], var))
            return d;
    return -1;
}

/* A fold found: y's node `prod` (a[I] * g or a[I] / g) and its read
 * `aread` of a, and in a's product the read `kread` of the weight. */
typedef struct Fold {
    IrTensor *y, *a;
    const IExpr *prod, *aread, *g, *kread;
} Fold;

static bool any_read(void *arg, const IExpr *e)
{
    *(bool *)arg |= e->kind == IE_ACCESS;
    return true;
}

/* Does g read weights (or weight-only stages) and nothing else?  A
 * constant alone is left to the operator (a BLAS call's alpha). */
static bool weight_factor_expr(IrCtx *cx, const Stage *ys, const IExpr *g)
{
    bool reads = false;
    ir_expr_visit(g, any_read, &reads);
    const Stage *s = ir_stage(cx, RED_NONE, ys->loops, ys->nloops, NULL, 0, NULL, 0, g);
    return reads && ir_stage_weight_only(s);
}

static bool is_weight(const IrTensor *k)
{
    return (k->kind == IT_WEIGHT || (k->kind == IT_STAGE && k->weight_only)) &&
           k->elem == ELEM_F32;
}

/* The read of a weight in a's top-level product (a tree of IE_MUL) that
 * can take g: read once in a, each loop variable of y that g uses a plain
 * subscript of it over the whole of its dimension. */
static const IExpr *weight_factor(const Stage *as, const Stage *ys, const IExpr *g,
                                  const IExpr *e)
{
    if (e->kind == IE_MUL) {
        const IExpr *k = weight_factor(as, ys, g, e->bin.a);
        return k ? k : weight_factor(as, ys, g, e->bin.b);
    }
    if (e->kind != IE_ACCESS || !e->access.tensor || !is_weight(e->access.tensor) ||
        reads_of(as, e->access.tensor) != 1)
        return NULL;
    const IrTensor *k = e->access.tensor;
    for (int v = 0; v < ys->nloops; v++) {
        if (!ir_expr_uses(g, ys->loops[v].id))
            continue;
        const IrVar *av = &as->loops[v];
        int d = dim_of(e, av->id);
        if (av->lo != ys->loops[v].lo || av->hi != ys->loops[v].hi || av->lo != 0 ||
            d < 0 || k->shape[d] != av->hi)
            return NULL;
    }
    return e;
}

typedef struct Find {
    IrCtx *cx;
    const IrProgram *p;
    const int *readers;
    IrTensor *y;
    Fold *f;
    bool found;
} Find;

static bool find_visit(void *arg, const IExpr *e)
{
    Find *fd = arg;
    if (fd->found)
        return false;
    if (e->kind != IE_MUL && e->kind != IE_DIV)
        return true;
    const Stage *ys = fd->y->stage;
    for (int side = 0; side < (e->kind == IE_MUL ? 2 : 1); side++) {
        const IExpr *r = side ? e->bin.b : e->bin.a, *g = side ? e->bin.a : e->bin.b;
        if (r->kind != IE_ACCESS || !r->access.tensor)
            continue;
        IrTensor *a = fd->p->tensors[r->access.tensor->id];
        if (a != r->access.tensor || a->kind != IT_STAGE || a->stage->red != RED_SUM ||
            a->is_output || a->weight_only || a->elem != ELEM_F32 || a->rank != ys->nloops ||
            a->stage->nloops != a->rank || fd->readers[a->id] != 1 ||
            !identity_read(r, a, ys) || reads_of(ys, a) != 1 ||
            !weight_factor_expr(fd->cx, ys, g))
            continue;
        const IExpr *k = weight_factor(a->stage, ys, g, a->stage->body);
        if (!k)
            continue;
        *fd->f = (Fold){fd->y, a, e, r, g, k};
        fd->found = true;
        return false;
    }
    return true;
}

static bool find_fold(IrCtx *cx, const IrProgram *p, const int *readers, Fold *f)
{
    for (int i = 0; i < p->ntensors; i++) {
        IrTensor *y = p->tensors[i];
        if (y->kind != IT_STAGE || y->weight_only || y->elem != ELEM_F32 ||
            y->stage->red != RED_NONE)
            continue;
        Find fd = {cx, p, readers, y, f, false};
        ir_expr_visit(y->stage->body, find_visit, &fd);
        if (fd.found)
            return true;
    }
    return false;
}

/* A name no tensor of p has: base, else base2, base3, ... */
static const char *fresh_name(Arena *ar, const IrProgram *p, const char *base)
{
    const char *name = base;
    for (int n = 2;; n++) {
        bool taken = false;
        for (int i = 0; i < p->ntensors && !taken; i++)
            taken = strcmp(p->tensors[i]->name, name) == 0;
        if (!taken)
            return name;
        name = arena_printf(ar, "%s%d", base, n);
    }
}

typedef struct Swap {
    const IExpr *from, *to;
    IrCtx *cx;
} Swap;

/* e with the node sw->from (by identity) replaced by sw->to. */
static const IExpr *swap_node(void *arg, const IExpr *e)
{
    const Swap *sw = arg;
    if (e == sw->from)
        return sw->to;
    return ir_expr_map_children(sw->cx, e, swap_node, NULL, arg);
}

/* K' over K's shape: K[D] * g (or / g), g's variables those of K's
 * subscripts in a. */
static IrTensor *scaled_weight(IrCtx *cx, const IrProgram *p, const Fold *f)
{
    Arena *ar = ir_arena(cx);
    const IrTensor *k = f->kread->access.tensor;
    const Stage *as = f->a->stage, *ys = f->y->stage;
    IrVar *l = arena_alloc(ar, (size_t)(k->rank + 1) * sizeof *l);
    const Ix **idx = arena_alloc(ar, (size_t)(k->rank + 1) * sizeof *idx);
    for (int d = 0; d < k->rank; d++) {
        l[d] = ir_var_new(cx, "d", 0, k->shape[d]);
        idx[d] = ix_var(cx, l[d].id);
    }
    const IExpr *g = f->g;
    for (int v = 0; v < ys->nloops; v++)     /* weight_factor found each */
        if (ir_expr_uses(g, ys->loops[v].id))
            g = ir_subst(cx, g, ys->loops[v].id, idx[dim_of(f->kread, as->loops[v].id)]);
    const IExpr *body = ir_binary(cx, f->prod->kind,
                                  ir_access_tensor(cx, k, idx, k->rank), g);
    IrTensor *t = arena_alloc(ar, sizeof *t);
    *t = (IrTensor){0, fresh_name(ar, p, arena_printf(ar, "%s@scaled", k->name)), IT_STAGE,
                    ELEM_F32, k->rank, k->shape, f->a->loc, false, true,
                    ir_stage(cx, RED_NONE, l, k->rank, NULL, 0, NULL, 0, body), NULL};
    return t;
}

/* The program's order with k' just before a (p takes the array).  What
 * k' reads after a (weight-only stages: batch norm's scale computed from
 * its variance, defined after the convolution) moves up with it, and so
 * does what those read after a, in their order; a weight-only stage
 * reads nothing else, so the order stays one of dependence. */
static IrTensor **place(Arena *ar, const IrProgram *p, IrTensor *k, const IrTensor *a)
{
    int nt = p->ntensors, at = a->id;
    bool *up = xcalloc((size_t)nt + 1, sizeof *up);
    const IrTensor *reads[64];
    for (int j = nt; j > at; j--) {
        const Stage *s = j == nt ? k->stage : up[j] ? p->tensors[j]->stage : NULL;
        int n = s ? ir_stage_tensors(s, reads, 64) : 0;
        if (n > 64)
            ICE("scalefold: a weight-only stage reads %d tensors", n);
        for (int i = 0; i < n; i++)
            if (reads[i]->id > at)
                up[reads[i]->id] = true;
    }
    IrTensor **order = arena_alloc(ar, (size_t)(nt + 1) * sizeof *order);
    int n = 0;
    for (int i = 0; i < at; i++)
        order[n++] = p->tensors[i];
    for (int i = at + 1; i < nt; i++)
        if (up[i])
            order[n++] = p->tensors[i];
    order[n++] = k;
    order[n++] = p->tensors[at];
    for (int i = at + 1; i < nt; i++)
        if (!up[i])
            order[n++] = p->tensors[i];
    free(up);
    return order;
}

static const Stage *with_body(IrCtx *cx, const Stage *s, const IExpr *body)
{
    return ir_stage_rebody(cx, s, s->guards, s->nguards, body);
}

/* --verify: y as the old stages of a and y give it and as the new ones
 * (with k') do, on random data. */
static bool check(const IrProgram *p, const Fold *f, const Stage *old_a, const Stage *old_y,
                  const IrTensor *k)
{
    int nt = p->ntensors;
    double **data = derive_verify_data(p, nt - 1);
    size_t n = ir_tensor_numel(f->y);
    double *want = xmalloc((n ? n : 1) * sizeof *want);
    derive_eval_into(old_a, f->a, data, data[f->a->id]);
    derive_eval_into(old_y, f->y, data, want);
    derive_eval_into(k->stage, k, data, data[k->id]);
    derive_eval_into(f->a->stage, f->a, data, data[f->a->id]);
    derive_eval_into(f->y->stage, f->y, data, data[f->y->id]);
    double err, scale;
    bool ok = derive_agree(want, data[f->y->id], n, &err, &scale);
    if (!ok)
        diag_error(f->y->loc, "--verify: '%s' changed when its factor went into the weight "
                   "of '%s' (max error %g, max value %g); this is a bug in einc", f->y->name,
                   f->a->name, err, scale);
    free(want);
    derive_verify_free(data, nt - 1);
    return ok;
}

DeriveFold *derive_fold_scales(IrCtx *cx, IrProgram *p, bool verify, int *nfolds)
{
    Arena *ar = ir_arena(cx);
    VEC(DeriveFold) made = {0};
    Fold f;
    for (;;) {
        int *readers = derive_readers(p);
        bool found = find_fold(cx, p, readers, &f);
        free(readers);
        if (!found)
            break;
        IrTensor *k = scaled_weight(cx, p, &f);
        const Stage *old_a = f.a->stage, *old_y = f.y->stage;
        const IExpr *kread = ir_access_tensor(cx, k, f.kread->access.idx, f.kread->access.nidx);
        Swap sa = {f.kread, kread, cx}, sy = {f.prod, f.aread, cx};
        f.a->stage = with_body(cx, old_a, swap_node(&sa, old_a->body));
        f.y->stage = with_body(cx, old_y, swap_node(&sy, old_y->body));
        ir_program_reorder(p, place(ar, p, k, f.a), p->ntensors + 1);
        vec_push(ar, &made, ((DeriveFold){f.y->name, f.a->name, k->name}));
        if (verify && !check(p, &f, old_a, old_y, k))
            ICE("--verify: a factor folded into a weight changed '%s'", f.y->name);
    }
    *nfolds = made.len;
    return made.data;
}
