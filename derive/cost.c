/* cost.c - the analytic cost model of cost.h.  Peak rates are the
 * vendors' published dense figures (no structured sparsity); the
 * efficiencies are rough and meant to be replaced by measured times
 * (--tune-db, tune.c). */
#include "config.h"
#include "cost.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const Device devices[] = {
    /* H200 SXM: 67 TFLOP/s fp32; tensor cores 495 tf32, 989 fp16/bf16
     * (dense); HBM3e 4.8 TB/s; 132 SMs */
    {"h200", 67e12, {67e12, 494.7e12, 989.4e12, 989.4e12}, 4.8e12, 4e-6, 132,
     0.80, 0.60, 0.25, 0.75},
    /* A100 SXM 80 GB: 19.5 fp32; 156 tf32, 312 fp16/bf16; 2.0 TB/s; 108 SMs */
    {"a100", 19.5e12, {19.5e12, 156e12, 312e12, 312e12}, 2.0e12, 4e-6, 108,
     0.80, 0.60, 0.25, 0.75},
    /* V100 SXM2: 15.7 fp32; 125 fp16 on tensor cores; no tf32 or bf16
     * tensor cores (those run at the fp32 rate); 0.9 TB/s; 80 SMs */
    {"v100", 15.7e12, {15.7e12, 15.7e12, 125e12, 15.7e12}, 0.9e12, 5e-6, 80,
     0.80, 0.60, 0.25, 0.75},
    /* a small CPU: 2 cores with AVX2 FMA, no faster 16-bit arithmetic */
    {"cpu", 2e11, {2e11, 2e11, 2e11, 2e11}, 2e10, 2e-6, 2,
     0.70, 0.50, 0.20, 0.60},
};

static const char *const precision_names[] = {"fp32", "tf32", "fp16", "bf16"};

const char *cost_precision_name(Precision p)
{
    return (unsigned)p < PREC_COUNT ? precision_names[p] : "?";
}

