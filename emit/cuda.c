/* cuda.c - the CUDA dialect of a kernel and its launch, checked like every
 * other CUDA call.  Three layouts, chosen per kernel from its sizes and
 * from how its reads walk memory (kernel.c's scatter counts):
 *
 *   thread  one thread per output element in a grid-stride loop, the
 *           kernel.c body as it is; consecutive threads write consecutive
 *           elements, so stores coalesce, and so do reads that follow the
 *           innermost output index.  A map may also have a NAME_v4
 *           kernel of four elements a thread with float4 loads and
 *           store, launched where its buffers are aligned (write_v4).
 *   warp    one warp per output element: lane l takes terms l, l + 32, ...
 *           of the flattened sum (kernel.c's part), then a shuffle tree
 *           (offsets 16, 8, 4, 2, 1) combines the partials; reads that
 *           follow the innermost sum index coalesce.  For reductions with
 *           many terms whose reads scatter along the output (softmax's
 *           row max and sum, a row of a matmul), or too few outputs to
 *           fill the GPU with one thread each.
 *   block   one block of 256 per output element, the same per warp, then
 *           warp 0 combines the 8 warp results: very few outputs with very
 *           many terms (a sum over a whole tensor).  A warp or block
 *           reduction whose lanes can take four consecutive terms with
 *           float4 loads (kernel.c's vpart) has a NAME_v4 kernel too,
 *           launched where its buffers are aligned (write_lanes).
 *   rows    a fused row group of the plan (softmax, layer norm): a block
 *           per row, its members one after the other, each a block
 *           reduction or the block's threads sharing its elements, the
 *           members nothing else reads in shared memory (write_rows);
 *           where a member's map allows, a NAME_v4 kernel too, whose
 *           threads take four elements of it with float4 loads and
 *           store (write_row_v4), and four terms of a reduction with
 *           float4 loads (kernel.c's vpart), launched where its buffers
 *           are aligned.
 *
 * The order in which a layout adds terms is fixed by the generated code,
 * so every run gives the same bits.  max= and min= combine partials with
 * the same rule as the serial body (a NaN wins; no term at all gives 0). */
#include "config.h"
#include "emit_int.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define CUDA_BLOCK 256
/* Enough blocks to fill any current GPU many times over; the grid-stride
 * loop covers the rest.  kernel.c keeps int indices only where the
 * counter cannot overflow past the total by one grid (2^24 threads). */
#define CUDA_MAX_BLOCKS 65536

/* Fewer outputs than this leave an H100/H200 (132 SMs x 2048 threads)
 * mostly idle with one thread per output. */
#define CUDA_FEW_OUTPUTS 65536

static int lanes(const Kernel *k)
{
    if (!k->part || k->terms < 32)
        return 1;
    if (k->total <= 1024 && k->terms >= 4096)
        return CUDA_BLOCK;
    /* a warp's 5 shuffles pay for themselves over a few terms per lane */
    if (k->scatter_sum < k->scatter_out && (k->terms >= 128 || k->total < CUDA_FEW_OUTPUTS))
        return 32;
    if (k->total < CUDA_FEW_OUTPUTS && k->terms >= 64)
        return 32;
    return 1;
}

static int64_t blocks(const Kernel *k)
{
    int n = lanes(k);
    int64_t per = n == 1 ? CUDA_BLOCK : n == 32 ? CUDA_BLOCK / 32 : 1;
    int64_t b = (k->total + per - 1) / per;
    return b < 1 ? 1 : b > CUDA_MAX_BLOCKS ? CUDA_MAX_BLOCKS : b;
}

/* The loop variables of dims [from, to) of k from `flat`, the row-major
 * index of those dims of its output; only those the body reads (nvcc
 * warns about unused ones). */
static void write_loopvars_of(Sb *o, const Kernel *k, const char *ity, const char *flat,
                              int from, int to, int ind)
{
    int64_t below = 1;
    for (int i = to - 1; i >= from; i--) {
        if (k->loopused[i]) {
            sb_printf(o, "%*sconst %s %s = %s", ind, "", ity, k->loopvar[i], flat);
            if (below > 1)
                sb_printf(o, " / %" PRId64, below);
            if (i > from)
                sb_printf(o, " %% %" PRId64, k->out->shape[i]);
            sb_puts(o, ";\n");
        }
        below *= k->out->shape[i];
    }
}

