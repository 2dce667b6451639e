/* ops_shape.c - the operators that move data: Reshape, Flatten, Squeeze,
 * Unsqueeze, Transpose, Concat, Split, Slice, Gather, GatherElements,
 * GatherND, Pad, Expand, Tile, DepthToSpace, SpaceToDepth, each an index
 * map (ein(5): `t[i, j] = x[j, i]`); and Shape, Size, Constant, ConstantOfShape, Range and Where,
 * which the importer evaluates.  Every index map also folds a value known
 * at import time, since exported models compute their shapes with them. */
#include "config.h"

#include <inttypes.h>
#include <string.h>

#include "onnx/onnx_int.h"

static bool io_check(Ox *ox, const OxNode *n, int nin)
{
    if (n->nin < nin || n->in[0] < 0 || n->nout < 1 || n->out[0] < 0)
        return ox_error(ox, n, "needs %d input%s and an output", nin, nin > 1 ? "s" : "");
    for (int i = 0; i < nin; i++)
        if (n->in[i] < 0)
            return ox_error(ox, n, "input %d is missing", i);
    return true;
}

/* ---- folding: out element j is in element src[j] -------------------------------------- */

static void fold_gathered(Ox *ox, int yid, const OxVal *x, const int64_t *src)
{
    OxVal *y = ox_val(ox, yid);
    int64_t n = ox_numel(y);
    OxConst *k = ox_const_new(ox, x->k->type, n);
    for (int64_t j = 0; j < n; j++) {
        if (k->f)
            k->f[j] = x->k->f[src[j]];
        else if (k->i)
            k->i[j] = x->k->i[src[j]];
        else
            k->h[j] = x->k->h[src[j]];
    }
    y->k = k;
    y->kind = VK_CONST;
}

/* Unflatten j over shape into idx. */
static void unflat(int64_t j, int rank, const int64_t *shape, int64_t *idx)
{
    for (int d = rank - 1; d >= 0; d--) {
        idx[d] = j % shape[d];
        j /= shape[d];
    }
}

static int64_t flat(int rank, const int64_t *shape, const int64_t *idx)
{
    int64_t j = 0;
    for (int d = 0; d < rank; d++)
        j = j * shape[d] + idx[d];
    return j;
}

static int64_t *src_buf(Ox *ox, int yid)
{
    int64_t n = ox_numel(ox_val(ox, yid));
    return arena_alloc(ox->arena, (size_t)(n + 1) * sizeof(int64_t));
}

/* ---- Reshape, Flatten, Squeeze, Unsqueeze -------------------------------------------------- */

static bool set_reshaped(Ox *ox, const OxNode *n, int rank, const int64_t *shape)
{
    OxVal *x = ox_val(ox, n->in[0]);
    int64_t cnt = 1;
    for (int d = 0; d < rank; d++)
        cnt *= shape[d];
    if (cnt != ox_numel(x))
        return ox_error(ox, n, "cannot reshape %lld elements into %lld", (long long)ox_numel(x),
                        (long long)cnt);
    int type = x->type;
    OxConst *k = x->k;
    ValKind kind = x->kind;
    ox_set(ox, n->out[0], type, rank, shape);
    if (k) {
        OxVal *y = ox_val(ox, n->out[0]);
        y->k = k;                   /* the same elements in the same order */
        y->kind = kind == VK_WEIGHT ? VK_WEIGHT : VK_CONST;
    }
    return true;
}

static bool reshape_infer(Ox *ox, const OxNode *n)
{
    OxVal *x = ox_val(ox, n->in[0]);
    int64_t shape[OX_MAXRANK];
    int rank = 0;
    if (strcmp(n->op, "Reshape") == 0) {
        int cnt;
        const int64_t *s;
        if (ox->opset < 5) {
            s = ox_attr_ints(n, "shape", &cnt);
            if (cnt < 0)
                return ox_error(ox, n, "needs a shape");
        } else {
            if (!io_check(ox, n, 2) || !(s = ox_const_ints(ox, n, 1, &cnt)))
                return false;
        }
        if (cnt > OX_MAXRANK)
            return ox_unsupported(ox, n, "rank %d", cnt);
        bool allowzero = ox_attr_int(n, "allowzero", 0) != 0;
        int minus = -1;
        int64_t known = 1;
        for (int d = 0; d < cnt; d++) {
            int64_t v = s[d];
            if (v == 0 && !allowzero) {
                if (d >= x->rank)
                    return ox_error(ox, n, "shape value 0 at %d copies no dimension", d);
                v = x->shape[d];
            }
            if (v == -1) {
                if (minus >= 0)
                    return ox_error(ox, n, "shape has two -1");
                minus = d;
                v = 1;
            } else if (v == 0) {
                /* allowzero's 0, or a copied dimension of 0 */
                return ox_unsupported(ox, n, "an empty output");
            } else if (v < 1) {
                return ox_error(ox, n, "shape has the value %lld", (long long)v);
            }
            if (v > OX_MAX_ELEMS || !i64_mul(known, v, &known) || known > OX_MAX_ELEMS)
                return ox_error(ox, n, "shape has the value %lld", (long long)v);
            shape[d] = v;
        }
        if (minus >= 0) {
            if (known == 0 || ox_numel(x) % known != 0)
                return ox_error(ox, n, "cannot reshape %lld elements into that shape",
                                (long long)ox_numel(x));
            shape[minus] = ox_numel(x) / known;
        }
        rank = cnt;
    } else if (strcmp(n->op, "Flatten") == 0) {
        int axis;
        int64_t a = ox_attr_int(n, "axis", 1);
        if (a < -x->rank || a > x->rank)
            return ox_error(ox, n, "axis %lld is out of range", (long long)a);
        axis = (int)(a < 0 ? a + x->rank : a);
        shape[0] = shape[1] = 1;
        for (int d = 0; d < x->rank; d++)
            shape[d >= axis] *= x->shape[d];
        rank = 2;
    } else {
        bool squeeze = strcmp(n->op, "Squeeze") == 0;
        int cnt;
        const int64_t *axes;
        if (ox->opset >= 13) {
            cnt = -1;
            axes = NULL;
            if (ox_has_in(n, 1) && !(axes = ox_const_ints(ox, n, 1, &cnt)))
                return false;
        } else {
            axes = ox_attr_ints(n, "axes", &cnt);
        }
        if (!squeeze && cnt < 0)
            return ox_error(ox, n, "needs axes");
        int outr = squeeze ? x->rank : x->rank + cnt;
        if (outr > OX_MAXRANK)
            return ox_unsupported(ox, n, "rank %d", outr);
        bool mark[OX_MAXRANK + 1] = {0};
        for (int i = 0; i < cnt; i++) {
            int a;
            if (!ox_axis(ox, n, axes[i], squeeze ? x->rank : outr, &a))
                return false;
            if (mark[a])
                return ox_error(ox, n, "axis %d is listed twice", a);
            mark[a] = true;
            if (squeeze && x->shape[a] != 1)
                return ox_error(ox, n, "dimension %d has size %lld, not 1", a,
                                (long long)x->shape[a]);
        }
        if (squeeze) {
            for (int d = 0; d < x->rank; d++)
                if (cnt < 0 ? x->shape[d] != 1 : !mark[d])
                    shape[rank++] = x->shape[d];
        } else {
            for (int d = 0, s = 0; d < outr; d++)
                shape[rank++] = mark[d] ? 1 : x->shape[s++];
        }
    }
    return set_reshaped(ox, n, rank, shape);
}

/* "(8*B)" for a stride or a dimension in a subscript. */
static const char *paren_dim(Ox *ox, Dim d)
{
    const char *s = ox_dim_str(ox, d);
    return strchr(s, '*') ? arena_printf(ox->arena, "(%s)", s) : s;
}

/* The subscripts of x for a reshape of x into y, grouping the non-unit
 * dimensions whose products agree. */
static const char **reshape_subs(Ox *ox, int xid, int yid)
{
    OxVal *x = ox_sval(ox, xid), *y = ox_sval(ox, yid);
    const char **sub = arena_alloc(ox->arena, (size_t)(x->rank + 1) * sizeof *sub);
    int xi[OX_MAXRANK], yi[OX_MAXRANK], nx = 0, ny = 0;
    for (int d = 0; d < x->rank; d++) {
        sub[d] = "0";
        if (x->shape[d] != 1)
            xi[nx++] = d;
    }
    for (int d = 0; d < y->rank; d++)
        if (y->shape[d] != 1)
            yi[ny++] = d;
    int a = 0, b = 0;
    while (a < nx && b < ny) {
        int a0 = a, b0 = b;
        int64_t px = x->shape[xi[a]], py = y->shape[yi[b]];
        while (px != py) {
            if (px < py)
                px *= x->shape[xi[++a]];
            else
                py *= y->shape[yi[++b]];
        }
        a++, b++;
        /* The flat index of the group over y's dims [b0, b). */
        const char *fl = "";
        for (int k = b0; k < b; k++) {
            Dim st = ox_dim_num(1);
            for (int q = k + 1; q < b; q++)
                st = ox_dim_mul(st, ox_dim(ox, yid, yi[q]));
            const char *v = arena_printf(ox->arena, "i%d", yi[k]);
            const char *t = st.c == 1 && st.e == 0 ? v
                            : arena_printf(ox->arena, "%s*%s", ox_dim_str(ox, st), v);
            fl = *fl ? arena_printf(ox->arena, "%s + %s", fl, t) : t;
        }
        bool one = b - b0 == 1;
        for (int k = a0; k < a; k++) {
            Dim st = ox_dim_num(1);
            for (int q = k + 1; q < a; q++)
                st = ox_dim_mul(st, ox_dim(ox, xid, xi[q]));
            const char *f = one || a - a0 == 1 ? fl : arena_printf(ox->arena, "(%s)", fl);
            if (a - a0 == 1) {
                sub[xi[k]] = f;
                continue;
            }
            const char *s = f;
            if (!(st.c == 1 && st.e == 0))
                s = arena_printf(ox->arena, "%s / %s", s, paren_dim(ox, st));
            if (k > a0)
                s = arena_printf(ox->arena, "%s %% %s", s, paren_dim(ox, ox_dim(ox, xid, xi[k])));
            sub[xi[k]] = s;
        }
    }
    return sub;
}

