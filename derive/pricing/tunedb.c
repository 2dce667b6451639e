/* tunedb.c - the tuning database (cost.h): measured times that replace
 * the cost model's estimates (einc --tune-db), as written by the program
 * of einc --emit=tuner (search/tune.c). */
#include "config.h"
#include "cost.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

/* ---- the database ------------------------------------------------------- */

/* An operator: its time (seconds < 0: none given) and its engine (-1:
 * none given), each from its own line. */
typedef struct Entry {
    const char *key;
    double seconds;
    Loc loc;
    int64_t engine;
    Loc engine_loc;
} Entry;

struct TuneDb {
    const char *device;
    Entry *slots;               /* open addressing; key NULL: empty */
    int cap, count;
};

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static Entry *find_slot(const TuneDb *db, const char *key)
{
    uint64_t h = hash_str(key);
    for (int i = 0;; i++) {
        Entry *e = &db->slots[(h + (uint64_t)i) & (uint64_t)(db->cap - 1)];
        if (!e->key || strcmp(e->key, key) == 0)
            return e;
    }
}

static void grow(Arena *a, TuneDb *db)
{
    Entry *old = db->slots;
    int ocap = db->cap;
    db->cap = ocap ? ocap * 2 : 64;
    db->slots = arena_alloc(a, (size_t)db->cap * sizeof *db->slots);
    for (int i = 0; i < ocap; i++)
        if (old[i].key)
            *find_slot(db, old[i].key) = old[i];
}

const char *tune_db_device(const TuneDb *db)
{
    return db->device;
}

int tune_db_count(const TuneDb *db)
{
    return db->count;
}

/* The entry of `key` (made when new). */
static Entry *entry(Arena *a, TuneDb *db, const char *key)
{
    if ((db->count + 1) * 2 > db->cap)
        grow(a, db);
    Entry *e = find_slot(db, key);
    if (!e->key) {
        *e = (Entry){key, -1, LOC_NONE, -1, LOC_NONE};
        db->count++;
    }
    return e;
}

double tune_db_lookup(const TuneDb *db, const char *key)
{
    if (!db->count)
        return -1;
    const Entry *e = find_slot(db, key);
    return e->key && e->seconds >= 0 ? e->seconds : -1;
}

int64_t tune_db_engine(const TuneDb *db, const char *key)
{
    if (!db->count)
        return -1;
    const Entry *e = find_slot(db, key);
    return e->key ? e->engine : -1;
}

static bool blank(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\r';
}

static Loc span(int file, const char *text, const char *from, const char *to)
{
    if (to <= from)
        to = from + 1;
    return (Loc){file, (int32_t)(from - text), (int32_t)(to - text)};
}

/* The end of the word at p. */
static const char *word_end(const char *p, const char *end)
{
    while (p < end && !blank(*p))
        p++;
    return p;
}

static const char *skip_blanks(const char *p, const char *end)
{
    while (p < end && blank(*p))
        p++;
    return p;
}

static bool word_is(const char *p, const char *e, const char *w)
{
    return (size_t)(e - p) == strlen(w) && strncmp(p, w, (size_t)(e - p)) == 0;
}


/* A word of the file as a message quotes it: at most 40 bytes (then
 * "..."), bytes that are not printable ASCII as \xNN. */
static const char *shown(Arena *a, const char *p, const char *e)
{
    size_t n = (size_t)(e - p), cut = n > 40 ? 40 : n;
    char *out = arena_alloc(a, cut * 4 + 4), *o = out;
    for (size_t i = 0; i < cut; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c >= 0x20 && c < 0x7f)
            *o++ = (char)c;
        else
            o += sprintf(o, "\\x%02x", c);
    }
    strcpy(o, n > cut ? "..." : "");
    return out;
}

