/* kernel.c - the one description of a generated kernel, built from an
 * operator of the plan: which tensors it reads, the index type, a
 * dialect-neutral C body that computes one output element into `acc`, and
 * what is stored (acc, or the operator's epilogue of it).  c.c and cuda.c
 * wrap the same body in a loop nest or a grid-stride loop, so the CPU
 * tests run exactly the arithmetic the GPU runs.  A library call's
 * epilogue is a kernel of its own, run after the call over the output in
 * place.
 *
 * Exactness rules carried out here: reads outside a tensor's shape are 0
 * (a check is written only where ix_bounds says the index can leave the
 * shape); floor division and modulo by constants go through helpers that
 * are exact for negative values unless the argument is provably >= 0;
 * elements outside the loop ranges (output padding) and elements whose
 * loop-level guards fail are 0; a max=/min= with no term is 0.  Reads of
 * f16 and bf16 tensors widen the element to float (ein_ld_f16,
 * ein_ld_bf16); all arithmetic is in float.  Nested stages in a body are
 * not generated yet: they are an internal error (ICE), as is anything
 * else a well-formed plan does not hold. */
#include "config.h"
#include "emit_int.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>


typedef struct KGen {
    Emit *em;
    Kernel *k;
    const IrTensor *out;
    int nvars;                      /* ir_var_count */
    int64_t *lo, *hi;               /* range by var id (bound vars only) */
    const char **vname;             /* C name by var id; NULL: not bound */
    bool wide;                      /* index arithmetic in int64_t */
    bool *reads;                    /* by tensor id (shared by all kernels, */
    int *read_ids, nread_ids;       /*  cleared after each: these are set) */
    /* Deep expressions are cut into named temporaries (ein_x0, ...): the
     * definitions wait in `pre` until the statement that uses them is
     * written, and `nest` counts the operators open around the one being
     * written. */
    Sb pre;
    int ntemps, nest;
    bool *used;                     /* by var id: appears in the body */
    /* --precision below fp32 and a summed body: the tensor operands of
     * its products are rounded to the format (ein_rnd), as library calls
     * round theirs, so a contraction computes the same wherever it runs */
    bool rnd;
    /* An epilogue's reads of the operator's own value (plan.h): written
     * as self_text where it is fused into the store, else (NULL) read from
     * the output's own element, in place, after a library call. */
    const IrTensor *self;
    const char *self_text;
    /* Writing a loop the C dialect marks `omp simd`: a select's operands
     * become temporaries, computed whichever is taken (they read inside
     * their tensors, vec_expr), so that the compiler if-converts it. */
    bool vec;
    /* Writing an integer map (int_map): reads of integer tensors and
     * integer constants as int64_t, not float. */
    bool ints;
    /* A map's subexpressions that do not change along its innermost loop
     * (hoist_map): written once per row before that loop, as ein_hN. */
    const IExpr *hoist[KERNEL_MAX_HOIST];
    int nhoist;
    /* Writing a map's _v4 body (build_v4): the innermost loop variable's
     * id (else -1), and the float4 loads written so far, each a read that
     * steps by one element along it (v4_access), by its line. */
    int v4var;
    Sb v4loads;
    const char *v4key[KERNEL_MAX_V4];
    const IrTensor *v4t[KERNEL_MAX_V4];
    int nv4;
} KGen;

/* Largest magnitude an index expression or any partial sum of it can
 * take, saturating at INT64_MAX: decides between int and int64_t. */
static int64_t expr_mag(const KGen *g, const IExpr *e);

static int64_t ix_mag(const KGen *g, const Ix *ix)
{
    int64_t m = ix->c < 0 ? (ix->c == INT64_MIN ? INT64_MAX : -ix->c) : ix->c;
    for (int i = 0; i < ix->n; i++) {
        const IxTerm *t = &ix->t[i];
        int64_t a;
        switch (t->kind) {
        case IX_VAR: {
            int64_t l = g->lo[t->var], h = g->hi[t->var];
            l = l < 0 ? (l == INT64_MIN ? INT64_MAX : -l) : l;
            h = h < 0 ? (h == INT64_MIN ? INT64_MAX : -h) : h;
            a = l > h ? l : h;
            break;
        }
        case IX_DIV:
            a = ix_mag(g, t->arg);
            a = a / (t->d < 0 ? -t->d : t->d) + 1;
            break;
        case IX_READ: {
            /* the type's range, and the read's own subscripts and offset */
            int64_t lo, hi;
            elem_int_range(t->read->access.tensor->elem, &lo, &hi);
            a = hi > (lo == INT64_MIN ? INT64_MAX : -lo) ? hi : (lo == INT64_MIN ? INT64_MAX : -lo);
            int64_t r = expr_mag(g, t->read);
            a = a > r ? a : r;
            break;
        }
        default:
            a = ix_mag(g, t->arg);         /* the argument is computed too */
            break;
        }
        int64_t c = t->coef < 0 ? -t->coef : t->coef, p;
        if (!i64_mul(c, a, &p) || !i64_add(m, p, &m))
            return INT64_MAX;
    }
    return m;
}

static void bounds(const KGen *g, const Ix *ix, int64_t *mn, int64_t *mx)
{
    ix_bounds(ix, g->lo, g->hi, mn, mx);
}

static bool ix_simple(const Ix *ix)
{
    return ix->n == 0 || (ix->n == 1 && ix->c == 0 && ix->t[0].coef == 1 &&
                          ix->t[0].kind == IX_VAR);
}

static void gen_ix(KGen *g, const Ix *ix, Sb *b);

static void gen_ix_paren(KGen *g, const Ix *ix, Sb *b)
{
    if (ix_simple(ix) && (ix->n || ix->c >= 0)) {
        gen_ix(g, ix, b);
    } else {
        sb_putc(b, '(');
        gen_ix(g, ix, b);
        sb_putc(b, ')');
    }
}

static void gen_gather(KGen *g, const IExpr *e, Sb *b);

static void gen_atom(KGen *g, const IxTerm *t, Sb *b)
{
    if (t->kind == IX_VAR) {
        const char *n = t->var >= 0 && t->var < g->nvars ? g->vname[t->var] : NULL;
        if (!n)
            ICE_AT(g->out->loc, "variable %d is not bound in the stage of '%s'", t->var,
                   g->out->name);
        g->used[t->var] = true;
        sb_puts(b, n);
        return;
    }
    if (t->kind == IX_READ) {
        gen_gather(g, t->read, b);
        return;
    }
    int64_t mn, mx;
    bounds(g, t->arg, &mn, &mx);
    bool div = t->kind == IX_DIV;
    if (mn >= 0 && t->d > 0) {
        /* C's truncating / and % agree with floor for a >= 0, d > 0. */
        sb_putc(b, '(');
        gen_ix_paren(g, t->arg, b);
        sb_printf(b, " %c %" PRId64 ")", div ? '/' : '%', t->d);
    } else {
        sb_printf(b, "ein_floor%s%s(", div ? "div" : "mod", g->wide ? "_l" : "_i");
        g->em->helpers |= div ? (g->wide ? HELP_FLOORDIV_L : HELP_FLOORDIV_I)
                              : (g->wide ? HELP_FLOORMOD_L : HELP_FLOORMOD_I);
        gen_ix(g, t->arg, b);
        sb_printf(b, ", %" PRId64 ")", t->d);
    }
}

static void put_mag(Sb *b, int64_t c)
{
    uint64_t m = c < 0 ? (uint64_t)0 - (uint64_t)c : (uint64_t)c;
    sb_printf(b, "%" PRIu64, m);
}

/* c + Σ coef * atom, written as  a + 2 * b - c - 1 */
static void gen_ix(KGen *g, const Ix *ix, Sb *b)
{
    for (int i = 0; i < ix->n; i++) {
        const IxTerm *t = &ix->t[i];
        if (i == 0)
            sb_puts(b, t->coef < 0 ? "-" : "");
        else
            sb_puts(b, t->coef < 0 ? " - " : " + ");
        if (t->coef != 1 && t->coef != -1) {
            put_mag(b, t->coef);
            sb_puts(b, " * ");
        }
        gen_atom(g, t, b);
    }
    if (ix->n == 0) {
        sb_printf(b, "%" PRId64, ix->c);
    } else if (ix->c != 0) {
        sb_puts(b, ix->c < 0 ? " - " : " + ");
        put_mag(b, ix->c);
    }
}

