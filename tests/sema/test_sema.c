/* test_sema.c - unit tests of sema: range inference, shape inference and
 * unification, inlining names, statement order, and the errors each check
 * gives (by the first line of the message, exactly).
 *
 *   test_sema            run the tests
 *   test_sema FILE.ein   print sema_dump of FILE (or its diagnostics) */
#include "config.h"
#include "lang/lang.h"
#include "parser/parser.h"
#include "sema/sema.h"
#include "tests/check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static Arena *arena;
static char diag_buf[1 << 16];

/* Parse and check `text`; diagnostics go to diag_buf. */
static CProgram *run_defs(const char *text, const char *const *defs, int ndefs)
{
    src_reset();
    diag_reset();
    memset(diag_buf, 0, sizeof diag_buf);
    FILE *fp = fmemopen(diag_buf, sizeof diag_buf - 1, "w");
    setvbuf(fp, NULL, _IONBF, 0);
    diag_set_stream(fp);
    diag_set_max_errors(0);
    CProgram *p = NULL;
    Ast *ast = parse_buffer("t.ein", text, strlen(text), NULL, arena);
    if (ast && diag_error_count() == 0) {
        SemaOptions opt = {defs, ndefs, "t"};
        p = sema_check(ast, &opt, arena);
    }
    fclose(fp);
    diag_set_stream(NULL);
    return p;
}

static CProgram *run(const char *text)
{
    return run_defs(text, NULL, 0);
}

static const CTensor *tensor(const CProgram *p, const char *name)
{
    for (int i = 0; p && i < p->ntensors; i++)
        if (strcmp(p->tensors[i].name, name) == 0)
            return &p->tensors[i];
    return NULL;
}

static const char *shape_str(const CTensor *t)
{
    static char buf[256];
    if (!t)
        return "(none)";
    int n = snprintf(buf, sizeof buf, "[");
    for (int i = 0; i < t->rank; i++)
        n += snprintf(buf + n, sizeof buf - (size_t)n, "%s%lld", i ? ", " : "",
                      (long long)t->shape[i]);
    snprintf(buf + n, sizeof buf - (size_t)n, "]");
    return buf;
}

/* "n 0..1, c 0..64 | r 0..3": loops, then sums, of the statement that
 * defines `name`. */
static const char *ranges_str(const CProgram *p, const char *name)
{
    static char buf[512];
    const CTensor *t = tensor(p, name);
    if (!t || t->stmt < 0)
        return "(none)";
    const CStmt *s = &p->stmts[t->stmt];
    int n = 0;
    buf[0] = 0;
    for (int i = 0; i < s->nvars; i++)
        n += snprintf(buf + n, sizeof buf - (size_t)n, "%s%s %lld..%lld",
                      i == 0 ? "" : i == s->nloops ? " | " : ", ",
                      s->vars[i].name, (long long)s->vars[i].lo,
                      (long long)s->vars[i].hi);
    if (s->nloops == 0 && s->nvars > 0)
        memmove(buf + 2, buf, strlen(buf) + 1), memcpy(buf, "| ", 2);
    return buf;
}

/* The first diagnostic line without "t.ein:L:C: ". */
static const char *first_msg(void)
{
    static char buf[512];
    const char *p = diag_buf;
    const char *e = strchr(p, '\n');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    if (strncmp(p, "t.ein:", 6) == 0) {
        const char *q = strstr(p, ": ");
        if (q && q < p + n) {
            n -= (size_t)(q + 2 - p);
            p = q + 2;
        }
    } else if (strncmp(p, "einc: ", 6) == 0) {
        p += 6;
        n -= 6;
    }
    snprintf(buf, sizeof buf, "%.*s", (int)n, p);
    return buf;
}

static int count_of(const char *what)
{
    int n = 0;
    for (const char *p = diag_buf; (p = strstr(p, what)); p++)
        n++;
    return n;
}

static const char *sema_dump_str(const CProgram *p)
{
    static char buf[1 << 14];
    memset(buf, 0, sizeof buf);
    FILE *fp = fmemopen(buf, sizeof buf - 1, "w");
    sema_dump(p, fp);
    fclose(fp);
    return buf;
}

#define EXPECT_SHAPE(p, name, want)                                          \
    CHECK(strcmp(shape_str(tensor(p, name)), want) == 0,                   \
          "shape of %s: got %s, want %s\n%s", name, shape_str(tensor(p, name)), \
          want, diag_buf)
#define EXPECT_RANGES(p, name, want)                                         \
    CHECK(strcmp(ranges_str(p, name), want) == 0,                          \
          "ranges of %s: got '%s', want '%s'\n%s", name, ranges_str(p, name), \
          want, diag_buf)
#define EXPECT_ERROR(src, want)                                             \
    do {                                                                    \
        CProgram *p_ = run(src);                                            \
        CHECK(!p_ && strcmp(first_msg(), want) == 0,                        \
              "want '%s', got:\n%s", want, diag_buf);                       \
    } while (0)
#define EXPECT_OK(p)                                                        \
    CHECK((p) != NULL && diag_buf[0] == 0, "unexpected diagnostics:\n%s", diag_buf)

/* ---- range inference ------------------------------------------------- */

