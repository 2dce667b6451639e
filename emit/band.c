/* band.c - tiled CUDA kernels for the banded matmuls of Longformer-style
 * attention (derive/pricing/match.h, OPK_G2BMM and OPK_GBMM):
 *
 *   G2BMM  s[b, i, j] = sum_d q[b, i, d] * k[b, i + dil*(j - w), d]
 *   GBMM   o[b, i, d] = sum_j s[b, i, j] * v[b, i + dil*(j - w), d]
 *
 * j in [0, 2w + 1); rows of k and v outside [0, m) read as zero.
 *
 * The dilation is taken out first: the rows i = dil*i' + r of one residue
 * r meet only key rows dil*(i' + j - w) + r of the same residue, so for a
 * fixed (b, r) both operators are dilation-1 bands in i'.  A block (256
 * threads, 16 x 16) computes a tile of 64 rows i' of one residue:
 *
 *   G2BMM  64 rows x TJ band entries (TJ = 16, 32, 48 or 64), the sum over
 *          d in chunks of 32: the 64 query rows and the 63 + TJ key rows
 *          that tile meets go to shared memory.  Thread (tx, ty) owns rows
 *          ty + 16r (r < 4) and entries tx + 16c (c < TJ/16); entry (ii,
 *          jj) reads key row ii + jj, so one step of d loads 4 query and
 *          3 + TJ/16 key values for 4 TJ/16 multiply-adds.
 *   GBMM   64 rows x TD features (TD = 16..64), the sum over j in chunks
 *          of JC = min(32, 2w + 1): the 64 x JC scores and the 63 + JC
 *          value rows go to shared memory.  Thread (tx, ty) owns rows
 *          4ty + r and features tx + 16c; at step jj rows 4ty + r read
 *          value rows 4ty + r + jj, a window of 4 rows that slides by one
 *          per step, so one step loads one value row and 4 scores for 4
 *          TD/16 multiply-adds.
 *
 * Every sum runs in ascending order of its index, one thread per output
 * element, exactly as the generic kernel's loop (padding of the last chunk
 * adds 0*0 in G2BMM and is skipped in GBMM, whose values may be infinite):
 * results are deterministic and equal to the generic kernel's.  Shared
 * arrays are padded (33 and TD + 4 floats a row) against bank conflicts;
 * global loads are row-contiguous across a warp. */
#include "config.h"
#include "emit_int.h"

#include <inttypes.h>
#include <string.h>

typedef struct BandGeo {
    bool g2;                        /* G2BMM, else GBMM */
    int64_t nb, m, w2, k, dil, w;   /* batches, rows, band 2w+1, inner size */
    int64_t mr;                     /* rows of residue 0: ceil(m / dil) */
    int64_t nit;                    /* tiles of 64 rows i' */
    int64_t cw;                     /* G2BMM: TJ / 16; GBMM: TD / 16 */
    int64_t ncol;                   /* tiles across j (G2BMM) or d (GBMM) */
    int64_t jc;                     /* GBMM: chunk of j */
    int64_t tiles;                  /* blocks */
} BandGeo;

