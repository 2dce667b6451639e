/* emit_int.h - what the files of emit/ share and nobody else sees: the
 * per-run emitter state, and the kernel description that kernel.c builds
 * from a stage and c.c / cuda.c write out (strings are lang/sb.h's). */
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
 * adds the iteration (grid-stride loop / loop nest) and the store, which
 * rounds acc to the output's element type (emit_store_value). */
typedef struct Kernel {
    const IrTensor *out;
    const Stage *st;
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
     * max= and min=); NULL when the stage has no reduction. */
    char *part;
    int64_t terms;                  /* terms of one element (part != NULL) */
    /* Reads that scatter when the innermost output loop / the innermost
     * sum variable steps by one (coalescing of the two CUDA layouts). */
    int scatter_out, scatter_sum;
    /* A plain map of arithmetic on f32 reads inside their shapes: the C
     * dialect marks its innermost loop `omp simd`. */
    bool simd;
} Kernel;

/* Index arithmetic is in int unless a value could pass this (the
 * grid-stride counter overshoots the total by up to one grid). */
#define KERNEL_INT_LIMIT (INT32_MAX - (INT64_C(1) << 25))

/* ---- emitter state ---------------------------------------------------- */
typedef struct Emit {
    const IrProgram *p;
    const EmitOptions *opt;
    Arena *arena;
    const char *model;              /* C identifier for the API prefix */
    const char *upper;              /* the same in upper case (enum constants) */
    const char **cname;             /* per tensor id: unique C identifier */
    Kernel *kernels;                /* one per IT_STAGE tensor, in tensor order */
    int nkernels;
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
    bool big_tensor;                /* some tensor has more than KERNEL_INT_LIMIT elements */
    const char **var_name;
    bool *var_used;
    int nvars;
    /* Vendor operators (lib.c), per tensor id: what computes a stage
     * (OPK_KERNEL: its generated kernel) and its convolution slot. */
    OpMatch *op;
    int *slot;
    int *kernel_of;                 /* per tensor id: index in kernels, or -1 */
    int nconv, nlib;
    unsigned libs;                  /* LIB_* bits */
    int64_t col_elems;              /* C: im2col buffer, elements */
    int64_t rnd_elems[2];           /* C: rounded operand copies, elements */
} Emit;

enum {
    LIB_CUBLAS = 1 << 0, LIB_CUDNN = 1 << 1, LIB_CBLAS = 1 << 2,
    LIB_GEMM_C = 1 << 3, LIB_CONV_C = 1 << 4, LIB_CONVT_C = 1 << 5,   /* C helpers used */
    LIB_BAND = 1 << 6,              /* tiled G2BMM/GBMM kernels (band.c) */
    LIB_G2BMM_C = 1 << 7, LIB_GBMM_C = 1 << 8,                        /* C helpers used */
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
};
/* The conversion helper of an integer type. */
#define HELP_TO(e) (1u << (17 + (int)(e) - (int)ELEM_I8))

/* The C type of a tensor's elements in buffers and kernel parameters:
 * "float" for f32, "uint16_t" (the IEEE binary16 or bfloat16 bit
 * pattern) for f16 and bf16. */
const char *emit_ctype(ElemType e);
/* Bytes per element: 4 or 2. */
size_t emit_elem_size(ElemType e);
/* Does the program hold an f16 or bf16 tensor? */
bool emit_has_16bit(const IrProgram *p);
/* Write `value` (a float expression) converted for a store into an
 * element of type e: the text itself for f32, ein_st_f16(value) or
 * ein_st_bf16(value) otherwise (marking the helper used). */
void emit_store_value(Emit *em, Sb *b, ElemType e, const char *value);

/* emit.c: the helper functions the kernels called (em->helpers), written
 * to em->out; state shared with dot.c */
void emit_write_helpers(Emit *em);
int emit_check_program(const IrProgram *p);
void emit_setup(Emit *em, const IrProgram *p, const EmitOptions *opt);
void emit_name_tensors(Emit *em);

