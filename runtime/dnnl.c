/* dnnl.c - the C target's operators on oneDNN (the library PyTorch uses
 * on the CPU): convolutions of every kind, transposed convolutions and
 * matrix products, each with its post-ops (the plan's epilogue: bias,
 * scales and shifts, activations, a residual), a primitive made once
 * per operator when the context is created, weights reordered to the
 * primitive's layout once per weight change, and one workspace shared by
 * every operator (its activations in the primitive's layouts and its
 * scratchpad).  A convolution whose output only the next one reads can
 * hand it over in its own layout (spec.src_back: derive/search/handoff.c).  Pasted after dnnl_types.h when a program calls oneDNN.
 *
 * Functions return 0 or -1 with a message in `msg` that names the call
 * that failed; they never print.  Threads: oneDNN runs on the OpenMP
 * team of the calling thread (Debian's build uses the OpenMP runtime),
 * the same team as the generated kernels, and a primitive on as many
 * threads as OpenMP had when it was made, whatever the count when it
 * runs: so the operators come in sets, one per thread count a run uses
 * (ein_dnnl_use), which share their weights where the layouts are the
 * same. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include "dnnl_types.h" /* EMBED-SKIP */

#define EIN_DNNL_ALIGN 64

/* 0 on success, else -1 with msg = "CALL: STATUS". */
#define EIN_DNNL_TRY(msg, call)                                              \
    do {                                                                     \
        dnnl_status_t ein_st_ = (call);                                      \
        if (ein_st_ != dnnl_success)                                         \
            return ein_dnnl_failed(msg, #call, ein_st_);                     \
    } while (0)

RT_API int ein_dnnl_failed(char *msg, const char *call, dnnl_status_t st)
{
    static const char *const names[] = {
        "success", "out of memory", "invalid arguments", "unimplemented",
        "iterator ends", "runtime error", "not required", "invalid graph",
        "invalid graph op", "invalid shape", "invalid data type"};
    const char *name = (unsigned)st < sizeof names / sizeof *names ? names[st] : "error";
    int n = 0;
    while (call[n] && call[n] != '(')
        n++;
    snprintf(msg, 256, "oneDNN %.*s: %s (status %d)", n, call, name, (int)st);
    return -1;
}

RT_API size_t ein_dnnl_round_up(size_t n)
{
    return (n + EIN_DNNL_ALIGN - 1) / EIN_DNNL_ALIGN * EIN_DNNL_ALIGN;
}

/* A view's memory descriptor. */
RT_API int ein_dnnl_view_md(dnnl_memory_desc_t *md, const ein_dnnl_view *v, char *msg)
{
    dnnl_dims_t dims, strides;
    for (int i = 0; i < v->rank; i++) {
        dims[i] = v->dims[i];
        strides[i] = v->strides[i];
    }
    EIN_DNNL_TRY(msg, dnnl_memory_desc_init_by_strides(md, v->rank, dims, dnnl_f32, strides));
    return 0;
}

/* View v where it is dense (each dim of more than one element at its
 * packed row-major stride), else its dims packed row-major. */
RT_API int ein_dnnl_dense_md(dnnl_memory_desc_t *md, const ein_dnnl_view *v, char *msg)
{
    dnnl_dims_t dims, strides;
    dnnl_dim_t stride = 1;
    int dense = 1;
    for (int i = v->rank - 1; i >= 0; i--) {
        dims[i] = v->dims[i];
        strides[i] = stride;
        dense &= v->dims[i] == 1 || v->strides[i] == stride;
        stride *= v->dims[i];
    }
    if (dense)
        return ein_dnnl_view_md(md, v, msg);
    EIN_DNNL_TRY(msg, dnnl_memory_desc_init_by_strides(md, v->rank, dims, dnnl_f32, strides));
    return 0;
}

RT_API int ein_dnnl_any_md(dnnl_memory_desc_t *md, const ein_dnnl_view *v, char *msg)
{
    dnnl_dims_t dims;
    for (int i = 0; i < v->rank; i++)
        dims[i] = v->dims[i];
    EIN_DNNL_TRY(msg, dnnl_memory_desc_init_by_tag(md, v->rank, dims, dnnl_f32,
                                                   dnnl_format_tag_any));
    return 0;
}

/* Is post-op p a binary one whose operand has dst's full shape? */
RT_API int ein_dnnl_is_full(const ein_dnnl_spec *sp, const ein_dnnl_post *p)
{
    if (p->kind != EIN_POST_BINARY)
        return 0;
    for (int d = 0; d < p->src1.rank; d++)
        if (p->src1.dims[d] != sp->dst.dims[d])
            return 0;
    return 1;
}

/* The post-ops of `sp`.  A full-size binary operand (no dim broadcast)
 * takes the layout `full` (the primitive's dst layout: oneDNN's fast
 * kernels read such an operand only in dst's own layout); with
 * full == NULL such post-ops are left out, to learn what layout the
 * primitive wants for dst without them (ein_dnnl_create). */
RT_API int ein_dnnl_attr(dnnl_primitive_attr_t *attr, const ein_dnnl_spec *sp,
                         const dnnl_memory_desc_t *full, char *msg)
{
    dnnl_post_ops_t po;
    EIN_DNNL_TRY(msg, dnnl_primitive_attr_create(attr));
    EIN_DNNL_TRY(msg, dnnl_primitive_attr_set_scratchpad_mode(*attr, dnnl_scratchpad_mode_user));
    if (sp->npost == 0)
        return 0;
    EIN_DNNL_TRY(msg, dnnl_post_ops_create(&po));
    for (int i = 0; i < sp->npost; i++) {
        const ein_dnnl_post *p = &sp->post[i];
        dnnl_memory_desc_t md;
        switch (p->kind) {
        case EIN_POST_ELTWISE:
            EIN_DNNL_TRY(msg, dnnl_post_ops_append_eltwise(po, 1.0f, (dnnl_alg_kind_t)p->alg,
                                                           p->alpha, p->beta));
            break;
        case EIN_POST_SUM:
            EIN_DNNL_TRY(msg, dnnl_post_ops_append_sum(po, p->alpha));
            break;
        case EIN_POST_BINARY:
            if (ein_dnnl_is_full(sp, p) && !full && sp->kind != EIN_DNNL_MATMUL)
                break;
            /* a broadcast operand dense, as its dims lie packed: oneDNN
               2.6 reads a strided one (a per-channel q[f, 1] of a [F, 2]
               weight) as if it were dense; ein_dnnl_create reorders the
               view into it */
            if (ein_dnnl_is_full(sp, p) && full)
                md = *full;
            else if (ein_dnnl_dense_md(&md, &p->src1, msg))
                return -1;
            EIN_DNNL_TRY(msg, dnnl_post_ops_append_binary(po, (dnnl_alg_kind_t)p->alg, &md));
            break;
        default:
            snprintf(msg, 256, "oneDNN: post-op kind %d unknown", p->kind);
            return -1;
        }
    }
    EIN_DNNL_TRY(msg, dnnl_primitive_attr_set_post_ops(*attr, po));
    EIN_DNNL_TRY(msg, dnnl_post_ops_destroy(po));
    return 0;
}

/* The operation descriptor and primitive descriptor of `sp`; `full` as
 * in ein_dnnl_attr.  Convolutions leave the layouts of src, weights and
 * dst to the primitive; matrix products take src and dst as they are
 * (strided views are fast there) and the weights in the primitive's
 * layout when they are constant. */
RT_API int ein_dnnl_pd(dnnl_primitive_desc_t *pd, const ein_dnnl_spec *sp, dnnl_engine_t eng,
                       const dnnl_memory_desc_t *full, char *msg)
{
    dnnl_memory_desc_t src, wei, bias, dst;
    dnnl_primitive_attr_t attr;
    dnnl_status_t st;
    int conv = sp->kind != EIN_DNNL_MATMUL;
    if (conv ? ein_dnnl_any_md(&src, &sp->src, msg) : ein_dnnl_view_md(&src, &sp->src, msg))
        return -1;
    if ((conv || sp->wei_const) ? ein_dnnl_any_md(&wei, &sp->wei, msg)
                                : ein_dnnl_view_md(&wei, &sp->wei, msg))
        return -1;
    if (full)
        dst = *full;
    else if (conv ? ein_dnnl_any_md(&dst, &sp->dst, msg) : ein_dnnl_view_md(&dst, &sp->dst, msg))
        return -1;
    if (sp->has_bias && ein_dnnl_view_md(&bias, &sp->bias, msg))
        return -1;
    if (ein_dnnl_attr(&attr, sp, full, msg))
        return -1;
    if (sp->kind == EIN_DNNL_MATMUL) {
        dnnl_matmul_desc_t d;
        EIN_DNNL_TRY(msg, dnnl_matmul_desc_init(&d, &src, &wei, sp->has_bias ? &bias : NULL, &dst));
        st = dnnl_primitive_desc_create(pd, &d, attr, eng, NULL);
    } else {
        dnnl_convolution_desc_t cd;
        dnnl_deconvolution_desc_t dd;
        dnnl_dims_t strides = {sp->stride[0], sp->stride[1]};
        dnnl_dims_t dil = {sp->dilate[0], sp->dilate[1]};
        dnnl_dims_t pl = {sp->pad_l[0], sp->pad_l[1]}, pr = {sp->pad_r[0], sp->pad_r[1]};
        const dnnl_memory_desc_t *b = sp->has_bias ? &bias : NULL;
        if (sp->kind == EIN_DNNL_CONV) {
            EIN_DNNL_TRY(msg, dnnl_dilated_convolution_forward_desc_init(
                                  &cd, dnnl_forward_inference, dnnl_convolution_direct, &src, &wei,
                                  b, &dst, strides, dil, pl, pr));
            st = dnnl_primitive_desc_create(pd, &cd, attr, eng, NULL);
        } else {
            EIN_DNNL_TRY(msg, dnnl_dilated_deconvolution_forward_desc_init(
                                  &dd, dnnl_forward_inference, dnnl_deconvolution_direct, &src,
                                  &wei, b, &dst, strides, dil, pl, pr));
            st = dnnl_primitive_desc_create(pd, &dd, attr, eng, NULL);
        }
    }
    dnnl_primitive_attr_destroy(attr);
    if (st != dnnl_success)
        return ein_dnnl_failed(msg, "dnnl_primitive_desc_create()", st);
    return 0;
}

/* A memory object for `md` without a buffer (set at each run), and its
 * size in bytes. */
RT_API int ein_dnnl_mem(dnnl_memory_t *mem, const dnnl_memory_desc_t *md, dnnl_engine_t eng,
                        size_t *bytes, char *msg)
{
    EIN_DNNL_TRY(msg, dnnl_memory_create(mem, md, eng, DNNL_MEMORY_NONE));
    if (bytes)
        *bytes = dnnl_memory_desc_get_size(md);
    return 0;
}

/* A reorder from `from` to `to`; *r = NULL when they are the same layout
 * unless `copy` (two buffers of one layout). */
RT_API int ein_dnnl_reorder(dnnl_primitive_t *r, const dnnl_memory_desc_t *from,
                            const dnnl_memory_desc_t *to, dnnl_engine_t eng, int copy, char *msg)
{
    dnnl_primitive_desc_t pd;
    *r = NULL;
    if (!copy && dnnl_memory_desc_equal(from, to))
        return 0;
    EIN_DNNL_TRY(msg, dnnl_reorder_primitive_desc_create(&pd, from, eng, to, eng, NULL));
    dnnl_status_t st = dnnl_primitive_create(r, pd);
    dnnl_primitive_desc_destroy(pd);
    if (st != dnnl_success)
        return ein_dnnl_failed(msg, "dnnl_primitive_create()", st);
    return 0;
}

/* The bytes of a dense view's buffer. */
RT_API size_t ein_dnnl_dense_bytes(const ein_dnnl_view *v)
{
    size_t n = sizeof(float);
    for (int i = 0; i < v->rank; i++)
        n *= (size_t)v->dims[i];
    return n;
}

RT_API int ein_dnnl_has_full(const ein_dnnl_spec *sp)
{
    for (int i = 0; i < sp->npost; i++)
        if (ein_dnnl_is_full(sp, &sp->post[i]))
            return 1;
    return 0;
}

/* Make the operator `sp` on `dn`'s engine: the primitive, the reorders
 * around it and its memory objects; op->ws_bytes is what it needs of the
 * shared workspace.  `like`: NULL, or the same operator in another set,
 * whose weights op shares where their layouts are the same.  On failure
 * op holds what was made (ein_dnnl_free frees it). */
RT_API int ein_dnnl_create(ein_dnnl *dn, ein_dnnl_op *op, const ein_dnnl_spec *sp,
                           const ein_dnnl_op *like, char *msg)
{
    dnnl_primitive_desc_t pd;
    dnnl_memory_desc_t view;
    const dnnl_memory_desc_t *md;
    dnnl_engine_t eng = dn->eng;
    memset(op, 0, sizeof *op);
    op->spec = *sp;
    sp = &op->spec;
    op->sum_post = op->sum_arg = -1;
    for (int i = 0; i < sp->npost; i++)
        if (sp->post[i].kind == EIN_POST_SUM)
            op->sum_post = i;
    /* A convolution's fast kernels take a residual add as the sum post-op
     * (dst filled with the residual first), not as a full-size binary
     * operand (oneDNN 2.6 runs that on its reference kernel). */
    for (int i = 0; i < sp->npost && op->sum_post < 0; i++) {
        ein_dnnl_post *p = &op->spec.post[i];
        if (sp->kind != EIN_DNNL_MATMUL && p->alg == dnnl_binary_add && ein_dnnl_is_full(sp, p)) {
            p->kind = EIN_POST_SUM;
            p->alpha = 1.0f;
            op->sum_post = i;
        }
    }
    if (op->sum_post >= 0 && sp->post[op->sum_post].arg >= 0)
        op->sum_arg = sp->post[op->sum_post].arg;
    if (ein_dnnl_pd(&pd, sp, eng, NULL, msg))
        return -1;
    /* A full-size binary operand is read in dst's layout: the primitive
     * without it chose dst's layout; make it again with the operand and
     * dst in that layout. */
    if (sp->kind != EIN_DNNL_MATMUL && ein_dnnl_has_full(sp)) {
        dnnl_memory_desc_t dst = *dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
        dnnl_primitive_desc_destroy(pd);
        if (ein_dnnl_pd(&pd, sp, eng, &dst, msg))
            return -1;
    }
    dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &op->impl);
    dnnl_status_t st = dnnl_primitive_create(&op->prim, pd);
    if (st != dnnl_success) {
        dnnl_primitive_desc_destroy(pd);
        return ein_dnnl_failed(msg, "dnnl_primitive_create()", st);
    }
    int rc = 0;
    size_t ignored;
    /* src: the view, and the primitive's layout with a reorder */
    md = dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
    rc = rc || ein_dnnl_view_md(&view, &sp->src, msg) ||
         ein_dnnl_mem(&op->src_view, &view, eng, &ignored, msg) ||
         ein_dnnl_reorder(&op->src_in, &view, md, eng, 0, msg);
    if (!rc && op->src_in)
        rc = ein_dnnl_mem(&op->src_mem, md, eng, &op->src_bytes, msg);
    /* weights: reordered into memory of the operator's own when constant
       or in another layout */
    md = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    rc = rc || ein_dnnl_view_md(&view, &sp->wei, msg) ||
         ein_dnnl_mem(&op->wei_view, &view, eng, &ignored, msg) ||
         ein_dnnl_reorder(&op->wei_in, &view, md, eng, 0, msg);
    if (!rc && op->wei_in) {
        const dnnl_memory_desc_t *lmd = NULL;
        if (like && like->wei_mem)
            dnnl_memory_get_memory_desc(like->wei_mem, &lmd);
        if (lmd && dnnl_memory_desc_equal(lmd, md)) {
            op->wei_mem = like->wei_mem;
            op->wei_shared = 1;
        } else if (dnnl_memory_create(&op->wei_mem, md, eng, DNNL_MEMORY_ALLOCATE) !=
                   dnnl_success) {
            rc = ein_dnnl_failed(msg, "dnnl_memory_create()", dnnl_out_of_memory);
        }
    }
    if (!rc && sp->has_bias) {
        md = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 1);
        rc = ein_dnnl_mem(&op->bias_mem, md, eng, &ignored, msg);
    }
    /* dst: the view, and the primitive's layout with a reorder back (and
       one in, for the sum post-op) */
    md = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
    rc = rc || ein_dnnl_view_md(&view, &sp->dst, msg) ||
         ein_dnnl_mem(&op->dst_view, &view, eng, &ignored, msg) ||
         ein_dnnl_reorder(&op->dst_out, md, &view, eng, 0, msg);
    if (!rc && op->dst_out)
        rc = ein_dnnl_mem(&op->dst_mem, md, eng, &op->dst_bytes, msg);
    /* the sum adds to what dst holds: its operand, or dst's view */
    if (!rc && op->sum_post >= 0 && (op->sum_arg >= 0 || op->dst_out)) {
        dnnl_memory_desc_t from = view;
        if (op->sum_arg >= 0)
            rc = ein_dnnl_view_md(&from, &sp->post[op->sum_post].src1, msg) ||
                 ein_dnnl_mem(&op->sum_view, &from, eng, &ignored, msg);
        rc = rc || ein_dnnl_reorder(&op->sum_in, &from, md, eng, op->sum_arg >= 0, msg);
    }
    /* binary operands: full-size ones in dst's layout */
    for (int i = 0; !rc && i < sp->npost; i++) {
        const ein_dnnl_post *p = &sp->post[i];
        if (p->kind != EIN_POST_BINARY)
            continue;
        md = dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md,
                                          DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | DNNL_ARG_SRC_1);
        rc = ein_dnnl_view_md(&view, &p->src1, msg) ||
             ein_dnnl_mem(&op->src1_view[i], &view, eng, &ignored, msg) ||
             ein_dnnl_reorder(&op->src1_in[i], &view, md, eng, 0, msg);
        if (!rc && op->src1_in[i])
            rc = ein_dnnl_mem(&op->src1_mem[i], md, eng, &op->src1_bytes[i], msg);
    }
    /* src straight from the operator before, in the layout both want,
       in the buffer of the tensor between them where that layout fits */
    if (!rc && sp->src_back > 0 && op->src_in) {
        ein_dnnl_op *from = op - sp->src_back;
        const dnnl_memory_desc_t *fmd = NULL;
        md = dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
        if (from->dst_out && from->sum_post < 0)
            dnnl_memory_get_memory_desc(from->dst_mem, &fmd);
        if (fmd && dnnl_memory_desc_equal(fmd, md) &&
            dnnl_memory_desc_get_size(md) <= ein_dnnl_dense_bytes(&sp->src)) {
            rc = ein_dnnl_mem(&op->src_kept, md, eng, NULL, msg) ||
                 (!from->keep && ein_dnnl_mem(&from->keep, md, eng, NULL, msg));
        }
    }
    if (!rc) {
        md = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
        op->scratch_bytes = md ? dnnl_memory_desc_get_size(md) : 0;
        if (op->scratch_bytes)
            rc = ein_dnnl_mem(&op->scratch, md, eng, NULL, msg);
    }
    dnnl_primitive_desc_destroy(pd);
    if (rc)
        return -1;
    op->ws_bytes = ein_dnnl_round_up(op->src_bytes) + ein_dnnl_round_up(op->dst_bytes) +
                   ein_dnnl_round_up(op->scratch_bytes);
    for (int i = 0; i < sp->npost; i++)
        op->ws_bytes += ein_dnnl_round_up(op->src1_bytes[i]);
    if (op->ws_bytes > dn->ws_bytes)
        dn->ws_bytes = op->ws_bytes;
    return 0;
}

