/* test_parser.c - unit tests of the parser: small buffers through
 * parse_buffer, the AST compared with ast_dump's text, syntax errors
 * compared by their first message and their count, locations, and
 * imports in a scratch folder.  With file arguments it only parses them. */
#include "config.h"
#include "lang/lang.h"
#include "parser/parser.h"
#include "tests/check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Parse `src` (of `len` bytes); the dump goes to *dump, the messages to
 * *diags; returns the number of errors. */
static int run(const char *src, size_t len, char **dump, char **diags,
               Ast **out, Arena *arena)
{
    size_t dn, mn;
    FILE *mfp = open_memstream(diags, &mn);
    diag_set_stream(mfp);
    diag_reset();
    src_reset();
    Ast *ast = parse_buffer("t.ein", src, len, NULL, arena);
    fclose(mfp);
    diag_set_stream(NULL);
    FILE *dfp = open_memstream(dump, &dn);
    ast_dump(ast, dfp);
    fclose(dfp);
    if (out)
        *out = ast;
    if ((ast != NULL) != (diag_error_count() == 0)) {
        printf("FAIL: parse_buffer returned %s with %d errors\n",
               ast ? "an AST" : "NULL", diag_error_count());
        failures++;
    }
    return diag_error_count();
}

/* `src` parses without a message and dumps as `want`. */
static void ok(const char *src, const char *want)
{
    Arena *a = arena_new();
    char *dump, *diags;
    int n = run(src, strlen(src), &dump, &diags, NULL, a);
    checks++;
    if (n != 0 || diags[0] || strcmp(dump, want) != 0) {
        failures++;
        printf("FAIL: %s\n--- want\n%s--- got (%d errors)\n%s%s\n", src, want,
               n, dump, diags);
    }
    free(dump);
    free(diags);
    arena_free(a);
}

/* `src` gives `nerr` errors, the first one's line being `first`. */
static void bad_n(const char *src, size_t len, int nerr, const char *first)
{
    Arena *a = arena_new();
    char *dump, *diags;
    int n = run(src, len, &dump, &diags, NULL, a);
    checks++;
    size_t fl = strcspn(diags, "\n");
    if (n != nerr || strlen(first) != fl || strncmp(diags, first, fl) != 0) {
        failures++;
        printf("FAIL: %.*s\n--- want %d errors, first:\n%s\n--- got %d:\n%s\n",
               (int)len, src, nerr, first, n, diags);
    }
    free(dump);
    free(diags);
    arena_free(a);
}

static void bad(const char *src, int nerr, const char *first)
{
    bad_n(src, strlen(src), nerr, first);
}

static void loc_is(const char *what, Loc loc, const char *src, const char *text)
{
    checks++;
    size_t n = (size_t)(loc.end - loc.begin);
    if (loc.begin < 0 || strlen(text) != n ||
        strncmp(src + loc.begin, text, n) != 0) {
        failures++;
        printf("FAIL: location of %s: want '%s', got [%d, %d) '%.*s'\n", what,
               text, loc.begin, loc.end, (int)n,
               loc.begin >= 0 ? src + loc.begin : "");
    }
}

static void test_statements(void)
{
    ok("const N = 1, C = 64\n",
       "(const N 1)\n(const C 64)\n");
    ok("const M = -(N + 2) * 3 / 4 % 5\n",
       "(const M (% (/ (* (neg (+ N 2)) 3) 4) 5))\n");
    ok("input x : f32[N, C], y : f16[]\nweight w : bf16[3]\n",
       "(input x f32 (N C))\n(input y f16 ())\n(weight w bf16 (3))\n");
    ok("output z, y\nmodel net\n",
       "(output z)\n(output y)\n(model net)\n");
    ok("y[n, f] : [N, F] += x[n, c] * w[f, c]\n",
       "(assign y (n f) (shape (N F)) += (* (at x n c) (at w f c)))\n");
    ok("h[i] : f16[N] = x[i]\nm[i] max= x[i, j]\nn[i] min= x[i, j]\n",
       "(assign h (i) (shape f16 (N)) = (at x i))\n"
       "(assign m (i) max= (at x i j))\n(assign n (i) min= (at x i j))\n");
    ok("t[] = s[] / (H * W)\n",
       "(assign t () = (/ (at s) (* H W)))\n");
    ok("a, b = f(x, w)\nc = g()\n",
       "(bind (a b) f (x w))\n(bind (c) g ())\n");
    ok("def conv(x : f32[N, C], k : f32[F, C, 3]) -> y, z {\n"
       "  y[n, f] += x[n, c] * k[f, c, r] where r < 3\n"
       "  z = h(y)\n"
       "}\n",
       "(def conv ((x f32 (N C)) (k f32 (F C 3))) -> (y z)\n"
       "  (assign y (n f) += (* (at x n c) (at k f c r)) (where (< r 3)))\n"
       "  (bind (z) h (y))\n"
       ")\n");
    ok("def f() -> y { y[] = 1 }\n", "(def f () -> (y)\n  (assign y () = 1)\n)\n");
    ok("def f() -> y {}\n", "(def f () -> (y))\n");
    /* The '{' may start the line after the header. */
    ok("def f() -> y\n{\n  y[] = 1\n}\n", "(def f () -> (y)\n  (assign y () = 1)\n)\n");
}