static bool reshape_write(Ox *ox, const OxNode *n)
{
    int xid = n->in[0], yid = n->out[0];
    OxVal *y = ox_val(ox, yid);
    const char *body = ox_read(ox, xid, reshape_subs(ox, xid, yid));
    ox_stmt(ox, ox_name(ox, yid), y->rank, ox_shape_dims(ox, yid), "=", body, NULL);
    return true;
}

/* ---- Transpose -------------------------------------------------------------------------------- */

static bool perm_of(Ox *ox, const OxNode *n, int rank, int *perm)
{
    int cnt;
    const int64_t *p = ox_attr_ints(n, "perm", &cnt);
    if (cnt < 0) {
        for (int d = 0; d < rank; d++)
            perm[d] = rank - 1 - d;
        return true;
    }
    if (cnt != rank)
        return ox_error(ox, n, "perm has %d values, not %d", cnt, rank);
    bool seen[OX_MAXRANK] = {0};
    for (int d = 0; d < rank; d++) {
        if (p[d] < 0 || p[d] >= rank || seen[p[d]])
            return ox_error(ox, n, "perm is not a permutation");
        seen[p[d]] = true;
        perm[d] = (int)p[d];
    }
    return true;
}

static bool transpose_infer(Ox *ox, const OxNode *n)
{
    if (!io_check(ox, n, 1))
        return false;
    OxVal *x = ox_val(ox, n->in[0]);
    int perm[OX_MAXRANK];
    if (!perm_of(ox, n, x->rank, perm))
        return false;
    int64_t shape[OX_MAXRANK];
    for (int d = 0; d < x->rank; d++)
        shape[d] = x->shape[perm[d]];
    ox_set(ox, n->out[0], x->type, x->rank, shape);
    if (x->k && ox_numel(ox_val(ox, n->out[0])) <= OX_MAX_FOLD) {
        int64_t *src = src_buf(ox, n->out[0]), idx[OX_MAXRANK], xi[OX_MAXRANK];
        for (int64_t j = 0; j < ox_numel(ox_val(ox, n->out[0])); j++) {
            unflat(j, x->rank, shape, idx);
            for (int d = 0; d < x->rank; d++)
                xi[perm[d]] = idx[d];
            src[j] = flat(x->rank, x->shape, xi);
        }
        fold_gathered(ox, n->out[0], x, src);
    }
    return true;
}

static bool transpose_write(Ox *ox, const OxNode *n)
{
    int xid = n->in[0], yid = n->out[0];
    OxVal *x = ox_val(ox, xid);
    int perm[OX_MAXRANK];
    perm_of(ox, n, x->rank, perm);
    const char **sub = arena_alloc(ox->arena, (size_t)(x->rank + 1) * sizeof *sub);
    for (int d = 0; d < x->rank; d++)
        sub[perm[d]] = arena_printf(ox->arena, "i%d", d);
    const char *body = ox_read(ox, xid, sub);
    ox_stmt(ox, ox_name(ox, yid), x->rank, ox_shape_dims(ox, yid), "=", body, NULL);
    return true;
}

/* ---- Concat ----------------------------------------------------------------------------------- */

static bool concat_infer(Ox *ox, const OxNode *n)
{
    if (!io_check(ox, n, 1))
        return false;
    OxVal *x = ox_val(ox, n->in[0]);
    int axis;
    if (!ox_axis(ox, n, ox_attr_int(n, "axis", 0), x->rank, &axis))
        return false;
    int64_t shape[OX_MAXRANK];
    memcpy(shape, x->shape, sizeof shape);
    shape[axis] = 0;
    bool known = true;
    for (int i = 0; i < n->nin; i++) {
        if (n->in[i] < 0)
            return ox_error(ox, n, "input %d is missing", i);
        OxVal *v = ox_val(ox, n->in[i]);
        if (v->rank != x->rank || v->type != x->type)
            return ox_error(ox, n, "input %d has another rank or element type", i);
        for (int d = 0; d < x->rank; d++)
            if (d != axis && v->shape[d] != x->shape[d])
                return ox_error(ox, n, "input %d has size %lld in dimension %d, not %lld", i,
                                (long long)v->shape[d], d, (long long)x->shape[d]);
        shape[axis] += v->shape[axis];
        known = known && v->k;
    }
    ox_set(ox, n->out[0], x->type, x->rank, shape);
    if (known && ox_numel(ox_val(ox, n->out[0])) <= OX_MAX_FOLD) {
        /* Fold: concatenate the inputs' data. */
        OxVal *y = ox_val(ox, n->out[0]);
        int64_t cnt = ox_numel(y), idx[OX_MAXRANK];
        OxConst *k = ox_const_new(ox, x->k->type, cnt);
        for (int64_t j = 0; j < cnt; j++) {
            unflat(j, x->rank, shape, idx);
            int i = 0;
            while (idx[axis] >= ox_val(ox, n->in[i])->shape[axis])
                idx[axis] -= ox_val(ox, n->in[i++])->shape[axis];
            OxVal *v = ox_val(ox, n->in[i]);
            int64_t s = flat(x->rank, v->shape, idx);
            if (k->f)
                k->f[j] = v->k->f[s];
            else if (k->i)
                k->i[j] = v->k->i[s];
            else
                k->h[j] = v->k->h[s];
        }
        y->k = k;
        y->kind = VK_CONST;
    }
    return true;
}

static bool concat_write(Ox *ox, const OxNode *n)
{
    int yid = n->out[0];
    OxVal *y = ox_val(ox, yid);
    int axis;
    ox_axis(ox, n, ox_attr_int(n, "axis", 0), y->rank, &axis);
    const char *const *idx = ox_loop_idx(ox, y->rank);
    const char **sub = arena_alloc(ox->arena, (size_t)(y->rank + 1) * sizeof *sub);
    memcpy(sub, idx, (size_t)y->rank * sizeof *sub);
    /* select(c < C1, a[.., c, ..], select(c < C1 + C2, b[.., c - C1, ..], ...)) */
    Dim off = ox_dim_num(0);
    const char **parts = arena_alloc(ox->arena, (size_t)(n->nin + 1) * sizeof *parts);
    const char **conds = arena_alloc(ox->arena, (size_t)(n->nin + 1) * sizeof *conds);
    int last = -1;
    for (int i = 0; i < n->nin; i++) {
        Dim dd = ox_dim(ox, n->in[i], axis);
        if (dd.c == 0) {
            parts[i] = conds[i] = NULL;     /* an empty input: no part */
            continue;
        }
        last = i;
        const char *os = ox_dim_str(ox, off);
        sub[axis] = off.c == 0 ? idx[axis]
                    : arena_printf(ox->arena, "%s - %s", idx[axis], paren_dim(ox, off));
        (void)os;
        parts[i] = ox_read(ox, n->in[i], sub);
        if (off.e == dd.e || off.c == 0)
            off = (Dim){off.c + dd.c, dd.e};
        else
            ox->write_failed = true;        /* B + 1: not c*B */
        conds[i] = arena_printf(ox->arena, "%s < %s", idx[axis], ox_dim_str(ox, off));
    }
    if (last < 0)
        return ox_unsupported(ox, n, "an empty output");
    const char *body = parts[last];
    for (int i = last - 1; i >= 0; i--)
        if (parts[i])
            body = arena_printf(ox->arena, "select(%s, %s, %s)", conds[i], parts[i], body);
    ox_stmt(ox, ox_name(ox, yid), y->rank, ox_shape_dims(ox, yid), "=", body, NULL);
    return true;
}

/* ---- Split --------------------------------------------------------------------------------------- */

