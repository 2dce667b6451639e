/* sym.c - interned identifiers: one open-addressing table from text to
 * id, ids index an array of strings.  Lives for the whole process. */
#include "config.h"
#include "lang.h"

#include <string.h>
#include <stdlib.h>

static struct {
    char **strs;        /* id -> text */
    size_t *lens;
    uint32_t count, cap;
    uint32_t *slots;    /* hash table of ids; 0 = empty */
    uint32_t nslots;
} tab;

static uint64_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

static void rehash(void)
{
    uint32_t n = tab.nslots ? tab.nslots * 2 : 1024;
    uint32_t *slots = xcalloc(n, sizeof *slots);
    for (uint32_t id = 1; id < tab.count; id++) {
        uint64_t h = hash_bytes(tab.strs[id], tab.lens[id]);
        uint32_t i = (uint32_t)h & (n - 1);
        while (slots[i])
            i = (i + 1) & (n - 1);
        slots[i] = id;
    }
    free(tab.slots);
    tab.slots = slots;
    tab.nslots = n;
}

Sym sym_intern(const char *s, size_t n)
{
    if (tab.count == 0) {
        tab.cap = 256;
        tab.strs = xcalloc(tab.cap, sizeof *tab.strs);
        tab.lens = xcalloc(tab.cap, sizeof *tab.lens);
        tab.strs[0] = xstrdup("");
        tab.count = 1;
    }
    if ((tab.count + 1) * 2 > tab.nslots)
        rehash();
    uint64_t h = hash_bytes(s, n);
    uint32_t i = (uint32_t)h & (tab.nslots - 1);
    for (; tab.slots[i]; i = (i + 1) & (tab.nslots - 1)) {
        uint32_t id = tab.slots[i];
        if (tab.lens[id] == n && memcmp(tab.strs[id], s, n) == 0)
            return id;
    }
    if (tab.count == tab.cap) {
        tab.cap *= 2;
        tab.strs = xrealloc(tab.strs, tab.cap * sizeof *tab.strs);
        tab.lens = xrealloc(tab.lens, tab.cap * sizeof *tab.lens);
    }
    char *copy = xmalloc(n + 1);
    memcpy(copy, s, n);
    copy[n] = 0;
    uint32_t id = tab.count++;
    tab.strs[id] = copy;
    tab.lens[id] = n;
    tab.slots[i] = id;
    return id;
}

Sym sym_intern_cstr(const char *s)
{
    return sym_intern(s, strlen(s));
}

const char *sym_str(Sym s)
{
    return s && s < tab.count ? tab.strs[s] : "";
}

size_t sym_len(Sym s)
{
    return s && s < tab.count ? tab.lens[s] : 0;
}