/* Combine each lane's partial with the one `off` lanes up (shuffle down)
 * for off = first, first/2, .. 1: lane 0 ends with all of lanes 0 ..
 * 2*first - 1, in a fixed order.  A sum adds; max and min keep the serial
 * body's rule. */
static void write_combine(Sb *o, const Kernel *k, int ind, int first)
{
    Reduce red = k->st->red;
    sb_printf(o, "#pragma unroll\n%*sfor (int ein_o = %d; ein_o > 0; ein_o /= 2)", ind, "",
              first);
    if (red == RED_SUM) {
        sb_printf(o, "\n%*s    acc += __shfl_down_sync(0xffffffffu, acc, ein_o);\n", ind, "");
        return;
    }
    if (red == RED_PROD) {
        sb_printf(o, " {\n"
                  "%*s    const float ein_v = __shfl_down_sync(0xffffffffu, acc, ein_o);\n"
                  "%*s    const int ein_a = __shfl_down_sync(0xffffffffu, any, ein_o);\n"
                  "%*s    if (ein_a) {\n"
                  "%*s        acc = any ? acc * ein_v : ein_v;\n"
                  "%*s        any = 1;\n"
                  "%*s    }\n"
                  "%*s}\n", ind, "", ind, "", ind, "", ind, "", ind, "", ind, "", ind, "");
        return;
    }
    sb_printf(o, " {\n"
              "%*s    const float ein_v = __shfl_down_sync(0xffffffffu, acc, ein_o);\n"
              "%*s    const int ein_a = __shfl_down_sync(0xffffffffu, any, ein_o);\n"
              "%*s    if (ein_a && (!any || ein_v %c acc || isnan(ein_v))) {\n"
              "%*s        acc = ein_v;\n"
              "%*s        any = 1;\n"
              "%*s    }\n"
              "%*s}\n", ind, "", ind, "", ind, "", red == RED_MAX ? '>' : '<', ind, "",
              ind, "", ind, "", ind, "");
}

/* After each warp's shuffle tree: lane 0 of each of `warps` warps leaves
 * its warp's partial (acc, and any for max=, min= and products) in
 * ein_red, and warp 0 combines them in lane order; the caller writes what
 * lane 0 stores (at ind + 8) and the brace that closes warp 0's block
 * (at ind). */
static void write_warps_combine(Sb *o, const Kernel *k, int ind, int warps)
{
    bool any = k->st->red != RED_SUM;
    sb_printf(o, "%*sif (ein_lane %% 32 == 0) {\n"
              "%*s    ein_red[ein_lane / 32] = acc;\n", ind, "", ind, "");
    if (any)
        sb_printf(o, "%*s    ein_red_any[ein_lane / 32] = any;\n", ind, "");
    sb_printf(o, "%*s}\n%*s__syncthreads();\n%*sif (ein_lane < 32) {\n"
              "%*s    acc = ein_lane < %d ? ein_red[ein_lane] : 0.0f;\n", ind, "", ind, "",
              ind, "", ind, "", warps);
    if (any)
        sb_printf(o, "%*s    any = ein_lane < %d ? ein_red_any[ein_lane] : 0;\n", ind, "", warps);
    write_combine(o, k, ind + 4, warps / 2);
    sb_printf(o, "%*s    if (ein_lane == 0)\n", ind, "");
}

static void write_store(Emit *em, Sb *o, const Kernel *k, int ind)
{
    sb_printf(o, "%*st_%s[e] = ", ind, "", em->cname[k->out->id]);
    emit_store_kernel(em, o, k);
    sb_puts(o, ";\n");
}

/* Elements of one row of k, a member of a row group. */
static int64_t row_len(const Kernel *k)
{
    int64_t len = 1;
    for (int d = k->rows->nrow; d < k->out->rank; d++)
        len *= k->out->shape[d];
    return len;
}

/* Does member k of a row group sum its one element of a row across the
 * block's lanes (else each thread takes elements of the row)? */
static bool row_by_lanes(const Kernel *k)
{
    return k->part && row_len(k) == 1;
}

/* The store of member k (index j) of a row group at `at`, the element's
 * index in the row: into its row of the output, or of ein_rowJ where it
 * lives in the group. */
