/* band.cu - the tiled kernels of the banded matmuls of Longformer-style
 * attention (emit/band.c, OPK_G2BMM and OPK_GBMM in derive/pricing/match.h):
 *
 *   G2BMM  s[b, i, j] = sum_d q[b, i, d] * k[b, i + DIL*(j - W), d]
 *   GBMM   o[b, i, d] = sum_j s[b, i, j] * v[b, i + DIL*(j - W), d]
 *
 * j in [0, 2W + 1); rows of k and v outside [0, M) read as zero.  The
 * operands are views (ein_band_view): row r of batch b where constant
 * strides and an offset put it, so that q, k and v can be the heads of
 * one projection's output, read in place; so is the output, so that o
 * can be stored with its heads merged (derive/search/outview.c).  Each operator is the body of
 * one block, a template over its sizes, views and tiles
 * (derive/pricing/libs.c, cost_band_tiles, chooses them): the generated
 * file writes one __global__ kernel per operator (named as the stage's
 * generic kernel would be) that calls it, so that nvcc compiles it with
 * every size a constant, and launches it with TX * TY threads rounded up
 * to a warp (the threads past TX * TY only help stage).  Before
 * this piece the generated file defines EIN_BAND_LD(x), the load of an
 * operand: (x), or ein_rnd(x) for a --precision below fp32.
 *
 * The dilation is taken out first: the rows i = DIL*i' + r of one residue
 * r meet only key rows DIL*(i' + j - W) + r of the same residue, so for a
 * fixed (b, r) both operators are dilation-1 bands in i'.  A block computes
 * TI = 8 TY rows i' of one residue by TC = 4 PJ TX columns (band entries
 * of G2BMM, features of GBMM); blocks are numbered (batch, residue, row
 * tile, column tile), the last fastest.  Thread (tx, ty), tx fastest, owns
 * the 8 consecutive rows 8ty + a and the PJ groups of 4 consecutive
 * columns 4tx + 4TX c + e (the groups TX apart, so that the 8 lanes of a
 * 128-bit shared load read 8 consecutive 16-byte pieces: no two in one
 * bank), a register tile of 8 x 4PJ sums.  TX is at most 16: a band of
 * up to 128 entries (64 at PJ = 1) is one column tile (the narrow case),
 * a wider one several of equal width.
 *
 *   G2BMM  the sum over d in chunks of DC (8 or 16): the TI query rows and
 *          the TI + TC - 1 key rows the tile meets are staged d-major,
 *          qs[dd][row] and ks[dd][kr] (key row i0 + j0 - W + kr).  Entry
 *          (a, 4tx + 4TX c + e) reads key row 8ty + 4tx + 4TX c + a + e, so
 *          per column group a window of 11 key rows: one step of d loads
 *          8 query values (two 128-bit loads) and 12 key values per group
 *          (three) for 32 PJ multiply-adds: 64 for 8 loads at PJ = 2.
 *   GBMM   the sum over j in chunks of JC (8, 16 or 32): the TI x JC scores,
 *          staged j-major (ss[jj][row]), and the TI + JC - 1 value rows
 *          of the column tile (vs[vr][dd], value row i0 + j0 - W + vr).  At
 *          step jj rows 8ty + a read value rows 8ty + a + jj, a window of
 *          8 rows held in registers that slides by one row a step, so one
 *          step loads one value row (PJ 128-bit loads) and 8 scores (two)
 *          for 32 PJ multiply-adds: 64 for 4 loads at PJ = 2.
 *
 * Every sum runs in ascending order of its index, one thread per output
 * element, exactly as the generic kernel's loop (padding of the last chunk
 * adds 0*0 in G2BMM and is skipped in GBMM, whose values may be infinite):
 * results are deterministic and equal to the generic kernel's.  (The
 * loops before these did 0.5 to 2 multiply-adds per scalar shared load;
 * tests/emit/band-ptx.test counts at least 4 in nvcc's PTX.)  Global
 * loads are row-contiguous: 8 lanes read 8 consecutive values of a row
 * (32 bytes) and store them down a column of the d-major arrays, whose
 * rows are 8n + 4 floats long so that those 8 stores meet different banks;
 * value rows are read whole across the lanes.  Static shared memory stays
 * below 48 KB (cost_band_tiles).  Sizes stay below 2^29 (libs.c), so
 * every int here stays below 2^31. */
