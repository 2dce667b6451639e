/* ops_nn.c - Conv, ConvTranspose, Gemm, MatMul, the pools and Resize:
 * each as the sum (or max) of products that ein(5) writes directly, with
 * padding as reads outside a tensor (zeros) or, for max pooling, as
 * guards that drop the taps outside the input. */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/onnx_int.h"

/* "a*v + b" in its shortest form; v NULL: just b. */
static const char *lin(Ox *ox, int64_t a, const char *v, int64_t b)
{
    const char *s = "";
    if (v && a != 0)
        s = a == 1 ? v : a == -1 ? arena_printf(ox->arena, "-%s", v)
                                 : arena_printf(ox->arena, "%" PRId64 "*%s", a, v);
    if (!*s)
        return arena_printf(ox->arena, "%" PRId64, b);
    if (b > 0)
        return arena_printf(ox->arena, "%s + %" PRId64, s, b);
    if (b < 0)
        return arena_printf(ox->arena, "%s - %" PRId64, s, -b);
    return s;
}

/* "lhs + a*v" in its shortest form. */
static const char *add_term(Ox *ox, const char *lhs, int64_t a, const char *v)
{
    if (a == 0)
        return lhs;
    if (!lhs || !*lhs || strcmp(lhs, "0") == 0)
        return lin(ox, a, v, 0);
    if (a < 0)
        return arena_printf(ox->arena, "%s - %s", lhs, lin(ox, -a, v, 0));
    return arena_printf(ox->arena, "%s + %s", lhs, lin(ox, a, v, 0));
}

static const char *add_const(Ox *ox, const char *lhs, int64_t b)
{
    if (b == 0)
        return lhs;
    if (strcmp(lhs, "0") == 0)
        return arena_printf(ox->arena, "%" PRId64, b);
    return b > 0 ? arena_printf(ox->arena, "%s + %" PRId64, lhs, b)
                 : arena_printf(ox->arena, "%s - %" PRId64, lhs, -b);
}

static const char *cat(Ox *ox, const char *a, const char *sep, const char *b)
{
    if (!a || !*a)
        return b;
    if (!b || !*b)
        return a;
    return arena_printf(ox->arena, "%s%s%s", a, sep, b);
}

/* ---- windows: Conv and the pools --------------------------------------------------- */

typedef struct Win {
    int k;                          /* spatial dims */
    int64_t kernel[OX_MAXRANK], stride[OX_MAXRANK], dil[OX_MAXRANK];
    int64_t pb[OX_MAXRANK], pe[OX_MAXRANK];
    int64_t in[OX_MAXRANK], out[OX_MAXRANK];
    int64_t outpad[OX_MAXRANK];     /* ConvTranspose */
} Win;

static bool ints_attr(Ox *ox, const OxNode *n, const char *name, int k, int64_t *dst,
                      int64_t dflt)
{
    int cnt;
    const int64_t *v = ox_attr_ints(n, name, &cnt);
    for (int i = 0; i < k; i++)
        dst[i] = dflt;
    if (cnt < 0)
        return true;
    if (cnt != k)
        return ox_error(ox, n, "attribute %s has %d values, not %d", name, cnt, k);
    for (int i = 0; i < k; i++) {
        if (v[i] < (strcmp(name, "pads") == 0 || strcmp(name, "output_padding") == 0 ? 0 : 1) ||
            v[i] > OX_MAX_ATTR)
            return ox_error(ox, n, "attribute %s has the value %lld", name, (long long)v[i]);
        dst[i] = v[i];
    }
    return true;
}

/* Read the window attributes of a node over input x (N, C, spatial...);
 * kernel from the attribute or (conv) the weight's shape.  `transposed`:
 * ConvTranspose's output sizes. */
