/* api.c - the C API of a generated program, named after the model:
 *
 *   int  M_create(M_ctx **ctx);
 *   int  M_load_weights(M_ctx *ctx, const char *path);      safetensors
 *   int  M_set_tensor(M_ctx *ctx, const char *name, const void *data, size_t nbytes);
 *   int  M_get_tensor(M_ctx *ctx, const char *name, void *data, size_t nbytes);
 *   int  M_run(M_ctx *ctx, <inputs>, <outputs> [, cudaStream_t stream]);
 *   int  M_run_named(M_ctx *ctx [, cudaStream_t stream]);
 *   const char *M_last_error(const M_ctx *ctx);
 *   int  M_destroy(M_ctx *ctx);
 *   int  M_tensor_count(void);  const M_tensor_info *M_tensor_at(int i);
 *
 * Inputs and outputs are `float *` for f32 tensors and `uint16_t *` (bit
 * patterns) for f16 and bf16 ones, in M_run as in the buffers.
 * Every tensor has a buffer in the context (device memory on CUDA); M_run
 * reads its inputs from and writes its outputs to the caller's pointers
 * instead.  Weight-only stages run on the first run after a weight
 * changed.  The generated text is written here once, with the few places
 * where the dialects differ (memory, copies, streams, error checks)
 * chosen by the target.  emit/README.md documents the API for users; the
 * generated file repeats it in its header comment. */
#include "config.h"
#include "emit_int.h"

#include <ctype.h>
#include <inttypes.h>
#include <string.h>

/* Append `text` with $m -> model, $M -> MODEL, $S -> ", cudaStream_t
 * stream" on CUDA, $s -> ", stream" on CUDA (both empty on C). */
static void tpl(Emit *em, const char *text)
{
    Sb *o = &em->out;
    bool cuda = emit_is_cuda(em);
    for (const char *s = text; *s; s++) {
        if (*s != '$' || !s[1]) {
            sb_putc(o, *s);
            continue;
        }
        switch (*++s) {
        case 'm': sb_puts(o, em->model); break;
        case 'M': sb_puts(o, em->upper); break;
        case 'S': sb_puts(o, cuda ? ", cudaStream_t stream" : ""); break;
        case 's': sb_puts(o, cuda ? ", stream" : ""); break;
        default: sb_putc(o, '$'); sb_putc(o, *s); break;
        }
    }
}

void emit_tpl(Emit *em, const char *text)
{
    tpl(em, text);
}

/* Does the plan compute t at weight load? */
static bool at_load(const Emit *em, const IrTensor *t)
{
    return t->kind == IT_STAGE && emit_op(em, t)->at_load;
}

/* Is tensor t computed by the run-time kernels (not at weight load)? */
static bool runtime_stage(const Emit *em, const IrTensor *t)
{
    return t->kind == IT_STAGE && !at_load(em, t);
}

/* The C parameter name of an output in M_run: its name, or name_out when
 * the same tensor is also an input parameter. */
static const char *out_param(Emit *em, const IrTensor *t)
{
    return t->kind == IT_INPUT ? arena_printf(em->arena, "%s_out", em->cname[t->id])
                               : em->cname[t->id];
}

/* "F32", "I32", ...: the element type as the API's enum names it. */
static const char *api_elem_upper(ElemType e)
{
    static const char *const n[ELEM_COUNT] = {
        [ELEM_F32] = "F32", [ELEM_F16] = "F16", [ELEM_BF16] = "BF16", [ELEM_I8] = "I8",
        [ELEM_I16] = "I16", [ELEM_I32] = "I32", [ELEM_I64] = "I64", [ELEM_U8] = "U8",
        [ELEM_BOOL] = "BOOL",
    };
    return (unsigned)e < ELEM_COUNT ? n[e] : "F32";
}

static void write_run_params(Emit *em, bool names)
{
    const IrProgram *p = em->p;
    Sb *o = &em->out;
    for (int i = 0; i < p->ntensors; i++) {
        const IrTensor *t = p->tensors[i];
        if (t->kind == IT_INPUT)
            sb_printf(o, ",\n        const %s *%s", emit_ctype(t->elem),
                      names ? em->cname[t->id] : "");
    }
    for (int i = 0; i < p->noutputs; i++) {
        const IrTensor *t = p->tensors[p->outputs[i]];
        sb_printf(o, ",\n        %s *%s", emit_ctype(t->elem), names ? out_param(em, t) : "");
    }
    if (emit_is_cuda(em))
        sb_puts(o, ",\n        cudaStream_t stream");
}

/* `s` as a C string literal: quotes, backslashes, '?' (trigraphs) and
 * bytes outside printable ASCII escaped in octal. */
static void c_string(Sb *b, const char *s)
{
    sb_putc(b, '"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\' || *p == '?')
            sb_printf(b, "\\%c", *p);
        else if (*p < 0x20 || *p > 0x7e)
            sb_printf(b, "\\%03o", *p);
        else
            sb_putc(b, (char)*p);
    }
    sb_putc(b, '"');
}

/* The name a tensor is loaded and set by: its external name, else its own. */
static const char *load_name(const IrTensor *t)
{
    return t->ext ? t->ext : t->name;
}