RT_API void ein_dnnl_free(ein_dnnl_op *op)
{
    dnnl_primitive_t prims[] = {op->prim, op->src_in, op->dst_out, op->sum_in, op->wei_in};
    dnnl_memory_t mems[] = {op->src_view, op->src_mem, op->wei_view,
                            op->wei_shared ? NULL : op->wei_mem, op->bias_mem,
                            op->dst_view, op->dst_mem, op->sum_view, op->scratch, op->keep,
                            op->src_kept};
    for (size_t i = 0; i < sizeof prims / sizeof *prims; i++)
        if (prims[i])
            dnnl_primitive_destroy(prims[i]);
    for (size_t i = 0; i < sizeof mems / sizeof *mems; i++)
        if (mems[i])
            dnnl_memory_destroy(mems[i]);
    for (int i = 0; i < EIN_DNNL_MAXPOST; i++) {
        if (op->src1_in[i])
            dnnl_primitive_destroy(op->src1_in[i]);
        if (op->src1_view[i])
            dnnl_memory_destroy(op->src1_view[i]);
        if (op->src1_mem[i])
            dnnl_memory_destroy(op->src1_mem[i]);
    }
    memset(op, 0, sizeof *op);
}

/* The number of threads a primitive made now runs on. */
RT_API int ein_dnnl_threads_now(void)
{
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

/* The engine, the stream, and set[0] of `nops` operators, for the
 * current thread count, for the caller to make one by one
 * (ein_dnnl_create); the workspace comes after every operator is made
 * (ein_dnnl_alloc). */
RT_API int ein_dnnl_open(ein_dnnl *dn, int nops, char *msg)
{
    memset(dn, 0, sizeof *dn);
    EIN_DNNL_TRY(msg, dnnl_engine_create(&dn->eng, dnnl_cpu, 0));
    EIN_DNNL_TRY(msg, dnnl_stream_create(&dn->stream, dn->eng, dnnl_stream_default_flags));
    dn->nops = nops;
    if (nops > 0) {
        dn->set[0] = (ein_dnnl_op *)calloc((size_t)nops, sizeof *dn->set[0]);
        if (!dn->set[0]) {
            snprintf(msg, 256, "oneDNN operators: out of memory");
            return -1;
        }
        dn->nthr[0] = ein_dnnl_threads_now();
        dn->nsets = 1;
    }
    return 0;
}

RT_API void ein_dnnl_free_set(ein_dnnl *dn, int k)
{
    if (!dn->set[k])
        return;
    for (int i = 0; i < dn->nops; i++)
        ein_dnnl_free(&dn->set[k][i]);
    free(dn->set[k]);
    dn->set[k] = NULL;
}

/* The workspace, for every operator made so far (again if one more is
 * made later: the old one stays where there is no memory for it). */
RT_API int ein_dnnl_alloc(ein_dnnl *dn, char *msg)
{
    if (dn->ws_bytes == 0)
        return 0;
    /* C99 has no aligned_alloc: align by hand */
    void *raw = malloc(dn->ws_bytes + EIN_DNNL_ALIGN);
    if (!raw) {
        snprintf(msg, 256, "oneDNN workspace of %lu bytes: out of memory",
                 (unsigned long)dn->ws_bytes);
        return -1;
    }
    free(dn->ws_raw);
    dn->ws_raw = raw;
    dn->ws = (char *)raw + (EIN_DNNL_ALIGN - (uintptr_t)raw % EIN_DNNL_ALIGN);
    return 0;
}

/* The set of operators for a run on `nthr` threads (OpenMP's count set
 * already), made from set[0]'s specs if there is none yet; *ops = it,
 * *made = 1 when it is new (its first run reorders the weights).  The
 * sets past EIN_DNNL_SETS replace the latest but set[0]. */
RT_API int ein_dnnl_use(ein_dnnl *dn, int nthr, ein_dnnl_op **ops, int *made, char *msg)
{
    *made = 0;
    for (int k = 0; k < dn->nsets; k++)
        if (dn->nthr[k] == nthr) {
            *ops = dn->set[k];
            return 0;
        }
    int k = dn->nsets < EIN_DNNL_SETS ? dn->nsets++ : EIN_DNNL_SETS - 1;
    size_t ws_bytes = dn->ws_bytes;
    ein_dnnl_free_set(dn, k);
    dn->nthr[k] = nthr;
    dn->set[k] = (ein_dnnl_op *)calloc((size_t)dn->nops, sizeof *dn->set[k]);
    if (!dn->set[k]) {
        snprintf(msg, 256, "oneDNN operators: out of memory");
        goto fail;
    }
    for (int i = 0; i < dn->nops; i++)
        if (ein_dnnl_create(dn, &dn->set[k][i], &dn->set[0][i].spec, &dn->set[0][i], msg))
            goto fail;
    if (ein_dnnl_alloc(dn, msg))
        goto fail;
    *ops = dn->set[k];
    *made = 1;
    return 0;
fail:   /* as it was, but for the set it replaced */
    ein_dnnl_free_set(dn, k);
    dn->nsets = k;
    dn->ws_bytes = ws_bytes;
    return -1;
}

/* New weights: every set's operators reorder theirs at their next run. */
RT_API void ein_dnnl_weights_changed(ein_dnnl *dn)
{
    for (int k = 0; k < dn->nsets; k++)
        for (int i = 0; i < dn->nops; i++)
            dn->set[k][i].wei_ready = 0;
}

RT_API void ein_dnnl_close(ein_dnnl *dn)
{
    for (int k = dn->nsets - 1; k >= 0; k--)
        ein_dnnl_free_set(dn, k);
    if (dn->stream)
        dnnl_stream_destroy(dn->stream);
    if (dn->eng)
        dnnl_engine_destroy(dn->eng);
    free(dn->ws_raw);
    memset(dn, 0, sizeof *dn);
}

RT_API int ein_dnnl_set(dnnl_memory_t mem, const void *base, const ein_dnnl_view *v, char *msg)
{
    const float *p = (const float *)base + (v ? v->offset : 0);
    EIN_DNNL_TRY(msg, dnnl_memory_set_data_handle(mem, (void *)p));
    return 0;
}

RT_API int ein_dnnl_exec2(dnnl_primitive_t r, dnnl_stream_t s, dnnl_memory_t from,
                          dnnl_memory_t to, char *msg)
{
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
    EIN_DNNL_TRY(msg, dnnl_primitive_execute(r, s, 2, args));
    return 0;
}

/* Weights into the primitive's layout, from the buffer `wei` (the view
 * says where in it): once per weight change for constant weights, on
 * every run for others (ein_dnnl_run does that). */
RT_API int ein_dnnl_load(ein_dnnl *dn, ein_dnnl_op *op, const void *wei, char *msg)
{
    if (!op->wei_in) {
        op->wei_ready = 1;
        return 0;
    }
    if (ein_dnnl_set(op->wei_view, wei, &op->spec.wei, msg) ||
        ein_dnnl_exec2(op->wei_in, dn->stream, op->wei_view, op->wei_mem, msg))
        return -1;
    EIN_DNNL_TRY(msg, dnnl_stream_wait(dn->stream));
    op->wei_ready = 1;
    return 0;
}

/* Run the operator: dst = post-ops(op(src, wei) [+ bias]).  src1[k] is
 * the buffer of the binary post-op whose `arg` is k.  The buffers are
 * the context's tensors; the views place the operands in them. */
RT_API int ein_dnnl_run(ein_dnnl *dn, ein_dnnl_op *op, const void *src, const void *wei,
                        const void *bias, void *dst, const void *const *src1, char *msg)
{
    const ein_dnnl_spec *sp = &op->spec;
    dnnl_stream_t s = dn->stream;
    dnnl_exec_arg_t args[5 + EIN_DNNL_MAXPOST];
    int n = 0;
    char *ws = (char *)dn->ws;
    if (!sp->wei_const || !op->wei_ready) {
        if (ein_dnnl_load(dn, op, wei, msg))
            return -1;
        op->wei_ready = sp->wei_const;
    }
    if (ein_dnnl_set(op->src_kept ? op->src_kept : op->src_view, src, &sp->src, msg))
        return -1;
    if (op->src_in && !op->src_kept) {
        if (ein_dnnl_set(op->src_mem, ws, NULL, msg) ||
            ein_dnnl_exec2(op->src_in, s, op->src_view, op->src_mem, msg))
            return -1;
        ws += ein_dnnl_round_up(op->src_bytes);
    }
    args[n].arg = DNNL_ARG_SRC;
    args[n++].memory = op->src_kept ? op->src_kept : op->src_in ? op->src_mem : op->src_view;
    if (!op->wei_in && ein_dnnl_set(op->wei_view, wei, &sp->wei, msg))
        return -1;
    args[n].arg = DNNL_ARG_WEIGHTS;
    args[n++].memory = op->wei_in ? op->wei_mem : op->wei_view;
    if (sp->has_bias) {
        if (ein_dnnl_set(op->bias_mem, bias, &sp->bias, msg))
            return -1;
        args[n].arg = DNNL_ARG_BIAS;
        args[n++].memory = op->bias_mem;
    }
    if (ein_dnnl_set(op->keep ? op->keep : op->dst_view, dst, &sp->dst, msg))
        return -1;
    op->kept = op->keep != NULL;
    if (op->dst_out && !op->keep) {
        if (ein_dnnl_set(op->dst_mem, ws, NULL, msg))
            return -1;
        ws += ein_dnnl_round_up(op->dst_bytes);
    }
    /* the sum post-op adds to what dst holds: fill it */
    if (op->sum_arg >= 0 &&
        ein_dnnl_set(op->sum_view, src1[op->sum_arg], &sp->post[op->sum_post].src1, msg))
        return -1;
    if (op->sum_in && !(op->sum_arg >= 0 && !op->dst_out &&
                        (const float *)src1[op->sum_arg] + sp->post[op->sum_post].src1.offset ==
                            (const float *)dst + sp->dst.offset) &&
        ein_dnnl_exec2(op->sum_in, s, op->sum_arg >= 0 ? op->sum_view : op->dst_view,
                       op->dst_out ? op->dst_mem : op->dst_view, msg))
        return -1;
    args[n].arg = DNNL_ARG_DST;
    args[n++].memory = op->keep ? op->keep : op->dst_out ? op->dst_mem : op->dst_view;
    for (int i = 0; i < sp->npost; i++) {
        const ein_dnnl_post *p = &sp->post[i];
        if (p->kind != EIN_POST_BINARY)
            continue;
        if (ein_dnnl_set(op->src1_view[i], src1[p->arg], &p->src1, msg))
            return -1;
        if (op->src1_in[i]) {
            if (ein_dnnl_set(op->src1_mem[i], ws, NULL, msg) ||
                ein_dnnl_exec2(op->src1_in[i], s, op->src1_view[i], op->src1_mem[i], msg))
                return -1;
            ws += ein_dnnl_round_up(op->src1_bytes[i]);
        }
        args[n].arg = DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | DNNL_ARG_SRC_1;
        args[n++].memory = op->src1_in[i] ? op->src1_mem[i] : op->src1_view[i];
    }
    if (op->scratch_bytes) {
        if (ein_dnnl_set(op->scratch, ws, NULL, msg))
            return -1;
        args[n].arg = DNNL_ARG_SCRATCHPAD;
        args[n++].memory = op->scratch;
    }
    EIN_DNNL_TRY(msg, dnnl_primitive_execute(op->prim, s, n, args));
    if (op->dst_out && !op->keep && ein_dnnl_exec2(op->dst_out, s, op->dst_mem, op->dst_view, msg))
        return -1;
    EIN_DNNL_TRY(msg, dnnl_stream_wait(s));
    return 0;
}

/* The buffer `dst` of an operator that keeps it in the primitive's layout
 * for the next one, into einc's layout (a caller reading the tensor):
 * reordered into the workspace, then copied back.  Once after a run. */
RT_API int ein_dnnl_fetch(ein_dnnl *dn, ein_dnnl_op *op, void *dst, char *msg)
{
    if (!op->kept)
        return 0;
    if (ein_dnnl_set(op->keep, dst, &op->spec.dst, msg) ||
        ein_dnnl_set(op->dst_view, dn->ws, NULL, msg) ||
        ein_dnnl_exec2(op->dst_out, dn->stream, op->keep, op->dst_view, msg))
        return -1;
    EIN_DNNL_TRY(msg, dnnl_stream_wait(dn->stream));
    memcpy((float *)dst + op->spec.dst.offset, dn->ws, ein_dnnl_dense_bytes(&op->spec.dst));
    op->kept = 0;
    return 0;
}
