/* test_ix.c - canonical index expressions: equal forms from different
 * construction orders, the normal forms of floor division and modulo
 * (negative divisors included) against a brute-force reference, bounds,
 * substitution, integer comparisons and the printed form. */
#include "config.h"
#include "derive/ir/ir.h"
#include "tests/check.h"

#include <math.h>

static IrCtx *cx;
enum { NV = 4 };
static int v[NV];                           /* h, r, i, j */

/* ---- a reference: expression trees evaluated with real floor() ---------- */
typedef struct T {
    int kind;                               /* 0 const 1 var 2 + 3 - 4 scale 5 / 6 % */
    int64_t k;
    int var;
    struct T *a, *b;
} T;

static T pool[100000];
static int npool;

static T *mk(int kind, int64_t k, int var, T *a, T *b)
{
    T *t = &pool[npool++];
    *t = (T){kind, k, var, a, b};
    return t;
}

static int64_t nonzero_divisor(void)
{
    int64_t d;
    do
        d = rng_range(-7, 7);
    while (d == 0);
    return d;
}

static T *gen(int depth)
{
    int kind = depth == 0 ? (int)rng_range(0, 1) : (int)rng_range(0, 6);
    switch (kind) {
    case 0: return mk(0, rng_range(-20, 20), 0, NULL, NULL);
    case 1: return mk(1, 0, (int)rng_range(0, NV - 1), NULL, NULL);
    case 2: case 3: return mk(kind, 0, 0, gen(depth - 1), gen(depth - 1));
    case 4: return mk(4, rng_range(-6, 6), 0, gen(depth - 1), NULL);
    default: return mk(kind, nonzero_divisor(), 0, gen(depth - 1), NULL);
    }
}

/* floor() of an exact quotient of small integers is exact in double. */
static double ref_eval(const T *t, const int64_t *val)
{
    double a, d;
    switch (t->kind) {
    case 0: return (double)t->k;
    case 1: return (double)val[t->var];
    case 2: return ref_eval(t->a, val) + ref_eval(t->b, val);
    case 3: return ref_eval(t->a, val) - ref_eval(t->b, val);
    case 4: return (double)t->k * ref_eval(t->a, val);
    case 5: return floor(ref_eval(t->a, val) / (double)t->k);
    default:
        a = ref_eval(t->a, val);
        d = (double)t->k;
        return a - d * floor(a / d);        /* the sign of the divisor */
    }
}

static const Ix *build(const T *t)
{
    switch (t->kind) {
    case 0: return ix_const(cx, t->k);
    case 1: return ix_var(cx, v[t->var]);
    case 2: return ix_add(cx, build(t->a), build(t->b));
    case 3: return ix_sub(cx, build(t->a), build(t->b));
    case 4: return ix_scale(cx, build(t->a), t->k);
    case 5: return ix_div(cx, build(t->a), t->k);
    default: return ix_mod(cx, build(t->a), t->k);
    }
}

/* Every atom of a canonical form obeys the invariants ix.c promises. */
static bool canonical(const Ix *x)
{
    for (int i = 0; i < x->n; i++) {
        const IxTerm *t = &x->t[i];
        if (t->coef == 0)
            return false;
        if (t->kind != IX_VAR) {
            if (t->d < 2 || t->arg->n == 0 || !canonical(t->arg))
                return false;
            if (t->arg->c < 0 || t->arg->c >= t->d)
                return false;
            for (int k = 0; k < t->arg->n; k++)
                if (t->arg->t[k].coef % t->d == 0)
                    return false;
        }
    }
    return true;
}

static void test_random_trees(void)
{
    int64_t env[64] = {0};
    int bad = 0, noncanon = 0;
    for (int round = 0; round < 3000; round++) {
        npool = 0;
        T *t = gen(4);
        const Ix *x = build(t);
        if (!canonical(x))
            noncanon++;
        for (int s = 0; s < 20; s++) {
            int64_t val[NV];
            for (int k = 0; k < NV; k++)
                env[v[k]] = val[k] = rng_range(-40, 40);
            if ((double)ix_eval(x, env) != ref_eval(t, val) && bad++ < 5) {
                fprintf(stderr, "tree %d: ix_eval %lld, reference %.0f for ", round,
                        (long long)ix_eval(x, env), ref_eval(t, val));
                ir_print_ix(cx, x, stderr);
                fputc('\n', stderr);
            }
        }
    }
    CHECK(bad == 0);
    CHECK(noncanon == 0);
    CHECK(!ir_ctx_overflowed(cx));
}