static void shape_text(Sb *b, const IrTensor *t)
{
    sb_puts(b, "[");
    for (int d = 0; d < t->rank; d++)
        sb_printf(b, "%s%" PRId64, d ? ", " : "", t->shape[d]);
    sb_puts(b, "]");
}

/* ---- the header comment: how to use this file ----------------------------- */

void api_write_header_comment(Emit *em)
{
    const IrProgram *p = em->p;
    Sb *o = &em->out;
    bool cuda = emit_is_cuda(em);
    const char *mem = cuda ? "device" : "host";
    bool h16 = emit_has_16bit(p);
    tpl(em,
" *\n"
" * C API (usable from C and C++; every function but $m_last_error returns\n"
" * $M_OK, 0, or an error code $M_E*, and then $m_last_error(ctx) says\n"
" * what went wrong):\n"
" *\n"
" *   int $m_create($m_ctx **ctx);\n"
" *       Allocate a context and a buffer for every tensor");
    sb_puts(o, cuda ? " on the current\n *       CUDA device.  On failure *ctx is still a context to read\n"
                    : ".\n *       On failure *ctx is still a context to read\n");
    tpl(em,
" *       the message from and to destroy, or NULL when even that failed\n"
" *       ($m_last_error(NULL) then says so).\n"
" *   int $m_load_weights($m_ctx *ctx, const char *path);\n"
" *       Load every weight found in a safetensors file (by its external\n"
" *       name if it has one, else by its .ein name,\n");
    sb_puts(o, h16 ? " *       its element type as dtype: F32, F16, BF16, I32 ..., matching\n"
                     " *       shape);\n"
                     " *       other entries of the file are ignored.\n"
                   : " *       F32, matching shape); other entries of the file are ignored.\n");
    tpl(em,
" *   int $m_set_tensor($m_ctx *ctx, const char *name, const void *data,\n"
" *                     size_t nbytes);\n"
" *       (Here and in $m_get_tensor a tensor is named by its .ein name\n"
" *       or its external name.)\n");
    sb_puts(o, h16 ? " *       Set a weight or an input from host memory (row-major, in\n"
                     " *       its element type; nbytes exactly the tensor's size).\n"
                   : " *       Set a weight or an input from host memory (row-major f32,\n"
                     " *       nbytes exactly the tensor's size).\n");
    tpl(em,
" *   int $m_get_tensor($m_ctx *ctx, const char *name, void *data,\n"
" *                     size_t nbytes);\n"
" *       Copy a tensor that holds a value (set, loaded or computed) to\n"
" *       host memory.");
    tpl(em, cuda ? "  $m_set_tensor and $m_get_tensor synchronise the\n"
                   " *       device." : "");
    sb_puts(o, "\n");
    /* The run prototype on one line, wrapped at the commas. */
    Sb proto = {0};
    sb_printf(&proto, "int %s_run(%s_ctx *ctx", em->model, em->model);
    for (int i = 0; i < p->ntensors; i++)
        if (p->tensors[i]->kind == IT_INPUT)
            sb_printf(&proto, ", const %s *%s", emit_ctype(p->tensors[i]->elem),
                      em->cname[i]);
    for (int i = 0; i < p->noutputs; i++) {
        const IrTensor *t = p->tensors[p->outputs[i]];
        sb_printf(&proto, ", %s *%s", emit_ctype(t->elem), out_param(em, t));
    }
    sb_puts(&proto, cuda ? ", cudaStream_t stream);" : ");");
    sb_puts(o, " *   ");
    int col = 5;
    for (const char *s = sb_str(&proto); *s;) {
        size_t n = strcspn(s, ",");
        n += s[n] == ',';
        if (col + (int)n > 78 && col > 8) {
            sb_puts(o, "\n *          ");
            col = 12;
        }
        sb_printf(o, "%.*s", (int)n, s);
        col += (int)n;
        s += n;
    }
    sb_free(&proto);
    tpl(em, "\n"
" *       Compute the outputs from the inputs, all ");
    if (h16)
        sb_printf(o, "%s pointers to\n"
                  " *       row-major arrays of the tensors' element types that do not\n"
                  " *       overlap", mem);
    else
        sb_printf(o, "%s pointers to row-major\n"
                  " *       f32 arrays that do not overlap", mem);
    sb_puts(o, cuda ? "; the kernels are queued on\n"
                      " *       `stream` and the call returns without waiting for them (a\n"
                      " *       failure while they run shows at the next synchronising call).\n"
                    : ".\n");
    tpl(em,
" *       Every weight must have been loaded or set.\n"
" *   int $m_run_named($m_ctx *ctx$S);\n"
" *       The same with the inputs set by $m_set_tensor; read the outputs\n"
" *       with $m_get_tensor.\n"
" *   const char *$m_last_error(const $m_ctx *ctx);\n"
" *       The message of the latest failure.\n"
" *   int $m_destroy($m_ctx *ctx);\n"
" *       Free the context and its buffers.\n"
" *   int $m_tensor_count(void);  const $m_tensor_info *$m_tensor_at(int i);\n"
" *       Every tensor of the model: name, kind, shape, element type, size.\n"
" *   const $m_tensor_info *$m_output_at(int k);\n"
" *       The k-th output, in the order of $m_run's parameters (NULL past\n"
" *       the last).\n"
" * Error codes: $M_EINVAL bad argument, $M_EIO file error, $M_EFORMAT bad\n"
" * safetensors file or tensor, $M_ENOMEM out of memory, $M_ECUDA a CUDA\n"
" * call failed, $M_EMISSING a weight or input was never set, $M_ELIB a\n"
" * library call failed (oneDNN).  A context is not safe to use from two\n"
" * threads at once.\n");
    if (h16)
        tpl(em,
" * Element types: an f32 tensor is an array of float; an f16 or bf16 tensor\n"
" * an array of uint16_t holding IEEE binary16 or bfloat16 bit patterns\n"
" * (safetensors' F16 and BF16; on CUDA __half and __nv_bfloat16 have the\n"
" * same layout: cast the pointers).  The kernels compute in float: a read\n"
" * widens an element exactly, a store rounds to nearest even.  An i8, i16,\n"
" * i32, i64 or u8 tensor is an array of int8_t .. uint8_t, a bool tensor of\n"
" * uint8_t 0 or 1 (safetensors' I8 .. U8, BOOL); a store converts toward\n"
" * zero, saturating.\n");
    tpl(em,
" * To call the API from another file, declare it there with\n"
" *     #define $M_API_ONLY\n");
    sb_printf(o, " *     #include \"%s\"\n", em->file_base);
    sb_puts(o, " *\n * Tensors (inputs and outputs in the order of the run parameters):\n");
    for (int i = 0; i < p->ntensors; i++) {
        const IrTensor *t = p->tensors[i];
        const char *kind = t->kind == IT_INPUT ? "input" : t->kind == IT_WEIGHT ? "weight"
                           : at_load(em, t) ? "computed at load" : "computed";
        sb_printf(o, " *   %-12s %s %s", t->name, kind, elem_name(t->elem));
        shape_text(o, t);
        sb_printf(o, "%s", t->is_output ? ", output" : "");
        if (t->ext) {
            /* in a comment: printable ASCII, and no end of the comment */
            sb_puts(o, ", external name \"");
            for (const char *c = t->ext; *c; c++)
                sb_putc(o, *c >= 0x20 && *c <= 0x7e && !(c[0] == '*' && c[1] == '/')
                               ? *c : '?');
            sb_puts(o, "\"");
        }
        sb_puts(o, "\n");
    }
}

