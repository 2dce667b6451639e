/* kernel.c - the one description of a generated kernel, built from a
 * stage: which tensors it reads, the index type, and a dialect-neutral C
 * body that computes one output element into `acc`.  c.c and cuda.c wrap
 * the same body in a loop nest or a grid-stride loop, so the CPU tests
 * run exactly the arithmetic the GPU runs.
 *
 * Exactness rules carried out here: reads outside a tensor's shape are 0
 * (a check is written only where ix_bounds says the index can leave the
 * shape); floor division and modulo by constants go through helpers that
 * are exact for negative values unless the argument is provably >= 0;
 * elements outside the loop ranges (output padding) and elements whose
 * loop-level guards fail are 0; a max=/min= with no term is 0.  Reads of
 * f16 and bf16 tensors widen the element to float (ein_ld_f16,
 * ein_ld_bf16); all arithmetic is in float.  Nested
 * stages in a body are not generated yet: they are reported as an
 * internal error. */
#include "config.h"
#include "emit_int.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- names and literals --------------------------------------------------- */

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

/* The comment that precedes a kernel: the statement as written in the
 * .ein file with its location, then the stage in IR form. */
void emit_source_comment(Emit *em, const IrTensor *t, Sb *b)
{
    Sb raw = {0};
    const SrcFile *f = t->loc.file >= 0 && t->loc.file < src_count()
                           ? src_get(t->loc.file) : NULL;
    if (f && t->loc.end >= t->loc.begin && (size_t)t->loc.end <= f->len) {
        int line, col;
        src_line_col(t->loc, &line, &col);
        emit_comment_text(&raw, f->path);
        sb_printf(&raw, ":%d:%d:\n", line, col);
        const char *s = f->text + t->loc.begin, *end = f->text + t->loc.end;
        /* Start at the beginning of the line, so continuation lines keep
         * their indentation relative to the first. */
        int skip = col - 1;
        sb_puts(&raw, "    ");
        for (; s < end; s++) {
            if (*s == '\n') {
                while (raw.len && raw.s[raw.len - 1] == ' ')
                    raw.s[--raw.len] = 0;
                sb_puts(&raw, "\n    ");
                for (int i = 0; i < skip && s + 1 < end && s[1] == ' '; i++)
                    s++;
            } else if (*s != '\r') {
                sb_putc(&raw, *s == '\t' ? ' ' : *s);
            }
        }
        sb_putc(&raw, '\n');
    } else {
        sb_printf(&raw, "%s (no source location)\n", t->name);
    }
    if (t->stage) {
        char *ir = NULL;
        size_t len = 0;
        FILE *fp = open_memstream(&ir, &len);
        if (!fp)
            ICE("open_memstream failed");
        ir_print_stage(em->p->cx, t->stage, fp);
        fclose(fp);
        sb_puts(&raw, "IR: ");
        sb_puts(&raw, ir);
        if (len == 0 || ir[len - 1] != '\n')
            sb_putc(&raw, '\n');
        free(ir);
    }
    /* Nothing in the text may end the comment early or form a trigraph. */
    for (const char *s = sb_str(&raw); *s; s++) {
        sb_putc(b, *s);
        if ((s[0] == '*' && s[1] == '/') || (s[0] == '?' && s[1] == '?') ||
            (s[0] == '/' && s[1] == '*'))
            sb_putc(b, ' ');
    }
    sb_free(&raw);
}

/* ---- kernel generation ------------------------------------------------------ */

typedef struct KGen {
    Emit *em;
    Kernel *k;
    const IrTensor *out;
    int nvars;                      /* ir_var_count */
    int64_t *lo, *hi;               /* range by var id (bound vars only) */
    const char **vname;             /* C name by var id; NULL: not bound */
    bool wide;                      /* index arithmetic in int64_t */
    bool *reads;                    /* by tensor id (shared by all kernels, */
    int *read_ids, nread_ids;       /*  cleared after each: these are set) */
    /* Deep expressions are cut into named temporaries (ein_x0, ...): the
     * definitions wait in `pre` until the statement that uses them is
     * written, and `nest` counts the operators open around the one being
     * written. */
    Sb pre;
    int ntemps, nest;
    bool *used;                     /* by var id: appears in the body */
    int errors;
    /* --precision below fp32 and a summed body: the tensor operands of
     * its products are rounded to the format (ein_rnd), as library calls
     * round theirs, so a contraction computes the same wherever it runs */
    bool rnd;
} KGen;

/* Largest magnitude an index expression or any partial sum of it can
 * take, saturating at INT64_MAX: decides between int and int64_t. */
static int64_t ix_mag(const KGen *g, const Ix *ix)
{
    int64_t m = ix->c < 0 ? (ix->c == INT64_MIN ? INT64_MAX : -ix->c) : ix->c;
    for (int i = 0; i < ix->n; i++) {
        const IxTerm *t = &ix->t[i];
        int64_t a;
        switch (t->kind) {
        case IX_VAR: {
            int64_t l = g->lo[t->var], h = g->hi[t->var];
            l = l < 0 ? (l == INT64_MIN ? INT64_MAX : -l) : l;
            h = h < 0 ? (h == INT64_MIN ? INT64_MAX : -h) : h;
            a = l > h ? l : h;
            break;
        }
        case IX_DIV:
            a = ix_mag(g, t->arg);
            a = a / (t->d < 0 ? -t->d : t->d) + 1;
            break;
        case IX_READ: {
            /* the type's range; its subscripts are computed in their own
             * width */
            int64_t lo, hi;
            elem_int_range(t->read->access.tensor->elem, &lo, &hi);
            a = hi > (lo == INT64_MIN ? INT64_MAX : -lo) ? hi : (lo == INT64_MIN ? INT64_MAX : -lo);
            break;
        }
        default:
            a = ix_mag(g, t->arg);         /* the argument is computed too */
            break;
        }
        int64_t c = t->coef < 0 ? -t->coef : t->coef, p;
        if (!i64_mul(c, a, &p) || !i64_add(m, p, &m))
            return INT64_MAX;
    }
    return m;
}

