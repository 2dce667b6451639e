/* const.c - integer constant expressions: `const` values, dims, range
 * bounds.  Every operation is checked for overflow; division and modulo
 * are floor / divisor-signed (lang.h's i64_floordiv/i64_floormod).  Also
 * the -D NAME=VALUE overrides. */
#include "config.h"
#include "sema_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* An unknown name in a constant expression. */
static void unknown_constant(Sema *s, const Scope *sc, const Expr *e)
{
    Entry *later = sc == s->globals ? scope_find(s->allconsts, e->name) : NULL;
    if (later) {
        sema_error(s, e->loc, "constant '%s' is used before its definition",
                   sym_q(e->name));
        sema_note(s, later->loc, "'%s' is defined here", sym_q(e->name));
        return;
    }
    Sym *cands = NULL;
    int n = sema_may_suggest(s)
          ? scope_names(s->arena, sc, 1u << ENT_CONST | 1u << ENT_SHAPEVAR, &cands) : 0;
    sema_error(s, e->loc, "unknown constant '%s'%s", sym_q(e->name),
               did_you_mean(s, e->name, cands, n));
    Entry *g = sc != s->globals ? scope_find(s->globals, e->name) : NULL;
    if (g && g->kind == ENT_CONST) {
        g->used = true;
        sema_note(s, g->loc, "a def sees only its parameters and shape "
                  "variables, not the file's constant '%s'", sym_q(e->name));
    }
}

static bool eval_name(Sema *s, const Scope *sc, const Expr *e, int64_t *out)
{
    Entry *en = scope_find(sc, e->name);
    if (!en) {
        unknown_constant(s, sc, e);
        return false;
    }
    if (en->kind != ENT_CONST && en->kind != ENT_SHAPEVAR) {
        sema_error(s, e->loc, "%s '%s' is not a constant", entry_what(s, en),
                   sym_q(e->name));
        return false;
    }
    en->used = true;
    *out = en->value;
    return en->known;
}

bool const_binop(Sema *s, const Expr *e, BinOp op, int64_t a, int64_t b,
                 int64_t *out)
{
    bool ok = true;
    switch (op) {
    case OP_ADD: ok = i64_add(a, b, out); break;
    case OP_SUB: ok = i64_sub(a, b, out); break;
    case OP_MUL: ok = i64_mul(a, b, out); break;
    case OP_DIV:
    case OP_MOD:
        if (b == 0) {
            sema_error(s, e->loc, "%s by zero",
                       op == OP_DIV ? "division" : "modulo");
            return false;
        }
        if (op == OP_DIV && b == -1 && a == INT64_MIN)
            ok = false;
        else
            *out = op == OP_DIV ? i64_floordiv(a, b) : i64_floormod(a, b);
        break;
    default:
        ICE("const_binop: operator %s", binop_str(op));
    }
    if (!ok)
        sema_error(s, e->loc, "integer overflow: %lld %s %lld does not fit "
                   "in 64 bits", (long long)a, binop_str(op), (long long)b);
    return ok;
}

bool const_eval(Sema *s, const Scope *sc, const Expr *e, int64_t *out)
{
    switch (e->kind) {
    case EX_INT:
        *out = e->ival;
        return true;
    case EX_REAL:
        sema_error(s, e->loc, "real number in an integer constant expression");
        return false;
    case EX_NAME:
        return eval_name(s, sc, e, out);
    case EX_ACCESS:
        sema_error(s, e->loc, "tensor access in a constant expression");
        return false;
    case EX_CALL:
        sema_error(s, e->loc, "function call in a constant expression");
        return false;
    case EX_NOT:
    case EX_IN:
        sema_error(s, e->loc, "condition in a constant expression");
        return false;
    case EX_NEG: {
        int64_t v;
        if (!const_eval(s, sc, e->operand, &v))
            return false;
        if (v == INT64_MIN) {
            sema_error(s, e->loc, "integer overflow: -(%lld) does not fit in "
                       "64 bits", (long long)v);
            return false;
        }
        *out = -v;
        return true;
    }
    case EX_BIN:
        break;
    }
    if (e->bin.op >= OP_EQ) {
        sema_error(s, e->bin.op_loc, "'%s' in a constant expression",
                   binop_str(e->bin.op));
        return false;
    }
    int64_t a, b;
    bool ka = const_eval(s, sc, e->bin.lhs, &a);
    bool kb = const_eval(s, sc, e->bin.rhs, &b);
    return ka && kb && const_binop(s, e, e->bin.op, a, b, out);
}