static void write_row_store(Emit *em, Sb *o, const Kernel *k, int j, const char *at, int ind)
{
    int64_t len = row_len(k);
    if (!k->rows->stored[j])
        sb_printf(o, "%*sein_row%d[%s] = ", ind, "", j, len > 1 ? at : "0");
    else if (len > 1)
        sb_printf(o, "%*st_%s[ein_e * %" PRId64 " + %s] = ", ind, "", em->cname[k->out->id],
                  len, at);
    else
        sb_printf(o, "%*st_%s[ein_e] = ", ind, "", em->cname[k->out->id]);
    emit_store_kernel(em, o, k);
    sb_puts(o, ";\n");
}

/* The four elements of a _v4 body from `flat`, the index of their
 * float4 in the row (map) or the member's row (row group), at indent
 * `ind`, indices of type t: the first's innermost index ein_c0, the
 * float4 loads, and the unrolled body, ein_o[ein_j] the four results. */
static void write_four(Emit *em, Sb *o, const Kernel *k, const char *t, const char *flat,
                       int ind)
{
    int r = k->out->rank;
    if (k->vinner || k->vloads[0])
        sb_printf(o, "%*sconst %s ein_c0 = %s %% %" PRId64 " * 4;\n", ind, "", t, flat,
                  k->out->shape[r - 1] / 4);
    sb_indent(o, k->vloads, ind);
    sb_printf(o, "%*sfloat ein_o[4];\n"
              "#pragma unroll\n"
              "%*sfor (int ein_j = 0; ein_j < 4; ein_j++) {\n", ind, "", ind, "");
    if (k->vinner)
        sb_printf(o, "%*s    const %s %s = ein_c0 + ein_j;\n", ind, "", t, k->loopvar[r - 1]);
    sb_indent(o, k->vbody, ind + 4);
    sb_printf(o, "%*s    ein_o[ein_j] = ", ind, "");
    emit_store_value(em, o, ELEM_F32, k->vstore);
    sb_printf(o, ";\n%*s}\n", ind, "");
}

/* Member k (index j) of a row group, in the group's _v4 kernel: thread
 * i of the block computes elements 4i to 4i + 3 of the row, which share
 * all but its innermost index, from the float4 loads of its vloads, and
 * stores them as one float4; indices of the group's type t. */
static void write_row_v4(Emit *em, Sb *o, const Kernel *k, int j, const char *t)
{
    const PlanRowGroup *g = k->rows;
    int r = k->out->rank;
    int64_t w4 = k->out->shape[r - 1] / 4;
    sb_printf(o, "            for (%s ein_i = ein_lane; ein_i < %" PRId64 "; "
              "ein_i += ein_nlanes) {\n", t, row_len(k) / 4);
    bool outer = false;
    for (int d = g->nrow; d < r - 1; d++)
        outer |= k->loopused[d];
    if (outer) {
        sb_printf(o, "                const %s ein_row = ein_i / %" PRId64 ";\n", t, w4);
        write_loopvars_of(o, k, t, "ein_row", g->nrow, r - 1, 16);
    }
    write_four(em, o, k, t, "ein_i", 16);
    if (g->stored[j])
        sb_printf(o, "                *(float4 *)&t_%s[ein_e * %" PRId64 " + ein_i * 4]",
                  em->cname[k->out->id], row_len(k));
    else
        sb_printf(o, "                *(float4 *)&ein_row%d[ein_i * 4]", j);
    sb_puts(o, " = make_float4(ein_o[0], ein_o[1], ein_o[2], ein_o[3]);\n"
               "            }\n");
}

/* Does some member of the row group ks have a _v4 loop or part? */
static bool rows_v4(const Kernel *ks)
{
    for (int j = 0; j < ks->rows->nmembers; j++)
        if (ks[j].vbody || ks[j].vpart)
            return true;
    return false;
}

/* A fused row group (plan.h): one kernel named after its last member, a
 * block of g->threads threads per row (a grid-stride loop over the rows),
 * which runs the members one after the other on its row with a barrier
 * after each.  A member of one value per row (a max, a sum) splits its
 * terms across the block's lanes as the block layout does, lane 0
 * storing; one of several values per row gives each thread every
 * threads-th of them.  Members that live only in the group are one row in
 * shared memory (ein_rowN); the others are stored, and later members read
 * them back from global memory, which the barrier makes visible to the
 * block.  `v4`: the members with a _v4 body take four elements a thread
 * (write_row_v4) and those with a vpart four terms a lane: the group's
 * NAME_v4 kernel (`suffix`), launched where the buffers they load as
 * float4 and store are 16-byte aligned, or, where those are all shared
 * rows, its one kernel. */
