/* siblings.c - inter-expression merging: expressions of the same form
 * over the same inputs that differ only in one weight (the Q, K and V
 * projections of attention) become one expression over the weights
 * stacked along a new leading dimension, so the search sees one larger
 * operator instead of several small ones.
 *
 *   Q = L<I> Σ<S> { X[..] * Wq[..] }, K = .. Wk .., V = .. Wv ..
 *     =>  W' = L<j, D> { select(j == 0, Wq[D], select(j == 1, Wk[D], Wv[D])) }
 *         M  = L<j, I> Σ<S> { X[..] * W'[j, ..] }
 *
 * (W' depends on weights only: it is stacked once, at load.)  Readers of
 * Q, K, V read M[0, ..], M[1, ..], M[2, ..]; one that is an output stays
 * as a copy of its slice.  Merged when the cost model says the merged
 * form is cheaper. */
#include "config.h"
#include "derive.h"

#include <stdlib.h>
#include <string.h>

#define MAX_GROUP 16

/* Reads of tensor `from` become reads of `to`, with `lead` inserted at
 * index position `pos` when given. */
typedef struct Retarget {
    IrCtx *cx;
    const IrTensor *from, *to;
    const Ix *lead;
    int pos;
} Retarget;

/* dst = src[0..at) ++ one element of `size` bytes (left for the caller)
 * ++ src[at..n).  src may be NULL when n is 0 (a rank-0 tensor's shape, a
 * stage without loops): memcpy's arguments must not be NULL even for 0
 * bytes, nor may NULL take an offset, so empty halves are not copied. */
static void copy_with_gap(void *dst, const void *src, int n, int at, size_t size)
{
    char *d = dst;
    const char *s = src;
    if (at > 0)
        memcpy(d, s, (size_t)at * size);
    if (n > at)
        memcpy(d + (size_t)(at + 1) * size, s + (size_t)at * size, (size_t)(n - at) * size);
}

static const IExpr *retarget_access(void *arg, const IExpr *e)
{
    const Retarget *rt = arg;
    if (e->access.tensor != rt->from)
        return e;
    int n = e->access.nidx + (rt->lead ? 1 : 0), k = 0;
    const Ix **idx = arena_alloc(ir_arena(rt->cx), (size_t)(n + 1) * sizeof *idx);
    for (int i = 0; i <= e->access.nidx; i++) {
        if (rt->lead && i == rt->pos)
            idx[k++] = rt->lead;
        if (i < e->access.nidx)
            idx[k++] = e->access.idx[i];
    }
    return ir_access_tensor(rt->cx, rt->to, idx, n);
}

static const IExpr *retarget(IrCtx *cx, const IExpr *e, const IrTensor *from,
                             const IrTensor *to, const Ix *lead, int pos)
{
    Retarget rt = {cx, from, to, lead, pos};
    return ir_map_access(cx, e, retarget_access, &rt);
}

/* s with reads of `from` retargeted (lead inserted at index position pos)
 * and, with `extra`, a new loop at position `at`. */
static const Stage *retarget_stage(IrCtx *cx, const Stage *s, const IrTensor *from,
                                   const IrTensor *to, const Ix *lead, int pos,
                                   const IrVar *extra, int at)
{
    const IExpr **g = arena_alloc(ir_arena(cx), (size_t)(s->nguards + 1) * sizeof *g);
    for (int i = 0; i < s->nguards; i++)
        g[i] = retarget(cx, s->guards[i], from, to, lead, pos);
    const IrVar *loops = s->loops;
    int nloops = s->nloops;
    if (extra) {
        IrVar *l = arena_alloc(ir_arena(cx), (size_t)(nloops + 1) * sizeof *l);
        copy_with_gap(l, s->loops, nloops, at, sizeof *l);
        l[at] = *extra;
        loops = l;
        nloops++;
    }
    return ir_stage(cx, s->red, loops, nloops, s->sums, s->nsums, g, s->nguards,
                    retarget(cx, s->body, from, to, lead, pos));
}

/* The weight a product stage reads, if exactly one of its two factors is
 * a weight. */
