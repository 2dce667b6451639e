/* match.c - instantiation through an iterator mapping table.
 *
 * For a stage L<loops> Σ<sums> { A[..] * B[..] } every iterator gets a row:
 * which operands index it (A, B, and the output for loop iterators), in
 * which dimension, with which coefficient.  A pattern is a condition on
 * the rows:
 *
 *   GEMM        batch: A B O   m: A O   n: B O   k: A B (summed)
 *               and each group flattens to one strided dimension, the
 *               batch maybe to two (batch and heads)
 *   Conv2d      x[n, c, st*h + dil*r - pad, st*w + dil*s - pad] * k[f, c, r, s]
 *   ConvT2d     x[n, c, (h + pad - r) / st, ..] * k[c, f, r, s]
 *               | (h + pad - r) % st == 0, ..
 *   G2BMM       q[b, i, d] * k[b, i + dil*j - dil*w, d]   over L<b, i, j> Σ<d>
 *   GBMM        s[b, i, j] * v[b, i + dil*j - dil*w, d]   over L<b, i, d> Σ<j>
 *               each operand any view with columns of stride 1, k and v
 *               maybe select(0 <= row < m, .., 0) (match_band)
 *
 * Nothing here looks at particular sizes: any shape whose rows fit a
 * pattern matches it. */
#include "config.h"
#include "match.h"

#include <string.h>

const char *op_kind_name(OpKind k)
{
    static const char *const names[] = {
        [OPK_MATMUL] = "matmul", [OPK_BATCH_MATMUL] = "batch_matmul",
        [OPK_CONV2D] = "conv2d", [OPK_CONV_TRANSPOSE2D] = "conv_transpose2d",
        [OPK_G2BMM] = "g2bmm", [OPK_GBMM] = "gbmm", [OPK_KERNEL] = "kernel",
    };
    return (unsigned)k < sizeof names / sizeof *names ? names[k] : "?";
}

int64_t match_band_cols(const OpMatch *m, int x)
{
    if (x == 2)
        return m->kind == OPK_G2BMM ? 2 * m->gw + 1 : m->gk;
    return m->kind == OPK_GBMM && x == 0 ? 2 * m->gw + 1 : m->gk;
}

void match_band_dense(const OpMatch *m, int x, BandView *v)
{
    int64_t cols = match_band_cols(m, x);
    *v = (BandView){.ld = cols, .stride = m->gb > 1 ? m->gm * cols : 0, .split = 1};
}

static bool band_view_equal(const BandView *a, const BandView *b)
{
    return a->ld == b->ld && a->stride == b->stride && a->split == b->split &&
           a->sstride == b->sstride && a->off == b->off;
}

int match_dims(const OpMatch *m, OpDim *out)
{
    int n = 0;
#define DIM(nm, v) (out[n++] = (OpDim){nm, (int64_t)(v), false})
#define FLAG(nm, v) (out[n++] = (OpDim){nm, (v) ? 1 : 0, true})
    switch (m->kind) {
    case OPK_MATMUL: case OPK_BATCH_MATMUL:
        DIM("m", m->m); DIM("n", m->n); DIM("k", m->k); DIM("batch", m->batch ? m->batch : 1);
        FLAG("trans_a", m->trans_a); FLAG("trans_b", m->trans_b); FLAG("trans_c", m->out_nm);
        DIM("lda", m->lda); DIM("ldb", m->ldb); DIM("ldc", m->ldc);
        if (m->split > 1) {
            DIM("split", m->split); DIM("sstride_a", m->sstride_a);
            DIM("sstride_b", m->sstride_b); DIM("sstride_c", m->sstride_c);
        }
        break;
    case OPK_CONV2D: case OPK_CONV_TRANSPOSE2D:
        DIM("n", m->cn); DIM("c", m->c); DIM("h", m->h); DIM("w", m->w); DIM("f", m->f);
        DIM("r", m->r); DIM("s", m->s); DIM("stride", m->stride);
        DIM("dilation", m->dilation); DIM("pad", m->pad); DIM("groups", m->groups);
        if (m->pad_w != m->pad)
            DIM("pad_w", m->pad_w);
        if (m->out_pad)
            DIM("output_pad", m->out_pad);
        break;
    case OPK_G2BMM: case OPK_GBMM:
        DIM("b", m->gb); DIM("m", m->gm); DIM("w", m->gw); DIM("k", m->gk);
        DIM("dilation", m->gdil);
        for (int x = 0; x < 2; x++) {
            static const char *const names[2][5] = {
                {"lda", "stride_a", "split_a", "sstride_a", "off_a"},
                {"ldb", "stride_b", "split_b", "sstride_b", "off_b"}};
            const BandView *v = &m->gv[x];
            BandView dense;
            match_band_dense(m, x, &dense);
            if (band_view_equal(v, &dense))
                continue;
            DIM(names[x][0], v->ld); DIM(names[x][1], v->stride);
            if (v->split > 1) {
                DIM(names[x][2], v->split); DIM(names[x][3], v->sstride);
            }
            DIM(names[x][4], v->off);
        }
        break;
    case OPK_KERNEL:
        break;
    }
#undef DIM
#undef FLAG
    return n;
}

/* ---- the iterator table ---------------------------------------------- */

#define MAXV MATCH_MAX_VARS     /* iterators of one stage we handle */
#define MAXD MATCH_MAX_DIMS     /* dimensions of one operand or the output */

typedef struct Row {
    int var;
    int64_t lo, hi;
    bool loop;
    int out_pos;                /* position among the loops, or -1 */
} Row;

typedef struct Table {
    Row rows[MAXV];
    int n;
} Table;