static void write_rows(Emit *em, const Kernel *ks, bool v4, const char *suffix)
{
    const PlanRowGroup *g = ks->rows;
    int n = g->nmembers, nt = g->threads;
    const Kernel *last = &ks[n - 1];
    Sb *o = &em->out;
    bool wide = false, lanes_used = false, maxmin = false;
    for (int j = 0; j < n; j++) {
        wide |= strcmp(ks[j].ity, "int") != 0;
        if (row_by_lanes(&ks[j])) {
            lanes_used = true;
            maxmin |= ks[j].st->red != RED_SUM;
        }
    }
    const char *ity = wide ? "int64_t" : "int";
    int64_t rows = 1;
    for (int d = 0; d < g->nrow; d++)
        rows *= last->out->shape[d];
    const IrTensor **reads, **writes;
    int nwrites, nreads = kernel_row_params(em, ks, &reads, &writes, &nwrites);
    if (*suffix) {
        sb_puts(o, "/* the same, four consecutive elements or terms a thread where a\n"
                   "   member allows: 128-bit loads and stores (launched where its buffers\n"
                   "   are 16-byte aligned) */\n");
    } else {
        sb_puts(o, "/* A fused row group: ");
        for (int j = 0; j < n; j++)
            sb_printf(o, "%s%s", j ? ", " : "", g->members[j]->name);
        sb_printf(o, ", one after the other on each of the rows that their first %d\n"
                  "   dims index, a block of %d threads per row. */\n", g->nrow, nt);
        for (int j = 0; j < n; j++)
            emit_block_comment(o, ks[j].comment, 0);
    }
    sb_printf(o, "static __global__ void __launch_bounds__(%d)\n%s%s(", nt, last->name,
              suffix);
    for (int i = 0; i < nreads; i++)
        sb_printf(o, "const %s *__restrict__ t_%s, ", emit_ctype(reads[i]->elem),
                  em->cname[reads[i]->id]);
    for (int i = 0; i < nwrites; i++)
        sb_printf(o, "%s *__restrict__ t_%s%s", emit_ctype(writes[i]->elem),
                  em->cname[writes[i]->id], i + 1 < nwrites ? ", " : ")\n{\n");
    for (int j = 0; j < n; j++)
        if (!g->stored[j])
            sb_printf(o, "    __shared__ %sfloat ein_row%d[%" PRId64 "];\n",
                      v4 ? "__align__(16) " : "", j, row_len(&ks[j]));
    if (lanes_used && nt > 32) {
        sb_printf(o, "    __shared__ float ein_red[%d];\n", nt / 32);
        if (maxmin)
            sb_printf(o, "    __shared__ int ein_red_any[%d];\n", nt / 32);
    }
    sb_printf(o, "    const int ein_lane = (int)threadIdx.x, ein_nlanes = %d;\n", nt);
    /* ein_e is the same across the block: every thread meets the barriers. */
    sb_printf(o, "    for (%s ein_e = (%s)blockIdx.x; ein_e < %" PRId64 "; "
              "ein_e += (%s)gridDim.x) {\n", ity, ity, rows, ity);
    for (int j = 0; j < n; j++) {
        const Kernel *k = &ks[j];
        sb_printf(o, "        {   /* %s */\n", g->members[j]->name);
        write_loopvars_of(o, k, ity, "ein_e", 0, g->nrow, 12);
        if (v4 && k->vbody) {
            write_row_v4(em, o, k, j, ity);
        } else if (!row_by_lanes(k)) {
            sb_printf(o, "            for (%s ein_i = ein_lane; ein_i < %" PRId64 "; "
                      "ein_i += ein_nlanes) {\n", ity, row_len(k));
            write_loopvars_of(o, k, ity, "ein_i", g->nrow, k->out->rank, 16);
            sb_indent(o, k->body, 16);
            write_row_store(em, o, k, j, "ein_i", 16);
            sb_puts(o, "            }\n");
        } else {
            /* its one element of the row: dims past the row's of extent 1 */
            write_loopvars_of(o, k, ity, "0", g->nrow, k->out->rank, 12);
            sb_indent(o, v4 && k->vpart ? k->vpart : k->part, 12);
            write_combine(o, k, 12, 16);
            if (nt == 32) {
                sb_puts(o, "            if (ein_lane == 0)\n");
                write_row_store(em, o, k, j, "0", 16);
            } else {
                write_warps_combine(o, k, 12, nt / 32);
                write_row_store(em, o, k, j, "0", 20);
                sb_puts(o, "            }\n");
            }
        }
        /* the member is whole before the next reads it (and, after the
         * last, before the next row overwrites the shared rows) */
        sb_puts(o, "            __syncthreads();\n        }\n");
    }
    sb_puts(o, "    }\n}\n\n");
}

