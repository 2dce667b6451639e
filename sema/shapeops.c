/* shapeops.c - the built-in shape operations, called like defs:
 *   y = concat(a, b, ..., dim = D)    a, b, ... joined along dimension D
 *   y = stack(a, b, ..., dim = D)     a new dimension D of one slice each
 *   a, b, ... = split(x, [n1, n2, ...,] dim = D)
 *                                     x cut along D into parts of n1, n2,
 *                                     ... (equal parts when no size is given)
 * Each output becomes an ordinary map statement over the operands:
 * concat and stack a select on the index of D between offset reads,
 * split an offset read.  So derive sees guarded and offset reads it
 * already knows, and a consumer can read the parts in place instead of
 * a copy.  D may be negative, counting from the end as in PyTorch. */
#include "config.h"
#include "sema_int.h"

#include <string.h>

typedef enum { OP_CONCAT, OP_STACK, OP_SPLIT } ShapeOp;

const char *const shapeop_names[SHAPEOP_COUNT] = {"concat", "stack", "split"};

bool shapeop_is(Sym name)
{
    for (int i = 0; i < SHAPEOP_COUNT; i++)
        if (strcmp(sym_str(name), shapeop_names[i]) == 0)
            return true;
    return false;
}

static CExpr *cx_new(Sema *s, CExprKind k, Loc loc, bool is_int)
{
    CExpr *x = arena_alloc(s->arena, sizeof *x);
    x->kind = k;
    x->loc = loc;
    x->is_int = is_int;
    return x;
}

static CExpr *cx_int(Sema *s, Loc loc, int64_t v)
{
    CExpr *x = cx_new(s, CE_INT, loc, true);
    x->ival = v;
    return x;
}

static CExpr *cx_var(Sema *s, Loc loc, int v)
{
    CExpr *x = cx_new(s, CE_VAR, loc, true);
    x->var = v;
    return x;
}

/* var + off (off may be 0) */
static CExpr *cx_offset(Sema *s, Loc loc, int v, int64_t off)
{
    if (off == 0)
        return cx_var(s, loc, v);
    CExpr *x = cx_new(s, CE_BIN, loc, true);
    x->bin.op = OP_ADD;
    x->bin.lhs = cx_var(s, loc, v);
    x->bin.rhs = cx_int(s, loc, off);
    return x;
}

/* var op k */
static CExpr *cx_cmp(Sema *s, Loc loc, BinOp op, int v, int64_t k)
{
    CExpr *x = cx_new(s, CE_BIN, loc, false);
    x->bin.op = op;
    x->bin.lhs = cx_var(s, loc, v);
    x->bin.rhs = cx_int(s, loc, k);
    x->is_bool = true;
    return x;
}

static CExpr *cx_select(Sema *s, Loc loc, CExpr *cond, CExpr *a, CExpr *b)
{
    CExpr *x = cx_new(s, CE_CALL, loc, false);
    x->call.fn = FN_SELECT;
    x->call.nargs = 3;
    x->call.args = arena_alloc(s->arena, 3 * sizeof *x->call.args);
    x->call.args[0] = cond;
    x->call.args[1] = a;
    x->call.args[2] = b;
    return x;
}

/* t[vars...] with dimension `dim` read at vars[vdim] + off; `skip` >= 0
 * drops that loop variable (stack's new dimension). */
static CExpr *cx_read(Sema *s, Loc loc, const STensor *t, int rank, int dim,
                      int vdim, int64_t off, int skip)
{
    CExpr *x = cx_new(s, CE_ACCESS, loc, false);
    x->access.tensor = t->c.id;
    x->access.nidx = t->c.rank;
    x->access.idx = arena_alloc(s->arena, ((size_t)t->c.rank + 1) * sizeof(CExpr *));
    int k = 0;
    for (int v = 0; v < rank; v++) {
        if (v == skip)
            continue;
        x->access.idx[k] = v == vdim ? cx_offset(s, loc, v, off) : cx_var(s, loc, v);
        k++;
    }
    (void)dim;
    return x;
}

/* Define tensor `out` by the map `body` over loop variables of `shape`. */
static void define(Sema *s, const Stmt *st, int out, ElemType elem, int rank,
                   int64_t *shape, CExpr *body)
{
    STensor *t = tensor_at(s, out);
    if (!t)
        return;
    t->pending = false;
    t->c.elem = elem;
    t->c.rank = rank;
    t->c.shape = shape;
    if (s->dry)
        return;
    CVar *vs = arena_alloc(s->arena, ((size_t)rank + 1) * sizeof *vs);
    for (int v = 0; v < rank; v++)
        vs[v] = (CVar){arena_printf(s->arena, "i%d", v), 0, shape[v], st->loc};
    CStmt cs = {out, RED_NONE, vs, rank, rank, NULL, 0, body, st->loc};
    t->c.stmt = s->stmts.len;
    vec_push(s->arena, &s->stmts, cs);
}

