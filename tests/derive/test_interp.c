/* test_interp.c - the interpreter against naive loops written here: a
 * matmul, a 3x3 convolution with padding, max pooling whose window leaves
 * the tensor, a transposed convolution with guards (against the scatter
 * form), nested stages with padding and with free variables, floor
 * division and modulo, empty reductions, functions and select, and a
 * whole program with output padding. */
#include "config.h"
#include "derive/ir/ir.h"
#include "tests/check.h"

#include <math.h>
#include <string.h>

static IrCtx *cx;
static IrTensor tensors[8];
static double *data[8];

static IrTensor *tensor(int id, const char *name, int rank, const int64_t *shape)
{
    IrTensor *t = &tensors[id];
    *t = (IrTensor){.id = id, .name = name, .kind = IT_INPUT, .rank = rank, .shape = shape};
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

static const Ix *add(const Ix *a, const Ix *b)
{
    return ix_add(cx, a, b);
}

static const IExpr *acc(const IrTensor *t, const Ix *i0, const Ix *i1, const Ix *i2, const Ix *i3)
{
    const Ix *idx[4] = {i0, i1, i2, i3};
    return ir_access_tensor(cx, t, idx, t->rank);
}

static void test_matmul(void)
{
    static const int64_t as[] = {3, 4}, bs[] = {4, 5};
    IrTensor *A = tensor(0, "A", 2, as), *B = tensor(1, "B", 2, bs);
    IrVar i = ir_var_new(cx, "i", 0, 3), j = ir_var_new(cx, "j", 0, 5), k = ir_var_new(cx, "k", 0, 4);
    IrVar loops[2] = {i, j};
    const Stage *s = ir_stage(cx, RED_SUM, loops, 2, &k, 1, NULL, 0,
                              ir_binary(cx, IE_MUL, acc(A, V(i), V(k), 0, 0),
                                        acc(B, V(k), V(j), 0, 0)));
    double out[15];
    CHECK(ir_eval_stage(s, data, out) == 15);
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 5; b++) {
            double want = 0;
            for (int c = 0; c < 4; c++)
                want += data[0][a * 4 + c] * data[1][c * 5 + b];
            CHECK_NEAR(out[a * 5 + b], want, 1e-12);
        }
}

static void test_conv(void)
{
    enum { C = 2, F = 3, H = 5, W = 6 };
    static const int64_t xs[] = {1, C, H, W}, ws[] = {F, C, 3, 3};
    IrTensor *X = tensor(0, "x", 4, xs), *Wt = tensor(1, "w", 4, ws);
    IrVar n = ir_var_new(cx, "n", 0, 1), f = ir_var_new(cx, "f", 0, F);
    IrVar h = ir_var_new(cx, "h", 0, H), w = ir_var_new(cx, "w", 0, W);
    IrVar c = ir_var_new(cx, "c", 0, C), r = ir_var_new(cx, "r", 0, 3), s = ir_var_new(cx, "s", 0, 3);
    IrVar loops[4] = {n, f, h, w}, sums[3] = {c, r, s};
    const IExpr *body = ir_binary(cx, IE_MUL,
                                  acc(X, V(n), V(c), add(add(V(h), V(r)), K(-1)),
                                      add(add(V(w), V(s)), K(-1))),
                                  acc(Wt, V(f), V(c), V(r), V(s)));
    const Stage *st = ir_stage(cx, RED_SUM, loops, 4, sums, 3, NULL, 0, body);
    double out[F * H * W];
    CHECK(ir_eval_stage(st, data, out) == F * H * W);
    double maxerr = 0;
    for (int fo = 0; fo < F; fo++)
        for (int ho = 0; ho < H; ho++)
            for (int wo = 0; wo < W; wo++) {
                double want = 0;
                for (int ci = 0; ci < C; ci++)
                    for (int ri = 0; ri < 3; ri++)
                        for (int si = 0; si < 3; si++) {
                            int hh = ho + ri - 1, ww = wo + si - 1;
                            if (hh < 0 || hh >= H || ww < 0 || ww >= W)
                                continue;
                            want += data[0][(ci * H + hh) * W + ww]
                                  * data[1][((fo * C + ci) * 3 + ri) * 3 + si];
                        }
                double e = fabs(out[(fo * H + ho) * W + wo] - want);
                maxerr = e > maxerr ? e : maxerr;
            }
    CHECK(maxerr < 1e-12);
}

