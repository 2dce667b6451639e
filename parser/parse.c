/* parse.c - the parse driver: parses the main file, and each file it
 * imports at its import statement (depth first, so messages follow the
 * order of the lines).  Each file is loaded and parsed once (the same file
 * reached by two paths is recognised by its real path); its statements hang
 * under the first ST_IMPORT that names it, and a later import of it gets
 * the file id and no statements.  An import of a file that is still being
 * imported closes a cycle: an error there, and a note at each import of
 * the cycle. */
#include "config.h"
#include "parser/parser.h"
#include "parser/parser_int.h"
#include "parser/grammar.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct Unit {
    char *key;                      /* real path, or the name as given */
    int file;                       /* src id */
    Stmt **stmts;
    int nstmts;
    bool active;                    /* on the import chain right now */
    Loc from;                       /* the import that loaded it */
} Unit;

typedef struct Importer {
    const ParseOptions *opt;
    Arena *arena;
    Unit *units;
    int nunits, cap;
    int *chain;                     /* unit indices, main file first */
    int nchain;
} Importer;

static void parse_unit(Importer *im, int unit);

static char *unit_key(const char *path)
{
    char buf[PATH_MAX];
    if (realpath(path, buf))
        return xstrdup(buf);
    return xstrdup(path);
}

static int add_unit(Importer *im, char *key, int file, Loc from)
{
    if (im->nunits == im->cap) {
        im->cap = im->cap ? 2 * im->cap : 8;
        im->units = xrealloc(im->units, (size_t)im->cap * sizeof *im->units);
        im->chain = xrealloc(im->chain, (size_t)im->cap * sizeof *im->chain);
    }
    im->units[im->nunits] = (Unit){key, file, NULL, 0, false, from};
    return im->nunits++;
}

static int find_unit(const Importer *im, const char *key)
{
    for (int i = 0; i < im->nunits; i++)
        if (strcmp(im->units[i].key, key) == 0)
            return i;
    return -1;
}

/* The folder part of `path` with its slash ("a/b/" for "a/b/c.ein"), or "". */
static char *folder_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    size_t n = slash ? (size_t)(slash - path) + 1 : 0;
    char *d = xmalloc(n + 1);
    memcpy(d, path, n);
    d[n] = 0;
    return d;
}

static char *join(const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    bool slash = a > 0 && dir[a - 1] != '/';
    char *s = xmalloc(a + slash + b + 1);
    memcpy(s, dir, a);
    if (slash)
        s[a] = '/';
    memcpy(s + a + slash, name, b + 1);
    return s;
}

/* The first existing candidate for `name` imported from `from_file`:
 * next to the importing file (not for `import <name>`), then in each -I
 * folder, then in the standard library's folder.  NULL if none. */
static char *find_import(const Importer *im, int from_file, const char *name,
                         bool library)
{
    struct stat st;
    if (name[0] == '/')
        return stat(name, &st) == 0 ? xstrdup(name) : NULL;
    char *path;
    if (!library) {
        const SrcFile *f = src_get(from_file);
        char *dir = folder_of(strcmp(f->path, "<stdin>") == 0 ? "" : f->path);
        path = join(dir, name);
        free(dir);
        if (stat(path, &st) == 0)
            return path;
        free(path);
    }
    for (int i = 0; im->opt && i < im->opt->ninclude; i++) {
        path = join(im->opt->include_dirs[i], name);
        if (stat(path, &st) == 0)
            return path;
        free(path);
    }
    if (im->opt && im->opt->lib_dir) {
        path = join(im->opt->lib_dir, name);
        if (stat(path, &st) == 0)
            return path;
        free(path);
    }
    return NULL;
}

