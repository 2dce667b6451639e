/* expr.c - checked expressions of one tensor statement.  Three contexts:
 *   integer  subscripts and where operands: indices and constants with
 *            + - *, and / % by constants (floor); affine but for / and %
 *   real     the body: numbers, constants, indices, tensor reads, functions
 *   cond     where guards and select's first argument: comparisons, && || !
 * A name that is no constant, tensor or left-hand index is a sum index.
 * Each function returns NULL after an error (reported) or when something
 * it needs is unknown (poisoned); callers pass NULL on silently. */
#include "config.h"
#include "sema_int.h"

#include <string.h>

static CExpr *cnew(StmtCtx *c, CExprKind kind, Loc loc, bool is_int)
{
    CExpr *x = arena_alloc(c->s->arena, sizeof *x);
    x->kind = kind;
    x->loc = loc;
    x->is_int = is_int;
    return x;
}

static CExpr *cint(StmtCtx *c, Loc loc, int64_t v)
{
    CExpr *x = cnew(c, CE_INT, loc, true);
    x->ival = v;
    return x;
}

static CExpr *cbin(StmtCtx *c, const Expr *e, CExpr *l, CExpr *r, bool is_int)
{
    CExpr *x = cnew(c, CE_BIN, e->loc, is_int);
    x->bin.op = e->bin.op;
    x->bin.lhs = l;
    x->bin.rhs = r;
    x->is_bool = e->bin.op >= OP_EQ;
    return x;
}

static void fail(StmtCtx *c)
{
    c->failed = true;
}

/* ---- names and indices -------------------------------------------------- */

int stmt_var(StmtCtx *c, Sym name, Loc loc, bool create)
{
    for (int i = 0; i < c->vars.len; i++)
        if (c->vars.data[i].name == name)
            return i;
    if (!create)
        return -1;
    SVar v = {.name = name, .loc = loc};
    vec_push(c->s->arena, &c->vars, v);
    return c->vars.len - 1;
}

static void mark_var(StmtCtx *c, int v)
{
    if (c->ctx == CTX_SUBSCRIPT)
        c->vars.data[v].in_subscript = true;
}

/* After an error in e: its indices' ranges are not to be trusted. */
void vars_unknown(StmtCtx *c, const Expr *e)
{
    switch (e->kind) {
    case EX_NAME: {
        int v = stmt_var(c, e->name, e->loc, false);
        if (v >= 0)
            c->vars.data[v].unknown = true;
        break;
    }
    case EX_ACCESS:
    case EX_CALL:
        for (int i = 0; i < e->call.nargs; i++)
            vars_unknown(c, e->call.args[i]);
        break;
    case EX_NEG:
    case EX_NOT:
        vars_unknown(c, e->operand);
        break;
    case EX_BIN:
        vars_unknown(c, e->bin.lhs);
        vars_unknown(c, e->bin.rhs);
        break;
    case EX_IN: {
        int v = stmt_var(c, e->in.var, e->in.var_loc, false);
        if (v >= 0)
            c->vars.data[v].unknown = true;
        break;
    }
    default:
        break;
    }
}

/* "x[...]" or "x[]" for a tensor of known rank. */
static const char *read_hint(StmtCtx *c, const Entry *en)
{
    const STensor *t = tensor_at(c->s, en->tensor);
    bool scalar = t && t->c.rank == 0;
    return arena_printf(c->s->arena, "%s[%s]", sym_q(en->name),
                        scalar ? "" : "...");
}

/* A name in an expression: an index (maybe a new sum index) or a constant. */
static CExpr *name_expr(StmtCtx *c, const Expr *e)
{
    int v = stmt_var(c, e->name, e->loc, false);
    if (v < 0) {
        Entry *en = scope_find(c->sc, e->name);
        if (en && (en->kind == ENT_CONST || en->kind == ENT_SHAPEVAR)) {
            en->used = true;
            return en->known ? cint(c, e->loc, en->value) : NULL;
        }
        if (en && en->kind == ENT_REAL) {
            en->used = true;
            if (c->ctx != CTX_BODY) {
                sema_error(c->s, e->loc, "real parameter '%s' in an index "
                           "expression; indices are integers (make it a "
                           "'const' parameter)", sym_q(e->name));
                fail(c);
                return NULL;
            }
            CExpr *x = cnew(c, CE_REAL, e->loc, false);
            x->rval = en->rvalue;
            return x;
        }
        if (en) {
            sema_error(c->s, e->loc, "%s '%s' is not an index or constant; "
                       "read it as '%s'", entry_what(c->s, en),
                       sym_q(e->name), read_hint(c, en));
            en->used = true;
            fail(c);
            return NULL;
        }
        v = stmt_var(c, e->name, e->loc, true);
    }
    mark_var(c, v);
    CExpr *x = cnew(c, CE_VAR, e->loc, true);
    x->var = v;
    return x;
}

