/* stage.c - stage nodes: L<loops> red<sums> { body | guards }.
 *
 * The constructor canonicalises what does not change the meaning: a stage
 * without sum variables is a map (a reduction over one term is that term),
 * sum variables are kept in id order (the order of a reduction's indices
 * is irrelevant; the order of loop variables is the output layout and is
 * kept), guards are split at &&, constant-true guards dropped, a constant-
 * false guard replaces all others, and the rest sorted and deduplicated. */
#include "config.h"
#include "ir_int.h"

#include <stdlib.h>
#include <string.h>

#define CMP3(a, b) (((a) > (b)) - ((a) < (b)))

typedef struct GuardBuf {
    const IExpr **g;                /* small, or on the heap when more */
    int n, cap;
    bool never;                     /* a guard is constant false */
    const IExpr *small[8];
} GuardBuf;

static void add_guard(GuardBuf *b, const IExpr *g)
{
    if (g->kind == IE_AND) {
        add_guard(b, g->bin.a);
        add_guard(b, g->bin.b);
        return;
    }
    if (g->kind == IE_CONST) {
        if (g->value == 0)
            b->never = true;
        return;
    }
    if (b->n == b->cap) {
        const IExpr **g2 = xmalloc((size_t)2 * b->cap * sizeof *g2);
        memcpy(g2, b->g, (size_t)b->n * sizeof *g2);
        if (b->g != b->small)
            free(b->g);
        b->g = g2;
        b->cap *= 2;
    }
    b->g[b->n++] = g;
}

static int guard_qcmp(const void *a, const void *b)
{
    return ir_expr_cmp(*(const IExpr *const *)a, *(const IExpr *const *)b);
}

static uint64_t hash_vars(uint64_t h, const IrVar *v, int n)
{
    h = ir_hcomb(h, (uint64_t)n);
    for (int i = 0; i < n; i++) {
        h = ir_hcomb(h, (uint64_t)v[i].id);
        h = ir_hcomb(h, (uint64_t)v[i].lo);
        h = ir_hcomb(h, (uint64_t)v[i].hi);
    }
    return h;
}

/* s's guards and body (its reduction and variables set), and its hash. */
static const Stage *finish(IrCtx *cx, Stage *s, const IExpr **guards, int nguards,
                           const IExpr *body)
{
    GuardBuf gb = {.cap = (int)(sizeof gb.small / sizeof *gb.small)};
    gb.g = gb.small;
    for (int i = 0; i < nguards; i++)
        add_guard(&gb, guards[i]);
    if (gb.never) {
        s->nguards = 1;
        const IExpr **g = arena_alloc(cx->arena, sizeof *g);
        g[0] = ir_const(cx, 0);
        s->guards = g;
    } else if (gb.n) {
        qsort(gb.g, (size_t)gb.n, sizeof *gb.g, guard_qcmp);
        int k = 0;
        for (int i = 0; i < gb.n; i++)
            if (k == 0 || !ir_expr_equal(gb.g[k - 1], gb.g[i]))
                gb.g[k++] = gb.g[i];
        s->nguards = k;
        s->guards = arena_dup(cx->arena, gb.g, (size_t)k * sizeof *gb.g);
    }
    if (gb.g != gb.small)
        free(gb.g);
    s->body = body;

    uint64_t h = ir_hcomb(s->vars_hash, (uint64_t)s->nguards);
    for (int i = 0; i < s->nguards; i++)
        h = ir_hcomb(h, s->guards[i]->hash);
    s->hash = ir_hcomb(h, body->hash);
    return s;
}

