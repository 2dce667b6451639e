/* test_rules.c - the derivation rules against the interpreter.
 *
 * Random part: random stage trees (gen.c); at every state, every rule is
 * applied at (a sample of) its sites, and each result is evaluated in
 * double precision on the same random inputs and compared with the
 * original, point by point over the union of the two output boxes (a
 * tightened root reads zero outside its box).  Then the walk continues
 * from one of the results, so rules also meet the nested stages and
 * guards other rules produce.  Every result must also keep the tree's
 * invariant (closed, no variable bound twice on a path, stages that share
 * a binder equal), and the state it came from must be unchanged (rules are
 * pure).  A rule that never applies fails the test.
 *
 * The same random derivations start from the stages that lowering makes
 * of a small .ein program (convolutions plain, 5x5, dilated and
 * transposed, pooling, banded attention, a reshape, softmax, select, a
 * rank-0 sum), checked against the values the whole program computed.
 *
 * Hand-written part: each step of EinNet's conv 3x3 derivation, printed;
 * steps of the other showcases (conv 5x5 relaxed and split, transposed
 * convolution, dilated G2BMM); and preconditions that must refuse. */
#include "config.h"
#include "derive/rules/rules.h"
#include "parser/parser.h"
#include "sema/sema.h"
#include "gen.h"
#include "tests/check.h"

#include <math.h>

static IrCtx *cx;
static RuleCtx *rc;
static int applied[RULE_COUNT], refused[RULE_COUNT];

/* ---- the invariant ------------------------------------------------------------ */

static bool *bound;

static bool ok_ix(const Ix *x)
{
    for (int i = 0; i < x->n; i++)
        if (x->t[i].kind == IX_VAR ? !bound[x->t[i].var] : !ok_ix(x->t[i].arg))
            return false;
    return true;
}

static bool ok_stage(const Stage *s);

static bool ok_expr(const IExpr *e)
{
    const Ix *const *ixs;
    int nx = ir_expr_ixs(e, &ixs);
    for (int k = 0; k < nx; k++)
        if (!ok_ix(ixs[k]))
            return false;
    if (ir_expr_stage(e) && !ok_stage(ir_expr_stage(e)))
        return false;
    const IExpr *kids[IR_MAX_CHILDREN];
    int n = ir_expr_children(e, kids);
    for (int i = 0; i < n; i++)
        if (!ok_expr(kids[i]))
            return false;
    return true;
}

static const Stage **binder;         /* the first stage seen binding each id */

static bool ok_vars(const Stage *s, const IrVar *v, int n, bool on)
{
    for (int i = 0; i < n; i++) {
        if (on && bound[v[i].id])
            return false;
        bound[v[i].id] = on;
        if (on && binder[v[i].id] && !ir_stage_equal(binder[v[i].id], s))
            return false;
        binder[v[i].id] = s;
    }
    return true;
}

/* Closed, no variable bound twice on a path, and stages that bind the
 * same variable equal (so every copy of a stage sees the same ranges). */
static bool ok_stage(const Stage *s)
{
    if (!ok_vars(s, s->loops, s->nloops, true) || !ok_vars(s, s->sums, s->nsums, true))
        return false;
    bool ok = ok_expr(s->body);
    for (int i = 0; i < s->nguards && ok; i++)
        ok = ok_expr(s->guards[i]);
    ok_vars(s, s->loops, s->nloops, false);
    ok_vars(s, s->sums, s->nsums, false);
    return ok;
}

static bool ok_tree(const Stage *s)
{
    bound = calloc((size_t)ir_var_count(cx), sizeof *bound);
    binder = calloc((size_t)ir_var_count(cx), sizeof *binder);
    bool ok = ok_stage(s);
    free(bound);
    free(binder);
    return ok;
}

/* ---- values ---------------------------------------------------------------------- */

#define MAX_LOOPS 16                /* of a root whose values are compared */

typedef struct Vals {
    double *v;
    int n;
    int64_t lo[MAX_LOOPS], hi[MAX_LOOPS];
} Vals;

static Vals eval(const Stage *s, double *const *data)
{
    if (s->nloops > MAX_LOOPS) {
        fprintf(stderr, "test_rules: a root of %d loops (MAX_LOOPS %d)\n", s->nloops, MAX_LOOPS);
        exit(99);
    }
    Vals r = {.n = s->nloops};
    size_t size = 1;
    for (int k = 0; k < s->nloops; k++) {
        r.lo[k] = s->loops[k].lo;
        r.hi[k] = s->loops[k].hi;
        size *= (size_t)(r.hi[k] > r.lo[k] ? r.hi[k] - r.lo[k] : 0);
    }
    r.v = malloc((size ? size : 1) * sizeof *r.v);
    ir_eval_stage(s, data, r.v);
    return r;
}

/* The value at point p, 0 outside the box. */
static double at(const Vals *a, const int64_t *p)
{
    size_t off = 0;
    for (int k = 0; k < a->n; k++) {
        if (p[k] < a->lo[k] || p[k] >= a->hi[k])
            return 0;
        off = off * (size_t)(a->hi[k] - a->lo[k]) + (size_t)(p[k] - a->lo[k]);
    }
    return a->v[off];
}

static bool same_vals(const Vals *a, const Vals *b)
{
    if (a->n != b->n)
        return false;
    int64_t lo[MAX_LOOPS], hi[MAX_LOOPS], p[MAX_LOOPS];
    for (int k = 0; k < a->n; k++) {
        lo[k] = a->lo[k] < b->lo[k] ? a->lo[k] : b->lo[k];
        hi[k] = a->hi[k] > b->hi[k] ? a->hi[k] : b->hi[k];
        if (hi[k] <= lo[k])
            return true;
        p[k] = lo[k];
    }
    for (;;) {
        double x = at(a, p), y = at(b, p);
        if (!(fabs(x - y) <= 1e-9 * (1 + fabs(x))))
            return false;
        int k = a->n - 1;
        for (; k >= 0; k--) {
            if (++p[k] < hi[k])
                break;
            p[k] = lo[k];
        }
        if (k < 0)
            return true;
    }
}

static void new_ctx(Arena **ar)
{
    *ar = arena_new();
    cx = ir_ctx_new(*ar);
    rc = rule_ctx_new(cx);
}

