/* cost.c - the analytic cost model of cost.h.  Peak rates are the
 * vendors' published dense figures (no structured sparsity); the
 * efficiencies are rough and meant to be replaced by measured times
 * (--tune-db, tunedb.c). */
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
    /* The C target on one core (OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1,
     * as tests/bench/cpu.sh runs it): cblas_sgemm's peak, the stream
     * bandwidth of a generated loop, a kernel call.  The C target prices
     * operators with cpu_figures below (cpu_model), not with the GPU
     * terms; these fields are what those figures amount to. */
    {"cpu", 109e9, {109e9, 109e9, 109e9, 109e9}, 52e9, 0.02e-6, 1,
     1.0, 1.0, 0.03, 1.0},
};

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

/* The sum of fn(arg, acc) over the accesses in e (not those inside
 * nested stages). */
typedef double (*AccessFn)(const void *arg, const IExpr *acc);
static double sum_accesses(const IExpr *e, AccessFn fn, const void *arg)
{
    if (e->kind == IE_ACCESS)
        return fn(arg, e);
    const IExpr *kids[IR_MAX_CHILDREN];
    int n = ir_expr_children(e, kids);
    double t = 0;
    for (int i = 0; i < n; i++)
        t += sum_accesses(kids[i], fn, arg);
    return t;
}

/* Bytes a stage moves from DRAM at best: each distinct tensor it reads
 * once (gathers too; accesses of nested stages: what those read). */
typedef struct Reads {
    const IrTensor **seen;
    int n;
    double bytes;
} Reads;