static void test_ranges(void)
{
    CProgram *p;
    p = run("const N = 2, M = 3, K = 5\n"
            "input a : f32[N, K], b : f32[K, M]\n"
            "c[i, j] += a[i, k] * b[k, j]\noutput c\n");
    EXPECT_OK(p);
    EXPECT_SHAPE(p, "c", "[2, 3]");
    EXPECT_RANGES(p, "c", "i 0..2, j 0..3 | k 0..5");
    CHECK(p && p->stmts[0].red == RED_SUM, "red");

    /* the normative convolution: c, r, s sums; r, s from w1's shape */
    p = run("const N = 1, C = 64, H = 56, W = 56, F = 64\n"
            "input x : f32[N, C, H, W]\nweight w1 : f32[F, C, 3, 3]\n"
            "y[n, f, h, w] : [N, F, H, W] += x[n, c, h + r - 1, w + s - 1] * w1[f, c, r, s]\n"
            "output y\n");
    EXPECT_OK(p);
    EXPECT_SHAPE(p, "y", "[1, 64, 56, 56]");
    EXPECT_RANGES(p, "y", "n 0..1, f 0..64, h 0..56, w 0..56 | c 0..64, r 0..3, s 0..3");

    /* where gives ranges to window indices; the declared shape to h, w */
    p = run("const N = 1, C = 4, H = 8, W = 8\ninput x : f32[N, C, H, W]\n"
            "p[n, c, h, w] : [N, C, H/2, W/2] max= x[n, c, 2*h + i, 2*w + j] where i < 2, j < 2\n"
            "output p\n");
    EXPECT_OK(p);
    EXPECT_SHAPE(p, "p", "[1, 4, 4, 4]");
    EXPECT_RANGES(p, "p", "n 0..1, c 0..4, h 0..4, w 0..4 | i 0..2, j 0..2");
    CHECK(p && p->stmts[0].red == RED_MAX, "max=");

    /* i in lo..hi, <=, >, == and constants on the left */
    p = run("input x : f32[10]\n"
            "a[] += x[i] where i in 2..7\n"
            "b[] += x[i] where i <= 4\n"
            "c[] += x[i] where i > 3\n"
            "d[] += x[i] where 6 > i, 1 <= i\n"
            "e[] += x[i] where i == 5\n"
            "f[] += x[i] where i >= 0 && i < 3\n"
            "output a, b, c, d, e, f\n");
    EXPECT_OK(p);
    EXPECT_SHAPE(p, "a", "[]");
    EXPECT_RANGES(p, "a", "| i 2..7");
    EXPECT_RANGES(p, "b", "| i 0..5");
    EXPECT_RANGES(p, "c", "| i 4..10");
    EXPECT_RANGES(p, "d", "| i 1..6");
    EXPECT_RANGES(p, "e", "| i 5..6");
    EXPECT_RANGES(p, "f", "| i 0..3");

    /* a where range wins over positions, which then need not agree */
    p = run("input x : f32[5], y : f32[7]\n"
            "s[] += x[k] * y[k] where k in 0..6\noutput s\n");
    EXPECT_OK(p);
    EXPECT_RANGES(p, "s", "| k 0..6");

    /* negative sum ranges are fine (reads outside are zero) */
    p = run("input x : f32[5]\ns[i] : [5] += x[i + k] where k in -2..3\noutput s\n");
    EXPECT_OK(p);
    EXPECT_SHAPE(p, "s", "[5]");
    EXPECT_RANGES(p, "s", "i 0..5 | k -2..3");

    /* a loop index narrowed by where: shape from x, output zero outside */
    p = run("input x : f32[10]\ny[i] = x[i] where i in 2..5\noutput y\n");
    EXPECT_OK(p);
    EXPECT_SHAPE(p, "y", "[10]");
    EXPECT_RANGES(p, "y", "i 2..5");

    /* ... clipped to the declared shape */
    p = run("input x : f32[10]\ny[i] : [4] = x[i] where i in -3..20\noutput y\n");
    EXPECT_OK(p);
    EXPECT_SHAPE(p, "y", "[4]");
    EXPECT_RANGES(p, "y", "i 0..4");

    /* a loop index with only a where range gives the shape */
    p = run("input x : f32[3]\ny[i, j] = x[j] where i < 6\noutput y\n");
    EXPECT_OK(p);
    EXPECT_SHAPE(p, "y", "[6, 3]");
    EXPECT_RANGES(p, "y", "i 0..6, j 0..3");

    /* lower bound only: positions give the upper one */
    p = run("input x : f32[9]\ns[] += x[r] where r >= 2\noutput s\n");
    EXPECT_OK(p);
    EXPECT_RANGES(p, "s", "| r 2..9");

    /* broadcast: a loop index absent on the right, from the declared shape */
    p = run("input b : f32[4]\ny[n, f] : [3, 4] = b[f]\noutput y\n");
    EXPECT_OK(p);
    EXPECT_RANGES(p, "y", "n 0..3, f 0..4");

    /* declared shape wins over a disagreeing position (padding) */
    p = run("input x : f32[5]\ny[i] : [8] = x[i]\noutput y\n");
    EXPECT_OK(p);
    EXPECT_SHAPE(p, "y", "[8]");

    /* an index in a compound subscript takes its range elsewhere */
    p = run("const L = 100, K = 3\ninput q : f32[L, 8], k : f32[L, 8]\n"
            "s[i, j] : [L, 2*K + 1] += q[i, d] * k[i + 4*(j - K), d]\noutput s\n");
    EXPECT_OK(p);
    EXPECT_SHAPE(p, "s", "[100, 7]");
    EXPECT_RANGES(p, "s", "i 0..100, j 0..7 | d 0..8");

    /* guards stay guards; ranges from elsewhere */
    p = run("const N = 2, C = 3, F = 5, H = 2, W = 2\n"
            "input x : f32[N, C, H, W]\nweight wt : f32[C, F, 4, 4]\n"
            "y[n, f, h, w] : [N, F, 2*H, 2*W] += x[n, c, (h + 1 - r) / 2, (w + 1 - s) / 2] * wt[c, f, r, s]\n"
            "    where (h + 1 - r) % 2 == 0, (w + 1 - s) % 2 == 0\noutput y\n");
    EXPECT_OK(p);
    EXPECT_RANGES(p, "y", "n 0..2, f 0..5, h 0..4, w 0..4 | c 0..3, r 0..4, s 0..4");
    CHECK(p && p->stmts[0].nguards == 2, "two guards");

    /* an index only in where and body scalars: a real index */
    p = run("s[] += i * 2 where i in 0..10\noutput s\n");
    EXPECT_OK(p);
    EXPECT_RANGES(p, "s", "| i 0..10");

    /* `+=` with nothing to sum is a map */
    p = run("input x : f32[4]\ny[i] += x[i]\noutput y\n");
    EXPECT_OK(p);
    CHECK(p && p->stmts[0].red == RED_NONE, "+= without sum index is a map");

    /* reshape with / and % */
    p = run("const N = 2, C = 4, H = 3, W = 5\ninput x : f32[N, C, H, W]\n"
            "f[n, i] : [N, C*H*W] = x[n, i / (H*W), i / W % H, i % W]\noutput f\n");
    EXPECT_OK(p);
    EXPECT_SHAPE(p, "f", "[2, 60]");
    /* inferred through a chain of statements in any order */
    p = run("input x : f32[3, 4]\nz[i] = y[i, 0]\ny[a, b] = x[b, a]\noutput z\n");
    EXPECT_OK(p);
    EXPECT_SHAPE(p, "y", "[4, 3]");
    EXPECT_SHAPE(p, "z", "[4]");
    CHECK(p && p->stmts[0].out == tensor(p, "y")->id, "y is computed first");
    /* f16 */
    p = run("input x : f16[3]\ny[i] : f16[3] = x[i]\noutput y\n");
    EXPECT_OK(p);
    CHECK(p && tensor(p, "y")->elem == ELEM_F16, "f16");
}