static bool table_build(const Stage *s, Table *t)
{
    if (s->nloops + s->nsums > MAXV)
        return false;
    t->n = 0;
    for (int i = 0; i < s->nloops; i++)
        t->rows[t->n++] = (Row){s->loops[i].id, s->loops[i].lo, s->loops[i].hi, true, i};
    for (int i = 0; i < s->nsums; i++)
        t->rows[t->n++] = (Row){s->sums[i].id, s->sums[i].lo, s->sums[i].hi, false, -1};
    return true;
}

static const Row *row_of(const Table *t, int var)
{
    for (int i = 0; i < t->n; i++)
        if (t->rows[i].var == var)
            return &t->rows[i];
    return NULL;
}

static int64_t extent(const Row *r)
{
    return r->hi - r->lo;
}

/* A dimension indexed by one iterator with coefficient 1 plus a constant:
 * the only kind a strided view can express. */
static bool plain(const Ix *ix, int *var, int64_t *c)
{
    if (ix->n == 1 && ix->t[0].kind == IX_VAR && ix->t[0].coef == 1) {
        *var = ix->t[0].var;
        *c = ix->c;
        return true;
    }
    return false;
}

/* The two factors of a summed product body. */
static bool product_of_two(const Stage *s, const IExpr **a, const IExpr **b)
{
    const IExpr *e = s->body;
    if (s->red != RED_SUM || e->kind != IE_MUL)
        return false;
    *a = e->bin.a;
    *b = e->bin.b;
    return true;
}

static bool tensor_read(const IExpr *e)
{
    return e->kind == IE_ACCESS && e->access.tensor;
}

/* ---- GEMMs --------------------------------------------------------------- */

enum { G_BATCH, G_M, G_N, G_K, NGROUPS };

/* One operand (or the output) seen as strided axes: one per tensor
 * dimension indexed by one iterator, several where a dimension's index
 * splits into iterators (`n*64 + e`, e below 64: two axes of strides 64
 * and 1 times the dimension's), in memory order; none for a dimension
 * read at a constant, whose offset goes to `base`. */
#define MAXA (MAXV + MAXD)
typedef struct View {
    int rank;                   /* axes */
    int64_t stride[MAXA];
    int var[MAXA];              /* iterator of each axis */
    int64_t base;               /* element offset of the constants */
} View;

/* A dimension's index as axes: iterators with positive coefficients plus
 * a constant, each coefficient at least the next smaller one times that
 * iterator's extent (no two elements alike), in bounds over the
 * iterators' ranges.  Appends to v with the dimension's stride `ds`. */
static bool split_dim(const Ix *ix, const Table *t, int64_t size, int64_t ds, View *v)
{
    int64_t lo = ix->c, hi = ix->c;
    int at = v->rank;
    if (ix->n == 0 || ix->n > MAXV || v->rank + ix->n > MAXA)
        return false;
    for (int i = 0; i < ix->n; i++) {
        const IxTerm *x = &ix->t[i];
        const Row *r = x->kind == IX_VAR && x->coef > 0 ? row_of(t, x->var) : NULL;
        if (!r || r->hi <= r->lo)
            return false;
        /* checked: a subscript's coefficients may be anything */
        int64_t a, b;
        if (!i64_mul(x->coef, r->lo, &a) || !i64_mul(x->coef, r->hi - 1, &b) ||
            !i64_add(lo, a, &lo) || !i64_add(hi, b, &hi))
            return false;
        /* insert by decreasing coefficient */
        int k = v->rank++;
        while (k > at && v->stride[k - 1] < x->coef) {
            v->stride[k] = v->stride[k - 1];
            v->var[k] = v->var[k - 1];
            k--;
        }
        v->stride[k] = x->coef;
        v->var[k] = x->var;
    }
    if (lo < 0 || hi >= size)
        return false;
    int64_t span, c;
    for (int k = at; k + 1 < v->rank; k++)
        if (!i64_mul(v->stride[k + 1], extent(row_of(t, v->var[k + 1])), &span) ||
            v->stride[k] < span)
            return false;
    for (int k = at; k < v->rank; k++)
        if (!i64_mul(v->stride[k], ds, &v->stride[k]))
            return false;
    if (!i64_mul(ix->c, ds, &c) || !i64_add(v->base, c, &v->base))
        return false;
    return true;
}

/* Read an access as a view: every dim a constant or split_dim's, in
 * bounds over the iterator ranges, each iterator in at most one axis. */
static bool view_access(const IExpr *e, const Table *t, View *v)
{
    const IrTensor *T = e->access.tensor;
    if (T->rank > MAXD || e->access.nidx != T->rank)
        return false;
    v->rank = 0;
    v->base = 0;
    int64_t ds = 1;
    int64_t dstride[MAXD];
    for (int d = T->rank - 1; d >= 0; d--) {
        dstride[d] = ds;
        ds *= T->shape[d];
    }
    for (int d = 0; d < T->rank; d++) {
        int64_t c;
        if (ix_is_const(e->access.idx[d], &c)) {
            if (c < 0 || c >= T->shape[d])
                return false;
            v->base += c * dstride[d];
            continue;
        }
        if (!split_dim(e->access.idx[d], t, T->shape[d], dstride[d], v))
            return false;
    }
    for (int a = 0; a < v->rank; a++)
        for (int k = 0; k < a; k++)
            if (v->var[k] == v->var[a])
                return false;
    return true;
}

/* The output of a stage is laid out over its loop ranges, in loop order;
 * false past MAXD dims. */
static bool view_output(const Stage *s, View *v)
{
    if (s->nloops > MAXD)
        return false;
    v->rank = s->nloops;
    v->base = 0;
    int64_t st = 1;
    for (int d = s->nloops - 1; d >= 0; d--) {
        v->var[d] = s->loops[d].id;
        v->stride[d] = st;
        st *= s->loops[d].hi - s->loops[d].lo;
    }
    return true;
}

