/* test_lang.c - unit tests of lang/: integer helpers, symbols, arenas,
 * and the exact format of diagnostics. */
#include "config.h"
#include "lang/lang.h"
#include "lang/sb.h"
#include "tests/check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static void test_int(void)
{
    /* floor division and modulo against a brute-force definition */
    for (int64_t a = -20; a <= 20; a++) {
        for (int64_t b = -7; b <= 7; b++) {
            if (b == 0)
                continue;
            int64_t q = i64_floordiv(a, b), m = i64_floormod(a, b);
            CHECK(q * b + m == a);
            CHECK(b > 0 ? (m >= 0 && m < b) : (m <= 0 && m > b));
        }
    }
    int64_t r;
    CHECK(!i64_mul(INT64_MAX / 2 + 1, 2, &r));
    CHECK(!i64_add(INT64_MAX, 1, &r));
    CHECK(!i64_sub(INT64_MIN, 1, &r));
    CHECK(i64_mul(-3, 4, &r) && r == -12);
    CHECK(i64_floordiv(INT64_MIN, -1) == INT64_MIN);   /* defined wrap, no trap */
    CHECK(u64_gcd(12, 18) == 6 && u64_gcd(18, 12) == 6 && u64_gcd(7, 0) == 7);
    CHECK(u64_gcd(0, 0) == 0 && u64_gcd(1ULL << 63, 6) == 2);
}

static void test_sb(void)
{
    Sb b = {0};
    CHECK(strcmp(sb_str(&b), "") == 0 && b.len == 0);
    sb_puts(&b, "ab");
    sb_putc(&b, 'c');
    sb_printf(&b, "%d-%s", 42, "x");
    CHECK_STR(sb_str(&b), "abc42-x");
    CHECK(b.len == 7);
    for (int i = 0; i < 1000; i++)          /* grows past its first block */
        sb_putc(&b, 'z');
    CHECK(b.len == 1007 && b.s[1006] == 'z' && b.s[1007] == 0);
    sb_free(&b);
    CHECK(b.s == NULL && b.len == 0 && b.cap == 0);
    sb_indent(&b, "one\n\n  two\nthree", 4);
    CHECK_STR(sb_str(&b), "    one\n\n      two\n    three\n");
    sb_free(&b);
}

static void test_sym_arena(void)
{
    Sym a = sym_intern("conv", 4), b = sym_intern_cstr("conv"), c = sym_intern("conv3", 5);
    CHECK(a == b && a != c && a != 0);
    CHECK(strcmp(sym_str(c), "conv3") == 0 && sym_len(c) == 5);
    char name[16];
    for (int i = 0; i < 5000; i++) {          /* forces rehashing */
        snprintf(name, sizeof name, "v%d", i);
        CHECK(strcmp(sym_str(sym_intern_cstr(name)), name) == 0);
    }
    CHECK(sym_intern_cstr("v42") == sym_intern_cstr("v42"));

    Arena *ar = arena_new();
    ArenaMark m = arena_mark(ar);
    for (int i = 0; i < 1000; i++) {
        int *p = arena_alloc(ar, 1000);
        CHECK(((uintptr_t)p & 15) == 0 && p[0] == 0);
        p[0] = i;
    }
    arena_release(ar, m);
    CHECK(strcmp(arena_printf(ar, "%s-%d", "x", 7), "x-7") == 0);
    CHECK(strcmp(arena_printf(ar, "%s", ""), "") == 0);
    /* texts around the stack buffer's size, and far past it */
    for (int n = 125; n < 132; n++) {
        char *s = arena_printf(ar, "%*d|", n, 42);
        CHECK(strlen(s) == (size_t)n + 1 && s[n] == '|' && s[n - 1] == '2');
    }
    char *s = arena_printf(ar, "%5000s", "end");
    CHECK(strlen(s) == 5000 && strcmp(s + 4997, "end") == 0);
    arena_free(ar);
}

static void test_diag(void)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&buf, &len);
    diag_set_stream(fp);
    const char *text = "input x : f32[4]\ny[i] = x[i] * q[i]\n";
    int f = src_add("t.ein", text, strlen(text));
    Loc q = {f, 31, 35};
    diag_error(q, "unknown tensor '%s'", "q");
    diag_note((Loc){f, 6, 7}, "'x' declared here");
    diag_warning((Loc){f, 17, 18}, "unused", "tensor 'y' is never used");
    diag_set_warning("unused", false);
    diag_warning((Loc){f, 17, 18}, "unused", "dropped");
    diag_note((Loc){f, 17, 18}, "dropped note");
    diag_error(LOC_NONE, "no location");
    fclose(fp);
    const char *want =
        "t.ein:2:15: error: unknown tensor 'q'\n"
        "    2 | y[i] = x[i] * q[i]\n"
        "      |               ^~~~\n"
        "t.ein:1:7: note: 'x' declared here\n"
        "    1 | input x : f32[4]\n"
        "      |       ^\n"
        "t.ein:2:1: warning: tensor 'y' is never used [-Wunused]\n"
        "    2 | y[i] = x[i] * q[i]\n"
        "      | ^\n"
        "einc: error: no location\n";
    CHECK_STR(buf, want);
    CHECK(diag_error_count() == 2 && diag_warning_count() == 1);
    free(buf);

    /* the error limit drops the rest with one line */
    fp = open_memstream(&buf, &len);
    diag_set_stream(fp);
    diag_reset();
    diag_set_max_errors(2);
    for (int i = 0; i < 5; i++)
        diag_error(LOC_NONE, "e%d", i);
    fclose(fp);
    CHECK(strcmp(buf, "einc: error: e0\neinc: error: e1\n"
                      "einc: fatal error: too many errors; stopping after 2\n") == 0);
    CHECK(diag_error_count() == 5);
    free(buf);
    diag_set_stream(stderr);
}

int main(void)
{
    test_int();
    test_sym_arena();
    test_diag();
    test_sb();
    return check_finish("test_lang");
}