#include <stdint.h>
#include "model.h" /* EMBED-SKIP */

/* Four floats on 16 bytes: one 128-bit shared-memory load (CUDA's float4,
 * which a host build of the kernels alone does not have). */
struct alignas(16) ein_band4 {
    float x, y, z, w;
};

/* v[0..3] = the 4 floats at p (16-byte aligned); a template, so that
 * this file compiled alone (tests/runtime/support.test) has no unused
 * function */
template <typename F>
static __device__ __forceinline__ void ein_band_ld4(const F *p, F *v)
{
    const ein_band4 t = *reinterpret_cast<const ein_band4 *>(p);
    v[0] = t.x;
    v[1] = t.y;
    v[2] = t.z;
    v[3] = t.w;
}

/* The steps dd < DC of G2BMM's sum over one chunk of d for thread (tx,
 * ty): qs[dd][row] query row i0 + row, ks[dd][kr] key row i0 + j0 - W +
 * kr; entry (8ty + a, 4tx + 4TX c + e) reads key row 8ty + 4tx + 4TX c +
 * a + e, a window of 11 rows a column group, read as 12. */
template <int TX, int PJ, int DC, int SQ, int SK>
static __device__ __forceinline__ void
ein_g2bmm_steps(const float (*qs)[SQ], const float (*ks)[SK], int tx, int ty,
                float (*acc)[PJ][4])
{
#pragma unroll
    for (int dd = 0; dd < DC; ++dd) {
        float qv[8], kv[PJ][12];
        ein_band_ld4(&qs[dd][8 * ty], qv);
        ein_band_ld4(&qs[dd][8 * ty + 4], qv + 4);
#pragma unroll
        for (int c = 0; c < PJ; ++c)
#pragma unroll
            for (int p = 0; p < 3; ++p)
                ein_band_ld4(&ks[dd][8 * ty + 4 * tx + 4 * TX * c + 4 * p], kv[c] + 4 * p);
#pragma unroll
        for (int a = 0; a < 8; ++a)
#pragma unroll
            for (int c = 0; c < PJ; ++c)
#pragma unroll
                for (int e = 0; e < 4; ++e)
                    acc[a][c][e] += qv[a] * kv[c][a + e];
    }
}

/* The steps jj < min(JC, jn) of GBMM's sum over one chunk of j for
 * thread (tx, ty): ss[jj][row] the score of row i0 + row, vs[vr][dd]
 * value row i0 + j0 - W + vr.  Rows 8ty + a read value rows 8ty + a + jj,
 * a window of 8 rows in registers that slides by one a step.  Past the
 * band's end (jj >= jn, in the last chunk) no term: a value may be
 * infinite, and inf * 0 is no zero. */
template <int TX, int PJ, int JC, int SS, int TC>
static __device__ __forceinline__ void
ein_gbmm_steps(const float (*ss)[SS], const float (*vs)[TC], int tx, int ty, int jn,
               float (*acc)[PJ][4])
{
    float vw[8][PJ][4];   /* value rows 8ty + jj + a */
#pragma unroll
    for (int a = 0; a < 7; ++a)
#pragma unroll
        for (int c = 0; c < PJ; ++c)
            ein_band_ld4(&vs[8 * ty + a][4 * tx + 4 * TX * c], vw[a][c]);
#pragma unroll
    for (int jj = 0; jj < JC; ++jj) {
#pragma unroll
        for (int c = 0; c < PJ; ++c)
            ein_band_ld4(&vs[8 * ty + jj + 7][4 * tx + 4 * TX * c], vw[7][c]);
        if (jj < jn) {
            float sv[8];
            ein_band_ld4(&ss[jj][8 * ty], sv);
            ein_band_ld4(&ss[jj][8 * ty + 4], sv + 4);
#pragma unroll
            for (int a = 0; a < 8; ++a)
#pragma unroll
                for (int c = 0; c < PJ; ++c)
#pragma unroll
                    for (int e = 0; e < 4; ++e)
                        acc[a][c][e] += sv[a] * vw[a][c][e];
        }
#pragma unroll
        for (int a = 0; a < 7; ++a)
#pragma unroll
            for (int c = 0; c < PJ; ++c)
#pragma unroll
                for (int e = 0; e < 4; ++e)
                    vw[a][c][e] = vw[a + 1][c][e];
    }
}

