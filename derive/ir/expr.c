/* expr.c - scalar expression nodes.
 *
 * Every constructor hashes its node once (children's hashes are cached,
 * so it is O(node)), folds constant operands, and puts the operands of
 * commutative operators (+, *, &&, ||, ==, !=, max, min) in the order of
 * ir_expr_cmp.  That order is total and consistent with structural
 * equality; its first keys are chosen so that dumps read naturally: a
 * tensor access comes before a call, a product, a sum, an index value and
 * a constant (x[i] * 2, y[n, f] + b[f]: higher rank first, then tensor
 * id, i.e. declaration order).  Comparisons are kept as ==, !=, <, <=
 * (a > b is b < a); integer comparisons become `ix op 0` with op one of
 * ==, !=, >= (ix_icmp_normal). */
#include "config.h"
#include "ir_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CMP3(a, b) (((a) > (b)) - ((a) < (b)))

static IExpr *node(IrCtx *cx, IExprKind k)
{
    IExpr *e = arena_alloc(cx->arena, sizeof *e);
    e->kind = k;
    return e;
}

/* Whether ix_simplify may change x: a div or mod term (a gather's term
 * is kept as it is). */
static bool ix_folds(const Ix *x)
{
    for (int i = 0; i < x->n; i++)
        if (x->t[i].kind == IX_DIV || x->t[i].kind == IX_MOD)
            return true;
    return false;
}

static uint64_t h0(IExprKind k, int sub)
{
    return ir_hcomb(ir_hcomb(H_EXPR, (uint64_t)k), (uint64_t)sub);
}

bool ir_is_bool_kind(const IExpr *e)
{
    switch (e->kind) {
    case IE_CMP: case IE_ICMP: case IE_AND: case IE_OR: case IE_NOT:
        return true;
    case IE_CONST:
        return e->value == 0 || e->value == 1;
    default:
        return false;
    }
}

/* ---- order and equality --------------------------------------------------- */

static int kind_rank(IExprKind k)
{
    switch (k) {
    case IE_ACCESS: return 0;
    case IE_CALL: return 1;
    case IE_MUL: return 2;
    case IE_DIV: return 3;
    case IE_ADD: return 4;
    case IE_SUB: return 5;
    case IE_NEG: return 6;
    case IE_INDEX: return 7;
    case IE_CMP: return 8;
    case IE_ICMP: return 9;
    case IE_NOT: return 10;
    case IE_AND: return 11;
    case IE_OR: return 12;
    case IE_CONST: return 13;
    }
    return 14;
}

static int tensor_cmp(const IrTensor *a, const IrTensor *b)
{
    if (a == b)
        return 0;
    if (a->id != b->id)
        return CMP3(a->id, b->id);
    return CMP3((uintptr_t)a, (uintptr_t)b);
}

/* The structural part of the order, reached on equal hashes. */
static int struct_cmp(const IExpr *a, const IExpr *b)
{
    if (a == b)
        return 0;
    if (a->kind != b->kind)
        return CMP3(a->kind, b->kind);
    int c;
    switch (a->kind) {
    case IE_CONST:
        return CMP3(ir_hash_double(a->value), ir_hash_double(b->value));
    case IE_INDEX:
        return ix_cmp(a->ix, b->ix);
    case IE_ACCESS:
        if ((a->access.stage != NULL) != (b->access.stage != NULL))
            return a->access.stage ? 1 : -1;
        c = a->access.stage ? ir_stage_cmp(a->access.stage, b->access.stage)
                            : tensor_cmp(a->access.tensor, b->access.tensor);
        if (c)
            return c;
        if (a->access.nidx != b->access.nidx)
            return CMP3(a->access.nidx, b->access.nidx);
        for (int i = 0; i < a->access.nidx; i++)
            if ((c = ix_cmp(a->access.idx[i], b->access.idx[i])))
                return c;
        return 0;
    case IE_CALL:
        if (a->call.fn != b->call.fn)
            return CMP3(a->call.fn, b->call.fn);
        if (a->call.nargs != b->call.nargs)
            return CMP3(a->call.nargs, b->call.nargs);
        for (int i = 0; i < a->call.nargs; i++)
            if ((c = ir_expr_cmp(a->call.args[i], b->call.args[i])))
                return c;
        return 0;
    case IE_ICMP:
        if (a->icmp.op != b->icmp.op)
            return CMP3(a->icmp.op, b->icmp.op);
        return ix_cmp(a->icmp.ix, b->icmp.ix);
    case IE_NEG: case IE_NOT:
        return ir_expr_cmp(a->bin.a, b->bin.a);
    default:                        /* binary kinds and IE_CMP */
        if (a->bin.op != b->bin.op)
            return CMP3(a->bin.op, b->bin.op);
        if ((c = ir_expr_cmp(a->bin.a, b->bin.a)))
            return c;
        return ir_expr_cmp(a->bin.b, b->bin.b);
    }
}