static bool window(Ox *ox, const OxNode *n, const OxVal *x, const int64_t *wkernel,
                   bool transposed, bool ceil_mode, Win *w)
{
    if (x->rank < 3)
        return ox_error(ox, n, "needs an input of rank 3 or more (N, C, spatial)");
    w->k = x->rank - 2;
    int k = w->k;
    for (int i = 0; i < k; i++)
        w->in[i] = x->shape[i + 2];
    int cnt;
    const int64_t *ks = ox_attr_ints(n, "kernel_shape", &cnt);
    if (cnt >= 0 && cnt != k)
        return ox_error(ox, n, "kernel_shape has %d values, not %d", cnt, k);
    for (int i = 0; i < k; i++) {
        w->kernel[i] = cnt >= 0 ? ks[i] : wkernel ? wkernel[i] : 0;
        if (w->kernel[i] > OX_MAX_ATTR)
            return ox_error(ox, n, "a kernel of size %lld", (long long)w->kernel[i]);
        if (w->kernel[i] < 1)
            return ox_error(ox, n, "needs a kernel_shape");
        if (wkernel && wkernel[i] != w->kernel[i])
            return ox_error(ox, n, "kernel_shape does not match the weight's shape");
    }
    if (!ints_attr(ox, n, "strides", k, w->stride, 1) ||
        !ints_attr(ox, n, "dilations", k, w->dil, 1) ||
        !ints_attr(ox, n, "output_padding", k, w->outpad, 0))
        return false;
    int64_t pads[2 * OX_MAXRANK];
    const int64_t *pv = ox_attr_ints(n, "pads", &cnt);
    if (cnt >= 0 && cnt != 2 * k)
        return ox_error(ox, n, "pads has %d values, not %d", cnt, 2 * k);
    for (int i = 0; i < 2 * k; i++) {
        pads[i] = cnt >= 0 ? pv[i] : 0;
        if (pads[i] < 0)
            return ox_unsupported(ox, n, "negative pads");
        if (pads[i] > OX_MAX_ATTR)
            return ox_error(ox, n, "pads of %lld", (long long)pads[i]);
    }
    const char *ap = ox_attr_str(ox, n, "auto_pad", "NOTSET");
    bool same = strcmp(ap, "SAME_UPPER") == 0 || strcmp(ap, "SAME_LOWER") == 0;
    if (!same && strcmp(ap, "NOTSET") != 0 && strcmp(ap, "VALID") != 0)
        return ox_error(ox, n, "unknown auto_pad '%s'", ap);
    const int64_t *osh = transposed ? ox_attr_ints(n, "output_shape", &cnt) : NULL;
    if (osh && cnt != k)
        return ox_error(ox, n, "output_shape has %d values, not %d", cnt, k);
    for (int i = 0; i < k; i++) {
        int64_t ext = w->dil[i] * (w->kernel[i] - 1) + 1;
        w->pb[i] = pads[i];
        w->pe[i] = pads[i + k];
        if (transposed) {
            int64_t full = w->stride[i] * (w->in[i] - 1) + w->outpad[i] + ext;
            if (osh || same) {
                int64_t o = osh ? osh[i] : w->in[i] * w->stride[i];
                int64_t total = full - o;
                if (total < 0)
                    return ox_unsupported(ox, n, "an output_shape larger than the full output");
                bool upper = strcmp(ap, "SAME_UPPER") == 0;
                w->pb[i] = upper ? total / 2 : total - total / 2;
                w->pe[i] = total - w->pb[i];
            } else if (strcmp(ap, "VALID") == 0) {
                w->pb[i] = w->pe[i] = 0;
            }
            w->out[i] = full - w->pb[i] - w->pe[i];
        } else if (same) {
            w->out[i] = (w->in[i] + w->stride[i] - 1) / w->stride[i];
            int64_t total = (w->out[i] - 1) * w->stride[i] + ext - w->in[i];
            if (total < 0)
                total = 0;
            bool upper = strcmp(ap, "SAME_UPPER") == 0;
            w->pb[i] = upper ? total / 2 : total - total / 2;
            w->pe[i] = total - w->pb[i];
        } else {
            if (strcmp(ap, "VALID") == 0)
                w->pb[i] = w->pe[i] = 0;
            int64_t span = w->in[i] + w->pb[i] + w->pe[i] - ext;
            if (span < 0)
                return ox_error(ox, n, "the kernel is larger than the padded input");
            w->out[i] = (ceil_mode ? (span + w->stride[i] - 1) / w->stride[i]
                                   : span / w->stride[i]) + 1;
        }
        if (w->out[i] < 1)
            return ox_error(ox, n, "an empty output");
    }
    return true;
}

/* The subscript of spatial dim i for output index i<2+i> and tap j<t>. */
static const char *tap(Ox *ox, const Win *w, int i, int t)
{
    const char *o = arena_printf(ox->arena, "i%d", i + 2);
    const char *j = arena_printf(ox->arena, "j%d", t);
    const char *s = add_term(ox, lin(ox, w->stride[i], o, 0), w->dil[i], j);
    return add_const(ox, s, -w->pb[i]);
}

/* Can a tap of dim i leave [0, in)? */
static bool leaves(const Win *w, int i)
{
    int64_t last = (w->out[i] - 1) * w->stride[i] + w->dil[i] * (w->kernel[i] - 1) - w->pb[i];
    return w->pb[i] > 0 || last >= w->in[i];
}

/* ---- Conv ----------------------------------------------------------------------------------- */

static bool conv_setup(Ox *ox, const OxNode *n, Win *w, int64_t *group)
{
    if (n->nin < 2 || n->in[0] < 0 || n->in[1] < 0)
        return ox_error(ox, n, "needs an input and a weight");
    OxVal *x = ox_val(ox, n->in[0]), *wt = ox_val(ox, n->in[1]);
    bool tr = strcmp(n->op, "ConvTranspose") == 0;
    if (wt->rank != x->rank)
        return ox_error(ox, n, "the weight has rank %d, the input %d", wt->rank, x->rank);
    *group = ox_attr_int(n, "group", 1);
    int64_t c = x->shape[1];
    if (*group < 1 || c % *group != 0)
        return ox_error(ox, n, "group %lld does not divide the %lld channels",
                        (long long)*group, (long long)c);
    if (*group > c)
        return ox_error(ox, n, "group %lld exceeds the %lld channels", (long long)*group,
                        (long long)c);
    if (!tr && wt->shape[1] * *group != c)
        return ox_error(ox, n, "the weight has %lld input channels per group, the input "
                        "%lld channels in %lld groups", (long long)wt->shape[1], (long long)c,
                        (long long)*group);
    if (tr && wt->shape[0] != c)
        return ox_error(ox, n, "the weight has %lld input channels, the input %lld",
                        (long long)wt->shape[0], (long long)c);
    if (!tr && wt->shape[0] % *group != 0)
        return ox_error(ox, n, "group %lld does not divide the %lld filters",
                        (long long)*group, (long long)wt->shape[0]);
    if (!window(ox, n, x, wt->shape + 2, tr, false, w))
        return false;
    int64_t f = tr ? wt->shape[1] * *group : wt->shape[0];
    if (ox_has_in(n, 2)) {
        OxVal *b = ox_val(ox, n->in[2]);
        if (b->rank != 1 || b->shape[0] != f)
            return ox_error(ox, n, "the bias must have shape [%lld]", (long long)f);
    }
    return true;
}

static bool conv_infer(Ox *ox, const OxNode *n)
{
    Win w;
    int64_t g;
    if (!conv_setup(ox, n, &w, &g))
        return false;
    OxVal *x = ox_val(ox, n->in[0]), *wt = ox_val(ox, n->in[1]);
    int64_t shape[OX_MAXRANK];
    shape[0] = x->shape[0];
    shape[1] = wt->shape[0];
    if (strcmp(n->op, "ConvTranspose") == 0 &&
        (!i64_mul(wt->shape[1], g, &shape[1]) || shape[1] > OX_MAX_ELEMS))
        return ox_error(ox, n, "too many output channels");
    for (int i = 0; i < w.k; i++)
        shape[i + 2] = w.out[i];
    ox_set(ox, n->out[0], x->type, x->rank, shape);
    return true;
}

