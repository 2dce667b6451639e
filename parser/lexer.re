/* lexer.re - the re2c lexer of .ein files.
 *
 * Runs over the NUL-terminated text of one source file (the NUL at len is
 * the end; a NUL before it is an error like any stray byte).  Newlines are
 * statement terminators except where a statement obviously goes on: inside
 * ( ) and [ ], after a token that cannot end a statement (a binary
 * operator, ',', '=', '+=', ':', '->', ...), and before a line that starts
 * with `where`.  Blank and comment lines collapse into one NEWLINE, and a
 * NEWLINE is supplied before '}' and at the end of the file, so the grammar
 * sees every statement end with a separator.
 *
 * Lexical errors are reported here; the lexer then hands the parser a BAD
 * token, which the parser skips (without a second message) up to the end
 * of the statement. */
#include "config.h"
#include "parser/parser_int.h"
#include "parser/grammar.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static Loc loc_at(const Parse *P, const char *b, const char *e)
{
    return (Loc){P->file, (int32_t)(b - P->text), (int32_t)(e - P->text)};
}

/* Tokens after which a newline cannot end the statement. */
static bool continues(int t)
{
    switch (t) {
    case '+': case '-': case '*': case '/': case '%': case '<': case '>':
    case '=': case ',': case ':': case '!': case '(': case '[':
    case TOK_PLUSEQ: case TOK_MAXEQ: case TOK_MINEQ: case TOK_STAREQ: case TOK_EQ: case TOK_NE:
    case TOK_LE: case TOK_GE: case TOK_AND: case TOK_OR: case TOK_ARROW:
    case TOK_DOTDOT: case TOK_WHERE: case TOK_IN: case TOK_ELVIS:
        return true;
    default:
        return false;
    }
}

/* Tokens after which a newline adds nothing: a statement just ended, or a
 * def body just opened. */
static bool separated(int t)
{
    return t == TOK_NEWLINE || t == ';' || t == '{';
}

/* Inside ( ) or [ ] newlines are not tokens. */
static bool in_parens(const Parse *P)
{
    return P->nnest > 0 && P->nest[P->nnest - 1].ch != '{';
}

static bool push_bracket(Parse *P, char ch, Loc loc)
{
    if (P->nnest == PARSE_MAX_NEST) {
        diag_error(loc, "brackets nested too deeply (more than %d levels)",
                   PARSE_MAX_NEST);
        P->fatal = true;
        return false;
    }
    P->nest[P->nnest++] = (Bracket){ch, P->recovering, loc};
    return true;
}

/* A ')' or ']' closes the innermost bracket only when it matches it; a
 * stray one is left for the parser to report with the open bracket. */
static void close_bracket(Parse *P, char open)
{
    if (P->nnest > 0 && P->nest[P->nnest - 1].ch == open)
        P->nnest--;
}

/* The innermost open '{', or -1. */
static int open_brace(const Parse *P)
{
    for (int i = P->nnest - 1; i >= 0; i--)
        if (P->nest[i].ch == '{')
            return i;
    return -1;
}

/* The first token owed; a '}' closes its '{' only now, so that a syntax
 * error before it still sees the bracket open. */
static int take_pending(Parse *P, Loc *loc)
{
    int t = P->pending[0];
    *loc = P->pending_loc[0];
    P->npending--;
    memmove(P->pending, P->pending + 1, (size_t)P->npending * sizeof *P->pending);
    memmove(P->pending_loc, P->pending_loc + 1,
            (size_t)P->npending * sizeof *P->pending_loc);
    if (t == '}') {
        int k = open_brace(P);
        if (k >= 0)
            P->nnest = k;
    }
    return t;
}

/* Tokens the lexer hands out before reading on (a statement end it
 * supplies, a '}' it assumes). */
static void owe(Parse *P, int t, Loc loc)
{
    P->pending[P->npending] = t;
    P->pending_loc[P->npending++] = loc;
}

const Bracket *lex_open_bracket(const Parse *P)
{
    return P->nnest > 0 ? &P->nest[P->nnest - 1] : NULL;
}

