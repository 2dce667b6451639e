/* sb.h - a string builder: a malloc'ed, NUL-terminated string that grows
 * geometrically.  `Sb b = {0};` is the empty string; sb_free releases it.
 * Prefix: sb_. */
#ifndef EINC_SB_H
#define EINC_SB_H

#include <stddef.h>

typedef struct Sb {
    char *s;                        /* NULL until something is appended */
    size_t len, cap;
} Sb;

void sb_puts(Sb *b, const char *s);
void sb_putc(Sb *b, char c);
void sb_printf(Sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sb_free(Sb *b);
const char *sb_str(const Sb *b);               /* "" when empty */
/* Append every line of `text` to `b`, each prefixed with `indent` spaces. */
void sb_indent(Sb *b, const char *text, int indent);

#endif
