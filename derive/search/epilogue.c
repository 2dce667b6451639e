/* epilogue.c - element-wise maps applied by the operator they follow.
 * A map z that reads an operator's output y at its own element (z[i, j]
 * reads y[i, j], nothing else of y), where nothing else reads y, becomes
 * y's operator's epilogue (plan.h): the operator computes y's value and
 * stores z's, so y has no buffer and z no operator of its own.  A
 * generated kernel applies it in its store; a library call takes it as
 * what the library fuses (oneDNN's post-ops, cuBLASLt's epilogue,
 * cuDNN's pointwise nodes: derive/pricing/libs.c) or is followed by one
 * pass over its output.  It is made only where the
 * cost model prices the operator with the epilogue no dearer than the two
 * operators apart.  Runs after fuse.c, on the plan's program. */
#include "config.h"
#include "derive.h"

#include <stdlib.h>

/* Does every read of y in e take y at exactly the variables `vars`? */
typedef struct Reads {
    IrCtx *cx;
    const IrTensor *y;              /* NULL: list the stage tensors read */
    const Stage *at;                /* whose loop variables */
    bool ok;
    int n;
    const IrTensor **reads;         /* y == NULL: the tensors, xmalloc'd */
    int nreads;
} Reads;

static bool visit_read(void *arg, const IExpr *e)
{
    Reads *r = arg;
    if (!r->y && e->kind == IE_ACCESS && e->access.tensor &&
        e->access.tensor->kind == IT_STAGE) {
        for (int i = 0; i < r->nreads; i++)
            if (r->reads[i] == e->access.tensor)
                return true;
        if ((r->nreads & (r->nreads - 1)) == 0)
            r->reads = xrealloc(r->reads, (size_t)(r->nreads ? 2 * r->nreads : 1) *
                                              sizeof *r->reads);
        r->reads[r->nreads++] = e->access.tensor;
        return true;
    }
    if (e->kind != IE_ACCESS || e->access.tensor != r->y)
        return true;
    r->n++;
    if (e->access.nidx != r->at->nloops)
        r->ok = false;
    for (int d = 0; r->ok && d < e->access.nidx; d++)
        if (!ix_equal(e->access.idx[d], ix_var(r->cx, r->at->loops[d].id)))
            r->ok = false;
    return r->ok;
}

/* A read of y (at the operator's element) replaced by y's epilogue. */
typedef struct Compose {
    const IrTensor *y;
    const IExpr *value;
} Compose;

static const IExpr *compose_access(void *arg, const IExpr *e)
{
    const Compose *c = arg;
    return e->access.tensor == c->y ? c->value : e;
}

/* Does the stage s run over the whole of t's shape? */
static bool whole(const Stage *s, const IrTensor *t)
{
    if (s->nloops != t->rank)
        return false;
    for (int d = 0; d < s->nloops; d++)
        if (s->loops[d].lo != 0 || s->loops[d].hi != t->shape[d])
            return false;
    return true;
}

/* The operator whose output y z can take as its epilogue: y read only by
 * z, at z's element; NULL if none. */
static const IrTensor *producer(IrCtx *cx, const Plan *pl, const IrTensor *z, const int *readers)
{
    const Stage *zs = z->stage;
    if (!whole(zs, z) || zs->nguards)
        return NULL;
    /* the stage tensors z reads (at most a few: its body's accesses) */
    Reads all = {cx, NULL, zs, true, 0, NULL, 0};
    ir_expr_visit(zs->body, visit_read, &all);
    const IrTensor *found = NULL;
    for (int i = 0; i < all.nreads && !found; i++) {
        const IrTensor *y = all.reads[i];
        const PlanOp *op = &pl->ops[y->id];
        if (y->kind != IT_STAGE || y->is_output || y->weight_only || y->elem != ELEM_F32 ||
            readers[y->id] != 1 || op->at_load || op->rows ||
            op->buf.kind != BUF_OWN || y->rank != z->rank)
            continue;
        /* a map after a map is fuse.c's to merge (where it is cheaper) */
        if (op->impl == IMPL_KERNEL && op->stage->nsums == 0 && !op->epi.value)
            continue;
        bool same = whole(op->stage, y);
        for (int d = 0; same && d < y->rank; d++)
            same = y->shape[d] == z->shape[d];
        Reads r = {cx, y, zs, true, 0, NULL, 0};
        if (same)
            ir_expr_visit(zs->body, visit_read, &r);
        if (same && r.ok && r.n > 0)
            found = y;
    }
    free(all.reads);
    return found;
}

