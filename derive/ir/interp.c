/* interp.c - the reference interpreter: any stage in double precision.
 *
 * It is the ground truth that derivation rules are tested against, so it
 * is written for obviousness, not speed: a loop nest over the loop
 * variables, an odometer over the sum variables, a tree walk of the body.
 * Semantics: a tensor reads as 0 outside its shape, a stage as 0 outside
 * its loop ranges; a term counts only where every guard is non-zero; a
 * reduction with no term (an empty range, or every guard false) is 0;
 * booleans are 1 and 0.  A nested stage without free variables is
 * evaluated once into a buffer; one with free variables point by point. */
#include "config.h"
#include "ir_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- evaluation ------------------------------------------------------------- */

typedef struct Nested {
    const Stage *s;
    double *buf;                    /* NULL: evaluate point by point */
} Nested;

typedef struct Ev {
    double *const *data;
    int64_t *env;                   /* by variable id */
    int nvars;                      /* size of env */
    Nested *nested;
    int nnested, cap;
} Ev;

/* A nested stage is buffered when it has no free variables and is small. */
#define MAX_BUFFERED ((size_t)1 << 24)

static double eval(Ev *ev, const IExpr *e);
static double eval_point(Ev *ev, const Stage *s);

static void max_var_ix(const Ix *x, int *m)
{
    for (int i = 0; i < x->n; i++) {
        if (x->t[i].kind == IX_VAR) {
            if (x->t[i].var > *m)
                *m = x->t[i].var;
        } else {
            max_var_ix(x->t[i].arg, m);
        }
    }
}

static void max_var_stage(const Stage *s, int *m);

static void max_var_expr(const IExpr *e, int *m)
{
    const Ix *const *ixs;
    int nx = ir_expr_ixs(e, &ixs);
    for (int k = 0; k < nx; k++)
        max_var_ix(ixs[k], m);
    if (ir_expr_stage(e))
        max_var_stage(ir_expr_stage(e), m);
    const IExpr *kids[IR_MAX_CHILDREN];
    int nk = ir_expr_children(e, kids);
    for (int i = 0; i < nk; i++)
        max_var_expr(kids[i], m);
}

static void max_var_stage(const Stage *s, int *m)
{
    for (int k = 0; k < s->nloops; k++)
        if (s->loops[k].id > *m)
            *m = s->loops[k].id;
    for (int k = 0; k < s->nsums; k++)
        if (s->sums[k].id > *m)
            *m = s->sums[k].id;
    for (int i = 0; i < s->nguards; i++)
        max_var_expr(s->guards[i], m);
    max_var_expr(s->body, m);
}

/* Free variables: bound[] marks the variables bound on the way down. */
static bool free_ix(const Ix *x, const bool *bound)
{
    for (int i = 0; i < x->n; i++)
        if (x->t[i].kind == IX_VAR ? !bound[x->t[i].var] : free_ix(x->t[i].arg, bound))
            return true;
    return false;
}

static bool free_stage(const Stage *s, bool *bound);

static bool free_expr(const IExpr *e, bool *bound)
{
    const Ix *const *ixs;
    int nx = ir_expr_ixs(e, &ixs);
    for (int k = 0; k < nx; k++)
        if (free_ix(ixs[k], bound))
            return true;
    if (ir_expr_stage(e) && free_stage(ir_expr_stage(e), bound))
        return true;
    const IExpr *kids[IR_MAX_CHILDREN];
    int nk = ir_expr_children(e, kids);
    for (int i = 0; i < nk; i++)
        if (free_expr(kids[i], bound))
            return true;
    return false;
}

static bool free_stage(const Stage *s, bool *bound)
{
    for (int k = 0; k < s->nloops; k++)
        bound[s->loops[k].id] = true;
    for (int k = 0; k < s->nsums; k++)
        bound[s->sums[k].id] = true;
    bool r = false;
    for (int i = 0; i < s->nguards && !r; i++)
        r = free_expr(s->guards[i], bound);
    r = r || free_expr(s->body, bound);
    /* Ids are unique per context, so nothing outside s binds these. */
    for (int k = 0; k < s->nloops; k++)
        bound[s->loops[k].id] = false;
    for (int k = 0; k < s->nsums; k++)
        bound[s->sums[k].id] = false;
    return r;
}

static size_t loop_count(const Stage *s)
{
    size_t n = 1;
    for (int k = 0; k < s->nloops; k++) {
        int64_t len = s->loops[k].hi - s->loops[k].lo;
        if (len <= 0)
            return 0;
        if (n > SIZE_MAX / (size_t)len)
            return SIZE_MAX;
        n *= (size_t)len;
    }
    return n;
}