const Stage *ir_stage(IrCtx *cx, Reduce red, const IrVar *loops, int nloops,
                      const IrVar *sums, int nsums, const IExpr **guards,
                      int nguards, const IExpr *body)
{
    if (nsums == 0)
        red = RED_NONE;
    else if (red == RED_NONE)
        ICE("ir_stage: %d sum variables without a reduction", nsums);

    /* A variable bound twice is a bug in a rule, not a user error. */
    for (int i = 0; i < nloops + nsums; i++)
        for (int j = 0; j < i; j++) {
            int a = i < nloops ? loops[i].id : sums[i - nloops].id;
            int b = j < nloops ? loops[j].id : sums[j - nloops].id;
            if (a == b)
                ICE("ir_stage: variable %d (%s) bound twice", a, ir_var_name(cx, a));
        }

    Stage *s = arena_alloc(cx->arena, sizeof *s);
    s->red = red;
    s->nloops = nloops;
    s->loops = nloops ? arena_dup(cx->arena, loops, (size_t)nloops * sizeof *loops) : NULL;
    s->nsums = nsums;
    if (nsums) {
        IrVar *sv = arena_dup(cx->arena, sums, (size_t)nsums * sizeof *sums);
        for (int i = 1; i < nsums; i++) {
            IrVar v = sv[i];
            int j = i;
            for (; j > 0 && sv[j - 1].id > v.id; j--)
                sv[j] = sv[j - 1];
            sv[j] = v;
        }
        s->sums = sv;
    }
    uint64_t h = ir_hcomb(H_STAGE, (uint64_t)red);
    h = hash_vars(h, s->loops, nloops);
    s->vars_hash = hash_vars(h, s->sums, nsums);
    return finish(cx, s, guards, nguards, body);
}

const Stage *ir_stage_rebody(IrCtx *cx, const Stage *s, const IExpr **guards, int nguards,
                             const IExpr *body)
{
    Stage *r = arena_alloc(cx->arena, sizeof *r);
    r->red = s->red;
    r->loops = s->loops;
    r->nloops = s->nloops;
    r->sums = s->sums;
    r->nsums = s->nsums;
    r->vars_hash = s->vars_hash;
    return finish(cx, r, guards, nguards, body);
}

static int vars_cmp(const IrVar *a, const IrVar *b, int n)
{
    for (int i = 0; i < n; i++) {
        if (a[i].id != b[i].id)
            return CMP3(a[i].id, b[i].id);
        if (a[i].lo != b[i].lo)
            return CMP3(a[i].lo, b[i].lo);
        if (a[i].hi != b[i].hi)
            return CMP3(a[i].hi, b[i].hi);
    }
    return 0;
}

int ir_stage_cmp(const Stage *a, const Stage *b)
{
    if (a == b)
        return 0;
    if (a->hash != b->hash)
        return CMP3(a->hash, b->hash);
    if (a->red != b->red)
        return CMP3(a->red, b->red);
    if (a->nloops != b->nloops)
        return CMP3(a->nloops, b->nloops);
    if (a->nsums != b->nsums)
        return CMP3(a->nsums, b->nsums);
    if (a->nguards != b->nguards)
        return CMP3(a->nguards, b->nguards);
    int c;
    if ((c = vars_cmp(a->loops, b->loops, a->nloops)))
        return c;
    if ((c = vars_cmp(a->sums, b->sums, a->nsums)))
        return c;
    for (int i = 0; i < a->nguards; i++)
        if ((c = ir_expr_cmp(a->guards[i], b->guards[i])))
            return c;
    return ir_expr_cmp(a->body, b->body);
}

bool ir_stage_equal(const Stage *a, const Stage *b)
{
    return a == b || (a->hash == b->hash && ir_stage_cmp(a, b) == 0);
}

const Stage *ir_stage_subst(IrCtx *cx, const Stage *s, int var, const Ix *by)
{
    if (ir_loop_pos(s, var) >= 0 || ir_sum_pos(s, var) >= 0)
        return s;                   /* bound here, not free */
    const IExpr *small[8];
    const IExpr **g = s->nguards <= 8 ? small : xmalloc((size_t)s->nguards * sizeof *g);
    bool changed = false;
    for (int i = 0; i < s->nguards; i++) {
        g[i] = ir_subst(cx, s->guards[i], var, by);
        changed |= g[i] != s->guards[i];
    }
    const IExpr *body = ir_subst(cx, s->body, var, by);
    changed |= body != s->body;
    const Stage *r = !changed ? s
                   : ir_stage_rebody(cx, s, g, s->nguards, body);
    if (g != small)
        free(g);
    return r;
}

/* ---- copies for another statement of the same form -------------------------- */

