/* band.cu - the tiled kernels of the banded matmuls of Longformer-style
 * attention (emit/band.c, OPK_G2BMM and OPK_GBMM in derive/pricing/match.h):
 *
 *   G2BMM  s[b, i, j] = sum_d q[b, i, d] * k[b, i + DIL*(j - W), d]
 *   GBMM   o[b, i, d] = sum_j s[b, i, j] * v[b, i + DIL*(j - W), d]
 *
 * j in [0, 2W + 1); rows of k and v outside [0, M) read as zero.  Each is
 * the body of one block, a template over the operator's sizes: the
 * generated file writes one __global__ kernel per operator (named as the
 * stage's generic kernel would be) that calls it with its sizes, so that
 * nvcc compiles it with every size a constant.  Before this piece the
 * generated file defines EIN_BAND_LD(x), the load of an operand: (x), or
 * ein_rnd(x) for a --precision below fp32.
 *
 * The dilation is taken out first: the rows i = DIL*i' + r of one residue
 * r meet only key rows DIL*(i' + j - W) + r of the same residue, so for a
 * fixed (b, r) both operators are dilation-1 bands in i'.  A block (256
 * threads, 16 x 16) computes a tile of 64 rows i' of one residue; blocks
 * are numbered (batch, residue, row tile, column tile), the last fastest:
 *
 *   G2BMM  64 rows x TJ = 16 CW band entries (CW 1..4, NCOL tiles across
 *          j), the sum over d in chunks of 32: the 64 query rows and the
 *          63 + TJ key rows that tile meets go to shared memory.  Thread
 *          (tx, ty) owns rows ty + 16a (a < 4) and entries tx + 16c (c <
 *          CW); entry (ii, jj) reads key row ii + jj, so one step of d
 *          loads 4 query and 3 + CW key values for 4 CW multiply-adds.
 *   GBMM   64 rows x TD = 16 CW features (NCOL tiles across d), the sum
 *          over j in chunks of JC = min(32, 2W + 1): the 64 x JC scores
 *          and the 63 + JC value rows go to shared memory.  Thread (tx,
 *          ty) owns rows 4ty + a and features tx + 16c; at step jj rows
 *          4ty + a read value rows 4ty + a + jj, a window of 4 rows that
 *          slides by one per step, so one step loads one value row and 4
 *          scores for 4 CW multiply-adds.
 *
 * Every sum runs in ascending order of its index, one thread per output
 * element, exactly as the generic kernel's loop (padding of the last chunk
 * adds 0*0 in G2BMM and is skipped in GBMM, whose values may be infinite):
 * results are deterministic and equal to the generic kernel's.  Shared
 * arrays are padded (33 and TD + 4 floats a row) against bank conflicts;
 * global loads are row-contiguous across a warp.  Sizes stay below 2^29
 * (emit/band.c), so every int here stays below 2^31. */
#include <stdint.h>
#include "model.h" /* EMBED-SKIP */

/* NIT tiles of 64 rows i' cover the M / DIL rows of a residue. */
template <int DIL, int M, int K, int W, int CW, int NCOL, int NIT>
static __device__ __forceinline__ void
ein_g2bmm_block(const float *__restrict__ q, const float *__restrict__ k,
                float *__restrict__ s)
{
    /* key row kr of the tile is i0 + j0 - W + kr */
    __shared__ float qs[64][33];
    __shared__ float ks[63 + 16 * CW][33];
    const int tx = (int)threadIdx.x % 16, ty = (int)threadIdx.x / 16;
    int tile = (int)blockIdx.x;
    const int j0 = tile % NCOL * (16 * CW);
    tile /= NCOL;
    const int i0 = tile % NIT * 64;
    tile /= NIT;
    const int r = tile % DIL, bb = tile / DIL;
    const int nr = (M - r + (DIL - 1)) / DIL;   /* rows of residue r */
    const int64_t base = (int64_t)bb * M * K;   /* batch bb of q and k */
    float acc[4][CW];
#pragma unroll
    for (int a = 0; a < 4; ++a)
#pragma unroll
        for (int c = 0; c < CW; ++c)
            acc[a][c] = 0.0f;
    for (int d0 = 0; d0 < K; d0 += 32) {
        for (int x = (int)threadIdx.x; x < 64 * 32; x += 256) {
            const int row = x / 32, dd = x % 32, ip = i0 + row, d = d0 + dd;
            qs[row][dd] = ip < nr && d < K
                ? EIN_BAND_LD(q[base + ((int64_t)DIL * ip + r) * K + d]) : 0.0f;
        }
        for (int x = (int)threadIdx.x; x < (63 + 16 * CW) * 32; x += 256) {
            const int row = x / 32, dd = x % 32, d = d0 + dd;
            const int64_t kr = (int64_t)DIL * (i0 + j0 - W + row) + r;
            /* keys outside [0, M) read as zero */
            ks[row][dd] = kr >= 0 && kr < M && d < K
                ? EIN_BAND_LD(k[base + kr * K + d]) : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int dd = 0; dd < 32; ++dd) {
            float qv[4], kv[3 + CW];
#pragma unroll
            for (int a = 0; a < 4; ++a)
                qv[a] = qs[ty + 16 * a][dd];
#pragma unroll
            for (int e = 0; e < 3 + CW; ++e)
                kv[e] = ks[tx + ty + 16 * e][dd];
#pragma unroll
            for (int a = 0; a < 4; ++a)
#pragma unroll
                for (int c = 0; c < CW; ++c)
                    acc[a][c] += qv[a] * kv[a + c];
        }
        __syncthreads();
    }
#pragma unroll
    for (int a = 0; a < 4; ++a) {
        const int ip = i0 + ty + 16 * a;
        if (ip >= nr)
            continue;
        const int64_t row = (int64_t)bb * M + (int64_t)DIL * ip + r;
#pragma unroll
        for (int c = 0; c < CW; ++c) {
            const int j = j0 + tx + 16 * c;
            if (j < 2 * W + 1)
                s[row * (2 * W + 1) + j] = acc[a][c];
        }
    }
}