static bool split_sizes(Ox *ox, const OxNode *n, int *axis, int64_t *sizes)
{
    OxVal *x = ox_val(ox, n->in[0]);
    if (!ox_axis(ox, n, ox_attr_int(n, "axis", 0), x->rank, axis))
        return false;
    int cnt = -1;
    const int64_t *s = NULL;
    if (ox->opset >= 13) {
        if (ox_has_in(n, 1) && !(s = ox_const_ints(ox, n, 1, &cnt)))
            return false;
    } else {
        s = ox_attr_ints(n, "split", &cnt);
    }
    int64_t dim = x->shape[*axis];
    if (cnt >= 0) {
        if (cnt != n->nout)
            return ox_error(ox, n, "split has %d values for %d outputs", cnt, n->nout);
        int64_t t = 0;
        for (int i = 0; i < cnt; i++) {
            if (s[i] < 0)
                return ox_error(ox, n, "split has the value %lld", (long long)s[i]);
            sizes[i] = s[i];
            t += s[i];
        }
        if (t != dim)
            return ox_error(ox, n, "split sums to %lld, not %lld", (long long)t, (long long)dim);
        return true;
    }
    int64_t parts = n->nout, each = (dim + parts - 1) / parts;
    for (int i = 0; i < n->nout; i++) {
        int64_t left = dim - each * i;
        sizes[i] = left < 0 ? 0 : left < each ? left : each;
    }
    if (dim % parts != 0 && ox->opset < 18)
        return ox_error(ox, n, "%lld does not split into %lld equal parts", (long long)dim,
                        (long long)parts);
    return true;
}

static bool split_infer(Ox *ox, const OxNode *n)
{
    if (!io_check(ox, n, 1))
        return false;
    OxVal *x = ox_val(ox, n->in[0]);
    int axis;
    int64_t *sizes = arena_alloc(ox->arena, (size_t)(n->nout + 1) * sizeof *sizes);
    if (!split_sizes(ox, n, &axis, sizes))
        return false;
    int64_t off = 0;
    for (int i = 0; i < n->nout; i++) {
        int64_t shape[OX_MAXRANK];
        memcpy(shape, x->shape, sizeof shape);
        shape[axis] = sizes[i];
        if (n->out[i] >= 0) {
            if (sizes[i] == 0)
                return ox_unsupported(ox, n, "an empty output");
            ox_set(ox, n->out[i], x->type, x->rank, shape);
            if (x->k && ox_numel(ox_val(ox, n->out[0])) <= OX_MAX_FOLD) {
                int64_t *src = src_buf(ox, n->out[i]), idx[OX_MAXRANK];
                for (int64_t j = 0; j < ox_numel(ox_val(ox, n->out[i])); j++) {
                    unflat(j, x->rank, shape, idx);
                    idx[axis] += off;
                    src[j] = flat(x->rank, x->shape, idx);
                }
                fold_gathered(ox, n->out[i], x, src);
            }
        }
        off += sizes[i];
    }
    return true;
}

static bool split_write(Ox *ox, const OxNode *n)
{
    OxVal *x = ox_val(ox, n->in[0]);
    int axis;
    int64_t *sizes = arena_alloc(ox->arena, (size_t)(n->nout + 1) * sizeof *sizes);
    split_sizes(ox, n, &axis, sizes);
    int64_t off = 0;
    for (int i = 0; i < n->nout; i++) {
        if (n->out[i] >= 0) {
            const char *const *idx = ox_loop_idx(ox, x->rank);
            const char **sub = arena_alloc(ox->arena, (size_t)(x->rank + 1) * sizeof *sub);
            memcpy(sub, idx, (size_t)x->rank * sizeof *sub);
            if (off)
                sub[axis] = arena_printf(ox->arena, "%s + %" PRId64, idx[axis], off);
            if (ox->symbolic && ox->val[0][n->in[0]].shape[axis] !=
                                    ox->val[1][n->in[0]].shape[axis])
                ox->write_failed = true;        /* offsets would depend on B */
            const char *body = ox_read(ox, n->in[0], sub);
            ox_stmt(ox, ox_name(ox, n->out[i]), x->rank, ox_shape_dims(ox, n->out[i]), "=",
                    body, NULL);
        }
        off += sizes[i];
    }
    return true;
}

/* ---- Slice --------------------------------------------------------------------------------------- */

typedef struct Sl {
    int64_t start[OX_MAXRANK], step[OX_MAXRANK], len[OX_MAXRANK];
} Sl;

static bool slice_params(Ox *ox, const OxNode *n, Sl *s)
{
    OxVal *x = ox_val(ox, n->in[0]);
    int cs, ce, ca = -1, cp = -1;
    const int64_t *st, *en, *ax = NULL, *sp = NULL;
    if (ox->opset < 10) {
        st = ox_attr_ints(n, "starts", &cs);
        en = ox_attr_ints(n, "ends", &ce);
        ax = ox_attr_ints(n, "axes", &ca);
        if (cs < 0 || ce < 0)
            return ox_error(ox, n, "needs starts and ends");
    } else {
        if (!io_check(ox, n, 3) || !(st = ox_const_ints(ox, n, 1, &cs)) ||
            !(en = ox_const_ints(ox, n, 2, &ce)))
            return false;
        if (ox_has_in(n, 3) && !(ax = ox_const_ints(ox, n, 3, &ca)))
            return false;
        if (ox_has_in(n, 4) && !(sp = ox_const_ints(ox, n, 4, &cp)))
            return false;
    }
    if (cs != ce || (ca >= 0 && ca != cs) || (cp >= 0 && cp != cs))
        return ox_error(ox, n, "starts, ends, axes and steps differ in length");
    for (int d = 0; d < x->rank; d++)
        s->start[d] = 0, s->step[d] = 1, s->len[d] = x->shape[d];
    bool seen[OX_MAXRANK] = {0};
    for (int i = 0; i < cs; i++) {
        int a = i;
        if (ax && !ox_axis(ox, n, ax[i], x->rank, &a))
            return false;
        if (seen[a])
            return ox_error(ox, n, "axis %d is sliced twice", a);
        seen[a] = true;
        int64_t dim = x->shape[a], step = sp ? sp[i] : 1, b = st[i], e = en[i];
        if (step == 0)
            return ox_error(ox, n, "a step of 0");
        /* a step longer than the dimension takes one element */
        step = step > OX_MAX_ELEMS ? OX_MAX_ELEMS : step < -OX_MAX_ELEMS ? -OX_MAX_ELEMS : step;
        if (b < 0)
            b += dim;
        if (e < 0 && e > INT64_MIN / 2)
            e += dim;
        if (step > 0) {
            b = b < 0 ? 0 : b > dim ? dim : b;
            e = e < 0 ? 0 : e > dim ? dim : e;
        } else {
            b = b < 0 ? -1 : b > dim - 1 ? dim - 1 : b;
            e = e < -1 ? -1 : e > dim - 1 ? dim - 1 : e;
        }
        int64_t len = step > 0 ? (e - b + step - 1) / step : (b - e + (-step) - 1) / (-step);
        s->start[a] = b;
        s->step[a] = step;
        s->len[a] = len > 0 ? len : 0;
    }
    return true;
}

static bool slice_infer(Ox *ox, const OxNode *n)
{
    if (!io_check(ox, n, 1))
        return false;
    OxVal *x = ox_val(ox, n->in[0]);
    Sl s;
    if (!slice_params(ox, n, &s))
        return false;
    for (int d = 0; d < x->rank; d++)
        if (s.len[d] == 0) {
            /* an empty slice of a known value (of a shape, say) may go on
             * into a Concat, known and empty; no other operator takes it
             * (graph.c) */
            if (!x->k || x->k->h)
                return ox_unsupported(ox, n, "an empty output");
            ox_set(ox, n->out[0], x->type, x->rank, s.len);
            OxVal *y = ox_val(ox, n->out[0]);
            y->kind = VK_CONST;
            y->k = ox_const_new(ox, x->k->type, 0);
            return true;
        }
    ox_set(ox, n->out[0], x->type, x->rank, s.len);
    if (x->k && ox_numel(ox_val(ox, n->out[0])) <= OX_MAX_FOLD) {
        int64_t *src = src_buf(ox, n->out[0]), idx[OX_MAXRANK];
        for (int64_t j = 0; j < ox_numel(ox_val(ox, n->out[0])); j++) {
            unflat(j, x->rank, s.len, idx);
            for (int d = 0; d < x->rank; d++)
                idx[d] = s.start[d] + s.step[d] * idx[d];
            src[j] = flat(x->rank, x->shape, idx);
        }
        fold_gathered(ox, n->out[0], x, src);
    }
    return true;
}

static const char *affine(Ox *ox, int64_t b, int64_t a, const char *v)
{
    const char *t = a == 1 ? v : a == -1 ? arena_printf(ox->arena, "-%s", v)
                                         : arena_printf(ox->arena, "%" PRId64 "*%s", a, v);
    if (b == 0)
        return t;
    if (a < 0)
        return arena_printf(ox->arena, "%" PRId64 " - %s", b,
                            a == -1 ? v : arena_printf(ox->arena, "%" PRId64 "*%s", -a, v));
    return arena_printf(ox->arena, "%s + %" PRId64, t, b);
}