/* ---- integer context -------------------------------------------------- */

static CExpr *int_neg(StmtCtx *c, const Expr *e, CExpr *a)
{
    if (!a)
        return NULL;
    if (a->kind == CE_INT) {
        if (a->ival == INT64_MIN) {
            sema_error(c->s, e->loc, "integer overflow: -(%lld) does not fit "
                       "in 64 bits", (long long)a->ival);
            fail(c);
            return NULL;
        }
        return cint(c, e->loc, -a->ival);
    }
    CExpr *x = cnew(c, CE_NEG, e->loc, true);
    x->operand = a;
    return x;
}

/* l op r on integers: fold constants; only affine forms plus / and % by
 * constants are allowed, so that derive can put them in canonical form. */
static CExpr *int_bin(StmtCtx *c, const Expr *e, CExpr *l, CExpr *r)
{
    if (!l || !r)
        return NULL;
    BinOp op = e->bin.op;
    if ((op == OP_DIV || op == OP_MOD) && r->kind != CE_INT) {
        sema_error(c->s, e->bin.rhs->loc, "'%s' by a non-constant in %s; the divisor "
                   "must be a constant", binop_str(op),
                   c->ctx == CTX_BODY ? "a body" : c->ctx == CTX_WHERE ? "a guard"
                                                                        : "an index expression");
        fail(c);
        return NULL;
    }
    if (l->kind == CE_INT && r->kind == CE_INT) {
        int64_t v;
        if (!const_binop(c->s, e, op, l->ival, r->ival, &v)) {
            fail(c);
            return NULL;
        }
        return cint(c, e->loc, v);
    }
    if (op == OP_MUL && l->kind != CE_INT && r->kind != CE_INT) {
        sema_error(c->s, e->loc, "index expression '%s' is not linear; one "
                   "factor of '*' must be a constant",
                   expr_text(c->s->arena, e));
        fail(c);
        return NULL;
    }
    if ((op == OP_DIV || op == OP_MOD) && r->ival == 0) {
        sema_error(c->s, e->loc, "%s by zero",
                   op == OP_DIV ? "division" : "modulo");
        fail(c);
        return NULL;
    }
    return cbin(c, e, l, r, true);
}

static CExpr *access_expr(StmtCtx *c, const Expr *e);
static CExpr *gather_expr(StmtCtx *c, const Expr *e);

CExpr *expr_int(StmtCtx *c, const Expr *e)
{
    const char *bad = NULL;
    switch (e->kind) {
    case EX_INT:
        return cint(c, e->loc, e->ival);
    case EX_NAME:
        return name_expr(c, e);
    case EX_NEG:
        return int_neg(c, e, expr_int(c, e->operand));
    case EX_BIN:
        if (e->bin.op >= OP_EQ) {
            sema_error(c->s, e->bin.op_loc, "'%s' in an index expression; "
                       "conditions belong in 'where'", binop_str(e->bin.op));
            fail(c);
            return NULL;
        } else {
            CExpr *l = expr_int(c, e->bin.lhs);
            CExpr *r = expr_int(c, e->bin.rhs);
            return int_bin(c, e, l, r);
        }
    case EX_ACCESS:
        return gather_expr(c, e);
    case EX_REAL: bad = "real number"; break;
    case EX_CALL: bad = "function call"; break;
    case EX_NOT: bad = "'!'"; break;
    case EX_IN: bad = "'in'"; break;
    }
    sema_error(c->s, e->loc, "%s in an index expression; indices are "
               "integer expressions of indices and constants", bad);
    fail(c);
    return NULL;
}

