/* range.c - the ranges of a statement's indices (LANG-DECISIONS.md):
 *   where items that compare a bare index with a constant, or `i in lo..hi`,
 *   give bounds; every other where item is a guard;
 *   a loop index ranges over its dimension of the declared shape, else
 *   over the dimension of every tensor it is a whole subscript of, else
 *   up to its where bound (the positions must agree with each other,
 *   declared shape or not); where bounds narrow it;
 *   a sum index takes its where range (lo defaults to 0) when it has an
 *   upper bound, else the positions' common dimension, narrowed.
 * Then the integer expressions are checked, by interval arithmetic over
 * those ranges, never to overflow 64 bits. */
#include "config.h"
#include "sema_int.h"

#include <strings.h>

/* ---- where -------------------------------------------------------------- */

static void bound_lo(SVar *v, int64_t lo, Loc loc)
{
    if (!v->has_wlo || lo > v->wlo)
        v->wlo = lo;
    v->has_wlo = true;
    v->wloc = loc;
}

static void bound_hi(SVar *v, int64_t hi, Loc loc)
{
    if (!v->has_whi || hi < v->whi)
        v->whi = hi;
    v->has_whi = true;
    v->wloc = loc;
}

/* `var op k` where var is a bare index and k a constant. */
static void bound_cmp(StmtCtx *c, int var, BinOp op, int64_t k, Loc loc)
{
    SVar *v = &c->vars.data[var];
    bool ok = true;
    int64_t k1 = k;
    if (op == OP_LE || op == OP_GT || op == OP_EQ)
        ok = i64_add(k, 1, &k1);
    if (!ok) {
        sema_error(c->s, loc, "integer overflow: the bound %lld + 1 does not "
                   "fit in 64 bits", (long long)k);
        c->failed = true;
        return;
    }
    switch (op) {
    case OP_LT: bound_hi(v, k, loc); break;
    case OP_LE: bound_hi(v, k1, loc); break;
    case OP_GT: bound_lo(v, k1, loc); break;
    case OP_GE: bound_lo(v, k, loc); break;
    case OP_EQ: bound_lo(v, k, loc); bound_hi(v, k1, loc); break;
    default: ICE("bound_cmp: %s", binop_str(op));
    }
}

static BinOp flip(BinOp op)
{
    switch (op) {
    case OP_LT: return OP_GT;
    case OP_LE: return OP_GE;
    case OP_GT: return OP_LT;
    case OP_GE: return OP_LE;
    default: return op;
    }
}

/* A range bound must not mention an index ('j in 0..i' is a guard's job). */
static bool mentions_index(StmtCtx *c, const Expr *e, Sym *which)
{
    switch (e->kind) {
    case EX_NAME:
        *which = e->name;
        return stmt_var(c, e->name, e->loc, false) >= 0;
    case EX_NEG:
    case EX_NOT:
        return mentions_index(c, e->operand, which);
    case EX_BIN:
        return mentions_index(c, e->bin.lhs, which) ||
               mentions_index(c, e->bin.rhs, which);
    default:
        return false;
    }
}

/* A bound of `var in lo..hi`; `guard` is "<" for hi, ">=" for lo. */
static bool range_bound(StmtCtx *c, Sym var, const Expr *e, const char *guard,
                        int64_t *out)
{
    Sym which;
    if (mentions_index(c, e, &which)) {
        sema_error(c->s, e->loc, "the bounds of a range must be constants, "
                   "but '%s' is an index; use a guard: 'where %s %s %s'",
                   sym_q(which), sym_q(var), guard, expr_text(c->s->arena, e));
        c->failed = true;
        return false;
    }
    if (!const_eval(c->s, c->sc, e, out)) {
        c->failed = true;
        return false;
    }
    return true;
}

/* where i in lo..hi */
static void where_in(StmtCtx *c, const Expr *e)
{
    Sym name = e->in.var;
    int v = stmt_var(c, name, e->in.var_loc, false);
    if (v < 0) {
        Entry *en = scope_find(c->sc, name);
        if (en) {
            sema_error(c->s, e->in.var_loc, "%s '%s' is not an index",
                       entry_what(c->s, en), sym_q(name));
            sema_note(c->s, en->loc, "'%s' is defined here", sym_q(name));
            c->failed = true;
            return;
        }
        v = stmt_var(c, name, e->in.var_loc, true);
    }
    c->vars.data[v].in_where = true;
    int64_t lo, hi;
    bool klo = range_bound(c, name, e->in.lo, ">=", &lo);
    bool khi = range_bound(c, name, e->in.hi, "<", &hi);
    if (klo)
        bound_lo(&c->vars.data[v], lo, e->loc);
    if (khi)
        bound_hi(&c->vars.data[v], hi, e->loc);
    if (!klo || !khi)
        c->vars.data[v].unknown = true;
}

