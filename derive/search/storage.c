/* storage.c - where the intermediates live: one arena that the tensors
 * computed during a run share, each at an offset no other tensor uses
 * while it is live (derive.h, derive_storage; plan.h, Plan.at).
 *
 * A run executes the operators in program order (tensor ids), one after
 * the other on one stream (CUDA) or thread team (C), after the stages
 * that depend on weights only where a weight changed (at load: in program
 * order too, before the others, so a run's order puts them first).  A
 * tensor is live
 * from the first operator that writes its buffer to the last that reads
 * it, both ends included: an operator's inputs and its output never share
 * memory, whatever the operator does (a library call with C, a pass after
 * it that reads its operands again).  What writes a buffer: the tensor's
 * own operator, or one that stores into it through a view (PlanBuf); a
 * stored member of a row group is written when the group runs, at its
 * last member.  What reads one: an operator's stage (its prologue reads
 * included), its guards and epilogue, and every member of its row group.
 *
 * Outside the arena, in buffers of their own: inputs and weights (set by
 * the API), outputs (read by it after a run, or the caller's buffers),
 * and what runs at load and a run reads (every run reads it; what only
 * other load-time stages read, a folded weight before its relayout, is
 * dead once they ran).  A view has no buffer.  A convolution's output
 * that the next takes in oneDNN's layout (handoff.c) is in its buffer in
 * that layout from the one to the other like any tensor; in the arena,
 * the API never reads it back into einc's (ein_lib_fetch).
 *
 * Placement is greedy by size (largest first, then by id): each tensor
 * goes to the lowest 256-byte-aligned offset where it overlaps no placed
 * tensor whose life overlaps its own.  The arena is at least as large as
 * the most bytes live at once (Plan.peak) and at most the sum of its
 * tensors (Plan.apart). */
#include "config.h"
#include "derive.h"

#include <stdlib.h>

#define ALIGN 256

typedef struct Life {
    const IrProgram *p;
    int *first, *last;              /* by id: op positions; first > last: never */
    int when;                       /* the position of the operator visited */
} Life;

static void touch(Life *lf, int id)
{
    if (lf->when < lf->first[id])
        lf->first[id] = lf->when;
    if (lf->when > lf->last[id])
        lf->last[id] = lf->when;
}

/* A read of a tensor of the program (an epilogue's read of its
 * operator's own value names a tensor that is gone: a stale id). */
static bool read_visit(void *arg, const IExpr *e)
{
    Life *lf = arg;
    if (e->kind == IE_ACCESS && e->access.tensor) {
        int id = e->access.tensor->id;
        if (id >= 0 && id < lf->p->ntensors && lf->p->tensors[id] == e->access.tensor)
            touch(lf, id);
    }
    return true;
}

static void op_reads(Life *lf, const PlanOp *op)
{
    ir_expr_visit(op->stage->body, read_visit, lf);
    for (int g = 0; g < op->stage->nguards; g++)
        ir_expr_visit(op->stage->guards[g], read_visit, lf);
    if (op->epi.value)
        ir_expr_visit(op->epi.value, read_visit, lf);
}

/* Where op's code runs in the run's order: a stored member of a row
 * group runs in the group, at its last member. */
static int position(const PlanOp *op)
{
    return plan_in_rows(op) ? op->rows->members[op->rows->nmembers - 1]->id : op->out->id;
}

typedef struct Slot {
    int id;
    int64_t bytes, off;
} Slot;

static int by_size(const void *a, const void *b)
{
    const Slot *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    return x->id - y->id;
}

static int by_off(const void *a, const void *b)
{
    const Slot *x = *(const Slot *const *)a, *y = *(const Slot *const *)b;
    return x->off < y->off ? -1 : x->off > y->off;
}

static int64_t round_up(int64_t n)
{
    return (n + ALIGN - 1) / ALIGN * ALIGN;
}

void derive_storage(IrCtx *cx, Plan *pl)
{
    const IrProgram *p = pl->prog;
    int nt = p->ntensors;
    Life lf = {p, xmalloc(((size_t)nt + 1) * sizeof *lf.first),
               xmalloc(((size_t)nt + 1) * sizeof *lf.last), 0};
    bool *shared = xcalloc((size_t)nt + 1, sizeof *shared);
    for (int i = 0; i < nt; i++) {
        lf.first[i] = 2 * nt;
        lf.last[i] = -1;
        const IrTensor *t = p->tensors[i];
        shared[i] = t->kind == IT_STAGE && !t->is_output && pl->ops[i].buf.kind == BUF_OWN;
    }
    /* the load-time stages at positions 0 .. nt-1, then the run's */
    for (int i = 0; i < nt; i++) {
        const PlanOp *op = &pl->ops[i];
        if (p->tensors[i]->kind != IT_STAGE)
            continue;
        lf.when = position(op) + (op->at_load ? 0 : nt);
        touch(&lf, op->buf.kind == BUF_VIEW ? op->buf.of->id : i);
        if (op->rows && !plan_in_rows(op))
            for (int k = 0; k < op->rows->nmembers; k++)
                op_reads(&lf, &op->rows->ops[k]);
        else
            op_reads(&lf, op);
    }
    /* a load-time tensor that a run reads is read by every run */
    for (int i = 0; i < nt; i++)
        if (shared[i] && pl->ops[i].at_load && lf.last[i] >= nt)
            shared[i] = false;

    Slot *s = xmalloc(((size_t)nt + 1) * sizeof *s);
    int n = 0;
    int64_t apart = 0;
    for (int i = 0; i < nt; i++)
        if (shared[i]) {
            int64_t bytes = round_up((int64_t)(ir_tensor_numel(p->tensors[i]) *
                                               elem_size(p->tensors[i]->elem)));
            if (bytes == 0)         /* no elements: nothing to share */
                continue;
            s[n++] = (Slot){i, bytes, 0};
            apart += bytes;
        }
    qsort(s, (size_t)n, sizeof *s, by_size);
    const Slot **live = xmalloc(((size_t)n + 1) * sizeof *live);
    int64_t arena = 0;
    for (int k = 0; k < n; k++) {
        int a = s[k].id, m = 0;
        for (int j = 0; j < k; j++) {
            int b = s[j].id;
            if (lf.first[a] <= lf.last[b] && lf.first[b] <= lf.last[a])
                live[m++] = &s[j];
        }
        qsort(live, (size_t)m, sizeof *live, by_off);
        int64_t off = 0;
        for (int j = 0; j < m && live[j]->off < off + s[k].bytes; j++)
            if (live[j]->off + live[j]->bytes > off)
                off = live[j]->off + live[j]->bytes;
        s[k].off = off;
        if (off + s[k].bytes > arena)
            arena = off + s[k].bytes;
    }

    /* the most bytes live at once: no arena is smaller */
    int64_t peak = 0;
    for (int w = 0; w < 2 * nt; w++) {
        int64_t sum = 0;
        for (int k = 0; k < n; k++)
            if (lf.first[s[k].id] <= w && w <= lf.last[s[k].id])
                sum += s[k].bytes;
        if (sum > peak)
            peak = sum;
    }

    pl->at = arena_alloc(ir_arena(cx), ((size_t)nt + 1) * sizeof *pl->at);
    for (int i = 0; i < nt; i++)
        pl->at[i] = -1;
    for (int k = 0; k < n; k++)
        pl->at[s[k].id] = s[k].off;
    pl->arena = arena;
    pl->apart = apart;
    pl->peak = peak;
    pl->nshared = n;
    free(live);
    free(s);
    free(shared);
    free(lf.first);
    free(lf.last);
}
