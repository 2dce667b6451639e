/* fuse.c - inter-expression fusion: a chain of memory-bound stages
 * becomes one.  A map (a stage with no sum variables) whose only reader is
 * another map is substituted into it (traversal merging across tensors),
 * so the pair runs as one kernel with one pass over memory.  A read of
 * the map outside its loop ranges is zero; where the reader's indices can
 * leave them, the substituted body is guarded with select.  Weight-only
 * maps stay where they are: they run once, at load.  A pair is fused only
 * where the cost model prices the one kernel no dearer than the two. */
#include "config.h"
#include "derive.h"

#include <stdlib.h>
#include <string.h>

typedef struct Fuse {
    IrCtx *cx;
    const IrTensor *t;          /* the map being substituted */
    const int64_t *lo, *hi;     /* ranges of the reader's variables, by id */
} Fuse;

/* t's value at idx: its body with its loops replaced, guarded where idx
 * may leave the loop ranges or a guard of t may fail. */
static const IExpr *value_at(Fuse *fu, const Ix *const *idx)
{
    IrCtx *cx = fu->cx;
    const Stage *s = fu->t->stage;
    const IExpr *body = s->body, *cond = NULL;
    for (int g = 0; g < s->nguards; g++)
        cond = cond ? ir_binary(cx, IE_AND, cond, s->guards[g]) : s->guards[g];
    for (int d = 0; d < s->nloops; d++) {
        body = ir_subst(cx, body, s->loops[d].id, idx[d]);
        if (cond)
            cond = ir_subst(cx, cond, s->loops[d].id, idx[d]);
    }
    for (int d = 0; d < s->nloops; d++) {
        int64_t mn, mx;
        ix_bounds(idx[d], fu->lo, fu->hi, &mn, &mx);
        if (mn < s->loops[d].lo) {
            const IExpr *c = ir_icmp(cx, OP_GE, idx[d], ix_const(cx, s->loops[d].lo));
            cond = cond ? ir_binary(cx, IE_AND, cond, c) : c;
        }
        if (mx >= s->loops[d].hi) {
            const IExpr *c = ir_icmp(cx, OP_LT, idx[d], ix_const(cx, s->loops[d].hi));
            cond = cond ? ir_binary(cx, IE_AND, cond, c) : c;
        }
    }
    if (!cond)
        return body;
    const IExpr *args[3] = {cond, body, ir_const(cx, 0)};
    return ir_call(cx, FN_SELECT, args, 3);
}

static const IExpr *substitute_access(void *arg, const IExpr *e)
{
    Fuse *fu = arg;
    return e->access.tensor == fu->t ? value_at(fu, e->access.idx) : e;
}

static const IExpr *substitute(Fuse *fu, const IExpr *e)
{
    return ir_map_access(fu->cx, e, substitute_access, fu);
}

typedef struct Reads {
    const IrTensor *t;
    int n;
} Reads;

static bool count_read(void *arg, const IExpr *e)
{
    Reads *r = arg;
    r->n += e->kind == IE_ACCESS && e->access.tensor == r->t;
    return true;
}

/* How many accesses of s's body and guards read t. */
static int stage_reads(const Stage *s, const IrTensor *t)
{
    Reads r = {t, 0};
    ir_expr_visit(s->body, count_read, &r);
    for (int g = 0; g < s->nguards; g++)
        ir_expr_visit(s->guards[g], count_read, &r);
    return r.n;
}

static bool is_map(const IrTensor *t)
{
    return t->kind == IT_STAGE && t->stage->nsums == 0 && t->elem == ELEM_F32;
}

/* The single map that reads t (once), or NULL. */
static IrTensor *single_reader(const IrProgram *p, const IrTensor *t)
{
    IrTensor *reader = NULL;
    for (int i = 0; i < p->ntensors; i++) {
        IrTensor *u = p->tensors[i];
        if (u->kind != IT_STAGE)
            continue;
        int n = stage_reads(u->stage, t);
        if (n == 0)
            continue;
        if (reader || n > 1 || !is_map(u))
            return NULL;
        reader = u;
    }
    return reader;
}

/* A stage's estimated seconds, as its own operator. */
static double stage_cost(const CostModel *cm, const Stage *s)
{
    OpMatch m;
    bool measured;
    if (!match_stage(s, &m))
        m.kind = OPK_KERNEL;
    return cost_stage_ex(cm, s, &m, &measured);
}

int derive_fuse(IrCtx *cx, Plan *pl, const CostModel *cm)
{
    IrProgram *p = pl->prog;
    int fused = 0, nv = ir_var_count(cx);
    bool *dead = xcalloc((size_t)p->ntensors + 1, sizeof *dead);
    int64_t *lo = xcalloc((size_t)nv + 1, sizeof *lo), *hi = xcalloc((size_t)nv + 1, sizeof *hi);
    for (int i = 0; i < p->ntensors; i++) {
        IrTensor *t = p->tensors[i];
        if (!is_map(t) || t->is_output || t->weight_only)
            continue;
        IrTensor *r = single_reader(p, t);
        if (!r || r->weight_only)
            continue;
        const Stage *s = r->stage;
        for (int d = 0; d < s->nloops; d++) {
            lo[s->loops[d].id] = s->loops[d].lo;
            hi[s->loops[d].id] = s->loops[d].hi;
        }
        Fuse fu = {cx, t, lo, hi};
        const IExpr **g = xmalloc((size_t)(s->nguards + 1) * sizeof *g);
        for (int k = 0; k < s->nguards; k++)
            g[k] = substitute(&fu, s->guards[k]);
        const Stage *merged = ir_stage(cx, s->red, s->loops, s->nloops, s->sums, s->nsums, g,
                                       s->nguards, substitute(&fu, s->body));
        free(g);
        /* Only where the one kernel is priced no dearer than the two: on a
         * GPU it saves a pass over memory and a launch, but on a CPU a
         * branchy body moved into a loop the compiler no longer vectorizes
         * can cost more than the pass it saves. */
        if (stage_cost(cm, merged) > stage_cost(cm, t->stage) + stage_cost(cm, s))
            continue;
        r->stage = merged;
        dead[i] = true;
        fused++;
    }
    free(lo);
    free(hi);
    if (!fused) {
        free(dead);
        return 0;
    }
    /* Drop the fused tensors and renumber; the plan's ops follow. */
    PlanOp *ops = arena_alloc(ir_arena(cx), (size_t)(p->ntensors + 1) * sizeof *ops);
    int *outs = xmalloc((size_t)(p->noutputs + 1) * sizeof *outs);
    for (int i = 0; i < p->noutputs; i++)
        outs[i] = p->outputs[i];
    int n = 0;
    pl->cost = 0;
    for (int i = 0; i < p->ntensors; i++) {
        IrTensor *t = p->tensors[i];
        if (dead[i])
            continue;
        for (int k = 0; k < p->noutputs; k++)
            if (outs[k] == t->id)
                p->outputs[k] = n;
        ops[n] = pl->ops[t->id];
        if (t->kind == IT_STAGE) {
            ops[n].out = t;
            ops[n].stage = t->stage;
            if (!match_stage(t->stage, &ops[n].op))
                ops[n].op.kind = OPK_KERNEL;
            ops[n].cost = cost_stage_ex(cm, t->stage, &ops[n].op, &ops[n].measured);
            if (!t->weight_only)
                pl->cost += ops[n].cost;
        }
        t->id = n;
        p->tensors[n++] = t;
    }
    p->ntensors = n;
    pl->ops = ops;
    free(outs);
    free(dead);
    return fused;
}