bool cost_precision_parse(const char *name, Precision *out)
{
    for (int i = 0; i < PREC_COUNT; i++)
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

/* The L2 cache serves data this many times faster than DRAM. */
#define L2_FACTOR 2.5
/* A tile's prologue and epilogue (filling the pipeline, writing C) cost
 * about as much as this many steps of its k loop. */
#define K_OVERHEAD 32.0
/* The library splits k into slices of at least this much (split-K). */
#define SPLIT_K_MIN 256.0
/* A generated tiled kernel (G2BMM, GBMM) reaches this fraction of what a
 * vendor GEMM of the same tile does. */
#define GENERATED_TILED 0.8

static double points(const Stage *s)
{
    double n = 1;
    for (int i = 0; i < s->nloops; i++)
        n *= (double)(s->loops[i].hi - s->loops[i].lo);
    return n;
}

static double elem_bytes(const IrTensor *t)
{
    return t->elem == ELEM_F32 ? 4 : 2;
}

/* Bytes a stage moves from DRAM at best: each distinct tensor it reads
 * once (accesses of nested stages: what those read). */
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
            *bytes += elem_bytes(e->access.tensor) * (double)ir_tensor_numel(e->access.tensor);
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

/* ---- how a warp of a generated kernel reads memory -------------------------
 * The 32 lanes of a warp take 32 consecutive output elements (one thread
 * per element: the innermost loop fastest) or 32 consecutive terms of
 * one element (a warp per element: the innermost sum fastest).  An
 * access costs the 32-byte sectors its 32 lanes touch, taken at the first
 * elements and terms of the stage: 4 for a coalesced f32 read, 1 for a
 * broadcast, up to 32 for a scattered one. */

#define WARP 32
#define MAX_WARP_VARS 32

typedef struct Lanes {
    int ids[MAX_WARP_VARS];
    int64_t val[WARP][MAX_WARP_VARS];
    int nvars, nlanes;
} Lanes;

static int64_t lane_ix(const Lanes *w, int lane, const Ix *x)
{
    int64_t v = x->c;
    for (int i = 0; i < x->n; i++) {
        const IxTerm *t = &x->t[i];
        int64_t a = 0;
        if (t->kind == IX_VAR) {
            for (int k = 0; k < w->nvars; k++)
                if (w->ids[k] == t->var)
                    a = w->val[lane][k];
        } else {
            int64_t arg = lane_ix(w, lane, t->arg), q = arg / t->d;
            if (arg % t->d != 0 && (arg < 0) != (t->d < 0))
                q--;
            a = t->kind == IX_DIV ? q : arg - q * t->d;
        }
        v += t->coef * a;
    }
    return v;
}

/* Lanes stepping the variables `step` (row-major, the last fastest), the
 * others of the stage at their first value. */
static void lanes_init(Lanes *w, const Stage *s, const IrVar *step, int nstep)
{
    w->nvars = 0;
    const IrVar *lists[2] = {s->loops, s->sums};
    int counts[2] = {s->nloops, s->nsums};
    for (int l = 0; l < 2; l++)
        for (int i = 0; i < counts[l] && w->nvars < MAX_WARP_VARS; i++)
            w->ids[w->nvars++] = lists[l][i].id;
    double total = 1;
    for (int i = 0; i < nstep; i++)
        total *= (double)(step[i].hi - step[i].lo);
    w->nlanes = total < WARP ? (int)total : WARP;
    for (int lane = 0; lane < w->nlanes; lane++) {
        for (int k = 0; k < w->nvars; k++) {
            w->val[lane][k] = 0;
            for (int l = 0; l < 2; l++)
                for (int i = 0; i < counts[l]; i++)
                    if (lists[l][i].id == w->ids[k])
                        w->val[lane][k] = lists[l][i].lo;
        }
        int64_t rem = lane;
        for (int i = nstep - 1; i >= 0; i--) {
            int64_t ext = step[i].hi - step[i].lo;
            for (int k = 0; k < w->nvars; k++)
                if (w->ids[k] == step[i].id)
                    w->val[lane][k] = step[i].lo + rem % ext;
            rem /= ext;
        }
    }
}

/* Bytes the lanes fetch per term for the accesses of e: the sectors each
 * access touches, x 32 bytes, over the lanes. */
static double lane_traffic(const Lanes *w, const IExpr *e)
{
    switch (e->kind) {
    case IE_CONST: case IE_INDEX: case IE_ICMP:
        return 0;
    case IE_ACCESS: {
        if (!e->access.tensor || w->nlanes == 0)
            return 4;
        const IrTensor *t = e->access.tensor;
        double b = elem_bytes(t);
        int64_t sectors[WARP];
        int n = 0;
        for (int lane = 0; lane < w->nlanes; lane++) {
            int64_t off = 0;
            for (int d = 0; d < e->access.nidx && d < t->rank; d++)
                off = off * t->shape[d] + lane_ix(w, lane, e->access.idx[d]);
            int64_t sec = (int64_t)floor((double)off * b / 32);
            int k = 0;
            while (k < n && sectors[k] != sec)
                k++;
            if (k == n)
                sectors[n++] = sec;
        }
        return 32.0 * n / w->nlanes;
    }
    case IE_CALL: {
        double n = 0;
        for (int i = 0; i < e->call.nargs; i++)
            n += lane_traffic(w, e->call.args[i]);
        return n;
    }
    case IE_NEG: case IE_NOT:
        return lane_traffic(w, e->bin.a);
    default:
        return lane_traffic(w, e->bin.a) + lane_traffic(w, e->bin.b);
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

/* The output tiles a tiled GEMM-like kernel chooses from, with what each
 * reaches of the best one's rate when the machine is full (bigger tiles
 * reuse each operand element more from registers and shared memory).
 * The narrowest tiles are 8 wide: a product with a narrower side pads
 * it (a convolution with 1 to 7 filters runs far from peak).  The
 * one-wide "tiles" are matrix-vector kernels (GEMV), which BLAS
 * libraries use for a product with a side of 1 (gemv_ok). */
static const struct { double m, n, eff; bool gemv; } tiles[] = {
    {128, 128, 1.00, false}, {128, 64, 0.90, false}, {64, 64, 0.75, false},
    {64, 32, 0.60, false}, {32, 32, 0.45, false},
    {128, 16, 0.40, false}, {16, 128, 0.40, false},
    {128, 8, 0.30, false}, {8, 128, 0.30, false},
    {128, 1, 0.30, true}, {1, 128, 0.30, true},
};

/* Efficiency (fraction of the best rate) of a tiled product of `batch`
 * [m x k] x [k x n] matrices, at the best tile: tile efficiency x the
 * fraction of the tiles' area that is real x the fraction of the machine
 * the tiles fill x how much of the k loop is useful work.  split_k: a
 * BLAS product, which cuts a k long enough into slices when the tiles
 * alone leave units idle (the slices' partial results add *extra bytes)
 * and runs a product with a side of 1 as a GEMV; else a convolution.
 * *traffic: the bytes the tiles read through the caches (each tile its
 * rows of A and columns of B). */
static double tiled_eff(const Device *d, double m, double n, double k, double batch,
                        bool split_k, double *extra, double *traffic)
{
    double best = 0, best_extra = 0, best_traffic = 0;
    for (size_t i = 0; i < sizeof tiles / sizeof *tiles; i++) {
        if (tiles[i].gemv && (split_k ? fmin(m, n) > 1 : true))
            continue;
        double tm = ceil(m / tiles[i].m), tn = ceil(n / tiles[i].n);
        double count = tm * tn * batch;
        double fill = m * n / (tm * tiles[i].m * tn * tiles[i].n);
        double split = 1;
        if (split_k && count < d->units) {
            split = fmin(floor(k / SPLIT_K_MIN), ceil(d->units / count));
            if (split < 1)
                split = 1;
        }
        double slice = k / split;
        double eff = tiles[i].eff * fill * occupancy(d, count * split) *
                     (slice / (slice + K_OVERHEAD));
        if (eff > best) {
            best = eff;
            best_extra = split > 1 ? 2 * 4 * m * n * batch * split : 0;
            best_traffic = 4 * batch * k * (m * tn + n * tm);
        }
    }
    if (extra)
        *extra = best_extra;
    if (traffic)
        *traffic = best_traffic;
    return best;
}

/* The tiled band kernels of emit/band.c.  The dilation is taken out by
 * residue classes (rows dil*i' + r meet only key rows of residue r), so
 * it costs nothing but partial tiles: a block computes 64 rows i' of one
 * residue by 16*c columns (band entries for G2BMM, features for GBMM;
 * c in 1..4, the fewest padded columns), staging the rows it meets in
 * shared memory.  The flops returned count the padding of the tiles. */
static void band_cost(const Device *d, const OpMatch *m, double *flops, double *eff,
                      double *cache)
{
    static const double col_eff[] = {0, 0.45, 0.60, 0.68, 0.75};
    bool g2 = m->kind == OPK_G2BMM;
    double band = 2 * (double)m->gw + 1, dil = m->gdil > 0 ? (double)m->gdil : 1;
    double cols = g2 ? band : (double)m->gk, inner = g2 ? (double)m->gk : band;
    int c = 1;
    double pad = INFINITY;
    for (int i = 1; i <= 4; i++)
        if (ceil(cols / (16 * i)) * 16 * i <= pad) {
            pad = ceil(cols / (16 * i)) * 16 * i;
            c = i;
        }
    double rows = ceil(ceil((double)m->gm / dil) / 64) * 64 * dil;
    double tiles = (double)m->gb * rows / 64 * (pad / (16 * c));
    *flops = 2 * (double)m->gb * rows * pad * inner;
    *eff = d->lib_eff * GENERATED_TILED * col_eff[c] * occupancy(d, tiles) *
           (inner / (inner + K_OVERHEAD));
    /* per tile: G2BMM 64 query rows and 63 + 16c key rows of k; GBMM 64
     * rows of scores and 63 + band value rows of 16c features */
    *cache = 4 * tiles * (g2 ? (64 + 63 + 16 * c) * inner
                             : 64 * band + (63 + band) * 16 * c);
}

/* Seconds of a generated kernel run by `threads` threads (2048 resident
 * on a unit) at the generated kernels' fraction of the FMA peak, with
 * `mem` seconds of DRAM traffic, `cache` bytes through the caches and
 * `loads` load instructions per lane, which the load units issue at an
 * eighth of the FMA rate (128 bytes a clock against 128 FMAs a clock on
 * an SM; 2 loads against 16 FLOPs on an AVX2 core). */
static double kernel_time(const Device *d, double flops, double mem, double threads,
                          double cache, double loads)
{
    double occ = occupancy(d, ceil(threads / 2048));
    double eff = d->kernel_eff * occ;
    double compute = flops / (d->flops * (eff > 1e-6 ? eff : 1e-6));
    compute = fmax(compute, loads / (d->flops / 8 * occ));
    return fmax(compute, fmax(mem, cache / (d->bandwidth * d->mem_eff * L2_FACTOR)));
}

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

double cost_model(const Device *d, Precision prec, const Stage *s, const OpMatch *m)
{
    const IrTensor *seen[64];
    int nseen = 0;
    double dram = 4 * points(s), cache = 0;
    collect_reads(s->body, seen, &nseen, &dram);
    double flops = match_flops(s), peak = d->flops, eff, extra = 0;
    switch (m ? m->kind : OPK_KERNEL) {
    case OPK_MATMUL:
    case OPK_BATCH_MATMUL: {
        double mm = (double)m->m, nn = (double)m->n, kk = (double)m->k;
        double bb = (double)(m->batch ? m->batch : 1);
        peak = d->peak[prec];
        eff = d->lib_eff * tiled_eff(d, mm, nn, kk, bb, true, &extra, &cache);
        break;
    }
    case OPK_CONV2D:
    case OPK_CONV_TRANSPOSE2D: {
        /* implicit GEMM: output pixels x filters over c*r*s, without
         * split-K: convolutions with few output pixels run far from peak
         * (EinNet measured cuDNN at 0.126 ms for 7x7x512 on an A100) */
        double pix = points(s) / (double)m->f, kk = flops / points(s) / 2;
        peak = d->peak[prec];
        eff = d->conv_eff * tiled_eff(d, pix, (double)m->f, kk, 1, false, NULL, NULL);
        /* a tile of 8 x 8 output pixels stages its input patch, halo
         * included, once per filter tile; the taps re-read it from shared
         * memory */
        double halo = (double)((7 + (m->r - 1) * m->dilation + 1) *
                               (7 + (m->s - 1) * m->dilation + 1)) / 64;
        cache = 4 * ((double)ir_tensor_numel(m->in[0]) * halo * ceil((double)m->f / 64) +
                     (double)ir_tensor_numel(m->in[1]) * ceil(pix / 64));
        break;
    }
    case OPK_G2BMM:
    case OPK_GBMM:
        band_cost(d, m, &flops, &eff, &cache);
        break;
    default: {
        double terms = 1;
        for (int i = 0; i < s->nsums; i++)
            terms *= (double)(s->sums[i].hi - s->sums[i].lo);
        /* the emitter's two layouts (emit/cuda.c): a thread per output
         * element, or a warp per element for reductions long enough */
        double mem = dram / (d->bandwidth * d->mem_eff);
        double loads = points(s) * terms * count_reads(s->body);
        Lanes *w = xmalloc(sizeof *w);
        lanes_init(w, s, s->loops, s->nloops);
        double t = kernel_time(d, flops, mem, points(s),
                               points(s) * terms * lane_traffic(w, s->body), loads);
        if (terms >= WARP) {
            lanes_init(w, s, s->sums, s->nsums);
            t = fmin(t, kernel_time(d, flops, mem, WARP * points(s),
                                    points(s) * terms * lane_traffic(w, s->body), loads));
        }
        free(w);
        return d->launch + t;
    }
    }
    dram += extra;
    double compute = flops / (peak * (eff > 1e-6 ? eff : 1e-6));
    double memory = fmax(dram / (d->bandwidth * d->mem_eff),
                         cache / (d->bandwidth * d->mem_eff * L2_FACTOR));
    return d->launch + (compute > memory ? compute : memory);
}

double cost_stage_ex(const CostModel *cm, const Stage *s, const OpMatch *m, bool *measured)
{
    if (measured)
        *measured = false;
    if (cm->db && tune_db_count(cm->db) > 0) {
        char *key = cost_op_key(NULL, s, m, cm->precision);
        double t = tune_db_lookup(cm->db, key);
        free(key);
        if (t >= 0) {
            if (measured)
                *measured = true;
            return t;
        }
    }
    return cost_model(cm->dev, cm->precision, s, m);
}

double cost_stage(const CostModel *cm, const Stage *s, const OpMatch *m)
{
    return cost_stage_ex(cm, s, m, NULL);
}