/* The same linear combination, built in shuffled orders and groupings,
 * with div/mod atoms built afresh each time (equal, not identical). */
static const Ix *shuffled(const int64_t *coef, int n, int64_t c)
{
    int order[16];
    for (int i = 0; i < n; i++)
        order[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)rng_range(0, i), tmp = order[i];
        order[i] = order[j];
        order[j] = tmp;
    }
    const Ix *h = ix_var(cx, v[0]), *r = ix_var(cx, v[1]);
    const Ix *acc = rng_range(0, 1) ? ix_const(cx, c) : ix_const(cx, 0);
    bool cdone = acc->c == c;
    for (int i = 0; i < n; i++) {
        int a = order[i];
        const Ix *atom = a < NV ? ix_var(cx, v[a])
                       : a == NV ? ix_div(cx, ix_add(cx, h, ix_sub(cx, ix_const(cx, 1), r)), 2)
                                 : ix_mod(cx, ix_add(cx, ix_scale(cx, r, 3), h), 5);
        const Ix *term = ix_scale(cx, atom, coef[a]);
        if (rng_range(0, 1))
            acc = ix_add(cx, acc, term);
        else
            acc = ix_sub(cx, acc, ix_scale(cx, term, -1));
    }
    if (!cdone)
        acc = ix_add(cx, ix_const(cx, c), acc);
    return acc;
}

static void test_orders(void)
{
    for (int round = 0; round < 200; round++) {
        int64_t coef[NV + 2];
        for (int i = 0; i < NV + 2; i++)
            coef[i] = rng_range(-3, 3);
        int64_t c = rng_range(-9, 9);
        const Ix *a = shuffled(coef, NV + 2, c), *b = shuffled(coef, NV + 2, c);
        CHECK(ix_equal(a, b));
        CHECK(a->hash == b->hash);
    }
    const Ix *h = ix_var(cx, v[0]), *r = ix_var(cx, v[1]);
    /* h + r - 1, built three ways */
    const Ix *x1 = ix_sub(cx, ix_add(cx, h, r), ix_const(cx, 1));
    const Ix *x2 = ix_add(cx, ix_const(cx, -1), ix_add(cx, r, h));
    const Ix *x3 = ix_add(cx, r, ix_add(cx, h, ix_const(cx, -1)));
    CHECK(ix_equal(x1, x2) && ix_equal(x2, x3));
    CHECK(!ix_equal(x1, ix_add(cx, h, r)));
    CHECK(ix_coef(x1, v[0]) == 1 && ix_coef(x1, v[2]) == 0);
    CHECK(ix_uses(x1, v[1]) && !ix_uses(x1, v[3]));
    /* h - h vanishes; a constructor that changes nothing returns its input */
    int64_t k;
    CHECK(ix_is_const(ix_sub(cx, h, h), &k) && k == 0);
    CHECK(ix_add(cx, x1, ix_const(cx, 0)) == x1);
    CHECK(ix_scale(cx, x1, 1) == x1);
    CHECK(ix_subst(cx, x1, v[3], h) == x1);
}

#define IXS(x) PRINTED(ir_print_ix(cx, (x), fp))

