/* st.c - safetensors reader and writer (see st.h).
 *
 * The reader holds the file in memory (read(2) or fread, no mmap, so it
 * works the same everywhere and the fuzzer can feed it bytes), but reads
 * only what the header names: the 8-byte length, then the header, which
 * it checks, then exactly the data up to the last tensor's end, so a
 * never-ending pipe costs what its header names, not all memory (a device
 * such as /dev/zero, a directory and a FIFO that no process writes are
 * refused before anything is read: st_open_read).  It checks, before
 * anything is handed out: the header length against the file size and
 * safetensors' 100 MB limit; the
 * header as JSON (our own small parser: the generated programs must build
 * with nothing but the compiler, so no JSON library); each entry's dtype,
 * shape and data_offsets against each other and against the data area;
 * that no two tensors overlap and no name appears twice.  Every message
 * names the file, and the tensor when there is one.
 *
 * The JSON parser is a pull parser over the header bytes: strings are
 * decoded into one pool allocated up front (a decoded string plus its NUL
 * is never longer than its quoted source, so header length + 1 bytes hold
 * them all and pointers into the pool stay valid). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__unix__) || defined(__APPLE__)
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#endif
#include "st.h" /* EMBED-SKIP */

#if defined(__GNUC__)
#  define ST_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#  define ST_PRINTF(f, a)
#endif

/* Nesting limit for values the reader skips (unknown keys): keeps the
 * recursion bounded on hostile input. */
#define ST_MAX_DEPTH 64

/* The largest header safetensors itself reads (the Rust crate's
 * MAX_HEADER_SIZE); a longer one is refused before it is read. */
#define ST_MAX_HEADER 100000000u

/* A data area whose size is not known before it is read (a pipe). */
#define ST_SIZE_UNKNOWN ((size_t)-1)

struct StFile {
    char *name;                 /* file name for messages */
    unsigned char *image;       /* the file, as far as it was read */
    size_t size;
    size_t data_off;            /* where the data area starts: 8 + header */
    char *pool;                 /* decoded header strings */
    StTensor *tensors;          /* header order */
    int ntensors;
    const StTensor **byname;    /* sorted by name, for st_find */
    int64_t *dims;              /* all shapes, back to back */
    const char **meta;          /* key, value, key, value, ... */
    int nmeta;
};

/* ---- small helpers ------------------------------------------------------ */

static const char *const st_dtype_names[ST_NDTYPES] = {
    "F32", "F16", "BF16", "F64", "I64", "I32", "I16", "I8",
    "U64", "U32", "U16", "U8", "BOOL", "F8_E4M3", "F8_E5M2"
};
static const unsigned char st_dtype_sizes[ST_NDTYPES] = {
    4, 2, 2, 8, 8, 4, 2, 1, 8, 4, 2, 1, 1, 1, 1
};

RT_API const char *st_dtype_name(StDtype t)
{
    return (int)t >= 0 && t < ST_NDTYPES ? st_dtype_names[t] : "?";
}

RT_API size_t st_dtype_size(StDtype t)
{
    return (int)t >= 0 && t < ST_NDTYPES ? st_dtype_sizes[t] : 0;
}

RT_API int st_dtype_parse(const char *s, StDtype *out)
{
    int i;
    for (i = 0; i < ST_NDTYPES; i++)
        if (strcmp(s, st_dtype_names[i]) == 0) {
            *out = (StDtype)i;
            return 0;
        }
    return -1;
}

/* Write "name: " and a formatted message into err; return code. */
static int st_vfail(char *err, size_t errlen, const char *name, int code,
                    const char *fmt, va_list ap)
{
    int n = 0;
    if (!err || errlen == 0)
        return code;
    if (name)
        n = snprintf(err, errlen, "%s: ", name);
    if (n < 0)
        n = 0;
    if ((size_t)n < errlen)
        vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
    return code;
}

static int st_fail(char *err, size_t errlen, const char *name, int code,
                   const char *fmt, ...) ST_PRINTF(5, 6);
static int st_fail(char *err, size_t errlen, const char *name, int code,
                   const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    st_vfail(err, errlen, name, code, fmt, ap);
    va_end(ap);
    return code;
}

/* A name as it appears in a message: control characters, quotes and
 * backslashes escaped, cut at about 100 bytes (at a UTF-8 boundary), so a
 * hostile name cannot garble the terminal or push the rest out. */
enum { ST_QLEN = 128 };
static const char *st_quote(char *buf, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    const unsigned char *p = (const unsigned char *)s;
    for (; *p; p++) {
        unsigned c = *p;
        if (o >= ST_QLEN - 8 && ((c & 0xC0) != 0x80 || o >= ST_QLEN - 5)) {
            memcpy(buf + o, "...", 3);
            o += 3;
            break;
        }
        if (c == '\'' || c == '\\') {
            buf[o++] = '\\';
            buf[o++] = (char)c;
        } else if (c < 0x20 || c == 0x7f) {
            buf[o++] = '\\';
            buf[o++] = 'x';
            buf[o++] = hex[c >> 4];
            buf[o++] = hex[c & 15];
        } else {
            buf[o++] = (char)c;
        }
    }
    buf[o] = 0;
    return buf;
}

/* "[64, 3, 3, 3]", cut with "...]" when long. */
enum { ST_SLEN = 128 };
static const char *st_fmt_shape(char *buf, int rank, const int64_t *shape)
{
    size_t o = 0;
    int i;
    buf[o++] = '[';
    for (i = 0; i < rank; i++) {
        char num[32];
        int n = snprintf(num, sizeof num, "%s%lld", i ? ", " : "",
                         (long long)shape[i]);
        if (o + (size_t)n + 5 >= ST_SLEN) {
            memcpy(buf + o, ", ...", 5);
            o += 5;
            break;
        }
        memcpy(buf + o, num, (size_t)n);
        o += (size_t)n;
    }
    buf[o++] = ']';
    buf[o] = 0;
    return buf;
}

static int st_host_little_endian(void)
{
    const uint16_t one = 1;
    unsigned char b;
    memcpy(&b, &one, 1);
    return b == 1;
}

/* Copy n bytes of elements of size esize, swapping bytes on a big-endian
 * host (the file is little-endian). */
static void st_copy_le(unsigned char *dst, const unsigned char *src, size_t n,
                       size_t esize)
{
    size_t i, k;
    if (esize <= 1 || st_host_little_endian()) {
        if (n)
            memcpy(dst, src, n);
        return;
    }
    for (i = 0; i + esize <= n; i += esize)
        for (k = 0; k < esize; k++)
            dst[i + k] = src[i + esize - 1 - k];
}

/* Number of elements of a shape; -1 if it overflows 64 bits. */
static int st_nelem(int rank, const int64_t *shape, uint64_t *out)
{
    uint64_t n = 1;
    int i, overflow = 0;
    for (i = 0; i < rank; i++) {
        uint64_t d = (uint64_t)shape[i];
        if (d == 0) {
            *out = 0;
            return 0;           /* zero elements, however big the rest */
        }
        if (n > UINT64_MAX / d)
            overflow = 1;
        else
            n *= d;
    }
    *out = n;
    return overflow ? -1 : 0;
}

/* Length of the valid UTF-8 sequence at p (RFC 3629: no overlong forms,
 * no surrogates, nothing above U+10FFFF), or 0. */
static int st_utf8_len(const unsigned char *p, const unsigned char *end)
{
    unsigned c = p[0];
    int n, i;
    unsigned lo = 0x80, hi = 0xBF;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        n = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else
        return 0;
    if (end - p < n)
        return 0;
    if (p[1] < lo || p[1] > hi)
        return 0;
    for (i = 2; i < n; i++)
        if (p[i] < 0x80 || p[i] > 0xBF)
            return 0;
    return n;
}

/* ---- JSON --------------------------------------------------------------- */

typedef struct StJson {
    const unsigned char *s, *p, *end;   /* text being parsed */
    size_t base;                        /* file offset of s, for messages */
    char *pool;                         /* decoded strings go here */
    size_t used, cap;
    const char *fname;
    char *err;
    size_t errlen;
    int status;                         /* ST_EFORMAT or ST_ENOMEM */
} StJson;

