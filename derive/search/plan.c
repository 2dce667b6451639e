/* plan.c - instantiation of derived expressions (plan.h). */
#include "config.h"
#include "plan.h"

#include <stdlib.h>
#include <string.h>

/* Stages of any rank are instantiated: the arrays below are sized by the
 * stage at hand (in the IR arena), never by a constant, since a program
 * decides how many loops a stage has.  Refitting layouts is tried only up
 * to the iterators the operator patterns handle (MATCH_MAX_VARS): past
 * that no layout could match, and the stage runs as it is. */

typedef struct Made {
    const Stage *nested;        /* a nested stage already materialised */
    const IrTensor *t;          /* its tensor */
    int ndims;                  /* dims of t */
    int *perm;                  /* dim j of t is loop perm[j] of `nested` */
} Made;

typedef struct Flat {
    IrCtx *cx;
    const CostModel *cm;
    const IrTensor *result;
    int *next_id;
    Pieces *out;
    VEC(Made) made;
    int64_t *lo, *hi;           /* ranges of the variables in scope, by id */
    int nvars;
} Flat;

static void bind(Flat *f, const IrVar *v, int n)
{
    for (int i = 0; i < n; i++) {
        if (v[i].id >= f->nvars) {
            int nn = v[i].id * 2 + 64;
            f->lo = xrealloc(f->lo, (size_t)nn * sizeof *f->lo);
            f->hi = xrealloc(f->hi, (size_t)nn * sizeof *f->hi);
            f->nvars = nn;
        }
        f->lo[v[i].id] = v[i].lo;
        f->hi[v[i].id] = v[i].hi;
    }
}

/* Whether x stays within [lo, hi) over the ranges in scope. */
static bool within(Flat *f, const Ix *x, int64_t lo, int64_t hi)
{
    for (int i = 0; i < x->n; i++)
        if (x->t[i].kind == IX_VAR && x->t[i].var >= f->nvars)
            return false;
    int64_t mn, mx;
    ix_bounds(x, f->lo, f->hi, &mn, &mx);
    return mn >= lo && mx < hi;
}

static const Stage *flatten_stage(Flat *f, const Stage *s);

/* A new intermediate tensor computed by `st`, whose loops start at 0. */
static const IrTensor *add_tensor(Flat *f, const Stage *st)
{
    Arena *a = ir_arena(f->cx);
    int64_t *shape = arena_alloc(a, (size_t)(st->nloops + 1) * sizeof *shape);
    for (int d = 0; d < st->nloops; d++)
        shape[d] = st->loops[d].hi;
    IrTensor *t = arena_alloc(a, sizeof *t);
    t->id = (*f->next_id)++;
    /* '@' never appears in a name of the source, so no clash with the
     * "call.local" names of inlined defs */
    t->name = arena_printf(a, "%s@%d", f->result->name, f->out->ops.len + 1);
    t->kind = IT_STAGE;
    t->elem = ELEM_F32;
    t->rank = st->nloops;
    t->shape = shape;
    t->loc = f->result->loc;
    t->stage = st;
    t->weight_only = ir_stage_weight_only(st);
    PlanOp op = {t, st, {0}, 0, false};
    if (!match_stage(st, &op.op))
        op.op.kind = OPK_KERNEL;
    op.cost = cost_stage_ex(f->cm, st, &op.op, &op.measured);
    vec_push(a, &f->out->ops, op);
    return t;
}

/* `s` with its loops in the order perm (new position j holds old loop
 * perm[j]) and each shifted to start at 0. */
