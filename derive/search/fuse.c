/* fuse.c - inter-expression fusion: a chain of memory-bound stages
 * becomes one.  A map (a stage with no sum variables) whose only reader is
 * another map, reading it once, is substituted into it (traversal merging
 * across tensors), so the pair runs as one kernel with one pass over
 * memory; a map that is only a read of another tensor (a view) goes into
 * a map however many times it reads it, and into any other single reader
 * that reads it once, a reduction too, where a library operator can then
 * take the tensor as a strided view instead of a copy.  A read of
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

/* The largest fused kernel: expression depth and nodes (see derive_fuse). */
#define FUSE_MAX_DEPTH 64
#define FUSE_MAX_NODES 4096

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
    /* what the reader's ranges decide, folded: a head split out of a
     * batch of one, q[g / 8, .., 64 (g % 8) + d] with g below 8, reads
     * q[0, .., 64 g + d], a view a library operator takes */
    body = ir_expr_fold(cx, body, fu->lo, fu->hi);
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

static bool is_map(const IrTensor *t)
{
    return t->kind == IT_STAGE && t->stage->nsums == 0 && t->elem == ELEM_F32;
}

/* ---- who reads what, kept up to date as maps merge ------------------------
 * For each tensor x: how many stages read it and the sum of their ids
 * (with one reader, the sum is its id); for each pair (x, reader): how
 * many times.  Each merge walks the merged stage once, so fusing a
 * program costs the size of what it builds, not the program's size per
 * map (which made a chain of N maps cost N^3). */
typedef struct PairMap {
    uint64_t *key;                  /* x << 32 | reader, + 1 (0: empty) */
    int *count;
    size_t cap, n;
} PairMap;

static size_t pair_slot(const PairMap *pm, uint64_t key)
{
    size_t i = (size_t)((key * 0x9e3779b97f4a7c15u) >> 20) & (pm->cap - 1);
    while (pm->key[i] && pm->key[i] != key)
        i = (i + 1) & (pm->cap - 1);
    return i;
}

static int *pair_count(PairMap *pm, int x, int reader)
{
    if (2 * (pm->n + 1) > pm->cap) {
        PairMap big = {xcalloc(pm->cap ? 2 * pm->cap : 1024, sizeof *big.key),
                       xcalloc(pm->cap ? 2 * pm->cap : 1024, sizeof *big.count),
                       pm->cap ? 2 * pm->cap : 1024, pm->n};
        for (size_t i = 0; i < pm->cap; i++)
            if (pm->key[i]) {
                size_t j = pair_slot(&big, pm->key[i]);
                big.key[j] = pm->key[i];
                big.count[j] = pm->count[i];
            }
        free(pm->key);
        free(pm->count);
        *pm = big;
    }
    uint64_t key = ((uint64_t)(uint32_t)x << 32 | (uint32_t)reader) + 1;
    size_t i = pair_slot(pm, key);
    if (!pm->key[i]) {
        pm->key[i] = key;
        pm->count[i] = 0;
        pm->n++;
    }
    return &pm->count[i];
}

/* What one stage reads, with counts, and its depth and size. */
typedef struct Use {
    int x, n;
} Use;

typedef struct Info {
    Use *reads;
    int nreads;
    int depth, nodes;
} Info;

typedef struct Walk {
    const IrProgram *p;             /* reads of its tensors are counted */
    Arena *arena;
    int *count;                     /* by tensor id, zero between walks */
    VEC(int) seen;                  /* the ids counted */
    int nodes;
} Walk;

static int walk_stage(Walk *w, const Stage *s);

static int walk_expr(Walk *w, const IExpr *e);

/* An index expression's depth; its terms count as nodes, a gather's read
 * as an expression. */
