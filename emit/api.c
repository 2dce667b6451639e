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
 * changed.  What is the same for every model is code in runtime/
 * (api_base.c, api_host.c or api_cuda.cu, api.c), pasted here; this file
 * writes what depends on the program: the declarations, the tensor table,
 * the context, one function per operator, and the runs.  Its text is
 * written for a model named `model` (emit_api_text gives it the
 * program's prefix), as the pieces are.  emit/README.md documents the API
 * for users; the generated file repeats it in its header comment. */
#include "config.h"
#include "emit_int.h"

#include <ctype.h>
#include <inttypes.h>
#include <string.h>

/* The stream parameter of the CUDA API and its argument; nothing in C. */
static void stream_param(Emit *em)
{
    sb_puts(&em->out, emit_is_cuda(em) ? ", cudaStream_t stream" : "");
}

static void stream_arg(Emit *em)
{
    sb_puts(&em->out, emit_is_cuda(em) ? ", stream" : "");
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
    emit_api_text(em,
" *\n"
" * C API (usable from C and C++; every function but model_last_error returns\n"
" * MODEL_OK, 0, or an error code MODEL_E*, and then model_last_error(ctx) says\n"
" * what went wrong):\n"
" *\n"
" *   int model_create(model_ctx **ctx);\n"
" *       Allocate a context and the tensors' buffers");
    sb_puts(o, cuda ? " on the current\n *       CUDA device.  On failure *ctx is still a context to read\n"
                    : ".\n *       On failure *ctx is still a context to read\n");
    emit_api_text(em,
" *       the message from and to destroy, or NULL when even that failed\n"
" *       (model_last_error(NULL) then says so).\n"
" *   int model_load_weights(model_ctx *ctx, const char *path);\n"
" *       Load every weight found in a safetensors file (by its external\n"
" *       name if it has one, else by its .ein name,\n");
    sb_puts(o, h16 ? " *       its element type as dtype: F32, F16, BF16, I32 ..., matching\n"
                     " *       shape);\n"
                     " *       other entries of the file are ignored.\n"
                   : " *       F32, matching shape); other entries of the file are ignored.\n");
    emit_api_text(em,
" *   int model_set_tensor(model_ctx *ctx, const char *name, const void *data,\n"
" *                     size_t nbytes);\n"
" *       (Here and in model_get_tensor a tensor is named by its .ein name\n"
" *       or its external name.)\n");
    sb_puts(o, h16 ? " *       Set a weight or an input from host memory (row-major, in\n"
                     " *       its element type; nbytes exactly the tensor's size).\n"
                   : " *       Set a weight or an input from host memory (row-major f32,\n"
                     " *       nbytes exactly the tensor's size).\n");
    emit_api_text(em,
" *   int model_get_tensor(model_ctx *ctx, const char *name, void *data,\n"
" *                     size_t nbytes);\n"
" *       Copy a tensor that holds a value (set, loaded or computed) to\n"
" *       host memory: not an intermediate that shares memory with others\n"
" *       during a run (einc --keep-intermediates gives each its own), nor\n"
" *       an operator's output that it stores straight into the copy that\n"
" *       reorders it (einc --emit=plan's into=).\n");
    if (cuda)
        emit_api_text(em, " *       model_load_weights, model_set_tensor and model_get_tensor\n"
                          " *       wait for the runs queued before them and return when\n"
                          " *       their copy is done.\n");
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
    emit_api_text(em, "\n"
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
                      " *       Runs of one context run one after another whatever their\n"
                      " *       streams; order the inputs and outputs with `stream`.  The\n"
                      " *       first run captures its kernels and library calls into a CUDA\n"
                      " *       graph, which every run then launches at once (captured again\n"
                      " *       for other buffers); EIN_NO_GRAPH=1 in the environment when the\n"
                      " *       context is created runs them one by one instead.\n"
                    : ".\n");
    emit_api_text(em,
" *       Every weight must have been loaded or set.\n"
" *   int model_run_named(model_ctx *ctx");
    stream_param(em);
    emit_api_text(em, ");\n"
" *       The same with the inputs set by model_set_tensor; read the outputs\n"
" *       with model_get_tensor.\n"
" *   const char *model_last_error(const model_ctx *ctx);\n"
" *       The message of the latest failure.\n"
" *   int model_destroy(model_ctx *ctx);\n"
" *       Free the context and its buffers.\n");
    emit_api_text(em, cuda ? " *   int model_set_threads(model_ctx *ctx, int n);\n"
                             " *       Accepted for the C target's API (n >= 0); the runs are on the GPU.\n"
                           : " *   int model_set_threads(model_ctx *ctx, int n);\n"
                             " *       The runs from now on compute with at most n threads (OpenMP's,\n"
                             " *       which oneDNN and the matrix products share); 0, the default: as\n"
                             " *       many as OpenMP would use (OMP_NUM_THREADS, else every processor).\n"
                             " *       The context times its runs and uses fewer threads where fewer\n"
                             " *       were faster (a busy machine); the results are the same at any\n"
                             " *       count.  EIN_FIXED_THREADS=1 in the environment when the context\n"
                             " *       is created makes every run use them all.\n");
    emit_api_text(em,
" *   int model_tensor_count(void);  const model_tensor_info *model_tensor_at(int i);\n"
" *       Every tensor of the model: name, kind, shape, element type, size.\n"
" *   const model_tensor_info *model_output_at(int k);\n"
" *       The k-th output, in the order of model_run's parameters (NULL past\n"
" *       the last).\n"
" * Error codes: MODEL_EINVAL bad argument, MODEL_EIO file error, MODEL_EFORMAT bad\n"
" * safetensors file or tensor, MODEL_ENOMEM out of memory, ");
    emit_api_text(em, cuda ? "MODEL_ECUDA a CUDA\n * call failed, MODEL_EMISSING a weight or input was never set.  "
                             "A context is\n * not safe to use from two threads at once.\n"
                           : "MODEL_EMISSING a\n * weight or input was never set, MODEL_ELIB a library call failed\n"
                             " * (oneDNN).  A context is not safe to use from two threads at once.\n");
    if (h16)
        emit_api_text(em,
" * Element types: an f32 tensor is an array of float; an f16 or bf16 tensor\n"
" * an array of uint16_t holding IEEE binary16 or bfloat16 bit patterns\n"
" * (safetensors' F16 and BF16; on CUDA __half and __nv_bfloat16 have the\n"
" * same layout: cast the pointers).  The kernels compute in float: a read\n"
" * widens an element exactly, a store rounds to nearest even.  An i8, i16,\n"
" * i32, i64 or u8 tensor is an array of int8_t .. uint8_t, a bool tensor of\n"
" * uint8_t 0 or 1 (safetensors' I8 .. U8, BOOL); a store converts toward\n"
" * zero, saturating.\n");
    emit_api_text(em,
" * To call the API from another file, declare it there with\n"
" *     #define MODEL_API_ONLY\n");
    sb_puts(o, " *     #include \"");
    emit_comment_text(o, em->file_base);
    sb_puts(o, "\"\n");
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
    emit_api_text(em,
"/* ---- API ---------------------------------------------------------------- */\n"
"#ifndef MODEL_API_DECLARED\n"
"#define MODEL_API_DECLARED\n");
    sb_puts(&em->out, cuda ? "#include <cuda_runtime.h>\n" : "");
    emit_api_text(em,
"#include <stddef.h>\n"
"#include <stdint.h>\n"
"\n"
"#ifdef __cplusplus\n"
"extern \"C\" {\n"
"#endif\n"
"\n"
"typedef struct model_ctx model_ctx;\n"
"\n"
"enum {\n"
"    MODEL_OK = 0,\n"
"    MODEL_EINVAL = 1,      /* bad argument: null pointer, unknown name, wrong size */\n"
"    MODEL_EIO = 2,         /* a file cannot be read or written */\n"
"    MODEL_EFORMAT = 3,     /* a broken safetensors file, or a tensor of another\n"
"                           dtype or shape in it */\n"
"    MODEL_ENOMEM = 4,      /* out of host or device memory */\n");
    if (cuda)
        emit_api_text(em,
"    MODEL_ECUDA = 5,       /* a CUDA call failed */\n");
    emit_api_text(em,
"    MODEL_EMISSING = 6,    /* a weight or input was never set */\n"
"    MODEL_ELIB = 7         /* a library call failed (oneDNN) */\n"
"};\n"
"\n"
"enum { MODEL_INPUT = 0, MODEL_WEIGHT = 1, MODEL_COMPUTED = 2 };\n"
"/* Element types: float; uint16_t IEEE binary16 and bfloat16 bit patterns;\n"
"   int8_t, int16_t, int32_t, int64_t, uint8_t; bool as a uint8_t 0 or 1. */\n"
"enum { MODEL_F32 = 0, MODEL_F16 = 1, MODEL_BF16 = 2, MODEL_I8 = 3, MODEL_I16 = 4, MODEL_I32 = 5,\n"
"       MODEL_I64 = 6, MODEL_U8 = 7, MODEL_BOOL = 8 };\n"
"\n"
"typedef struct model_tensor_info {\n"
"    const char *name;           /* as in the .ein file */\n"
"    const char *ext_name;       /* loaded and set by: the external name, else name */\n"
"    int kind;                   /* MODEL_INPUT, MODEL_WEIGHT, MODEL_COMPUTED */\n"
"    int is_output;\n"
"    int rank;\n"
"    const int64_t *shape;       /* rank entries; NULL for rank 0 */\n"
"    size_t count;               /* elements */\n"
"    int elem;                   /* MODEL_F32, MODEL_F16, MODEL_BF16, MODEL_I8, ... */\n"
"    size_t nbytes;              /* count * element size */\n"
"} model_tensor_info;\n"
"\n"
"int model_create(model_ctx **ctx);\n"
"int model_load_weights(model_ctx *ctx, const char *path);\n"
"int model_set_tensor(model_ctx *ctx, const char *name, const void *data,\n"
"        size_t nbytes);\n"
"int model_get_tensor(model_ctx *ctx, const char *name, void *data, size_t nbytes);\n"
"int model_run(model_ctx *ctx");
    write_run_params(em, true);
    emit_api_text(em, ");\n"
"int model_run_named(model_ctx *ctx");
    stream_param(em);
    emit_api_text(em, ");\n"
"const char *model_last_error(const model_ctx *ctx);\n"
"int model_destroy(model_ctx *ctx);\n"
"int model_set_threads(model_ctx *ctx, int n);\n"
"int model_tensor_count(void);\n"
"const model_tensor_info *model_tensor_at(int i);\n"
"const model_tensor_info *model_output_at(int k);\n"
"\n"
"#ifdef __cplusplus\n"
"}\n"
"#endif\n"
"#endif /* MODEL_API_DECLARED */\n"
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
              "#define EIN_NT %d\n", nt > 0 ? nt : 1);
    /* the tensors stored inside another's buffer (plan.h, PlanBuf): no
     * buffer of their own, never a value */
    sb_puts(o, "#define EIN_VIEW(i) (0");
    for (int i = 0; i < nt; i++)
        if (p->tensors[i]->kind == IT_STAGE && emit_op(em, p->tensors[i])->buf.kind == BUF_VIEW)
            sb_printf(o, " || (i) == %d", i);
    sb_puts(o, ")\n");
    /* the intermediates that share one arena (plan.h, Plan.at): the
     * byte offset of each, -1 for a buffer of its own or none */
    const Plan *pl = em->plan;
    if (pl->at && pl->nshared) {
        sb_printf(o, "#define EIN_ARENA_BYTES ((size_t)%" PRId64 ")\n"
                  "static const int64_t ein_at[EIN_NT] = {", pl->arena);
        for (int i = 0; i < nt; i++)
            sb_printf(o, "%s%s%" PRId64, i ? "," : "", i % 16 ? " " : "\n    ", pl->at[i]);
        sb_puts(o, "\n};\n#define EIN_AT(i) (ein_at[i])\n\n");
    } else {
        sb_puts(o, "#define EIN_ARENA_BYTES ((size_t)0)\n#define EIN_AT(i) (-1)\n\n");
    }
    for (int i = 0; i < nt; i++) {
        const IrTensor *t = p->tensors[i];
        if (t->rank == 0)
            continue;
        sb_printf(o, "static const int64_t ein_shape_%d[%d] = {", i, t->rank);
        for (int d = 0; d < t->rank; d++)
            sb_printf(o, "%s%" PRId64, d ? ", " : "", t->shape[d]);
        sb_puts(o, "};\n");
    }
    emit_api_text(em, "\nstatic const model_tensor_info ein_tensors[EIN_NT] = {\n");
    for (int i = 0; i < nt; i++) {
        const IrTensor *t = p->tensors[i];
        int64_t n = 1;
        for (int d = 0; d < t->rank; d++)
            n *= t->shape[d];
        sb_puts(o, "    {");
        emit_c_string(o, t->name);
        sb_puts(o, ", ");
        emit_c_string(o, load_name(t));
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
                  n * (int64_t)elem_size(t->elem));
    }
    if (nt == 0)
        sb_puts(o, "    {\"\", \"\", 0, 0, 0, NULL, 0, 0, 0},\n");
    sb_puts(o, "};\n\n");

    lib_write_types(em);
    emit_api_text(em,
"struct model_ctx {\n"
"    void *buf[EIN_NT];              /* one per tensor, ");
    sb_puts(o, cuda ? "device memory (EIN_AT: in the arena) */\n"
                    : "host memory (EIN_AT: in the arena) */\n");
    emit_api_text(em,
"    void *arena;                    /* the intermediates' (EIN_AT); NULL: none */\n");
    emit_api_text(em,
"    unsigned char valid[EIN_NT];    /* holds a value */\n"
"    int weights_changed;            /* the load-time stages must rerun */\n"
"    int threads;                    /* model_set_threads; 0: OpenMP's default */\n");
    if (!cuda)
        sb_puts(o, "    struct ein_pace *pace;          /* the thread counts of the runs (pace.c) */\n"
                   "    int pace_max;                   /* the count it was made for */\n"
                   "    int fixed_threads;              /* EIN_FIXED_THREADS at create */\n"
                   "    int omp_saved;                  /* the caller's count, during a run */\n"
                   "    double run_t0;                  /* the run's start, ms; < 0: not timed */\n");
    sb_puts(o, cuda ? "    cudaStream_t io;                /* the context's own copies (set, load, get) */\n"
                      "    cudaEvent_t done;               /* recorded at the end of every run */\n"
                      "    cudaStream_t cap;               /* the run's graph is captured on it */\n"
                      "    cudaGraphExec_t graph;          /* the run-time stages, captured; NULL: not yet */\n"
                      "    void *graph_p[EIN_NT];          /* the buffers the graph was captured with */\n"
                      "    int no_graph;                   /* EIN_NO_GRAPH at create, or a capture failed */\n"
                    : "");
    lib_write_ctx_fields(em);
    emit_api_text(em,
"    char note[600];                 /* for the --main harness to print */\n"
"    char err[512];\n"
"};\n"
"\n");
    emit_paste(em, "api_base.c");
    if (!cuda) {
        emit_api_text(em, "static int ein_lib_threads(model_ctx *ctx, int n, int *cold);\n"
                          "static int ein_lib_fetch(model_ctx *ctx, int i);\n\n");
        emit_paste(em, "pace.c");
    }
    emit_paste(em, cuda ? "api_cuda.cu" : "api_host.c");
    lib_write_support(em);
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
                       em->pass_of[t->id] >= 0 || lib_rounds(em, t) ||
                       plan_gemm_ptrs(emit_op(em, t)));
    sb_printf(o, "/* %s: %s */\nstatic int ein_op_%d(%s_ctx *ctx, void *const *p", t->name,
              lib_call_name(em, t), t->id, em->model);
    stream_param(em);
    sb_puts(o, ")\n{\n");
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
    sb_printf(o, "static int %s(%s_ctx *ctx, void *const *p", fn, em->model);
    stream_param(em);
    sb_puts(o, ")\n{\n");
    if (!any) {
        sb_printf(o, "    (void)ctx;\n    (void)p;\n%s    return 0;\n}\n\n",
                  cuda ? "    (void)stream;\n" : "");
        return;
    }
    sb_puts(o, "    int rc;\n");
    for (int i = 0; i < p->ntensors; i++) {
        const IrTensor *t = p->tensors[i];
        if (t->kind != IT_STAGE || at_load(em, t) != weight_only ||
            !plan_runs(emit_op(em, t)))
            continue;
        sb_printf(o, "    if ((rc = ein_op_%d(ctx, p", t->id);
        stream_arg(em);
        sb_puts(o, ")) != 0)\n        return rc;\n");
    }
    sb_puts(o, "    return 0;\n}\n\n");
}