/* ---- -D and constants ---------------------------------------------------- */

static void test_consts(void)
{
    const char *src = "const N = 2, M = N * 3, Q = -7 / 2, R = -7 % 3, S = 7 % -3\n"
                      "input x : f32[N, M]\ny[i, j] = x[i, j] + Q + R + S\noutput y\n";
    CProgram *p = run(src);
    EXPECT_OK(p);
    EXPECT_SHAPE(p, "x", "[2, 6]");
    /* floor division: -7/2 = -4, -7%3 = 2, 7%-3 = -2 -> folded to -4 */
    const char *defs[] = {"N=5"};
    p = run_defs(src, defs, 1);
    EXPECT_OK(p);
    EXPECT_SHAPE(p, "x", "[5, 15]");
    const char *defs2[] = {"N=5", "N=-1"};
    p = run_defs(src, defs2, 2);
    CHECK(!p && strstr(diag_buf, "dimension 1 of 'x' is -1"), "%s", diag_buf);
    const char *bad1[] = {"K=3"};
    p = run_defs(src, bad1, 1);
    CHECK(!p && strcmp(first_msg(), "error: -D K=3: no constant named 'K'") == 0,
          "%s", diag_buf);
    const char *bad2[] = {"n=3"};
    p = run_defs(src, bad2, 1);
    CHECK(!p && strcmp(first_msg(), "error: -D n=3: no constant named 'n'; did you mean 'N'?") == 0,
          "%s", diag_buf);
    const char *bad3[] = {"N=abc"};
    p = run_defs(src, bad3, 1);
    CHECK(!p && strcmp(first_msg(), "error: invalid -D 'N=abc': the value must be an integer") == 0,
          "%s", diag_buf);
    const char *bad4[] = {"N"};
    p = run_defs(src, bad4, 1);
    CHECK(!p && strcmp(first_msg(), "error: invalid -D 'N': expected NAME=VALUE, e.g. -D N=16") == 0,
          "%s", diag_buf);
    const char *bad5[] = {"x=3"};
    p = run_defs(src, bad5, 1);
    CHECK(!p && strcmp(first_msg(), "error: -D x=3: 'x' is an input, not a constant") == 0,
          "%s", diag_buf);
    const char *bad6[] = {"N=99999999999999999999"};
    p = run_defs(src, bad6, 1);
    CHECK(!p && strstr(first_msg(), "the value must be an integer"), "%s", diag_buf);

    EXPECT_ERROR("const A = 9223372036854775807 + 1\n", "error: integer overflow: 9223372036854775807 + 1 does not fit in 64 bits");
    EXPECT_ERROR("const A = 3 / (2 - 2)\n", "error: division by zero");
    EXPECT_ERROR("const A = 3 % 0\n", "error: modulo by zero");
    EXPECT_ERROR("const A = B + 1, B = 2\n", "error: constant 'B' is used before its definition");
    EXPECT_ERROR("const A = 1.5\n", "error: real number in an integer constant expression");
    EXPECT_ERROR("const A = 1, A = 2\n", "error: redefinition of 'A'");
    EXPECT_ERROR("const A = 1 < 2\n", "error: '<' in a constant expression");
    EXPECT_ERROR("input x : f32[4294967296, 4294967296]\ny[i, j] = x[i, j]\noutput y\n",
                 "error: 'x' is too large: f32[4294967296, 4294967296] holds more than 2^62 bytes");
    EXPECT_ERROR("input x : f32[2, 0]\n", "error: dimension 2 of 'x' is 0; a dimension must be at least 1");
}

