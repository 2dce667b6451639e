/* c.c - the C dialect of a kernel: the body of kernel.c inside a loop
 * nest over the output's full shape, parallel with OpenMP over the outer
 * loops when the work is large enough to pay for waking the threads; the
 * innermost loop is left to the compiler's vectorizer.  Buffers are the
 * context's `void *` pointers, which C converts to the parameters' types
 * (float, or uint16_t for f16/bf16) without a cast. */
#include "config.h"
#include "emit_int.h"

#include <inttypes.h>
#include <string.h>

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

/* k's loops from `first` on (those before are bound: a row group's rows),
 * the first `npar` of all of them shared by the threads, at indent `ind`;
 * the body and the store: into the output's buffer, or with `row` >= 0
 * into ein_row<row>, the element's row of a member that lives in its
 * row group. */
static void write_nest(Emit *em, const Kernel *k, int first, int npar, int ind, int row)
{
    Sb *o = &em->out;
    int r = k->out->rank;
    /* the per-row values before the innermost loop, unless the threads
     * share it: then in the body */
    bool hoist_out = k->hoist && r > first && r - 1 >= npar;
    for (int i = first; i < r; i++) {
        bool open = i + 1 == r || (hoist_out && i + 2 == r);
        if (hoist_out && i == r - 1)
            sb_indent(o, k->hoist, ind);
        /* Each thread's innermost loop: OpenMP's outlined loop body loses
         * what restrict says, which gcc's vectorizer needs; simd gives it
         * back (iterations write distinct elements). */
        if (i == r - 1 && i >= npar && k->simd && k->out->shape[i] > 1)
            sb_puts(o, k->simd_vmath ? "#if defined(_OPENMP) && EIN_VMATH\n#pragma omp simd\n"
                                       "#endif\n"
                                     : "#ifdef _OPENMP\n#pragma omp simd\n#endif\n");
        sb_printf(o, "%*sfor (%s %s = 0; %s < %" PRId64 "; ++%s)%s\n", ind, "",
                  k->ity, k->loopvar[i], k->loopvar[i], k->out->shape[i],
                  k->loopvar[i], open ? " {" : "");
        if (i + 1 < r)
            ind += 4;
    }
    if (r == first)
        sb_printf(o, "%*s{\n", ind, "");
    if (k->hoist && !hoist_out)
        sb_indent(o, k->hoist, ind + 4);
    sb_indent(o, k->body, ind + 4);
    if (row >= 0) {
        sb_printf(o, "%*sein_row%d[", ind + 4, "", row);
        emit_store_offset_from(o, k, first);
    } else {
        sb_printf(o, "%*st_%s[", ind + 4, "", em->cname[k->out->id]);
        emit_store_offset(o, k);
    }
    sb_puts(o, "] = ");
    emit_store_kernel(em, o, k);
    sb_printf(o, ";\n%*s}\n", ind, "");
    if (hoist_out && r - 2 >= first)
        sb_printf(o, "%*s}\n", ind - 4, "");
}

/* A fused row group (plan.h): one function named after its last member,
 * whose loops over the rows run each member's own loop nest in turn on
 * the row, the threads sharing the rows; a member that lives only in the
 * group is one row, ein_rowN, on the stack of the thread. */
