/* rule_split.c - summation splitting.
 *
 *   L<I> red<S ∪ R> { f | g }
 *     =>  L<I> red<S> { (L<I', S'> red<R> { f' | g_R' })[I, S] | g_rest }
 *
 * The sum variables S stay outside, the rest R move into a new nested
 * stage whose loops are fresh copies of the loop and outer sum variables
 * that its body and guards use.  Guards that mention a variable of R go
 * inside (g_R), the others stay outside, where they keep the inner stage
 * free of conditions for operator matching.  A sum is associative, so any
 * split is legal; max and min are too, but only when no guard goes inside:
 * an inner reduction whose terms are all excluded reads as 0, which would
 * become a term of the outer max. */
#include "config.h"
#include "rules_int.h"

#include <stdlib.h>

/* Subsets are enumerated in full, so stages with many sum variables get
 * no split sites (2^6 - 2 = 62 subsets at most). */
#define MAX_SPLIT_SUMS 6

void split_sites(RuleCtx *rc, const RuleFocus *f, RuleSites *out)
{
    (void)rc;
    int n = f->stage->nsums;
    if (n < 2 || n > MAX_SPLIT_SUMS)
        return;
    for (int64_t m = 1; m < ((int64_t)1 << n) - 1; m++)
        rc_push(out, (RuleSite){.rule = RULE_SUM_SPLIT, .focus = f->stage, .k = m});
}

static bool uses_any(const IExpr *e, const IrVar *v, int n)
{
    for (int i = 0; i < n; i++)
        if (ir_expr_uses(e, v[i].id))
            return true;
    return false;
}

const Stage *split_apply(RuleCtx *rc, const RuleFocus *f, const RuleSite *site)
{
    const Stage *s = f->stage;
    int n = s->nsums, ng = s->nguards;
    uint64_t m = (uint64_t)site->k;
    if (n < 2 || n > 62 || m == 0 || m >= ((uint64_t)1 << n) - 1)
        return NULL;
    IrCtx *cx = rc->cx;
    int nv = s->nloops + n;
    IrVar *outs = xmalloc((size_t)n * sizeof *outs), *ins = xmalloc((size_t)n * sizeof *ins);
    IrVar *fresh = xmalloc((size_t)nv * sizeof *fresh);
    const IExpr **gout = xmalloc((size_t)(ng + 1) * sizeof *gout);
    const IExpr **gin = xmalloc((size_t)(ng + 1) * sizeof *gin);
    const Ix **idx = xmalloc((size_t)nv * sizeof *idx);
    int nout = 0, nin = 0, ngout = 0, ngin = 0;
    const Stage *r = NULL;

    for (int i = 0; i < n; i++) {
        if (m >> i & 1)
            outs[nout++] = s->sums[i];
        else
            ins[nin++] = s->sums[i];
    }
    for (int i = 0; i < ng; i++) {
        if (uses_any(s->guards[i], ins, nin))
            gin[ngin++] = s->guards[i];
        else
            gout[ngout++] = s->guards[i];
    }
    if (s->red != RED_SUM && ngin > 0)
        goto done;

    const IExpr *body = s->body;
    int k = rc_rename_used(rc, s->loops, s->nloops, outs, nout, &body, gin, ngin, fresh, idx);
    const Stage *inner = ir_stage(cx, s->red, fresh, k, ins, nin, gin, ngin, body);
    const Stage *outer = ir_stage(cx, s->red, s->loops, s->nloops, outs, nout, gout, ngout,
                                  ir_access_stage(cx, inner, idx, k));
    r = rc_replace(rc, f, outer);
done:
    free(outs);
    free(ins);
    free(fresh);
    free(gout);
    free(gin);
    free(idx);
    return r;
}
