/* band.c - tiled CUDA kernels for the banded matmuls of Longformer-style
 * attention (derive/pricing/match.h, OPK_G2BMM and OPK_GBMM):
 *
 *   G2BMM  s[b, i, j] = sum_d q[b, i, d] * k[b, i + dil*(j - w), d]
 *   GBMM   o[b, i, d] = sum_j s[b, i, j] * v[b, i + dil*(j - w), d]
 *
 * The kernels are code in runtime/band.cu: templates over the operator's
 * sizes, which says how they tile and why they compute what the generic
 * kernel does.  The plan runs a stage as IMPL_CUDA_BAND only where it fits
 * them (derive/pricing/libs.c: f32, loops that cover the output from 0,
 * sizes an int indexes); this file chooses the tiles (16 to 64 columns,
 * the fewest padded) and writes for
 * each operator a kernel that calls the template with its sizes, so that
 * nvcc compiles it with constants, and the kernel's launch. */
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

void band_write_support(Emit *em)
{
    /* --precision below fp32: operands rounded as they are loaded (ein_rnd,
     * which lib.c asked emit.c to write), as every summed product rounds
     * them */
    sb_printf(&em->out, "#define EIN_BAND_LD(x) %s(x)\n\n",
              em->precision != PREC_FP32 ? "ein_rnd" : "");
    emit_paste(em, "band.cu");
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
    sb_printf(o, "/* %s, b %" PRId64 ", m %" PRId64 ", w %" PRId64 ", k %" PRId64
              ", dilation %" PRId64 ": tiled band kernel, %" PRId64 " blocks */\n",
              g.g2 ? "G2BMM" : "GBMM", g.nb, g.m, g.w, g.k, g.dil, g.tiles);
    sb_printf(o, "static __global__ void __launch_bounds__(256)\n%s(const float *__restrict__ "
              "%s, const float *__restrict__ %s, float *__restrict__ %s)\n{\n",
              band_name(em, t), a, b, out);
    /* runtime/band.cu: DIL, M, K, W, CW, NCOL, NIT [, JC] */
    sb_printf(o, "    ein_%s_block<%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64
              ", %" PRId64 ", %" PRId64, g.g2 ? "g2bmm" : "gbmm", g.dil, g.m, g.k, g.w, g.cw,
              g.ncol, g.nit);
    if (!g.g2)
        sb_printf(o, ", %" PRId64, g.jc);
    sb_printf(o, ">(%s, %s, %s);\n}\n\n", a, b, out);
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
