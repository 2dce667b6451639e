/* print.c - the text form of the IR (`einc --emit=ir`, golden tests).
 *
 *   model conv_relu
 *   input  x : f32[1, 64, 56, 56]
 *   weight w1 : f32[64, 64, 3, 3]
 *   y : f32[1, 64, 56, 56] = L<n:0..1, ...> Σ<c:0..64, ...> { x[n, c, h + r - 1, w + s - 1] * w1[f, c, r, s] }   # conv_relu.ein:9
 *   output z
 *
 * A reduction prints as Σ<..>, max<..>, min<..> or Π<..>; guards follow the body
 * after `|`; integer comparisons print in their canonical form `ix op 0`.
 * The output depends only on the program: variable names come from the
 * source (a bound variable whose name is already taken by another one in
 * scope prints as name'ID), index terms print in the order of their first
 * variable's id (declaration order), and locations as file:line with the
 * file's base name. */
#include "config.h"
#include "ir_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct Name {
    int id;
    char text[80];
} Name;

typedef struct Pr {
    const IrCtx *cx;
    FILE *fp;
    Name *scope;
    int n, cap;
    bool value;                     /* printing an index used as a value */
} Pr;

enum { P_OR = 1, P_AND, P_CMP, P_ADD, P_MUL, P_UNARY, P_PRIMARY };

static void bind_name(Pr *p, const IrVar *v)
{
    if (p->n == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 16;
        p->scope = xrealloc(p->scope, (size_t)p->cap * sizeof *p->scope);
    }
    const char *name = v->name && *v->name ? v->name : "v";
    bool clash = !(v->name && *v->name);
    for (int i = 0; i < p->n && !clash; i++)
        clash = p->scope[i].id != v->id && strcmp(p->scope[i].text, name) == 0;
    Name *nm = &p->scope[p->n++];
    nm->id = v->id;
    if (clash)
        snprintf(nm->text, sizeof nm->text, "%s'%d", name, v->id);
    else
        snprintf(nm->text, sizeof nm->text, "%s", name);
}

static const char *var_name(const Pr *p, int id)
{
    for (int i = p->n - 1; i >= 0; i--)
        if (p->scope[i].id == id)
            return p->scope[i].text;
    const char *s = ir_var_name(p->cx, id);
    return *s ? s : "?";
}

static void print_i64(FILE *fp, int64_t v)
{
    fprintf(fp, "%lld", (long long)v);
}

/* The magnitude of v, also for INT64_MIN. */
static void print_abs(FILE *fp, int64_t v)
{
    fprintf(fp, "%llu", v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v);
}

/* ---- index expressions --------------------------------------------------- */

static int first_var(const IxTerm *t)
{
    if (t->kind == IX_VAR)
        return t->var;
    int m = INT32_MAX;
    for (int i = 0; i < t->arg->n; i++) {
        int v = first_var(&t->arg->t[i]);
        if (v < m)
            m = v;
    }
    return m;
}

static void print_ix_p(Pr *p, const Ix *x);
static void print_expr_p(Pr *p, const IExpr *e, int min_prec);

static void print_atom(Pr *p, const IxTerm *t)
{
    if (t->kind == IX_VAR) {
        fputs(var_name(p, t->var), p->fp);
        return;
    }
    if (t->kind == IX_READ) {           /* a gather: tok[b, i] */
        bool value = p->value;
        p->value = false;
        print_expr_p(p, t->read, 0);
        p->value = value;
        return;
    }
    const Ix *a = t->arg;
    bool bare = a->n == 1 && a->c == 0 && a->t[0].coef == 1 && a->t[0].kind == IX_VAR;
    if (!bare)
        fputc('(', p->fp);
    print_ix_p(p, a);
    if (!bare)
        fputc(')', p->fp);
    /* In a value, `/` is real division in the language, so the floor
     * division of an index used as a value prints as `//` (as sema's dump). */
    fprintf(p->fp, " %s %lld", t->kind == IX_MOD ? "%" : p->value ? "//" : "/",
            (long long)t->d);
}

/* Terms print positive ones first, each group in the order of their first
 * variable (declaration order), then the constant: h - r + 1, j - 3*(i / 4);
 * with no positive term a positive constant leads: 3 - h. */