/* Element offset of the first element a view reads. */
static int64_t view_base(const View *v, const Table *t)
{
    int64_t off = v->base;
    for (int a = 0; a < v->rank; a++)
        off += row_of(t, v->var[a])->lo * v->stride[a];
    return off;
}

/* The leading dimension of a matrix whose rows have stride `rows` (0 for
 * a single row) and `cols` columns. */
static int64_t lead(int64_t rows, int64_t cols)
{
    return rows > 0 ? rows : (cols > 0 ? cols : 1);
}

static int dim_of(const View *v, int var)
{
    for (int d = 0; d < v->rank; d++)
        if (v->var[d] == var)
            return d;
    return -1;
}

/* The axes of `v` indexed by the iterators of one group, in memory order,
 * into dims; returns how many.  Iterators of extent 1 do not count. */
static int group_axes(const View *v, const Table *t, const int *gvars, int ng, int *dims)
{
    int nd = 0;
    for (int d = 0; d < v->rank; d++)
        for (int i = 0; i < ng; i++)
            if (v->var[d] == gvars[i] && extent(row_of(t, gvars[i])) > 1)
                dims[nd++] = d;
    return nd;
}

/* The group's axes of v, in memory order (its iterators into order, -1
 * after the last), flatten into one dimension of stride *st: each axis's
 * stride is the next one's times its iterator's extent. */
static bool flatten(const View *v, const Table *t, const int *gvars, int ng,
                    int *order, int64_t *st)
{
    int dims[MAXA], nd = group_axes(v, t, gvars, ng, dims);
    for (int i = 0; i + 1 < nd; i++) {
        const Row *next = row_of(t, v->var[dims[i + 1]]);
        if (v->stride[dims[i]] != v->stride[dims[i + 1]] * extent(next))
            return false;
    }
    for (int i = 0; i < nd; i++)
        order[i] = v->var[dims[i]];
    order[nd] = -1;
    *st = nd ? v->stride[dims[nd - 1]] : 0;
    return true;
}

static bool same_order(const int *a, const int *b)
{
    for (int i = 0;; i++) {
        if (a[i] != b[i])
            return false;
        if (a[i] < 0)
            return true;
    }
}

/* The batch of a GEMM over the views of A, B and the output (vs[3]): its
 * iterators, in the output's memory order, flatten into one stride in
 * each view, or into two: an outer and an inner batch of `split`
 * matrices (batch and heads, the heads split out of a feature dimension
 * or a sequence's residue classes), cut at one place the same for the
 * three views, each level one stride in each (the two levels in either
 * memory order).  st[x] and sst[x]: view x's outer and inner stride. */
static bool batch_axes(const View *vs, const Table *t, const int *gvars, int ng,
                       int64_t *st, int64_t *sst, int64_t *split)
{
    int order[MAXA], nd = group_axes(&vs[2], t, gvars, ng, order), cut = -1;
    int64_t stride[3][MAXA];
    for (int i = 0; i < nd; i++)
        order[i] = vs[2].var[order[i]];
    for (int x = 0; x < 3; x++) {
        for (int i = 0; i < nd; i++) {
            int d = dim_of(&vs[x], order[i]);
            if (d < 0)
                return false;
            stride[x][i] = vs[x].stride[d];
        }
        for (int i = 0; i + 1 < nd; i++)
            if (stride[x][i] != stride[x][i + 1] * extent(row_of(t, order[i + 1]))) {
                if (cut >= 0 && cut != i)
                    return false;   /* a third level */
                cut = i;
            }
    }
    *split = 1;
    for (int i = cut + 1; cut >= 0 && i < nd; i++)
        *split *= extent(row_of(t, order[i]));
    for (int x = 0; x < 3; x++) {
        st[x] = nd ? stride[x][cut >= 0 ? cut : nd - 1] : 0;
        sst[x] = cut >= 0 ? stride[x][nd - 1] : 0;
    }
    return true;
}

