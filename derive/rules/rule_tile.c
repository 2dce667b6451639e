/* rule_tile.c - summation tiling: summation splitting after splitting
 * each variable of a set of sum variables by one factor, relaxing ranges
 * that the factor does not divide.
 *
 *   L<I> Σ<S ∪ R> { f }     (S tiled by k, each v in S: v = k*v1 + v2)
 *     =>  L<I> Σ<S1> { (L<I', S1'> Σ<S2 ∪ R> { f' })[I, S1] }
 *
 * It is the composition relax* ; var-split* ; sum-split, made one step so
 * that the search reaches derivations such as a 5x5 kernel seen as four
 * 3x3 kernels (EinNet's conv 5x5 showcase) without spending a level of
 * its explicit phase on each part.  Each part checks its own precondition
 * (relaxing only over terms that read zeros), so the composition is
 * legal whenever every part is.  Applied at the root of a state. */
#include "config.h"
#include "rules_int.h"

#define MAX_TILE_SUMS 6
#define MAX_TILE_FACTOR 4

void tile_sites(RuleCtx *rc, const RuleFocus *f, RuleSites *out)
{
    (void)rc;
    const Stage *s = f->stage;
    int n = s->nsums;
    if (!f->is_root || s->red != RED_SUM || n < 1 || n > MAX_TILE_SUMS)
        return;
    for (int64_t k = 2; k <= MAX_TILE_FACTOR; k++)
        for (int64_t m = 1; m < ((int64_t)1 << n); m++) {
            bool ok = true;
            for (int i = 0; i < n && ok; i++)
                ok = !(m >> i & 1) || s->sums[i].hi - s->sums[i].lo > k;
            if (ok)
                rc_push(out, (RuleSite){.rule = RULE_SUM_TILE, .focus = s, .k = m, .k2 = k});
        }
}

const Stage *tile_apply(RuleCtx *rc, const RuleFocus *f, const RuleSite *site)
{
    const Stage *cur = f->stage;
    int64_t k = site->k2;
    uint64_t m = (uint64_t)site->k;
    int n = cur->nsums, vars[MAX_TILE_SUMS], outer[MAX_TILE_SUMS], nv = 0;
    if (!f->is_root || k < 2 || n > MAX_TILE_SUMS || m == 0 || m >> n)
        return NULL;
    for (int i = 0; i < n; i++)
        if (m >> i & 1)
            vars[nv++] = cur->sums[i].id;
    for (int i = 0; i < nv; i++) {
        int p = ir_sum_pos(cur, vars[i]);
        const IrVar *v = &cur->sums[p];
        int64_t len = v->hi - v->lo, up = (len + k - 1) / k * k;
        if (len <= k)
            return NULL;
        if (up != len) {
            RuleSite r = {.rule = RULE_RELAX, .focus = cur, .a = v->id,
                          .k = v->lo, .k2 = v->lo + up};
            if (!(cur = rule_apply(rc, cur, &r)))
                return NULL;
            p = ir_sum_pos(cur, vars[i]);
            v = &cur->sums[p];
        }
        RuleSite sp = {.rule = RULE_VAR_SPLIT, .focus = cur, .a = v->id, .k = k,
                       .k2 = -v->lo};
        const Stage *before = cur;
        if (!(cur = rule_apply(rc, cur, &sp)))
            return NULL;
        /* v = k*v1 + v2: of the two new variables, v1 was made first */
        outer[i] = -1;
        for (int j = 0; j < cur->nsums; j++)
            if (ir_sum_pos(before, cur->sums[j].id) < 0 &&
                (outer[i] < 0 || cur->sums[j].id < outer[i]))
                outer[i] = cur->sums[j].id;
        if (outer[i] < 0)
            return NULL;
    }
    uint64_t keep = 0;
    for (int i = 0; i < nv; i++) {
        int p = ir_sum_pos(cur, outer[i]);
        if (p < 0)
            return NULL;
        keep |= (uint64_t)1 << p;
    }
    RuleSite ss = {.rule = RULE_SUM_SPLIT, .focus = cur, .k = (int64_t)keep};
    return rule_apply(rc, cur, &ss);
}