/* ---- declarations ------------------------------------------------------------- */

static void write_decls(Emit *em)
{
    bool cuda = emit_is_cuda(em);
    tpl(em,
"/* ---- API ---------------------------------------------------------------- */\n"
"#ifndef $M_API_DECLARED\n"
"#define $M_API_DECLARED\n");
    sb_puts(&em->out, cuda ? "#include <cuda_runtime.h>\n" : "");
    tpl(em,
"#include <stddef.h>\n"
"#include <stdint.h>\n"
"\n"
"#ifdef __cplusplus\n"
"extern \"C\" {\n"
"#endif\n"
"\n"
"typedef struct $m_ctx $m_ctx;\n"
"\n"
"enum {\n"
"    $M_OK = 0,\n"
"    $M_EINVAL = 1,      /* bad argument: null pointer, unknown name, wrong size */\n"
"    $M_EIO = 2,         /* a file cannot be read or written */\n"
"    $M_EFORMAT = 3,     /* a broken safetensors file, or a tensor of another\n"
"                           dtype or shape in it */\n"
"    $M_ENOMEM = 4,      /* out of host or device memory */\n"
"    $M_ECUDA = 5,       /* a CUDA call failed */\n"
"    $M_EMISSING = 6,    /* a weight or input was never set */\n"
"    $M_ELIB = 7         /* a library call failed (oneDNN) */\n"
"};\n"
"\n"
"enum { $M_INPUT = 0, $M_WEIGHT = 1, $M_COMPUTED = 2 };\n"
"/* Element types: float; uint16_t IEEE binary16 and bfloat16 bit patterns;\n"
"   int8_t, int16_t, int32_t, int64_t, uint8_t; bool as a uint8_t 0 or 1. */\n"
"enum { $M_F32 = 0, $M_F16 = 1, $M_BF16 = 2, $M_I8 = 3, $M_I16 = 4, $M_I32 = 5,\n"
"       $M_I64 = 6, $M_U8 = 7, $M_BOOL = 8 };\n"
"\n"
"typedef struct $m_tensor_info {\n"
"    const char *name;           /* as in the .ein file */\n"
"    const char *ext_name;       /* loaded and set by: the external name, else name */\n"
"    int kind;                   /* $M_INPUT, $M_WEIGHT, $M_COMPUTED */\n"
"    int is_output;\n"
"    int rank;\n"
"    const int64_t *shape;       /* rank entries; NULL for rank 0 */\n"
"    size_t count;               /* elements */\n"
"    int elem;                   /* $M_F32, $M_F16, $M_BF16, $M_I8, ... */\n"
"    size_t nbytes;              /* count * element size */\n"
"} $m_tensor_info;\n"
"\n"
"int $m_create($m_ctx **ctx);\n"
"int $m_load_weights($m_ctx *ctx, const char *path);\n"
"int $m_set_tensor($m_ctx *ctx, const char *name, const void *data,\n"
"        size_t nbytes);\n"
"int $m_get_tensor($m_ctx *ctx, const char *name, void *data, size_t nbytes);\n"
"int $m_run($m_ctx *ctx");
    write_run_params(em, true);
    tpl(em, ");\n"
"int $m_run_named($m_ctx *ctx$S);\n"
"const char *$m_last_error(const $m_ctx *ctx);\n"
"int $m_destroy($m_ctx *ctx);\n"
"int $m_tensor_count(void);\n"
"const $m_tensor_info *$m_tensor_at(int i);\n"
"const $m_tensor_info *$m_output_at(int k);\n"
"\n"
"#ifdef __cplusplus\n"
"}\n"
"#endif\n"
"#endif /* $M_API_DECLARED */\n"
"\n");
}