/* ---- defs: unification, names, errors ----------------------------------- */

static const char *conv3x3 =
    "def conv3x3(x : f32[N, C, H, W], k : f32[F, C, 3, 3]) -> y {\n"
    "  y[n, f, h, w] : [N, F, H, W] += x[n, c, h + r - 1, w + s - 1] * k[f, c, r, s]\n"
    "}\n";

static char *cat(const char *a, const char *b)
{
    return arena_printf(arena, "%s%s", a, b);
}

static void test_defs(void)
{
    const char *blk = cat(conv3x3,
        "def block(x : f32[N, C, H, W], w1 : f32[C, C, 3, 3], w2 : f32[C, C, 3, 3]) -> z {\n"
        "  a = conv3x3(x, w1)\n"
        "  a2[n, c, h, w] = relu(a[n, c, h, w])\n"
        "  b = conv3x3(a2, w2)\n"
        "  z[n, c, h, w] = relu(b[n, c, h, w] + x[n, c, h, w])\n"
        "}\n");
    CProgram *p = run(cat(blk,
        "input x : f32[2, 8, 5, 6]\nweight wa : f32[8, 8, 3, 3], wb : f32[8, 8, 3, 3]\n"
        "z1 = block(x, wa, wb)\nz2 = block(z1, wa, wb)\noutput z2\n"));
    EXPECT_OK(p);
    EXPECT_SHAPE(p, "z1", "[2, 8, 5, 6]");
    EXPECT_SHAPE(p, "z1.a", "[2, 8, 5, 6]");
    EXPECT_SHAPE(p, "z1.a2", "[2, 8, 5, 6]");
    EXPECT_SHAPE(p, "z1.b", "[2, 8, 5, 6]");
    EXPECT_SHAPE(p, "z2.a", "[2, 8, 5, 6]");
    EXPECT_RANGES(p, "z1.a", "n 0..2, f 0..8, h 0..5, w 0..6 | c 0..8, r 0..3, s 0..3");
    CHECK(p && p->ntensors == 11 && p->nstmts == 8, "tensors %d stmts %d",
          p ? p->ntensors : -1, p ? p->nstmts : -1);
    /* uses follow definitions */
    for (int k = 0; p && k < p->nstmts; k++)
        CHECK(p->stmts[k].out >= 0 && p->tensors[p->stmts[k].out].stmt == k,
              "stmt %d", k);

    /* a shape variable bound by one argument, checked against another */
    p = run(cat(conv3x3, "input x : f32[1, 3, 4, 4]\nweight k : f32[5, 3, 3, 3]\n"
                         "y = conv3x3(x, k)\noutput y\n"));
    EXPECT_OK(p);
    EXPECT_SHAPE(p, "y", "[1, 5, 4, 4]");

    /* nested local names: "<first output>.<local>" */
    p = run("def inner(x : f32[N]) -> o {\n  t[i] = x[i] * 2\n  o[i] = t[i] + 1\n}\n"
            "def outer(x : f32[N]) -> p, q {\n  a = inner(x)\n  p[i] = a[i]\n  q[i] = x[i]\n}\n"
            "input x : f32[3]\nz1, z2 = outer(x)\noutput z1, z2\n");
    EXPECT_OK(p);
    EXPECT_SHAPE(p, "z1.a", "[3]");
    EXPECT_SHAPE(p, "z1.a.t", "[3]");
    EXPECT_SHAPE(p, "z2", "[3]");

    /* expression dims: checked, not bound; shape variables in the body */
    p = run("def up(x : f32[N], y : f32[2*N]) -> z {\n  z[i] : [2*N + 1] = x[i / 2] + y[i]\n}\n"
            "input a : f32[4], b : f32[8]\nc = up(a, b)\noutput c\n");
    EXPECT_OK(p);
    EXPECT_SHAPE(p, "c", "[9]");

    EXPECT_ERROR(cat(conv3x3, "input x : f32[1, 3, 4, 4]\nweight k : f32[5, 3, 3]\n"
                              "y = conv3x3(x, k)\noutput y\n"),
                 "error: argument 'k' has rank 3, but parameter 'k' of 'conv3x3' has rank 4");
    CHECK(strstr(diag_buf, "note: parameter 'k' declared here as f32[F, C, 3, 3]"),
          "%s", diag_buf);
    EXPECT_ERROR(cat(conv3x3, "input x : f32[1, 3, 4, 4]\nweight k : f32[5, 4, 3, 3]\n"
                              "y = conv3x3(x, k)\noutput y\n"),
                 "error: argument 'k' does not match parameter 'k' of 'conv3x3': "
                 "dimension 2 is 4, but 'C' is 3 from argument 'x'");
    EXPECT_ERROR(cat(conv3x3, "input x : f32[1, 3, 4, 4]\nweight k : f32[5, 3, 3, 5]\n"
                              "y = conv3x3(x, k)\noutput y\n"),
                 "error: argument 'k' does not match parameter 'k' of 'conv3x3': "
                 "dimension 4 is 5, expected 3");
    EXPECT_ERROR("def up(x : f32[N], y : f32[2*N]) -> z {\n  z[i] = x[i] + y[i]\n}\n"
                 "input a : f32[4], b : f32[7]\nc = up(a, b)\noutput c\n",
                 "error: argument 'b' does not match parameter 'y' of 'up': "
                 "dimension 1 is 7, expected 2 * N = 8");
    EXPECT_ERROR("input a : f32[4]\ny[i] = pow(a[i], e = 2)\noutput y\n",
                 "error: function 'pow' takes no named arguments ('e = ...'); they are for "
                 "defs and shape operations");
    EXPECT_ERROR("input x : f32[8]\ny[] += x[j] where x[j] > 0\noutput y\n",
                 "error: input 'x' of f32 elements read in a guard; a guard can read "
                 "integer tensors only (a condition on values is 'select(cond, a, b)' in "
                 "the body)");
    EXPECT_OK(run("input x : f32[8], m : i32[8]\ny[] += x[j] where m[j] > 0\noutput y\n"));
    /* a dimension that is a const parameter alone is checked as well */
    EXPECT_ERROR("def f(x : f32[K], const K) -> y {\n  y[i] : [K] = x[i]\n}\n"
                 "input a : f32[3]\nc = f(a, 5)\noutput c\n",
                 "error: argument 'a' does not match parameter 'x' of 'f': "
                 "dimension 1 is 3, expected K = 5");
    EXPECT_OK(run("def f(x : f32[K], const K) -> y {\n  y[i] : [K] = x[i]\n}\n"
                 "input a : f32[3]\nc = f(a, 3)\noutput c\n"));
    EXPECT_ERROR(cat(conv3x3, "input x : f32[1, 3, 4, 4]\ny = conv3x3(x)\noutput y\n"),
                 "error: def 'conv3x3' takes 2 arguments, but 1 was given");
    EXPECT_ERROR("input x : f32[4]\na = relu(x)\noutput a\n",
                 "error: 'relu' is a function of elements, not a def; apply it to each "
                 "element, as in 'a[i] = relu(x[i])'");
    EXPECT_ERROR("input x : f32[4]\na = conact(x, x, dim = 0)\noutput a\n",
                 "error: unknown def 'conact'; did you mean 'concat'?");
    EXPECT_ERROR(cat(conv3x3, "input x : f32[1, 3, 4, 4]\ny = conv3x2(x, x)\noutput y\n"),
                 "error: unknown def 'conv3x2'; did you mean 'conv3x3'?");
    EXPECT_ERROR("def f(x : f32[N]) -> y {\n  y = g(x)\n}\n"
                 "def g(x : f32[N]) -> y {\n  y = f(x)\n}\n"
                 "input x : f32[3]\nz = f(x)\noutput z\n",
                 "error: def 'f' is recursive; defs are inlined and cannot call themselves");
    CHECK(count_of("note: 'f' calls 'g' here") == 1 &&
          count_of("note: 'g' calls 'f' here") == 1, "%s", diag_buf);
    /* a mistake in a def body is told once, however many calls */
    p = run("def f(x : f32[N]) -> y {\n  y[i] = x[i] + q[i]\n}\n"
            "input a : f32[3]\nb = f(a)\nc = f(b)\nd = f(c)\noutput d\n");
    CHECK(!p && count_of("error:") == 1 &&
          strstr(first_msg(), "unknown tensor 'q'"), "%s", diag_buf);
    /* a def no call reaches is still checked */
    p = run("def f(x : f32[N]) -> y {\n  y[i] = x[i] + q[i]\n}\n"
            "input a : f32[3]\nb[i] = a[i]\noutput b\n");
    CHECK(!p && strcmp(first_msg(), "error: unknown tensor 'q'") == 0, "%s", diag_buf);
    /* a def does not see the file's constants */
    p = run("const K = 3\ndef f(x : f32[N]) -> y {\n  y[i] : [K] = x[i]\n}\n"
            "input a : f32[3]\nb = f(a)\noutput b\n");
    CHECK(!p && strcmp(first_msg(), "error: unknown constant 'K'") == 0 &&
          strstr(diag_buf, "not the file's constant 'K'"), "%s", diag_buf);
}