bool shape_fits(int rank, const int64_t *shape, ElemType elem)
{
    int64_t n = (int64_t)elem_size(elem);
    for (int i = 0; i < rank; i++)
        if (!i64_mul(n, shape[i], &n) || n > SEMA_MAX_BYTES)
            return false;
    return true;
}

int64_t *shape_eval(Sema *s, const Scope *sc, Expr **dims, int ndims,
                    ElemType elem, const char *what, Loc loc)
{
    int64_t *shape = arena_alloc(s->arena, ((size_t)ndims + 1) * sizeof *shape);
    bool ok = true;
    for (int i = 0; i < ndims; i++) {
        if (!const_eval(s, sc, dims[i], &shape[i])) {
            ok = false;
        } else if (shape[i] < 1) {
            sema_error(s, dims[i]->loc, "dimension %d of '%s' is %lld; a "
                       "dimension must be at least 1", i + 1, what,
                       (long long)shape[i]);
            ok = false;
        }
    }
    if (ok && !shape_fits(ndims, shape, elem)) {
        sema_error(s, loc, "'%s' is too large: %s holds more than 2^62 bytes",
                   what, shape_text(s->arena, elem, ndims, shape));
        ok = false;
    }
    return ok ? shape : NULL;
}

/* ---- const statements ------------------------------------------------- */

typedef VEC(const Stmt *) StmtVec;

/* The const statements of the file and of its imports, in order; each
 * imported file once. */
static void gather_consts(Sema *s, Stmt **stmts, int n, StmtVec *out,
                          IntVec *files)
{
    for (int i = 0; i < n; i++) {
        const Stmt *st = stmts[i];
        if (st->kind == ST_CONST) {
            vec_push(s->arena, out, st);
        } else if (st->kind == ST_IMPORT && st->import.stmts) {
            bool seen = false;
            for (int k = 0; k < files->len; k++)
                seen |= files->data[k] == st->import.file;
            if (seen)
                continue;
            vec_push(s->arena, files, st->import.file);
            gather_consts(s, st->import.stmts, st->import.nstmts, out, files);
        }
    }
}

void consts_check(Sema *s, Stmt **stmts, int n)
{
    StmtVec cs = {0};
    IntVec files = {0};
    gather_consts(s, stmts, n, &cs, &files);
    for (int i = 0; i < cs.len; i++)
        if (!scope_find(s->allconsts, cs.data[i]->cnst.name))
            scope_add(s->arena, s->allconsts, cs.data[i]->cnst.name,
                      ENT_CONST, cs.data[i]->cnst.name_loc);
    for (int i = 0; i < cs.len; i++) {
        const Stmt *st = cs.data[i];
        Sym name = st->cnst.name;
        int64_t v = 0;
        bool known = const_eval(s, s->globals, st->cnst.value, &v);
        Entry *old = scope_find(s->globals, name);
        if (old) {
            sema_error(s, st->cnst.name_loc, "redefinition of '%s'",
                       sym_q(name));
            sema_note(s, old->loc, "previous definition of '%s' was here",
                      sym_q(name));
            continue;
        }
        const Define *d = define_find(s, name);
        if (d) {
            v = d->value;
            known = true;
        }
        Entry *e = scope_add(s->arena, s->globals, name, ENT_CONST,
                             st->cnst.name_loc);
        e->value = v;
        e->known = known;
    }
}

/* ---- -D NAME=VALUE -------------------------------------------------------- */

