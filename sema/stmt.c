/* stmt.c - one tensor statement  NAME[idx] (: shape)? OP body (where ..)?
 * from its left-hand indices to a CStmt: names, the body, where, ranges,
 * the `=` rule, the output shape, overflow checks and warnings. */
#include "config.h"
#include "sema_int.h"

/* The left-hand indices: distinct, and no name of the scope. */
static void lhs_indices(StmtCtx *c)
{
    const Stmt *st = c->st;
    for (int i = 0; i < st->assign.nidx; i++) {
        Sym name = st->assign.idx[i];
        Loc loc = st->assign.idx_locs[i];
        int old = stmt_var(c, name, loc, false);
        if (old >= 0) {
            sema_error(c->s, loc, "index '%s' appears twice on the left of "
                       "'%s'", sym_q(name), sym_q(st->assign.name));
            sema_note(c->s, c->vars.data[old].loc, "first occurrence of '%s'",
                      sym_q(name));
            c->failed = true;
            /* keep positions aligned with the output's dimensions */
            name = sym_intern_cstr(arena_printf(c->s->arena, " dup%d", i));
        }
        Entry *en = scope_find(c->sc, name);
        if (en) {
            sema_error(c->s, loc, "index '%s' reuses the name of %s '%s'",
                       sym_q(name), entry_what(c->s, en), sym_q(name));
            sema_note(c->s, en->loc, "'%s' is defined here", sym_q(name));
            c->failed = true;
        }
        int v = stmt_var(c, name, loc, true);
        c->vars.data[v].loop = true;
    }
    c->nloops = c->vars.len;
}

/* The declared shape, NULL if none or unknown. */
static int64_t *declared_shape(StmtCtx *c, ElemType elem)
{
    const Stmt *st = c->st;
    if (st->assign.nshape < 0)
        return NULL;
    int64_t *shape = shape_eval(c->s, c->sc, st->assign.shape,
                                st->assign.nshape, elem,
                                sym_q(st->assign.name), st->assign.shape_loc);
    if (st->assign.nshape != st->assign.nidx) {
        sema_error(c->s, st->assign.shape_loc, "'%s' has %d subscript%s on "
                   "the left, but its declared shape has %d dimension%s",
                   sym_q(st->assign.name), st->assign.nidx,
                   st->assign.nidx == 1 ? "" : "s", st->assign.nshape,
                   st->assign.nshape == 1 ? "" : "s");
        c->failed = true;
        return NULL;
    }
    return shape;
}

/* Sum indices that no subscript and no where range mention are more
 * likely misspelt names than indices. */
static void stray_names(StmtCtx *c)
{
    Sema *s = c->s;
    for (int k = c->nloops; k < c->vars.len; k++) {
        SVar *v = &c->vars.data[k];
        if (v->in_subscript || v->in_where || v->has_wlo || v->has_whi ||
            v->unknown)
            continue;
        Sym *cands = NULL;
        int n = sema_may_suggest(s) ? scope_names(s->arena, c->sc, ~0u, &cands) : 0;
        const char *dym = did_you_mean(s, v->name, cands, n);
        Entry *g = c->in_def ? scope_find(s->globals, v->name) : NULL;
        /* a capitalised name looks like a constant, not an index */
        bool constlike = sym_q(v->name)[0] >= 'A' && sym_q(v->name)[0] <= 'Z';
        if (*dym || g || constlike)
            sema_error(s, v->loc, "unknown name '%s'%s", sym_q(v->name), dym);
        else    /* what ein(5) promises for an index with no range */
            sema_error(s, v->loc, "unknown name '%s'; an index that is in no "
                       "subscript needs a range, e.g. 'where %s in 0..3'",
                       sym_q(v->name), sym_q(v->name));
        if (g && (g->kind == ENT_CONST || g->kind == ENT_TENSOR))
            g->used = true;
        if (g)
            sema_note(s, g->loc, "a def sees only its parameters and shape "
                      "variables, not the file's %s '%s'", entry_what(s, g),
                      sym_q(v->name));
        v->unknown = true;
        c->failed = true;
    }
}

