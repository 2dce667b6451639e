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
    return e == ELEM_F32 ? "float" : "uint16_t";
}

size_t emit_elem_size(ElemType e)
{
    return e == ELEM_F32 ? 4 : 2;
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
};

bool emit_is_reserved(const char *id)
{
    for (size_t i = 0; i < sizeof reserved / sizeof *reserved; i++)
        if (strcmp(reserved[i], id) == 0)
            return true;
    /* Names of the C implementation and of the generated helpers. */
    return (id[0] == '_' && (id[1] == '_' || (id[1] >= 'A' && id[1] <= 'Z'))) ||
           strncmp(id, "ein_", 4) == 0 || strncmp(id, "EIN_", 4) == 0;
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
void emit_name_tensors(Emit *em)
{
    const IrProgram *p = em->p;
    for (int i = 0; i < p->ntensors; i++) {
        const char *base = emit_sanitize(em->arena, p->tensors[i]->name);
        const char *n = emit_is_reserved(base) ? arena_printf(em->arena, "%s_", base)
                                               : base;
        for (int k = 2;; k++) {
            bool taken = false;
            for (int j = 0; j < i && !taken; j++)
                taken = strcmp(em->cname[j], n) == 0;
            /* M_run names an output that is also an input NAME_out. */
            for (int j = 0; j < i && !taken; j++)
                taken = p->tensors[j]->kind == IT_INPUT && p->tensors[j]->is_output &&
                        strlen(n) == strlen(em->cname[j]) + 4 &&
                        strncmp(n, em->cname[j], strlen(em->cname[j])) == 0 &&
                        strcmp(n + strlen(em->cname[j]), "_out") == 0;
            if (!taken)
                break;
            n = arena_printf(em->arena, "%s_%d", base, k);
        }
        em->cname[i] = n;
    }
}

/* ---- literals and comments ---------------------------------------------------- */

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
    sb_printf(raw, "%s:%d:%d:\n", f->path, line, col);
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
