/* test_lt.c - cuBLASLt's epilogue from an epilogue (cost_lt_epilogue,
 * libs.c): random epilogues over a GEMM's output y (a scale of the
 * product, a bias per column, a residual C with its scale, in any order
 * and nesting, under none, relu, max(u, 0) or GELU's tanh form written
 * several ways), decoded, and the decode applied here as NVIDIA documents
 * cublasLtMatmul (D = act(alpha AB + beta C + bias), the bias per row of
 * the column-major D), against the interpreter's value of the epilogue
 * itself; on a plain, a batched and a transposed (C stored [n][m]) GEMM.
 * What cuBLASLt does not compute must be refused: GELU's erf form, a
 * scaled bias, a bias along the other dim, a constant, the activation
 * before a residual, self read outside the sum. */
#include "config.h"
#include "derive/pricing/cost.h"
#include "tests/check.h"

#include <math.h>
#include <string.h>

enum { B = 2, M = 3, N = 5, NT = 6 };

static IrCtx *cx;
static IrTensor tensors[NT];
static double *data[NT];
static IrVar loops[3];
static int rank;                /* the GEMM's output dims: 2 or 3 */
static OpMatch gemm;
static int64_t shape_y[3], shape_r[3];
static const int64_t shape_b[] = {N}, shape_bm[] = {M}, shape_b2[] = {2, N};

static void tensor(int id, const char *name, int r, const int64_t *shape)
{
    free(data[id]);
    tensors[id] = (IrTensor){.id = id, .name = name, .kind = IT_INPUT, .elem = ELEM_F32,
                             .rank = r, .shape = shape};
    size_t n = 1;
    for (int k = 0; k < r; k++)
        n *= (size_t)shape[k];
    data[id] = malloc(n * sizeof(double));
    for (size_t i = 0; i < n; i++)
        data[id][i] = 4 * rng_unit();
}

/* The output y: [M, N] (plain), [B, M, N] (batched) or [N, M] (C stored
 * transposed: the bias runs along m then).  Tensors: 0 y, 1 r (C), 2 b
 * (bias along the rows of D), 3 b2[2, N] (read at a constant row), 4 a
 * bias along the other dim, 5 unused. */
static void setup(int kind)
{
    memset(&gemm, 0, sizeof gemm);
    gemm.kind = OPK_MATMUL;
    gemm.m = M, gemm.n = N, gemm.k = 4, gemm.batch = 1;
    rank = kind == 1 ? 3 : 2;
    if (kind == 0) {
        shape_y[0] = M, shape_y[1] = N;
        gemm.ldc = N;
    } else if (kind == 1) {
        shape_y[0] = B, shape_y[1] = M, shape_y[2] = N;
        gemm.kind = OPK_BATCH_MATMUL;
        gemm.batch = B, gemm.ldc = N, gemm.stride_c = M * N;
    } else {
        shape_y[0] = N, shape_y[1] = M;
        gemm.out_nm = true, gemm.ldc = M;
    }
    memcpy(shape_r, shape_y, sizeof shape_y);
    tensor(0, "y", rank, shape_y);
    tensor(1, "r", rank, shape_r);
    /* the bias of D's rows: n, or m when C is stored [n][m] */
    tensor(2, "b", 1, kind == 2 ? shape_bm : shape_b);
    tensor(3, "b2", 2, shape_b2);
    tensor(4, "o", 1, kind == 2 ? shape_b : shape_bm);
    for (int d = 0; d < rank; d++)
        loops[d] = ir_var_new(cx, "v", 0, shape_y[d]);
}

static const Ix *V(int d)
{
    return ix_var(cx, loops[d].id);
}

static const IExpr *read(int id)
{
    const Ix *idx[3];
    for (int d = 0; d < rank; d++)
        idx[d] = V(d);
    return ir_access_tensor(cx, &tensors[id], idx, rank);
}

static const IExpr *self(void)
{
    return read(0);
}

static const IExpr *bias(void)
{
    const Ix *idx[2];
    if (rng_range(0, 1)) {
        idx[0] = V(rank - 1);
        return ir_access_tensor(cx, &tensors[2], idx, 1);
    }
    if (gemm.out_nm) {          /* b2 has n columns: only a plain bias then */
        idx[0] = V(rank - 1);
        return ir_access_tensor(cx, &tensors[2], idx, 1);
    }
    idx[0] = ix_const(cx, 1), idx[1] = V(rank - 1);
    return ir_access_tensor(cx, &tensors[3], idx, 2);
}