/* ---- other errors: the first message, exactly --------------------------- */

static void test_errors(void)
{
    EXPECT_ERROR("input x : f32[4]\ny[i] = x[i] + xx[i]\noutput y\n",
                 "error: unknown tensor 'xx'; did you mean 'x'?");
    EXPECT_ERROR("input x : f32[4]\ny[i] = x[i]\ny[i] = x[i]\noutput y\n",
                 "error: redefinition of 'y'");
    EXPECT_ERROR("input x : f32[4]\nx[i] = 1.0\noutput x\n",
                 "error: cannot assign to input 'x'");
    EXPECT_ERROR("input x : f32[4, 4]\ny[i] = x[i]\noutput y\n",
                 "error: input 'x' has rank 2, but 1 subscript is given");
    EXPECT_ERROR("input x : f32[4]\ny[i] = x[i] * k\noutput y\n",
                 "error: unknown name 'k'; an index that is in no subscript needs a range, e.g. 'where k in 0..3'");
    EXPECT_ERROR("input x : f32[4, 3]\ny[i] = x[i, k]\noutput y\n",
                 "error: index 'k' is not on the left of '='; use '+=' to sum over 'k'");
    EXPECT_ERROR("input x : f32[4]\ny[i] += x[i] * x[i + r]\noutput y\n",
                 "error: cannot infer the range of index 'r'; declare it, e.g. 'where r in 0..3'");
    EXPECT_ERROR("input x : f32[4]\ny[i, j] = x[i]\noutput y\n",
                 "error: cannot infer the range of index 'j'; declare the shape of 'y', e.g. 'y[...] : [...]'");
    EXPECT_ERROR("input x : f32[4], w : f32[5]\ny[] += x[i] * w[i]\noutput y\n",
                 "error: conflicting ranges for index 'i': 0..5 here, but 0..4 from 'x'");
    EXPECT_ERROR("input x : f32[4]\ny[i, j] : [4] = x[i]\noutput y\n",
                 "error: 'y' has 2 subscripts on the left, but its declared shape has 1 dimension");
    EXPECT_ERROR("const N = 4\ninput x : f32[N]\ny[N] = x[N]\noutput y\n",
                 "error: index 'N' reuses the name of constant 'N'");
    EXPECT_ERROR("input x : f32[4]\ny[i, i] = x[i]\noutput y\n",
                 "error: index 'i' appears twice on the left of 'y'");
    EXPECT_ERROR("input x : f32[4]\ny[i] = x[i / 0]\noutput y\n",
                 "error: division by zero");
    EXPECT_ERROR("input x : f32[4]\ny[i] = x[i] / 0\noutput y\n",
                 "error: division by zero");
    EXPECT_ERROR("input x : f32[4]\ny[i] = x[i] / -(2 * (0.5 - 0.5))\noutput y\n",
                 "error: division by zero");
    EXPECT_OK(run("input x : f32[4]\ny[i] = x[i] / (1 / 2)\noutput y\n"));
    EXPECT_ERROR("input x : f32[4]\ny[i] = x[i % j] where j in 1..3\noutput y\n",
                 "error: '%' by a non-constant in an index expression; the divisor must be a constant");
    EXPECT_ERROR("input x : f32[4]\ny[i] = x[i] * (7 % i)\noutput y\n",
                 "error: '%' by a non-constant in a body; the divisor must be a constant");
    EXPECT_ERROR("input x : f32[4]\ny[] += x[i] where i % j == 0, j in 1..3\noutput y\n",
                 "error: '%' by a non-constant in a guard; the divisor must be a constant");
    EXPECT_ERROR("input x : f32[4]\ny[i] = x[i * i]\noutput y\n",
                 "error: index expression 'i * i' is not linear; one factor of '*' must be a constant");
    EXPECT_ERROR("input x : f32[4]\ny[i] = x[i] > 0\noutput y\n",
                 "error: '>' outside a condition; conditions belong in 'where' or in 'select(cond, a, b)'");
    EXPECT_ERROR("input x : f32[4]\ny[i] = rleu(x[i])\noutput y\n",
                 "error: unknown function 'rleu'; did you mean 'relu'?");
    EXPECT_ERROR("input x : f32[4]\ny[i] = max(x[i])\noutput y\n",
                 "error: 'max' takes 2 arguments, but 1 was given");
    EXPECT_ERROR("input x : f32[4]\ny[i] = select(x[i], 1, 0)\noutput y\n",
                 "error: 'x[i]' is not a condition; expected a comparison such as 'i < 3'");
    EXPECT_ERROR("input x : f32[4]\ny[i] = x[x[i]]\noutput y\n",
                 "error: input 'x' of f32 elements read in an index expression; an index can read integer tensors only (convert it first: 'k[i] : i32[N] = i32(x[i])')");
    EXPECT_ERROR("input x : f32[4]\ny[i] = x[i] where i < N\noutput y\n",
                 "error: unknown name 'N'");
    EXPECT_ERROR("input x : f32[4]\nyy[i] = x[i]\noutput y\n",
                 "error: unknown tensor 'y' in output; did you mean 'yy'?");
    EXPECT_ERROR("input x : f32[4]\ny[i] = x[i]\noutput y, y\n",
                 "error: 'y' is listed as an output twice");
    EXPECT_ERROR("input x : f32[4]\noutput x\n",
                 "error: input 'x' cannot be an output; copy it: 'y[...] = x[...]'");
    EXPECT_ERROR("input x : f32[4]\ny[i] = x[i]\n",
                 "error: t.ein: no output; name the program's results with 'output NAME'");
    EXPECT_ERROR("input x : f32[4]\na[i] = b[i] + x[i]\nb[i] = a[i]\noutput b\n",
                 "error: circular definition of 'a'");
    EXPECT_ERROR("input x : f32[4]\na[i] = a[i] + x[i]\noutput a\n",
                 "error: circular definition of 'a'");
    EXPECT_ERROR("model a\nmodel b\ninput x : f32[4]\ny[i] = x[i]\noutput y\n",
                 "error: the model is named twice");
    EXPECT_ERROR("def f(x : f32[N]) -> y {\n  x[i] = 1.0\n  y[i] = x[i]\n}\n"
                 "input a : f32[4]\nb = f(a)\noutput b\n",
                 "error: cannot assign to parameter 'x'");
    EXPECT_ERROR("def f(x : f32[N]) -> y {\n  y[N] = x[N]\n}\n"
                 "input a : f32[4]\nb = f(a)\noutput b\n",
                 "error: index 'N' reuses the name of shape variable 'N'");
    EXPECT_ERROR("input x : f32[4]\ny[i] = x[i] where i in 3..1\noutput y\n",
                 "error: index 'i' has an empty range 3..1");
    EXPECT_ERROR("input x : f32[4]\ny[j] += x[i] where i in 0..j\noutput y\n",
                 "error: the bounds of a range must be constants, but 'j' is an index; use a guard: 'where i < j'");
    EXPECT_ERROR("input x : f32[4]\ny[i] : [4] = x[i + 9223372036854775807]\noutput y\n",
                 "error: index expression overflows 64-bit integers for some values of its indices");
}


