/* parse.c - the parse driver: parses the main file, and each file it
 * imports at its import statement (depth first, so messages follow the
 * order of the lines).  Each file is loaded and parsed once (the same file
 * reached by two paths, hard links included, is recognised by its device
 * and inode); its statements hang under the first ST_IMPORT that names it,
 * and a later import of it gets the file id and no statements.  An import
 * of a file that is still being imported closes a cycle: an error there,
 * and a note at each import of the cycle.  Imports nest at most
 * PARSE_MAX_IMPORT_DEPTH deep, since each level is a recursion of the
 * parser through this file. */
#include "config.h"
#include "parser/parser.h"
#include "parser/parser_int.h"
#include "parser/grammar.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* What identifies a file: its device and inode where it has them (a
 * file on disk), else its name (standard input, text in memory). */
typedef struct FileKey {
    bool on_disk;
    dev_t dev;
    ino_t ino;
    char *name;                     /* when not on disk */
} FileKey;

typedef struct Unit {
    FileKey key;
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

static FileKey name_key(const char *name)
{
    return (FileKey){false, 0, 0, xstrdup(name)};
}

/* The key of the file at `path` (stat follows symbolic links). */
static FileKey path_key(const char *path)
{
    struct stat st;
    if (stat(path, &st) == 0)
        return (FileKey){true, st.st_dev, st.st_ino, NULL};
    return name_key(path);
}

static bool same_key(const FileKey *a, const FileKey *b)
{
    if (a->on_disk != b->on_disk)
        return false;
    return a->on_disk ? a->dev == b->dev && a->ino == b->ino
                      : strcmp(a->name, b->name) == 0;
}

static int add_unit(Importer *im, FileKey key, int file, Loc from)
{
    if (im->nunits == im->cap) {
        im->cap = im->cap ? 2 * im->cap : 8;
        im->units = xrealloc(im->units, (size_t)im->cap * sizeof *im->units);
        im->chain = xrealloc(im->chain, (size_t)im->cap * sizeof *im->chain);
    }
    im->units[im->nunits] = (Unit){key, file, NULL, 0, false, from};
    return im->nunits++;
}

static int find_unit(const Importer *im, const FileKey *key)
{
    for (int i = 0; i < im->nunits; i++)
        if (same_key(&im->units[i].key, key))
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

/* Whether the search stops at `path`: it exists, or it is there but
 * cannot be reached (a loop of symbolic links, no permission), which
 * src_load then reports as such rather than "no such file". */
static bool found(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 || (errno != ENOENT && errno != ENOTDIR);
}

/* The first candidate for `name` imported from `from_file` that is there:
 * next to the importing file (not for `import <name>`), then in each -I
 * folder, then in the standard library's folder.  NULL if none. */
static char *find_import(const Importer *im, int from_file, const char *name,
                         bool library)
{
    if (name[0] == '/')
        return found(name) ? xstrdup(name) : NULL;
    char *path;
    if (!library) {
        const SrcFile *f = src_get(from_file);
        char *dir = folder_of(strcmp(f->path, "<stdin>") == 0 ? "" : f->path);
        path = join(dir, name);
        free(dir);
        if (found(path))
            return path;
        free(path);
    }
    for (int i = 0; im->opt && i < im->opt->ninclude; i++) {
        path = join(im->opt->include_dirs[i], name);
        if (found(path))
            return path;
        free(path);
    }
    if (im->opt && im->opt->lib_dir) {
        path = join(im->opt->lib_dir, name);
        if (found(path))
            return path;
        free(path);
    }
    return NULL;
}

/* The imports that led from unit chain[from] down to the current file, as
 * notes: all of a short chain, the first and last few of a long one. */
static void chain_notes(const Importer *im, int from)
{
    enum { SHOW = 5 };
    int n = im->nchain - 1 - from;      /* imports on the chain below `from` */
    for (int k = from + 1; k < im->nchain; k++) {
        int i = k - from - 1;           /* 0 .. n-1 */
        if (n > 2 * SHOW + 1 && i == SHOW)
            diag_note(LOC_NONE, "(%d more imports)", n - 2 * SHOW);
        if (n > 2 * SHOW + 1 && i >= SHOW && i < n - SHOW)
            continue;
        const Unit *next = &im->units[im->chain[k]];
        diag_note(next->from, "'%s' imports '%s' here",
                  src_get(im->units[im->chain[k - 1]].file)->path,
                  src_get(next->file)->path);
    }
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
    if (im->nchain > PARSE_MAX_IMPORT_DEPTH) {
        diag_error(s->loc, "imports nested too deeply (more than %d levels): "
                   "cannot import '%s'", PARSE_MAX_IMPORT_DEPTH, name);
        chain_notes(im, 0);
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
    FileKey key = path_key(path);
    int u = find_unit(im, &key);
    if (u >= 0) {
        free(key.name);
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
        chain_notes(im, k);
        return;
    }
    /* src_load refuses what is not a regular file (a FIFO would block). */
    int file = src_load(path, s->loc);
    free(path);
    if (file < 0) {
        free(key.name);
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

static Ast *parse_main(int file, FileKey key, const ParseOptions *opt,
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
        free(im.units[i].key.name);
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
    return parse_main(file, strcmp(path, "-") == 0 ? name_key("<stdin>") : path_key(path),
                      opt, arena, before);
}

Ast *parse_buffer(const char *name, const char *text, size_t len,
                  const ParseOptions *opt, Arena *arena)
{
    int before = diag_error_count();
    int file = src_add(name, text, len);
    return parse_main(file, name_key(name), opt, arena, before);
}