static bool slice_write(Ox *ox, const OxNode *n)
{
    int xid = n->in[0], yid = n->out[0];
    OxVal *x = ox_val(ox, xid);
    Sl s;
    if (!slice_params(ox, n, &s))
        return false;
    const char *const *idx = ox_loop_idx(ox, x->rank);
    const char **sub = arena_alloc(ox->arena, (size_t)(x->rank + 1) * sizeof *sub);
    for (int d = 0; d < x->rank; d++) {
        sub[d] = affine(ox, s.start[d], s.step[d], idx[d]);
        if (ox->symbolic && (s.start[d] != 0 || s.step[d] != 1) &&
            ox->val[0][xid].shape[d] != ox->val[1][xid].shape[d])
            ox->write_failed = true;
    }
    const char *body = ox_read(ox, xid, sub);
    ox_stmt(ox, ox_name(ox, yid), x->rank, ox_shape_dims(ox, yid), "=", body, NULL);
    return true;
}

/* ---- Gather ---------------------------------------------------------------------------------------- */

/* What Gather and GatherElements check first: two inputs, the axis
 * (into *axis), integer indices. */
static bool gather_operands(Ox *ox, const OxNode *n, int *axis)
{
    if (!io_check(ox, n, 2))
        return false;
    OxVal *x = ox_val(ox, n->in[0]), *ix = ox_val(ox, n->in[1]);
    if (!ox_axis(ox, n, ox_attr_int(n, "axis", 0), x->rank, axis))
        return false;
    if (!ox_type_is_int(ix->type))
        return ox_error(ox, n, "the indices are %s, not integers", ox_type_name(ix->type));
    return true;
}

/* Known indices: is each in [-dim, dim) for the size dim of the axis of
 * x it picks?  Index j picks axis first + j % k (k > 1: GatherND's
 * tuples of k). */
static bool known_indices_fit(Ox *ox, const OxNode *n, const OxVal *x, const OxVal *ix,
                              int first, int k)
{
    if (!ix->k)
        return true;
    for (int64_t j = 0; j < ix->k->n; j++) {
        int64_t dim = x->shape[first + j % k], v = ix->k->i[j];
        if (v < -dim || v >= dim)
            return ox_error(ox, n, "index %lld is out of range for size %lld", (long long)v,
                            (long long)dim);
    }
    return true;
}

static bool gather_infer(Ox *ox, const OxNode *n)
{
    int axis;
    if (!gather_operands(ox, n, &axis))
        return false;
    OxVal *x = ox_val(ox, n->in[0]), *ix = ox_val(ox, n->in[1]);
    int r = x->rank - 1 + ix->rank;
    if (r > OX_MAXRANK)
        return ox_unsupported(ox, n, "rank %d", r);
    int64_t shape[OX_MAXRANK];
    int k = 0;
    for (int d = 0; d < axis; d++)
        shape[k++] = x->shape[d];
    for (int d = 0; d < ix->rank; d++)
        shape[k++] = ix->shape[d];
    for (int d = axis + 1; d < x->rank; d++)
        shape[k++] = x->shape[d];
    if (!ix->k) {
        /* indices read at run time: a gather (ein(5)) */
        ox_set(ox, n->out[0], x->type, r, shape);
        return true;
    }
    int64_t dim = x->shape[axis];
    if (!known_indices_fit(ox, n, x, ix, axis, 1))
        return false;
    ox_set(ox, n->out[0], x->type, r, shape);
    if (x->k && ox_numel(ox_val(ox, n->out[0])) <= OX_MAX_FOLD) {
        int64_t *src = src_buf(ox, n->out[0]), idx[OX_MAXRANK], xi[OX_MAXRANK];
        for (int64_t j = 0; j < ox_numel(ox_val(ox, n->out[0])); j++) {
            unflat(j, r, shape, idx);
            int q = 0;
            for (int d = 0; d < axis; d++)
                xi[d] = idx[q++];
            int64_t fl = flat(ix->rank, ix->shape, idx + q);
            q += ix->rank;
            int64_t v = ix->k->i[fl];
            xi[axis] = v < 0 ? v + dim : v;
            for (int d = axis + 1; d < x->rank; d++)
                xi[d] = idx[q++];
            src[j] = flat(x->rank, x->shape, xi);
        }
        fold_gathered(ox, n->out[0], x, src);
    }
    return true;
}

/* Are the known indices an arithmetic progression (normalized)? */
static bool progression(const OxVal *ix, int64_t dim)
{
    int64_t cnt = ix->k->n, v0 = ix->k->i[0] < 0 ? ix->k->i[0] + dim : ix->k->i[0], stp = 0;
    if (cnt > 1)
        stp = (ix->k->i[1] < 0 ? ix->k->i[1] + dim : ix->k->i[1]) - v0;
    for (int64_t j = 0; j < cnt; j++) {
        int64_t v = ix->k->i[j] < 0 ? ix->k->i[j] + dim : ix->k->i[j];
        if (v != v0 + stp * j)
            return false;
    }
    return true;
}

static bool gather_write(Ox *ox, const OxNode *n)
{
    int xid = n->in[0], yid = n->out[0];
    OxVal *x = ox_val(ox, xid), *ix = ox_val(ox, n->in[1]), *y = ox_val(ox, yid);
    int axis;
    ox_axis(ox, n, ox_attr_int(n, "axis", 0), x->rank, &axis);
    ox_need_fixed(ox, xid, axis);
    int64_t dim = x->shape[axis];
    const char **sub = arena_alloc(ox->arena, (size_t)(x->rank + 1) * sizeof *sub);
    int q = 0;
    for (int d = 0; d < axis; d++)
        sub[d] = arena_printf(ox->arena, "i%d", q++);
    int first = q;
    q += ix->rank;
    for (int d = axis + 1; d < x->rank; d++)
        sub[d] = arena_printf(ox->arena, "i%d", q++);
    if (!ix->k || (ix->k->n > 16 && !progression(ix, dim))) {
        /* The indices read in the subscript: a gather.  An index in
         * [-dim, 0) counts from the end (floor modulo); ONNX leaves one
         * outside [-dim, dim) undefined. */
        const char **isub = arena_alloc(ox->arena, (size_t)(ix->rank + 1) * sizeof *isub);
        for (int d = 0; d < ix->rank; d++)
            isub[d] = arena_printf(ox->arena, "i%d", first + d);
        const char *iv = ox_read(ox, n->in[1], isub);
        sub[axis] = dim == 1 ? "0" : arena_printf(ox->arena, "%s %% %" PRId64, iv, dim);
        const char *body = ox_read(ox, xid, sub);
        ox_stmt(ox, ox_name(ox, yid), y->rank, ox_shape_dims(ox, yid), "=", body, NULL);
        return true;
    }
    int64_t cnt = ix->k->n;
    /* The flat position in the indices tensor. */
    const char *pos = "0";
    for (int d = 0; d < ix->rank; d++) {
        int64_t st = 1;
        for (int e = d + 1; e < ix->rank; e++)
            st *= ix->shape[e];
        if (ix->shape[d] == 1)
            continue;
        const char *v = arena_printf(ox->arena, "i%d", first + d);
        const char *t = st == 1 ? v : arena_printf(ox->arena, "%" PRId64 "*%s", st, v);
        pos = strcmp(pos, "0") == 0 ? t : arena_printf(ox->arena, "%s + %s", pos, t);
    }
    /* An arithmetic progression is an affine subscript; a few other
     * indices a chain of selects. */
    int64_t v0 = ix->k->i[0] < 0 ? ix->k->i[0] + dim : ix->k->i[0], stp = 0;
    if (cnt > 1)
        stp = (ix->k->i[1] < 0 ? ix->k->i[1] + dim : ix->k->i[1]) - v0;
    bool prog = progression(ix, dim);
    const char *body;
    if (prog) {
        sub[axis] = cnt == 1 ? arena_printf(ox->arena, "%" PRId64, v0)
                             : affine(ox, v0, stp, strchr(pos, ' ')
                                                       ? arena_printf(ox->arena, "(%s)", pos)
                                                       : pos);
        body = ox_read(ox, xid, sub);
    } else if (cnt <= 16) {
        body = NULL;
        for (int64_t j = cnt - 1; j >= 0; j--) {
            int64_t v = ix->k->i[j] < 0 ? ix->k->i[j] + dim : ix->k->i[j];
            sub[axis] = arena_printf(ox->arena, "%" PRId64, v);
            const char *r = ox_read(ox, xid, sub);
            body = !body ? r : arena_printf(ox->arena, "select(%s == %" PRId64 ", %s, %s)", pos,
                                            j, r, body);
        }
    } else {
        return ox_error(ox, n, "internal: a gather of %lld indices", (long long)cnt);
    }
    ox_stmt(ox, ox_name(ox, yid), y->rank, ox_shape_dims(ox, yid), "=", body, NULL);
    return true;
}

/* ---- GatherElements: y[i] = x[i with axis d at idx[i]] --------------------------------------------- */

