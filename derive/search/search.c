/* search.c - the two-phase derivation search of search.h. */
#include "config.h"
#include "search.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Rules the explicit phase enumerates, and those the guided phase uses to
 * repair mismatches.  Tightening runs eagerly after every step; operand
 * and output layouts are fitted at instantiation. */
static const RuleKind explicit_rules[] = {
    RULE_SUM_SPLIT, RULE_VAR_MERGE, RULE_VAR_SPLIT, RULE_VAR_FUSE,
    RULE_RELAX, RULE_INLINE, RULE_LAYOUT_SPLIT, RULE_LAYOUT_MERGE, RULE_SUM_TILE,
    RULE_FACTOR_OUT, RULE_MASK,
};
static const RuleKind guided_rules[] = {
    RULE_VAR_MERGE, RULE_VAR_SPLIT, RULE_VAR_FUSE, RULE_LAYOUT_SPLIT,
    RULE_LAYOUT_MERGE, RULE_FACTOR_OUT, RULE_MASK,
};
#define N_OF(a) ((int)(sizeof a / sizeof *a))
#define GUIDED_STEPS 4
#define GUIDED_BRANCH 2
#define MAX_CANDIDATES 8

void search_default_options(SearchOptions *o)
{
    o->depth = 1;
    o->max_states = 3000;
    o->per_rule = 24;
    o->budget_ms = 60000;
    o->dev = cost_device("h200");
    o->precision = PREC_FP32;
    o->tune_db = NULL;
    o->target = TARGET_CUDA;
    o->dnnl = false;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ---- a set of 64-bit fingerprints (open addressing, 0 is empty) -------- */

typedef struct FpSet {
    uint64_t *slots;
    size_t cap, len;
} FpSet;

static bool fp_insert(FpSet *s, uint64_t fp)
{
    if (fp == 0)
        fp = 1;
    if (2 * (s->len + 1) > s->cap) {
        size_t ncap = s->cap ? 2 * s->cap : 1024;
        uint64_t *ns = xcalloc(ncap, sizeof *ns);
        for (size_t i = 0; i < s->cap; i++) {
            if (!s->slots[i])
                continue;
            size_t j = s->slots[i] & (ncap - 1);
            while (ns[j])
                j = (j + 1) & (ncap - 1);
            ns[j] = s->slots[i];
        }
        free(s->slots);
        s->slots = ns;
        s->cap = ncap;
    }
    size_t j = fp & (s->cap - 1);
    for (; s->slots[j]; j = (j + 1) & (s->cap - 1))
        if (s->slots[j] == fp)
            return false;
    s->slots[j] = fp;
    s->len++;
    return true;
}

/* ---- mismatch distance -----------------------------------------------------
 * How far the product stages of an expression are from plain operands:
 * in each index dimension of each operand, every iterator beyond the first,
 * every coefficient other than +-1 and every division or modulo counts
 * (a division twice: it takes a split and a merge to remove); and every
 * guard of a product.  A dense GEMM is 0; a convolution's h + r - 1 is 1;
 * a dilated band's i + 4*j - 128 is 2. */

static int dim_distance(const Ix *x)
{
    int d = 0, vars = 0;
    for (int i = 0; i < x->n; i++) {
        const IxTerm *t = &x->t[i];
        if (t->kind == IX_VAR) {
            vars++;
            d += t->coef != 1 && t->coef != -1;
        } else {
            d += 2 + dim_distance(t->arg);
        }
    }
    return d + (vars > 1 ? vars - 1 : 0);
}

static int stage_distance(const Stage *s);

static int expr_distance(const IExpr *e)
{
    if (e->kind == IE_ACCESS)
        return e->access.stage ? stage_distance(e->access.stage) : 0;
    const IExpr *kids[IR_MAX_CHILDREN];
    int n = ir_expr_children(e, kids), d = 0;
    for (int i = 0; i < n; i++)
        d += expr_distance(kids[i]);
    return d;
}

/* The factors of a product body (top-level * and /, unary -): how many,
 * and how many are accesses that use a sum variable of s; -1 past 16. */
static int product_factors(const Stage *s, const IExpr *e, int *summed, int *dims)
{
    switch (e->kind) {
    case IE_MUL: case IE_DIV: {
        int a = product_factors(s, e->bin.a, summed, dims);
        int b = e->kind == IE_MUL ? product_factors(s, e->bin.b, summed, dims) : 1;
        return a < 0 || b < 0 || a + b > 16 ? -1 : a + b;
    }
    case IE_NEG: {
        int a = product_factors(s, e->bin.a, summed, dims);
        return a < 0 ? -1 : a + 1;
    }
    case IE_ACCESS:
        for (int i = 0; i < s->nsums; i++)
            if (ir_expr_uses(e, s->sums[i].id)) {
                ++*summed;
                for (int k = 0; k < e->access.nidx; k++)
                    *dims += dim_distance(e->access.idx[k]);
                break;
            }
        return 1;
    default:
        return 1;
    }
}

static int stage_distance(const Stage *s)
{
    int d = expr_distance(s->body);
    const IExpr *b = s->body;
    /* A product of two summed reads with other factors (a scale, a 1/z,
     * a sign) is that many steps from the plain one factoring out makes. */
    int summed = 0, dims = 0;
    int nf = s->red == RED_SUM && s->nsums ? product_factors(s, b, &summed, &dims) : -1;
    if (summed >= 2 && nf > 2)
        return d + (nf - summed) + dims + s->nguards;
    if (s->red != RED_SUM || b->kind != IE_MUL || b->bin.a->kind != IE_ACCESS ||
        b->bin.b->kind != IE_ACCESS)
        return d;
    for (int k = 0; k < 2; k++) {
        const IExpr *acc = k ? b->bin.b : b->bin.a;
        for (int i = 0; i < acc->access.nidx; i++)
            d += dim_distance(acc->access.idx[i]);
    }
    return d + s->nguards;
}

int search_distance(const Stage *s)
{
    return stage_distance(s);
}

/* ---- the search --------------------------------------------------------- */

typedef struct Search {
    RuleCtx *rc;
    IrCtx *cx;
    const IrTensor *result;
    const SearchOptions *opt;
    int *next_id;
    SearchResult *out;
    FpSet seen;
    double t0;
    RuleSites sites;
    RuleSites tsites;               /* tighten's, kept from call to call */
    bool trace;
} Search;

bool search_budget_spent(double budget_ms)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0)
        return false;
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6 > budget_ms;
}