static const Stage *reorder_shift(Flat *f, const Stage *s, const int *perm, int n)
{
    Arena *a = ir_arena(f->cx);
    IrVar *loops = arena_alloc(a, (size_t)(n + 1) * sizeof *loops);
    const IExpr *body = s->body;
    const IExpr **g = arena_alloc(a, (size_t)(s->nguards + 1) * sizeof *g);
    if (s->nguards)
        memcpy(g, s->guards, (size_t)s->nguards * sizeof *g);
    for (int j = 0; j < n; j++) {
        const IrVar *v = &s->loops[perm[j]];
        loops[j] = v->lo == 0 ? *v : ir_var_new(f->cx, v->name, 0, v->hi - v->lo);
        if (v->lo == 0)
            continue;
        const Ix *by = ix_add(f->cx, ix_var(f->cx, loops[j].id), ix_const(f->cx, v->lo));
        body = ir_subst(f->cx, body, v->id, by);
        for (int k = 0; k < s->nguards; k++)
            g[k] = ir_subst(f->cx, g[k], v->id, by);
    }
    return ir_stage(f->cx, s->red, loops, n, s->sums, s->nsums, g, s->nguards, body);
}

/* ---- fitting layouts to a GEMM (guided layout transformation) -----------
 * A product of two tensor reads becomes a GEMM when each operand is laid
 * out [batch, rows, inner] and the output [batch, rows, cols].  An operand
 * that is not is relaid out into a new tensor (computed once at load when
 * it depends on weights only); an intermediate's own loops may be
 * reordered freely. */

enum { C_BATCH, C_M, C_N, C_K, C_NONE };

/* The relayout of operand `acc` to dims `vars` (in that order). */
static const IExpr *relayout(Flat *f, const Stage *s, const IExpr *acc, const int *vars, int n)
{
    Arena *a = ir_arena(f->cx);
    IrVar *loops = arena_alloc(a, (size_t)(n + 1) * sizeof *loops);
    for (int j = 0; j < n; j++) {
        for (int i = 0; i < s->nloops; i++)
            if (s->loops[i].id == vars[j])
                loops[j] = s->loops[i];
        for (int i = 0; i < s->nsums; i++)
            if (s->sums[i].id == vars[j])
                loops[j] = s->sums[i];
    }
    int *perm = arena_alloc(a, (size_t)(n + 1) * sizeof *perm);
    for (int j = 0; j < n; j++)
        perm[j] = j;
    const Stage *st = reorder_shift(f, ir_stage(f->cx, RED_NONE, loops, n, NULL, 0,
                                                NULL, 0, acc), perm, n);
    const IrTensor *t = add_tensor(f, st);
    const Ix **idx = arena_alloc(a, (size_t)(n + 1) * sizeof *idx);
    for (int j = 0; j < n; j++)
        idx[j] = ix_sub(f->cx, ix_var(f->cx, vars[j]), ix_const(f->cx, loops[j].lo));
    return ir_access_tensor(f->cx, t, idx, n);
}

/* Try to make `s` a GEMM; *perm receives the loop order (identity unless
 * free_output).  Returns the new stage, or NULL. */