static int walk_ix(Walk *w, const Ix *x)
{
    int d = 0, k;
    w->nodes += 1 + x->n;
    for (int i = 0; i < x->n; i++) {
        const IxTerm *t = &x->t[i];
        if (t->kind == IX_VAR)
            continue;
        k = t->kind == IX_READ ? walk_expr(w, t->read) : walk_ix(w, t->arg);
        d = k > d ? k : d;
    }
    return 1 + d;
}

/* Counts the reads of e (nested stages and gathers included) and returns
 * its depth, index expressions included. */
static int walk_expr(Walk *w, const IExpr *e)
{
    int d = 0, k;
    w->nodes++;
    const Ix *const *ixs;
    int nx = ir_expr_ixs(e, &ixs);
    for (int i = 0; i < nx; i++)
        if ((k = walk_ix(w, ixs[i])) > d)
            d = k;
    if (e->kind == IE_ACCESS && e->access.tensor) {
        /* a fused row group's members that left the program keep their
         * stale ids (plan.h, PlanRowGroup): no reads of the program's */
        int x = e->access.tensor->id;
        if (x >= 0 && x < w->p->ntensors && w->p->tensors[x] == e->access.tensor &&
            w->count[x]++ == 0)
            vec_push(w->arena, &w->seen, x);
    } else if (ir_expr_stage(e) && (k = walk_stage(w, ir_expr_stage(e))) > d) {
        d = k;
    }
    const IExpr *kids[IR_MAX_CHILDREN];
    int nk = ir_expr_children(e, kids);
    for (int i = 0; i < nk; i++)
        if ((k = walk_expr(w, kids[i])) > d)
            d = k;
    return 1 + d;
}

static int walk_stage(Walk *w, const Stage *s)
{
    int d = walk_expr(w, s->body);
    for (int g = 0; g < s->nguards; g++) {
        int k = walk_expr(w, s->guards[g]);
        d = k > d ? k : d;
    }
    return d;
}

static Info stage_info(Walk *w, const Stage *s)
{
    Info in = {0};
    w->seen.len = 0;
    w->nodes = 0;
    in.depth = walk_stage(w, s);
    in.nodes = w->nodes;
    in.nreads = w->seen.len;
    in.reads = xmalloc((size_t)(in.nreads + 1) * sizeof *in.reads);
    for (int i = 0; i < w->seen.len; i++) {
        int x = w->seen.data[i];
        in.reads[i] = (Use){x, w->count[x]};
        w->count[x] = 0;
    }
    return in;
}

/* Nodes of an index expression, a gather's subscripts included (a
 * substitution rewrites those too). */
static int ix_size(const Ix *x)
{
    int n = 1 + x->n;
    for (int i = 0; i < x->n; i++) {
        const IxTerm *t = &x->t[i];
        if (t->kind == IX_READ)
            for (int k = 0; k < t->read->access.nidx; k++)
                n += ix_size(t->read->access.idx[k]);
        else if (t->kind != IX_VAR)
            n += ix_size(t->arg);
    }
    return n;
}

typedef struct Subscripts {
    const IrTensor *t;
    int max;
} Subscripts;

static bool subscript_visit(void *arg, const IExpr *e)
{
    Subscripts *sz = arg;
    if (e->kind == IE_ACCESS && e->access.tensor == sz->t)
        for (int i = 0; i < e->access.nidx; i++) {
            int k = ix_size(e->access.idx[i]);
            sz->max = k > sz->max ? k : sz->max;
        }
    return true;
}

/* The largest subscript of an access to t in e: what each use of one of
 * t's loop variables grows to when t is substituted. */
static int subscript_size(const IExpr *e, const IrTensor *t)
{
    Subscripts sz = {t, 0};
    ir_expr_visit(e, subscript_visit, &sz);
    return sz.max;
}

typedef struct Readers {
    PairMap pairs;
    int *nreaders;                  /* by tensor id */
    int64_t *idsum;                 /* by tensor id: sum of the readers' ids */
} Readers;