static void bounds(const KGen *g, const Ix *ix, int64_t *mn, int64_t *mx)
{
    ix_bounds(ix, g->lo, g->hi, mn, mx);
}

static bool ix_simple(const Ix *ix)
{
    return ix->n == 0 || (ix->n == 1 && ix->c == 0 && ix->t[0].coef == 1 &&
                          ix->t[0].kind == IX_VAR);
}

static void gen_ix(KGen *g, const Ix *ix, Sb *b);

static void gen_ix_paren(KGen *g, const Ix *ix, Sb *b)
{
    if (ix_simple(ix) && (ix->n || ix->c >= 0)) {
        gen_ix(g, ix, b);
    } else {
        sb_putc(b, '(');
        gen_ix(g, ix, b);
        sb_putc(b, ')');
    }
}

static void gen_gather(KGen *g, const IExpr *e, Sb *b);

static void gen_atom(KGen *g, const IxTerm *t, Sb *b)
{
    if (t->kind == IX_VAR) {
        const char *n = t->var >= 0 && t->var < g->nvars ? g->vname[t->var] : NULL;
        if (!n) {
            diag_error(g->out->loc, "internal error: variable %d is not bound "
                       "in the stage of '%s' (please report)", t->var, g->out->name);
            g->errors++;
            sb_puts(b, "0");
            return;
        }
        g->used[t->var] = true;
        sb_puts(b, n);
        return;
    }
    if (t->kind == IX_READ) {
        gen_gather(g, t->read, b);
        return;
    }
    int64_t mn, mx;
    bounds(g, t->arg, &mn, &mx);
    bool div = t->kind == IX_DIV;
    if (mn >= 0 && t->d > 0) {
        /* C's truncating / and % agree with floor for a >= 0, d > 0. */
        sb_putc(b, '(');
        gen_ix_paren(g, t->arg, b);
        sb_printf(b, " %c %" PRId64 ")", div ? '/' : '%', t->d);
    } else {
        sb_printf(b, "ein_floor%s%s(", div ? "div" : "mod", g->wide ? "_l" : "_i");
        g->em->helpers |= div ? (g->wide ? HELP_FLOORDIV_L : HELP_FLOORDIV_I)
                              : (g->wide ? HELP_FLOORMOD_L : HELP_FLOORMOD_I);
        gen_ix(g, t->arg, b);
        sb_printf(b, ", %" PRId64 ")", t->d);
    }
}

static void put_mag(Sb *b, int64_t c)
{
    uint64_t m = c < 0 ? (uint64_t)0 - (uint64_t)c : (uint64_t)c;
    sb_printf(b, "%" PRIu64, m);
}

/* c + Σ coef * atom, written as  a + 2 * b - c - 1 */
static void gen_ix(KGen *g, const Ix *ix, Sb *b)
{
    for (int i = 0; i < ix->n; i++) {
        const IxTerm *t = &ix->t[i];
        if (i == 0)
            sb_puts(b, t->coef < 0 ? "-" : "");
        else
            sb_puts(b, t->coef < 0 ? " - " : " + ");
        if (t->coef != 1 && t->coef != -1) {
            put_mag(b, t->coef);
            sb_puts(b, " * ");
        }
        gen_atom(g, t, b);
    }
    if (ix->n == 0) {
        sb_printf(b, "%" PRId64, ix->c);
    } else if (ix->c != 0) {
        sb_puts(b, ix->c < 0 ? " - " : " + ");
        put_mag(b, ix->c);
    }
}