static void where_item(StmtCtx *c, const Expr *e, CExprVec *guards)
{
    if (e->kind == EX_BIN && e->bin.op == OP_AND) {
        where_item(c, e->bin.lhs, guards);
        where_item(c, e->bin.rhs, guards);
        return;
    }
    if (e->kind == EX_IN) {
        where_in(c, e);
        return;
    }
    BinOp op = e->kind == EX_BIN ? e->bin.op : OP_ADD;
    if (op == OP_LT || op == OP_LE || op == OP_GT || op == OP_GE ||
        op == OP_EQ) {
        CExpr *l = expr_int(c, e->bin.lhs);
        CExpr *r = expr_int(c, e->bin.rhs);
        if (!l || !r) {
            vars_unknown(c, e);
            return;
        }
        if (l->kind == CE_VAR && r->kind == CE_INT) {
            bound_cmp(c, l->var, op, r->ival, e->loc);
            return;
        }
        if (r->kind == CE_VAR && l->kind == CE_INT) {
            bound_cmp(c, r->var, flip(op), l->ival, e->loc);
            return;
        }
        CExpr *g = arena_alloc(c->s->arena, sizeof *g);
        *g = (CExpr){.kind = CE_BIN, .is_bool = true, .loc = e->loc,
                     .bin = {op, l, r}};
        vec_push(c->s->arena, guards, g);
        return;
    }
    CExpr *g = expr_cond(c, e, true);
    if (g)
        vec_push(c->s->arena, guards, g);
    else
        vars_unknown(c, e);
}

void where_check(StmtCtx *c, CExpr ***guards, int *nguards)
{
    CExprVec gs = {0};
    ExprCtx saved = c->ctx;
    c->ctx = CTX_WHERE;
    for (int i = 0; i < c->st->assign.nwhere; i++)
        where_item(c, c->st->assign.where[i], &gs);
    c->ctx = saved;
    *guards = gs.data;
    *nguards = gs.len;
}

/* ---- ranges ----------------------------------------------------------- */

/* The common dimension of var's whole-subscript positions: 1 with *dim
 * set, 0 when there is none, -1 when unknown or conflicting (reported). */
static int position_dim(StmtCtx *c, int var, int64_t *dim)
{
    Sema *s = c->s;
    const Position *first = NULL;
    bool unknown = false;
    for (int i = 0; i < c->pos.len; i++) {
        const Position *p = &c->pos.data[i];
        if (p->var != var)
            continue;
        if (p->dim < 0) {
            unknown = true;
            continue;
        }
        const STensor *t = tensor_at(s, p->tensor);
        int64_t d = t->c.shape[p->dim];
        if (!first) {
            first = p;
            *dim = d;
        } else if (d != *dim) {
            const STensor *ft = tensor_at(s, first->tensor);
            sema_error(s, p->loc, "conflicting ranges for index '%s': 0..%lld "
                       "here, but 0..%lld from '%s'", sym_q(c->vars.data[var].name),
                       (long long)d, (long long)*dim, sym_q(first->name));
            sema_note(s, first->loc, "'%s' ranges over 0..%lld as subscript %d "
                      "of '%s' : %s", sym_q(c->vars.data[var].name),
                      (long long)*dim, first->dim + 1, sym_q(first->name),
                      shape_text(s->arena, ft->c.elem, ft->c.rank, ft->c.shape));
            c->failed = true;
            return -1;
        }
    }
    return first ? 1 : unknown ? -1 : 0;
}