static bool match_gemm(const Stage *s, const Table *t, const IExpr *ea,
                       const IExpr *eb, OpMatch *m)
{
    View va, vb, vo;
    if (s->nguards || !view_access(ea, t, &va) || !view_access(eb, t, &vb) ||
        !view_output(s, &vo))
        return false;
    int group[NGROUPS][MAXV], ng[NGROUPS] = {0};
    int64_t size[NGROUPS] = {1, 1, 1, 1};
    for (int i = 0; i < t->n; i++) {
        const Row *r = &t->rows[i];
        bool in_a = dim_of(&va, r->var) >= 0, in_b = dim_of(&vb, r->var) >= 0;
        int g = r->loop ? (in_a && in_b ? G_BATCH : in_a ? G_M : in_b ? G_N : -1)
                        : (in_a && in_b ? G_K : -1);
        if (g < 0) {
            if (extent(r) == 1 && r->loop)
                continue;       /* a loop of extent 1 read by neither */
            return false;       /* broadcast or a one-sided sum */
        }
        group[g][ng[g]++] = r->var;
        size[g] *= extent(r);
    }
    /* Each group flattens in every view it appears in, in one order; the
     * batch may take two strides. */
    int oa[NGROUPS][MAXV + 1], ob[NGROUPS][MAXV + 1], oo[NGROUPS][MAXV + 1];
    int64_t sa[NGROUPS], sb[NGROUPS], so[NGROUPS];
    for (int g = G_M; g < NGROUPS; g++) {
        if (!flatten(&va, t, group[g], ng[g], oa[g], &sa[g]) ||
            !flatten(&vb, t, group[g], ng[g], ob[g], &sb[g]) ||
            !flatten(&vo, t, group[g], ng[g], oo[g], &so[g]))
            return false;
    }
    View vs[3] = {va, vb, vo};
    int64_t bst[3], bsst[3], split;
    if (!batch_axes(vs, t, group[G_BATCH], ng[G_BATCH], bst, bsst, &split) ||
        !same_order(oa[G_M], oo[G_M]) || !same_order(ob[G_N], oo[G_N]) ||
        !same_order(oa[G_K], ob[G_K]))
        return false;
    /* Matrices need a unit stride on one side. */
    bool a_mk = size[G_K] == 1 || sa[G_K] == 1, a_km = size[G_M] == 1 || sa[G_M] == 1;
    bool b_kn = size[G_N] == 1 || sb[G_N] == 1, b_nk = size[G_K] == 1 || sb[G_K] == 1;
    bool o_mn = size[G_N] == 1 || so[G_N] == 1, o_nm = size[G_M] == 1 || so[G_M] == 1;
    if (!(a_mk || a_km) || !(b_kn || b_nk) || !(o_mn || o_nm) ||
        size[G_M] * size[G_N] * size[G_K] <= 1)
        return false;
    memset(m, 0, sizeof *m);
    m->kind = size[G_BATCH] > 1 ? OPK_BATCH_MATMUL : OPK_MATMUL;
    m->in[0] = ea->access.tensor;
    m->in[1] = eb->access.tensor;
    m->m = size[G_M];
    m->n = size[G_N];
    m->k = size[G_K];
    m->batch = size[G_BATCH];
    m->trans_a = !a_mk;
    m->trans_b = !b_kn;
    m->out_nm = !o_mn;
    m->lda = m->trans_a ? lead(sa[G_K], m->m) : lead(sa[G_M], m->k);
    m->ldb = m->trans_b ? lead(sb[G_N], m->k) : lead(sb[G_K], m->n);
    m->ldc = m->out_nm ? lead(so[G_N], m->m) : lead(so[G_M], m->n);
    m->stride_a = bst[0];
    m->stride_b = bst[1];
    m->stride_c = bst[2];
    if (split > 1) {
        m->split = split;
        m->sstride_a = bsst[0];
        m->sstride_b = bsst[1];
        m->sstride_c = bsst[2];
    }
    m->off_a = view_base(&va, t);
    m->off_b = view_base(&vb, t);
    return true;
}

/* ---- convolutions ------------------------------------------------------ */

/* A spatial input dim  st*h + dil*r + c  (r optional), h a loop at output
 * position `pos`, r a sum. */
static bool spatial(const Ix *ix, const Table *t, int pos, int64_t *st,
                    int64_t *dil, int *r, int64_t *c)
{
    *r = -1;
    *dil = 1;
    *st = 0;
    for (int i = 0; i < ix->n; i++) {
        const IxTerm *x = &ix->t[i];
        const Row *row = x->kind == IX_VAR ? row_of(t, x->var) : NULL;
        if (!row || x->coef <= 0)
            return false;
        if (row->loop && row->out_pos == pos && *st == 0)
            *st = x->coef;
        else if (!row->loop && *r < 0) {
            *r = x->var;
            *dil = x->coef;
        } else
            return false;
    }
    *c = ix->c;
    return *st > 0;
}

/* The filter dim of a kernel iterator: exactly `r`, over the whole dim. */
static bool filter_dim(const Ix *ix, const Table *t, int r, int64_t ext)
{
    int var;
    int64_t c;
    if (r < 0)
        return ext == 1 && ix_is_const(ix, &c) && c == 0;
    const Row *row = row_of(t, r);
    return plain(ix, &var, &c) && var == r && c == 0 && row->lo == 0 &&
           row->hi == ext;
}

static bool plain_is(const Ix *ix, const Table *t, int var, bool loop, int pos)
{
    int v;
    int64_t c;
    const Row *r;
    return plain(ix, &v, &c) && v == var && c == 0 && (r = row_of(t, v)) &&
           r->loop == loop && (!loop || r->out_pos == pos) && r->lo == 0;
}

/* Record a convolution's sizes: input [cn, c, h, w], filter [f, ., r, s]. */
static void conv_sizes(OpMatch *m, OpKind kind, const IrTensor *X, const IrTensor *K,
                       int64_t f, int64_t r, int64_t s, int64_t stride, int64_t dil,
                       int64_t pad, int64_t groups)
{
    memset(m, 0, sizeof *m);
    m->kind = kind;
    m->in[0] = X;
    m->in[1] = K;
    m->cn = X->shape[0];
    m->c = X->shape[1];
    m->h = X->shape[2];
    m->w = X->shape[3];
    m->f = f;
    m->r = r;
    m->s = s;
    m->stride = stride;
    m->dilation = dil;
    m->pad = pad;
    m->groups = groups;
}

/* Output loops from 0 over the whole output. */
static bool loops_from_zero(const Stage *s)
{
    for (int i = 0; i < s->nloops; i++)
        if (s->loops[i].lo != 0)
            return false;
    return true;
}

/* The channels of a convolution: the input channel index x[n, ci, ..]
 * against the filter k[f.., c, r, s] and the loops; sets the groups and
 * the position of the filter's first spatial dim.
 *   ci = c                          one group (c summed over all channels)
 *   ci = cg*(f / fg) + c            groups of fg output, cg input channels
 *   ci = f, k[f, r, s]              depthwise: a group per channel */
