/* gen.c - random stage trees for the rule tests (see gen.h).
 *
 * Sizes are small (boxes of a few dozen points) so that the interpreter
 * can check thousands of derivations in seconds.  The subscripts are
 * drawn so that the rules find sites: plain variables over dimensions of
 * the same length (exact reads: tightening and relaxing), shifted ones
 * (padding), pairs with dividing coefficients (merges), coefficients equal
 * to another variable's length (fusions), dilations, and div/mod atoms
 * (splits). */
#include "config.h"
#include "gen.h"

#include <stdlib.h>
#include <string.h>

static uint64_t next(Gen *g)
{
    g->rng ^= g->rng >> 12;
    g->rng ^= g->rng << 25;
    g->rng ^= g->rng >> 27;
    return g->rng * 0x2545f4914f6cdd1dULL;
}

int64_t gen_range(Gen *g, int64_t lo, int64_t hi)
{
    return lo + (int64_t)(next(g) % (uint64_t)(hi - lo + 1));
}

static bool chance(Gen *g, int percent)
{
    return gen_range(g, 0, 99) < percent;
}

static double unit(Gen *g)
{
    return (double)(next(g) >> 11) / (double)(1ULL << 52) - 1.0;
}

void gen_init(Gen *g, IrCtx *cx, uint64_t seed)
{
    memset(g, 0, sizeof *g);
    g->cx = cx;
    g->rng = seed * 0x9e3779b97f4a7c15ULL + 0x2545f4914f6cdd1dULL;
    for (int i = 0; i < 4; i++)
        next(g);
}

void gen_free(Gen *g)
{
    for (int i = 0; i <= GEN_TENSORS; i++)
        free(g->data[i]);
}

static const char *const tensor_names[GEN_TENSORS] = {"A", "B", "C"};
static const char *const var_names[] = {"i", "j", "k", "l", "m", "n", "p", "q"};

static IrVar var(Gen *g, int64_t lo, int64_t len)
{
    const char *name = var_names[gen_range(g, 0, 7)];
    return ir_var_new(g->cx, name, lo, lo + len);
}

static const IrVar *pick(Gen *g)
{
    return &g->scope[gen_range(g, 0, g->nscope - 1)];
}

/* A variable of length n if there is one (half the time), else any. */
static const IrVar *pick_len(Gen *g, int64_t n)
{
    if (chance(g, 50)) {
        int k = (int)gen_range(g, 0, g->nscope - 1);
        for (int i = 0; i < g->nscope; i++) {
            const IrVar *v = &g->scope[(k + i) % g->nscope];
            if (v->hi - v->lo == n)
                return v;
        }
    }
    return pick(g);
}

static const Ix *V(Gen *g, const IrVar *v)
{
    return ix_var(g->cx, v->id);
}

/* c1*v1 + c2*v2 + c, in one of the shapes the rules look for. */
static const Ix *affine(Gen *g, int64_t n)
{
    IrCtx *cx = g->cx;
    const IrVar *v1 = pick_len(g, n), *v2 = pick(g);
    static const int64_t c1s[] = {1, 1, 1, -1, 2, 3};
    int64_t c1 = c1s[gen_range(g, 0, 5)], c2;
    switch (gen_range(g, 0, 4)) {
    case 0: c2 = 0; break;
    case 1: c2 = c1; break;                                /* h + r */
    case 2: c2 = c1 * (v1->hi - v1->lo); break;            /* fusable */
    case 3: c2 = -c1 * (v1->hi - v1->lo); break;
    default: c2 = c1 * gen_range(g, 2, 4); break;          /* dilation */
    }
    if (v1 == v2)
        c2 = 0;
    const Ix *x = ix_add(cx, ix_scale(cx, V(g, v1), c1), ix_scale(cx, V(g, v2), c2));
    return ix_add(cx, x, ix_const(cx, gen_range(g, -2, 2)));
}

static const Ix *subscript(Gen *g, int64_t lo, int64_t n);

/* A gather: G[subscript] (its values in [-1, 5]: now and then outside
 * the gathered dimension), scaled or shifted now and then. */
