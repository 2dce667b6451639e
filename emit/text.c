/* text.c - the text every writer of emit/ uses: the C types and sizes of
 * elements and the conversion of a value stored into one, C identifiers
 * for tensors (sanitised, reserved names avoided, unique), float
 * literals, and comments (a statement's source and IR; block comments).
 * It calls nothing else in emit/ but the string builder, so the writers
 * (kernel.c, c.c, cuda.c, band.c, lib.c, api.c, dot.c) depend on it and
 * on nothing of each other's for these. */
#include "config.h"
#include "emit_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- element types ---------------------------------------------------------- */

const char *emit_ctype(ElemType e)
{
    static const char *const t[ELEM_COUNT] = {
        [ELEM_F32] = "float", [ELEM_F16] = "uint16_t", [ELEM_BF16] = "uint16_t",
        [ELEM_I8] = "int8_t", [ELEM_I16] = "int16_t", [ELEM_I32] = "int32_t",
        [ELEM_I64] = "int64_t", [ELEM_U8] = "uint8_t", [ELEM_BOOL] = "uint8_t",
    };
    return (unsigned)e < ELEM_COUNT ? t[e] : "float";
}

bool emit_has_16bit(const IrProgram *p)
{
    for (int i = 0; i < p->ntensors; i++)
        if (p->tensors[i]->elem != ELEM_F32)
            return true;
    return false;
}

void emit_store_value(Emit *em, Sb *b, ElemType e, const char *value)
{
    if (e == ELEM_F32) {
        sb_puts(b, value);
        return;
    }
    if (elem_is_int(e)) {
        em->helpers |= HELP_TO(e);
        sb_printf(b, "ein_to_%s(%s)", elem_name(e), value);
        return;
    }
    em->helpers |= e == ELEM_F16 ? HELP_ST_F16 : HELP_ST_BF16;
    sb_printf(b, "ein_st_%s(%s)", e == ELEM_F16 ? "f16" : "bf16", value);
}

/* ---- names ------------------------------------------------------------------ */

/* C and C++ keywords, names the generated code uses where tensor names
 * are parameters (M_run), and macros of the C library: a tensor called
 * one of these gets a '_' appended. */