static bool is_ident(const char *p, size_t n)
{
    if (n == 0 || !(p[0] == '_' || ((p[0] | 32) >= 'a' && (p[0] | 32) <= 'z')))
        return false;
    for (size_t i = 1; i < n; i++)
        if (!(p[i] == '_' || (p[i] >= '0' && p[i] <= '9') ||
              ((p[i] | 32) >= 'a' && (p[i] | 32) <= 'z')))
            return false;
    return true;
}

void defines_parse(Sema *s)
{
    for (int i = 0; s->opt && i < s->opt->ndefines; i++) {
        const char *def = s->opt->defines[i];
        const char *eq = strchr(def, '=');
        if (!eq || !is_ident(def, (size_t)(eq - def))) {
            sema_error(s, LOC_NONE, "invalid -D '%s': expected NAME=VALUE, "
                       "e.g. -D N=16", def);
            continue;
        }
        char *end;
        errno = 0;
        long long v = strtoll(eq + 1, &end, 10);
        if (eq[1] == '\0' || *end != '\0' || errno == ERANGE || eq[1] == ' ') {
            sema_error(s, LOC_NONE, "invalid -D '%s': the value must be an "
                       "integer", def);
            continue;
        }
        Define d = {sym_intern(def, (size_t)(eq - def)), v, false, def};
        /* a later -D of the same name wins, as on a C compiler's command line */
        bool replaced = false;
        for (int k = 0; k < s->defines.len; k++)
            if (s->defines.data[k].name == d.name) {
                s->defines.data[k] = d;
                replaced = true;
            }
        if (!replaced)
            vec_push(s->arena, &s->defines, d);
    }
}

const Define *define_find(Sema *s, Sym name)
{
    for (int k = 0; k < s->defines.len; k++)
        if (s->defines.data[k].name == name) {
            s->defines.data[k].used = true;
            return &s->defines.data[k];
        }
    return NULL;
}

void defines_check_used(Sema *s)
{
    for (int k = 0; k < s->defines.len; k++) {
        const Define *d = &s->defines.data[k];
        if (d->used)
            continue;
        Entry *e = scope_find(s->globals, d->name);
        if (e) {
            sema_error(s, LOC_NONE, "-D %s: '%s' is %s %s, not a constant",
                       d->text, sym_q(d->name),
                       strcmp(entry_what(s, e), "input") == 0 ? "an" : "a",
                       entry_what(s, e));
            continue;
        }
        Sym *cands = NULL;
        int n = sema_may_suggest(s)
              ? scope_names(s->arena, s->globals, 1u << ENT_CONST, &cands) : 0;
        sema_error(s, LOC_NONE, "-D %s: no constant named '%s'%s",
                   d->text, sym_q(d->name),
                   did_you_mean(s, d->name, cands, n));
    }
}

/* ---- real constant expressions ------------------------------------------ */

bool real_const_eval(Sema *s, const Scope *sc, const Expr *e, double *out)
{
    double a, b;
    switch (e->kind) {
    case EX_INT:
        *out = (double)e->ival;
        return true;
    case EX_REAL:
        *out = e->rval;
        return true;
    case EX_NAME: {
        Entry *en = scope_find(sc, e->name);
        if (en && en->kind == ENT_REAL) {
            en->used = true;
            *out = en->rvalue;
            return true;
        }
        int64_t v;
        if (!const_eval(s, sc, e, &v))
            return false;
        *out = (double)v;
        return true;
    }
    case EX_NEG:
        if (!real_const_eval(s, sc, e->operand, &a))
            return false;
        *out = -a;
        return true;
    case EX_BIN:
        if (e->bin.op > OP_MOD || e->bin.op == OP_MOD)
            break;
        if (!real_const_eval(s, sc, e->bin.lhs, &a) ||
            !real_const_eval(s, sc, e->bin.rhs, &b))
            return false;
        switch (e->bin.op) {
        case OP_ADD: *out = a + b; break;
        case OP_SUB: *out = a - b; break;
        case OP_MUL: *out = a * b; break;
        default: *out = a / b; break;
        }
        return true;
    default:
        break;
    }
    sema_error(s, e->loc, "'%s' is not a constant number; expected numbers, "
               "constants, inf or nan with + - * /", expr_text(s->arena, e));
    return false;
}
