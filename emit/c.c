/* c.c - the C dialect of a kernel: the body of kernel.c inside a loop
 * nest over the output's full shape, parallel with OpenMP over the outer
 * loops when the work is large enough to pay for waking the threads; the
 * innermost loop is left to the compiler's vectorizer.  Buffers are the
 * context's `void *` pointers, which C converts to the parameters' types
 * (float, or uint16_t for f16/bf16) without a cast. */
#include "config.h"
#include "emit_int.h"

#include <inttypes.h>

/* Elements x terms below which a kernel runs on one thread: starting an
 * OpenMP team costs a few microseconds, about this many multiply-adds. */
#define C_PARALLEL_WORK 32768.0

/* Rows of the outer loops that keep every thread of a big machine busy. */
#define C_PARALLEL_ROWS 32

/* How many outer loops the threads share (OpenMP collapse).  The
 * innermost loop stays a plain loop in each thread when the outer ones
 * give enough rows: the compiler can then vectorize it (unit stride over
 * the output, restrict pointers, a constant trip count), which it cannot
 * do with a collapsed loop's flat index. */
static int parallel_loops(const Kernel *k)
{
    int r = k->out->rank;
    int64_t rows = 1;
    for (int i = 0; i < r - 1; i++) {
        rows *= k->out->shape[i];
        if (rows >= C_PARALLEL_ROWS)
            return i + 1;
    }
    return r;
}

void c_write_kernel(Emit *em, const Kernel *k)
{
    Sb *o = &em->out;
    int r = k->out->rank;
    emit_block_comment(o, k->comment, 0);
    sb_printf(o, "%sstatic void %s(", k->simd || k->simd_sum ? "EIN_TARGETS " : "", k->name);
    for (int i = 0; i < k->nreads; i++)
        sb_printf(o, "const %s *restrict t_%s, ", emit_ctype(k->reads[i]->elem),
                  em->cname[k->reads[i]->id]);
    sb_printf(o, "%s *restrict t_%s)\n{\n", emit_ctype(k->out->elem),
              em->cname[k->out->id]);
    int n = 0;                          /* loops under omp parallel for */
    if (r > 0 && k->total > 1 && k->work >= C_PARALLEL_WORK) {
        n = parallel_loops(k);
        sb_printf(o, "#ifdef _OPENMP\n#pragma omp parallel for%s schedule(static)\n"
                  "#endif\n", n > 1 ? arena_printf(em->arena, " collapse(%d)", n) : "");
    }
    int ind = 4;
    /* the per-row values before the innermost loop, unless the threads
     * share it: then in the body */
    bool hoist_out = k->hoist && r >= 1 && r - 1 >= n;
    for (int i = 0; i < r; i++) {
        bool open = i + 1 == r || (hoist_out && i + 2 == r);
        if (hoist_out && i == r - 1)
            sb_indent(o, k->hoist, ind);
        /* Each thread's innermost loop: OpenMP's outlined loop body loses
         * what restrict says, which gcc's vectorizer needs; simd gives it
         * back (iterations write distinct elements). */
        if (i == r - 1 && i >= n && k->simd && k->out->shape[i] > 1)
            sb_puts(o, k->simd_vmath ? "#if defined(_OPENMP) && EIN_VMATH\n#pragma omp simd\n"
                                       "#endif\n"
                                     : "#ifdef _OPENMP\n#pragma omp simd\n#endif\n");
        sb_printf(o, "%*sfor (%s %s = 0; %s < %" PRId64 "; ++%s)%s\n", ind, "",
                  k->ity, k->loopvar[i], k->loopvar[i], k->out->shape[i],
                  k->loopvar[i], open ? " {" : "");
        if (i + 1 < r)
            ind += 4;
    }
    if (r == 0)
        sb_printf(o, "%*s{\n", ind, "");
    if (k->hoist && !hoist_out)
        sb_indent(o, k->hoist, ind + 4);
    sb_indent(o, k->body, ind + 4);
    sb_printf(o, "%*st_%s[", ind + 4, "", em->cname[k->out->id]);
    emit_store_offset(o, k);
    sb_puts(o, "] = ");
    emit_store_value(em, o, k->out->elem, k->store);
    sb_printf(o, ";\n%*s}\n", ind, "");
    if (hoist_out && r >= 2)
        sb_printf(o, "%*s}\n", ind - 4, "");
    sb_puts(o, "}\n\n");
}

void c_write_launch(Emit *em, const Kernel *k, const char *indent)
{
    Sb *o = &em->out;
    sb_printf(o, "%s%s(", indent, k->name);
    for (int i = 0; i < k->nreads; i++)
        sb_printf(o, "p[%d], ", k->reads[i]->id);
    sb_printf(o, "p[%d]);\n", k->out->id);
}