static const Stage *fit_gemm(Flat *f, const Stage *s, bool free_output, int *perm)
{
    const IExpr *b = s->body;
    if (s->red != RED_SUM || s->nguards || b->kind != IE_MUL ||
        b->bin.a->kind != IE_ACCESS || b->bin.b->kind != IE_ACCESS ||
        !b->bin.a->access.tensor || !b->bin.b->access.tensor ||
        s->nloops + s->nsums > MATCH_MAX_VARS)
        return NULL;
    const IExpr *A = b->bin.a, *B = b->bin.b;
    int cls[MATCH_MAX_VARS], nv = s->nloops + s->nsums;
    for (int i = 0; i < nv; i++) {
        bool loop = i < s->nloops;
        int v = loop ? s->loops[i].id : s->sums[i - s->nloops].id;
        bool ia = ir_expr_uses(A, v), ib = ir_expr_uses(B, v);
        cls[i] = loop ? (ia && ib ? C_BATCH : ia ? C_M : ib ? C_N : C_NONE)
                      : (ia && ib ? C_K : C_NONE);
        if (cls[i] == C_NONE)
            return NULL;
    }
    /* canonical orders: batch, M, N by loop position; K by sum position */
    int order_a[MATCH_MAX_VARS], order_b[MATCH_MAX_VARS], na = 0, nb = 0, no = 0;
    static const int ga[] = {C_BATCH, C_M, C_K}, gb[] = {C_BATCH, C_K, C_N},
                     go[] = {C_BATCH, C_M, C_N};
    for (int g = 0; g < 3; g++)
        for (int i = 0; i < nv; i++) {
            int v = i < s->nloops ? s->loops[i].id : s->sums[i - s->nloops].id;
            if (cls[i] == ga[g]) order_a[na++] = v;
            if (cls[i] == gb[g]) order_b[nb++] = v;
            if (cls[i] == go[g] && i < s->nloops) perm[no++] = i;
        }
    if (!free_output)
        for (int i = 0; i < s->nloops; i++)
            perm[i] = i;
    /* Relay out what does not fit: try neither operand, B, A, both, and
     * keep the cheapest that matches (a relayout of weights is free: it
     * runs at load). */
    OpMatch m;
    int best = -1;
    double best_cost = 0;
    for (int pass = 0; pass < 5; pass++) {
        int try = pass < 4 ? pass : best;
        if (pass == 4 && best < 0)
            break;
        const IExpr *ea = A, *eb = B;
        int before = f->out->ops.len;
        if (try & 1)
            eb = relayout(f, s, B, order_b, nb);
        if (try & 2)
            ea = relayout(f, s, A, order_a, na);
        const Stage *t = ir_stage(f->cx, s->red, s->loops, s->nloops, s->sums, s->nsums,
                                  NULL, 0, ir_binary(f->cx, IE_MUL, ea, eb));
        const Stage *r = reorder_shift(f, t, perm, s->nloops);
        if (pass == 4)
            return t;
        if (match_stage(r, &m)) {
            double c = cost_stage(f->cm, r, &m);
            for (int i = before; i < f->out->ops.len; i++)
                if (!f->out->ops.data[i].out->weight_only)
                    c += f->out->ops.data[i].cost;
            if (best < 0 || c < best_cost) {
                best = try;
                best_cost = c;
            }
        }
        f->out->ops.len = before;
    }
    return NULL;
}

/* ---- fitting layouts to a convolution ----------------------------------
 * x[n, c, h + r.., w + s..] * k[..] becomes a convolution when the filter
 * is relaid out [f.., c, r, s] (free: it depends on weights only, so it
 * runs at load) and the loops are ordered n, f.., h, w. */

/* The loop (coefficient > 0) and sum variable of a spatial index. */
static bool spatial_vars(const Stage *s, const Ix *x, int *h, int *r)
{
    *h = *r = -1;
    for (int i = 0; i < x->n; i++) {
        const IxTerm *t = &x->t[i];
        if (t->kind != IX_VAR || t->coef <= 0)
            return false;
        bool loop = false, sum = false;
        for (int j = 0; j < s->nloops; j++)
            loop |= s->loops[j].id == t->var;
        for (int j = 0; j < s->nsums; j++)
            sum |= s->sums[j].id == t->var;
        if (loop && *h < 0)
            *h = t->var;
        else if (sum && *r < 0)
            *r = t->var;
        else
            return false;
    }
    return *h >= 0 && *r >= 0;
}