/* An operand read through a view (derive/pricing/match.h, BandView): row
 * r of batch bb starts at element
 *   OFF + (bb / SPLIT) * STRIDE + (bb % SPLIT) * SSTRIDE + r * LD,
 * its columns consecutive.  Constants all, so that a dense operand (LD
 * its row's length, STRIDE M * LD, SPLIT 1, OFF 0) compiles to what a
 * dense one did. */
template <int64_t LD, int64_t STRIDE, int64_t SPLIT, int64_t SSTRIDE, int64_t OFF>
struct ein_band_view {
    static constexpr int64_t ld = LD;
    static __device__ __forceinline__ int64_t batch(int bb)
    {
        return OFF + (int64_t)(bb / SPLIT) * STRIDE + (int64_t)(bb % SPLIT) * SSTRIDE;
    }
};

/* Where a block and thread work: blocks are numbered (batch bb, residue
 * r, row tile from row i0, column tile from column c0), the last
 * fastest; thread (tx, ty), tx fastest, computes if own. */
struct ein_band_at {
    int c0, i0, r, bb, nr;      /* nr: the rows of residue r */
    int tx, ty;
    bool own;                   /* the threads past TX * TY only stage */
};

template <int DIL, int M, int TX, int TY, int TC, int NCOL, int NIT>
static __device__ __forceinline__ ein_band_at ein_band_where()
{
    ein_band_at w;
    int tile = (int)blockIdx.x;
    w.c0 = tile % NCOL * TC;
    tile /= NCOL;
    w.i0 = tile % NIT * (8 * TY);
    tile /= NIT;
    w.r = tile % DIL;
    w.bb = tile / DIL;
    w.nr = (M - w.r + (DIL - 1)) / DIL;
    w.tx = (int)threadIdx.x % TX;
    w.ty = (int)threadIdx.x / TX;
    w.own = w.ty < TY;
    return w;
}

/* dst[kk][row] = val(row, kk) for row < ROWS, kk < CH (a multiple of 8)
 * by NT threads: lanes 8n .. 8n+7 read 8 consecutive kk of one row (32
 * bytes of a row of q, k or s) and store them down a column, the rows of
 * dst S = 8n + 4 floats long, so that the 8 stores meet different banks */
template <int ROWS, int CH, int NT, int S, typename F>
static __device__ __forceinline__ void ein_band_stage(float (*dst)[S], F val)
{
    for (int x = (int)threadIdx.x; x < ROWS * CH; x += NT) {
        const int kk = x % 8 + x / (8 * ROWS) * 8, row = x / 8 % ROWS;
        dst[kk][row] = val(row, kk);
    }
}

/* Row DIL*i' + r of batch bb of the output, column col < NC, = the
 * thread's sums; the output is a view VO too (dense, or inside the buffer
 * of a reordering of it that the operator stores: plan.h, PlanBuf) */
template <int DIL, int TX, int PJ, int NC, typename VO>
static __device__ __forceinline__ void
ein_band_store(float *__restrict__ out, const ein_band_at &w, float (*acc)[PJ][4])
{
    if (!w.own)
        return;
    const int64_t ob = VO::batch(w.bb);
#pragma unroll
    for (int a = 0; a < 8; ++a) {
        const int ip = w.i0 + 8 * w.ty + a;
        if (ip >= w.nr)
            continue;
        float *const row = out + ob + ((int64_t)DIL * ip + w.r) * VO::ld;
#pragma unroll
        for (int c = 0; c < PJ; ++c)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int col = w.c0 + 4 * w.tx + 4 * TX * c + e;
                if (col < NC)
                    row[col] = acc[a][c][e];
            }
    }
}

/* NIT tiles of TI rows i' cover the M / DIL rows of a residue, NCOL tiles
 * of TC entries the band; q and k read through the views VQ and VK, s
 * written through VS. */
template <int DIL, int M, int K, int W, int TX, int TY, int PJ, int NCOL, int NIT, int DC,
          typename VQ, typename VK, typename VS>