static bool gather_elements_infer(Ox *ox, const OxNode *n)
{
    int axis;
    if (!gather_operands(ox, n, &axis))
        return false;
    OxVal *x = ox_val(ox, n->in[0]), *ix = ox_val(ox, n->in[1]);
    if (ix->rank != x->rank)
        return ox_error(ox, n, "the indices have rank %d, the input %d", ix->rank, x->rank);
    for (int d = 0; d < x->rank; d++)
        if (d != axis && ix->shape[d] > x->shape[d])
            return ox_error(ox, n, "the indices' dimension %d (%lld) exceeds the input's "
                            "(%lld)", d, (long long)ix->shape[d], (long long)x->shape[d]);
    int64_t dim = x->shape[axis];
    if (!known_indices_fit(ox, n, x, ix, axis, 1))
        return false;
    ox_set(ox, n->out[0], x->type, ix->rank, ix->shape);
    OxVal *y = ox_val(ox, n->out[0]);
    if (x->k && ix->k && ox_numel(y) <= OX_MAX_FOLD) {
        int64_t *src = src_buf(ox, n->out[0]), idx[OX_MAXRANK];
        for (int64_t j = 0; j < ox_numel(y); j++) {
            unflat(j, y->rank, y->shape, idx);
            int64_t v = ix->k->i[j];
            idx[axis] = v < 0 ? v + dim : v;
            src[j] = flat(x->rank, x->shape, idx);
        }
        fold_gathered(ox, n->out[0], x, src);
    }
    return true;
}

static bool gather_elements_write(Ox *ox, const OxNode *n)
{
    int xid = n->in[0], yid = n->out[0];
    OxVal *x = ox_val(ox, xid), *y = ox_val(ox, yid);
    int axis;
    ox_axis(ox, n, ox_attr_int(n, "axis", 0), x->rank, &axis);
    ox_need_fixed(ox, xid, axis);
    int64_t dim = x->shape[axis];
    const char *const *idx = ox_loop_idx(ox, y->rank);
    const char **sub = arena_alloc(ox->arena, (size_t)(x->rank + 1) * sizeof *sub);
    for (int d = 0; d < x->rank; d++)
        sub[d] = idx[d];
    /* the indices read in the subscript (known ones as an integer
     * weight): a gather, the floor modulo as in Gather */
    const char *iv = ox_read(ox, n->in[1], idx);
    sub[axis] = dim == 1 ? "0" : arena_printf(ox->arena, "%s %% %" PRId64, iv, dim);
    const char *body = ox_read(ox, xid, sub);
    ox_stmt(ox, ox_name(ox, yid), y->rank, ox_shape_dims(ox, yid), "=", body, NULL);
    return true;
}

/* ---- GatherND: y[b.., i.., r..] = x[b.., ix[b.., i.., 0], .., ix[b.., i.., k-1], r..] ---------- */

/* The batch dimensions b and the length k of an index tuple (the
 * indices' last dimension), after checking them. */
static bool gathernd_dims(Ox *ox, const OxNode *n, int *b, int *k)
{
    OxVal *x = ox_val(ox, n->in[0]), *ix = ox_val(ox, n->in[1]);
    int64_t bd = ox_attr_int(n, "batch_dims", 0);
    if (ix->rank < 1)
        return ox_error(ox, n, "the indices have rank 0");
    if (bd < 0 || bd >= ix->rank || bd >= x->rank)
        return ox_error(ox, n, "batch_dims %lld is out of range", (long long)bd);
    int64_t kd = ix->shape[ix->rank - 1];
    if (kd < 1 || kd > x->rank - bd)
        return ox_error(ox, n, "index tuples of %lld, not 1 to %lld", (long long)kd,
                        (long long)(x->rank - bd));
    for (int d = 0; d < bd; d++)
        if (ix->shape[d] != x->shape[d])
            return ox_error(ox, n, "batch dimension %d is %lld in the indices, %lld in the "
                            "input", d, (long long)ix->shape[d], (long long)x->shape[d]);
    *b = (int)bd;
    *k = (int)kd;
    return true;
}

static bool gathernd_infer(Ox *ox, const OxNode *n)
{
    if (!io_check(ox, n, 2))
        return false;
    OxVal *x = ox_val(ox, n->in[0]), *ix = ox_val(ox, n->in[1]);
    if (!ox_type_is_int(ix->type))
        return ox_error(ox, n, "the indices are %s, not integers", ox_type_name(ix->type));
    int b, k;
    if (!gathernd_dims(ox, n, &b, &k))
        return false;
    int q = ix->rank, r = q - 1 + x->rank - b - k;
    if (r > OX_MAXRANK)
        return ox_unsupported(ox, n, "rank %d", r);
    int64_t shape[OX_MAXRANK];
    memcpy(shape, ix->shape, (size_t)(q - 1) * sizeof *shape);
    memcpy(shape + q - 1, x->shape + b + k, (size_t)(x->rank - b - k) * sizeof *shape);
    if (!known_indices_fit(ox, n, x, ix, b, k))
        return false;
    ox_set(ox, n->out[0], x->type, r, shape);
    if (x->k && ix->k && ox_numel(ox_val(ox, n->out[0])) <= OX_MAX_FOLD) {
        int64_t *src = src_buf(ox, n->out[0]), idx[OX_MAXRANK], xi[OX_MAXRANK];
        for (int64_t j = 0; j < ox_numel(ox_val(ox, n->out[0])); j++) {
            unflat(j, r, shape, idx);
            int64_t tuple = flat(q - 1, ix->shape, idx) * k;
            memcpy(xi, idx, (size_t)b * sizeof *xi);
            for (int t = 0; t < k; t++) {
                int64_t v = ix->k->i[tuple + t], dim = x->shape[b + t];
                xi[b + t] = v < 0 ? v + dim : v;
            }
            memcpy(xi + b + k, idx + q - 1, (size_t)(x->rank - b - k) * sizeof *xi);
            src[j] = flat(x->rank, x->shape, xi);
        }
        fold_gathered(ox, n->out[0], x, src);
    }
    return true;
}

static bool gathernd_write(Ox *ox, const OxNode *n)
{
    int xid = n->in[0], iid = n->in[1], yid = n->out[0];
    OxVal *x = ox_val(ox, xid), *ix = ox_val(ox, iid), *y = ox_val(ox, yid);
    int b, k;
    gathernd_dims(ox, n, &b, &k);
    int q = ix->rank;
    const char *const *idx = ox_loop_idx(ox, y->rank);
    const char **isub = arena_alloc(ox->arena, (size_t)(q + 1) * sizeof *isub);
    const char **sub = arena_alloc(ox->arena, (size_t)(x->rank + 1) * sizeof *sub);
    memcpy(isub, idx, (size_t)(q - 1) * sizeof *isub);
    memcpy(sub, idx, (size_t)b * sizeof *sub);
    /* each subscript a gather of one index of the tuple, the floor modulo
     * as in Gather */
    for (int t = 0; t < k; t++) {
        int64_t dim = x->shape[b + t];
        ox_need_fixed(ox, xid, b + t);
        isub[q - 1] = arena_printf(ox->arena, "%d", t);
        const char *iv = ox_read(ox, iid, isub);
        sub[b + t] = dim == 1 ? "0" : arena_printf(ox->arena, "%s %% %" PRId64, iv, dim);
    }
    memcpy(sub + b + k, idx + q - 1, (size_t)(x->rank - b - k) * sizeof *sub);
    const char *body = ox_read(ox, xid, sub);
    ox_stmt(ox, ox_name(ox, yid), y->rank, ox_shape_dims(ox, yid), "=", body, NULL);
    return true;
}

/* ---- Pad ---------------------------------------------------------------------------------------------- */

typedef struct Pd {
    int64_t pb[OX_MAXRANK], pe[OX_MAXRANK];
    double value;
    const char *mode;
} Pd;

static bool pad_params(Ox *ox, const OxNode *n, Pd *p)
{
    OxVal *x = ox_val(ox, n->in[0]);
    int r = x->rank, cnt;
    const int64_t *pads;
    p->mode = ox_attr_str(ox, n, "mode", "constant");
    p->value = 0;
    if (ox->opset < 11) {
        pads = ox_attr_ints(n, ox->opset < 2 ? "paddings" : "pads", &cnt);
        p->value = ox_attr_float(n, "value", 0);
    } else {
        if (!io_check(ox, n, 2) || !(pads = ox_const_ints(ox, n, 1, &cnt)))
            return false;
        if (ox_has_in(n, 2)) {
            OxVal *cv = ox_val(ox, n->in[2]);
            if (!cv->k || cv->k->n > 1)
                return ox_unsupported(ox, n, "a constant_value not known at import time");
            if (cv->k->n == 1 && !ox_const_scalar(ox, n, 2, &p->value))
                return false;
        }
    }
    int axes[OX_MAXRANK], na = r;
    for (int d = 0; d < r; d++)
        axes[d] = d;
    if (ox_has_in(n, 3)) {
        int ca;
        const int64_t *ax = ox_const_ints(ox, n, 3, &ca);
        if (!ax)
            return false;
        if (ca > r)
            return ox_error(ox, n, "more axes than dimensions");
        na = ca;
        for (int i = 0; i < ca; i++)
            if (!ox_axis(ox, n, ax[i], r, &axes[i]))
                return false;
    }
    if (cnt != 2 * na)
        return ox_error(ox, n, "pads has %d values, not %d", cnt, 2 * na);
    for (int d = 0; d < r; d++)
        p->pb[d] = p->pe[d] = 0;
    for (int i = 0; i < na; i++) {
        if (pads[i] < -OX_MAX_ELEMS || pads[i] > OX_MAX_ELEMS || pads[i + na] < -OX_MAX_ELEMS ||
            pads[i + na] > OX_MAX_ELEMS)
            return ox_error(ox, n, "pads out of range");
        p->pb[axes[i]] = pads[i];
        p->pe[axes[i]] = pads[i + na];
    }
    for (int d = 0; d < r; d++) {
        if (x->shape[d] + p->pb[d] + p->pe[d] < 1)
            return ox_unsupported(ox, n, "an empty output");
        if (strcmp(p->mode, "constant") && (p->pb[d] < 0 || p->pe[d] < 0))
            return ox_unsupported(ox, n, "negative pads in mode %s", p->mode);
        if (strcmp(p->mode, "reflect") == 0 && (p->pb[d] >= x->shape[d] || p->pe[d] >= x->shape[d]))
            return ox_unsupported(ox, n, "reflect pads as large as the input");
    }
    if (strcmp(p->mode, "constant") && strcmp(p->mode, "edge") && strcmp(p->mode, "reflect"))
        return ox_unsupported(ox, n, "mode '%s'", p->mode);
    return true;
}