static void test_expressions(void)
{
    ok("y[] = a + b * c - d / e % f\n",
       "(assign y () = (- (+ a (* b c)) (% (/ d e) f)))\n");
    ok("y[] = a - b - c\n", "(assign y () = (- (- a b) c))\n");
    ok("y[] = -a * b + -(c)\n", "(assign y () = (+ (* (neg a) b) (neg c)))\n");
    ok("y[] = select(!a && b || c != d, 1, 2)\n",
       "(assign y () = (call select (|| (&& (not a) b) (!= c d)) 1 2))\n");
    ok("y[] = a < b && c <= d && e > f && g >= h && i == j\n",
       "(assign y () = (&& (&& (&& (&& (< a b) (<= c d)) (> e f)) (>= g h)) (== i j)))\n");
    ok("y[] = 1.5 + .5 + 1e-5 + 2E3 + 0.25e+1 + 7\n",
       "(assign y () = (+ (+ (+ (+ (+ 1.5 0.5) 1e-05) 2000.0) 2.5) 7))\n");
    ok("y[] = 9223372036854775807\n", "(assign y () = 9223372036854775807)\n");
    /* inf and nan are numbers; `?:` gives a read's outside value; a
     * subscript may read a tensor (a gather) */
    ok("y[i] = x[i - 1] ?: -inf + nan\n",
       "(assign y (i) = (+ (at x (- i 1) ?: (neg inf)) nan))\n");
    ok("y[i, d] = e[t[i], d] ?: 0\n", "(assign y (i d) = (at e (at t i) d ?: 0))\n");
    ok("y = concat(a, b, dim = 1)\n", "(bind (y) concat (a b dim=1))\n");
    ok("def f(x : f32[N], const K = 3, eps : f32 = 1e-5) -> y { y[i] = x[i] }\n",
       "(def f ((x f32 (N)) (const K = 3) (eps f32 = 1e-05)) -> (y)\n"
       "  (assign y (i) = (at x i))\n)\n");
    ok("input t : i32[4], m : bool[4], u : u8[2], v : i64[1], w : i8[1], z : i16[1]\n",
       "(input t i32 (4))\n(input m bool (4))\n(input u u8 (2))\n(input v i64 (1))\n"
       "(input w i8 (1))\n(input z i16 (1))\n");
    ok("y[] = max(a, b) + min(c, d) + pow(e, 2)\n",
       "(assign y () = (+ (+ (call max a b) (call min c d)) (call pow e 2)))\n");
    ok("y[i] = x[i / 4, i % 4, (h + 1 - r) / 2]\n",
       "(assign y (i) = (at x (/ i 4) (% i 4) (/ (- (+ h 1) r) 2)))\n");
    ok("y[i] = x[i] where i in 0..N + 1, k in -1..2, (i + k) % 2 == 0\n",
       "(assign y (i) = (at x i) (where (in i 0 (+ N 1)) (in k (neg 1) 2) "
       "(== (% (+ i k) 2) 0)))\n");
    ok("y[i] = x[i] where !(i < 2) || i >= 5\n",
       "(assign y (i) = (at x i) (where (|| (not (< i 2)) (>= i 5))))\n");
    /* Comparisons do not chain. */
    bad("y[] = a < b < c\n", 1,
        "t.ein:1:13: error: comparisons do not chain; write 'a <= i && i < b' "
        "(or 'a <= i, i < b' in a where clause)");
}

