/* fingerprint.c - hashes of stages that ignore the names of bound variables
 * and the order of commutative operands (EinNet's fingerprints).
 *
 * A bound variable is hashed through a token: a loop variable by its
 * position and range, a sum variable by its range and a signature.  The
 * signature refines EinNet's "range only" (under which x[r, s] and x[r, r]
 * collide for r, s of equal range) without depending on names: it is the
 * multiset of the places the variable occurs in (tensor and dimension, or
 * index value, or integer comparison) together with the index expression
 * there, the variable itself marked as "self" and the other sum variables
 * seen by range only.  That is one round of Weisfeiler-Lehman refinement.
 *
 * Everything order-dependent in the canonical forms (terms sorted by
 * variable id, commutative operands sorted by hash, guards and sum
 * variables sorted) is combined with order-independent sums here, and an
 * equality `ix == 0` hashes as the smaller of ix and -ix.  A nested stage
 * is fingerprinted recursively with its own bound variables; a variable of
 * an enclosing stage seen inside it is marked with the nesting distance,
 * so a closed nested stage hashes the same at any depth. */
#include "config.h"
#include "ir_int.h"

#include <stdlib.h>

typedef struct Bind {
    int var;
    int depth;
    uint64_t token;
} Bind;

typedef struct Fp {
    Bind *b;
    int n, cap;
    int depth;
    int self;                       /* signature pass: the variable marked */
    bool form;                      /* tensors by what they are (ir_fingerprint_form) */
} Fp;

/* A tensor: which one it is, or with `form` what it is: its kind, element
 * type and shape, and whether it depends on weights only. */
static uint64_t fp_tensor(const Fp *f, const IrTensor *t)
{
    if (!f->form)
        return ir_hcomb(H_TENSOR, (uint64_t)t->id);
    uint64_t h = ir_hcomb(ir_hcomb(H_TENSOR, (uint64_t)t->kind), (uint64_t)t->elem);
    h = ir_hcomb(ir_hcomb(h, (uint64_t)t->weight_only), (uint64_t)t->rank);
    for (int d = 0; d < t->rank; d++)
        h = ir_hcomb(h, (uint64_t)t->shape[d]);
    return h;
}

static void bind(Fp *f, int var, uint64_t token)
{
    if (f->n == f->cap) {
        f->cap = f->cap ? 2 * f->cap : 32;
        f->b = xrealloc(f->b, (size_t)f->cap * sizeof *f->b);
    }
    f->b[f->n++] = (Bind){var, f->depth, token};
}

static uint64_t token(const Fp *f, int var)
{
    if (var == f->self)
        return H_SELF;
    for (int i = f->n - 1; i >= 0; i--) {
        if (f->b[i].var != var)
            continue;
        uint64_t t = f->b[i].token;
        if (f->b[i].depth < f->depth)
            t = ir_hcomb(t ^ H_OUTER, (uint64_t)(f->depth - f->b[i].depth));
        return t;
    }
    return ir_hcomb(H_FREE, (uint64_t)var);
}

static uint64_t fp_ix(const Fp *f, const Ix *x, int64_t sign)
{
    uint64_t sum = 0;
    for (int i = 0; i < x->n; i++) {
        const IxTerm *t = &x->t[i];
        uint64_t h = ir_hcomb(H_TERM, (uint64_t)t->coef * (uint64_t)sign);
        h = ir_hcomb(h, (uint64_t)t->kind);
        h = ir_hcomb(h, (uint64_t)t->d);
        if (t->kind == IX_READ) {
            /* a gather: the tensor and its subscripts, renaming-invariant */
            const IExpr *r = t->read;
            uint64_t rh = fp_tensor(f, r->access.tensor);
            for (int k = 0; k < r->access.nidx; k++)
                rh = ir_hcomb(rh, fp_ix(f, r->access.idx[k], 1));
            h = ir_hcomb(h, rh);
        } else {
            h = ir_hcomb(h, t->kind == IX_VAR ? token(f, t->var) : fp_ix(f, t->arg, 1));
        }
        sum += ir_fmix(h);
    }
    return ir_hcomb(ir_hcomb(H_IX, (uint64_t)x->c * (uint64_t)sign), sum);
}

