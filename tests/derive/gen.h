/* gen.h - random stages for the rule tests: a few random input tensors and
 * a random closed stage tree over them, with strides, dilations, negative
 * offsets, padded reads, floor division and modulo in subscripts and
 * guards, gathers (reads of an i32 tensor in subscripts, some out of
 * range), sum/max/min reductions, and nested stages (closed, or reading
 * variables of the stages around them). */
#ifndef EINC_TEST_GEN_H
#define EINC_TEST_GEN_H

#include "derive/ir/ir.h"

#define GEN_TENSORS 3               /* real tensors A, B, C: ids 0..2 */
#define GEN_INDEX GEN_TENSORS       /* the i32 tensor G of gathers: id 3 */

typedef struct Gen {
    IrCtx *cx;
    uint64_t rng;
    IrTensor tensors[GEN_TENSORS + 1];
    int64_t shapes[GEN_TENSORS + 1][4];
    double *data[GEN_TENSORS + 1];  /* by tensor id, filled uniform(-1, 1);
                                       G with integers in [-1, 5] */
    IrVar scope[64];                /* variables a subscript may use */
    int gather_depth;               /* gathers inside gathers: not yet */
    int nscope;
} Gen;

void gen_init(Gen *g, IrCtx *cx, uint64_t seed);
void gen_free(Gen *g);
/* New random tensors (shapes and data), then a random stage over them. */
const Stage *gen_stage(Gen *g);
int64_t gen_range(Gen *g, int64_t lo, int64_t hi);     /* uniform in [lo, hi] */

#endif