static void free_ctx(Arena *ar)
{
    rule_ctx_free(rc);
    arena_free(ar);
}

/* ---- random derivations ------------------------------------------------------------ */

#define PER_RULE 10                 /* sites tried per rule and state */
static int gather_applied;          /* rules applied to stages with a gather */

static void report(const Stage *from, const RuleSite *site, const Stage *to, const char *what)
{
    fprintf(stderr, "%s after ", what);
    rule_print_site(cx, from, site, stderr);
    fputs("\n  before: ", stderr);
    ir_print_stage(cx, from, stderr);
    fputs("\n  after:  ", stderr);
    ir_print_stage(cx, to, stderr);
    fputc('\n', stderr);
    failures++;
}

/* Applies a sample of each rule's sites at s and checks each result;
 * returns one result, chosen uniformly among the rules that applied and
 * then among that rule's results (NULL if none applied). */
static const Stage *try_all(Gen *g, double *const *data, const Stage *s, const Vals *want)
{
    RuleSites sites = {0};
    rule_sites(rc, s, RULE_COUNT, &sites);
    const char *before = strdup(PRINTED(ir_print_stage(cx, s, fp)));
    const Stage *pick[RULE_COUNT];
    int npick = 0;
    for (int r = 0; r < RULE_COUNT; r++) {
        int idx[4096], n = 0, ok = 0;
        for (int i = 0; i < sites.len && n < 4096; i++)
            if (sites.data[i].rule == (RuleKind)r)
                idx[n++] = i;
        for (int i = 0; i < n && i < PER_RULE; i++) {
            int j = i + (int)gen_range(g, 0, n - 1 - i), t = idx[i];
            idx[i] = idx[j];
            idx[j] = t;
            const RuleSite *site = &sites.data[idx[i]];
            const Stage *to = rule_apply(rc, s, site);
            if (!to) {
                refused[r]++;
                continue;
            }
            applied[r]++;
            gather_applied += ir_stage_has_gather(s);
            if (!ok_tree(to)) {
                report(s, site, to, "broken invariant");
                continue;
            }
            Vals got = eval(to, data);
            if (!same_vals(want, &got))
                report(s, site, to, "values differ");
            else if (gen_range(g, 0, ok++) == 0)
                pick[ok == 1 ? npick++ : npick - 1] = to;
            free(got.v);
        }
    }
    CHECK_STR(PRINTED(ir_print_stage(cx, s, fp)), before);
    free((void *)before);
    rule_sites_free(&sites);
    return npick ? pick[gen_range(g, 0, npick - 1)] : NULL;
}

/* ir.h's IExpr.folds, from scratch: an IE_ICMP, or a subscript with a
 * div or mod, in e or below it (not in nested stages or gathers, which
 * ir_expr_fold leaves alone); fold must return e where it is false. */
static bool folds_ref(const IExpr *e)
{
    if (e->kind == IE_ICMP)
        return true;
    const IExpr *kids[IR_MAX_CHILDREN];
    const Ix *const *ixs;
    int nk = ir_expr_children(e, kids), nx = ir_expr_ixs(e, &ixs);
    bool r = false;
    for (int i = 0; i < nx; i++)
        for (int j = 0; j < ixs[i]->n; j++)
            r |= ixs[i]->t[j].kind == IX_DIV || ixs[i]->t[j].kind == IX_MOD;
    for (int i = 0; i < nk; i++)
        r |= folds_ref(kids[i]);
    return r;
}

static int folds_checked;

static bool check_folds(const Stage *s);

static bool check_folds_expr(const IExpr *e)
{
    bool ok = e->folds == folds_ref(e);
    folds_checked++;
    const IExpr *kids[IR_MAX_CHILDREN];
    int nk = ir_expr_children(e, kids);
    for (int i = 0; i < nk; i++)
        ok &= check_folds_expr(kids[i]);
    if (ir_expr_stage(e))
        ok &= check_folds(ir_expr_stage(e));
    if (!e->folds) {
        int64_t *lo = calloc((size_t)ir_var_count(cx) + 1, sizeof *lo);
        int64_t *hi = calloc((size_t)ir_var_count(cx) + 1, sizeof *hi);
        ok &= ir_expr_fold(cx, e, lo, hi) == e;
        free(lo);
        free(hi);
    }
    return ok;
}

static bool check_folds(const Stage *s)
{
    bool ok = check_folds_expr(s->body);
    for (int i = 0; i < s->nguards; i++)
        ok &= check_folds_expr(s->guards[i]);
    return ok;
}

/* ir_stage_rebody is ir_stage with s's variables: the same stage (hash
 * included) for s's own guards and body, and for others (s's guards
 * reversed and given twice, a constant body). */
static bool check_rebody(const Stage *s)
{
    const Stage *r = ir_stage_rebody(cx, s, s->guards, s->nguards, s->body);
    bool ok = r != s && r->hash == s->hash && r->vars_hash == s->vars_hash &&
              ir_stage_equal(r, s);
    int ng = 2 * s->nguards;
    const IExpr **g = malloc((size_t)(ng + 1) * sizeof *g);
    for (int i = 0; i < s->nguards; i++)
        g[i] = g[ng - 1 - i] = s->guards[s->nguards - 1 - i];
    const IExpr *body = ir_const(cx, 2);
    const Stage *a = ir_stage_rebody(cx, s, g, ng, body);
    const Stage *b = ir_stage(cx, s->red, s->loops, s->nloops, s->sums, s->nsums, g, ng, body);
    ok &= a->hash == b->hash && ir_stage_equal(a, b) && a->nguards == s->nguards;
    free(g);
    return ok;
}

static void test_random(int cases, int depth)
{
    for (int c = 0; c < cases; c++) {
        Arena *ar;
        new_ctx(&ar);
        Gen g;
        gen_init(&g, cx, (uint64_t)c + 1);
        const Stage *s = gen_stage(&g);
        CHECK(ok_tree(s));
        CHECK(check_folds(s), "IExpr.folds differs from its definition in case %d", c);
        CHECK(check_rebody(s), "ir_stage_rebody differs from ir_stage in case %d", c);
        Vals want = eval(s, g.data);
        for (int d = 0; d < depth && s; d++) {
            s = try_all(&g, g.data, s, &want);
            if (s) {
                CHECK(check_folds(s), "IExpr.folds differs from its definition in case %d", c);
                CHECK(check_rebody(s), "ir_stage_rebody differs from ir_stage in case %d", c);
            }
        }
        free(want.v);
        gen_free(&g);
        free_ctx(ar);
    }
}