static uint64_t loop_token(int pos, const IrVar *v)
{
    uint64_t h = ir_hcomb(H_LOOP, (uint64_t)pos);
    return ir_hcomb(ir_hcomb(h, (uint64_t)v->lo), (uint64_t)v->hi);
}

static uint64_t sum_token(const IrVar *v)
{
    return ir_hcomb(ir_hcomb(H_SUM, (uint64_t)v->lo), (uint64_t)v->hi);
}

/* ---- the signature pass --------------------------------------------------- */

typedef struct Sig {
    const Stage *s;                 /* the stage whose sum variables are signed */
    uint64_t *sig;
} Sig;

/* `either_sign`: the place is `x == 0` or `x != 0`, where x and -x mean
 * the same and the canonical sign depends on variable ids. */
static void sig_ix(Fp *f, Sig *g, const Ix *x, uint64_t where, bool either_sign)
{
    for (int j = 0; j < g->s->nsums; j++) {
        int v = g->s->sums[j].id;
        if (!ix_uses(x, v))
            continue;
        f->self = v;
        uint64_t h = fp_ix(f, x, 1);
        if (either_sign) {
            uint64_t h2 = fp_ix(f, x, -1);
            h = h < h2 ? h : h2;
        }
        g->sig[j] += ir_fmix(ir_hcomb(where, h));
        f->self = -1;
    }
}

static void sig_stage_vars(Fp *f, const Stage *s)
{
    for (int k = 0; k < s->nloops; k++)
        bind(f, s->loops[k].id, loop_token(k, &s->loops[k]));
    for (int k = 0; k < s->nsums; k++)
        bind(f, s->sums[k].id, sum_token(&s->sums[k]));
}

static void sig_expr(Fp *f, Sig *g, const IExpr *e)
{
    switch (e->kind) {
    case IE_CONST:
        return;
    case IE_INDEX:
        sig_ix(f, g, e->ix, H_INDEX, false);
        return;
    case IE_ICMP:
        sig_ix(f, g, e->icmp.ix, ir_hcomb(H_ICMP, (uint64_t)e->icmp.op),
               e->icmp.op != OP_GE);
        return;
    case IE_ACCESS: {
        const Stage *s = e->access.stage;
        uint64_t target = s ? ir_hcomb(ir_hcomb(H_STAGE, (uint64_t)s->red), (uint64_t)s->nsums)
                            : fp_tensor(f, e->access.tensor);
        for (int k = 0; k < e->access.nidx; k++)
            sig_ix(f, g, e->access.idx[k], ir_hcomb(target, (uint64_t)k), false);
        if (s) {
            int base = f->n;
            f->depth++;
            sig_stage_vars(f, s);
            for (int i = 0; i < s->nguards; i++)
                sig_expr(f, g, s->guards[i]);
            sig_expr(f, g, s->body);
            f->depth--;
            f->n = base;
        }
        return;
    }
    default: {
        const IExpr *kids[IR_MAX_CHILDREN];
        int n = ir_expr_children(e, kids);
        for (int i = 0; i < n; i++)
            sig_expr(f, g, kids[i]);
        return;
    }
    }
}

/* ---- the main pass -------------------------------------------------------- */

static uint64_t fp_stage(Fp *f, const Stage *s);

static uint64_t comm(uint64_t h, uint64_t x, uint64_t y)
{
    return x < y ? ir_hcomb(ir_hcomb(h, x), y) : ir_hcomb(ir_hcomb(h, y), x);
}