/* ---- more inference: agreeing positions, -D, shape variables in bodies -- */

static void test_more(void)
{
    CProgram *p;
    /* several agreeing positions */
    p = run("input a : f32[3, 4], b : f32[4, 3]\n"
            "c[i] += a[i, k] * b[k, i] + a[i, k]\noutput c\n");
    EXPECT_OK(p);
    EXPECT_RANGES(p, "c", "i 0..3 | k 0..4");
    /* a lower bound with disagreeing positions is still a conflict */
    EXPECT_ERROR("input x : f32[4], w : f32[5]\ny[] += x[i] * w[i] where i >= 1\noutput y\n",
                 "error: conflicting ranges for index 'i': 0..5 here, but 0..4 from 'x'");
    /* -D changes inferred shapes downstream */
    const char *src = "const N = 2\ninput x : f32[N, 3]\n"
                      "t[j, i] = x[i, j]\ns[j] += t[j, i]\noutput s\n";
    const char *defs[] = {"N=7"};
    p = run_defs(src, defs, 1);
    EXPECT_OK(p);
    EXPECT_SHAPE(p, "t", "[3, 7]");
    EXPECT_RANGES(p, "s", "j 0..3 | i 0..7");
    /* shape variables in index expressions and where bounds (gcn's K/2) */
    p = run("def convk(x : f32[H], k : f32[K]) -> y {\n"
            "  y[h] : [H] += x[h + r - K/2] * k[r]\n"
            "  }\n"
            "def win(x : f32[H]) -> y {\n  y[h] : [H] max= x[h + i] ?: 0 where i in 0..H / 2\n}\n"
            "input x : f32[10]\nweight k5 : f32[5], k3 : f32[3]\n"
            "a = convk(x, k5)\nb = convk(a, k3)\nc = win(b)\noutput c\n");
    EXPECT_OK(p);
    EXPECT_RANGES(p, "a", "h 0..10 | r 0..5");
    EXPECT_RANGES(p, "b", "h 0..10 | r 0..3");
    EXPECT_RANGES(p, "c", "h 0..10 | i 0..5");
    /* the inlined body uses the call's shape variables: -2 and -1 */
    CHECK(p && strstr(sema_dump_str(p), "x[h + r - 2] * k5[r]") &&
          strstr(sema_dump_str(p), "a[h + r - 1] * k3[r]"), "%s", sema_dump_str(p));
    /* one def, two shapes */
    p = run("def sq(x : f32[M, N]) -> y {\n  y[i, j] = x[i, j] * x[i, j]\n}\n"
            "input a : f32[2, 3], b : f32[5, 7]\nc = sq(a)\nd = sq(b)\noutput c, d\n");
    EXPECT_OK(p);
    EXPECT_SHAPE(p, "c", "[2, 3]");
    EXPECT_SHAPE(p, "d", "[5, 7]");
    /* a def output that is another call's output */
    p = run("def id(x : f32[N]) -> y {\n  y[i] = x[i]\n}\n"
            "def twice(x : f32[N]) -> y {\n  t = id(x)\n  y = id(t)\n}\n"
            "input a : f32[6]\nb = twice(a)\noutput b\n");
    EXPECT_OK(p);
    EXPECT_SHAPE(p, "b", "[6]");
    EXPECT_SHAPE(p, "b.t", "[6]");
    CHECK(p && p->ntensors == 3, "ntensors %d", p ? p->ntensors : -1);
    /* statements in a def body in any order */
    p = run("def f(x : f32[N]) -> y {\n  y[i] = t[i] * 2\n  t[i] = x[i] + 1\n}\n"
            "input a : f32[6]\nb = f(a)\noutput b\n");
    EXPECT_OK(p);
    CHECK(p && p->stmts[0].out == tensor(p, "b.t")->id, "b.t first");
    /* a failed call poisons its outputs quietly */
    p = run("def f(x : f32[N, N]) -> y {\n  y[i] = x[i, i]\n}\n"
            "input a : f32[2, 3]\nb = f(a)\nc[i] = b[i] * 2\nd[i, j] = c[i] + c[j]\noutput d\n");
    CHECK(!p && count_of("error:") == 1 && strstr(first_msg(), "dimension 2 is 3, but 'N' is 2"),
          "%s", diag_buf);
    /* a def's mistakes are told once, at the def: signature and body */
    p = run("def f(x : f32[2 * N]) -> y {\n  y[i] = x[i]\n}\n"
            "input a : f32[4]\nb = f(a)\nc = f(b)\noutput c\n");
    CHECK(!p && count_of("error:") == 1, "%s", diag_buf);
    /* a def only is no program */
    p = run(conv3x3);
    CHECK(!p && count_of("error:") == 1 && strstr(diag_buf, "no output"), "%s", diag_buf);
    /* guards over indices and constants; select over values and indices */
    p = run("const N = 6\ninput x : f32[N, N]\n"
            "a[i, j] : [N, N] = select(i == j, 1, 0)\n"
            "b[i, j] = select(x[i, j] > 0 && i < j, x[i, j], -x[i, j])\n"
            "c[i] += x[i, j] where j != i, (i + j) % 2 == 0 || i > N / 2\n"
            "output a, b, c\n");
    EXPECT_OK(p);
    CHECK(p && p->stmts[2].nguards == 2, "guards");
    EXPECT_RANGES(p, "c", "i 0..6 | j 0..6");
    /* model name */
    p = run("model net\ninput x : f32[1]\ny[i] = x[i]\noutput y\n");
    CHECK(p && strcmp(p->model, "net") == 0, "model");
    p = run("input x : f32[1]\ny[i] = x[i]\noutput y\n");
    CHECK(p && strcmp(p->model, "t") == 0, "default model");
}

