/* model.h - a stand-in for what a generated file defines before the
 * support pieces (runtime/README.md, "Support pieces"), so that each
 * piece compiles on its own (tests/runtime/support.test); never pasted.
 *
 * The pieces are written for a model named `model`: emit pastes them with
 * every identifier that starts with model_ or MODEL_ renamed to the
 * program's prefix.  Here are that model's API (what emit/api.c declares
 * for every program), a table of EIN_NT tensors, the context with every
 * field a piece uses, and the functions that the generated file and the
 * pieces define for each other.  __CUDACC__ chooses the CUDA target. */
#ifndef EINC_MODEL_H
#define EINC_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "rt.h"
#include "st.h"
#include "harness.h"
#ifdef __CUDACC__
#include <cuda_runtime.h>
#include <cublas_v2.h>
#include "cudnn_types.h"
#include "cublaslt_types.h"
#endif

/* ---- the API, as emit/api.c declares it -------------------------------- */
typedef struct model_ctx model_ctx;

enum {
    MODEL_OK = 0, MODEL_EINVAL = 1, MODEL_EIO = 2, MODEL_EFORMAT = 3,
    MODEL_ENOMEM = 4, MODEL_ECUDA = 5, MODEL_EMISSING = 6, MODEL_ELIB = 7
};
enum { MODEL_INPUT = 0, MODEL_WEIGHT = 1, MODEL_COMPUTED = 2 };
enum {
    MODEL_F32 = 0, MODEL_F16 = 1, MODEL_BF16 = 2, MODEL_I8 = 3, MODEL_I16 = 4,
    MODEL_I32 = 5, MODEL_I64 = 6, MODEL_U8 = 7, MODEL_BOOL = 8
};

typedef struct model_tensor_info {
    const char *name;
    const char *ext_name;
    int kind;
    int is_output;
    int rank;
    const int64_t *shape;
    size_t count;
    int elem;
    size_t nbytes;
} model_tensor_info;

int model_create(model_ctx **ctx);
int model_load_weights(model_ctx *ctx, const char *path);
int model_set_tensor(model_ctx *ctx, const char *name, const void *data,
        size_t nbytes);
int model_get_tensor(model_ctx *ctx, const char *name, void *data, size_t nbytes);
#ifdef __CUDACC__
int model_run_named(model_ctx *ctx, cudaStream_t stream);
#else
int model_run_named(model_ctx *ctx);
#endif
const char *model_last_error(const model_ctx *ctx);
int model_destroy(model_ctx *ctx);
int model_set_threads(model_ctx *ctx, int n);
int model_tensor_count(void);
const model_tensor_info *model_tensor_at(int i);
const model_tensor_info *model_output_at(int k);

/* ---- the tensors and the context (emit/api.c) ---------------------------- */
#define EIN_NT 2
/* Is tensor i stored inside another's buffer (a band operator's or a
 * GEMM's output view, derive/search/plan.h's PlanBuf): no buffer, never a
 * value of its own. */
#define EIN_VIEW(i) ((i) < 0)
/* The bytes of the arena the intermediates share, and the offset of
 * tensor i in it, -1 for none (derive/search/plan.h's Plan.at). */
#define EIN_ARENA_BYTES ((size_t)0)
#define EIN_AT(i) (-1)
extern const model_tensor_info ein_tensors[EIN_NT];

struct model_ctx {
    void *buf[EIN_NT];
    void *arena;
    unsigned char valid[EIN_NT];
    int weights_changed;
    int threads;
#ifdef __CUDACC__
    cudaStream_t io;                /* the context's own copies (set, load, get) */
    cudaEvent_t done;               /* recorded at the end of every run */
    cudaStream_t cap;               /* the run's graph is captured on it */
    cudaGraphExec_t graph;          /* the run-time stages, captured; NULL: not yet */
    void *graph_p[EIN_NT];          /* the buffers the graph was captured with */
    int no_graph;                   /* EIN_NO_GRAPH at create, or a capture failed */
    cublasHandle_t blas;
    void *blas_ws;                  /* cuBLAS's and cuBLASLt's workspace */
    cublasLtHandle_t lt;
    ein_lt lts[2];
    cudnnHandle_t dnn;
    ein_conv conv[2];
    void *ws;
    int64_t ws_bytes;
#else
    struct ein_pace *pace;
    int pace_max;
    int fixed_threads;
    int omp_saved;
    double run_t0;
    float *col;
    float *rnd0, *rnd1;
#endif
    char note[600];
    char err[512];
};

