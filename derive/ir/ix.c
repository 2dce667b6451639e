/* ix.c - the IR context and canonical index expressions.
 *
 * An index expression is c + sum of coef * atom, an atom being a variable,
 * floor(arg / d) or arg mod d with d >= 2.  Every constructor returns the
 * canonical form, so that equal expressions built in different orders are
 * equal (ix_equal) and hash alike:
 *   - atoms sorted by ir_term_cmp, equal atoms merged, zero terms dropped;
 *   - d * floor(x / d) + (x mod d) recombined into x;
 *   - floor(a / d): terms whose coefficient is a multiple of d and the
 *     multiple of d in the constant move out (floor((d*k*x + 5) / d) with
 *     d = 4 is k*x + 1 + floor(1 / 4)); a common factor g of d and every
 *     remaining coefficient divides out (floor((2x + 3) / 4) is
 *     floor((x + 1) / 2)); floor((floor(x / e) + r) / d) is
 *     floor((x + r*e) / (e*d)); a quotient whose argument is bounded without
 *     variable ranges (mod atoms only) folds;
 *   - a mod d: multiples of d drop, the constant reduces into [0, d), inner
 *     (x mod m) with d | m becomes x, a common factor g comes out as
 *     g * (a/g mod d/g) + (c mod g), and a bounded argument folds;
 *   - a negative divisor is turned positive: floor(a / -d) = floor(-a / d),
 *     a mod -d = -((-a) mod d).
 * The sign of a quotient's argument is left as written: (h + 1 - r) / 2
 * stays (h - r + 1) / 2 rather than becoming -r + (h + r + 1) / 2, which
 * would be canonical too but is unreadable in the IR dumps. */
#include "config.h"
#include "ir_int.h"

#include <stdlib.h>
#include <string.h>

/* ---- hashing and order ---------------------------------------------------- */

static uint64_t term_hash(const IxTerm *t)
{
    uint64_t h = ir_hcomb(H_TERM, (uint64_t)t->coef);
    h = ir_hcomb(h, (uint64_t)t->kind);
    h = ir_hcomb(h, t->kind == IX_VAR ? (uint64_t)t->var
                    : t->kind == IX_READ ? t->read->hash : t->arg->hash);
    return ir_hcomb(h, (uint64_t)t->d);
}

static void ix_rehash(Ix *x)
{
    uint64_t h = ir_hcomb(H_IX, (uint64_t)x->c);
    for (int i = 0; i < x->n; i++)
        h = ir_hcomb(h, term_hash(&x->t[i]));
    x->hash = h;
}

#define CMP3(a, b) (((a) > (b)) - ((a) < (b)))

int ir_term_cmp(const IxTerm *a, const IxTerm *b)
{
    if (a->kind != b->kind)
        return CMP3(a->kind, b->kind);
    if (a->kind == IX_VAR)
        return CMP3(a->var, b->var);
    if (a->kind == IX_READ)
        return ir_expr_cmp(a->read, b->read);
    int c = ix_cmp(a->arg, b->arg);
    return c ? c : CMP3(a->d, b->d);
}

int ix_cmp(const Ix *a, const Ix *b)
{
    if (a == b)
        return 0;
    if (a->hash != b->hash)
        return CMP3(a->hash, b->hash);
    if (a->n != b->n)
        return CMP3(a->n, b->n);
    if (a->c != b->c)
        return CMP3(a->c, b->c);
    for (int i = 0; i < a->n; i++) {
        int c = ir_term_cmp(&a->t[i], &b->t[i]);
        if (c)
            return c;
        if (a->t[i].coef != b->t[i].coef)
            return CMP3(a->t[i].coef, b->t[i].coef);
    }
    return 0;
}

bool ix_equal(const Ix *a, const Ix *b)
{
    return a == b || (a->hash == b->hash && ix_cmp(a, b) == 0);
}

/* ---- the context ------------------------------------------------------- */

static Ix *ix_alloc(IrCtx *cx, int n)
{
    return arena_alloc(cx->arena, sizeof(Ix) + (size_t)n * sizeof(IxTerm));
}

int ir_operand_order = 1;

IrCtx *ir_ctx_new(Arena *arena)
{
    /* EINC_OPERAND_ORDER=reverse: commutative operands ordered by tensor
       ids the other way round (expr.c), to check that no plan depends on
       that order (tests/derive/operands.test); read here, before any thread */
    const char *v = getenv("EINC_OPERAND_ORDER");
    ir_operand_order = v && strcmp(v, "reverse") == 0 ? -1 : 1;
    IrCtx *cx = arena_alloc(arena, sizeof *cx);
    cx->arena = arena;
    for (int64_t c = IR_SMALL_LO; c < IR_SMALL_HI; c++) {
        Ix *x = ix_alloc(cx, 0);
        x->c = c;
        ix_rehash(x);
        cx->small[c - IR_SMALL_LO] = x;
    }
    return cx;
}

