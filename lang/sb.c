/* sb.c - the string builder of sb.h. */
#include "config.h"
#include "sb.h"
#include "lang.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void sb_reserve(Sb *b, size_t extra)
{
    if (b->len + extra + 1 <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra + 1)
        cap *= 2;
    b->s = xrealloc(b->s, cap);
    b->cap = cap;
}

void sb_puts(Sb *b, const char *s)
{
    size_t n = strlen(s);
    sb_reserve(b, n);
    memcpy(b->s + b->len, s, n + 1);
    b->len += n;
}

void sb_putc(Sb *b, char c)
{
    sb_reserve(b, 1);
    b->s[b->len++] = c;
    b->s[b->len] = 0;
}

void sb_printf(Sb *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        ICE("vsnprintf failed for \"%s\"", fmt);
    sb_reserve(b, (size_t)n);
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void sb_free(Sb *b)
{
    free(b->s);
    b->s = NULL;
    b->len = b->cap = 0;
}

const char *sb_str(const Sb *b)
{
    return b->s ? b->s : "";
}

void sb_indent(Sb *b, const char *text, int indent)
{
    while (*text) {
        const char *nl = strchr(text, '\n');
        size_t n = nl ? (size_t)(nl - text) : strlen(text);
        if (n > 0)
            sb_printf(b, "%*s%.*s", indent, "", (int)n, text);
        sb_putc(b, '\n');
        text += n + (nl != NULL);
    }
}