/* ---- the tensor table and the context ------------------------------------------ */

static void write_tables(Emit *em)
{
    const IrProgram *p = em->p;
    Sb *o = &em->out;
    bool cuda = emit_is_cuda(em);
    int nt = p->ntensors;
    sb_printf(o, "/* ---- tensors and context ---------------------------------------------- */\n"
              "#define EIN_NT %d\n\n", nt > 0 ? nt : 1);
    for (int i = 0; i < nt; i++) {
        const IrTensor *t = p->tensors[i];
        if (t->rank == 0)
            continue;
        sb_printf(o, "static const int64_t ein_shape_%d[%d] = {", i, t->rank);
        for (int d = 0; d < t->rank; d++)
            sb_printf(o, "%s%" PRId64, d ? ", " : "", t->shape[d]);
        sb_puts(o, "};\n");
    }
    tpl(em, "\nstatic const $m_tensor_info ein_tensors[EIN_NT] = {\n");
    for (int i = 0; i < nt; i++) {
        const IrTensor *t = p->tensors[i];
        int64_t n = 1;
        for (int d = 0; d < t->rank; d++)
            n *= t->shape[d];
        sb_printf(o, "    {\"%s\", ", t->name);
        c_string(o, load_name(t));
        sb_printf(o, ", %s_%s, %d, %d, ", em->upper,
                  t->kind == IT_INPUT ? "INPUT" : t->kind == IT_WEIGHT ? "WEIGHT"
                                                                    : "COMPUTED",
                  t->is_output, t->rank);
        if (t->rank)
            sb_printf(o, "ein_shape_%d", i);
        else
            sb_puts(o, "NULL");
        sb_printf(o, ", %" PRId64 ", %s_%s, %" PRId64 "},\n", n, em->upper,
                  api_elem_upper(t->elem),
                  n * (int64_t)emit_elem_size(t->elem));
    }
    if (nt == 0)
        sb_puts(o, "    {\"\", \"\", 0, 0, 0, NULL, 0, 0, 0},\n");
    sb_puts(o, "};\n\n");

    lib_write_types(em);
    tpl(em,
"struct $m_ctx {\n"
"    void *buf[EIN_NT];              /* one per tensor, ");
    sb_puts(o, cuda ? "device memory */\n" : "host memory */\n");
    tpl(em,
"    unsigned char valid[EIN_NT];    /* holds a value */\n"
"    int weights_changed;            /* the load-time stages must rerun */\n");
    sb_puts(o, cuda ? "    cudaStream_t last_stream;       /* of the latest run */\n" : "");
    lib_write_ctx_fields(em);
    tpl(em,
"    char err[512];\n"
"};\n"
"\n"
"static char ein_create_err[64] = \"\";\n"
"\n"
"#if defined(__GNUC__)\n"
"__attribute__((format(printf, 3, 4)))\n"
"#endif\n"
"static int ein_fail($m_ctx *ctx, int rc, const char *fmt, ...)\n"
"{\n"
"    va_list ap;\n"
"    va_start(ap, fmt);\n"
"    vsnprintf(ctx->err, sizeof ctx->err, fmt, ap);\n"
"    va_end(ap);\n"
"    return rc;\n"
"}\n"
"\n");
    if (cuda) {
        tpl(em,
"/* Every CUDA call goes through EIN_CUDA: a failure returns $M_ECUDA from\n"
"   the API function with the call and CUDA's message in ctx->err. */\n"
"static int ein_cuda_fail($m_ctx *ctx, cudaError_t e, const char *call)\n"
"{\n"
"    /* Reported here, so cleared: else the next launch check, which asks\n"
"       cudaGetLastError, would report it again.  Its value is e. */\n"
"    (void)cudaGetLastError();\n"
"    return ein_fail(ctx, e == cudaErrorMemoryAllocation ? $M_ENOMEM : $M_ECUDA,\n"
"                    \"%s failed: %s (%s)\", call, cudaGetErrorString(e),\n"
"                    cudaGetErrorName(e));\n"
"}\n"
"\n"
"#define EIN_CUDA(call)                                                     \\\n"
"    do {                                                                   \\\n"
"        cudaError_t ein_e_ = (call);                                       \\\n"
"        if (ein_e_ != cudaSuccess)                                         \\\n"
"            return ein_cuda_fail(ctx, ein_e_, #call);                      \\\n"
"    } while (0)\n"
"\n");
    }
    /* (nvcc warns about an unused static function: only with kernels.) */
    if (cuda && (em->nkernels > 0 || (em->libs & LIB_BAND))) {
        tpl(em,
"/* A launch fails without a return value: ask for its error at once. */\n"
"static int ein_launched($m_ctx *ctx, const char *kernel)\n"
"{\n"
"    cudaError_t e = cudaGetLastError();\n"
"    if (e == cudaSuccess)\n"
"        return 0;\n"
"    return ein_fail(ctx, $M_ECUDA, \"launching kernel %s failed: %s (%s)\", kernel,\n"
"                    cudaGetErrorString(e), cudaGetErrorName(e));\n"
"}\n"
"\n");
    }
    lib_write_support(em);
    tpl(em,
"static int ein_find($m_ctx *ctx, const char *name)\n"
"{\n"
"    if (!name)\n"
"        return ein_fail(ctx, $M_EINVAL, \"tensor name is a null pointer\"), -1;\n"
"    for (int i = 0; i < EIN_NT; i++)\n"
"        if (strcmp(ein_tensors[i].name, name) == 0 ||\n"
"            strcmp(ein_tensors[i].ext_name, name) == 0)\n"
"            return i;\n"
"    ein_fail(ctx, $M_EINVAL, \"the model has no tensor named '%s'\", name);\n"
"    return -1;\n"
"}\n"
"\n");
}