static void print_ix_p(Pr *p, const Ix *x)
{
    int order[32], *ord = x->n <= 32 ? order : xmalloc((size_t)x->n * sizeof *ord);
    int key[32], *keys = x->n <= 32 ? key : xmalloc((size_t)x->n * sizeof *keys);
    bool pos = false;
    for (int i = 0; i < x->n; i++) {
        pos |= x->t[i].coef > 0;
        keys[i] = first_var(&x->t[i]);
        int j = i;
        for (; j > 0; j--) {
            const IxTerm *u = &x->t[ord[j - 1]], *t = &x->t[i];
            bool un = u->coef < 0, tn = t->coef < 0;
            if (un != tn ? tn
                         : keys[ord[j - 1]] < keys[i]
                               || (keys[ord[j - 1]] == keys[i] && u->kind <= t->kind))
                break;
            ord[j] = ord[j - 1];
        }
        ord[j] = i;
    }
    bool lead_c = !pos && x->c > 0;
    if (x->n == 0 || lead_c)
        print_i64(p->fp, x->c);
    for (int i = 0; i < x->n; i++) {
        const IxTerm *t = &x->t[ord[i]];
        bool neg = t->coef < 0, first = i == 0 && !lead_c;
        if (first)
            fputs(neg ? "-" : "", p->fp);
        else
            fputs(neg ? " - " : " + ", p->fp);
        if (t->coef == 1 || t->coef == -1) {
            /* "-(i / 4)": a leading "-i / 4" would read as (-i) / 4. */
            bool wrap = first && neg && t->kind != IX_VAR;
            if (wrap)
                fputc('(', p->fp);
            print_atom(p, t);
            if (wrap)
                fputc(')', p->fp);
        } else {
            print_abs(p->fp, t->coef);
            fputc('*', p->fp);
            if (t->kind != IX_VAR)
                fputc('(', p->fp);
            print_atom(p, t);
            if (t->kind != IX_VAR)
                fputc(')', p->fp);
        }
    }
    if (x->n > 0 && !lead_c && x->c != 0) {
        fputs(x->c < 0 ? " - " : " + ", p->fp);
        print_abs(p->fp, x->c);
    }
    if (ord != order)
        free(ord);
    if (keys != key)
        free(keys);
}

/* Prints the terms of x of one sign (sign > 0: the positive ones; < 0:
 * the negative ones, negated) plus the constant c; returns whether it
 * printed anything. */
static bool print_side(Pr *p, const Ix *x, int sign, int64_t c)
{
    Ix *y = xmalloc(sizeof(Ix) + (size_t)x->n * sizeof(IxTerm));
    y->n = 0;
    y->c = c;
    for (int i = 0; i < x->n; i++)
        if ((x->t[i].coef > 0) == (sign > 0)) {
            y->t[y->n] = x->t[i];
            if (sign < 0)
                y->t[y->n].coef = (int64_t)(0 - (uint64_t)x->t[i].coef);
            y->n++;
        }
    bool any = y->n > 0 || c != 0;
    if (any)
        print_ix_p(p, y);
    free(y);
    return any;
}

/* `ix op 0` printed as a comparison of the positive terms with the
 * negated negative terms: -i + j - 1 >= 0 prints as j >= i + 1, -i + 2 >= 0
 * as i <= 2, i - j == 0 as i == j. */
static void print_icmp(Pr *p, BinOp op, const Ix *x)
{
    bool pos = false, neg = false;
    for (int i = 0; i < x->n; i++) {
        pos |= x->t[i].coef > 0;
        neg |= x->t[i].coef < 0;
    }
    const char *ops = op == OP_EQ ? "==" : op == OP_NE ? "!=" : ">=";
    uint64_t mc = 0 - (uint64_t)x->c;
    if (!pos && neg) {
        print_side(p, x, -1, 0);
        fprintf(p->fp, " %s ", op == OP_GE ? "<=" : ops);
        print_i64(p->fp, x->c);
    } else {
        print_side(p, x, 1, 0);
        fprintf(p->fp, " %s ", ops);
        if (!print_side(p, x, -1, (int64_t)mc))
            fputc('0', p->fp);
    }
}

/* The precedence of an index expression as printed. */
static int ix_prec(const Ix *x)
{
    if (x->n == 0)
        return x->c < 0 ? P_UNARY : P_PRIMARY;
    if (x->c > 0 && x->n == 1 && x->t[0].coef < 0)
        return P_ADD;                   /* 3 - h */
    if (x->n == 1 && x->c == 0) {
        if (x->t[0].coef == 1)
            return x->t[0].kind == IX_VAR || x->t[0].kind == IX_READ ? P_PRIMARY : P_MUL;
        return x->t[0].coef == -1 ? P_UNARY : P_MUL;
    }
    return P_ADD;
}

