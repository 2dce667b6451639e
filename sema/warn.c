/* warn.c - -Wsum-invariant: a term of a `+=` body that does not depend on
 * any summed index is added once per summed element, which is almost
 * always a bias or constant written inside the sum by mistake:
 *     y[i] += x[i, k] * w[k] + b[i]      # b[i] is added K times
 * -Wpadded-max: a `max=` window that can read outside a tensor that may
 * hold negative values sees the implicit 0 there (PyTorch's padded max
 * pool does not); `min=` the same for positive values.
 * (-Wunused lives with the scopes, in block.c.) */
#include "config.h"
#include "sema_int.h"

#include <string.h>

/* Does e mention a variable with index >= from? */
static bool uses_sum(const CExpr *e, int from)
{
    switch (e->kind) {
    case CE_VAR:
        return e->var >= from;
    case CE_ACCESS:
        for (int i = 0; i < e->access.nidx; i++)
            if (uses_sum(e->access.idx[i], from))
                return true;
        return false;
    case CE_CALL:
        for (int i = 0; i < e->call.nargs; i++)
            if (uses_sum(e->call.args[i], from))
                return true;
        return false;
    case CE_NEG:
    case CE_NOT:
        return uses_sum(e->operand, from);
    case CE_BIN:
        return uses_sum(e->bin.lhs, from) || uses_sum(e->bin.rhs, from);
    default:
        return false;
    }
}

typedef struct Terms { const CExpr **data; int len, cap; } Terms;

static void split_terms(Arena *a, const CExpr *e, Terms *out)
{
    if (e->kind == CE_BIN && (e->bin.op == OP_ADD || e->bin.op == OP_SUB)) {
        split_terms(a, e->bin.lhs, out);
        split_terms(a, e->bin.rhs, out);
        return;
    }
    vec_push(a, out, e);
}

/* "index 'k'" or "indices 'c', 'r', 's'" */
static const char *sum_names(Arena *a, const CStmt *cs)
{
    int n = cs->nvars - cs->nloops;
    const char *list = "";
    for (int k = cs->nloops; k < cs->nvars; k++)
        list = arena_printf(a, "%s%s'%s'", list, k > cs->nloops ? ", " : "",
                            cs->vars[k].name);
    return arena_printf(a, "%s %s", n == 1 ? "index" : "indices", list);
}

void warn_sum_invariant(StmtCtx *c, const CStmt *cs)
{
    if (cs->red != RED_SUM || cs->nvars == cs->nloops)
        return;
    Terms terms = {0};
    split_terms(c->s->arena, cs->body, &terms);
    bool guarded = false;
    for (int i = 0; i < cs->nguards; i++)
        guarded |= uses_sum(cs->guards[i], cs->nloops);
    int64_t times = 1;                  /* fits: space_fits checked it */
    for (int k = cs->nloops; k < cs->nvars; k++)
        times *= cs->vars[k].hi - cs->vars[k].lo;
    if (times == 1 && !guarded)
        return;                         /* added once: exactly right */
    for (int i = 0; i < terms.len; i++) {
        if (uses_sum(terms.data[i], cs->nloops))
            continue;
        sema_warn(c->s, terms.data[i]->loc, "sum-invariant", "term does not "
                  "depend on summed %s; it is added %s%lld times",
                  sum_names(c->s->arena, cs), guarded ? "up to " : "",
                  (long long)times);
    }
}

/* ---- -Wpadded-max ------------------------------------------------------- */

/* What is known of the sign of a value, NaN aside: SIGN_POS, >= 0;
 * SIGN_NEG, <= 0 (both: 0; neither: nothing known). */
enum { SIGN_POS = 1, SIGN_NEG = 2 };

static unsigned flip_signs(unsigned m)
{
    return (m & SIGN_POS ? SIGN_NEG : 0) | (m & SIGN_NEG ? SIGN_POS : 0);
}

static unsigned number_signs(double v)
{
    return (v >= 0 ? SIGN_POS : 0) | (v <= 0 ? SIGN_NEG : 0) | (v != v ? SIGN_POS | SIGN_NEG : 0);
}

/* A tensor's: u8 and bool ones are >= 0, and those of a statement found so. */
static unsigned tensor_signs(const STensor *t)
{
    if (t->c.elem == ELEM_U8 || t->c.elem == ELEM_BOOL)
        return SIGN_POS;
    return (t->nonneg ? SIGN_POS : 0) | (t->nonpos ? SIGN_NEG : 0);
}

/* e's, wherever it is defined, from what is known of the tensors it
 * reads: conservative, and one visit of each node. */
