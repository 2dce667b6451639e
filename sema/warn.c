/* warn.c - -Wsum-invariant: a term of a `+=` body that does not depend on
 * any summed index is added once per summed element, which is almost
 * always a bias or constant written inside the sum by mistake:
 *     y[i] += x[i, k] * w[k] + b[i]      # b[i] is added K times
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
