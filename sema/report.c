/* report.c - sema's diagnostics: the lang/ diag_* calls behind a filter
 * that drops exact repeats (a def body is checked once per call, and its
 * mistakes should be told once), "did you mean" suggestions by edit
 * distance, and source-like printing of expressions and types. */
#include "config.h"
#include "sema_int.h"
#include "../lang/sb.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t hash_str(const char *p)
{
    uint64_t h = 1469598103934665603ull;
    for (; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    return h;
}

/* True the first time this (kind, location, message) is seen. */
static bool first_time(Sema *s, char kind, Loc loc, const char *msg)
{
    char *key = arena_printf(s->arena, "%c%d:%d:%d:%s", kind, (int)loc.file,
                             (int)loc.begin, (int)loc.end, msg);
    if (2 * (s->nseen + 1) > s->seen_cap) {
        int cap = s->seen_cap ? 2 * s->seen_cap : 256;
        char **t = arena_alloc(s->arena, (size_t)cap * sizeof *t);
        for (int i = 0; i < s->seen_cap; i++) {
            if (!s->seen[i])
                continue;
            size_t j = hash_str(s->seen[i]) & (size_t)(cap - 1);
            while (t[j])
                j = (j + 1) & (size_t)(cap - 1);
            t[j] = s->seen[i];
        }
        s->seen = t;
        s->seen_cap = cap;
    }
    size_t j = hash_str(key) & (size_t)(s->seen_cap - 1);
    for (; s->seen[j]; j = (j + 1) & (size_t)(s->seen_cap - 1))
        if (strcmp(s->seen[j], key) == 0)
            return false;
    s->seen[j] = key;
    s->nseen++;
    return true;
}

static char *vformat(Sema *s, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    char *buf = arena_alloc(s->arena, (size_t)n + 1);
    vsnprintf(buf, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    return buf;
}

void sema_flush_context(Sema *s)
{
    for (int k = s->ncontext - 1; k >= 0; k--)
        diag_note(s->context[k]->bind.callee_loc, "in the call of '%s' here",
                  sym_str(s->context[k]->bind.callee));
    s->ncontext = 0;
}

/* A diagnostic inside an inlined def body: remember the calls. */
static void save_context(Sema *s)
{
    s->ncontext = s->drop_notes ? 0 : s->calls.len;
    if (!s->ncontext)
        return;
    s->context = arena_alloc(s->arena, (size_t)s->ncontext * sizeof *s->context);
    for (int k = 0; k < s->ncontext; k++)
        s->context[k] = s->calls.data[k];
}

void sema_error(Sema *s, Loc loc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = vformat(s, fmt, ap);
    va_end(ap);
    sema_flush_context(s);
    s->errors++;                    /* a repeat still fails the phase */
    s->drop_notes = !first_time(s, 'e', loc, msg);
    if (!s->drop_notes)
        diag_error(loc, "%s", msg);
    save_context(s);
}

void sema_warn(Sema *s, Loc loc, const char *flag, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = vformat(s, fmt, ap);
    va_end(ap);
    sema_flush_context(s);
    s->drop_notes = !first_time(s, 'w', loc, msg);
    if (!s->drop_notes)
        diag_warning(loc, flag, "%s", msg);
    save_context(s);
}

void sema_note(Sema *s, Loc loc, const char *fmt, ...)
{
    if (s->drop_notes)
        return;
    va_list ap;
    va_start(ap, fmt);
    diag_vreport(DIAG_NOTE, loc, NULL, fmt, ap);
    va_end(ap);
}

const char *sym_q(Sym s)
{
    return sym_str(s);
}

/* Levenshtein distance, giving up (returning limit + 1) past `limit`. */
static int edit_distance(const char *a, size_t na, const char *b, size_t nb,
                         int limit)
{
    if ((na > nb ? na - nb : nb - na) > (size_t)limit || na > 64 || nb > 64)
        return limit + 1;
    int row[65];
    for (size_t j = 0; j <= nb; j++)
        row[j] = (int)j;
    for (size_t i = 1; i <= na; i++) {
        int diag = row[0], best = row[0] = (int)i;
        for (size_t j = 1; j <= nb; j++) {
            int up = row[j];
            int v = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < v)
                v = up + 1;
            if (row[j - 1] + 1 < v)
                v = row[j - 1] + 1;
            row[j] = v;
            diag = up;
            if (v < best)
                best = v;
        }
        if (best > limit)
            return limit + 1;
    }
    return row[nb];
}

bool sema_may_suggest(Sema *s)
{
    if (diag_error_limit_reached() || s->suggestions >= SEMA_MAX_SUGGESTIONS)
        return false;
    s->suggestions++;
    return true;
}

Sym suggest_name(Sym name, const Sym *cands, int n)
{
    const char *a = sym_str(name);
    size_t na = strlen(a);
    /* As gcc and clang do: about a third of the name may be wrong. */
    int limit = na < 3 ? 1 : (int)(na + 2) / 3;
    Sym best = 0;
    int bestd = limit + 1;
    for (int i = 0; i < n; i++) {
        if (cands[i] == name || cands[i] == 0)
            continue;
        const char *b = sym_str(cands[i]);
        int d = edit_distance(a, na, b, strlen(b), limit);
        /* a one-letter name is only a typo of another one-letter name
         * when the case differs */
        if (d < bestd && !(na == 1 && strlen(b) == 1 && d == 1 &&
                           (a[0] | 32) != (b[0] | 32))) {
            best = cands[i];
            bestd = d;
        }
    }
    return best;
}

const char *did_you_mean(Sema *s, Sym name, const Sym *cands, int n)
{
    Sym best = suggest_name(name, cands, n);
    return best ? arena_printf(s->arena, "; did you mean '%s'?", sym_str(best))
                : "";
}

void unknown_tensor(Sema *s, const Scope *sc, Sym name, Loc loc,
                    const char *where)
{
    Sym *cands = NULL;
    int n = sema_may_suggest(s)
          ? scope_names(s->arena, sc, 1u << ENT_TENSOR | 1u << ENT_PARAM, &cands) : 0;
    Sym near = suggest_name(name, cands, n);
    if (near) {
        /* the misspelt read was meant for it: no -Wunused on top */
        scope_find(sc, near)->used = true;
        sema_error(s, loc, "unknown tensor '%s'%s; did you mean '%s'?",
                   sym_q(name), where, sym_q(near));
    } else {
        sema_error(s, loc, "unknown tensor '%s'%s", sym_q(name), where);
    }
    Entry *g = sc != s->globals ? scope_find(s->globals, name) : NULL;
    if (g && g->kind == ENT_TENSOR) {
        g->used = true;
        sema_note(s, g->loc, "a def sees only its parameters; pass '%s' as an "
                  "argument", sym_q(name));
    }
}

/* ---- printing ------------------------------------------------------------ */

/* b's text, copied into the arena; b is freed. */
static char *text_done(Arena *a, Sb *b)
{
    char *r = arena_strdup(a, sb_str(b));
    sb_free(b);
    return r;
}

static int prec(const Expr *e)
{
    if (e->kind != EX_BIN)
        return e->kind == EX_IN ? 0 : 10;
    switch (e->bin.op) {
    case OP_OR: return 1;
    case OP_AND: return 2;
    case OP_EQ: case OP_NE: case OP_LT: case OP_LE: case OP_GT: case OP_GE:
        return 3;
    case OP_ADD: case OP_SUB: return 4;
    default: return 5;
    }
}

static void print_expr(Sb *b, const Expr *e, int min_prec)
{
    bool paren = prec(e) < min_prec;
    if (paren)
        sb_puts(b, "(");
    switch (e->kind) {
    case EX_INT:
        sb_printf(b, "%lld", (long long)e->ival);
        break;
    case EX_REAL:
        sb_printf(b, "%g", e->rval);
        break;
    case EX_NAME:
        sb_puts(b, sym_str(e->name));
        break;
    case EX_ACCESS:
    case EX_CALL:
        sb_puts(b, sym_str(e->call.name));
        sb_puts(b, e->kind == EX_ACCESS ? "[" : "(");
        for (int i = 0; i < e->call.nargs; i++) {
            if (i)
                sb_puts(b, ", ");
            print_expr(b, e->call.args[i], 0);
        }
        sb_puts(b, e->kind == EX_ACCESS ? "]" : ")");
        break;
    case EX_NEG:
    case EX_NOT:
        sb_puts(b, e->kind == EX_NEG ? "-" : "!");
        print_expr(b, e->operand, 10);
        break;
    case EX_BIN: {
        int p = prec(e);
        print_expr(b, e->bin.lhs, p);
        sb_puts(b, " ");
        sb_puts(b, binop_str(e->bin.op));
        sb_puts(b, " ");
        print_expr(b, e->bin.rhs, p + 1);
        break;
    }
    case EX_IN:
        sb_puts(b, sym_str(e->in.var));
        sb_puts(b, " in ");
        print_expr(b, e->in.lo, 5);
        sb_puts(b, "..");
        print_expr(b, e->in.hi, 5);
        break;
    }
    if (paren)
        sb_puts(b, ")");
}

char *expr_text(Arena *a, const Expr *e)
{
    Sb b = {0};
    print_expr(&b, e, 0);
    return text_done(a, &b);
}

char *type_text(Arena *a, const TypeExpr *t)
{
    Sb b = {0};
    sb_puts(&b, elem_name(t->elem));
    sb_puts(&b, "[");
    for (int i = 0; i < t->ndims; i++) {
        if (i)
            sb_puts(&b, ", ");
        print_expr(&b, t->dims[i], 0);
    }
    sb_puts(&b, "]");
    return text_done(a, &b);
}

char *shape_text(Arena *a, ElemType elem, int rank, const int64_t *shape)
{
    Sb b = {0};
    sb_puts(&b, elem_name(elem));
    sb_puts(&b, "[");
    for (int i = 0; i < rank; i++) {
        if (i)
            sb_puts(&b, ", ");
        sb_printf(&b, "%lld", (long long)shape[i]);
    }
    sb_puts(&b, "]");
    return text_done(a, &b);
}