/* ---- the stages: one function per operator, run in program order --------------- */

/* static int ein_op_<id>(ctx, p [, stream]): computes tensor <id> from the
 * buffers p[] with its kernel or library call; 0 or an error code. */
static void write_op(Emit *em, const IrTensor *t)
{
    Sb *o = &em->out;
    bool cuda = emit_is_cuda(em);
    bool lib = lib_is_call(em, t);
    OpImpl impl = emit_op(em, t)->impl;
    /* CUDA launches and convolutions check through rc; cuBLAS calls and
     * C code need none. */
    bool rc = cuda && (!lib || impl == IMPL_CUDNN_CONV || impl == IMPL_CUDA_BAND ||
                       em->pass_of[t->id] >= 0);
    sb_printf(o, "/* %s: %s */\nstatic int ein_op_%d(", t->name, lib_call_name(em, t), t->id);
    tpl(em, "$m_ctx *ctx, void *const *p$S)\n{\n");
    if (rc)
        sb_puts(o, "    int rc;\n");
    if (!cuda)
        sb_puts(o, "    (void)ctx;\n");
    if (lib) {
        lib_write_call(em, t, "    ");
    } else {
        const Kernel *k = &em->kernels[em->kernel_of[t->id]];
        if (cuda)
            cuda_write_launch(em, k, "    ");
        else
            c_write_launch(em, k, "    ");
    }
    sb_puts(o, "    return 0;\n}\n\n");
}

static void write_stage_runner(Emit *em, const char *fn, bool weight_only)
{
    const IrProgram *p = em->p;
    Sb *o = &em->out;
    bool cuda = emit_is_cuda(em);
    bool any = false;
    for (int i = 0; i < p->ntensors; i++)
        any |= p->tensors[i]->kind == IT_STAGE && at_load(em, p->tensors[i]) == weight_only;
    sb_printf(o, "static int %s(", fn);
    tpl(em, "$m_ctx *ctx, void *const *p$S)\n{\n");
    if (!any) {
        sb_printf(o, "    (void)ctx;\n    (void)p;\n%s    return 0;\n}\n\n",
                  cuda ? "    (void)stream;\n" : "");
        return;
    }
    sb_puts(o, "    int rc;\n");
    for (int i = 0; i < p->ntensors; i++) {
        const IrTensor *t = p->tensors[i];
        if (t->kind != IT_STAGE || at_load(em, t) != weight_only)
            continue;
        sb_printf(o, "    if ((rc = ein_op_%d(ctx, p", t->id);
        tpl(em, "$s)) != 0)\n        return rc;\n");
    }
    sb_puts(o, "    return 0;\n}\n\n");
}

static void write_ops(Emit *em)
{
    for (int i = 0; i < em->p->ntensors; i++)
        if (em->p->tensors[i]->kind == IT_STAGE)
            write_op(em, em->p->tensors[i]);
}

/* ---- the API functions ------------------------------------------------------------ */