/* The kernel's parameters, its reads then its output. */
static void write_params(Emit *em, Sb *o, const Kernel *k)
{
    sb_putc(o, '(');
    for (int i = 0; i < k->nreads; i++)
        sb_printf(o, "const %s *__restrict__ t_%s, ", emit_ctype(k->reads[i]->elem),
                  em->cname[k->reads[i]->id]);
    sb_printf(o, "%s *__restrict__ t_%s)\n{\n", emit_ctype(k->out->elem),
              em->cname[k->out->id]);
}

/* The grid-stride loop of a thread-per-element kernel: e from the
 * thread's index to n (exclusive) in steps of the grid. */
static void write_stride_loop(Sb *o, const char *t, int64_t n)
{
    sb_printf(o, "    const %s stride = (%s)gridDim.x * (%s)blockDim.x;\n", t, t, t);
    sb_printf(o, "    for (%s e = (%s)blockIdx.x * (%s)blockDim.x + (%s)threadIdx.x; "
              "e < %" PRId64 "; e += stride) {\n", t, t, t, t, n);
}

/* A plain map's _v4 kernel (emit_int.h): thread e computes elements 4e
 * to 4e + 3, which share their row: its reads that step along the row
 * one float4 load each, the body once per element with ein_j naming it
 * (unrolled, so ein_vN[ein_j] and ein_o[ein_j] are registers), one float4
 * store. */
static void write_v4(Emit *em, const Kernel *k)
{
    Sb *o = &em->out;
    const char *t = k->ity;
    int r = k->out->rank;
    int64_t w4 = k->out->shape[r - 1] / 4;
    bool outer = false;
    for (int d = 0; d < r - 1; d++)
        outer |= k->loopused[d];
    sb_puts(o, "/* the same, four consecutive elements a thread: 128-bit loads and store\n"
               "   (launched where its buffers are 16-byte aligned) */\n");
    sb_printf(o, "static __global__ void __launch_bounds__(%d)\n%s_v4", CUDA_BLOCK, k->name);
    write_params(em, o, k);
    write_stride_loop(o, t, k->total / 4);
    if (outer) {
        sb_printf(o, "        const %s ein_row = e / %" PRId64 ";\n", t, w4);
        write_loopvars_of(o, k, t, "ein_row", 0, r - 1, 8);
    }
    write_four(em, o, k, t, "e", 8);
    sb_printf(o, "        *(float4 *)&t_%s[e * 4] = make_float4(ein_o[0], ein_o[1], ein_o[2], "
              "ein_o[3]);\n    }\n}\n\n", em->cname[k->out->id]);
}

/* Does k (not of a row group) have a NAME_v4 kernel: a map's, or a
 * reduction's whose lanes take four terms each (vpart)? */
static bool kernel_v4(const Kernel *k)
{
    return k->vbody || (k->vpart && lanes(k) > 1);
}

/* The test of the launch of k's _v4 kernel (k a kernel, or a row group's
 * first member), written to `o`: the buffers it needs 16-byte aligned,
 * ORed, each once: the outputs it stores as float4s (of a row group, the
 * stored members'), then what its float4s load.  Returns false where it
 * has no _v4 kernel or needs nothing aligned (a row group whose float4s
 * are all in shared memory: its one kernel has the _v4 loops). */