static bool out_of_budget(Search *s)
{
    if (s->out->nodes.len >= s->opt->max_states || search_budget_spent(s->opt->budget_ms)) {
        s->out->out_of_budget = true;
        return true;
    }
    return false;
}

/* Tighten every stage of the tree until nothing changes. */
static const Stage *tighten(Search *s, const Stage *e)
{
    RuleSites *ts = &s->tsites;
    for (int round = 0; round < 8; round++) {
        ts->len = 0;
        rule_sites(s->rc, e, RULE_TIGHTEN, ts);
        const Stage *before = e;
        for (int i = 0; i < ts->len; i++) {
            const Stage *t = rule_apply(s->rc, e, &ts->data[i]);
            if (t)
                e = t;
        }
        if (e == before || ir_stage_equal(e, before))
            break;
    }
    return e;
}

/* FNV-1a over a text, and a byte that ends it. */
static uint64_t fnv(uint64_t h, const char *s)
{
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
    return (h ^ 0xff) * 0x100000001b3ULL;       /* ends every text */
}

/* A key for a plan: the canonical text of each library operator it runs
 * per call (its implementation and the operator key of cost.h, which
 * holds the kind, the precision, the element types and every size of
 * match_dims: transposes, leading dimensions, padding, dilation, groups,
 * output padding...; with the batch strides and offsets, which are not
 * in it) and the number of its kernels, so plans that differ only in how
 * a kernel is written, or in what runs at load, count once (the cheapest
 * is kept).  An epilogue counts as what it is: a pass after a call, or
 * part of a kernel's store. */
uint64_t search_plan_key(const Pieces *p, Precision prec)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    char extra[160];
    for (int i = 0; i < p->ops.len; i++) {
        const PlanOp *o = &p->ops.data[i];
        const OpMatch *m = &o->op;
        if (o->at_load)
            continue;               /* runs at load: not part of the plan's cost */
        if (o->impl == IMPL_KERNEL) {
            h = fnv(h, o->epi.value ? "kernel+epilogue" : "kernel");
            continue;               /* kernels count, not their form */
        }
        char *key = cost_op_key(NULL, o->stage, m, prec);
        snprintf(extra, sizeof extra, "%s sa=%lld sb=%lld sc=%lld oa=%lld ob=%lld%s",
                 cost_impl_name(o->impl), (long long)m->stride_a, (long long)m->stride_b,
                 (long long)m->stride_c, (long long)m->off_a, (long long)m->off_b,
                 o->epi.value ? " +epilogue" : "");
        h = fnv(fnv(h, key), extra);
        free(key);
    }
    return h;
}

