/* lower.c - the checked program (sema.h) into the tensor-expression IR.
 *
 * Each statement becomes one stage: its left-hand indices are the loop
 * variables (ranges from sema, clipped to the tensor's shape), the indices
 * only on the right are the sum variables, the where-guards become
 * boolean expressions in which every integer comparison is canonical
 * (`ix op 0`, op one of ==, !=, >=), and the body becomes a scalar
 * expression whose subscripts are canonical index expressions.  Integer-
 * typed subexpressions of the body are index expressions used as values
 * (IE_INDEX); `/` there is floor division, as sema typed it.
 *
 * The program's tensors are renumbered so that inputs and weights come
 * first (in sema's order), then the defined tensors in statement order,
 * which sema made dependency order.  A defined tensor is weight-only when
 * everything it reads is a weight or weight-only (a tensor that reads no
 * tensor at all is weight-only too: it can be computed at load time).
 *
 * Sema has checked the program; what can still fail here is what sema
 * does not promise: an index expression that is not affine (i * j), a
 * division of indices by something that is not a non-zero constant, or
 * coefficients that overflow 64 bits. */
#include "config.h"
#include "ir_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct Lower {
    IrCtx *cx;
    const CProgram *cp;
    IrTensor **tmap;                /* CTensor id -> IrTensor */
    const IrVar *vars;              /* this statement's variables, by CVar index */
    int nvars;
    bool failed;
} Lower;

static const Ix *lower_ix(Lower *L, const CExpr *e);
static const IExpr *access(Lower *L, const CExpr *e);
static const IExpr *lower_real(Lower *L, const CExpr *e);
static const IExpr *lower_bool(Lower *L, const CExpr *e);

static const Ix *fail_ix(Lower *L, const CExpr *e, const char *msg)
{
    diag_error(e->loc, "%s", msg);
    L->failed = true;
    return ix_const(L->cx, 0);
}

static const Ix *lower_ix_rec(Lower *L, const CExpr *e)
{
    IrCtx *cx = L->cx;
    switch (e->kind) {
    case CE_INT:
        return ix_const(cx, e->ival);
    case CE_VAR:
        return ix_var(cx, L->vars[e->var].id);
    case CE_NEG:
        return ix_scale(cx, lower_ix_rec(L, e->operand), -1);
    case CE_ACCESS: {
        /* a gather: the element of an integer tensor, 0 outside it */
        const IExpr *r = access(L, e);
        if (r->kind != IE_ACCESS || !elem_is_int(r->access.tensor->elem))
            return fail_ix(L, e, "a read in an index expression of a tensor "
                                 "that is not an integer tensor");
        return ix_read(cx, r);
    }
    case CE_BIN: {
        const Ix *a = lower_ix_rec(L, e->bin.lhs);
        const Ix *b = lower_ix_rec(L, e->bin.rhs);
        int64_t k;
        switch (e->bin.op) {
        case OP_ADD:
            return ix_add(cx, a, b);
        case OP_SUB:
            return ix_sub(cx, a, b);
        case OP_MUL:
            if (ix_is_const(a, &k))
                return ix_scale(cx, b, k);
            if (ix_is_const(b, &k))
                return ix_scale(cx, a, k);
            return fail_ix(L, e, "index expression is not affine: "
                                 "a product of two index terms");
        case OP_DIV: case OP_MOD:
            if (!ix_is_const(b, &k))
                return fail_ix(L, e, e->bin.op == OP_DIV
                                   ? "index division by a non-constant"
                                   : "index modulo by a non-constant");
            if (k == 0)
                return fail_ix(L, e, e->bin.op == OP_DIV ? "index division by zero"
                                                         : "index modulo by zero");
            return e->bin.op == OP_DIV ? ix_div(cx, a, k) : ix_mod(cx, a, k);
        default:
            break;
        }
        break;
    }
    default:
        break;
    }
    return fail_ix(L, e, "expression is not an integer index expression");
}