/* The smallest variable id in x (INT32_MAX for none). */
static int first_var(const Ix *x)
{
    int m = INT32_MAX;
    for (int i = 0; i < x->n; i++) {
        int v = x->t[i].kind == IX_VAR ? x->t[i].var : first_var(x->t[i].arg);
        m = v < m ? v : m;
    }
    return m;
}

int ir_expr_cmp(const IExpr *a, const IExpr *b)
{
    if (a == b)
        return 0;
    int ra = kind_rank(a->kind), rb = kind_rank(b->kind);
    if (ra != rb)
        return CMP3(ra, rb);
    if (a->kind == IE_ACCESS) {
        const IrTensor *ta = a->access.tensor, *tb = b->access.tensor;
        if ((ta != NULL) != (tb != NULL))
            return ta ? -1 : 1;
        if (ta) {
            if (ta->rank != tb->rank)
                return CMP3(tb->rank, ta->rank);
            if (ta->id != tb->id)
                return ir_operand_order * CMP3(ta->id, tb->id);
        }
    }
    if (a->kind == IE_ICMP) {
        /* Guards in the order of their first variable: h before w. */
        int fa = first_var(a->icmp.ix), fb = first_var(b->icmp.ix);
        if (fa != fb)
            return CMP3(fa, fb);
    }
    if (a->hash != b->hash)
        return CMP3(a->hash, b->hash);
    return struct_cmp(a, b);
}

int ir_expr_compare(const IExpr *a, const IExpr *b)
{
    return ir_expr_cmp(a, b);
}

bool ir_expr_equal(const IExpr *a, const IExpr *b)
{
    return a == b || (a->hash == b->hash && struct_cmp(a, b) == 0);
}

/* ---- leaves ------------------------------------------------------------- */

const IExpr *ir_const(IrCtx *cx, double v)
{
    IExpr *e = node(cx, IE_CONST);
    e->value = v;
    e->hash = ir_hcomb(h0(IE_CONST, 0), ir_hash_double(v));
    return e;
}

const IExpr *ir_index(IrCtx *cx, const Ix *ix)
{
    int64_t c;
    if (ix_is_const(ix, &c))
        return ir_const(cx, (double)c);
    IExpr *e = node(cx, IE_INDEX);
    e->ix = ix;
    e->folds = ix_folds(ix);
    e->hash = ir_hcomb(h0(IE_INDEX, 0), ix->hash);
    return e;
}

static const IExpr *access(IrCtx *cx, const IrTensor *t, const Stage *s,
                           const Ix **idx, int n)
{
    IExpr *e = node(cx, IE_ACCESS);
    e->access.tensor = t;
    e->access.stage = s;
    e->access.nidx = n;
    e->access.idx = n ? arena_dup(cx->arena, idx, (size_t)n * sizeof *idx) : NULL;
    uint64_t h = ir_hcomb(h0(IE_ACCESS, t ? 1 : 2),
                          t ? ir_hcomb(H_TENSOR, (uint64_t)t->id) : s->hash);
    for (int i = 0; i < n; i++) {
        h = ir_hcomb(h, idx[i]->hash);
        e->folds |= ix_folds(idx[i]);
    }
    e->hash = h;
    return e;
}

