/* unmask.c - masks no reader sees.
 *
 * A map y = select(c, x, 0) (or x under guards c) zeroes the points where
 * c fails.  Where every read of y that counts happens at points where c
 * holds, the zeroes are never looked at: y may as well be x there, and
 * the mask goes.  GPT-2's scores are the case:
 *     s[b, n, i, j] = select(i >= j, s@1[b, n, i, j] / 8, 0)
 *     m[b, n, i]   max= s[b, n, i, j]  | i >= j
 *     p[b, n, i, j] = exp(s[b, n, i, j] - m[b, n, i])
 *     z[b, n, i]   += p[b, n, i, j]    | i >= j
 *     a@2[b, c, t, j] = select(t >= j, p[b, c, t, j], 0)
 * m reads s under i >= j itself; p reads it everywhere, but every read of
 * p is under i >= j in turn, so p's points with i < j are dead, and so are
 * s's.  Without the mask s is the product scaled: the GEMM's alpha, no
 * pass after it.
 *
 * A read counts under the conditions that hold where it is made: its
 * reader's guards, the conditions of the selects it sits in (their true
 * branch), and the variable ranges; for a reader that is not an output,
 * also any condition on its loops that its own reads all meet
 * (recursively, a few readers deep).  A library operator computes the
 * whole of its sums, so only its guards on loop variables count (not the
 * selects it reads through).  The conditions are integer comparisons
 * (x >= 0, x == 0) whose terms are plain variables, each a plain
 * subscript of the read; anything else keeps the mask.  Runs first among
 * the passes after the search, on the plan's program. */
#include "config.h"
#include "derive.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* How many readers deep a dead point is followed. */
#define UNMASK_DEPTH 4

/* One condition: ix >= 0 (OP_GE) or ix == 0 (OP_EQ). */
typedef struct Cond {
    BinOp op;
    const Ix *ix;
} Cond;

typedef VEC(Cond) Conds;

typedef struct Unmask {
    IrCtx *cx;
    const Plan *pl;
    Arena *a;
    VarRanges *vr;                  /* ranges by variable id, for ix_bounds */
    VEC(const Stage *) bound;       /* the stages whose variables are set */
} Unmask;

/* The comparisons a condition that holds is made of (its conjuncts that
 * are x >= 0 or x == 0; the others are left out, which only weakens it);
 * whether that is all of it. */
static bool conjuncts(Arena *a, const IExpr *e, Conds *out)
{
    if (e->kind == IE_AND)
        return conjuncts(a, e->bin.a, out) & conjuncts(a, e->bin.b, out);
    if (e->kind == IE_ICMP && (e->icmp.op == OP_GE || e->icmp.op == OP_EQ)) {
        vec_push(a, out, ((Cond){e->icmp.op, e->icmp.ix}));
        return true;
    }
    return false;                   /* left out: what is pushed holds still */
}

static bool uses_any(const Ix *x, const IrVar *v, int n)
{
    for (int i = 0; i < n; i++)
        if (ix_uses(x, v[i].id))
            return true;
    return false;
}

/* Do the conditions k (and the ranges in u) make c true? */
static bool implied(Unmask *u, const Conds *k, const Cond *c)
{
    int64_t mn, mx, d;
    ix_bounds(c->ix, u->vr->lo, u->vr->hi, &mn, &mx);
    if (c->op == OP_GE ? mn >= 0 : mn == 0 && mx == 0)
        return true;
    for (int i = 0; i < k->len; i++) {
        const Cond *q = &k->data[i];
        /* c.ix - q.ix and c.ix + q.ix: constants that make c follow */
        const Ix *diff = ix_sub(u->cx, c->ix, q->ix), *sum = ix_add(u->cx, c->ix, q->ix);
        if (ir_ctx_overflowed(u->cx))
            return false;           /* the two are then meaningless */
        if (c->op == OP_GE) {
            if (ix_is_const(diff, &d) && d >= 0)
                return true;
            if (q->op == OP_EQ && ix_is_const(sum, &d) && d >= 0)
                return true;
        } else if (q->op == OP_EQ && ((ix_is_const(diff, &d) && d == 0) ||
                                      (ix_is_const(sum, &d) && d == 0))) {
            return true;
        }
    }
    return false;
}

/* c (over t's loop variables) at the read acc of t: each variable by the
 * subscript of its dim.  False where a term is not a plain variable of
 * t's loops. */
static bool at_read(Unmask *u, const Stage *ts, const IExpr *acc, const Cond *c, Cond *out)
{
    const Ix *x = ix_const(u->cx, c->ix->c);
    for (int j = 0; j < c->ix->n; j++) {
        const IxTerm *tm = &c->ix->t[j];
        int d = tm->kind == IX_VAR ? ir_loop_pos(ts, tm->var) : -1;
        if (d < 0 || d >= acc->access.nidx)
            return false;
        x = ix_add(u->cx, x, ix_scale(u->cx, acc->access.idx[d], tm->coef));
    }
    *out = (Cond){c->op, x};
    return !ir_ctx_overflowed(u->cx);
}