void lex_enter_recovery(Parse *P, int token)
{
    /* A '{' the parser is about to skip must not be taken for a def body. */
    if (token == '{' && P->nnest > 0 && P->nest[P->nnest - 1].ch == '{')
        P->nest[P->nnest - 1].orphan = true;
    int keep = 0;
    for (int i = 0; i < P->nnest; i++)
        if (P->nest[i].ch == '{')
            P->nest[keep++] = P->nest[i];
    P->nnest = keep;
    P->recovering = true;
}

/* Skip blanks, comments and empty lines after a newline.  Stops at the
 * first byte of the next token (or at a NUL, which the main loop sorts
 * out). */
static const char *skip_blank_lines(const char *p)
{
    for (;;) {
        switch (*p) {
        case ' ': case '\t': case '\r': case '\f': case '\v': case '\n':
            p++;
            break;
        case '#':
            while (*p && *p != '\n')
                p++;
            break;
        default:
            return p;
        }
    }
}

static bool starts_where(const char *p)
{
    if (strncmp(p, "where", 5) != 0)
        return false;
    char c = p[5];
    return !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
             (c >= '0' && c <= '9') || c == '_');
}

/* Quote a short token text for a message, cutting long ones. */
static const char *quote(Parse *P, Loc loc)
{
    int n = loc.end - loc.begin;
    const char *s = P->text + loc.begin;
    if (n > 32)
        return arena_printf(P->arena, "'%.24s...'", s);
    return arena_printf(P->arena, "'%.*s'", n, s);
}

const char *lex_describe(Parse *P, int token, Loc loc)
{
    switch (token) {
    case TOK_YYEOF:
        return "end of file";
    case TOK_NEWLINE:
        /* Synthetic newlines sit on the '}' or the end they stand for. */
        if ((size_t)loc.begin >= P->len)
            return "end of file";
        if (P->text[loc.begin] == '}')
            return "'}'";
        return "end of line";
    case TOK_STRING:
        return "string";
    case TOK_LIBPATH:
        return "library path";
    default:
        return quote(P, loc);
    }
}

/* Lexical errors inside a statement the parser is skipping are not
 * reported: one error per statement, as for syntax errors. */