static void write_rows(Emit *em, const Kernel *ks)
{
    const PlanRowGroup *g = ks->rows;
    int n = g->nmembers, nrow = g->nrow, nreads = 0, nwrites = 0;
    const Kernel *last = &ks[n - 1];
    Sb *o = &em->out;
    bool targets = false, wide = false;
    double work = 0;
    for (int j = 0; j < n; j++) {
        targets |= ks[j].simd || ks[j].simd_sum;
        wide |= strcmp(ks[j].ity, "int") != 0;
        work += ks[j].work;
    }
    const IrTensor **reads, **writes;
    nreads = kernel_row_params(em, ks, &reads, &writes, &nwrites);
    sb_puts(o, "/* A fused row group: ");
    for (int j = 0; j < n; j++)
        sb_printf(o, "%s%s", j ? ", " : "", g->members[j]->name);
    sb_printf(o, ", one after the other on each of the rows that their first %d\n"
              "   dims index. */\n", nrow);
    for (int j = 0; j < n; j++)
        emit_block_comment(o, ks[j].comment, 0);
    sb_printf(o, "%sstatic void %s(", targets ? "EIN_TARGETS " : "", last->name);
    for (int i = 0; i < nreads; i++)
        sb_printf(o, "const %s *restrict t_%s, ", emit_ctype(reads[i]->elem),
                  em->cname[reads[i]->id]);
    for (int i = 0; i < nwrites; i++)
        sb_printf(o, "%s *restrict t_%s%s", emit_ctype(writes[i]->elem),
                  em->cname[writes[i]->id], i + 1 < nwrites ? ", " : ")\n{\n");
    const int64_t *shape = last->out->shape;
    int64_t rows = 1;
    int npar = 0;
    for (int d = 0; d < nrow; d++) {
        rows *= shape[d];
        if (npar == 0 && (rows >= C_PARALLEL_ROWS || d == nrow - 1))
            npar = d + 1;
    }
    if (rows > 1 && work >= C_PARALLEL_WORK)
        sb_printf(o, "#ifdef _OPENMP\n#pragma omp parallel for%s schedule(static)\n"
                  "#endif\n", npar > 1 ? arena_printf(em->arena, " collapse(%d)", npar) : "");
    const char *ity = wide ? "int64_t" : "int";
    int ind = 4;
    for (int d = 0; d < nrow; d++) {
        sb_printf(o, "%*sfor (%s ein_r%d = 0; ein_r%d < %" PRId64 "; ++ein_r%d)%s\n", ind, "",
                  ity, d, d, shape[d], d, d + 1 == nrow ? " {" : "");
        if (d + 1 < nrow)
            ind += 4;
    }
    ind += 4;
    for (int j = 0; j < n; j++) {
        int64_t len = 1;
        for (int d = nrow; d < g->members[j]->rank; d++)
            len *= g->members[j]->shape[d];
        if (!g->stored[j])
            sb_printf(o, "%*sfloat ein_row%d[%" PRId64 "];\n", ind, "", j, len);
    }
    for (int j = 0; j < n; j++) {
        const Kernel *k = &ks[j];
        sb_printf(o, "%*s{   /* %s */\n", ind, "", g->members[j]->name);
        for (int d = 0; d < nrow; d++)
            if (g->stored[j] || k->loopused[d])
                sb_printf(o, "%*sconst %s %s = ein_r%d;\n", ind + 4, "", k->ity, k->loopvar[d],
                          d);
        write_nest(em, k, nrow, 0, ind + 4, g->stored[j] ? -1 : j);
        sb_printf(o, "%*s}\n", ind, "");
    }
    sb_printf(o, "%*s}\n}\n\n", ind - 4, "");
}

void c_write_kernel(Emit *em, const Kernel *k)
{
    if (k->rows) {
        if (k->row_member == 0)
            write_rows(em, k);
        return;
    }
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
    write_nest(em, k, 0, n, 4, -1);
    sb_puts(o, "}\n\n");
}

void c_write_launch(Emit *em, const Kernel *k, const char *indent)
{
    Sb *o = &em->out;
    if (k->rows) {
        const IrTensor **reads, **writes;
        int nw, nr = kernel_row_params(em, k, &reads, &writes, &nw);
        sb_printf(o, "%s%s(", indent, k[k->rows->nmembers - 1].name);
        for (int i = 0; i < nr; i++)
            sb_printf(o, "p[%d], ", reads[i]->id);
        for (int i = 0; i < nw; i++)
            sb_printf(o, "p[%d]%s", writes[i]->id, i + 1 < nw ? ", " : ");\n");
        return;
    }
    sb_printf(o, "%s%s(", indent, k->name);
    for (int i = 0; i < k->nreads; i++)
        sb_printf(o, "p[%d], ", k->reads[i]->id);
    sb_printf(o, "p[%d]);\n", k->out->id);
}
