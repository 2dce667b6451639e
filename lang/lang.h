/* lang.h - what every phase of einc shares: arenas, interned symbols,
 * source files and locations, and diagnostics.  Prefixes: arena_, sym_,
 * src_, diag_.  The AST node types live in ast.h beside this file. */
#ifndef EINC_LANG_H
#define EINC_LANG_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- arenas -------------------------------------------------------------
 * Memory is freed by lifetime, never node by node.  A mark/release pair
 * lets a search throw away the nodes of a branch it abandoned.  Under
 * EINC_TRACKED_ALLOC (set by --enable-sanitizers) every allocation is a
 * separate malloc so ASan and valgrind still see overruns. */
typedef struct Arena Arena;
typedef struct ArenaMark { void *chunk; size_t used; } ArenaMark;

Arena *arena_new(void);
void arena_free(Arena *a);
void *arena_alloc(Arena *a, size_t n);          /* zeroed, 16-byte aligned */
void *arena_dup(Arena *a, const void *p, size_t n);
char *arena_strdup(Arena *a, const char *s);
char *arena_printf(Arena *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
ArenaMark arena_mark(Arena *a);
void arena_release(Arena *a, ArenaMark m);

/* Growable array of pointers or values kept in an arena.
 *   VEC(Expr *) v = {0}; vec_push(arena, &v, e);  */
#define VEC(T) struct { T *data; int len, cap; }
#define vec_push(arena, v, x)                                               \
    do {                                                                    \
        if ((v)->len == (v)->cap)                                           \
            vec_grow_((arena), (void **)&(v)->data, &(v)->cap,              \
                      sizeof *(v)->data);                                   \
        (v)->data[(v)->len++] = (x);                                        \
    } while (0)
void vec_grow_(Arena *a, void **data, int *cap, size_t elem);

/* Out-of-memory is not a user error: report it and exit(1). */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t m);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);

/* ---- interned symbols ---------------------------------------------------
 * Identifiers are interned once and compared by id.  Id 0 is "no symbol". */
typedef uint32_t Sym;
Sym sym_intern(const char *s, size_t n);
Sym sym_intern_cstr(const char *s);
const char *sym_str(Sym s);                     /* "" for 0 */
size_t sym_len(Sym s);

/* ---- source files and locations -----------------------------------------
 * A location is a half-open byte range [begin, end) in one source file;
 * lines and columns (both from 1) are computed when a message is printed. */
typedef struct Loc {
    int32_t file;                               /* src id; -1: no location */
    int32_t begin, end;                         /* byte offsets */
} Loc;
#define LOC_NONE ((Loc){-1, 0, 0})

typedef struct SrcFile {
    const char *path;                           /* as named by the user */
    const char *text;                           /* NUL-terminated */
    size_t len;
    int32_t *line_starts;                       /* computed on first use */
    int nlines;
    Loc included_from;                          /* import site, or LOC_NONE */
} SrcFile;

/* Read a file (or "-" for stdin); returns its id or -1 after reporting the
 * error (at `from`, the import site, when there is one). */
int src_load(const char *path, Loc from);
/* Register text held in memory (tests, fuzzing); the text is copied. */
int src_add(const char *path, const char *text, size_t len);
const SrcFile *src_get(int id);
int src_count(void);
void src_line_col(Loc loc, int *line, int *col);
Loc loc_span(Loc a, Loc b);                     /* from a's begin to b's end */
void src_reset(void);                           /* forget every file */

/* ---- diagnostics --------------------------------------------------------
 * GNU format: "file:line:col: error: message", the source line, a caret
 * and a ~~~ range under the located text, then notes.  Errors are counted
 * and every phase reports all it finds before the driver stops; after
 * diag_max_errors the rest are dropped with one "too many errors" line. */
typedef enum { DIAG_ERROR, DIAG_WARNING, DIAG_NOTE } DiagKind;

void diag_error(Loc loc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* `flag` is the warning's name without "-W", e.g. "unused". */
void diag_warning(Loc loc, const char *flag, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void diag_note(Loc loc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void diag_vreport(DiagKind kind, Loc loc, const char *flag, const char *fmt, va_list ap);
/* An error of einc itself, not of the input: says so and exits with 3. */
void diag_ice(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));
#define ICE(...) diag_ice(__FILE__, __LINE__, __VA_ARGS__)
/* The same, located at the statement of the input that led to it
 * (FILE:LINE:COL: internal compiler error: ..., and the source line). */
void diag_ice_at(Loc loc, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5), noreturn));
#define ICE_AT(loc, ...) diag_ice_at((loc), __FILE__, __LINE__, __VA_ARGS__)

int diag_error_count(void);
int diag_warning_count(void);
void diag_reset(void);
void diag_set_stream(void *fp);                 /* FILE *; default stderr */
void diag_set_max_errors(int n);                /* 0: no limit; default 20 */
/* -Wno-NAME / -WNAME / -Werror. Returns false for an unknown name. */
bool diag_set_warning(const char *name, bool on);
void diag_set_werror(bool on);
extern const char *const diag_warning_names[];  /* NULL-terminated */

/* Safe integer arithmetic: false on overflow (result untouched). */
bool i64_add(int64_t a, int64_t b, int64_t *r);
bool i64_sub(int64_t a, int64_t b, int64_t *r);
bool i64_mul(int64_t a, int64_t b, int64_t *r);
/* Floor division and modulo with the sign of the divisor; b != 0. */
int64_t i64_floordiv(int64_t a, int64_t b);
int64_t i64_floormod(int64_t a, int64_t b);

#endif