template <int DIL, int M, int K, int W, int CW, int NCOL, int NIT, int JC>
static __device__ __forceinline__ void
ein_gbmm_block(const float *__restrict__ s, const float *__restrict__ v,
               float *__restrict__ o)
{
    /* value row vr of the tile is i0 + j0 - W + vr */
    __shared__ float ss[64][33];
    __shared__ float vs[63 + JC][16 * CW + 4];
    const int tx = (int)threadIdx.x % 16, ty = (int)threadIdx.x / 16;
    int tile = (int)blockIdx.x;
    const int dz = tile % NCOL * (16 * CW);
    tile /= NCOL;
    const int i0 = tile % NIT * 64;
    tile /= NIT;
    const int r = tile % DIL, bb = tile / DIL;
    const int nr = (M - r + (DIL - 1)) / DIL;   /* rows of residue r */
    const int64_t brow = (int64_t)bb * M;   /* first row of batch bb */
    float acc[4][CW];
#pragma unroll
    for (int a = 0; a < 4; ++a)
#pragma unroll
        for (int c = 0; c < CW; ++c)
            acc[a][c] = 0.0f;
    for (int j0 = 0; j0 < 2 * W + 1; j0 += JC) {
        for (int x = (int)threadIdx.x; x < 64 * JC; x += 256) {
            const int row = x / JC, jj = x % JC, ip = i0 + row, j = j0 + jj;
            ss[row][jj] = ip < nr && j < 2 * W + 1
                ? EIN_BAND_LD(s[(brow + (int64_t)DIL * ip + r) * (2 * W + 1) + j]) : 0.0f;
        }
        for (int x = (int)threadIdx.x; x < (63 + JC) * (16 * CW); x += 256) {
            const int row = x / (16 * CW), dd = x % (16 * CW), d = dz + dd;
            const int64_t vr = (int64_t)DIL * (i0 + j0 - W + row) + r;
            /* values outside [0, M) read as zero */
            vs[row][dd] = vr >= 0 && vr < M && d < K
                ? EIN_BAND_LD(v[(brow + vr) * K + d]) : 0.0f;
        }
        __syncthreads();
        /* Past the band's end in the last chunk: no term (a value may be
           infinite, and inf * 0 is no zero). */
        const int jn = 2 * W + 1 - j0;
        float vw[4][CW];   /* value rows 4ty + jj + 0..3 */
#pragma unroll
        for (int e = 0; e < 3; ++e)
#pragma unroll
            for (int c = 0; c < CW; ++c)
                vw[e][c] = vs[4 * ty + e][tx + 16 * c];
#pragma unroll
        for (int jj = 0; jj < JC; ++jj) {
#pragma unroll
            for (int c = 0; c < CW; ++c)
                vw[3][c] = vs[4 * ty + jj + 3][tx + 16 * c];
            if (jj < jn) {
#pragma unroll
                for (int a = 0; a < 4; ++a) {
                    const float sv = ss[4 * ty + a][jj];
#pragma unroll
                    for (int c = 0; c < CW; ++c)
                        acc[a][c] += sv * vw[a][c];
                }
            }
#pragma unroll
            for (int e = 0; e < 3; ++e)
#pragma unroll
                for (int c = 0; c < CW; ++c)
                    vw[e][c] = vw[e + 1][c];
        }
        __syncthreads();
    }
#pragma unroll
    for (int a = 0; a < 4; ++a) {
        const int ip = i0 + 4 * ty + a;
        if (ip >= nr)
            continue;
        const int64_t row = brow + (int64_t)DIL * ip + r;
#pragma unroll
        for (int c = 0; c < CW; ++c) {
            const int d = dz + tx + 16 * c;
            if (d < K)
                o[row * K + d] = acc[a][c];
        }
    }
}