/* p[h] max= x[2h + i - 1] where i < 3, x negative: the window at h = 0
 * reads x[-1], which is 0, so p[0] is exactly 0. */
static void test_maxpool(void)
{
    static const int64_t xs[] = {7};
    IrTensor *X = tensor(0, "x", 1, xs);
    for (int k = 0; k < 7; k++)
        data[0][k] = -1.5 + 0.5 * rng_unit();
    IrVar h = ir_var_new(cx, "h", 0, 4), i = ir_var_new(cx, "i", 0, 3);
    const Stage *s = ir_stage(cx, RED_MAX, &h, 1, &i, 1, NULL, 0,
                              acc(X, add(ix_scale(cx, V(h), 2), add(V(i), K(-1))), 0, 0, 0));
    double out[4];
    ir_eval_stage(s, data, out);
    for (int ho = 0; ho < 4; ho++) {
        double want = -INFINITY;
        for (int ii = 0; ii < 3; ii++) {
            int p = 2 * ho + ii - 1;
            double v = p >= 0 && p < 7 ? data[0][p] : 0.0;
            want = v > want ? v : want;
        }
        CHECK(out[ho] == want);
    }
    CHECK(out[0] == 0.0 && out[3] == 0.0 && out[1] < 0);
    /* the same with min= sees the zeros as maxima only: all negative */
    const Stage *m = ir_stage(cx, RED_MIN, &h, 1, &i, 1, NULL, 0,
                              acc(X, add(ix_scale(cx, V(h), 2), add(V(i), K(-1))), 0, 0, 0));
    ir_eval_stage(m, data, out);
    CHECK(out[0] == (data[0][0] < data[0][1] ? data[0][0] : data[0][1]));
}

/* y[f, h] += x[c, (h + 1 - r) / 2] * wt[c, f, r] where (h + 1 - r) % 2 == 0:
 * a 1-D transposed convolution, kernel 4, stride 2, padding 1, checked
 * against its definition as a scatter. */
static void test_transposed(void)
{
    enum { C = 2, F = 2, H = 5 };
    static const int64_t xs[] = {C, H}, ws[] = {C, F, 4};
    IrTensor *X = tensor(0, "x", 2, xs), *Wt = tensor(1, "wt", 3, ws);
    IrVar f = ir_var_new(cx, "f", 0, F), h = ir_var_new(cx, "h", 0, 2 * H);
    IrVar c = ir_var_new(cx, "c", 0, C), r = ir_var_new(cx, "r", 0, 4);
    const Ix *num = ix_sub(cx, add(V(h), K(1)), V(r));
    const IExpr *g = ir_icmp(cx, OP_EQ, ix_mod(cx, num, 2), K(0));
    IrVar loops[2] = {f, h}, sums[2] = {c, r};
    const Stage *s = ir_stage(cx, RED_SUM, loops, 2, sums, 2, &g, 1,
                              ir_binary(cx, IE_MUL, acc(X, V(c), ix_div(cx, num, 2), 0, 0),
                                        acc(Wt, V(c), V(f), V(r), 0)));
    double out[F * 2 * H], want[F * 2 * H] = {0};
    ir_eval_stage(s, data, out);
    for (int ci = 0; ci < C; ci++)
        for (int fo = 0; fo < F; fo++)
            for (int ih = 0; ih < H; ih++)
                for (int ri = 0; ri < 4; ri++) {
                    int oh = 2 * ih - 1 + ri;
                    if (oh >= 0 && oh < 2 * H)
                        want[fo * 2 * H + oh] += data[0][ci * H + ih] * data[1][(ci * F + fo) * 4 + ri];
                }
    for (int k = 0; k < F * 2 * H; k++)
        CHECK_NEAR(out[k], want[k], 1e-12);
}

