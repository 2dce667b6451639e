/* fuzz_tune.c - libFuzzer harness for the tuning database reader
 * (tune_db_parse, tune_db_load, tune_db_lookup in derive/pricing/tunedb.c): the
 * input is a whole --tune-db file.
 *
 * Besides "no crash, no out-of-bounds read, no undefined behaviour" (ASan,
 * UBSan) it checks what must hold for what the reader says.  The bytes
 * are read three times: with no required device, with --device=h200 and
 * with the device the file names, and once more from a file through
 * tune_db_load.  A refused input must come with at least one error.  For
 * an accepted one, a plain re-reading of the lines here (format in
 * derive/pricing/cost.h) must agree with it: the header came first, one device
 * line gave the device, every other line is `TIME KEY` with the time a
 * whole word that is a finite number >= 0, tune_db_count is the number of
 * those lines, no key repeats, each key is found with its own time, and
 * keys that are not there (a key cut short or made longer, another one)
 * are not found.  With a required device, the file is accepted exactly
 * when it is without one and names that device.
 *
 *   make fuzz-tune && make fuzz-tune-run FUZZ_TUNE_TIME=SECONDS
 *
 * `make check` replays tests/fuzz/corpus-tune/ through replay.c
 * (replay-tune.test): with FUZZ_TUNE_EXPECT=ok every input must be
 * accepted, with bad refused (files named ok-* and bad-*); crash-* inputs,
 * found by the fuzzer, may go either way. */
#include "config.h"
#include "lang/lang.h"
#include "derive/pricing/cost.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

#define FAIL(what)                                                          \
    do {                                                                    \
        fprintf(stderr, "fuzz_tune: %s (line %d)\n", what, __LINE__);       \
        abort();                                                            \
    } while (0)

/* One line of the file, as this harness reads it. */
typedef struct Line {
    const char *p, *end;        /* without leading and trailing blanks */
} Line;