static void add_reads(Readers *rd, int reader, const Info *in, int sign)
{
    for (int i = 0; i < in->nreads; i++) {
        int x = in->reads[i].x;
        *pair_count(&rd->pairs, x, reader) += sign * in->reads[i].n;
        rd->nreaders[x] += sign;
        rd->idsum[x] += sign * reader;
    }
}

/* A map that only reads another tensor at other indices (a layout copy,
 * a slice, heads split out of a dimension): substituted into a
 * reduction, it can leave a library operator reading the tensor itself
 * through a strided view (match.c), with no copy. */
static bool is_view(const IrTensor *t)
{
    const Stage *s = t->stage;
    return s->nguards == 0 && s->body->kind == IE_ACCESS && s->body->access.tensor;
}

/* The single stage that reads t if it is a map (or, t a view, any
 * stage), with the number of its reads of t in *reads; else -1.  A map
 * other than a view goes into a reader that reads it once (more would
 * compute it again per read); a view costs nothing per read but its
 * subscripts, so a map that reads it several times takes it in too (a
 * rotary embedding's three reads of the heads split out of a
 * projection).  A reduction takes a view read once: one read more of its
 * source can cost a library operator's match or a row group's shape. */
static int single_reader(Readers *rd, const IrProgram *p, int t, int *reads)
{
    if (rd->nreaders[t] != 1)
        return -1;
    int r = (int)rd->idsum[t];
    const IrTensor *rt = p->tensors[r];
    bool view = is_view(p->tensors[t]);
    *reads = *pair_count(&rd->pairs, t, r);
    bool takes = is_map(rt) ? *reads == 1 || view
                            : view && *reads == 1 && rt->kind == IT_STAGE && rt->elem == ELEM_F32;
    return takes ? r : -1;
}

/* The estimated seconds of `s` computing `t`, as its own operator. */
static double stage_cost(IrCtx *cx, const CostModel *cm, const IrTensor *t, const Stage *s)
{
    return plan_choose(cx, cm, t, s).cost;
}

/* stage_cost of t's stage as the plan has it: the price of t's operator
 * where that computes this very stage and nothing around it (no prologue,
 * epilogue, row group or other operator's store: plan_price priced it as
 * plan_choose does), else priced again.  The passes before this one
 * leave most operators so; pricing each pair again was most of a pass. */
static double op_cost(IrCtx *cx, const CostModel *cm, const Plan *pl, const IrTensor *t)
{
    const PlanOp *op = &pl->ops[t->id];
    if (op->stage == t->stage && !op->nprologue && !op->epi.value && !op->rows &&
        !op->stored_by)
        return op->cost;
    return stage_cost(cx, cm, t, t->stage);
}

typedef VEC(const IrTensor *) Tensors;

/* r's prologue takes in t and t's own prologue. */
static void absorb(Arena *a, Tensors *into, const Tensors *from, const IrTensor *t)
{
    for (int i = 0; i < from->len; i++)
        vec_push(a, into, from->data[i]);
    vec_push(a, into, t);
}

/* --verify: r's stage `merged`, with t substituted, against `before`
 * reading t's values (written into data, t's last use); false, with an
 * error at r, where they differ. */
static bool check_fused(const IrTensor *t, const IrTensor *r, const Stage *before,
                        const Stage *merged, double **data)
{
    double err, scale;
    derive_eval_into(t->stage, t, data, data[t->id]);
    if (derive_same(before, merged, r, data, &err, &scale))
        return true;
    diag_error(r->loc, "--verify: '%s' with '%s' fused into it differs from the two apart "
               "(max error %g, max value %g); this is a bug in einc",
               r->name, t->name, err, scale);
    return false;
}