/* Does x compute exactly in 64 bits over the statement's ranges (lo, hi
 * by variable id): its value where `whole`, and the operand of each
 * division and modulo in it?  Sema checked the source's values, but the
 * canonical form (ix.c) folds constants into the operands of / and %
 * ((x - 2^31) % 3 is (x + 1) % 3) and compares a - b with 0, which can
 * leave the 64-bit range where the source did not; the interpreter and
 * the generated code compute those in 64 bits.  ix_bounds gives a bound
 * past 64 bits as INT64_MIN or INT64_MAX, read here as overflow; a
 * gather's value has no range and is not checked. */
static bool exact(const Ix *x, bool whole, const int64_t *lo, const int64_t *hi)
{
    if (ix_has_read(x))
        return true;
    int64_t mn, mx;
    if (whole && (ix_bounds(x, lo, hi, &mn, &mx), mn == INT64_MIN || mx == INT64_MAX))
        return false;
    for (int i = 0; i < x->n; i++)
        if ((x->t[i].kind == IX_DIV || x->t[i].kind == IX_MOD) && !exact(x->t[i].arg, true, lo, hi))
            return false;
    return true;
}

/* exact() over this statement's variables; reported at e where not. */
static void check_exact(Lower *L, const CExpr *e, const Ix *x, bool whole)
{
    int nv = ir_var_count(L->cx);
    int64_t *lo = xcalloc((size_t)nv + 1, sizeof *lo);
    int64_t *hi = xcalloc((size_t)nv + 1, sizeof *hi);
    for (int i = 0; i < L->nvars; i++) {
        lo[L->vars[i].id] = L->vars[i].lo;
        hi[L->vars[i].id] = L->vars[i].hi;
    }
    if (!exact(x, whole, lo, hi)) {
        if (whole)
            diag_error(e->loc, "index comparison overflows 64-bit integers once its sides "
                       "are subtracted, for some values of its indices");
        else
            diag_error(e->loc, "index expression overflows 64-bit integers once its "
                       "constants are folded: the operand of a division or modulo leaves "
                       "the 64-bit range for some values of its indices");
        L->failed = true;
        L->cx->inexact++;
    }
    free(lo);
    free(hi);
}

static const Ix *lower_ix(Lower *L, const CExpr *e)
{
    ir_ctx_overflowed(L->cx);
    const Ix *x = lower_ix_rec(L, e);
    if (ir_ctx_overflowed(L->cx)) {
        diag_error(e->loc, "index expression overflows 64-bit integers");
        L->failed = true;
    } else {
        check_exact(L, e, x, false);
    }
    return x;
}

/* `x[idx] ?: v` is select(idx within x's shape, x[idx], v): the guard
 * holds the comparisons that the ranges of the statement's variables do
 * not decide, so that a read that cannot leave x stays a plain read. */
static const IExpr *with_outside(Lower *L, const IrTensor *t, const Ix **idx,
                                 int n, const IExpr *r, double v)
{
    IrCtx *cx = L->cx;
    int nv = ir_var_count(cx);
    int64_t *lo = xcalloc((size_t)nv + 1, sizeof *lo);
    int64_t *hi = xcalloc((size_t)nv + 1, sizeof *hi);
    for (int i = 0; i < L->nvars; i++) {
        lo[L->vars[i].id] = L->vars[i].lo;
        hi[L->vars[i].id] = L->vars[i].hi;
    }
    const IExpr *cond = NULL;
    for (int k = 0; k < n; k++) {
        int64_t mn, mx;
        ix_bounds(idx[k], lo, hi, &mn, &mx);
        if (ix_has_read(idx[k]))
            mn = INT64_MIN, mx = INT64_MAX;     /* ranges were not given for
                                                   a gather's value */
        const IExpr *c[2] = {
            mn < 0 ? ir_icmp(cx, OP_GE, idx[k], ix_const(cx, 0)) : NULL,
            mx >= t->shape[k] ? ir_icmp(cx, OP_LE, idx[k], ix_const(cx, t->shape[k] - 1))
                              : NULL,
        };
        for (int j = 0; j < 2; j++)
            if (c[j])
                cond = cond ? ir_binary(cx, IE_AND, cond, c[j]) : c[j];
    }
    free(lo);
    free(hi);
    if (!cond)
        return r;
    const IExpr *args[3] = {cond, r, ir_const(cx, v)};
    return ir_call(cx, FN_SELECT, args, 3);
}