static void gen_f(KGen *g, const IExpr *e, Sb *b);
static void gen_b(KGen *g, const IExpr *e, Sb *b);
static void line(Sb *b, int depth, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Row-major offset of dims 0..k:  ((i0 * S1 + i1) * S2 + i2) */
static void gen_offset(KGen *g, const IrTensor *t, const Ix **idx, int k, Sb *b)
{
    if (k == 0) {
        if (t->rank > 1)
            gen_ix_paren(g, idx[0], b);
        else
            gen_ix(g, idx[0], b);
        return;
    }
    if (k >= 2)
        sb_putc(b, '(');
    gen_offset(g, t, idx, k - 1, b);
    if (k >= 2)
        sb_putc(b, ')');
    sb_printf(b, " * %" PRId64 " + ", t->shape[k]);
    gen_ix(g, idx[k], b);
}

/* The bounds checks of a read: "" when it cannot leave its tensor, else
 * a condition; false when it never reads inside. */
static bool read_conds(KGen *g, const IExpr *e, Sb *cond, int *nconds)
{
    const IrTensor *t = e->access.tensor;
    *nconds = 0;
    for (int k = 0; k < t->rank; k++) {
        const Ix *ix = e->access.idx[k];
        int64_t mn, mx, S = t->shape[k];
        bounds(g, ix, &mn, &mx);
        if (mx < 0 || mn >= S)
            return false;
        bool need_lo = mn < 0, need_hi = mx >= S;
        if (!need_lo && !need_hi)
            continue;
        sb_puts(cond, (*nconds)++ ? " && " : "");
        /* a gather's value is not bounded by the kernel's int width */
        bool wide = g->wide || ix_has_read(ix);
        if (need_lo && need_hi) {
            sb_printf(cond, "(%s)(", wide ? "uint64_t" : "unsigned");
            gen_ix(g, ix, cond);
            sb_printf(cond, ") < %" PRId64 "u", S);
        } else {
            gen_ix(g, ix, cond);
            if (need_lo)
                sb_puts(cond, " >= 0");
            else
                sb_printf(cond, " < %" PRId64, S);
        }
    }
    return true;
}

/* The kernel reads t: a parameter of it. */
static void note_read(KGen *g, const IrTensor *t)
{
    if (!g->reads[t->id]) {
        g->reads[t->id] = true;
        g->read_ids[g->nread_ids++] = t->id;
    }
}

/* A gather: the element of an integer tensor as an index value, 0 when
 * its subscripts leave the tensor; never a read out of bounds. */
static void gen_gather(KGen *g, const IExpr *e, Sb *b)
{
    const IrTensor *t = e->access.tensor;
    Sb cond = {0};
    int nconds;
    if (!read_conds(g, e, &cond, &nconds)) {
        sb_puts(b, "0");
        sb_free(&cond);
        return;
    }
    note_read(g, t);
    const char *ct = t->elem == ELEM_I64 || g->wide ? "int64_t" : "int";
    if (nconds)
        sb_printf(b, "(%s ? (%s)t_%s[", sb_str(&cond), ct, g->em->cname[t->id]);
    else
        sb_printf(b, "((%s)t_%s[", ct, g->em->cname[t->id]);
    if (t->rank == 0)
        sb_putc(b, '0');
    else
        gen_offset(g, t, e->access.idx, t->rank - 1, b);
    sb_puts(b, nconds ? "] : 0)" : "])");
    sb_free(&cond);
}

static void gen_access(KGen *g, const IExpr *e, Sb *b)
{
    if (e->access.stage) {
        diag_error(g->out->loc, "internal error: the stage of '%s' reads a nested "
                   "stage, which the emitter does not generate yet (please report)",
                   g->out->name);
        g->errors++;
        sb_puts(b, "0.0f");
        return;
    }
    const IrTensor *t = e->access.tensor;
    if (e->access.nidx != t->rank) {
        diag_error(g->out->loc, "internal error: '%s' is read with %d subscripts "
                   "but has rank %d (please report)", t->name, e->access.nidx, t->rank);
        g->errors++;
        sb_puts(b, "0.0f");
        return;
    }
    Sb cond = {0};
    int nconds = 0;
    for (int k = 0; k < t->rank; k++) {
        const Ix *ix = e->access.idx[k];
        int64_t mn, mx, S = t->shape[k];
        bounds(g, ix, &mn, &mx);
        if (mx < 0 || mn >= S) {            /* never inside: the read is 0 */
            sb_free(&cond);
            sb_puts(b, "0.0f");
            return;
        }
        bool need_lo = mn < 0, need_hi = mx >= S;
        if (!need_lo && !need_hi)
            continue;
        sb_puts(&cond, nconds++ ? " && " : "");
        if (need_lo && need_hi) {
            /* One unsigned comparison covers both ends. */
            sb_printf(&cond, "(%s)(", g->wide ? "uint64_t" : "unsigned");
            gen_ix(g, ix, &cond);
            sb_printf(&cond, ") < %" PRId64 "u", S);
        } else {
            gen_ix(g, ix, &cond);
            if (need_lo)
                sb_puts(&cond, " >= 0");
            else
                sb_printf(&cond, " < %" PRId64, S);
        }
    }
    note_read(g, t);
    const char *name = g->em->cname[t->id];
    if (nconds)
        sb_printf(b, "(%s ? ", sb_str(&cond));
    /* An f16 or bf16 element is widened to float as it is read, an
     * integer one converted (exactly, up to 2^24). */
    if (elem_is_int(t->elem)) {
        sb_puts(b, "(float)(");
    } else if (t->elem != ELEM_F32) {
        bool h = t->elem == ELEM_F16;
        sb_puts(b, h ? "ein_ld_f16(" : "ein_ld_bf16(");
        g->em->helpers |= h ? HELP_LD_F16 : HELP_LD_BF16;
    }
    sb_printf(b, "t_%s[", name);
    if (t->rank == 0)
        sb_putc(b, '0');
    else
        gen_offset(g, t, e->access.idx, t->rank - 1, b);
    sb_putc(b, ']');
    if (t->elem != ELEM_F32)
        sb_putc(b, ')');
    if (nconds)
        sb_puts(b, " : 0.0f)");
    sb_free(&cond);
}

static const char *cmp_op(BinOp op)
{
    switch (op) {
    case OP_EQ: return "==";
    case OP_NE: return "!=";
    case OP_LT: return "<";
    case OP_LE: return "<=";
    case OP_GT: return ">";
    case OP_GE: return ">=";
    default: return NULL;
    }
}

static bool is_bool(const IExpr *e)
{
    switch (e->kind) {
    case IE_CMP: case IE_ICMP: case IE_AND: case IE_OR: case IE_NOT:
        return true;
    default:
        return false;
    }
}

static void gen_call(KGen *g, const IExpr *e, Sb *b)
{
    static const struct { Func fn; const char *c; int nargs; unsigned help; } fns[] = {
        {FN_RELU, "ein_relu", 1, HELP_RELU}, {FN_SIGMOID, "ein_sigmoid", 1, HELP_SIGMOID},
        {FN_TANH, "tanhf", 1, 0}, {FN_EXP, "expf", 1, 0}, {FN_LOG, "logf", 1, 0},
        {FN_SQRT, "sqrtf", 1, 0}, {FN_RSQRT, "ein_rsqrt", 1, HELP_RSQRT},
        {FN_ABS, "fabsf", 1, 0}, {FN_ERF, "erff", 1, 0}, {FN_MAX, "ein_max", 2, HELP_MAX},
        {FN_MIN, "ein_min", 2, HELP_MIN}, {FN_POW, "powf", 2, 0},
        {FN_SIN, "sinf", 1, 0}, {FN_COS, "cosf", 1, 0}, {FN_FLOOR, "floorf", 1, 0},
        {FN_CEIL, "ceilf", 1, 0}, {FN_ROUND, "rintf", 1, 0},
        {FN_SIGN, "ein_sign", 1, HELP_SIGN}, {FN_EXPM1, "expm1f", 1, 0},
        {FN_LOG1P, "log1pf", 1, 0}, {FN_SOFTPLUS, "ein_softplus", 1, HELP_SOFTPLUS},
        {FN_GELU, "ein_gelu", 1, HELP_GELU},
    };
    const IExpr *const *a = e->call.args;
    if (FN_IS_TO(e->call.fn) && e->call.nargs == 1) {
        /* a conversion, its result as a float value (exact for the integer
         * types up to 2^24; f16 and bf16 values are floats) */
        ElemType to = FN_TO_ELEM(e->call.fn);
        if (to == ELEM_F32) {
            gen_f(g, a[0], b);
            return;
        }
        if (elem_is_int(to)) {
            g->em->helpers |= HELP_TO(to);
            sb_printf(b, "(float)ein_to_%s(", elem_name(to));
        } else {
            bool h = to == ELEM_F16;
            g->em->helpers |= h ? HELP_LD_F16 | HELP_ST_F16 : HELP_LD_BF16 | HELP_ST_BF16;
            sb_printf(b, "ein_ld_%s(ein_st_%s(", elem_name(to), elem_name(to));
        }
        gen_f(g, a[0], b);
        sb_puts(b, elem_is_int(to) ? ")" : "))");
        return;
    }
    if (e->call.fn == FN_SELECT) {
        if (e->call.nargs != 3)
            goto bad;
        sb_putc(b, '(');
        gen_b(g, a[0], b);
        sb_puts(b, " ? ");
        gen_f(g, a[1], b);
        sb_puts(b, " : ");
        gen_f(g, a[2], b);
        sb_putc(b, ')');
        return;
    }
    for (size_t i = 0; i < sizeof fns / sizeof *fns; i++) {
        if (fns[i].fn != e->call.fn)
            continue;
        if (e->call.nargs != fns[i].nargs)
            goto bad;
        sb_printf(b, "%s(", fns[i].c);
        g->em->helpers |= fns[i].help;
        for (int j = 0; j < e->call.nargs; j++) {
            sb_puts(b, j ? ", " : "");
            gen_f(g, a[j], b);
        }
        sb_putc(b, ')');
        return;
    }
bad:
    diag_error(g->out->loc, "internal error: function %d with %d arguments in the "
               "stage of '%s' (please report)", (int)e->call.fn, e->call.nargs,
               g->out->name);
    g->errors++;
    sb_puts(b, "0.0f");
}

static void gen_f(KGen *g, const IExpr *e, Sb *b);

/* A factor of a product in a summed body at a reduced precision: an f32
 * tensor read is rounded to the format. */
static void gen_factor(KGen *g, const IExpr *e, Sb *b)
{
    if (e->kind != IE_ACCESS || !e->access.tensor || e->access.tensor->elem != ELEM_F32) {
        gen_f(g, e, b);
        return;
    }
    g->em->helpers |= HELP_RND;
    sb_puts(b, "ein_rnd(");
    gen_f(g, e, b);
    sb_putc(b, ')');
}

/* An expression nested at most EMIT_MAX_NEST operators deep in one C
 * statement: deeper, the subexpression becomes a temporary defined before
 * the statement (clang refuses more than 256 nested brackets, and a
 * fused chain of maps would otherwise be one expression as deep as the
 * chain). */
#define EMIT_MAX_NEST 32

static bool is_leaf(const IExpr *e)
{
    return e->kind == IE_CONST || e->kind == IE_INDEX || e->kind == IE_ACCESS ||
           e->kind == IE_ICMP;
}

static void gen_f_node(KGen *g, const IExpr *e, Sb *b);
static void gen_b_node(KGen *g, const IExpr *e, Sb *b);

static void gen_temp(KGen *g, const IExpr *e, Sb *b, bool real)
{
    int nest = g->nest;
    Sb t = {0};
    g->nest = 0;
    if (real)
        gen_f_node(g, e, &t);
    else
        gen_b_node(g, e, &t);
    g->nest = nest;
    /* after the temporaries it uses: they were written as it was */
    line(&g->pre, 0, "const %s ein_x%d = %s;", real ? "float" : "int", g->ntemps, sb_str(&t));
    sb_printf(b, "ein_x%d", g->ntemps++);
    sb_free(&t);
}

/* A real-valued expression. */
static void gen_f(KGen *g, const IExpr *e, Sb *b)
{
    if (g->nest >= EMIT_MAX_NEST && !is_leaf(e)) {
        gen_temp(g, e, b, true);
        return;
    }
    g->nest++;
    gen_f_node(g, e, b);
    g->nest--;
}

/* A condition (an int in C). */
static void gen_b(KGen *g, const IExpr *e, Sb *b)
{
    if (g->nest >= EMIT_MAX_NEST && !is_leaf(e)) {
        gen_temp(g, e, b, false);
        return;
    }
    g->nest++;
    gen_b_node(g, e, b);
    g->nest--;
}

/* The temporaries of the statement about to be written, at its depth. */
static void flush_pre(KGen *g, Sb *b, int depth)
{
    if (g->pre.len)
        sb_indent(b, sb_str(&g->pre), 4 * depth);
    sb_free(&g->pre);
    g->pre = (Sb){0};
}

static void gen_f_node(KGen *g, const IExpr *e, Sb *b)
{
    static const char ops[] = {[IE_ADD] = '+', [IE_SUB] = '-', [IE_MUL] = '*',
                               [IE_DIV] = '/'};
    switch (e->kind) {
    case IE_CONST:
        emit_float(b, e->value);
        return;
    case IE_INDEX:
        sb_puts(b, "(float)");
        gen_ix_paren(g, e->ix, b);
        return;
    case IE_ACCESS:
        gen_access(g, e, b);
        return;
    case IE_MUL:
        if (g->rnd) {
            sb_putc(b, '(');
            gen_factor(g, e->bin.a, b);
            sb_puts(b, " * ");
            gen_factor(g, e->bin.b, b);
            sb_putc(b, ')');
            return;
        }
        /* fall through */
    case IE_ADD: case IE_SUB: case IE_DIV:
        sb_putc(b, '(');
        gen_f(g, e->bin.a, b);
        sb_printf(b, " %c ", ops[e->kind]);
        gen_f(g, e->bin.b, b);
        sb_putc(b, ')');
        return;
    case IE_NEG:
        sb_puts(b, "(-");
        gen_f(g, e->bin.a, b);
        sb_putc(b, ')');
        return;
    case IE_CALL:
        gen_call(g, e, b);
        return;
    default:
        sb_putc(b, '(');
        gen_b(g, e, b);
        sb_puts(b, " ? 1.0f : 0.0f)");
        return;
    }
}

static void gen_b_node(KGen *g, const IExpr *e, Sb *b)
{
    const char *op;
    switch (e->kind) {
    case IE_CONST:
        sb_puts(b, e->value != 0 ? "1" : "0");
        return;
    case IE_CMP:
        if (!(op = cmp_op(e->bin.op)))
            break;
        sb_putc(b, '(');
        gen_f(g, e->bin.a, b);
        sb_printf(b, " %s ", op);
        gen_f(g, e->bin.b, b);
        sb_putc(b, ')');
        return;
    case IE_ICMP:
        if (!(op = cmp_op(e->icmp.op)))
            break;
        sb_putc(b, '(');
        gen_ix(g, e->icmp.ix, b);
        sb_printf(b, " %s 0)", op);
        return;
    case IE_AND: case IE_OR:
        sb_putc(b, '(');
        gen_b(g, e->bin.a, b);
        sb_puts(b, e->kind == IE_AND ? " && " : " || ");
        gen_b(g, e->bin.b, b);
        sb_putc(b, ')');
        return;
    case IE_NOT:
        sb_puts(b, "!");
        gen_b(g, e->bin.a, b);
        return;
    default:
        if (is_bool(e))
            break;
        sb_putc(b, '(');
        gen_f(g, e, b);
        sb_puts(b, " != 0.0f)");
        return;
    }
    diag_error(g->out->loc, "internal error: bad condition (kind %d) in the stage "
               "of '%s' (please report)", (int)e->kind, g->out->name);
    g->errors++;
    sb_puts(b, "0");
}

/* ---- walking expressions for facts ---------------------------------------- */

static int64_t expr_mag(const KGen *g, const IExpr *e)
{
    int64_t m = 0, x;
    switch (e->kind) {
    case IE_CONST:
        return 0;
    case IE_INDEX:
        return ix_mag(g, e->ix);
    case IE_ICMP:
        return ix_mag(g, e->icmp.ix);
    case IE_ACCESS:
        for (int i = 0; i < e->access.nidx; i++)
            if ((x = ix_mag(g, e->access.idx[i])) > m)
                m = x;
        return m;
    case IE_CALL:
        for (int i = 0; i < e->call.nargs; i++)
            if ((x = expr_mag(g, e->call.args[i])) > m)
                m = x;
        return m;
    case IE_NEG: case IE_NOT:
        return expr_mag(g, e->bin.a);
    default:
        m = expr_mag(g, e->bin.a);
        x = expr_mag(g, e->bin.b);
        return m > x ? m : x;
    }
}

/* ---- the kernel ------------------------------------------------------------- */

/* A C name for v, unique among the variables of this kernel's stage. */
static const char *var_cname(KGen *g, const IrVar *v)
{
    Arena *a = g->em->arena;
    const Stage *st = g->k->st;
    const char *base = emit_sanitize(a, v->name && v->name[0] ? v->name : "i");
    const char *n = arena_printf(a, "v_%s", base);
    for (int i = 0; i < st->nloops + st->nsums; i++) {
        const IrVar *u = i < st->nloops ? &st->loops[i] : &st->sums[i - st->nloops];
        const char *un = u->id >= 0 && u->id < g->nvars ? g->vname[u->id] : NULL;
        if (un && strcmp(un, n) == 0)
            return arena_printf(a, "v_%s_%d", base, v->id);
    }
    return n;
}

static void line(Sb *b, int depth, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void line(Sb *b, int depth, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = xmalloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    sb_printf(b, "%*s%s\n", 4 * depth, "", s);
    free(s);
}

static int kernel_build_with(KGen *gp, Emit *em, Kernel *k, const IrTensor *t,
                             const Stage *st, int index);

/* ---- a reduction split across lanes ------------------------------------------
 * For the CUDA dialect's warp and block reductions: the terms of one
 * output element flattened into one counter (the last sum variable the
 * fastest, as the loop nest runs them), lane ein_lane of ein_nlanes taking
 * every ein_nlanes-th term into its own partial acc (and any, for max and
 * min).  The dialect combines the partials in a fixed order. */
static void build_part(KGen *g, Kernel *k, const char *cond_pre, const char *cond,
                       const int *level)
{
    const Stage *st = k->st;
    Arena *a = g->em->arena;
    double terms = 1;
    for (int j = 0; j < st->nsums; j++)
        terms *= (double)(st->sums[j].hi - st->sums[j].lo);
    if (terms < 2 || terms > 4e18)
        return;
    k->terms = (int64_t)terms;
    const int64_t limit = KERNEL_INT_LIMIT;
    const char *tty = k->terms > limit ? "int64_t" : k->ity;
    bool cast = strcmp(tty, k->ity) != 0;
    /* max, min and product keep `any`: no term at all gives 0 */
    bool maxmin = st->red == RED_MAX || st->red == RED_MIN || st->red == RED_PROD;

    /* guards and body first: they decide which variables are bound */
    Sb in = {0};
    for (int i = 0; i < st->nguards; i++) {
        if (level[i] < 0)
            continue;
        Sb gc = {0};
        gen_b(g, st->guards[i], &gc);
        flush_pre(g, &in, 0);
        line(&in, 0, "if (!%s)", sb_str(&gc));
        line(&in, 1, "continue;");
        sb_free(&gc);
    }
    Sb body = {0};
    g->rnd = st->red == RED_SUM && g->em->opt->precision != PREC_FP32;
    gen_f(g, st->body, &body);
    g->rnd = false;
    flush_pre(g, &in, 0);
    if (st->red == RED_SUM) {
        line(&in, 0, "acc += %s;", sb_str(&body));
    } else if (st->red == RED_PROD) {
        line(&in, 0, "acc = any ? acc * (%s) : (%s);", sb_str(&body), sb_str(&body));
        line(&in, 0, "any = 1;");
    } else {
        line(&in, 0, "float v = %s;", sb_str(&body));
        line(&in, 0, "if (!any || v %c acc || isnan(v))", st->red == RED_MAX ? '>' : '<');
        line(&in, 1, "acc = v;");
        line(&in, 0, "any = 1;");
    }
    sb_free(&body);

    Sb b = {0};
    line(&b, 0, "float acc = 0.0f;");
    if (maxmin)
        line(&b, 0, "int any = 0;     /* no term at all gives 0 */");
    int depth = 0;
    if (cond_pre && *cond_pre)
        sb_puts(&b, cond_pre);
    if (cond && *cond)
        line(&b, depth++, "if (%s) {", cond);
    line(&b, depth++, "for (%s ein_t = ein_lane; ein_t < %" PRId64 "; ein_t += ein_nlanes) {",
         tty, k->terms);
    int64_t below = 1;
    for (int j = st->nsums - 1; j >= 0; j--) {
        const IrVar *v = &st->sums[j];
        int64_t ext = v->hi - v->lo;
        if (g->used[v->id]) {
            Sb x = {0};
            sb_puts(&x, "ein_t");
            if (below > 1)
                sb_printf(&x, " / %" PRId64, below);
            if (j > 0)
                sb_printf(&x, " %% %" PRId64, ext);
            if (v->lo)
                sb_printf(&x, " %c %" PRId64, v->lo < 0 ? '-' : '+',
                          v->lo < 0 ? -v->lo : v->lo);
            if (cast)
                line(&b, depth, "const %s %s = (%s)(%s);", k->ity, g->vname[v->id], k->ity,
                     sb_str(&x));
            else
                line(&b, depth, "const %s %s = %s;", k->ity, g->vname[v->id], sb_str(&x));
            sb_free(&x);
        }
        below *= ext;
    }
    sb_indent(&b, sb_str(&in), 4 * depth);
    sb_free(&in);
    while (depth > 0)
        line(&b, --depth, "}");
    k->part = arena_strdup(a, sb_str(&b));
    sb_free(&b);
}

/* How many reads of the body (and guards) step through memory by more
 * than one element when variable `var` steps by one: 0 for a read that
 * does not move or moves to the next element.  A variable inside a
 * floor division or modulo by less than a warp counts as scattered. */
static int scattered(const IExpr *e, int var)
{
    if (var < 0)
        return 0;
    int n = 0;
    switch (e->kind) {
    case IE_CONST: case IE_INDEX: case IE_ICMP:
        return 0;
    case IE_ACCESS: {
        if (!e->access.tensor)
            return 0;
        const IrTensor *t = e->access.tensor;
        int64_t stride = 0, rs = 1;
        bool odd = false;
        for (int d = e->access.nidx - 1; d >= 0 && d < t->rank; d--) {
            const Ix *ix = e->access.idx[d];
            for (int i = 0; i < ix->n; i++) {
                const IxTerm *x = &ix->t[i];
                /* a step too large for 64 bits is scattered too */
                int64_t step;
                if (x->kind == IX_VAR) {
                    if (x->var == var && (!i64_mul(x->coef, rs, &step) ||
                                          !i64_add(stride, step, &stride)))
                        odd = true;
                } else if (ix_uses(x->arg, var)) {
                    int64_t c = ix_coef(x->arg, var);
                    if (x->d < 32 || c == 0)
                        odd = true;
                    else if (x->kind == IX_MOD &&
                             (!i64_mul(x->coef, c, &step) || !i64_mul(step, rs, &step) ||
                              !i64_add(stride, step, &stride)))
                        odd = true;
                }
            }
            if (t->shape[d] > 0 && rs < (INT64_C(1) << 40))
                rs *= t->shape[d];
        }
        return odd || stride > 1 || stride < -1;
    }
    case IE_CALL:
        for (int i = 0; i < e->call.nargs; i++)
            n += scattered(e->call.args[i], var);
        return n;
    case IE_NEG: case IE_NOT:
        return scattered(e->bin.a, var);
    default:
        return scattered(e->bin.a, var) + scattered(e->bin.b, var);
    }
}

/* Whether a plain map's value is arithmetic a vectorizer takes as it is:
 * reads of f32 tensors that stay inside their shapes (no select of a
 * zero) through affine indices, + - * /, and relu, fabsf, sqrtf.  The C
 * dialect marks the innermost loop of such a kernel `omp simd`. */
static bool vec_ix(const Ix *ix)
{
    for (int i = 0; i < ix->n; i++)
        if (ix->t[i].kind != IX_VAR)
            return false;
    return true;
}

static bool vec_expr(const KGen *g, const IExpr *e)
{
    switch (e->kind) {
    case IE_CONST:
        return true;
    case IE_ACCESS: {
        const IrTensor *t = e->access.tensor;
        if (!t || t->elem != ELEM_F32 || e->access.nidx != t->rank)
            return false;
        for (int d = 0; d < t->rank; d++) {
            int64_t mn, mx;
            if (!vec_ix(e->access.idx[d]))
                return false;
            bounds(g, e->access.idx[d], &mn, &mx);
            if (mn < 0 || mx >= t->shape[d])
                return false;
        }
        return true;
    }
    case IE_ADD: case IE_SUB: case IE_MUL: case IE_DIV:
        return vec_expr(g, e->bin.a) && vec_expr(g, e->bin.b);
    case IE_NEG:
        return vec_expr(g, e->bin.a);
    case IE_CALL:
        /* not sqrtf: it sets errno (-fmath-errno, the default), so no
         * compiler vectorizes it, and clang warns that it cannot do what
         * `omp simd` asks */
        if (e->call.nargs != 1 || (e->call.fn != FN_RELU && e->call.fn != FN_ABS))
            return false;
        return vec_expr(g, e->call.args[0]);
    default:
        return false;
    }
}

/* The innermost variable of a list that takes more than one value. */
static int innermost(const IrVar *v, int n)
{
    for (int i = n - 1; i >= 0; i--)
        if (v[i].hi - v[i].lo > 1)
            return v[i].id;
    return -1;
}

static int int_cmp(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

int kernel_build(Emit *em, const IrTensor *t, int index, Kernel *k)
{
    const Stage *st = t->stage;
    Arena *a = em->arena;
    memset(k, 0, sizeof *k);
    k->out = t;
    k->st = st;
    k->name = arena_printf(a, "k%d_%s", index, em->cname[t->id]);
    /* The dialects round the element to its type as they store it; the
     * helpers are written before the kernels, so say so now. */
    if (elem_is_int(t->elem))
        em->helpers |= HELP_TO(t->elem);
    else if (t->elem != ELEM_F32)
        em->helpers |= t->elem == ELEM_F16 ? HELP_ST_F16 : HELP_ST_BF16;

    KGen g = {.em = em, .k = k, .out = t};
    if (!em->var_lo) {
        em->nvars = ir_var_count(em->p->cx);
        em->var_lo = arena_alloc(a, sizeof *em->var_lo * (size_t)(em->nvars + 1));
        em->var_hi = arena_alloc(a, sizeof *em->var_hi * (size_t)(em->nvars + 1));
        em->var_name = arena_alloc(a, sizeof *em->var_name * (size_t)(em->nvars + 1));
        em->var_used = arena_alloc(a, sizeof *em->var_used * (size_t)(em->nvars + 1));
    }
    g.nvars = em->nvars;
    g.lo = em->var_lo;
    g.hi = em->var_hi;
    g.vname = em->var_name;
    g.used = em->var_used;
    /* Tables by tensor id, made once per file like the variables' (a
     * program of many kernels stays linear). */
    if (!em->read_mark) {
        em->read_mark = arena_alloc(a, sizeof *em->read_mark * (size_t)(em->p->ntensors + 1));
        em->read_ids = arena_alloc(a, sizeof *em->read_ids * (size_t)(em->p->ntensors + 1));
        em->big_tensor = false;
        for (int i = 0; i < em->p->ntensors; i++) {
            int64_t n = 1;
            for (int d = 0; d < em->p->tensors[i]->rank; d++)
                if (!i64_mul(n, em->p->tensors[i]->shape[d], &n))
                    n = INT64_MAX;
            em->big_tensor |= n > KERNEL_INT_LIMIT;
        }
    }
    g.reads = em->read_mark;
    g.read_ids = em->read_ids;
    g.nread_ids = 0;
    int rc = kernel_build_with(&g, em, k, t, st, index);
    /* leave the per-variable tables clean for the next kernel */
    for (int i = 0; i < st->nloops + st->nsums; i++) {
        const IrVar *v = i < st->nloops ? &st->loops[i] : &st->sums[i - st->nloops];
        if (v->id >= 0 && v->id < em->nvars) {
            em->var_name[v->id] = NULL;
            em->var_used[v->id] = false;
        }
    }
    return rc;
}

static int kernel_build_with(KGen *gp, Emit *em, Kernel *k, const IrTensor *t,
                             const Stage *st, int index)
{
    KGen g = *gp;
    Arena *a = em->arena;
    (void)index;

    if (st->nloops != t->rank) {
        diag_error(t->loc, "internal error: the stage of '%s' has %d loop variables "
                   "for rank %d (please report)", t->name, st->nloops, t->rank);
        return -1;
    }
    const IrVar *bad = NULL;
    for (int i = 0; i < st->nloops + st->nsums; i++) {
        const IrVar *v = i < st->nloops ? &st->loops[i] : &st->sums[i - st->nloops];
        if (v->id < 0 || v->id >= g.nvars || g.vname[v->id])
            bad = v;
        else
            g.vname[v->id] = var_cname(&g, v);
    }
    if (bad) {
        diag_error(t->loc, "internal error: variable '%s' (id %d) is bound twice or "
                   "unknown in the stage of '%s' (please report)", bad->name, bad->id,
                   t->name);
        return -1;
    }

    /* The loop variables run over the full shape in the dialects; the body
     * works only inside the loop ranges, which is what ix_bounds sees. */
    k->total = 1;
    bool empty = false;
    double inside = 1, terms = 1;
    k->loopvar = arena_alloc(a, sizeof *k->loopvar * (size_t)(t->rank + 1));
    int64_t mag = 0;
    for (int i = 0; i < st->nloops; i++) {
        const IrVar *v = &st->loops[i];
        k->loopvar[i] = g.vname[v->id];
        g.lo[v->id] = v->lo;
        g.hi[v->id] = v->hi;
        if (v->lo < 0 || v->hi > t->shape[i]) {
            diag_error(t->loc, "internal error: loop %d of '%s' ranges over [%" PRId64
                       ", %" PRId64 ") outside its shape (please report)", i, t->name,
                       v->lo, v->hi);
            return -1;
        }
        if (!i64_mul(k->total, t->shape[i], &k->total)) {
            diag_error(t->loc, "tensor '%s' has too many elements", t->name);
            return -1;
        }
        empty |= v->lo >= v->hi;
        inside *= (double)(v->hi - v->lo);
        if (t->shape[i] > mag)
            mag = t->shape[i];
    }
    for (int i = 0; i < st->nsums; i++) {
        const IrVar *v = &st->sums[i];
        g.lo[v->id] = v->lo;
        g.hi[v->id] = v->hi;
        empty |= v->lo >= v->hi;
        terms *= (double)(v->hi - v->lo);
        int64_t m = v->lo < 0 ? -v->lo : v->lo;
        if (m > mag)
            mag = m;
        m = v->hi < 0 ? -v->hi : v->hi;
        if (m > mag)
            mag = m;
    }
    k->work = empty ? 0 : inside * terms;

    /* int unless an index, an offset or the grid-stride counter could
     * leave it (the counter overshoots the total by up to one grid). */
    const int64_t limit = INT32_MAX - (INT64_C(1) << 25);
    if (!empty) {
        int64_t m;
        for (int i = 0; i < st->nguards; i++)
            if ((m = expr_mag(&g, st->guards[i])) > mag)
                mag = m;
        if ((m = expr_mag(&g, st->body)) > mag)
            mag = m;
    }
    g.wide = mag > limit || k->total > limit || em->big_tensor;
    k->ity = g.wide ? "int64_t" : "int";

    Sb b = {0};
    const char *part_cond = NULL;
    bool maxmin = st->red == RED_MAX || st->red == RED_MIN || st->red == RED_PROD;
    bool padded = false;
    for (int i = 0; i < st->nloops; i++)
        padded |= st->loops[i].lo > 0 || st->loops[i].hi < t->shape[i];
    if (!empty && st->red == RED_NONE && !padded && st->nguards == 0) {
        /* A plain map: the element is the body. */
        k->simd = t->elem == ELEM_F32 && vec_expr(&g, st->body);
        Sb body = {0};
        gen_f(&g, st->body, &body);
        flush_pre(&g, &b, 0);
        line(&b, 0, "const float acc = %s;", sb_str(&body));
        sb_free(&body);
    } else {
        line(&b, 0, "float acc = 0.0f;");
    }
    if (!empty && st->red == RED_NONE && !padded && st->nguards == 0) {
        /* done */
    } else if (empty) {
        line(&b, 0, "/* empty range: every element is 0 */");
    } else {
        if (maxmin)
            line(&b, 0, "int any = 0;     /* no term at all gives 0 */");
        /* Output padding and the guards that do not depend on the sum. */
        Sb cond = {0};
        int nc = 0;
        for (int i = 0; i < st->nloops; i++) {
            const IrVar *v = &st->loops[i];
            if (v->lo > 0 || v->hi < t->shape[i])
                g.used[v->id] = true;
            if (v->lo > 0)
                sb_printf(&cond, "%s%s >= %" PRId64, nc++ ? " && " : "",
                          k->loopvar[i], v->lo);
            if (v->hi < t->shape[i])
                sb_printf(&cond, "%s%s < %" PRId64, nc++ ? " && " : "",
                          k->loopvar[i], v->hi);
        }
        int *level = arena_alloc(a, sizeof *level * (size_t)(st->nguards + 1));
        for (int i = 0; i < st->nguards; i++) {
            level[i] = -1;
            for (int j = 0; j < st->nsums; j++)
                if (ir_expr_uses(st->guards[i], st->sums[j].id))
                    level[i] = j;
            if (level[i] < 0) {
                sb_puts(&cond, nc++ ? " && " : "");
                gen_b(&g, st->guards[i], &cond);
            }
        }
        int depth = 0;
        /* the temporaries of the guards outside the sums, before them (in
         * the lanes' loop too) */
        const char *cond_pre = arena_strdup(a, sb_str(&g.pre));
        flush_pre(&g, &b, 0);
        if (nc) {
            line(&b, depth++, "if (%s) {", sb_str(&cond));
        }
        if (st->red != RED_NONE)
            part_cond = arena_strdup(a, sb_str(&cond));
        sb_free(&cond);
        for (int j = 0; j < st->nsums; j++) {
            const IrVar *v = &st->sums[j];
            const char *n = g.vname[v->id];
            line(&b, depth++, "for (%s %s = %" PRId64 "; %s < %" PRId64 "; ++%s) {",
                 k->ity, n, v->lo, n, v->hi, n);
            for (int i = 0; i < st->nguards; i++) {
                if (level[i] != j)
                    continue;
                Sb gc = {0};
                gen_b(&g, st->guards[i], &gc);
                flush_pre(&g, &b, depth);
                line(&b, depth, "if (!%s)", sb_str(&gc));
                line(&b, depth + 1, "continue;");
                sb_free(&gc);
            }
        }
        Sb body = {0};
        g.rnd = st->red == RED_SUM && em->opt->precision != PREC_FP32;
        gen_f(&g, st->body, &body);
        g.rnd = false;
        flush_pre(&g, &b, depth);
        switch (st->red) {
        case RED_NONE:
            line(&b, depth, "acc = %s;", sb_str(&body));
            break;
        case RED_SUM:
            line(&b, depth, "acc += %s;", sb_str(&body));
            break;
        case RED_PROD:
            line(&b, depth, "float v = %s;", sb_str(&body));
            line(&b, depth, "acc = any ? acc * v : v;");
            line(&b, depth, "any = 1;");
            break;
        case RED_MAX:
        case RED_MIN:
            /* NaN propagates, as in PyTorch's amax/amin. */
            line(&b, depth, "float v = %s;", sb_str(&body));
            line(&b, depth, "if (!any || v %c acc || isnan(v))",
                 st->red == RED_MAX ? '>' : '<');
            line(&b, depth + 1, "acc = v;");
            line(&b, depth, "any = 1;");
            break;
        }
        sb_free(&body);
        while (depth > 0)
            line(&b, --depth, "}");
        if (st->red != RED_NONE)
            build_part(&g, k, cond_pre, part_cond, level);
    }
    k->body = arena_strdup(a, sb_str(&b));
    if (!empty) {
        int vo = innermost(st->loops, st->nloops), vs = innermost(st->sums, st->nsums);
        k->scatter_out = scattered(st->body, vo);
        k->scatter_sum = scattered(st->body, vs);
        for (int i = 0; i < st->nguards; i++) {
            k->scatter_out += scattered(st->guards[i], vo);
            k->scatter_sum += scattered(st->guards[i], vs);
        }
    }
    k->loopused = arena_alloc(a, sizeof *k->loopused * (size_t)(t->rank + 1));
    for (int i = 0; i < st->nloops; i++)
        k->loopused[i] = g.used[st->loops[i].id];
    sb_free(&b);

    Sb c = {0};
    emit_source_comment(em, t, &c);
    k->comment = arena_strdup(a, sb_str(&c));
    sb_free(&c);

    /* the tensors read, in id order; the shared marks cleared */
    qsort(g.read_ids, (size_t)g.nread_ids, sizeof *g.read_ids, int_cmp);
    k->reads = arena_alloc(a, sizeof *k->reads * (size_t)(g.nread_ids + 1));
    for (int i = 0; i < g.nread_ids; i++) {
        k->reads[k->nreads++] = em->p->tensors[g.read_ids[i]];
        g.reads[g.read_ids[i]] = false;
    }
    return g.errors ? -1 : 0;
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

/* Row-major offset of an element from the loop variables. */
void emit_store_offset(Sb *b, const Kernel *k)
{
    int r = k->out->rank;
    if (r == 0) {
        sb_putc(b, '0');
        return;
    }
    for (int i = 2; i < r; i++)
        sb_putc(b, '(');
    sb_puts(b, k->loopvar[0]);
    for (int i = 1; i < r; i++)
        sb_printf(b, " * %" PRId64 " + %s%s", k->out->shape[i], k->loopvar[i],
                  i + 1 < r && i >= 1 ? ")" : "");
}