/* A syntax error at the current position. */
static int js_syntax(StJson *j, const char *fmt, ...) ST_PRINTF(2, 3);
static int js_syntax(StJson *j, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    j->status = ST_EFORMAT;
    st_fail(j->err, j->errlen, j->fname, ST_EFORMAT,
            "malformed header at byte %llu: %s",
            (unsigned long long)(j->base + (size_t)(j->p - j->s)), msg);
    return -1;
}

/* A well-formed header that breaks the safetensors schema. */
static int js_schema(StJson *j, const char *fmt, ...) ST_PRINTF(2, 3);
static int js_schema(StJson *j, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    j->status = ST_EFORMAT;
    st_vfail(j->err, j->errlen, j->fname, ST_EFORMAT, fmt, ap);
    va_end(ap);
    return -1;
}

static void js_ws(StJson *j)
{
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' ||
                             *j->p == '\n' || *j->p == '\r'))
        j->p++;
}

/* Next byte after white space, or -1 at the end. */
static int js_peek(StJson *j)
{
    js_ws(j);
    return j->p < j->end ? *j->p : -1;
}

/* What is at the current position, for "expected X, found Y". */
static const char *js_found(StJson *j, char *buf)
{
    int c = js_peek(j);
    if (c < 0)
        return "the end of the header";
    if (c >= 0x21 && c < 0x7f)
        snprintf(buf, 16, "'%c'", c);
    else
        snprintf(buf, 16, "byte 0x%02x", (unsigned)c);
    return buf;
}

static int js_expect(StJson *j, int c, const char *what)
{
    char buf[16];
    if (js_peek(j) != c)
        return js_syntax(j, "expected %s, found %s", what, js_found(j, buf));
    j->p++;
    return 0;
}

static int js_hex4(StJson *j, unsigned *out)
{
    unsigned v = 0;
    int i;
    for (i = 0; i < 4; i++) {
        int c = j->p < j->end ? *j->p : -1, d;
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if (c >= 'a' && c <= 'f')
            d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            d = c - 'A' + 10;
        else
            return js_syntax(j, "expected 4 hex digits after \\u");
        v = v * 16 + (unsigned)d;
        j->p++;
    }
    *out = v;
    return 0;
}

/* string -> '"' chars '"'; decoded, NUL-terminated, into the pool. */
static int js_string(StJson *j, const char **out)
{
    char *q;
    const unsigned char *open;
    if (js_peek(j) != '"') {
        char buf[16];
        return js_syntax(j, "expected a string, found %s", js_found(j, buf));
    }
    open = j->p++;
    q = j->pool + j->used;
    for (;;) {
        unsigned c;
        if (j->p >= j->end) {
            j->p = open;
            return js_syntax(j, "unterminated string");
        }
        c = *j->p;
        if (c == '"') {
            j->p++;
            break;
        }
        if (c < 0x20)
            return js_syntax(j, "control character 0x%02x in a string "
                             "(it must be escaped)", c);
        if (c == '\\') {
            unsigned u;
            j->p++;
            if (j->p >= j->end) {
                j->p = open;
                return js_syntax(j, "unterminated string");
            }
            c = *j->p++;
            switch (c) {
            case '"': case '\\': case '/': *q++ = (char)c; continue;
            case 'b': *q++ = '\b'; continue;
            case 'f': *q++ = '\f'; continue;
            case 'n': *q++ = '\n'; continue;
            case 'r': *q++ = '\r'; continue;
            case 't': *q++ = '\t'; continue;
            case 'u': break;
            default:
                j->p--;
                if (c >= 0x21 && c < 0x7f)
                    return js_syntax(j, "invalid escape '\\%c'", (int)c);
                return js_syntax(j, "invalid escape");
            }
            if (js_hex4(j, &u) < 0)
                return -1;
            if (u >= 0xDC00 && u <= 0xDFFF) {
                j->p -= 6;
                return js_syntax(j, "unpaired surrogate \\u%04X", u);
            }
            if (u >= 0xD800 && u <= 0xDBFF) {
                unsigned lo;
                if (j->end - j->p < 2 || j->p[0] != '\\' || j->p[1] != 'u') {
                    j->p -= 6;
                    return js_syntax(j, "unpaired surrogate \\u%04X", u);
                }
                j->p += 2;
                if (js_hex4(j, &lo) < 0)
                    return -1;
                if (lo < 0xDC00 || lo > 0xDFFF) {
                    j->p -= 12;
                    return js_syntax(j, "unpaired surrogate \\u%04X", u);
                }
                u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
            }
            if (u == 0) {
                j->p -= 6;
                return js_syntax(j, "\\u0000 in a string is not supported");
            }
            if (u < 0x80) {
                *q++ = (char)u;
            } else if (u < 0x800) {
                *q++ = (char)(0xC0 | (u >> 6));
                *q++ = (char)(0x80 | (u & 0x3F));
            } else if (u < 0x10000) {
                *q++ = (char)(0xE0 | (u >> 12));
                *q++ = (char)(0x80 | ((u >> 6) & 0x3F));
                *q++ = (char)(0x80 | (u & 0x3F));
            } else {
                *q++ = (char)(0xF0 | (u >> 18));
                *q++ = (char)(0x80 | ((u >> 12) & 0x3F));
                *q++ = (char)(0x80 | ((u >> 6) & 0x3F));
                *q++ = (char)(0x80 | (u & 0x3F));
            }
        } else if (c < 0x80) {
            *q++ = (char)c;
            j->p++;
        } else {
            int n = st_utf8_len(j->p, j->end);
            if (n == 0)
                return js_syntax(j, "invalid UTF-8 in a string");
            memcpy(q, j->p, (size_t)n);
            q += n;
            j->p += n;
        }
    }
    *q++ = 0;
    *out = j->pool + j->used;
    j->used = (size_t)(q - j->pool);
    return 0;
}

/* number -> '-'? int frac? exp?  Returns its span in *tok, *len. */
static int js_number(StJson *j, const unsigned char **tok, size_t *len)
{
    const unsigned char *p;
    js_ws(j);
    p = j->p;
    if (p < j->end && *p == '-')
        p++;
    if (p >= j->end || *p < '0' || *p > '9') {
        j->p = p;
        return js_syntax(j, "expected a digit");
    }
    if (*p == '0')
        p++;
    else
        while (p < j->end && *p >= '0' && *p <= '9')
            p++;
    if (p < j->end && *p == '.') {
        p++;
        if (p >= j->end || *p < '0' || *p > '9') {
            j->p = p;
            return js_syntax(j, "expected a digit after '.'");
        }
        while (p < j->end && *p >= '0' && *p <= '9')
            p++;
    }
    if (p < j->end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < j->end && (*p == '+' || *p == '-'))
            p++;
        if (p >= j->end || *p < '0' || *p > '9') {
            j->p = p;
            return js_syntax(j, "expected a digit in the exponent");
        }
        while (p < j->end && *p >= '0' && *p <= '9')
            p++;
    }
    *tok = j->p;
    *len = (size_t)(p - j->p);
    j->p = p;
    return 0;
}

enum { JS_UINT_OK, JS_UINT_NEGATIVE, JS_UINT_FRACTION, JS_UINT_TOO_LARGE };

/* Classify a number token as a non-negative integer that fits *out. */
static int js_uint_of(const unsigned char *t, size_t len, uint64_t max,
                      uint64_t *out)
{
    uint64_t v = 0;
    size_t i = 0;
    int neg = 0;
    if (t[0] == '-') {
        neg = 1;
        i = 1;
    }
    for (; i < len; i++) {
        unsigned d;
        if (t[i] < '0' || t[i] > '9')
            return JS_UINT_FRACTION;
        d = t[i] - '0';
        if (neg) {
            if (d)
                return JS_UINT_NEGATIVE;
            continue;
        }
        if (v > (max - d) / 10)
            return JS_UINT_TOO_LARGE;
        v = v * 10 + d;
    }
    *out = v;
    return JS_UINT_OK;
}

/* The literal true, false or null. */
static int js_literal(StJson *j)
{
    static const char *const words[] = { "true", "false", "null" };
    int i;
    for (i = 0; i < 3; i++) {
        size_t n = strlen(words[i]);
        if ((size_t)(j->end - j->p) >= n && memcmp(j->p, words[i], n) == 0) {
            j->p += n;
            return 0;
        }
    }
    return js_syntax(j, "expected a value");
}