static bool collect_read(void *arg, const IExpr *e)
{
    Reads *r = arg;
    if (e->kind != IE_ACCESS)
        return true;
    if (!e->access.tensor) {
        ir_expr_visit(e->access.stage->body, collect_read, r);
        return true;
    }
    for (int i = 0; i < r->n; i++)
        if (r->seen[i] == e->access.tensor)
            return true;
    if (r->n < 64)
        r->seen[r->n++] = e->access.tensor;
    r->bytes += elem_bytes(e->access.tensor) * (double)ir_tensor_numel(e->access.tensor);
    return true;
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

/* Lane offsets wrap rather than overflow: a read far outside its tensor
 * (x[2^61 * i, 0], zeros, which sema allows) must not be undefined
 * behaviour here; such a lane's sector is meaningless but harmless. */
static int64_t wrap_mul_add(int64_t a, int64_t b, int64_t c)
{
    return (int64_t)((uint64_t)a * (uint64_t)b + (uint64_t)c);
}

/* Where variable `id` is among the lanes' variables, or -1. */
static int var_at(const Lanes *w, int id)
{
    for (int k = 0; k < w->nvars; k++)
        if (w->ids[k] == id)
            return k;
    return -1;
}

/* Lanes stepping the variables `step` (row-major, the last fastest), the
 * others of the stage at their first value. */
static void lanes_init(Lanes *w, const Stage *s, const IrVar *step, int nstep)
{
    int64_t first[MAX_WARP_VARS];
    w->nvars = 0;
    const IrVar *lists[2] = {s->loops, s->sums};
    int counts[2] = {s->nloops, s->nsums};
    for (int l = 0; l < 2; l++)
        for (int i = 0; i < counts[l] && w->nvars < MAX_WARP_VARS; i++) {
            first[w->nvars] = lists[l][i].lo;
            w->ids[w->nvars++] = lists[l][i].id;
        }
    double total = 1;
    for (int i = 0; i < nstep; i++)
        total *= (double)(step[i].hi - step[i].lo);
    w->nlanes = total < WARP ? (int)total : WARP;
    /* Lane l has the stepped variables at their first values plus l's
     * digits, row-major, the last fastest: an odometer over the last ones
     * longer than 1 (32 lanes turn at most 5 of them; the others stay at
     * their first values).  `step` is some of s's variables. */
    int at[6];
    int64_t len[6], digit[6];
    int m = 0;
    double turned = 1;
    for (int i = nstep - 1; i >= 0 && turned < WARP && m < 6; i--)
        if (step[i].hi - step[i].lo >= 2) {
            at[m] = var_at(w, step[i].id);
            len[m] = step[i].hi - step[i].lo;
            digit[m] = 0;
            turned *= (double)len[m];
            m++;
        }
    for (int lane = 0; lane < w->nlanes; lane++) {
        memcpy(w->val[lane], first, (size_t)w->nvars * sizeof *first);
        for (int j = 0; j < m; j++)
            if (at[j] >= 0)
                w->val[lane][at[j]] += digit[j];
        for (int j = 0; j < m && ++digit[j] == len[j]; j++)
            digit[j] = 0;
    }
}

/* The value of x at every lane, into v[0 .. nlanes). */
static void lane_ix(const Lanes *w, const Ix *x, int64_t *v)
{
    for (int lane = 0; lane < w->nlanes; lane++)
        v[lane] = x->c;
    for (int i = 0; i < x->n; i++) {
        const IxTerm *t = &x->t[i];
        int64_t a[WARP];
        if (t->kind == IX_VAR) {
            int k = var_at(w, t->var);
            for (int lane = 0; lane < w->nlanes; lane++)
                a[lane] = k >= 0 ? w->val[lane][k] : 0;
        } else {
            lane_ix(w, t->arg, a);
            for (int lane = 0; lane < w->nlanes; lane++)
                a[lane] = t->kind == IX_DIV ? i64_floordiv(a[lane], t->d)
                                            : i64_floormod(a[lane], t->d);
        }
        for (int lane = 0; lane < w->nlanes; lane++)
            v[lane] = wrap_mul_add(t->coef, a[lane], v[lane]);
    }
}

/* How many distinct blocks of `block` bytes the lanes' reads of the tensor
 * access e fall in; *off0 and *off1: the offsets lanes 0 and 1 read
 * (where there are such lanes). */
static int lane_blocks(const Lanes *w, const IExpr *e, double block, int64_t *off0,
                       int64_t *off1)
{
    const IrTensor *t = e->access.tensor;
    double b = elem_bytes(t);
    int64_t seen[WARP], offs[WARP] = {0}, ix[WARP];
    for (int d = 0; d < e->access.nidx && d < t->rank; d++) {
        lane_ix(w, e->access.idx[d], ix);
        for (int lane = 0; lane < w->nlanes; lane++)
            offs[lane] = wrap_mul_add(offs[lane], t->shape[d], ix[lane]);
    }
    int n = 0;
    for (int lane = 0; lane < w->nlanes; lane++) {
        int64_t off = offs[lane];
        if (lane == 0)
            *off0 = off;
        if (lane == 1)
            *off1 = off;
        int64_t blk = (int64_t)floor((double)off * b / block);
        int k = 0;
        while (k < n && seen[k] != blk)
            k++;
        if (k == n)
            seen[n++] = blk;
    }
    return n;
}

/* Bytes the lanes fetch per term for the accesses of e: the sectors each
 * access touches, x 32 bytes, over the lanes. */
static double access_traffic(const void *arg, const IExpr *e)
{
    const Lanes *w = arg;
    if (!e->access.tensor || w->nlanes == 0)
        return 4;
    int64_t first, second;
    return 32.0 * lane_blocks(w, e, 32, &first, &second) / w->nlanes;
}

static double lane_traffic(const Lanes *w, const IExpr *e)
{
    return sum_accesses(e, access_traffic, w);
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

/* The tiled band kernels of runtime/band.cu, with the tiles emit/band.c
 * gives them (cost_band_tiles, libs.c).  The dilation is taken out by
 * residue classes, so it costs nothing but partial tiles; the flops
 * returned count the padded rows and columns of the tiles (and G2BMM's
 * d padded to its chunk).  Nothing here has timed them on a GPU: the
 * efficiency is a roofline estimate of the inner loop, per warp and step
 * of the summed index on one SM:
 *   - 32 pj multiply-adds a thread: 8 pj clocks of the SM's 4 x 32 FMA
 *     lanes;
 *   - shared-memory wavefronts (128 bytes a clock, a 128-bit load of a
 *     warp at least one; lanes that read the same 16 bytes share it,
 *     consecutive 16-byte pieces fall in different banks): a warp spans
 *     nw = 32 / tx rows of threads.  G2BMM: 2 query loads of nw pieces
 *     32 bytes apart (4 a wavefront) and 3 pj key loads of 2 (nw - 1) +
 *     tx consecutive pieces; GBMM: 2 score loads as G2BMM's query loads and
 *     pj value loads of tx pieces in each of nw rows, rows 8 apart
 *     starting in the same banks (nw ceil(tx / 8) wavefronts);
 *   - issue: one instruction a clock per scheduler, the loads among the
 *     multiply-adds.
 * For tiles 16 wide (nw = 2, pj = 2) G2BMM's step is 64 multiply-adds
 * (16 clocks) over 2 + 6 x 3 = 20 wavefronts: 0.8 of the FMA peak; GBMM
 * 8 wide (nw = 4) 64 over 2 + 2 x 4 = 10: the FMA peak, 0.94 of it
 * after issue.  (The kernels before these, 0.5 to 2 multiply-adds per
 * scalar load, came to 0.12-0.5 by the same count.)  Then as a vendor
 * GEMM: lib_eff, GENERATED_TILED for what the kernel does not overlap
 * (staging a chunk waits for the previous one's sums), the chunks'
 * prologue (K_OVERHEAD), and the machine the blocks fill: an SM holds
 * 512 threads of them (ptxas -v: 66 to 166 registers a thread) and
 * reaches the peak with 256 (8 warps, two a scheduler); a grid of more
 * blocks than the SMs hold runs in waves, the last one partial. */
static void band_cost(const Device *d, const OpMatch *m, double *flops, double *eff,
                      double *cache)
{
    BandTiles t;
    cost_band_tiles(m, &t);
    double tx = t.tx, pj = t.pj, nw = ceil(32 / tx);
    double fma = 32 * pj, waves_sh, loads;
    if (t.g2) {
        waves_sh = 2 * ceil(nw / 4) + 3 * pj * ceil((2 * (nw - 1) + tx) / 8);
        loads = 2 + 3 * pj;
    } else {
        waves_sh = 2 * ceil(nw / 4) + pj * nw * ceil(tx / 8);
        loads = 2 + pj;
    }
    double inner_eff = fmin(fma / (fma + loads), fma / 4 / waves_sh);
    double nt = t.threads, blocks = (double)t.blocks;
    double slots = d->units * fmax(1, floor(512 / nt));
    double occ = blocks >= slots ? blocks / (ceil(blocks / slots) * slots)
                                 : fmin(1, blocks * nt / (d->units * 256.0));
    double inner = t.g2 ? ceil((double)t.inner / t.chunk) * t.chunk : (double)t.inner;
    double chunks = ceil((double)t.inner / t.chunk);
    *flops = 2 * blocks * t.ti * t.tc * inner;
    *eff = d->lib_eff * GENERATED_TILED * inner_eff * occ * (inner / (inner + K_OVERHEAD));
    /* per block and chunk: G2BMM ti query and ti + tc key rows of a chunk
     * of d; GBMM ti x chunk scores and ti + chunk - 1 value rows of tc
     * features */
    *cache = 4 * blocks * chunks * t.chunk *
             (t.g2 ? 2.0 * t.ti + t.tc : t.ti + (t.ti + t.chunk - 1.0) * t.tc / t.chunk);
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

static double one(const void *arg, const IExpr *acc)
{
    return 1;
}

static double count_reads(const IExpr *e)
{
    return sum_accesses(e, one, NULL);
}

/* ---- the C target on a CPU --------------------------------------------------
 * A CPU differs in kind from the GPU terms above: one core runs one
 * operator at a time (no tiles spread over units), OpenBLAS copies
 * ("packs") its operands before it multiplies, and a generated loop nest
 * is a scalar reduction or a vectorized elementwise loop whose strided
 * reads cost cache misses.  The figures were measured and fitted by
 * tests/bench/cpucal.sh (cpucal.py, cpucal_gemm.c) on an AMD EPYC (Zen 4,
 * AVX-512, 1 MiB L2 per core, 32 MiB L3) with OpenBLAS 0.3.21 and gcc 12
 * -O2, one thread, 2026-11-30, load average about 1.7 on the 2 cores
 * (see tests/bench/README.md for the table);
 * they hold for the C target as einc builds it (`cc -O2`, no -march). */
typedef struct CpuFigures {
    /* cblas_sgemm, row-major M x N = (M x K)(K x N):
     * t = launch + 2MNK / (peak M/(M+m0) K/(K+k0)) + 4MK / pack_a (x pack_ta
     *     when A is transposed) + 4KN / pack_b (when B is bigger than L2)
     *     + 4MN / store_c;
     * M N K <= small_mnk: OpenBLAS's small-matrix kernels, which pack
     * nothing: t = launch + 2MNK / (peak s/(s+small_s0)) + 4MN / store_c,
     * s = min(M, N) (the bound is OpenBLAS 0.3.21's on AVX-512:
     * sgemm_small_kernel_permit).  Operands as warm as a layer's
     * activations: whether a model's weights stay in the L3 from one run
     * to the next depends on the whole model, which an operator's price
     * cannot see (cpucal.sh prints what cold operands add). */
    double peak, m0, k0, pack_a, pack_ta, pack_b, store_c, launch;
    double small_mnk, small_s0;
    /* im2col (and col2im) seconds per element of the column matrix */
    double im2col;
    /* generated loop nests: seconds per term of a reduction (a chain of
     * scalar adds: gcc does not reorder float sums) and per output element
     * of one; per record of a max= or min= (a mispredicted branch: a
     * window of n random values has 1 + 1/2 + ... + 1/n records); per
     * element of an elementwise loop (vectorized, data in L2), of one
     * that gcc does not vectorize (guards, reads that need bounds checks,
     * floor divisions); per relu, max or min in such a loop or in a
     * reduction (a branch on the data, which mispredicts on values of
     * random sign); per floor division or modulo in a read's subscripts
     * in such an elementwise loop; bytes/s of a loop whose data do not fit L2 */
    double red_term, red_point, max_update, ew_elem, ew_scalar, relu_branch, divmod;
    double stream;
    /* seconds per read that steps to a new cache line each iteration of
     * the innermost loop: kept in L2 between sweeps (hit), or not (miss:
     * the lines of a sweep overflow the L2 sets a power-of-two stride
     * maps to); a transpose's whole time per element, taken instead of
     * the arithmetic where it is more */
    double stride_hit, stride_miss;
    /* seconds per call of expf (also sigmoid), tanhf (on values in
     * [-1, 1]: glibc's slow path), other libm calls (not measured: about
     * expf's) */
    double call_exp, call_tanh, call_other;
    /* the same in a vectorized loop (glibc's libmvec, AVX-512: what the
     * call adds to an elementwise element), and per term of a
     * vectorized reduction (omp simd reduction, emit/kernel.c); measured
     * apart from cpucal.sh, which does not time them yet: loops of 256K
     * elements as the C target writes them (gcc 12 -O2 -fopenmp, the
     * AVX-512 clone), one thread, min of 50 runs, on the 2-core Xeon
     * (AVX-512) of 2026-12-01 at load average about 8: exp 0.41, tanh
     * 0.51, erf 0.93 ns an element against 0.24 for a multiply-add;
     * a sum 0.08, a max= 0.16 ns a term against 0.77 scalar */
    double vcall_exp, vcall_tanh, vcall_other, vred_term;
    double kernel_launch;
    double l2_bytes, l2_ways, line;
} CpuFigures;

static const CpuFigures cpu_figures = {
    .peak = 109e9, .m0 = 8.8, .k0 = 2.9, .pack_a = 20.9e9, .pack_ta = 1.77,
    .pack_b = 24.9e9, .store_c = 55e9, .launch = 0.038e-6,
    .small_mnk = 1e6, .small_s0 = 2.7,
    .im2col = 1.01e-9,
    .red_term = 0.757e-9, .red_point = 0.465e-9, .max_update = 8.3e-9,
    .ew_elem = 0.146e-9, .ew_scalar = 0.555e-9, .relu_branch = 3.4e-9, .divmod = 0.54e-9,
    .stream = 52e9,
    .stride_hit = 0.79e-9, .stride_miss = 3.9e-9,
    .call_exp = 3.4e-9, .call_tanh = 16.3e-9, .call_other = 4e-9,
    .vcall_exp = 0.2e-9, .vcall_tanh = 0.3e-9, .vcall_other = 0.7e-9, .vred_term = 0.12e-9,
    .kernel_launch = 0.02e-6,
    .l2_bytes = 1 << 20, .l2_ways = 8, .line = 64,
};

static bool is_cpu(const Device *d)
{
    return strcmp(d->name, "cpu") == 0;
}

/* One cblas_sgemm call as the C target makes it (row-major). */
static double cpu_gemm(const CpuFigures *c, double m, double n, double k, bool ta)
{
    double t = c->launch + 4 * m * n / c->store_c;
    if (m * n * k <= c->small_mnk) {
        double s = fmin(m, n);
        return t + 2 * m * n * k / (c->peak * s / (s + c->small_s0));
    }
    t += 2 * m * n * k / (c->peak * m / (m + c->m0) * k / (k + c->k0));
    t += 4 * m * k / c->pack_a * (ta ? c->pack_ta : 1);
    if (4 * k * n > c->l2_bytes)
        t += 4 * k * n / c->pack_b;
    return t;
}

/* The memory stalls per iteration of the innermost loop (lanes: its
 * consecutive iterations) of the reads in e: each read's new cache lines
 * per iteration, at the hit or the miss cost.  A sweep of the loop touches
 * trip x lines-per-iteration lines; at a stride of S bytes, a multiple of
 * the line, they fall into sets / gcd(sets, S / line) of the L2's sets. */
typedef struct Stalls {
    const CpuFigures *c;
    const Lanes *w;
    int64_t trip;
} Stalls;

static double access_stalls(const void *arg, const IExpr *e)
{
    const Stalls *st = arg;
    const CpuFigures *c = st->c;
    const Lanes *w = st->w;
    if (!e->access.tensor || w->nlanes < 2)
        return 0;
    double b = elem_bytes(e->access.tensor);
    int64_t first = 0, second = 0;
    int n = lane_blocks(w, e, c->line, &first, &second);
    double per = (double)n / w->nlanes;
    /* in double: far-out lanes wrap (lane_ix), and their gap may not fit
     * in 64 bits */
    double gap = fabs((double)second - (double)first) * b;
    int64_t stride = gap < 0x1p62 ? (int64_t)gap : INT64_C(1) << 62;
    int64_t sets = (int64_t)(c->l2_bytes / c->l2_ways / c->line);
    if (stride >= (int64_t)c->line && stride % (int64_t)c->line == 0)
        sets /= (int64_t)u64_gcd((uint64_t)sets, (uint64_t)(stride / (int64_t)c->line));
    bool miss = (double)st->trip * per > (double)sets * c->l2_ways;
    return per * (miss ? c->stride_miss : c->stride_hit);
}

static double cpu_stalls(const CpuFigures *c, const Lanes *w, int64_t trip, const IExpr *e)
{
    Stalls st = {c, w, trip};
    return sum_accesses(e, access_stalls, &st);
}

/* Seconds of the library calls in e per evaluation (scalar: in a loop
 * that gcc does not vectorize). */
static double cpu_calls(const CpuFigures *c, const IExpr *e, bool scalar)
{
    double t = 0;
    if (e->kind == IE_CALL) {
        switch (e->call.fn) {
        case FN_EXP: case FN_SIGMOID: t = scalar ? c->call_exp : c->vcall_exp; break;
        case FN_TANH: t = scalar ? c->call_tanh : c->vcall_tanh; break;
        case FN_LOG: case FN_ERF: case FN_SIN: case FN_COS: case FN_EXPM1: case FN_LOG1P:
        case FN_GELU:
            t = scalar ? c->call_other : c->vcall_other; break;
        case FN_POW: case FN_SOFTPLUS:
            t = c->call_other; break;
        case FN_RELU: case FN_MAX: case FN_MIN: t = scalar ? c->relu_branch : 0; break;
        default: break;
        }
    }
    const IExpr *kids[IR_MAX_CHILDREN];
    int n = ir_expr_children(e, kids);
    for (int i = 0; i < n; i++)
        t += cpu_calls(c, kids[i], scalar);
    return t;
}

/* The range of an index over the stage's variables; false when it holds
 * a floor division or a modulo (the emitter's code then is not a plain
 * affine read), or when its bounds do not fit 64 bits. */
static bool ix_range(const Stage *s, const Ix *x, int64_t *lo, int64_t *hi)
{
    *lo = *hi = x->c;
    for (int i = 0; i < x->n; i++) {
        const IxTerm *t = &x->t[i];
        if (t->kind != IX_VAR)
            return false;
        int l = ir_loop_pos(s, t->var), m = l < 0 ? ir_sum_pos(s, t->var) : -1;
        const IrVar *v = l >= 0 ? &s->loops[l] : m >= 0 ? &s->sums[m] : NULL;
        int64_t a, b;
        if (!v || !i64_mul(t->coef, v->lo, &a) || !i64_mul(t->coef, v->hi - 1, &b) ||
            !i64_add(*lo, a < b ? a : b, lo) || !i64_add(*hi, a < b ? b : a, hi))
            return false;
    }
    return true;
}

/* Floor divisions and modulos in the subscripts of e's reads. */
static double access_divmods(const void *arg, const IExpr *e)
{
    int n = 0;
    for (int d = 0; d < e->access.nidx; d++)
        for (int i = 0; i < e->access.idx[d]->n; i++)
            n += e->access.idx[d]->t[i].kind != IX_VAR;
    return n;
}

static double divmods(const IExpr *e)
{
    return sum_accesses(e, access_divmods, NULL);
}

/* Whether e's reads all are plain in-bounds affine reads (what gcc
 * vectorizes). */
static double not_plain(const void *arg, const IExpr *e)
{
    const Stage *s = arg;
    const IrTensor *t = e->access.tensor;
    if (!t)
        return 1;
    for (int d = 0; d < e->access.nidx && d < t->rank; d++) {
        int64_t lo, hi;
        if (!ix_range(s, e->access.idx[d], &lo, &hi) || lo < 0 || hi >= t->shape[d])
            return 1;
    }
    return 0;
}

static bool plain_reads(const Stage *s, const IExpr *e)
{
    return sum_accesses(e, not_plain, s) == 0;
}

/* Whether the C target's loop over e vectorizes: what emit/kernel.c
 * marks `omp simd` (vec_expr, vec_bool): plain reads, arithmetic, relu,
 * abs, max, min, select, and the functions of libmvec; conditions
 * comparing those or affine indices; in a map (inner: its innermost loop
 * variable, else -1) anything that loop does not change.  (The emitter checks the same with
 * its own bounds, and prices nothing.) */
static bool cpu_vec(const Stage *s, const IExpr *e, int inner)
{
    /* a map's call or division that does not change along its innermost
     * loop is computed once per row, before it (kernel.c's hoist_map) */
    if ((e->kind == IE_CALL || e->kind == IE_DIV) && inner >= 0 && !ir_expr_uses(e, inner))
        return true;
    switch (e->kind) {
    case IE_CONST:
        return true;
    case IE_ICMP:
        for (int i = 0; i < e->icmp.ix->n; i++)
            if (e->icmp.ix->t[i].kind != IX_VAR)
                return false;
        return true;
    case IE_ACCESS:
        return e->access.tensor && e->access.tensor->elem == ELEM_F32 &&
               not_plain(s, e) == 0;
    case IE_CALL:
        switch (e->call.fn) {
        case FN_RELU: case FN_ABS: case FN_MAX: case FN_MIN: case FN_SELECT:
        case FN_EXP: case FN_LOG: case FN_TANH: case FN_ERF: case FN_SIN: case FN_COS:
        case FN_EXPM1: case FN_LOG1P: case FN_GELU: case FN_SIGMOID:
            break;
        default:
            return false;
        }
        for (int i = 0; i < e->call.nargs; i++)
            if (!cpu_vec(s, e->call.args[i], inner))
                return false;
        return true;
    case IE_ADD: case IE_SUB: case IE_MUL: case IE_DIV: case IE_CMP: case IE_AND:
    case IE_OR:
        return cpu_vec(s, e->bin.a, inner) && cpu_vec(s, e->bin.b, inner);
    case IE_NEG: case IE_NOT:
        return cpu_vec(s, e->bin.a, inner);
    default:
        return false;
    }
}

/* A reduction whose innermost sum loop the C target vectorizes
 * (kernel.c's vec_sum): a sum, max or min of such a body, its guards on
 * that sum variable such conditions. */
static bool cpu_vec_sum(const Stage *s)
{
    int last = s->nsums - 1;
    if (last < 0 || (s->red != RED_SUM && s->red != RED_MAX && s->red != RED_MIN) ||
        s->sums[last].hi - s->sums[last].lo < 2 || !cpu_vec(s, s->body, -1))
        return false;
    for (int i = 0; i < s->nguards; i++)
        if (ir_expr_uses(s->guards[i], s->sums[last].id) && !cpu_vec(s, s->guards[i], -1))
            return false;
    return true;
}

int64_t cost_short_terms(const Stage *s)
{
    if (s->nguards || s->nsums == 0 ||
        (s->red != RED_SUM && s->red != RED_MAX && s->red != RED_MIN))
        return 0;
    int64_t n = 1;
    for (int j = 0; j < s->nsums; j++) {
        n *= s->sums[j].hi - s->sums[j].lo;
        if (n <= 0 || n > COST_SHORT_TERMS)
            return 0;
    }
    return n;
}

/* A generated loop nest (emit/c.c): the output's loops, then the sums in
 * order, the last one with more than one value innermost.  Per term the
 * arithmetic (a reduction's add chain, or an elementwise loop's share)
 * and its calls, or the strided reads' stalls where those are more (they
 * overlap); the whole no faster than streaming its bytes once when they
 * do not fit L2. */
static double cpu_kernel(const CpuFigures *c, const Stage *s, double dram)
{
    double pts = points(s), terms = 1;
    for (int i = 0; i < s->nsums; i++)
        terms *= (double)(s->sums[i].hi - s->sums[i].lo);
    const IrVar *inner = NULL;
    for (int i = s->nsums - 1; i >= 0 && !inner; i--)
        if (s->sums[i].hi - s->sums[i].lo > 1)
            inner = &s->sums[i];
    for (int i = s->nloops - 1; i >= 0 && !inner; i--)
        if (s->loops[i].hi - s->loops[i].lo > 1)
            inner = &s->loops[i];
    double stalls = 0;
    if (inner) {
        Lanes w;                    /* 8 KiB on the stack: this does not recurse */
        lanes_init(&w, s, inner, 1);
        stalls = cpu_stalls(c, &w, inner->hi - inner->lo, s->body);
    }
    int last = s->nloops - 1;
    bool vector = s->nsums == 0 && s->nguards == 0 && plain_reads(s, s->body) &&
                  cpu_vec(s, s->body, last >= 0 && s->loops[last].hi - s->loops[last].lo > 1
                                          ? s->loops[last].id : -1);
    /* a vectorized reduction: no add chain, no branch per record */
    bool vsum = s->nsums > 0 && cpu_vec_sum(s);
    double arith = vsum ? c->vred_term : s->nsums > 0 ? c->red_term
                 : vector ? c->ew_elem : c->ew_scalar;
    if (s->nsums == 0 && !vector)
        arith += divmods(s->body) * c->divmod;  /* hidden by a sum's add chain */
    /* a short one's terms are written out, max and min without a branch
     * (ResNet-18's 3x3/2 max pool: 0.87 ms, 0.48 ns a term, against 5.9
     * ms with the loops and the branch) */
    if ((s->red == RED_MAX || s->red == RED_MIN) && terms > 1 && !vsum && !cost_short_terms(s))
        arith += c->max_update * (log(terms) + 0.5772 + 0.5 / terms) / terms;
    double t = pts * terms * fmax(arith + cpu_calls(c, s->body, !vector && !vsum), stalls);
    if (s->nsums > 0)
        t += pts * c->red_point;        /* starting and storing each sum */
    if (dram > c->l2_bytes)
        t = fmax(t, dram / c->stream);
    return c->kernel_launch + t;
}

double cost_rows(const CostModel *cm, const Stage *const *s, int n, double bytes,
                 double rows, int threads)
{
    double t = 0;
    if (!is_cpu(cm->dev)) {
        /* a block per row (emit/cuda.c): the members' arithmetic and
         * reads spread over rows x threads threads, their traffic once */
        const Device *d = cm->dev;
        double flops = 0, loads = 0;
        for (int i = 0; i < n; i++) {
            double terms = 1;
            for (int v = 0; v < s[i]->nsums; v++)
                terms *= (double)(s[i]->sums[v].hi - s[i]->sums[v].lo);
            flops += match_flops(s[i]);
            loads += points(s[i]) * terms * count_reads(s[i]->body);
        }
        double mem = bytes / (d->bandwidth * d->mem_eff);
        return d->launch + kernel_time(d, flops, mem, rows * (double)threads, 0, loads);
    }
    const CpuFigures *c = &cpu_figures;
    for (int i = 0; i < n; i++)
        t += cpu_kernel(c, s[i], 0) - c->kernel_launch;
    t = c->kernel_launch + t;
    return bytes > c->l2_bytes ? fmax(t, bytes / c->stream) : t;
}

/* Banded products (emit/lib.c, C): per batch, residue class and block of
 * 64 rows, one cblas_sgemm against the 64 + 2w key rows the band covers,
 * and the band copied out of (G2BMM) or into (GBMM) a scratch block. */
static double cpu_band(const CpuFigures *c, const OpMatch *m)
{
    double dil = m->gdil > 0 ? (double)m->gdil : 1, w = (double)m->gw;
    double rows = ceil((double)m->gm / dil);
    double blocks = (double)m->gb * dil * ceil(rows / 64);
    double tn = fmin(64, rows), len = fmin(tn + 2 * w, rows), kk = (double)m->gk;
    double g = m->kind == OPK_G2BMM ? cpu_gemm(c, tn, len, kk, false)
                                    : cpu_gemm(c, tn, kk, len, false);
    return blocks * (g + tn * len * c->ew_elem * 2);
}

static double cpu_library(const CpuFigures *c, const Stage *s, const OpMatch *m);

/* m is what the plan runs (plan.c: what the target's libraries take,
 * cost_impl): a library call, or NULL or OPK_KERNEL for a loop nest. */
static double cpu_model(const Stage *s, const OpMatch *m, double dram)
{
    const CpuFigures *c = &cpu_figures;
    if (!m || m->kind == OPK_KERNEL)
        return cpu_kernel(c, s, dram);
    /* no faster than streaming its operands once when they do not fit L2 */
    double t = cpu_library(c, s, m);
    return dram > c->l2_bytes ? fmax(t, dram / c->stream) : t;
}

/* The library call's time with its operands in the caches. */
static double cpu_library(const CpuFigures *c, const Stage *s, const OpMatch *m)
{
    switch (m->kind) {
    case OPK_MATMUL:
    case OPK_BATCH_MATMUL: {
        /* ein_sgemm: a loop over the batch; a C stored [n][m] is computed
         * as C^T = B^T A^T */
        double batch = (double)(m->batch ? m->batch : 1);
        double mm = (double)(m->out_nm ? m->n : m->m), nn = (double)(m->out_nm ? m->m : m->n);
        bool ta = m->out_nm ? !m->trans_b : m->trans_a;
        return batch * cpu_gemm(c, mm, nn, (double)m->k, ta);
    }
    case OPK_CONV2D: {
        /* ein_conv2d: per image, im2col (but for a plain 1x1) and f x
         * (c r s) times (c r s) x (ho wo) */
        double pix = points(s) / ((double)m->f * (double)m->cn);
        double kk = (double)(m->c * m->r * m->s);
        bool direct = m->r == 1 && m->s == 1 && m->stride == 1 && m->pad == 0 && m->pad_w == 0;
        return (double)m->cn * ((direct ? 0 : kk * pix * c->im2col) +
                                cpu_gemm(c, (double)m->f, pix, kk, false));
    }
    case OPK_CONV_TRANSPOSE2D: {
        /* ein_conv_t2d: per image, (f r s) x c transposed times c x (h w),
         * then col2im adds the columns into the zeroed output */
        double frs = (double)(m->f * m->r * m->s), hw = (double)(m->h * m->w);
        double out = points(s) / (double)m->cn;
        return (double)m->cn * (cpu_gemm(c, frs, hw, (double)m->c, true) +
                                frs * hw * c->im2col + out * c->ew_elem);
    }
    case OPK_G2BMM:
    case OPK_GBMM:
        return cpu_band(c, m);
    default:
        ICE("cpu_library: operator kind %d", (int)m->kind);    /* cpu_model prices kernels */
    }
}

/* The bytes a band operator reads from DRAM: each operand's view once
 * (a view reads part of its tensor: Longformer's q, k and v are the
 * heads of one projection's output), one view read twice (q = k) once. */
static double band_reads(const OpMatch *m)
{
    double bytes = 0;
    for (int x = 0; x < 2; x++)
        if (x == 0 || m->in[1] != m->in[0] || memcmp(&m->gv[0], &m->gv[1], sizeof m->gv[0]) ||
            match_band_cols(m, 0) != match_band_cols(m, 1))
            bytes += elem_bytes(m->in[x]) * (double)m->gb * (double)m->gm *
                     (double)match_band_cols(m, x);
    return bytes;
}

double cost_model(const Device *d, Precision prec, const Stage *s, const OpMatch *m)
{
    const IrTensor *seen[64];
    Reads rd = {seen, 0, 4 * points(s)};
    bool band = m && (m->kind == OPK_G2BMM || m->kind == OPK_GBMM);
    if (band)
        rd.bytes += band_reads(m);
    else
        ir_expr_visit(s->body, collect_read, &rd);
    double dram = rd.bytes, cache = 0;
    if (is_cpu(d))
        return cpu_model(s, m, dram);
    double flops = match_flops(s), peak = d->flops, eff, extra = 0, launches = 1;
    switch (m ? m->kind : OPK_KERNEL) {
    case OPK_MATMUL:
    case OPK_BATCH_MATMUL: {
        double mm = (double)m->m, nn = (double)m->n, kk = (double)m->k;
        double bb = (double)(m->batch ? m->batch : 1);
        peak = d->peak[prec];
        eff = d->lib_eff * tiled_eff(d, mm, nn, kk, bb, true, &extra, &cache);
        /* a batch of two levels: first a kernel writes the arrays of
         * pointers that cublasGemmBatchedEx reads */
        if (m->split > 1)
            launches = 2;
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
        Lanes w;                    /* 8 KiB on the stack: this does not recurse */
        lanes_init(&w, s, s->loops, s->nloops);
        double t = kernel_time(d, flops, mem, points(s),
                               points(s) * terms * lane_traffic(&w, s->body), loads);
        if (terms >= WARP) {
            lanes_init(&w, s, s->sums, s->nsums);
            t = fmin(t, kernel_time(d, flops, mem, WARP * points(s),
                                    points(s) * terms * lane_traffic(&w, s->body), loads));
        }
        return d->launch + t;
    }
    }
    dram += extra;
    double compute = flops / (peak * (eff > 1e-6 ? eff : 1e-6));
    double memory = fmax(dram / (d->bandwidth * d->mem_eff),
                         cache / (d->bandwidth * d->mem_eff * L2_FACTOR));
    return launches * d->launch + (compute > memory ? compute : memory);
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

/* A convolution on oneDNN (runtime/dnnl.c): its JIT kernels run a direct
 * convolution on channel blocks of 16 at a fraction of their peak that
 * grows with the channels per group (a depthwise one vectorizes over
 * the channels instead), and the activations are reordered between
 * einc's NCHW and the blocked layout the primitive takes, on the way in
 * (but for an input of fewer than 8 channels, which the first layer's
 * kernels read as it is) and on the way out.  Figures fitted to oneDNN
 * 2.6.3 on one core of the machine cpucal.sh ran on (min of 20 runs,
 * einc -O0 --dnnl --main, --bench): 3x3 64->64 56x56 1.65 ms, 1x1
 * 64->256 56x56 1.40 ms (these two give the peak and the reorder rate),
 * 7x7/2 3->64 224x224 1.86 ms (model 2.4), depthwise 3x3 96 56x56
 * 0.61 ms.  Few pixels run further from the peak: a fraction
 * px / (px + DNNL_PX0) of it, px the output pixels of a convolution and
 * the input pixels of a transposed one, whose work is per input pixel
 * (its FLOPs are counted there: the stage's stride guards skip 3 of 4
 * terms of a stride-2 one).  Fitted to DCGAN's stride-2 4x4 transposed
 * convolutions on an AMD EPYC core (512->256 4x4 1.12 ms, 256->128 8x8
 * 0.68 ms, 128->64 16x16 0.64 ms; ResNet-18's 7x7 convolutions run at
 * 0.85 of its 56x56 ones there).  A transposed one with few filters runs
 * further still from the peak than a convolution (DNNL_DECONV_F0: DCGAN's
 * 64->3 4x4/2 0.33 ms, FSRCNN's 56->1 9x9/4 1.62 ms on that core). */
#define DNNL_LAUNCH 2e-6        /* the call, its argument checks */
#define DNNL_PEAK 200e9         /* FLOP/s, many channels per group */
#define DNNL_F0 6.0             /* filters per group at half efficiency */
#define DNNL_C0 1.0             /* input channels per group at half efficiency */
#define DNNL_DW_EFF 0.25        /* depthwise: of the peak */
#define DNNL_REORDER 4.7e9      /* bytes/s of a reorder (read and write) */
#define DNNL_PX0 13.7           /* pixels at half efficiency */
#define DNNL_DECONV_F0 18.0     /* transposed: filters per group at half efficiency */
/* The reorder of `bytes` of activations into the primitive's layout (in)
 * or out of it. */
static double dnnl_reorder(const OpMatch *m, double bytes, bool in)
{
    return !in || m->kind == OPK_CONV_TRANSPOSE2D || m->c >= 8 ? bytes / DNNL_REORDER : 0;
}

static double cpu_dnnl_conv(const Stage *s, const OpMatch *m, double dram)
{
    const CpuFigures *c = &cpu_figures;
    double g = (double)(m->groups > 0 ? m->groups : 1);
    double fg = (double)m->f / g, cg = (double)m->c / g;
    double eff = fg <= 1 && cg <= 1 ? DNNL_DW_EFF : fg / (fg + DNNL_F0) * cg / (cg + DNNL_C0);
    double in_px = (double)m->h * (double)m->w;
    double src = 4.0 * (double)m->cn * (double)m->c * in_px;
    double flops = match_flops(s), px = points(s) / fmax(1, (double)m->cn * (double)m->f);
    if (m->kind == OPK_CONV_TRANSPOSE2D) {
        flops = 2 * (double)m->cn * (double)m->c * in_px * fg * (double)(m->r * m->s);
        px = in_px;
        eff = fg / (fg + DNNL_DECONV_F0) * cg / (cg + DNNL_C0);
    }
    double t = flops / (DNNL_PEAK * eff * px / (px + DNNL_PX0)) +
               dnnl_reorder(m, src, true) + dnnl_reorder(m, 4.0 * points(s), false);
    return DNNL_LAUNCH + fmax(t, dram / c->stream);
}

double cost_dnnl_reorder(const CostModel *cm, const OpMatch *m, double bytes, bool in)
{
    return is_cpu(cm->dev) ? dnnl_reorder(m, bytes, in) : 0;
}

double cost_stage_impl(const CostModel *cm, const Stage *s, const OpMatch *m, OpImpl impl,
                       bool *measured)
{
    if (impl != IMPL_DNNL_CONV || !is_cpu(cm->dev))
        return cost_stage_ex(cm, s, impl == IMPL_KERNEL ? NULL : m, measured);
    if (measured)
        *measured = false;
    const IrTensor *seen[64];
    Reads rd = {seen, 0, 4 * points(s)};
    ir_expr_visit(s->body, collect_read, &rd);
    return cpu_dnnl_conv(s, m, rd.bytes);
}