/* Made and freed with the context (emit/lib.c writes them after the
   operators). */
RT_API int ein_lib_create(model_ctx *ctx);
RT_API int ein_lib_destroy(model_ctx *ctx);
#ifndef __CUDACC__
/* Before a run on n threads (api_host.c): the libraries' state for that
   count; *cold: the run does more than usual (emit/lib.c). */
RT_API int ein_lib_threads(model_ctx *ctx, int n, int *cold);
/* Before tensor i is read from its buffer (api_host.c): a library that
   keeps it in a layout of its own puts it in einc's (emit/lib.c). */
RT_API int ein_lib_fetch(model_ctx *ctx, int i);
#endif

/* The C target's banded products: rows a block (emit/lib.c). */
#define EIN_BAND_ROWS 64
/* The CUDA band kernels' load of an operand (emit/band.c). */
#define EIN_BAND_LD(x) (x)

/* The --main harness: outputs by tensor id (emit/main.c). */
#define EIN_NOUT 1
extern const int ein_outputs[EIN_NOUT];

/* The tuner: its operators and device (emit/tuner.c). */
#ifdef __CUDACC__
typedef int (*ein_tune_fn)(model_ctx *, void *const *, cudaStream_t);
extern const struct ein_tune_op {
    int id;
    ein_tune_fn run;
    const char *key;
} ein_tune_ops[1];
#define EIN_TUNE_NOPS 1
#define EIN_TUNE_DEVICE "h200"
#endif

/* ---- what the pieces define for each other ------------------------------- */
/* api_base.c */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
RT_API int ein_fail(model_ctx *ctx, int rc, const char *fmt, ...);
RT_API int ein_no_ctx(void);
RT_API int ein_st_code(int st);
RT_API StDtype ein_st_dtype(int elem);
/* api_host.c, api_cuda.cu */
RT_API int ein_ctx_open(model_ctx *ctx);
RT_API int ein_ctx_idle(model_ctx *ctx);
RT_API int ein_ctx_close(model_ctx *ctx);
RT_API int ein_mem_alloc(model_ctx *ctx, void **out, size_t bytes, const char *what);
RT_API int ein_buf_free(void *buf);
RT_API int ein_io_after_runs(model_ctx *ctx);
RT_API int ein_buf_load(model_ctx *ctx, StFile *f, int i);
RT_API int ein_buf_put(model_ctx *ctx, int i, const void *data, size_t nbytes);
RT_API int ein_buf_get(model_ctx *ctx, int i, void *data, size_t nbytes);
#ifndef __CUDACC__
/* api_host.c */
RT_API int ein_threads_begin(model_ctx *ctx);
RT_API void ein_threads_end(model_ctx *ctx, int rc);
#endif
#ifdef __CUDACC__
/* api_cuda.cu */
RT_API int ein_cuda_fail(model_ctx *ctx, cudaError_t e, const char *call);
/* cublas.cu */
extern const float ein_one, ein_zero;
/* the stage runner of the run-time stages (emit/api.c), and graph.cu */
RT_API int ein_run_stages(model_ctx *ctx, void *const *p, cudaStream_t stream);
RT_API int ein_graph_run(model_ctx *ctx, void *const *p, cudaStream_t stream);
#endif
/* main_host.c, main_cuda.cu */
RT_API int ein_main_run(model_ctx *ctx);
RT_API int ein_bench(model_ctx *ctx, long iters, const char *prog);

#endif