/* value -> object | array | string | number | true | false | null;
 * checked and thrown away (its strings are decoded and forgotten). */
static int js_skip(StJson *j, int depth)
{
    int c = js_peek(j);
    const unsigned char *tok;
    size_t len;
    if (depth > ST_MAX_DEPTH)
        return js_syntax(j, "nested more than %d deep", ST_MAX_DEPTH);
    if (c == '{') {
        j->p++;
        if (js_peek(j) == '}') {
            j->p++;
            return 0;
        }
        for (;;) {
            const char *key;
            size_t mark = j->used;
            if (js_string(j, &key) < 0)
                return -1;
            j->used = mark;
            if (js_expect(j, ':', "':' after an object key") < 0 ||
                js_skip(j, depth + 1) < 0)
                return -1;
            c = js_peek(j);
            if (c == '}') {
                j->p++;
                return 0;
            }
            if (js_expect(j, ',', "',' or '}' in an object") < 0)
                return -1;
        }
    }
    if (c == '[') {
        j->p++;
        if (js_peek(j) == ']') {
            j->p++;
            return 0;
        }
        for (;;) {
            if (js_skip(j, depth + 1) < 0)
                return -1;
            c = js_peek(j);
            if (c == ']') {
                j->p++;
                return 0;
            }
            if (js_expect(j, ',', "',' or ']' in an array") < 0)
                return -1;
        }
    }
    if (c == '"') {
        const char *s;
        size_t mark = j->used;
        if (js_string(j, &s) < 0)
            return -1;
        j->used = mark;
        return 0;
    }
    if (c == '-' || (c >= '0' && c <= '9'))
        return js_number(j, &tok, &len);
    if (c < 0)
        return js_syntax(j, "expected a value, found the end of the header");
    return js_literal(j);
}

static int js_init(StJson *j, const char *fname, const unsigned char *text,
                   size_t len, size_t base, char *err, size_t errlen)
{
    memset(j, 0, sizeof *j);
    j->s = j->p = text;
    j->end = text + len;
    j->base = base;
    j->fname = fname;
    j->err = err;
    j->errlen = errlen;
    j->cap = len + 1;
    j->pool = (char *)malloc(j->cap);
    if (!j->pool) {
        j->status = ST_ENOMEM;
        st_fail(err, errlen, fname, ST_ENOMEM,
                "out of memory for a %llu-byte header",
                (unsigned long long)len);
        return -1;
    }
    return 0;
}

RT_API int st_json_check(const char *text, size_t len, char *err,
                         size_t errlen)
{
    StJson j;
    int rc;
    if (js_init(&j, "json", (const unsigned char *)text, len, 0, err,
                errlen) < 0)
        return j.status;
    rc = js_skip(&j, 0);
    if (rc == 0 && js_peek(&j) >= 0)
        rc = js_syntax(&j, "unexpected text after the value");
    free(j.pool);
    return rc < 0 ? j.status : ST_OK;
}

/* ---- the header --------------------------------------------------------- */

/* Growable arrays of the file being parsed. */
typedef struct StParse {
    StJson j;
    StFile *f;
    int tcap;
    size_t ndims, dcap;
    int mcap;
    size_t datasize;
} StParse;

static int ps_nomem(StParse *ps)
{
    ps->j.status = ST_ENOMEM;
    st_fail(ps->j.err, ps->j.errlen, ps->j.fname, ST_ENOMEM,
            "out of memory reading the header");
    return -1;
}

static int ps_push_dim(StParse *ps, int64_t d)
{
    if (ps->ndims == ps->dcap) {
        size_t cap = ps->dcap ? 2 * ps->dcap : 16;
        int64_t *nd = (int64_t *)realloc(ps->f->dims, cap * sizeof *nd);
        if (!nd)
            return ps_nomem(ps);
        ps->f->dims = nd;
        ps->dcap = cap;
    }
    ps->f->dims[ps->ndims++] = d;
    return 0;
}

/* An array of non-negative integers: shape (any length, each dim pushed)
 * or data_offsets (exactly two, into offs). */
static int ps_uint_array(StParse *ps, const char *tname, const char *key,
                         int *count, uint64_t *offs)
{
    StJson *j = &ps->j;
    char qn[ST_QLEN];
    int n = 0;
    int is_shape = offs == NULL;
    if (js_peek(j) != '[')
        return js_schema(j, "tensor '%s': %s: expected %s",
                         st_quote(qn, tname), key,
                         is_shape ? "an array of non-negative integers"
                                  : "[begin, end]");
    j->p++;
    if (js_peek(j) == ']')
        j->p++;
    else
        for (;;) {
            const unsigned char *tok;
            size_t len;
            uint64_t v = 0;
            int c = js_peek(j), k;
            if (c != '-' && !(c >= '0' && c <= '9')) {
                if (c == '"' || c == '{' || c == '[' || c == 't' ||
                    c == 'f' || c == 'n') {
                    if (js_skip(j, 1) < 0)  /* a syntax error wins */
                        return -1;
                    return js_schema(j, "tensor '%s': %s: expected %s",
                                     st_quote(qn, tname), key,
                                     is_shape ? "an array of non-negative "
                                                "integers" : "[begin, end]");
                }
                return js_skip(j, 1);       /* reports the syntax error */
            }
            if (js_number(j, &tok, &len) < 0)
                return -1;
            k = js_uint_of(tok, len, is_shape ? (uint64_t)INT64_MAX
                                              : UINT64_MAX, &v);
            if (k != JS_UINT_OK)
                return js_schema(j, "tensor '%s': %s: %.*s is %s",
                                 st_quote(qn, tname), key,
                                 (int)(len > 40 ? 40 : len), (const char *)tok,
                                 k == JS_UINT_NEGATIVE ? "negative"
                                 : k == JS_UINT_FRACTION ? "not an integer"
                                 : "too large");
            if (is_shape) {
                if (ps_push_dim(ps, (int64_t)v) < 0)
                    return -1;
            } else if (n < 2)
                offs[n] = v;
            n++;
            c = js_peek(j);
            if (c == ']') {
                j->p++;
                break;
            }
            if (js_expect(j, ',', "',' or ']' in an array") < 0)
                return -1;
        }
    if (!is_shape && n != 2)
        return js_schema(j, "tensor '%s': data_offsets: expected "
                         "[begin, end], found %d number%s",
                         st_quote(qn, tname), n, n == 1 ? "" : "s");
    *count = n;
    return 0;
}

/* entry -> '{' ("dtype": string | "shape": [ints] |
 *               "data_offsets": [int, int] | other: value) ... '}' */