/* The output statement with an optional bias: the sum goes to a tensor
 * of its own when a bias follows. */
static const char *sum_target(Ox *ox, const OxNode *n, int bias_in)
{
    return ox_has_in(n, bias_in) ? ox_temp(ox, n->out[0], "sum") : ox_name(ox, n->out[0]);
}

static void bias_stmt(Ox *ox, const OxNode *n, const char *sum, int bias_in, int chan)
{
    if (!ox_has_in(n, bias_in))
        return;
    OxVal *y = ox_val(ox, n->out[0]);
    const char *const *idx = ox_loop_idx(ox, y->rank);
    const char *c[1] = {idx[chan]};
    char *s = arena_printf(ox->arena, "%s[", sum);
    for (int d = 0; d < y->rank; d++)
        s = arena_printf(ox->arena, "%s%s%s", s, d ? ", " : "", idx[d]);
    const char *body = arena_printf(ox->arena, "%s] + %s", s, ox_read(ox, n->in[bias_in], c));
    ox_stmt(ox, ox_name(ox, n->out[0]), y->rank, ox_shape_dims(ox, n->out[0]), "=", body, NULL);
}

static bool conv_write(Ox *ox, const OxNode *n)
{
    Win w;
    int64_t g;
    if (!conv_setup(ox, n, &w, &g))
        return false;
    int xid = n->in[0], wid = n->in[1], yid = n->out[0];
    OxVal *x = ox_val(ox, xid), *wt = ox_val(ox, wid), *y = ox_val(ox, yid);
    int r = x->rank;
    ox_need_fixed_from(ox, xid, 1);     /* channels and spatial sizes are numbers */
    bool tr = strcmp(n->op, "ConvTranspose") == 0;
    /* A 2-d convolution with a bias, the same stride, padding and
     * dilation on both axes: <nn.ein>'s conv2d (the same statements). */
    if (!tr && r == 4 && g == 1 && ox_has_in(n, 2) && ox_all_f32(ox, n) &&
        w.stride[0] == w.stride[1] && w.dil[0] == w.dil[1] && w.pb[0] == w.pb[1] &&
        w.pe[0] == w.pb[0] && w.pe[1] == w.pb[1]) {
        const char *xn = ox_name(ox, xid), *wn = ox_name(ox, wid);
        const char *a = arena_printf(ox->arena, "%s, %s, %s", xn, wn, ox_name(ox, n->in[2]));
        if (w.stride[0] != 1)
            a = arena_printf(ox->arena, "%s, stride = %" PRId64, a, w.stride[0]);
        if (w.pb[0] != 0)
            a = arena_printf(ox->arena, "%s, pad = %" PRId64, a, w.pb[0]);
        if (w.dil[0] != 1)
            a = arena_printf(ox->arena, "%s, dilation = %" PRId64, a, w.dil[0]);
        ox_call(ox, yid, "conv2d", a);
        return true;
    }
    const char **xi = arena_alloc(ox->arena, (size_t)(r + 1) * sizeof *xi);
    const char **wi = arena_alloc(ox->arena, (size_t)(r + 1) * sizeof *wi);
    const char *where = "";
    xi[0] = "i0";
    if (!tr) {
        /* y[n, f, o] += x[n, g*Cg + c, s*o + d*k - p] * w[f, c, k] */
        int64_t cg = wt->shape[1], fg = wt->shape[0] / g;
        xi[1] = g == 1 ? "j0" : arena_printf(ox->arena, "i1 / %" PRId64 " * %" PRId64 " + j0",
                                             fg, cg);
        wi[0] = "i1";
        wi[1] = "j0";
        where = arena_printf(ox->arena, "j0 < %" PRId64, cg);
        for (int i = 0; i < w.k; i++) {
            xi[i + 2] = tap(ox, &w, i, i + 1);
            wi[i + 2] = arena_printf(ox->arena, "j%d", i + 1);
            where = arena_printf(ox->arena, "%s, j%d < %" PRId64, where, i + 1, w.kernel[i]);
        }
    } else {
        /* y[n, f, o] += x[n, g*Cg + c, (o + p - d*k) / s] * w[g*Cg + c, f % Fg, k]
         *   where (o + p - d*k) % s == 0 */
        int64_t cg = x->shape[1] / g, fg = wt->shape[1];
        const char *ch = g == 1 ? "j0" : arena_printf(ox->arena, "i1 / %" PRId64 " * %" PRId64
                                                      " + j0", fg, cg);
        xi[1] = ch;
        wi[0] = ch;
        wi[1] = g == 1 ? "i1" : arena_printf(ox->arena, "i1 %% %" PRId64, fg);
        where = arena_printf(ox->arena, "j0 < %" PRId64, cg);
        for (int i = 0; i < w.k; i++) {
            const char *o = arena_printf(ox->arena, "i%d", i + 2);
            const char *j = arena_printf(ox->arena, "j%d", i + 1);
            const char *num = add_term(ox, add_const(ox, o, w.pb[i]), -w.dil[i], j);
            int64_t s = w.stride[i];
            xi[i + 2] = s == 1 ? num : arena_printf(ox->arena, "(%s) / %" PRId64, num, s);
            wi[i + 2] = j;
            where = arena_printf(ox->arena, "%s, %s < %" PRId64, where, j, w.kernel[i]);
            if (s > 1)
                where = arena_printf(ox->arena, "%s, (%s) %% %" PRId64 " == 0", where, num, s);
        }
    }
    const char *sum = sum_target(ox, n, 2);
    const char *xr = ox_read(ox, xid, xi), *wr = ox_read(ox, wid, wi);
    ox_stmt(ox, sum, y->rank, ox_shape_dims(ox, yid), "+=",
            arena_printf(ox->arena, "%s * %s", xr, wr), where);
    bias_stmt(ox, n, sum, 2, 1);
    return true;
}