IrCtx *ir_ctx_fork(const IrCtx *cx, Arena *arena)
{
    IrCtx *f = arena_alloc(arena, sizeof *f);
    f->arena = arena;
    memcpy(f->small, cx->small, sizeof f->small);
    f->vars.len = f->vars.cap = cx->vars.len;
    f->var_ix.len = f->var_ix.cap = cx->var_ix.len;
    f->vars.data = arena_dup(arena, cx->vars.data, (size_t)cx->vars.len * sizeof *f->vars.data);
    f->var_ix.data = arena_dup(arena, cx->var_ix.data,
                               (size_t)cx->var_ix.len * sizeof *f->var_ix.data);
    return f;
}

Arena *ir_arena(IrCtx *cx)
{
    return cx->arena;
}

IrVar ir_var_new(IrCtx *cx, const char *name, int64_t lo, int64_t hi)
{
    IrVar v = {
        .id = cx->vars.len,
        .name = arena_strdup(cx->arena, name ? name : ""),
        .lo = lo,
        .hi = hi,
    };
    Ix *x = ix_alloc(cx, 1);
    x->n = 1;
    x->t[0] = (IxTerm){.coef = 1, .kind = IX_VAR, .var = v.id};
    ix_rehash(x);
    vec_push(cx->arena, &cx->vars, v);
    vec_push(cx->arena, &cx->var_ix, (const Ix *)x);
    return v;
}

const char *ir_var_name(const IrCtx *cx, int id)
{
    if (id < 0 || id >= cx->vars.len)
        return "?";
    return cx->vars.data[id].name;
}

int ir_var_count(const IrCtx *cx)
{
    return cx->vars.len;
}

const IrVar *ir_var_get(const IrCtx *cx, int id)
{
    return id >= 0 && id < cx->vars.len ? &cx->vars.data[id] : NULL;
}

/* Both tables grow together (same len, same cap), and growth copies into
 * new memory, so restoring the pointers taken at the mark is exact. */
IrMark ir_ctx_mark(IrCtx *cx)
{
    return (IrMark){
        .arena = arena_mark(cx->arena),
        .nvars = cx->vars.len,
        .cap = cx->vars.cap,
        .vars = cx->vars.data,
        .var_ix = (void *)cx->var_ix.data,
    };
}

void ir_ctx_release(IrCtx *cx, IrMark m)
{
    arena_release(cx->arena, m.arena);
    cx->vars.len = cx->var_ix.len = m.nvars;
    cx->vars.cap = cx->var_ix.cap = m.cap;
    cx->vars.data = m.vars;
    cx->var_ix.data = m.var_ix;
}

bool ir_ctx_overflowed(IrCtx *cx)
{
    bool o = cx->overflow;
    cx->overflow = false;
    return o;
}

/* ---- a buffer of terms under construction -----------------------------
 * Small inline storage, heap beyond (nested constructors each have their
 * own, so no shared scratch space is clobbered by recursion). */
typedef struct TermBuf {
    IxTerm *t;
    int n, cap;
    int64_t c;
    IxTerm inl[12];
} TermBuf;

static void tb_init(TermBuf *b)
{
    b->t = b->inl;
    b->n = 0;
    b->cap = (int)(sizeof b->inl / sizeof *b->inl);
    b->c = 0;
}

static void tb_free(TermBuf *b)
{
    if (b->t != b->inl)
        free(b->t);
    b->t = b->inl;
}

static void tb_push(TermBuf *b, IxTerm t)
{
    if (b->n == b->cap) {
        IxTerm *nt = xmalloc((size_t)b->cap * 2 * sizeof *nt);
        memcpy(nt, b->t, (size_t)b->n * sizeof *nt);
        if (b->t != b->inl)
            free(b->t);
        b->t = nt;
        b->cap *= 2;
    }
    b->t[b->n++] = t;
}

/* b += k * x */
static void tb_add_ix(IrCtx *cx, TermBuf *b, int64_t k, const Ix *x)
{
    b->c = ir_add(cx, b->c, ir_mul(cx, k, x->c));
    for (int i = 0; i < x->n; i++) {
        IxTerm t = x->t[i];
        t.coef = ir_mul(cx, t.coef, k);
        tb_push(b, t);
    }
}