const IExpr *ir_access_tensor(IrCtx *cx, const IrTensor *t, const Ix **idx, int n)
{
    if (n != t->rank)
        ICE("access to '%s' with %d subscripts, rank %d", t->name, n, t->rank);
    return access(cx, t, NULL, idx, n);
}

const IExpr *ir_access_stage(IrCtx *cx, const Stage *s, const Ix **idx, int n)
{
    if (n != s->nloops)
        ICE("access to a stage with %d subscripts, %d loops", n, s->nloops);
    return access(cx, NULL, s, idx, n);
}

/* ---- operators ---------------------------------------------------------- */

static const IExpr *make_bin(IrCtx *cx, IExprKind k, BinOp op, const IExpr *a,
                             const IExpr *b)
{
    IExpr *e = node(cx, k);
    e->bin.op = op;
    e->bin.a = a;
    e->bin.b = b;
    e->folds = a->folds || (b && b->folds);
    e->hash = ir_hcomb(ir_hcomb(h0(k, (int)op), a->hash), b ? b->hash : 0);
    return e;
}

const IExpr *ir_binary(IrCtx *cx, IExprKind k, const IExpr *a, const IExpr *b)
{
    bool ca = a->kind == IE_CONST, cb = b->kind == IE_CONST;
    switch (k) {
    case IE_ADD: case IE_SUB: case IE_MUL: case IE_DIV:
        if (ca && cb) {
            double x = a->value, y = b->value;
            return ir_const(cx, k == IE_ADD ? x + y : k == IE_SUB ? x - y
                                : k == IE_MUL ? x * y : x / y);
        }
        break;
    case IE_AND: case IE_OR: {
        bool and = k == IE_AND;
        if (ca && cb)
            return ir_const(cx, and ? (a->value != 0 && b->value != 0)
                                    : (a->value != 0 || b->value != 0));
        if (cb) {
            const IExpr *t = a;
            a = b;
            b = t;
            ca = true;
        }
        if (ca) {
            /* false && x = false, true || x = true; true && x = x and
             * false || x = x only when x is already 0 or 1. */
            if ((a->value != 0) != and)
                return ir_const(cx, and ? 0 : 1);
            if (ir_is_bool_kind(b))
                return b;
        }
        break;
    }
    default:
        ICE("ir_binary: kind %d is not binary", (int)k);
    }
    if ((k == IE_ADD || k == IE_MUL || k == IE_AND || k == IE_OR)
        && ir_expr_cmp(a, b) > 0) {
        const IExpr *t = a;
        a = b;
        b = t;
    }
    return make_bin(cx, k, (BinOp)0, a, b);
}

const IExpr *ir_cmp(IrCtx *cx, BinOp op, const IExpr *a, const IExpr *b)
{
    if (op == OP_GT || op == OP_GE) {
        const IExpr *t = a;
        a = b;
        b = t;
        op = op == OP_GT ? OP_LT : OP_LE;
    }
    if (a->kind == IE_CONST && b->kind == IE_CONST) {
        double x = a->value, y = b->value;
        bool r;
        switch (op) {
        case OP_EQ: r = x == y; break;
        case OP_NE: r = x != y; break;
        case OP_LT: r = x < y; break;
        case OP_LE: r = x <= y; break;
        default: ICE("ir_cmp: operator %d", (int)op);
        }
        return ir_const(cx, r);
    }
    if (op != OP_EQ && op != OP_NE && op != OP_LT && op != OP_LE)
        ICE("ir_cmp: operator %d", (int)op);
    if ((op == OP_EQ || op == OP_NE) && ir_expr_cmp(a, b) > 0) {
        const IExpr *t = a;
        a = b;
        b = t;
    }
    return make_bin(cx, IE_CMP, op, a, b);
}