/* ---- Gemm, MatMul ------------------------------------------------------------------------------ */

static bool gemm_infer(Ox *ox, const OxNode *n)
{
    if (n->nin < 2 || n->in[0] < 0 || n->in[1] < 0)
        return ox_error(ox, n, "needs two inputs");
    OxVal *a = ox_val(ox, n->in[0]), *b = ox_val(ox, n->in[1]);
    if (a->rank != 2 || b->rank != 2)
        return ox_error(ox, n, "needs matrices (ranks %d and %d)", a->rank, b->rank);
    bool ta = ox_attr_int(n, "transA", 0), tb = ox_attr_int(n, "transB", 0);
    int64_t m = a->shape[ta], k = a->shape[!ta], k2 = b->shape[tb], nn = b->shape[!tb];
    if (k != k2)
        return ox_error(ox, n, "the inner dimensions differ: %lld and %lld", (long long)k,
                        (long long)k2);
    int64_t shape[2] = {m, nn};
    if (ox_has_in(n, 2)) {
        OxVal *c = ox_val(ox, n->in[2]);
        for (int d = 0; d < c->rank; d++) {
            int od = 2 - c->rank + d;
            if (c->rank > 2 || (c->shape[d] != 1 && c->shape[d] != shape[od]))
                return ox_error(ox, n, "C does not broadcast to [%lld, %lld]", (long long)m,
                                (long long)nn);
        }
    }
    ox_set(ox, n->out[0], a->type, 2, shape);
    return true;
}

static bool gemm_write(Ox *ox, const OxNode *n)
{
    int yid = n->out[0];
    OxVal *a = ox_val(ox, n->in[0]), *y = ox_val(ox, yid);
    bool ta = ox_attr_int(n, "transA", 0), tb = ox_attr_int(n, "transB", 0);
    float alpha = ox_attr_float(n, "alpha", 1), beta = ox_attr_float(n, "beta", 1);
    const char *ai[2] = {ta ? "j0" : "i0", ta ? "i0" : "j0"};
    const char *bi[2] = {tb ? "i1" : "j0", tb ? "j0" : "i1"};
    bool bias = ox_has_in(n, 2) && beta != 0;
    /* nn.Linear's Gemm (B transposed, a bias of [N]): <nn.ein>'s linear */
    if (!ta && tb && alpha == 1 && beta == 1 && ox_has_in(n, 2) && ox_all_f32(ox, n) &&
        ox_val(ox, n->in[2])->rank == 1 && ox_val(ox, n->in[2])->shape[0] == y->shape[1]) {
        const char *a[3];
        for (int i = 0; i < 3; i++)
            a[i] = ox_name(ox, n->in[i]);
        ox_call(ox, yid, "linear", arena_printf(ox->arena, "%s, %s, %s", a[0], a[1], a[2]));
        return true;
    }
    const char *sum = bias || alpha != 1 ? ox_temp(ox, yid, "mm") : ox_name(ox, yid);
    const char *ar = ox_read(ox, n->in[0], ai), *br = ox_read(ox, n->in[1], bi);
    ox_stmt(ox, sum, 2, ox_shape_dims(ox, yid), "+=", arena_printf(ox->arena, "%s * %s", ar, br),
            arena_printf(ox->arena, "j0 < %s", ox_dim_str(ox, ox_dim(ox, n->in[0], !ta))));
    (void)a;
    if (!bias && alpha == 1)
        return true;
    const char *const *idx = ox_loop_idx(ox, 2);
    const char *body = arena_printf(ox->arena, "%s[i0, i1]", sum);
    if (alpha != 1)
        body = arena_printf(ox->arena, "%s * %s", ox_real(ox, alpha), body);
    if (bias) {
        const char *c = ox_read_bcast(ox, n->in[2], 2, y->shape, idx);
        body = beta == 1 ? arena_printf(ox->arena, "%s + %s", body, c)
                         : arena_printf(ox->arena, "%s + %s * %s", body, ox_real(ox, beta), c);
    }
    ox_stmt(ox, ox_name(ox, yid), 2, ox_shape_dims(ox, yid), "=", body, NULL);
    return true;
}

static bool matmul_infer(Ox *ox, const OxNode *n)
{
    if (n->nin != 2 || n->in[0] < 0 || n->in[1] < 0)
        return ox_error(ox, n, "needs two inputs");
    OxVal *a = ox_val(ox, n->in[0]), *b = ox_val(ox, n->in[1]);
    if (a->rank < 1 || b->rank < 1)
        return ox_error(ox, n, "needs inputs of rank 1 or more");
    int64_t k = a->shape[a->rank - 1], k2 = b->shape[b->rank >= 2 ? b->rank - 2 : 0];
    if (k != k2)
        return ox_error(ox, n, "the inner dimensions differ: %lld and %lld", (long long)k,
                        (long long)k2);
    int na = a->rank - 2 > 0 ? a->rank - 2 : 0, nb = b->rank - 2 > 0 ? b->rank - 2 : 0;
    int nbat = na > nb ? na : nb;
    int64_t shape[OX_MAXRANK + 2];
    for (int d = 0; d < nbat; d++) {
        int da = d - (nbat - na), db = d - (nbat - nb);
        int64_t ea = da >= 0 ? a->shape[da] : 1, eb = db >= 0 ? b->shape[db] : 1;
        if (ea != eb && ea != 1 && eb != 1)
            return ox_error(ox, n, "batch dimensions do not broadcast: %lld and %lld",
                            (long long)ea, (long long)eb);
        shape[d] = ea == 1 ? eb : ea;
    }
    int r = nbat;
    if (a->rank >= 2)
        shape[r++] = a->shape[a->rank - 2];
    if (b->rank >= 2)
        shape[r++] = b->shape[b->rank - 1];
    if (r > OX_MAXRANK)
        return ox_unsupported(ox, n, "rank %d", r);
    ox_set(ox, n->out[0], a->type, r, shape);
    return true;
}