/* ---- lowered programs ------------------------------------------------------------- */

/* Stages as lowering makes them, from .ein text: every defined tensor's
 * stage is the start of random derivations, checked against the values
 * the whole program computed for it. */
static const char program[] =
    "const C = 2, F = 3, H = 4, W = 3, L = 8\n"
    "input  x  : f32[1, C, H, W]\n"
    "weight w3 : f32[F, C, 3, 3]\n"
    "weight w5 : f32[F, C, 5, 5]\n"
    "weight wt : f32[C, F, 4, 4]\n"
    "weight wd : f32[F, F, 3, 3]\n"
    "input  q  : f32[2, L, 3]\n"
    "input  k  : f32[2, L, 3]\n"
    "conv[n, f, h, w] : [1, F, H, W] += x[n, c, h + r - 1, w + s - 1] * w3[f, c, r, s]\n"
    "c5[n, f, h, w] : [1, F, H, W] += x[n, c, h + r - 2, w + s - 2] * w5[f, c, r, s]\n"
    "dil[n, f, h, w] : [1, F, H, W] += relu(conv[n, c, h + 2*r - 2, w + 2*s - 2]) * wd[f, c, r, s]\n"
    "tc[n, f, h, w] : [1, F, 2*H, 2*W] += x[n, c, (h + 1 - r) / 2, (w + 1 - s) / 2] * wt[c, f, r, s]\n"
    "    where (h + 1 - r) % 2 == 0, (w + 1 - s) % 2 == 0\n"
    "mp[n, c, h, w] : [1, C, H/2, W] max= x[n, c, 2*h + a, w + b - 1] ?: 0 where a < 2, b < 3\n"
    "g2[b, i, j] : [2, L, 3] += q[b, i, d] * k[b, i + 2*(j - 1), d]\n"
    "fl[i] : [24] = x[0, i / 12, i / 3 % 4, i % 3]\n"
    "mx[b, i] max= g2[b, i, j]\n"
    "e[b, i, j] = exp(g2[b, i, j] - mx[b, i])\n"
    "sm[b, i] += e[b, i, j]\n"
    "sel[n, c, h, w] = select(x[n, c, h, w] > 0 && h < w, x[n, c, h, w], -x[n, c, h, w] / (h + 1))\n"
    "tot[] += conv[n, f, h, w] * tc[n, f, 2*h, 2*w]\n"
    "sc[b, i, j] : [2, L, L] += q[b, i, d] * k[b, j, d] * 0.5 where j <= i\n"
    "at[b, i, d] += sc[b, i, j] * q[b, j, d] / sm[b, i] where j <= i\n"
    "zs[b, i] += sc[b, i, j] where j <= i\n"
    "cm[b, i, d] += k[b, j, d] * sc[b, i, j] where j < i\n"
    "output dil, c5, tc, mp, fl, sm, sel, tot, sc, at, zs, cm\n";

static void test_lowered(int walks, int depth)
{
    Arena *ar;
    new_ctx(&ar);
    Ast *ast = parse_buffer("rules.ein", program, sizeof program - 1, NULL, ar);
    SemaOptions so = {.model_name = "rules"};
    CProgram *cp = ast ? sema_check(ast, &so, ar) : NULL;
    IrProgram *p = cp ? ir_lower(cx, cp) : NULL;
    CHECK(p != NULL && diag_error_count() == 0);
    if (!p) {
        free_ctx(ar);
        return;
    }
    double **vals = calloc((size_t)p->ntensors, sizeof *vals);
    Gen g;
    gen_init(&g, cx, 4242);
    for (int i = 0; i < p->ntensors; i++) {
        const IrTensor *t = p->tensors[i];
        size_t n = 1;
        for (int d = 0; d < t->rank; d++)
            n *= (size_t)t->shape[d];
        vals[t->id] = malloc(n * sizeof(double));
        for (size_t j = 0; j < n; j++)
            vals[t->id][j] = rng_unit();
    }
    ir_eval_program(p, vals);
    for (int i = 0; i < p->ntensors; i++) {
        const IrTensor *t = p->tensors[i];
        if (t->kind != IT_STAGE)
            continue;
        Vals want = eval(t->stage, vals);
        for (int w = 0; w < walks; w++) {
            const Stage *s = t->stage;
            for (int d = 0; d < depth && s; d++)
                s = try_all(&g, vals, s, &want);
        }
        free(want.v);
    }
    for (int i = 0; i < p->ntensors; i++)
        free(vals[i]);
    free(vals);
    free_ctx(ar);
}

/* ---- hand-written stages ------------------------------------------------------------- */

static IrTensor tensors[4];
static int64_t shapes[4][4];
static double *data[4];

static const IrTensor *tensor(int id, const char *name, int rank, const int64_t *shape)
{
    IrTensor *t = &tensors[id];
    memcpy(shapes[id], shape, (size_t)rank * sizeof *shape);
    *t = (IrTensor){.id = id, .name = name, .kind = IT_INPUT, .rank = rank, .shape = shapes[id]};
    size_t n = 1;
    for (int k = 0; k < rank; k++)
        n *= (size_t)shape[k];
    free(data[id]);
    data[id] = malloc(n * sizeof(double));
    for (size_t i = 0; i < n; i++)
        data[id][i] = rng_unit();
    return t;
}

static const Ix *V(IrVar v)
{
    return ix_var(cx, v.id);
}

static const Ix *K(int64_t c)
{
    return ix_const(cx, c);
}

static const Ix *lin(const Ix *a, int64_t k, const Ix *b, int64_t c)
{
    return ix_add(cx, ix_add(cx, a, ix_scale(cx, b, k)), K(c));
}

static const IExpr *acc(const IrTensor *t, const Ix *i0, const Ix *i1, const Ix *i2, const Ix *i3)
{
    const Ix *idx[4] = {i0, i1, i2, i3};
    return ir_access_tensor(cx, t, idx, t->rank);
}

static const IExpr *mul(const IExpr *a, const IExpr *b)
{
    return ir_binary(cx, IE_MUL, a, b);
}