static int ps_tensor(StParse *ps, const char *tname)
{
    StJson *j = &ps->j;
    StFile *f = ps->f;
    StTensor *t;
    char qn[ST_QLEN], qk[ST_QLEN];
    int have_dtype = 0, have_shape = 0, have_offs = 0;
    uint64_t offs[2] = { 0, 0 };
    uint64_t nbytes;

    if (f->ntensors == ps->tcap) {
        int cap = ps->tcap ? 2 * ps->tcap : 16;
        StTensor *nt = ps->tcap < (1 << 28)
            ? (StTensor *)realloc(f->tensors, (size_t)cap * sizeof *nt) : NULL;
        if (!nt)
            return ps_nomem(ps);
        f->tensors = nt;
        ps->tcap = cap;
    }
    t = &f->tensors[f->ntensors];
    memset(t, 0, sizeof *t);
    t->name = tname;

    if (js_peek(j) != '{') {
        if (js_skip(j, 1) < 0)
            return -1;
        return js_schema(j, "tensor '%s': expected an object with dtype, "
                         "shape and data_offsets", st_quote(qn, tname));
    }
    j->p++;
    if (js_peek(j) == '}')
        j->p++;
    else
        for (;;) {
            const char *key;
            if (js_string(j, &key) < 0 ||
                js_expect(j, ':', "':' after an object key") < 0)
                return -1;
            if ((strcmp(key, "dtype") == 0 && have_dtype) ||
                (strcmp(key, "shape") == 0 && have_shape) ||
                (strcmp(key, "data_offsets") == 0 && have_offs))
                return js_schema(j, "tensor '%s': duplicate key '%s'",
                                 st_quote(qn, tname), key);
            if (strcmp(key, "dtype") == 0) {
                const char *dt;
                StDtype d;
                if (js_peek(j) != '"') {
                    if (js_skip(j, 1) < 0)
                        return -1;
                    return js_schema(j, "tensor '%s': dtype: expected a "
                                     "string", st_quote(qn, tname));
                }
                if (js_string(j, &dt) < 0)
                    return -1;
                if (st_dtype_parse(dt, &d) < 0)
                    return js_schema(j, "tensor '%s': unknown dtype '%s'",
                                     st_quote(qn, tname), st_quote(qk, dt));
                t->dtype = d;
                have_dtype = 1;
            } else if (strcmp(key, "shape") == 0) {
                if (ps_uint_array(ps, tname, "shape", &t->rank, NULL) < 0)
                    return -1;
                have_shape = 1;
            } else if (strcmp(key, "data_offsets") == 0) {
                int n;
                if (ps_uint_array(ps, tname, "data_offsets", &n, offs) < 0)
                    return -1;
                have_offs = 1;
            } else if (js_skip(j, 1) < 0) {
                return -1;      /* unknown keys: ignored, as upstream */
            }
            if (js_peek(j) == '}') {
                j->p++;
                break;
            }
            if (js_expect(j, ',', "',' or '}' in an object") < 0)
                return -1;
        }
    if (!have_dtype || !have_shape || !have_offs)
        return js_schema(j, "tensor '%s': missing '%s'", st_quote(qn, tname),
                         !have_dtype ? "dtype"
                         : !have_shape ? "shape" : "data_offsets");

    /* The entry agrees with itself and with the data area?  Shapes are
     * checked through the dims just pushed (pointers are set at the end). */
    {
        const int64_t *shape =
            t->rank ? f->dims + (ps->ndims - (size_t)t->rank) : NULL;
        char qs[ST_SLEN];
        uint64_t esize = st_dtype_size(t->dtype);
        t->begin = offs[0];
        t->end = offs[1];
        if (st_nelem(t->rank, shape, &t->nelem) < 0 ||
            t->nelem > UINT64_MAX / esize)
            return js_schema(j, "tensor '%s': shape %s is too large",
                             st_quote(qn, tname),
                             st_fmt_shape(qs, t->rank, shape));
        nbytes = t->nelem * esize;
        if (t->begin > t->end)
            return js_schema(j, "tensor '%s': data_offsets [%llu, %llu] end "
                             "before they begin", st_quote(qn, tname),
                             (unsigned long long)t->begin,
                             (unsigned long long)t->end);
        if (t->end - t->begin != nbytes)
            return js_schema(j, "tensor '%s': shape %s of %s is %llu bytes, "
                             "but data_offsets [%llu, %llu] hold %llu",
                             st_quote(qn, tname),
                             st_fmt_shape(qs, t->rank, shape),
                             st_dtype_name(t->dtype),
                             (unsigned long long)nbytes,
                             (unsigned long long)t->begin,
                             (unsigned long long)t->end,
                             (unsigned long long)(t->end - t->begin));
        if (t->end > ps->datasize)
            return js_schema(j, "tensor '%s': data_offsets [%llu, %llu] reach "
                             "past the end of the data (%llu bytes; "
                             "truncated file?)", st_quote(qn, tname),
                             (unsigned long long)t->begin,
                             (unsigned long long)t->end,
                             (unsigned long long)ps->datasize);
        t->nbytes = (size_t)nbytes;
    }
    f->ntensors++;
    return 0;
}

/* metadata -> '{' (string ':' string) ... '}' */
static int ps_metadata(StParse *ps)
{
    StJson *j = &ps->j;
    StFile *f = ps->f;
    char qk[ST_QLEN];
    if (js_peek(j) != '{') {
        if (js_skip(j, 1) < 0)
            return -1;
        return js_schema(j, "__metadata__: expected an object of strings");
    }
    j->p++;
    if (js_peek(j) == '}') {
        j->p++;
        return 0;
    }
    for (;;) {
        const char *key, *val;
        int i;
        if (js_string(j, &key) < 0 ||
            js_expect(j, ':', "':' after an object key") < 0)
            return -1;
        if (js_peek(j) != '"') {
            if (js_skip(j, 1) < 0)
                return -1;
            return js_schema(j, "__metadata__: value of '%s' is not a string",
                             st_quote(qk, key));
        }
        if (js_string(j, &val) < 0)
            return -1;
        for (i = 0; i < f->nmeta; i++)
            if (strcmp(f->meta[2 * i], key) == 0)
                return js_schema(j, "__metadata__: duplicate key '%s'",
                                 st_quote(qk, key));
        if (f->nmeta == ps->mcap) {
            int cap = ps->mcap ? 2 * ps->mcap : 8;
            const char **nm = ps->mcap < (1 << 28)
                ? (const char **)realloc((void *)f->meta,
                                         (size_t)cap * 2 * sizeof *nm)
                : NULL;
            if (!nm)
                return ps_nomem(ps);
            f->meta = nm;
            ps->mcap = cap;
        }
        f->meta[2 * f->nmeta] = key;
        f->meta[2 * f->nmeta + 1] = val;
        f->nmeta++;
        if (js_peek(j) == '}') {
            j->p++;
            return 0;
        }
        if (js_expect(j, ',', "',' or '}' in an object") < 0)
            return -1;
    }
}

static int st_cmp_name(const void *a, const void *b)
{
    const StTensor *x = *(const StTensor *const *)a;
    const StTensor *y = *(const StTensor *const *)b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x < y ? -1 : x > y);
}

static int st_cmp_begin(const void *a, const void *b)
{
    const StTensor *x = *(const StTensor *const *)a;
    const StTensor *y = *(const StTensor *const *)b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end)
        return x->end < y->end ? -1 : 1;
    return x < y ? -1 : x > y;
}

/* Names unique, ranges disjoint; builds the by-name index. */
static int ps_finish(StParse *ps)
{
    StFile *f = ps->f;
    const StTensor **v;
    const StTensor *last = NULL;
    char qa[ST_QLEN], qb[ST_QLEN];
    size_t d = 0;
    int i, n = f->ntensors;
    const unsigned char *data = f->image + f->data_off;

    for (i = 0; i < n; i++) {
        StTensor *t = &f->tensors[i];
        t->shape = f->dims ? f->dims + d : NULL;
        d += (size_t)t->rank;
        t->data = data + t->begin;
    }
    v = (const StTensor **)malloc((n > 0 ? (size_t)n : 1) * sizeof *v);
    if (!v)
        return ps_nomem(ps);
    f->byname = v;

    for (i = 0; i < n; i++)
        v[i] = &f->tensors[i];
    qsort((void *)v, (size_t)n, sizeof *v, st_cmp_begin);
    for (i = 0; i < n; i++) {
        if (v[i]->begin == v[i]->end)
            continue;           /* empty tensors take no room */
        if (last && v[i]->begin < last->end)
            return js_schema(&ps->j, "tensors '%s' [%llu, %llu] and '%s' "
                             "[%llu, %llu] overlap",
                             st_quote(qa, last->name),
                             (unsigned long long)last->begin,
                             (unsigned long long)last->end,
                             st_quote(qb, v[i]->name),
                             (unsigned long long)v[i]->begin,
                             (unsigned long long)v[i]->end);
        if (!last || v[i]->end > last->end)
            last = v[i];
    }

    qsort((void *)v, (size_t)n, sizeof *v, st_cmp_name);
    for (i = 1; i < n; i++)
        if (strcmp(v[i - 1]->name, v[i]->name) == 0)
            return js_schema(&ps->j, "duplicate tensor '%s'",
                             st_quote(qa, v[i]->name));
    return 0;
}

/* The header (f->image[8 .. 8 + hlen)) before a data area of `datasize`
 * bytes (ST_SIZE_UNKNOWN: not known yet; st_open checks the offsets
 * against what it reads). */