/* ---- real context ------------------------------------------------------- */

typedef struct Builtin { const char *name; Func fn; int arity; } Builtin;
static const Builtin builtins[] = {
    {"relu", FN_RELU, 1}, {"sigmoid", FN_SIGMOID, 1}, {"tanh", FN_TANH, 1},
    {"exp", FN_EXP, 1}, {"log", FN_LOG, 1}, {"sqrt", FN_SQRT, 1},
    {"rsqrt", FN_RSQRT, 1}, {"abs", FN_ABS, 1}, {"erf", FN_ERF, 1},
    {"max", FN_MAX, 2}, {"min", FN_MIN, 2}, {"pow", FN_POW, 2},
    {"select", FN_SELECT, 3},
    {"sin", FN_SIN, 1}, {"cos", FN_COS, 1}, {"floor", FN_FLOOR, 1},
    {"ceil", FN_CEIL, 1}, {"round", FN_ROUND, 1}, {"sign", FN_SIGN, 1},
    {"expm1", FN_EXPM1, 1}, {"log1p", FN_LOG1P, 1},
    {"softplus", FN_SOFTPLUS, 1}, {"gelu", FN_GELU, 1},
    {"f32", FN_TO_F32, 1}, {"f16", FN_TO_F16, 1}, {"bf16", FN_TO_BF16, 1},
    {"i8", FN_TO_I8, 1}, {"i16", FN_TO_I16, 1}, {"i32", FN_TO_I32, 1},
    {"i64", FN_TO_I64, 1}, {"u8", FN_TO_U8, 1}, {"bool", FN_TO_BOOL, 1},
};
#define NBUILTINS (int)(sizeof builtins / sizeof *builtins)

const char *func_name(Func f)
{
    for (int i = 0; i < NBUILTINS; i++)
        if (builtins[i].fn == f)
            return builtins[i].name;
    return "?";
}

static const Builtin *builtin_find(Sym name)
{
    for (int i = 0; i < NBUILTINS; i++)
        if (strcmp(builtins[i].name, sym_str(name)) == 0)
            return &builtins[i];
    return NULL;
}

bool func_is(Sym name)
{
    return builtin_find(name) != NULL;
}

/* A call of something that is no function: say what it is. */
static void unknown_function(StmtCtx *c, const Expr *e)
{
    Sema *s = c->s;
    Sym name = e->call.name;
    Entry *en = scope_find(c->sc, name);
    if (scope_find(s->defs, name)) {
        sema_error(s, e->call.name_loc, "def '%s' cannot be called inside "
                   "an expression; bind its result first: 't = %s(...)'",
                   sym_q(name), sym_q(name));
    } else if (en && (en->kind == ENT_TENSOR || en->kind == ENT_PARAM)) {
        en->used = true;
        sema_error(s, e->call.name_loc, "%s '%s' is not a function; read it "
                   "as '%s'", entry_what(s, en), sym_q(name),
                   read_hint(c, en));
    } else {
        Sym cands[NBUILTINS];
        for (int i = 0; i < NBUILTINS; i++)
            cands[i] = sym_intern_cstr(builtins[i].name);
        sema_error(s, e->call.name_loc, "unknown function '%s'%s",
                   sym_q(name), did_you_mean(s, name, cands, NBUILTINS));
    }
    fail(c);
}

static CExpr *call_expr(StmtCtx *c, const Expr *e)
{
    const Builtin *b = builtin_find(e->call.name);
    if (!b) {
        /* the arguments of a mistaken call (a def's are tensor names) are
         * better left alone */
        unknown_function(c, e);
        vars_unknown(c, e);
        return NULL;
    }
    int n = e->call.nargs;
    for (int i = 0; e->call.keys && i < n; i++)
        if (e->call.keys[i]) {
            sema_error(c->s, e->call.args[i]->loc, "function '%s' takes no named "
                       "arguments ('%s = ...'); they are for defs and shape operations",
                       b->name, sym_q(e->call.keys[i]));
            fail(c);
            return NULL;
        }
    CExpr **args = arena_alloc(c->s->arena, ((size_t)n + 1) * sizeof *args);
    bool ok = true;
    for (int i = 0; i < n; i++) {
        if (b->fn == FN_SELECT && i == 0)
            args[i] = expr_cond(c, e->call.args[i], false);
        else
            args[i] = expr_real(c, e->call.args[i]);
        ok &= args[i] != NULL;
    }
    if (n != b->arity) {
        sema_error(c->s, e->call.name_loc, "'%s' takes %d argument%s, but %d "
                   "%s given", b->name, b->arity, b->arity == 1 ? "" : "s", n,
                   n == 1 ? "was" : "were");
        fail(c);
        return NULL;
    }
    if (!ok)
        return NULL;
    CExpr *x = cnew(c, CE_CALL, e->loc, false);
    x->call.fn = b->fn;
    x->call.args = args;
    x->call.nargs = n;
    return x;
}