static void test_nested(void)
{
    static const int64_t ms[] = {6};
    IrTensor *M = tensor(0, "m", 1, ms);
    /* S = L<a:1..4> { m[a] * 2 } reads 0 outside [1, 4);
     * L<i:0..6> { S[i - 1] + 1 } */
    IrVar a = ir_var_new(cx, "a", 1, 4), i = ir_var_new(cx, "i", 0, 6);
    const Stage *S = ir_stage(cx, RED_NONE, &a, 1, NULL, 0, NULL, 0,
                              ir_binary(cx, IE_MUL, acc(M, V(a), 0, 0, 0), ir_const(cx, 2)));
    const Ix *im1 = add(V(i), K(-1));
    const Stage *outer = ir_stage(cx, RED_NONE, &i, 1, NULL, 0, NULL, 0,
                                  ir_binary(cx, IE_ADD, ir_access_stage(cx, S, &im1, 1),
                                            ir_const(cx, 1)));
    CHECK_STR(PRINTED(ir_print_stage(cx, outer, fp)),
              "L<i:0..6> { (L<a:1..4> { m[a] * 2 })[i - 1] + 1 }");
    /* an inner variable named like an outer one prints as name'id */
    IrVar ii = ir_var_new(cx, "i", 0, 2);
    const Stage *in = ir_stage(cx, RED_NONE, &ii, 1, NULL, 0, NULL, 0, acc(M, V(ii), 0, 0, 0));
    const Ix *imod = ix_mod(cx, V(i), 2);
    const Stage *o1 = ir_stage(cx, RED_NONE, &i, 1, NULL, 0, NULL, 0, ir_access_stage(cx, in, &imod, 1));
    char want[128];
    snprintf(want, sizeof want, "L<i:0..6> { (L<i'%d:0..2> { m[i'%d] })[i %% 2] }", ii.id, ii.id);
    CHECK_STR(PRINTED(ir_print_stage(cx, o1, fp)), want);
    double out[6];
    CHECK(ir_eval_stage(outer, data, out) == 6);
    for (int k = 0; k < 6; k++) {
        double want = (k - 1 >= 1 && k - 1 < 4 ? 2 * data[0][k - 1] : 0) + 1;
        CHECK(out[k] == want);
    }
    /* a nested stage with a free variable: L<i:0..3> Σ<j:0..3> { T[j] },
     * T = L<b:0..3> { m[b + 2i] }, i.e. Σ_j m[j + 2i] (0 past the end) */
    IrVar b = ir_var_new(cx, "b", 0, 3), i2 = ir_var_new(cx, "i", 0, 3), j = ir_var_new(cx, "j", 0, 3);
    const Stage *T = ir_stage(cx, RED_NONE, &b, 1, NULL, 0, NULL, 0,
                              acc(M, add(V(b), ix_scale(cx, V(i2), 2)), 0, 0, 0));
    const Ix *jx = V(j);
    const Stage *o2 = ir_stage(cx, RED_SUM, &i2, 1, &j, 1, NULL, 0, ir_access_stage(cx, T, &jx, 1));
    ir_eval_stage(o2, data, out);
    for (int k = 0; k < 3; k++) {
        double want = 0;
        for (int jj = 0; jj < 3; jj++)
            want += jj + 2 * k < 6 ? data[0][jj + 2 * k] : 0;
        CHECK_NEAR(out[k], want, 1e-12);
    }
    /* the same with padding: T' = L<b:1..3> { m[b + 2i] } read at j in [0, 4) */
    IrVar b2 = ir_var_new(cx, "b", 1, 3), j2 = ir_var_new(cx, "j", 0, 4);
    const Stage *Tp = ir_stage(cx, RED_NONE, &b2, 1, NULL, 0, NULL, 0,
                               acc(M, add(V(b2), ix_scale(cx, V(i2), 2)), 0, 0, 0));
    const Ix *j2x = V(j2);
    const Stage *o3 = ir_stage(cx, RED_SUM, &i2, 1, &j2, 1, NULL, 0, ir_access_stage(cx, Tp, &j2x, 1));
    ir_eval_stage(o3, data, out);
    for (int k = 0; k < 3; k++) {
        double want = 0;
        for (int jj = 1; jj < 3; jj++)
            want += jj + 2 * k < 6 ? data[0][jj + 2 * k] : 0;
        CHECK_NEAR(out[k], want, 1e-12);
    }
    /* substituting the free variable: T with i := 1 is a closed stage */
    const Stage *T1 = ir_stage_subst(cx, T, i2.id, K(1));
    CHECK(T1 != T);
    CHECK(ir_stage_subst(cx, T, b.id, K(1)) == T);     /* b is bound in T */
    ir_eval_stage(T1, data, out);
    CHECK(out[0] == data[0][2] && out[2] == data[0][4]);
}