/* An index with no range: say so, and how to give it one. */
static void no_range(StmtCtx *c, const SVar *v)
{
    Sema *s = c->s;
    const Stmt *st = c->st;
    /* h and H are an index and its extent, not a typo of each other */
    Sym *cands = NULL;
    int n = !v->loop && sema_may_suggest(s)
          ? scope_names(s->arena, c->sc, 1u << ENT_CONST | 1u << ENT_SHAPEVAR, &cands) : 0;
    Sym near = suggest_name(v->name, cands, n);
    if (v->loop) {
        sema_error(s, v->loc, "cannot infer the range of index '%s'; declare "
                   "the shape of '%s', e.g. '%s[...] : [...]'",
                   sym_q(v->name), sym_q(st->assign.name),
                   sym_q(st->assign.name));
    } else {
        sema_error(s, v->loc, "cannot infer the range of index '%s'; declare "
                   "it, e.g. 'where %s in 0..3'", sym_q(v->name),
                   sym_q(v->name));
    }
    if (near && strcasecmp(sym_q(near), sym_q(v->name)) != 0)
        sema_note(s, scope_find(c->sc, near)->loc, "did you mean the %s '%s'?",
                  entry_what(s, scope_find(c->sc, near)), sym_q(near));
    Entry *g = c->in_def ? scope_find(s->globals, v->name) : NULL;
    if (g && g->kind == ENT_CONST)
        sema_note(s, g->loc, "a def sees only its parameters and shape "
                  "variables, not the file's constant '%s'", sym_q(v->name));
    c->failed = true;
}

/* The base range [0, hi) of a loop index k: 1 found, 0 none, -1 unknown. */
static int loop_base(StmtCtx *c, int k, const int64_t *decl, bool declared,
                     int64_t *hi)
{
    SVar *v = &c->vars.data[k];
    if (declared) {
        /* The declared dimension wins over the positions' extent (a crop
         * or a zero-padded copy), but positions that disagree with each
         * other are an error all the same. */
        int64_t pos;
        if (position_dim(c, k, &pos) < 0 && c->failed)
            return -1;
        if (!decl)
            return -1;
        *hi = decl[k];
        return 1;
    }
    int r = position_dim(c, k, hi);
    if (r)
        return r;
    if (v->has_whi) {
        *hi = v->whi;
        return 1;
    }
    return 0;
}

static bool set_range(StmtCtx *c, SVar *v, int64_t lo, int64_t hi)
{
    int64_t n;
    if (lo >= hi) {
        sema_error(c->s, v->has_wlo || v->has_whi ? v->wloc : v->loc,
                   "index '%s' has an empty range %lld..%lld", sym_q(v->name),
                   (long long)lo, (long long)hi);
        c->failed = true;
        return false;
    }
    if (!i64_sub(hi, lo, &n)) {
        sema_error(c->s, v->wloc, "the range %lld..%lld of index '%s' is too "
                   "large", (long long)lo, (long long)hi, sym_q(v->name));
        c->failed = true;
        return false;
    }
    v->lo = lo;
    v->hi = hi;
    v->ok = true;
    return true;
}

static bool loop_range(StmtCtx *c, int k, const int64_t *decl, bool declared,
                       int64_t *shape)
{
    SVar *v = &c->vars.data[k];
    int64_t base = 0;
    int r = loop_base(c, k, decl, declared, &base);
    if (r <= 0) {
        if (r == 0)
            no_range(c, v);
        return false;
    }
    shape[k] = base;
    int64_t lo = v->has_wlo && v->wlo > 0 ? v->wlo : 0;
    int64_t hi = v->has_whi && v->whi < base ? v->whi : base;
    return set_range(c, v, lo, hi);
}

static bool sum_range(StmtCtx *c, int k)
{
    SVar *v = &c->vars.data[k];
    if (v->has_whi)
        return set_range(c, v, v->has_wlo ? v->wlo : 0, v->whi);
    int64_t base = 0;
    int r = position_dim(c, k, &base);
    if (r <= 0) {
        if (r == 0)
            no_range(c, v);
        return false;
    }
    return set_range(c, v, v->has_wlo && v->wlo > 0 ? v->wlo : 0, base);
}

bool ranges_infer(StmtCtx *c, const int64_t *decl, int64_t *shape)
{
    bool declared = c->st->assign.nshape >= 0;
    bool ok = true;
    for (int k = 0; k < c->vars.len; k++) {
        if (c->vars.data[k].unknown) {
            ok = false;
            continue;
        }
        if (k < c->nloops)
            ok &= loop_range(c, k, decl, declared, shape);
        else
            ok &= sum_range(c, k);
    }
    return ok;
}

/* ---- intervals ------------------------------------------------------------ */

typedef struct Ival { int64_t lo, hi; } Ival;   /* inclusive */