static const Stage *fit_conv(Flat *f, const Stage *s, bool free_output, int *perm)
{
    const IExpr *b = s->body;
    if (s->red != RED_SUM || s->nguards || b->kind != IE_MUL || s->nsums != 3 ||
        b->bin.a->kind != IE_ACCESS || b->bin.b->kind != IE_ACCESS ||
        !b->bin.a->access.tensor || !b->bin.b->access.tensor ||
        s->nloops + s->nsums > MATCH_MAX_VARS)
        return NULL;
    for (int order = 0; order < 2; order++) {
        const IExpr *X = order ? b->bin.b : b->bin.a, *W = order ? b->bin.a : b->bin.b;
        if (X->access.nidx != 4)
            continue;
        const Ix *const *xi = X->access.idx;
        int n, c, h, w, r, sv;
        if (xi[0]->n != 1 || xi[1]->n != 1 || xi[0]->t[0].kind != IX_VAR ||
            xi[1]->t[0].kind != IX_VAR || xi[0]->t[0].coef != 1 || xi[1]->t[0].coef != 1 ||
            !spatial_vars(s, xi[2], &h, &r) || !spatial_vars(s, xi[3], &w, &sv))
            continue;
        n = xi[0]->t[0].var;
        c = xi[1]->t[0].var;
        int pn = ir_loop_pos(s, n), ph = ir_loop_pos(s, h), pw = ir_loop_pos(s, w);
        if (pn < 0 || ir_loop_pos(s, c) >= 0 || ir_expr_uses(W, n) || ir_expr_uses(W, h) ||
            ir_expr_uses(W, w) || !ir_expr_uses(W, c) || !ir_expr_uses(W, r) || !ir_expr_uses(W, sv))
            continue;
        /* the output channels: every other loop, read by the filter only */
        int order_w[MATCH_MAX_VARS], nw = 0, np = 0;
        bool ok = true;
        perm[np++] = pn;
        for (int i = 0; i < s->nloops && ok; i++) {
            int v = s->loops[i].id;
            if (i == pn || i == ph || i == pw)
                continue;
            ok = ir_expr_uses(W, v) && !ir_expr_uses(X, v);
            perm[np++] = i;
            order_w[nw++] = v;
        }
        if (!ok || nw == 0)
            continue;
        perm[np++] = ph;
        perm[np++] = pw;
        if (!free_output)
            for (int i = 0; i < s->nloops; i++)
                ok &= perm[i] == i;
        if (!ok)
            continue;
        order_w[nw++] = c;
        order_w[nw++] = r;
        order_w[nw++] = sv;
        OpMatch m;
        const Stage *as_is = s;
        if (match_stage(reorder_shift(f, as_is, perm, s->nloops), &m))
            return as_is;
        const IExpr *w2 = relayout(f, s, W, order_w, nw);
        const Stage *t = ir_stage(f->cx, s->red, s->loops, s->nloops, s->sums, s->nsums,
                                  NULL, 0, ir_binary(f->cx, IE_MUL, X, w2));
        if (match_stage(reorder_shift(f, t, perm, s->nloops), &m))
            return t;
    }
    return NULL;
}

/* A stage as computed: the cheapest of running it as it is and of the
 * layouts that make it a convolution or a GEMM. */
typedef const Stage *(*FitFn)(Flat *f, const Stage *s, bool free_output, int *perm);
static const FitFn fits[] = {fit_conv, fit_gemm};

static const Stage *instantiate_stage(Flat *f, const Stage *s, bool free_output, int *perm)
{
    for (int i = 0; i < s->nloops; i++)
        perm[i] = i;
    OpMatch m;
    if (match_stage(s, &m) || s->nloops + s->nsums > MATCH_MAX_VARS)
        return s;
    int best = -1, p2[MATCH_MAX_VARS];
    double best_cost = cost_stage(f->cm, s, NULL);
    for (int i = 0; i < (int)(sizeof fits / sizeof *fits); i++) {
        int before = f->out->ops.len;
        const Stage *g = fits[i](f, s, free_output, p2);
        if (g) {
            double c = 0;
            for (int j = before; j < f->out->ops.len; j++)
                if (!f->out->ops.data[j].out->weight_only)
                    c += f->out->ops.data[j].cost;
            const Stage *r = reorder_shift(f, g, p2, s->nloops);
            c += cost_stage(f->cm, r, match_stage(r, &m) ? &m : NULL);
            if (c < best_cost) {
                best = i;
                best_cost = c;
            }
        }
        f->out->ops.len = before;
    }
    return best < 0 ? s : fits[best](f, s, free_output, perm);
}