static bool matmul_write(Ox *ox, const OxNode *n)
{
    int yid = n->out[0];
    OxVal *a = ox_sval(ox, n->in[0]), *b = ox_sval(ox, n->in[1]), *y = ox_sval(ox, yid);
    int na = a->rank > 2 ? a->rank - 2 : 0, nb = b->rank > 2 ? b->rank - 2 : 0;
    int nbat = na > nb ? na : nb;
    const char **ai = arena_alloc(ox->arena, (size_t)(a->rank + 1) * sizeof *ai);
    const char **bi = arena_alloc(ox->arena, (size_t)(b->rank + 1) * sizeof *bi);
    OxVal *y0 = ox_val(ox, yid);
    for (int d = 0; d < na; d++) {
        int od = nbat - na + d;
        ai[d] = a->shape[d] == 1 && y->shape[od] != 1 ? "0" : arena_printf(ox->arena, "i%d", od);
        if (strcmp(ai[d], "0") != 0)
            ox_need_bcast_same(ox, n->in[0], d, y0->shape[od]);
    }
    for (int d = 0; d < nb; d++) {
        int od = nbat - nb + d;
        bi[d] = b->shape[d] == 1 && y->shape[od] != 1 ? "0" : arena_printf(ox->arena, "i%d", od);
        if (strcmp(bi[d], "0") != 0)
            ox_need_bcast_same(ox, n->in[1], d, y0->shape[od]);
    }
    int r = nbat;
    if (a->rank >= 2)
        ai[na] = arena_printf(ox->arena, "i%d", r++), ai[na + 1] = "j0";
    else
        ai[0] = "j0";
    if (b->rank >= 2)
        bi[nb] = "j0", bi[nb + 1] = arena_printf(ox->arena, "i%d", r++);
    else
        bi[0] = "j0";
    const char *ar = ox_read(ox, n->in[0], ai), *br = ox_read(ox, n->in[1], bi);
    ox_stmt(ox, ox_name(ox, yid), y->rank, ox_shape_dims(ox, yid), "+=",
            arena_printf(ox->arena, "%s * %s", ar, br),
            arena_printf(ox->arena, "j0 < %s",
                         ox_dim_str(ox, ox_dim(ox, n->in[0], a->rank - 1))));
    return true;
}

/* ---- pools ------------------------------------------------------------------------------------- */

static bool pool_setup(Ox *ox, const OxNode *n, Win *w)
{
    if (n->nin < 1 || n->in[0] < 0 || n->nout < 1 || n->out[0] < 0)
        return ox_error(ox, n, "needs an input and an output");
    for (int j = 1; j < n->nout; j++)
        if (n->out[j] >= 0)
            return ox_unsupported(ox, n, "the Indices output of MaxPool");
    OxVal *x = ox_val(ox, n->in[0]);
    bool global = strncmp(n->op, "Global", 6) == 0;
    if (global) {
        if (x->rank < 3)
            return ox_error(ox, n, "needs an input of rank 3 or more (N, C, spatial)");
        w->k = x->rank - 2;
        for (int i = 0; i < w->k; i++) {
            w->in[i] = w->kernel[i] = x->shape[i + 2];
            w->stride[i] = w->dil[i] = w->out[i] = 1;
            w->pb[i] = w->pe[i] = 0;
        }
        return true;
    }
    if (ox_attr_int(n, "storage_order", 0) != 0)
        return ox_unsupported(ox, n, "storage_order 1");
    if (!window(ox, n, x, NULL, false, ox_attr_int(n, "ceil_mode", 0) != 0, w))
        return false;
    return true;
}

static bool pool_infer(Ox *ox, const OxNode *n)
{
    Win w;
    if (!pool_setup(ox, n, &w))
        return false;
    OxVal *x = ox_val(ox, n->in[0]);
    int64_t shape[OX_MAXRANK];
    shape[0] = x->shape[0];
    shape[1] = x->shape[1];
    for (int i = 0; i < w.k; i++)
        shape[i + 2] = w.out[i];
    ox_set(ox, n->out[0], x->type, x->rank, shape);
    return true;
}

/* The number of taps of dim i inside [lo, hi) for output o. */
static int64_t taps_inside(const Win *w, int i, int64_t o, int64_t lo, int64_t hi)
{
    int64_t c = 0;
    for (int64_t j = 0; j < w->kernel[i]; j++) {
        int64_t p = o * w->stride[i] + j * w->dil[i] - w->pb[i];
        c += p >= lo && p < hi;
    }
    return c;
}

