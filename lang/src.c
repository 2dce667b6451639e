/* src.c - the source files of one compilation and line/column lookup.
 * Locations are byte ranges, so the table of line starts is built only
 * when a message needs a line number. */
#include "config.h"
#include "lang.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Offsets in a Loc are int32_t; refuse anything near that. */
#define SRC_MAX_BYTES ((size_t)1 << 30)

static SrcFile *files;
static int nfiles, capfiles;

static int add_file(const char *path, char *text, size_t len)
{
    if (nfiles == capfiles) {
        capfiles = capfiles ? capfiles * 2 : 16;
        files = xrealloc(files, (size_t)capfiles * sizeof *files);
    }
    SrcFile *f = &files[nfiles];
    memset(f, 0, sizeof *f);
    f->path = xstrdup(path);
    f->text = text;
    f->len = len;
    f->included_from = LOC_NONE;
    return nfiles++;
}

int src_add(const char *path, const char *text, size_t len)
{
    char *copy = xmalloc(len + 1);
    memcpy(copy, text, len);
    copy[len] = 0;
    return add_file(path, copy, len);
}

static char *read_stream(FILE *fp, size_t *len, bool *too_big)
{
    size_t cap = 1 << 16, n = 0;
    char *buf = xmalloc(cap);
    *too_big = false;
    for (;;) {
        if (n + 1 >= cap) {
            if (cap >= SRC_MAX_BYTES) {
                *too_big = true;
                free(buf);
                return NULL;
            }
            cap *= 2;
            buf = xrealloc(buf, cap);
        }
        size_t got = fread(buf + n, 1, cap - n - 1, fp);
        n += got;
        if (got == 0)
            break;
    }
    if (ferror(fp)) {
        free(buf);
        return NULL;
    }
    buf[n] = 0;
    *len = n;
    return buf;
}

const char *src_file_kind(unsigned mode)
{
    return S_ISDIR(mode) ? "a directory" : S_ISFIFO(mode) ? "a FIFO"
         : S_ISCHR(mode) ? "a character device" : S_ISBLK(mode) ? "a block device"
         : S_ISSOCK(mode) ? "a socket" : S_ISREG(mode) ? "a regular file"
         : "not a regular file";
}

/* The symbolic links from `path` on, "a -> b -> a", when they go round
 * in a loop at the last component; NULL when that is not what happened
 * (a loop in a folder of the path, or more links than the kernel follows). */
static char *symlink_loop(const char *path)
{
    enum { HOPS = 40 };             /* Linux gives ELOOP after 40 links */
    char *seen[HOPS + 1];
    struct stat ids[HOPS + 1];
    int n = 0;
    char *at = xstrdup(path), *text = NULL;
    for (;;) {
        struct stat st;
        if (n == HOPS || lstat(at, &st) != 0 || !S_ISLNK(st.st_mode))
            break;
        int k = 0;
        while (k < n && !(ids[k].st_dev == st.st_dev && ids[k].st_ino == st.st_ino))
            k++;
        if (k < n) {                /* back at link k: the loop is seen[k..] */
            size_t len = strlen(at) + 1;
            for (int i = k; i < n; i++)
                len += strlen(seen[i]) + 4;
            text = xmalloc(len);
            text[0] = 0;
            for (int i = k; i < n; i++)
                strcat(strcat(text, seen[i]), " -> ");
            strcat(text, at);
            break;
        }
        seen[n] = at;
        ids[n++] = st;
        char target[4096];
        ssize_t got = readlink(at, target, sizeof target - 1);
        if (got < 0)
            break;
        target[got] = 0;
        /* a relative target is relative to the folder of the link */
        const char *slash = strrchr(at, '/');
        size_t dir = target[0] != '/' && slash ? (size_t)(slash - at) + 1 : 0;
        char *next = xmalloc(dir + (size_t)got + 1);
        memcpy(next, at, dir);
        memcpy(next + dir, target, (size_t)got + 1);
        at = next;
    }
    for (int i = 0; i < n; i++)
        if (seen[i] != at)
            free(seen[i]);
    free(at);
    return text;
}