static unsigned expr_signs(Sema *s, const CExpr *e)
{
    switch (e->kind) {
    case CE_INT: return number_signs((double)e->ival);
    case CE_REAL: return number_signs(e->rval);
    case CE_VAR: return 0;
    case CE_ACCESS: {
        const STensor *t = tensor_at(s, e->access.tensor);
        return t ? tensor_signs(t) & number_signs(e->access.outside) : 0;
    }
    case CE_CALL: {
        const CExpr *const *a = (const CExpr *const *)e->call.args;
        switch (e->call.fn) {
        case FN_RELU: case FN_EXP: case FN_SIGMOID: case FN_ABS: case FN_SQRT:
        case FN_RSQRT: case FN_SOFTPLUS: case FN_TO_U8: case FN_TO_BOOL:
            return SIGN_POS;
        case FN_MAX: case FN_MIN: {
            /* max(a, b) >= 0 where either is, <= 0 where both are */
            unsigned x = expr_signs(s, a[0]), y = expr_signs(s, a[1]);
            unsigned either = SIGN_POS, both = SIGN_NEG;
            if (e->call.fn == FN_MIN)
                either = SIGN_NEG, both = SIGN_POS;
            return ((x | y) & either) | (x & y & both);
        }
        case FN_SELECT:
            return expr_signs(s, a[1]) & expr_signs(s, a[2]);
        default:
            return e->call.nargs == 1 && FN_IS_TO(e->call.fn) ? expr_signs(s, a[0]) : 0;
        }
    }
    case CE_NEG: return flip_signs(expr_signs(s, e->operand));
    case CE_NOT: return SIGN_POS;
    case CE_BIN: {
        if (e->is_bool)
            return SIGN_POS;
        unsigned l = expr_signs(s, e->bin.lhs), r = expr_signs(s, e->bin.rhs);
        switch (e->bin.op) {
        case OP_ADD: return l & r;
        case OP_SUB: return l & flip_signs(r);
        case OP_MUL: case OP_DIV: {
            /* like signs make a value >= 0, unlike ones <= 0 */
            unsigned m = 0;
            if (((l & r) & SIGN_POS) || ((l & r) & SIGN_NEG))
                m |= SIGN_POS;
            if ((l & SIGN_POS && r & SIGN_NEG) || (l & SIGN_NEG && r & SIGN_POS))
                m |= SIGN_NEG;
            return m;
        }
        default:
            return 0;
        }
    }
    }
    return 0;
}

bool stmt_signed(Sema *s, const CStmt *cs, int sign)
{
    /* a product of values <= 0 may be > 0 */
    bool red_ok = cs->red == RED_NONE || cs->red == RED_SUM || cs->red == RED_MAX ||
                  cs->red == RED_MIN || (cs->red == RED_PROD && sign > 0);
    return red_ok && expr_signs(s, cs->body) & (sign > 0 ? SIGN_POS : SIGN_NEG);
}

static void padded_reads(StmtCtx *c, const CStmt *cs, const CExpr *e)
{
    Sema *s = c->s;
    switch (e->kind) {
    case CE_ACCESS: {
        const STensor *t = tensor_at(s, e->access.tensor);
        if (!t || e->access.outside_given || !tensor_shape_known(t))
            return;
        bool leaves = false;
        for (int k = 0; k < e->access.nidx && !leaves; k++) {
            int64_t lo, hi;
            leaves = expr_interval(c, e->access.idx[k], &lo, &hi) &&
                     (lo < 0 || hi >= t->c.shape[k]);
        }
        if (!leaves)
            return;
        bool max = cs->red == RED_MAX;
        if (tensor_signs(t) & (max ? SIGN_POS : SIGN_NEG))     /* the zeros change nothing */
            return;
        sema_warn(s, e->loc, "padded-max", "'%s' window reads outside '%s', where "
                  "the read is 0, and '%s' may hold %s values; write '%s[...] ?: %s' "
                  "for a window that skips the padding (or '?: 0' to keep the zeros)",
                  max ? "max=" : "min=", t->c.name, t->c.name,
                  max ? "negative" : "positive", sym_q(t->src_name), max ? "-inf" : "inf");
        return;
    }
    case CE_CALL:
        for (int i = 0; i < e->call.nargs; i++)
            padded_reads(c, cs, e->call.args[i]);
        return;
    case CE_BIN:
        padded_reads(c, cs, e->bin.lhs);
        padded_reads(c, cs, e->bin.rhs);
        return;
    case CE_NEG:
    case CE_NOT:
        padded_reads(c, cs, e->operand);
        return;
    default:
        return;
    }
}

void warn_padded(StmtCtx *c, const CStmt *cs)
{
    /* guards may drop the taps outside (maxpool3.ein does): those are not
     * analysed, and then there is no warning */
    if ((cs->red != RED_MAX && cs->red != RED_MIN) || cs->nguards)
        return;
    /* only reads that are the window's value: a read inside another
     * function of it may mean something else by its zeros */
    padded_reads(c, cs, cs->body);
}
