/* plan.c - instantiation of derived expressions (plan.h). */
#include "config.h"
#include "plan.h"

#include <string.h>

typedef struct Flat {
    IrCtx *cx;
    const Device *dev;
    const IrTensor *result;
    int *next_id;
    Pieces *out;
    VEC(const Stage *) seen;    /* nested stages already materialised */
    VEC(const IrTensor *) made; /* ... and their tensors */
} Flat;

static const Stage *flatten_stage(Flat *f, const Stage *s);

/* The tensor that holds nested stage `s`: its loop ranges shifted to 0. */
static const IrTensor *materialise(Flat *f, const Stage *s)
{
    for (int i = 0; i < f->seen.len; i++)
        if (ir_stage_equal(f->seen.data[i], s))
            return f->made.data[i];
    Arena *a = ir_arena(f->cx);
    const Stage *flat = flatten_stage(f, s);
    IrVar *loops = arena_alloc(a, (size_t)flat->nloops * sizeof *loops);
    int64_t *shape = arena_alloc(a, (size_t)flat->nloops * sizeof *shape);
    const IExpr *body = flat->body;
    const IExpr **guards = arena_alloc(a, (size_t)(flat->nguards + 1) * sizeof *guards);
    memcpy(guards, flat->guards, (size_t)flat->nguards * sizeof *guards);
    for (int d = 0; d < flat->nloops; d++) {
        const IrVar *v = &flat->loops[d];
        shape[d] = v->hi - v->lo;
        loops[d] = v->lo == 0 ? *v : ir_var_new(f->cx, v->name, 0, shape[d]);
        if (v->lo == 0)
            continue;
        const Ix *by = ix_add(f->cx, ix_var(f->cx, loops[d].id), ix_const(f->cx, v->lo));
        body = ir_subst(f->cx, body, v->id, by);
        for (int g = 0; g < flat->nguards; g++)
            guards[g] = ir_subst(f->cx, guards[g], v->id, by);
    }
    const Stage *st = ir_stage(f->cx, flat->red, loops, flat->nloops, flat->sums,
                               flat->nsums, guards, flat->nguards, body);
    IrTensor *t = arena_alloc(a, sizeof *t);
    t->id = (*f->next_id)++;
    t->name = arena_printf(a, "%s.t%d", f->result->name, f->out->ops.len + 1);
    t->kind = IT_STAGE;
    t->elem = ELEM_F32;
    t->rank = st->nloops;
    t->shape = shape;
    t->loc = f->result->loc;
    t->stage = st;
    t->weight_only = ir_stage_weight_only(st);
    PlanOp op = {t, st, {0}, 0};
    if (!match_stage(st, &op.op))
        op.op.kind = OPK_KERNEL;
    op.cost = cost_stage(f->dev, st, &op.op);
    vec_push(a, &f->out->ops, op);
    vec_push(a, &f->seen, s);
    vec_push(a, &f->made, (const IrTensor *)t);
    return t;
}

static const IExpr *flatten_expr(Flat *f, const IExpr *e)
{
    IrCtx *cx = f->cx;
    switch (e->kind) {
    case IE_CONST: case IE_INDEX: case IE_ICMP:
        return e;
    case IE_ACCESS: {
        if (!e->access.stage)
            return e;
        const Stage *s = e->access.stage;
        const IrTensor *t = materialise(f, s);
        const Ix **idx = arena_alloc(ir_arena(cx), (size_t)e->access.nidx * sizeof *idx);
        for (int d = 0; d < e->access.nidx; d++)
            idx[d] = ix_sub(cx, e->access.idx[d], ix_const(cx, s->loops[d].lo));
        return ir_access_tensor(cx, t, idx, e->access.nidx);
    }
    case IE_CALL: {
        const IExpr *args[3];
        for (int i = 0; i < e->call.nargs && i < 3; i++)
            args[i] = flatten_expr(f, e->call.args[i]);
        return ir_call(cx, e->call.fn, args, e->call.nargs);
    }
    case IE_NEG: case IE_NOT:
        return ir_unary(cx, e->kind, flatten_expr(f, e->bin.a));
    case IE_CMP:
        return ir_cmp(cx, e->bin.op, flatten_expr(f, e->bin.a), flatten_expr(f, e->bin.b));
    default:
        return ir_binary(cx, e->kind, flatten_expr(f, e->bin.a), flatten_expr(f, e->bin.b));
    }
}