/* import -> 'import' STRING : load, parse and import the named file. */
static void do_import(Importer *im, int unit, Stmt *s)
{
    const char *name = s->import.path;
    int from_file = im->units[unit].file;
    if (name[0] == 0) {
        diag_error(s->loc, "empty import path");
        return;
    }
    char *path = find_import(im, from_file, name, s->import.library);
    if (!path) {
        if (s->import.library)
            diag_error(s->loc, "cannot find '%s' in the -I folders or the standard "
                       "library (%s)", name,
                       im->opt && im->opt->lib_dir ? im->opt->lib_dir : "none");
        else
            diag_error(s->loc, "cannot open '%s': no such file or directory", name);
        return;
    }
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        diag_error(s->loc, "cannot import '%s': not a regular file", path);
        free(path);
        return;
    }
    char *key = unit_key(path);
    int u = find_unit(im, key);
    if (u >= 0) {
        free(key);
        free(path);
        s->import.file = im->units[u].file;
        if (!im->units[u].active)
            return;                 /* already imported: once is enough */
        if (u == unit)
            diag_error(s->loc, "'%s' imports itself",
                       src_get(im->units[u].file)->path);
        else
            diag_error(s->loc, "circular import of '%s'",
                       src_get(im->units[u].file)->path);
        /* The imports that led from that file back to here. */
        int k = 0;
        while (im->chain[k] != u)
            k++;
        for (k++; k < im->nchain; k++) {
            const Unit *next = &im->units[im->chain[k]];
            diag_note(next->from, "'%s' imports '%s' here",
                      src_get(im->units[im->chain[k - 1]].file)->path,
                      src_get(next->file)->path);
        }
        return;
    }
    int file = src_load(path, s->loc);
    free(path);
    if (file < 0) {
        free(key);
        return;
    }
    u = add_unit(im, key, file, s->loc);
    parse_unit(im, u);
    s->import.file = file;
    s->import.stmts = im->units[u].stmts;
    s->import.nstmts = im->units[u].nstmts;
}

void parse_import(Parse *P, Stmt *s)
{
    do_import(P->importer, P->unit, s);
}

/* Lex and parse one loaded file into its unit's statement list; its
 * imports are parsed as they come (parse_import), depth first. */
static void parse_unit(Importer *im, int unit)
{
    int file = im->units[unit].file;
    const SrcFile *f = src_get(file);
    im->units[unit].active = true;
    im->chain[im->nchain++] = unit;
    Parse *P = xcalloc(1, sizeof *P);
    P->arena = im->arena;
    P->file = file;
    P->text = f->text;
    P->len = f->len;
    P->cur = f->text;
    P->prev = TOK_NEWLINE;     /* the start counts as a statement end */
    P->importer = im;
    P->unit = unit;
    parse_run(P);
    /* units may have moved while P's imports were added */
    im->units[unit].stmts = P->stmts.data;
    im->units[unit].nstmts = P->stmts.len;
    free(P);
    im->nchain--;
    im->units[unit].active = false;
}

static Ast *parse_main(int file, char *key, const ParseOptions *opt,
                       Arena *arena, int errors_before)
{
    Importer im = {opt, arena, NULL, 0, 0, NULL, 0};
    int u = add_unit(&im, key, file, LOC_NONE);
    parse_unit(&im, u);
    Ast *ast = NULL;
    if (diag_error_count() == errors_before) {
        ast = arena_alloc(arena, sizeof *ast);
        ast->stmts = im.units[u].stmts;
        ast->nstmts = im.units[u].nstmts;
        ast->file = file;
    }
    for (int i = 0; i < im.nunits; i++)
        free(im.units[i].key);
    free(im.units);
    free(im.chain);
    return ast;
}

Ast *parse_file(const char *path, const ParseOptions *opt, Arena *arena)
{
    int before = diag_error_count();
    int file = src_load(path, LOC_NONE);
    if (file < 0)
        return NULL;
    return parse_main(file, unit_key(strcmp(path, "-") == 0 ? "<stdin>" : path),
                      opt, arena, before);
}

Ast *parse_buffer(const char *name, const char *text, size_t len,
                  const ParseOptions *opt, Arena *arena)
{
    int before = diag_error_count();
    int file = src_add(name, text, len);
    return parse_main(file, xstrdup(name), opt, arena, before);
}
