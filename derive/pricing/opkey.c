/* opkey.c - operator keys (cost.h): a canonical one-line text of what an
 * operator computes, independent of tensor and variable names and ids, by
 * which the tuning database (tunedb.c) holds measured times. */
#include "config.h"
#include "cost.h"

#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

/* ---- a growing malloc'ed string ------------------------------------------ */

typedef struct Str {
    char *s;
    size_t len, cap;
} Str;

static void str_add(Str *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void str_add(Str *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (b->len + (size_t)n + 1 > b->cap) {
        b->cap = (b->len + (size_t)n + 1) * 2;
        b->s = xrealloc(b->s, b->cap);
    }
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

/* ---- canonical text of a stage --------------------------------------------
 * Variables are named by where they are bound (l0, l1 .. the loops, s0 ..
 * the sums; nested stages add a level: l1.0), tensors by first use (t0,
 * t1 ..), so the text does not depend on ids or names.  Terms of an index
 * expression are sorted by their text. */

/* The variables in scope and the tensors seen so far grow with the stage:
 * a key that ran out of names would be shared by different kernels. */
typedef struct Canon {
    struct CanonVar { int id; char name[24]; } *vars;
    int nvars, capvars;
    const IrTensor **tensors;
    int ntensors, captensors;
    int depth;
} Canon;

static void bind_vars(Canon *c, const IrVar *v, int n, char kind)
{
    for (int i = 0; i < n; i++) {
        if (c->nvars == c->capvars) {
            c->capvars = c->capvars * 2 + 16;
            c->vars = xrealloc(c->vars, (size_t)c->capvars * sizeof *c->vars);
        }
        c->vars[c->nvars].id = v[i].id;
        if (c->depth)
            snprintf(c->vars[c->nvars].name, sizeof c->vars[0].name, "%c%d.%d", kind,
                     c->depth, i);
        else
            snprintf(c->vars[c->nvars].name, sizeof c->vars[0].name, "%c%d", kind, i);
        c->nvars++;
    }
}

static const char *var_name(const Canon *c, int id)
{
    for (int i = c->nvars - 1; i >= 0; i--)
        if (c->vars[i].id == id)
            return c->vars[i].name;
    return "?";
}

static int tensor_no(Canon *c, const IrTensor *t)
{
    for (int i = 0; i < c->ntensors; i++)
        if (c->tensors[i] == t)
            return i;
    if (c->ntensors == c->captensors) {
        c->captensors = c->captensors * 2 + 8;
        c->tensors = xrealloc(c->tensors, (size_t)c->captensors * sizeof *c->tensors);
    }
    c->tensors[c->ntensors++] = t;
    return c->ntensors - 1;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void put_ix(Canon *c, Str *b, const Ix *x)
{
    char **terms = xmalloc((size_t)(x->n + 1) * sizeof *terms);
    for (int i = 0; i < x->n; i++) {
        const IxTerm *t = &x->t[i];
        Str ts = {0};
        str_add(&ts, "%lld*", (long long)t->coef);
        if (t->kind == IX_VAR) {
            str_add(&ts, "%s", var_name(c, t->var));
        } else {
            str_add(&ts, "(");
            put_ix(c, &ts, t->arg);
            str_add(&ts, ")%c%lld", t->kind == IX_DIV ? '/' : '%', (long long)t->d);
        }
        terms[i] = ts.s;
    }
    qsort(terms, (size_t)x->n, sizeof *terms, cmp_str);
    str_add(b, "%lld", (long long)x->c);
    for (int i = 0; i < x->n; i++) {
        str_add(b, "+%s", terms[i]);
        free(terms[i]);
    }
    free(terms);
}

static void put_stage(Canon *c, Str *b, const Stage *s);

static void put_expr(Canon *c, Str *b, const IExpr *e)
{
    static const char *const ops[] = {
        [IE_ADD] = "add", [IE_SUB] = "sub", [IE_MUL] = "mul", [IE_DIV] = "div",
        [IE_AND] = "and", [IE_OR] = "or",
    };
    switch (e->kind) {
    case IE_CONST:
        str_add(b, "%.17g", e->value);
        return;
    case IE_INDEX:
        str_add(b, "ix(");
        put_ix(c, b, e->ix);
        str_add(b, ")");
        return;
    case IE_ACCESS:
        if (e->access.tensor) {
            str_add(b, "t%d[", tensor_no(c, e->access.tensor));
        } else {
            str_add(b, "{");
            put_stage(c, b, e->access.stage);
            str_add(b, "}[");
        }
        for (int i = 0; i < e->access.nidx; i++) {
            str_add(b, i ? "," : "");
            put_ix(c, b, e->access.idx[i]);
        }
        str_add(b, "]");
        return;
    case IE_NEG:
    case IE_NOT:
        str_add(b, "%s(", e->kind == IE_NEG ? "neg" : "not");
        put_expr(c, b, e->bin.a);
        str_add(b, ")");
        return;
    case IE_CALL:
        str_add(b, "fn%d(", (int)e->call.fn);
        for (int i = 0; i < e->call.nargs; i++) {
            str_add(b, i ? "," : "");
            put_expr(c, b, e->call.args[i]);
        }
        str_add(b, ")");
        return;
    case IE_CMP:
        str_add(b, "cmp%d(", (int)e->bin.op);
        put_expr(c, b, e->bin.a);
        str_add(b, ",");
        put_expr(c, b, e->bin.b);
        str_add(b, ")");
        return;
    case IE_ICMP:
        str_add(b, "icmp%d(", (int)e->icmp.op);
        put_ix(c, b, e->icmp.ix);
        str_add(b, ")");
        return;
    default:
        str_add(b, "%s(", ops[e->kind] ? ops[e->kind] : "?");
        put_expr(c, b, e->bin.a);
        str_add(b, ",");
        put_expr(c, b, e->bin.b);
        str_add(b, ")");
        return;
    }
}

static void put_ranges(Str *b, const char *tag, const IrVar *v, int n)
{
    str_add(b, "%s<", tag);
    for (int i = 0; i < n; i++)
        str_add(b, "%s%lld:%lld", i ? "," : "", (long long)v[i].lo, (long long)v[i].hi);
    str_add(b, ">");
}

static void put_stage(Canon *c, Str *b, const Stage *s)
{
    int mark = c->nvars;
    bind_vars(c, s->loops, s->nloops, 'l');
    bind_vars(c, s->sums, s->nsums, 's');
    c->depth++;
    str_add(b, "%s ", reduce_str(s->red));
    put_ranges(b, "L", s->loops, s->nloops);
    put_ranges(b, " S", s->sums, s->nsums);
    for (int i = 0; i < s->nguards; i++) {
        str_add(b, i ? "," : " where ");
        put_expr(c, b, s->guards[i]);
    }
    str_add(b, " ");
    put_expr(c, b, s->body);
    c->depth--;
    c->nvars = mark;
}

static void put_type(Str *b, const IrTensor *t)
{
    str_add(b, "%s[", elem_name(t->elem));
    for (int d = 0; d < t->rank; d++)
        str_add(b, "%s%lld", d ? "," : "", (long long)t->shape[d]);
    str_add(b, "]");
}

char *cost_op_key(Arena *a, const Stage *s, const OpMatch *m, Precision prec)
{
    Str b = {0};
    if (m && m->kind != OPK_KERNEL) {
        str_add(&b, "%s %s %s,%s", op_kind_name(m->kind), cost_precision_name(prec),
                elem_name(m->in[0]->elem), elem_name(m->in[1]->elem));
        OpDim d[OP_MAX_DIMS];
        int nd = match_dims(m, d);
        for (int i = 0; i < nd; i++)
            str_add(&b, " %s=%lld", d[i].name, (long long)d[i].value);
    } else {
        Canon *c = xcalloc(1, sizeof *c);
        Str body = {0};
        put_stage(c, &body, s);
        str_add(&b, "kernel");
        for (int i = 0; i < c->ntensors; i++) {
            str_add(&b, " t%d=", i);
            put_type(&b, c->tensors[i]);
        }
        str_add(&b, " %s", body.s);
        free(body.s);
        free(c->vars);
        free(c->tensors);
        free(c);
    }
    if (!a)
        return b.s;
    char *r = arena_strdup(a, b.s);
    free(b.s);
    return r;
}
