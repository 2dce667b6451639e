/* harness.h - what the main() of `einc --main` builds on: its command
 * line, seeded values for missing tensors, loading and writing tensor
 * lists, a wall-clock timer and the median of the timings.
 *
 *   ./net [--weights F] [--inputs F] [--outputs F] [--seed N] [--bench ITERS]
 *         [--threads N] [--runs N]
 *
 * Unlike st.c this is the program's front end, so rt_main_args and
 * rt_load_or_fill may print to stderr (and rt_main_args may exit); the
 * rest only computes.  The values are the same on every platform: integer
 * arithmetic only, see rt_uniform.  Prefix: rt_. */
#ifndef EINC_HARNESS_H
#define EINC_HARNESS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "rt.h" /* EMBED-SKIP */
#include "st.h" /* EMBED-SKIP */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct RtArgs {
    const char *prog;           /* argv[0] without its folders */
    const char *weights;        /* --weights F, or NULL */
    const char *inputs;         /* --inputs F, or NULL */
    const char *outputs;        /* --outputs F, or NULL */
    uint64_t seed;              /* --seed N; 0 by default */
    long bench;                 /* --bench ITERS; 0: no benchmark */
    int threads;                /* --threads N; 0: the default (OpenMP's) */
    long runs;                  /* --runs N: runs before the outputs; 0: one */
    int help;                   /* --help was given */
} RtArgs;

/* Parse the command line into *a.  Returns 0, or -1 with a message in err
 * (an unknown option, a missing or malformed value, an option given
 * twice, a stray argument).  --help sets a->help and stops. */
RT_API int rt_parse_args(int argc, char **argv, RtArgs *a, char *err,
                         size_t errlen);
RT_API void rt_usage(FILE *out, const char *prog);
/* rt_parse_args for main(): on an error prints "PROG: error: MSG" and a
 * hint to stderr and exits with status 1; on --help prints the usage to
 * stdout and exits with status 0. */
RT_API void rt_main_args(int argc, char **argv, RtArgs *a);

/* Seeded uniform values in [-1, 1): element i of the tensor NAME under
 * SEED is rt_uniform(rt_stream(seed, name), i).  Counter-based (SplitMix64
 * over a stream key), so a tensor's values depend only on the seed, its
 * name and the index: not on the order tensors are filled in, nor on the
 * platform.  tests/runtime/st.py computes the same values in Python. */
RT_API uint64_t rt_stream(uint64_t seed, const char *name);
RT_API float rt_uniform(uint64_t stream, uint64_t i);
/* Fill n elements of type dtype (F32, F16 or BF16; others get zeros). */
RT_API void rt_fill_uniform(void *dst, StDtype dtype, uint64_t n,
                            uint64_t seed, const char *name);

/* A tensor of the model, in host memory of nelem * dtype size bytes. */
typedef struct RtTensor {
    const char *name;
    StDtype dtype;
    int rank;
    const int64_t *shape;
    void *data;
} RtTensor;

RT_API uint64_t rt_nelem(const RtTensor *t);
RT_API size_t rt_nbytes(const RtTensor *t);
/* Read each tensor from the safetensors file at path (checking dtype and
 * shape); with path NULL fill them with seeded values instead and say so
 * on stderr ("PROG: no OPTION given: ...").  Returns an StStatus. */
RT_API int rt_load_or_fill(const char *prog, const char *option,
                           const char *path, const RtTensor *ts, int n,
                           uint64_t seed, char *err, size_t errlen);
/* Write the tensors, in the order given, to a safetensors file. */
RT_API int rt_write_tensors(const char *path, const RtTensor *ts, int n,
                            char *err, size_t errlen);

/* Milliseconds from a monotonic clock where the C library has one. */
RT_API double rt_now_ms(void);
/* Median of v[0..n) (sorts v); 0 when n is 0. */
RT_API double rt_median(double *v, int n);
/* "median 1.234567 ms per run over N runs (min ..., max ...)" on out;
 * sorts ms. */
RT_API void rt_print_bench(FILE *out, double *ms, int n);

#ifdef __cplusplus
}
#endif

#endif