static const IExpr *K(double v)
{
    return ir_const(cx, v);
}

static const IExpr *bin(IExprKind k, const IExpr *a, const IExpr *b)
{
    return ir_binary(cx, k, a, b);
}

static const IExpr *call(Func fn, const IExpr *a, const IExpr *b)
{
    const IExpr *args[2] = {a, b};
    return ir_call(cx, fn, args, b ? 2 : 1);
}

/* a scaled term c * x written one of several ways (c != 0) */
static const IExpr *scaled(const IExpr *x, double c)
{
    if (c == 1)
        return x;
    if (c == -1 && rng_range(0, 1))
        return ir_unary(cx, IE_NEG, x);
    switch (rng_range(0, 2)) {
    case 0: return bin(IE_MUL, K(c), x);
    case 1: return bin(IE_MUL, x, K(c));
    default: return bin(IE_DIV, x, K(1 / c));
    }
}

/* GELU's tanh form of u, written one of several ways */
static const IExpr *gelu_tanh(const IExpr *u)
{
    const IExpr *cube = rng_range(0, 1) ? call(FN_POW, u, K(3))
                                        : bin(IE_MUL, bin(IE_MUL, u, u), u);
    const IExpr *in = bin(IE_MUL, K(0.7978845608028654),
                          bin(IE_ADD, u, bin(IE_MUL, K(0.044715), cube)));
    const IExpr *t = bin(IE_ADD, K(1), call(FN_TANH, in, NULL));
    return rng_range(0, 1) ? bin(IE_MUL, bin(IE_MUL, K(0.5), u), t)
                           : bin(IE_MUL, u, bin(IE_MUL, t, K(0.5)));
}

static const double scales[] = {1, 1, -1, 0.125, 2, -0.5};