static bool pool_write(Ox *ox, const OxNode *n)
{
    Win w;
    if (!pool_setup(ox, n, &w))
        return false;
    int xid = n->in[0], yid = n->out[0];
    OxVal *x = ox_val(ox, xid);
    ox_need_fixed_from(ox, xid, 2);
    bool max = strstr(n->op, "MaxPool") != NULL;
    bool global = strncmp(n->op, "Global", 6) == 0;
    /* A square 2-d max pool, the same stride and padding on both axes,
     * floor mode, no dilation: <nn.ein>'s maxpool2d (padded taps read
     * -inf there, which never win: the same as the guards below). */
    if (max && !global && x->rank == 4 && ox_all_f32(ox, n) && w.kernel[0] == w.kernel[1] &&
        w.stride[0] == w.stride[1] && w.dil[0] == 1 && w.dil[1] == 1 && w.pb[0] == w.pb[1] &&
        w.pe[0] == w.pb[0] && w.pe[1] == w.pb[1] && ox_attr_int(n, "ceil_mode", 0) == 0 &&
        w.pb[0] < w.kernel[0]) {
        const char *a = arena_printf(ox->arena, "%s, %" PRId64 ", %" PRId64, ox_name(ox, xid),
                                     w.kernel[0], w.stride[0]);
        if (w.pb[0] != 0)
            a = arena_printf(ox->arena, "%s, pad = %" PRId64, a, w.pb[0]);
        ox_call(ox, yid, "maxpool2d", a);
        return true;
    }
    const char **xi = arena_alloc(ox->arena, (size_t)(x->rank + 1) * sizeof *xi);
    xi[0] = "i0";
    xi[1] = "i1";
    const char *where = "", *guard = "";
    for (int i = 0; i < w.k; i++) {
        xi[i + 2] = global ? arena_printf(ox->arena, "j%d", i) : tap(ox, &w, i, i);
        where = cat(ox, where, ", ", arena_printf(ox->arena, "j%d < %s", i,
                                                  global ? ox_dim_str(ox, ox_dim(ox, xid, i + 2))
                                                         : arena_printf(ox->arena, "%" PRId64,
                                                                        w.kernel[i])));
        /* A max over a window that leaves the input takes the taps inside
         * only (reads outside would be zeros). */
        if (max && !global && leaves(&w, i))
            guard = cat(ox, guard, ", ", arena_printf(ox->arena, "%s >= 0, %s < %" PRId64,
                                                      xi[i + 2], xi[i + 2], w.in[i]));
    }
    const char *xr = ox_read(ox, xid, xi);
    const char *body = xr;
    if (!max) {
        /* The divisor: the taps inside the input (count_include_pad 0) or
         * inside the padded input, per dim; a number where it is the same
         * for every output. */
        bool incl = ox_attr_int(n, "count_include_pad", 0) != 0;
        int64_t konst = 1;
        const char *div = "";
        for (int i = 0; i < w.k; i++) {
            int64_t lo = incl ? -w.pb[i] : 0, hi = incl ? w.in[i] + w.pe[i] : w.in[i];
            int64_t c0 = taps_inside(&w, i, 0, lo, hi);
            bool same = true;
            for (int64_t o = 1; o < w.out[i] && same; o++)
                same = taps_inside(&w, i, o, lo, hi) == c0;
            if (same) {
                konst *= c0;
                continue;
            }
            if (w.dil[i] != 1)
                return ox_unsupported(ox, n, "a dilated average pool whose windows leave "
                                      "the input");
            const char *o = arena_printf(ox->arena, "i%d", i + 2);
            const char *start = add_const(ox, lin(ox, w.stride[i], o, 0), -w.pb[i]);
            div = cat(ox, div, " * ", arena_printf(ox->arena, "(min(%s, %" PRId64 ") - max(%s, "
                                                   "%" PRId64 "))",
                                                   add_const(ox, start, w.kernel[i]), hi,
                                                   start, lo));
        }
        const char *kd = global ? ox_dim_str(ox, ox_dims_prod(ox, xid, 2, x->rank))
                                : arena_printf(ox->arena, "%" PRId64, konst);
        if (strchr(kd, '*'))
            kd = arena_printf(ox->arena, "(%s)", kd);
        if (*div && konst != 1)
            div = arena_printf(ox->arena, "%s * %s", kd, div);
        else if (!*div)
            div = kd;
        if (strcmp(div, "1") != 0)
            body = arena_printf(ox->arena, "%s / %s", xr, !strchr(div, ' ') ? div
                                : arena_printf(ox->arena, "(%s)", div));
    }
    ox_stmt(ox, ox_name(ox, yid), x->rank, ox_shape_dims(ox, yid), max ? "max=" : "+=", body,
            cat(ox, where, ", ", guard));
    return true;
}

/* ---- Resize, Upsample ------------------------------------------------------------------------- */

/* A float scale as a fraction p/q (q <= 10000) equal to it as a float. */
static bool scale_fraction(double s, int64_t *p, int64_t *q)
{
    for (int64_t d = 1; d <= 10000; d++) {
        double nmr = round(s * (double)d);
        if (nmr >= 1 && (float)(nmr / (double)d) == (float)s) {
            *p = (int64_t)nmr;
            *q = d;
            return true;
        }
    }
    return false;
}

typedef struct Rs {
    int rank;
    int64_t in[OX_MAXRANK], out[OX_MAXRANK];
    int64_t sp[OX_MAXRANK], sq[OX_MAXRANK];   /* scale = sp/sq */
    bool linear, is_upsample;
    const char *ctm, *nearest;
} Rs;

