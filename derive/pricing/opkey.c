/* opkey.c - operator keys (cost.h): a canonical one-line text of what an
 * operator computes, independent of tensor and variable names and ids, by
 * which the tuning database (tunedb.c) holds measured times. */
#include "config.h"
#include "cost.h"
#include "../../lang/sb.h"

#include <stdlib.h>
#include <stdio.h>
#include <string.h>

/* ---- names ------------------------------------------------------------------
 * The precisions are named here, below the cost model, since keys and
 * the tuning database spell them. */

static const char *const precision_names[] = {"fp32", "tf32", "fp16", "bf16"};

const char *cost_precision_name(Precision p)
{
    return (unsigned)p < PREC_COUNT ? precision_names[p] : "?";
}

bool cost_precision_parse(const char *name, Precision *out)
{
    for (int i = 0; i < PREC_COUNT; i++)
        if (strcmp(precision_names[i], name) == 0) {
            *out = (Precision)i;
            return true;
        }
    return false;
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

static void put_ix(Canon *c, Sb *b, const Ix *x)
{
    char **terms = xmalloc((size_t)(x->n + 1) * sizeof *terms);
    for (int i = 0; i < x->n; i++) {
        const IxTerm *t = &x->t[i];
        Sb ts = {0};
        sb_printf(&ts, "%lld*", (long long)t->coef);
        if (t->kind == IX_VAR) {
            sb_printf(&ts, "%s", var_name(c, t->var));
        } else if (t->kind == IX_READ) {
            /* a gather: the tensor's shape and type, and the subscripts */
            const IExpr *r = t->read;
            sb_printf(&ts, "gather:%s", elem_name(r->access.tensor->elem));
            for (int k = 0; k < r->access.nidx; k++) {
                sb_printf(&ts, "[%lld:", (long long)r->access.tensor->shape[k]);
                put_ix(c, &ts, r->access.idx[k]);
                sb_puts(&ts, "]");
            }
        } else {
            sb_puts(&ts, "(");
            put_ix(c, &ts, t->arg);
            sb_printf(&ts, ")%c%lld", t->kind == IX_DIV ? '/' : '%', (long long)t->d);
        }
        terms[i] = ts.s;
    }
    qsort(terms, (size_t)x->n, sizeof *terms, cmp_str);
    sb_printf(b, "%lld", (long long)x->c);
    for (int i = 0; i < x->n; i++) {
        sb_printf(b, "+%s", terms[i]);
        free(terms[i]);
    }
    free(terms);
}

static void put_stage(Canon *c, Sb *b, const Stage *s);

/* The name of a node with children in a key: its kind and its operator
 * or function. */
static void put_op(Sb *b, const IExpr *e)
{
    switch (e->kind) {
    case IE_NEG: sb_puts(b, "neg"); return;
    case IE_NOT: sb_puts(b, "not"); return;
    case IE_CALL: sb_printf(b, "fn%d", (int)e->call.fn); return;
    case IE_CMP: sb_printf(b, "cmp%d", (int)e->bin.op); return;
    case IE_ADD: sb_puts(b, "add"); return;
    case IE_SUB: sb_puts(b, "sub"); return;
    case IE_MUL: sb_puts(b, "mul"); return;
    case IE_DIV: sb_puts(b, "div"); return;
    case IE_AND: sb_puts(b, "and"); return;
    case IE_OR: sb_puts(b, "or"); return;
    case IE_CONST: case IE_INDEX: case IE_ACCESS: case IE_ICMP:
        break;
    }
    ICE("cost_op_key: expression kind %d", (int)e->kind);
}

static void put_expr(Canon *c, Sb *b, const IExpr *e)
{
    switch (e->kind) {
    case IE_CONST:
        sb_printf(b, "%.17g", e->value);
        return;
    case IE_INDEX:
        sb_puts(b, "ix(");
        put_ix(c, b, e->ix);
        sb_puts(b, ")");
        return;
    case IE_ACCESS:
        if (e->access.tensor) {
            sb_printf(b, "t%d[", tensor_no(c, e->access.tensor));
        } else {
            sb_puts(b, "{");
            put_stage(c, b, e->access.stage);
            sb_puts(b, "}[");
        }
        for (int i = 0; i < e->access.nidx; i++) {
            sb_puts(b, i ? "," : "");
            put_ix(c, b, e->access.idx[i]);
        }
        sb_puts(b, "]");
        return;
    case IE_ICMP:
        sb_printf(b, "icmp%d(", (int)e->icmp.op);
        put_ix(c, b, e->icmp.ix);
        sb_puts(b, ")");
        return;
    default: {                      /* op(child,child..) */
        const IExpr *kids[IR_MAX_CHILDREN];
        int n = ir_expr_children(e, kids);
        put_op(b, e);
        sb_puts(b, "(");
        for (int i = 0; i < n; i++) {
            sb_puts(b, i ? "," : "");
            put_expr(c, b, kids[i]);
        }
        sb_puts(b, ")");
        return;
    }
    }
}

static void put_ranges(Sb *b, const char *tag, const IrVar *v, int n)
{
    sb_printf(b, "%s<", tag);
    for (int i = 0; i < n; i++)
        sb_printf(b, "%s%lld:%lld", i ? "," : "", (long long)v[i].lo, (long long)v[i].hi);
    sb_puts(b, ">");
}

static void put_stage(Canon *c, Sb *b, const Stage *s)
{
    int mark = c->nvars;
    bind_vars(c, s->loops, s->nloops, 'l');
    bind_vars(c, s->sums, s->nsums, 's');
    c->depth++;
    sb_printf(b, "%s ", reduce_str(s->red));
    put_ranges(b, "L", s->loops, s->nloops);
    put_ranges(b, " S", s->sums, s->nsums);
    for (int i = 0; i < s->nguards; i++) {
        sb_puts(b, i ? "," : " where ");
        put_expr(c, b, s->guards[i]);
    }
    sb_puts(b, " ");
    put_expr(c, b, s->body);
    c->depth--;
    c->nvars = mark;
}

static void put_type(Sb *b, const IrTensor *t)
{
    sb_printf(b, "%s[", elem_name(t->elem));
    for (int d = 0; d < t->rank; d++)
        sb_printf(b, "%s%lld", d ? "," : "", (long long)t->shape[d]);
    sb_puts(b, "]");
}

char *cost_op_key(Arena *a, const Stage *s, const OpMatch *m, Precision prec)
{
    Sb b = {0};
    if (m && m->kind != OPK_KERNEL) {
        sb_printf(&b, "%s %s %s,%s", op_kind_name(m->kind), cost_precision_name(prec),
                elem_name(m->in[0]->elem), elem_name(m->in[1]->elem));
        OpDim d[OP_MAX_DIMS];
        int nd = match_dims(m, d);
        for (int i = 0; i < nd; i++)
            sb_printf(&b, " %s=%lld", d[i].name, (long long)d[i].value);
    } else {
        Canon *c = xcalloc(1, sizeof *c);
        Sb body = {0};
        put_stage(c, &body, s);
        sb_puts(&b, "kernel");
        for (int i = 0; i < c->ntensors; i++) {
            sb_printf(&b, " t%d=", i);
            put_type(&b, c->tensors[i]);
        }
        sb_printf(&b, " %s", sb_str(&body));
        sb_free(&body);
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