static void test_div_mod_forms(void)
{
    const Ix *h = ix_var(cx, v[0]), *r = ix_var(cx, v[1]), *i = ix_var(cx, v[2]);
    const Ix *j = ix_var(cx, v[3]);
    const Ix *one = ix_const(cx, 1);
    /* floor((4a + b + 5) / 4) = a + 1 + floor((b + 1) / 4) */
    const Ix *x = ix_div(cx, ix_add(cx, ix_add(cx, ix_scale(cx, h, 4), r), ix_const(cx, 5)), 4);
    CHECK_STR(IXS(x), "h + (r + 1) / 4 + 1");
    /* floor((2x + 3) / 4) = floor((x + 1) / 2) */
    CHECK_STR(IXS(ix_div(cx, ix_add(cx, ix_scale(cx, h, 2), ix_const(cx, 3)), 4)), "(h + 1) / 2");
    /* (2x + 3) mod 4 = 2 * ((x + 1) mod 2) + 1 */
    CHECK_STR(IXS(ix_mod(cx, ix_add(cx, ix_scale(cx, h, 2), ix_const(cx, 3)), 4)),
              "2*((h + 1) % 2) + 1");
    /* negative divisors */
    CHECK(ix_equal(ix_div(cx, h, -3), ix_div(cx, ix_scale(cx, h, -1), 3)));
    CHECK(ix_equal(ix_mod(cx, h, -3), ix_scale(cx, ix_mod(cx, ix_scale(cx, h, -1), 3), -1)));
    CHECK_STR(IXS(ix_div(cx, h, -3)), "(-h) / 3");
    /* by 1 and by constants */
    CHECK(ix_div(cx, h, 1) == h);
    int64_t k;
    CHECK(ix_is_const(ix_mod(cx, h, 1), &k) && k == 0);
    CHECK(ix_is_const(ix_div(cx, ix_const(cx, -7), 2), &k) && k == -4);
    CHECK(ix_is_const(ix_mod(cx, ix_const(cx, -7), 2), &k) && k == 1);
    CHECK(ix_is_const(ix_mod(cx, ix_const(cx, 7), -2), &k) && k == -1);
    /* (x mod 8) mod 4 = x mod 4; (x mod 4) mod 8 = x mod 4 */
    CHECK(ix_equal(ix_mod(cx, ix_mod(cx, i, 8), 4), ix_mod(cx, i, 4)));
    CHECK(ix_equal(ix_mod(cx, ix_mod(cx, i, 4), 8), ix_mod(cx, i, 4)));
    /* floor(floor(x / 2) / 3) = floor(x / 6); with an offset too */
    CHECK(ix_equal(ix_div(cx, ix_div(cx, i, 2), 3), ix_div(cx, i, 6)));
    CHECK(ix_equal(ix_div(cx, ix_add(cx, ix_div(cx, i, 2), one), 3),
                   ix_div(cx, ix_add(cx, i, ix_const(cx, 2)), 6)));
    /* 4*(i / 4) + i % 4 = i, also inside a larger sum and scaled */
    const Ix *re = ix_add(cx, ix_scale(cx, ix_div(cx, i, 4), 4), ix_mod(cx, i, 4));
    CHECK(re == i || ix_equal(re, i));
    const Ix *re2 = ix_add(cx, ix_add(cx, ix_scale(cx, ix_mod(cx, i, 4), 3), j),
                           ix_scale(cx, ix_div(cx, i, 4), 12));
    CHECK(ix_equal(re2, ix_add(cx, ix_scale(cx, i, 3), j)));
    /* i - 4*(i / 4) = i % 4, and 3*(h + 2r) - 12*((h + 2r + 1) / 4) the same way */
    CHECK(ix_equal(ix_sub(cx, i, ix_scale(cx, ix_div(cx, i, 4), 4)), ix_mod(cx, i, 4)));
    const Ix *hr = ix_add(cx, h, ix_scale(cx, r, 2));
    const Ix *lhs = ix_sub(cx, ix_scale(cx, hr, 3),
                           ix_scale(cx, ix_div(cx, ix_add(cx, hr, one), 4), 12));
    CHECK_STR(IXS(lhs), "3*((h + 2*r + 1) % 4) - 3");
    /* bounded arguments fold without ranges */
    const Ix *b = ix_add(cx, ix_mod(cx, i, 4), ix_scale(cx, ix_mod(cx, j, 2), 4));
    CHECK(ix_is_const(ix_div(cx, b, 8), &k) && k == 0);
    CHECK(ix_equal(ix_mod(cx, b, 8), b));
    /* the printed forms of the language's examples */
    CHECK_STR(IXS(ix_div(cx, ix_sub(cx, ix_add(cx, h, one), r), 2)), "(h - r + 1) / 2");
    CHECK_STR(IXS(ix_add(cx, ix_scale(cx, h, 2), i)), "2*h + i");
    CHECK_STR(IXS(ix_mod(cx, i, 4)), "i % 4");
    CHECK_STR(IXS(ix_sub(cx, ix_add(cx, h, r), one)), "h + r - 1");
    CHECK_STR(IXS(ix_add(cx, i, ix_scale(cx, ix_sub(cx, j, ix_const(cx, 2)), 4))), "i + 4*j - 8");
    CHECK_STR(IXS(ix_sub(cx, j, ix_scale(cx, ix_div(cx, i, 4), 3))), "j - 3*(i / 4)");
    CHECK_STR(IXS(ix_sub(cx, ix_const(cx, 5), ix_div(cx, i, 4))), "5 - i / 4");
    CHECK_STR(IXS(ix_sub(cx, ix_const(cx, -5), ix_div(cx, i, 4))), "-(i / 4) - 5");
    CHECK_STR(IXS(ix_sub(cx, ix_const(cx, 3), h)), "3 - h");
    CHECK_STR(IXS(ix_sub(cx, j, ix_mod(cx, i, 4))), "j - i % 4");
    CHECK_STR(IXS(ix_const(cx, -12)), "-12");
}