static uint64_t fp_expr(Fp *f, const IExpr *e)
{
    uint64_t h = ir_hcomb(H_EXPR, (uint64_t)e->kind);
    switch (e->kind) {
    case IE_CONST:
        return ir_hcomb(h, ir_hash_double(e->value));
    case IE_INDEX:
        return ir_hcomb(h, fp_ix(f, e->ix, 1));
    case IE_ACCESS:
        h = ir_hcomb(h, e->access.stage ? fp_stage(f, e->access.stage)
                                        : fp_tensor(f, e->access.tensor));
        for (int k = 0; k < e->access.nidx; k++)
            h = ir_hcomb(h, fp_ix(f, e->access.idx[k], 1));
        return h;
    case IE_CALL:
        h = ir_hcomb(h, (uint64_t)e->call.fn);
        if (e->call.fn == FN_MAX || e->call.fn == FN_MIN)
            return comm(h, fp_expr(f, e->call.args[0]), fp_expr(f, e->call.args[1]));
        for (int i = 0; i < e->call.nargs; i++)
            h = ir_hcomb(h, fp_expr(f, e->call.args[i]));
        return h;
    case IE_ICMP: {
        h = ir_hcomb(h, (uint64_t)e->icmp.op);
        uint64_t a = fp_ix(f, e->icmp.ix, 1);
        if (e->icmp.op != OP_GE) {
            uint64_t b = fp_ix(f, e->icmp.ix, -1);
            a = a < b ? a : b;
        }
        return ir_hcomb(h, a);
    }
    case IE_NEG: case IE_NOT:
        return ir_hcomb(h, fp_expr(f, e->bin.a));
    case IE_ADD: case IE_MUL: case IE_AND: case IE_OR:
        return comm(h, fp_expr(f, e->bin.a), fp_expr(f, e->bin.b));
    case IE_CMP:
        h = ir_hcomb(h, (uint64_t)e->bin.op);
        if (e->bin.op == OP_EQ || e->bin.op == OP_NE)
            return comm(h, fp_expr(f, e->bin.a), fp_expr(f, e->bin.b));
        /* fall through */
    default:                        /* SUB, DIV, ordered comparisons */
        h = ir_hcomb(h, fp_expr(f, e->bin.a));
        return ir_hcomb(h, fp_expr(f, e->bin.b));
    }
}

static uint64_t fp_stage(Fp *f, const Stage *s)
{
    int base = f->n;
    f->depth++;
    for (int k = 0; k < s->nloops; k++)
        bind(f, s->loops[k].id, loop_token(k, &s->loops[k]));
    for (int k = 0; k < s->nsums; k++)
        bind(f, s->sums[k].id, sum_token(&s->sums[k]));
    if (s->nsums > 0) {
        uint64_t small[16];
        Sig g = {s, s->nsums <= 16 ? small : xmalloc((size_t)s->nsums * sizeof *g.sig)};
        for (int k = 0; k < s->nsums; k++)
            g.sig[k] = 0;
        for (int i = 0; i < s->nguards; i++)
            sig_expr(f, &g, s->guards[i]);
        sig_expr(f, &g, s->body);
        /* f->b may have moved while binding nested variables. */
        for (int k = 0; k < s->nsums; k++) {
            Bind *b = &f->b[base + s->nloops + k];
            b->token = ir_hcomb(ir_hcomb(b->token, H_SIG), g.sig[k]);
        }
        if (g.sig != small)
            free(g.sig);
    }

    uint64_t h = ir_hcomb(H_STAGE, (uint64_t)s->red);
    h = ir_hcomb(h, (uint64_t)s->nloops);
    for (int k = 0; k < s->nloops; k++)
        h = ir_hcomb(h, f->b[base + k].token);
    uint64_t sums = 0;
    for (int k = 0; k < s->nsums; k++)
        sums += ir_fmix(f->b[base + s->nloops + k].token);
    h = ir_hcomb(ir_hcomb(h, (uint64_t)s->nsums), sums);
    uint64_t guards = 0;
    for (int i = 0; i < s->nguards; i++)
        guards += ir_fmix(fp_expr(f, s->guards[i]));
    h = ir_hcomb(ir_hcomb(h, (uint64_t)s->nguards), guards);
    h = ir_hcomb(h, fp_expr(f, s->body));
    f->n = base;
    f->depth--;
    return h;
}

static uint64_t fingerprint(const Stage *s, bool form)
{
    Fp f = {.self = -1, .form = form};
    uint64_t h = fp_stage(&f, s);
    free(f.b);
    return h;
}

uint64_t ir_fingerprint(const Stage *s)
{
    return fingerprint(s, false);
}

uint64_t ir_fingerprint_form(const Stage *s)
{
    return fingerprint(s, true);
}