static bool dead_where_not(Unmask *u, const IrTensor *t, const Stage *ts, const Conds *c,
                           int depth);

/* What a read of t is checked against. */
typedef struct Reader {
    const IrTensor *t;              /* read */
    const Stage *ts;                /* its stage: the conditions' variables */
    const Conds *c;                 /* to hold at every read */
    const IrTensor *r;              /* the reader */
    const Stage *rs;                /* its stage (or the one its epilogue runs over) */
    bool lib;                       /* a library's: it reads through selects too */
    int depth;
} Reader;

static void bind(Unmask *u, const Stage *s)
{
    var_ranges_bind(u->vr, s);
    vec_push(u->a, &u->bound, s);
}

/* Every variable bound back at rest. */
static void unbind_all(Unmask *u)
{
    for (int i = 0; i < u->bound.len; i++)
        var_ranges_unbind(u->vr, u->bound.data[i]);
    u->bound.len = 0;
}

/* One read of t, made where the conditions k hold. */
static bool read_ok(Unmask *u, const Reader *rd, const IExpr *acc, const Conds *k)
{
    Conds rest = {0};               /* those only the reader's readers can make */
    bind(u, rd->rs);
    for (int i = 0; i < rd->c->len; i++) {
        Cond c;
        if (!at_read(u, rd->ts, acc, &rd->c->data[i], &c))
            return false;
        if (implied(u, k, &c))
            continue;
        /* one on the reader's loops that its own reads may all meet */
        if (uses_any(c.ix, rd->rs->sums, rd->rs->nsums))
            return false;
        vec_push(u->a, &rest, c);
    }
    return rest.len == 0 || dead_where_not(u, rd->r, rd->rs, &rest, rd->depth + 1);
}

/* Every read of t in e, under the conditions k (k->data[0 .. k->len) on
 * entry, restored on return). */
static bool reads_ok(Unmask *u, const Reader *rd, const IExpr *e, Conds *k)
{
    if (e->kind == IE_ACCESS && e->access.tensor == rd->t)
        return read_ok(u, rd, e, k);
    if (ir_expr_stage(e))           /* a nested stage's reads are not followed */
        return !ir_expr_reads_deep(e, rd->t);
    const IExpr *kids[IR_MAX_CHILDREN];
    int n = ir_expr_children(e, kids);
    if (e->kind == IE_CALL && e->call.fn == FN_SELECT && n == 3) {
        int len = k->len;
        if (!reads_ok(u, rd, kids[0], k) || !reads_ok(u, rd, kids[2], k))
            return false;
        if (!rd->lib)
            conjuncts(u->a, kids[0], k);
        bool ok = reads_ok(u, rd, kids[1], k);
        k->len = len;
        return ok;
    }
    for (int i = 0; i < n; i++)
        if (!reads_ok(u, rd, kids[i], k))
            return false;
    /* index expressions read integer tensors only: t is real (unmask) */
    return true;
}

/* Is every read of t (over the loops of ts) made where all of c holds, so
 * that t's points where one fails are dead? */
static bool dead_where_not(Unmask *u, const IrTensor *t, const Stage *ts, const Conds *c,
                           int depth)
{
    if (depth > UNMASK_DEPTH || t->is_output || t->kind != IT_STAGE)
        return false;
    const IrProgram *p = u->pl->prog;
    for (int i = 0; i < p->ntensors; i++) {
        const IrTensor *r = p->tensors[i];
        const PlanOp *op = &u->pl->ops[r->id];
        if (r->kind != IT_STAGE || r == t)
            continue;
        const Stage *rs = r->stage;
        Reader rd = {t, ts, c, r, rs, op->impl != IMPL_KERNEL, depth};
        Conds k = {0};
        for (int g = 0; g < rs->nguards; g++) {
            if (ir_expr_reads_deep(rs->guards[g], t))
                return false;
            conjuncts(u->a, rs->guards[g], &k);
        }
        if (rd.lib) {                       /* a library sums every term */
            int m = 0;
            for (int j = 0; j < k.len; j++)
                if (!uses_any(k.data[j].ix, rs->sums, rs->nsums))
                    k.data[m++] = k.data[j];
            k.len = m;
        }
        if (!reads_ok(u, &rd, rs->body, &k))
            return false;
        if (op->epi.value && op->stage) {   /* over the operator's loops, unguarded */
            rd.rs = op->stage;
            k.len = 0;
            if (!reads_ok(u, &rd, op->epi.value, &k))
                return false;
        }
    }
    return true;
}

/* t's mask: the stage's guards and the conditions of the selects
 * select(c, x, 0) its body is, outermost first, as conjuncts; *inner is
 * what is left (x).  False when t is no masked map of reals. */