static void test_simplify_subst(void)
{
    /* (2a + b) / 2 = a and (2a + b) % 2 = b for b in [0, 2) */
    IrVar a = ir_var_new(cx, "a", 0, 8), b = ir_var_new(cx, "b", 0, 2);
    int64_t lo[64], hi[64];
    for (int k = 0; k < ir_var_count(cx); k++) {
        lo[k] = ir_var_get(cx, k)->lo;
        hi[k] = ir_var_get(cx, k)->hi;
    }
    const Ix *xa = ix_var(cx, a.id), *xb = ix_var(cx, b.id);
    const Ix *h = ix_add(cx, ix_scale(cx, xa, 2), xb);
    CHECK(ix_equal(ix_simplify(cx, ix_div(cx, h, 2), lo, hi), xa));
    CHECK(ix_equal(ix_simplify(cx, ix_mod(cx, h, 2), lo, hi), xb));
    CHECK(ix_simplify(cx, h, lo, hi) == h);
    /* substitution h := 2a + b in (h + 1) / 2 and h % 2, against evaluation */
    const Ix *hv = ix_var(cx, v[0]);
    const Ix *e1 = ix_div(cx, ix_add(cx, hv, ix_const(cx, 1)), 2);
    const Ix *e2 = ix_add(cx, ix_mod(cx, hv, 2), ix_scale(cx, e1, 3));
    const Ix *s2 = ix_subst(cx, e2, v[0], h);
    CHECK(!ix_uses(s2, v[0]));
    int64_t env[64] = {0};
    bool ok = true;
    for (int64_t av = -5; av < 8; av++)
        for (int64_t bv = -3; bv < 3; bv++) {
            env[a.id] = av;
            env[b.id] = bv;
            env[v[0]] = 2 * av + bv;
            ok &= ix_eval(s2, env) == ix_eval(e2, env);
        }
    CHECK(ok);
    /* and back: substituting makes (2a + b + 1) / 2 = a + (b + 1) / 2 */
    CHECK_STR(IXS(ix_subst(cx, e1, v[0], h)), "a + (b + 1) / 2");
}

static void test_bounds(void)
{
    int64_t lo[64] = {0}, hi[64] = {0};
    for (int k = 0; k < NV; k++) {
        lo[v[k]] = -3 + k;
        hi[v[k]] = 4 + 2 * k;
    }
    int64_t env[64] = {0};
    int bad = 0;
    for (int round = 0; round < 500; round++) {
        npool = 0;
        const Ix *x = build(gen(3));
        int64_t mn, mx;
        ix_bounds(x, lo, hi, &mn, &mx);
        /* every value over the whole box lies inside the bounds */
        for (env[v[0]] = lo[v[0]]; env[v[0]] < hi[v[0]]; env[v[0]]++)
            for (env[v[1]] = lo[v[1]]; env[v[1]] < hi[v[1]]; env[v[1]]++)
                for (env[v[2]] = lo[v[2]]; env[v[2]] < hi[v[2]]; env[v[2]]++)
                    for (env[v[3]] = lo[v[3]]; env[v[3]] < hi[v[3]]; env[v[3]]++) {
                        int64_t e = ix_eval(x, env);
                        bad += e < mn || e > mx;
                    }
    }
    CHECK(bad == 0);
    /* exact for affine forms: h + 2r - 1 with h in [-3, 4), r in [-2, 6) */
    const Ix *x = ix_add(cx, ix_add(cx, ix_var(cx, v[0]), ix_scale(cx, ix_var(cx, v[1]), 2)),
                         ix_const(cx, -1));
    int64_t mn, mx;
    ix_bounds(x, lo, hi, &mn, &mx);
    CHECK(mn == -3 - 4 - 1 && mx == 3 + 10 - 1);

    /* Beyond 64 bits the bounds saturate outwards, never inwards:
     * M*a - M*b - M with a in [0, 3), b in [0, 2) spans [-2M, M]. */
    const int64_t M = INT64_MAX;
    int64_t blo[64] = {0}, bhi[64] = {0};
    bhi[v[0]] = 3;
    bhi[v[1]] = 2;
    x = ix_add(cx, ix_sub(cx, ix_scale(cx, ix_var(cx, v[0]), M),
                          ix_scale(cx, ix_var(cx, v[1]), M)), ix_const(cx, -M));
    ix_bounds(x, blo, bhi, &mn, &mx);
    CHECK(mn == INT64_MIN && mx == M);
    /* A term past 2^100 is not cut short and then outweighed by a later
     * one: 2^62 a - 2^62 b with a in [0, 2^62), b in [2^40, 2^62) has a
     * maximum near 2^124, positive. */
    bhi[v[0]] = (int64_t)1 << 62;
    blo[v[1]] = (int64_t)1 << 40;
    bhi[v[1]] = (int64_t)1 << 62;
    x = ix_sub(cx, ix_scale(cx, ix_var(cx, v[0]), (int64_t)1 << 62),
               ix_scale(cx, ix_var(cx, v[1]), (int64_t)1 << 62));
    ix_bounds(x, blo, bhi, &mn, &mx);
    CHECK(mn == INT64_MIN && mx == INT64_MAX);
}

