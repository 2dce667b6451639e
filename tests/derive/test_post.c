/* test_post.c - oneDNN post-ops from an epilogue (cost_post_ops, libs.c):
 * random epilogues over a convolution's output y[n, f, h, w] (element-wise
 * functions, constants on either side, per-channel, per-row, full-size and
 * offset operands), decoded into a chain, and the chain applied here the
 * way oneDNN documents its eltwise and binary post-ops, against the
 * interpreter's value of the epilogue itself.  The same chain as cuDNN's
 * pointwise nodes (cost_pointwise) applied as cudnnPointwiseMode_t
 * documents the modes, against the same.  Epilogues that are no chain
 * (self read twice, an operand that is an expression, x / v, more than
 * LIB_POST_MAX steps) must be refused, and so must chains cuDNN has no
 * nodes for (a leaky ReLU, more than the nodes there is room for). */
#include "config.h"
#include "derive/pricing/cost.h"
#include "tests/check.h"

#include <math.h>
#include <string.h>

enum { N = 2, F = 3, H = 4, W = 5, NT = 5 };

static IrCtx *cx;
static IrTensor tensors[NT];
static double *data[NT];
static IrVar loops[4];

static const int64_t shape_y[] = {N, F, H, W}, shape_g[] = {F}, shape_r[] = {N, F, H, W},
                     shape_t[] = {H, 1}, shape_q[] = {2, F};

static void tensor(int id, const char *name, int rank, const int64_t *shape)
{
    tensors[id] = (IrTensor){.id = id, .name = name, .kind = IT_INPUT, .elem = ELEM_F32,
                             .rank = rank, .shape = shape};
    size_t n = 1;
    for (int k = 0; k < rank; k++)
        n *= (size_t)shape[k];
    data[id] = malloc(n * sizeof(double));
    for (size_t i = 0; i < n; i++)
        data[id][i] = 2 * rng_unit();
}

static const Ix *V(int d)
{
    return ix_var(cx, loops[d].id);
}

/* y, the operator's own value, at the element */
static const IExpr *self(void)
{
    const Ix *idx[4] = {V(0), V(1), V(2), V(3)};
    return ir_access_tensor(cx, &tensors[0], idx, 4);
}

/* A random operand: a constant, g[f], r[n, f, h, w], t[h, 0] or q[1, f]. */
static const IExpr *operand(void)
{
    const Ix *idx[4];
    switch (rng_range(0, 4)) {
    case 0:
        return ir_const(cx, (double)rng_range(-8, 8) / 4);
    case 1:
        idx[0] = V(1);
        return ir_access_tensor(cx, &tensors[1], idx, 1);
    case 2:
        for (int d = 0; d < 4; d++)
            idx[d] = V(d);
        return ir_access_tensor(cx, &tensors[2], idx, 4);
    case 3:
        idx[0] = V(2), idx[1] = ix_const(cx, 0);
        return ir_access_tensor(cx, &tensors[3], idx, 2);
    default:
        idx[0] = ix_const(cx, 1), idx[1] = V(1);
        return ir_access_tensor(cx, &tensors[4], idx, 2);
    }
}

/* One more step around e (a chain of them is what the decoder must take). */
static const IExpr *step(const IExpr *e)
{
    static const Func fns[] = {FN_RELU, FN_TANH, FN_SIGMOID, FN_ABS, FN_GELU};
    const IExpr *x = operand(), *args[2];
    bool left = rng_range(0, 1);
    switch (rng_range(0, 8)) {
    case 0: case 1:
        return left ? ir_binary(cx, IE_ADD, e, x) : ir_binary(cx, IE_ADD, x, e);
    case 2:
        return left ? ir_binary(cx, IE_SUB, e, x) : ir_binary(cx, IE_SUB, x, e);
    case 3:
        return left ? ir_binary(cx, IE_MUL, e, x) : ir_binary(cx, IE_MUL, x, e);
    case 4:     /* v / x, x a nonzero constant or a tensor */
        if (x->kind == IE_CONST && x->value == 0)
            x = ir_const(cx, 0.5);
        return ir_binary(cx, IE_DIV, e, x);
    case 5:
        args[left ? 0 : 1] = e, args[left ? 1 : 0] = x;
        return ir_call(cx, rng_range(0, 1) ? FN_MAX : FN_MIN, args, 2);
    case 6:
        return ir_unary(cx, IE_NEG, e);
    case 7:     /* sqrt and exp of what they take */
        args[0] = ir_call(cx, FN_ABS, &e, 1);
        return ir_call(cx, FN_SQRT, args, 1);
    default:
        return ir_call(cx, fns[rng_range(0, 4)], &e, 1);
    }
}