static const IExpr *access(Lower *L, const CExpr *e)
{
    const IrTensor *t = L->tmap[e->access.tensor];
    int n = e->access.nidx;
    const Ix *small[8], **idx = n <= 8 ? small : xmalloc((size_t)n * sizeof *idx);
    for (int k = 0; k < n; k++)
        idx[k] = lower_ix(L, e->access.idx[k]);
    const IExpr *r = ir_access_tensor(L->cx, t, idx, n);  /* sema checked the rank */
    double v = e->access.outside;
    if (v != 0 || isnan(v))
        r = with_outside(L, t, idx, n, r, v);
    if (idx != small)
        free(idx);
    return r;
}

static bool is_cmp(BinOp op)
{
    return op == OP_EQ || op == OP_NE || op == OP_LT || op == OP_LE
        || op == OP_GT || op == OP_GE;
}

static bool is_condition(const CExpr *e)
{
    return e->kind == CE_NOT
        || (e->kind == CE_BIN && (is_cmp(e->bin.op) || e->bin.op == OP_AND
                                  || e->bin.op == OP_OR));
}

/* Whether an integer expression is affine in the indices (what an Ix can
 * hold): products need a constant side. */
static bool affine(const CExpr *e)
{
    switch (e->kind) {
    case CE_INT: case CE_VAR:
        return true;
    case CE_NEG:
        return affine(e->operand);
    case CE_BIN:
        if (e->bin.op == OP_MUL && e->bin.lhs->kind != CE_INT && e->bin.rhs->kind != CE_INT)
            return false;
        return affine(e->bin.lhs) && affine(e->bin.rhs);
    default:
        return true;
    }
}

static const IExpr *lower_real(Lower *L, const CExpr *e)
{
    IrCtx *cx = L->cx;
    if (is_condition(e))
        return lower_bool(L, e);
    /* An integer value in a body is exact; one that is not affine (i * j)
     * is computed from its affine parts in real arithmetic, which is
     * exact too for the index sizes a tensor can have. */
    if (e->is_int && (affine(e) || e->kind != CE_BIN ||
                      (e->bin.op != OP_MUL && e->bin.op != OP_ADD && e->bin.op != OP_SUB)))
        return ir_index(cx, lower_ix(L, e));
    switch (e->kind) {
    case CE_INT:
        return ir_const(cx, (double)e->ival);
    case CE_REAL:
        return ir_const(cx, e->rval);
    case CE_VAR:
        return ir_index(cx, ix_var(cx, L->vars[e->var].id));
    case CE_ACCESS:
        return access(L, e);
    case CE_CALL: {
        const IExpr *args[3];
        int n = e->call.nargs;
        if (n != ir_func_arity(e->call.fn) || n > 3)       /* sema checked it */
            ICE("lower: '%s' with %d arguments", ir_func_name(e->call.fn), n);
        for (int i = 0; i < n; i++)
            args[i] = e->call.fn == FN_SELECT && i == 0 ? lower_bool(L, e->call.args[i])
                                                        : lower_real(L, e->call.args[i]);
        return ir_call(cx, e->call.fn, args, n);
    }
    case CE_NEG:
        return ir_unary(cx, IE_NEG, lower_real(L, e->operand));
    case CE_NOT:
        break;
    case CE_BIN: {
        const IExpr *a = lower_real(L, e->bin.lhs), *b = lower_real(L, e->bin.rhs);
        switch (e->bin.op) {
        case OP_ADD: return ir_binary(cx, IE_ADD, a, b);
        case OP_SUB: return ir_binary(cx, IE_SUB, a, b);
        case OP_MUL: return ir_binary(cx, IE_MUL, a, b);
        case OP_DIV: return ir_binary(cx, IE_DIV, a, b);
        default:                    /* '%' of reals: sema reports it */
            ICE("lower: operator %s on reals", binop_str(e->bin.op));
        }
    }
    }
    ICE("lower: expression kind %d", (int)e->kind);
}