static const Ix *gather(Gen *g, int64_t n)
{
    IrCtx *cx = g->cx;
    const IrTensor *t = &g->tensors[GEN_INDEX];
    const Ix *idx[1] = {subscript(g, 0, t->shape[0])};
    const Ix *x = ix_read(cx, ir_access_tensor(cx, t, idx, 1));
    if (chance(g, 30))
        x = ix_add(cx, x, V(g, pick_len(g, n)));
    if (chance(g, 20))
        x = ix_scale(cx, x, 2);
    return x;
}

/* A subscript into a dimension [lo, lo + n). */
static const Ix *subscript(Gen *g, int64_t lo, int64_t n)
{
    IrCtx *cx = g->cx;
    const Ix *x;
    int r = (int)gen_range(g, 0, 99);
    if (r < 6 && g->gather_depth < 1) {
        g->gather_depth++;
        x = gather(g, n);
        g->gather_depth--;
    } else if (r < 35)
        x = V(g, pick_len(g, n));
    else if (r < 70)
        x = affine(g, n);
    else if (r < 80)
        x = ix_div(cx, affine(g, n), gen_range(g, 2, 3));
    else if (r < 90)
        x = ix_mod(cx, affine(g, n), gen_range(g, 2, 4));
    else
        x = ix_const(cx, gen_range(g, -1, n));
    return lo ? ix_add(cx, x, ix_const(cx, lo)) : x;
}

static const IExpr *factor(Gen *g, int depth);
static const IExpr *guard(Gen *g, int depth);

/* Another read of the same nested stage (a stage read twice). */
static const IExpr *reread(Gen *g, const IExpr *e)
{
    const Stage *q = e->access.stage;
    const Ix *idx[4];
    for (int k = 0; k < q->nloops; k++)
        idx[k] = subscript(g, q->loops[k].lo, q->loops[k].hi - q->loops[k].lo);
    return ir_access_stage(g->cx, q, idx, q->nloops);
}

static const IExpr *product(Gen *g, int depth)
{
    const IExpr *e = factor(g, depth), *first = e;
    for (int64_t n = gen_range(g, 0, 2); n > 0; n--) {
        bool again = first->access.stage && chance(g, 40);
        e = ir_binary(g->cx, IE_MUL, e, again ? reread(g, first) : factor(g, depth));
    }
    return e;
}

static const IExpr *body(Gen *g, int depth)
{
    IrCtx *cx = g->cx;
    int r = (int)gen_range(g, 0, 99);
    if (r < 55)
        return product(g, depth);
    if (r < 65) {
        const IExpr *a = product(g, depth);
        return ir_call(cx, FN_RELU, &a, 1);
    }
    if (r < 75)
        return ir_binary(cx, IE_ADD, product(g, depth), product(g, depth));
    if (r < 80) {
        const IExpr *a[2] = {factor(g, depth), factor(g, depth)};
        return ir_call(cx, FN_MAX, a, 2);
    }
    if (r < 85)
        return ir_binary(cx, IE_MUL, product(g, depth), ir_const(cx, gen_range(g, 2, 5) * 0.5));
    if (r < 90)
        return ir_binary(cx, IE_SUB, product(g, depth), factor(g, depth));
    if (r < 93)
        return ir_unary(cx, IE_NEG, ir_binary(cx, IE_DIV, product(g, depth), ir_const(cx, 3)));
    if (r < 96) {
        const IExpr *a[3] = {guard(g, depth), product(g, depth), factor(g, depth)};
        return ir_call(cx, FN_SELECT, a, 3);
    }
    return ir_binary(cx, IE_MUL, product(g, depth), ir_index(cx, V(g, pick(g))));
}

static const IExpr *guard(Gen *g, int depth)
{
    IrCtx *cx = g->cx;
    const Ix *x = affine(g, 0);
    switch (gen_range(g, 0, 5)) {
    case 5:                         /* causal: i - j >= 0 */
        return ir_icmp(cx, OP_GE, ix_sub(cx, V(g, pick(g)), V(g, pick(g))), ix_const(cx, 0));
    case 4: return ir_cmp(cx, OP_LT, factor(g, depth), ir_const(cx, 0.5));
    case 0: return ir_icmp(cx, OP_EQ, ix_mod(cx, x, gen_range(g, 2, 3)), ix_const(cx, 0));
    case 1: return ir_icmp(cx, OP_GE, x, ix_const(cx, 0));
    case 2: return ir_icmp(cx, OP_NE, x, ix_const(cx, 0));
    default: return ir_icmp(cx, OP_LT, ix_div(cx, x, 2), ix_const(cx, gen_range(g, 0, 3)));
    }
}

