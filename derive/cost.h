/* cost.h - the first cost model: time of one operator on a named device
 * as launch cost + max(compute, memory), where compute is FLOPs over the
 * device's peak rate scaled by an efficiency that falls for shapes too
 * small to fill the machine, and memory is bytes over bandwidth.  Vendor
 * operators run near peak when they have enough tiles; generated kernels
 * (eOperators) reach a fixed fraction of it.  Prefix: cost_. */
#ifndef EINC_COST_H
#define EINC_COST_H

#include "match.h"

/* The arithmetic of vendor operators (--precision): fp32 is plain IEEE
 * single precision (TF32 off, as EinNet's evaluation ran); tf32, fp16 and
 * bf16 let GEMMs and convolutions round their operands to that format on
 * tensor cores while keeping f32 storage and accumulation. */
typedef enum { PREC_FP32, PREC_TF32, PREC_FP16, PREC_BF16 } Precision;
const char *cost_precision_name(Precision p);       /* "fp32", ... */
bool cost_precision_parse(const char *name, Precision *out);

typedef struct Device {
    const char *name;
    double flops;               /* fp32 peak, FLOP/s (no tensor cores: TF32 off) */
    double bandwidth;           /* memory, bytes/s */
    double launch;              /* seconds per kernel or library call */
    int units;                  /* SMs (or cores) that tiles spread over */
    double lib_eff;             /* GEMM efficiency at full occupancy */
    double conv_eff;            /* convolution efficiency at full occupancy */
    double kernel_eff;          /* generated kernels: fraction of peak FLOP/s */
    double mem_eff;             /* fraction of bandwidth reached */
} Device;

/* NULL for an unknown name (h200, a100, v100, cpu are known). */
const Device *cost_device(const char *name);

/* Estimated seconds for the stage `s`, run as the operator `m` (or as a
 * generated kernel when m is NULL or m->kind == OPK_KERNEL). */
double cost_stage(const Device *d, const Stage *s, const OpMatch *m);

#endif
