/* dnnl_types.h - the C target's oneDNN operators: what the generated
 * table says about each one (ein_dnnl_spec, constant) and what the
 * context holds for it (ein_dnnl_op, made by ein_dnnl_create).  Pasted
 * before the context when a program calls oneDNN; dnnl.c has the
 * functions.
 *
 * Every operand is described as einc stores it: a strided view of a
 * row-major buffer (dims, strides in elements, an offset).  The
 * primitive itself picks the layouts it runs fastest in (format `any`);
 * dnnl.c reorders between the views and those layouts where they
 * differ, weights once per weight change, activations on each run. */
#ifndef EINC_DNNL_TYPES_H
#define EINC_DNNL_TYPES_H

#include <stddef.h>
#include <stdint.h>
#include <oneapi/dnnl/dnnl.h>
#include "rt.h" /* EMBED-SKIP */

#define EIN_DNNL_MAXD 6         /* dims of a view: a grouped filter has 5 */
#define EIN_DNNL_MAXPOST 8      /* post-ops of one operator */

enum {
    EIN_DNNL_CONV,              /* convolution, forward inference */
    EIN_DNNL_DECONV,            /* transposed convolution (deconvolution) */
    EIN_DNNL_MATMUL             /* batched matrix product */
};

enum {
    EIN_POST_ELTWISE,           /* v = alg(v; alpha, beta) */
    EIN_POST_BINARY,            /* v = alg(v, src1), src1 broadcast to dst */
    EIN_POST_SUM                /* v = v + alpha * s: s is operand `arg` (src1, of dst's
                                   shape), or with arg < 0 what dst held before */
};

/* An operand: element (i0, i1, ...) is at buffer[offset + sum ik * strides[k]]. */
typedef struct ein_dnnl_view {
    int rank;
    int64_t dims[EIN_DNNL_MAXD];
    int64_t strides[EIN_DNNL_MAXD];
    int64_t offset;
} ein_dnnl_view;

typedef struct ein_dnnl_post {
    int kind;                   /* EIN_POST_* */
    int alg;                    /* a dnnl_alg_kind_t: eltwise or binary */
    float alpha, beta;
    int arg;                    /* BINARY, SUM: which of the run's src1 pointers */
    ein_dnnl_view src1;         /* its view: dst's rank, 1 where it broadcasts */
} ein_dnnl_post;

/* One operator.  Conv: src [n, c, h, w], weights [f, c, kh, kw] or, with
 * groups, [g, f/g, c/g, kh, kw]; deconv: weights [f, c, kh, kw] viewed
 * over the [c, f, kh, kw] buffer (strides say so); dst [n, f, oh, ow].
 * Matmul: src [.., m, k], weights [.., k, n], dst [.., m, n] of one rank,
 * batch dims broadcast where they are 1.  Bias: [f] (conv) or dst's rank
 * with 1s (matmul). */
typedef struct ein_dnnl_spec {
    int kind;                   /* EIN_DNNL_* */
    ein_dnnl_view src, wei, bias, dst;
    int has_bias;
    int64_t stride[2], dilate[2], pad_l[2], pad_r[2];   /* conv: (h, w); dilate 0 = none */
    int wei_const;              /* the weights change only with the model's weights:
                                   reordered once, not on every run */
    int npost;
    ein_dnnl_post post[EIN_DNNL_MAXPOST];
    int src_back;               /* > 0: src is the whole dst of the convolution this many
                                   operators back, which nothing else reads: where the two
                                   primitives want one layout, it stays in that layout
                                   between them (no reorder out, none in) */
} ein_dnnl_spec;

/* What the context keeps for one operator.  The memory objects wrap the
 * caller's buffers at each run (their handles are set then); `ws_bytes`
 * is what the operator needs of the shared workspace: its activations in
 * the primitive's layouts and its scratchpad, one after the other. */
typedef struct ein_dnnl_op {
    ein_dnnl_spec spec;         /* the table's, with a residual add made a sum
                                   where that is faster (ein_dnnl_create) */
    dnnl_primitive_t prim;
    dnnl_primitive_t src_in, dst_out, wei_in;   /* reorders, or NULL */
    dnnl_primitive_t sum_in;    /* the sum's operand into dst, or NULL */
    dnnl_memory_t sum_view;
    dnnl_primitive_t src1_in[EIN_DNNL_MAXPOST];
    dnnl_memory_t src_view, src_mem, wei_view, wei_mem, bias_mem, dst_view, dst_mem;
    dnnl_memory_t src1_view[EIN_DNNL_MAXPOST], src1_mem[EIN_DNNL_MAXPOST];
    dnnl_memory_t scratch;
    dnnl_memory_t keep;         /* dst in the primitive's layout, in dst's buffer: the
                                   next one's src (spec.src_back); or NULL */
    dnnl_memory_t src_kept;     /* src in that layout, in its buffer; or NULL */
    int kept;                   /* dst's buffer holds keep's layout (since the last run) */
    size_t src_bytes, dst_bytes, src1_bytes[EIN_DNNL_MAXPOST], scratch_bytes;
    size_t ws_bytes;
    int wei_ready;              /* wei_mem holds the current weights */
    int wei_shared;             /* wei_mem is another set's (ein_dnnl_create's `like`) */
    int sum_post;               /* the index of the EIN_POST_SUM post-op, or -1 */
    int sum_arg;                /* its operand, or -1 */
    const char *impl;           /* the implementation oneDNN chose */
} ein_dnnl_op;

/* Sets of operators: a primitive runs on the number of OpenMP threads
 * there were when it was made, so each thread count the runs use has a
 * set of its own, made when a run first uses it (ein_dnnl_use). */
#define EIN_DNNL_SETS 16

/* The engine, the stream, the workspace every operator shares, and the
 * sets of operators. */
typedef struct ein_dnnl {
    dnnl_engine_t eng;
    dnnl_stream_t stream;
    void *ws;                   /* 64-byte aligned, in ws_raw */
    void *ws_raw;
    size_t ws_bytes;
    int nops;                   /* operators in a set */
    int nsets;
    int nthr[EIN_DNNL_SETS];    /* the thread count of each set */
    ein_dnnl_op *set[EIN_DNNL_SETS];    /* set[0]: made by ein_lib_create */
} ein_dnnl;

#endif
