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
 * sizes an int indexes), and libs.c's cost_band_tiles chooses the tiles
 * (the model prices the kernel it says); this file writes for each
 * operator a kernel that calls the template with its sizes and tiles, so
 * that nvcc compiles it with constants, and the kernel's launch. */
#include "config.h"
#include "emit_int.h"

#include <inttypes.h>

/* The tiles of the kernel for t, matched as mt: the plan runs it as
 * IMPL_CUDA_BAND, which derive/pricing/libs.c grants only to shapes the
 * kernel indexes with in an int (sizes below 2^29, operands read through
 * views inside them, all f32, the stage covering its output, the blocks
 * numbered in an int), and which it prices with the same tiles
 * (cost_band_tiles). */
static void band_tiles(const IrTensor *t, const OpMatch *mt, BandTiles *g)
{
    if (!t || !mt || (mt->kind != OPK_G2BMM && mt->kind != OPK_GBMM))
        ICE("the band kernel of '%s' is for no band", t ? t->name : "?");
    cost_band_tiles(mt, g);
    if (g->blocks > INT32_MAX || g->smem > BAND_MAX_SMEM)
        ICE("the band kernel of '%s' has %" PRId64 " blocks of %d bytes of shared memory",
            t->name, g->blocks, g->smem);
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
    BandTiles g;
    band_tiles(t, m, &g);
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
              ", dilation %" PRId64 ": tiled band kernel, %" PRId64 " blocks of %d threads"
              " (%d x %d computing), tiles of %d rows x %d %s */\n",
              g.g2 ? "G2BMM" : "GBMM", m->gb, m->gm, m->gw, m->gk, m->gdil, g.blocks,
              g.threads, g.tx, g.ty, g.ti, g.tc, g.g2 ? "entries" : "features");
    sb_printf(o, "static __global__ void __launch_bounds__(%d)\n%s(const float *__restrict__ "
              "%s, const float *__restrict__ %s, float *__restrict__ %s)\n{\n",
              g.threads, band_name(em, t), a, b, out);
    /* runtime/band.cu: DIL, M, K, W, TX, TY, PJ, NCOL, NIT, DC or JC, the
     * operands' views */
    sb_printf(o, "    ein_%s_block<%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64
              ", %d, %d, %d, %" PRId64 ", %" PRId64 ", %d,\n",
              g.g2 ? "g2bmm" : "gbmm", m->gdil, m->gm, m->gk, m->gw, g.tx, g.ty, g.pj,
              g.ncol, g.nit, g.chunk);
    /* the operands' views, then the output's: dense, or inside the
     * buffer of the copy it stores (plan.h, PlanBuf) */
    BandView vo = emit_store_view(em, t);
    for (int x = 0; x < 3; x++) {
        const BandView *v = x < 2 ? &m->gv[x] : &vo;
        sb_printf(o, "        ein_band_view<%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64
                  ", %" PRId64 ">%s", v->ld, v->stride, v->split, v->sstride, v->off,
                  x == 2 ? ">" : ",\n");
    }
    sb_printf(o, "(%s, %s, %s);\n}\n\n", a, b, out);
}

void band_write_launch(Emit *em, const IrTensor *t, const OpMatch *m, const char *indent)
{
    BandTiles g;
    band_tiles(t, m, &g);
    const char *name = band_name(em, t);
    sb_printf(&em->out, "%s%s<<<%" PRId64 ", %d, 0, stream>>>((const float *)p[%d], "
              "(const float *)p[%d], (float *)p[%d]);\n", indent, name, g.blocks, g.threads,
              m->in[0]->id, m->in[1]->id, emit_store_id(em, t));
    sb_printf(&em->out, "%sif ((rc = ein_launched(ctx, \"%s\")) != 0)\n%s    return rc;\n",
              indent, name, indent);
}