static int st_parse_header(StFile *f, uint64_t hlen, size_t datasize, char *err,
                           size_t errlen)
{
    StParse ps;
    StJson *j = &ps.j;
    int have_meta = 0, rc = 0;

    memset(&ps, 0, sizeof ps);
    ps.f = f;
    ps.datasize = datasize;
    f->data_off = 8 + (size_t)hlen;
    if (js_init(j, f->name, f->image + 8, (size_t)hlen, 8, err, errlen) < 0)
        return j->status;
    f->pool = j->pool;

    /* header -> '{' (name ':' (entry | metadata)) ... '}' spaces */
    if (js_expect(j, '{', "'{' to open the header object") < 0)
        return j->status;
    if (js_peek(j) == '}')
        j->p++;
    else
        for (;;) {
            const char *key;
            if (js_string(j, &key) < 0 ||
                js_expect(j, ':', "':' after an object key") < 0)
                return j->status;
            if (strcmp(key, "__metadata__") == 0) {
                if (have_meta) {
                    js_schema(j, "duplicate __metadata__");
                    return j->status;
                }
                have_meta = 1;
                rc = ps_metadata(&ps);
            } else {
                rc = ps_tensor(&ps, key);
            }
            if (rc < 0)
                return j->status;
            if (js_peek(j) == '}') {
                j->p++;
                break;
            }
            if (js_expect(j, ',', "',' or '}' in the header object") < 0)
                return j->status;
        }
    if (js_peek(j) >= 0) {
        js_syntax(j, "unexpected text after the header object");
        return j->status;
    }
    if (ps_finish(&ps) < 0)
        return j->status;
    return ST_OK;
}

/* The header length field; `avail` bytes follow it (ST_SIZE_UNKNOWN: not
 * known). */
static int st_check_hlen(const char *name, uint64_t hlen, size_t avail, char *err,
                         size_t errlen)
{
    if (hlen > ST_MAX_HEADER)
        return st_fail(err, errlen, name, ST_EFORMAT,
                       "header length %llu is more than the %u bytes "
                       "safetensors allows (not a safetensors file?)",
                       (unsigned long long)hlen, ST_MAX_HEADER);
    if (avail != ST_SIZE_UNKNOWN && hlen > avail)
        return st_fail(err, errlen, name, ST_EFORMAT,
                       "header length %llu exceeds the %llu bytes after the "
                       "length field (truncated file?)",
                       (unsigned long long)hlen, (unsigned long long)avail);
    return ST_OK;
}

static uint64_t st_get_len(const unsigned char *p)
{
    uint64_t v = 0;
    int i;
    for (i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static int st_too_short(const char *name, size_t size, char *err, size_t errlen)
{
    return st_fail(err, errlen, name, ST_EFORMAT,
                   "file is %llu bytes, too short for a safetensors "
                   "header (truncated?)", (unsigned long long)size);
}

/* file -> length:u64le header:JSON-object data, all in f->image */
static int st_parse(StFile *f, char *err, size_t errlen)
{
    uint64_t hlen;
    int rc;
    if (f->size < 8)
        return st_too_short(f->name, f->size, err, errlen);
    hlen = st_get_len(f->image);
    if ((rc = st_check_hlen(f->name, hlen, f->size - 8, err, errlen)) != ST_OK)
        return rc;
    return st_parse_header(f, hlen, f->size - 8 - (size_t)hlen, err, errlen);
}

/* ---- opening and looking up -------------------------------------------- */

static StFile *st_new(const char *name)
{
    StFile *f = (StFile *)calloc(1, sizeof *f);
    size_t n = strlen(name) + 1;
    if (!f)
        return NULL;
    f->name = (char *)malloc(n);
    if (!f->name) {
        free(f);
        return NULL;
    }
    memcpy(f->name, name, n);
    return f;
}

static int st_finish_open(StFile *f, StFile **out, char *err, size_t errlen)
{
    int rc = st_parse(f, err, errlen);
    if (rc != ST_OK) {
        st_close(f);
        return rc;
    }
    *out = f;
    return ST_OK;
}

/* ---- what may be opened --------------------------------------------------
 * fopen(3) of a FIFO blocks until the other side opens it, forever when
 * no one does, and a device such as /dev/zero never ends.  So a file to
 * read is opened with open(2) and O_NONBLOCK, which returns at once even
 * for a FIFO, and fstat says what it is: a regular file is read; a FIFO
 * (or pipe) is read when a process writes it, which a non-blocking read
 * of one byte tells (no writer: end of file at once; a writer: EAGAIN or
 * the byte), and the reader's bounds make a pipe that never ends cost
 * what the header names; anything else (a directory, a device) is
 * refused.  A file to write may be a FIFO or a device (/dev/null) but not
 * a FIFO that no process reads: opening one for writing with O_NONBLOCK
 * fails with ENXIO.  (The write check comes just before fopen, so a file
 * replaced in between escapes it.)  Where there is no POSIX, fopen it is,
 * and nothing is checked. */

#if defined(O_NONBLOCK) && defined(S_ISREG)
#define ST_POSIX 1
static const char *st_file_kind(mode_t m)
{
    return S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a FIFO"
         : S_ISCHR(m) ? "a character device" : S_ISBLK(m) ? "a block device"
         : "not a regular file";
}
#endif

/* Where a file's bytes come from: a descriptor on POSIX (read(2); fdopen
 * is not C99), a stdio stream elsewhere. */
typedef struct StSrc {
    int fd;
    FILE *fp;
    int first;                  /* a byte already read (a FIFO's probe), or -1 */
    size_t size;                /* what a regular file holds, or ST_SIZE_UNKNOWN */
} StSrc;

/* path opened for reading, as said above. */
static int st_open_read(const char *path, StSrc *src, char *err, size_t errlen)
{
#ifdef ST_POSIX
    struct stat st;
    int fd = open(path, O_RDONLY | O_NONBLOCK), flags;
    src->fd = -1;
    src->fp = NULL;
    src->first = -1;
    src->size = ST_SIZE_UNKNOWN;
    if (fd < 0)
        return st_fail(err, errlen, path, ST_EIO, "cannot open: %s", strerror(errno));
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return st_fail(err, errlen, path, ST_EIO, "cannot open: %s", strerror(e));
    }
    if (S_ISFIFO(st.st_mode)) {
        unsigned char c;
        ssize_t n;
        do
            n = read(fd, &c, 1);
        while (n < 0 && errno == EINTR);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
            int e = errno;
            close(fd);
            return n == 0 ? st_fail(err, errlen, path, ST_EIO, "cannot read: it is a "
                                    "FIFO that no process writes")
                          : st_fail(err, errlen, path, ST_EIO, "read error: %s",
                                    strerror(e));
        }
        if (n == 1)
            src->first = c;
    } else if (!S_ISREG(st.st_mode)) {
        close(fd);
        return st_fail(err, errlen, path, ST_EIO, "cannot read: it is %s, not a "
                       "regular file", st_file_kind(st.st_mode));
    } else if (st.st_size > 0 && (unsigned long long)st.st_size < (size_t)-1) {
        src->size = (size_t)st.st_size;
    }
    flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0) {
        int e = errno;
        close(fd);
        return st_fail(err, errlen, path, ST_EIO, "cannot open: %s", strerror(e));
    }
    src->fd = fd;
#else
    src->fd = -1;
    src->first = -1;
    src->size = ST_SIZE_UNKNOWN;
    if (!(src->fp = fopen(path, "rb")))
        return st_fail(err, errlen, path, ST_EIO, "cannot open: %s", strerror(errno));
    /* the size, when the file can tell it: a pipe cannot seek, a device
     * says 0 */
    if (fseek(src->fp, 0, SEEK_END) == 0) {
        long e = ftell(src->fp);
        if (e > 0 && (unsigned long)e < (size_t)-1)
            src->size = (size_t)e;
        if (fseek(src->fp, 0, SEEK_SET) != 0) {
            fclose(src->fp);
            return st_fail(err, errlen, path, ST_EIO, "cannot seek: %s", strerror(errno));
        }
    }
    clearerr(src->fp);
#endif
    return ST_OK;
}

/* Up to n bytes into buf, fewer only at the end of the file or on an
 * error (*failed). */
