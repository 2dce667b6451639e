/* plan.h - from a derived expression to a program of operators.
 * A derived expression may hold nested stages; instantiation turns each
 * nested stage into an intermediate tensor of its own (shifted so its
 * index space starts at 0), matches every resulting stage against the
 * operator patterns (match.h) and prices it (cost.h).  A plan is the
 * whole program so rewritten: the original tensors, the intermediates,
 * and for each computed tensor the operator that computes it.
 * Prefix: plan_. */
#ifndef EINC_PLAN_H
#define EINC_PLAN_H

#include "../pricing/cost.h"

typedef struct PlanOp {
    const IrTensor *out;        /* the tensor computed */
    const Stage *stage;         /* what computes it (for the result of a
                                   derivation: its flattened expression) */
    OpMatch op;                 /* op.kind == OPK_KERNEL: a generated kernel */
    double cost;                /* seconds, estimated */
    bool measured;              /* cost is a time from the tuning database */
} PlanOp;

/* The pieces of one expression: intermediates first, the result last. */
typedef struct Pieces {
    VEC(PlanOp) ops;
    double cost;
} Pieces;

/* Flatten `s`, a derived form of the definition of `result`, into pieces;
 * new tensors are named "<result>.tN" and get ids from *next_id.  The last
 * piece computes `result` itself: its stage is `s` with every nested stage
 * replaced by an access to its tensor.  Nothing existing is changed. */
void plan_instantiate(IrCtx *cx, const CostModel *cm, const IrTensor *result,
                      const Stage *s, int *next_id, Pieces *out);

typedef struct Plan {
    IrProgram *prog;            /* derived program (tensors in dependence order) */
    PlanOp *ops;                /* per tensor id: set for IT_STAGE tensors */
    double cost;                /* seconds, estimated */
} Plan;

/* Print one operator a line with shapes and estimated cost (--emit=plan). */
void plan_print(const Plan *pl, FILE *fp);

#endif