static bool resize_setup(Ox *ox, const OxNode *n, Rs *r)
{
    if (n->nin < 1 || n->in[0] < 0)
        return ox_error(ox, n, "needs an input");
    OxVal *x = ox_val(ox, n->in[0]);
    memset(r, 0, sizeof *r);
    r->rank = x->rank;
    r->is_upsample = strcmp(n->op, "Upsample") == 0;
    const char *mode = ox_attr_str(ox, n, "mode", "nearest");
    if (strcmp(mode, "linear") == 0 || strcmp(mode, "bilinear") == 0)
        r->linear = true;
    else if (strcmp(mode, "nearest") != 0)
        return ox_unsupported(ox, n, "mode '%s'", mode);
    bool old = r->is_upsample || ox->opset < 11;
    r->ctm = old ? "asymmetric"
                 : ox_attr_str(ox, n, "coordinate_transformation_mode", "half_pixel");
    r->nearest = old ? "floor" : ox_attr_str(ox, n, "nearest_mode", "round_prefer_floor");
    if (strcmp(r->ctm, "tf_crop_and_resize") == 0)
        return ox_unsupported(ox, n, "coordinate_transformation_mode tf_crop_and_resize");
    /* sizes (opset 11 on) when given, else scales; an empty tensor is
     * "not given" */
    int si = r->is_upsample || ox->opset < 11 ? 1 : 2;
    bool scales_given = ox_has_in(n, si) && !(ox_val(ox, n->in[si])->k &&
                                              ox_val(ox, n->in[si])->k->n == 0);
    if (!r->is_upsample && ox->opset >= 11 && ox_has_in(n, 3) &&
        (!scales_given || !ox_val(ox, n->in[3])->k || ox_val(ox, n->in[3])->k->n > 0)) {
        int cnt;
        const int64_t *sz = ox_const_ints(ox, n, 3, &cnt);
        if (!sz)
            return false;
        if (cnt != x->rank)
            return ox_error(ox, n, "sizes has %d values, not %d", cnt, x->rank);
        for (int d = 0; d < x->rank; d++) {
            r->in[d] = x->shape[d];
            r->out[d] = sz[d];
            if (sz[d] < 1 || sz[d] > OX_MAX_ELEMS)
                return ox_error(ox, n, "sizes has the value %lld", (long long)sz[d]);
            r->sp[d] = sz[d];
            r->sq[d] = x->shape[d];
        }
        return true;
    }
    const float *sc = NULL;
    int cnt = -1;
    if (r->is_upsample && ox->opset < 9) {
        sc = ox_attr_floats(n, "scales", &cnt);
    } else {
        if (!ox_has_in(n, si))
            return ox_error(ox, n, "needs scales or sizes");
        OxVal *s = ox_val(ox, n->in[si]);
        if (!s->k)
            return ox_unsupported(ox, n, "input %d ('%s') must be known at import time "
                                  "(a constant or an initializer)", si, ox->vname[n->in[si]]);
        if (!s->k->f)
            return ox_error(ox, n, "scales must be floats");
        sc = s->k->f;
        cnt = (int)s->k->n;
    }
    if (cnt != x->rank)
        return ox_error(ox, n, "scales has %d values, not %d", cnt, x->rank);
    for (int d = 0; d < x->rank; d++) {
        r->in[d] = x->shape[d];
        if (!(sc[d] > 0) || sc[d] > OX_MAX_ATTR ||
            !scale_fraction(sc[d], &r->sp[d], &r->sq[d]))
            return ox_unsupported(ox, n, "the scale %g", sc[d]);
        double o = floor((double)x->shape[d] * sc[d]);
        if (o > (double)OX_MAX_ELEMS)
            return ox_error(ox, n, "the output is too large");
        r->out[d] = (int64_t)o;
        if (r->out[d] < 1)
            return ox_error(ox, n, "an empty output");
    }
    return true;
}

static bool resize_infer(Ox *ox, const OxNode *n)
{
    Rs r;
    if (!resize_setup(ox, n, &r))
        return false;
    ox_set(ox, n->out[0], ox_val(ox, n->in[0])->type, r.rank, r.out);
    return true;
}

/* x_original = (a*o + b) / den for output index o of dim d. */
static void coord(const Rs *r, int d, int64_t *a, int64_t *b, int64_t *den)
{
    int64_t p = r->sp[d], q = r->sq[d];   /* scale = p/q: x = o*q/p ... */
    const char *m = r->ctm;
    if (strcmp(m, "asymmetric") == 0) {
        *a = q, *b = 0, *den = p;
    } else if (strcmp(m, "align_corners") == 0) {
        /* x = o * (in - 1) / (in * scale - 1): ONNX takes the resized
         * length unrounded, in * p / q (out itself for sizes) */
        int64_t l = r->in[d] * p - q;
        if (l <= 0)
            *a = 0, *b = 0, *den = 1;
        else
            *a = (r->in[d] - 1) * q, *b = 0, *den = l;
    } else if (strcmp(m, "tf_half_pixel_for_nn") == 0) {
        *a = 2 * q, *b = q, *den = 2 * p;
    } else if (strcmp(m, "pytorch_half_pixel") == 0 && r->out[d] == 1) {
        *a = 0, *b = 0, *den = 1;
    } else {                        /* half_pixel, pytorch_half_pixel */
        *a = 2 * q, *b = q - p, *den = 2 * p;
    }
}

static int64_t floordiv(int64_t a, int64_t b)
{
    return i64_floordiv(a, b);
}

/* Nearest: idx = floor((na*o + nb) / nd). */
static bool nearest_form(const Rs *r, int d, int64_t *na, int64_t *nb, int64_t *nd)
{
    int64_t a, b, den;
    coord(r, d, &a, &b, &den);
    const char *m = r->nearest;
    if (strcmp(m, "floor") == 0)
        *na = a, *nb = b, *nd = den;
    else if (strcmp(m, "ceil") == 0)
        *na = a, *nb = b + den - 1, *nd = den;
    else if (strcmp(m, "round_prefer_ceil") == 0)
        *na = 2 * a, *nb = 2 * b + den, *nd = 2 * den;
    else if (strcmp(m, "round_prefer_floor") == 0)
        *na = 2 * a, *nb = 2 * b + den - 1, *nd = 2 * den;
    else
        return false;
    return true;
}

static const char *idx_div(Ox *ox, int64_t a, const char *v, int64_t b, int64_t den)
{
    const char *s = lin(ox, a, v, b);
    if (den == 1)
        return s;
    return arena_printf(ox->arena, "(%s) / %" PRId64, s, den);
}

/* The body for dims d.. of a nearest resize, with clamping selects where
 * an index leaves the input. */