static void test_newlines(void)
{
    /* Continued after an operator, ',', '=', ':' and '->', and in brackets. */
    ok("y[i] =\n  x[i] +\n  1\n", "(assign y (i) = (+ (at x i) 1))\n");
    ok("y[i,\n  j] = f(\n  x[i,\n  j])\n", "(assign y (i j) = (call f (at x i j)))\n");
    ok("input x :\n f32[N]\n", "(input x f32 (N))\n");
    ok("const A = 1,\n  B = 2\n", "(const A 1)\n(const B 2)\n");
    ok("def f(x : f32[N]) ->\n  y {\n  y[i] = x[i]\n}\n",
       "(def f ((x f32 (N))) -> (y)\n  (assign y (i) = (at x i))\n)\n");
    ok("a, b =\n f(x,\n y)\n", "(bind (a b) f (x y))\n");
    ok("y[i] max=\n x[i]\n", "(assign y (i) max= (at x i))\n");
    /* A line starting with 'where', even after blank and comment lines. */
    ok("y[i] = x[i, j]\n\n  # the range\n  where j < 3,\n        j >= 1\n",
       "(assign y (i) = (at x i j) (where (< j 3) (>= j 1)))\n");
    ok("y[i] = x[i, j] where\n j < 3\n",
       "(assign y (i) = (at x i j) (where (< j 3)))\n");
    /* ';' separates, blank lines and comments are nothing, CRLF is fine. */
    ok("a[] = 1; b[] = 2;\n;;\n\n# c\n  # d\nc[] = 3 # e\n",
       "(assign a () = 1)\n(assign b () = 2)\n(assign c () = 3)\n");
    ok("a[] = 1\r\nb[] = 2\r\n", "(assign a () = 1)\n(assign b () = 2)\n");
    ok("output y", "(output y)\n");
    ok("", "");
    ok("\n\n# only a comment", "");
    /* A newline elsewhere ends the statement. */
    bad("y[i] = x[i]\n+ 1\n", 1, "t.ein:2:1: error: expected statement before '+' "
        "(to continue the previous line, end it with the operator)");
    bad("const\nN = 1\n", 2, "t.ein:1:6: error: expected identifier before end of line");
}

static void test_lexer(void)
{
    /* Keywords are whole words. */
    ok("constant[i] = inputs[i] + defs + where_ + in2 + model_x\n",
       "(assign constant (i) = (+ (+ (+ (+ (at inputs i) defs) where_) in2) model_x))\n");
    ok("y[i] = x[i] where i in 0..3\n",
       "(assign y (i) = (at x i) (where (in i 0 3)))\n");
    bad("y[] = 9223372036854775808\n", 1,
        "t.ein:1:7: error: integer literal is too large (the largest is "
        "9223372036854775807)");
    bad("y[] = 1e400\n", 1, "t.ein:1:7: error: number is too large");
    bad("y[] = a @ b\n", 1, "t.ein:1:9: error: invalid character '@'");
    bad("y[] = a & b\n", 1,
        "t.ein:1:9: error: invalid character '&' (did you mean '&&'?)");
    bad("y[] = 1.\n", 1,
        "t.ein:1:8: error: stray '.' (a real number needs digits after its "
        "point, as in 1.0)");
    bad("y[] = \x01\n", 1, "t.ein:1:7: error: invalid character '\\x01'");
    bad("y[] = caf\xc3\xa9\n", 1,
        "t.ein:1:10: error: non-ASCII character outside a comment or string");
    bad_n("y[] = a\0b\n", 10, 1, "t.ein:1:8: error: null byte in input");
    bad_n("# x\0y\n", 6, 1, "t.ein:1:4: error: null byte in input");
    bad_n("import \"a\0b\"\n", 13, 1, "t.ein:1:10: error: null byte in a string");
    bad("import \"abc\n", 1,
        "t.ein:1:8: error: missing terminating '\"' character");
    bad("import \"a\\n\"\n", 1,
        "t.ein:1:10: error: unknown escape sequence '\\n' (a string knows "
        "only \\\" and \\\\)");
    /* One lexical error per statement, no cascade. */
    bad("y[] = a @ @ b\nz[] = $\n", 2, "t.ein:1:9: error: invalid character '@'");
}

