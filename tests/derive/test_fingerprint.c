/* test_fingerprint.c - fingerprints are equal under renaming of bound
 * variables (fresh ids in random order, random names) and under the order
 * of commutative operands, and differ when an index, a range, a tensor,
 * the reduction, an operator or the loop order changes. */
#include "config.h"
#include "derive/ir/ir.h"
#include "tests/check.h"

static IrCtx *cx;

static const int64_t xshape[] = {1, 2, 5, 5}, wshape[] = {3, 2, 3, 3};
static IrTensor X = {.id = 0, .name = "x", .kind = IT_INPUT, .rank = 4, .shape = xshape};
static IrTensor X2 = {.id = 2, .name = "x2", .kind = IT_INPUT, .rank = 4, .shape = xshape};
static IrTensor W = {.id = 1, .name = "w", .kind = IT_WEIGHT, .rank = 4, .shape = wshape};
static const int64_t mshape[] = {4, 4};
static IrTensor M = {.id = 3, .name = "m", .kind = IT_INPUT, .rank = 2, .shape = mshape};
static const int64_t vshape[] = {4};
static IrTensor V = {.id = 4, .name = "v", .kind = IT_INPUT, .rank = 1, .shape = vshape};

/* What a variant changes from the plain 3x3 convolution. */
typedef struct Variant {
    int64_t off;                    /* h + r + off */
    int64_t hcoef;                  /* hcoef*h + r - 1 */
    int64_t hhi, rhi;               /* ranges of h and r */
    const IrTensor *x;
    Reduce red;
    IExprKind op;
    bool swap_hw;                   /* loop order n, f, w, h */
    bool guard;                     /* | (h - r + 1) % 2 == 0, r - s == 0 */
    bool guard2;                    /* | (h - r) % 2 == 0 */
} Variant;

static const Variant base = {-1, 1, 5, 3, &X, RED_SUM, IE_MUL, false, false, false};

static const char *const pool_names[] = {"a", "b", "c", "d", "e", "f", "g", "h", "r", "s"};

/* Makes the seven variables in a random order, with random names and
 * random unused variables in between, so ids and names differ per call. */