static const char *show(const Stage *s)
{
    return PRINTED(ir_print_stage(cx, s, fp));
}

/* The stage read by the first access of s's body (a product's first
 * factor or the body itself). */
static const Stage *inner(const Stage *s)
{
    const IExpr *e = s->body;
    while (e->kind != IE_ACCESS)
        e = e->bin.a;
    return e->access.stage;
}

static bool offered(const Stage *root, RuleSite want)
{
    RuleSites sites = {0};
    rule_sites(rc, root, want.rule, &sites);
    bool found = false;
    for (int i = 0; i < sites.len && !found; i++) {
        const RuleSite *s = &sites.data[i];
        found = s->focus == want.focus && s->a == want.a && s->b == want.b && s->k == want.k
             && s->k2 == want.k2 && s->tensor == want.tensor && s->target == want.target;
    }
    rule_sites_free(&sites);
    return found;
}

/* Applies a site that the enumeration must offer; the result must compute
 * what `ref` computes. */
static const Stage *step(const Stage *root, RuleSite site, const Vals *ref)
{
    CHECK(offered(root, site));
    const Stage *r = rule_apply(rc, root, &site);
    CHECK(r != NULL);
    if (!r)
        return root;
    CHECK(ok_tree(r));
    Vals got = eval(r, data);
    if (!same_vals(ref, &got))
        report(root, &site, r, "values differ");
    free(got.v);
    return r;
}

/* EinNet's conv 3x3: split Σ{r,s} out, substitute (h,r) -> h+r and
 * (w,s) -> w+s, tighten. */
static void test_conv3x3(void)
{
    Arena *ar;
    new_ctx(&ar);
    enum { C = 2, F = 3, H = 4, W = 5 };
    const IrTensor *x = tensor(0, "x", 4, (int64_t[]){1, C, H, W});
    const IrTensor *w1 = tensor(1, "w1", 4, (int64_t[]){F, C, 3, 3});
    IrVar n = ir_var_new(cx, "n", 0, 1), f = ir_var_new(cx, "f", 0, F);
    IrVar h = ir_var_new(cx, "h", 0, H), w = ir_var_new(cx, "w", 0, W);
    IrVar c = ir_var_new(cx, "c", 0, C), r = ir_var_new(cx, "r", 0, 3), s = ir_var_new(cx, "s", 0, 3);
    IrVar loops[4] = {n, f, h, w}, sums[3] = {c, r, s};
    const Stage *conv = ir_stage(cx, RED_SUM, loops, 4, sums, 3, NULL, 0,
                                 mul(acc(x, V(n), V(c), lin(V(h), 1, V(r), -1), lin(V(w), 1, V(s), -1)),
                                     acc(w1, V(f), V(c), V(r), V(s))));
    Vals ref = eval(conv, data);
    CHECK_STR(show(conv), "L<n:0..1, f:0..3, h:0..4, w:0..5> Σ<c:0..2, r:0..3, s:0..3> "
                          "{ x[n, c, h + r - 1, w + s - 1] * w1[f, c, r, s] }");

    /* Σ{r, s} outside: sums are in id order c, r, s, so the mask is 0b110. */
    const Stage *s1 = step(conv, (RuleSite){.rule = RULE_SUM_SPLIT, .focus = conv, .k = 6}, &ref);
    CHECK_STR(show(s1), "L<n:0..1, f:0..3, h:0..4, w:0..5> Σ<r:0..3, s:0..3> "
                        "{ (L<n'7:0..1, f'8:0..3, h'9:0..4, w'10:0..5, r'11:0..3, s'12:0..3> Σ<c:0..2> "
                        "{ x[n'7, c, h'9 + r'11 - 1, w'10 + s'12 - 1] * w1[f'8, c, r'11, s'12] })"
                        "[n, f, h, w, r, s] }");

    /* (h, r) -> h + r in the inner stage: its h becomes hr = h + r. */
    const Stage *in = inner(s1);
    const Stage *s2 = step(s1, (RuleSite){.rule = RULE_VAR_MERGE, .focus = in,
                                          .a = in->loops[2].id, .b = in->loops[4].id, .k = 1}, &ref);
    CHECK_STR(show(s2), "L<n:0..1, f:0..3, h:0..4, w:0..5> Σ<r:0..3, s:0..3> "
                        "{ (L<n'7:0..1, f'8:0..3, hr:0..6, w'10:0..5, r'11:0..3, s'12:0..3> Σ<c:0..2> "
                        "{ x[n'7, c, hr - 1, w'10 + s'12 - 1] * w1[f'8, c, r'11, s'12] })"
                        "[n, f, h + r, w, r, s] }");

    in = inner(s2);
    const Stage *s3 = step(s2, (RuleSite){.rule = RULE_VAR_MERGE, .focus = in,
                                          .a = in->loops[3].id, .b = in->loops[5].id, .k = 1}, &ref);
    CHECK_STR(show(s3), "L<n:0..1, f:0..3, h:0..4, w:0..5> Σ<r:0..3, s:0..3> "
                        "{ (L<n'7:0..1, f'8:0..3, hr:0..6, ws:0..7, r'11:0..3, s'12:0..3> Σ<c:0..2> "
                        "{ x[n'7, c, hr - 1, ws - 1] * w1[f'8, c, r'11, s'12] })"
                        "[n, f, h + r, w + s, r, s] }");

    /* Tighten: x has rows 0..H, so hr - 1 must be in [0, H). */
    const Stage *s4 = step(s3, (RuleSite){.rule = RULE_TIGHTEN, .focus = inner(s3)}, &ref);
    CHECK_STR(show(s4), "L<n:0..1, f:0..3, h:0..4, w:0..5> Σ<r:0..3, s:0..3> "
                        "{ (L<n'7:0..1, f'8:0..3, hr:1..5, ws:1..6, r'11:0..3, s'12:0..3> Σ<c:0..2> "
                        "{ x[n'7, c, hr - 1, ws - 1] * w1[f'8, c, r'11, s'12] })"
                        "[n, f, h + r, w + s, r, s] }");
    /* The outer stage was tight already, the inner is now. */
    RuleSite again = {.rule = RULE_TIGHTEN, .focus = s4};
    CHECK(rule_apply(rc, s4, &again) == NULL);
    again.focus = inner(s4);
    CHECK(rule_apply(rc, s4, &again) == NULL);
    free(ref.v);
    free_ctx(ar);
}