static size_t st_src_read(StSrc *src, unsigned char *buf, size_t n, int *failed)
{
    size_t got = 0;
    *failed = 0;
    if (n && src->first >= 0) {
        buf[got++] = (unsigned char)src->first;
        src->first = -1;
    }
#ifdef ST_POSIX
    while (got < n) {
        size_t ask = n - got > ((size_t)1 << 30) ? (size_t)1 << 30 : n - got;
        ssize_t r = read(src->fd, buf + got, ask);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            *failed = r < 0;
            break;
        }
        got += (size_t)r;
    }
#else
    got += fread(buf + got, 1, n - got, src->fp);
    *failed = ferror(src->fp) != 0;
#endif
    return got;
}

static void st_src_close(StSrc *src)
{
#ifdef ST_POSIX
    close(src->fd);
#else
    fclose(src->fp);
#endif
}

static int st_check_writable(const char *path, char *err, size_t errlen)
{
#ifdef ST_POSIX
    struct stat st;
    int fd;
    if (stat(path, &st) != 0 || S_ISREG(st.st_mode))
        return ST_OK;
    fd = open(path, O_WRONLY | O_NONBLOCK);
    if (fd >= 0)
        close(fd);
    else if (errno == ENXIO)
        return st_fail(err, errlen, path, ST_EIO, "cannot write: it is %s that no "
                       "process reads", st_file_kind(st.st_mode));
#else
    (void)path; (void)err; (void)errlen;
#endif
    return ST_OK;
}

RT_API int st_open_memory(const char *name, const void *bytes, size_t size,
                          StFile **out, char *err, size_t errlen)
{
    StFile *f;
    *out = NULL;
    if (!name)
        name = "<memory>";
    f = st_new(name);
    if (!f || !(f->image = (unsigned char *)malloc(size ? size : 1))) {
        st_close(f);
        return st_fail(err, errlen, name, ST_ENOMEM,
                       "out of memory for %llu bytes",
                       (unsigned long long)size);
    }
    if (size)
        memcpy(f->image, bytes, size);
    f->size = size;
    return st_finish_open(f, out, err, errlen);
}

/* Read `want` more bytes of fp into f->image at f->size, growing the
 * buffer as the bytes come (never by more than what was read so far, so a
 * short stream costs what it holds, not what its header claims).  Returns
 * ST_OK with f->size advanced by what was read (less at the end of the
 * file), or an error. */
static int st_read_more(StSrc *src, StFile *f, size_t *cap, size_t want, char *err,
                        size_t errlen)
{
    size_t goal = f->size + want;
    while (f->size < goal) {
        size_t room, got;
        int failed;
        if (f->size == *cap) {
            size_t ncap = *cap < 4096 ? 4096 : *cap <= ((size_t)-1) / 2 ? 2 * *cap : 0;
            unsigned char *ni;
            if (ncap > goal || ncap == 0)
                ncap = goal;
            ni = (unsigned char *)realloc(f->image, ncap);
            if (!ni)
                return st_fail(err, errlen, f->name, ST_ENOMEM,
                               "out of memory for %llu bytes",
                               (unsigned long long)ncap);
            f->image = ni;
            *cap = ncap;
        }
        room = (goal < *cap ? goal : *cap) - f->size;
        got = st_src_read(src, f->image + f->size, room, &failed);
        f->size += got;
        if (got < room) {
            if (failed)
                return st_fail(err, errlen, f->name, ST_EIO, "read error: %s",
                               strerror(errno));
            break;              /* end of file */
        }
    }
    return ST_OK;
}

static uint64_t last_end(const StFile *f)
{
    uint64_t e = 0;
    int i;
    for (i = 0; i < f->ntensors; i++)
        if (f->tensors[i].end > e)
            e = f->tensors[i].end;
    return e;
}

/* Read and check a file: the length field, the header (checked before
 * any data is read), then exactly the bytes up to the end of the last
 * tensor. */
static int st_read_file(StSrc *src, StFile *f, char *err, size_t errlen)
{
    /* The size, when the file can tell it (a regular file), is checked
     * against the header as st_open_memory does. */
    size_t cap = 0, hint = src->size, need = 0;
    uint64_t hlen;
    int rc, i;

    if ((rc = st_read_more(src, f, &cap, 8, err, errlen)) != ST_OK)
        return rc;
    if (f->size < 8)
        return st_too_short(f->name, f->size, err, errlen);
    if (hint != ST_SIZE_UNKNOWN && hint < 8)
        hint = ST_SIZE_UNKNOWN; /* it grew: a size that lies is no size */
    hlen = st_get_len(f->image);
    rc = st_check_hlen(f->name, hlen, hint == ST_SIZE_UNKNOWN ? hint : hint - 8, err,
                       errlen);
    if (rc != ST_OK)
        return rc;
    if ((rc = st_read_more(src, f, &cap, (size_t)hlen, err, errlen)) != ST_OK)
        return rc;
    if (f->size < 8 + hlen)
        return st_check_hlen(f->name, hlen, f->size - 8, err, errlen);
    rc = st_parse_header(f, hlen,
                         hint == ST_SIZE_UNKNOWN || hint < 8 + hlen
                             ? ST_SIZE_UNKNOWN : hint - 8 - (size_t)hlen,
                         err, errlen);
    if (rc != ST_OK)
        return rc;

    /* the data the offsets name, and not a byte more */
    need = last_end(f) > (size_t)-1 ? (size_t)-1 : (size_t)last_end(f);
    if (need > (size_t)-1 - f->size)
        need = (size_t)-1 - f->size;   /* more than memory: reads to the end */
    if ((rc = st_read_more(src, f, &cap, need, err, errlen)) != ST_OK)
        return rc;
    if (f->size - f->data_off < need || (need && last_end(f) > f->size - f->data_off)) {
        const StTensor *last = NULL;
        char qn[ST_QLEN];
        for (i = 0; i < f->ntensors; i++)
            if (f->tensors[i].end > f->size - f->data_off &&
                (!last || f->tensors[i].end > last->end))
                last = &f->tensors[i];
        return st_fail(err, errlen, f->name, ST_EFORMAT,
                       "tensor '%s': data_offsets [%llu, %llu] reach past the "
                       "end of the data (%llu bytes; truncated file?)",
                       st_quote(qn, last->name), (unsigned long long)last->begin,
                       (unsigned long long)last->end,
                       (unsigned long long)(f->size - f->data_off));
    }
    /* the buffer moved as it grew */
    for (i = 0; i < f->ntensors; i++)
        f->tensors[i].data = f->image + f->data_off + f->tensors[i].begin;
    return ST_OK;
}

RT_API int st_open(const char *path, StFile **out, char *err, size_t errlen)
{
    StSrc src;
    StFile *f;
    int rc;

    *out = NULL;
    if ((rc = st_open_read(path, &src, err, errlen)) != ST_OK)
        return rc;
    f = st_new(path);
    if (!f) {
        st_src_close(&src);
        return st_fail(err, errlen, path, ST_ENOMEM, "out of memory");
    }
    rc = st_read_file(&src, f, err, errlen);
    st_src_close(&src);
    if (rc != ST_OK) {
        st_close(f);
        return rc;
    }
    *out = f;
    return ST_OK;
}

RT_API void st_close(StFile *f)
{
    if (!f)
        return;
    free(f->name);
    free(f->image);
    free(f->pool);
    free(f->tensors);
    free((void *)f->byname);
    free(f->dims);
    free((void *)f->meta);
    free(f);
}

RT_API const char *st_name(const StFile *f) { return f->name; }
RT_API int st_count(const StFile *f) { return f->ntensors; }
RT_API int st_metadata_count(const StFile *f) { return f->nmeta; }

RT_API const StTensor *st_tensor(const StFile *f, int i)
{
    return i >= 0 && i < f->ntensors ? &f->tensors[i] : NULL;
}

RT_API void st_metadata_at(const StFile *f, int i, const char **key,
                           const char **value)
{
    *key = *value = NULL;
    if (i >= 0 && i < f->nmeta) {
        *key = f->meta[2 * i];
        *value = f->meta[2 * i + 1];
    }
}

RT_API const char *st_metadata(const StFile *f, const char *key)
{
    int i;
    for (i = 0; i < f->nmeta; i++)
        if (strcmp(f->meta[2 * i], key) == 0)
            return f->meta[2 * i + 1];
    return NULL;
}