static int64_t cdiv(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

/* 16*c columns a tile, c in 1..4: the fewest padded columns, then the
 * widest tile (more reuse of what shared memory holds). */
static int64_t tile_cols(int64_t n)
{
    int64_t best = 1, pad = INT64_MAX;
    for (int64_t c = 1; c <= 4; c++) {
        int64_t p = cdiv(n, 16 * c) * 16 * c;
        if (p <= pad) {
            pad = p;
            best = c;
        }
    }
    return best;
}

/* The geometry of the kernel for t, matched as mt: the plan runs it as
 * IMPL_CUDA_BAND, which derive/pricing/libs.c grants only to shapes the
 * kernel indexes with in an int (operands [batch..., m, k] for G2BMM,
 * [batch..., m, 2w+1] and [batch..., m, k] for GBMM, all f32, the stage
 * covering its output). */
static void band_geometry(const IrTensor *t, const OpMatch *mt, BandGeo *g)
{
    memset(g, 0, sizeof *g);
    if (!t || !mt || (mt->kind != OPK_G2BMM && mt->kind != OPK_GBMM))
        ICE("the band kernel of '%s' is for no band", t ? t->name : "?");
    g->g2 = mt->kind == OPK_G2BMM;
    g->nb = mt->gb;
    g->m = mt->gm;
    g->w = mt->gw;
    g->w2 = 2 * mt->gw + 1;
    g->k = mt->gk;
    g->dil = mt->gdil;
    g->mr = cdiv(g->m, g->dil);
    g->nit = cdiv(g->mr, 64);
    if (g->g2) {
        g->cw = tile_cols(g->w2);
        g->ncol = cdiv(g->w2, 16 * g->cw);
    } else {
        g->cw = tile_cols(g->k);
        g->ncol = cdiv(g->k, 16 * g->cw);
        g->jc = g->w2 < 32 ? g->w2 : 32;
    }
    /* one block a tile, numbered in an int */
    g->tiles = g->nb * g->dil * g->nit * g->ncol;
}

/* The name and comment of the generic kernel built for t (emit.c builds
 * one per stage), so that plans, errors and profiles name the same
 * kernel; a name of its own otherwise. */
static const Kernel *find_kernel(const Emit *em, const IrTensor *t)
{
    for (int i = 0; i < em->nkernels; i++)
        if (em->kernels[i].out == t)
            return &em->kernels[i];
    return NULL;
}

static const char *band_name(Emit *em, const IrTensor *t)
{
    const Kernel *k = find_kernel(em, t);
    return k ? k->name : arena_printf(em->arena, "kband_%s", em->cname[t->id]);
}

static void write_g2bmm(Sb *o, const BandGeo *g, const char *q, const char *kk,
                        const char *s, const char *rf)
{
    int64_t tj = 16 * g->cw, cw = g->cw, krows = 63 + tj;
    sb_printf(o,
"{\n"
"    /* 64 rows i' of residue r (i = %" PRId64 "*i' + r) x %" PRId64 " band entries;\n"
"       d in chunks of 32.  Key row kr of the tile is i0 + j0 - %" PRId64 " + kr. */\n"
"    __shared__ float qs[64][33];\n"
"    __shared__ float ks[%" PRId64 "][33];\n"
"    const int tx = (int)threadIdx.x %% 16, ty = (int)threadIdx.x / 16;\n"
"    int tile = (int)blockIdx.x;\n"
"    const int j0 = tile %% %" PRId64 " * %" PRId64 ";\n"
"    tile /= %" PRId64 ";\n"
"    const int i0 = tile %% %" PRId64 " * 64;\n"
"    tile /= %" PRId64 ";\n"
"    const int r = tile %% %" PRId64 ", bb = tile / %" PRId64 ";\n"
"    const int nr = (%" PRId64 " - r + %" PRId64 ") / %" PRId64 ";   /* rows of residue r */\n"
"    const int64_t base = (int64_t)bb * %" PRId64 " * %" PRId64 ";   /* batch bb of q and k */\n"
"    float acc[4][%" PRId64 "];\n"
"#pragma unroll\n"
"    for (int a = 0; a < 4; ++a)\n"
"#pragma unroll\n"
"        for (int c = 0; c < %" PRId64 "; ++c)\n"
"            acc[a][c] = 0.0f;\n",
              g->dil, tj, g->w, krows, g->ncol, tj, g->ncol, g->nit, g->nit, g->dil,
              g->dil, g->m, g->dil - 1, g->dil, g->m, g->k, cw, cw);
    sb_printf(o,
"    for (int d0 = 0; d0 < %" PRId64 "; d0 += 32) {\n"
"        for (int x = (int)threadIdx.x; x < 64 * 32; x += 256) {\n"
"            const int row = x / 32, dd = x %% 32, ip = i0 + row, d = d0 + dd;\n"
"            qs[row][dd] = ip < nr && d < %" PRId64 "\n"
"                ? %s(%s[base + ((int64_t)%" PRId64 " * ip + r) * %" PRId64 " + d]) : 0.0f;\n"
"        }\n"
"        for (int x = (int)threadIdx.x; x < %" PRId64 " * 32; x += 256) {\n"
"            const int row = x / 32, dd = x %% 32, d = d0 + dd;\n"
"            const int64_t kr = (int64_t)%" PRId64 " * (i0 + j0 - %" PRId64 " + row) + r;\n"
"            /* keys outside [0, %" PRId64 ") read as zero */\n"
"            ks[row][dd] = kr >= 0 && kr < %" PRId64 " && d < %" PRId64 "\n"
"                ? %s(%s[base + kr * %" PRId64 " + d]) : 0.0f;\n"
"        }\n"
"        __syncthreads();\n"
"#pragma unroll\n"
"        for (int dd = 0; dd < 32; ++dd) {\n"
"            float qv[4], kv[%" PRId64 "];\n"
"#pragma unroll\n"
"            for (int a = 0; a < 4; ++a)\n"
"                qv[a] = qs[ty + 16 * a][dd];\n"
"#pragma unroll\n"
"            for (int e = 0; e < %" PRId64 "; ++e)\n"
"                kv[e] = ks[tx + ty + 16 * e][dd];\n"
"#pragma unroll\n"
"            for (int a = 0; a < 4; ++a)\n"
"#pragma unroll\n"
"                for (int c = 0; c < %" PRId64 "; ++c)\n"
"                    acc[a][c] += qv[a] * kv[a + c];\n"
"        }\n"
"        __syncthreads();\n"
"    }\n",
              g->k, g->k, rf, q, g->dil, g->k, krows, g->dil, g->w, g->m, g->m, g->k, rf, kk,
              g->k, 3 + cw, 3 + cw, cw);
    sb_printf(o,
"#pragma unroll\n"
"    for (int a = 0; a < 4; ++a) {\n"
"        const int ip = i0 + ty + 16 * a;\n"
"        if (ip >= nr)\n"
"            continue;\n"
"        const int64_t row = (int64_t)bb * %" PRId64 " + (int64_t)%" PRId64 " * ip + r;\n"
"#pragma unroll\n"
"        for (int c = 0; c < %" PRId64 "; ++c) {\n"
"            const int j = j0 + tx + 16 * c;\n"
"            if (j < %" PRId64 ")\n"
"                %s[row * %" PRId64 " + j] = acc[a][c];\n"
"        }\n"
"    }\n"
"}\n\n",
              g->m, g->dil, cw, g->w2, s, g->w2);
}

static void write_gbmm(Sb *o, const BandGeo *g, const char *sname, const char *v,
                       const char *out, const char *rf)
{
    int64_t td = 16 * g->cw, cw = g->cw, jc = g->jc, vrows = 63 + jc;
    sb_printf(o,
"{\n"
"    /* 64 rows i' of residue r (i = %" PRId64 "*i' + r) x %" PRId64 " features;\n"
"       j in chunks of %" PRId64 ".  Value row vr of the tile is i0 + j0 - %" PRId64 " + vr. */\n"
"    __shared__ float ss[64][33];\n"
"    __shared__ float vs[%" PRId64 "][%" PRId64 "];\n"
"    const int tx = (int)threadIdx.x %% 16, ty = (int)threadIdx.x / 16;\n"
"    int tile = (int)blockIdx.x;\n"
"    const int dz = tile %% %" PRId64 " * %" PRId64 ";\n"
"    tile /= %" PRId64 ";\n"
"    const int i0 = tile %% %" PRId64 " * 64;\n"
"    tile /= %" PRId64 ";\n"
"    const int r = tile %% %" PRId64 ", bb = tile / %" PRId64 ";\n"
"    const int nr = (%" PRId64 " - r + %" PRId64 ") / %" PRId64 ";   /* rows of residue r */\n"
"    const int64_t brow = (int64_t)bb * %" PRId64 ";   /* first row of batch bb */\n"
"    float acc[4][%" PRId64 "];\n"
"#pragma unroll\n"
"    for (int a = 0; a < 4; ++a)\n"
"#pragma unroll\n"
"        for (int c = 0; c < %" PRId64 "; ++c)\n"
"            acc[a][c] = 0.0f;\n",
              g->dil, td, jc, g->w, vrows, td + 4, g->ncol, td, g->ncol, g->nit, g->nit,
              g->dil, g->dil, g->m, g->dil - 1, g->dil, g->m, cw, cw);
    sb_printf(o,
"    for (int j0 = 0; j0 < %" PRId64 "; j0 += %" PRId64 ") {\n"
"        for (int x = (int)threadIdx.x; x < 64 * %" PRId64 "; x += 256) {\n"
"            const int row = x / %" PRId64 ", jj = x %% %" PRId64 ", ip = i0 + row, j = j0 + jj;\n"
"            ss[row][jj] = ip < nr && j < %" PRId64 "\n"
"                ? %s(%s[(brow + (int64_t)%" PRId64 " * ip + r) * %" PRId64 " + j]) : 0.0f;\n"
"        }\n"
"        for (int x = (int)threadIdx.x; x < %" PRId64 " * %" PRId64 "; x += 256) {\n"
"            const int row = x / %" PRId64 ", dd = x %% %" PRId64 ", d = dz + dd;\n"
"            const int64_t vr = (int64_t)%" PRId64 " * (i0 + j0 - %" PRId64 " + row) + r;\n"
"            /* values outside [0, %" PRId64 ") read as zero */\n"
"            vs[row][dd] = vr >= 0 && vr < %" PRId64 " && d < %" PRId64 "\n"
"                ? %s(%s[(brow + vr) * %" PRId64 " + d]) : 0.0f;\n"
"        }\n"
"        __syncthreads();\n"
"        /* Past the band's end in the last chunk: no term (a value may be\n"
"           infinite, and inf * 0 is no zero). */\n"
"        const int jn = %" PRId64 " - j0;\n"
"        float vw[4][%" PRId64 "];   /* value rows 4ty + jj + 0..3 */\n"
"#pragma unroll\n"
"        for (int e = 0; e < 3; ++e)\n"
"#pragma unroll\n"
"            for (int c = 0; c < %" PRId64 "; ++c)\n"
"                vw[e][c] = vs[4 * ty + e][tx + 16 * c];\n"
"#pragma unroll\n"
"        for (int jj = 0; jj < %" PRId64 "; ++jj) {\n"
"#pragma unroll\n"
"            for (int c = 0; c < %" PRId64 "; ++c)\n"
"                vw[3][c] = vs[4 * ty + jj + 3][tx + 16 * c];\n"
"            if (jj < jn) {\n"
"#pragma unroll\n"
"                for (int a = 0; a < 4; ++a) {\n"
"                    const float sv = ss[4 * ty + a][jj];\n"
"#pragma unroll\n"
"                    for (int c = 0; c < %" PRId64 "; ++c)\n"
"                        acc[a][c] += sv * vw[a][c];\n"
"                }\n"
"            }\n"
"#pragma unroll\n"
"            for (int e = 0; e < 3; ++e)\n"
"#pragma unroll\n"
"                for (int c = 0; c < %" PRId64 "; ++c)\n"
"                    vw[e][c] = vw[e + 1][c];\n"
"        }\n"
"        __syncthreads();\n"
"    }\n",
              g->w2, jc, jc, jc, jc, g->w2, rf, sname, g->dil, g->w2, vrows, td, td, td,
              g->dil, g->w, g->m, g->m, g->k, rf, v, g->k, g->w2, cw, cw, jc, cw, cw, cw);
    sb_printf(o,
"#pragma unroll\n"
"    for (int a = 0; a < 4; ++a) {\n"
"        const int ip = i0 + 4 * ty + a;\n"
"        if (ip >= nr)\n"
"            continue;\n"
"        const int64_t row = brow + (int64_t)%" PRId64 " * ip + r;\n"
"#pragma unroll\n"
"        for (int c = 0; c < %" PRId64 "; ++c) {\n"
"            const int d = dz + tx + 16 * c;\n"
"            if (d < %" PRId64 ")\n"
"                %s[row * %" PRId64 " + d] = acc[a][c];\n"
"        }\n"
"    }\n"
"}\n\n",
              g->dil, cw, g->k, out, g->k);
}

void band_write_kernel(Emit *em, const IrTensor *t, const OpMatch *m)
{
    BandGeo g;
    band_geometry(t, m, &g);
    Sb *o = &em->out;
    const Kernel *k = find_kernel(em, t);
    if (k) {
        emit_block_comment(o, k->comment, 0);
    } else {
        Sb c = {0};
        emit_source_comment(em->arena, em->p->cx, t, emit_op(em, t)->stage, NULL, &c);
        emit_block_comment(o, sb_str(&c), 0);
        sb_free(&c);
    }
    const char *a = arena_printf(em->arena, "t_%s", em->cname[m->in[0]->id]);
    const char *b = arena_printf(em->arena, "t_%s", em->cname[m->in[1]->id]);
    const char *out = arena_printf(em->arena, "t_%s", em->cname[t->id]);
    /* The operands may be one tensor (q = k): one parameter each still,
     * the second named as no tensor can be. */
    if (m->in[0] == m->in[1])
        b = "ein_second";
    /* --precision below fp32: operands rounded as they are loaded (ein_rnd,
     * which lib.c asked emit.c to write), as every summed product rounds
     * them; else a plain parenthesis */
    const char *rf = em->precision != PREC_FP32 ? "ein_rnd" : "";
    sb_printf(o, "/* %s, b %" PRId64 ", m %" PRId64 ", w %" PRId64 ", k %" PRId64
              ", dilation %" PRId64 ": tiled band kernel, %" PRId64 " blocks */\n",
              g.g2 ? "G2BMM" : "GBMM", g.nb, g.m, g.w, g.k, g.dil, g.tiles);
    sb_printf(o, "static __global__ void __launch_bounds__(256)\n%s(const float *__restrict__ "
              "%s, const float *__restrict__ %s, float *__restrict__ %s)\n",
              band_name(em, t), a, b, out);
    if (g.g2)
        write_g2bmm(o, &g, a, b, out, rf);
    else
        write_gbmm(o, &g, a, b, out, rf);
}

void band_write_launch(Emit *em, const IrTensor *t, const OpMatch *m, const char *indent)
{
    BandGeo g;
    band_geometry(t, m, &g);
    const char *name = band_name(em, t);
    sb_printf(&em->out, "%s%s<<<%" PRId64 ", 256, 0, stream>>>((const float *)p[%d], "
              "(const float *)p[%d], (float *)p[%d]);\n", indent, name, g.tiles,
              m->in[0]->id, m->in[1]->id, t->id);
    sb_printf(&em->out, "%sif ((rc = ein_launched(ctx, \"%s\")) != 0)\n%s    return rc;\n",
              indent, name, indent);
}