static void poison(Sema *s, const Stmt *st, const int *outs)
{
    for (int k = 0; k < st->bind.nouts; k++) {
        STensor *t = tensor_at(s, outs[k]);
        if (t) {
            t->poisoned = true;
            t->pending = false;
        }
    }
}

void shapeop_check(Sema *s, Scope *sc, const Stmt *st, const int *outs)
{
    const char *name = sym_str(st->bind.callee);
    ShapeOp op = strcmp(name, "concat") == 0 ? OP_CONCAT
               : strcmp(name, "stack") == 0 ? OP_STACK : OP_SPLIT;
    int errors = s->errors;
    /* the operands (tensor names), the sizes (split), dim = D */
    VEC(const STensor *) ts = {0};
    VEC(int64_t) sizes = {0};
    VEC(Loc) size_locs = {0};
    const Expr *dim_e = NULL;
    Loc first_loc = st->bind.callee_loc;
    bool bad = false;
    for (int a = 0; a < st->bind.nargs; a++) {
        Sym key = st->bind.arg_keys[a];
        const Expr *e = st->bind.arg_exprs[a];
        Loc loc = st->bind.arg_locs[a];
        if (key) {
            if (strcmp(sym_str(key), "dim") != 0) {
                sema_error(s, loc, "'%s' has no argument '%s' (it takes "
                           "tensors%s and dim = D)", name, sym_q(key),
                           op == OP_SPLIT ? ", sizes" : "");
                bad = true;
            } else if (dim_e) {
                sema_error(s, loc, "'dim' is given twice");
                bad = true;
            } else {
                dim_e = e;
            }
            continue;
        }
        if (dim_e) {
            sema_error(s, loc, "positional argument after 'dim = ...' in the "
                       "call to '%s'", name);
            bad = true;
            continue;
        }
        if (op == OP_SPLIT && ts.len == 1) {
            int64_t v;
            if (!const_eval(s, sc, e, &v)) {
                bad = true;
            } else if (v < 1) {
                sema_error(s, loc, "a part of 'split' must have a size of at "
                           "least 1, not %lld", (long long)v);
                bad = true;
            }
            vec_push(s->arena, &sizes, v);
            vec_push(s->arena, &size_locs, loc);
            continue;
        }
        Entry *en = e->kind == EX_NAME ? scope_find(sc, e->name) : NULL;
        if (e->kind != EX_NAME) {
            sema_error(s, loc, "argument %d of '%s' must be a tensor name", a + 1,
                       name);
            bad = true;
        } else if (!en) {
            unknown_tensor(s, sc, e->name, loc, "");
            bad = true;
        } else if (en->kind != ENT_TENSOR && en->kind != ENT_PARAM) {
            sema_error(s, loc, "%s '%s' is not a tensor", entry_what(s, en),
                       sym_q(e->name));
            sema_note(s, en->loc, "'%s' is defined here", sym_q(e->name));
            bad = true;
        } else {
            en->used = true;
            const STensor *t = tensor_at(s, en->tensor);
            if (!t || t->poisoned || !tensor_shape_known(t))
                bad = true;             /* reported where it went wrong */
            else if (!ts.len)
                first_loc = loc;
            vec_push(s->arena, &ts, t);
        }
    }
    if (!bad && !dim_e) {
        sema_error(s, st->bind.callee_loc, "'%s' needs the dimension: '%s(..., "
                   "dim = 1)'", name, name);
        bad = true;
    }
    if (!bad && op == OP_SPLIT && ts.len != 1) {
        sema_error(s, st->bind.callee_loc, "'split' takes one tensor, then the "
                   "sizes of the parts");
        bad = true;
    }
    if (!bad && op != OP_SPLIT && st->bind.nouts != 1) {
        sema_error(s, st->bind.out_locs[0], "'%s' makes one tensor, but %d are "
                   "bound", name, st->bind.nouts);
        bad = true;
    }
    if (!bad && op != OP_SPLIT && ts.len < 1) {
        sema_error(s, st->bind.callee_loc, "'%s' needs at least one tensor", name);
        bad = true;
    }
    int64_t dim = 0;
    if (!bad && !const_eval(s, sc, dim_e, &dim))
        bad = true;
    if (bad) {
        poison(s, st, outs);
        return;
    }
    const STensor *t0 = ts.data[0];
    int rank = t0->c.rank, orank = op == OP_STACK ? rank + 1 : rank;
    if (dim < -orank || dim >= orank) {
        sema_error(s, dim_e->loc, "dim %lld is out of range for %s of rank %d "
                   "(expected %d..%d)", (long long)dim,
                   op == OP_STACK ? "a result" : "tensors", orank, -orank,
                   orank - 1);
        poison(s, st, outs);
        return;
    }
    int d = (int)(dim < 0 ? dim + orank : dim);
    /* operands agree in element type and in every other dimension */
    for (int k = 1; k < ts.len; k++) {
        const STensor *t = ts.data[k];
        Loc loc = st->bind.arg_locs[k];
        const char *why = NULL;
        if (t->c.elem != t0->c.elem)
            why = arena_printf(s->arena, "its elements are %s, not %s",
                               elem_name(t->c.elem), elem_name(t0->c.elem));
        else if (t->c.rank != rank)
            why = arena_printf(s->arena, "it has rank %d, not %d", t->c.rank, rank);
        else
            for (int j = 0; j < rank && !why; j++)
                if ((op == OP_STACK || j != d) && t->c.shape[j] != t0->c.shape[j])
                    why = arena_printf(s->arena, "its size at dim = %d is %lld, not %lld",
                                       j, (long long)t->c.shape[j],
                                       (long long)t0->c.shape[j]);
        if (why) {
            sema_error(s, loc, "'%s' cannot %s '%s' with '%s': %s", name,
                       op == OP_STACK ? "stack" : "join", t->c.name, t0->c.name, why);
            sema_note(s, first_loc, "'%s' is %s", t0->c.name,
                      shape_text(s->arena, t0->c.elem, rank, t0->c.shape));
            poison(s, st, outs);
            return;
        }
    }
    Loc loc = st->loc;
    if (op == OP_SPLIT) {
        int n = st->bind.nouts;
        int64_t whole = t0->c.shape[d];
        if (!sizes.len) {
            if (whole % n) {
                sema_error(s, st->bind.callee_loc, "'split' cannot cut '%s' at dim = %d "
                           "(size %lld) into %d equal parts; give the sizes: "
                           "'split(%s, n1, n2, ..., dim = %lld)'", t0->c.name, d,
                           (long long)whole, n, t0->c.name, (long long)dim);
                poison(s, st, outs);
                return;
            }
            for (int k = 0; k < n; k++)
                vec_push(s->arena, &sizes, whole / n);
        } else {
            int64_t sum = 0;
            for (int k = 0; k < sizes.len; k++)
                sum += sizes.data[k];
            if (sizes.len != n || sum != whole) {
                sema_error(s, size_locs.data[0], "'split' gives %d size%s adding "
                           "up to %lld for %d output%s, but '%s' at dim = %d has size "
                           "%lld", sizes.len, sizes.len == 1 ? "" : "s",
                           (long long)sum, n, n == 1 ? "" : "s", t0->c.name, d,
                           (long long)whole);
                poison(s, st, outs);
                return;
            }
        }
        int64_t off = 0;
        for (int k = 0; k < n; k++) {
            int64_t *shape = arena_alloc(s->arena, ((size_t)rank + 1) * sizeof *shape);
            memcpy(shape, t0->c.shape, (size_t)rank * sizeof *shape);
            shape[d] = sizes.data[k];
            define(s, st, outs[k], t0->c.elem, rank, shape,
                   cx_read(s, loc, t0, rank, d, d, off, -1));
            off += sizes.data[k];
        }
        return;
    }
    int64_t *shape = arena_alloc(s->arena, ((size_t)orank + 1) * sizeof *shape);
    for (int j = 0, k = 0; j < orank; j++)
        shape[j] = op == OP_STACK && j == d ? ts.len : t0->c.shape[k++];
    if (op == OP_CONCAT) {
        int64_t total = 0;
        for (int k = 0; k < ts.len; k++)
            if (!i64_add(total, ts.data[k]->c.shape[d], &total))
                total = INT64_MAX;
        shape[d] = total;
        if (!shape_fits(orank, shape, t0->c.elem)) {
            sema_error(s, st->bind.callee_loc, "the result of 'concat' holds "
                       "more than 2^62 bytes");
            poison(s, st, outs);
            return;
        }
    } else if (!shape_fits(orank, shape, t0->c.elem)) {
        sema_error(s, st->bind.callee_loc, "the result of 'stack' holds more "
                   "than 2^62 bytes");
        poison(s, st, outs);
        return;
    }
    /* from the last operand back: select(i_d < end_k, part_k, rest) */
    int64_t *start = arena_alloc(s->arena, ((size_t)ts.len + 1) * sizeof *start);
    int64_t o = 0;
    for (int k = 0; k < ts.len; k++) {
        start[k] = o;
        o += op == OP_STACK ? 1 : ts.data[k]->c.shape[d];
    }
    int last = ts.len - 1;
    CExpr *body = op == OP_STACK ? cx_read(s, loc, ts.data[last], orank, d, -1, 0, d)
                                 : cx_read(s, loc, ts.data[last], orank, d, d,
                                           -start[last], -1);
    for (int k = last - 1; k >= 0; k--) {
        CExpr *part = op == OP_STACK ? cx_read(s, loc, ts.data[k], orank, d, -1, 0, d)
                                     : cx_read(s, loc, ts.data[k], orank, d, d,
                                               -start[k], -1);
        body = cx_select(s, loc, cx_cmp(s, loc, OP_LT, d, start[k + 1]), part, body);
    }
    (void)errors;
    define(s, st, outs[0], t0->c.elem, orank, shape, body);
}