/* The candidates kept are the MAX_CANDIDATES cheapest distinct plans (by
 * search_plan_key).  Returns whether `c` was kept. */
static bool keep_candidate(Search *s, const Candidate *c)
{
    Arena *a = ir_arena(s->cx);
    int same = -1, worst = -1;
    for (int i = 0; i < s->out->cands.len; i++) {
        const Candidate *k = &s->out->cands.data[i];
        if (k->key == c->key)
            same = i;
        if (worst < 0 || k->pieces.cost > s->out->cands.data[worst].pieces.cost)
            worst = i;
    }
    if (same >= 0) {
        if (c->pieces.cost >= s->out->cands.data[same].pieces.cost)
            return false;
        s->out->cands.data[same] = *c;
    } else if (s->out->cands.len < MAX_CANDIDATES) {
        vec_push(a, &s->out->cands, *c);
    } else if (c->pieces.cost < s->out->cands.data[worst].pieces.cost) {
        s->out->cands.data[worst] = *c;
    } else {
        return false;
    }
    return true;
}

/* Add a state: instantiate and price it, keep its plan if it is new. */
static int add_node(Search *s, const Stage *e, int parent, const RuleSite *via,
                    int depth, bool guided)
{
    SearchNode n = {e, parent, {0}, depth, guided, 0};
    if (via)
        n.via = *via;
    else
        n.via.rule = RULE_COUNT;
    /* Instantiate; keep what that built only when the plan is new. */
    Candidate c = {{{0}, 0}, s->out->nodes.len, 0};
    IrMark mark = ir_ctx_mark(s->cx);
    CostModel cm = {s->opt->dev, s->opt->precision, s->opt->tune_db, s->opt->target,
                    s->opt->dnnl};
    plan_instantiate(s->cx, &cm, s->result, e, s->next_id, &c.pieces);
    n.cost = c.pieces.cost;
    c.key = search_plan_key(&c.pieces, s->opt->precision);
    bool keep = keep_candidate(s, &c);
    if (!keep && !s->trace)
        ir_ctx_release(s->cx, mark);
    vec_push(ir_arena(s->cx), &s->out->nodes, n);
    if (s->trace) {             /* EINC_SEARCH_TRACE=1: every state, for debugging */
        fprintf(stderr, "#%d <- #%d %s%s d=%d %.2fus: ", s->out->nodes.len - 1, parent,
                via ? rule_table[via->rule].tag : "root", guided ? " (guided)" : "",
                search_distance(e), n.cost * 1e6);
        ir_print_stage(s->cx, e, stderr);
        fputc('\n', stderr);
        for (int i = 0; i < c.pieces.ops.len; i++) {
            fprintf(stderr, "    -> %s ", op_kind_name(c.pieces.ops.data[i].op.kind));
            ir_print_stage(s->cx, c.pieces.ops.data[i].stage, stderr);
            fputc('\n', stderr);
        }
    }
    return s->out->nodes.len - 1;
}

/* Every successor of node `at` by the rules in `rules`, tightened and not
 * seen before.  Returns how many were added. */
static int expand(Search *s, int at, const RuleKind *rules, int nrules)
{
    int added = 0;
    s->out->expanded++;
    for (int r = 0; r < nrules; r++) {
        s->sites.len = 0;
        const Stage *e = s->out->nodes.data[at].expr;
        rule_sites(s->rc, e, rules[r], &s->sites);
        int applied = 0;
        for (int i = 0; i < s->sites.len && applied < s->opt->per_rule; i++) {
            IrMark mark = ir_ctx_mark(s->cx);
            const Stage *t = rule_apply(s->rc, e, &s->sites.data[i]);
            if (!t)
                continue;
            applied++;
            t = tighten(s, t);
            if (!fp_insert(&s->seen, ir_fingerprint(t))) {
                ir_ctx_release(s->cx, mark);
                continue;
            }
            if (out_of_budget(s))
                return added;
            add_node(s, t, at, &s->sites.data[i], s->out->nodes.data[at].depth + 1, false);
            added++;
        }
    }
    return added;
}

/* From node `at`, the guided steps that lower the mismatch distance most
 * (the GUIDED_BRANCH best of them), recursively; the distance falls at
 * each step, so this ends. */
typedef struct Step {
    const Stage *t;
    int d;
    int site;
} Step;

static int step_cmp(const void *a, const void *b)
{
    const Step *x = a, *y = b;
    return x->d != y->d ? x->d - y->d : x->site - y->site;
}