static const IrTensor *the_weight(const IrTensor *t)
{
    const IExpr *b = t->stage->body;
    if (t->stage->red != RED_SUM || b->kind != IE_MUL || b->bin.a->kind != IE_ACCESS ||
        b->bin.b->kind != IE_ACCESS || !b->bin.a->access.tensor || !b->bin.b->access.tensor)
        return NULL;
    const IrTensor *x = b->bin.a->access.tensor, *y = b->bin.b->access.tensor;
    if ((x->kind == IT_WEIGHT) == (y->kind == IT_WEIGHT))
        return NULL;
    return x->kind == IT_WEIGHT ? x : y;
}

static bool same_shape(const IrTensor *a, const IrTensor *b)
{
    if (a->rank != b->rank)
        return false;
    for (int d = 0; d < a->rank; d++)
        if (a->shape[d] != b->shape[d])
            return false;
    return true;
}

/* The form of t with its weight made anonymous: equal keys, same form. */
static uint64_t form_key(IrCtx *cx, const IrTensor *t, const IrTensor *w, IrTensor *hole)
{
    *hole = *w;
    hole->id = -1;
    hole->name = "?";
    return ir_fingerprint(retarget_stage(cx, t->stage, w, hole, NULL, 0, NULL, 0));
}

static double group_cost(IrCtx *cx, const CostModel *cm, IrTensor *const *g, int n, int *next_id)
{
    double c = 0;
    for (int i = 0; i < n; i++) {
        Pieces pc = {{0}, 0};
        plan_instantiate(cx, cm, g[i], g[i]->stage, next_id, &pc);
        c += pc.cost;
    }
    return c;
}

/* The two tensors that replace a group: the stacked weights made[0] and
 * the merged stage made[1].  Nothing existing changes. */
static void build_group(IrCtx *cx, IrTensor **g, int n, int at, IrTensor **made)
{
    Arena *a = ir_arena(cx);
    const IrTensor *w0 = the_weight(g[0]);
    /* W'[j, d..] = select(j == 0, W0[d..], select(j == 1, W1[d..], ..)) */
    IrVar *wl = arena_alloc(a, (size_t)(w0->rank + 1) * sizeof *wl);
    const Ix **widx = arena_alloc(a, (size_t)(w0->rank + 1) * sizeof *widx);
    wl[0] = ir_var_new(cx, "j", 0, n);
    for (int d = 0; d < w0->rank; d++) {
        wl[d + 1] = ir_var_new(cx, "d", 0, w0->shape[d]);
        widx[d] = ix_var(cx, wl[d + 1].id);
    }
    const IExpr *v = ir_access_tensor(cx, the_weight(g[n - 1]), widx, w0->rank);
    for (int i = n - 2; i >= 0; i--) {
        const IExpr *args[3] = {
            ir_icmp(cx, OP_EQ, ix_var(cx, wl[0].id), ix_const(cx, i)),
            ir_access_tensor(cx, the_weight(g[i]), widx, w0->rank), v};
        v = ir_call(cx, FN_SELECT, args, 3);
    }
    int64_t *wshape = arena_alloc(a, (size_t)(w0->rank + 1) * sizeof *wshape);
    copy_with_gap(wshape, w0->shape, w0->rank, 0, sizeof *wshape);
    wshape[0] = n;
    IrTensor *ws = arena_alloc(a, sizeof *ws);
    *ws = (IrTensor){0, arena_printf(a, "%s@stacked", g[0]->name), IT_STAGE, w0->elem,
                     w0->rank + 1, wshape, g[0]->loc, false, true,
                     ir_stage(cx, RED_NONE, wl, w0->rank + 1, NULL, 0, NULL, 0, v), NULL};
    /* M[j, I] = the first member's form over W'[j, ..] */
    IrVar j = ir_var_new(cx, "j", 0, n);
    int64_t *mshape = arena_alloc(a, (size_t)(g[0]->rank + 1) * sizeof *mshape);
    copy_with_gap(mshape, g[0]->shape, g[0]->rank, at, sizeof *mshape);
    mshape[at] = n;
    IrTensor *m = arena_alloc(a, sizeof *m);
    *m = (IrTensor){0, arena_printf(a, "%s@merged", g[0]->name), IT_STAGE, ELEM_F32,
                    g[0]->rank + 1, mshape, g[0]->loc, false, false,
                    retarget_stage(cx, g[0]->stage, w0, ws, ix_var(cx, j.id), 0, &j, at), NULL};
    made[0] = ws;
    made[1] = m;
}

