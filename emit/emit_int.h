/* emit_int.h - what the files of emit/ share and nobody else sees: the
 * per-run emitter state, the kernel description that kernel.c builds from
 * a plan's operator and c.c / cuda.c write out, and the text helpers of
 * text.c that every writer uses (strings are lang/sb.h's). */
#ifndef EINC_EMIT_INT_H
#define EINC_EMIT_INT_H

#include "emit.h"
#include "../lang/sb.h"

/* User text inside a C/CUDA comment (block or line), made harmless there;
 * a C string literal of `s` (quotes included). */
void emit_comment_text(Sb *b, const char *s);
void emit_c_string(Sb *b, const char *s);

/* ---- one generated kernel ---------------------------------------------
 * The body is dialect-neutral C: it assumes the loop variables are bound
 * (to every element of the output's full shape, padding included), reads
 * the tensors through `const float *` (f32) or `const uint16_t *` (f16,
 * bf16: bit patterns, widened by ein_ld_f16/ein_ld_bf16) parameters named
 * t_<cname>, and leaves the element's value in `float acc`.  Each dialect
 * adds the iteration (grid-stride loop / loop nest) and the store of
 * `store` (acc, or the operator's epilogue of it), rounded to the
 * output's element type (emit_store_value).  An epilogue pass after a
 * library call is a kernel too: a map that reads the output's own element
 * through the output's pointer and stores its epilogue there. */
typedef struct Kernel {
    const IrTensor *out;
    const Stage *st;
    const char *store;              /* the float expression stored: "acc", or
                                       the epilogue of acc */
    const char *name;               /* C function name, e.g. "k2_z1_a" */
    const char *ity;                /* index type: "int" or "int64_t" */
    int64_t total;                  /* output elements (shape product) */
    const char **loopvar;           /* rank entries: C names bound by the dialect */
    bool *loopused;                 /* rank entries: the body reads it */
    const IrTensor **reads;         /* distinct tensors read, by id */
    int nreads;
    char *body;                     /* lines, unindented */
    char *comment;                  /* lines, no comment delimiters */
    double work;                    /* elements x terms: OpenMP / launch sizing */
    /* A reduction split across lanes (CUDA warp and block reductions):
     * the body of one lane, which binds the sum variables from a flat
     * term counter `ein_t` running from `ein_lane` by `ein_nlanes` (ints
     * the dialect declares) and leaves its partial in acc (and any, for
     * max= and min=); NULL when the stage has no reduction.  vpart: the
     * same in the _v4 kernel (of a row group: the group's), four
     * consecutive terms of the last sum variable a lane (ein_t4, ein_j)
     * with float4 loads (kernel.c's part_v4); part then takes the same
     * terms in the same order one read at a time. */
    char *part, *vpart;
    int64_t terms;                  /* terms of one element (part != NULL) */
    /* Reads that scatter when the innermost output loop / the innermost
     * sum variable steps by one (coalescing of the two CUDA layouts). */
    int scatter_out, scatter_sum;
    /* A plain map of arithmetic on f32 reads inside their shapes: the C
     * dialect marks its innermost loop `omp simd`; simd_vmath: it calls
     * libm functions, and is simd only where the file has vector variants
     * of them (EIN_VMATH). */
    bool simd, simd_vmath;
    /* A reduction whose innermost sum loop is `omp simd` (in the body,
     * kernel.c's vec_sum_loop); simd_vmath as for simd. */
    bool simd_sum;
    /* A map into an integer tensor that only moves integers: acc is an
     * int64_t, stored through ein_sat_TYPE (emit_store_kernel). */
    bool int_acc;
    /* C, a map: lines defining its per-row values (ein_h0, ...), which do
     * not change along the innermost loop; NULL when none. */
    char *hoist;
    /* Member row_member of a fused row group (plan.h), whose kernels are
     * consecutive in Emit.kernels, the first written as the group's one
     * function or __global__ kernel (named after the last) and launched
     * as it; NULL: a kernel of its own.  A member that lives only in the
     * group is `ein_rowN` (N its member index), one row of it, in that
     * function (C: on the stack; CUDA: in shared memory). */
    const PlanRowGroup *rows;
    int row_member;
    /* CUDA, a plain f32 map whose innermost output dimension is a
     * multiple of 4 (kernel.c's v4_kernel): the same element computed for
     * four consecutive elements a thread, written as a second kernel
     * (NAME_v4; of a row group's member, the group's NAME_v4 kernel, the
     * member's innermost dim past the row's) that the launch takes where
     * every buffer it reads so and the output are 16-byte aligned.
     * vloads: lines loading each read that steps by one element along
     * the innermost dimension as a float4 at the first of the four
     * (ein_c0 is that first index) into ein_vN[4]; vbody and vstore: the
     * body and the store reading those as ein_vN[ein_j], element ein_j of
     * the four; vinner: they use the innermost loop variable itself (of
     * a vpart: the last sum variable).  vbody NULL: no such kernel. */
    char *vloads, *vbody;
    const char *vstore;
    bool vinner;
    const IrTensor **vtensors;      /* what vloads or vpart reads, each once
                                       (not a row group's shared rows) */
    int nvtensors;
} Kernel;