/* The value of e where it is numbers alone (+ - * / of literals and
 * constants): the divisors that are zero before the program runs. */
static bool number_value(const CExpr *e, double *v)
{
    double a, b;
    switch (e->kind) {
    case CE_INT: *v = (double)e->ival; return true;
    case CE_REAL: *v = e->rval; return true;
    case CE_NEG:
        if (!number_value(e->operand, &a))
            return false;
        *v = -a;
        return true;
    case CE_BIN:
        if (e->bin.op > OP_DIV || !number_value(e->bin.lhs, &a) ||
            !number_value(e->bin.rhs, &b))
            return false;
        *v = e->bin.op == OP_ADD ? a + b : e->bin.op == OP_SUB ? a - b
           : e->bin.op == OP_MUL ? a * b : a / b;
        return true;
    default:
        return false;
    }
}

static CExpr *real_bin(StmtCtx *c, const Expr *e)
{
    BinOp op = e->bin.op;
    if (op >= OP_EQ) {
        sema_error(c->s, e->bin.op_loc, "'%s' outside a condition; "
                   "conditions belong in 'where' or in 'select(cond, a, b)'",
                   binop_str(op));
        fail(c);
        return NULL;
    }
    CExpr *l = expr_real(c, e->bin.lhs);
    CExpr *r = expr_real(c, e->bin.rhs);
    double rv;
    if (op == OP_DIV && r && number_value(r, &rv) && rv == 0) {
        sema_error(c->s, e->loc, "division by zero");
        fail(c);
        return NULL;
    }
    if (!l || !r)
        return NULL;
    if (op == OP_MOD) {
        if (!l->is_int || !r->is_int) {
            sema_error(c->s, e->bin.op_loc, "'%%' needs integer operands "
                       "(indices and constants)");
            fail(c);
            return NULL;
        }
        return int_bin(c, e, l, r);
    }
    if (op == OP_DIV)
        return cbin(c, e, l, r, false);     /* real division */
    if (l->kind == CE_INT && r->kind == CE_INT)
        return int_bin(c, e, l, r);
    /* integer arithmetic stays affine (derive's index form); i * j of two
     * index values is a product of reals */
    bool is_int = l->is_int && r->is_int &&
                  (op != OP_MUL || l->kind == CE_INT || r->kind == CE_INT);
    return cbin(c, e, l, r, is_int);
}

CExpr *expr_real(StmtCtx *c, const Expr *e)
{
    switch (e->kind) {
    case EX_INT:
        return cint(c, e->loc, e->ival);
    case EX_REAL: {
        CExpr *x = cnew(c, CE_REAL, e->loc, false);
        x->rval = e->rval;
        return x;
    }
    case EX_NAME:
        return name_expr(c, e);
    case EX_ACCESS:
        return access_expr(c, e);
    case EX_CALL:
        return call_expr(c, e);
    case EX_NEG: {
        CExpr *a = expr_real(c, e->operand);
        if (!a || a->kind == CE_INT)
            return int_neg(c, e, a);
        if (a->kind == CE_REAL) {
            CExpr *x = cnew(c, CE_REAL, e->loc, false);
            x->rval = -a->rval;
            return x;
        }
        CExpr *x = cnew(c, CE_NEG, e->loc, a->is_int);
        x->operand = a;
        return x;
    }
    case EX_BIN:
        return real_bin(c, e);
    case EX_NOT:
    case EX_IN:
        break;
    }
    sema_error(c->s, e->loc, "'%s' outside a condition; conditions belong in "
               "'where' or in 'select(cond, a, b)'",
               e->kind == EX_NOT ? "!" : "in");
    fail(c);
    return NULL;
}