/* A condition: integer comparisons become IE_ICMP, real ones IE_CMP. */
static const IExpr *lower_bool(Lower *L, const CExpr *e)
{
    IrCtx *cx = L->cx;
    if (!is_condition(e))
        return lower_real(L, e);        /* a value used as a condition: != 0 */
    if (e->kind == CE_NOT)
        return ir_unary(cx, IE_NOT, lower_bool(L, e->operand));
    /* operands lowered left to right, each in a statement of its own:
     * the order of their diagnostics is the program's, whatever the
     * compiler's order of evaluating arguments */
    BinOp op = e->bin.op;
    const CExpr *l = e->bin.lhs, *r = e->bin.rhs;
    if (op == OP_AND || op == OP_OR) {
        const IExpr *a = lower_bool(L, l);
        return ir_binary(cx, op == OP_AND ? IE_AND : IE_OR, a, lower_bool(L, r));
    }
    if (l->is_int && !l->is_bool && r->is_int && !r->is_bool) {
        bool before = L->failed;
        L->failed = false;
        const Ix *a = lower_ix(L, l), *b = lower_ix(L, r);
        bool failed = L->failed;        /* the sides' own errors */
        L->failed |= before;
        ir_ctx_overflowed(cx);
        const IExpr *c = ir_icmp(cx, op, a, b);
        if (ir_ctx_overflowed(cx)) {
            /* a - b's coefficients past 64 bits: the comparison is moot */
            diag_error(e->loc, "index comparison overflows 64-bit integers once its sides "
                       "are subtracted");
            L->failed = true;
            cx->inexact++;
        } else if (!failed && c->kind == IE_ICMP) {
            check_exact(L, e, c->icmp.ix, true);
        }
        return c;
    }
    const IExpr *a = lower_real(L, l);
    return ir_cmp(cx, op, a, lower_real(L, r));
}

static bool reads_only_weights(const IExpr *e);

bool ir_stage_weight_only(const Stage *s)
{
    for (int i = 0; i < s->nguards; i++)
        if (!reads_only_weights(s->guards[i]))
            return false;
    return reads_only_weights(s->body);
}

/* Clears *only at a read of something other than a weight or a
 * weight-only stage (gathers included: the visitor walks them). */
static bool weight_read(void *arg, const IExpr *e)
{
    bool *only = arg;
    if (!*only)
        return false;
    if (e->kind == IE_ACCESS) {
        if (e->access.stage)
            *only = ir_stage_weight_only(e->access.stage);
        else
            *only = e->access.tensor->kind == IT_WEIGHT
                 || (e->access.tensor->kind == IT_STAGE && e->access.tensor->weight_only);
    }
    return *only;
}

static bool reads_only_weights(const IExpr *e)
{
    bool only = true;
    ir_expr_visit(e, weight_read, &only);
    return only;
}

static const Stage *lower_stmt(Lower *L, const CStmt *st, const IrTensor *out)
{
    IrCtx *cx = L->cx;
    IrVar *vars = xmalloc((size_t)(st->nvars ? st->nvars : 1) * sizeof *vars);
    for (int i = 0; i < st->nvars; i++) {
        const CVar *v = &st->vars[i];
        int64_t lo = v->lo, hi = v->hi;
        if (i < st->nloops && i < out->rank) {
            /* A loop variable never leaves its tensor's shape. */
            if (lo < 0)
                lo = 0;
            if (hi > out->shape[i])
                hi = out->shape[i];
            if (hi < lo)
                hi = lo;
        }
        vars[i] = ir_var_new(cx, v->name, lo, hi);
    }
    L->vars = vars;
    L->nvars = st->nvars;
    if (st->nloops != out->rank)        /* sema checked it */
        ICE("lower: '%s' has rank %d but %d indices", out->name, out->rank, st->nloops);
    const IExpr **guards = xmalloc((size_t)(st->nguards ? st->nguards : 1) * sizeof *guards);
    for (int i = 0; i < st->nguards; i++)
        guards[i] = lower_bool(L, st->guards[i]);
    const IExpr *body = lower_real(L, st->body);
    int nsums = st->nvars - st->nloops;
    Reduce red = nsums == 0 ? RED_NONE : st->red == RED_NONE ? RED_SUM : st->red;
    const Stage *s = ir_stage(cx, red, vars, st->nloops, vars + st->nloops, nsums,
                              guards, st->nguards, body);
    free(guards);
    free(vars);
    L->vars = NULL;
    return s;
}