static const char *const reserved[] = {
    "EOF", "FILE", "HUGE_VAL", "HUGE_VALF", "INFINITY", "NAN", "NULL",
    "assert", "calloc", "cudaError_t", "cudaMemcpyAsync",
    "cudaMemcpyDeviceToDevice", "cudaStream_t", "cudaSuccess", "errno",
    "free", "int16_t", "int32_t", "int64_t", "int8_t", "isfinite", "isinf",
    "isnan", "malloc", "memcpy", "memset", "offsetof", "ptrdiff_t",
    "signbit", "size_t", "stderr", "stdin", "stdout", "strcmp", "uint16_t",
    "uint32_t", "uint64_t", "uint8_t", "va_arg", "va_end", "va_list",
    "va_start",
    "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor",
    "bool", "break", "case", "catch", "char", "char16_t", "char32_t",
    "char8_t", "class", "compl", "concept", "const", "const_cast",
    "consteval", "constexpr", "constinit", "continue", "co_await",
    "co_return", "co_yield", "ctx", "decltype", "default", "delete", "do",
    "double", "dynamic_cast", "else", "enum", "explicit", "export", "extern",
    "false", "float", "for", "friend", "goto", "if", "inline", "int", "long",
    "main", "mutable", "namespace", "new", "noexcept", "not", "not_eq",
    "nullptr", "operator", "or", "or_eq", "private", "protected", "public",
    "register", "reinterpret_cast", "requires", "restrict", "return",
    "short", "signed", "sizeof", "static", "static_assert", "static_cast",
    "stream", "struct", "switch", "template", "this", "thread_local",
    "throw", "true", "try", "typedef", "typeid", "typename", "union",
    "unsigned", "using", "virtual", "void", "volatile", "wchar_t", "while",
    "xor", "xor_eq",
    /* macros, types and predefined names of the headers the output
       includes (glibc, OpenBLAS's cblas.h with <complex.h>, oneDNN,
       CUDA, cuBLAS, cuDNN), beyond the families emit_is_reserved
       matches; tests/emit/reserved.test checks them all */
    "ADJ_ESTERROR", "ADJ_FREQUENCY", "ADJ_MAXERROR", "ADJ_MICRO", "ADJ_NANO",
    "ADJ_OFFSET", "ADJ_OFFSET_SINGLESHOT", "ADJ_OFFSET_SS_READ",
    "ADJ_SETOFFSET", "ADJ_STATUS", "ADJ_TAI", "ADJ_TICK", "ADJ_TIMECONST",
    "BIG_ENDIAN", "BLASFUNC", "BUFSIZ", "BYTE_ORDER", "CHAR_BIT",
    "CLOCKS_PER_SEC", "CLOCK_BOOTTIME", "CLOCK_BOOTTIME_ALARM",
    "CLOCK_MONOTONIC", "CLOCK_MONOTONIC_COARSE", "CLOCK_MONOTONIC_RAW",
    "CLOCK_PROCESS_CPUTIME_ID", "CLOCK_REALTIME", "CLOCK_REALTIME_ALARM",
    "CLOCK_REALTIME_COARSE", "CLOCK_TAI", "CLOCK_THREAD_CPUTIME_ID", "CMPLX",
    "CMPLXF", "CMPLXL", "EXIT_FAILURE", "EXIT_SUCCESS", "FD_CLR", "FD_ISSET",
    "FD_SET", "FD_SETSIZE", "FD_ZERO", "FILENAME_MAX", "FLOATRET",
    "FOPEN_MAX", "HUGE_VALL", "HUGE_VAL_F32", "HUGE_VAL_F32X", "HUGE_VAL_F64",
    "HUGE_VAL_F64X", "I", "IF_DEVICE_OR_CUDACC", "LITTLE_ENDIAN", "LONG_BIT",
    "L_ctermid", "L_cuserid", "L_tmpnam", "MATH_ERREXCEPT", "MATH_ERRNO",
    "MAXFLOAT", "MAX_CANON", "MAX_INPUT", "MB_CUR_MAX", "MOD_CLKA",
    "MOD_CLKB", "MOD_ESTERROR", "MOD_FREQUENCY", "MOD_MAXERROR", "MOD_MICRO",
    "MOD_NANO", "MOD_OFFSET", "MOD_STATUS", "MOD_TAI", "MOD_TIMECONST",
    "NFDBITS", "NL_ARGMAX", "NL_LANGMAX", "NL_MSGMAX", "NL_NMAX", "NL_SETMAX",
    "NL_TEXTMAX", "NZERO", "PDP_ENDIAN", "PIPE_BUF",
    "PTHREAD_DESTRUCTOR_ITERATIONS", "P_tmpdir", "RAND_MAX",
    "RENAME_EXCHANGE", "RENAME_NOREPLACE", "RENAME_WHITEOUT", "SCHED_FIFO",
    "SCHED_OTHER", "SCHED_RR", "SEEK_CUR", "SEEK_DATA", "SEEK_END",
    "SEEK_HOLE", "SEEK_SET", "SNAN", "SNANF", "SNANF32", "SNANF32X",
    "SNANF64", "SNANF64X", "SNANL", "STA_CLK", "STA_CLOCKERR", "STA_DEL",
    "STA_FLL", "STA_FREQHOLD", "STA_INS", "STA_MODE", "STA_NANO", "STA_PLL",
    "STA_PPSERROR", "STA_PPSFREQ", "STA_PPSJITTER", "STA_PPSSIGNAL",
    "STA_PPSTIME", "STA_PPSWANDER", "STA_RONLY", "STA_UNSYNC",
    "TIMER_ABSTIME", "TIME_UTC", "TMP_MAX", "WCONTINUED", "WEXITED",
    "WEXITSTATUS", "WIFCONTINUED", "WIFEXITED", "WIFSIGNALED", "WIFSTOPPED",
    "WNOHANG", "WNOWAIT", "WORD_BIT", "WSTOPPED", "WSTOPSIG", "WTERMSIG",
    "WUNTRACED", "alloca", "assert_perror", "be16toh", "be32toh", "be64toh",
    "blockDim", "blockIdx", "clock_t", "complex", "dim3", "div_t", "double_t",
    "float_t", "fpclassify", "fpos_t", "gridDim", "half", "half2", "htobe16",
    "htobe32", "htobe64", "htole16", "htole32", "htole64", "imaginary",
    "isalnum_l", "isalpha_l", "isascii", "isascii_l", "isblank_l",
    "iscntrl_l", "isdigit_l", "isgraph_l", "isgreater", "isgreaterequal",
    "isless", "islessequal", "islessgreater", "islower_l", "isnormal",
    "isprint_l", "ispunct_l", "isspace_l", "issubnormal", "isunordered",
    "isupper_l", "isxdigit_l", "ldiv_t", "le16toh", "le32toh", "le64toh",
    "linux", "lldiv_t", "math_errhandling", "max_align_t", "nv_bfloat16",
    "nv_bfloat162", "off_t", "sched_priority", "ssize_t", "std", "strdupa",
    "strndupa", "threadIdx", "time_t", "toascii", "toascii_l", "unix",
    "va_copy", "warpSize", "xdouble",
    /* <fcntl.h>, <sys/stat.h>, <unistd.h> beyond their prefixes */
    "ACCESSPERMS", "ALLPERMS", "DEFFILEMODE", "FAPPEND", "FASYNC", "FD_CLOEXEC",
    "FFSYNC", "FNDELAY", "FNONBLOCK", "L_INCR", "L_SET", "L_XTND", "R_OK",
    "STDERR_FILENO", "STDIN_FILENO", "STDOUT_FILENO", "UTIME_NOW", "UTIME_OMIT",
    "W_OK", "X_OK", "st_atime", "st_ctime", "st_mtime", "MAX_HANDLE_SZ",
    "TEMP_FAILURE_RETRY",
};