static bool mask_of(Unmask *u, const IrTensor *t, Conds *c, const IExpr **inner)
{
    const Stage *s = t->stage;
    const PlanOp *op = &u->pl->ops[t->id];
    if (t->kind != IT_STAGE || t->is_output || t->weight_only || op->at_load ||
        op->impl != IMPL_KERNEL || s->nsums || op->epi.value || op->rows ||
        elem_is_int(t->elem))
        return false;
    bool whole = true;
    for (int g = 0; g < s->nguards; g++)
        whole &= conjuncts(u->a, s->guards[g], c);
    const IExpr *e = s->body;
    const IExpr *kids[IR_MAX_CHILDREN];
    while (e->kind == IE_CALL && e->call.fn == FN_SELECT && ir_expr_children(e, kids) == 3 &&
           kids[2]->kind == IE_CONST && kids[2]->value == 0) {
        whole &= conjuncts(u->a, kids[0], c);
        e = kids[1];
    }
    *inner = e;
    return whole && c->len > 0;
}

/* --verify: the outputs that read the tensors changed[] (in turn) as the
 * old stages old[] give them and as the new ones do, on random data. */
static bool check(const IrProgram *p, const Stage **old, const bool *changed)
{
    int nt = p->ntensors;
    bool *down = xcalloc((size_t)nt + 1, sizeof *down);
    for (int i = 0; i < nt; i++) {
        const IrTensor *t = p->tensors[i];
        down[i] = changed[i];
        for (int j = 0; j < i && !down[i] && t->kind == IT_STAGE; j++)
            if (down[j]) {
                const Stage *s = t->stage;
                for (int g = 0; g <= s->nguards && !down[i]; g++)
                    down[i] = ir_expr_reads_deep(g < s->nguards ? s->guards[g] : s->body,
                                         p->tensors[j]);
            }
    }
    double **data = derive_verify_data(p, nt - 1);
    double **want = xcalloc((size_t)nt + 1, sizeof *want);
    bool ok = true;
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < nt; i++) {
            const IrTensor *t = p->tensors[i];
            if (!down[i])
                continue;
            const Stage *s = pass == 0 && changed[i] ? old[i] : t->stage;
            derive_eval_into(s, t, data, data[i]);
            size_t n = ir_tensor_numel(t);
            if (!t->is_output)
                continue;
            if (pass == 0) {
                want[i] = xmalloc((n ? n : 1) * sizeof **want);
                memcpy(want[i], data[i], n * sizeof **want);
                continue;
            }
            double err, scale;
            if (!derive_agree(want[i], data[i], n, &err, &scale)) {
                diag_error(t->loc, "--verify: '%s' changed when masks no reader sees went "
                           "(max error %g, max value %g); this is a bug in einc", t->name,
                           err, scale);
                ok = false;
            }
        }
    }
    for (int i = 0; i < nt; i++)
        free(want[i]);
    free(want);
    free(down);
    derive_verify_free(data, nt - 1);
    return ok;
}

int derive_unmask(IrCtx *cx, Plan *pl, const CostModel *cm, VarRanges *vr, bool verify)
{
    IrProgram *p = pl->prog;
    int nt = p->ntensors, made = 0;
    var_ranges_fit(vr, ir_var_count(cx) + 1);
    Unmask u = {cx, pl, arena_new(), vr, {0}};
    const Stage **old = xcalloc((size_t)nt + 1, sizeof *old);
    pl->unmasked = arena_alloc(ir_arena(cx), (size_t)(nt + 1) * sizeof *pl->unmasked);
    pl->nunmasked = 0;
    bool *changed = xcalloc((size_t)nt + 1, sizeof *changed);
    for (int i = 0; i < nt; i++) {
        IrTensor *t = p->tensors[i];
        Conds c = {0};
        const IExpr *inner;
        if (!mask_of(&u, t, &c, &inner))
            continue;
        IrMark mark = ir_ctx_mark(cx);      /* what the proof built */
        bool dead = dead_where_not(&u, t, t->stage, &c, 0);
        unbind_all(&u);                     /* before what it bound may go */
        ir_ctx_release(cx, mark);
        if (!dead)
            continue;
        const Stage *s = t->stage;
        old[i] = s;
        changed[i] = true;
        t->stage = ir_stage(cx, RED_NONE, s->loops, s->nloops, NULL, 0, NULL, 0, inner);
        pl->ops[i] = plan_choose(cx, cm, t, t->stage);
        pl->unmasked[pl->nunmasked++] = t;
        made++;
    }
    bool bad = made && verify && !check(p, old, changed);
    free(old);
    free(changed);
    arena_free(u.a);
    if (bad)
        ICE("--verify: a mask no reader sees changed an output");
    if (made)
        pl->cost = plan_total(pl);
    return made;
}