int derive_fuse(IrCtx *cx, Plan *pl, const CostModel *cm, VarRanges *vr, double budget_ms,
                bool verify)
{
    IrProgram *p = pl->prog;
    int fused = 0, nt = p->ntensors, bad = 0;
    double **data = verify ? derive_verify_data(p, nt - 1) : NULL;
    bool *dead = xcalloc((size_t)nt + 1, sizeof *dead);
    Arena *a = ir_arena(cx);
    Tensors *pro = arena_alloc(a, (size_t)(nt + 1) * sizeof *pro);
    var_ranges_fit(vr, ir_var_count(cx) + 1);
    Walk w = {p, arena_new(), xcalloc((size_t)nt + 1, sizeof *w.count), {0}, 0};
    Info *info = xcalloc((size_t)nt + 1, sizeof *info);
    Readers rd = {{0}, xcalloc((size_t)nt + 1, sizeof *rd.nreaders),
                  xcalloc((size_t)nt + 1, sizeof *rd.idsum)};
    for (int i = 0; i < nt; i++)
        if (p->tensors[i]->kind == IT_STAGE) {
            info[i] = stage_info(&w, p->tensors[i]->stage);
            add_reads(&rd, i, &info[i], 1);
        }
    for (int i = 0; i < nt; i++) {
        IrTensor *t = p->tensors[i];
        if (!is_map(t) || t->is_output || t->weight_only)
            continue;
        /* --search-budget bounds the whole compile: past it, the rest
         * stays unfused */
        if (search_budget_spent(budget_ms))
            break;
        int reads;
        int ri = single_reader(&rd, p, i, &reads);
        if (ri < 0 || p->tensors[ri]->weight_only)
            continue;
        IrTensor *r = p->tensors[ri];
        /* Bounded kernels: a chain of maps longer than this becomes
         * several kernels, so each merge costs at most a bounded walk and
         * no expression grows deeper than the walks of the IR and the
         * emitters can take. */
        const Stage *s = r->stage;
        int sub = subscript_size(s->body, t);
        for (int k = 0; k < s->nguards; k++)
            if (subscript_size(s->guards[k], t) > sub)
                sub = subscript_size(s->guards[k], t);
        /* every node of t may take a subscript of r in place of a loop
         * variable (a chain of t[i % 7 + i / 3] grows its indices
         * exponentially), and a guard per bound of each, at each read */
        long est = (long)info[ri].nodes +
                   reads * ((long)info[i].nodes * (sub > 1 ? sub : 1) +
                            4L * t->stage->nloops * sub);
        if (info[i].depth + info[ri].depth > FUSE_MAX_DEPTH || est > FUSE_MAX_NODES)
            continue;
        /* the ranges of every variable of r, its sums too: a view goes
         * into a reduction, whose reads can leave the view by a sum
         * variable (without them the guard of such a read was lost) */
        var_ranges_bind(vr, s);
        Fuse fu = {cx, t, vr->lo, vr->hi};
        const IExpr **g = xmalloc((size_t)(s->nguards + 1) * sizeof *g);
        for (int k = 0; k < s->nguards; k++)
            g[k] = substitute(&fu, s->guards[k]);
        const Stage *merged = ir_stage_rebody(cx, s, g, s->nguards, substitute(&fu, s->body));
        free(g);
        var_ranges_unbind(vr, s);
        /* Only where the one kernel is priced no dearer than the two: on a
         * GPU it saves a pass over memory and a launch, but on a CPU a
         * branchy body moved into a loop the compiler no longer vectorizes
         * can cost more than the pass it saves. */
        if (stage_cost(cx, cm, r, merged) > op_cost(cx, cm, pl, t) + op_cost(cx, cm, pl, r))
            continue;
        if (verify)
            bad += !check_fused(t, r, s, merged, data);
        r->stage = merged;
        dead[i] = true;
        for (int k = i + 1; k < p->ntensors; k++)
            if (p->tensors[k] == r)
                absorb(a, &pro[k], &pro[i], t);
        fused++;
        /* t's reads are r's now; r's are counted again from what merged */
        add_reads(&rd, i, &info[i], -1);
        add_reads(&rd, ri, &info[ri], -1);
        free(info[i].reads);
        free(info[ri].reads);
        info[i] = (Info){0};
        info[ri] = stage_info(&w, merged);
        add_reads(&rd, ri, &info[ri], 1);
    }
    for (int i = 0; i < nt; i++)
        free(info[i].reads);
    free(info);
    free(rd.pairs.key);
    free(rd.pairs.count);
    free(rd.nreaders);
    free(rd.idsum);
    free(w.count);
    arena_free(w.arena);
    if (data)
        derive_verify_free(data, nt - 1);
    if (bad)
        ICE("--verify: %d fused stage%s differ%s from the stages %s replace%s", bad,
            bad > 1 ? "s" : "", bad > 1 ? "" : "s", bad > 1 ? "they" : "it",
            bad > 1 ? "" : "s");
    if (!fused) {
        free(dead);
        return 0;
    }
    /* The merged stages' operators, then the fused tensors dropped */
    for (int i = 0; i < p->ntensors; i++) {
        IrTensor *t = p->tensors[i];
        if (dead[i] || t->kind != IT_STAGE || pl->ops[t->id].stage == t->stage)
            continue;
        PlanOp op = plan_choose(cx, cm, t, t->stage);
        op.prologue = pro[i].data;
        op.nprologue = pro[i].len;
        pl->ops[t->id] = op;
    }
    derive_drop(pl, dead);
    free(dead);
    return fused;
}