static void write_ops(Emit *em)
{
    for (int i = 0; i < em->p->ntensors; i++)
        if (em->p->tensors[i]->kind == IT_STAGE && plan_runs(emit_op(em, em->p->tensors[i])))
            write_op(em, em->p->tensors[i]);
}

/* ---- the outputs, by position ---------------------------------------------------- */

static void write_output_at(Emit *em)
{
    const IrProgram *p = em->p;
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

/* ---- the runs ---------------------------------------------------------------- */

/* ein_run: check the weights, run the load-time stages if a weight
 * changed, then the run-time stages (on CUDA as the run's graph:
 * runtime/graph.cu); in C between ein_threads_begin and _end, which
 * choose the run's thread count and time it (runtime/api_host.c). */
static void write_run(Emit *em)
{
    const IrProgram *p = em->p;
    Sb *o = &em->out;
    bool cuda = emit_is_cuda(em);
    emit_api_text(em, cuda ? "static int ein_run(model_ctx *ctx, void *const *p"
                           : "static int ein_run_once(model_ctx *ctx, void *const *p");
    stream_param(em);
    emit_api_text(em, ")\n"
"{\n"
"    int rc;\n"
"    if ((rc = ein_weights_ready(ctx)) != MODEL_OK)\n"
"        return rc;\n");
    if (cuda)
        emit_api_text(em,
"    /* after the previous run, whatever its stream: they share the\n"
"       context's buffers */\n"
"    EIN_CUDA(cudaStreamWaitEvent(stream, ctx->done, 0));\n");
    emit_api_text(em,
"    if (ctx->weights_changed) {\n"
"        if ((rc = ein_load_stages(ctx, ctx->buf");
    stream_arg(em);
    emit_api_text(em, ")) != 0)\n"
"            return rc;\n"
"        for (int i = 0; i < EIN_NT; i++)\n"
"            if (ein_tensors[i].kind == MODEL_COMPUTED)\n"
"                ctx->valid[i] = 0;\n");
    for (int i = 0; i < p->ntensors; i++)
        if (at_load(em, p->tensors[i]))
            sb_printf(o, "        ctx->valid[%d] = 1;\n", i);
    lib_write_weights_changed(em);
    sb_printf(o, "        ctx->weights_changed = 0;\n"
               "    }\n"
               "    if ((rc = %s(ctx, p", cuda ? "ein_graph_run" : "ein_run_stages");
    stream_arg(em);
    sb_puts(o, ")) != 0)\n"
               "        return rc;\n");
    sb_puts(o, "    return 0;\n}\n\n");
    if (!cuda)
        emit_api_text(em, "static int ein_run(model_ctx *ctx, void *const *p)\n"
                          "{\n"
                          "    int rc = ein_threads_begin(ctx);\n"
                          "    if (rc == MODEL_OK)\n"
                          "        rc = ein_run_once(ctx, p);\n"
                          "    ein_threads_end(ctx, rc);\n"
                          "    return rc;\n"
                          "}\n\n");

    /* The positional run. */
    emit_api_text(em, "int model_run(model_ctx *ctx");
    write_run_params(em, true);
    emit_api_text(em, ")\n{\n"
"    void *ein_p[EIN_NT];      /* prefixed: a tensor may be named p */\n"
"    int ein_rc;\n"
"    if (!ctx)\n"
"        return ein_no_ctx();\n");
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
    sb_puts(o, "    if ((ein_rc = ein_run(ctx, ein_p");
    stream_arg(em);
    sb_puts(o, ")) != 0)\n"
               "        return ein_rc;\n");
    /* The others are copies of a weight, an input or a load-time stage. */
    for (int i = 0; i < p->noutputs; i++) {
        const IrTensor *t = p->tensors[p->outputs[i]];
        if (runtime_stage(em, t))
            continue;
        if (cuda)
            sb_printf(o, "    EIN_CUDA(cudaMemcpyAsync(%s, ein_p[%d], %zu, "
                      "cudaMemcpyDeviceToDevice, stream));\n", out_param(em, t), t->id,
                      (size_t)em->count[t->id] * elem_size(t->elem));
        else
            sb_printf(o, "    memcpy(%s, ein_p[%d], %zu);\n", out_param(em, t), t->id,
                      (size_t)em->count[t->id] * elem_size(t->elem));
    }
    sb_puts(o, "    /* The context's output buffers were not written. */\n");
    for (int i = 0; i < p->noutputs; i++) {
        const IrTensor *t = p->tensors[p->outputs[i]];
        if (runtime_stage(em, t))
            sb_printf(o, "    ctx->valid[%d] = 0;\n", t->id);
    }
    emit_api_text(em, "    ein_run_done(ctx, ein_p);\n");
    if (cuda)
        emit_api_text(em, "    EIN_CUDA(cudaEventRecord(ctx->done, stream));\n");
    emit_api_text(em, "    return MODEL_OK;\n"
                      "}\n"
                      "\n");

    /* The named run. */
    emit_api_text(em, "int model_run_named(model_ctx *ctx");
    stream_param(em);
    emit_api_text(em, ")\n"
"{\n"
"    int rc;\n"
"    if (!ctx)\n"
"        return ein_no_ctx();\n"
"    for (int i = 0; i < EIN_NT; i++)\n"
"        if (ein_tensors[i].kind == MODEL_INPUT && !ctx->valid[i])\n"
"            return ein_fail(ctx, MODEL_EMISSING, \"input '%s' was never set\",\n"
"                            ein_tensors[i].name);\n"
"    if ((rc = ein_run(ctx, ctx->buf");
    stream_arg(em);
    emit_api_text(em, ")) != 0)\n"
"        return rc;\n"
"    ein_run_done(ctx, ctx->buf);\n");
    if (cuda)
        emit_api_text(em, "    EIN_CUDA(cudaEventRecord(ctx->done, stream));\n");
    emit_api_text(em,
"    return MODEL_OK;\n"
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
    if (emit_is_cuda(em))
        emit_paste(em, "graph.cu");
    lib_write_create_destroy(em);
    emit_paste(em, "api.c");
    write_output_at(em);
    write_run(em);
}