static IrTensor *new_tensor(Lower *L, const CTensor *ct, int id)
{
    Arena *a = L->cx->arena;
    IrTensor *t = arena_alloc(a, sizeof *t);
    t->id = id;
    t->name = arena_strdup(a, ct->name);
    t->kind = ct->kind == TENSOR_INPUT ? IT_INPUT
            : ct->kind == TENSOR_WEIGHT ? IT_WEIGHT : IT_STAGE;
    t->elem = ct->elem;
    t->rank = ct->rank;
    t->shape = ct->rank ? arena_dup(a, ct->shape, (size_t)ct->rank * sizeof *ct->shape)
                        : NULL;
    t->loc = ct->loc;
    t->is_output = ct->is_output;
    t->ext = ct->ext ? arena_strdup(a, ct->ext) : NULL;
    return t;
}

int ir_lower_inexact(const IrCtx *cx)
{
    return cx->inexact;
}

IrProgram *ir_lower(IrCtx *cx, const CProgram *cp)
{
    Arena *a = cx->arena;
    Lower L = {.cx = cx, .cp = cp};
    L.tmap = xcalloc((size_t)(cp->ntensors ? cp->ntensors : 1), sizeof *L.tmap);
    IrProgram *p = arena_alloc(a, sizeof *p);
    p->cx = cx;
    p->model = arena_strdup(a, cp->model ? cp->model : "");
    p->tensors = arena_alloc(a, (size_t)(cp->ntensors ? cp->ntensors : 1) * sizeof *p->tensors);

    int n = 0;
    for (int i = 0; i < cp->ntensors; i++) {
        const CTensor *ct = &cp->tensors[i];
        if (ct->kind != TENSOR_DEFINED)
            p->tensors[n] = L.tmap[i] = new_tensor(&L, ct, n), n++;
    }
    for (int i = 0; i < cp->nstmts; i++) {
        const CStmt *st = &cp->stmts[i];
        if (st->out < 0 || st->out >= cp->ntensors || L.tmap[st->out])
            ICE("lower: statement %d defines tensor %d", i, st->out);
        IrTensor *t = new_tensor(&L, &cp->tensors[st->out], n);
        t->loc = st->loc;
        p->tensors[n] = L.tmap[st->out] = t;
        n++;
        t->stage = lower_stmt(&L, st, t);
        t->weight_only = ir_stage_weight_only(t->stage);
    }
    for (int i = 0; i < cp->ntensors; i++)
        if (!L.tmap[i])
            ICE("lower: tensor '%s' has no definition", cp->tensors[i].name);
    p->ntensors = n;

    p->noutputs = cp->noutputs;
    p->outputs = arena_alloc(a, (size_t)(cp->noutputs ? cp->noutputs : 1) * sizeof *p->outputs);
    for (int i = 0; i < cp->noutputs; i++)
        p->outputs[i] = L.tmap[cp->outputs[i]]->id;
    free(L.tmap);
    return L.failed ? NULL : p;
}

void ir_program_reorder(IrProgram *p, IrTensor **order, int n)
{
    IrTensor **outs = xmalloc((size_t)(p->noutputs + 1) * sizeof *outs);
    for (int i = 0; i < p->noutputs; i++)
        outs[i] = p->tensors[p->outputs[i]];
    p->tensors = order;
    p->ntensors = n;
    for (int i = 0; i < n; i++)
        order[i]->id = -1;
    /* ids as positions, each stage after what it reads (a pass that moves
       tensors must keep that: an ICE here, not a read of a buffer made
       later) */
    enum { MAX_READS = 256 };
    const IrTensor *reads[MAX_READS];
    for (int i = 0; i < n; i++) {
        int nr = order[i]->kind == IT_STAGE
                     ? ir_stage_tensors(order[i]->stage, reads, MAX_READS) : 0;
        for (int k = 0; k < nr && k < MAX_READS; k++)
            if (reads[k]->id < 0 && reads[k] != order[i])
                ICE("ir_program_reorder: '%s' comes before '%s', which reads it",
                    order[i]->name, reads[k]->name);
        order[i]->id = i;
    }
    for (int i = 0; i < p->noutputs; i++)
        p->outputs[i] = outs[i]->id;
    free(outs);
}