static void test_div_mod_values(void)
{
    IrVar i = ir_var_new(cx, "i", -7, 10);
    const Ix *x = add(V(i), K(-5));
    const IExpr *e = ir_binary(cx, IE_ADD, ir_index(cx, ix_div(cx, x, 3)),
                               ir_binary(cx, IE_MUL, ir_const(cx, 100),
                                         ir_index(cx, ix_mod(cx, x, -4))));
    const Stage *s = ir_stage(cx, RED_NONE, &i, 1, NULL, 0, NULL, 0, e);
    double out[17];
    CHECK(ir_eval_stage(s, data, out) == 17);
    for (int k = 0; k < 17; k++) {
        double xv = (k - 7) - 5;
        double q = floor(xv / 3), m = xv - (-4) * floor(xv / -4);
        CHECK(out[k] == q + 100 * m);
    }
}

static void test_empty(void)
{
    static const int64_t ms[] = {5};
    IrTensor *M = tensor(0, "m", 1, ms);
    for (int k = 0; k < 5; k++)
        data[0][k] = -1 - k;
    /* L<i:0..4> max<j:0..5> { m[j] | j == i + 2 }: no term for i >= 3 */
    IrVar i = ir_var_new(cx, "i", 0, 4), j = ir_var_new(cx, "j", 0, 5);
    const IExpr *g = ir_icmp(cx, OP_EQ, V(j), add(V(i), K(2)));
    const Stage *s = ir_stage(cx, RED_MAX, &i, 1, &j, 1, &g, 1, acc(M, V(j), 0, 0, 0));
    double out[4];
    ir_eval_stage(s, data, out);
    CHECK(out[0] == -3 && out[1] == -4 && out[2] == -5 && out[3] == 0);
    /* an empty sum range and a constant-false guard */
    IrVar e = ir_var_new(cx, "e", 0, 0);
    const Stage *s2 = ir_stage(cx, RED_MIN, &i, 1, &e, 1, NULL, 0, acc(M, V(e), 0, 0, 0));
    ir_eval_stage(s2, data, out);
    CHECK(out[0] == 0 && out[3] == 0);
    const IExpr *never = ir_icmp(cx, OP_GE, K(0), K(1));
    const Stage *s3 = ir_stage(cx, RED_SUM, &i, 1, &j, 1, &never, 1, ir_const(cx, 7));
    CHECK(s3->nguards == 1);
    ir_eval_stage(s3, data, out);
    CHECK(out[1] == 0);
    /* a map with a guard is 0 where the guard fails */
    const IExpr *ge = ir_icmp(cx, OP_GE, V(i), K(2));
    const Stage *s4 = ir_stage(cx, RED_NONE, &i, 1, NULL, 0, &ge, 1, ir_const(cx, 7));
    ir_eval_stage(s4, data, out);
    CHECK(out[0] == 0 && out[1] == 0 && out[2] == 7 && out[3] == 7);
    /* an empty loop range has no elements */
    CHECK(ir_eval_stage(ir_stage(cx, RED_NONE, &e, 1, NULL, 0, NULL, 0, ir_const(cx, 1)),
                        data, out) == 0);
}