/* A value for a random sum's coefficients, ranges and constant: small,
 * or near a power of two up to 2^62 (where products and sums overflow 64
 * bits), either sign. */
static int64_t edge_value(void)
{
    if (rng_range(0, 1) == 0)
        return rng_range(-9, 9);
    int64_t p = (int64_t)1 << rng_range(0, 62);
    int64_t v = p + rng_range(-3, 3);
    return rng_range(0, 1) ? v : -v;
}

/* Bounds of random sums c + coef_k * v_k against exact 128-bit interval
 * arithmetic: never inside the true range, and equal to it where no
 * partial sum can leave 64 bits (ix.c works such sums in 64 bits and
 * the rest in 128). */
static void test_bounds_sums(void)
{
    typedef __int128 i128;
    int bad_sound = 0, bad_exact = 0, exact = 0;
    for (int round = 0; round < 20000; round++) {
        int64_t lo[64] = {0}, hi[64] = {0};
        int64_t c = edge_value();
        const Ix *x = ix_const(cx, c);
        i128 emin = c, emax = c, mag = c < 0 ? -(i128)c : c;
        int n = (int)rng_range(1, NV);
        for (int k = 0; k < n; k++) {
            int64_t coef = edge_value();
            if (coef == 0)
                coef = 1;
            lo[v[k]] = edge_value();
            hi[v[k]] = rng_range(0, 3) ? lo[v[k]] + rng_range(0, 9) : edge_value();
            x = ix_add(cx, x, ix_scale(cx, ix_var(cx, v[k]), coef));
            i128 l = lo[v[k]], h = (i128)hi[v[k]] - 1;
            if (h < l)
                h = l;                  /* an empty range reads as its lower end */
            i128 a = l * coef, b = h * coef;
            emin += a < b ? a : b;
            emax += a < b ? b : a;
            mag += (a < 0 ? -a : a) > (b < 0 ? -b : b) ? (a < 0 ? -a : a) : (b < 0 ? -b : b);
        }
        if (ir_ctx_overflowed(cx))
            continue;                   /* the constructors refused: not this test's */
        int64_t mn, mx;
        ix_bounds(x, lo, hi, &mn, &mx);
        /* outside 64 bits a bound is the nearest 64-bit value */
        i128 smin = emin < INT64_MIN ? INT64_MIN : emin > INT64_MAX ? INT64_MAX : emin;
        i128 smax = emax < INT64_MIN ? INT64_MIN : emax > INT64_MAX ? INT64_MAX : emax;
        bad_sound += mn > smin || mx < smax;
        if (mag < ((i128)1 << 62)) {
            exact++;
            bad_exact += mn != emin || mx != emax;
        }
    }
    CHECK(bad_sound == 0);
    CHECK(bad_exact == 0);
    CHECK(exact > 5000);                /* both kinds of sum were drawn */
}

#define EXS(e) PRINTED(ir_print_expr(cx, (e), fp))

