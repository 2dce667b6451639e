/* rows.c - fused row groups (plan.h, PlanRowGroup): a run of generated
 * kernels, consecutive in the program, that work on the same rows (the
 * reductions and maps of a softmax or a layer norm) becomes one operator
 * that runs them one after the other for each row, while the row is in
 * the cache (C) or in one block's shared memory and registers (CUDA),
 * instead of one pass over memory each.  A member that nothing outside
 * the group reads lives in a buffer of one row inside the operator (a
 * row's mean: one value) and leaves the program; the others keep their
 * buffers.  The cost model prices a group at its members' arithmetic
 * with one pass over what it reads and writes, one launch on the GPU
 * (plan_rows_cost), and the group is made only where that is cheaper
 * than the members apart.  Runs after epilogue.c, on the plan's
 * program. */
#include "config.h"
#include "derive.h"

#include <math.h>
#include <stdlib.h>

/* The buffers of one row inside the operator hold at most this many
 * elements together: on C the stack memory of each thread (64 KB); on
 * CUDA static shared memory of the row's block (32 KB, within the 48 KB a
 * block may declare statically, the rest for the reductions' partials). */
#define ROW_LOCAL_MAX 16384
#define ROW_SHARED_MAX 8192

/* CUDA: threads of a row's block, at most (emit/cuda.c's block), and the
 * elements or terms each thread takes at least before the block grows. */
#define ROW_THREADS_MAX 256
#define ROW_PER_THREAD 4

/* Members of one group, at most. */
#define ROW_MAX_MEMBERS 16

typedef struct RowReads {
    IrCtx *cx;
    const IrTensor *const *members;
    int n, nrow;
    const Stage *at;                /* the reader */
    bool reads_member, ok;
} RowReads;

/* Is every read of a member in e at the reader's row: the first nrow
 * subscripts its first nrow loop variables? */
static bool row_visit(void *arg, const IExpr *e)
{
    RowReads *r = arg;
    if (e->kind != IE_ACCESS)
        return true;
    if (e->access.stage) {
        r->ok = false;
        return false;
    }
    for (int i = 0; i < r->n; i++) {
        if (e->access.tensor != r->members[i])
            continue;
        r->reads_member = true;
        for (int d = 0; d < r->nrow && r->ok; d++)
            r->ok = d < e->access.nidx &&
                    ix_equal(e->access.idx[d], ix_var(r->cx, r->at->loops[d].id));
    }
    return r->ok;
}

/* Does op's stage (and epilogue) read members only at its own row, and
 * does it read one? */
static bool reads_rows(IrCtx *cx, const PlanOp *op, const IrTensor *const *members, int n,
                       int nrow, bool *reads_member)
{
    RowReads r = {cx, members, n, nrow, op->stage, false, true};
    ir_expr_visit(op->stage->body, row_visit, &r);
    for (int g = 0; g < op->stage->nguards && r.ok; g++)
        ir_expr_visit(op->stage->guards[g], row_visit, &r);
    if (op->epi.value && r.ok)
        ir_expr_visit(op->epi.value, row_visit, &r);
    *reads_member = r.reads_member;
    return r.ok;
}

/* Can t's operator be a member, its first nrow loops the rows of
 * `shape`? */
static bool member_ok(const Plan *pl, const IrTensor *t, const int64_t *shape, int nrow)
{
    if (t->kind != IT_STAGE)
        return false;
    const PlanOp *op = &pl->ops[t->id];
    if (t->elem != ELEM_F32 || op->impl != IMPL_KERNEL ||
        op->at_load || op->rows || op->buf.kind != BUF_OWN || t->rank < nrow ||
        op->stage->nloops != t->rank)
        return false;
    for (int d = 0; d < nrow; d++)
        if (t->shape[d] != shape[d] || op->stage->loops[d].lo != 0 ||
            op->stage->loops[d].hi != shape[d])
            return false;
    return true;
}

/* The row group of ops first..last (inclusive) over nrow dims, its
 * price in *cost; NULL where it is not cheaper than its members apart. */
