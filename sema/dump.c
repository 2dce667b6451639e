/* dump.c - sema_dump(): the checked program in a stable text form, for
 * tests and debugging:
 *
 *   model conv_relu
 *   tensor 0 x : f32[1, 64, 56, 56] input
 *   tensor 3 y : f32[1, 64, 56, 56] defined by stmt 0
 *   stmt 0 y[n 0..1, f 0..64, h 0..56, w 0..56] += over c 0..64, r 0..3
 *       x[n, c, (h + 1 - r) // 2, w] * w1[f, c, r, 0]
 *       where (h + 1 - r) % 2 == 0
 *   outputs z
 *
 * Floor division of integers prints as "//", real division as "/".
 */
#include "config.h"
#include "sema_int.h"

#include <stdio.h>

static int cprec(const CExpr *e)
{
    if (e->kind == CE_NEG || e->kind == CE_NOT)
        return 6;
    if (e->kind != CE_BIN)
        return 10;
    switch (e->bin.op) {
    case OP_OR: return 1;
    case OP_AND: return 2;
    case OP_ADD: case OP_SUB: return 4;
    case OP_MUL: case OP_DIV: case OP_MOD: return 5;
    default: return 3;
    }
}

static void print(FILE *fp, const CProgram *p, const CStmt *cs, const CExpr *e,
                  int min_prec)
{
    bool paren = cprec(e) < min_prec;
    if (paren)
        fputc('(', fp);
    switch (e->kind) {
    case CE_INT:
        fprintf(fp, "%lld", (long long)e->ival);
        break;
    case CE_REAL:
        fprintf(fp, "%.9g", e->rval);
        break;
    case CE_VAR:
        fputs(cs->vars[e->var].name, fp);
        break;
    case CE_ACCESS:
        fprintf(fp, "%s[", p->tensors[e->access.tensor].name);
        for (int i = 0; i < e->access.nidx; i++) {
            fputs(i ? ", " : "", fp);
            print(fp, p, cs, e->access.idx[i], 0);
        }
        fputc(']', fp);
        break;
    case CE_CALL:
        fprintf(fp, "%s(", func_name(e->call.fn));
        for (int i = 0; i < e->call.nargs; i++) {
            fputs(i ? ", " : "", fp);
            print(fp, p, cs, e->call.args[i], 0);
        }
        fputc(')', fp);
        break;
    case CE_NEG:
    case CE_NOT:
        fputc(e->kind == CE_NEG ? '-' : '!', fp);
        print(fp, p, cs, e->operand, 6);
        break;
    case CE_BIN:
        print(fp, p, cs, e->bin.lhs, cprec(e));
        fprintf(fp, " %s ", e->bin.op == OP_DIV && e->is_int ? "//"
                                                             : binop_str(e->bin.op));
        print(fp, p, cs, e->bin.rhs, cprec(e) + 1);
        break;
    }
    if (paren)
        fputc(')', fp);
}

static void dump_stmt(FILE *fp, const CProgram *p, int k)
{
    const CStmt *cs = &p->stmts[k];
    fprintf(fp, "stmt %d %s[", k, p->tensors[cs->out].name);
    for (int i = 0; i < cs->nloops; i++)
        fprintf(fp, "%s%s %lld..%lld", i ? ", " : "", cs->vars[i].name,
                (long long)cs->vars[i].lo, (long long)cs->vars[i].hi);
    fprintf(fp, "] %s", reduce_str(cs->red));
    for (int i = cs->nloops; i < cs->nvars; i++)
        fprintf(fp, "%s%s %lld..%lld", i == cs->nloops ? " over " : ", ",
                cs->vars[i].name, (long long)cs->vars[i].lo,
                (long long)cs->vars[i].hi);
    fputs("\n    ", fp);
    print(fp, p, cs, cs->body, 0);
    fputc('\n', fp);
    for (int i = 0; i < cs->nguards; i++) {
        fputs(i ? ", " : "    where ", fp);
        print(fp, p, cs, cs->guards[i], 0);
    }
    if (cs->nguards)
        fputc('\n', fp);
}

void sema_dump(const CProgram *p, void *out)
{
    FILE *fp = out;
    static const char *const kinds[] = {"input", "weight", "defined"};
    fprintf(fp, "model %s\n", p->model);
    for (int i = 0; i < p->ntensors; i++) {
        const CTensor *t = &p->tensors[i];
        fprintf(fp, "tensor %d %s : %s[", t->id, t->name, elem_name(t->elem));
        for (int k = 0; k < t->rank; k++)
            fprintf(fp, "%s%lld", k ? ", " : "", (long long)t->shape[k]);
        fprintf(fp, "] %s", kinds[t->kind]);
        if (t->stmt >= 0)
            fprintf(fp, " by stmt %d", t->stmt);
        fputs(t->is_output ? " output\n" : "\n", fp);
    }
    for (int k = 0; k < p->nstmts; k++)
        dump_stmt(fp, p, k);
    fputs("outputs", fp);
    for (int i = 0; i < p->noutputs; i++)
        fprintf(fp, " %s", p->tensors[p->outputs[i]].name);
    fputc('\n', fp);
}