static void test_icmp(void)
{
    const Ix *i = ix_var(cx, v[2]), *j = ix_var(cx, v[3]);
    /* i < j is j - i - 1 >= 0; j > i is the same node */
    const IExpr *lt = ir_icmp(cx, OP_LT, i, j), *gt = ir_icmp(cx, OP_GT, j, i);
    CHECK(ir_expr_equal(lt, gt));
    CHECK_STR(EXS(lt), "j >= i + 1");
    /* 2i >= 3 is i - 2 >= 0 */
    CHECK_STR(EXS(ir_icmp(cx, OP_GE, ix_scale(cx, i, 2), ix_const(cx, 3))), "i >= 2");
    /* 2i == 3 is false, 2i != 3 true, 2i == 4 is i - 2 == 0 */
    const IExpr *f = ir_icmp(cx, OP_EQ, ix_scale(cx, i, 2), ix_const(cx, 3));
    CHECK(f->kind == IE_CONST && f->value == 0);
    f = ir_icmp(cx, OP_NE, ix_scale(cx, i, 2), ix_const(cx, 3));
    CHECK(f->kind == IE_CONST && f->value == 1);
    CHECK_STR(EXS(ir_icmp(cx, OP_EQ, ix_scale(cx, i, 2), ix_const(cx, 4))), "i == 2");
    /* i == j and j == i are one node; the first coefficient is positive */
    CHECK(ir_expr_equal(ir_icmp(cx, OP_EQ, i, j), ir_icmp(cx, OP_EQ, j, i)));
    /* !(i >= j) is j - i - 1 >= 0 */
    CHECK(ir_expr_equal(ir_unary(cx, IE_NOT, ir_icmp(cx, OP_GE, i, j)), lt));
    /* an index used as a value: its floor division prints as // (a real
     * division of values prints as /) */
    CHECK_STR(EXS(ir_index(cx, ix_add(cx, ix_div(cx, i, 4), j))), "i // 4 + j");
    CHECK_STR(EXS(ir_binary(cx, IE_DIV, ir_index(cx, i), ir_const(cx, 4))), "i / 4");
    /* every comparison against brute force */
    BinOp ops[] = {OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE};
    int64_t env[64] = {0};
    bool ok = true;
    for (int o = 0; o < 6; o++) {
        const Ix *l = ix_scale(cx, i, 3), *r = ix_add(cx, ix_scale(cx, j, 6), ix_const(cx, 2));
        const IExpr *c = ir_icmp(cx, ops[o], l, r);
        for (int64_t a = -9; a <= 9; a++)
            for (int64_t b = -4; b <= 4; b++) {
                env[v[2]] = a;
                env[v[3]] = b;
                int64_t L = 3 * a, R = 6 * b + 2;
                bool want = ops[o] == OP_EQ ? L == R : ops[o] == OP_NE ? L != R
                          : ops[o] == OP_LT ? L < R : ops[o] == OP_LE ? L <= R
                          : ops[o] == OP_GT ? L > R : L >= R;
                bool got;
                if (c->kind == IE_CONST) {
                    got = c->value != 0;
                } else {
                    int64_t x = ix_eval(c->icmp.ix, env);
                    got = c->icmp.op == OP_EQ ? x == 0 : c->icmp.op == OP_NE ? x != 0 : x >= 0;
                }
                ok &= got == want;
            }
    }
    CHECK(ok);
}

static void test_overflow(void)
{
    const Ix *i = ix_var(cx, v[2]);
    ir_ctx_overflowed(cx);
    ix_scale(cx, ix_scale(cx, i, INT64_C(1) << 40), INT64_C(1) << 40);
    CHECK(ir_ctx_overflowed(cx));
    CHECK(!ir_ctx_overflowed(cx));
}

static void test_mark_release(void)
{
    IrMark m = ir_ctx_mark(cx);
    int n = ir_var_count(cx);
    for (int k = 0; k < 100; k++)
        ir_var_new(cx, "tmp", 0, 3);
    ix_add(cx, ix_var(cx, n + 50), ix_const(cx, 1000));
    ir_ctx_release(cx, m);
    CHECK(ir_var_count(cx) == n);
    IrVar w = ir_var_new(cx, "w", 0, 5);
    CHECK(w.id == n);
    CHECK(ix_coef(ix_var(cx, w.id), w.id) == 1);
    CHECK_STR(ir_var_name(cx, w.id), "w");
}

int main(void)
{
    Arena *arena = arena_new();
    cx = ir_ctx_new(arena);
    const char *names[NV] = {"h", "r", "i", "j"};
    for (int k = 0; k < NV; k++)
        v[k] = ir_var_new(cx, names[k], -8, 8).id;
    test_random_trees();
    test_orders();
    test_div_mod_forms();
    test_simplify_subst();
    test_bounds();
    test_bounds_sums();
    test_icmp();
    test_overflow();
    test_mark_release();
    arena_free(arena);
    return check_finish("test_ix");
}