static TuneDb *parse(Arena *a, int file, const char *device)
{
    const SrcFile *sf = src_get(file);
    const char *text = sf->text, *end = text + sf->len;
    int errors = diag_error_count();
    TuneDb *db = arena_alloc(a, sizeof *db);
    grow(a, db);
    bool header = false;
    Loc device_loc = LOC_NONE;
    for (const char *line = text; line < end;) {
        const char *eol = memchr(line, '\n', (size_t)(end - line));
        if (!eol)
            eol = end;
        const char *p = skip_blanks(line, eol), *stop = eol;
        while (stop > p && blank(stop[-1]))
            stop--;
        const char *next = eol < end ? eol + 1 : end;
        if (p == stop || *p == '#') {
            line = next;
            continue;
        }
        const char *we = word_end(p, stop);
        if (!header) {
            if (!word_is(p, we, "einc-tune")) {
                diag_error(span(file, text, p, we), "expected 'einc-tune 1' on the first "
                           "line of a tuning database");
                return NULL;
            }
            const char *v = skip_blanks(we, stop), *ve = word_end(v, stop);
            if (v == stop) {
                diag_error(span(file, text, p, we), "expected a version number after "
                           "'einc-tune'");
                return NULL;
            }
            if (!word_is(v, ve, "1") || ve != stop) {
                diag_error(span(file, text, v, stop), "unsupported tuning database version "
                           "'%s' (einc reads version 1)", shown(a, v, stop));
                return NULL;
            }
            header = true;
            line = next;
            continue;
        }
        /* A NUL would cut the key or the device name short where they are
         * copied as C strings. */
        const char *nul = memchr(p, 0, (size_t)(stop - p));
        if (nul) {
            diag_error(span(file, text, nul, nul + 1), "a NUL byte in a line of a tuning "
                       "database");
            line = next;
            continue;
        }
        if (word_is(p, we, "device")) {
            const char *v = skip_blanks(we, stop), *ve = word_end(v, stop);
            if (v == stop || ve != stop) {
                diag_error(span(file, text, v == stop ? p : v, stop),
                           "expected one device name after 'device'");
            } else if (device_loc.file >= 0) {
                diag_error(span(file, text, p, stop), "a second 'device' line");
                diag_note(device_loc, "the first is here");
            } else {
                device_loc = span(file, text, v, ve);
                db->device = arena_printf(a, "%.*s", (int)(ve - v), v);
                if (device && strcmp(db->device, device) != 0)
                    diag_error(device_loc, "these times were measured for the device '%s', "
                               "not '%s' (use --device=%s)", shown(a, v, ve), device,
                               shown(a, v, ve));
            }
            line = next;
            continue;
        }
        if (word_is(p, we, "engine")) {
            /* engine N KEY: N a decimal integer, 0 to 2^31 - 1 */
            const char *v = skip_blanks(we, stop), *ve = word_end(v, stop);
            int64_t n = 0;
            bool ok = v < ve && ve - v <= 10;
            for (const char *c = v; ok && c < ve; c++) {
                ok = *c >= '0' && *c <= '9';
                n = n * 10 + (*c - '0');
            }
            const char *k = skip_blanks(ve, stop);
            if (!ok || n > INT32_MAX) {
                diag_error(span(file, text, v == stop ? p : v, v == stop ? stop : ve),
                           "expected 'engine N KEY', N the global index of a cuDNN engine");
            } else if (k == stop) {
                diag_error(span(file, text, p, ve), "missing the operator key after the "
                           "engine");
            } else {
                if (device_loc.file < 0) {
                    diag_error(span(file, text, p, stop), "an operator before the 'device' "
                               "line");
                    device_loc = span(file, text, p, p);   /* say it once */
                }
                Entry *e = entry(a, db, arena_printf(a, "%.*s", (int)(stop - k), k));
                if (e->engine >= 0) {
                    diag_error(span(file, text, k, stop), "a second engine for the same "
                               "operator");
                    diag_note(e->engine_loc, "the first is here");
                } else {
                    e->engine = n;
                    e->engine_loc = span(file, text, k, stop);
                }
            }
            line = next;
            continue;
        }
        /* The whole word is the number: a long one is copied whole, not
         * cut to the buffer, and strtod must not skip white space that is
         * not a blank here (\v, \f). */
        char *num_end;
        char buf[64], *num = buf;
        size_t wl = (size_t)(we - p);
        if (wl >= sizeof buf)
            num = arena_alloc(a, wl + 1);
        memcpy(num, p, wl);
        num[wl] = 0;
        double us = strtod(num, &num_end);
        if (num_end != num + wl || isspace((unsigned char)*num)) {
            diag_error(span(file, text, p, we), "expected 'MICROSECONDS KEY', 'engine N "
                       "KEY' or 'device NAME', not '%s'", shown(a, p, we));
            line = next;
            continue;
        }
        if (!isfinite(us) || us < 0) {
            diag_error(span(file, text, p, we), "the time '%s' is not a finite number of "
                       "microseconds >= 0", shown(a, p, we));
            line = next;
            continue;
        }
        const char *k = skip_blanks(we, stop);
        if (k == stop) {
            diag_error(span(file, text, p, we), "missing the operator key after the time");
            line = next;
            continue;
        }
        if (device_loc.file < 0) {
            diag_error(span(file, text, p, stop), "an operator before the 'device' line");
            device_loc = span(file, text, p, p);   /* say it once */
        }
        Entry *e = entry(a, db, arena_printf(a, "%.*s", (int)(stop - k), k));
        if (e->seconds >= 0) {
            diag_error(span(file, text, k, stop), "a second time for the same operator");
            diag_note(e->loc, "the first is here");
        } else {
            e->seconds = us * 1e-6;
            e->loc = span(file, text, k, stop);
        }
        line = next;
    }
    if (!header) {
        diag_error(span(file, text, text, text), "empty tuning database: expected "
                   "'einc-tune 1' on its first line");
        return NULL;
    }
    if (!db->device && diag_error_count() == errors)
        diag_error(span(file, text, end > text ? end - 1 : text, end),
                   "no 'device NAME' line in the tuning database");
    return diag_error_count() == errors ? db : NULL;
}

TuneDb *tune_db_load(Arena *a, const char *path, const char *device)
{
    int file = src_load(path, LOC_NONE);
    if (file < 0)
        return NULL;
    return parse(a, file, device);
}

TuneDb *tune_db_parse(Arena *a, const char *path, const char *text, size_t len,
                      const char *device)
{
    return parse(a, src_add(path, text, len), device);
}