static PlanRowGroup *make_group(IrCtx *cx, const Plan *pl, const CostModel *cm, int first,
                                int last, int nrow, const int *readers, double *cost)
{
    const IrProgram *p = pl->prog;
    Arena *a = ir_arena(cx);
    int n = last - first + 1;
    PlanRowGroup *g = arena_alloc(a, sizeof *g);
    const IrTensor **members = arena_alloc(a, (size_t)n * sizeof *members);
    bool *stored = arena_alloc(a, (size_t)n * sizeof *stored);
    PlanOp *ops = arena_alloc(a, (size_t)n * sizeof *ops);
    int *inside = xcalloc((size_t)n, sizeof *inside);
    for (int i = 0; i < n; i++) {
        members[i] = p->tensors[first + i];
        ops[i] = pl->ops[first + i];
    }
    /* reads of each member by the members after it */
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            bool any;
            reads_rows(cx, &ops[j], &members[i], 1, 0, &any);
            inside[i] += any;
        }
    bool local = false, reduces = false;
    bool cuda = pl->target == TARGET_CUDA;
    int64_t room = cuda ? ROW_SHARED_MAX : ROW_LOCAL_MAX;
    double most = 1;            /* a member's elements (or terms, of one) in a row */
    for (int i = 0; i < n; i++) {
        const IrTensor *t = members[i];
        int64_t row = 1;
        for (int d = nrow; d < t->rank; d++)
            row *= t->shape[d];
        stored[i] = i == n - 1 || t->is_output || readers[t->id] > inside[i] || row > room;
        if (!stored[i])
            room -= row;
        local |= !stored[i];
        reduces |= ops[i].stage->nsums > 0;
        double terms = 1;
        for (int v = 0; v < ops[i].stage->nsums; v++)
            terms *= (double)(ops[i].stage->sums[v].hi - ops[i].stage->sums[v].lo);
        most = fmax(most, row > 1 ? (double)row : terms);
    }
    free(inside);
    if (!local || !reduces)
        return NULL;
    int threads = 1;
    if (cuda)
        for (threads = 32; threads < ROW_THREADS_MAX && threads * ROW_PER_THREAD < most;)
            threads *= 2;
    *g = (PlanRowGroup){nrow, members, stored, n, ops, threads};
    double apart = 0;
    for (int i = 0; i < n; i++)
        apart += ops[i].cost;
    *cost = plan_rows_cost(cx, cm, g);
    return *cost < apart ? g : NULL;
}

int derive_rows(IrCtx *cx, Plan *pl, const CostModel *cm)
{
    IrProgram *p = pl->prog;
    int nt = p->ntensors, made = 0;
    if (pl->target != TARGET_C && pl->target != TARGET_CUDA)
        return 0;
    int *readers = plan_readers(pl);
    bool *dead = xcalloc((size_t)nt + 1, sizeof *dead);
    for (int i = 0; i < nt; i++) {
        const IrTensor *t = p->tensors[i];
        int nrow = t->rank;
        if (nrow == 0 || !member_ok(pl, t, t->shape, nrow))
            continue;
        /* grow the run while each next operator reads a member at its row */
        const IrTensor *members[ROW_MAX_MEMBERS];
        int n = 1;
        members[0] = t;
        for (int j = i + 1; j < nt && n < ROW_MAX_MEMBERS; j++) {
            const PlanOp *next = &pl->ops[j];
            int r = nrow < p->tensors[j]->rank ? nrow : p->tensors[j]->rank;
            bool any;
            if (r == 0 || !member_ok(pl, p->tensors[j], t->shape, r) ||
                !reads_rows(cx, next, members, n, r, &any) || !any)
                break;
            nrow = r;
            members[n++] = p->tensors[j];
        }
        double cost = 0;
        PlanRowGroup *g = n >= 2 ? make_group(cx, pl, cm, i, i + n - 1, nrow, readers, &cost)
                                 : NULL;
        if (!g)
            continue;
        const IrTensor *out = g->members[g->nmembers - 1];
        PlanOp gop = g->ops[g->nmembers - 1];
        gop.rows = g;
        gop.cost = cost;
        for (int k = 0; k < g->nmembers; k++) {
            const IrTensor *m = g->members[k];
            if (!g->stored[k]) {
                dead[m->id] = true;
            } else if (m != out) {
                /* a stored member that the group computes: no cost */
                pl->ops[m->id].rows = g;
                pl->ops[m->id].cost = 0;
            }
        }
        pl->ops[out->id] = gop;
        made++;
        i += g->nmembers - 1;
    }
    free(readers);
    if (made)
        derive_drop(pl, dead);
    free(dead);
    return made;
}