static void write_create_destroy(Emit *em)
{
    const IrProgram *p = em->p;
    bool cuda = emit_is_cuda(em);
    tpl(em,
"int $m_create($m_ctx **out)\n"
"{\n"
"    $m_ctx *ctx;\n"
"    if (!out)\n"
"        return $M_EINVAL;\n"
"    *out = ctx = ($m_ctx *)calloc(1, sizeof *ctx);\n"
"    if (!ctx) {\n"
"        snprintf(ein_create_err, sizeof ein_create_err,\n"
"                 \"out of host memory for the context\");\n"
"        return $M_ENOMEM;\n"
"    }\n"
"    ctx->weights_changed = 1;\n"
"    for (int i = 0; i < EIN_NT; i++) {\n"
"        size_t bytes = ein_tensors[i].nbytes;\n");
    if (cuda)
        tpl(em,
"        cudaError_t e = cudaMalloc((void **)&ctx->buf[i], bytes);\n"
"        if (e != cudaSuccess) {\n"
"            ctx->buf[i] = NULL;\n"
"            (void)cudaGetLastError();       /* reported below: clear it */\n"
"            return ein_fail(ctx, e == cudaErrorMemoryAllocation ? $M_ENOMEM : $M_ECUDA,\n"
"                            \"cannot allocate %zu bytes of device memory for tensor \"\n"
"                            \"'%s': %s\", bytes, ein_tensors[i].name,\n"
"                            cudaGetErrorString(e));\n"
"        }\n");
    else
        tpl(em,
"        ctx->buf[i] = calloc(bytes, 1);\n"
"        if (!ctx->buf[i])\n"
"            return ein_fail(ctx, $M_ENOMEM, \"cannot allocate %zu bytes for tensor '%s'\",\n"
"                            bytes, ein_tensors[i].name);\n");
    tpl(em, "    }\n");
    lib_write_create(em);
    tpl(em,
"    return $M_OK;\n"
"}\n"
"\n"
"int $m_destroy($m_ctx *ctx)\n"
"{\n"
"    int rc = $M_OK;\n"
"    if (!ctx)\n"
"        return rc;\n");
    lib_write_destroy(em);
    tpl(em,
"    for (int i = 0; i < EIN_NT; i++)\n");
    if (cuda)
        tpl(em,
"        if (ctx->buf[i] && cudaFree(ctx->buf[i]) != cudaSuccess)\n"
"            rc = $M_ECUDA;      /* the context is gone: no message */\n");
    else
        tpl(em,
"        free(ctx->buf[i]);\n");
    tpl(em,
"    free(ctx);\n"
"    return rc;\n"
"}\n"
"\n"
"const char *$m_last_error(const $m_ctx *ctx)\n"
"{\n"
"    return ctx ? ctx->err : ein_create_err;\n"
"}\n"
"\n"
"int $m_tensor_count(void)\n"
"{\n"
"    return EIN_NT;\n"
"}\n"
"\n"
"const $m_tensor_info *$m_tensor_at(int i)\n"
"{\n"
"    return i >= 0 && i < EIN_NT ? &ein_tensors[i] : NULL;\n"
"}\n"
"\n");
    sb_printf(&em->out, "static const int ein_output_ids[%d] = {", p->noutputs > 0 ? p->noutputs : 1);
    for (int i = 0; i < p->noutputs; i++)
        sb_printf(&em->out, "%s%d", i ? ", " : "", p->outputs[i]);
    sb_puts(&em->out, p->noutputs ? "};\n\n" : "-1};\n\n");
    sb_printf(&em->out, "const %s_tensor_info *%s_output_at(int k)\n"
              "{\n"
              "    return k >= 0 && k < %d ? &ein_tensors[ein_output_ids[k]] : NULL;\n"
              "}\n"
              "\n", em->model, em->model, p->noutputs);
}