/* A stage; nested ones (depth > 0) may read the enclosing variables. */
static const Stage *stage(Gen *g, int depth)
{
    IrCtx *cx = g->cx;
    int base = g->nscope;
    if (depth > 0 && chance(g, 60))
        g->nscope = 0;              /* closed: only its own variables */
    IrVar loops[3], sums[3];
    int nl = (int)gen_range(g, 1, depth ? 2 : 3), ns = (int)gen_range(g, 0, 3);
    if (depth > 0 && ns > 2)
        ns = 2;
    for (int i = 0; i < nl; i++) {
        int64_t lo = depth ? gen_range(g, -2, 1) : 0;
        loops[i] = var(g, lo, gen_range(g, 1, 4));
        g->scope[g->nscope++] = loops[i];
    }
    for (int i = 0; i < ns; i++) {
        int64_t lo = chance(g, 25) ? gen_range(g, -1, 1) : 0;
        sums[i] = var(g, lo, gen_range(g, 1, 4));
        g->scope[g->nscope++] = sums[i];
    }
    Reduce red = RED_NONE;
    if (ns) {
        int r = (int)gen_range(g, 0, 99);
        red = r < 65 ? RED_SUM : r < 78 ? RED_MAX : r < 90 ? RED_MIN : RED_PROD;
    }
    const IExpr *gd[2];
    int ng = chance(g, 30) ? (int)gen_range(g, 1, 2) : 0;
    for (int i = 0; i < ng; i++)
        gd[i] = guard(g, depth);
    const IExpr *b = body(g, depth);
    const Stage *s = ir_stage(cx, red, loops, nl, sums, ns, gd, ng, b);
    g->nscope = base;               /* factor() restores what a closed stage cleared */
    return s;
}

static const IExpr *factor(Gen *g, int depth)
{
    IrCtx *cx = g->cx;
    const Ix *idx[4];
    if (depth < 2 && chance(g, 18)) {
        IrVar saved[64];
        int nsaved = g->nscope;
        memcpy(saved, g->scope, (size_t)nsaved * sizeof *saved);
        const Stage *q = stage(g, depth + 1);
        memcpy(g->scope, saved, (size_t)nsaved * sizeof *saved);
        g->nscope = nsaved;
        for (int k = 0; k < q->nloops; k++)
            idx[k] = subscript(g, q->loops[k].lo, q->loops[k].hi - q->loops[k].lo);
        return ir_access_stage(cx, q, idx, q->nloops);
    }
    const IrTensor *t = &g->tensors[gen_range(g, 0, GEN_TENSORS - 1)];
    for (int k = 0; k < t->rank; k++)
        idx[k] = subscript(g, 0, t->shape[k]);
    return ir_access_tensor(cx, t, idx, t->rank);
}

const Stage *gen_stage(Gen *g)
{
    for (int i = 0; i < GEN_TENSORS; i++) {
        IrTensor *t = &g->tensors[i];
        int rank = (int)gen_range(g, 1, 3);
        size_t size = 1;
        for (int k = 0; k < rank; k++) {
            g->shapes[i][k] = gen_range(g, 1, 5);
            size *= (size_t)g->shapes[i][k];
        }
        *t = (IrTensor){.id = i, .name = tensor_names[i], .kind = IT_INPUT,
                        .rank = rank, .shape = g->shapes[i]};
        free(g->data[i]);
        g->data[i] = malloc(size * sizeof(double));
        for (size_t j = 0; j < size; j++)
            g->data[i][j] = unit(g);
    }
    IrTensor *gt = &g->tensors[GEN_INDEX];
    g->shapes[GEN_INDEX][0] = gen_range(g, 1, 5);
    *gt = (IrTensor){.id = GEN_INDEX, .name = "G", .kind = IT_INPUT, .elem = ELEM_I32,
                     .rank = 1, .shape = g->shapes[GEN_INDEX]};
    free(g->data[GEN_INDEX]);
    g->data[GEN_INDEX] = malloc((size_t)g->shapes[GEN_INDEX][0] * sizeof(double));
    for (int64_t j = 0; j < g->shapes[GEN_INDEX][0]; j++)
        g->data[GEN_INDEX][j] = (double)gen_range(g, -1, 5);
    g->nscope = 0;
    return stage(g, 0);
}
