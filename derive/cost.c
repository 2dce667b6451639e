/* cost.c - the analytic cost model of cost.h.  Figures are the vendors'
 * published peaks (fp32 without tensor cores, HBM bandwidth); the
 * efficiencies are rough and meant to be replaced by measured times. */
#include "config.h"
#include "cost.h"

#include <math.h>
#include <string.h>

static const Device devices[] = {
    /* name     FLOP/s   bytes/s  launch  units lib  conv kern mem */
    {"h200",    67e12,   4.8e12,  4e-6,   132, 0.80, 0.60, 0.25, 0.75},
    {"a100",    19.5e12, 2.0e12,  4e-6,   108, 0.80, 0.60, 0.25, 0.75},
    {"v100",    15.7e12, 0.9e12,  5e-6,   80,  0.80, 0.60, 0.25, 0.75},
    {"cpu",     2e11,    2e10,    2e-6,   2,   0.70, 0.50, 0.20, 0.60},
};

static const char *const precision_names[] = {"fp32", "tf32", "fp16", "bf16"};

const char *cost_precision_name(Precision p)
{
    return (unsigned)p < 4 ? precision_names[p] : "?";
}

bool cost_precision_parse(const char *name, Precision *out)
{
    for (int i = 0; i < 4; i++)
        if (strcmp(precision_names[i], name) == 0) {
            *out = (Precision)i;
            return true;
        }
    return false;
}

const Device *cost_device(const char *name)
{
    for (size_t i = 0; i < sizeof devices / sizeof *devices; i++)
        if (strcmp(devices[i].name, name) == 0)
            return &devices[i];
    return NULL;
}

static double points(const Stage *s)
{
    double n = 1;
    for (int i = 0; i < s->nloops; i++)
        n *= (double)(s->loops[i].hi - s->loops[i].lo);
    return n;
}

/* Bytes a stage moves: each distinct tensor it reads once, its output once. */
static void collect_reads(const IExpr *e, const IrTensor **seen, int *n, double *bytes)
{
    switch (e->kind) {
    case IE_CONST: case IE_INDEX: case IE_ICMP:
        return;
    case IE_ACCESS:
        if (e->access.tensor) {
            for (int i = 0; i < *n; i++)
                if (seen[i] == e->access.tensor)
                    return;
            if (*n < 64)
                seen[(*n)++] = e->access.tensor;
            *bytes += 4.0 * (double)ir_tensor_numel(e->access.tensor);
        } else {
            collect_reads(e->access.stage->body, seen, n, bytes);
        }
        return;
    case IE_CALL:
        for (int i = 0; i < e->call.nargs; i++)
            collect_reads(e->call.args[i], seen, n, bytes);
        return;
    case IE_NEG: case IE_NOT:
        collect_reads(e->bin.a, seen, n, bytes);
        return;
    default:
        collect_reads(e->bin.a, seen, n, bytes);
        collect_reads(e->bin.b, seen, n, bytes);
        return;
    }
}

/* Caches serve re-read operands this many times faster than memory. */
#define L2_FACTOR 2.5

static double count_reads(const IExpr *e)
{
    switch (e->kind) {
    case IE_CONST: case IE_INDEX: case IE_ICMP:
        return 0;
    case IE_ACCESS:
        return 1;
    case IE_CALL: {
        double n = 0;
        for (int i = 0; i < e->call.nargs; i++)
            n += count_reads(e->call.args[i]);
        return n;
    }
    case IE_NEG: case IE_NOT:
        return count_reads(e->bin.a);
    default:
        return count_reads(e->bin.a) + count_reads(e->bin.b);
    }
}

/* Fraction of the machine a launch of `tiles` independent tiles fills,
 * counting the last partial wave. */
static double occupancy(const Device *d, double tiles)
{
    if (tiles <= 0)
        return 1;
    double waves = ceil(tiles / d->units);
    return tiles / (waves * d->units);
}

/* Independent work units of a GEMM: 64x64 output tiles, and split-K (the
 * library cuts a long k into slices of 128 or more, to fill the machine)
 * when the tiles alone do not. */
static double gemm_units(const Device *d, double m, double n, double k, double batch)
{
    double tiles = ceil(m / 64) * ceil(n / 64) * batch;
    double split = floor(k / 128);
    double room = ceil(d->units / tiles);
    if (split > room)
        split = room;
    return tiles * (split > 1 ? split : 1);
}

double cost_stage(const Device *d, const Stage *s, const OpMatch *m)
{
    const IrTensor *seen[64];
    int nseen = 0;
    double bytes = 4 * points(s);
    collect_reads(s->body, seen, &nseen, &bytes);
    double flops = match_flops(s), eff;
    switch (m ? m->kind : OPK_KERNEL) {
    case OPK_MATMUL:
    case OPK_BATCH_MATMUL:
        eff = d->lib_eff * occupancy(d, gemm_units(d, (double)m->m, (double)m->n, (double)m->k,
                                                   (double)(m->batch ? m->batch : 1)));
        break;
    case OPK_CONV2D:
    case OPK_CONV_TRANSPOSE2D:
        /* implicit GEMM over output pixels x filters, without split-K:
         * convolutions with few output pixels run far from peak (EinNet
         * measured cuDNN at 0.126 ms for 7x7x512 on an A100) */
        eff = d->conv_eff * occupancy(d, ceil(points(s) / (double)m->f / 64) *
                                             ceil((double)m->f / 64));
        break;
    case OPK_G2BMM:
    case OPK_GBMM:
        eff = d->lib_eff * 0.5 * occupancy(d, ceil((double)m->gm / 64) * (double)m->gb);
        break;
    default:
        /* one thread per output point, 2048 resident per unit; a reduction
         * reads its operands again for every term, from cache at best */
        eff = d->kernel_eff * occupancy(d, ceil(points(s) / 2048));
        if (s->nsums) {
            double terms = flops / points(s) / 2;
            double rereads = points(s) * terms * 4 * count_reads(s->body);
            double cached = rereads / (d->bandwidth * L2_FACTOR);
            if (cached > bytes / (d->bandwidth * d->mem_eff))
                bytes = cached * d->bandwidth * d->mem_eff;
        }
        break;
    }
    double compute = flops / (d->flops * (eff > 1e-6 ? eff : 1e-6));
    double memory = bytes / (d->bandwidth * d->mem_eff);
    return d->launch + (compute > memory ? compute : memory);
}