/* ---- imports ------------------------------------------------------------- */

static void test_import(void)
{
    char dir[] = "/tmp/test_sema.XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK(0, "mkdtemp");
        return;
    }
    char *lib = arena_printf(arena, "%s/lib.ein", dir);
    char *lib2 = arena_printf(arena, "%s/lib2.ein", dir);
    char *main_ = arena_printf(arena, "%s/main.ein", dir);
    FILE *fp = fopen(lib2, "w");
    fputs("const K = 3\ndef inc(x : f32[N]) -> y {\n  y[i] = x[i] + 1\n}\n", fp);
    fclose(fp);
    fp = fopen(lib, "w");
    fputs("import \"lib2.ein\"\nconst N = K * 2\ninput ignored : f32[5]\n"
          "def twice(x : f32[N]) -> y {\n  a = inc(x)\n  y = inc(a)\n}\n", fp);
    fclose(fp);
    fp = fopen(main_, "w");
    fputs("import \"lib.ein\"\nimport \"lib2.ein\"\ninput x : f32[N]\n"
          "z = twice(x)\noutput z\n", fp);
    fclose(fp);
    src_reset();
    diag_reset();
    ParseOptions po = {0};
    Ast *ast = parse_file(main_, &po, arena);
    SemaOptions so = {NULL, 0, "main"};
    CProgram *p = ast ? sema_check(ast, &so, arena) : NULL;
    CHECK(p != NULL, "import");
    EXPECT_SHAPE(p, "x", "[6]");
    EXPECT_SHAPE(p, "z.a", "[6]");
    CHECK(!tensor(p, "ignored"), "an import brings defs and consts only");
    remove(lib);
    remove(lib2);
    remove(main_);
    remove(dir);
}