static bool pad_infer(Ox *ox, const OxNode *n)
{
    if (!io_check(ox, n, 1))
        return false;
    OxVal *x = ox_val(ox, n->in[0]);
    Pd p;
    if (!pad_params(ox, n, &p))
        return false;
    int64_t shape[OX_MAXRANK];
    for (int d = 0; d < x->rank; d++)
        shape[d] = x->shape[d] + p.pb[d] + p.pe[d];
    ox_set(ox, n->out[0], x->type, x->rank, shape);
    return true;
}

/* The body for dims d.. of an edge or reflect pad: a select per region. */
static const char *pad_body(Ox *ox, int xid, const Pd *p, const char **sub, int d)
{
    OxVal *x = ox_val(ox, xid);
    if (d == x->rank)
        return ox_read(ox, xid, sub);
    const char *o = arena_printf(ox->arena, "i%d", d);
    int64_t s = x->shape[d], b = p->pb[d];
    sub[d] = affine(ox, -b, 1, o);
    const char *mid = pad_body(ox, xid, p, sub, d + 1);
    if (b == 0 && p->pe[d] == 0)
        return mid;
    bool edge = strcmp(p->mode, "edge") == 0;
    const char *r = mid;
    if (p->pe[d] > 0) {
        /* o - b >= s: edge s - 1; reflect 2(s - 1) - (o - b) */
        sub[d] = edge ? arena_printf(ox->arena, "%" PRId64, s - 1)
                      : affine(ox, 2 * (s - 1) + b, -1, o);
        r = arena_printf(ox->arena, "select(%s >= %" PRId64 ", %s, %s)", o, s + b,
                         pad_body(ox, xid, p, sub, d + 1), r);
    }
    if (b > 0) {
        sub[d] = edge ? "0" : affine(ox, b, -1, o);
        r = arena_printf(ox->arena, "select(%s < %" PRId64 ", %s, %s)", o, b,
                         pad_body(ox, xid, p, sub, d + 1), r);
    }
    return r;
}

static bool pad_write(Ox *ox, const OxNode *n)
{
    int xid = n->in[0], yid = n->out[0];
    OxVal *x = ox_val(ox, xid);
    Pd p;
    if (!pad_params(ox, n, &p))
        return false;
    const char **sub = arena_alloc(ox->arena, (size_t)(x->rank + 1) * sizeof *sub);
    const char *body;
    for (int d = 0; d < x->rank; d++)
        if (p.pb[d] || p.pe[d])
            ox_need_fixed(ox, xid, d);
    if (strcmp(p.mode, "constant") == 0) {
        const char *cond = "";
        for (int d = 0; d < x->rank; d++) {
            const char *o = arena_printf(ox->arena, "i%d", d);
            sub[d] = affine(ox, -p.pb[d], 1, o);
            if (p.pb[d] > 0)
                cond = arena_printf(ox->arena, "%s%s%s >= %" PRId64, cond, *cond ? " && " : "",
                                    o, p.pb[d]);
            if (p.pe[d] > 0)
                cond = arena_printf(ox->arena, "%s%s%s < %" PRId64, cond, *cond ? " && " : "",
                                    o, x->shape[d] + p.pb[d]);
        }
        body = ox_read(ox, xid, sub);
        /* Reads outside x are 0: only another value needs a select (an
         * integer literal into integers, which a store takes as it is) */
        if (p.value != 0 && *cond) {
            const char *v = ox_type_is_int(x->type) ? ox_int(ox, ox_f2i(p.value))
                                                    : ox_real(ox, p.value);
            body = arena_printf(ox->arena, "select(%s, %s, %s)", cond, body, v);
        }
    } else {
        body = pad_body(ox, xid, &p, sub, 0);
    }
    ox_stmt(ox, ox_name(ox, yid), x->rank, ox_shape_dims(ox, yid), "=", body, NULL);
    return true;
}

/* ---- Expand, Tile ---------------------------------------------------------------------------------------- */

static bool expand_infer(Ox *ox, const OxNode *n)
{
    if (!io_check(ox, n, 2))
        return false;
    OxVal *x = ox_val(ox, n->in[0]);
    int cnt;
    const int64_t *s = ox_const_ints(ox, n, 1, &cnt);
    if (!s)
        return false;
    bool tile = strcmp(n->op, "Tile") == 0;
    int64_t shape[OX_MAXRANK];
    int r;
    if (tile) {
        if (cnt != x->rank)
            return ox_error(ox, n, "repeats has %d values, not %d", cnt, x->rank);
        r = x->rank;
        for (int d = 0; d < r; d++) {
            if (s[d] < 1)
                return ox_unsupported(ox, n, "repeats of %lld", (long long)s[d]);
            if (!i64_mul(x->shape[d], s[d], &shape[d]) || shape[d] > OX_MAX_ELEMS)
                return ox_error(ox, n, "the output is too large");
        }
    } else {
        r = cnt > x->rank ? cnt : x->rank;
        if (r > OX_MAXRANK)
            return ox_unsupported(ox, n, "rank %d", r);
        for (int d = 0; d < r; d++) {
            int dx = d - (r - x->rank), ds = d - (r - cnt);
            int64_t a = dx >= 0 ? x->shape[dx] : 1, b = ds >= 0 ? s[ds] : 1;
            if (a != b && a != 1 && b != 1)
                return ox_error(ox, n, "shape %lld does not broadcast with %lld", (long long)b,
                                (long long)a);
            shape[d] = a == 1 ? b : a;
            if (shape[d] < 1)
                return ox_unsupported(ox, n, "an empty output");
            if (shape[d] > OX_MAX_ELEMS)
                return ox_error(ox, n, "the output is too large");
        }
    }
    ox_set(ox, n->out[0], x->type, r, shape);
    if (x->k && ox_numel(ox_val(ox, n->out[0])) <= OX_MAX_FOLD) {
        int64_t *src = src_buf(ox, n->out[0]), idx[OX_MAXRANK], xi[OX_MAXRANK];
        for (int64_t j = 0; j < ox_numel(ox_val(ox, n->out[0])); j++) {
            unflat(j, r, shape, idx);
            for (int d = 0; d < x->rank; d++) {
                int od = d + r - x->rank;
                xi[d] = tile ? idx[od] % x->shape[d] : x->shape[d] == 1 ? 0 : idx[od];
            }
            src[j] = flat(x->rank, x->shape, xi);
        }
        fold_gathered(ox, n->out[0], x, src);
    }
    return true;
}

static bool expand_write(Ox *ox, const OxNode *n)
{
    int xid = n->in[0], yid = n->out[0];
    OxVal *x = ox_val(ox, xid), *y = ox_val(ox, yid);
    const char *const *idx = ox_loop_idx(ox, y->rank);
    const char *body;
    if (strcmp(n->op, "Tile") == 0) {
        /* decided on the run with the larger batch, where a dim of 1 is
         * 1 for every B */
        const char **sub = arena_alloc(ox->arena, (size_t)(x->rank + 1) * sizeof *sub);
        OxVal *xs = ox_sval(ox, xid), *ys = ox_sval(ox, yid);
        for (int d = 0; d < x->rank; d++) {
            sub[d] = xs->shape[d] == ys->shape[d] ? idx[d] : xs->shape[d] == 1 ? "0"
                     : arena_printf(ox->arena, "%s %% %s", idx[d],
                                    paren_dim(ox, ox_dim(ox, xid, d)));
            if (xs->shape[d] == ys->shape[d])
                ox_need_bcast_same(ox, xid, d, y->shape[d]);
        }
        body = ox_read(ox, xid, sub);
    } else {
        body = ox_read_bcast(ox, xid, y->rank, y->shape, idx);
    }
    ox_stmt(ox, ox_name(ox, yid), y->rank, ox_shape_dims(ox, yid), "=", body, NULL);
    return true;
}

/* ---- DepthToSpace, SpaceToDepth --------------------------------------------------------------------------- */