/* ix op 0 with op already EQ, NE or GE. */
static const IExpr *icmp0(IrCtx *cx, BinOp op, const Ix *ix)
{
    bool truth;
    ix = ix_icmp_normal(cx, op, ix, &truth);
    if (!ix)
        return ir_const(cx, truth);
    IExpr *e = node(cx, IE_ICMP);
    e->icmp.op = op;
    e->icmp.ix = ix;
    e->folds = true;
    e->hash = ir_hcomb(h0(IE_ICMP, (int)op), ix->hash);
    return e;
}

const IExpr *ir_icmp(IrCtx *cx, BinOp op, const Ix *l, const Ix *r)
{
    switch (op) {
    case OP_EQ: case OP_NE: case OP_GE:
        return icmp0(cx, op, ix_sub(cx, l, r));
    case OP_GT:                     /* l > r: l - r - 1 >= 0 */
        return icmp0(cx, OP_GE, ix_add(cx, ix_sub(cx, l, r), ix_const(cx, -1)));
    case OP_LE:                     /* r - l >= 0 */
        return icmp0(cx, OP_GE, ix_sub(cx, r, l));
    case OP_LT:                     /* r - l - 1 >= 0 */
        return icmp0(cx, OP_GE, ix_add(cx, ix_sub(cx, r, l), ix_const(cx, -1)));
    default:
        ICE("ir_icmp: operator %d", (int)op);
    }
}

const IExpr *ir_unary(IrCtx *cx, IExprKind k, const IExpr *a)
{
    if (k == IE_NEG) {
        if (a->kind == IE_CONST)
            return ir_const(cx, -a->value);
        if (a->kind == IE_NEG)
            return a->bin.a;
    } else if (k == IE_NOT) {
        if (a->kind == IE_CONST)
            return ir_const(cx, a->value == 0);
        if (a->kind == IE_NOT && ir_is_bool_kind(a->bin.a))
            return a->bin.a;
        if (a->kind == IE_ICMP) {
            if (a->icmp.op == OP_EQ)
                return icmp0(cx, OP_NE, a->icmp.ix);
            if (a->icmp.op == OP_NE)
                return icmp0(cx, OP_EQ, a->icmp.ix);
            /* !(ix >= 0) is -ix - 1 >= 0 */
            return icmp0(cx, OP_GE, ix_add(cx, ix_scale(cx, a->icmp.ix, -1),
                                           ix_const(cx, -1)));
        }
    } else {
        ICE("ir_unary: kind %d is not unary", (int)k);
    }
    return make_bin(cx, k, (BinOp)0, a, NULL);
}

const IExpr *ir_call(IrCtx *cx, Func fn, const IExpr **args, int n)
{
    if (n != ir_func_arity(fn))
        ICE("ir_call: %s with %d arguments", ir_func_name(fn), n);
    const IExpr *tmp[2];
    if (fn == FN_SELECT) {
        if (args[0]->kind == IE_CONST)
            return args[0]->value != 0 ? args[1] : args[2];
        if (ir_expr_equal(args[1], args[2]))
            return args[1];
    } else {
        bool all = true;
        double v[2];
        for (int i = 0; i < n; i++) {
            all &= args[i]->kind == IE_CONST;
            if (all)
                v[i] = args[i]->value;
        }
        if (all)
            return ir_const(cx, ir_func_apply(fn, v));
        if ((fn == FN_MAX || fn == FN_MIN) && ir_expr_cmp(args[0], args[1]) > 0) {
            tmp[0] = args[1];
            tmp[1] = args[0];
            args = tmp;
        }
    }
    IExpr *e = node(cx, IE_CALL);
    e->call.fn = fn;
    e->call.nargs = n;
    e->call.args = arena_dup(cx->arena, args, (size_t)n * sizeof *args);
    uint64_t h = h0(IE_CALL, (int)fn);
    for (int i = 0; i < n; i++) {
        h = ir_hcomb(h, args[i]->hash);
        e->folds |= args[i]->folds;
    }
    e->hash = h;
    return e;
}

/* ---- walking: the parts of each kind ------------------------------------ */