/* Open `path` for reading without blocking: a FIFO with no writer would
 * block open(2) forever, so it is opened O_NONBLOCK and refused, with
 * devices and sockets, after fstat.  NULL after reporting the error. */
static FILE *open_regular(const char *path, Loc from)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        char *loop = e == ELOOP ? symlink_loop(path) : NULL;
        if (loop)
            diag_error(from, "cannot open '%s': a loop of symbolic links: %s",
                       path, loop);
        else
            diag_error(from, "cannot open '%s': %s", path, strerror(e));
        free(loop);
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        diag_error(from, "cannot read '%s': %s", path, strerror(errno));
        close(fd);
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        if (S_ISDIR(st.st_mode))
            diag_error(from, "cannot read '%s': it is a directory", path);
        else
            diag_error(from, "cannot read '%s': it is %s, not a regular file%s", path,
                       src_file_kind(st.st_mode), S_ISFIFO(st.st_mode) && from.file < 0
                       ? " (a pipe can be given on standard input, as '-')" : "");
        close(fd);
        return NULL;
    }
    /* regular files ignore O_NONBLOCK; clear it all the same */
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    FILE *fp = fdopen(fd, "rb");
    if (!fp) {
        diag_error(from, "cannot open '%s': %s", path, strerror(errno));
        close(fd);
    }
    return fp;
}

int src_load(const char *path, Loc from)
{
    bool is_stdin = strcmp(path, "-") == 0;
    FILE *fp = is_stdin ? stdin : open_regular(path, from);
    if (!fp)
        return -1;
    size_t len = 0;
    bool too_big;
    errno = 0;
    char *text = read_stream(fp, &len, &too_big);
    int saved = errno;
    if (!is_stdin)
        fclose(fp);
    if (!text) {
        if (too_big)
            diag_error(from, "cannot read '%s': file is larger than 1 GiB", path);
        else
            diag_error(from, "cannot read '%s': %s", path,
                       strerror(saved ? saved : EIO));
        return -1;
    }
    int id = add_file(is_stdin ? "<stdin>" : path, text, len);
    files[id].included_from = from;
    return id;
}

const SrcFile *src_get(int id)
{
    return id >= 0 && id < nfiles ? &files[id] : NULL;
}

int src_count(void)
{
    return nfiles;
}

static void index_lines(SrcFile *f)
{
    int cap = 64, n = 0;
    int32_t *starts = xmalloc((size_t)cap * sizeof *starts);
    starts[n++] = 0;
    for (size_t i = 0; i < f->len; i++) {
        if (f->text[i] == '\n') {
            if (n == cap) {
                cap *= 2;
                starts = xrealloc(starts, (size_t)cap * sizeof *starts);
            }
            starts[n++] = (int32_t)(i + 1);
        }
    }
    f->line_starts = starts;
    f->nlines = n;
}

void src_line_col(Loc loc, int *line, int *col)
{
    SrcFile *f = loc.file >= 0 && loc.file < nfiles ? &files[loc.file] : NULL;
    if (!f) {
        *line = *col = 0;
        return;
    }
    if (!f->line_starts)
        index_lines(f);
    int32_t off = loc.begin;
    if (off < 0)
        off = 0;
    if ((size_t)off > f->len)
        off = (int32_t)f->len;
    int lo = 0, hi = f->nlines - 1;         /* last start <= off */
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (f->line_starts[mid] <= off)
            lo = mid;
        else
            hi = mid - 1;
    }
    *line = lo + 1;
    *col = off - f->line_starts[lo] + 1;
}

Loc loc_span(Loc a, Loc b)
{
    if (a.file < 0)
        return b;
    if (b.file != a.file)
        return a;
    Loc r = a;
    if (b.end > r.end)
        r.end = b.end;
    if (b.begin < r.begin)
        r.begin = b.begin;
    return r;
}

void src_reset(void)
{
    for (int i = 0; i < nfiles; i++) {
        free((char *)files[i].path);
        free((char *)files[i].text);
        free(files[i].line_starts);
    }
    free(files);
    files = NULL;
    nfiles = capfiles = 0;
}