static const Stage *conv(Variant vr, bool shuffle)
{
    static const int64_t lo[7] = {0, 0, 0, 0, 0, 0, 0};
    int64_t hi[7] = {1, 3, 5, 5, 2, 3, 3};
    hi[2] = vr.hhi;
    hi[5] = vr.rhi;
    int order[7] = {0, 1, 2, 3, 4, 5, 6};
    if (shuffle)
        for (int i = 6; i > 0; i--) {
            int j = (int)rng_range(0, i), t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
    IrVar var[7];
    for (int i = 0; i < 7; i++) {
        int k = order[i];
        if (shuffle)
            for (int64_t d = rng_range(0, 2); d > 0; d--)
                ir_var_new(cx, "unused", 0, 1);
        var[k] = ir_var_new(cx, shuffle ? pool_names[rng_range(0, 9)] : "v", lo[k], hi[k]);
    }
    const Ix *n = ix_var(cx, var[0].id), *f = ix_var(cx, var[1].id);
    const Ix *h = ix_var(cx, var[2].id), *w = ix_var(cx, var[3].id);
    const Ix *c = ix_var(cx, var[4].id), *r = ix_var(cx, var[5].id), *s = ix_var(cx, var[6].id);
    const Ix *xi[4] = {n, c, ix_add(cx, ix_add(cx, ix_scale(cx, h, vr.hcoef), r), ix_const(cx, vr.off)),
                       ix_add(cx, ix_add(cx, w, s), ix_const(cx, -1))};
    const Ix *wi[4] = {f, c, r, s};
    const IExpr *a = ir_access_tensor(cx, vr.x, xi, 4), *b = ir_access_tensor(cx, &W, wi, 4);
    const IExpr *body = shuffle && vr.op != IE_SUB && rng_range(0, 1) ? ir_binary(cx, vr.op, b, a)
                                                   : ir_binary(cx, vr.op, a, b);
    IrVar loops[4] = {var[0], var[1], var[2], var[3]};
    if (vr.swap_hw) {
        loops[2] = var[3];
        loops[3] = var[2];
    }
    IrVar sums[3] = {var[4], var[5], var[6]};
    if (shuffle && rng_range(0, 1)) {
        sums[0] = var[6];
        sums[2] = var[4];
    }
    const IExpr *g[2];
    int ng = 0;
    if (vr.guard) {
        g[ng++] = ir_icmp(cx, OP_EQ, ix_mod(cx, ix_add(cx, ix_sub(cx, h, r), ix_const(cx, 1)), 2),
                          ix_const(cx, 0));
        g[ng++] = shuffle && rng_range(0, 1) ? ir_icmp(cx, OP_EQ, r, s) : ir_icmp(cx, OP_EQ, s, r);
        if (shuffle && rng_range(0, 1)) {
            const IExpr *t = g[0];
            g[0] = g[1];
            g[1] = t;
        }
    }
    if (vr.guard2)
        g[ng++] = ir_icmp(cx, OP_EQ, ix_mod(cx, ix_sub(cx, h, r), 2), ix_const(cx, 0));
    return ir_stage(cx, vr.red, loops, 4, sums, 3, g, ng, body);
}

static void test_renaming(void)
{
    Variant vs[2] = {base, base};
    vs[1].guard = true;
    for (int k = 0; k < 2; k++) {
        const Stage *ref = conv(vs[k], false);
        uint64_t fp = ir_fingerprint(ref);
        int same = 0, hash_differs = 0;
        for (int t = 0; t < 200; t++) {
            const Stage *s = conv(vs[k], true);
            same += ir_fingerprint(s) == fp;
            hash_differs += s->hash != ref->hash;
        }
        CHECK(same == 200);
        CHECK(hash_differs == 200);             /* the renaming did rename */
    }
    /* structural equality: the same variables, operands and guards given
     * in other orders; different variables are structurally different */
    IrVar i = ir_var_new(cx, "i", 0, 4), j = ir_var_new(cx, "j", 0, 4), k = ir_var_new(cx, "k", 0, 4);
    const Ix *ik[2] = {ix_var(cx, i.id), ix_var(cx, k.id)}, *kj[2] = {ix_var(cx, k.id), ix_var(cx, j.id)};
    const IExpr *a = ir_access_tensor(cx, &M, ik, 2), *b = ir_access_tensor(cx, &M, kj, 2);
    const IExpr *g1 = ir_icmp(cx, OP_GE, ik[0], kj[0]), *g2 = ir_icmp(cx, OP_NE, kj[1], ik[0]);
    IrVar loops[2] = {i, j};
    const Stage *s1 = ir_stage(cx, RED_SUM, loops, 2, &k, 1, (const IExpr *[]){g1, g2}, 2,
                               ir_binary(cx, IE_MUL, a, b));
    const Stage *s2 = ir_stage(cx, RED_SUM, loops, 2, &k, 1,
                               (const IExpr *[]){ir_binary(cx, IE_AND, g2, g1)}, 1,
                               ir_binary(cx, IE_MUL, b, a));
    CHECK(s1 != s2 && ir_stage_equal(s1, s2) && s1->hash == s2->hash);
    CHECK(ir_fingerprint(s1) == ir_fingerprint(s2));
    IrVar k2 = ir_var_new(cx, "k", 0, 4);
    const Stage *s3 = ir_stage(cx, RED_SUM, loops, 2, &k2, 1, (const IExpr *[]){g1, g2}, 2,
                               ir_binary(cx, IE_MUL, a, b));
    CHECK(!ir_stage_equal(s1, s3));
}

static void test_changes(void)
{
    uint64_t fp0 = ir_fingerprint(conv(base, true));
    Variant v;
#define DIFFERS(field, value)                                               \
    do {                                                                    \
        v = base;                                                           \
        v.field = value;                                                    \
        uint64_t fp1 = ir_fingerprint(conv(v, true));                       \
        if (fp1 == fp0) {                                                   \
            fprintf(stderr, "%s:%d: fingerprint unchanged by %s = %s\n",    \
                    __FILE__, __LINE__, #field, #value);                    \
            failures++;                                                     \
        }                                                                   \
        CHECK(fp1 == ir_fingerprint(conv(v, true)));                        \
    } while (0)
    DIFFERS(off, -2);
    DIFFERS(off, 0);
    DIFFERS(hcoef, 2);
    DIFFERS(hcoef, -1);
    DIFFERS(hhi, 4);
    DIFFERS(rhi, 2);
    DIFFERS(x, &X2);
    DIFFERS(red, RED_MAX);
    DIFFERS(red, RED_MIN);
    DIFFERS(op, IE_ADD);
    DIFFERS(op, IE_SUB);
    DIFFERS(swap_hw, true);
    DIFFERS(guard, true);
    DIFFERS(guard2, true);
    /* guard (h - r + 1) % 2 == 0 against (h - r) % 2 == 0 */
    v = base;
    v.guard = true;
    uint64_t g1 = ir_fingerprint(conv(v, true));
    v.guard = false;
    v.guard2 = true;
    CHECK(g1 != ir_fingerprint(conv(v, true)));
#undef DIFFERS
}

/* Σ<r, s> m[r, s] * v[s] and Σ<r, s> m[r, s] * v[r]: same ranges, same
 * operators, different meaning (EinNet's range-only hashing of sum
 * variables cannot tell them apart; the signatures can). */
static void test_sum_roles(void)
{
    IrVar r = ir_var_new(cx, "r", 0, 4), s = ir_var_new(cx, "s", 0, 4);
    IrVar sums[2] = {r, s};
    const Ix *rs[2] = {ix_var(cx, r.id), ix_var(cx, s.id)};
    const IExpr *mrs = ir_access_tensor(cx, &M, rs, 2);
    const IExpr *vs = ir_access_tensor(cx, &V, &rs[1], 1), *vr = ir_access_tensor(cx, &V, &rs[0], 1);
    const Stage *a = ir_stage(cx, RED_SUM, NULL, 0, sums, 2, NULL, 0, ir_binary(cx, IE_MUL, mrs, vs));
    const Stage *b = ir_stage(cx, RED_SUM, NULL, 0, sums, 2, NULL, 0, ir_binary(cx, IE_MUL, mrs, vr));
    CHECK(ir_fingerprint(a) != ir_fingerprint(b));
    /* m[r, s] against m[s, r] is a renaming of the same sum: equal */
    const Ix *sr[2] = {rs[1], rs[0]};
    const Stage *c = ir_stage(cx, RED_SUM, NULL, 0, sums, 2, NULL, 0,
                              ir_binary(cx, IE_MUL, ir_access_tensor(cx, &M, sr, 2), vr));
    CHECK(ir_fingerprint(a) == ir_fingerprint(c));
    CHECK(!ir_stage_equal(a, c));
    /* m[r, r] against m[r, s] */
    const Ix *rr[2] = {rs[0], rs[0]};
    const Stage *d = ir_stage(cx, RED_SUM, NULL, 0, sums, 2, NULL, 0,
                              ir_binary(cx, IE_MUL, ir_access_tensor(cx, &M, rr, 2), vs));
    CHECK(ir_fingerprint(a) != ir_fingerprint(d));
}

/* L<i:0..6> { S[i - 1] + S[i] } with S = L<a:0..4> Σ<k:0..3> { m[a, k] } */
static const Stage *nested(int64_t ahi, int64_t koff, bool swap)
{
    for (int64_t d = rng_range(0, 3); d > 0; d--)
        ir_var_new(cx, "unused", 0, 1);
    IrVar k = ir_var_new(cx, "k", 0, 3), a = ir_var_new(cx, "a", 0, ahi);
    IrVar i = ir_var_new(cx, "i", 0, 6);
    const Ix *mi[2] = {ix_var(cx, a.id), ix_add(cx, ix_var(cx, k.id), ix_const(cx, koff))};
    const Stage *S = ir_stage(cx, RED_SUM, &a, 1, &k, 1, NULL, 0, ir_access_tensor(cx, &M, mi, 2));
    const Ix *i0 = ix_var(cx, i.id), *i1 = ix_add(cx, i0, ix_const(cx, -1));
    const IExpr *x = ir_access_stage(cx, S, &i1, 1), *y = ir_access_stage(cx, S, &i0, 1);
    return ir_stage(cx, RED_NONE, &i, 1, NULL, 0, NULL, 0,
                    swap ? ir_binary(cx, IE_ADD, y, x) : ir_binary(cx, IE_ADD, x, y));
}

static void test_nested(void)
{
    uint64_t fp = ir_fingerprint(nested(4, 0, false));
    for (int t = 0; t < 20; t++)
        CHECK(ir_fingerprint(nested(4, 0, t & 1)) == fp);
    CHECK(ir_fingerprint(nested(3, 0, false)) != fp);
    CHECK(ir_fingerprint(nested(4, 1, false)) != fp);
}

int main(void)
{
    Arena *arena = arena_new();
    cx = ir_ctx_new(arena);
    test_renaming();
    test_changes();
    test_sum_roles();
    test_nested();
    arena_free(arena);
    return check_finish("test_fingerprint");
}