int ir_expr_children(const IExpr *e, const IExpr *kids[IR_MAX_CHILDREN])
{
    switch (e->kind) {
    case IE_CONST: case IE_INDEX: case IE_ACCESS: case IE_ICMP:
        return 0;
    case IE_CALL:
        for (int i = 0; i < e->call.nargs; i++)
            kids[i] = e->call.args[i];
        return e->call.nargs;
    case IE_NEG: case IE_NOT:
        kids[0] = e->bin.a;
        return 1;
    case IE_ADD: case IE_SUB: case IE_MUL: case IE_DIV: case IE_CMP: case IE_AND:
    case IE_OR:
        kids[0] = e->bin.a;
        kids[1] = e->bin.b;
        return 2;
    }
    ICE("ir_expr_children: kind %d", (int)e->kind);
}

int ir_expr_ixs(const IExpr *e, const Ix *const **ixs)
{
    switch (e->kind) {
    case IE_INDEX:
        *ixs = &e->ix;
        return 1;
    case IE_ICMP:
        *ixs = &e->icmp.ix;
        return 1;
    case IE_ACCESS:
        *ixs = e->access.idx;
        return e->access.nidx;
    default:
        *ixs = NULL;
        return 0;
    }
}

const Stage *ir_expr_stage(const IExpr *e)
{
    return e->kind == IE_ACCESS ? e->access.stage : NULL;
}

/* ir_expr_rebuild; with `fresh`, a new node in cx even where every part
 * is e's own (ir_expr_clone). */
static const IExpr *rebuild(IrCtx *cx, const IExpr *e, const IExpr *const *kids,
                            const Ix *const *ixs, const Stage *stage, bool fresh)
{
    const IExpr *old[IR_MAX_CHILDREN];
    const Ix *const *oldx;
    int nk = ir_expr_children(e, old), nx = ir_expr_ixs(e, &oldx);
    bool same = !stage || stage == ir_expr_stage(e);
    for (int i = 0; kids && i < nk; i++)
        same &= kids[i] == old[i];
    for (int i = 0; ixs && i < nx; i++)
        same &= ixs[i] == oldx[i];
    if (same && !fresh)
        return e;
    if (!kids)
        kids = old;
    if (!ixs)
        ixs = oldx;
    switch (e->kind) {
    case IE_CONST:
        return fresh ? ir_const(cx, e->value) : e;
    case IE_INDEX:
        return ir_index(cx, ixs[0]);
    case IE_ICMP:
        return icmp0(cx, e->icmp.op, ixs[0]);
    case IE_ACCESS: {
        /* the constructors only copy the arrays they are given */
        const Ix **idx = (const Ix **)ixs;
        if (e->access.tensor)
            return ir_access_tensor(cx, e->access.tensor, idx, nx);
        return ir_access_stage(cx, stage ? stage : e->access.stage, idx, nx);
    }
    case IE_CALL:
        return ir_call(cx, e->call.fn, (const IExpr **)kids, nk);
    case IE_NEG: case IE_NOT:
        return ir_unary(cx, e->kind, kids[0]);
    case IE_CMP:
        return ir_cmp(cx, e->bin.op, kids[0], kids[1]);
    case IE_ADD: case IE_SUB: case IE_MUL: case IE_DIV: case IE_AND: case IE_OR:
        return ir_binary(cx, e->kind, kids[0], kids[1]);
    }
    ICE("ir_expr_rebuild: kind %d", (int)e->kind);
}

const IExpr *ir_expr_rebuild(IrCtx *cx, const IExpr *e, const IExpr *const *kids,
                             const Ix *const *ixs, const Stage *stage)
{
    return rebuild(cx, e, kids, ixs, stage, false);
}

const IExpr *ir_expr_clone(IrCtx *cx, const IExpr *e, const IExpr *const *kids,
                           const Ix *const *ixs, const Stage *stage)
{
    return rebuild(cx, e, kids, ixs, stage, true);
}