static bool d2s_infer(Ox *ox, const OxNode *n)
{
    if (!io_check(ox, n, 1))
        return false;
    OxVal *x = ox_val(ox, n->in[0]);
    int64_t b = ox_attr_int(n, "blocksize", 0);
    if (x->rank != 4 || b < 1 || b > OX_MAX_ATTR)
        return ox_error(ox, n, "needs a 4-d input and a blocksize");
    int64_t shape[4] = {x->shape[0], 0, 0, 0};
    if (strcmp(n->op, "DepthToSpace") == 0) {
        if (x->shape[1] % (b * b))
            return ox_error(ox, n, "the channels are no multiple of blocksize^2");
        shape[1] = x->shape[1] / (b * b), shape[2] = x->shape[2] * b, shape[3] = x->shape[3] * b;
    } else {
        if (x->shape[2] % b || x->shape[3] % b)
            return ox_error(ox, n, "the spatial sizes are no multiple of the blocksize");
        shape[1] = x->shape[1] * b * b, shape[2] = x->shape[2] / b, shape[3] = x->shape[3] / b;
    }
    ox_set(ox, n->out[0], x->type, 4, shape);
    return true;
}

static bool d2s_write(Ox *ox, const OxNode *n)
{
    int xid = n->in[0], yid = n->out[0];
    OxVal *x = ox_val(ox, xid);
    int64_t b = ox_attr_int(n, "blocksize", 0);
    ox_need_fixed_from(ox, xid, 1);
    const char *sub[4];
    sub[0] = "i0";
    Arena *a = ox->arena;
    if (strcmp(n->op, "DepthToSpace") == 0) {
        int64_t c = x->shape[1] / (b * b);
        bool crd = strcmp(ox_attr_str(ox, n, "mode", "DCR"), "CRD") == 0;
        sub[1] = crd ? arena_printf(a, "%" PRId64 "*i1 + %" PRId64 "*(i2 %% %" PRId64 ") + "
                                    "i3 %% %" PRId64, b * b, b, b, b)
                     : arena_printf(a, "%" PRId64 "*(i2 %% %" PRId64 ") + %" PRId64 "*(i3 %% "
                                    "%" PRId64 ") + i1", b * c, b, c, b);
        sub[2] = arena_printf(a, "i2 / %" PRId64, b);
        sub[3] = arena_printf(a, "i3 / %" PRId64, b);
    } else {
        int64_t c = x->shape[1];
        sub[1] = arena_printf(a, "i1 %% %" PRId64, c);
        sub[2] = arena_printf(a, "%" PRId64 "*i2 + i1 / %" PRId64, b, c * b);
        sub[3] = arena_printf(a, "%" PRId64 "*i3 + i1 / %" PRId64 " %% %" PRId64, b, c, b);
    }
    const char *body = ox_read(ox, xid, sub);
    ox_stmt(ox, ox_name(ox, yid), 4, ox_shape_dims(ox, yid), "=", body, NULL);
    return true;
}

/* ---- evaluated here: Shape, Size, Constant, ConstantOfShape, Range, Where ---------------------------- */

static bool shape_infer(Ox *ox, const OxNode *n)
{
    if (!io_check(ox, n, 1))
        return false;
    OxVal *x = ox_val(ox, n->in[0]);
    bool size = strcmp(n->op, "Size") == 0;
    int64_t lo = 0, hi = x->rank;
    if (!size && ox->opset >= 15) {
        lo = ox_attr_int(n, "start", 0);
        hi = ox_attr_int(n, "end", x->rank);
        lo = lo < 0 ? lo + x->rank : lo;
        hi = hi < 0 ? hi + x->rank : hi;
        lo = lo < 0 ? 0 : lo > x->rank ? x->rank : lo;
        hi = hi < 0 ? 0 : hi > x->rank ? x->rank : hi;
    }
    int64_t len = hi > lo ? hi - lo : 0;
    int64_t shape[1] = {len};
    ox_set(ox, n->out[0], OX_INT64, size ? 0 : 1, shape);
    OxVal *y = ox_val(ox, n->out[0]);
    y->kind = VK_CONST;
    y->k = ox_const_new(ox, OX_INT64, size ? 1 : len);
    if (size)
        y->k->i[0] = ox_numel(x);
    for (int64_t d = 0; !size && d < len; d++)
        y->k->i[d] = x->shape[lo + d];
    return true;
}

static bool set_const(Ox *ox, const OxNode *n, int id, OxConst *k, int rank, const int64_t *shape)
{
    ox_set(ox, id, k->type, rank, shape);
    OxVal *y = ox_val(ox, id);
    y->kind = VK_CONST;
    y->k = k;
    (void)n;
    return true;
}

static bool constant_infer(Ox *ox, const OxNode *n)
{
    if (n->nout < 1 || n->out[0] < 0)
        return ox_error(ox, n, "needs an output");
    const Onnx__AttributeProto *a;
    int64_t shape[OX_MAXRANK];
    int rank;
    if ((a = ox_attr(n, "value")) && a->t) {
        OxConst *k = ox_tensor(ox, n, a->t, &rank, shape);
        return k && set_const(ox, n, n->out[0], k, rank, shape);
    }
    if ((a = ox_attr(n, "value_float"))) {
        OxConst *k = ox_const_new(ox, OX_FLOAT, 1);
        k->f[0] = a->f;
        return set_const(ox, n, n->out[0], k, 0, shape);
    }
    if ((a = ox_attr(n, "value_int"))) {
        OxConst *k = ox_const_new(ox, OX_INT64, 1);
        k->i[0] = a->i;
        return set_const(ox, n, n->out[0], k, 0, shape);
    }
    if ((a = ox_attr(n, "value_floats"))) {
        OxConst *k = ox_const_new(ox, OX_FLOAT, (int64_t)a->n_floats);
        for (size_t i = 0; i < a->n_floats; i++)
            k->f[i] = a->floats[i];
        shape[0] = (int64_t)a->n_floats;
        return set_const(ox, n, n->out[0], k, 1, shape);
    }
    if ((a = ox_attr(n, "value_ints"))) {
        OxConst *k = ox_const_new(ox, OX_INT64, (int64_t)a->n_ints);
        for (size_t i = 0; i < a->n_ints; i++)
            k->i[i] = a->ints[i];
        shape[0] = (int64_t)a->n_ints;
        return set_const(ox, n, n->out[0], k, 1, shape);
    }
    return ox_unsupported(ox, n, "a Constant without a tensor, float or int value");
}

static bool cos_infer(Ox *ox, const OxNode *n)
{
    int cnt;
    if (!io_check(ox, n, 1))
        return false;
    const int64_t *s = ox_const_ints(ox, n, 0, &cnt);
    if (!s)
        return false;
    if (cnt > OX_MAXRANK)
        return ox_unsupported(ox, n, "rank %d", cnt);
    int64_t total = 1;
    for (int d = 0; d < cnt; d++) {
        if (s[d] < 1)
            return ox_unsupported(ox, n, "an empty output");
        if (!i64_mul(total, s[d], &total) || total > OX_MAX_FOLD)
            return ox_unsupported(ox, n, "an output too large to evaluate at import time");
    }
    const Onnx__AttributeProto *a = ox_attr(n, "value");
    OxConst *v = NULL;
    int vr;
    int64_t vs[OX_MAXRANK];
    if (a && a->t && !(v = ox_tensor(ox, n, a->t, &vr, vs)))
        return false;
    OxConst *k = ox_const_new(ox, v ? v->type : OX_FLOAT, total);
    for (int64_t j = 0; j < total; j++) {
        if (k->f)
            k->f[j] = v ? v->f[0] : 0;
        else if (k->i)
            k->i[j] = v->i[0];
        else
            k->h[j] = v->h[0];
    }
    return set_const(ox, n, n->out[0], k, cnt, s);
}

static bool range_infer(Ox *ox, const OxNode *n)
{
    if (!io_check(ox, n, 3))
        return false;
    double st, lim, dl;
    if (!ox_const_scalar(ox, n, 0, &st) || !ox_const_scalar(ox, n, 1, &lim) ||
        !ox_const_scalar(ox, n, 2, &dl))
        return false;
    if (dl == 0)
        return ox_error(ox, n, "a delta of 0");
    double c = (lim - st) / dl;
    if (!(c <= (double)OX_MAX_FOLD))
        return ox_unsupported(ox, n, "an output too large to evaluate at import time");
    int64_t len = c > 0 ? (int64_t)(c + 0.999999999) : 0;
    if (len < 1)
        return ox_unsupported(ox, n, "an empty output");
    int type = ox_val(ox, n->in[0])->type;
    OxConst *k = ox_const_new(ox, ox_type_is_int(type) ? OX_INT64 : OX_FLOAT, len);
    k->type = type;
    for (int64_t j = 0; j < len; j++) {
        if (k->f)
            k->f[j] = (float)(st + dl * (double)j);
        else
            k->i[j] = ox_f2i(st + dl * (double)j);
    }
    int64_t shape[1] = {len};
    return set_const(ox, n, n->out[0], k, 1, shape);
}

