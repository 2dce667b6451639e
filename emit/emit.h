/* emit.h - writers for a plan (derive/search/plan.h): C+CUDA, C, and
 * Graphviz.  They write what the plan records and decide nothing: each
 * operator is the library call, band kernel or generated kernel the plan
 * says, on the plan's target, with its fused stages and its epilogue.
 * Generated kernels are described once and written in two dialects (a
 * CUDA __global__ kernel with a grid-stride loop; a C loop nest).  The
 * runtime pieces the output needs are embedded from runtime/.  Output
 * depends only on the plan and the options (byte-identical across runs
 * and machines).  Prefix: emit_. */
#ifndef EINC_EMIT_H
#define EINC_EMIT_H

#include <stdio.h>
#include "../derive/search/plan.h"

typedef struct EmitOptions {
    bool main;                  /* --main: add the harness main() */
    const char *out_name;       /* output file as given with -o (for the
                                   first-line build command); NULL for stdout */
    const char *src_name;       /* the .ein file as named on the command line */
    /* --emit=tuner: per tensor id, the tuning-database key of the operator
     * that computes it (NULL: not timed); the file then gets the tuner's
     * main (emit/tuner.c) instead of the harness */
    const char *const *tune_keys;
    const char *tune_device;    /* the device line of the database it writes */
    bool shared;                /* --shared: line 1 builds a shared library */
    bool sleef;                 /* --sleef: C vector math from SLEEF (-lsleefgnuabi),
                                   else glibc's libmvec */
} EmitOptions;

/* Write the plan as a C file (target TARGET_C) or a C+CUDA file
 * (TARGET_CUDA), library calls computing in pl->precision; returns 0, or
 * reports an error (diag_error) and returns -1. */
int emit_program(const Plan *pl, const EmitOptions *opt, FILE *out);
/* The plan's program graph for `einc --dot`: the same operators, named as
 * in the C or CUDA file of its target. */
int emit_dot(const Plan *pl, FILE *out);

#endif