typedef struct Copy {
    IrCtx *cx;
    const IrTensor *const *from, *const *to;
    int n;
    bool unmapped;                  /* a read of a tensor none of from[] */
    IrVar *made;                    /* the new variable of each variable s binds, */
    int nmade, capmade;             /* made in the order of the old ids, */
    int *made_old;                  /* which are these, ascending */
} Copy;

static const Stage *copy_stage(Copy *c, const Stage *s);
static const IExpr *copy_expr(Copy *c, const IExpr *e);
static int copy_var(const Copy *c, int var);

static const IrTensor *copy_tensor(Copy *c, const IrTensor *t)
{
    if (!c->from)
        return t;                   /* every tensor read as itself */
    for (int i = 0; i < c->n; i++)
        if (c->from[i] == t)
            return c->to[i];
    c->unmapped = true;
    return t;
}

static const Ix *copy_ix(Copy *c, const Ix *x)
{
    const Ix *r = ix_const(c->cx, x->c);
    for (int i = 0; i < x->n; i++) {
        const IxTerm *t = &x->t[i];
        const Ix *atom;
        switch (t->kind) {
        case IX_VAR:
            atom = ix_var(c->cx, copy_var(c, t->var));
            break;
        case IX_DIV:
            atom = ix_div(c->cx, copy_ix(c, t->arg), t->d);
            break;
        case IX_MOD:
            atom = ix_mod(c->cx, copy_ix(c, t->arg), t->d);
            break;
        default:
            atom = ix_read(c->cx, copy_expr(c, t->read));
            break;
        }
        r = ix_add(c->cx, r, ix_scale(c->cx, atom, t->coef));
    }
    return r;
}

static const IExpr *copy_expr(Copy *c, const IExpr *e)
{
    const IExpr *kids[IR_MAX_CHILDREN];
    const Ix *const *ixs;
    int nk = ir_expr_children(e, kids), nx = ir_expr_ixs(e, &ixs);
    const Ix *small[16], **nix = nx <= 16 ? small : xmalloc((size_t)nx * sizeof *nix);
    for (int i = 0; i < nx; i++)
        nix[i] = copy_ix(c, ixs[i]);
    for (int i = 0; i < nk; i++)
        kids[i] = copy_expr(c, kids[i]);
    const IExpr *r;
    if (e->kind == IE_ACCESS && e->access.tensor)
        r = ir_access_tensor(c->cx, copy_tensor(c, e->access.tensor), nix, nx);
    else if (e->kind == IE_ACCESS)
        r = ir_access_stage(c->cx, copy_stage(c, e->access.stage), nix, nx);
    else                            /* every node in cx: s may be a fork's */
        r = ir_expr_clone(c->cx, e, kids, nix, NULL);
    if (nix != small)
        free(nix);
    return r;
}

/* The variables s binds, at any depth, into c->made_old (unsorted, maybe
 * twice). */
static bool collect_visit(void *arg, const IExpr *e);

static void collect(Copy *c, const Stage *s)
{
    for (int i = 0; i < s->nloops + s->nsums; i++) {
        const IrVar *v = i < s->nloops ? &s->loops[i] : &s->sums[i - s->nloops];
        if (c->nmade == c->capmade) {
            c->capmade = c->capmade ? 2 * c->capmade : 32;
            c->made_old = xrealloc(c->made_old, (size_t)c->capmade * sizeof *c->made_old);
            c->made = xrealloc(c->made, (size_t)c->capmade * sizeof *c->made);
        }
        c->made[c->nmade] = *v;
        c->made_old[c->nmade++] = v->id;
    }
    for (int i = 0; i <= s->nguards; i++)
        ir_expr_visit(i < s->nguards ? s->guards[i] : s->body, collect_visit, c);
}

static bool collect_visit(void *arg, const IExpr *e)
{
    const Stage *s = ir_expr_stage(e);
    if (s)
        collect(arg, s);
    return true;
}

static int made_cmp(const void *a, const void *b)
{
    const IrVar *x = a, *y = b;
    return (x->id > y->id) - (x->id < y->id);
}

/* A new variable for each one s binds, made in the order of their ids,
 * so that the copy's index expressions order their terms as s's do (by
 * variable id) and the copy is s over again, not only the same
 * computation. */