static void gen_f(KGen *g, const IExpr *e, Sb *b);
static void gen_b(KGen *g, const IExpr *e, Sb *b);
static void line(Sb *b, int depth, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Row-major offset of dims first..k:  ((i0 * S1 + i1) * S2 + i2), each
 * subscript whole before it is added: its terms may not fit apart where
 * it does (9223372036854775807 * i - 9223372036854775807 at i = 1). */
static void gen_offset(KGen *g, const IrTensor *t, const Ix **idx, int first, int k, Sb *b)
{
    if (k < first) {
        sb_putc(b, '0');
        return;
    }
    if (k == first) {
        if (t->rank > first + 1)
            gen_ix_paren(g, idx[first], b);
        else
            gen_ix(g, idx[first], b);
        return;
    }
    if (k >= first + 2)
        sb_putc(b, '(');
    gen_offset(g, t, idx, first, k - 1, b);
    if (k >= first + 2)
        sb_putc(b, ')');
    sb_printf(b, " * %" PRId64 " + ", t->shape[k]);
    gen_ix_paren(g, idx[k], b);
}

/* The member index of t in the row group being built where t lives only
 * in the group (one row of it, ein_rowN), else -1. */
static int row_local(const KGen *g, const IrTensor *t)
{
    const PlanRowGroup *r = g->em->rows;
    for (int i = 0; r && i < r->nmembers; i++)
        if (r->members[i] == t && !r->stored[i])
            return i;
    return -1;
}

/* Whether the read e is of the element being computed: the loop
 * variables of the stage, in order. */
static bool at_element(const KGen *g, const IExpr *e)
{
    const Stage *st = g->k->st;
    if (e->access.nidx != st->nloops)
        return false;
    for (int d = 0; d < st->nloops; d++) {
        const Ix *x = e->access.idx[d];
        if (x->n != 1 || x->c != 0 || x->t[0].kind != IX_VAR || x->t[0].coef != 1 ||
            x->t[0].var != st->loops[d].id)
            return false;
    }
    return true;
}

/* The bounds checks of a read: "" when it cannot leave its tensor, else
 * a condition; false when it never reads inside. */
static bool read_conds(KGen *g, const IExpr *e, Sb *cond, int *nconds)
{
    const IrTensor *t = e->access.tensor;
    *nconds = 0;
    for (int k = 0; k < t->rank; k++) {
        const Ix *ix = e->access.idx[k];
        int64_t mn, mx, S = t->shape[k];
        bounds(g, ix, &mn, &mx);
        if (mx < 0 || mn >= S)
            return false;
        bool need_lo = mn < 0, need_hi = mx >= S;
        if (!need_lo && !need_hi)
            continue;
        sb_puts(cond, (*nconds)++ ? " && " : "");
        /* a gather's value is not bounded by the kernel's int width */
        bool wide = g->wide || ix_has_read(ix);
        if (need_lo && need_hi) {
            sb_printf(cond, "(%s)(", wide ? "uint64_t" : "unsigned");
            gen_ix(g, ix, cond);
            sb_printf(cond, ") < %" PRId64 "u", S);
        } else {
            gen_ix(g, ix, cond);
            if (need_lo)
                sb_puts(cond, " >= 0");
            else
                sb_printf(cond, " < %" PRId64, S);
        }
    }
    return true;
}

/* The kernel reads t: a parameter of it. */
static void note_read(KGen *g, const IrTensor *t)
{
    if (!g->reads[t->id]) {
        g->reads[t->id] = true;
        g->read_ids[g->nread_ids++] = t->id;
    }
}

/* A gather: the element of an integer tensor as an index value, 0 when
 * its subscripts leave the tensor; never a read out of bounds. */
static void gen_gather(KGen *g, const IExpr *e, Sb *b)
{
    const IrTensor *t = e->access.tensor;
    Sb cond = {0};
    int nconds;
    if (!read_conds(g, e, &cond, &nconds)) {
        sb_puts(b, "0");
        sb_free(&cond);
        return;
    }
    note_read(g, t);
    const char *ct = t->elem == ELEM_I64 || g->wide ? "int64_t" : "int";
    if (nconds)
        sb_printf(b, "(%s ? (%s)t_%s[", sb_str(&cond), ct, g->em->cname[t->id]);
    else
        sb_printf(b, "((%s)t_%s[", ct, g->em->cname[t->id]);
    if (t->rank == 0)
        sb_putc(b, '0');
    else
        gen_offset(g, t, e->access.idx, 0, t->rank - 1, b);
    sb_puts(b, nconds ? "] : 0)" : "])");
    sb_free(&cond);
}

/* Below this many elements a map has no _v4 kernel (nor a row group's
 * reduction, counting its terms, float4 loads): a few blocks either way,
 * and the second kernel is code for nothing. */
#define V4_MIN_ELEMENTS 4096

/* Does the read e of t (inside its shape) step by one element as the
 * innermost loop variable of a _v4 body does, from a multiple of 4: that
 * variable with coefficient 1 in its last subscript only, every other
 * term and the constant of that subscript a multiple of 4, and a row of
 * t a multiple of 4 long, so that four consecutive elements from ein_c0
 * are one 16-byte aligned float4 where t's buffer is?  (A row group's
 * member that lives in it, ein_rowN, is one row of t in shared memory,
 * declared 16-byte aligned.) */
static bool v4_access(const KGen *g, const IExpr *e, const IrTensor *t)
{
    int r = t->rank, vi = g->v4var;
    if (t->elem != ELEM_F32 || r == 0 || e->access.nidx != r ||
        (r > 1 && t->shape[r - 1] % 4 != 0))
        return false;
    for (int d = 0; d < r; d++)
        if (ix_has_read(e->access.idx[d]) || (d < r - 1 && ix_uses(e->access.idx[d], vi)))
            return false;
    const Ix *x = e->access.idx[r - 1];
    bool unit = false;
    for (int i = 0; i < x->n; i++) {
        const IxTerm *tm = &x->t[i];
        if (tm->kind != IX_VAR)
            return false;
        if (tm->var == vi)
            unit = tm->coef == 1;
        else if (tm->coef % 4 != 0)
            return false;
    }
    return unit && x->c % 4 == 0;
}

/* In a _v4 body, such a read of t is ein_vN[ein_j], N its float4 load
 * (one per distinct read, at most KERNEL_MAX_V4; the others read as in
 * the scalar body). */
static bool v4_read(KGen *g, const IExpr *e, const IrTensor *t, Sb *b)
{
    if (g->v4var < 0 || !v4_access(g, e, t))
        return false;
    int vi = g->v4var, local = row_local(g, t);
    const char *name = g->vname[vi];
    bool used = g->used[vi];
    Sb off = {0};
    g->vname[vi] = "ein_c0";
    gen_offset(g, t, e->access.idx, local >= 0 ? g->em->rows->nrow : 0, t->rank - 1, &off);
    g->vname[vi] = name;
    g->used[vi] = used;
    char *key = local >= 0
        ? arena_printf(g->em->arena, "ein_row%d[%s]", local, sb_str(&off))
        : arena_printf(g->em->arena, "t_%s[%s]", g->em->cname[t->id], sb_str(&off));
    sb_free(&off);
    int n = 0;
    while (n < g->nv4 && strcmp(g->v4key[n], key) != 0)
        n++;
    if (n == g->nv4) {
        if (n == KERNEL_MAX_V4)
            return false;
        g->v4key[n] = key;
        g->v4t[n] = local >= 0 ? NULL : t;     /* shared memory: aligned */
        g->nv4++;
        line(&g->v4loads, 0, "const float4 ein_q%d = *(const float4 *)&%s;", n, key);
        line(&g->v4loads, 0, "const float ein_v%d[4] = {ein_q%d.x, ein_q%d.y, ein_q%d.z, "
             "ein_q%d.w};", n, n, n, n, n);
    }
    if (t != g->out && local < 0)
        note_read(g, t);
    sb_printf(b, "ein_v%d[ein_j]", n);
    return true;
}

/* k->vtensors: the buffers of the float4 loads written so far, each
 * once (not a row group's shared rows). */
static void note_v4_tensors(const KGen *g, Kernel *k)
{
    k->vtensors = arena_alloc(g->em->arena, sizeof *k->vtensors * (size_t)(g->nv4 + 1));
    for (int i = 0; i < g->nv4; i++) {
        int j = 0;
        while (j < k->nvtensors && k->vtensors[j] != g->v4t[i])
            j++;
        if (g->v4t[i] && j == k->nvtensors)
            k->vtensors[k->nvtensors++] = g->v4t[i];
    }
}

static void gen_access(KGen *g, const IExpr *e, Sb *b)
{
    if (e->access.stage)
        ICE_AT(g->out->loc, "the stage of '%s' reads a nested stage, which the emitter "
               "does not generate yet", g->out->name);
    const IrTensor *t = e->access.tensor;
    if (t == g->self || t == g->out) {
        /* the operator's value (an epilogue), or the output's element (its
         * pass): nothing else of either may be read */
        if (!g->self || !at_element(g, e) || (t == g->out && g->self_text))
            ICE_AT(g->out->loc, "the stage of '%s' reads %s other than at the element "
                   "it computes", g->out->name, t == g->out ? "its own output" : "its value");
        if (g->self_text) {
            sb_puts(b, g->self_text);
            return;
        }
        t = g->out;             /* in place: through the output's pointer */
    }
    if (e->access.nidx != t->rank)
        ICE_AT(g->out->loc, "'%s' is read with %d subscripts but has rank %d", t->name,
               e->access.nidx, t->rank);
    Sb cond = {0};
    int nconds = 0;
    for (int k = 0; k < t->rank; k++) {
        const Ix *ix = e->access.idx[k];
        int64_t mn, mx, S = t->shape[k];
        bounds(g, ix, &mn, &mx);
        if (mx < 0 || mn >= S) {            /* never inside: the read is 0 */
            sb_free(&cond);
            sb_puts(b, "0.0f");
            return;
        }
        bool need_lo = mn < 0, need_hi = mx >= S;
        if (!need_lo && !need_hi)
            continue;
        sb_puts(&cond, nconds++ ? " && " : "");
        if (need_lo && need_hi) {
            /* One unsigned comparison covers both ends. */
            sb_printf(&cond, "(%s)(", g->wide ? "uint64_t" : "unsigned");
            gen_ix(g, ix, &cond);
            sb_printf(&cond, ") < %" PRId64 "u", S);
        } else {
            gen_ix(g, ix, &cond);
            if (need_lo)
                sb_puts(&cond, " >= 0");
            else
                sb_printf(&cond, " < %" PRId64, S);
        }
    }
    if (!nconds && v4_read(g, e, t, b)) {
        sb_free(&cond);
        return;
    }
    /* an epilogue pass reads its output in place; a row group's member
     * that lives in it, one row of it, by the row's variables */
    int local = row_local(g, t);
    if (t != g->out && local < 0)
        note_read(g, t);
    const char *name = local >= 0 ? arena_printf(g->em->arena, "row%d", local)
                                  : g->em->cname[t->id];
    if (nconds)
        sb_printf(b, "(%s ? ", sb_str(&cond));
    /* An f16 or bf16 element is widened to float as it is read, an
     * integer one converted (exactly, up to 2^24; in an integer map
     * widened to int64_t, exactly). */
    if (elem_is_int(t->elem)) {
        sb_puts(b, g->ints ? "(int64_t)(" : "(float)(");
    } else if (t->elem != ELEM_F32) {
        bool h = t->elem == ELEM_F16;
        sb_puts(b, h ? "ein_ld_f16(" : "ein_ld_bf16(");
        g->em->helpers |= h ? HELP_LD_F16 : HELP_LD_BF16;
    }
    sb_printf(b, "%s_%s[", local >= 0 ? "ein" : "t", name);
    if (t->rank == 0)
        sb_putc(b, '0');
    else
        gen_offset(g, t, e->access.idx, local >= 0 ? g->em->rows->nrow : 0, t->rank - 1, b);
    sb_putc(b, ']');
    if (t->elem != ELEM_F32)
        sb_putc(b, ')');
    if (nconds)
        sb_puts(b, g->ints ? " : 0)" : " : 0.0f)");
    sb_free(&cond);
}

static const char *cmp_op(BinOp op)
{
    switch (op) {
    case OP_EQ: return "==";
    case OP_NE: return "!=";
    case OP_LT: return "<";
    case OP_LE: return "<=";
    case OP_GT: return ">";
    case OP_GE: return ">=";
    default: return NULL;
    }
}

static bool is_bool(const IExpr *e)
{
    switch (e->kind) {
    case IE_CMP: case IE_ICMP: case IE_AND: case IE_OR: case IE_NOT:
        return true;
    default:
        return false;
    }
}

static void gen_temp(KGen *g, const IExpr *e, Sb *b, bool real);

static void gen_call(KGen *g, const IExpr *e, Sb *b)
{
    static const struct { Func fn; const char *c; int nargs; unsigned help; } fns[] = {
        {FN_RELU, "ein_relu", 1, HELP_RELU}, {FN_SIGMOID, "ein_sigmoid", 1, HELP_SIGMOID},
        {FN_TANH, "tanhf", 1, 0}, {FN_EXP, "expf", 1, 0}, {FN_LOG, "logf", 1, 0},
        {FN_SQRT, "sqrtf", 1, 0}, {FN_RSQRT, "ein_rsqrt", 1, HELP_RSQRT},
        {FN_ABS, "fabsf", 1, 0}, {FN_ERF, "erff", 1, 0}, {FN_MAX, "ein_max", 2, HELP_MAX},
        {FN_MIN, "ein_min", 2, HELP_MIN}, {FN_POW, "powf", 2, 0},
        {FN_SIN, "sinf", 1, 0}, {FN_COS, "cosf", 1, 0}, {FN_FLOOR, "floorf", 1, 0},
        {FN_CEIL, "ceilf", 1, 0}, {FN_ROUND, "rintf", 1, 0},
        {FN_SIGN, "ein_sign", 1, HELP_SIGN}, {FN_EXPM1, "expm1f", 1, 0},
        {FN_LOG1P, "log1pf", 1, 0}, {FN_SOFTPLUS, "ein_softplus", 1, HELP_SOFTPLUS},
        {FN_GELU, "ein_gelu", 1, HELP_GELU},
    };
    const IExpr *const *a = e->call.args;
    if (FN_IS_TO(e->call.fn) && e->call.nargs == 1) {
        /* a conversion, its result as a float value (exact for the integer
         * types up to 2^24; f16 and bf16 values are floats) */
        ElemType to = FN_TO_ELEM(e->call.fn);
        if (to == ELEM_F32) {
            gen_f(g, a[0], b);
            return;
        }
        if (elem_is_int(to)) {
            g->em->helpers |= HELP_TO(to);
            sb_printf(b, "(float)ein_to_%s(", elem_name(to));
        } else {
            bool h = to == ELEM_F16;
            g->em->helpers |= h ? HELP_LD_F16 | HELP_ST_F16 : HELP_LD_BF16 | HELP_ST_BF16;
            sb_printf(b, "ein_ld_%s(ein_st_%s(", elem_name(to), elem_name(to));
        }
        gen_f(g, a[0], b);
        sb_puts(b, elem_is_int(to) ? ")" : "))");
        return;
    }
    if (e->call.fn == FN_SELECT) {
        if (e->call.nargs != 3)
            goto bad;
        /* the condition compares reals, also in an integer map */
        bool ints = g->ints;
        sb_putc(b, '(');
        g->ints = false;
        gen_b(g, a[0], b);
        g->ints = ints;
        sb_puts(b, " ? ");
        for (int i = 1; i < 3; i++) {
            if (g->vec && a[i]->kind != IE_CONST)
                gen_temp(g, a[i], b, true);
            else
                gen_f(g, a[i], b);
            sb_puts(b, i == 1 ? " : " : "");
        }
        sb_putc(b, ')');
        return;
    }
    for (size_t i = 0; i < sizeof fns / sizeof *fns; i++) {
        if (fns[i].fn != e->call.fn)
            continue;
        if (e->call.nargs != fns[i].nargs)
            goto bad;
        sb_printf(b, "%s(", fns[i].c);
        g->em->helpers |= fns[i].help;
        for (int j = 0; j < e->call.nargs; j++) {
            sb_puts(b, j ? ", " : "");
            gen_f(g, a[j], b);
        }
        sb_putc(b, ')');
        return;
    }
bad:
    ICE_AT(g->out->loc, "function %d with %d arguments in the stage of '%s'",
           (int)e->call.fn, e->call.nargs, g->out->name);
}

static void gen_f(KGen *g, const IExpr *e, Sb *b);

/* A factor of a product in a summed body at a reduced precision: an f32
 * tensor read is rounded to the format. */
static void gen_factor(KGen *g, const IExpr *e, Sb *b)
{
    if (e->kind != IE_ACCESS || !e->access.tensor || e->access.tensor->elem != ELEM_F32) {
        gen_f(g, e, b);
        return;
    }
    g->em->helpers |= HELP_RND;
    sb_puts(b, "ein_rnd(");
    gen_f(g, e, b);
    sb_putc(b, ')');
}

/* An expression nested at most EMIT_MAX_NEST operators deep in one C
 * statement: deeper, the subexpression becomes a temporary defined before
 * the statement (clang refuses more than 256 nested brackets, and a
 * fused chain of maps would otherwise be one expression as deep as the
 * chain). */
#define EMIT_MAX_NEST 32

static bool is_leaf(const IExpr *e)
{
    return e->kind == IE_CONST || e->kind == IE_INDEX || e->kind == IE_ACCESS ||
           e->kind == IE_ICMP;
}

static void gen_f_node(KGen *g, const IExpr *e, Sb *b);
static void gen_b_node(KGen *g, const IExpr *e, Sb *b);

static void gen_temp(KGen *g, const IExpr *e, Sb *b, bool real)
{
    int nest = g->nest;
    Sb t = {0};
    g->nest = 0;
    if (real)
        gen_f_node(g, e, &t);
    else
        gen_b_node(g, e, &t);
    g->nest = nest;
    /* after the temporaries it uses: they were written as it was */
    line(&g->pre, 0, "const %s ein_x%d = %s;", real ? "float" : "int", g->ntemps, sb_str(&t));
    sb_printf(b, "ein_x%d", g->ntemps++);
    sb_free(&t);
}

/* A real-valued expression. */
static void gen_f(KGen *g, const IExpr *e, Sb *b)
{
    for (int i = 0; i < g->nhoist; i++)
        if (g->hoist[i] == e) {
            sb_printf(b, "ein_h%d", i);
            return;
        }
    if (g->nest >= EMIT_MAX_NEST && !is_leaf(e)) {
        gen_temp(g, e, b, true);
        return;
    }
    g->nest++;
    gen_f_node(g, e, b);
    g->nest--;
}

/* A condition (an int in C). */
static void gen_b(KGen *g, const IExpr *e, Sb *b)
{
    if (g->nest >= EMIT_MAX_NEST && !is_leaf(e)) {
        gen_temp(g, e, b, false);
        return;
    }
    g->nest++;
    gen_b_node(g, e, b);
    g->nest--;
}

/* The temporaries of the statement about to be written, at its depth. */
static void flush_pre(KGen *g, Sb *b, int depth)
{
    if (g->pre.len)
        sb_indent(b, sb_str(&g->pre), 4 * depth);
    sb_free(&g->pre);
    g->pre = (Sb){0};
}

static void gen_f_node(KGen *g, const IExpr *e, Sb *b)
{
    static const char ops[] = {[IE_ADD] = '+', [IE_SUB] = '-', [IE_MUL] = '*',
                               [IE_DIV] = '/'};
    switch (e->kind) {
    case IE_CONST:
        if (g->ints)
            sb_printf(b, "INT64_C(%" PRId64 ")", (int64_t)e->value);
        else
            emit_float(b, e->value);
        return;
    case IE_INDEX:
        sb_puts(b, "(float)");
        gen_ix_paren(g, e->ix, b);
        return;
    case IE_ACCESS:
        gen_access(g, e, b);
        return;
    case IE_MUL:
        if (g->rnd) {
            sb_putc(b, '(');
            gen_factor(g, e->bin.a, b);
            sb_puts(b, " * ");
            gen_factor(g, e->bin.b, b);
            sb_putc(b, ')');
            return;
        }
        /* fall through */
    case IE_ADD: case IE_SUB: case IE_DIV:
        sb_putc(b, '(');
        gen_f(g, e->bin.a, b);
        sb_printf(b, " %c ", ops[e->kind]);
        gen_f(g, e->bin.b, b);
        sb_putc(b, ')');
        return;
    case IE_NEG:
        sb_puts(b, "(-");
        gen_f(g, e->bin.a, b);
        sb_putc(b, ')');
        return;
    case IE_CALL:
        gen_call(g, e, b);
        return;
    default:
        sb_putc(b, '(');
        gen_b(g, e, b);
        sb_puts(b, " ? 1.0f : 0.0f)");
        return;
    }
}

static void gen_b_node(KGen *g, const IExpr *e, Sb *b)
{
    const char *op;
    switch (e->kind) {
    case IE_CONST:
        sb_puts(b, e->value != 0 ? "1" : "0");
        return;
    case IE_CMP:
        if (!(op = cmp_op(e->bin.op)))
            break;
        sb_putc(b, '(');
        gen_f(g, e->bin.a, b);
        sb_printf(b, " %s ", op);
        gen_f(g, e->bin.b, b);
        sb_putc(b, ')');
        return;
    case IE_ICMP:
        if (!(op = cmp_op(e->icmp.op)))
            break;
        sb_putc(b, '(');
        gen_ix(g, e->icmp.ix, b);
        sb_printf(b, " %s 0)", op);
        return;
    case IE_AND: case IE_OR:
        sb_putc(b, '(');
        gen_b(g, e->bin.a, b);
        sb_puts(b, e->kind == IE_AND ? " && " : " || ");
        gen_b(g, e->bin.b, b);
        sb_putc(b, ')');
        return;
    case IE_NOT:
        sb_puts(b, "!");
        gen_b(g, e->bin.a, b);
        return;
    default:
        if (is_bool(e))
            break;
        sb_putc(b, '(');
        gen_f(g, e, b);
        sb_puts(b, " != 0.0f)");
        return;
    }
    ICE_AT(g->out->loc, "bad condition (kind %d) in the stage of '%s'", (int)e->kind,
           g->out->name);
}

/* ---- walking expressions for facts ---------------------------------------- */

/* t's element count, INT64_MAX where it would overflow. */
static int64_t numel_sat(const IrTensor *t)
{
    int64_t n = 1;
    for (int d = 0; d < t->rank; d++)
        if (!i64_mul(n, t->shape[d], &n))
            return INT64_MAX;
    return n;
}

static int64_t expr_mag(const KGen *g, const IExpr *e)
{
    int64_t m = 0, x;
    switch (e->kind) {
    case IE_CONST:
        return 0;
    case IE_INDEX:
        return ix_mag(g, e->ix);
    case IE_ICMP:
        return ix_mag(g, e->icmp.ix);
    case IE_ACCESS:
        /* a read inside its tensor has an offset below its element count
         * (one that can leave it is not computed there: read_conds) */
        m = e->access.tensor ? numel_sat(e->access.tensor) : 0;
        for (int i = 0; i < e->access.nidx; i++)
            if ((x = ix_mag(g, e->access.idx[i])) > m)
                m = x;
        return m;
    case IE_CALL:
        for (int i = 0; i < e->call.nargs; i++)
            if ((x = expr_mag(g, e->call.args[i])) > m)
                m = x;
        return m;
    case IE_NEG: case IE_NOT:
        return expr_mag(g, e->bin.a);
    default:
        m = expr_mag(g, e->bin.a);
        x = expr_mag(g, e->bin.b);
        return m > x ? m : x;
    }
}

/* ---- the kernel ------------------------------------------------------------- */

/* A C name for v, unique among the variables of this kernel's stage. */
static const char *var_cname(KGen *g, const IrVar *v)
{
    Arena *a = g->em->arena;
    const Stage *st = g->k->st;
    const char *base = emit_sanitize(a, v->name && v->name[0] ? v->name : "i");
    const char *n = arena_printf(a, "v_%s", base);
    for (int i = 0; i < st->nloops + st->nsums; i++) {
        const IrVar *u = i < st->nloops ? &st->loops[i] : &st->sums[i - st->nloops];
        const char *un = u->id >= 0 && u->id < g->nvars ? g->vname[u->id] : NULL;
        if (un && strcmp(un, n) == 0)
            return arena_printf(a, "v_%s_%d", base, v->id);
    }
    return n;
}

static void line(Sb *b, int depth, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void line(Sb *b, int depth, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = xmalloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    sb_printf(b, "%*s%s\n", 4 * depth, "", s);
    free(s);
}

/* ---- a reduction split across lanes ------------------------------------------
 * For the CUDA dialect's warp and block reductions: the terms of one
 * output element flattened into one counter (the last sum variable the
 * fastest, as the loop nest runs them), lane ein_lane of ein_nlanes taking
 * every ein_nlanes-th term into its own partial acc (and any, for max and
 * min); where part_v4 allows, every ein_nlanes-th group of four
 * consecutive terms.  The dialect combines the partials in a fixed
 * order. */

/* The lines of one term of the part: the guards inside the sums, then
 * the term added into acc. */
static void part_term(KGen *g, const Stage *st, const int *level, Sb *in)
{
    for (int i = 0; i < st->nguards; i++) {
        if (level[i] < 0)
            continue;
        Sb gc = {0};
        gen_b(g, st->guards[i], &gc);
        flush_pre(g, in, 0);
        line(in, 0, "if (!%s)", sb_str(&gc));
        line(in, 1, "continue;");
        sb_free(&gc);
    }
    Sb body = {0};
    g->rnd = st->red == RED_SUM && g->em->precision != PREC_FP32;
    gen_f(g, st->body, &body);
    g->rnd = false;
    flush_pre(g, in, 0);
    if (st->red == RED_SUM) {
        line(in, 0, "acc += %s;", sb_str(&body));
    } else if (st->red == RED_PROD) {
        line(in, 0, "acc = any ? acc * (%s) : (%s);", sb_str(&body), sb_str(&body));
        line(in, 0, "any = 1;");
    } else {
        line(in, 0, "float v = %s;", sb_str(&body));
        line(in, 0, "if (!any || v %c acc || isnan(v))", st->red == RED_MAX ? '>' : '<');
        line(in, 1, "acc = v;");
        line(in, 0, "any = 1;");
    }
    sb_free(&body);
}

/* How a part takes its terms: one a lane at a time, or four consecutive
 * ones (of the last sum variable) a lane, read one by one or, in the _v4
 * kernel, as float4s. */
typedef enum { PART_ONE, PART_FOUR, PART_FOUR_V4 } PartForm;

/* The part's text: acc (and any) declared, the outer condition, the
 * lanes' loop over the terms, each term's variables from the counter,
 * `in` (part_term's lines; with PART_FOUR_V4 after `vloads`). */
static char *part_text(KGen *g, const Kernel *k, const char *cond_pre, const char *cond,
                       const char *in, PartForm form, const char *vloads)
{
    const Stage *st = k->st;
    const char *tty = k->terms > KERNEL_INT_LIMIT ? "int64_t" : k->ity;
    bool cast = strcmp(tty, k->ity) != 0;
    /* max, min and product keep `any`: no term at all gives 0 */
    bool maxmin = st->red == RED_MAX || st->red == RED_MIN || st->red == RED_PROD;
    Sb b = {0};
    line(&b, 0, "float acc = 0.0f;");
    if (maxmin)
        line(&b, 0, "int any = 0;     /* no term at all gives 0 */");
    int depth = 0;
    if (cond_pre && *cond_pre)
        sb_puts(&b, cond_pre);
    if (cond && *cond)
        line(&b, depth++, "if (%s) {", cond);
    if (form == PART_ONE)
        line(&b, depth++, "for (%s ein_t = ein_lane; ein_t < %" PRId64 "; ein_t += ein_nlanes) {",
             tty, k->terms);
    else
        line(&b, depth++, "for (%s ein_t4 = ein_lane; ein_t4 < %" PRId64 "; "
             "ein_t4 += ein_nlanes) {", tty, k->terms / 4);
    int64_t below = 1;
    for (int j = st->nsums - 1; j >= 0; j--) {
        const IrVar *v = &st->sums[j];
        int64_t ext = v->hi - v->lo;
        bool last = j == st->nsums - 1 && form != PART_ONE;
        /* four terms a lane: the last sum variable is ein_c0 + ein_j */
        if (g->used[v->id] || (last && (form == PART_FOUR || *vloads))) {
            Sb x = {0};
            sb_puts(&x, form == PART_ONE ? "ein_t" : "ein_t4 * 4");
            if (below > 1)
                sb_printf(&x, " / %" PRId64, below);
            if (j > 0)
                sb_printf(&x, " %% %" PRId64, ext);
            if (v->lo)
                sb_printf(&x, " %c %" PRId64, v->lo < 0 ? '-' : '+',
                          v->lo < 0 ? -v->lo : v->lo);
            const char *name = last ? "ein_c0" : g->vname[v->id];
            if (cast)
                line(&b, depth, "const %s %s = (%s)(%s);", k->ity, name, k->ity, sb_str(&x));
            else
                line(&b, depth, "const %s %s = %s;", k->ity, name, sb_str(&x));
            sb_free(&x);
        }
        below *= ext;
    }
    if (form != PART_ONE) {
        const IrVar *v = &st->sums[st->nsums - 1];
        if (form == PART_FOUR_V4)
            sb_indent(&b, vloads, 4 * depth);
        sb_puts(&b, "#pragma unroll\n");
        line(&b, depth++, "for (int ein_j = 0; ein_j < 4; ein_j++) {");
        if (form == PART_FOUR || k->vinner)
            line(&b, depth, "const %s %s = ein_c0 + ein_j;", k->ity, g->vname[v->id]);
    }
    sb_indent(&b, in, 4 * depth);
    while (depth > 0)
        line(&b, --depth, "}");
    char *text = arena_strdup(g->em->arena, sb_str(&b));
    sb_free(&b);
    return text;
}

/* Does the part of k (of a row group's member: one of one value per row)
 * take four terms a lane with float4 loads in a _v4 kernel (the group's)?
 * Where the last sum variable runs over a multiple of 4 from a multiple
 * of 4, no guard is inside the sums (the loads come before the four
 * terms' guards), there are at least V4_MIN_ELEMENTS terms in all and
 * some read steps along that variable from a multiple of 4 (v4_access):
 * then `vin` holds the term with those reads as ein_vN[ein_j], the loads
 * are in g->v4loads, and what they read in k->vtensors. */
static bool part_v4(KGen *g, Kernel *k, const int *level, Sb *vin)
{
    const Stage *st = k->st;
    if (g->em->target != TARGET_CUDA || st->nsums == 0 || k->terms > KERNEL_INT_LIMIT ||
        (double)k->terms * (double)k->total < V4_MIN_ELEMENTS)
        return false;
    /* of a row group, only a member of one value per row splits its terms
     * across lanes */
    for (int d = g->em->rows ? g->em->rows->nrow : k->out->rank; d < k->out->rank; d++)
        if (k->out->shape[d] != 1)
            return false;
    const IrVar *v = &st->sums[st->nsums - 1];
    if ((v->hi - v->lo) % 4 != 0 || v->lo % 4 != 0)
        return false;
    for (int i = 0; i < st->nguards; i++)
        if (level[i] >= 0)
            return false;
    bool used = g->used[v->id];
    g->used[v->id] = false;
    g->v4var = v->id;
    part_term(g, st, level, vin);
    g->v4var = -1;
    k->vinner = g->used[v->id];
    g->used[v->id] = used || k->vinner;
    if (g->nv4 == 0)
        return false;
    note_v4_tensors(g, k);
    return true;
}

static void build_part(KGen *g, Kernel *k, const char *cond_pre, const char *cond,
                       const int *level)
{
    const Stage *st = k->st;
    double terms = 1;
    for (int j = 0; j < st->nsums; j++)
        terms *= (double)(st->sums[j].hi - st->sums[j].lo);
    if (terms < 2 || terms > 4e18)
        return;
    k->terms = (int64_t)terms;
    /* guards and body first: they decide which variables are bound */
    Sb in = {0}, vin = {0};
    part_term(g, st, level, &in);
    if (part_v4(g, k, level, &vin)) {
        /* both kernels of the group take the same terms in the same
         * order: the same bits, whichever the buffers allow */
        k->part = part_text(g, k, cond_pre, cond, sb_str(&in), PART_FOUR, NULL);
        k->vpart = part_text(g, k, cond_pre, cond, sb_str(&vin), PART_FOUR_V4,
                             sb_str(&g->v4loads));
    } else {
        k->part = part_text(g, k, cond_pre, cond, sb_str(&in), PART_ONE, NULL);
    }
    g->nv4 = 0;
    sb_free(&g->v4loads);
    sb_free(&in);
    sb_free(&vin);
}

/* How many reads of the body (and guards) step through memory by more
 * than one element when variable `var` steps by one: 0 for a read that
 * does not move or moves to the next element.  A variable inside a
 * floor division or modulo by less than a warp counts as scattered. */
static int scattered(const IExpr *e, int var)
{
    if (var < 0)
        return 0;
    int n = 0;
    switch (e->kind) {
    case IE_CONST: case IE_INDEX: case IE_ICMP:
        return 0;
    case IE_ACCESS: {
        if (!e->access.tensor)
            return 0;
        const IrTensor *t = e->access.tensor;
        int64_t stride = 0, rs = 1;
        bool odd = false;
        for (int d = e->access.nidx - 1; d >= 0 && d < t->rank; d--) {
            const Ix *ix = e->access.idx[d];
            for (int i = 0; i < ix->n; i++) {
                const IxTerm *x = &ix->t[i];
                /* a step too large for 64 bits is scattered too */
                int64_t step;
                if (x->kind == IX_VAR) {
                    if (x->var == var && (!i64_mul(x->coef, rs, &step) ||
                                          !i64_add(stride, step, &stride)))
                        odd = true;
                } else if (ix_uses(x->arg, var)) {
                    int64_t c = ix_coef(x->arg, var);
                    if (x->d < 32 || c == 0)
                        odd = true;
                    else if (x->kind == IX_MOD &&
                             (!i64_mul(x->coef, c, &step) || !i64_mul(step, rs, &step) ||
                              !i64_add(stride, step, &stride)))
                        odd = true;
                }
            }
            if (t->shape[d] > 0 && rs < (INT64_C(1) << 40))
                rs *= t->shape[d];
        }
        return odd || stride > 1 || stride < -1;
    }
    case IE_CALL:
        for (int i = 0; i < e->call.nargs; i++)
            n += scattered(e->call.args[i], var);
        return n;
    case IE_NEG: case IE_NOT:
        return scattered(e->bin.a, var);
    default:
        return scattered(e->bin.a, var) + scattered(e->bin.b, var);
    }
}

/* Whether a plain map's value is arithmetic a vectorizer takes as it is:
 * reads of f32 tensors that stay inside their shapes (no select of a
 * zero) through affine indices, + - * /, and relu, max, min, fabsf; and
 * (setting *vm) the libm functions that have vector variants where the
 * generated file says EIN_VMATH (emit_write_helpers: glibc's libmvec,
 * with gcc), and the helpers built on them.  Not sqrtf: it sets errno
 * (-fmath-errno, the default), so no compiler vectorizes it, and clang
 * warns that it cannot do what `omp simd` asks.  The C dialect marks the
 * innermost loop of such a kernel `omp simd` (only under EIN_VMATH when
 * *vm). */
static bool vec_ix(const Ix *ix)
{
    for (int i = 0; i < ix->n; i++)
        if (ix->t[i].kind != IX_VAR)
            return false;
    return true;
}

/* The functions libmvec has a vector variant of (glibc 2.35: erff and
 * tanhf; expf, logf, sinf and cosf since 2.22), and the helpers that
 * call only those. */
static bool vmath_fn(Func fn)
{
    switch (fn) {
    case FN_EXP: case FN_LOG: case FN_TANH: case FN_ERF: case FN_SIN: case FN_COS:
    case FN_EXPM1: case FN_LOG1P: case FN_GELU: case FN_SIGMOID:
        return true;
    default:
        return false;
    }
}

static bool vec_expr(const KGen *g, const IExpr *e, bool *vm);

/* A condition a vectorizer takes: comparisons of such values, of affine
 * indices with 0, and their and, or, not. */
static bool vec_bool(const KGen *g, const IExpr *e, bool *vm)
{
    switch (e->kind) {
    case IE_CONST:
        return true;
    case IE_ICMP:
        return vec_ix(e->icmp.ix);
    case IE_CMP:
        return vec_expr(g, e->bin.a, vm) && vec_expr(g, e->bin.b, vm);
    case IE_AND: case IE_OR:
        return vec_bool(g, e->bin.a, vm) && vec_bool(g, e->bin.b, vm);
    case IE_NOT:
        return vec_bool(g, e->bin.a, vm);
    default:
        return false;
    }
}

static bool vec_expr(const KGen *g, const IExpr *e, bool *vm)
{
    for (int i = 0; i < g->nhoist; i++)
        if (g->hoist[i] == e)
            return true;
    switch (e->kind) {
    case IE_CONST:
        return true;
    case IE_ACCESS: {
        const IrTensor *t = e->access.tensor;
        if (!t || t->elem != ELEM_F32 || e->access.nidx != t->rank)
            return false;
        for (int d = 0; d < t->rank; d++) {
            int64_t mn, mx;
            if (!vec_ix(e->access.idx[d]))
                return false;
            bounds(g, e->access.idx[d], &mn, &mx);
            if (mn < 0 || mx >= t->shape[d])
                return false;
        }
        return true;
    }
    case IE_ADD: case IE_SUB: case IE_MUL: case IE_DIV:
        return vec_expr(g, e->bin.a, vm) && vec_expr(g, e->bin.b, vm);
    case IE_NEG:
        return vec_expr(g, e->bin.a, vm);
    case IE_CALL:
        /* max and min (ein_max, ein_min: a compare, an unordered compare
         * and a select each, NaN from either operand as PyTorch gives
         * it) if-convert under omp simd: ReLU6 vectorizes */
        if ((e->call.fn == FN_MAX || e->call.fn == FN_MIN) && e->call.nargs == 2)
            return vec_expr(g, e->call.args[0], vm) && vec_expr(g, e->call.args[1], vm);
        /* a select of two values both computed (KGen.vec) */
        if (e->call.fn == FN_SELECT && e->call.nargs == 3)
            return vec_bool(g, e->call.args[0], vm) && vec_expr(g, e->call.args[1], vm) &&
                   vec_expr(g, e->call.args[2], vm);
        if (e->call.nargs != 1)
            return false;
        if (vmath_fn(e->call.fn) && g->em->target == TARGET_C) {
            *vm = true;
            return vec_expr(g, e->call.args[0], vm);
        }
        if (e->call.fn != FN_RELU && e->call.fn != FN_ABS)
            return false;
        return vec_expr(g, e->call.args[0], vm);
    default:
        return false;
    }
}

/* The innermost variable of a list that takes more than one value. */
static int innermost(const IrVar *v, int n)
{
    for (int i = n - 1; i >= 0; i--)
        if (v[i].hi - v[i].lo > 1)
            return v[i].id;
    return -1;
}

/* ---- building a kernel, step by step ----------------------------------------- */

static int int_cmp(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* A C name for every variable the stage binds. */
static void bind_names(KGen *g, const Stage *st, const IrTensor *t)
{
    if (st->nloops != t->rank)
        ICE_AT(t->loc, "the stage of '%s' has %d loop variables for rank %d", t->name,
               st->nloops, t->rank);
    for (int i = 0; i < st->nloops + st->nsums; i++) {
        const IrVar *v = i < st->nloops ? &st->loops[i] : &st->sums[i - st->nloops];
        if (v->id < 0 || v->id >= g->nvars || g->vname[v->id])
            ICE_AT(t->loc, "variable '%s' (id %d) is bound twice or unknown in the stage "
                   "of '%s'", v->name, v->id, t->name);
        g->vname[v->id] = var_cname(g, v);
    }
}

/* Largest magnitude any loop or sum bound, and (exprs) any index or
 * offset of the kernel can take (the epilogue `epi` included). */
static int64_t kernel_mag(const KGen *g, const Stage *st, bool exprs, const IExpr *epi)
{
    int64_t mag = 0, m;
    for (int i = 0; i < st->nloops; i++)
        if (g->out->shape[i] > mag)
            mag = g->out->shape[i];
    for (int i = 0; i < st->nsums; i++) {
        const IrVar *v = &st->sums[i];
        if ((m = v->lo < 0 ? -v->lo : v->lo) > mag)
            mag = m;
        if ((m = v->hi < 0 ? -v->hi : v->hi) > mag)
            mag = m;
    }
    if (!exprs)
        return mag;
    for (int i = 0; i < st->nguards; i++)
        if ((m = expr_mag(g, st->guards[i])) > mag)
            mag = m;
    if ((m = expr_mag(g, st->body)) > mag)
        mag = m;
    if (epi && (m = expr_mag(g, epi)) > mag)
        mag = m;
    return mag;
}

/* The loop variables, the ranges the body sees, the element count, the
 * work (OpenMP and launch sizing) and the index type.  Returns whether the
 * ranges are empty (every element 0), or -1 for a tensor too big. */
static int size_kernel(KGen *g, Kernel *k, const IExpr *epi)
{
    const Stage *st = k->st;
    const IrTensor *t = k->out;
    /* The loop variables run over the full shape in the dialects; the body
     * works only inside the loop ranges, which is what ix_bounds sees. */
    k->total = 1;
    bool empty = false;
    double inside = 1, terms = 1;
    k->loopvar = arena_alloc(g->em->arena, sizeof *k->loopvar * (size_t)(t->rank + 1));
    for (int i = 0; i < st->nloops; i++) {
        const IrVar *v = &st->loops[i];
        k->loopvar[i] = g->vname[v->id];
        g->lo[v->id] = v->lo;
        g->hi[v->id] = v->hi;
        if (v->lo < 0 || v->hi > t->shape[i])
            ICE_AT(t->loc, "loop %d of '%s' ranges over [%" PRId64 ", %" PRId64 ") outside "
                   "its shape", i, t->name, v->lo, v->hi);
        if (!i64_mul(k->total, t->shape[i], &k->total)) {
            diag_error(t->loc, "tensor '%s' has too many elements", t->name);
            return -1;
        }
        empty |= v->lo >= v->hi;
        inside *= (double)(v->hi - v->lo);
    }
    for (int i = 0; i < st->nsums; i++) {
        const IrVar *v = &st->sums[i];
        g->lo[v->id] = v->lo;
        g->hi[v->id] = v->hi;
        empty |= v->lo >= v->hi;
        terms *= (double)(v->hi - v->lo);
    }
    k->work = empty ? 0 : inside * terms;

    /* int unless an index, an offset or the grid-stride counter could
     * leave it (the counter overshoots the total by up to one grid). */
    const int64_t limit = KERNEL_INT_LIMIT;
    g->wide = k->total > limit || kernel_mag(g, st, !empty, epi) > limit;
    k->ity = g->wide ? "int64_t" : "int";
    return empty;
}

/* The subexpressions of e worth computing once per row of a map: the
 * largest that do not use variable `var` and call a function or divide
 * (a layer norm's rsqrt of the row's variance), at most KERNEL_MAX_HOIST. */
static void find_hoists(KGen *g, const IExpr *e, int var)
{
    if (g->nhoist == KERNEL_MAX_HOIST || e->kind == IE_CONST || is_leaf(e))
        return;
    if ((e->kind == IE_CALL || e->kind == IE_DIV) && !ir_expr_uses(e, var)) {
        for (int i = 0; i < g->nhoist; i++)
            if (g->hoist[i] == e)
                return;
        g->hoist[g->nhoist++] = e;
        return;
    }
    switch (e->kind) {
    case IE_CALL:
        for (int i = 0; i < e->call.nargs; i++)
            find_hoists(g, e->call.args[i], var);
        return;
    case IE_NEG: case IE_NOT:
        find_hoists(g, e->bin.a, var);
        return;
    case IE_ADD: case IE_SUB: case IE_MUL: case IE_DIV: case IE_CMP: case IE_AND: case IE_OR:
        find_hoists(g, e->bin.a, var);
        find_hoists(g, e->bin.b, var);
        return;
    default:
        return;
    }
}

/* C: a map's per-row values (find_hoists) as the lines k->hoist, which
 * the dialect writes before the innermost loop (or in the body, when
 * that loop is one of those the threads share). */
static void hoist_map(KGen *g, Kernel *k)
{
    const Stage *st = k->st;
    int r = st->nloops;
    if (g->em->target != TARGET_C || r == 0 || k->out->shape[r - 1] < 2)
        return;
    find_hoists(g, st->body, st->loops[r - 1].id);
    if (!g->nhoist)
        return;
    Sb h = {0};
    int n = g->nhoist;
    for (int i = 0; i < n; i++) {
        Sb t = {0};
        g->nhoist = i;          /* each may use the ones before it */
        gen_f_node(g, g->hoist[i], &t);
        flush_pre(g, &h, 0);
        line(&h, 0, "const float ein_h%d = %s;", i, sb_str(&t));
        sb_free(&t);
    }
    g->nhoist = n;
    k->hoist = arena_strdup(g->em->arena, sb_str(&h));
    sb_free(&h);
}

/* Is e an integer computed exactly in int64_t by moving data: a read of
 * an integer tensor, an integral constant of at most 2^53, or a select
 * of such (a copy, a reshape, a gather, a concat of integers)? */
static bool int_exact(const IExpr *e)
{
    switch (e->kind) {
    case IE_ACCESS:
        return e->access.tensor && elem_is_int(e->access.tensor->elem);
    case IE_CONST:
        return e->value == floor(e->value) && fabs(e->value) <= 9007199254740992.0;
    case IE_CALL:
        return e->call.fn == FN_SELECT && e->call.nargs == 3 && int_exact(e->call.args[1]) &&
               int_exact(e->call.args[2]);
    default:
        return false;
    }
}

/* A plain map into an integer tensor that only moves integers: the
 * element as an int64_t, every value of every integer type exactly (in
 * float, integers past 2^24 would round). */
static bool int_map(KGen *g, Kernel *k, const IExpr *epi, Sb *b)
{
    if (!elem_is_int(k->out->elem) || epi || !int_exact(k->st->body))
        return false;
    Sb body = {0};
    g->ints = true;
    gen_f(g, k->st->body, &body);
    g->ints = false;
    flush_pre(g, b, 0);
    line(b, 0, "const int64_t acc = %s;", sb_str(&body));
    sb_free(&body);
    k->int_acc = true;
    return true;
}

/* A plain map: the element is the body. */
static void map_body(KGen *g, Kernel *k, const IExpr *epi, Sb *b)
{
    if (int_map(g, k, epi, b))
        return;
    hoist_map(g, k);
    bool vm = false;
    k->simd = k->out->elem == ELEM_F32 && vec_expr(g, k->st->body, &vm) &&
              (!epi || vec_expr(g, epi, &vm));
    k->simd_vmath = k->simd && vm;
    if (k->simd_vmath)
        g->em->helpers |= HELP_VMATH;
    if (k->simd && g->em->target == TARGET_C)
        g->em->helpers |= HELP_TARGETS;
    Sb body = {0};
    g->vec = k->simd && g->em->target == TARGET_C;
    gen_f(g, k->st->body, &body);
    g->vec = false;
    g->nhoist = 0;
    flush_pre(g, b, 0);
    line(b, 0, "const float acc = %s;", sb_str(&body));
    sb_free(&body);
}

/* The condition of an element that has terms at all: inside the loop
 * ranges (output padding) and the guards that do not depend on a sum
 * variable; level[i] receives the innermost sum variable guard i depends
 * on (-1: none, it is in the condition).  Returns how many conditions
 * there are. */
static int outer_condition(KGen *g, Kernel *k, Sb *cond, int *level)
{
    const Stage *st = k->st;
    const IrTensor *t = k->out;
    int nc = 0;
    for (int i = 0; i < st->nloops; i++) {
        const IrVar *v = &st->loops[i];
        if (v->lo > 0 || v->hi < t->shape[i])
            g->used[v->id] = true;
        if (v->lo > 0)
            sb_printf(cond, "%s%s >= %" PRId64, nc++ ? " && " : "", k->loopvar[i], v->lo);
        if (v->hi < t->shape[i])
            sb_printf(cond, "%s%s < %" PRId64, nc++ ? " && " : "", k->loopvar[i], v->hi);
    }
    for (int i = 0; i < st->nguards; i++) {
        level[i] = -1;
        for (int j = 0; j < st->nsums; j++)
            if (ir_expr_uses(st->guards[i], st->sums[j].id))
                level[i] = j;
        if (level[i] < 0) {
            sb_puts(cond, nc++ ? " && " : "");
            gen_b(g, st->guards[i], cond);
        }
    }
    return nc;
}

/* Whether the innermost sum loop of a reduction is vectorizable in C
 * (`omp simd` with a reduction clause): a sum, max or min at fp32 whose
 * body vec_expr takes and whose guards on that variable vec_bool takes;
 * every term is then computed and the guards select which count.  *vm:
 * it calls vector math (EIN_VMATH). */
static bool vec_sum(KGen *g, Kernel *k, const int *level, bool *vm)
{
    const Stage *st = k->st;
    int last = st->nsums - 1;
    if (g->em->target != TARGET_C || last < 0 || g->em->precision != PREC_FP32 ||
        (st->red != RED_SUM && st->red != RED_MAX && st->red != RED_MIN) ||
        st->sums[last].hi - st->sums[last].lo < 2)
        return false;
    bool v = false;
    if (!vec_expr(g, st->body, &v))
        return false;
    for (int i = 0; i < st->nguards; i++)
        if (level[i] == last && !vec_bool(g, st->guards[i], &v))
            return false;
    *vm = v;
    if (v)
        g->em->helpers |= HELP_VMATH;
    g->em->helpers |= HELP_TARGETS;
    k->simd_sum = true;
    return true;
}

/* The innermost sum loop as vec_sum allows, at `depth`: each lane's
 * partial in a reduction clause.  A sum adds the terms whose guards hold
 * (0 for the others); max and min keep the extreme of those in `ein_m`,
 * whether there was one (ein_any) and whether one was NaN (ein_nan), and
 * give acc as the scalar loop would: NaN propagates, no term leaves acc
 * as it was. */
static void vec_sum_loop(KGen *g, Kernel *k, const int *level, Sb *b, int depth)
{
    const Stage *st = k->st;
    int last = st->nsums - 1;
    const IrVar *v = &st->sums[last];
    const char *n = g->vname[v->id];
    bool sum = st->red == RED_SUM;
    char op = st->red == RED_MAX ? '>' : '<';
    /* the condition: the guards on this variable */
    Sb gc = {0};
    int ng = 0;
    for (int i = 0; i < st->nguards; i++) {
        if (level[i] != last)
            continue;
        sb_puts(&gc, ng++ ? " && " : "");
        gen_b(g, st->guards[i], &gc);
    }
    const char *pre_guard = arena_strdup(g->em->arena, sb_str(&g->pre));
    sb_free(&g->pre);
    g->pre = (Sb){0};
    Sb body = {0};
    g->vec = true;
    gen_f(g, st->body, &body);
    g->vec = false;
    /* clang (14) does not vectorize a float max or min reduction it cannot
     * assume free of NaN, and warns that it cannot do what omp simd asks */
    const char *guard = k->simd_vmath ? (sum ? "#if defined(_OPENMP) && EIN_VMATH"
                                             : "#if defined(_OPENMP) && EIN_VMATH && "
                                               "!defined(__clang__)")
                                      : (sum ? "#ifdef _OPENMP"
                                             : "#if defined(_OPENMP) && !defined(__clang__)");
    if (!sum) {
        line(b, depth++, "{");
        line(b, depth, "float ein_m = %sINFINITY;", op == '>' ? "-" : "");
        line(b, depth, "int ein_any = 0, ein_nan = 0;");
    }
    sb_printf(b, "%s\n", guard);
    if (sum)
        sb_puts(b, "#pragma omp simd reduction(+:acc)\n");
    else
        sb_printf(b, "#pragma omp simd reduction(%s:ein_m) reduction(|:ein_any, ein_nan)\n",
                  op == '>' ? "max" : "min");
    sb_puts(b, "#endif\n");
    line(b, depth++, "for (%s %s = %" PRId64 "; %s < %" PRId64 "; ++%s) {", k->ity, n,
         v->lo, n, v->hi, n);
    if (*pre_guard)
        sb_indent(b, pre_guard, 4 * depth);
    flush_pre(g, b, depth);
    line(b, depth, "const float v = %s;", sb_str(&body));
    if (ng)
        line(b, depth, "const int ok = %s;", sb_str(&gc));
    if (sum) {
        line(b, depth, ng ? "acc += ok ? v : 0.0f;" : "acc += v;");
    } else {
        line(b, depth, "ein_m = %sv %c ein_m ? v : ein_m;", ng ? "ok && " : "", op);
        line(b, depth, "ein_any |= %s;", ng ? "ok" : "1");
        line(b, depth, "ein_nan |= %sv != v;", ng ? "ok && " : "");
    }
    line(b, --depth, "}");
    if (!sum) {
        line(b, depth, "if (ein_any) {");
        line(b, depth + 1, "const float v = ein_nan ? NAN : ein_m;");
        line(b, depth + 1, "if (!any || v %c acc || isnan(v))", op);
        line(b, depth + 2, "acc = v;");
        line(b, depth + 1, "any = 1;");
        line(b, depth, "}");
        line(b, --depth, "}");
    }
    sb_free(&gc);
    sb_free(&body);
}

/* One term's accumulation into acc (a sum) or ein_m and ein_nan (max,
 * min: no branch, so that a short window runs at the rate of its loads;
 * NaN propagates). */
static void accumulate(const Stage *st, Sb *b, int depth, const char *v)
{
    if (st->red == RED_SUM) {
        line(b, depth, "acc += %s;", v);
        return;
    }
    line(b, depth, "const float v = %s;", v);
    line(b, depth, "ein_m = v %c ein_m ? v : ein_m;", st->red == RED_MAX ? '>' : '<');
    line(b, depth, "ein_nan |= v != v;");
}

/* A short reduction (cost_short_terms: no guards, at most
 * COST_SHORT_TERMS terms), at
 * `depth`: each term in a block of its own with the sum variables bound
 * to constants, in the loops' order (a sum adds as the loops would);
 * max and min without a branch, and with a term always there, no `any`. */
static void short_body(KGen *g, Kernel *k, Sb *b, int depth, int64_t nterms)
{
    const Stage *st = k->st;
    bool minmax = st->red != RED_SUM;
    Sb body = {0};
    g->rnd = st->red == RED_SUM && g->em->precision != PREC_FP32;
    gen_f(g, st->body, &body);
    g->rnd = false;
    const char *pre = arena_strdup(g->em->arena, sb_str(&g->pre));
    sb_free(&g->pre);
    g->pre = (Sb){0};
    if (minmax) {
        line(b, depth, "float ein_m = %sINFINITY;", st->red == RED_MAX ? "-" : "");
        line(b, depth, "int ein_nan = 0;");
    }
    for (int64_t t = 0; t < nterms; t++) {
        line(b, depth, "{");
        /* term t's value of each sum variable, the last the fastest */
        int64_t rest = t, div = nterms;
        Sb bind = {0};
        for (int j = 0; j < st->nsums; j++) {
            const IrVar *v = &st->sums[j];
            div /= v->hi - v->lo;
            int64_t at = v->lo + rest / div;
            rest %= div;
            if (g->used[v->id])
                sb_printf(&bind, "%sconst %s %s = %" PRId64 ";", *sb_str(&bind) ? " " : "",
                          k->ity, g->vname[v->id], at);
        }
        if (*sb_str(&bind))
            line(b, depth + 1, "%s", sb_str(&bind));
        sb_free(&bind);
        if (*pre)
            sb_indent(b, pre, 4 * (depth + 1));
        accumulate(st, b, depth + 1, sb_str(&body));
        line(b, depth, "}");
    }
    if (minmax)
        line(b, depth, "acc = ein_nan ? NAN : ein_m;");
    sb_free(&body);
}

/* A reduction, or a map with output padding or guards: the outer
 * condition, a loop per sum variable with the guards that depend on it,
 * and the accumulation; then the lanes' part (build_part).  A short one
 * is written out term by term (short_body). */
static void reduce_body(KGen *g, Kernel *k, Sb *b)
{
    const Stage *st = k->st;
    line(b, 0, "float acc = 0.0f;");
    Sb cond = {0};
    int *level = arena_alloc(g->em->arena, sizeof *level * (size_t)(st->nguards + 1));
    int nc = outer_condition(g, k, &cond, level);
    int last = st->nsums - 1;
    bool vec = vec_sum(g, k, level, &k->simd_vmath);
    int64_t nterms = vec ? 0 : cost_short_terms(st);
    /* max, min and product keep `any`: no term at all gives 0 */
    if (!nterms && (st->red == RED_MAX || st->red == RED_MIN || st->red == RED_PROD))
        line(b, 0, "int any = 0;     /* no term at all gives 0 */");
    int depth = 0;
    /* the temporaries of the guards outside the sums, before them (in
     * the lanes' loop too) */
    const char *cond_pre = arena_strdup(g->em->arena, sb_str(&g->pre));
    flush_pre(g, b, 0);
    if (nc)
        line(b, depth++, "if (%s) {", sb_str(&cond));
    const char *part_cond = arena_strdup(g->em->arena, sb_str(&cond));
    sb_free(&cond);
    if (nterms) {
        short_body(g, k, b, depth, nterms);
        while (depth > 0)
            line(b, --depth, "}");
        build_part(g, k, cond_pre, part_cond, level);
        return;
    }
    for (int j = 0; j < st->nsums; j++) {
        const IrVar *v = &st->sums[j];
        const char *n = g->vname[v->id];
        if (j == last && vec) {
            vec_sum_loop(g, k, level, b, depth);
            break;
        }
        line(b, depth++, "for (%s %s = %" PRId64 "; %s < %" PRId64 "; ++%s) {",
             k->ity, n, v->lo, n, v->hi, n);
        for (int i = 0; i < st->nguards; i++) {
            if (level[i] != j)
                continue;
            Sb gc = {0};
            gen_b(g, st->guards[i], &gc);
            flush_pre(g, b, depth);
            line(b, depth, "if (!%s)", sb_str(&gc));
            line(b, depth + 1, "continue;");
            sb_free(&gc);
        }
    }
    if (!vec) {
        Sb body = {0};
        g->rnd = st->red == RED_SUM && g->em->precision != PREC_FP32;
        gen_f(g, st->body, &body);
        g->rnd = false;
        flush_pre(g, b, depth);
        switch (st->red) {
        case RED_NONE:
            line(b, depth, "acc = %s;", sb_str(&body));
            break;
        case RED_SUM:
            line(b, depth, "acc += %s;", sb_str(&body));
            break;
        case RED_PROD:
            line(b, depth, "float v = %s;", sb_str(&body));
            line(b, depth, "acc = any ? acc * v : v;");
            line(b, depth, "any = 1;");
            break;
        case RED_MAX:
        case RED_MIN:
            /* NaN propagates, as in PyTorch's amax/amin. */
            line(b, depth, "float v = %s;", sb_str(&body));
            line(b, depth, "if (!any || v %c acc || isnan(v))", st->red == RED_MAX ? '>' : '<');
            line(b, depth + 1, "acc = v;");
            line(b, depth, "any = 1;");
            break;
        }
        sb_free(&body);
    }
    while (depth > 0)
        line(b, --depth, "}");
    if (st->red != RED_NONE)
        build_part(g, k, cond_pre, part_cond, level);
}

/* What the dialects store: acc, or the epilogue of acc (the operator's
 * value) fused into the store. */
static const char *store_text(KGen *g, const PlanEpilogue *epi)
{
    if (!epi)
        return "acc";
    Sb b = {0};
    g->self = epi->self;
    g->self_text = "acc";
    /* one expression, written where the dialect stores: no temporaries
     * (fusion bounds an epilogue to FUSE_MAX_DEPTH levels, well inside
     * what compilers nest) */
    int nest = g->nest;
    g->nest = -(1 << 20);
    gen_f(g, epi->value, &b);
    g->nest = nest;
    g->self = NULL;
    g->self_text = NULL;
    const char *text = arena_strdup(g->em->arena, sb_str(&b));
    sb_free(&b);
    return text;
}

/* Does the plain map k get a _v4 kernel, or as a member of a row group,
 * a _v4 loop over its row (emit_int.h)?  A row member's four elements
 * must lie in one row: its innermost dim is past the row's. */
static bool v4_kernel(const KGen *g, const Kernel *k)
{
    int r = k->out->rank;
    return g->em->target == TARGET_CUDA && !k->int_acc && k->out->elem == ELEM_F32 &&
           r > (g->em->rows ? g->em->rows->nrow : 0) && k->out->shape[r - 1] % 4 == 0 &&
           k->total >= V4_MIN_ELEMENTS;
}

/* The _v4 body and store of the plain map k (emit_int.h); `self` as the
 * scalar body had it (an epilogue pass reads its output in place). */
static void build_v4(KGen *g, Kernel *k, const PlanEpilogue *epi, const IrTensor *self)
{
    const Stage *st = k->st;
    int vi = st->loops[st->nloops - 1].id;
    bool used = g->used[vi];
    g->used[vi] = false;
    g->v4var = vi;
    g->self = self;
    Sb b = {0}, body = {0};
    gen_f(g, st->body, &body);
    flush_pre(g, &b, 0);
    line(&b, 0, "const float acc = %s;", sb_str(&body));
    g->self = NULL;
    k->vstore = store_text(g, epi);
    k->vbody = arena_strdup(g->em->arena, sb_str(&b));
    k->vloads = arena_strdup(g->em->arena, sb_str(&g->v4loads));
    k->vinner = g->used[vi];
    note_v4_tensors(g, k);
    g->used[vi] = used;
    g->v4var = -1;
    g->nv4 = 0;
    sb_free(&g->v4loads);
    sb_free(&body);
    sb_free(&b);
}

/* How the reads walk memory along the output and along the sum (the CUDA
 * layouts, cuda.c). */
static void count_scatter(Kernel *k)
{
    const Stage *st = k->st;
    int vo = innermost(st->loops, st->nloops), vs = innermost(st->sums, st->nsums);
    k->scatter_out = scattered(st->body, vo);
    k->scatter_sum = scattered(st->body, vs);
    for (int i = 0; i < st->nguards; i++) {
        k->scatter_out += scattered(st->guards[i], vo);
        k->scatter_sum += scattered(st->guards[i], vs);
    }
}

/* The loop variables read, the distinct tensors read, the comment. */
static void finish_kernel(KGen *g, Kernel *k, const PlanOp *op, bool pass)
{
    Emit *em = g->em;
    const Stage *st = k->st;
    k->loopused = arena_alloc(em->arena, sizeof *k->loopused * (size_t)(k->out->rank + 1));
    for (int i = 0; i < st->nloops; i++)
        k->loopused[i] = g->used[st->loops[i].id];
    Sb c = {0};
    if (pass)
        sb_printf(&c, "the epilogue of %s, after it:\n",
                  cost_impl_call(op->impl, &op->op));
    emit_source_comment(em->arena, em->p->cx, k->out, st, pass ? NULL : op->epi.value, &c);
    k->comment = arena_strdup(em->arena, sb_str(&c));
    sb_free(&c);
    /* the tensors read, in id order; the shared marks cleared */
    qsort(g->read_ids, (size_t)g->nread_ids, sizeof *g->read_ids, int_cmp);
    k->reads = arena_alloc(em->arena, sizeof *k->reads * (size_t)(g->nread_ids + 1));
    for (int i = 0; i < g->nread_ids; i++) {
        k->reads[k->nreads++] = em->p->tensors[g->read_ids[i]];
        g->reads[g->read_ids[i]] = false;
    }
}

/* The per-variable and per-tensor tables of the emitter, made once per
 * file (a program of many kernels stays linear). */
static void kgen_init(KGen *g, Emit *em, Kernel *k)
{
    Arena *a = em->arena;
    if (!em->var_lo) {
        em->nvars = ir_var_count(em->p->cx);
        em->var_lo = arena_alloc(a, sizeof *em->var_lo * (size_t)(em->nvars + 1));
        em->var_hi = arena_alloc(a, sizeof *em->var_hi * (size_t)(em->nvars + 1));
        em->var_name = arena_alloc(a, sizeof *em->var_name * (size_t)(em->nvars + 1));
        em->var_used = arena_alloc(a, sizeof *em->var_used * (size_t)(em->nvars + 1));
    }
    if (!em->read_mark) {
        em->read_mark = arena_alloc(a, sizeof *em->read_mark * (size_t)(em->p->ntensors + 1));
        em->read_ids = arena_alloc(a, sizeof *em->read_ids * (size_t)(em->p->ntensors + 1));
    }
    *g = (KGen){.em = em, .k = k, .out = k->out, .nvars = em->nvars, .lo = em->var_lo,
                .hi = em->var_hi, .vname = em->var_name, .used = em->var_used,
                .reads = em->read_mark, .read_ids = em->read_ids, .v4var = -1};
}

int kernel_build(Emit *em, const PlanOp *op, bool pass, const char *name, Kernel *k)
{
    const IrTensor *t = op->out;
    const Stage *st = pass ? plan_epilogue_stage(em->p->cx, op) : op->stage;
    const PlanEpilogue *epi = !pass && op->epi.value ? &op->epi : NULL;
    memset(k, 0, sizeof *k);
    k->out = t;
    k->st = st;
    k->name = name;
    k->rows = em->rows;
    /* The dialects round the element to its type as they store it; the
     * helpers are written before the kernels, so say so now (an integer
     * element once the body says which conversion: below). */
    if (t->elem != ELEM_F32 && !elem_is_int(t->elem))
        em->helpers |= t->elem == ELEM_F16 ? HELP_ST_F16 : HELP_ST_BF16;
    KGen g;
    kgen_init(&g, em, k);
    if (pass)
        g.self = op->epi.self;  /* its reads: the output's element, in place */
    bind_names(&g, st, t);
    int empty = size_kernel(&g, k, epi ? epi->value : NULL);
    if (empty >= 0) {
        Sb b = {0};
        bool plain = st->red == RED_NONE && st->nguards == 0;
        for (int i = 0; i < st->nloops && plain; i++)
            plain = st->loops[i].lo == 0 && st->loops[i].hi == t->shape[i];
        if (empty) {
            line(&b, 0, "float acc = 0.0f;");
            line(&b, 0, "/* empty range: every element is 0 */");
        } else if (plain) {
            map_body(&g, k, epi ? epi->value : NULL, &b);
        } else {
            reduce_body(&g, k, &b);
        }
        k->body = arena_strdup(em->arena, sb_str(&b));
        sb_free(&b);
        if (elem_is_int(t->elem))
            em->helpers |= k->int_acc ? HELP_SAT(t->elem) : HELP_TO(t->elem);
        g.self = NULL;
        k->store = store_text(&g, epi);
        if (!empty && plain && v4_kernel(&g, k))
            build_v4(&g, k, epi, pass ? op->epi.self : NULL);
        if (!empty)
            count_scatter(k);
        finish_kernel(&g, k, op, pass);
    }
    /* leave the per-variable tables clean for the next kernel */
    for (int i = 0; i < st->nloops + st->nsums; i++) {
        const IrVar *v = i < st->nloops ? &st->loops[i] : &st->sums[i - st->nloops];
        if (v->id >= 0 && v->id < em->nvars) {
            em->var_name[v->id] = NULL;
            em->var_used[v->id] = false;
        }
    }
    return empty < 0 ? -1 : 0;
}

/* A row group's parameters: see emit_int.h. */
int kernel_row_params(Emit *em, const Kernel *ks, const IrTensor ***reads_out,
                      const IrTensor ***writes_out, int *nwrites)
{
    const PlanRowGroup *g = ks->rows;
    size_t cap = 1;
    for (int j = 0; j < g->nmembers; j++)
        cap += (size_t)ks[j].nreads + 1;
    const IrTensor **reads = arena_alloc(em->arena, cap * sizeof *reads);
    const IrTensor **writes = arena_alloc(em->arena, cap * sizeof *writes);
    *reads_out = reads;
    *writes_out = writes;
    int nr = 0;
    *nwrites = 0;
    for (int j = 0; j < g->nmembers; j++) {
        if (g->stored[j])
            writes[(*nwrites)++] = g->members[j];
        for (int i = 0; i < ks[j].nreads; i++) {
            const IrTensor *t = ks[j].reads[i];
            bool have = false;
            for (int m = 0; m < g->nmembers && !have; m++)
                have = g->members[m] == t;
            for (int m = 0; m < nr && !have; m++)
                have = reads[m] == t;
            if (have)
                continue;
            int at = nr++;
            while (at > 0 && reads[at - 1]->id > t->id) {
                reads[at] = reads[at - 1];
                at--;
            }
            reads[at] = t;
        }
    }
    return nr;
}

void emit_store_kernel(Emit *em, Sb *b, const Kernel *k)
{
    if (k->int_acc)
        sb_printf(b, "ein_sat_%s(%s)", elem_name(k->out->elem), k->store);
    else
        emit_store_value(em, b, k->out->elem, k->store);
}

/* Row-major offset of an element from the loop variables. */
void emit_store_offset(Sb *b, const Kernel *k)
{
    emit_store_offset_from(b, k, 0);
}

void emit_store_offset_from(Sb *b, const Kernel *k, int first)
{
    int r = k->out->rank;
    if (r <= first) {
        sb_putc(b, '0');
        return;
    }
    for (int i = first + 2; i < r; i++)
        sb_putc(b, '(');
    sb_puts(b, k->loopvar[first]);
    for (int i = first + 1; i < r; i++)
        sb_printf(b, " * %" PRId64 " + %s%s", k->out->shape[i], k->loopvar[i],
                  i + 1 < r ? ")" : "");
}