static bool is_blank(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

static const char *word_end(const char *p, const char *end)
{
    while (p < end && !is_blank((unsigned char)*p))
        p++;
    return p;
}

static const char *skip_blanks(const char *p, const char *end)
{
    while (p < end && is_blank((unsigned char)*p))
        p++;
    return p;
}

static bool word_is(const char *p, const char *e, const char *w)
{
    return (size_t)(e - p) == strlen(w) && memcmp(p, w, (size_t)(e - p)) == 0;
}

/* The lines that are not blank and not comments. */
static Line *content_lines(const char *text, size_t size, int *n)
{
    Line *v = malloc((size / 2 + 2) * sizeof *v);
    const char *end = text + size;
    *n = 0;
    if (!v)
        FAIL("out of memory");
    for (const char *line = text; line < end;) {
        const char *eol = memchr(line, '\n', (size_t)(end - line));
        if (!eol)
            eol = end;
        const char *p = skip_blanks(line, eol), *stop = eol;
        while (stop > p && is_blank((unsigned char)stop[-1]))
            stop--;
        if (p < stop && *p != '#')
            v[(*n)++] = (Line){p, stop};
        line = eol < end ? eol + 1 : end;
    }
    return v;
}

static char *dup_span(const char *p, const char *e)
{
    char *s = malloc((size_t)(e - p) + 1);
    if (!s)
        FAIL("out of memory");
    memcpy(s, p, (size_t)(e - p));
    s[e - p] = 0;
    return s;
}

static int cmp_key(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* `key` is not found unless it is one of the sorted keys. */
static void absent(const TuneDb *db, char **sorted, int n, const char *key)
{
    if (!bsearch(&key, sorted, (size_t)n, sizeof *sorted, cmp_key) &&
        tune_db_lookup(db, key) >= 0)
        FAIL("a key that is not there is found");
}

/* Every consequence of the database `db` having accepted these lines. */
static void check_accepted(const TuneDb *db, const Line *lines, int n)
{
    if (n < 1)
        FAIL("accepted an empty file");
    const char *he = word_end(lines[0].p, lines[0].end);
    if (!word_is(lines[0].p, he, "einc-tune") ||
        !word_is(skip_blanks(he, lines[0].end), lines[0].end, "1"))
        FAIL("accepted without the header 'einc-tune 1' first");
    int devices = 0, measured = 0;
    const char *dev = tune_db_device(db);
    if (!dev)
        FAIL("accepted without a device");
    char **keys = malloc((size_t)n * sizeof *keys);
    double *times = malloc((size_t)n * sizeof *times);
    if (!keys || !times)
        FAIL("out of memory");
    for (int i = 1; i < n; i++) {
        const char *p = lines[i].p, *stop = lines[i].end;
        const char *we = word_end(p, stop);
        if (word_is(p, we, "device")) {
            const char *v = skip_blanks(we, stop);
            if (devices++)
                FAIL("accepted a second device line");
            if (measured)
                FAIL("accepted an operator before the device line");
            if (word_end(v, stop) != stop || v == stop)
                FAIL("accepted a device line without exactly one name");
            if (strlen(dev) != (size_t)(stop - v) ||
                memcmp(dev, v, (size_t)(stop - v)) != 0)
                FAIL("the device is not the one the file names");
            continue;
        }
        /* TIME KEY: the whole first word is the number */
        char *word = dup_span(p, we), *num_end;
        if (memchr(p, 0, (size_t)(we - p)))
            FAIL("accepted a time with a NUL byte");
        if (isspace((unsigned char)*p))
            FAIL("accepted a time that starts with white space");
        double us = strtod(word, &num_end);
        if (num_end == word || *num_end)
            FAIL("accepted a time that is not a whole number");
        if (!isfinite(us) || us < 0)
            FAIL("accepted a time that is not finite and >= 0");
        free(word);
        const char *k = skip_blanks(we, stop);
        if (k == stop)
            FAIL("accepted a time without a key");
        if (memchr(k, 0, (size_t)(stop - k)))
            FAIL("accepted a key with a NUL byte");
        keys[measured] = dup_span(k, stop);
        times[measured] = us * 1e-6;
        measured++;
    }
    if (devices != 1)
        FAIL("accepted without a device line");
    if (tune_db_count(db) != measured)
        FAIL("tune_db_count is not the number of measured lines");
    for (int i = 0; i < measured; i++) {
        double t = tune_db_lookup(db, keys[i]);
        if (t != times[i] || t < 0)
            FAIL("a key is not found with its own time");
    }
    /* the keys sorted: no key twice, and a bsearch says what is there */
    char **sorted = malloc((size_t)(measured + 1) * sizeof *sorted);
    if (!sorted)
        FAIL("out of memory");
    memcpy(sorted, keys, (size_t)measured * sizeof *sorted);
    qsort(sorted, (size_t)measured, sizeof *sorted, cmp_key);
    for (int i = 1; i < measured; i++)
        if (strcmp(sorted[i - 1], sorted[i]) == 0)
            FAIL("accepted a key twice");
    /* keys that are not there: each key made longer or cut short */
    for (int i = 0; i < measured; i++) {
        size_t len = strlen(keys[i]);
        char *other = malloc(len + 3);
        if (!other)
            FAIL("out of memory");
        memcpy(other, keys[i], len);
        memcpy(other + len, " x", 3);
        absent(db, sorted, measured, other);
        other[len - 1] = 0;
        absent(db, sorted, measured, other);
        free(other);
    }
    absent(db, sorted, measured, "matmul fp32 f32,f32 m=1 n=1 k=1");
    absent(db, sorted, measured, "");
    free(sorted);
    for (int i = 0; i < measured; i++)
        free(keys[i]);
    free(keys);
    free(times);
}

/* Reads the bytes as a database with `device` required (NULL: none).
 * Returns whether it was accepted; *dev_out gets the device it names. */
static bool run_parse(const unsigned char *data, size_t size, const char *device,
                      const Line *lines, int n, char **dev_out, int *count_out)
{
    src_reset();
    diag_reset();
    Arena *arena = arena_new();
    TuneDb *db = tune_db_parse(arena, "fuzz.tune", (const char *)data, size, device);
    if (db) {
        if (diag_error_count() != 0)
            FAIL("accepted with errors reported");
        check_accepted(db, lines, n);
        if (device && strcmp(tune_db_device(db), device) != 0)
            FAIL("accepted for another device");
        if (dev_out)
            *dev_out = dup_span(tune_db_device(db),
                                tune_db_device(db) + strlen(tune_db_device(db)));
        if (count_out)
            *count_out = tune_db_count(db);
    } else if (diag_error_count() == 0) {
        FAIL("refused without an error");
    }
    arena_free(arena);
    return db != NULL;
}

/* The same bytes from a file, through tune_db_load. */
static void run_load(const unsigned char *data, size_t size, bool accepted, int count)
{
    static char path[64];
    static bool broken;
    if (broken)
        return;
    if (!path[0]) {
        const char *tmp = getenv("TMPDIR");
        snprintf(path, sizeof path, "%.40s/fuzz-tune-XXXXXX",
                 tmp && *tmp && strlen(tmp) <= 40 ? tmp : "/tmp");
        int fd = mkstemp(path);
        if (fd < 0) {
            broken = true;
            return;
        }
        close(fd);
    }
    FILE *fp = fopen(path, "wb");
    if (!fp || fwrite(data, 1, size, fp) != size || fclose(fp) != 0) {
        if (fp)
            fclose(fp);
        unlink(path);
        broken = true;
        return;
    }
    src_reset();
    diag_reset();
    Arena *arena = arena_new();
    TuneDb *db = tune_db_load(arena, path, NULL);
    if ((db != NULL) != accepted)
        FAIL("tune_db_load and tune_db_parse disagree");
    if (db && tune_db_count(db) != count)
        FAIL("tune_db_load and tune_db_parse disagree on the count");
    if (!db && diag_error_count() == 0)
        FAIL("refused without an error (tune_db_load)");
    arena_free(arena);
    /* Files are fuzz inputs of their own: do not leave them behind. */
    unlink(path);
    path[0] = 0;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    static FILE *devnull;
    static int expect = -1;     /* FUZZ_TUNE_EXPECT: 1 ok, 0 bad, -1 either */
    if (!devnull) {
        devnull = fopen("/dev/null", "w");
        diag_set_stream(devnull);
        const char *e = getenv("FUZZ_TUNE_EXPECT");
        expect = !e ? -1 : strcmp(e, "ok") == 0 ? 1 : strcmp(e, "bad") == 0 ? 0 : -1;
    }
    int n;
    Line *lines = content_lines((const char *)data, size, &n);
    char *dev = NULL;
    int count = 0;
    bool ok = run_parse(data, size, NULL, lines, n, &dev, &count);
    if (expect >= 0 && ok != (expect == 1)) {
        diag_set_stream(stderr);        /* say why */
        run_parse(data, size, NULL, lines, n, NULL, NULL);
        FAIL(ok ? "accepted an input expected to be refused"
                : "refused an input expected to be accepted");
    }
    bool ok_h200 = run_parse(data, size, "h200", lines, n, NULL, NULL);
    if (ok_h200 != (ok && strcmp(dev, "h200") == 0))
        FAIL("--device=h200 changed more than the device check");
    if (ok && !run_parse(data, size, dev, lines, n, NULL, NULL))
        FAIL("refused with the device it names");
    run_load(data, size, ok, count);
    src_reset();
    diag_reset();
    free(dev);
    free(lines);
    return 0;
}