/* Index arithmetic is in int unless a value could pass this (the
 * grid-stride counter overshoots the total by up to one grid). */
/* Per-row values a map computes before its innermost loop, at most. */
#define KERNEL_MAX_HOIST 8
/* Distinct float4 loads of a _v4 kernel, at most (Kernel.vloads). */
#define KERNEL_MAX_V4 16

#define KERNEL_INT_LIMIT (INT32_MAX - (INT64_C(1) << 25))

/* ---- emitter state ---------------------------------------------------- */
typedef struct Emit {
    const Plan *plan;               /* what to write */
    const IrProgram *p;             /* plan->prog */
    Target target;                  /* plan->target */
    Precision precision;            /* plan->precision */
    const EmitOptions *opt;
    Arena *arena;
    const char *model;              /* C identifier for the API prefix */
    const char *upper;              /* the same in upper case (enum constants) */
    const char **cname;             /* per tensor id: unique C identifier */
    Kernel *kernels;                /* in tensor order: each operator's generated
                                       kernel (plan_has_kernel), then its
                                       epilogue pass (a library call's) */
    int nkernels;
    const char **kname;             /* per tensor id: its kernel's name, or NULL */
    const char **pname;             /* per tensor id: its epilogue pass's, or NULL */
    int64_t *count;                 /* per tensor id: elements */
    const char *file_base;          /* output file name without folders */
    const char *build_cmd;          /* the command of line 1 */
    unsigned helpers;               /* HELP_* bits the kernels call */
    Sb out;                         /* the file being written */
    /* Per variable id, for the kernel being built (kernel.c): made once per
     * file and cleared after each kernel, since a searched program has many
     * more variables than any one kernel binds. */
    int64_t *var_lo, *var_hi;
    bool *read_mark;                /* by tensor id: the kernel reads it */
    int *read_ids;                  /* the ids marked, in the order met */
    const PlanRowGroup *rows;       /* the row group whose member is being built */
    const char **var_name;
    bool *var_used;
    int nvars;
    /* Vendor operators (lib.c), per tensor id: the slot of a cuDNN
     * convolution, a oneDNN operator or a cuBLASLt GEMM, and where the
     * kernels are. */
    int *slot;
    int *kernel_of;                 /* per tensor id: index in kernels, or -1 */
    int *pass_of;                   /* per tensor id: its epilogue pass, or -1 */
    int nconv, nlib;
    int ndnnl;                      /* C: oneDNN operators (their slots) */
    int nlt;                        /* CUDA: cuBLASLt GEMMs (their slots) */
    unsigned libs;                  /* LIB_* bits */
    int64_t col_elems;              /* C: im2col buffer, elements */
    int64_t rnd_elems[2];           /* rounded operand copies, elements (lib_rounds) */
    int64_t ptr_elems;              /* CUDA: pointers of the GEMMs of two-level
                                       batches (their slot: where theirs start) */
} Emit;

enum {
    LIB_CUBLAS = 1 << 0, LIB_CUDNN = 1 << 1, LIB_CBLAS = 1 << 2,
    LIB_GEMM_C = 1 << 3, LIB_CONV_C = 1 << 4, LIB_CONVT_C = 1 << 5,   /* C helpers used */
    LIB_BAND = 1 << 6,              /* tiled G2BMM/GBMM kernels (band.c) */
    LIB_G2BMM_C = 1 << 7, LIB_GBMM_C = 1 << 8,                        /* C helpers used */
    LIB_DNNL = 1 << 9,              /* C: oneDNN (runtime/dnnl.c pasted) */
    LIB_CUBLASLT = 1 << 10,         /* CUDA: cuBLASLt (runtime/cublaslt.cu pasted) */
};

/* The helper functions of the generated file, written only when used
 * (nvcc warns about unused static device functions). */