static double ref_fn(Func fn, double a, double b)
{
    switch (fn) {
    case FN_RELU: return a > 0 ? a : 0;
    case FN_SIGMOID: return 1 / (1 + exp(-a));
    case FN_TANH: return tanh(a);
    case FN_EXP: return exp(a);
    case FN_LOG: return log(fabs(a));
    case FN_SQRT: return sqrt(fabs(a));
    case FN_RSQRT: return 1 / sqrt(fabs(a));
    case FN_ABS: return fabs(a);
    case FN_ERF: return erf(a);
    case FN_MAX: return a > b ? a : b;
    case FN_MIN: return a < b ? a : b;
    case FN_POW: return pow(fabs(a), b);
    case FN_SIN: return sin(a);
    case FN_COS: return cos(a);
    case FN_FLOOR: return floor(a);
    case FN_CEIL: return ceil(a);
    case FN_ROUND: return nearbyint(a);
    case FN_SIGN: return a > 0 ? 1 : a < 0 ? -1 : 0;
    case FN_EXPM1: return expm1(a);
    case FN_LOG1P: return log1p(fabs(a));
    case FN_SOFTPLUS: return log(1 + exp(a));
    case FN_GELU: return a * 0.5 * (1 + erf(a / sqrt(2.0)));
    default: return NAN;
    }
}

static void test_functions(void)
{
    static const int64_t ms[] = {9};
    IrTensor *M = tensor(0, "m", 1, ms), *N = tensor(1, "n", 1, ms);
    IrVar i = ir_var_new(cx, "i", 0, 9);
    const IExpr *m = acc(M, V(i), 0, 0, 0), *n = acc(N, V(i), 0, 0, 0);
    const IExpr *am = ir_call(cx, FN_ABS, &m, 1);
    for (Func fn = FN_RELU; fn <= FN_GELU; fn++) {
        if (fn == FN_SELECT)
            continue;
        bool needs_pos = fn == FN_LOG || fn == FN_SQRT || fn == FN_RSQRT || fn == FN_POW ||
                         fn == FN_LOG1P;
        const IExpr *args[2] = {needs_pos ? am : m, n};
        const Stage *s = ir_stage(cx, RED_NONE, &i, 1, NULL, 0, NULL, 0, ir_call(cx, fn, args, fn >= FN_MAX && fn <= FN_POW ? 2 : 1));
        double out[9];
        ir_eval_stage(s, data, out);
        for (int k = 0; k < 9; k++)
            CHECK_NEAR(out[k], ref_fn(fn, data[0][k], data[1][k]), 1e-14);
    }
    /* select(m > n && i % 2 == 0, m / n, -m) */
    const IExpr *cond = ir_binary(cx, IE_AND, ir_cmp(cx, OP_GT, m, n),
                                  ir_icmp(cx, OP_EQ, ix_mod(cx, V(i), 2), K(0)));
    const IExpr *args[3] = {cond, ir_binary(cx, IE_DIV, m, n), ir_unary(cx, IE_NEG, m)};
    const Stage *s = ir_stage(cx, RED_NONE, &i, 1, NULL, 0, NULL, 0, ir_call(cx, FN_SELECT, args, 3));
    double out[9];
    ir_eval_stage(s, data, out);
    for (int k = 0; k < 9; k++) {
        double a = data[0][k], b = data[1][k];
        CHECK(out[k] == (a > b && k % 2 == 0 ? a / b : -a));
    }
    /* constant folding agrees with evaluation */
    const IExpr *two = ir_const(cx, 2), *three = ir_const(cx, 3);
    const IExpr *p = ir_call(cx, FN_POW, (const IExpr *[]){two, three}, 2);
    CHECK(p->kind == IE_CONST && p->value == 8);
    CHECK(ir_binary(cx, IE_SUB, two, three)->value == -1);
    CHECK(ir_call(cx, FN_SELECT, (const IExpr *[]){ir_cmp(cx, OP_LT, two, three), m, n}, 3) == m);
}