static void make_vars(Copy *c, const Stage *s)
{
    collect(c, s);
    if (c->nmade > 1)               /* none at all: a scalar stage (made is NULL) */
        qsort(c->made, (size_t)c->nmade, sizeof *c->made, made_cmp);
    int m = 0;
    for (int i = 0; i < c->nmade; i++)
        if (m == 0 || c->made[i].id != c->made[m - 1].id) {
            c->made_old[m] = c->made[i].id;
            c->made[m++] = c->made[i];
        }
    c->nmade = m;
    for (int i = 0; i < m; i++)
        c->made[i] = ir_var_new(c->cx, c->made[i].name, c->made[i].lo, c->made[i].hi);
}

/* The new variable of `var`, or var itself where s does not bind it
 * (free: not s's to rename). */
static int copy_var(const Copy *c, int var)
{
    int lo = 0, hi = c->nmade - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (c->made_old[mid] == var)
            return c->made[mid].id;
        if (c->made_old[mid] < var)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return var;
}

static IrVar *copy_bind(const Copy *c, const IrVar *v, int n)
{
    IrVar *nv = xmalloc((size_t)(n + 1) * sizeof *nv);
    for (int i = 0; i < n; i++) {
        nv[i] = v[i];               /* the binding's own range */
        nv[i].id = copy_var(c, v[i].id);
        nv[i].name = ir_var_name(c->cx, nv[i].id);
    }
    return nv;
}

static const Stage *copy_stage(Copy *c, const Stage *s)
{
    IrVar *loops = copy_bind(c, s->loops, s->nloops);
    IrVar *sums = copy_bind(c, s->sums, s->nsums);
    const IExpr **g = xmalloc((size_t)(s->nguards + 1) * sizeof *g);
    for (int i = 0; i < s->nguards; i++)
        g[i] = copy_expr(c, s->guards[i]);
    const Stage *r = ir_stage(c->cx, s->red, loops, s->nloops, sums, s->nsums, g,
                              s->nguards, copy_expr(c, s->body));
    free(loops);
    free(sums);
    free(g);
    return r;
}

const Stage *ir_stage_copy(IrCtx *cx, const Stage *s, const IrTensor *const *from,
                           const IrTensor *const *to, int n)
{
    Copy c = {cx, from, to, n, false, NULL, 0, 0, NULL};
    make_vars(&c, s);
    const Stage *r = copy_stage(&c, s);
    free(c.made);
    free(c.made_old);
    return c.unmapped ? NULL : r;
}

/* ---- the tensors a stage reads ------------------------------------------------ */

typedef struct Reads {
    const IrTensor **out;
    int n, max;
} Reads;

static void reads_stage(Reads *r, const Stage *s);

static void reads_expr(Reads *r, const IExpr *e)
{
    if (e->kind == IE_ACCESS && e->access.tensor) {
        int i = 0;
        while (i < r->n && i < r->max && r->out[i] != e->access.tensor)
            i++;
        if (i == r->n) {
            if (r->n < r->max)
                r->out[r->n] = e->access.tensor;
            r->n++;
        }
    } else if (e->kind == IE_ACCESS) {
        reads_stage(r, e->access.stage);
    }
    const Ix *const *ixs;
    int nx = ir_expr_ixs(e, &ixs);
    for (int i = 0; i < nx; i++) {
        const IExpr *g[16];
        int ng = ix_gathers(ixs[i], g, 16);
        if (ng > 16)
            ICE("ir_stage_tensors: %d gathers in one index", ng);
        for (int k = 0; k < ng; k++)
            reads_expr(r, g[k]);
    }
    const IExpr *kids[IR_MAX_CHILDREN];
    int nk = ir_expr_children(e, kids);
    for (int i = 0; i < nk; i++)
        reads_expr(r, kids[i]);
}

static void reads_stage(Reads *r, const Stage *s)
{
    for (int i = 0; i < s->nguards; i++)
        reads_expr(r, s->guards[i]);
    reads_expr(r, s->body);
}

int ir_stage_tensors(const Stage *s, const IrTensor **out, int max)
{
    Reads r = {out, 0, max};
    reads_stage(&r, s);
    return r.n;
}