static bool conv_channels(const Stage *s, const Table *t, const Ix *ci,
                          const Ix *const *ki, int nf, const IrTensor *X,
                          const IrTensor *K, int64_t *groups, int *kr, int *nsums)
{
    int c;
    int64_t cc;
    if (plain(ci, &c, &cc) && cc == 0 && !row_of(t, c)->loop) {       /* ci = c */
        const Row *rc = row_of(t, c);
        *groups = 1;
        *kr = nf + 1;
        *nsums = 1;
        return K->rank == nf + 3 && plain_is(ki[nf], t, c, false, -1) &&
               rc->hi == X->shape[1] && rc->hi == K->shape[nf];
    }
    if (nf != 1)
        return false;
    int f = s->loops[1].id;
    if (plain(ci, &c, &cc) && cc == 0 && c == f) {                     /* depthwise */
        *groups = X->shape[1];
        *nsums = 0;
        if (s->loops[1].hi != X->shape[1])
            return false;
        /* a filter [C, R, S], or PyTorch's [C, 1, R, S] read at 0: the
         * same memory */
        *kr = K->rank == 3 ? 1 : 2;
        return K->rank == 3 || (K->rank == 4 && K->shape[1] == 1 && ki[1]->n == 0 &&
                                ki[1]->c == 0);
    }
    /* grouped: one plain sum term and one quotient of the output channel */
    if (ci->n != 2 || ci->c != 0 || K->rank != 4)
        return false;
    const IxTerm *tv = ci->t[0].kind == IX_VAR ? &ci->t[0] : &ci->t[1];
    const IxTerm *td = ci->t[0].kind == IX_VAR ? &ci->t[1] : &ci->t[0];
    int fv;
    int64_t f0;
    if (tv->kind != IX_VAR || tv->coef != 1 || td->kind != IX_DIV ||
        !plain(td->arg, &fv, &f0) || fv != f || f0 != 0)
        return false;
    const Row *rc = row_of(t, tv->var);
    int64_t cg = td->coef, fg = td->d, nf_all = K->shape[0];
    if (!rc || rc->loop || rc->lo != 0 || rc->hi != cg || K->shape[1] != cg ||
        !plain_is(ki[1], t, tv->var, false, -1) || nf_all % fg != 0 ||
        X->shape[1] != nf_all / fg * cg)
        return false;
    *groups = nf_all / fg;
    *kr = 2;
    *nsums = 1;
    return true;
}

/* x[n, c, st*h + dil*r - pad, st*w + dil*s - pad] * k[f.., c, r, s] over
 * L<n, f.., h, w> Σ<c, r, s>: the output channels may be several loops
 * (f..), which the filter stores as leading dims in the same order; groups
 * and depthwise as conv_channels says. */
static bool match_conv(const Stage *s, const Table *t, const IExpr *ex,
                       const IExpr *ek, OpMatch *m)
{
    const IrTensor *X = ex->access.tensor, *K = ek->access.tensor;
    int nf = s->nloops - 3;
    if (s->nguards || nf < 1 || !loops_from_zero(s) || X->rank != 4 || K->rank < nf + 2)
        return false;
    const Ix *const *xi = ex->access.idx, *const *ki = ek->access.idx;
    int n = s->loops[0].id, rv, sv, kr, ncs;
    int64_t sth, stw, dh, dw, ph, pw, f = 1, groups;
    for (int i = 0; i < nf; i++) {
        if (!plain_is(ki[i], t, s->loops[1 + i].id, true, 1 + i) ||
            s->loops[1 + i].hi != K->shape[i])
            return false;
        f *= K->shape[i];
    }
    if (!plain_is(xi[0], t, n, true, 0) ||
        !conv_channels(s, t, xi[1], ki, nf, X, K, &groups, &kr, &ncs) ||
        !spatial(xi[2], t, nf + 1, &sth, &dh, &rv, &ph) ||
        !spatial(xi[3], t, nf + 2, &stw, &dw, &sv, &pw) ||
        !filter_dim(ki[kr], t, rv, K->shape[kr]) ||
        !filter_dim(ki[kr + 1], t, sv, K->shape[kr + 1]))
        return false;
    if (s->nsums != ncs + (rv >= 0) + (sv >= 0))
        return false;
    if (sth != stw || (rv >= 0 && sv >= 0 && dh != dw) || ph > 0 || pw > 0 ||
        s->loops[0].hi != X->shape[0])
        return false;
    int64_t dil = rv >= 0 ? dh : dw, kh = K->shape[kr], kw = K->shape[kr + 1];
    /* The output must be exactly what the library computes. */
    int64_t ho = (X->shape[2] - 2 * ph - dil * (kh - 1) - 1) / sth + 1;
    int64_t wo = (X->shape[3] - 2 * pw - dil * (kw - 1) - 1) / stw + 1;
    if (s->loops[nf + 1].hi != ho || s->loops[nf + 2].hi != wo)
        return false;
    conv_sizes(m, OPK_CONV2D, X, K, f, kh, kw, sth, dil, -ph, groups);
    m->pad_w = -pw;             /* 1xk and kx1 kernels pad one side only */
    return true;
}

/* (h + pad - r) / st with the guard (h + pad - r) % st == 0. */
static bool transposed_dim(const Stage *s, const Table *t, const Ix *ix, int pos,
                           int *r, int64_t *st, int64_t *pad)
{
    if (ix->n != 1 || ix->c != 0 || ix->t[0].kind != IX_DIV || ix->t[0].coef != 1)
        return false;
    const Ix *arg = ix->t[0].arg;
    *st = ix->t[0].d;
    *r = -1;
    bool have_h = false;
    for (int i = 0; i < arg->n; i++) {
        const IxTerm *x = &arg->t[i];
        const Row *row = x->kind == IX_VAR ? row_of(t, x->var) : NULL;
        if (!row)
            return false;
        if (row->loop && row->out_pos == pos && x->coef == 1 && !have_h)
            have_h = true;
        else if (!row->loop && x->coef == -1 && *r < 0)
            *r = x->var;
        else
            return false;
    }
    *pad = arg->c;
    if (!have_h || *r < 0)
        return false;
    for (int g = 0; g < s->nguards; g++) {
        const IExpr *e = s->guards[g];
        const Ix *gi = e->icmp.ix;
        if (e->kind == IE_ICMP && e->icmp.op == OP_EQ && gi->n == 1 && gi->c == 0 &&
            gi->t[0].kind == IX_MOD && gi->t[0].d == *st && ix_equal(gi->t[0].arg, arg))
            return true;
    }
    return false;
}

