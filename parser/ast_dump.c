/* ast_dump.c - the AST as s-expressions, one statement per line, for the
 * parser's tests.  The form is stable; tests compare it as text:
 *
 *   (const N 4)
 *   (input x f32 (N C))
 *   (assign y (i) (shape f16 (N)) += (* (at x i k) 2) (where (in k 0 3)))
 *   (bind (a b) f (x w))
 *   (def f ((x f32 (N))) -> (y)
 *     (assign y (i) = (call relu (at x i))))
 *
 * Expressions nested deeper than the parser allows are cut with "...", so
 * a hand-made tree cannot exhaust the C stack here. */
#include "config.h"
#include "lang/ast.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DUMP_MAX_DEPTH 1100

static void put_string(FILE *fp, const char *s)
{
    fputc('"', fp);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(fp, "\\%c", c);
        else if (c < ' ' || c >= 127)
            fprintf(fp, "\\x%02x", c);
        else
            fputc(c, fp);
    }
    fputc('"', fp);
}

/* The shortest form that reads back as the same double, written without
 * an exponent where %g can do that (2000.0, not 2e+03), and with a point
 * or an exponent so that it never looks like an integer. */
static void put_real(FILE *fp, double v)
{
    char buf[40];
    int e10 = v != 0 && isfinite(v) ? (int)floor(log10(fabs(v))) : 0;
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (strtod(buf, NULL) != v)
            continue;
        /* %g needs precision > e10 to avoid the exponent. */
        if (strchr(buf, 'e') && e10 >= -4 && e10 < 17 && prec <= e10)
            continue;
        break;
    }
    bool plain = true;
    for (const char *p = buf; *p; p++)
        if (*p == '.' || *p == 'e' || *p == 'n' || *p == 'i')
            plain = false;
    fprintf(fp, plain ? "%s.0" : "%s", buf);
}

static void dump_expr(FILE *fp, const Expr *e, int depth)
{
    if (!e) {
        fputs("null", fp);
        return;
    }
    if (depth > DUMP_MAX_DEPTH) {
        fputs("...", fp);
        return;
    }
    switch (e->kind) {
    case EX_INT:
        fprintf(fp, "%lld", (long long)e->ival);
        break;
    case EX_REAL:
        put_real(fp, e->rval);
        break;
    case EX_NAME:
        fputs(sym_str(e->name), fp);
        break;
    case EX_ACCESS:
    case EX_CALL:
        fprintf(fp, "(%s %s", e->kind == EX_ACCESS ? "at" : "call",
                sym_str(e->call.name));
        for (int i = 0; i < e->call.nargs; i++) {
            fputc(' ', fp);
            if (e->kind == EX_CALL && e->call.keys && e->call.keys[i])
                fprintf(fp, "%s=", sym_str(e->call.keys[i]));
            dump_expr(fp, e->call.args[i], depth + 1);
        }
        if (e->kind == EX_ACCESS && e->call.outside) {
            fputs(" ?: ", fp);
            dump_expr(fp, e->call.outside, depth + 1);
        }
        fputc(')', fp);
        break;
    case EX_NEG:
    case EX_NOT:
        fputs(e->kind == EX_NEG ? "(neg " : "(not ", fp);
        dump_expr(fp, e->operand, depth + 1);
        fputc(')', fp);
        break;
    case EX_BIN:
        fprintf(fp, "(%s ", binop_str(e->bin.op));
        dump_expr(fp, e->bin.lhs, depth + 1);
        fputc(' ', fp);
        dump_expr(fp, e->bin.rhs, depth + 1);
        fputc(')', fp);
        break;
    case EX_IN:
        fprintf(fp, "(in %s ", sym_str(e->in.var));
        dump_expr(fp, e->in.lo, depth + 1);
        fputc(' ', fp);
        dump_expr(fp, e->in.hi, depth + 1);
        fputc(')', fp);
        break;
    default:
        fprintf(fp, "(?expr %d)", (int)e->kind);
        break;
    }
}

/* (e1 e2 ...) */
static void dump_list(FILE *fp, Expr *const *es, int n)
{
    fputc('(', fp);
    for (int i = 0; i < n; i++) {
        if (i)
            fputc(' ', fp);
        dump_expr(fp, es[i], 1);
    }
    fputc(')', fp);
}

static void dump_syms(FILE *fp, const Sym *s, int n)
{
    fputc('(', fp);
    for (int i = 0; i < n; i++)
        fprintf(fp, "%s%s", i ? " " : "", sym_str(s[i]));
    fputc(')', fp);
}

static void dump_type(FILE *fp, const TypeExpr *t)
{
    fprintf(fp, "%s ", elem_name(t->elem));
    dump_list(fp, t->dims, t->ndims);
}