static bool v4_test(const Kernel *k, Sb *o)
{
    const PlanRowGroup *g = k->rows;
    int n = g ? g->nmembers : 1, cap = 0, nt = 0;
    if (!(g ? rows_v4(k) : kernel_v4(k)))
        return false;
    for (int j = 0; j < n; j++)
        cap += 1 + k[j].nvtensors;
    const IrTensor **ts = xmalloc((size_t)cap * sizeof *ts);
    for (int j = 0; j < n; j++)
        for (int i = -1; i < k[j].nvtensors; i++) {
            const IrTensor *t = i >= 0 ? k[j].vtensors[i] : k[j].out;
            if (i < 0 && !(k[j].vbody && (!g || g->stored[j])))
                continue;
            int m = 0;
            while (m < nt && ts[m] != t)
                m++;
            if (m == nt)
                ts[nt++] = t;
        }
    for (int m = 0; m < nt; m++)
        sb_printf(o, "%s(uintptr_t)p[%d]", m ? " | " : "", ts[m]->id);
    free(ts);
    return nt > 0;
}

/* A reduction of n lanes an element (a warp or a block, lanes()), NAME
 * plus `suffix`, whose lanes run `part`. */
static void write_lanes(Emit *em, const Kernel *k, int n, const char *suffix, const char *part)
{
    Sb *o = &em->out;
    const char *t = k->ity;
    bool maxmin = k->st->red == RED_MAX || k->st->red == RED_MIN || k->st->red == RED_PROD;
    if (*suffix)
        sb_puts(o, "/* the same, four consecutive terms a lane: 128-bit loads (launched\n"
                   "   where its buffers are 16-byte aligned) */\n");
    else
        sb_printf(o, "/* one %s per element, %" PRId64 " terms split across its lanes */\n",
                  n == 32 ? "warp" : "block", k->terms);
    sb_printf(o, "static __global__ void __launch_bounds__(%d)\n%s%s", CUDA_BLOCK, k->name,
              suffix);
    write_params(em, o, k);
    if (n == 32) {
        /* e is the same across a warp: the shuffles see all 32 lanes. */
        sb_puts(o, "    const int ein_lane = (int)threadIdx.x % 32, ein_nlanes = 32;\n");
        sb_printf(o, "    const %s stride = (%s)gridDim.x * %d;\n", t, t, CUDA_BLOCK / 32);
        sb_printf(o, "    for (%s e = (%s)blockIdx.x * %d + (%s)threadIdx.x / 32; "
                  "e < %" PRId64 "; e += stride) {\n", t, t, CUDA_BLOCK / 32, t, k->total);
    } else {
        sb_printf(o, "    __shared__ float ein_red[%d];\n", CUDA_BLOCK / 32);
        if (maxmin)
            sb_printf(o, "    __shared__ int ein_red_any[%d];\n", CUDA_BLOCK / 32);
        sb_printf(o, "    const int ein_lane = (int)threadIdx.x, ein_nlanes = %d;\n",
                  CUDA_BLOCK);
        /* e is the same across the block: every thread meets the barriers. */
        sb_printf(o, "    for (%s e = (%s)blockIdx.x; e < %" PRId64 "; e += (%s)gridDim.x) {\n",
                  t, t, k->total, t);
    }
    write_loopvars_of(o, k, k->ity, "e", 0, k->out->rank, 8);
    sb_indent(o, part, 8);
    write_combine(o, k, 8, 16);
    if (n == 32) {
        sb_puts(o, "        if (ein_lane == 0)\n");
        write_store(em, o, k, 12);
        sb_puts(o, "    }\n}\n\n");
        return;
    }
    /* block: the warps' partials combined by warp 0 */
    write_warps_combine(o, k, 8, CUDA_BLOCK / 32);
    write_store(em, o, k, 16);
    sb_puts(o, "        }\n"
               "        __syncthreads();   /* ein_red is read before the next element */\n"
               "    }\n}\n\n");
}

void cuda_write_kernel(Emit *em, const Kernel *k)
{
    if (k->rows) {
        if (k->row_member != 0)
            return;
        Sb test = {0};
        if (v4_test(k, &test)) {
            write_rows(em, k, false, "");
            write_rows(em, k, true, "_v4");
        } else {
            /* one kernel, with the _v4 loops where they need no test */
            write_rows(em, k, rows_v4(k), "");
        }
        sb_free(&test);
        return;
    }
    Sb *o = &em->out;
    int n = lanes(k);
    emit_block_comment(o, k->comment, 0);
    if (n > 1) {
        write_lanes(em, k, n, "", k->part);
        if (kernel_v4(k))
            write_lanes(em, k, n, "_v4", k->vpart);
        return;
    }
    sb_printf(o, "static __global__ void __launch_bounds__(%d)\n%s", CUDA_BLOCK, k->name);
    write_params(em, o, k);
    write_stride_loop(o, k->ity, k->total);
    write_loopvars_of(o, k, k->ity, "e", 0, k->out->rank, 8);
    sb_indent(o, k->body, 8);
    write_store(em, o, k, 8);
    sb_puts(o, "    }\n}\n\n");
    if (k->vbody)
        write_v4(em, k);
}