static bool match_conv_transpose(const Stage *s, const Table *t, const IExpr *ex,
                                 const IExpr *ek, OpMatch *m)
{
    const IrTensor *X = ex->access.tensor, *K = ek->access.tensor;
    if (s->nguards != 2 || s->nloops != 4 || !loops_from_zero(s) || X->rank != 4 ||
        K->rank != 4)
        return false;
    const Ix *const *xi = ex->access.idx, *const *ki = ek->access.idx;
    int n = s->loops[0].id, f = s->loops[1].id, c, rv, sv;
    int64_t cc, sth, stw, ph, pw;
    if (!plain_is(xi[0], t, n, true, 0) || !plain(xi[1], &c, &cc) || cc != 0 ||
        !plain_is(ki[0], t, c, false, -1) || !plain_is(ki[1], t, f, true, 1) ||
        !transposed_dim(s, t, xi[2], 2, &rv, &sth, &ph) ||
        !transposed_dim(s, t, xi[3], 3, &sv, &stw, &pw) ||
        !filter_dim(ki[2], t, rv, K->shape[2]) || !filter_dim(ki[3], t, sv, K->shape[3]))
        return false;
    const Row *rc = row_of(t, c);
    if (sth != stw || ph != pw || ph < 0 || s->nsums != 3 ||
        rc->hi != X->shape[1] || rc->hi != K->shape[0] ||
        s->loops[0].hi != X->shape[0] || s->loops[1].hi != K->shape[1])
        return false;
    int64_t ho = (X->shape[2] - 1) * sth - 2 * ph + K->shape[2];
    int64_t wo = (X->shape[3] - 1) * stw - 2 * pw + K->shape[3];
    /* Up to stride - 1 extra rows and columns are the library's output
     * padding (the same on both axes). */
    int64_t op = s->loops[2].hi - ho;
    if (op < 0 || op >= sth || s->loops[3].hi - wo != op)
        return false;
    conv_sizes(m, OPK_CONV_TRANSPOSE2D, X, K, K->shape[1], K->shape[2], K->shape[3],
               sth, 1, ph, 1);
    m->pad_w = ph;
    m->out_pad = op;
    return true;
}

/* ---- banded matmuls ------------------------------------------------------ */

/* A band operator is L<batch.., i, x> Σ<y> { a * b }: G2BMM's band index
 * is the loop x and both operands' column the sum y (d); GBMM's band
 * index is the sum y (j), which is its first operand's column, and x (d)
 * the second's.  Each operand is read through a view (match.h, BandView):
 * its address, the sum over its dims of index times stride, is the
 * column (coefficient 1), the row (i in the first operand; in the second
 * the band's row i + dil*(band - w), in one dim) times ld, and the batch
 * loops, each also as its quotient and remainder by one divisor (heads
 * split out of a batch: g / H, g % H).  Each dim stays inside the tensor
 * for rows in [0, m); the second operand's rows outside [0, m) must read
 * zero as the kernels read them, because the row's dim leaves the tensor
 * there or because a select says so: select(0 <= row < m, b, 0) is what
 * fusing a view leaves where the view's own rows end (fuse.c), and a row
 * that runs into another head's rows is zero only through it. */
typedef struct BandRoles {
    int nb;                     /* batch loops: the stage's first nb loops */
    int row, band, col;         /* i, the band index (-1: none), the column */
    int64_t m, w;               /* rows, half band */
} BandRoles;

/* Address coefficients of one batch loop: of the loop, of its quotient
 * and of its remainder by div (0: none). */
typedef struct BandBatch {
    int64_t plain, quot, rem, div;
} BandBatch;

/* The least and greatest values of a term over the iterators' ranges: an
 * iterator, or the quotient or remainder of one, times a positive
 * coefficient. */
static bool term_bounds(const IxTerm *x, const Table *t, int *var, int64_t *lo, int64_t *hi)
{
    int64_t c = 0;
    if (x->kind == IX_VAR)
        *var = x->var;
    else if ((x->kind != IX_DIV && x->kind != IX_MOD) || !plain(x->arg, var, &c) || c != 0)
        return false;
    const Row *r = row_of(t, *var);
    if (!r || r->hi <= r->lo || x->coef <= 0)
        return false;
    int64_t a = r->lo, b = r->hi - 1;
    if (x->kind != IX_VAR) {
        int64_t qa = i64_floordiv(a, x->d), qb = i64_floordiv(b, x->d);
        if (x->kind == IX_DIV) {
            a = qa;
            b = qb;
        } else if (qa == qb) {
            a = i64_floormod(a, x->d);
            b = i64_floormod(b, x->d);
        } else {
            a = 0;
            b = x->d - 1;
        }
    }
    return i64_mul(x->coef, a, lo) && i64_mul(x->coef, b, hi);
}

static int batch_of(const Stage *s, int nb, int var)
{
    for (int b = 0; b < nb; b++)
        if (s->loops[b].id == var)
            return b;
    return -1;
}

/* The bounds [*lo, *hi) a select's condition puts on the band's row R =
 * i + dil*(band - w): conjunctions of (i + dil*band) + c >= 0 and
 * -(i + dil*band) + c >= 0, nothing else. */