bool emit_is_reserved(const char *id)
{
    for (size_t i = 0; i < sizeof reserved / sizeof *reserved; i++)
        if (strcmp(reserved[i], id) == 0)
            return true;
    /* Names of the C implementation and of the generated helpers. */
    if ((id[0] == '_' && (id[1] == '_' || (id[1] >= 'A' && id[1] <= 'Z'))) ||
        strncmp(id, "ein_", 4) == 0 || strncmp(id, "EIN_", 4) == 0)
        return true;
    /* Families of the headers' names: libraries' prefixes, <stdint.h>,
     * <inttypes.h>, <math.h>, <signal.h> and <errno.h> macros, limits,
     * CUDA's vector types; and the kernels einc writes, k0_name. */
    static const char *const prefixes[] = {
        "CBLAS", "Cblas", "cblas", "OPENBLAS", "openblas", "LAPACK", "lapack",
        "DNNL", "dnnl", "CUDA", "cuda", "CUDNN", "cudnn", "CUBLAS", "cublas",
        "CU_", "CUB", "NV_", "nv_", "FP_", "M_", "PRI", "SCN", "SIG", "INT", "UINT",
        "SIZE_", "PTRDIFF_", "WCHAR_", "WINT_", "int_", "uint_", "kband_",
        /* <fcntl.h>, <sys/stat.h>, <unistd.h> (the safetensors reader's
         * checks of what it opens): POSIX reserves these prefixes */
        "O_", "S_", "F_", "AT_", "LOCK_", "POSIX_",
        /* and their GNU extensions, which C++ (nvcc) sees */
        "CLOSE_RANGE_", "DN_", "FALLOC_", "RWF_", "RWH_", "SPLICE_", "STATX",
        "SYNC_FILE_",
    };
    for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++)
        if (strncmp(id, prefixes[i], strlen(prefixes[i])) == 0)
            return true;
    size_t n = strlen(id);
    bool upper = true;
    for (size_t i = 0; i < n; i++)
        upper &= (id[i] >= 'A' && id[i] <= 'Z') || (id[i] >= '0' && id[i] <= '9') || id[i] == '_';
    if (upper && id[0] == 'E' && n >= 2 && !strchr(id, '_'))
        return true;                            /* errno's E2BIG .. EXDEV */
    if (upper && n > 4 && (strcmp(id + n - 4, "_MAX") == 0 || strcmp(id + n - 4, "_MIN") == 0 ||
                           (n > 6 && strcmp(id + n - 6, "_WIDTH") == 0)))
        return true;                            /* limits */
    if (id[0] == 'k' && id[1] >= '0' && id[1] <= '9') {
        size_t i = 1;
        while (id[i] >= '0' && id[i] <= '9')
            i++;
        if (id[i] == '_')
            return true;                        /* a generated kernel's name */
    }
    static const char *const vec[] = {"char", "uchar", "short", "ushort", "int", "uint",
                                      "long", "ulong", "longlong", "ulonglong", "float",
                                      "double"};
    for (size_t i = 0; i < sizeof vec / sizeof *vec; i++) {
        size_t m = strlen(vec[i]);
        if (n == m + 1 && strncmp(id, vec[i], m) == 0 && id[m] >= '1' && id[m] <= '4')
            return true;                        /* CUDA's float4, int2, ... */
    }
    return false;
}