/* Evaluate every point of s's loop nest into out, row-major; returns the
 * number of points. */
static size_t fill_stage(Ev *ev, const Stage *s, double *out)
{
    size_t n = loop_count(s);
    if (n == 0)
        return 0;
    for (int k = 0; k < s->nloops; k++)
        ev->env[s->loops[k].id] = s->loops[k].lo;
    for (size_t i = 0;; i++) {
        out[i] = eval_point(ev, s);
        int k = s->nloops - 1;
        for (; k >= 0; k--) {
            int v = s->loops[k].id;
            if (++ev->env[v] < s->loops[k].hi)
                break;
            ev->env[v] = s->loops[k].lo;
        }
        if (k < 0)
            return i + 1;
    }
}

static Nested *nested(Ev *ev, const Stage *s, int nvars)
{
    for (int i = 0; i < ev->nnested; i++)
        if (ev->nested[i].s == s)
            return &ev->nested[i];
    if (ev->nnested == ev->cap) {
        ev->cap = ev->cap ? 2 * ev->cap : 8;
        ev->nested = xrealloc(ev->nested, (size_t)ev->cap * sizeof *ev->nested);
    }
    Nested *nd = &ev->nested[ev->nnested++];
    nd->s = s;
    nd->buf = NULL;
    bool *bound = xcalloc((size_t)nvars, sizeof *bound);
    bool closed = !free_stage(s, bound);
    free(bound);
    size_t n = loop_count(s);
    if (closed && n <= MAX_BUFFERED) {
        double *buf = xmalloc((n ? n : 1) * sizeof *buf);
        fill_stage(ev, s, buf);
        /* fill_stage may have added entries and moved the table. */
        nd = NULL;
        for (int i = 0; i < ev->nnested; i++)
            if (ev->nested[i].s == s)
                nd = &ev->nested[i];
        nd->buf = buf;
    }
    return nd;
}

static double eval_access(Ev *ev, const IExpr *e)
{
    int n = e->access.nidx;
    if (e->access.tensor) {
        const IrTensor *t = e->access.tensor;
        size_t off = 0;
        for (int k = 0; k < n; k++) {
            int64_t v = ix_eval_data(e->access.idx[k], ev->env, ev->data);
            if (v < 0 || v >= t->shape[k])
                return 0;
            off = off * (size_t)t->shape[k] + (size_t)v;
        }
        return ev->data[t->id][off];
    }
    const Stage *s = e->access.stage;
    int64_t small[16], *v = n <= 16 ? small : xmalloc((size_t)n * sizeof *v);
    bool inside = true;
    size_t off = 0;
    for (int k = 0; k < n; k++) {
        v[k] = ix_eval_data(e->access.idx[k], ev->env, ev->data);
        if (v[k] < s->loops[k].lo || v[k] >= s->loops[k].hi)
            inside = false;
        else
            off = off * (size_t)(s->loops[k].hi - s->loops[k].lo)
                + (size_t)(v[k] - s->loops[k].lo);
    }
    double r = 0;
    if (inside) {
        Nested *nd = nested(ev, s, ev->nvars);
        if (nd->buf) {
            r = nd->buf[off];
        } else {
            for (int k = 0; k < n; k++)
                ev->env[s->loops[k].id] = v[k];
            r = eval_point(ev, s);
        }
    }
    if (v != small)
        free(v);
    return r;
}

static bool holds(Ev *ev, const Stage *s)
{
    for (int i = 0; i < s->nguards; i++)
        if (eval(ev, s->guards[i]) == 0)
            return false;
    return true;
}

/* The value of s at the point whose loop variables are set in env. */
static double eval_point(Ev *ev, const Stage *s)
{
    if (s->nsums == 0)
        return holds(ev, s) ? eval(ev, s->body) : 0;
    for (int k = 0; k < s->nsums; k++) {
        if (s->sums[k].hi <= s->sums[k].lo)
            return 0;
        ev->env[s->sums[k].id] = s->sums[k].lo;
    }
    bool any = false;
    double acc = 0;
    for (;;) {
        if (holds(ev, s)) {
            double v = eval(ev, s->body);
            if (s->red == RED_SUM)
                acc += v;
            else if (!any)
                acc = v;
            else if (s->red == RED_PROD)
                acc *= v;
            else if (!isnan(acc) && (isnan(v) || (s->red == RED_MAX ? v > acc : v < acc)))
                acc = v;                /* NaN wins, as in PyTorch's amax */
            any = true;
        }
        int k = s->nsums - 1;
        for (; k >= 0; k--) {
            int v = s->sums[k].id;
            if (++ev->env[v] < s->sums[k].hi)
                break;
            ev->env[v] = s->sums[k].lo;
        }
        if (k < 0)
            break;
    }
    return any ? acc : 0;
}