/* The launch of kernel k (NAME plus `suffix`) over `nblocks` blocks. */
static void write_launch_of(Emit *em, const Kernel *k, const char *suffix, int64_t nblocks,
                            const char *indent)
{
    Sb *o = &em->out;
    if (nblocks > CUDA_MAX_BLOCKS)
        nblocks = CUDA_MAX_BLOCKS;
    sb_printf(o, "%s%s%s<<<%" PRId64 ", %d, 0, stream>>>(", indent, k->name, suffix, nblocks,
              CUDA_BLOCK);
    /* The context's buffers are `void *`: C++ wants the casts. */
    for (int i = 0; i < k->nreads; i++)
        sb_printf(o, "(const %s *)p[%d], ", emit_ctype(k->reads[i]->elem), k->reads[i]->id);
    sb_printf(o, "(%s *)p[%d]);\n", emit_ctype(k->out->elem), k->out->id);
}

/* The launch of row group k's kernel (NAME plus `suffix`). */
static void write_rows_launch(Emit *em, const Kernel *k, const char *suffix, const char *indent)
{
    Sb *o = &em->out;
    const PlanRowGroup *g = k->rows;
    const Kernel *last = &k[g->nmembers - 1];
    const IrTensor **reads, **writes;
    int nw, nr = kernel_row_params(em, k, &reads, &writes, &nw);
    int64_t rows = 1;
    for (int d = 0; d < g->nrow; d++)
        rows *= last->out->shape[d];
    sb_printf(o, "%s%s%s<<<%" PRId64 ", %d, 0, stream>>>(", indent, last->name, suffix,
              rows < CUDA_MAX_BLOCKS ? rows : CUDA_MAX_BLOCKS, g->threads);
    for (int i = 0; i < nr; i++)
        sb_printf(o, "(const %s *)p[%d], ", emit_ctype(reads[i]->elem), reads[i]->id);
    for (int i = 0; i < nw; i++)
        sb_printf(o, "(%s *)p[%d]%s", emit_ctype(writes[i]->elem), writes[i]->id,
                  i + 1 < nw ? ", " : ");\n");
}

/* The launch of k's kernel (a row group's: its first member), or of its
 * _v4 kernel. */
static void write_launch_kind(Emit *em, const Kernel *k, bool v4, const char *indent)
{
    if (k->rows)
        write_rows_launch(em, k, v4 ? "_v4" : "", indent);
    else if (v4 && k->vbody)
        write_launch_of(em, k, "_v4", (k->total / 4 + CUDA_BLOCK - 1) / CUDA_BLOCK, indent);
    else
        write_launch_of(em, k, v4 ? "_v4" : "", blocks(k), indent);
}

void cuda_write_launch(Emit *em, const Kernel *k, const char *indent)
{
    Sb *o = &em->out;
    const PlanRowGroup *g = k->rows;
    Sb test = {0};
    if (!v4_test(k, &test)) {
        write_launch_kind(em, k, false, indent);
    } else {
        /* the _v4 kernel where its float4s are 16-byte aligned (the
         * caller's buffers need only be float-aligned) */
        const char *in = arena_printf(em->arena, "%s    ", indent);
        sb_printf(o, "%sif ((%s) %% 16 == 0) {\n", indent, sb_str(&test));
        write_launch_kind(em, k, true, in);
        sb_printf(o, "%s} else {\n", indent);
        write_launch_kind(em, k, false, in);
        sb_printf(o, "%s}\n", indent);
    }
    sb_free(&test);
    sb_printf(o, "%sif ((rc = ein_launched(ctx, \"%s\")) != 0)\n%s    return rc;\n",
              indent, g ? k[g->nmembers - 1].name : k->name, indent);
}