/* ---- tensor reads ------------------------------------------------------- */

/* An unknown tensor name, or a name that is something else. */
static void not_a_tensor(StmtCtx *c, const Expr *e, const Entry *en)
{
    Sema *s = c->s;
    Sym name = e->call.name;
    if (stmt_var(c, name, e->loc, false) >= 0) {
        sema_error(s, e->call.name_loc, "'%s' is an index, not a tensor",
                   sym_q(name));
    } else if (en) {
        sema_error(s, e->call.name_loc, "%s '%s' is not a tensor",
                   entry_what(s, en), sym_q(name));
        sema_note(s, en->loc, "'%s' is defined here", sym_q(name));
    } else {
        unknown_tensor(s, c->sc, name, e->call.name_loc, "");
    }
    fail(c);
}

static void rank_mismatch(StmtCtx *c, const Expr *e, const Entry *en,
                          const STensor *t)
{
    Sema *s = c->s;
    sema_error(s, e->call.name_loc, "%s '%s' has rank %d, but %d subscript%s "
               "%s given", entry_what(s, en), sym_q(en->name), t->c.rank,
               e->call.nargs, e->call.nargs == 1 ? "" : "s",
               e->call.nargs == 1 ? "is" : "are");
    if (en->kind == ENT_PARAM) {
        const Param *p = &en->stmt->def.params[en->param];
        sema_note(s, p->loc, "parameter '%s' declared here as %s",
                  sym_q(p->name), type_text(s->arena, &p->type));
    } else if (t->type) {
        sema_note(s, t->name_loc, "'%s' declared here as %s", sym_q(en->name),
                  type_text(s->arena, t->type));
    } else {
        sema_note(s, t->name_loc, "'%s' defined here with rank %d",
                  sym_q(en->name), t->c.rank);
    }
    fail(c);
}

static CExpr *access_expr(StmtCtx *c, const Expr *e)
{
    Entry *en = scope_find(c->sc, e->call.name);
    bool is_tensor = en && (en->kind == ENT_TENSOR || en->kind == ENT_PARAM);
    const STensor *t = is_tensor ? tensor_at(c->s, en->tensor) : NULL;
    if (!is_tensor)
        not_a_tensor(c, e, en);
    else
        en->used = true;
    bool rank_ok = t && t->c.rank >= 0 && t->c.rank == e->call.nargs;
    if (t && t->c.rank >= 0 && !rank_ok)
        rank_mismatch(c, e, en, t);

    int n = e->call.nargs;
    CExpr **idx = arena_alloc(c->s->arena, ((size_t)n + 1) * sizeof *idx);
    bool ok = true;
    ExprCtx saved = c->ctx;
    c->ctx = CTX_SUBSCRIPT;
    for (int i = 0; i < n; i++) {
        idx[i] = expr_int(c, e->call.args[i]);
        ok &= idx[i] != NULL;
        if (!idx[i])
            vars_unknown(c, e->call.args[i]);
        if (idx[i] && idx[i]->kind == CE_VAR && e->call.args[i]->kind == EX_NAME
            && (rank_ok || !t || t->c.rank < 0)) {
            /* dim -1: the tensor's shape is unknown (poisoned) */
            Position p = {idx[i]->var, t ? t->c.id : -1,
                          rank_ok && tensor_shape_known(t) ? i : -1,
                          e->call.args[i]->loc, e->call.name};
            vec_push(c->s->arena, &c->pos, p);
        }
    }
    c->ctx = saved;
    double outside = 0;
    if (e->call.outside && !real_const_eval(c->s, c->sc, e->call.outside, &outside)) {
        fail(c);
        return NULL;
    }
    if (!ok || !rank_ok)
        return NULL;
    CExpr *x = cnew(c, CE_ACCESS, e->loc, false);
    x->access.tensor = t->c.id;
    x->access.idx = idx;
    x->access.nidx = n;
    x->access.outside = outside;
    x->access.outside_given = e->call.outside != NULL;
    return x;
}