/* Conv 5x5 -> conv 3x3 with 4 kernels + an eOperator: relax the kernel to
 * 6x6, split r = 3*r1 + r2 and s likewise, keep Σ{r1, s1} outside,
 * substitute (h, r1) -> h + 3*r1 and (w, s1) likewise, relayout the
 * weights so the kernel index splits. */
static void test_conv5x5(void)
{
    Arena *ar;
    new_ctx(&ar);
    enum { C = 2, H = 6, W = 5 };
    const IrTensor *x = tensor(0, "x", 4, (int64_t[]){1, C, H, W});
    const IrTensor *wt = tensor(1, "w", 4, (int64_t[]){1, C, 5, 5});
    IrVar n = ir_var_new(cx, "n", 0, 1), f = ir_var_new(cx, "f", 0, 1);
    IrVar h = ir_var_new(cx, "h", 0, H), w = ir_var_new(cx, "w", 0, W);
    IrVar c = ir_var_new(cx, "c", 0, C), r = ir_var_new(cx, "r", 0, 5), s = ir_var_new(cx, "s", 0, 5);
    IrVar loops[4] = {n, f, h, w}, sums[3] = {c, r, s};
    const Stage *st = ir_stage(cx, RED_SUM, loops, 4, sums, 3, NULL, 0,
                               mul(acc(x, V(n), V(c), lin(V(h), 1, V(r), -2), lin(V(w), 1, V(s), -2)),
                                   acc(wt, V(f), V(c), V(r), V(s))));
    Vals ref = eval(st, data);
    st = step(st, (RuleSite){.rule = RULE_RELAX, .focus = st, .a = r.id, .k = 0, .k2 = 6}, &ref);
    st = step(st, (RuleSite){.rule = RULE_RELAX, .focus = st, .a = s.id, .k = 0, .k2 = 6}, &ref);
    CHECK_STR(show(st), "L<n:0..1, f:0..1, h:0..6, w:0..5> Σ<c:0..2, r:0..6, s:0..6> "
                        "{ x[n, c, h + r - 2, w + s - 2] * w[f, c, r, s] }");
    st = step(st, (RuleSite){.rule = RULE_VAR_SPLIT, .focus = st, .a = r.id, .k = 3}, &ref);
    st = step(st, (RuleSite){.rule = RULE_VAR_SPLIT, .focus = st, .a = s.id, .k = 3}, &ref);
    CHECK_STR(show(st), "L<n:0..1, f:0..1, h:0..6, w:0..5> Σ<c:0..2, r1:0..2, r2:0..3, s1:0..2, s2:0..3> "
                        "{ x[n, c, h + 3*r1 + r2 - 2, w + 3*s1 + s2 - 2] * w[f, c, 3*r1 + r2, 3*s1 + s2] }");
    /* Sums in id order c, r1, r2, s1, s2: keep r1 and s1 outside. */
    st = step(st, (RuleSite){.rule = RULE_SUM_SPLIT, .focus = st, .k = 0xa}, &ref);
    const Stage *in = inner(st);
    st = step(st, (RuleSite){.rule = RULE_VAR_MERGE, .focus = in, .a = in->loops[2].id,
                             .b = in->loops[4].id, .k = 3}, &ref);
    in = inner(st);
    st = step(st, (RuleSite){.rule = RULE_VAR_MERGE, .focus = in, .a = in->loops[3].id,
                             .b = in->loops[5].id, .k = 3}, &ref);
    in = inner(st);
    st = step(st, (RuleSite){.rule = RULE_LAYOUT_SPLIT, .focus = in, .tensor = wt, .a = 2, .k = 3}, &ref);
    in = inner(st);
    const Stage *w2 = in->body->bin.b->access.stage;
    st = step(st, (RuleSite){.rule = RULE_LAYOUT_SPLIT, .focus = in, .target = w2, .a = 4, .k = 3}, &ref);
    st = step(st, (RuleSite){.rule = RULE_TIGHTEN, .focus = inner(st)}, &ref);
    CHECK_STR(show(st), "L<n:0..1, f:0..1, h:0..6, w:0..5> Σ<r1:0..2, s1:0..2> "
                        "{ (L<n'11:0..1, f'12:0..1, hr1:0..8, ws1:0..7, r1'15:0..2, s1'16:0..2> "
                        "Σ<c:0..2, r2:0..3, s2:0..3> { x[n'11, c, r2 + hr1 - 2, s2 + ws1 - 2] * "
                        "(L<t0:0..1, t1:0..2, t2:0..2, t3:0..3, t4:0..2, t5:0..3> "
                        "{ (L<w0:0..1, w1:0..2, w2:0..2, w3:0..3, w4:0..5> { w[w0, w1, 3*w2 + w3, w4] })"
                        "[t0, t1, t2, t3, 3*t4 + t5] })[f'12, c, r1'15, r2, s1'16, s2] })"
                        "[n, f, h + 3*r1, w + 3*s1, r1, s1] }");
    free(ref.v);
    free_ctx(ar);
}

/* Transposed conv 4x4, stride 2, padding 1 -> Matmul + eOperator: split
 * Σ{r, s} out (with the guards), substitute (h, r) -> h - r, split
 * j + 1 = 2*j1 + j2, tighten (x[(2*j1 + j2) / 2] is x[j1]), drop j2. */
