/* diag.c - diagnostics in GNU format with the source line and a caret
 * (and ~~~ over the rest of the range) under it:
 *
 *   net.ein:3:15: error: unknown tensor 'q'
 *       3 | z[n] = x[n] + q[n]
 *         |               ^
 *
 * Notes that follow a diagnostic which was not printed (a disabled
 * warning, or one past the error limit) are dropped with it. */
#include "config.h"
#include "lang.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const diag_warning_names[] = {
    "unused",           /* a tensor or declaration never used */
    "sum-invariant",    /* a term of a += sum that does not depend on the summed indices */
    "padded-max",       /* a max= or min= window reads the implicit 0 outside a tensor */
    NULL,
};
#define NWARN (sizeof diag_warning_names / sizeof *diag_warning_names - 1)

static struct {
    FILE *out;
    int errors, warnings;
    int max_errors;
    bool werror;
    bool disabled[NWARN];
    bool last_dropped;      /* drop the notes of a dropped diagnostic */
    bool said_too_many;
} st = {NULL, 0, 0, 20, false, {false}, false, false};

static FILE *out(void)
{
    return st.out ? st.out : stderr;
}

static int warning_index(const char *name)
{
    for (size_t i = 0; i < NWARN; i++)
        if (strcmp(diag_warning_names[i], name) == 0)
            return (int)i;
    return -1;
}

/* The source line of `loc` with a caret under its first byte and tildes
 * under the rest of the range on that line. */
static void show_source(Loc loc, int line, int col)
{
    const SrcFile *f = src_get(loc.file);
    if (!f || f->len == 0)
        return;
    size_t b = (size_t)loc.begin < f->len ? (size_t)loc.begin : f->len;
    size_t start = b - (size_t)(col - 1);
    size_t end = start;
    while (end < f->len && f->text[end] != '\n' && f->text[end] != '\r')
        end++;
    /* Very long lines are cut around the caret so the message stays readable. */
    size_t from = start, to = end;
    if (to - from > 200) {
        from = b > start + 80 ? b - 80 : start;
        to = from + 200 < end ? from + 200 : end;
    }
    FILE *o = out();
    fprintf(o, "%5d | ", line);
    for (size_t i = from; i < to; i++) {
        unsigned char c = (unsigned char)f->text[i];
        fputc(c == '\t' || (c >= 32 && c < 127) ? c : '?', o);
    }
    fputs("\n      | ", o);
    for (size_t i = from; i < b && i < to; i++)
        fputc(f->text[i] == '\t' ? '\t' : ' ', o);
    fputc('^', o);
    size_t e = loc.end > loc.begin ? (size_t)loc.end : b + 1;
    for (size_t i = b + 1; i < e && i < to; i++)
        fputc('~', o);
    fputc('\n', o);
}

void diag_vreport(DiagKind kind, Loc loc, const char *flag, const char *fmt,
                  va_list ap)
{
    const char *label = kind == DIAG_ERROR ? "error"
                      : kind == DIAG_WARNING ? "warning" : "note";
    bool as_error = false;
    if (kind == DIAG_NOTE) {
        if (st.last_dropped)
            return;
    } else if (kind == DIAG_WARNING) {
        int w = flag ? warning_index(flag) : -1;
        if (w >= 0 && st.disabled[w]) {
            st.last_dropped = true;
            return;
        }
        as_error = st.werror;
    }
    if (kind == DIAG_ERROR || as_error) {
        st.errors++;
        if (st.max_errors && st.errors > st.max_errors) {
            st.last_dropped = true;
            if (!st.said_too_many) {
                st.said_too_many = true;
                fprintf(out(), "einc: fatal error: too many errors; stopping "
                               "after %d\n", st.max_errors);
            }
            return;
        }
        if (as_error)
            label = "error";
    } else if (kind == DIAG_WARNING) {
        st.warnings++;
    }
    st.last_dropped = false;

    FILE *o = out();
    int line = 0, col = 0;
    const SrcFile *f = src_get(loc.file);
    if (f) {
        src_line_col(loc, &line, &col);
        fprintf(o, "%s:%d:%d: %s: ", f->path, line, col, label);
    } else {
        fprintf(o, "einc: %s: ", label);
    }
    vfprintf(o, fmt, ap);
    if (kind == DIAG_WARNING && flag)
        fprintf(o, as_error ? " [-Werror=%s]" : " [-W%s]", flag);
    fputc('\n', o);
    if (f)
        show_source(loc, line, col);
}

void diag_error(Loc loc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    diag_vreport(DIAG_ERROR, loc, NULL, fmt, ap);
    va_end(ap);
}

void diag_warning(Loc loc, const char *flag, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    diag_vreport(DIAG_WARNING, loc, flag, fmt, ap);
    va_end(ap);
}

void diag_note(Loc loc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    diag_vreport(DIAG_NOTE, loc, NULL, fmt, ap);
    va_end(ap);
}

static _Noreturn void vice(Loc loc, const char *file, int line, const char *fmt,
                           va_list ap)
{
    const SrcFile *f = src_get(loc.file);
    int l = 0, c = 0;
    if (f) {
        src_line_col(loc, &l, &c);
        fprintf(out(), "%s:%d:%d: internal compiler error: ", f->path, l, c);
    } else {
        fprintf(out(), "einc: internal compiler error: ");
    }
    vfprintf(out(), fmt, ap);
    fprintf(out(), " (at %s:%d)\n", file, line);
    if (f)
        show_source(loc, l, c);
    fprintf(out(), "Please report this bug with the input that caused it.\n");
    fflush(out());
    exit(3);
}

void diag_ice(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vice(LOC_NONE, file, line, fmt, ap);
}

void diag_ice_at(Loc loc, const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vice(loc, file, line, fmt, ap);
}

int diag_error_count(void) { return st.errors; }
int diag_warning_count(void) { return st.warnings; }

void diag_reset(void)
{
    st.errors = st.warnings = 0;
    st.last_dropped = st.said_too_many = false;
}

void diag_set_stream(void *fp) { st.out = fp; }
void diag_set_max_errors(int n) { st.max_errors = n; }
void diag_set_werror(bool on) { st.werror = on; }

bool diag_set_warning(const char *name, bool on)
{
    int w = warning_index(name);
    if (w < 0)
        return false;
    st.disabled[w] = !on;
    return true;
}

/* ---- checked integer arithmetic ---- */
bool i64_add(int64_t a, int64_t b, int64_t *r)
{
    int64_t t;
    if (__builtin_add_overflow(a, b, &t))
        return false;
    *r = t;
    return true;
}

bool i64_sub(int64_t a, int64_t b, int64_t *r)
{
    int64_t t;
    if (__builtin_sub_overflow(a, b, &t))
        return false;
    *r = t;
    return true;
}

bool i64_mul(int64_t a, int64_t b, int64_t *r)
{
    int64_t t;
    if (__builtin_mul_overflow(a, b, &t))
        return false;
    *r = t;
    return true;
}

int64_t i64_floordiv(int64_t a, int64_t b)
{
    if (b == -1)                    /* INT64_MIN / -1 overflows; wrap is defined here */
        return (int64_t)(0 - (uint64_t)a);
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0)))
        q--;
    return q;
}

int64_t i64_floormod(int64_t a, int64_t b)
{
    if (b == -1)
        return 0;
    int64_t m = a % b;
    if (m != 0 && ((m < 0) != (b < 0)))
        m += b;
    return m;
}