static bool guard_rows(const IExpr *e, const BandRoles *ro, int64_t dil, int64_t *lo,
                       int64_t *hi)
{
    if (e->kind == IE_AND)
        return guard_rows(e->bin.a, ro, dil, lo, hi) && guard_rows(e->bin.b, ro, dil, lo, hi);
    if (e->kind != IE_ICMP || e->icmp.op != OP_GE)
        return false;
    const Ix *x = e->icmp.ix;
    if (x->n != 2 || x->t[0].kind != IX_VAR || x->t[1].kind != IX_VAR)
        return false;
    int64_t ci = ix_coef(x, ro->row), cb = ix_coef(x, ro->band), dw, b;
    if ((ci != 1 && ci != -1) || cb != ci * dil || !i64_mul(dil, ro->w, &dw))
        return false;
    if (ci > 0) {               /* R >= -c - dil*w */
        if (!i64_add(x->c, dw, &b) || b == INT64_MIN)
            return false;
        *lo = *lo > -b ? *lo : -b;
    } else {                    /* R < c - dil*w + 1 */
        if (!i64_sub(x->c, dw, &b) || !i64_add(b, 1, &b))
            return false;
        *hi = *hi < b ? *hi : b;
    }
    return true;
}

/* The batch part of a view: each batch loop one axis, or two where it is
 * read as a quotient and remainder (the quotient's extent need not be
 * whole in the first loop), axes of extent 1 left out and neighbours
 * that flatten merged; at most two remain, the outer the batch stride
 * and the inner, of `split` batches, sstride. */
static bool band_batch(const Stage *s, int nb, const BandBatch *bat, BandView *v)
{
    int64_t ext[2 * MAXV], st[2 * MAXV];
    int n = 0;
    for (int b = 0; b < nb; b++) {
        const BandBatch *x = &bat[b];
        int64_t e = s->loops[b].hi, q[2], r[2];
        int na = 0;
        if (!x->div || e <= x->div) {   /* l / div = 0, l % div = l */
            q[na] = e;
            if (!i64_add(x->plain, x->rem, &r[na++]))
                return false;
        } else {
            if (n > 0 && e % x->div)
                return false;
            q[na] = (e + x->div - 1) / x->div;
            if (!i64_mul(x->div, x->plain, &r[na]) || !i64_add(r[na], x->quot, &r[na]))
                return false;
            na++;
            q[na] = x->div;
            if (!i64_add(x->plain, x->rem, &r[na++]))
                return false;
        }
        for (int a = 0; a < na; a++) {
            if (q[a] == 1)
                continue;
            int64_t span;
            if (n > 0 && i64_mul(r[a], q[a], &span) && st[n - 1] == span) {
                if (!i64_mul(ext[n - 1], q[a], &ext[n - 1]))
                    return false;
                st[n - 1] = r[a];
            } else {
                ext[n] = q[a];
                st[n++] = r[a];
            }
        }
    }
    if (n > 2)
        return false;
    v->stride = n ? st[0] : 0;
    v->split = n == 2 ? ext[1] : 1;
    v->sstride = n == 2 ? st[1] : 0;
    return true;
}

/* Read operand e of a band operator as a view (ro->band >= 0: the second
 * operand, whose dilation is set). */
static bool band_operand(const Stage *s, const Table *t, const IExpr *e, const BandRoles *ro,
                         BandView *v, int64_t *dil)
{
    const IExpr *cond = NULL;
    if (ro->band >= 0 && e->kind == IE_CALL && e->call.fn == FN_SELECT &&
        e->call.args[2]->kind == IE_CONST && e->call.args[2]->value == 0) {
        cond = e->call.args[0];
        e = e->call.args[1];
    }
    if (e->kind != IE_ACCESS || !e->access.tensor)
        return false;
    const IrTensor *T = e->access.tensor;
    if (T->rank > MAXD || e->access.nidx != T->rank)
        return false;
    BandBatch bat[MAXV] = {{0}};
    /* the row's dim: its stride, the row's and the band's coefficients,
     * its constant and the bounds of its other terms */
    int rd = -1;
    int64_t rs = 0, ra = 0, rb = 0, rc = 0, rlo = 0, rhi = 0;
    int64_t ds = 1, base = 0, col = 0, cb;
    for (int d = T->rank - 1; d >= 0; d--) {
        const Ix *ix = e->access.idx[d];
        int64_t a = 0, b = 0, lo = 0, hi = 0;
        for (int k = 0; k < ix->n; k++) {
            const IxTerm *x = &ix->t[k];
            int var, bi;
            int64_t tlo, thi, as, *to;
            if (!term_bounds(x, t, &var, &tlo, &thi) || !i64_mul(x->coef, ds, &as))
                return false;
            if (x->kind == IX_VAR && (var == ro->row || var == ro->band)) {
                *(var == ro->row ? &a : &b) = x->coef;
                continue;
            }
            if (x->kind == IX_VAR && var == ro->col)
                to = &col;
            else if ((bi = batch_of(s, ro->nb, var)) < 0)
                return false;
            else if (x->kind == IX_VAR)
                to = &bat[bi].plain;
            else if (bat[bi].div && bat[bi].div != x->d)
                return false;
            else {
                bat[bi].div = x->d;
                to = x->kind == IX_DIV ? &bat[bi].quot : &bat[bi].rem;
            }
            if (!i64_add(*to, as, to) || !i64_add(lo, tlo, &lo) || !i64_add(hi, thi, &hi))
                return false;
        }
        if (a || b) {
            if (rd >= 0 || !a)
                return false;
            rd = d;
            rs = ds;
            ra = a;
            rb = b;
            rc = ix->c;
            rlo = lo;
            rhi = hi;
        } else if (!i64_add(lo, ix->c, &lo) || !i64_add(hi, ix->c, &hi) || lo < 0 ||
                   hi >= T->shape[d]) {
            return false;
        }
        if (!i64_mul(ix->c, ds, &cb) || !i64_add(base, cb, &base) ||
            !i64_mul(ds, T->shape[d], &ds))
            return false;
    }
    if (rd < 0 || col != 1 || (ro->band >= 0) != (rb > 0) || rb % ra)
        return false;
    /* the dim's index is ra*R + rest + c0: inside the tensor for R in
     * [0, m) */
    int64_t dl = rb / ra, size = T->shape[rd], c0, first, last, shift;
    if (!i64_mul(rb, ro->w, &shift) || !i64_add(rc, shift, &c0) ||
        !i64_add(c0, rlo, &first) || !i64_mul(ra, ro->m - 1, &last) ||
        !i64_add(last, c0, &last) || !i64_add(last, rhi, &last) || first < 0 || last >= size)
        return false;
    if (ro->band >= 0) {
        /* rows below 0 or from m on that the band reaches and the select
         * lets through must leave the dim for every value of the rest */
        int64_t glo = INT64_MIN, ghi = INT64_MAX, reach, below, above;
        if ((cond && !guard_rows(cond, ro, dl, &glo, &ghi)) || glo > 0 || ghi < ro->m ||
            !i64_mul(dl, ro->w, &reach))
            return false;
        if (glo < 0 && reach > 0 &&
            (!i64_sub(c0, ra, &below) || !i64_add(below, rhi, &below) || below >= 0))
            return false;
        if (ghi > ro->m && reach > 0 &&
            (!i64_mul(ra, ro->m, &above) || !i64_add(above, c0, &above) ||
             !i64_add(above, rlo, &above) || above < size))
            return false;
        *dil = dl;
    }
    /* the first element: batch 0, row 0, the column's first value */
    if (!i64_mul(rs, ra, &v->ld) || !i64_mul(shift, rs, &shift) ||
        !i64_add(base, shift, &v->off) || !i64_add(v->off, row_of(t, ro->col)->lo, &v->off))
        return false;
    return band_batch(s, ro->nb, bat, v);
}