static void guide(Search *s, int at, int steps)
{
    const Stage *e = s->out->nodes.data[at].expr;
    int d = search_distance(e);
    if (d == 0 || steps >= GUIDED_STEPS)
        return;
    RuleSites sites = {0};
    for (int r = 0; r < N_OF(guided_rules); r++)
        rule_sites(s->rc, e, guided_rules[r], &sites);
    Step *next = xmalloc((size_t)(sites.len + 1) * sizeof *next);
    int n = 0;
    for (int i = 0; i < sites.len; i++) {
        IrMark mark = ir_ctx_mark(s->cx);     /* drop what does not help */
        const Stage *t = rule_apply(s->rc, e, &sites.data[i]);
        int td = t ? search_distance(t = tighten(s, t)) : d;
        if (td < d)
            next[n++] = (Step){t, td, i};
        else
            ir_ctx_release(s->cx, mark);
    }
    qsort(next, (size_t)n, sizeof *next, step_cmp);
    for (int i = 0, taken = 0; i < n && taken < GUIDED_BRANCH && !out_of_budget(s); i++) {
        if (!fp_insert(&s->seen, ir_fingerprint(next[i].t)))
            continue;
        taken++;
        int child = add_node(s, next[i].t, at, &sites.data[next[i].site],
                             s->out->nodes.data[at].depth, true);
        guide(s, child, steps + 1);
    }
    free(next);
    rule_sites_free(&sites);
}

/* EINC_SEARCH_TRACE=1 (anything but empty or 0) prints every state. */
static bool trace_on(void)
{
    const char *v = getenv("EINC_SEARCH_TRACE");
    return v && *v && strcmp(v, "0") != 0;
}

static int cand_cmp(const void *a, const void *b)
{
    const Candidate *x = a, *y = b;
    if (x->pieces.cost != y->pieces.cost)
        return x->pieces.cost < y->pieces.cost ? -1 : 1;
    return x->node - y->node;   /* fewer steps first: deterministic */
}

void search_tensor(RuleCtx *rc, const IrTensor *result, const SearchOptions *opt,
                   int *next_id, SearchResult *out)
{
    Search s = {.rc = rc, .cx = rule_ir(rc), .result = result, .opt = opt,
                .next_id = next_id, .out = out, .t0 = now_ms(), .trace = trace_on()};
    memset(out, 0, sizeof *out);
    const Stage *root = tighten(&s, result->stage);
    fp_insert(&s.seen, ir_fingerprint(root));
    add_node(&s, root, -1, NULL, 0, false);

    /* explicit phase: breadth first, level by level, in at most half of
     * the states, so that the guided phase always has room */
    SearchOptions half = *opt;
    half.max_states = opt->max_states / 2;
    s.opt = &half;
    int level_begin = 0;
    for (int depth = 0; depth < opt->depth && !out->out_of_budget; depth++) {
        int level_end = out->nodes.len;
        for (int i = level_begin; i < level_end && !out->out_of_budget; i++)
            expand(&s, i, explicit_rules, N_OF(explicit_rules));
        level_begin = level_end;
    }
    s.opt = opt;
    out->out_of_budget = false;
    /* guided phase from every state reached */
    int reached = out->nodes.len;
    for (int i = 0; i < reached && !out_of_budget(&s); i++)
        guide(&s, i, 0);

    qsort(out->cands.data, (size_t)out->cands.len, sizeof *out->cands.data, cand_cmp);
    out->chosen = 0;
    out->ms = now_ms() - s.t0;
    free(s.seen.slots);
    rule_sites_free(&s.sites);
    rule_sites_free(&s.tsites);
}

/* ---- reuse: a search done for another statement of the same form -------------
 * Models repeat their layers: ResNet's blocks, a transformer's heads and
 * layers.  Two statements of one form (the same expression up to the names
 * of its variables and which tensors of one kind, element type and shape
 * it reads) are searched once: the second takes the first's states and
 * candidates, copied over its own tensors with new variables, and
 * instantiates each candidate again (its own intermediates). */

/* What ir_fingerprint_form hashes of a tensor. */
static bool same_form(const IrTensor *a, const IrTensor *b)
{
    if (a->kind != b->kind || a->elem != b->elem || a->weight_only != b->weight_only
        || a->rank != b->rank)
        return false;
    for (int d = 0; d < a->rank; d++)
        if (a->shape[d] != b->shape[d])
            return false;
    return true;
}

/* Pairs was[k..n) with the tensors of now[] not yet taken (taken[]), each
 * with one of its form, in turn, until from_stage over the pairs
 * (ir_stage_copy into to[]) is the same computation as the stage whose
 * fingerprint is `want`. */
