/* parser.h - the parse driver: reads a .ein file, lexes (lexer.re, re2c)
 * and parses (parser.y, Bison) it, resolves `import` against the
 * importing file's folder and then the -I folders (each file loaded once,
 * a cycle reported at the import that closes it), and returns the AST.
 * Prefix: parse_. */
#ifndef EINC_PARSER_H
#define EINC_PARSER_H

#include "../lang/ast.h"

typedef struct ParseOptions {
    const char *const *include_dirs;    /* -I, in order */
    int ninclude;
    const char *lib_dir;                /* the standard library (nn.ein), or
                                           NULL: searched after the -I
                                           folders */
} ParseOptions;

/* NULL after reporting every syntax error found (up to the error limit).
 * `path` "-" reads stdin.  The files read are src_get(0 .. src_count()-1),
 * which is what -M lists. */
Ast *parse_file(const char *path, const ParseOptions *opt, Arena *arena);
/* The same over text in memory (tests, the fuzzer). */
Ast *parse_buffer(const char *name, const char *text, size_t len,
                  const ParseOptions *opt, Arena *arena);

#endif
