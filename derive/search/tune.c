/* tune.c - the program of einc --emit=tuner (tune.h): every distinct
 * operator of the kept candidates, each on stand-in inputs of its own. */
#include "config.h"
#include "tune.h"

#include <stdlib.h>
#include <string.h>

/* ---- the tuner's program ---------------------------------------------------- */

/* The inputs of the operators: stand-ins shared by every operator that
 * reads a tensor of the same type and shape (their values are random
 * anyway), but distinct within one operator, so that no operator reads
 * one buffer twice where the program reads two tensors. */
typedef struct Retarget {
    IrCtx *cx;
    VEC(IrTensor *) pool;           /* every stand-in, by id */
    VEC(const IrTensor *) from;     /* this operator's tensors ... */
    VEC(IrTensor *) to;             /* ... and their stand-ins */
} Retarget;

static bool same_type(const IrTensor *a, const IrTensor *b)
{
    if (a->elem != b->elem || a->rank != b->rank)
        return false;
    for (int d = 0; d < a->rank; d++)
        if (a->shape[d] != b->shape[d])
            return false;
    return true;
}

static IrTensor *stand_in(Retarget *r, const IrTensor *t)
{
    Arena *a = ir_arena(r->cx);
    for (int i = 0; i < r->from.len; i++)
        if (r->from.data[i] == t)
            return r->to.data[i];
    IrTensor *in = NULL;
    for (int i = 0; i < r->pool.len && !in; i++) {
        if (!same_type(r->pool.data[i], t))
            continue;
        in = r->pool.data[i];
        for (int j = 0; j < r->to.len; j++)
            if (r->to.data[j] == in)
                in = NULL;
    }
    if (!in) {
        in = arena_alloc(a, sizeof *in);
        in->id = r->pool.len;
        in->name = arena_printf(a, "in%d", r->pool.len);
        in->kind = IT_INPUT;
        in->elem = t->elem;
        in->rank = t->rank;
        in->shape = t->shape;
        in->loc = t->loc;
        vec_push(a, &r->pool, in);
    }
    vec_push(a, &r->from, t);
    vec_push(a, &r->to, in);
    return in;
}

static const IExpr *retarget_access(void *arg, const IExpr *e)
{
    Retarget *r = arg;
    if (!e->access.tensor)
        return e;
    return ir_access_tensor(r->cx, stand_in(r, e->access.tensor), e->access.idx,
                            e->access.nidx);
}

typedef struct TuneOp {
    const PlanOp *op;
    const char *key;
    PlanOp run;                     /* the same operator over the stand-ins */
} TuneOp;
typedef VEC(TuneOp) TuneOps;

static const IExpr *retarget(Retarget *r, const IExpr *e)
{
    return e ? ir_map_access(r->cx, e, retarget_access, r) : NULL;
}

static void add_op(Retarget *r, TuneOps *ops, const PlanOp *planned, const CostModel *cm)
{
    Arena *a = ir_arena(r->cx);
    if (planned->at_load || planned->out->kind != IT_STAGE)
        return;
    /* on its own: no view into another tensor, none stored into it */
    PlanOp *op = arena_alloc(a, sizeof *op);
    *op = plan_op_alone(planned);
    const char *key = cost_op_key(a, op->stage, &op->op, cm->precision);
    for (int i = 0; i < ops->len; i++)
        if (strcmp(ops->data[i].key, key) == 0)
            return;
    const Stage *s = op->stage;
    r->from.len = r->to.len = 0;
    const IExpr **g = arena_alloc(a, (size_t)(s->nguards + 1) * sizeof *g);
    for (int i = 0; i < s->nguards; i++)
        g[i] = retarget(r, s->guards[i]);
    const IExpr *body = retarget(r, s->body);
    TuneOp t = {op, key, *op};
    /* each operator on its own: a row group's members are timed apart,
     * as their keys say (the group's time is no one key's) */
    t.run.rows = NULL;
    t.run.stage = ir_stage_rebody(r->cx, s, g, s->nguards, body);
    t.run.epi.value = retarget(r, op->epi.value);
    /* the library call reads the stand-ins of its operands */
    for (int j = 0; j < 2; j++)
        if (op->op.in[j])
            t.run.op.in[j] = stand_in(r, op->op.in[j]);
    vec_push(a, ops, t);
}

Plan *tune_program(IrCtx *cx, const Derived *d, const CostModel *cm,
                   const char *const **keys)
{
    Arena *a = ir_arena(cx);
    Retarget r = {cx, {0}, {0}, {0}};
    TuneOps ops = {0};
    /* what the chosen plan runs (fused kernels included), then every
     * operator of every candidate kept */
    const IrProgram *p = d->plan->prog;
    for (int i = 0; i < p->ntensors; i++)
        if (p->tensors[i]->kind == IT_STAGE)
            add_op(&r, &ops, &d->plan->ops[i], cm);
    for (int k = 0; k < d->nds; k++)
        for (int c = 0; c < d->ds[k].res.cands.len; c++) {
            const Pieces *pc = &d->ds[k].res.cands.data[c].pieces;
            for (int j = 0; j < pc->ops.len; j++)
                add_op(&r, &ops, &pc->ops.data[j], cm);
        }
    IrProgram *tp = arena_alloc(a, sizeof *tp);
    tp->cx = cx;
    tp->model = p->model;
    tp->ntensors = r.pool.len + ops.len;
    tp->tensors = arena_alloc(a, (size_t)(tp->ntensors + 1) * sizeof *tp->tensors);
    tp->noutputs = ops.len;
    tp->outputs = arena_alloc(a, (size_t)(ops.len + 1) * sizeof *tp->outputs);
    Plan *pl = arena_alloc(a, sizeof *pl);
    pl->prog = tp;
    pl->target = d->plan->target;
    pl->precision = d->plan->precision;
    pl->ops = arena_alloc(a, (size_t)(tp->ntensors + 1) * sizeof *pl->ops);
    const char **k = arena_alloc(a, (size_t)(tp->ntensors + 1) * sizeof *k);
    for (int i = 0; i < r.pool.len; i++)
        tp->tensors[i] = r.pool.data[i];
    for (int i = 0; i < ops.len; i++) {
        const PlanOp *op = ops.data[i].op;
        IrTensor *t = arena_alloc(a, sizeof *t);
        int id = r.pool.len + i;
        t->id = id;
        t->name = arena_printf(a, "op%d", i);
        t->kind = IT_STAGE;
        t->elem = op->out->elem;
        t->rank = op->out->rank;
        t->shape = op->out->shape;
        t->loc = op->out->loc;
        t->is_output = true;
        t->stage = ops.data[i].run.stage;
        tp->tensors[id] = t;
        tp->outputs[i] = id;
        pl->ops[id] = ops.data[i].run;
        pl->ops[id].out = t;
        k[id] = ops.data[i].key;
    }
    pl->cost = plan_total(pl);
    *keys = k;
    return pl;
}