static bool pair_reads(IrCtx *cx, const Stage *from_stage, uint64_t want,
                       const IrTensor **was, const IrTensor **now, bool *taken,
                       const IrTensor **to, int k, int n)
{
    if (k == n) {
        const Stage *same = ir_stage_copy(cx, from_stage, was, to, n);
        return same && ir_fingerprint(same) == want;
    }
    /* now[k] first: the walks of the two expressions mostly agree */
    for (int t = 0; t < n; t++) {
        int j = (k + t) % n;
        if (taken[j] || !same_form(was[k], now[j]))
            continue;
        taken[j] = true;
        to[k] = now[j];
        bool same = pair_reads(cx, from_stage, want, was, now, taken, to, k + 1, n);
        taken[j] = false;
        if (same)
            return true;
    }
    return false;
}

/* Pairings tried at most: n! for the n tensors an expression reads. */
#define MAX_PAIRED 5

/* done's states copied into rc's context with each read of was[i] reading
 * to[i] (n pairs; was NULL: each tensor itself), and its candidates instantiated again for result and
 * priced, the cheapest chosen; false where a state reads another tensor.
 * Whatever it made stays (the caller releases it). */
static bool copy_result(RuleCtx *rc, const IrTensor *result, const SearchResult *done,
                        const IrTensor *const *was, const IrTensor *const *to, int n,
                        const SearchOptions *opt, int *next_id, SearchResult *out)
{
    IrCtx *cx = rule_ir(rc);
    double t0 = now_ms();
    SearchResult r = {0};
    Arena *a = ir_arena(cx);
    for (int i = 0; i < done->nodes.len; i++) {
        SearchNode node = done->nodes.data[i];
        node.expr = ir_stage_copy(cx, node.expr, was, to, n);
        if (!node.expr)
            return false;
        /* what the rule was applied to is done's */
        node.via.focus = node.via.target = NULL;
        node.via.tensor = NULL;
        vec_push(a, &r.nodes, node);
    }
    CostModel cm = {opt->dev, opt->precision, opt->tune_db, opt->target, opt->dnnl};
    for (int i = 0; i < done->cands.len; i++) {
        Candidate c = done->cands.data[i];
        memset(&c.pieces, 0, sizeof c.pieces);
        plan_instantiate(cx, &cm, result, r.nodes.data[c.node].expr, next_id, &c.pieces);
        c.key = search_plan_key(&c.pieces, opt->precision);
        vec_push(a, &r.cands, c);
    }
    /* The order of commutative operands follows the tensors' ids, so a
     * candidate may price a little otherwise here (a GEMM's operands
     * swapped): the cheapest for result is chosen again. */
    if (r.cands.len > 1)
        qsort(r.cands.data, (size_t)r.cands.len, sizeof *r.cands.data, cand_cmp);
    r.chosen = 0;
    r.expanded = done->expanded;
    r.out_of_budget = done->out_of_budget;
    r.ms = now_ms() - t0;
    *out = r;
    return true;
}

bool search_reuse(RuleCtx *rc, const IrTensor *result, const IrTensor *from,
                  const Stage *from_stage, const SearchResult *done,
                  const SearchOptions *opt, int *next_id, SearchResult *out)
{
    IrCtx *cx = rule_ir(rc);
    const IrTensor *was[MAX_PAIRED], *now[MAX_PAIRED], *to[MAX_PAIRED];
    bool taken[MAX_PAIRED] = {false};
    int n = ir_stage_tensors(from_stage, was, MAX_PAIRED);
    if (done->out_of_budget || n > MAX_PAIRED
        || ir_stage_tensors(result->stage, now, MAX_PAIRED) != n
        || !same_form(from, result))
        return false;
    IrMark mark = ir_ctx_mark(cx);
    int first_id = *next_id;
    /* the same computation: `from`'s expression over result's tensors */
    if (pair_reads(cx, from_stage, ir_fingerprint(result->stage), was, now, taken, to, 0, n) &&
        copy_result(rc, result, done, was, to, n, opt, next_id, out))
        return true;
    ir_ctx_release(cx, mark);
    *next_id = first_id;
    return false;
}

void search_adopt(RuleCtx *rc, const IrTensor *result, const SearchResult *done,
                  const SearchOptions *opt, int *next_id, SearchResult *out)
{
    /* each tensor read as itself: no state reads one it cannot copy */
    if (!copy_result(rc, result, done, NULL, NULL, 0, opt, next_id, out))
        ICE("search_adopt: a state of %s could not be copied", result->name);
}