static void test_errors(void)
{
    bad("y[i] = relu(x[i]\nz[i] = 1\n", 1,
        "t.ein:2:1: error: expected ',' or ')' (to close '(' at line 1) before 'z'");
    bad("y[i = 3\n", 1,
        "t.ein:1:5: error: expected ',' or ']' (to close '[' at line 1) before '='");
    bad("y[i] = f(x]\n", 1,
        "t.ein:1:11: error: expected ',' or ')' (to close '(' at line 1) before ']'");
    bad("y[i] == 3\n", 1,
        "t.ein:1:6: error: expected '=', '+=', '*=', 'max=', 'min=' or ':' before '=='");
    bad("y[i] = x[i] +\n", 1,
        "t.ein:2:1: error: expected expression before end of file");
    bad("y[i] = x[i] +", 1,
        "t.ein:1:14: error: expected expression before end of file");
    bad(") = 3\n", 1, "t.ein:1:1: error: expected statement before ')'");
    bad("input x : [3]\n", 1,
        "t.ein:1:11: error: expected identifier before '['");
    bad("input x : f64[3]\n", 1,
        "t.ein:1:11: error: unknown element type 'f64' (expected f32, f16, bf16, i8, i16, i32, i64, u8 or bool)");
    bad("y[i] : q[N] = 1\n", 1,
        "t.ein:1:8: error: unknown element type 'q' (expected f32, f16, bf16, i8, i16, i32, i64, u8 or bool)");
    bad("a = x + 1\n", 1,
        "t.ein:1:5: error: expected a def call after 'a ='; a tensor statement "
        "needs subscripts, as in 'a[i] = ...'");
    /* call arguments are expressions (sema checks them against the
     * callee's parameters), `key = value` ones too */
    ok("a = f(x[i], 2)\n", "(bind (a) f ((at x i) 2))\n");
    ok("a = f(x, eps = 1e-5, k = -inf)\n", "(bind (a) f (x eps=1e-05 k=(neg inf)))\n");
    bad("a = f(x, = 2)\n", 1, "t.ein:1:10: error: expected expression before '='");
    bad("y[i + 1] = 2\n", 1,
        "t.ein:1:3: error: left-hand subscripts of 'y' must be plain index names");
    bad("y[i, j, i] = 2\n", 1,
        "t.ein:1:9: error: index 'i' appears twice on the left of 'y'");
    bad("def f(x : f32[N]) -> y {\n  const K = 3\n  output y\n}\n", 2,
        "t.ein:2:3: error: 'const' is not allowed in a def body (it holds "
        "tensor statements and def calls only)");
    bad("def f(x : f32[N]) -> y {\n  y[i] = x[i]\n", 1,
        "t.ein:3:1: error: expected statement or '}' (to close '{' at line 1) "
        "before end of file");
    /* A top-level keyword at the start of a line ends an unclosed body. */
    bad("def f(x : f32[N]) -> y {\n  y[i] = x[i]\ninput x : f32[4]\nz = f(x)\n", 1,
        "t.ein:3:1: error: expected '}' (to close '{' at line 1) before 'input'");
    bad("def f(x : f32[N]) -> y {\n  y[i] = x[i]\n\ndef g() -> z {\nz[] = 1\n}\n", 1,
        "t.ein:4:1: error: expected '}' (to close '{' at line 1) before 'def'");
    bad("}\n", 1, "t.ein:1:1: error: expected statement before '}'");
    bad("def f(x) {\n  y[i] = x[i]\n}\n", 1,
        "t.ein:1:8: error: expected ':' before ')'");
    bad("import blocks\n", 1, "t.ein:1:8: error: expected string or library path before 'blocks'");
    /* Every broken statement is reported, and the good ones are parsed. */
    bad("a[] = = 1\nb[] = 2\nc[] = )\nd[ = 1\ne[] = 3\n", 3,
        "t.ein:1:7: error: expected expression before '='");
    /* (the newline after '=' does not end the statement) */
    bad("def f(x : f32[N]) -> y {\n  y[i] = \n  z[i] = (\n}\nw[] = +\n", 2,
        "t.ein:3:8: error: expected 'where', operator or end of line before '='");
    /* An error in a def header does not take its body for top-level code
     * that ends with a stray '}'. */
    bad("def f(x : f32[N] -> y {\n  y[i] = x[i]\n}\nz[i] = 1 + * 2\n", 2,
        "t.ein:1:18: error: expected ',' or ')' (to close '(' at line 1) before '->'");
    /* A missing ')' inside a def body still finds the body's end. */
    bad("def f(x : f32[N]) -> y {\n  y[i] = f(x[i]\n}\nz[] = 1\nw[] = *\n", 2,
        "t.ein:3:1: error: expected ',' or ')' (to close '(' at line 2) before '}'");
}

