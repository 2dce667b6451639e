/* gen_ein.h - a structure-aware input for the whole-pipeline fuzzer
 * (fuzz_compile.c): turns arbitrary bytes into a well-formed .ein program,
 * so that most inputs get past the parser and sema and exercise derive and
 * emit.  The bytes are read as a stream of choices (which statement form,
 * which tensor to read, which subscript, which size); when they run out
 * every further choice is 0, so any input, even an empty one, gives a
 * program.  The programs have constants, inputs and weights of rank 0 to
 * 40, maps, sum/max/min reductions with where ranges and guards, div and
 * mod in subscripts, strided, dilated, padded and transposed
 * convolutions, pooling, (batched) matrix products, banded products
 * (G2BMM/GBMM), full reductions of high rank, reshapes, defs with shape
 * variables (called and nested), layers of one form repeated over their
 * own weights (whose searches are reused), several outputs.  Names come from a
 * fixed set, so interned symbols stay bounded over millions of inputs.
 * Most programs are correct; a few choices deliberately make mistakes
 * (a conflicting extent, a wrong rank), which sema must report. */
#ifndef EINC_GEN_EIN_H
#define EINC_GEN_EIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct GenOptions {
    bool small;         /* every tensor and statement small enough for the
                           interpreter (the differential mode); no functions
                           that can give NaN or infinity from finite values */
} GenOptions;

/* The program text (malloc'd, NUL-terminated; *len without the NUL), and
 * options for the compile drawn from the same bytes: *choice receives 16
 * bits of their own for the harness (level, device, precision, writers). */
char *gen_ein(const uint8_t *data, size_t size, const GenOptions *opt,
              size_t *len, unsigned *choice);

#endif
