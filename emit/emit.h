/* emit.h - writers for a lowered program: C+CUDA, C, and Graphviz.
 * Each stage becomes one generated kernel, described once and written in
 * two dialects (a CUDA __global__ kernel with a grid-stride loop; a C loop
 * nest).  The runtime pieces the output needs are embedded from runtime/.
 * Output depends only on the program and the options (byte-identical
 * across runs and machines).  Prefix: emit_. */
#ifndef EINC_EMIT_H
#define EINC_EMIT_H

#include <stdio.h>
#include "../derive/pricing/cost.h"

typedef enum { TARGET_CUDA, TARGET_C } Target;

typedef struct EmitOptions {
    Target target;
    bool main;                  /* --main: add the harness main() */
    const char *out_name;       /* output file as given with -o (for the
                                   first-line build command); NULL for stdout */
    const char *src_name;       /* the .ein file as named on the command line */
    Precision precision;        /* --precision: compute type of library calls */
    /* --emit=tuner: per tensor id, the tuning-database key of the operator
     * that computes it (NULL: not timed); the file then gets the tuner's
     * main (emit/tuner.c) instead of the harness */
    const char *const *tune_keys;
    const char *tune_device;    /* the device line of the database it writes */
    bool shared;                /* --shared: line 1 builds a shared library */
} EmitOptions;

/* Write the program; returns 0, or reports an error (diag_error) and
 * returns -1. */
int emit_program(const IrProgram *p, const EmitOptions *opt, FILE *out);
/* Program graph for `einc --dot`. */
int emit_dot(const IrProgram *p, FILE *out);

#endif