/* The chain applied as oneDNN defines its post-ops. */
static double apply(const LibPost *post, int n, double v, const int64_t *at)
{
    for (int i = 0; i < n; i++) {
        const LibPost *p = &post[i];
        double a = p->alpha, b = p->beta, s = 0;
        if (p->binary) {
            int64_t off = p->offset;
            for (int d = 0; d < p->rank; d++)
                off += (p->dims[d] == 1 ? 0 : at[d]) * p->strides[d];
            s = data[p->src1->id][off];
        }
        switch (p->alg) {
        case POST_RELU: v = v > 0 ? v : a * v; break;
        case POST_TANH: v = tanh(v); break;
        case POST_LOGISTIC: v = 1 / (1 + exp(-v)); break;
        case POST_EXP: v = exp(v); break;
        case POST_ABS: v = fabs(v); break;
        case POST_SQRT: v = sqrt(v); break;
        case POST_LINEAR: v = a * v + b; break;
        case POST_CLIP: v = v < a ? a : v > b ? b : v; break;
        case POST_GELU: v = 0.5 * v * (1 + erf(v / sqrt(2))); break;
        case POST_ADD: v += s; break;
        case POST_SUB: v -= s; break;
        case POST_MUL: v *= s; break;
        case POST_DIV: v /= s; break;
        case POST_MAX: v = v > s ? v : s; break;
        case POST_MIN: v = v < s ? v : s; break;
        case POST_NONE: CHECK(0, "post-op %d has no algorithm", i); break;
        }
    }
    return v;
}

/* The chain as cuDNN's pointwise nodes: y = mode(x) or mode(x, b), b a
 * tensor read with broadcast or a scalar; RELU_FWD with its default clips
 * (lower 0, no upper), GELU_FWD the erf form. */
static double apply_pw(const LibPost *post, const LibPw *pw, int n, double v, const int64_t *at)
{
    for (int i = 0; i < n; i++) {
        double b = pw[i].value;
        if (pw[i].post >= 0) {
            const LibPost *p = &post[pw[i].post];
            int64_t off = p->offset;
            for (int d = 0; d < p->rank; d++)
                off += (p->dims[d] == 1 ? 0 : at[d]) * p->strides[d];
            b = data[p->src1->id][off];
        }
        switch (pw[i].mode) {
        case PW_ADD: v += b; break;
        case PW_SUB: v -= b; break;
        case PW_MUL: v *= b; break;
        case PW_DIV: v /= b; break;
        case PW_MAX: v = v > b ? v : b; break;
        case PW_MIN: v = v < b ? v : b; break;
        case PW_RELU: v = v < 0 ? 0 : v; break;
        case PW_TANH: v = tanh(v); break;
        case PW_SIGMOID: v = 1 / (1 + exp(-v)); break;
        case PW_EXP: v = exp(v); break;
        case PW_ABS: v = fabs(v); break;
        case PW_SQRT: v = sqrt(v); break;
        case PW_GELU: v = 0.5 * v * (1 + erf(v / sqrt(2))); break;
        }
    }
    return v;
}

static const Stage *stage_of(const IExpr *e)
{
    return ir_stage(cx, RED_NONE, loops, 4, NULL, 0, NULL, 0, e);
}

/* e's chain against e's value at every element. */
static void check_chain(const IExpr *e, int steps)
{
    LibPost post[LIB_POST_MAX];
    const Stage *s = stage_of(e);
    int n = cost_post_ops(s, &tensors[0], e, post, LIB_POST_MAX);
    /* steps that cancel (-(-v)) leave the value itself: no post-ops */
    if (e->kind == IE_ACCESS && e->access.tensor == &tensors[0]) {
        CHECK(n == 0, "the plain value as %d post-ops", n);
        return;
    }
    CHECK(n > 0, "an epilogue of %d steps is no chain", steps);
    if (n <= 0)
        return;
    double want[N * F * H * W];
    ir_eval_stage(s, data, want);
    LibPw pw[LIB_PW_MAX];
    int npw = cost_pointwise(post, n, pw, LIB_PW_MAX);
    /* each post-op at most two nodes (a linear step, a clip) */
    CHECK(npw > 0 && npw <= 2 * n, "%d post-ops as %d pointwise nodes", n, npw);
    double worst = 0, worst_pw = 0;
    int64_t at[4];
    for (at[0] = 0; at[0] < N; at[0]++)
        for (at[1] = 0; at[1] < F; at[1]++)
            for (at[2] = 0; at[2] < H; at[2]++)
                for (at[3] = 0; at[3] < W; at[3]++) {
                    int64_t k = ((at[0] * F + at[1]) * H + at[2]) * W + at[3];
                    double got = apply(post, n, data[0][k], at);
                    double err = fabs(got - want[k]) / fmax(1, fabs(want[k]));
                    worst = err > worst ? err : worst;
                    if (npw > 0) {
                        got = apply_pw(post, pw, npw, data[0][k], at);
                        err = fabs(got - want[k]) / fmax(1, fabs(want[k]));
                        worst_pw = err > worst_pw ? err : worst_pw;
                    }
                }
    CHECK(worst < 1e-12, "a chain of %d post-ops from %d steps is off by %g", n, steps, worst);
    CHECK(worst_pw < 1e-12, "%d pointwise nodes from %d steps are off by %g", npw, steps,
          worst_pw);
}

