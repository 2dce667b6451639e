/* arena.c - region allocation.  Chunks grow geometrically; a mark is the
 * current chunk and its fill, so release frees every later chunk.  With
 * EINC_TRACKED_ALLOC each allocation is its own malloc, listed in the
 * arena, so address sanitizers see every overrun. */
#include "config.h"
#include "lang.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SANITIZE_ADDRESS__)
#define EINC_TRACKED_ALLOC 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EINC_TRACKED_ALLOC 1
#endif
#endif

typedef struct Chunk {
    struct Chunk *prev;
    size_t size, used;
    _Alignas(16) unsigned char data[];
} Chunk;

struct Arena {
    Chunk *top;
    size_t next_size;
};

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "einc: out of memory (%zu bytes)\n", n);
        exit(1);
    }
    return p;
}

void *xcalloc(size_t n, size_t m)
{
    void *p = calloc(n ? n : 1, m ? m : 1);
    if (!p) {
        fprintf(stderr, "einc: out of memory\n");
        exit(1);
    }
    return p;
}

void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (!p) {
        fprintf(stderr, "einc: out of memory (%zu bytes)\n", n);
        exit(1);
    }
    return p;
}

char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(xmalloc(n), s, n);
}

Arena *arena_new(void)
{
    Arena *a = xcalloc(1, sizeof *a);
    a->next_size = 64 * 1024;
    return a;
}

static void free_chunks_above(Arena *a, Chunk *keep)
{
    while (a->top && a->top != keep) {
        Chunk *c = a->top;
        a->top = c->prev;
        free(c);
    }
}

void arena_free(Arena *a)
{
    if (!a)
        return;
    free_chunks_above(a, NULL);
    free(a);
}

static Chunk *new_chunk(Arena *a, size_t need)
{
    size_t size = need;
#ifndef EINC_TRACKED_ALLOC
    if (size < a->next_size)
        size = a->next_size;
    if (a->next_size < 16u * 1024 * 1024)
        a->next_size *= 2;
#endif
    Chunk *c = xmalloc(sizeof *c + size);
    c->prev = a->top;
    c->size = size;
    c->used = 0;
    a->top = c;
    return c;
}

/* n bytes, not cleared: for those who fill them at once. */
static void *arena_raw(Arena *a, size_t n)
{
    size_t need = (n + 15) & ~(size_t)15;
    if (need < n) {
        fprintf(stderr, "einc: out of memory (%zu bytes)\n", n);
        exit(1);
    }
    Chunk *c = a->top;
#ifdef EINC_TRACKED_ALLOC
    c = new_chunk(a, n ? n : 1);
    c->used = c->size;
    return c->data;
#else
    if (!c || c->size - c->used < need)
        c = new_chunk(a, need);
    void *p = c->data + c->used;
    c->used += need;
    return p;
#endif
}

void *arena_alloc(Arena *a, size_t n)
{
    return memset(arena_raw(a, n), 0, n);
}

void *arena_dup(Arena *a, const void *p, size_t n)
{
    if (!n)
        return arena_alloc(a, 0);
    return memcpy(arena_raw(a, n), p, n);
}

char *arena_strdup(Arena *a, const char *s)
{
    return arena_dup(a, s, strlen(s) + 1);
}

char *arena_printf(Arena *a, const char *fmt, ...)
{
    /* most texts are short: formatted once, on the stack, then copied */
    char buf[128];
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0, buf[0] = 0;
    char *s;
    if ((size_t)n < sizeof buf) {
        s = arena_dup(a, buf, (size_t)n + 1);
    } else {
        s = arena_raw(a, (size_t)n + 1);
        vsnprintf(s, (size_t)n + 1, fmt, ap2);
    }
    va_end(ap2);
    return s;
}

ArenaMark arena_mark(Arena *a)
{
    return (ArenaMark){a->top, a->top ? a->top->used : 0};
}

void arena_release(Arena *a, ArenaMark m)
{
    free_chunks_above(a, m.chunk);
    if (a->top)
        a->top->used = m.used;
}

void vec_grow_(Arena *a, void **data, int *cap, size_t elem)
{
    int ncap = *cap ? *cap * 2 : 8;
    unsigned char *nd = arena_raw(a, (size_t)ncap * elem);
    if (*data)
        memcpy(nd, *data, (size_t)*cap * elem);
    memset(nd + (size_t)*cap * elem, 0, (size_t)(ncap - *cap) * elem);
    *data = nd;
    *cap = ncap;
}