/* Next permutation of p[0..n) in lexicographic order; false after the last. */
static bool next_perm(int *p, int n)
{
    int i = n - 2;
    while (i >= 0 && p[i] >= p[i + 1])
        i--;
    if (i < 0)
        return false;
    int j = n - 1;
    while (p[j] <= p[i])
        j--;
    int t = p[i]; p[i] = p[j]; p[j] = t;
    for (int a = i + 1, b = n - 1; a < b; a++, b--) {
        t = p[a]; p[a] = p[b]; p[b] = t;
    }
    return true;
}

/* An order of the loops of an intermediate product stage under which it
 * matches an operator as it is (guided layout transformation of the
 * output); false when none does. */
static bool fit_loop_order(Flat *f, const Stage *s, int *perm)
{
    const IExpr *b = s->body;
    if (s->red != RED_SUM || b->kind != IE_MUL || s->nloops > 4 ||
        b->bin.a->kind != IE_ACCESS || b->bin.b->kind != IE_ACCESS)
        return false;
    int p[4];
    for (int i = 0; i < s->nloops; i++)
        p[i] = i;
    OpMatch m;
    while (next_perm(p, s->nloops)) {
        if (match_stage(reorder_shift(f, s, p, s->nloops), &m)) {
            memcpy(perm, p, (size_t)s->nloops * sizeof *p);
            return true;
        }
    }
    return false;
}

/* The tensor that holds nested stage `s`, read at `idx`: loops it does not
 * depend on dropped (where idx provably stays in their range), the rest
 * reordered as its operator wants and shifted to start at 0. */
static const Made *materialise(Flat *f, const Stage *s, const Ix *const *idx)
{
    for (int i = 0; i < f->made.len; i++) {
        const Made *m = &f->made.data[i];
        if (!ir_stage_equal(m->nested, s))
            continue;
        bool ok = true;         /* the dropped loops are in range here too */
        for (int d = 0; d < s->nloops; d++)
            if (!ir_stage_uses(s, s->loops[d].id))
                ok &= within(f, idx[d], s->loops[d].lo, s->loops[d].hi);
        if (ok)
            return m;
    }
    Arena *a = ir_arena(f->cx);
    Made m = {s, NULL, 0, NULL};
    const Stage *flat = flatten_stage(f, s);
    int *keep = arena_alloc(a, (size_t)(flat->nloops + 1) * sizeof *keep), nkeep = 0;
    for (int d = 0; d < flat->nloops; d++)
        if (ir_stage_uses(flat, flat->loops[d].id) ||
            !within(f, idx[d], flat->loops[d].lo, flat->loops[d].hi))
            keep[nkeep++] = d;
    if (nkeep < flat->nloops) {
        IrVar *loops = arena_alloc(a, (size_t)(nkeep + 1) * sizeof *loops);
        for (int j = 0; j < nkeep; j++)
            loops[j] = flat->loops[keep[j]];
        flat = ir_stage(f->cx, flat->red, loops, nkeep, flat->sums, flat->nsums,
                        flat->guards, flat->nguards, flat->body);
    }
    int *perm = arena_alloc(a, (size_t)(nkeep + 1) * sizeof *perm);
    m.perm = arena_alloc(a, (size_t)(nkeep + 1) * sizeof *m.perm);
    OpMatch om;
    if (!match_stage(flat, &om) && fit_loop_order(f, flat, perm))
        ;
    else
        flat = instantiate_stage(f, flat, true, perm);
    m.ndims = nkeep;
    for (int j = 0; j < nkeep; j++)
        m.perm[j] = keep[perm[j]];
    m.t = add_tensor(f, reorder_shift(f, flat, perm, flat->nloops));
    vec_push(ir_arena(f->cx), &f->made, m);
    return &f->made.data[f->made.len - 1];
}