RT_API const StTensor *st_find(const StFile *f, const char *name)
{
    int lo = 0, hi = f->ntensors;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        int c = strcmp(f->byname[mid]->name, name);
        if (c == 0)
            return f->byname[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

RT_API int st_get(const StFile *f, const char *name, StDtype dtype, int rank,
                  const int64_t *shape, const StTensor **out,
                  char *err, size_t errlen)
{
    const StTensor *t = st_find(f, name);
    char qn[ST_QLEN], s1[ST_SLEN], s2[ST_SLEN];
    int i, same = 1;
    if (out)
        *out = NULL;
    if (!t)
        return st_fail(err, errlen, f->name, ST_ENOTFOUND,
                       "tensor '%s' not found", st_quote(qn, name));
    if (t->dtype != dtype)
        return st_fail(err, errlen, f->name, ST_EMISMATCH,
                       "tensor '%s': dtype %s, expected %s",
                       st_quote(qn, name), st_dtype_name(t->dtype),
                       st_dtype_name(dtype));
    if (t->rank != rank)
        same = 0;
    for (i = 0; same && i < rank; i++)
        if (t->shape[i] != shape[i])
            same = 0;
    if (!same)
        return st_fail(err, errlen, f->name, ST_EMISMATCH,
                       "tensor '%s': shape %s, expected %s",
                       st_quote(qn, name), st_fmt_shape(s1, t->rank, t->shape),
                       st_fmt_shape(s2, rank, shape));
    if (out)
        *out = t;
    return ST_OK;
}

RT_API void st_copy(const StTensor *t, void *dst)
{
    st_copy_le((unsigned char *)dst, t->data, t->nbytes,
               st_dtype_size(t->dtype));
}

RT_API int st_read(const StFile *f, const char *name, StDtype dtype, int rank,
                   const int64_t *shape, void *dst, size_t dst_bytes,
                   char *err, size_t errlen)
{
    const StTensor *t;
    char qn[ST_QLEN];
    int rc = st_get(f, name, dtype, rank, shape, &t, err, errlen);
    if (rc != ST_OK)
        return rc;
    if (t->nbytes != dst_bytes)
        return st_fail(err, errlen, f->name, ST_EINVAL,
                       "tensor '%s': %llu bytes, but the buffer holds %llu",
                       st_quote(qn, name), (unsigned long long)t->nbytes,
                       (unsigned long long)dst_bytes);
    st_copy(t, dst);
    return ST_OK;
}

/* ---- writing ------------------------------------------------------------ */

typedef struct StBuf {
    char *p;
    size_t len, cap;
    int oom;
} StBuf;

static void sb_put(StBuf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->cap - b->len < n + 1) {
        size_t cap = b->cap ? b->cap : 256;
        char *np;
        while (cap - b->len < n + 1) {
            if (cap > ((size_t)-1) / 2) {
                b->oom = 1;
                return;
            }
            cap *= 2;
        }
        np = (char *)realloc(b->p, cap);
        if (!np) {
            b->oom = 1;
            return;
        }
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}

static void sb_puts(StBuf *b, const char *s) { sb_put(b, s, strlen(s)); }

static void sb_u64(StBuf *b, uint64_t v)
{
    char num[24];
    int n = snprintf(num, sizeof num, "%llu", (unsigned long long)v);
    sb_put(b, num, (size_t)n);
}

/* A JSON string literal: '"', '\\' and control characters escaped, the
 * rest (valid UTF-8, checked by the caller) as it is. */
static void sb_json_string(StBuf *b, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    sb_put(b, "\"", 1);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            char e[2];
            e[0] = '\\';
            e[1] = (char)c;
            sb_put(b, e, 2);
        } else if (c < 0x20) {
            char e[6];
            e[0] = '\\';
            e[1] = 'u';
            e[2] = '0';
            e[3] = '0';
            e[4] = hex[c >> 4];
            e[5] = hex[c & 15];
            sb_put(b, e, 6);
        } else {
            sb_put(b, (const char *)&c, 1);
        }
    }
    sb_put(b, "\"", 1);
}

static int st_valid_utf8(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    const unsigned char *end = p + strlen(s);
    while (p < end) {
        int n = st_utf8_len(p, end);
        if (n == 0)
            return 0;
        p += n;
    }
    return 1;
}

static int st_cmp_out(const void *a, const void *b)
{
    const StOut *x = *(const StOut *const *)a;
    const StOut *y = *(const StOut *const *)b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x < y ? -1 : x > y);
}

/* Check the tensors, choose their order, and build the header (padded);
 * *order gets the tensors in data order (caller frees). */
static int st_header(const char *what, const StOut *ts, int n,
                     const char *const *meta, int nmeta, int flags, StBuf *h,
                     const StOut ***order, uint64_t *datasize, char *err,
                     size_t errlen)
{
    const StOut **v;
    char qn[ST_QLEN], qs[ST_SLEN];
    uint64_t off = 0;
    int i, k;

    *order = NULL;
    if (n < 0 || nmeta < 0 || (n > 0 && !ts) || (nmeta > 0 && !meta))
        return st_fail(err, errlen, what, ST_EINVAL, "bad arguments");
    for (i = 0; i < 2 * nmeta; i++)
        if (!meta[i] || !st_valid_utf8(meta[i]))
            return st_fail(err, errlen, what, ST_EINVAL,
                           "metadata %s %d is %s", i % 2 ? "value" : "key",
                           i / 2, meta[i] ? "not valid UTF-8" : "NULL");
    for (i = 0; i < nmeta; i++)
        for (k = 0; k < i; k++)
            if (strcmp(meta[2 * i], meta[2 * k]) == 0)
                return st_fail(err, errlen, what, ST_EINVAL,
                               "duplicate metadata key '%s'",
                               st_quote(qn, meta[2 * i]));
    v = (const StOut **)malloc((n > 0 ? (size_t)n : 1) * sizeof *v);
    if (!v)
        return st_fail(err, errlen, what, ST_ENOMEM, "out of memory");
    for (i = 0; i < n; i++) {
        const StOut *t = &ts[i];
        uint64_t ne;
        int d;
        v[i] = t;
        if (!t->name || !st_valid_utf8(t->name) ||
            strcmp(t->name, "__metadata__") == 0) {
            free((void *)v);
            return st_fail(err, errlen, what, ST_EINVAL,
                           "tensor %d: name is %s", i,
                           !t->name ? "NULL" : strcmp(t->name, "__metadata__")
                           ? "not valid UTF-8" : "reserved");
        }
        if ((int)t->dtype < 0 || t->dtype >= ST_NDTYPES || t->rank < 0 ||
            (t->rank > 0 && !t->shape)) {
            free((void *)v);
            return st_fail(err, errlen, what, ST_EINVAL,
                           "tensor '%s': bad dtype or rank",
                           st_quote(qn, t->name));
        }
        for (d = 0; d < t->rank; d++)
            if (t->shape[d] < 0) {
                free((void *)v);
                return st_fail(err, errlen, what, ST_EINVAL,
                               "tensor '%s': shape %s has a negative "
                               "dimension", st_quote(qn, t->name),
                               st_fmt_shape(qs, t->rank, t->shape));
            }
        if (st_nelem(t->rank, t->shape, &ne) < 0 ||
            ne > (uint64_t)((size_t)-1) / 2 / st_dtype_size(t->dtype) ||
            (ne > 0 && !t->data)) {
            free((void *)v);
            return st_fail(err, errlen, what, ST_EINVAL,
                           "tensor '%s': shape %s is too large or data is "
                           "NULL", st_quote(qn, t->name),
                           st_fmt_shape(qs, t->rank, t->shape));
        }
    }
    if (n > 1) {
        const StOut **s = (const StOut **)malloc((size_t)n * sizeof *s);
        if (!s) {
            free((void *)v);
            return st_fail(err, errlen, what, ST_ENOMEM,
                           "out of memory");
        }
        memcpy((void *)s, (const void *)v, (size_t)n * sizeof *s);
        qsort((void *)s, (size_t)n, sizeof *s, st_cmp_out);
        for (i = 1; i < n; i++)
            if (strcmp(s[i - 1]->name, s[i]->name) == 0) {
                st_fail(err, errlen, what, ST_EINVAL,
                        "duplicate tensor '%s'", st_quote(qn, s[i]->name));
                free((void *)s);
                free((void *)v);
                return ST_EINVAL;
            }
        if (flags & ST_WRITE_SORTED) {
            free((void *)v);
            v = s;
        } else {
            free((void *)s);
        }
    }

    sb_put(h, "{", 1);
    if (nmeta > 0) {
        sb_puts(h, "\"__metadata__\":{");
        for (i = 0; i < nmeta; i++) {
            if (i)
                sb_put(h, ",", 1);
            sb_json_string(h, meta[2 * i]);
            sb_put(h, ":", 1);
            sb_json_string(h, meta[2 * i + 1]);
        }
        sb_puts(h, n ? "}," : "}");
    }
    for (i = 0; i < n; i++) {
        const StOut *t = v[i];
        uint64_t ne;
        int d;
        st_nelem(t->rank, t->shape, &ne);
        if (i)
            sb_put(h, ",", 1);
        sb_json_string(h, t->name);
        sb_puts(h, ":{\"dtype\":\"");
        sb_puts(h, st_dtype_name(t->dtype));
        sb_puts(h, "\",\"shape\":[");
        for (d = 0; d < t->rank; d++) {
            if (d)
                sb_put(h, ",", 1);
            sb_u64(h, (uint64_t)t->shape[d]);
        }
        sb_puts(h, "],\"data_offsets\":[");
        sb_u64(h, off);
        sb_put(h, ",", 1);
        off += ne * st_dtype_size(t->dtype);
        sb_u64(h, off);
        sb_puts(h, "]}");
    }
    sb_put(h, "}", 1);
    while (!h->oom && h->len % 8 != 0)
        sb_put(h, " ", 1);
    if (h->oom) {
        free((void *)v);
        return st_fail(err, errlen, what, ST_ENOMEM, "out of memory");
    }
    *order = v;
    *datasize = off;
    return ST_OK;
}