static void test_program(void)
{
    static const int64_t xs[] = {4}, ts[] = {4}, us[] = {1};
    IrTensor *X = tensor(0, "x", 1, xs);
    IrTensor *T = tensor(1, "t", 1, ts), *U = tensor(2, "u", 1, us);
    for (int k = 0; k < 4; k++)
        data[1][k] = 99;                    /* must be overwritten */
    T->kind = U->kind = IT_STAGE;
    /* t = L<i:1..3> { relu(x[i]) + 1 }: zero at 0 and 3 (output padding) */
    IrVar i = ir_var_new(cx, "i", 1, 3);
    const IExpr *xi = acc(X, V(i), 0, 0, 0);
    T->stage = ir_stage(cx, RED_NONE, &i, 1, NULL, 0, NULL, 0,
                        ir_binary(cx, IE_ADD, ir_call(cx, FN_RELU, &xi, 1), ir_const(cx, 1)));
    /* u = L<z:0..1> Σ<k:0..4> { t[k + z] } */
    IrVar z = ir_var_new(cx, "z", 0, 1), k = ir_var_new(cx, "k", 0, 4);
    U->stage = ir_stage(cx, RED_SUM, &z, 1, &k, 1, NULL, 0, acc(T, add(V(k), V(z)), 0, 0, 0));
    IrTensor *ts_[3] = {X, T, U};
    int outs[1] = {2};
    IrProgram p = {.cx = cx, .model = "m", .tensors = ts_, .ntensors = 3, .outputs = outs, .noutputs = 1};
    ir_eval_program(&p, data);
    CHECK(data[1][0] == 0 && data[1][3] == 0);
    double want = 0;
    for (int q = 1; q < 3; q++) {
        double r = data[0][q] > 0 ? data[0][q] : 0;
        CHECK(data[1][q] == r + 1);
        want += r + 1;
    }
    CHECK(data[2][0] == want);
}

/* e[t, d] = E[T[t], d] with ids outside E's rows reading 0, and
 * f[t] = E[2 * T[t] - 1, T[t + 2]] with T read outside itself as 0 */
static void test_gather(void)
{
    static const int64_t es[] = {4, 3}, ts[] = {6};
    IrTensor *E = tensor(0, "E", 2, es), *T = tensor(1, "T", 1, ts);
    T->elem = ELEM_I32;
    static const double ids[6] = {0, 3, -1, 4, 2, 1};
    memcpy(data[1], ids, sizeof ids);
    IrVar t = ir_var_new(cx, "t", 0, 6), d = ir_var_new(cx, "d", 0, 3);
    const Ix *g = ix_read(cx, acc(T, V(t), 0, 0, 0));
    IrVar loops[2] = {t, d};
    const Stage *s = ir_stage(cx, RED_NONE, loops, 2, NULL, 0, NULL, 0, acc(E, g, V(d), 0, 0));
    double out[18];
    ir_eval_stage(s, data, out);
    for (int a = 0; a < 6; a++)
        for (int b = 0; b < 3; b++) {
            int64_t id = (int64_t)ids[a];
            CHECK_NEAR(out[a * 3 + b], id >= 0 && id < 4 ? data[0][id * 3 + b] : 0.0, 0);
        }
    const Ix *g2 = ix_read(cx, acc(T, add(V(t), K(2)), 0, 0, 0));
    const Stage *f = ir_stage(cx, RED_NONE, &t, 1, NULL, 0, NULL, 0,
                              acc(E, add(ix_scale(cx, g, 2), K(-1)), g2, 0, 0));
    double out2[6];
    ir_eval_stage(f, data, out2);
    for (int a = 0; a < 6; a++) {
        int64_t r = 2 * (int64_t)ids[a] - 1, c = a + 2 < 6 ? (int64_t)ids[a + 2] : 0;
        bool in = r >= 0 && r < 4 && c >= 0 && c < 3;
        CHECK_NEAR(out2[a], in ? data[0][r * 3 + c] : 0.0, 0);
    }
    /* substituting t moves into the gather; the fingerprint sees it */
    const Stage *f2 = ir_stage_subst(cx, f, t.id, V(t));
    CHECK(ir_stage_equal(f, f2));
    CHECK(ix_uses(g2, t.id) && ix_has_read(g2));
    T->elem = ELEM_F32;
}

int main(void)
{
    Arena *arena = arena_new();
    cx = ir_ctx_new(arena);
    rng_state = 12345;
    test_matmul();
    test_conv();
    test_maxpool();
    test_transposed();
    test_nested();
    test_div_mod_values();
    test_empty();
    test_functions();
    test_gather();
    test_program();
    for (int k = 0; k < 8; k++)
        free(data[k]);
    arena_free(arena);
    return check_finish("test_interp");
}