static void test_limits(void)
{
    /* 20,000 nested parentheses: one clean error. */
    size_t n = 20000;
    char *s = malloc(2 * n + 32), *p = s;
    p += sprintf(p, "y[] = ");
    for (size_t i = 0; i < n; i++)
        *p++ = '(';
    p += sprintf(p, "x[]");
    for (size_t i = 0; i < n; i++)
        *p++ = ')';
    *p++ = '\n';
    bad_n(s, (size_t)(p - s), 1,
          "t.ein:1:263: error: brackets nested too deeply (more than 256 levels)");
    /* 200 nested calls are fine. */
    p = s + sprintf(s, "y[] = ");
    for (int i = 0; i < 200; i++)
        p += sprintf(p, "f(");
    *p++ = 'x';
    for (int i = 0; i < 200; i++)
        *p++ = ')';
    *p = 0;
    Arena *a = arena_new();
    char *dump, *diags;
    checks++;
    if (run(s, strlen(s), &dump, &diags, NULL, a) != 0) {
        failures++;
        printf("FAIL: 200 nested calls:\n%s\n", diags);
    }
    free(dump);
    free(diags);
    arena_free(a);
    /* Long chains of unary or binary operators. */
    p = s + sprintf(s, "y[] = ");
    for (int i = 0; i < 20000; i++)
        *p++ = '-';
    p += sprintf(p, "x\n");
    bad(s, 1, "t.ein:1:9998: error: expression nested too deeply");
    p = s + sprintf(s, "y[] = x");
    for (int i = 0; i < 1500; i++)
        p += sprintf(p, "+x");
    bad(s, 1, "t.ein:1:7: error: expression nested too deeply (more than 1000 levels)");
    free(s);
}

static void test_locations(void)
{
    const char *src = "const N = 4\n"
                      "y[i, j] : [N, 2] += x[i, k] * 2.5 where k in 0..N\n"
                      "a, b = f(x, w)\n";
    Arena *a = arena_new();
    char *dump, *diags;
    Ast *ast;
    run(src, strlen(src), &dump, &diags, &ast, a);
    checks++;
    if (!ast || ast->nstmts != 3) {
        failures++;
        printf("FAIL: locations: %s\n", diags);
    } else {
        Stmt *c = ast->stmts[0], *y = ast->stmts[1], *b = ast->stmts[2];
        loc_is("const", c->loc, src, "N = 4");
        loc_is("const name", c->cnst.name_loc, src, "N");
        loc_is("assign", y->loc, src,
               "y[i, j] : [N, 2] += x[i, k] * 2.5 where k in 0..N");
        loc_is("assign name", y->assign.name_loc, src, "y");
        loc_is("index j", y->assign.idx_locs[1], src, "j");
        loc_is("shape", y->assign.shape_loc, src, ": [N, 2]");
        loc_is("op", y->assign.op_loc, src, "+=");
        loc_is("body", y->assign.body->loc, src, "x[i, k] * 2.5");
        loc_is("operator", y->assign.body->bin.op_loc, src, "*");
        loc_is("access name", y->assign.body->bin.lhs->call.name_loc, src, "x");
        loc_is("where", y->assign.where[0]->loc, src, "k in 0..N");
        loc_is("in var", y->assign.where[0]->in.var_loc, src, "k");
        loc_is("bind", b->loc, src, "a, b = f(x, w)");
        loc_is("bind out", b->bind.out_locs[1], src, "b");
        loc_is("callee", b->bind.callee_loc, src, "f");
        loc_is("arg", b->bind.arg_locs[1], src, "w");
    }
    free(dump);
    free(diags);
    arena_free(a);
}