/* Readers of member i read M[i, ..]; an output member copies its slice. */
static void apply_group(IrCtx *cx, IrProgram *p, IrTensor **g, int n, const IrTensor *m,
                        int at)
{
    Arena *a = ir_arena(cx);
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < p->ntensors; k++) {
            IrTensor *u = p->tensors[k];
            if (u->kind == IT_STAGE && u != g[i])
                u->stage = retarget_stage(cx, u->stage, g[i], m, ix_const(cx, i), at, NULL, 0);
        }
        if (g[i]->is_output) {
            const Stage *s = g[i]->stage;
            const Ix **idx = arena_alloc(a, (size_t)(s->nloops + 2) * sizeof *idx);
            for (int d = 0, k = 0; d <= s->nloops; d++) {
                if (d == at)
                    idx[k++] = ix_const(cx, i);
                if (d < s->nloops)
                    idx[k++] = ix_var(cx, s->loops[d].id);
            }
            g[i]->stage = ir_stage(cx, RED_NONE, s->loops, s->nloops, NULL, 0, NULL, 0,
                                   ir_access_tensor(cx, m, idx, s->nloops + 1));
        }
    }
}

int derive_merge_siblings(IrCtx *cx, IrProgram *p, const CostModel *cm)
{
    Arena *a = ir_arena(cx);
    int n = p->ntensors, merged = 0, next_id = n + 1000000;
    uint64_t *key = xcalloc((size_t)n + 1, sizeof *key);
    bool *done = xcalloc((size_t)n + 1, sizeof *done);
    IrTensor hole;
    for (int i = 0; i < n; i++) {
        IrTensor *t = p->tensors[i];
        const IrTensor *w = t->kind == IT_STAGE ? the_weight(t) : NULL;
        if (w && t->stage->nloops == t->rank)
            key[i] = form_key(cx, t, w, &hole);
    }
    VEC(IrTensor *) order = {0};
    for (int i = 0; i < n; i++) {
        IrTensor *t = p->tensors[i];
        if (done[i] || !key[i]) {
            if (!done[i])
                vec_push(a, &order, t);
            continue;
        }
        IrTensor *g[MAX_GROUP];
        int ng = 0;
        g[ng++] = t;
        for (int k = i + 1; k < n && ng < MAX_GROUP; k++)
            if (!done[k] && key[k] == key[i] && same_shape(p->tensors[k], t) &&
                same_shape(the_weight(p->tensors[k]), the_weight(t)))
                g[ng++] = p->tensors[k];
        IrTensor *made[2];
        if (ng < 2) {
            vec_push(a, &order, t);
            continue;
        }
        /* the merged loop goes where the cost model likes it best */
        double best = group_cost(cx, cm, g, ng, &next_id);
        int at = -1;
        for (int pos = 0; pos <= t->rank; pos++) {
            build_group(cx, g, ng, pos, made);
            double c = group_cost(cx, cm, made + 1, 1, &next_id);
            if (c < best) {
                best = c;
                at = pos;
            }
        }
        if (at < 0) {
            vec_push(a, &order, t);
            continue;
        }
        build_group(cx, g, ng, at, made);
        apply_group(cx, p, g, ng, made[1], at);
        /* Members go away (outputs stay as copies); merged tensors come first. */
        vec_push(a, &order, made[0]);
        vec_push(a, &order, made[1]);
        for (int k = 0; k < ng; k++) {
            done[g[k]->id] = true;
            if (g[k]->is_output)
                vec_push(a, &order, g[k]);
        }
        merged++;
    }
    if (merged)
        ir_program_reorder(p, order.data, order.len);
    free(key);
    free(done);
    return merged;
}
