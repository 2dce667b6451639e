/* parser_int.h - what the lexer (lexer.re), the grammar (grammar.y) and the
 * parse driver (parse.c) share; not part of the parser's public API.
 *
 * One Parse holds the state of parsing one file: the lexer's cursor and
 * bracket stack, the error-recovery flags the grammar and the lexer use to
 * talk to each other, and the statements parsed so far. */
#ifndef EINC_PARSER_INT_H
#define EINC_PARSER_INT_H

#include "lang/ast.h"

/* Brackets ( [ { nested deeper than this stop the parse with an error: the
 * limit keeps the Bison stack and every later recursive walk bounded. */
#define PARSE_MAX_NEST 256
/* Expression trees deeper than this are an error, so that sema, derive and
 * ast_dump may recurse over expressions without fear for the C stack. */
#define PARSE_MAX_DEPTH 1000
/* Imports nested deeper than this are an error (gcc's limit for
 * #include): each level of the chain is a recursion of the parser. */
#define PARSE_MAX_IMPORT_DEPTH 200

typedef VEC(Expr *) ExprList;
typedef VEC(Stmt *) StmtList;
typedef VEC(Param) ParamList;
typedef VEC(Sym) SymList;
typedef struct ArgList {            /* call arguments and their keys (0: none) */
    ExprList exprs;
    SymList keys;
} ArgList;
typedef struct NameList {
    VEC(Sym) syms;
    VEC(Loc) locs;
} NameList;

/* The optional `: [dims]` / `: f16[dims]` of a tensor statement. */
typedef struct ShapeDecl {
    bool given;
    int elem;                       /* ElemType, or -1 when not written */
    ExprList dims;
    Loc loc;
} ShapeDecl;

typedef struct Bracket {
    char ch;                        /* ( [ { */
    bool orphan;                    /* a { the parser threw away in recovery */
    Loc loc;
} Bracket;

typedef struct Parse {
    Arena *arena;
    int file;                       /* src id */
    const char *text;               /* the file's text, NUL-terminated */
    size_t len;
    const char *cur;                /* lexer cursor */
    int prev;                       /* last token handed to the parser */
    int npending;                   /* tokens the lexer owes the parser */
    int pending[4];
    Loc pending_loc[4];
    Bracket nest[PARSE_MAX_NEST];
    int nnest;
    bool fatal;                     /* lexer gave up: only end of file follows */
    bool recovering;                /* the parser is skipping to a statement end */
    StmtList stmts;                 /* top-level statements, in order */
    struct Importer *importer;      /* parse.c's state, for imports */
    int unit;                       /* this file in the importer */
} Parse;

/* grammar.y: parse P's text, appending statements to P->stmts; errors go
 * to diag_error.  Returns false when it stopped early (nesting too deep). */
bool parse_run(Parse *P);

/* parse.c: load, parse and attach the file an ST_IMPORT names, now, so
 * that messages come in the order of the files' lines. */
void parse_import(Parse *P, Stmt *s);

/* lexer.re: a printable description of the token at `loc` ("'z'", "end of
 * line", "end of file"), for syntax-error messages. */
const char *lex_describe(Parse *P, int token, Loc loc);
/* The parser hit a syntax error with lookahead `token`: forget open ( and [
 * so that newlines end statements again, and remember a { being skipped. */
void lex_enter_recovery(Parse *P, int token);
/* The innermost open bracket, or NULL. */
const Bracket *lex_open_bracket(const Parse *P);

#endif