enum {
    HELP_FLOORDIV_I = 1 << 0, HELP_FLOORMOD_I = 1 << 1,
    HELP_FLOORDIV_L = 1 << 2, HELP_FLOORMOD_L = 1 << 3,
    HELP_RELU = 1 << 4, HELP_SIGMOID = 1 << 5, HELP_RSQRT = 1 << 6,
    HELP_MAX = 1 << 7, HELP_MIN = 1 << 8,
    /* f16/bf16 storage: widen a stored element, round a value to store */
    HELP_LD_F16 = 1 << 9, HELP_ST_F16 = 1 << 10,
    HELP_LD_BF16 = 1 << 11, HELP_ST_BF16 = 1 << 12,
    /* --precision below fp32: round a product's operand to the format */
    HELP_RND = 1 << 13,
    HELP_SIGN = 1 << 14, HELP_SOFTPLUS = 1 << 15, HELP_GELU = 1 << 16,
    HELP_TO_INT = 0x3f << 17,         /* ein_to_i8 .. ein_to_bool: HELP_TO(e) */
    /* C: vector variants of libm functions (EIN_VMATH) */
    HELP_VMATH = 1 << 23,
    /* C: vectorized kernels compiled for several instruction sets (EIN_TARGETS) */
    HELP_TARGETS = 1 << 24,
    /* int64_t to an integer type, saturating: ein_sat_i8 .. ein_sat_bool: HELP_SAT(e) */
    HELP_SAT_INT = 0x3fu << 25,
};
/* The conversion helpers of an integer type: from float, from int64_t. */
#define HELP_TO(e) (1u << (17 + (int)(e) - (int)ELEM_I8))
#define HELP_SAT(e) (1u << (25 + (int)(e) - (int)ELEM_I8))

/* ---- text.c: what every writer uses ------------------------------------ */
/* The C type of a tensor's elements in buffers and kernel parameters:
 * "float" for f32, "uint16_t" (the IEEE binary16 or bfloat16 bit
 * pattern) for f16 and bf16. */
const char *emit_ctype(ElemType e);
/* Does the program hold an f16 or bf16 tensor? */
bool emit_has_16bit(const IrProgram *p);
/* Write `value` (a float expression) converted for a store into an
 * element of type e: the text itself for f32, ein_st_f16(value) or
 * ein_st_bf16(value) otherwise (marking the helper used). */
void emit_store_value(Emit *em, Sb *b, ElemType e, const char *value);
/* A C identifier for `name` ('.' and other characters become '_'). */
char *emit_sanitize(Arena *a, const char *name);
/* C and C++ keywords, names the generated code uses, C library names. */
bool emit_is_reserved(const char *id);
/* Unique C identifiers for the tensors (em->cname), in tensor order. */
void emit_name_tensors(Emit *em);
/* Text of a float constant that reads back as exactly (float)v. */
void emit_float(Sb *b, double v);
/* The IR text of a stage (st) or else of an expression, one line. */
char *emit_ir_text(Arena *a, const IrCtx *cx, const Stage *st, const IExpr *e);
/* The comment text for the operator computing t: the statement's
 * location and source, the IR of st (when not NULL) and what is stored
 * (an epilogue, when not NULL). */
void emit_source_comment(Arena *a, const IrCtx *cx, const IrTensor *t, const Stage *st,
                         const IExpr *epi, Sb *b);
/* A block comment of text's lines, indented. */
void emit_block_comment(Sb *b, const char *text, int indent);

/* emit.c: the helper functions the kernels called (em->helpers), written
 * to em->out; state shared with dot.c */
void emit_write_helpers(Emit *em);
/* Check the plan's program and record (internal errors are ICEs), set up
 * the state and the names: tensors, and the kernels each operator has. */
void emit_setup(Emit *em, const Plan *pl, const EmitOptions *opt);

static inline const PlanOp *emit_op(const Emit *em, const IrTensor *t)
{
    return &em->plan->ops[t->id];
}

/* The buffer (tensor id) that t's operator stores into: t's own, or that
 * of the copy it stores through a view (plan.h, PlanBuf). */
static inline int emit_store_id(const Emit *em, const IrTensor *t)
{
    const PlanOp *op = emit_op(em, t);
    return op->buf.kind == BUF_VIEW ? op->buf.of->id : t->id;
}

/* Where band operator t stores its elements in that buffer: the plan's
 * view, or its dense output's (match.h, BandView). */