bool derive_fits(const IrProgram *p, const Stage *s, const IExpr *epi)
{
    Walk w = {p, arena_new(), xcalloc((size_t)p->ntensors + 1, sizeof *w.count), {0}, 0};
    Info in = stage_info(&w, s);
    free(in.reads);
    w.nodes = 0;
    w.seen.len = 0;
    int depth = epi ? walk_expr(&w, epi) : 0;
    for (int i = 0; i < w.seen.len; i++)
        w.count[w.seen.data[i]] = 0;
    bool fits = in.depth + depth <= FUSE_MAX_DEPTH && in.nodes + w.nodes <= FUSE_MAX_NODES;
    free(w.count);
    arena_free(w.arena);
    return fits;
}

int *derive_readers(const IrProgram *p)
{
    int nt = p->ntensors;
    int *n = xcalloc((size_t)nt + 1, sizeof *n);
    Walk w = {p, arena_new(), xcalloc((size_t)nt + 1, sizeof *w.count), {0}, 0};
    for (int i = 0; i < nt; i++)
        if (p->tensors[i]->kind == IT_STAGE) {
            Info in = stage_info(&w, p->tensors[i]->stage);
            for (int k = 0; k < in.nreads; k++)
                n[in.reads[k].x]++;
            free(in.reads);
        }
    for (int i = 0; i < p->noutputs; i++)
        n[p->outputs[i]]++;
    free(w.count);
    arena_free(w.arena);
    return n;
}

void derive_drop(Plan *pl, const bool *dead)
{
    IrProgram *p = pl->prog;
    PlanOp *ops = arena_alloc(ir_arena(p->cx), (size_t)(p->ntensors + 1) * sizeof *ops);
    int *outs = xmalloc((size_t)(p->noutputs + 1) * sizeof *outs);
    for (int i = 0; i < p->noutputs; i++)
        outs[i] = p->outputs[i];
    int n = 0;
    for (int i = 0; i < p->ntensors; i++) {
        IrTensor *t = p->tensors[i];
        if (dead[i])
            continue;
        for (int k = 0; k < p->noutputs; k++)
            if (outs[k] == t->id)
                p->outputs[k] = n;
        ops[n] = pl->ops[t->id];
        t->id = n;
        p->tensors[n++] = t;
    }
    p->ntensors = n;
    pl->ops = ops;
    pl->cost = plan_total(pl);
    free(outs);
}