static void test_convtranspose(void)
{
    Arena *ar;
    new_ctx(&ar);
    enum { C = 2, F = 2, H = 2, W = 3 };
    const IrTensor *x = tensor(0, "x", 4, (int64_t[]){1, C, H, W});
    const IrTensor *wt = tensor(1, "wt", 4, (int64_t[]){C, F, 4, 4});
    IrVar n = ir_var_new(cx, "n", 0, 1), f = ir_var_new(cx, "f", 0, F);
    IrVar h = ir_var_new(cx, "h", 0, 2 * H), w = ir_var_new(cx, "w", 0, 2 * W);
    IrVar c = ir_var_new(cx, "c", 0, C), r = ir_var_new(cx, "r", 0, 4), s = ir_var_new(cx, "s", 0, 4);
    IrVar loops[4] = {n, f, h, w}, sums[3] = {c, r, s};
    const Ix *hr = lin(V(h), -1, V(r), 1), *ws = lin(V(w), -1, V(s), 1);
    const IExpr *g[2] = {ir_icmp(cx, OP_EQ, ix_mod(cx, hr, 2), K(0)),
                         ir_icmp(cx, OP_EQ, ix_mod(cx, ws, 2), K(0))};
    const Stage *st = ir_stage(cx, RED_SUM, loops, 4, sums, 3, g, 2,
                               mul(acc(x, V(n), V(c), ix_div(cx, hr, 2), ix_div(cx, ws, 2)),
                                   acc(wt, V(c), V(f), V(r), V(s))));
    Vals ref = eval(st, data);
    CHECK_STR(show(st), "L<n:0..1, f:0..2, h:0..4, w:0..6> Σ<c:0..2, r:0..4, s:0..4> "
                        "{ x[n, c, (h - r + 1) / 2, (w - s + 1) / 2] * wt[c, f, r, s] | "
                        "(h - r + 1) % 2 == 0, (w - s + 1) % 2 == 0 }");
    st = step(st, (RuleSite){.rule = RULE_SUM_SPLIT, .focus = st, .k = 6}, &ref);
    for (int k = 0; k < 2; k++) {
        const Stage *in = inner(st);
        st = step(st, (RuleSite){.rule = RULE_VAR_MERGE, .focus = in, .a = in->loops[2 + k].id,
                                 .b = in->loops[4 + k].id, .k = -1}, &ref);
    }
    for (int k = 0; k < 2; k++) {
        const Stage *in = inner(st);
        st = step(st, (RuleSite){.rule = RULE_VAR_SPLIT, .focus = in, .a = in->loops[2 + 2 * k].id,
                                 .k = 2, .k2 = 1}, &ref);
    }
    st = step(st, (RuleSite){.rule = RULE_TIGHTEN, .focus = inner(st)}, &ref);
    for (int k = 0; k < 2; k++) {
        const Stage *in = inner(st);
        st = step(st, (RuleSite){.rule = RULE_VAR_DROP, .focus = in, .a = in->loops[3 + k].id}, &ref);
    }
    CHECK_STR(show(st), "L<n:0..1, f:0..2, h:0..4, w:0..6> Σ<r:0..4, s:0..4> "
                        "{ (L<n'7:0..1, f'8:0..2, hr1:0..2, ws1:0..3, r'11:0..4, s'12:0..4> Σ<c:0..2> "
                        "{ x[n'7, c, hr1, ws1] * wt[c, f'8, r'11, s'12] })"
                        "[n, f, (h - r + 1) / 2, (w - s + 1) / 2, r, s] | "
                        "(h - r + 1) % 2 == 0, (w - s + 1) % 2 == 0 }");
    free(ref.v);
    free_ctx(ar);
}

/* Dilated G2BMM -> relayout + dense G2BMM + relayout: split the output
 * row i = 4*i1 + i2, relayout q and kt (row m -> [m % 4, m / 4]), put i2
 * before i1. */
static void test_g2bmm(void)
{
    Arena *ar;
    new_ctx(&ar);
    enum { L = 8, D = 2, KB = 1 };
    const IrTensor *q = tensor(0, "q", 3, (int64_t[]){1, L, D});
    const IrTensor *kt = tensor(1, "kt", 3, (int64_t[]){1, L, D});
    IrVar b = ir_var_new(cx, "b", 0, 1), i = ir_var_new(cx, "i", 0, L);
    IrVar j = ir_var_new(cx, "j", 0, 2 * KB + 1), d = ir_var_new(cx, "d", 0, D);
    IrVar loops[3] = {b, i, j};
    const Stage *st = ir_stage(cx, RED_SUM, loops, 3, &d, 1, NULL, 0,
                               mul(acc(q, V(b), V(i), V(d), NULL),
                                   acc(kt, V(b), lin(V(i), 4, V(j), -4 * KB), V(d), NULL)));
    Vals ref = eval(st, data);
    CHECK_STR(show(st), "L<b:0..1, i:0..8, j:0..3> Σ<d:0..2> { q[b, i, d] * kt[b, i + 4*j - 4, d] }");
    st = step(st, (RuleSite){.rule = RULE_VAR_SPLIT, .focus = st, .a = i.id, .k = 4}, &ref);
    const Stage *in = inner(st);
    st = step(st, (RuleSite){.rule = RULE_LAYOUT_SPLIT, .focus = in, .tensor = q, .a = 1, .b = 1, .k = 4}, &ref);
    in = inner(st);
    st = step(st, (RuleSite){.rule = RULE_LAYOUT_SPLIT, .focus = in, .tensor = kt, .a = 1, .b = 1, .k = 4}, &ref);
    in = inner(st);
    st = step(st, (RuleSite){.rule = RULE_LOOP_SWAP, .focus = in, .a = 1, .b = 2}, &ref);
    CHECK_STR(show(st), "L<b:0..1, i:0..8, j:0..3> { (L<b'0:0..1, i2:0..4, i1:0..2, j'2:0..3> Σ<d:0..2> "
                        "{ (L<kt0:0..1, kt1:0..4, kt2:0..2, kt3:0..2> { kt[kt0, 4*kt2 + kt1, kt3] })"
                        "[b'0, i2, j'2 + i1 - 1, d] * "
                        "(L<q0:0..1, q1:0..4, q2:0..2, q3:0..2> { q[q0, 4*q2 + q1, q3] })"
                        "[b'0, i2, i1, d] })[b, i % 4, i / 4, j] }");
    free(ref.v);
    free_ctx(ar);
}

/* Preconditions: each of these would change the value, so the rule must
 * refuse (and, where noted, not even offer the site). */
static void refuse_at(int line, const Stage *root, RuleSite site, bool offer)
{
    const Stage *r = rule_apply(rc, root, &site);
    if (offered(root, site) != offer || r) {
        fprintf(stderr, "line %d: %s\n", line, r ? "applied" : "offered");
        if (r)
            report(root, &site, r, "should refuse");
        else
            failures++;
    }
}
#define refuse(...) refuse_at(__LINE__, __VA_ARGS__)