static void write_load_set_get(Emit *em)
{
    bool cuda = emit_is_cuda(em);
    tpl(em,
"static int ein_st_code(int st)\n"
"{\n"
"    return st == ST_EIO ? $M_EIO : st == ST_ENOMEM ? $M_ENOMEM : $M_EFORMAT;\n"
"}\n"
"\n"
"static StDtype ein_st_dtype(int elem)\n"
"{\n"
"    static const StDtype st[] = {ST_F32, ST_F16, ST_BF16, ST_I8, ST_I16, ST_I32,\n"
"                                 ST_I64, ST_U8, ST_BOOL};\n"
"    return elem >= 0 && elem < (int)(sizeof st / sizeof *st) ? st[elem] : ST_F32;\n"
"}\n"
"\n"
"int $m_load_weights($m_ctx *ctx, const char *path)\n"
"{\n"
"    char msg[ST_ERRLEN];\n"
"    StFile *f;\n"
"    int st;\n"
"    if (!ctx)\n"
"        return $M_EINVAL;\n"
"    if (!path)\n"
"        return ein_fail(ctx, $M_EINVAL, \"weights file name is a null pointer\");\n"
"    if ((st = st_open(path, &f, msg, sizeof msg)) != ST_OK)\n"
"        return ein_fail(ctx, ein_st_code(st), \"%s\", msg);\n"
"    for (int i = 0; i < EIN_NT; i++) {\n"
"        const $m_tensor_info *t = &ein_tensors[i];\n"
"        size_t bytes = t->nbytes;\n"
"        if (t->kind != $M_WEIGHT || !st_find(f, t->ext_name))\n"
"            continue;\n");
    if (cuda)
        tpl(em,
"        /* Through host memory: the file is in host memory already. */\n"
"        void *host = malloc(bytes);\n"
"        if (!host) {\n"
"            st_close(f);\n"
"            return ein_fail(ctx, $M_ENOMEM, \"out of host memory for weight '%s'\",\n"
"                            t->name);\n"
"        }\n"
"        st = st_read(f, t->ext_name, ein_st_dtype(t->elem), t->rank, t->shape, host,\n"
"                     bytes, msg, sizeof msg);\n"
"        cudaError_t e = st == ST_OK ? cudaMemcpy(ctx->buf[i], host, bytes,\n"
"                                                 cudaMemcpyHostToDevice)\n"
"                                    : cudaSuccess;\n"
"        free(host);\n"
"        if (st != ST_OK || e != cudaSuccess) {\n"
"            st_close(f);\n"
"            if (st != ST_OK)\n"
"                return ein_fail(ctx, ein_st_code(st), \"%s\", msg);\n"
"            return ein_cuda_fail(ctx, e, \"cudaMemcpy (loading a weight)\");\n"
"        }\n");
    else
        tpl(em,
"        st = st_read(f, t->ext_name, ein_st_dtype(t->elem), t->rank, t->shape,\n"
"                     ctx->buf[i], bytes, msg, sizeof msg);\n"
"        if (st != ST_OK) {\n"
"            st_close(f);\n"
"            return ein_fail(ctx, ein_st_code(st), \"%s\", msg);\n"
"        }\n");
    tpl(em,
"        ctx->valid[i] = 1;\n"
"        ctx->weights_changed = 1;\n"
"    }\n"
"    st_close(f);\n");
    if (cuda)
        tpl(em, "    EIN_CUDA(cudaDeviceSynchronize());\n");
    tpl(em,
"    return $M_OK;\n"
"}\n"
"\n"
"int $m_set_tensor($m_ctx *ctx, const char *name, const void *data, size_t nbytes)\n"
"{\n"
"    if (!ctx)\n"
"        return $M_EINVAL;\n"
"    int i = ein_find(ctx, name);\n"
"    if (i < 0)\n"
"        return $M_EINVAL;\n"
"    const $m_tensor_info *t = &ein_tensors[i];\n"
"    if (t->kind == $M_COMPUTED)\n"
"        return ein_fail(ctx, $M_EINVAL, \"tensor '%s' is computed by the model; only \"\n"
"                        \"inputs and weights can be set\", name);\n"
"    if (!data)\n"
"        return ein_fail(ctx, $M_EINVAL, \"data for tensor '%s' is a null pointer\", name);\n"
"    if (nbytes != t->nbytes)\n"
"        return ein_fail(ctx, $M_EINVAL, \"tensor '%s' takes %zu bytes, not %zu\", name,\n"
"                        t->nbytes, nbytes);\n");
    if (cuda)
        tpl(em,
"    EIN_CUDA(cudaMemcpy(ctx->buf[i], data, nbytes, cudaMemcpyHostToDevice));\n"
"    EIN_CUDA(cudaDeviceSynchronize());\n");
    else
        tpl(em,
"    memcpy(ctx->buf[i], data, nbytes);\n");
    tpl(em,
"    ctx->valid[i] = 1;\n"
"    if (t->kind == $M_WEIGHT)\n"
"        ctx->weights_changed = 1;\n"
"    return $M_OK;\n"
"}\n"
"\n"
"int $m_get_tensor($m_ctx *ctx, const char *name, void *data, size_t nbytes)\n"
"{\n"
"    if (!ctx)\n"
"        return $M_EINVAL;\n"
"    int i = ein_find(ctx, name);\n"
"    if (i < 0)\n"
"        return $M_EINVAL;\n"
"    const $m_tensor_info *t = &ein_tensors[i];\n"
"    if (!data)\n"
"        return ein_fail(ctx, $M_EINVAL, \"buffer for tensor '%s' is a null pointer\",\n"
"                        name);\n"
"    if (nbytes != t->nbytes)\n"
"        return ein_fail(ctx, $M_EINVAL, \"tensor '%s' has %zu bytes, not %zu\", name,\n"
"                        t->nbytes, nbytes);\n"
"    if (!ctx->valid[i])\n"
"        return ein_fail(ctx, $M_EMISSING, \"tensor '%s' holds no value: it was not \"\n"
"                        \"set, loaded or computed (outputs of $m_run go to the \"\n"
"                        \"caller's buffers)\", name);\n");
    if (cuda)
        tpl(em,
"    EIN_CUDA(cudaStreamSynchronize(ctx->last_stream));\n"
"    EIN_CUDA(cudaMemcpy(data, ctx->buf[i], nbytes, cudaMemcpyDeviceToHost));\n");
    else
        tpl(em,
"    memcpy(data, ctx->buf[i], nbytes);\n");
    tpl(em,
"    return $M_OK;\n"
"}\n"
"\n");
}

/* ein_run: check the weights, run the load-time stages if a weight
 * changed, then the run-time stages. */