static void st_put_len(unsigned char *p, uint64_t v)
{
    int i;
    for (i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static size_t st_out_bytes(const StOut *t)
{
    uint64_t ne;
    st_nelem(t->rank, t->shape, &ne);
    return (size_t)(ne * st_dtype_size(t->dtype));
}

RT_API int st_write_memory(const StOut *ts, int n, const char *const *meta,
                           int nmeta, int flags, unsigned char **out,
                           size_t *size, char *err, size_t errlen)
{
    StBuf h = { NULL, 0, 0, 0 };
    const StOut **v;
    uint64_t datasize;
    unsigned char *img;
    size_t o;
    int i, rc;

    *out = NULL;
    *size = 0;
    rc = st_header("st_write_memory", ts, n, meta, nmeta, flags, &h, &v,
                   &datasize, err, errlen);
    if (rc != ST_OK) {
        free(h.p);
        return rc;
    }
    if (datasize > (uint64_t)((size_t)-1) - 8 - h.len) {
        free(h.p);
        free((void *)v);
        return st_fail(err, errlen, "st_write_memory", ST_ENOMEM,
                       "too large");
    }
    img = (unsigned char *)malloc(8 + h.len + (size_t)datasize);
    if (!img) {
        free(h.p);
        free((void *)v);
        return st_fail(err, errlen, "st_write_memory", ST_ENOMEM,
                       "out of memory");
    }
    st_put_len(img, h.len);
    memcpy(img + 8, h.p, h.len);
    o = 8 + h.len;
    for (i = 0; i < n; i++) {
        size_t nb = st_out_bytes(v[i]);
        st_copy_le(img + o, (const unsigned char *)v[i]->data, nb,
                   st_dtype_size(v[i]->dtype));
        o += nb;
    }
    free(h.p);
    free((void *)v);
    *out = img;
    *size = o;
    return ST_OK;
}

RT_API int st_write(const char *path, const StOut *ts, int n,
                    const char *const *meta, int nmeta, int flags,
                    char *err, size_t errlen)
{
    StBuf h = { NULL, 0, 0, 0 };
    const StOut **v;
    uint64_t datasize;
    unsigned char len[8];
    FILE *fp;
    int i, rc, ok;

    rc = st_header(path, ts, n, meta, nmeta, flags, &h, &v, &datasize,
                   err, errlen);
    if (rc != ST_OK) {
        free(h.p);
        return rc;
    }
    if ((rc = st_check_writable(path, err, errlen)) != ST_OK) {
        free(h.p);
        free((void *)v);
        return rc;
    }
    fp = fopen(path, "wb");
    if (!fp) {
        free(h.p);
        free((void *)v);
        return st_fail(err, errlen, path, ST_EIO, "cannot create: %s",
                       strerror(errno));
    }
    st_put_len(len, h.len);
    ok = fwrite(len, 1, 8, fp) == 8 && fwrite(h.p, 1, h.len, fp) == h.len;
    for (i = 0; ok && i < n; i++) {
        size_t nb = st_out_bytes(v[i]), esize = st_dtype_size(v[i]->dtype);
        const unsigned char *src = (const unsigned char *)v[i]->data;
        if (esize <= 1 || st_host_little_endian()) {
            ok = nb == 0 || fwrite(src, 1, nb, fp) == nb;
        } else {
            unsigned char tmp[4096];
            size_t o;
            for (o = 0; ok && o < nb; o += sizeof tmp) {
                size_t k = nb - o < sizeof tmp ? nb - o : sizeof tmp;
                st_copy_le(tmp, src + o, k, esize);
                ok = fwrite(tmp, 1, k, fp) == k;
            }
        }
    }
    if (!ok)
        rc = st_fail(err, errlen, path, ST_EIO, "write error: %s",
                     strerror(errno));
    if (fclose(fp) != 0 && rc == ST_OK)
        rc = st_fail(err, errlen, path, ST_EIO, "write error: %s",
                     strerror(errno));
    free(h.p);
    free((void *)v);
    return rc;
}

/* ---- half and bfloat16 -------------------------------------------------- */

static uint32_t st_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float st_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Integer-only rounding, so the result never depends on the FPU mode. */
RT_API uint16_t st_f32_to_f16(float f)
{
    uint32_t x = st_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t ax = x & 0x7FFFFFFFu;
    if (ax >= 0x7F800000u)                      /* inf or NaN (kept quiet) */
        return (uint16_t)(sign | 0x7C00u |
                          (ax > 0x7F800000u ? 0x200u | ((ax >> 13) & 0x3FFu)
                                            : 0));
    if (ax >= 0x477FF000u)                      /* rounds past 65504 */
        return (uint16_t)(sign | 0x7C00u);
    if (ax >= 0x38800000u) {                    /* normal half */
        uint32_t r = ax + 0xFFFu + ((ax >> 13) & 1u) - (112u << 23);
        return (uint16_t)(sign | (r >> 13));
    }
    if (ax <= 0x33000000u)                      /* at most 2^-25: zero */
        return (uint16_t)sign;
    {                                           /* subnormal half */
        uint32_t e = ax >> 23;                  /* 102..112 */
        uint32_t m = (ax & 0x7FFFFFu) | 0x800000u;
        uint32_t shift = 126 - e;               /* 14..24 */
        uint32_t q = m >> shift;
        uint32_t rem = m & ((1u << shift) - 1);
        uint32_t half = 1u << (shift - 1);
        if (rem > half || (rem == half && (q & 1u)))
            q++;
        return (uint16_t)(sign | q);
    }
}

RT_API float st_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1Fu, mant = h & 0x3FFu;
    if (exp == 0x1F)
        return st_float(sign | 0x7F800000u | (mant << 13));
    if (exp)
        return st_float(sign | ((exp + 112) << 23) | (mant << 13));
    if (mant == 0)
        return st_float(sign);
    exp = 113;
    while (!(mant & 0x400u)) {
        mant <<= 1;
        exp--;
    }
    return st_float(sign | (exp << 23) | ((mant & 0x3FFu) << 13));
}

RT_API uint16_t st_f32_to_bf16(float f)
{
    uint32_t x = st_bits(f);
    if ((x & 0x7FFFFFFFu) > 0x7F800000u)        /* NaN: keep it quiet */
        return (uint16_t)((x >> 16) | 0x40u);
    return (uint16_t)((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}

RT_API float st_bf16_to_f32(uint16_t h)
{
    return st_float((uint32_t)h << 16);
}