/* kernel.c */
int kernel_build(Emit *em, const IrTensor *t, int index, Kernel *k);
/* A C identifier for `name` ('.' and other characters become '_'); the
 * result is unique among the names already in `used` (checked by the
 * caller through emit_name_taken). */
char *emit_sanitize(Arena *a, const char *name);
bool emit_is_reserved(const char *id);
/* Text of a float constant that reads back as exactly (float)v. */
void emit_float(Sb *b, double v);
/* The comment text for a tensor's statement: location and source. */
void emit_source_comment(Emit *em, const IrTensor *t, Sb *b);
/* A block comment of text's lines, indented. */
void emit_block_comment(Sb *b, const char *text, int indent);
/* Row-major offset of the output element from the loop variables. */
void emit_store_offset(Sb *b, const Kernel *k);

/* c.c / cuda.c: the kernels and the code that launches them. */
void c_write_kernel(Emit *em, const Kernel *k);
void c_write_launch(Emit *em, const Kernel *k, const char *indent);
void cuda_write_kernel(Emit *em, const Kernel *k);
void cuda_write_launch(Emit *em, const Kernel *k, const char *indent);

/* lib.c: library calls for the stages the plan matched (see its header) */
void lib_plan(Emit *em);                         /* fills op, slot, libs, ... */
bool lib_is_call(const Emit *em, const IrTensor *t);
/* A library call that keeps its generated kernel as a fallback (CUDA
 * convolutions: cuDNN may have no plan for one on the GPU at hand). */
bool lib_needs_kernel(const Emit *em, const IrTensor *t);
void lib_write_main_notes(Emit *em, const char *prog);   /* after M_create */
const char *lib_call_name(const Emit *em, const IrTensor *t);
void lib_write_link_flags(const Emit *em, Sb *cmd);
void lib_write_includes(Emit *em);
void lib_write_types(Emit *em);                 /* before struct M_ctx */
void lib_write_ctx_fields(Emit *em);            /* inside struct M_ctx */
void lib_write_support(Emit *em);               /* after ein_fail and EIN_CUDA */
void lib_write_create(Emit *em);                /* in M_create, after the buffers */
void lib_write_destroy(Emit *em);               /* in M_destroy; `rc` in scope */
/* The statements computing t (ctx, p, stream and `int rc` in scope). */
void lib_write_call(Emit *em, const IrTensor *t, const char *indent);
void lib_write_kernels(Emit *em);               /* the band kernels */

/* api.c, main.c */
/* Append text with $m -> model, $M -> MODEL, $S -> ", cudaStream_t stream"
 * and $s -> ", stream" on CUDA (both empty on C). */
void emit_tpl(Emit *em, const char *text);
void api_write_header_comment(Emit *em);
void api_write_decls(Emit *em);
void api_write(Emit *em);
void main_write(Emit *em);

static inline bool emit_is_cuda(const Emit *em)
{
    return em->opt->target == TARGET_CUDA;
}

/* ---- band.c: tiled kernels for G2BMM and GBMM (CUDA only) ---------------
 * band_supported: the stage of t matched as m (OPK_G2BMM or OPK_GBMM) is
 * f32 throughout, its loops cover its shape from 0 and its sizes fit the
 * kernel; otherwise the generic kernel is the one to write.  Then
 * band_write_kernel writes the kernel (named as the generic kernel that
 * emit.c built for t, when there is one) and band_write_launch its launch
 * inside a function where ctx, p (void *const *, buffers by tensor id),
 * stream and int rc exist, checked with ein_launched. */
#include "../derive/pricing/match.h"
bool band_supported(const IrTensor *t, const OpMatch *m);
void band_write_kernel(Emit *em, const IrTensor *t, const OpMatch *m);
void band_write_launch(Emit *em, const IrTensor *t, const OpMatch *m, const char *indent);

/* tuner.c: main() of --emit=tuner, for opt->tune_keys (after api_write) */
void tuner_write_main(Emit *em);

#endif