/* ---- scalar expressions ------------------------------------------------------ */

static void print_double(FILE *fp, double v)
{
    if (isnan(v)) {
        fputs("nan", fp);
        return;
    }
    if (isinf(v)) {
        fputs(v < 0 ? "-inf" : "inf", fp);
        return;
    }
    if (v == floor(v) && fabs(v) < 1e15) {
        fprintf(fp, "%.0f", v);
        return;
    }
    char buf[40];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    fputs(buf, fp);
}

static void print_stage_p(Pr *p, const Stage *s);
static void print_expr_p(Pr *p, const IExpr *e, int min_prec);

static int expr_prec(const IExpr *e)
{
    switch (e->kind) {
    case IE_CONST: return e->value < 0 || (e->value == 0 && signbit(e->value)) ? P_UNARY : P_PRIMARY;
    case IE_INDEX: return ix_prec(e->ix);
    case IE_ACCESS: case IE_CALL: return P_PRIMARY;
    case IE_ADD: case IE_SUB: return P_ADD;
    case IE_MUL: case IE_DIV: return P_MUL;
    case IE_NEG: case IE_NOT: return P_UNARY;
    case IE_CMP: case IE_ICMP: return P_CMP;
    case IE_AND: return P_AND;
    case IE_OR: return P_OR;
    }
    return P_PRIMARY;
}

static const char *cmp_str(BinOp op)
{
    switch (op) {
    case OP_EQ: return "==";
    case OP_NE: return "!=";
    case OP_LT: return "<";
    case OP_LE: return "<=";
    case OP_GT: return ">";
    case OP_GE: return ">=";
    default: return "?";
    }
}

static void print_idx(Pr *p, const Ix *const *idx, int n)
{
    fputc('[', p->fp);
    for (int k = 0; k < n; k++) {
        if (k)
            fputs(", ", p->fp);
        print_ix_p(p, idx[k]);
    }
    fputc(']', p->fp);
}

/* Prints e, in parentheses when it binds less tightly than min_prec. */
static void print_expr_p(Pr *p, const IExpr *e, int min_prec)
{
    int prec = expr_prec(e);
    bool paren = prec < min_prec;
    if (paren)
        fputc('(', p->fp);
    switch (e->kind) {
    case IE_CONST:
        print_double(p->fp, e->value);
        break;
    case IE_INDEX:
        p->value = true;
        print_ix_p(p, e->ix);
        p->value = false;
        break;
    case IE_ACCESS:
        if (e->access.tensor) {
            fputs(e->access.tensor->name, p->fp);
        } else {
            fputc('(', p->fp);
            print_stage_p(p, e->access.stage);
            fputc(')', p->fp);
        }
        print_idx(p, e->access.idx, e->access.nidx);
        break;
    case IE_CALL:
        fprintf(p->fp, "%s(", ir_func_name(e->call.fn));
        for (int i = 0; i < e->call.nargs; i++) {
            if (i)
                fputs(", ", p->fp);
            print_expr_p(p, e->call.args[i], P_OR);
        }
        fputc(')', p->fp);
        break;
    case IE_NEG: case IE_NOT:
        fputc(e->kind == IE_NEG ? '-' : '!', p->fp);
        print_expr_p(p, e->bin.a, P_UNARY + (expr_prec(e->bin.a) == P_UNARY));
        break;
    case IE_ICMP:
        print_icmp(p, e->icmp.op, e->icmp.ix);
        break;
    case IE_CMP:
        if ((e->bin.op == OP_LT || e->bin.op == OP_LE) && e->bin.a->kind == IE_CONST
            && e->bin.b->kind != IE_CONST) {
            /* 0 < v[i] reads better as v[i] > 0 */
            print_expr_p(p, e->bin.b, P_CMP + 1);
            fputs(e->bin.op == OP_LT ? " > " : " >= ", p->fp);
            print_expr_p(p, e->bin.a, P_CMP + 1);
            break;
        }
        /* fall through */
    default: {
        const char *op = e->kind == IE_ADD ? "+" : e->kind == IE_SUB ? "-"
                       : e->kind == IE_MUL ? "*" : e->kind == IE_DIV ? "/"
                       : e->kind == IE_AND ? "&&" : e->kind == IE_OR ? "||"
                       : cmp_str(e->bin.op);
        /* Comparisons do not chain; for the rest a right operand of equal
         * precedence is parenthesised, so the tree's shape is visible. */
        print_expr_p(p, e->bin.a, e->kind == IE_CMP ? prec + 1 : prec);
        fprintf(p->fp, " %s ", op);
        print_expr_p(p, e->bin.b, prec + 1);
        break;
    }
    }
    if (paren)
        fputc(')', p->fp);
}