static bool where_infer(Ox *ox, const OxNode *n)
{
    if (!io_check(ox, n, 3))
        return false;
    OxVal *c = ox_val(ox, n->in[0]), *a = ox_val(ox, n->in[1]), *b = ox_val(ox, n->in[2]);
    if (c->type != OX_BOOL)
        return ox_error(ox, n, "the condition is %s, not bool", ox_type_name(c->type));
    if (a->type != b->type)
        return ox_error(ox, n, "inputs of element types %s and %s", ox_type_name(a->type),
                        ox_type_name(b->type));
    int r = c->rank > a->rank ? c->rank : a->rank;
    r = b->rank > r ? b->rank : r;
    int64_t shape[OX_MAXRANK];
    for (int d = 0; d < r; d++) {
        shape[d] = 1;
        OxVal *vs[3] = {c, a, b};
        for (int i = 0; i < 3; i++) {
            int dv = d - (r - vs[i]->rank);
            if (dv >= 0 && vs[i]->shape[dv] != 1) {
                if (shape[d] != 1 && shape[d] != vs[i]->shape[dv])
                    return ox_error(ox, n, "shapes do not broadcast");
                shape[d] = vs[i]->shape[dv];
            }
        }
    }
    ox_set(ox, n->out[0], a->type, r, shape);
    int64_t cnt = ox_numel(ox_val(ox, n->out[0])), idx[OX_MAXRANK];
    if (!c->k || !a->k || !b->k || cnt > OX_MAX_FOLD)
        return true;                /* a select at run time */
    OxConst *k = ox_const_new(ox, a->k->type, cnt);
    for (int64_t j = 0; j < cnt; j++) {
        unflat(j, r, shape, idx);
        int64_t q[3];
        OxVal *vs[3] = {c, a, b};
        for (int i = 0; i < 3; i++) {
            int64_t fl = 0;
            for (int d = 0; d < vs[i]->rank; d++) {
                int od = d + r - vs[i]->rank;
                fl = fl * vs[i]->shape[d] + (vs[i]->shape[d] == 1 ? 0 : idx[od]);
            }
            q[i] = fl;
        }
        bool pick = c->k->i ? c->k->i[q[0]] != 0 : c->k->f[q[0]] != 0;
        OxVal *src = pick ? a : b;
        int64_t s = pick ? q[1] : q[2];
        if (k->f)
            k->f[j] = src->k->f[s];
        else if (k->i)
            k->i[j] = src->k->i[s];
        else
            k->h[j] = src->k->h[s];
    }
    OxVal *y = ox_val(ox, n->out[0]);
    y->kind = VK_CONST;
    y->k = k;
    return true;
}

/* select(c, a, b), each read broadcast. */
static bool where_write(Ox *ox, const OxNode *n)
{
    int yid = n->out[0];
    OxVal *y = ox_val(ox, yid);
    const char *const *idx = ox_loop_idx(ox, y->rank);
    const char *cr = ox_cond(ox, ox_read_bcast(ox, n->in[0], y->rank, y->shape, idx));
    const char *ar = ox_read_bcast(ox, n->in[1], y->rank, y->shape, idx);
    const char *br = ox_read_bcast(ox, n->in[2], y->rank, y->shape, idx);
    const char *body = arena_printf(ox->arena, "select(%s, %s, %s)", cr, ar, br);
    ox_stmt(ox, ox_name(ox, yid), y->rank, ox_shape_dims(ox, yid), "=", body, NULL);
    return true;
}

/* ScatterND of known values (a mask built from shapes): the data with the
 * updates written at the index tuples, in order (reduction none, add or
 * mul). */
static bool scatternd_infer(Ox *ox, const OxNode *n)
{
    if (!io_check(ox, n, 3))
        return false;
    OxVal *x = ox_val(ox, n->in[0]), *ix = ox_val(ox, n->in[1]), *u = ox_val(ox, n->in[2]);
    if (!ox_type_is_int(ix->type))
        return ox_error(ox, n, "the indices are %s, not integers", ox_type_name(ix->type));
    if (u->type != x->type)
        return ox_error(ox, n, "updates of %s into data of %s", ox_type_name(u->type),
                        ox_type_name(x->type));
    const char *red = ox_attr_str(ox, n, "reduction", "none");
    int how = strcmp(red, "none") == 0 ? 0 : strcmp(red, "add") == 0 ? 1
            : strcmp(red, "mul") == 0 ? 2 : -1;
    if (how < 0)
        return ox_unsupported(ox, n, "reduction '%s'", red);
    int k = ix->rank > 0 ? (int)ix->shape[ix->rank - 1] : 0;
    if (ix->rank < 1 || k < 1 || k > x->rank)
        return ox_error(ox, n, "index tuples of %d, not 1 to %d", k, x->rank);
    /* updates: the indices' shape without its last, then the data's after k */
    int ur = ix->rank - 1 + x->rank - k;
    bool fits = u->rank == ur;
    for (int d = 0; fits && d < ix->rank - 1; d++)
        fits = u->shape[d] == ix->shape[d];
    for (int d = k; fits && d < x->rank; d++)
        fits = u->shape[ix->rank - 1 + d - k] == x->shape[d];
    if (!fits)
        return ox_error(ox, n, "the updates' shape does not fit the indices and the data");
    for (int i = 0; i < 3; i++)
        if (!ox_val(ox, n->in[i])->k)
            return ox_unsupported(ox, n, "input %d ('%s') must be known at import time "
                                  "(ScatterND is evaluated there)", i, ox->vname[n->in[i]]);
    if (x->k->h || ox_numel(x) > OX_MAX_FOLD)
        return ox_unsupported(ox, n, "ScatterND of %s values or of more than %lld",
                              ox_type_name(x->type), (long long)OX_MAX_FOLD);
    OxConst *y = ox_const_new(ox, x->k->type, x->k->n);
    if (y->f)
        memcpy(y->f, x->k->f, (size_t)x->k->n * sizeof *y->f);
    else
        memcpy(y->i, x->k->i, (size_t)x->k->n * sizeof *y->i);
    int64_t tuples = ox_numel(ix) / k, slice = 1, at[OX_MAXRANK] = {0};
    for (int d = k; d < x->rank; d++)
        slice *= x->shape[d];
    for (int64_t t = 0; t < tuples; t++) {
        for (int d = 0; d < k; d++) {
            int64_t v = ix->k->i[t * k + d], dim = x->shape[d];
            if (v < -dim || v >= dim)
                return ox_error(ox, n, "index %lld is out of range for size %lld",
                                (long long)v, (long long)dim);
            at[d] = v < 0 ? v + dim : v;
        }
        int64_t base = flat(x->rank, x->shape, at);
        for (int64_t e = 0; e < slice; e++) {
            int64_t dst = base + e, src = t * slice + e;
            if (y->f)
                y->f[dst] = how == 0 ? u->k->f[src] : how == 1 ? y->f[dst] + u->k->f[src]
                                                               : y->f[dst] * u->k->f[src];
            else    /* integers wrap, as ONNX's do */
                y->i[dst] = how == 0 ? u->k->i[src]
                          : (int64_t)(how == 1 ? (uint64_t)y->i[dst] + (uint64_t)u->k->i[src]
                                               : (uint64_t)y->i[dst] * (uint64_t)u->k->i[src]);
        }
    }
    return set_const(ox, n, n->out[0], y, x->rank, x->shape);
}

static bool no_write(Ox *ox, const OxNode *n)
{
    return ox_error(ox, n, "internal: a value the importer evaluates was not evaluated");
}

const OxOp ox_ops_shape[] = {
    {"Reshape", reshape_infer, reshape_write},
    {"Flatten", reshape_infer, reshape_write},
    {"Squeeze", reshape_infer, reshape_write},
    {"Unsqueeze", reshape_infer, reshape_write},
    {"Transpose", transpose_infer, transpose_write},
    {"Concat", concat_infer, concat_write},
    {"Split", split_infer, split_write},
    {"Slice", slice_infer, slice_write},
    {"Gather", gather_infer, gather_write},
    {"GatherElements", gather_elements_infer, gather_elements_write},
    {"GatherND", gathernd_infer, gathernd_write},
    {"Pad", pad_infer, pad_write},
    {"Expand", expand_infer, expand_write},
    {"Tile", expand_infer, expand_write},
    {"DepthToSpace", d2s_infer, d2s_write},
    {"SpaceToDepth", d2s_infer, d2s_write},
    {"Shape", shape_infer, no_write},
    {"Size", shape_infer, no_write},
    {"Constant", constant_infer, no_write},
    {"ConstantOfShape", cos_infer, no_write},
    {"Range", range_infer, no_write},
    {"Where", where_infer, where_write},
    {"ScatterND", scatternd_infer, no_write},
    {NULL, NULL, NULL},
};

const OxOp *ox_find_op(const char *name)
{
    const OxOp *tables[] = {ox_ops_elem, ox_ops_nn, ox_ops_shape};
    for (int t = 0; t < 3; t++)
        for (const OxOp *op = tables[t]; op->name; op++)
            if (strcmp(op->name, name) == 0)
                return op;
    return NULL;
}