/* ---- imports, in a scratch folder ---- */

static char tmpdir[64];

static void put_file(const char *name, const char *text)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *fp = fopen(path, "w");
    if (!fp) {
        perror(path);
        exit(99);
    }
    fputs(text, fp);
    fclose(fp);
}

/* Every occurrence of the scratch folder's name in `s` becomes "$D". */
static char *hide_tmp(const char *s)
{
    size_t n = strlen(tmpdir);
    char *out = malloc(strlen(s) + 1), *o = out;
    while (*s) {
        if (strncmp(s, tmpdir, n) == 0) {
            o += sprintf(o, "$D");
            s += n;
        } else {
            *o++ = *s++;
        }
    }
    *o = 0;
    return out;
}

/* Parse the scratch file `main` with -I folders `inc`; compare the dump
 * and the messages. */
static void import_case(const char *main, const char *inc, const char *want_dump,
                        const char *want_diags)
{
    char path[256], incdir[256];
    snprintf(path, sizeof path, "%s/%s", tmpdir, main);
    snprintf(incdir, sizeof incdir, "%s/%s", tmpdir, inc ? inc : "");
    const char *dirs[] = {incdir};
    ParseOptions opt = {dirs, inc ? 1 : 0, NULL};
    char *dump, *diags;
    size_t dn, mn;
    FILE *mfp = open_memstream(&diags, &mn);
    diag_set_stream(mfp);
    diag_reset();
    src_reset();
    Arena *a = arena_new();
    Ast *ast = parse_file(path, &opt, a);
    fclose(mfp);
    diag_set_stream(NULL);
    FILE *dfp = open_memstream(&dump, &dn);
    ast_dump(ast, dfp);
    fclose(dfp);
    char *d1 = hide_tmp(dump), *d2 = hide_tmp(diags);
    checks++;
    if (strcmp(d1, want_dump) != 0 || strcmp(d2, want_diags) != 0) {
        failures++;
        printf("FAIL: import %s\n--- want\n%s%s--- got\n%s%s", main, want_dump,
               want_diags, d1, d2);
    }
    free(d1);
    free(d2);
    free(dump);
    free(diags);
    arena_free(a);
}