static void print_vars(Pr *p, const IrVar *v, int n)
{
    for (int i = 0; i < n; i++) {
        if (i)
            fputs(", ", p->fp);
        fprintf(p->fp, "%s:", var_name(p, v[i].id));
        print_i64(p->fp, v[i].lo);
        fputs("..", p->fp);
        print_i64(p->fp, v[i].hi);
    }
}

static void print_stage_p(Pr *p, const Stage *s)
{
    int base = p->n;
    for (int i = 0; i < s->nloops; i++)
        bind_name(p, &s->loops[i]);
    for (int i = 0; i < s->nsums; i++)
        bind_name(p, &s->sums[i]);
    fputs("L<", p->fp);
    print_vars(p, s->loops, s->nloops);
    fputs("> ", p->fp);
    if (s->nsums) {
        fputs(s->red == RED_MAX ? "max<" : s->red == RED_MIN ? "min<"
              : s->red == RED_PROD ? "\xce\xa0<" : "\xce\xa3<", p->fp);
        print_vars(p, s->sums, s->nsums);
        fputs("> ", p->fp);
    }
    fputs("{ ", p->fp);
    print_expr_p(p, s->body, P_OR);
    for (int i = 0; i < s->nguards; i++) {
        fputs(i ? ", " : " | ", p->fp);
        print_expr_p(p, s->guards[i], P_OR);
    }
    fputs(" }", p->fp);
    p->n = base;
}

/* ---- entry points ------------------------------------------------------------ */

void ir_print_ix(const IrCtx *cx, const Ix *ix, FILE *fp)
{
    Pr p = {.cx = cx, .fp = fp};
    print_ix_p(&p, ix);
    free(p.scope);
}

void ir_print_expr(const IrCtx *cx, const IExpr *e, FILE *fp)
{
    Pr p = {.cx = cx, .fp = fp};
    print_expr_p(&p, e, P_OR);
    free(p.scope);
}

void ir_print_stage(const IrCtx *cx, const Stage *s, FILE *fp)
{
    Pr p = {.cx = cx, .fp = fp};
    print_stage_p(&p, s);
    free(p.scope);
}

static void print_type(FILE *fp, const IrTensor *t)
{
    fprintf(fp, "%s[", elem_name(t->elem));
    for (int k = 0; k < t->rank; k++) {
        if (k)
            fputs(", ", fp);
        print_i64(fp, t->shape[k]);
    }
    fputc(']', fp);
}

static void print_loc(FILE *fp, Loc loc)
{
    const SrcFile *f = loc.file >= 0 ? src_get(loc.file) : NULL;
    if (!f)
        return;
    const char *base = strrchr(f->path, '/');
    base = base ? base + 1 : f->path;
    int line, col;
    src_line_col(loc, &line, &col);
    fprintf(fp, "%s:%d", base, line);
}

void ir_print_program(const IrProgram *p, FILE *fp)
{
    fprintf(fp, "model %s\n", p->model ? p->model : "");
    for (int i = 0; i < p->ntensors; i++) {
        const IrTensor *t = p->tensors[i];
        if (t->kind == IT_INPUT)
            fprintf(fp, "input  %s", t->name);
        else if (t->kind == IT_WEIGHT)
            fprintf(fp, "weight %s", t->name);
        else
            fprintf(fp, "%s", t->name);
        if (t->ext) {
            fputs(" \"", fp);
            for (const char *c = t->ext; *c; c++)
                fprintf(fp, *c == '"' || *c == '\\' ? "\\%c" : "%c", *c);
            fputc('"', fp);
        }
        fputs(" : ", fp);
        print_type(fp, t);
        if (t->kind == IT_STAGE) {
            fputs(" = ", fp);
            ir_print_stage(p->cx, t->stage, fp);
            bool loc = t->loc.file >= 0 && src_get(t->loc.file);
            if (loc || t->weight_only)
                fputs("   # ", fp);
            print_loc(fp, t->loc);
            if (t->weight_only)
                fputs(loc ? " (weight-only)" : "(weight-only)", fp);
        }
        fputc('\n', fp);
    }
    if (p->noutputs) {
        fputs("output ", fp);
        for (int i = 0; i < p->noutputs; i++)
            fprintf(fp, "%s%s", i ? ", " : "", p->tensors[p->outputs[i]]->name);
        fputc('\n', fp);
    }
}