static bool icmp_holds(BinOp op, int64_t v)
{
    return op == OP_EQ ? v == 0 : op == OP_NE ? v != 0 : v >= 0;
}

static double eval(Ev *ev, const IExpr *e)
{
    double a, b;
    switch (e->kind) {
    case IE_CONST: return e->value;
    case IE_INDEX: return (double)ix_eval_data(e->ix, ev->env, ev->data);
    case IE_ACCESS: return eval_access(ev, e);
    case IE_ADD: return eval(ev, e->bin.a) + eval(ev, e->bin.b);
    case IE_SUB: return eval(ev, e->bin.a) - eval(ev, e->bin.b);
    case IE_MUL: return eval(ev, e->bin.a) * eval(ev, e->bin.b);
    case IE_DIV: return eval(ev, e->bin.a) / eval(ev, e->bin.b);
    case IE_NEG: return -eval(ev, e->bin.a);
    case IE_NOT: return eval(ev, e->bin.a) == 0;
    case IE_AND: return eval(ev, e->bin.a) != 0 && eval(ev, e->bin.b) != 0;
    case IE_OR: return eval(ev, e->bin.a) != 0 || eval(ev, e->bin.b) != 0;
    case IE_ICMP: return icmp_holds(e->icmp.op, ix_eval_data(e->icmp.ix, ev->env, ev->data));
    case IE_CMP:
        a = eval(ev, e->bin.a);
        b = eval(ev, e->bin.b);
        switch (e->bin.op) {
        case OP_EQ: return a == b;
        case OP_NE: return a != b;
        case OP_LT: return a < b;
        case OP_LE: return a <= b;
        case OP_GT: return a > b;
        case OP_GE: return a >= b;
        default: ICE("eval: comparison %d", (int)e->bin.op);
        }
    case IE_CALL: {
        if (e->call.fn == FN_SELECT)
            return eval(ev, e->call.args[0]) != 0 ? eval(ev, e->call.args[1])
                                                  : eval(ev, e->call.args[2]);
        double v[2];
        for (int i = 0; i < e->call.nargs; i++)
            v[i] = eval(ev, e->call.args[i]);
        return ir_func_apply(e->call.fn, v);
    }
    }
    ICE("eval: kind %d", (int)e->kind);
}

/* The environment is sized by the largest variable id in sight. */
static void ev_init(Ev *ev, const Stage *s, double *const *data)
{
    int m = -1;
    max_var_stage(s, &m);
    ev->nvars = m + 1;
    ev->data = data;
    ev->env = xcalloc((size_t)(m + 1), sizeof *ev->env);
    ev->nested = NULL;
    ev->nnested = ev->cap = 0;
}

static void ev_done(Ev *ev)
{
    for (int i = 0; i < ev->nnested; i++)
        free(ev->nested[i].buf);
    free(ev->nested);
    free(ev->env);
}

size_t ir_eval_stage(const Stage *s, double *const *data, double *out)
{
    Ev ev;
    ev_init(&ev, s, data);
    size_t n = fill_stage(&ev, s, out);
    ev_done(&ev);
    return n;
}

void ir_eval_program(const IrProgram *p, double *const *data)
{
    for (int i = 0; i < p->ntensors; i++) {
        const IrTensor *t = p->tensors[i];
        if (t->kind != IT_STAGE)
            continue;
        const Stage *s = t->stage;
        size_t size = 1;
        for (int k = 0; k < t->rank; k++)
            size *= (size_t)t->shape[k];
        double *dst = data[t->id];
        memset(dst, 0, size * sizeof *dst);
        size_t n = loop_count(s);
        if (n == 0)
            continue;
        double *tmp = xmalloc(n * sizeof *tmp);
        ir_eval_stage(s, data, tmp);
        /* Scatter the loop box into the tensor; points outside its shape
         * (a malformed stage) are dropped. */
        int r = s->nloops;
        int64_t *pt = xcalloc((size_t)r + 1, sizeof *pt);
        for (int k = 0; k < r; k++)
            pt[k] = s->loops[k].lo;
        for (size_t j = 0; j < n; j++) {
            size_t off = 0;
            bool in = true;
            for (int k = 0; k < r; k++) {
                if (pt[k] < 0 || pt[k] >= t->shape[k])
                    in = false;
                off = off * (size_t)t->shape[k] + (size_t)pt[k];
            }
            if (in)
                dst[off] = tmp[j];
            for (int k = r - 1; k >= 0; k--) {
                if (++pt[k] < s->loops[k].hi)
                    break;
                pt[k] = s->loops[k].lo;
            }
        }
        free(pt);
        free(tmp);
    }
}