/* The documented arithmetic of the decode at element `at` (offset o). */
static double apply(const LibLt *lt, int64_t o, const int64_t *at)
{
    double v = lt->alpha * data[0][o];
    if (lt->c)
        v += lt->beta * data[lt->c->id][lt->c_offset + o];
    if (lt->bias)
        v += data[lt->bias->id][lt->bias_offset + at[rank - 1]];
    switch (lt->act) {
    case LT_ACT_RELU: return v > 0 ? v : 0;
    case LT_ACT_GELU:
        return 0.5 * v * (1 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
    case LT_ACT_NONE: break;
    }
    return v;
}

static const Stage *stage_of(const IExpr *e)
{
    return ir_stage(cx, RED_NONE, loops, rank, NULL, 0, NULL, 0, e);
}

/* e decoded (or refused, `ok` false) and the decode against e. */
static void check_epilogue(const IExpr *e, bool ok, const char *what)
{
    LibLt lt;
    const Stage *s = stage_of(e);
    bool got = cost_lt_epilogue(cx, s, &tensors[0], e, &gemm, &lt);
    CHECK(got == ok, "%s: %s", what, ok ? "refused" : "taken");
    if (!got || !ok)
        return;
    size_t n = 1;
    for (int d = 0; d < rank; d++)
        n *= (size_t)shape_y[d];
    double *want = malloc(n * sizeof *want), worst = 0;
    ir_eval_stage(s, data, want);
    int64_t at[3] = {0, 0, 0};
    for (size_t o = 0; o < n; o++) {
        double g = apply(&lt, (int64_t)o, at), err = fabs(g - want[o]) / fmax(1, fabs(want[o]));
        worst = err > worst ? err : worst;
        for (int d = rank - 1; d >= 0 && ++at[d] == shape_y[d]; d--)
            at[d] = 0;
    }
    free(want);
    CHECK(worst < 1e-12, "%s: the decode is off by %g", what, worst);
}

/* A random sum alpha * y [+ bias] [+ beta * r], shuffled and nested. */
static const IExpr *random_sum(bool *has_bias, bool *has_c)
{
    const IExpr *terms[3];
    int n = 0;
    terms[n++] = scaled(self(), scales[rng_range(0, 5)]);
    if ((*has_bias = rng_range(0, 1)))
        terms[n++] = bias();
    if ((*has_c = rng_range(0, 1)))
        terms[n++] = scaled(read(1), scales[rng_range(0, 5)]);
    for (int i = n - 1; i > 0; i--) {
        int j = (int)rng_range(0, i);
        const IExpr *t = terms[i];
        terms[i] = terms[j], terms[j] = t;
    }
    const IExpr *u = terms[0];
    for (int i = 1; i < n; i++) {
        /* a - (-x) for some: the sign travels */
        if (rng_range(0, 3) == 0)
            u = bin(IE_SUB, u, ir_unary(cx, IE_NEG, terms[i]));
        else
            u = rng_range(0, 1) ? bin(IE_ADD, u, terms[i]) : bin(IE_ADD, terms[i], u);
    }
    return u;
}

static void test_random(void)
{
    for (int trial = 0; trial < 300; trial++) {
        bool hb, hc;
        const IExpr *u = random_sum(&hb, &hc), *e;
        switch (rng_range(0, 4)) {
        case 0: e = u; break;
        case 1: e = call(FN_RELU, u, NULL); break;
        case 2: e = rng_range(0, 1) ? call(FN_MAX, u, K(0)) : call(FN_MAX, K(0), u); break;
        default: e = gelu_tanh(u); break;
        }
        check_epilogue(e, true, "a random epilogue");
    }
}

static void test_refused(void)
{
    const IExpr *y = self(), *r = read(1);
    const Ix *i0[1] = {V(rank - 1)}, *im[1] = {V(rank - 2)};
    const IExpr *b = ir_access_tensor(cx, &tensors[2], i0, 1);
    const IExpr *other = ir_access_tensor(cx, &tensors[4], im, 1);
    const IExpr *u = bin(IE_ADD, y, b);
    check_epilogue(call(FN_GELU, u, NULL), false, "gelu(), the erf form");
    const IExpr *erf = bin(IE_MUL, bin(IE_MUL, K(0.5), u),
                           bin(IE_ADD, K(1), call(FN_ERF, bin(IE_MUL, u, K(0.7071067811865476)),
                                                  NULL)));
    check_epilogue(erf, false, "GELU's erf form written out");
    check_epilogue(call(FN_SIGMOID, u, NULL), false, "sigmoid");
    check_epilogue(bin(IE_ADD, y, bin(IE_MUL, K(2), b)), false, "a scaled bias");
    check_epilogue(bin(IE_MUL, u, K(2)), false, "the bias scaled with the product");
    check_epilogue(bin(IE_SUB, y, b), false, "a bias subtracted");
    check_epilogue(bin(IE_ADD, y, other), false, "a bias along the other dim");
    check_epilogue(bin(IE_ADD, y, K(1)), false, "a constant");
    check_epilogue(bin(IE_ADD, call(FN_RELU, u, NULL), r), false, "C after the activation");
    check_epilogue(bin(IE_ADD, call(FN_RELU, u, NULL), y), false, "self outside the sum");
    check_epilogue(bin(IE_ADD, u, y), false, "self twice");
    check_epilogue(bin(IE_ADD, bin(IE_ADD, u, b), r), false, "two biases");
    check_epilogue(bin(IE_MUL, y, y), false, "a product of self");
    check_epilogue(call(FN_RELU, bin(IE_MUL, u, u), NULL), false, "relu of a square");
    /* taken: the plain forms */
    check_epilogue(y, true, "the product itself");
    check_epilogue(bin(IE_ADD, bin(IE_ADD, u, r), K(0)), true, "bias and C");
    check_epilogue(call(FN_MAX, u, K(0)), true, "max(u, 0)");
    check_epilogue(call(FN_MIN, u, K(0)), false, "min(u, 0)");
    LibLt lt;
    CHECK(!cost_lt_epilogue(cx, stage_of(y), &tensors[0], NULL, &gemm, &lt) && !lt.fused,
          "no epilogue is taken");
}

int main(void)
{
    Arena *arena = arena_new();
    cx = ir_ctx_new(arena);
    rng_state = 2024;
    for (int kind = 0; kind < 3; kind++) {
        setup(kind);
        test_random();
        test_refused();
    }
    for (int k = 0; k < NT; k++)
        free(data[k]);
    arena_free(arena);
    return check_finish("test_lt");
}