static void lex_error(Parse *P, Loc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void lex_error(Parse *P, Loc loc, const char *fmt, ...)
{
    if (P->recovering)
        return;
    va_list ap;
    va_start(ap, fmt);
    diag_vreport(DIAG_ERROR, loc, NULL, fmt, ap);
    va_end(ap);
}

/* A byte that is not part of any token. */
static void bad_char(Parse *P, const char *p, Loc loc)
{
    unsigned char c = (unsigned char)*p;
    if (c == 0)
        lex_error(P, loc, "null byte in input");
    else if (c >= 0x80)
        lex_error(P, loc, "non-ASCII character outside a comment or string");
    else if (c == '&' || c == '|')
        lex_error(P, loc, "invalid character '%c' (did you mean '%c%c'?)", c, c, c);
    else if (c == '\'')
        lex_error(P, loc, "invalid character \"'\" (strings are written in "
                  "double quotes)");
    else if (c == '.')
        lex_error(P, loc, "stray '.' (a real number needs digits after its "
                   "point, as in 1.0)");
    else if (c > ' ' && c < 127)
        lex_error(P, loc, "invalid character '%c'", c);
    else
        lex_error(P, loc, "invalid character '\\x%02x'", c);
}

/* int -> [0-9]+ ; values above INT64_MAX are an error. */
static int64_t int_value(Parse *P, const char *b, const char *e)
{
    int64_t v = 0;
    for (const char *p = b; p < e; p++)
        if (!i64_mul(v, 10, &v) || !i64_add(v, *p - '0', &v)) {
            lex_error(P, loc_at(P, b, e), "integer literal is too large (the "
                       "largest is %lld)", (long long)INT64_MAX);
            return 0;
        }
    return v;
}

/* The text between the quotes, with \" and \\ undone; NULL after an
 * unknown escape. */
static const char *string_value(Parse *P, const char *b, const char *e)
{
    bool ok = true;
    char *s = arena_alloc(P->arena, (size_t)(e - b) + 1), *o = s;
    for (const char *p = b; p < e; p++) {
        if (*p != '\\') {
            *o++ = *p;
            continue;
        }
        p++;
        if (*p != '"' && *p != '\\') {
            if ((unsigned char)*p > ' ' && (unsigned char)*p < 127)
                lex_error(P, loc_at(P, p - 1, p + 1), "unknown escape sequence "
                           "'\\%c' (a string knows only \\\" and \\\\)", *p);
            else
                lex_error(P, loc_at(P, p - 1, p + 1), "unknown escape sequence "
                           "(a string knows only \\\" and \\\\)");
            ok = false;
        }
        *o++ = *p;
    }
    *o = 0;
    return ok ? s : NULL;
}

/* A keyword that only starts a top-level statement, found at the start
 * of a line inside a def body: most likely the def's '}' is missing.  Say
 * so and supply it, so that the rest of the file parses as top level. */
static int keyword(Parse *P, int t, Loc loc)
{
    const char *p = P->text + loc.begin;
    int k = P->nnest - 1;
    if (k < 0 || P->nest[k].ch != '{' || P->nest[k].orphan ||
        !(p == P->text || p[-1] == '\n'))
        return t;
    int line, col;
    src_line_col(P->nest[k].loc, &line, &col);
    lex_error(P, loc, "expected '}' (to close '{' at line %d) before '%.*s'",
              line, loc.end - loc.begin, p);
    Loc at = {loc.file, loc.begin, loc.begin};
    if (!separated(P->prev))
        owe(P, TOK_NEWLINE, at);
    owe(P, '}', at);
    owe(P, TOK_NEWLINE, at);
    owe(P, t, loc);
    return 0;
}

/*!re2c
    re2c:api = custom;
    re2c:api:style = free-form;
    re2c:define:YYCTYPE = "unsigned char";
    re2c:define:YYPEEK = "(unsigned char)*cur";
    re2c:define:YYSKIP = "++cur;";
    re2c:define:YYBACKUP = "mar = cur;";
    re2c:define:YYRESTORE = "cur = mar;";
    re2c:define:YYLESSTHAN = "cur >= lim";
    re2c:yyfill:enable = 0;
    re2c:eof = 0;

    id    = [a-zA-Z_][a-zA-Z0-9_]*;
    digit = [0-9];
    exp   = [eE] [+-]? digit+;
    real  = digit+ "." digit+ exp? | "." digit+ exp? | digit+ exp;
    blank = [ \t\r\f\v]+;
    strch = [^"\\\n\x00] | "\\" [^\n\x00];
*/

static int lex(Parse *P, EIN_STYPE *val, Loc *loc)
{
    const char *cur = P->cur, *mar = cur, *lim = P->text + P->len;
    (void)mar;
    for (;;) {
        const char *tok = cur;
#define TOKEN(t) do { *loc = loc_at(P, tok, cur); P->cur = cur; return (t); } while (0)
#define KEYWORD(t)                                                          \
        do {                                                                \
            *loc = loc_at(P, tok, cur);                                     \
            P->cur = cur;                                                   \
            int k_ = keyword(P, (t), *loc);                                 \
            return k_ ? k_ : take_pending(P, loc);                          \
        } while (0)
        /*!re2c
        $ {
            /* End the last statement before the end of the file. */
            *loc = loc_at(P, lim, lim);
            P->cur = cur;
            return separated(P->prev) || P->prev == TOK_YYEOF ? TOK_YYEOF
                                                                : TOK_NEWLINE;
        }
        blank            { continue; }
        "#" [^\n\x00]*   { continue; }
        "\n" {
            const char *next = skip_blank_lines(cur);
            bool more = continues(P->prev) || separated(P->prev) ||
                        in_parens(P) || starts_where(next);
            cur = next;
            if (more)
                continue;
            *loc = loc_at(P, tok, tok + 1);
            P->cur = cur;
            return TOK_NEWLINE;
        }

        "const"  { KEYWORD(TOK_CONST); }
        "input"  { KEYWORD(TOK_INPUT); }
        "weight" { KEYWORD(TOK_WEIGHT); }
        "output" { KEYWORD(TOK_OUTPUT); }
        "def"    { KEYWORD(TOK_DEF); }
        "import" { KEYWORD(TOK_IMPORT); }
        "model"  { KEYWORD(TOK_MODEL); }
        "where"  { TOKEN(TOK_WHERE); }
        "in"     { TOKEN(TOK_IN); }
        "inf"    { val->rval = INFINITY; TOKEN(TOK_REAL); }
        "nan"    { val->rval = NAN; TOKEN(TOK_REAL); }
        "?:"     { TOKEN(TOK_ELVIS); }
        "max="   { TOKEN(TOK_MAXEQ); }
        "min="   { TOKEN(TOK_MINEQ); }
        id {
            val->sym = sym_intern(tok, (size_t)(cur - tok));
            TOKEN(TOK_IDENT);
        }
        digit+ {
            val->ival = int_value(P, tok, cur);
            TOKEN(TOK_INT);
        }
        real {
            /* The pattern is a prefix of what strtod reads, so it stops
             * where the token does. */
            errno = 0;
            val->rval = strtod(tok, NULL);
            if (errno == ERANGE && isinf(val->rval))
                lex_error(P, loc_at(P, tok, cur), "number is too large");
            TOKEN(TOK_REAL);
        }
        "<" [^=>\n\x00 \t\r] [^>\n\x00 \t\r]* ">" {
            /* import <nn.ein>; anywhere else '<' is the operator */
            if (P->prev != TOK_IMPORT) {
                cur = tok + 1;
                TOKEN('<');
            }
            val->str = arena_printf(P->arena, "%.*s", (int)(cur - tok - 2), tok + 1);
            TOKEN(TOK_LIBPATH);
        }
        ["] strch* ["] {
            val->str = string_value(P, tok + 1, cur - 1);
            TOKEN(val->str ? TOK_STRING : TOK_BAD);
        }
        ["] strch* {
            /* the string stops at a newline, a NUL or the end of the input */
            if (cur < lim && *cur == 0)
                lex_error(P, loc_at(P, cur, cur + 1), "null byte in a string");
            else
                lex_error(P, loc_at(P, tok, tok + 1), "missing terminating '\"' "
                          "character");
            TOKEN(TOK_BAD);
        }

        "+=" { TOKEN(TOK_PLUSEQ); }
        "*=" { TOKEN(TOK_STAREQ); }
        "==" { TOKEN(TOK_EQ); }
        "!=" { TOKEN(TOK_NE); }
        "<=" { TOKEN(TOK_LE); }
        ">=" { TOKEN(TOK_GE); }
        "&&" { TOKEN(TOK_AND); }
        "||" { TOKEN(TOK_OR); }
        "->" { TOKEN(TOK_ARROW); }
        ".." { TOKEN(TOK_DOTDOT); }
        [-+*/%<>=!,:;] { TOKEN(*tok); }
        [([] {
            if (!push_bracket(P, *tok, loc_at(P, tok, cur))) {
                *loc = loc_at(P, tok, cur);
                P->cur = cur;
                return TOK_BAD;
            }
            TOKEN(*tok);
        }
        ")" { close_bracket(P, '('); TOKEN(')'); }
        "]" { close_bracket(P, '['); TOKEN(']'); }
        "{" {
            if (!push_bracket(P, '{', loc_at(P, tok, cur))) {
                *loc = loc_at(P, tok, cur);
                P->cur = cur;
                return TOK_BAD;
            }
            TOKEN('{');
        }
        "}" {
            int k = open_brace(P);
            if (k >= 0 && P->nest[k].orphan) {
                /* It closes a '{' thrown away in error recovery: an end of
                 * statement, not the end of a def. */
                P->nnest = k;
                if (separated(P->prev))
                    continue;
                TOKEN(TOK_NEWLINE);
            }
            if (!separated(P->prev)) {
                /* End the body's last statement first. */
                owe(P, '}', loc_at(P, tok, cur));
                TOKEN(TOK_NEWLINE);
            }
            if (k >= 0)
                P->nnest = k;
            TOKEN('}');
        }
        [\x80-\xff]+ {
            bad_char(P, tok, loc_at(P, tok, tok + 1));
            TOKEN(TOK_BAD);
        }
        * {
            bad_char(P, tok, loc_at(P, tok, cur));
            TOKEN(TOK_BAD);
        }
        */
#undef TOKEN
#undef KEYWORD
    }
}

int parse_lex(EIN_STYPE *val, Loc *loc, Parse *P)
{
    int t;
    if (P->fatal) {
        *loc = loc_at(P, P->text + P->len, P->text + P->len);
        t = TOK_YYEOF;
    } else if (P->npending) {
        t = take_pending(P, loc);
    } else {
        t = lex(P, val, loc);
    }
    P->prev = t;
    return t;
}