static void test_random_chains(void)
{
    for (int trial = 0; trial < 400; trial++) {
        int steps = (int)rng_range(1, 4);
        const IExpr *e = self();
        for (int k = 0; k < steps; k++)
            e = step(e);
        check_chain(e, steps);
    }
}

static void test_refused(void)
{
    LibPost post[LIB_POST_MAX];
    const IExpr *y = self(), *g = operand();
    const IExpr *x = ir_binary(cx, IE_ADD, y, ir_const(cx, 1));
    /* self twice: v * (v + 1) */
    const IExpr *twice = ir_binary(cx, IE_MUL, y, x);
    CHECK(cost_post_ops(stage_of(twice), &tensors[0], twice, post, LIB_POST_MAX) < 0);
    /* an operand that is an expression: v + g[f] * g[f] */
    const Ix *fi[1] = {V(1)};
    const IExpr *gf = ir_access_tensor(cx, &tensors[1], fi, 1);
    const IExpr *sq = ir_binary(cx, IE_ADD, y, ir_binary(cx, IE_MUL, gf, gf));
    CHECK(cost_post_ops(stage_of(sq), &tensors[0], sq, post, LIB_POST_MAX) < 0);
    /* x / v */
    const IExpr *inv = ir_binary(cx, IE_DIV, ir_const(cx, 1), y);
    CHECK(cost_post_ops(stage_of(inv), &tensors[0], inv, post, LIB_POST_MAX) < 0);
    /* self at another element: v[n, f, w, h] is no read of the operator's value */
    const Ix *sw[4] = {V(0), V(1), V(3), V(2)};
    const IExpr *moved = ir_binary(cx, IE_ADD, ir_access_tensor(cx, &tensors[0], sw, 4), g);
    CHECK(cost_post_ops(stage_of(moved), &tensors[0], moved, post, LIB_POST_MAX) < 0);
    /* more steps than there is room for */
    const IExpr *e = y;
    for (int k = 0; k <= LIB_POST_MAX; k++)
        e = ir_binary(cx, IE_ADD, e, gf);
    CHECK(cost_post_ops(stage_of(e), &tensors[0], e, post, LIB_POST_MAX) < 0);
    /* cuDNN: a leaky ReLU (RELU_FWD's default slope is 0), and more nodes
     * than there is room for (a clip on both sides is two) */
    LibPw pw[LIB_PW_MAX];
    LibPost leaky = {.binary = false, .alg = POST_RELU, .alpha = 0.1};
    CHECK(cost_pointwise(&leaky, 1, pw, LIB_PW_MAX) < 0);
    LibPost clips[LIB_POST_MAX];
    for (int k = 0; k < LIB_POST_MAX; k++)
        clips[k] = (LibPost){.binary = false, .alg = POST_CLIP, .alpha = -1, .beta = 1};
    CHECK(cost_pointwise(clips, LIB_POST_MAX, pw, LIB_PW_MAX) == 2 * LIB_POST_MAX);
    CHECK(cost_pointwise(clips, LIB_POST_MAX, pw, 2 * LIB_POST_MAX - 1) < 0);
    /* no epilogue, and the plain value: no post-ops */
    CHECK(cost_post_ops(stage_of(y), &tensors[0], NULL, post, LIB_POST_MAX) < 0);
    CHECK(cost_post_ops(stage_of(y), &tensors[0], y, post, LIB_POST_MAX) == 0);
}

int main(void)
{
    Arena *arena = arena_new();
    cx = ir_ctx_new(arena);
    rng_state = 4242;
    tensor(0, "y", 4, shape_y);
    tensor(1, "g", 1, shape_g);
    tensor(2, "r", 4, shape_r);
    tensor(3, "t", 2, shape_t);
    tensor(4, "q", 2, shape_q);
    loops[0] = ir_var_new(cx, "n", 0, N);
    loops[1] = ir_var_new(cx, "f", 0, F);
    loops[2] = ir_var_new(cx, "h", 0, H);
    loops[3] = ir_var_new(cx, "w", 0, W);
    test_random_chains();
    test_refused();
    for (int k = 0; k < NT; k++)
        free(data[k]);
    arena_free(arena);
    return check_finish("test_post");
}