/* --verify: y's operator `op` with z's epilogue (composed with the one
 * y had, `was`), against the two apart, on random data. */
static bool check(IrCtx *cx, const PlanOp *op, const PlanOp *was, const IrTensor *y,
                  const IrTensor *z, const Stage *zs, double **data)
{
    double err, scale;
    derive_eval_into(op->stage, op->epi.self, data, data[op->epi.self->id]);
    if (was->epi.value)
        derive_eval_into(plan_epilogue_stage(cx, was), y, data, data[y->id]);
    if (derive_same(zs, plan_epilogue_stage(cx, op), z, data, &err, &scale))
        return true;
    diag_error(z->loc, "--verify: '%s' as the epilogue of '%s' differs from the two apart "
               "(max error %g, max value %g); this is a bug in einc",
               z->name, y->name, err, scale);
    return false;
}

int derive_epilogues(IrCtx *cx, Plan *pl, const CostModel *cm, bool verify)
{
    IrProgram *p = pl->prog;
    int nt = p->ntensors, made = 0, bad = 0;
    int *readers = derive_readers(p);
    bool *dead = xcalloc((size_t)nt + 1, sizeof *dead);
    double **data = verify ? derive_verify_data(p, nt - 1) : NULL;
    Arena *a = ir_arena(cx);
    for (int i = 0; i < nt; i++) {
        IrTensor *z = p->tensors[i];
        const PlanOp *zop = &pl->ops[i];
        if (z->kind != IT_STAGE || z->elem != ELEM_F32 || z->weight_only || zop->at_load ||
            zop->impl != IMPL_KERNEL || z->stage->nsums || zop->epi.value || zop->rows)
            continue;
        const IrTensor *y = producer(cx, pl, z, readers);
        if (!y)
            continue;
        PlanOp op = pl->ops[y->id];
        const Stage *zs = z->stage;
        const IExpr *v = zs->body;
        for (int d = 0; d < zs->nloops; d++)
            v = ir_subst(cx, v, zs->loops[d].id, ix_var(cx, op.stage->loops[d].id));
        /* y's own epilogue: z reads what it stores */
        const PlanEpilogue *ye = &op.epi;
        int nabs = ye->value ? ye->nabsorbed + 1 : 1;
        const IrTensor **abs = arena_alloc(a, (size_t)nabs * sizeof *abs);
        if (ye->value) {
            Compose c = {y, ye->value};
            v = ir_map_access(cx, v, compose_access, &c);
            for (int k = 0; k < ye->nabsorbed; k++)
                abs[k] = ye->absorbed[k];
            abs[nabs - 1] = y;
        } else {
            abs[0] = y;
        }
        if (!derive_fits(p, op.stage, v))
            continue;
        op.out = z;
        op.epi = (PlanEpilogue){v, ye->value ? ye->self : y, abs, nabs};
        plan_price(cx, cm, &op);
        if (op.cost > pl->ops[y->id].cost + zop->cost)
            continue;
        if (verify)
            bad += !check(cx, &op, &pl->ops[y->id], y, z, zs, data);
        z->stage = op.stage;
        pl->ops[i] = op;
        dead[y->id] = true;
        made++;
    }
    if (data)
        derive_verify_free(data, nt - 1);
    free(readers);
    if (bad)
        ICE("--verify: %d epilogue%s differ%s from the maps %s replace%s", bad,
            bad > 1 ? "s" : "", bad > 1 ? "" : "s", bad > 1 ? "they" : "it",
            bad > 1 ? "" : "s");
    if (made)
        derive_drop(pl, dead);
    free(dead);
    return made;
}
