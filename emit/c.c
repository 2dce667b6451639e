/* c.c - the C dialect of a kernel: the body of kernel.c inside a loop
 * nest over the output's full shape, parallel with OpenMP when the work
 * is large enough to pay for waking the threads.  Buffers are the
 * context's `void *` pointers, which C converts to the parameters' types
 * (float, or uint16_t for f16/bf16) without a cast. */
#include "config.h"
#include "emit_int.h"

#include <inttypes.h>

/* Elements x terms below which a kernel runs on one thread: starting an
 * OpenMP team costs a few microseconds, about this many multiply-adds. */
#define C_PARALLEL_WORK 32768.0

void c_write_kernel(Emit *em, const Kernel *k)
{
    Sb *o = &em->out;
    int r = k->out->rank;
    emit_block_comment(o, k->comment, 0);
    sb_printf(o, "static void %s(", k->name);
    for (int i = 0; i < k->nreads; i++)
        sb_printf(o, "const %s *restrict t_%s, ", emit_ctype(k->reads[i]->elem),
                  em->cname[k->reads[i]->id]);
    sb_printf(o, "%s *restrict t_%s)\n{\n", emit_ctype(k->out->elem),
              em->cname[k->out->id]);
    if (r > 0 && k->total > 1 && k->work >= C_PARALLEL_WORK)
        sb_printf(o, "#ifdef _OPENMP\n#pragma omp parallel for%s schedule(static)\n"
                  "#endif\n", r > 1 ? arena_printf(em->arena, " collapse(%d)", r) : "");
    int ind = 4;
    for (int i = 0; i < r; i++) {
        sb_printf(o, "%*sfor (%s %s = 0; %s < %" PRId64 "; ++%s)%s\n", ind, "",
                  k->ity, k->loopvar[i], k->loopvar[i], k->out->shape[i],
                  k->loopvar[i], i + 1 == r ? " {" : "");
        if (i + 1 < r)
            ind += 4;
    }
    if (r == 0)
        sb_printf(o, "%*s{\n", ind, "");
    sb_indent(o, k->body, ind + 4);
    sb_printf(o, "%*st_%s[", ind + 4, "", em->cname[k->out->id]);
    emit_store_offset(o, k);
    sb_puts(o, "] = ");
    emit_store_value(em, o, k->out->elem, "acc");
    sb_printf(o, ";\n%*s}\n}\n\n", ind, "");
}

void c_write_launch(Emit *em, const Kernel *k, const char *indent)
{
    Sb *o = &em->out;
    sb_printf(o, "%s%s(", indent, k->name);
    for (int i = 0; i < k->nreads; i++)
        sb_printf(o, "p[%d], ", k->reads[i]->id);
    sb_printf(o, "p[%d]);\n", k->out->id);
}