const IExpr *ir_expr_map_children(IrCtx *cx, const IExpr *e, IrExprMap fn, IrIxMap ix_fn,
                                  void *arg)
{
    const IExpr *kids[IR_MAX_CHILDREN];
    const Ix *const *ixs = NULL;
    int nk = ir_expr_children(e, kids), nx = ix_fn ? ir_expr_ixs(e, &ixs) : 0;
    bool same = true;               /* the common case: no rebuild at all */
    for (int i = 0; i < nk; i++) {
        const IExpr *k = fn(arg, kids[i]);
        same &= k == kids[i];
        kids[i] = k;
    }
    const Ix *small[16], **nix = nx <= 16 ? small : xmalloc((size_t)nx * sizeof *nix);
    for (int i = 0; i < nx; i++) {
        nix[i] = ix_fn(arg, ixs[i]);
        same &= nix[i] == ixs[i];
    }
    const IExpr *r = same ? e : ir_expr_rebuild(cx, e, kids, nx ? nix : NULL, NULL);
    if (nix != small)
        free(nix);
    return r;
}

typedef struct Fold {
    IrCtx *cx;
    const int64_t *lo, *hi;
} Fold;

static const Ix *fold_ix(void *arg, const Ix *x)
{
    const Fold *f = arg;
    return ix_simplify(f->cx, x, f->lo, f->hi);
}

static const IExpr *fold_expr(void *arg, const IExpr *e)
{
    const Fold *f = arg;
    if (!e->folds)
        return e;                   /* nothing below it to fold */
    if (e->kind != IE_ICMP)
        return ir_expr_map_children(f->cx, e, fold_expr, fold_ix, arg);
    const Ix *x = fold_ix(arg, e->icmp.ix);
    int64_t mn, mx;
    ix_bounds(x, f->lo, f->hi, &mn, &mx);
    bool yes = e->icmp.op == OP_GE ? mn >= 0
             : e->icmp.op == OP_EQ ? mn == 0 && mx == 0 : mn > 0 || mx < 0;
    if (yes)
        return ir_const(f->cx, 1);
    return x == e->icmp.ix ? e : ir_icmp(f->cx, e->icmp.op, x, ix_const(f->cx, 0));
}

const IExpr *ir_expr_fold(IrCtx *cx, const IExpr *e, const int64_t *range_lo,
                          const int64_t *range_hi)
{
    Fold f = {cx, range_lo, range_hi};
    return fold_expr(&f, e);
}

static void visit_gathers(const Ix *x, IrExprVisit fn, void *arg)
{
    for (int i = 0; i < x->n; i++) {
        const IxTerm *t = &x->t[i];
        if (t->kind == IX_READ)
            ir_expr_visit(t->read, fn, arg);
        else if (t->kind != IX_VAR)
            visit_gathers(t->arg, fn, arg);
    }
}

void ir_expr_visit(const IExpr *e, IrExprVisit fn, void *arg)
{
    if (!fn(arg, e))
        return;
    const Ix *const *ixs;
    int nx = ir_expr_ixs(e, &ixs);
    for (int k = 0; k < nx; k++)
        visit_gathers(ixs[k], fn, arg);
    const IExpr *kids[IR_MAX_CHILDREN];
    int n = ir_expr_children(e, kids);
    for (int i = 0; i < n; i++)
        ir_expr_visit(kids[i], fn, arg);
}

typedef struct Finds {
    const IrTensor *t;
    bool found, deep;               /* deep: into nested stages too */
} Finds;

static bool find_visit(void *arg, const IExpr *e)
{
    Finds *f = arg;
    const Stage *s = f->deep ? ir_expr_stage(e) : NULL;
    if (e->kind == IE_ACCESS && e->access.tensor == f->t)
        f->found = true;
    for (int i = 0; s && !f->found && i <= s->nguards; i++)
        ir_expr_visit(i < s->nguards ? s->guards[i] : s->body, find_visit, f);
    return !f->found;
}

bool ir_expr_reads(const IExpr *e, const IrTensor *t)
{
    Finds f = {t, false, false};
    ir_expr_visit(e, find_visit, &f);
    return f.found;
}

bool ir_expr_reads_deep(const IExpr *e, const IrTensor *t)
{
    Finds f = {t, false, true};
    ir_expr_visit(e, find_visit, &f);
    return f.found;
}