/* `=` is a map: every index must be on the left. */
static void map_indices(StmtCtx *c)
{
    for (int k = c->nloops; k < c->vars.len; k++) {
        SVar *v = &c->vars.data[k];
        if (v->unknown)
            continue;
        sema_error(c->s, v->loc, "index '%s' is not on the left of '='; use "
                   "'+=' to sum over '%s'", sym_q(v->name), sym_q(v->name));
        v->unknown = true;
        c->failed = true;
    }
}

static void mark_expr_reads(StmtCtx *c, const Expr *e)
{
    switch (e->kind) {
    case EX_ACCESS: {
        Entry *en = scope_find(c->sc, e->call.name);
        if (en)
            en->used = true;
    }
        /* fall through */
    case EX_CALL:
        for (int i = 0; i < e->call.nargs; i++)
            mark_expr_reads(c, e->call.args[i]);
        break;
    case EX_NEG:
    case EX_NOT:
        mark_expr_reads(c, e->operand);
        break;
    case EX_BIN:
        mark_expr_reads(c, e->bin.lhs);
        mark_expr_reads(c, e->bin.rhs);
        break;
    default:
        break;
    }
}

static void mark_reads(StmtCtx *c, const Stmt *st)
{
    mark_expr_reads(c, st->assign.body);
    for (int i = 0; i < st->assign.nwhere; i++)
        mark_expr_reads(c, st->assign.where[i]);
}

/* The iteration space must stay countable in 64 bits (with room). */
static bool space_fits(StmtCtx *c)
{
    int64_t n = 1;
    for (int k = 0; k < c->vars.len; k++) {
        const SVar *v = &c->vars.data[k];
        if (!i64_mul(n, v->hi - v->lo, &n) || n > SEMA_MAX_BYTES) {
            sema_error(c->s, c->st->assign.op_loc, "the indices of '%s' span "
                       "more than 2^62 points", sym_q(c->st->assign.name));
            c->failed = true;
            return false;
        }
    }
    return true;
}

static CVar *cvars(StmtCtx *c)
{
    CVar *vs = arena_alloc(c->s->arena, ((size_t)c->vars.len + 1) * sizeof *vs);
    for (int k = 0; k < c->vars.len; k++) {
        const SVar *v = &c->vars.data[k];
        vs[k] = (CVar){sym_str(v->name), v->lo, v->hi, v->loc};
    }
    return vs;
}

/* Whether a checked body has an integer value wherever it is defined: a
 * conversion, a read of an integer tensor, an index or constant, a
 * condition, and + - * select of such. */
static bool integral(const CExpr *e)
{
    switch (e->kind) {
    case CE_INT: case CE_VAR: return true;
    case CE_REAL: return e->rval == (double)(int64_t)e->rval;
    case CE_ACCESS: return e->is_int;       /* marked by body_expr */
    case CE_CALL:
        if (FN_IS_TO(e->call.fn))
            return elem_is_int(FN_TO_ELEM(e->call.fn));
        if (e->call.fn == FN_SELECT)
            return integral(e->call.args[1]) && integral(e->call.args[2]);
        return e->call.fn == FN_FLOOR || e->call.fn == FN_CEIL ||
               e->call.fn == FN_ROUND || e->call.fn == FN_SIGN ||
               ((e->call.fn == FN_MAX || e->call.fn == FN_MIN || e->call.fn == FN_ABS ||
                 e->call.fn == FN_RELU) &&
                integral(e->call.args[0]) &&
                (e->call.nargs < 2 || integral(e->call.args[1])));
    case CE_NEG: return integral(e->operand);
    case CE_NOT: return true;
    case CE_BIN:
        if (e->is_bool)
            return true;
        return e->bin.op != OP_DIV && integral(e->bin.lhs) && integral(e->bin.rhs);
    }
    return false;
}

static void mark_int_reads(Sema *s, CExpr *e, bool on)
{
    switch (e->kind) {
    case CE_ACCESS: {
        const STensor *t = tensor_at(s, e->access.tensor);
        if (t && elem_is_int(t->c.elem))
            e->is_int = on;
        return;
    }
    case CE_CALL:
        for (int i = 0; i < e->call.nargs; i++)
            mark_int_reads(s, e->call.args[i], on);
        return;
    case CE_NEG: case CE_NOT: mark_int_reads(s, e->operand, on); return;
    case CE_BIN:
        mark_int_reads(s, e->bin.lhs, on);
        mark_int_reads(s, e->bin.rhs, on);
        return;
    default:
        return;
    }
}

