/* tune.h - the program that einc --emit=tuner writes: every distinct
 * operator of every candidate the search kept, each on inputs of its own,
 * so that the generated CUDA file can time each one and write a tuning
 * database (cost.h) for einc --tune-db.  Prefix: tune_. */
#ifndef EINC_TUNE_H
#define EINC_TUNE_H

#include "derive.h"

/* The plan of a program whose tensors are the inputs of the operators
 * (IT_INPUT, one per tensor of `d` that some operator reads, in order of
 * first use) and then one IT_STAGE tensor per distinct operator (by
 * cost_op_key under cm->precision), each an output, computed by that
 * operator as the plan it comes from records it (its implementation,
 * fusion and epilogue), reading those inputs.  Operators that run at load
 * (weights only) are left out.  *keys receives, per tensor id of the
 * result, the key of its operator (NULL for the inputs). */
Plan *tune_program(IrCtx *cx, const Derived *d, const CostModel *cm,
                        const char *const **keys);

#endif