static bool iv_mul(Ival a, Ival b, Ival *r)
{
    int64_t p[4];
    if (!i64_mul(a.lo, b.lo, &p[0]) || !i64_mul(a.lo, b.hi, &p[1]) ||
        !i64_mul(a.hi, b.lo, &p[2]) || !i64_mul(a.hi, b.hi, &p[3]))
        return false;
    r->lo = r->hi = p[0];
    for (int i = 1; i < 4; i++) {
        r->lo = p[i] < r->lo ? p[i] : r->lo;
        r->hi = p[i] > r->hi ? p[i] : r->hi;
    }
    return true;
}

static bool iv_div(Ival a, int64_t d, Ival *r)
{
    if (d == -1 && a.lo == INT64_MIN)
        return false;
    int64_t x = i64_floordiv(a.lo, d), y = i64_floordiv(a.hi, d);
    r->lo = x < y ? x : y;
    r->hi = x < y ? y : x;
    return true;
}

/* The values an integer expression takes; false (reported) on overflow. */
static bool interval(StmtCtx *c, const CExpr *e, Ival *r)
{
    Ival a, b;
    bool ok = true;
    switch (e->kind) {
    case CE_INT:
        r->lo = r->hi = e->ival;
        return true;
    case CE_VAR:
        r->lo = c->vars.data[e->var].lo;
        r->hi = c->vars.data[e->var].hi - 1;
        return true;
    case CE_NEG:
        if (!interval(c, e->operand, &a))
            return false;
        ok = a.lo != INT64_MIN;
        r->lo = ok ? -a.hi : 0;
        r->hi = ok ? -a.lo : 0;
        break;
    case CE_BIN:
        if (!interval(c, e->bin.lhs, &a) || !interval(c, e->bin.rhs, &b))
            return false;
        switch (e->bin.op) {
        case OP_ADD:
            ok = i64_add(a.lo, b.lo, &r->lo) && i64_add(a.hi, b.hi, &r->hi);
            break;
        case OP_SUB:
            ok = i64_sub(a.lo, b.hi, &r->lo) && i64_sub(a.hi, b.lo, &r->hi);
            break;
        case OP_MUL:
            ok = iv_mul(a, b, r);
            break;
        case OP_DIV:
            ok = iv_div(a, b.lo, r);
            break;
        case OP_MOD:
            r->lo = b.lo > 0 ? 0 : b.lo + 1;
            r->hi = b.lo > 0 ? b.lo - 1 : 0;
            break;
        default:
            ICE("interval: operator %s", binop_str(e->bin.op));
        }
        break;
    case CE_ACCESS: {
        /* a gather: its own subscripts, then any value of the tensor's
         * type, or 0 outside the tensor */
        for (int i = 0; i < e->access.nidx; i++)
            if (!interval(c, e->access.idx[i], &a))
                return false;
        const STensor *t = tensor_at(c->s, e->access.tensor);
        elem_int_range(t ? t->c.elem : ELEM_I64, &r->lo, &r->hi);
        r->lo = r->lo > 0 ? 0 : r->lo;
        r->hi = r->hi < 0 ? 0 : r->hi;
        return true;
    }
    default:
        ICE("interval: kind %d", (int)e->kind);
    }
    if (!ok) {
        sema_error(c->s, e->loc, "index expression overflows 64-bit integers "
                   "for some values of its indices");
        c->failed = true;
    }
    return ok;
}

bool expr_interval(StmtCtx *c, const CExpr *e, int64_t *lo, int64_t *hi)
{
    Ival iv;
    if (!interval(c, e, &iv))
        return false;
    *lo = iv.lo;
    *hi = iv.hi;
    return true;
}

bool intervals_check(StmtCtx *c, const CExpr *e)
{
    Ival iv;
    if (e->is_int)
        return interval(c, e, &iv);
    bool ok = true;
    switch (e->kind) {
    case CE_ACCESS:
        for (int i = 0; i < e->access.nidx; i++)
            ok &= interval(c, e->access.idx[i], &iv);
        return ok;
    case CE_CALL:
        for (int i = 0; i < e->call.nargs; i++)
            ok &= intervals_check(c, e->call.args[i]);
        return ok;
    case CE_NEG:
    case CE_NOT:
        return intervals_check(c, e->operand);
    case CE_BIN:
        /* both checked, left first: its errors come first */
        ok = intervals_check(c, e->bin.lhs);
        return intervals_check(c, e->bin.rhs) && ok;
    default:
        return true;
    }
}