typedef struct AccessMap {
    IrCtx *cx;
    IrAccessMap fn;
    void *arg;
} AccessMap;

static const IExpr *map_access(void *arg, const IExpr *e)
{
    AccessMap *m = arg;
    if (e->kind == IE_ACCESS)
        return m->fn(m->arg, e);
    return ir_expr_map_children(m->cx, e, map_access, NULL, m);
}

const IExpr *ir_map_access(IrCtx *cx, const IExpr *e, IrAccessMap fn, void *arg)
{
    AccessMap m = {cx, fn, arg};
    return map_access(&m, e);
}

int ir_loop_pos(const Stage *s, int var)
{
    for (int i = 0; i < s->nloops; i++)
        if (s->loops[i].id == var)
            return i;
    return -1;
}

int ir_sum_pos(const Stage *s, int var)
{
    for (int i = 0; i < s->nsums; i++)
        if (s->sums[i].id == var)
            return i;
    return -1;
}

/* ---- substitution and uses ------------------------------------------------ */

const IExpr *ir_subst(IrCtx *cx, const IExpr *e, int var, const Ix *by)
{
    const IExpr *kids[IR_MAX_CHILDREN];
    const Ix *const *ixs;
    int nk = ir_expr_children(e, kids), nx = ir_expr_ixs(e, &ixs);
    bool same = true;
    for (int i = 0; i < nk; i++) {
        const IExpr *k = ir_subst(cx, kids[i], var, by);
        same &= k == kids[i];
        kids[i] = k;
    }
    const Ix *small[8], **nix = nx <= 8 ? small : xmalloc((size_t)nx * sizeof *nix);
    for (int i = 0; i < nx; i++) {
        nix[i] = ix_subst(cx, ixs[i], var, by);
        same &= nix[i] == ixs[i];
    }
    const Stage *s0 = ir_expr_stage(e), *s = s0 ? ir_stage_subst(cx, s0, var, by) : NULL;
    same &= s == s0;
    const IExpr *r = same ? e : ir_expr_rebuild(cx, e, kids, nix, s);
    if (nix != small)
        free(nix);
    return r;
}

bool ir_stage_uses(const Stage *s, int var)
{
    for (int i = 0; i < s->nguards; i++)
        if (ir_expr_uses(s->guards[i], var))
            return true;
    return ir_expr_uses(s->body, var);
}

bool ir_expr_uses(const IExpr *e, int var)
{
    const Ix *const *ixs;
    int nx = ir_expr_ixs(e, &ixs);
    for (int i = 0; i < nx; i++)
        if (ix_uses(ixs[i], var))
            return true;
    const Stage *s = ir_expr_stage(e);
    if (s && ir_stage_uses(s, var))
        return true;
    const IExpr *kids[IR_MAX_CHILDREN];
    int nk = ir_expr_children(e, kids);
    for (int i = 0; i < nk; i++)
        if (ir_expr_uses(kids[i], var))
            return true;
    return false;
}

size_t ir_tensor_numel(const IrTensor *t)
{
    size_t n = 1;
    for (int d = 0; d < t->rank; d++)
        n *= (size_t)t->shape[d];
    return n;
}

/* Sets *found at a node whose own index expressions hold a gather, or
 * that reads a nested stage holding one; the visitor does the rest. */
static bool gather_visit(void *arg, const IExpr *e)
{
    bool *found = arg;
    const Ix *const *ixs;
    int nx = ir_expr_ixs(e, &ixs);
    for (int k = 0; k < nx && !*found; k++)
        *found = ix_has_read(ixs[k]);
    if (!*found && ir_expr_stage(e))
        *found = ir_stage_has_gather(ir_expr_stage(e));
    return !*found;
}

static bool expr_has_gather(const IExpr *e)
{
    bool found = false;
    ir_expr_visit(e, gather_visit, &found);
    return found;
}

bool ir_stage_has_gather(const Stage *s)
{
    for (int i = 0; i < s->nguards; i++)
        if (expr_has_gather(s->guards[i]))
            return true;
    return expr_has_gather(s->body);
}