/* A read of an integer tensor inside a subscript: a gather, `emb[tok[i], d]`.
 * Its value is the element, an exact integer. */
static CExpr *gather_expr(StmtCtx *c, const Expr *e)
{
    Entry *en = scope_find(c->sc, e->call.name);
    const STensor *t = en && (en->kind == ENT_TENSOR || en->kind == ENT_PARAM)
                           ? tensor_at(c->s, en->tensor) : NULL;
    if (t && !t->poisoned && t->c.rank >= 0 && !elem_is_int(t->c.elem)) {
        if (c->ctx == CTX_WHERE)
            sema_error(c->s, e->loc, "%s '%s' of %s elements read in a guard; a guard "
                       "can read integer tensors only (a condition on values is "
                       "'select(cond, a, b)' in the body)", entry_what(c->s, en),
                       sym_q(e->call.name), elem_name(t->c.elem));
        else
            sema_error(c->s, e->loc, "%s '%s' of %s elements read in an index "
                       "expression; an index can read integer tensors only "
                       "(convert it first: 'k[i] : i32[N] = i32(%s[i])')",
                       entry_what(c->s, en), sym_q(e->call.name),
                       elem_name(t->c.elem), sym_q(e->call.name));
        en->used = true;
        vars_unknown(c, e);
        fail(c);
        return NULL;
    }
    if (e->call.outside) {
        sema_error(c->s, e->call.outside->loc, "'?:' on a read in an index "
                   "expression; an index read outside its tensor is 0");
        fail(c);
        return NULL;
    }
    CExpr *x = access_expr(c, e);
    if (x)
        x->is_int = true;
    return x;
}

/* ---- conditions --------------------------------------------------------- */

CExpr *expr_cond(StmtCtx *c, const Expr *e, bool ints_only)
{
    if (e->kind == EX_NOT) {
        CExpr *a = expr_cond(c, e->operand, ints_only);
        if (!a)
            return NULL;
        CExpr *x = cnew(c, CE_NOT, e->loc, false);
        x->is_bool = true;
        x->operand = a;
        return x;
    }
    if (e->kind == EX_BIN && (e->bin.op == OP_AND || e->bin.op == OP_OR)) {
        CExpr *l = expr_cond(c, e->bin.lhs, ints_only);
        CExpr *r = expr_cond(c, e->bin.rhs, ints_only);
        return l && r ? cbin(c, e, l, r, false) : NULL;
    }
    if (e->kind == EX_BIN && e->bin.op >= OP_EQ) {
        CExpr *l = ints_only ? expr_int(c, e->bin.lhs) : expr_real(c, e->bin.lhs);
        CExpr *r = ints_only ? expr_int(c, e->bin.rhs) : expr_real(c, e->bin.rhs);
        return l && r ? cbin(c, e, l, r, false) : NULL;
    }
    if (!ints_only && (e->kind == EX_ACCESS || e->kind == EX_CALL)) {
        /* a mask: a read of a bool or integer tensor, or bool(x), holds
         * where it is not 0 */
        Entry *en = e->kind == EX_ACCESS ? scope_find(c->sc, e->call.name) : NULL;
        const STensor *t = en && (en->kind == ENT_TENSOR || en->kind == ENT_PARAM)
                               ? tensor_at(c->s, en->tensor) : NULL;
        bool mask = e->kind == EX_ACCESS ? t && elem_is_int(t->c.elem)
                                         : strcmp(sym_str(e->call.name), "bool") == 0;
        if (mask || (t && (t->poisoned || t->c.rank < 0))) {
            CExpr *v = expr_real(c, e);
            if (!v)
                return NULL;
            CExpr *x = cnew(c, CE_BIN, e->loc, false);
            x->bin.op = OP_NE;
            x->bin.lhs = v;
            x->bin.rhs = cint(c, e->loc, 0);
            x->is_bool = true;
            return x;
        }
    }
    if (e->kind == EX_IN)
        sema_error(c->s, e->loc, "'%s in ..' must stand alone as a 'where' "
                   "condition", sym_q(e->in.var));
    else
        sema_error(c->s, e->loc, "'%s' is not a condition; expected a "
                   "comparison such as 'i < 3'", expr_text(c->s->arena, e));
    fail(c);
    return NULL;
}
