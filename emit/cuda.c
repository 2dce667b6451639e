/* cuda.c - the CUDA dialect of a kernel: the body of kernel.c inside a
 * grid-stride loop over the output's elements (one thread per element;
 * consecutive threads write consecutive elements, so stores coalesce),
 * and its launch, checked like every other CUDA call. */
#include "config.h"
#include "emit_int.h"

#include <inttypes.h>

#define CUDA_BLOCK 256
/* Enough blocks to fill any current GPU many times over; the grid-stride
 * loop covers the rest.  kernel.c keeps int indices only where the
 * counter cannot overflow past the total by one grid (2^24 threads). */
#define CUDA_MAX_BLOCKS 65536

static int64_t blocks(const Kernel *k)
{
    int64_t b = (k->total + CUDA_BLOCK - 1) / CUDA_BLOCK;
    return b < 1 ? 1 : b > CUDA_MAX_BLOCKS ? CUDA_MAX_BLOCKS : b;
}

void cuda_write_kernel(Emit *em, const Kernel *k)
{
    Sb *o = &em->out;
    int r = k->out->rank;
    const char *t = k->ity;
    emit_block_comment(o, k->comment, 0);
    sb_printf(o, "static __global__ void __launch_bounds__(%d)\n%s(", CUDA_BLOCK,
              k->name);
    for (int i = 0; i < k->nreads; i++)
        sb_printf(o, "const %s *__restrict__ t_%s, ", emit_ctype(k->reads[i]->elem),
                  em->cname[k->reads[i]->id]);
    sb_printf(o, "%s *__restrict__ t_%s)\n{\n", emit_ctype(k->out->elem),
              em->cname[k->out->id]);
    sb_printf(o, "    const %s stride = (%s)gridDim.x * (%s)blockDim.x;\n", t, t, t);
    sb_printf(o, "    for (%s e = (%s)blockIdx.x * (%s)blockDim.x + (%s)threadIdx.x; "
              "e < %" PRId64 "; e += stride) {\n", t, t, t, t, k->total);
    /* Each loop variable from the flat index, row-major; only those the
     * body reads (nvcc warns about unused ones). */
    int64_t below = 1;                  /* elements of the dims after i */
    for (int i = r - 1; i >= 0; i--) {
        if (k->loopused[i]) {
            sb_printf(o, "        const %s %s = e", t, k->loopvar[i]);
            if (below > 1)
                sb_printf(o, " / %" PRId64, below);
            if (i > 0)
                sb_printf(o, " %% %" PRId64, k->out->shape[i]);
            sb_puts(o, ";\n");
        }
        below *= k->out->shape[i];
    }
    sb_indent(o, k->body, 8);
    sb_printf(o, "        t_%s[e] = ", em->cname[k->out->id]);
    emit_store_value(em, o, k->out->elem, "acc");
    sb_puts(o, ";\n    }\n}\n\n");
}

void cuda_write_launch(Emit *em, const Kernel *k, const char *indent)
{
    Sb *o = &em->out;
    sb_printf(o, "%s%s<<<%" PRId64 ", %d, 0, stream>>>(", indent, k->name, blocks(k),
              CUDA_BLOCK);
    /* The context's buffers are `void *`: C++ wants the casts. */
    for (int i = 0; i < k->nreads; i++)
        sb_printf(o, "(const %s *)p[%d], ", emit_ctype(k->reads[i]->elem), k->reads[i]->id);
    sb_printf(o, "(%s *)p[%d]);\n", emit_ctype(k->out->elem), k->out->id);
    sb_printf(o, "%sif ((rc = ein_launched(ctx, \"%s\")) != 0)\n%s    return rc;\n",
              indent, k->name, indent);
}