/* The stage as G2BMM (the band a loop) or else GBMM (the band the sum). */
static bool match_band(const Stage *s, const Table *t, const IExpr *ea,
                       const IExpr *eb, OpMatch *m)
{
    if (s->nguards || s->nsums != 1 || s->nloops < 2 || !loops_from_zero(s))
        return false;
    int nb = s->nloops - 2, x = s->loops[nb + 1].id, y = s->sums[0].id;
    for (int g2 = 1; g2 >= 0; g2--) {
        const Row *rb = row_of(t, g2 ? x : y);
        int64_t w = (extent(rb) - 1) / 2, dil = 0;
        BandRoles ra = {nb, s->loops[nb].id, -1, y, extent(row_of(t, s->loops[nb].id)), w};
        BandRoles rk = ra;
        rk.band = g2 ? x : y;
        rk.col = g2 ? y : x;
        BandView va, vb;
        if (rb->lo != 0 || extent(rb) != 2 * w + 1 || !band_operand(s, t, ea, &ra, &va, NULL) ||
            !band_operand(s, t, eb, &rk, &vb, &dil))
            continue;
        memset(m, 0, sizeof *m);
        m->kind = g2 ? OPK_G2BMM : OPK_GBMM;
        m->in[0] = ea->kind == IE_ACCESS ? ea->access.tensor : NULL;
        m->in[1] = (eb->kind == IE_ACCESS ? eb : eb->call.args[1])->access.tensor;
        m->gb = 1;
        for (int d = 0; d < nb; d++)
            m->gb *= s->loops[d].hi;
        m->gm = ra.m;
        m->gw = w;
        m->gk = extent(row_of(t, g2 ? y : x));
        m->gdil = dil;
        m->gv[0] = va;
        m->gv[1] = vb;
        return true;
    }
    return false;
}

bool match_stage(const Stage *s, OpMatch *out)
{
    const IExpr *a, *b;
    Table t;
    if (ir_stage_has_gather(s) || !product_of_two(s, &a, &b) || !table_build(s, &t))
        return false;
    /* Products are commutative: try both operand orders for each pattern.
     * The band's second operand may be a select (match_band); the rest
     * read tensors. */
    bool reads = tensor_read(a) && tensor_read(b);
    for (int swap = 0; swap < 2; swap++) {
        const IExpr *x = swap ? b : a, *y = swap ? a : b;
        if ((reads && (match_conv(s, &t, x, y, out) || match_conv_transpose(s, &t, x, y, out))) ||
            match_band(s, &t, x, y, out))
            return true;
    }
    return reads && match_gemm(s, &t, a, b, out);
}

bool match_gemm_swapped(const Stage *s, OpMatch *out)
{
    const IExpr *a, *b;
    Table t;
    return !ir_stage_has_gather(s) && product_of_two(s, &a, &b) && table_build(s, &t) &&
           tensor_read(a) && tensor_read(b) && match_gemm(s, &t, b, a, out);
}

/* One operation per node with operands (a call counts one). */
static double expr_flops(const IExpr *e)
{
    const IExpr *kids[IR_MAX_CHILDREN];
    int n = ir_expr_children(e, kids);
    if (n == 0)
        return 0;
    double f = 1;
    for (int i = 0; i < n; i++)
        f += expr_flops(kids[i]);
    return f;
}

double match_flops(const Stage *s)
{
    double points = 1;
    for (int i = 0; i < s->nloops; i++)
        points *= (double)(s->loops[i].hi - s->loops[i].lo);
    double terms = 1;
    for (int i = 0; i < s->nsums; i++)
        terms *= (double)(s->sums[i].hi - s->sums[i].lo);
    /* one accumulate per term besides the body's own operations */
    return points * terms * (expr_flops(s->body) + (s->nsums ? 1 : 0));
}