static void test_refusals(void)
{
    Arena *ar;
    new_ctx(&ar);
    const IrTensor *a = tensor(0, "A", 1, (int64_t[]){8});
    const IrTensor *m = tensor(1, "M", 2, (int64_t[]){3, 3});
    IrVar i = ir_var_new(cx, "i", 0, 3), j = ir_var_new(cx, "j", 0, 3), k = ir_var_new(cx, "k", 0, 3);
    IrVar jk[2] = {j, k};

    /* A loop variable does not merge with a sum variable (the other way
     * round is fine): L<i> Σ<j> { A[i + j] }. */
    const Stage *s = ir_stage(cx, RED_SUM, &i, 1, &j, 1, NULL, 0, acc(a, lin(V(i), 1, V(j), 0), 0, 0, 0));
    refuse(s, (RuleSite){.rule = RULE_VAR_MERGE, .focus = s, .a = i.id, .b = j.id, .k = 1}, false);
    CHECK(offered(s, (RuleSite){.rule = RULE_VAR_MERGE, .focus = s, .a = j.id, .b = i.id, .k = 1}));
    refuse(s, (RuleSite){.rule = RULE_SUM_SPLIT, .focus = s, .k = 1}, false);

    /* max<j, k> { A[i + j - k] | k >= j + 1 }: with j outside, the inner
     * max over k is empty at j = 2 and would read as 0. */
    const IExpr *g = ir_icmp(cx, OP_GE, V(k), ix_add(cx, V(j), K(1)));
    s = ir_stage(cx, RED_MAX, &i, 1, jk, 2, &g, 1,
                 acc(a, ix_sub(cx, lin(V(i), 1, V(j), 0), V(k)), 0, 0, 0));
    refuse(s, (RuleSite){.rule = RULE_SUM_SPLIT, .focus = s, .k = 1}, true);
    refuse(s, (RuleSite){.rule = RULE_SUM_SPLIT, .focus = s, .k = 3}, false);
    /* Without the guard it splits. */
    s = ir_stage(cx, RED_MAX, &i, 1, jk, 2, NULL, 0, s->body);
    Vals ref = eval(s, data);
    step(s, (RuleSite){.rule = RULE_SUM_SPLIT, .focus = s, .k = 1}, &ref);
    free(ref.v);

    /* max<r:0..3> { A[i + r] }: relaxing r to 0..4 adds A[i + 3], a term
     * that is not zero; under Σ too.  But A[i + r + 5] reads zero at r = 3. */
    IrVar r = ir_var_new(cx, "r", 0, 3);
    s = ir_stage(cx, RED_SUM, &i, 1, &r, 1, NULL, 0, acc(a, lin(V(i), 1, V(r), 0), 0, 0, 0));
    refuse(s, (RuleSite){.rule = RULE_RELAX, .focus = s, .a = r.id, .k = 0, .k2 = 4}, true);
    s = ir_stage(cx, RED_SUM, &i, 1, &r, 1, NULL, 0, acc(a, lin(V(i), 1, V(r), 5), 0, 0, 0));
    ref = eval(s, data);
    step(s, (RuleSite){.rule = RULE_RELAX, .focus = s, .a = r.id, .k = 0, .k2 = 4}, &ref);
    free(ref.v);
    s = ir_stage(cx, RED_MAX, &i, 1, &r, 1, NULL, 0, s->body);
    refuse(s, (RuleSite){.rule = RULE_RELAX, .focus = s, .a = r.id, .k = 0, .k2 = 4}, true);

    /* relu(Q[i + 2]) with Q = L<j:0..3> { A[j] - 1 }: Q reads zero at
     * i + 2 >= 3 and relu(0) = 0 but relu(A[j] - 1) need not be; the
     * access is no factor, so the range cannot become a guard. */
    const Stage *q = ir_stage(cx, RED_NONE, &j, 1, NULL, 0, NULL, 0,
                              ir_binary(cx, IE_SUB, acc(a, V(j), 0, 0, 0), ir_const(cx, 1)));
    const Ix *i2 = ix_add(cx, V(i), K(2));
    const IExpr *qa = ir_access_stage(cx, q, &i2, 1);
    s = ir_stage(cx, RED_NONE, &i, 1, NULL, 0, NULL, 0, ir_call(cx, FN_RELU, &qa, 1));
    refuse(s, (RuleSite){.rule = RULE_INLINE, .focus = s, .target = q, .a = 0}, true);
    /* As a factor it inlines, the range becoming a guard. */
    s = ir_stage(cx, RED_NONE, &i, 1, NULL, 0, NULL, 0, mul(qa, acc(a, V(i), 0, 0, 0)));
    ref = eval(s, data);
    s = step(s, (RuleSite){.rule = RULE_INLINE, .focus = s, .target = q, .a = 0}, &ref);
    CHECK_STR(show(s), "L<i:0..3> { A[i] * (A[i + 2] - 1) | i <= 0 }");
    free(ref.v);

    /* Merging M's dimensions would read M[j, k + 1] at k + 1 = 3 as M[j + 1, 0]. */
    s = ir_stage(cx, RED_NONE, jk, 2, NULL, 0, NULL, 0, acc(m, V(j), ix_add(cx, V(k), K(1)), 0, 0));
    refuse(s, (RuleSite){.rule = RULE_LAYOUT_MERGE, .focus = s, .tensor = m, .a = 0}, true);

    /* Q = L<x:0..2, y:0..3> { A[x + 2*y] } read at Q[i, k], i up to 2:
     * fusing x and y would read Q[2, k] as Q[0, k + 1]; dropping an
     * unused variable read out of range would read zeros as values. */
    IrVar x = ir_var_new(cx, "x", 0, 2), y = ir_var_new(cx, "y", 0, 3), xy[2] = {x, y};
    q = ir_stage(cx, RED_NONE, xy, 2, NULL, 0, NULL, 0, acc(a, lin(V(x), 2, V(y), 0), 0, 0, 0));
    const Ix *ik[2] = {V(i), V(k)};
    IrVar ik_v[2] = {i, k};
    s = ir_stage(cx, RED_NONE, ik_v, 2, NULL, 0, NULL, 0, ir_access_stage(cx, q, ik, 2));
    refuse(s, (RuleSite){.rule = RULE_VAR_FUSE, .focus = q, .a = x.id, .b = y.id, .k = 2}, true);
    q = ir_stage(cx, RED_NONE, xy, 2, NULL, 0, NULL, 0, acc(a, V(y), 0, 0, 0));
    s = ir_stage(cx, RED_NONE, ik_v, 2, NULL, 0, NULL, 0, ir_access_stage(cx, q, ik, 2));
    refuse(s, (RuleSite){.rule = RULE_VAR_DROP, .focus = q, .a = x.id}, true);
    free_ctx(ar);
}

