/* fuse.c - inter-expression fusion: a chain of memory-bound stages
 * becomes one.  A map (a stage with no sum variables) whose only reader is
 * another map is substituted into it (traversal merging across tensors),
 * so the pair runs as one kernel with one pass over memory.  A read of
 * the map outside its loop ranges is zero; where the reader's indices can
 * leave them, the substituted body is guarded with select.  Weight-only
 * maps stay where they are: they run once, at load.  A pair is fused only
 * where the cost model prices the one kernel no dearer than the two.  The
 * plan records what each operator took in: the fused maps are its
 * prologue (plan.h), and they leave the program. */
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

static int count_reads(const IExpr *e, const IrTensor *t);

/* Reads by the gathers of an index (each an access). */
static int ix_count_reads(const Ix *x, const IrTensor *t)
{
    const IExpr *g[16];
    int n = ix_gathers(x, g, 16), c = 0;
    if (n > 16)
        return 2;                       /* many: never the single reader */
    for (int i = 0; i < n; i++)
        c += count_reads(g[i], t);
    return c;
}

static int count_reads(const IExpr *e, const IrTensor *t)
{
    switch (e->kind) {
    case IE_CONST:
        return 0;
    case IE_INDEX:
        return ix_count_reads(e->ix, t);
    case IE_ICMP:
        return ix_count_reads(e->icmp.ix, t);
    case IE_ACCESS: {
        int n = e->access.tensor == t;
        for (int k = 0; k < e->access.nidx; k++)
            n += ix_count_reads(e->access.idx[k], t);
        return n;
    }
    case IE_CALL: {
        int n = 0;
        for (int i = 0; i < e->call.nargs; i++)
            n += count_reads(e->call.args[i], t);
        return n;
    }
    case IE_NEG: case IE_NOT:
        return count_reads(e->bin.a, t);
    default:
        return count_reads(e->bin.a, t) + count_reads(e->bin.b, t);
    }
}

static int stage_reads(const Stage *s, const IrTensor *t)
{
    int n = count_reads(s->body, t);
    for (int g = 0; g < s->nguards; g++)
        n += count_reads(s->guards[g], t);
    return n;
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

/* The estimated seconds of `s` computing `t`, as its own operator. */
static double stage_cost(IrCtx *cx, const CostModel *cm, const IrTensor *t, const Stage *s)
{
    return plan_choose(cx, cm, t, s).cost;
}

typedef VEC(const IrTensor *) Tensors;

/* r's prologue takes in t and t's own prologue. */
static void absorb(Arena *a, Tensors *into, const Tensors *from, const IrTensor *t)
{
    for (int i = 0; i < from->len; i++)
        vec_push(a, into, from->data[i]);
    vec_push(a, into, t);
}

int derive_fuse(IrCtx *cx, Plan *pl, const CostModel *cm)
{
    IrProgram *p = pl->prog;
    int fused = 0, nv = ir_var_count(cx);
    bool *dead = xcalloc((size_t)p->ntensors + 1, sizeof *dead);
    Arena *a = ir_arena(cx);
    Tensors *pro = arena_alloc(a, (size_t)(p->ntensors + 1) * sizeof *pro);
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
        if (stage_cost(cx, cm, r, merged) >
            stage_cost(cx, cm, t, t->stage) + stage_cost(cx, cm, r, s))
            continue;
        r->stage = merged;
        dead[i] = true;
        for (int k = i + 1; k < p->ntensors; k++)
            if (p->tensors[k] == r)
                absorb(a, &pro[k], &pro[i], t);
        fused++;
    }
    free(lo);
    free(hi);
    if (!fused) {
        free(dead);
        return 0;
    }
    /* Drop the fused tensors and renumber; the plan's ops follow. */
    PlanOp *ops = arena_alloc(a, (size_t)(p->ntensors + 1) * sizeof *ops);
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
            ops[n] = plan_choose(cx, cm, t, t->stage);
            ops[n].prologue = pro[i].data;
            ops[n].nprologue = pro[i].len;
            if (!ops[n].at_load)
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