char *emit_sanitize(Arena *a, const char *name)
{
    bool digit = name[0] >= '0' && name[0] <= '9';
    char *s = arena_printf(a, "%s%s", digit || !name[0] ? "_" : "", name);
    for (char *p = s; *p; p++)
        if (!(*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
              (*p >= '0' && *p <= '9')))
            *p = '_';
    return s;
}

/* Unique C identifiers for the tensors, in tensor order. */
/* A set of names (open addressing over the arena's strings): naming a
 * program of many tensors stays linear. */
typedef struct NameSet {
    const char **slot;
    int *next;                      /* per slot: the next suffix to try */
    size_t cap, n;
} NameSet;

static uint64_t name_hash(const char *s)
{
    uint64_t h = 1469598103934665603u;          /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211u;
    return h;
}

/* The slot of s, or -1. */
static long name_find(const NameSet *ns, const char *s)
{
    if (!ns->cap)
        return -1;
    for (size_t i = name_hash(s) & (ns->cap - 1);; i = (i + 1) & (ns->cap - 1)) {
        if (!ns->slot[i])
            return -1;
        if (strcmp(ns->slot[i], s) == 0)
            return (long)i;
    }
}

static void name_add(NameSet *ns, const char *s, int next)
{
    if (2 * (ns->n + 1) > ns->cap) {
        size_t cap = ns->cap ? 2 * ns->cap : 64;
        NameSet big = {xcalloc(cap, sizeof *big.slot), xcalloc(cap, sizeof *big.next), cap, 0};
        for (size_t i = 0; i < ns->cap; i++)
            if (ns->slot[i])
                name_add(&big, ns->slot[i], ns->next[i]);
        free(ns->slot);
        free(ns->next);
        *ns = big;
    }
    size_t i = name_hash(s) & (ns->cap - 1);
    while (ns->slot[i])
        i = (i + 1) & (ns->cap - 1);
    ns->slot[i] = s;
    ns->next[i] = next;
    ns->n++;
}

void emit_name_tensors(Emit *em)
{
    const IrProgram *p = em->p;
    /* the names given so far, and NAME_out for each input that is also an
     * output (M_run names that output NAME_out) */
    NameSet taken = {0};
    for (int i = 0; i < p->ntensors; i++) {
        const char *base = emit_sanitize(em->arena, p->tensors[i]->name);
        const char *n = emit_is_reserved(base) ? arena_printf(em->arena, "%s_", base)
                                               : base;
        /* base_2, base_3, ...: the first not taken.  Every suffix below
         * the one a base got last time is taken still, so the search
         * starts there (many tensors of one name stay linear). */
        long at = name_find(&taken, n);
        int k = at >= 0 ? taken.next[at] : 2;
        while (name_find(&taken, n) >= 0)
            n = arena_printf(em->arena, "%s_%d", base, k++);
        if (at >= 0)
            taken.next[at] = k;
        em->cname[i] = n;
        name_add(&taken, n, 2);
        if (p->tensors[i]->kind == IT_INPUT && p->tensors[i]->is_output)
            name_add(&taken, arena_printf(em->arena, "%s_out", n), 2);
    }
    free(taken.slot);
    free(taken.next);
}

/* ---- literals and comments ---------------------------------------------------- */

/* User text (a path, a name) inside a C or CUDA comment, block or line:
 * nothing in it may end the comment, open another, form a trigraph or
 * break the line, so "*\/", "/\*" and "??" get a space and control
 * characters are written as C escapes (\n, \ooo). */
void emit_comment_text(Sb *b, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '\n')
            sb_puts(b, "\\n");
        else if (c == '\t')
            sb_puts(b, "\\t");
        else if (c < 32 || c == 127)
            sb_printf(b, "\\%03o", c);
        else
            sb_putc(b, (char)c);
        if ((c == '*' && s[1] == '/') || (c == '/' && s[1] == '*') ||
            (c == '?' && s[1] == '?'))
            sb_putc(b, ' ');
    }
}

/* A C string literal of `s`, quotes included: quotes, backslashes, '?'
 * after '?' (trigraphs) and bytes outside printable ASCII escaped. */