static const Stage *flatten_stage(Flat *f, const Stage *s)
{
    const IExpr **g = arena_alloc(ir_arena(f->cx), (size_t)(s->nguards + 1) * sizeof *g);
    for (int i = 0; i < s->nguards; i++)
        g[i] = flatten_expr(f, s->guards[i]);
    const IExpr *body = flatten_expr(f, s->body);
    return ir_stage(f->cx, s->red, s->loops, s->nloops, s->sums, s->nsums, g,
                    s->nguards, body);
}

void plan_instantiate(IrCtx *cx, const Device *dev, const IrTensor *result,
                      const Stage *s, int *next_id, Pieces *out)
{
    Flat f = {cx, dev, result, next_id, out, {0}, {0}};
    const Stage *flat = flatten_stage(&f, s);
    PlanOp op = {result, flat, {0}, 0};
    if (!match_stage(flat, &op.op))
        op.op.kind = OPK_KERNEL;
    op.cost = cost_stage(dev, flat, &op.op);
    vec_push(ir_arena(cx), &out->ops, op);
    out->cost = 0;
    for (int i = 0; i < out->ops.len; i++)
        out->cost += !out->ops.data[i].out->weight_only
                         ? out->ops.data[i].cost : 0;
}

Plan *plan_direct(IrCtx *cx, const Device *dev, const IrProgram *p)
{
    Arena *a = ir_arena(cx);
    Plan *pl = arena_alloc(a, sizeof *pl);
    pl->prog = (IrProgram *)p;
    pl->ops = arena_alloc(a, (size_t)(p->ntensors + 1) * sizeof *pl->ops);
    for (int i = 0; i < p->ntensors; i++) {
        const IrTensor *t = p->tensors[i];
        if (t->kind != IT_STAGE)
            continue;
        PlanOp *op = &pl->ops[t->id];
        op->out = t;
        op->stage = t->stage;
        if (!match_stage(t->stage, &op->op))
            op->op.kind = OPK_KERNEL;
        op->cost = cost_stage(dev, t->stage, &op->op);
        if (!t->weight_only)
            pl->cost += op->cost;
    }
    return pl;
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
    switch (m->kind) {
    case OPK_MATMUL: case OPK_BATCH_MATMUL:
        fprintf(fp, " = %s x %s  m=%lld n=%lld k=%lld", m->in[0]->name, m->in[1]->name,
                (long long)m->m, (long long)m->n, (long long)m->k);
        if (m->kind == OPK_BATCH_MATMUL)
            fprintf(fp, " batch=%lld", (long long)m->batch);
        break;
    case OPK_CONV2D: case OPK_CONV_TRANSPOSE2D:
        fprintf(fp, " = %s * %s  n=%lld c=%lld h=%lld w=%lld f=%lld r=%lld s=%lld "
                    "stride=%lld dilation=%lld pad=%lld groups=%lld",
                m->in[0]->name, m->in[1]->name, (long long)m->cn, (long long)m->c,
                (long long)m->h, (long long)m->w, (long long)m->f, (long long)m->r,
                (long long)m->s, (long long)m->stride, (long long)m->dilation,
                (long long)m->pad, (long long)m->groups);
        break;
    case OPK_G2BMM: case OPK_GBMM:
        fprintf(fp, " = %s x %s  b=%lld m=%lld w=%lld k=%lld dilation=%lld",
                m->in[0]->name, m->in[1]->name, (long long)m->gb, (long long)m->gm,
                (long long)m->gw, (long long)m->gk, (long long)m->gdil);
        break;
    case OPK_KERNEL:
        break;
    }
    fprintf(fp, "  %.2f us%s\n", o->cost * 1e6, o->out->weight_only ? " (at load)" : "");
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