/* Inlining one of two reads of Q = L<j> { R[1] }, R = L<k> { A[j + k] }:
 * the inlined copy of R must bind fresh variables, or R and its copy
 * (different stages) would bind k with possibly different ranges later. */
static void test_inline_copy(void)
{
    Arena *ar;
    new_ctx(&ar);
    const IrTensor *a = tensor(0, "A", 1, (int64_t[]){6});
    IrVar i = ir_var_new(cx, "i", 0, 3), j = ir_var_new(cx, "j", 0, 4), k = ir_var_new(cx, "k", 0, 2);
    const Stage *r = ir_stage(cx, RED_NONE, &k, 1, NULL, 0, NULL, 0, acc(a, lin(V(j), 1, V(k), 0), 0, 0, 0));
    const Ix *one = K(1), *ia = V(i), *ib = ix_add(cx, V(i), K(1));
    const Stage *q = ir_stage(cx, RED_NONE, &j, 1, NULL, 0, NULL, 0, ir_access_stage(cx, r, &one, 1));
    const Stage *s = ir_stage(cx, RED_NONE, &i, 1, NULL, 0, NULL, 0,
                              mul(ir_access_stage(cx, q, &ia, 1), ir_access_stage(cx, q, &ib, 1)));
    Vals ref = eval(s, data);
    for (int n = 0; n < 2; n++) {
        const Stage *t = step(s, (RuleSite){.rule = RULE_INLINE, .focus = s, .target = q, .a = n}, &ref);
        const IExpr *e = t->body->bin.a->access.stage == q ? t->body->bin.b : t->body->bin.a;
        CHECK(e->access.stage != q && e->access.stage->loops[0].id != k.id);
    }
    free(ref.v);
    free_ctx(ar);
}

/* A tree wider than the rules' scratch arrays on the stack (rules.c's
 * walk: 24 variables in scope, 32 distinct stages; tightening: 16
 * variables and 8 guards of a stage; ir_stage: 8 guards; a rebuild: 8;
 * a root replacement: 12 loops), so that their heap copies run too (under
 * the sanitizers in .ci/run): a root of 14 loops and 4 sums whose body
 * adds 34 distinct stages of 12 loops and 10 guards each, every rule at
 * every kind of site, two steps deep, against the interpreter. */
static void test_wide(void)
{
    enum { NOUT = 14, NSUM = 4, NIN = 12, NGUARD = 10, NSTAGE = 34 };
    Arena *ar;
    new_ctx(&ar);
    const IrTensor *a = tensor(0, "A", 1, (int64_t[]){4});
    IrVar out[NOUT + NSUM];
    for (int i = 0; i < NOUT + NSUM; i++)
        out[i] = ir_var_new(cx, i < NOUT ? "o" : "s", 0, i % 3 == 0 ? 2 : 1);
    const IExpr *body = NULL;
    for (int k = 0; k < NSTAGE; k++) {
        IrVar in[NIN];
        for (int i = 0; i < NIN; i++)
            in[i] = ir_var_new(cx, "v", 0, i < 2 ? 2 : 1);
        const IExpr *g[NGUARD];
        for (int i = 0; i < NGUARD; i++)    /* all true, and stage k's own */
            g[i] = ir_icmp(cx, OP_GE, lin(V(in[i % NIN]), 1, V(in[(i + 1) % NIN]), i == 0 ? k : i),
                           K(0));
        const Stage *st = ir_stage(cx, RED_NONE, in, NIN, NULL, 0, g, NGUARD,
                                   acc(a, lin(V(in[0]), 1, V(in[1]), k % 3), 0, 0, 0));
        const Ix *idx[NIN];
        for (int i = 0; i < NIN; i++)
            idx[i] = i < 2 ? V(out[i == 0 ? 0 : NOUT]) : K(0);
        const IExpr *rd = ir_access_stage(cx, st, idx, NIN);
        body = body ? ir_binary(cx, IE_ADD, body, rd) : rd;
    }
    const Stage *root = ir_stage(cx, RED_SUM, out, NOUT, out + NOUT, NSUM, NULL, 0, body);
    CHECK(ok_tree(root));
    Vals want = eval(root, data);
    Gen g;
    gen_init(&g, cx, 7);
    int applied_before = 0, applied_after = 0;
    for (int r = 0; r < RULE_COUNT; r++)
        applied_before += applied[r];
    const Stage *s = root;
    for (int d = 0; d < 2 && s; d++)
        s = try_all(&g, data, s, &want);
    for (int r = 0; r < RULE_COUNT; r++)
        applied_after += applied[r];
    CHECK(applied_after > applied_before, "no rule applied to the wide tree");
    free(want.v);
    gen_free(&g);
    free_ctx(ar);
}

/* ---- main ------------------------------------------------------------------------------ */

int main(int argc, char **argv)
{
    int cases = argc > 1 ? atoi(argv[1]) : 300, depth = argc > 2 ? atoi(argv[2]) : 4;
    test_conv3x3();
    test_conv5x5();
    test_convtranspose();
    test_g2bmm();
    test_refusals();
    test_inline_copy();
    test_wide();
    test_random(cases, depth);
    /* the generator makes gathers, and the rules rewrite stages that hold
     * them (checked against the interpreter like every other) */
    printf("rules applied to stages with a gather: %d\n", gather_applied);
    printf("expressions whose IExpr.folds was checked: %d\n", folds_checked);
    CHECK(folds_checked > 1000);
    CHECK(gather_applied > 0);
    test_lowered(cases / 30 + 1, depth);
    for (int r = 0; r < RULE_COUNT; r++) {
        printf("%-14s applied %6d  refused %6d\n", rule_table[r].tag, applied[r], refused[r]);
        if (applied[r] < 50) {
            fprintf(stderr, "rule %s applied only %d times\n", rule_table[r].tag, applied[r]);
            failures++;
        }
    }
    return check_finish("test_rules");
}