/* ---- the dump, exactly ------------------------------------------------- */

static void test_dump(void)
{
    CProgram *p = run("const N = 2\ninput x : f32[N, 4]\nweight b : f32[4]\n"
                      "m[i] max= x[i, j]\n"
                      "y[i, j] : [N, 4] = select(x[i, j] > m[i], (i % 2) * 0.5, -x[i, j] / N) + b[j]\n"
                      "t[k] : [8] += x[k / 4, k % 4 + r] where r < 2, k != 3\n"
                      "output y, t\n");
    EXPECT_OK(p);
    const char *want =
        "model t\n"
        "tensor 0 x : f32[2, 4] input\n"
        "tensor 1 b : f32[4] weight\n"
        "tensor 2 m : f32[2] defined by stmt 0\n"
        "tensor 3 y : f32[2, 4] defined by stmt 1 output\n"
        "tensor 4 t : f32[8] defined by stmt 2 output\n"
        "stmt 0 m[i 0..2] max= over j 0..4\n"
        "    x[i, j]\n"
        "stmt 1 y[i 0..2, j 0..4] =\n"
        "    select(x[i, j] > m[i], i % 2 * 0.5, -x[i, j] / 2) + b[j]\n"
        "stmt 2 t[k 0..8] += over r 0..2\n"
        "    x[k // 4, k % 4 + r]\n"
        "    where k != 3\n"
        "outputs y t\n";
    const char *got = p ? sema_dump_str(p) : "";
    CHECK(strcmp(got, want) == 0, "dump:\n%s", got);
}

/* ---- warnings ----------------------------------------------------------- */

static void test_warnings(void)
{
    CProgram *p = run("input x : f32[4, 3], w : f32[3], b : f32[4], u : f32[2]\n"
                      "t[i] = x[i, 0]\n"
                      "y[i] += x[i, k] * w[k] + b[i] - 1\noutput y\n");
    CHECK(p != NULL, "warnings only: %s", diag_buf);
    CHECK(count_of("warning: term does not depend on summed index 'k'; it is added 3 times [-Wsum-invariant]") == 2,
          "%s", diag_buf);
    CHECK(count_of("warning: input 'u' is never used [-Wunused]") == 1, "%s", diag_buf);
    CHECK(count_of("warning: tensor 't' is never used [-Wunused]") == 1, "%s", diag_buf);
    /* no warning for a sum of one element, nor for max= */
    p = run("input x : f32[4, 3], b : f32[4]\n"
            "y[i] += x[i, k] + b[i] where k < 1\n"
            "z[i] max= x[i, k] + b[i]\noutput y, z\n");
    EXPECT_OK(p);
}

int main(int argc, char **argv)
{
    arena = arena_new();
    if (argc > 1) {
        ParseOptions po = {0};
        Ast *ast = parse_file(argv[1], &po, arena);
        SemaOptions so = {(const char *const *)argv + 2, argc - 2, NULL};
        CProgram *p = ast ? sema_check(ast, &so, arena) : NULL;
        if (p)
            sema_dump(p, stdout);
        return p ? 0 : 1;
    }
    test_ranges();
    test_consts();
    test_defs();
    test_errors();
    test_warnings();
    test_more();
    test_import();
    test_dump();
    return check_finish("test_sema");
}