static bool is_condition(const Expr *e)
{
    return e->kind == EX_NOT ||
           (e->kind == EX_BIN && e->bin.op >= OP_EQ);
}

/* The body; into an integer or bool tensor it must have integer values
 * (a condition is 1 or 0), anything else wants an explicit conversion. */
static CExpr *body_expr(StmtCtx *c, const Expr *e, ElemType elem)
{
    if (!elem_is_int(elem))
        return expr_real(c, e);
    CExpr *b = is_condition(e) ? expr_cond(c, e, false) : expr_real(c, e);
    if (!b)
        return NULL;
    /* reads of integer tensors are integral; is_int on a body read is
     * for `integral` only (lower reads them as values) */
    mark_int_reads(c->s, b, true);
    bool ok = integral(b);
    mark_int_reads(c->s, b, false);
    if (!ok) {
        sema_error(c->s, e->loc, "a real value stored in the %s tensor '%s'; "
                   "convert it explicitly, e.g. '%s(...)' (rounding toward "
                   "zero) or '%s(round(...))'", elem_name(elem),
                   sym_q(c->st->assign.name), elem_name(elem), elem_name(elem));
        c->failed = true;
        return NULL;
    }
    return b;
}

void stmt_check(Sema *s, Scope *sc, const Stmt *st, int out)
{
    StmtCtx c = {.s = s, .sc = sc, .st = st, .in_def = sc != s->globals};
    STensor *t = tensor_at(s, out);
    int errors = s->errors;
    ElemType elem = st->assign.elem >= 0 ? (ElemType)st->assign.elem : ELEM_F32;
    lhs_indices(&c);
    int64_t *decl = declared_shape(&c, elem);
    CExpr *body = body_expr(&c, st->assign.body, elem);
    if (!body)                  /* its positions are lost: no range errors */
        for (int k = 0; k < c.vars.len; k++)
            c.vars.data[k].unknown = true;
    CExpr **guards;
    int nguards;
    where_check(&c, &guards, &nguards);
    stray_names(&c);
    Reduce red = st->assign.red;
    if (red == RED_NONE)
        map_indices(&c);
    else if (c.vars.len == c.nloops)
        red = RED_NONE;             /* nothing to reduce over: a map */

    int64_t *shape = arena_alloc(s->arena, ((size_t)c.nloops + 1) * sizeof *shape);
    bool ok = ranges_infer(&c, decl, shape);
    if (ok && !decl && !shape_fits(c.nloops, shape, elem)) {
        sema_error(s, st->assign.name_loc, "'%s' is too large: %s holds more "
                   "than 2^62 bytes", sym_q(st->assign.name),
                   shape_text(s->arena, elem, c.nloops, shape));
        ok = false;
    }
    ok = ok && body && space_fits(&c) && intervals_check(&c, body);
    for (int i = 0; ok && i < nguards; i++)
        ok = intervals_check(&c, guards[i]);
    ok = ok && !c.failed && s->errors == errors;
    if (s->errors != errors)    /* no -Wunused for what a broken read named */
        mark_reads(&c, st);

    if (!t)
        return;
    t->pending = false;
    t->c.elem = elem;
    t->c.rank = st->assign.nidx;
    if (!ok) {
        t->poisoned = true;
        return;
    }
    t->c.shape = decl ? decl : shape;
    CStmt cs = {out, red, cvars(&c), c.vars.len, c.nloops, guards, nguards,
                body, st->loc};
    warn_sum_invariant(&c, &cs);
    warn_padded(&c, &cs);
    t->nonneg = stmt_signed(s, &cs, 1);
    t->nonpos = stmt_signed(s, &cs, -1);
    if (s->dry)
        return;
    t->c.stmt = s->stmts.len;
    vec_push(s->arena, &s->stmts, cs);
}