static void dump_stmts(FILE *fp, Stmt *const *ss, int n, int indent);

static void dump_stmt(FILE *fp, const Stmt *s, int indent)
{
    fprintf(fp, "%*s", 2 * indent, "");
    switch (s->kind) {
    case ST_CONST:
        fprintf(fp, "(const %s ", sym_str(s->cnst.name));
        dump_expr(fp, s->cnst.value, 1);
        fputc(')', fp);
        break;
    case ST_TENSOR:
        fprintf(fp, "(%s %s ", s->decl.kind == DECL_INPUT ? "input" : "weight",
                sym_str(s->decl.name));
        if (s->decl.ext) {
            put_string(fp, s->decl.ext);
            fputc(' ', fp);
        }
        dump_type(fp, &s->decl.type);
        fputc(')', fp);
        break;
    case ST_OUTPUT:
        fprintf(fp, "(output %s)", sym_str(s->output.name));
        break;
    case ST_MODEL:
        fprintf(fp, "(model %s)", sym_str(s->model.name));
        break;
    case ST_IMPORT:
        fputs(s->import.library ? "(import <" : "(import ", fp);
        if (s->import.library)
            fprintf(fp, "%s>", s->import.path);
        else
            put_string(fp, s->import.path);
        if (s->import.file >= 0) {
            fputc(' ', fp);
            put_string(fp, src_get(s->import.file)->path);
            if (!s->import.stmts)
                fputs(" again", fp);
        }
        if (s->import.nstmts) {
            fputc('\n', fp);
            dump_stmts(fp, s->import.stmts, s->import.nstmts, indent + 1);
            fprintf(fp, "%*s", 2 * indent, "");
        }
        fputc(')', fp);
        break;
    case ST_DEF:
        fprintf(fp, "(def %s (", sym_str(s->def.name));
        for (int i = 0; i < s->def.nparams; i++) {
            const Param *p = &s->def.params[i];
            fprintf(fp, "%s(%s%s ", i ? " " : "", p->kind == PARAM_CONST ? "const " : "",
                    sym_str(p->name));
            if (p->kind == PARAM_TENSOR)
                dump_type(fp, &p->type);
            else if (p->kind == PARAM_SCALAR)
                fputs(elem_name(p->type.elem), fp);
            if (p->dflt) {
                fputs(p->kind == PARAM_CONST ? "= " : " = ", fp);
                dump_expr(fp, p->dflt, 1);
            }
            fputc(')', fp);
        }
        fputs(") -> ", fp);
        dump_syms(fp, s->def.outs, s->def.nouts);
        if (s->def.nbody) {
            fputc('\n', fp);
            dump_stmts(fp, s->def.body, s->def.nbody, indent + 1);
            fprintf(fp, "%*s", 2 * indent, "");
        }
        fputc(')', fp);
        break;
    case ST_ASSIGN:
        fprintf(fp, "(assign %s ", sym_str(s->assign.name));
        dump_syms(fp, s->assign.idx, s->assign.nidx);
        if (s->assign.nshape >= 0) {
            fputs(" (shape ", fp);
            if (s->assign.elem >= 0)
                fprintf(fp, "%s ", elem_name((ElemType)s->assign.elem));
            dump_list(fp, s->assign.shape, s->assign.nshape);
            fputc(')', fp);
        }
        fprintf(fp, " %s ", reduce_str(s->assign.red));
        dump_expr(fp, s->assign.body, 1);
        if (s->assign.nwhere) {
            fputs(" (where", fp);
            for (int i = 0; i < s->assign.nwhere; i++) {
                fputc(' ', fp);
                dump_expr(fp, s->assign.where[i], 1);
            }
            fputc(')', fp);
        }
        fputc(')', fp);
        break;
    case ST_BIND:
        fputs("(bind ", fp);
        dump_syms(fp, s->bind.outs, s->bind.nouts);
        fprintf(fp, " %s (", sym_str(s->bind.callee));
        for (int i = 0; i < s->bind.nargs; i++) {
            fputs(i ? " " : "", fp);
            if (s->bind.arg_keys[i])
                fprintf(fp, "%s=", sym_str(s->bind.arg_keys[i]));
            dump_expr(fp, s->bind.arg_exprs[i], 1);
        }
        fputs("))", fp);
        break;
    default:
        fprintf(fp, "(?stmt %d)", (int)s->kind);
        break;
    }
    fputc('\n', fp);
}

static void dump_stmts(FILE *fp, Stmt *const *ss, int n, int indent)
{
    for (int i = 0; i < n; i++)
        dump_stmt(fp, ss[i], indent);
}

void ast_dump(const Ast *ast, void *fp)
{
    if (ast)
        dump_stmts(fp, ast->stmts, ast->nstmts, 0);
}