static const char *nearest_body(Ox *ox, int xid, const Rs *r, const char **sub, int d)
{
    if (d == r->rank)
        return ox_read(ox, xid, sub);
    const char *o = arena_printf(ox->arena, "i%d", d);
    if (r->in[d] == r->out[d] && r->sp[d] == r->sq[d]) {
        sub[d] = o;
        return nearest_body(ox, xid, r, sub, d + 1);
    }
    int64_t na, nb, nd;
    nearest_form(r, d, &na, &nb, &nd);
    int64_t lo_end = 0, hi_start = r->out[d];    /* o < lo_end: below 0; o >= hi_start: above */
    for (int64_t i = 0; i < r->out[d]; i++) {
        int64_t v = floordiv(na * i + nb, nd);
        if (v < 0)
            lo_end = i + 1;
        if (v >= r->in[d] && hi_start == r->out[d])
            hi_start = i;
    }
    sub[d] = idx_div(ox, na, o, nb, nd);
    const char *mid = nearest_body(ox, xid, r, sub, d + 1);
    const char *s = mid;
    if (hi_start < r->out[d]) {
        sub[d] = arena_printf(ox->arena, "%" PRId64, r->in[d] - 1);
        s = arena_printf(ox->arena, "select(%s >= %" PRId64 ", %s, %s)", o, hi_start,
                         nearest_body(ox, xid, r, sub, d + 1), s);
    }
    if (lo_end > 0) {
        sub[d] = "0";
        s = arena_printf(ox->arena, "select(%s < %" PRId64 ", %s, %s)", o, lo_end,
                         nearest_body(ox, xid, r, sub, d + 1), s);
    }
    return s;
}

/* Linear: the sum over the 2 taps of each resized dim of weight * read. */
static const char *linear_body(Ox *ox, int xid, const Rs *r, const char **sub,
                               const char *wsofar, int d)
{
    if (d == r->rank) {
        const char *rd = ox_read(ox, xid, sub);
        return *wsofar ? arena_printf(ox->arena, "%s * %s", wsofar, rd) : rd;
    }
    const char *o = arena_printf(ox->arena, "i%d", d);
    if (r->in[d] == r->out[d] && r->sp[d] == r->sq[d]) {
        sub[d] = o;
        return linear_body(ox, xid, r, sub, wsofar, d + 1);
    }
    int64_t a, b, den;
    coord(r, d, &a, &b, &den);
    const char *num = lin(ox, a, o, b);
    bool exact = true;              /* every coordinate an integer: one tap */
    for (int64_t i = 0; i < r->out[d] && exact; i++)
        exact = i64_floormod(a * i + b, den) == 0;
    sub[d] = idx_div(ox, a, o, b, den);
    if (exact)
        return linear_body(ox, xid, r, sub, wsofar, d + 1);
    /* i0 = floor(num / den), f = (num mod den) / den; the tap outside the
     * input (i0 = -1 or i0 + 1 = in) reads 0, and the other takes weight 1,
     * as the edge value both would be. */
    const char *f = arena_printf(ox->arena, "(%s) %% %" PRId64 " / %" PRId64, num, den, den);
    const char *w0 = arena_printf(ox->arena, "select(%s >= %" PRId64 ", 1, 1 - %s)", num,
                                  (r->in[d] - 1) * den, f);
    const char *w1 = arena_printf(ox->arena, "select(%s < 0, 1, %s)", num, f);
    const char *t0 = linear_body(ox, xid, r, sub, cat(ox, wsofar, " * ", w0), d + 1);
    sub[d] = idx_div(ox, a, o, b + den, den);
    const char *t1 = linear_body(ox, xid, r, sub, cat(ox, wsofar, " * ", w1), d + 1);
    return arena_printf(ox->arena, "%s +\n        %s", t0, t1);
}

static bool resize_write(Ox *ox, const OxNode *n)
{
    Rs r;
    if (!resize_setup(ox, n, &r))
        return false;
    int xid = n->in[0], yid = n->out[0];
    for (int d = 0; d < r.rank; d++)
        if (ox->symbolic && !(ox->val[0][xid].shape[d] == ox->val[0][yid].shape[d] &&
                              ox->val[1][xid].shape[d] == ox->val[1][yid].shape[d]))
            ox_need_fixed(ox, xid, d), ox_need_fixed(ox, yid, d);
    const char **sub = arena_alloc(ox->arena, (size_t)(r.rank + 1) * sizeof *sub);
    if (!r.linear) {
        for (int d = 0; d < r.rank; d++) {
            int64_t na, nb, nd;
            if (!nearest_form(&r, d, &na, &nb, &nd))
                return ox_error(ox, n, "unknown nearest_mode '%s'", r.nearest);
        }
    }
    if (strcmp(r.ctm, "asymmetric") && strcmp(r.ctm, "align_corners") &&
        strcmp(r.ctm, "half_pixel") && strcmp(r.ctm, "pytorch_half_pixel") &&
        strcmp(r.ctm, "tf_half_pixel_for_nn"))
        return ox_error(ox, n, "unknown coordinate_transformation_mode '%s'", r.ctm);
    const char *body = r.linear ? linear_body(ox, xid, &r, sub, "", 0)
                                : nearest_body(ox, xid, &r, sub, 0);
    ox_stmt(ox, ox_name(ox, yid), r.rank, ox_shape_dims(ox, yid), "=", body, NULL);
    return true;
}

const OxOp ox_ops_nn[] = {
    {"Conv", conv_infer, conv_write},
    {"ConvTranspose", conv_infer, conv_write},
    {"Gemm", gemm_infer, gemm_write},
    {"MatMul", matmul_infer, matmul_write},
    {"MaxPool", pool_infer, pool_write},
    {"AveragePool", pool_infer, pool_write},
    {"GlobalAveragePool", pool_infer, pool_write},
    {"GlobalMaxPool", pool_infer, pool_write},
    {"Resize", resize_infer, resize_write},
    {"Upsample", resize_infer, resize_write},
    {NULL, NULL, NULL},
};