static void write_run(Emit *em)
{
    const IrProgram *p = em->p;
    Sb *o = &em->out;
    bool cuda = emit_is_cuda(em);
    tpl(em,
"static int ein_run($m_ctx *ctx, void *const *p$S)\n"
"{\n"
"    int rc;\n"
"    for (int i = 0; i < EIN_NT; i++)\n"
"        if (ein_tensors[i].kind == $M_WEIGHT && !ctx->valid[i])\n"
"            return ein_fail(ctx, $M_EMISSING, \"weight '%s' was never loaded or set\",\n"
"                            ein_tensors[i].name);\n"
"    if (ctx->weights_changed) {\n"
"        if ((rc = ein_load_stages(ctx, ctx->buf$s)) != 0)\n"
"            return rc;\n"
"        for (int i = 0; i < EIN_NT; i++)\n"
"            if (ein_tensors[i].kind == $M_COMPUTED)\n"
"                ctx->valid[i] = 0;\n");
    for (int i = 0; i < p->ntensors; i++)
        if (at_load(em, p->tensors[i]))
            sb_printf(o, "        ctx->valid[%d] = 1;\n", i);
    lib_write_weights_changed(em);
    tpl(em,
"        ctx->weights_changed = 0;\n"
"    }\n"
"    if ((rc = ein_run_stages(ctx, p$s)) != 0)\n"
"        return rc;\n");
    sb_puts(o, cuda ? "    ctx->last_stream = stream;\n" : "");
    sb_puts(o, "    return 0;\n}\n\n");

    /* The positional run. */
    tpl(em, "int $m_run($m_ctx *ctx");
    write_run_params(em, true);
    tpl(em, ")\n{\n"
"    void *ein_p[EIN_NT];      /* prefixed: a tensor may be named p */\n"
"    int ein_rc;\n"
"    if (!ctx)\n"
"        return $M_EINVAL;\n");
    for (int i = 0; i < p->ntensors; i++) {
        const IrTensor *t = p->tensors[i];
        if (t->kind == IT_INPUT)
            sb_printf(o, "    if (!%s)\n        return ein_fail(ctx, %s_EINVAL, "
                      "\"input '%s' is a null pointer\");\n", em->cname[t->id], em->upper,
                      t->name);
    }
    for (int i = 0; i < p->noutputs; i++) {
        const IrTensor *t = p->tensors[p->outputs[i]];
        sb_printf(o, "    if (!%s)\n        return ein_fail(ctx, %s_EINVAL, "
                  "\"output '%s' is a null pointer\");\n", out_param(em, t), em->upper,
                  t->name);
    }
    sb_puts(o, "    memcpy(ein_p, ctx->buf, sizeof ein_p);\n");
    for (int i = 0; i < p->ntensors; i++) {
        const IrTensor *t = p->tensors[i];
        if (t->kind == IT_INPUT)
            sb_printf(o, "    ein_p[%d] = (void *)%s;\n", i, em->cname[t->id]);
    }
    /* Outputs the run-time kernels compute are written in place. */
    for (int i = 0; i < p->noutputs; i++) {
        const IrTensor *t = p->tensors[p->outputs[i]];
        if (runtime_stage(em, t))
            sb_printf(o, "    ein_p[%d] = %s;\n", t->id, out_param(em, t));
    }
    tpl(em,
"    if ((ein_rc = ein_run(ctx, ein_p$s)) != 0)\n"
"        return ein_rc;\n");
    /* The others are copies of a weight, an input or a load-time stage. */
    for (int i = 0; i < p->noutputs; i++) {
        const IrTensor *t = p->tensors[p->outputs[i]];
        if (runtime_stage(em, t))
            continue;
        if (cuda)
            sb_printf(o, "    EIN_CUDA(cudaMemcpyAsync(%s, ein_p[%d], %zu, "
                      "cudaMemcpyDeviceToDevice, stream));\n", out_param(em, t), t->id,
                      (size_t)em->count[t->id] * emit_elem_size(t->elem));
        else
            sb_printf(o, "    memcpy(%s, ein_p[%d], %zu);\n", out_param(em, t), t->id,
                      (size_t)em->count[t->id] * emit_elem_size(t->elem));
    }
    sb_puts(o, "    /* The context's output buffers were not written. */\n");
    for (int i = 0; i < p->noutputs; i++) {
        const IrTensor *t = p->tensors[p->outputs[i]];
        if (runtime_stage(em, t))
            sb_printf(o, "    ctx->valid[%d] = 0;\n", t->id);
    }
    sb_puts(o, "    for (int ein_i = 0; ein_i < EIN_NT; ein_i++)\n"
               "        if (ein_p[ein_i] == ctx->buf[ein_i] && ein_tensors[ein_i].kind == ");
    tpl(em, "$M_COMPUTED)\n"
"            ctx->valid[ein_i] = 1;\n"
"    return $M_OK;\n"
"}\n"
"\n");

    /* The named run. */
    tpl(em,
"int $m_run_named($m_ctx *ctx$S)\n"
"{\n"
"    int rc;\n"
"    if (!ctx)\n"
"        return $M_EINVAL;\n"
"    for (int i = 0; i < EIN_NT; i++)\n"
"        if (ein_tensors[i].kind == $M_INPUT && !ctx->valid[i])\n"
"            return ein_fail(ctx, $M_EMISSING, \"input '%s' was never set\",\n"
"                            ein_tensors[i].name);\n"
"    if ((rc = ein_run(ctx, ctx->buf$s)) != 0)\n"
"        return rc;\n"
"    for (int i = 0; i < EIN_NT; i++)\n"
"        if (ein_tensors[i].kind == $M_COMPUTED)\n"
"            ctx->valid[i] = 1;\n"
"    return $M_OK;\n"
"}\n"
"\n");
}

void api_write_decls(Emit *em)
{
    write_decls(em);
}

void api_write(Emit *em)
{
    write_tables(em);
    write_ops(em);
    write_stage_runner(em, "ein_load_stages", true);
    write_stage_runner(em, "ein_run_stages", false);
    write_create_destroy(em);
    write_load_set_get(em);
    write_run(em);
}