static void test_imports(void)
{
    strcpy(tmpdir, "/tmp/einc-test-parser-XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        exit(99);
    }
    char sub[128], inc[128];
    snprintf(sub, sizeof sub, "%s/sub", tmpdir);
    snprintf(inc, sizeof inc, "%s/inc", tmpdir);
    mkdir(sub, 0700);
    mkdir(inc, 0700);
    /* main imports sub/b (which imports c next to it) and c (found in the
     * -I folder); sub/b imports c twice: the second import is empty. */
    put_file("main.ein", "import \"sub/b.ein\"\nimport \"c.ein\"\nconst A = 1\n");
    put_file("sub/b.ein", "import \"c.ein\"\nimport \"./c.ein\"\nconst B = 2\n");
    put_file("sub/c.ein", "const C1 = 3\n");
    put_file("inc/c.ein", "def g(x : f32[N]) -> y { y[i] = x[i] }\n");
    import_case("main.ein", "inc",
                "(import \"sub/b.ein\" \"$D/sub/b.ein\"\n"
                "  (import \"c.ein\" \"$D/sub/c.ein\"\n"
                "    (const C1 3)\n"
                "  )\n"
                "  (import \"./c.ein\" \"$D/sub/c.ein\" again)\n"
                "  (const B 2)\n"
                ")\n"
                "(import \"c.ein\" \"$D/inc/c.ein\"\n"
                "  (def g ((x f32 (N))) -> (y)\n"
                "    (assign y (i) = (at x i))\n"
                "  )\n"
                ")\n"
                "(const A 1)\n",
                "");
    /* import <c.ein> skips the importing file's folder: sub/c.ein is
     * not found from sub/lb.ein, inc/c.ein is (a -I folder) */
    put_file("sub/lb.ein", "import <c.ein>\n");
    import_case("sub/lb.ein", "inc",
                "(import <c.ein> \"$D/inc/c.ein\"\n"
                "  (def g ((x f32 (N))) -> (y)\n"
                "    (assign y (i) = (at x i))\n"
                "  )\n"
                ")\n", "");
    import_case("sub/lb.ein", NULL, "",
                "$D/sub/lb.ein:1:1: error: cannot find 'c.ein' in the -I folders or the "
                "standard library (none)\n"
                "    1 | import <c.ein>\n"
                "      | ^~~~~~~~~~~~~~\n");
    /* Without -I, c.ein is not found. */
    import_case("main.ein", NULL, "",
                "$D/main.ein:2:1: error: cannot open 'c.ein': no such file or directory\n"
                "    2 | import \"c.ein\"\n"
                "      | ^~~~~~~~~~~~~~\n");
    /* A cycle of three files, and a file that imports itself. */
    put_file("x.ein", "const X = 1\nimport \"sub/y.ein\"\n");
    put_file("sub/y.ein", "import \"z.ein\"\n");
    put_file("sub/z.ein", "import \"../x.ein\"\n");
    import_case("x.ein", NULL, "",
                "$D/sub/z.ein:1:1: error: circular import of '$D/x.ein'\n"
                "    1 | import \"../x.ein\"\n"
                "      | ^~~~~~~~~~~~~~~~~\n"
                "$D/x.ein:2:1: note: '$D/x.ein' imports '$D/sub/y.ein' here\n"
                "    2 | import \"sub/y.ein\"\n"
                "      | ^~~~~~~~~~~~~~~~~~\n"
                "$D/sub/y.ein:1:1: note: '$D/sub/y.ein' imports '$D/sub/z.ein' here\n"
                "    1 | import \"z.ein\"\n"
                "      | ^~~~~~~~~~~~~~\n");
    put_file("self.ein", "import \"self.ein\"\n");
    import_case("self.ein", NULL, "",
                "$D/self.ein:1:1: error: '$D/self.ein' imports itself\n"
                "    1 | import \"self.ein\"\n"
                "      | ^~~~~~~~~~~~~~~~~\n");
    /* Errors in an imported file are reported with its name. */
    put_file("e.ein", "import \"sub/bad.ein\"\n");
    put_file("sub/bad.ein", "y[i] = \n");
    import_case("e.ein", NULL, "",
                "$D/sub/bad.ein:2:1: error: expected expression before end of file\n"
                "    2 | \n"
                "      | ^\n");
    /* Folders and devices are not imported. */
    put_file("d.ein", "import \"sub\"\nimport \"/dev/null\"\nimport \"\"\n");
    import_case("d.ein", NULL, "",
                "$D/d.ein:1:1: error: cannot read '$D/sub': it is a directory\n"
                "    1 | import \"sub\"\n"
                "      | ^~~~~~~~~~~~\n"
                "$D/d.ein:2:1: error: cannot read '/dev/null': it is a character device, not a regular file\n"
                "    2 | import \"/dev/null\"\n"
                "      | ^~~~~~~~~~~~~~~~~~\n"
                "$D/d.ein:3:1: error: empty import path\n"
                "    3 | import \"\"\n"
                "      | ^~~~~~~~~\n");
    /* The path is unescaped. */
    put_file("q\"\\.ein", "const Q = 1\n");
    put_file("q.ein", "import \"q\\\"\\\\.ein\"\n");
    import_case("q.ein", NULL,
                "(import \"q\\\"\\\\.ein\" \"$D/q\\\"\\\\.ein\"\n"
                "  (const Q 1)\n"
                ")\n", "");
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        printf("warning: could not remove %s\n", tmpdir);
}

/* `test_parser FILE...` only parses the files (for stress.test where
 * einc is not built): exit 1 after errors, as einc would. */
static int parse_only(int argc, char **argv)
{
    int rc = 0;
    for (int i = 1; i < argc; i++) {
        Arena *a = arena_new();
        if (!parse_file(argv[i], NULL, a))
            rc = 1;
        arena_free(a);
    }
    return rc;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        return parse_only(argc, argv);
    test_statements();
    test_expressions();
    test_newlines();
    test_lexer();
    test_errors();
    test_limits();
    test_locations();
    test_imports();
    return check_finish("test_parser");
}