static __device__ __forceinline__ void
ein_g2bmm_block(const float *__restrict__ q, const float *__restrict__ k,
                float *__restrict__ s)
{
    constexpr int TI = 8 * TY, TC = 4 * PJ * TX, NT = (TX * TY + 31) / 32 * 32, NK = TI + TC;
    constexpr int SQ = (TI + 7) / 8 * 8 + 4, SK = (NK + 7) / 8 * 8 + 4;
    alignas(16) __shared__ float qs[DC][SQ];
    alignas(16) __shared__ float ks[DC][SK];
    const ein_band_at w = ein_band_where<DIL, M, TX, TY, TC, NCOL, NIT>();
    const int i0 = w.i0, r = w.r, nr = w.nr;
    const int64_t qb = VQ::batch(w.bb), kb = VK::batch(w.bb);   /* batch bb of q and k */
    float acc[8][PJ][4] = {};
    for (int d0 = 0; d0 < K; d0 += DC) {
        ein_band_stage<TI, DC, NT>(qs, [=](int row, int dd) {
            const int ip = i0 + row, d = d0 + dd;
            return ip < nr && d < K
                ? EIN_BAND_LD(q[qb + ((int64_t)DIL * ip + r) * VQ::ld + d]) : 0.0f;
        });
        /* key row NK - 1 is read (the last 128-bit load of a window) and
           used by no entry */
        const int kz = i0 + w.c0 - W;
        ein_band_stage<NK, DC, NT>(ks, [=](int row, int dd) {
            const int64_t kr = (int64_t)DIL * (kz + row) + r;
            const int d = d0 + dd;
            /* keys outside [0, M) read as zero */
            return kr >= 0 && kr < M && d < K ? EIN_BAND_LD(k[kb + kr * VK::ld + d]) : 0.0f;
        });
        __syncthreads();
        if (w.own)
            ein_g2bmm_steps<TX, PJ, DC>(qs, ks, w.tx, w.ty, acc);
        __syncthreads();
    }
    ein_band_store<DIL, TX, PJ, 2 * W + 1, VS>(s, w, acc);
}

/* NIT tiles of TI rows i' cover the M / DIL rows of a residue, NCOL tiles
 * of TC features the K features; s and v read through the views VS and
 * VV, o written through VO. */
template <int DIL, int M, int K, int W, int TX, int TY, int PJ, int NCOL, int NIT, int JC,
          typename VS, typename VV, typename VO>
static __device__ __forceinline__ void
ein_gbmm_block(const float *__restrict__ s, const float *__restrict__ v,
               float *__restrict__ o)
{
    constexpr int TI = 8 * TY, TC = 4 * PJ * TX, NT = (TX * TY + 31) / 32 * 32, W2 = 2 * W + 1;
    constexpr int SS = (TI + 7) / 8 * 8 + 4, NV = TI + JC - 1;
    alignas(16) __shared__ float ss[JC][SS];
    alignas(16) __shared__ float vs[NV][TC];
    const ein_band_at w = ein_band_where<DIL, M, TX, TY, TC, NCOL, NIT>();
    const int i0 = w.i0, r = w.r, nr = w.nr;
    const int64_t sb = VS::batch(w.bb), vb = VV::batch(w.bb);   /* batch bb of s and v */
    float acc[8][PJ][4] = {};
    for (int j0 = 0; j0 < W2; j0 += JC) {
        ein_band_stage<TI, JC, NT>(ss, [=](int row, int jj) {
            const int ip = i0 + row, j = j0 + jj;
            return ip < nr && j < W2
                ? EIN_BAND_LD(s[sb + ((int64_t)DIL * ip + r) * VS::ld + j]) : 0.0f;
        });
        /* value rows whole across the lanes */
        for (int x = (int)threadIdx.x; x < NV * TC; x += NT) {
            const int row = x / TC, dd = x % TC, d = w.c0 + dd;
            const int64_t vr = (int64_t)DIL * (i0 + j0 - W + row) + r;
            /* values outside [0, M) read as zero */
            vs[row][dd] = vr >= 0 && vr < M && d < K
                ? EIN_BAND_LD(v[vb + vr * VV::ld + d]) : 0.0f;
        }
        __syncthreads();
        if (w.own)
            ein_gbmm_steps<TX, PJ, JC>(ss, vs, w.tx, w.ty, W2 - j0, acc);
        __syncthreads();
    }
    ein_band_store<DIL, TX, PJ, K, VO>(o, w, acc);
}