/* A read of a nested stage becomes a read of its tensor. */
static const IExpr *flatten_access(void *arg, const IExpr *e)
{
    Flat *f = arg;
    IrCtx *cx = f->cx;
    if (!e->access.stage)
        return e;
    const Stage *s = e->access.stage;
    const Made *m = materialise(f, s, e->access.idx);
    const Ix **idx = arena_alloc(ir_arena(cx), (size_t)(m->ndims + 1) * sizeof *idx);
    for (int j = 0; j < m->ndims; j++)
        idx[j] = ix_sub(cx, e->access.idx[m->perm[j]], ix_const(cx, s->loops[m->perm[j]].lo));
    return ir_access_tensor(cx, m->t, idx, m->ndims);
}

static const IExpr *flatten_expr(Flat *f, const IExpr *e)
{
    return ir_map_access(f->cx, e, flatten_access, f);
}

static const Stage *flatten_stage(Flat *f, const Stage *s)
{
    bind(f, s->loops, s->nloops);
    bind(f, s->sums, s->nsums);
    const IExpr **g = arena_alloc(ir_arena(f->cx), (size_t)(s->nguards + 1) * sizeof *g);
    for (int i = 0; i < s->nguards; i++)
        g[i] = flatten_expr(f, s->guards[i]);
    const IExpr *body = flatten_expr(f, s->body);
    return ir_stage(f->cx, s->red, s->loops, s->nloops, s->sums, s->nsums, g,
                    s->nguards, body);
}

void plan_instantiate(IrCtx *cx, const CostModel *cm, const IrTensor *result,
                      const Stage *s, int *next_id, Pieces *out)
{
    Flat f = {cx, cm, result, next_id, out, {0}, NULL, NULL, 0};
    const Stage *flat = flatten_stage(&f, s);
    int *perm = arena_alloc(ir_arena(cx), (size_t)(flat->nloops + 1) * sizeof *perm);
    flat = instantiate_stage(&f, flat, false, perm);
    PlanOp op = {result, flat, {0}, 0, false};
    if (!match_stage(flat, &op.op))
        op.op.kind = OPK_KERNEL;
    op.cost = cost_stage_ex(cm, flat, &op.op, &op.measured);
    vec_push(ir_arena(cx), &out->ops, op);
    free(f.lo);
    free(f.hi);
    out->cost = 0;
    for (int i = 0; i < out->ops.len; i++)
        out->cost += !out->ops.data[i].out->weight_only ? out->ops.data[i].cost : 0;
}

static void print_shape(const IrTensor *t, FILE *fp)
{
    fputc('[', fp);
    for (int d = 0; d < t->rank; d++)
        fprintf(fp, "%s%lld", d ? ", " : "", (long long)t->shape[d]);
    fputc(']', fp);
}

static void print_op(const PlanOp *o, FILE *fp)
{
    const OpMatch *m = &o->op;
    fprintf(fp, "%-16s %s ", op_kind_name(m->kind), o->out->name);
    print_shape(o->out, fp);
    if (m->kind != OPK_KERNEL)
        fprintf(fp, " = %s %s %s ", m->in[0]->name,
                m->kind == OPK_CONV2D || m->kind == OPK_CONV_TRANSPOSE2D ? "*" : "x",
                m->in[1]->name);
    OpDim d[OP_MAX_DIMS];
    int nd = match_dims(m, d);
    for (int i = 0; i < nd; i++)
        fprintf(fp, " %s=%lld", d[i].name, (long long)d[i].value);
    fprintf(fp, "  %.2f us%s%s\n", o->cost * 1e6, o->measured ? " (measured)" : "",
            o->out->weight_only ? " (at load)" : "");
}

void plan_print(const Plan *pl, FILE *fp)
{
    fprintf(fp, "plan %s: estimated %.2f us\n", pl->prog->model, pl->cost * 1e6);
    for (int i = 0; i < pl->prog->ntensors; i++) {
        const IrTensor *t = pl->prog->tensors[i];
        if (t->kind == IT_STAGE)
            print_op(&pl->ops[t->id], fp);
    }
}
