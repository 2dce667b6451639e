/* rule_merge.c - traversal merging: inline a nested stage into the stage
 * that reads it.
 *
 *   F = L<I> red<S> { .. Q[a] .. | g },  Q = L<J> red_Q<T> { q | h }
 *     =>  L<I> red'<S ∪ T> { .. q[J := a] .. | g, h[J := a], lo_J <= a < hi_J }
 *
 * Q reads as zero outside its loop ranges and where its guards fail; the
 * inlined body does not, so those conditions have to go somewhere:
 *   - nowhere, when Q is Σ-free and guard-free and a is provably in range:
 *     the access may sit anywhere in F;
 *   - into F's guards, when the access is a factor of F's body and F is a
 *     sum or a map: a term whose factor is zero and a term that is left
 *     out add the same nothing (with Q's sums: Σ_S (Σ_T q) * r =
 *     Σ_{S,T} q * r, so Q must be a sum too);
 *   - into F's guards as well when F is a map whose whole body is the
 *     access, for any reduction of Q (F becomes Q's reduction).
 * Everything else (a padded read under max, under relu, ...) is left alone.
 * Q's sum variables move into F.  When Q is read elsewhere too, they and
 * every variable bound inside the inlined copy are renamed: the copy and
 * the original must not share binders (rules_int.h). */
#include "config.h"
#include "rules_int.h"

#include <stdlib.h>

typedef struct Find {
    int want, n;
    const IExpr *acc;
    bool factor;
} Find;

static void find_access(void *arg, const IExpr *acc, bool factor)
{
    Find *fd = arg;
    if (!acc->access.stage)
        return;
    if (fd->n++ == fd->want) {
        fd->acc = acc;
        fd->factor = factor;
    }
}

typedef struct Sites {
    const Stage *focus;
    RuleSites *out;
    int n;
} Sites;

static void site_access(void *arg, const IExpr *acc, bool factor)
{
    (void)factor;
    Sites *s = arg;
    if (acc->access.stage)
        rc_push(s->out, (RuleSite){.rule = RULE_INLINE, .focus = s->focus,
                                   .target = acc->access.stage, .a = s->n++});
}

void inline_sites(RuleCtx *rc, const RuleFocus *f, RuleSites *out)
{
    (void)rc;
    Sites s = {f->stage, out, 0};
    rc_each_access(f->stage, site_access, &s);
}

typedef struct Put {
    int want, n;
    const IExpr *by;
} Put;

static const IExpr *put_access(void *arg, const IExpr *acc)
{
    Put *p = arg;
    if (!acc->access.stage)
        return acc;
    return p->n++ == p->want ? p->by : acc;
}

const Stage *inline_apply(RuleCtx *rc, const RuleFocus *f, const RuleSite *st)
{
    const Stage *s = f->stage;
    IrCtx *cx = rc->cx;
    Find fd = {st->a, 0, NULL, false};
    rc_each_access(s, find_access, &fd);
    if (!fd.acc)
        return NULL;
    const Stage *q = fd.acc->access.stage;
    int nl = q->nloops, nt = q->nsums, nv = nl + nt;
    bool sum_like = s->red == RED_NONE || s->red == RED_SUM;
    bool whole = s->body == fd.acc && s->red == RED_NONE;

    bool rename = rc_reads(f->root, q) > 1;
    int *ids = xmalloc((size_t)(nv ? nv : 1) * sizeof *ids);
    const Ix **by = xmalloc((size_t)(nv ? nv : 1) * sizeof *by);
    IrVar *sums = xmalloc((size_t)(s->nsums + nt + 1) * sizeof *sums);
    const IExpr **g = xmalloc((size_t)(s->nguards + q->nguards + 2 * nl + 1) * sizeof *g);
    int ng = 0, ns = 0;
    const Stage *r = NULL;

    for (int k = 0; k < nl; k++) {
        ids[k] = q->loops[k].id;
        by[k] = fd.acc->access.idx[k];
        ng += rc_range_guards(rc, by[k], q->loops[k].lo, q->loops[k].hi, g + ng, true);
    }
    for (int i = 0; i < s->nsums; i++)
        sums[ns++] = s->sums[i];
    for (int i = 0; i < nt; i++) {
        const IrVar *v = &q->sums[i];
        sums[ns] = rename ? rc_fresh(rc, v->name, v->lo, v->hi) : *v;
        ids[nl + i] = v->id;
        by[nl + i] = ix_var(cx, sums[ns].id);
        ns++;
    }
    int nsub = rename ? nv : nl;
    for (int i = 0; i < q->nguards; i++) {
        g[ng] = rc_subst_all(rc, q->guards[i], nsub, ids, by);
        g[ng] = rename ? rc_freshen(rc, g[ng]) : g[ng];
        ng++;
    }
    const IExpr *body = rc_subst_all(rc, q->body, nsub, ids, by);
    body = rename ? rc_freshen(rc, body) : body;

    Reduce red = s->red;
    if (nt == 0 && ng == 0)
        ;                           /* a plain substitution, anywhere */
    else if (fd.factor && sum_like && (nt == 0 || q->red == RED_SUM))
        red = nt ? RED_SUM : s->red;
    else if (whole)
        red = q->red;
    else
        goto done;

    /* Body first, then guards: the order in which the sites were counted. */
    Put p = {st->a, 0, body};
    body = ir_map_access(cx, s->body, put_access, &p);
    for (int i = 0; i < s->nguards; i++)
        g[ng++] = ir_map_access(cx, s->guards[i], put_access, &p);
    r = rc_replace(rc, f, ir_stage(cx, red, s->loops, s->nloops, sums, ns, g, ng, body));
done:
    free(ids);
    free(by);
    free(sums);
    free(g);
    return r;
}