static inline BandView emit_store_view(const Emit *em, const IrTensor *t)
{
    const PlanOp *op = emit_op(em, t);
    BandView v = op->buf.view;
    if (op->buf.kind != BUF_VIEW)
        match_band_dense(&op->op, 2, &v);
    return v;
}

/* kernel.c: the kernel of op (its stage, the epilogue fused into its
 * store), or (pass) its epilogue pass after a library call, named `name`. */
int kernel_build(Emit *em, const PlanOp *op, bool pass, const char *name, Kernel *k);
/* What k stores, converted to its output's element type: k->store
 * through emit_store_value, or an int64_t acc saturated to the type. */
void emit_store_kernel(Emit *em, Sb *b, const Kernel *k);
/* Row-major offset of the output element from the loop variables. */
void emit_store_offset(Sb *b, const Kernel *k);
/* The same over the dims from `first` on (an element's offset in its row
 * of a row group: first = the group's nrow); "0" when none. */
void emit_store_offset_from(Sb *b, const Kernel *k, int first);

/* The parameters of a row group's function or kernel (ks: its members'
 * kernels, consecutive): the tensors its members read (in id order), but
 * those it writes, then its stored members (in member order); arrays of
 * the emitter's arena.  Returns the number of reads. */
int kernel_row_params(Emit *em, const Kernel *ks, const IrTensor ***reads_out,
                      const IrTensor ***writes_out, int *nwrites);

/* c.c / cuda.c: the kernels and the code that launches them. */
void c_write_kernel(Emit *em, const Kernel *k);
void c_write_launch(Emit *em, const Kernel *k, const char *indent);
void cuda_write_kernel(Emit *em, const Kernel *k);
void cuda_write_launch(Emit *em, const Kernel *k, const char *indent);

/* lib.c: library calls for the operators the plan says are (see its header) */
void lib_setup(Emit *em);                       /* slot, libs, scratch sizes */
void lib_write_weights_changed(Emit *em);       /* in ein_run when weights changed */
bool lib_is_call(const Emit *em, const IrTensor *t);
bool lib_rounds(const Emit *em, const IrTensor *t);    /* operands rounded first */
const char *lib_call_name(const Emit *em, const IrTensor *t);
void lib_write_link_flags(const Emit *em, Sb *cmd);
void lib_write_includes(Emit *em);
void lib_write_types(Emit *em);                 /* before struct M_ctx */
void lib_write_ctx_fields(Emit *em);            /* inside struct M_ctx */
void lib_write_support(Emit *em);               /* after api_host.c / api_cuda.cu */
/* ein_lib_create and ein_lib_destroy, which runtime/api.c calls from
 * M_create (after the buffers) and M_destroy (before them). */
void lib_write_create_destroy(Emit *em);
/* The statements computing t (ctx, p, stream and `int rc` in scope). */
void lib_write_call(Emit *em, const IrTensor *t, const char *indent);
void lib_write_kernels(Emit *em);               /* the band kernels */

/* emit.c: text for the API of a model named `model`, as the support
 * pieces of runtime/ are written: appended to em->out with every
 * identifier that starts with model_ or MODEL_ given the program's prefix
 * instead (em->model, em->upper). */
void emit_api_text(Emit *em, const char *text);
/* The runtime piece `name` (runtime/embed.h) under a line naming it,
 * through emit_api_text. */
void emit_paste(Emit *em, const char *name);

/* api.c, main.c */
void api_write_header_comment(Emit *em);
void api_write_decls(Emit *em);
void api_write(Emit *em);
void main_write(Emit *em);

static inline bool emit_is_cuda(const Emit *em)
{
    return em->target == TARGET_CUDA;
}

/* ---- band.c: tiled kernels for G2BMM and GBMM (CUDA only) ---------------
 * For an operator the plan runs as IMPL_CUDA_BAND (derive/pricing/libs.c
 * says which shapes the kernel takes): band_write_support writes, once
 * before them, the kernels' code (runtime/band.cu); band_write_kernel
 * writes the kernel of one operator (named as the generic kernel that
 * emit.c built for t, when there is one) and band_write_launch its launch
 * inside a function where ctx, p (void *const *, buffers by tensor id),
 * stream and int rc exist, checked with ein_launched. */
void band_write_support(Emit *em);
void band_write_kernel(Emit *em, const IrTensor *t, const OpMatch *m);
void band_write_launch(Emit *em, const IrTensor *t, const OpMatch *m, const char *indent);

/* tuner.c: main() of --emit=tuner, for opt->tune_keys (after api_write) */
void tuner_write_main(Emit *em);

#endif