void emit_c_string(Sb *b, const char *s)
{
    sb_putc(b, '"');
    for (const char *p = s; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '"' || c == '\\' || (c == '?' && p > s && p[-1] == '?'))
            sb_putc(b, '\\'), sb_putc(b, (char)c);
        else if (c < 32 || c > 126)
            sb_printf(b, "\\%03o", c);
        else
            sb_putc(b, (char)c);
    }
    sb_putc(b, '"');
}


void emit_float(Sb *b, double v)
{
    float f = (float)v;
    if (isnan(f)) {
        sb_puts(b, "NAN");
        return;
    }
    if (isinf(f)) {
        sb_puts(b, f < 0 ? "(-INFINITY)" : "INFINITY");
        return;
    }
    /* The shortest %g form that reads back as the same float. */
    char buf[64];
    for (int prec = 1; prec <= 9; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, (double)f);
        if (strtof(buf, NULL) == f)
            break;
    }
    if (!strpbrk(buf, ".e"))
        strcat(buf, ".0");
    sb_printf(b, buf[0] == '-' ? "(%sf)" : "%sf", buf);
}

char *emit_ir_text(Arena *a, const IrCtx *cx, const Stage *st, const IExpr *e)
{
    char *ir = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&ir, &len);
    if (!fp)
        ICE("open_memstream failed");
    if (st)
        ir_print_stage(cx, st, fp);
    else
        ir_print_expr(cx, e, fp);
    fclose(fp);
    while (len && ir[len - 1] == '\n')
        ir[--len] = 0;
    char *r = arena_strdup(a, ir);
    free(ir);
    return r;
}

/* The statement of t as written in the .ein file with its location. */
static void source_text(Sb *raw, const IrTensor *t)
{
    const SrcFile *f = t->loc.file >= 0 && t->loc.file < src_count()
                           ? src_get(t->loc.file) : NULL;
    if (!f || t->loc.end < t->loc.begin || (size_t)t->loc.end > f->len) {
        sb_printf(raw, "%s (no source location)\n", t->name);
        return;
    }
    int line, col;
    src_line_col(t->loc, &line, &col);
    emit_comment_text(raw, f->path);
    sb_printf(raw, ":%d:%d:\n", line, col);
    const char *s = f->text + t->loc.begin, *end = f->text + t->loc.end;
    /* Start at the beginning of the line, so continuation lines keep
     * their indentation relative to the first. */
    int skip = col - 1;
    sb_puts(raw, "    ");
    for (; s < end; s++) {
        if (*s == '\n') {
            while (raw->len && raw->s[raw->len - 1] == ' ')
                raw->s[--raw->len] = 0;
            sb_puts(raw, "\n    ");
            for (int i = 0; i < skip && s + 1 < end && s[1] == ' '; i++)
                s++;
        } else if (*s != '\r') {
            sb_putc(raw, *s == '\t' ? ' ' : *s);
        }
    }
    sb_putc(raw, '\n');
}

void emit_source_comment(Arena *a, const IrCtx *cx, const IrTensor *t, const Stage *st,
                         const IExpr *epi, Sb *b)
{
    Sb raw = {0};
    source_text(&raw, t);
    if (st)
        sb_printf(&raw, "IR: %s\n", emit_ir_text(a, cx, st, NULL));
    if (epi)
        sb_printf(&raw, "stored: %s\n", emit_ir_text(a, cx, NULL, epi));
    /* Nothing in the text may end the comment early or form a trigraph. */
    for (const char *s = sb_str(&raw); *s; s++) {
        sb_putc(b, *s);
        if ((s[0] == '*' && s[1] == '/') || (s[0] == '?' && s[1] == '?') ||
            (s[0] == '/' && s[1] == '*'))
            sb_putc(b, ' ');
    }
    sb_free(&raw);
}

/* A block comment of `text`'s lines, indented by `indent`. */
void emit_block_comment(Sb *b, const char *text, int indent)
{
    sb_printf(b, "%*s/*", indent, "");
    bool first = true;
    while (*text) {
        const char *nl = strchr(text, '\n');
        size_t n = nl ? (size_t)(nl - text) : strlen(text);
        if (first)
            sb_printf(b, " %.*s\n", (int)n, text);
        else if (n)
            sb_printf(b, "%*s * %.*s\n", indent, "", (int)n, text);
        else
            sb_printf(b, "%*s *\n", indent, "");
        first = false;
        text += n + (nl != NULL);
    }
    if (first)
        sb_putc(b, '\n');
    sb_printf(b, "%*s */\n", indent, "");
}