static int term_qcmp(const void *a, const void *b)
{
    return ir_term_cmp(a, b);
}

static void tb_sort(TermBuf *b)
{
    if (b->n > 16) {
        qsort(b->t, (size_t)b->n, sizeof *b->t, term_qcmp);
        return;
    }
    for (int i = 1; i < b->n; i++) {
        IxTerm t = b->t[i];
        int j = i;
        while (j > 0 && ir_term_cmp(&b->t[j - 1], &t) > 0) {
            b->t[j] = b->t[j - 1];
            j--;
        }
        b->t[j] = t;
    }
}

/* On sorted terms: add up equal atoms, drop zero coefficients. */
static void tb_merge(IrCtx *cx, TermBuf *b)
{
    int w = 0;
    for (int i = 0; i < b->n; i++) {
        if (w > 0 && ir_term_cmp(&b->t[w - 1], &b->t[i]) == 0)
            b->t[w - 1].coef = ir_add(cx, b->t[w - 1].coef, b->t[i].coef);
        else
            b->t[w++] = b->t[i];
    }
    int k = 0;
    for (int i = 0; i < w; i++)
        if (b->t[i].coef != 0)
            b->t[k++] = b->t[i];
    b->n = k;
}

static const Ix *ix_mod_pos(IrCtx *cx, const Ix *a, int64_t d);

/* Finds term t (its atom) in the sorted, merged buffer; -1 if absent. */
static int tb_find(const TermBuf *b, const IxTerm *t)
{
    int lo = 0, hi = b->n;
    while (lo < hi) {
        int mid = (lo + hi) / 2, c = ir_term_cmp(&b->t[mid], t);
        if (c == 0)
            return mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

/* On a sorted, merged buffer:
 *   k*d * floor(x / d) + k * (x mod d)  ->  k * x
 *   k * x - k*d * floor(x / d)          ->  k * (x mod d)
 * Returns whether it changed anything (the buffer then needs sorting). */
static bool tb_recombine(IrCtx *cx, TermBuf *b)
{
    for (int j = 0; j < b->n; j++) {
        const IxTerm *dv = &b->t[j];
        if (dv->kind != IX_DIV || dv->coef % dv->d != 0)
            continue;
        int64_t k = -(dv->coef / dv->d);
        const Ix *x = dv->arg;
        bool all = true;
        for (int i = 0; i < x->n && all; i++) {
            int at = tb_find(b, &x->t[i]);
            int64_t want;
            all = at >= 0 && !__builtin_mul_overflow(k, x->t[i].coef, &want)
               && b->t[at].coef == want;
        }
        if (!all)
            continue;
        for (int i = 0; i < x->n; i++)
            b->t[tb_find(b, &x->t[i])].coef = 0;
        int64_t d = dv->d;
        b->t[j].coef = 0;
        b->c = ir_add(cx, b->c, ir_mul(cx, -k, x->c));
        tb_add_ix(cx, b, k, ix_mod_pos(cx, x, d));
        return true;
    }
    for (int i = 0; i < b->n; i++) {
        if (b->t[i].kind != IX_MOD)
            continue;
        int64_t kd;
        if (__builtin_mul_overflow(b->t[i].coef, b->t[i].d, &kd))
            continue;
        for (int j = 0; j < b->n; j++) {
            if (b->t[j].kind != IX_DIV || b->t[j].d != b->t[i].d
                || b->t[j].coef != kd || !ix_equal(b->t[j].arg, b->t[i].arg))
                continue;
            const Ix *x = b->t[i].arg;
            int64_t k = b->t[i].coef;
            b->t[i].coef = 0;
            b->t[j].coef = 0;
            tb_add_ix(cx, b, k, x);
            return true;
        }
    }
    return false;
}

static const Ix *ix_make(IrCtx *cx, const IxTerm *t, int n, int64_t c)
{
    if (n == 0)
        return ix_const(cx, c);
    Ix *x = ix_alloc(cx, n);
    x->c = c;
    x->n = n;
    memcpy(x->t, t, (size_t)n * sizeof *t);
    ix_rehash(x);
    return x;
}

static void tb_normalize(IrCtx *cx, TermBuf *b, bool sorted)
{
    for (;;) {
        if (!sorted)
            tb_sort(b);
        tb_merge(cx, b);
        bool div = false;
        for (int i = 0; i < b->n && !div; i++)
            div = b->t[i].kind == IX_DIV;
        if (!div || !tb_recombine(cx, b))
            return;
        sorted = false;
    }
}

/* Canonicalise and allocate; frees the buffer. */
static const Ix *tb_finish(IrCtx *cx, TermBuf *b, bool sorted)
{
    tb_normalize(cx, b, sorted);
    const Ix *x = ix_make(cx, b->t, b->n, b->c);
    tb_free(b);
    return x;
}

/* ---- bounds ----------------------------------------------------------------
 * Interval arithmetic in 128 bits with two infinities.  A finite bound
 * lies within [-LIM, LIM]: a lower bound above LIM is lowered to LIM and
 * an upper bound below -LIM raised to -LIM (both still bounds), while a
 * lower bound below -LIM becomes -INF and an upper bound above LIM +INF,
 * for good: no later term brings them back.  So a product of a finite
 * bound and a coefficient fits in 127 bits, and every result is a true
 * bound, never one that a clamp pulled inwards.  Without variable ranges
 * (lo == NULL) a variable is unbounded and the walk fails; mod atoms are
 * bounded anyway. */
typedef __int128 i128;
#define LIM ((i128)1 << 63)
#define INF ((i128)1 << 120)

static i128 norm_lo(i128 v)
{
    return v < -LIM ? -INF : v > LIM ? LIM : v;
}

static i128 norm_hi(i128 v)
{
    return v > LIM ? INF : v < -LIM ? -LIM : v;
}

/* b * c for a bound b (finite or infinite) and a coefficient c. */
static i128 mul_bound(i128 b, int64_t c)
{
    if (c == 0)
        return 0;
    if (b == INF || b == -INF)
        return c > 0 ? b : -b;
    return b * c;
}

static i128 fdiv128(i128 a, i128 d)
{
    if (a == INF || a == -INF)
        return a;               /* d > 0 */
    i128 q = a / d;
    if (a % d != 0 && ((a < 0) != (d < 0)))
        q--;
    return q;
}

static bool bounds_rec(const Ix *a, const int64_t *lo, const int64_t *hi,
                       i128 *mn, i128 *mx)
{
    i128 s0 = a->c, s1 = a->c;
    for (int i = 0; i < a->n; i++) {
        const IxTerm *t = &a->t[i];
        i128 l, h;
        if (t->kind == IX_VAR) {
            if (!lo)
                return false;
            l = lo[t->var];
            h = (i128)hi[t->var] - 1;
            if (h < l)
                h = l;
        } else if (t->kind == IX_READ) {
            /* any value of the tensor's type, or 0 outside it */
            int64_t rl, rh;
            elem_int_range(t->read->access.tensor->elem, &rl, &rh);
            l = rl > 0 ? 0 : rl;
            h = rh < 0 ? 0 : rh;
        } else {
            i128 al, ah;
            bool ok = bounds_rec(t->arg, lo, hi, &al, &ah);
            if (t->kind == IX_DIV) {
                if (!ok)
                    return false;
                l = fdiv128(al, t->d);
                h = fdiv128(ah, t->d);
            } else if (ok && al != -INF && ah != INF
                       && fdiv128(al, t->d) == fdiv128(ah, t->d)) {
                i128 q = fdiv128(al, t->d) * t->d;
                l = al - q;
                h = ah - q;
            } else {
                l = 0;
                h = t->d - 1;
            }
        }
        i128 tl = mul_bound(t->coef >= 0 ? l : h, t->coef);
        i128 th = mul_bound(t->coef >= 0 ? h : l, t->coef);
        s0 = s0 == -INF || tl == -INF ? -INF : norm_lo(s0 + tl);
        s1 = s1 == INF || th == INF ? INF : norm_hi(s1 + th);
    }
    *mn = s0;
    *mx = s1;
    return true;
}

static int64_t sat64(i128 v)
{
    return v > INT64_MAX ? INT64_MAX : v < INT64_MIN ? INT64_MIN : (int64_t)v;
}

/* bounds_rec for a sum of variables, in 64 bits: false where a term is
 * not a variable or a step overflows, and bounds_rec must do it.  Where
 * nothing overflows, no bound of bounds_rec leaves [-LIM, LIM] either,
 * so both give the same (most subscripts are such sums: this is the
 * search's most frequent question). */
static bool bounds_vars(const Ix *a, const int64_t *lo, const int64_t *hi, int64_t *mn,
                        int64_t *mx)
{
    int64_t s0 = a->c, s1 = a->c;
    for (int i = 0; i < a->n; i++) {
        const IxTerm *t = &a->t[i];
        int64_t l, h, tl, th;
        if (t->kind != IX_VAR || __builtin_sub_overflow(hi[t->var], 1, &h))
            return false;
        l = lo[t->var];
        if (h < l)
            h = l;
        if (__builtin_mul_overflow(t->coef >= 0 ? l : h, t->coef, &tl) ||
            __builtin_mul_overflow(t->coef >= 0 ? h : l, t->coef, &th) ||
            __builtin_add_overflow(s0, tl, &s0) || __builtin_add_overflow(s1, th, &s1))
            return false;
    }
    *mn = s0;
    *mx = s1;
    return true;
}

void ix_bounds(const Ix *a, const int64_t *range_lo, const int64_t *range_hi,
               int64_t *min, int64_t *max)
{
    if (range_lo && bounds_vars(a, range_lo, range_hi, min, max))
        return;
    i128 mn = -INF, mx = INF;
    if (!bounds_rec(a, range_lo, range_hi, &mn, &mx))
        mn = -INF, mx = INF;
    *min = sat64(mn);
    *max = sat64(mx);
}

/* ---- constructors ------------------------------------------------------ */

const Ix *ix_const(IrCtx *cx, int64_t c)
{
    if (c >= IR_SMALL_LO && c < IR_SMALL_HI)
        return cx->small[c - IR_SMALL_LO];
    Ix *x = ix_alloc(cx, 0);
    x->c = c;
    ix_rehash(x);
    return x;
}

const Ix *ix_var(IrCtx *cx, int var)
{
    if (var < 0 || var >= cx->var_ix.len)
        ICE("ix_var: no variable %d", var);
    return cx->var_ix.data[var];
}

/* ka*a + kb*b by merging the two sorted term lists. */
static const Ix *ix_lin2(IrCtx *cx, int64_t ka, const Ix *a, int64_t kb, const Ix *b)
{
    TermBuf tb;
    tb_init(&tb);
    tb.c = ir_add(cx, ir_mul(cx, ka, a->c), ir_mul(cx, kb, b->c));
    int i = 0, j = 0;
    while (i < a->n || j < b->n) {
        int c = i == a->n ? 1 : j == b->n ? -1 : ir_term_cmp(&a->t[i], &b->t[j]);
        IxTerm t;
        if (c < 0) {
            t = a->t[i++];
            t.coef = ir_mul(cx, t.coef, ka);
        } else if (c > 0) {
            t = b->t[j++];
            t.coef = ir_mul(cx, t.coef, kb);
        } else {
            t = a->t[i++];
            t.coef = ir_add(cx, ir_mul(cx, t.coef, ka), ir_mul(cx, b->t[j++].coef, kb));
        }
        if (t.coef != 0)
            tb_push(&tb, t);
    }
    return tb_finish(cx, &tb, true);
}

static bool is_zero(const Ix *a)
{
    return a->n == 0 && a->c == 0;
}

const Ix *ix_add(IrCtx *cx, const Ix *a, const Ix *b)
{
    if (is_zero(b))
        return a;
    if (is_zero(a))
        return b;
    return ix_lin2(cx, 1, a, 1, b);
}

const Ix *ix_sub(IrCtx *cx, const Ix *a, const Ix *b)
{
    if (is_zero(b))
        return a;
    return ix_lin2(cx, 1, a, -1, b);
}

const Ix *ix_scale(IrCtx *cx, const Ix *a, int64_t k)
{
    if (k == 1)
        return a;
    if (k == 0)
        return ix_const(cx, 0);
    if (a->n == 0)
        return ix_const(cx, ir_mul(cx, a->c, k));
    /* Scaling keeps the atom order and cannot create a div/mod pair. */
    Ix *x = ix_alloc(cx, a->n);
    x->n = a->n;
    x->c = ir_mul(cx, a->c, k);
    for (int i = 0; i < a->n; i++) {
        x->t[i] = a->t[i];
        x->t[i].coef = ir_mul(cx, a->t[i].coef, k);
    }
    ix_rehash(x);
    return x;
}

static uint64_t abs_u(int64_t v)
{
    return v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
}

static bool bounded_quotient(const Ix *arg, int64_t d, int64_t *q)
{
    i128 mn, mx;
    if (!bounds_rec(arg, NULL, NULL, &mn, &mx))
        return false;
    i128 a = fdiv128(mn, d), b = fdiv128(mx, d);
    if (a != b || a > INT64_MAX || a < INT64_MIN)
        return false;
    *q = (int64_t)a;
    return true;
}

const Ix *ix_div(IrCtx *cx, const Ix *a, int64_t d)
{
    if (d == 0)
        ICE("index division by zero");
    if (d < 0) {
        if (d == INT64_MIN) {
            cx->overflow = true;
            return ix_const(cx, 0);
        }
        return ix_div(cx, ix_scale(cx, a, -1), -d);
    }
    if (d == 1)
        return a;
    if (a->n == 0)
        return ix_const(cx, i64_floordiv(a->c, d));

    TermBuf out, in;
    tb_init(&out);
    tb_init(&in);
    for (int i = 0; i < a->n; i++) {
        IxTerm t = a->t[i];
        if (t.coef % d == 0) {
            t.coef /= d;
            tb_push(&out, t);
        } else {
            tb_push(&in, t);
        }
    }
    int64_t q = i64_floordiv(a->c, d), r = i64_floormod(a->c, d);
    out.c = q;
    if (in.n > 0) {
        uint64_t g = (uint64_t)d;
        for (int i = 0; i < in.n && g > 1; i++)
            g = u64_gcd(g, abs_u(in.t[i].coef));
        if (g > 1) {
            for (int i = 0; i < in.n; i++)
                in.t[i].coef /= (int64_t)g;
            r /= (int64_t)g;
            d /= (int64_t)g;
        }
        const Ix *arg = ix_make(cx, in.t, in.n, r);
        int64_t k, e = 0, ed, re;
        if (bounded_quotient(arg, d, &k)) {
            out.c = ir_add(cx, out.c, k);
        } else if (arg->n == 1 && arg->t[0].coef == 1 && arg->t[0].kind == IX_DIV
                   && (e = arg->t[0].d, !__builtin_mul_overflow(e, d, &ed))
                   && !__builtin_mul_overflow(r, e, &re)) {
            const Ix *x = ix_add(cx, arg->t[0].arg, ix_const(cx, re));
            tb_add_ix(cx, &out, 1, ix_div(cx, x, ed));
        } else {
            tb_push(&out, (IxTerm){.coef = 1, .kind = IX_DIV, .arg = arg, .d = d});
        }
    }
    tb_free(&in);
    return tb_finish(cx, &out, false);
}

const Ix *ix_mod(IrCtx *cx, const Ix *a, int64_t d)
{
    if (d == 0)
        ICE("index modulo by zero");
    if (d < 0) {
        if (d == INT64_MIN) {
            cx->overflow = true;
            return ix_const(cx, 0);
        }
        return ix_scale(cx, ix_mod(cx, ix_scale(cx, a, -1), -d), -1);
    }
    return ix_mod_pos(cx, a, d);
}

static const Ix *ix_mod_pos(IrCtx *cx, const Ix *a, int64_t d)
{
    if (d == 1)
        return ix_const(cx, 0);
    if (a->n == 0)
        return ix_const(cx, i64_floormod(a->c, d));

    TermBuf in;
    tb_init(&in);
    in.c = a->c;
    bool resort = false;
    for (int i = 0; i < a->n; i++) {
        const IxTerm *t = &a->t[i];
        if (t->kind == IX_MOD && t->d % d == 0) {
            /* (x mod k*d) mod d = x mod d */
            tb_add_ix(cx, &in, t->coef, t->arg);
            resort = true;
        } else if (t->coef % d != 0) {
            tb_push(&in, *t);
        }
    }
    if (resort) {
        tb_normalize(cx, &in, false);
        int k = 0;
        for (int i = 0; i < in.n; i++)
            if (in.t[i].coef % d != 0)
                in.t[k++] = in.t[i];
        in.n = k;
    }
    int64_t r = i64_floormod(in.c, d);
    if (in.n == 0) {
        tb_free(&in);
        return ix_const(cx, r);
    }
    uint64_t g = (uint64_t)d;
    for (int i = 0; i < in.n && g > 1; i++)
        g = u64_gcd(g, abs_u(in.t[i].coef));
    int64_t r0 = 0;
    if (g > 1) {
        for (int i = 0; i < in.n; i++)
            in.t[i].coef /= (int64_t)g;
        r0 = r % (int64_t)g;
        r /= (int64_t)g;
        d /= (int64_t)g;
    }
    const Ix *arg = ix_make(cx, in.t, in.n, r);
    tb_free(&in);
    const Ix *m;
    int64_t k;
    if (bounded_quotient(arg, d, &k)) {
        m = ix_add(cx, arg, ix_const(cx, ir_mul(cx, -k, d)));
    } else {
        Ix *x = ix_alloc(cx, 1);
        x->n = 1;
        x->t[0] = (IxTerm){.coef = 1, .kind = IX_MOD, .arg = arg, .d = d};
        ix_rehash(x);
        m = x;
    }
    if (g > 1)
        m = ix_add(cx, ix_scale(cx, m, (int64_t)g), ix_const(cx, r0));
    return m;
}

/* The atom of a gather; its summary `arg` is the sum of the variables
 * its subscripts use, each once. */
static void vars_of(const Ix *a, bool *seen, int nvars)
{
    for (int i = 0; i < a->n; i++) {
        const IxTerm *t = &a->t[i];
        if (t->kind == IX_VAR) {
            if (t->var < nvars)
                seen[t->var] = true;
        } else {
            vars_of(t->arg, seen, nvars);
        }
    }
}

const Ix *ix_read(IrCtx *cx, const IExpr *read)
{
    if (read->kind != IE_ACCESS || !read->access.tensor ||
        !elem_is_int(read->access.tensor->elem))
        ICE("ix_read: not a read of an integer tensor");
    int nv = cx->vars.len;
    bool *seen = xcalloc((size_t)nv + 1, sizeof *seen);
    for (int k = 0; k < read->access.nidx; k++)
        vars_of(read->access.idx[k], seen, nv);
    TermBuf b;
    tb_init(&b);
    for (int v = 0; v < nv; v++)
        if (seen[v])
            tb_push(&b, (IxTerm){.coef = 1, .kind = IX_VAR, .var = v});
    free(seen);
    const Ix *sum = tb_finish(cx, &b, true);
    Ix *x = ix_alloc(cx, 1);
    x->n = 1;
    x->t[0] = (IxTerm){.coef = 1, .kind = IX_READ, .arg = sum, .d = 1, .read = read};
    ix_rehash(x);
    return x;
}

bool ix_has_read(const Ix *a)
{
    for (int i = 0; i < a->n; i++)
        if (a->t[i].kind == IX_READ ||
            (a->t[i].kind != IX_VAR && ix_has_read(a->t[i].arg)))
            return true;
    return false;
}

static void gathers_rec(const Ix *a, const IExpr **out, int max, int *n)
{
    for (int i = 0; i < a->n; i++) {
        const IxTerm *t = &a->t[i];
        if (t->kind == IX_READ) {
            if (*n < max)
                out[*n] = t->read;
            ++*n;
        } else if (t->kind != IX_VAR) {
            gathers_rec(t->arg, out, max, n);
        }
    }
}

int ix_gathers(const Ix *a, const IExpr **out, int max)
{
    int n = 0;
    gathers_rec(a, out, max, &n);
    return n;
}

bool ix_uses(const Ix *a, int var)
{
    for (int i = 0; i < a->n; i++) {
        const IxTerm *t = &a->t[i];
        if (t->kind == IX_VAR ? t->var == var : ix_uses(t->arg, var))
            return true;
    }
    return false;
}

const Ix *ix_subst(IrCtx *cx, const Ix *a, int var, const Ix *by)
{
    if (!ix_uses(a, var))
        return a;
    TermBuf b;
    tb_init(&b);
    b.c = a->c;
    for (int i = 0; i < a->n; i++) {
        const IxTerm *t = &a->t[i];
        if (t->kind == IX_VAR) {
            if (t->var == var)
                tb_add_ix(cx, &b, t->coef, by);
            else
                tb_push(&b, *t);
            continue;
        }
        if (t->kind == IX_READ) {
            const IExpr *r = ir_subst(cx, t->read, var, by);
            if (r == t->read)
                tb_push(&b, *t);
            else
                tb_add_ix(cx, &b, t->coef, ix_read(cx, r));
            continue;
        }
        const Ix *arg = ix_subst(cx, t->arg, var, by);
        if (arg == t->arg)
            tb_push(&b, *t);
        else
            tb_add_ix(cx, &b, t->coef, t->kind == IX_DIV ? ix_div(cx, arg, t->d)
                                                         : ix_mod(cx, arg, t->d));
    }
    return tb_finish(cx, &b, false);
}

const Ix *ix_simplify(IrCtx *cx, const Ix *a, const int64_t *range_lo,
                      const int64_t *range_hi)
{
    bool any = false;
    for (int i = 0; i < a->n && !any; i++)
        any = a->t[i].kind != IX_VAR;
    if (!any)
        return a;
    TermBuf b;
    tb_init(&b);
    b.c = a->c;
    bool changed = false;
    for (int i = 0; i < a->n; i++) {
        const IxTerm *t = &a->t[i];
        if (t->kind == IX_VAR || t->kind == IX_READ) {
            tb_push(&b, *t);
            continue;
        }
        const Ix *arg = ix_simplify(cx, t->arg, range_lo, range_hi);
        i128 mn, mx;
        bounds_rec(arg, range_lo, range_hi, &mn, &mx);
        i128 q0 = fdiv128(mn, t->d), q1 = fdiv128(mx, t->d);
        if (q0 == q1 && q0 <= INT64_MAX && q0 >= INT64_MIN) {
            int64_t q = (int64_t)q0;
            if (t->kind == IX_DIV) {
                b.c = ir_add(cx, b.c, ir_mul(cx, t->coef, q));
            } else {
                tb_add_ix(cx, &b, t->coef, arg);
                b.c = ir_add(cx, b.c, ir_mul(cx, t->coef, ir_mul(cx, -q, t->d)));
            }
            changed = true;
        } else if (arg != t->arg) {
            tb_add_ix(cx, &b, t->coef, t->kind == IX_DIV ? ix_div(cx, arg, t->d)
                                                         : ix_mod(cx, arg, t->d));
            changed = true;
        } else {
            tb_push(&b, *t);
        }
    }
    if (!changed) {
        tb_free(&b);
        return a;
    }
    return tb_finish(cx, &b, false);
}

bool ix_is_const(const Ix *a, int64_t *c)
{
    if (a->n != 0)
        return false;
    if (c)
        *c = a->c;
    return true;
}

int64_t ix_coef(const Ix *a, int var)
{
    for (int i = 0; i < a->n && a->t[i].kind == IX_VAR; i++)
        if (a->t[i].var == var)
            return a->t[i].coef;
    return 0;
}

/* The element a gather reads, 0 outside the tensor. */
static int64_t read_value(const IExpr *r, const int64_t *env, double *const *data)
{
    const IrTensor *t = r->access.tensor;
    if (!data)
        ICE("ix_eval: a gather from '%s' without the tensors' data", t->name);
    size_t off = 0;
    for (int k = 0; k < t->rank; k++) {
        int64_t v = ix_eval_data(r->access.idx[k], env, data);
        if (v < 0 || v >= t->shape[k])
            return 0;
        off = off * (size_t)t->shape[k] + (size_t)v;
    }
    return (int64_t)data[t->id][off];
}

int64_t ix_eval(const Ix *a, const int64_t *env)
{
    return ix_eval_data(a, env, NULL);
}

/* Wrapping arithmetic (defined behaviour) with exact floor semantics. */
int64_t ix_eval_data(const Ix *a, const int64_t *env, double *const *data)
{
    uint64_t v = (uint64_t)a->c;
    for (int i = 0; i < a->n; i++) {
        const IxTerm *t = &a->t[i];
        int64_t x;
        if (t->kind == IX_VAR) {
            x = env[t->var];
        } else if (t->kind == IX_READ) {
            x = read_value(t->read, env, data);
        } else {
            int64_t y = ix_eval_data(t->arg, env, data), q = y / t->d, m = y % t->d;
            if (m < 0) {
                m += t->d;
                q--;
            }
            x = t->kind == IX_MOD ? m : q;
        }
        v += (uint64_t)t->coef * (uint64_t)x;
    }
    return (int64_t)v;
}

/* The canonical integer comparison `ix op 0`, op one of EQ, NE, GE:
 * divide out the gcd g of the coefficients (g*u + c >= 0 is
 * u + floor(c/g) >= 0; g*u + c == 0 is false unless g | c), and for EQ and
 * NE make the first coefficient positive.  Returns NULL when the result is
 * decided, with *truth set. */
const Ix *ix_icmp_normal(IrCtx *cx, BinOp op, const Ix *ix, bool *truth)
{
    if (ix->n == 0) {
        *truth = op == OP_EQ ? ix->c == 0 : op == OP_NE ? ix->c != 0 : ix->c >= 0;
        return NULL;
    }
    uint64_t g = 0;
    for (int i = 0; i < ix->n && g != 1; i++)
        g = u64_gcd(g, abs_u(ix->t[i].coef));
    if (g > (uint64_t)INT64_MAX)
        g = 1;
    int64_t sign = op != OP_GE && ix->t[0].coef < 0 ? -1 : 1;
    if (g <= 1 && sign == 1)
        return ix;
    int64_t c;
    if (op == OP_GE) {
        c = i64_floordiv(ix->c, (int64_t)g);
    } else {
        if (i64_floormod(ix->c, (int64_t)g) != 0) {
            *truth = op == OP_NE;
            return NULL;
        }
        c = ir_mul(cx, ix->c / (int64_t)g, sign);
    }
    Ix *x = ix_alloc(cx, ix->n);
    x->n = ix->n;
    x->c = c;
    for (int i = 0; i < ix->n; i++) {
        x->t[i] = ix->t[i];
        x->t[i].coef = ir_mul(cx, ix->t[i].coef / (int64_t)g, sign);
    }
    ix_rehash(x);
    return x;
}
