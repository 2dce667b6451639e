/* gen_ein.c - bytes to a well-formed .ein program (gen_ein.h).
 *
 * The generator keeps what sema will know: the shape of every tensor so
 * far and, in each statement, the range of every index.  An index is
 * written alone as a subscript (a position, ein(5)) only where the
 * dimension equals its extent, unless a rare "mistake" choice says
 * otherwise; a loop index that got no position makes the statement declare
 * its shape, and a sum index that got none gets a where range.  So the
 * program is right by construction, and the mistakes are the ones chosen.
 * Statement forms: a general map or reduction over earlier tensors with
 * random subscripts, bodies and guards, and templates for what the
 * operator patterns and the derivation rules look for (convolutions,
 * transposed convolutions, products, banded products, pooling, softmax,
 * full reductions of high rank, reshapes, sibling products, map chains,
 * def calls). */
#include "gen_ein.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXRANK 40
#define MAXT 32                 /* tensors a program may read */
#define MAXV 48                 /* indices of one statement */

/* ---- the byte stream ------------------------------------------------------ */

typedef struct Rd {
    const uint8_t *p;
    size_t n, at;
} Rd;

/* A choice in [0, n); 0 once the bytes run out. */
static unsigned pick(Rd *r, unsigned n)
{
    if (n <= 1)
        return 0;
    unsigned v = r->at < r->n ? r->p[r->at++] : 0;
    if (n > 256)
        v = v << 8 | (r->at < r->n ? r->p[r->at++] : 0);
    return v % n;
}

/* True with about pct percent; false once the bytes run out. */
static bool chance(Rd *r, unsigned pct)
{
    return pick(r, 100) >= 100 - pct;
}

/* ---- text ---------------------------------------------------------------- */

typedef struct Out {
    char *s;
    size_t len, cap;
} Out;

static void put(Out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(Out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        abort();
    if (o->len + (size_t)n + 1 > o->cap) {
        o->cap = (o->len + (size_t)n + 1) * 2 + 256;
        o->s = realloc(o->s, o->cap);
        if (!o->s)
            abort();
    }
    va_start(ap, fmt);
    vsnprintf(o->s + o->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    o->len += (size_t)n;
}

/* ---- what the program has so far ------------------------------------------ */

typedef struct Ten {
    char name[12];
    bool f32;                   /* of element type f32 */
    int rank;
    int64_t dim[MAXRANK];
} Ten;

typedef struct Var {
    char name[16];
    int64_t ext;                /* range 0..ext unless a where range says */
    bool loop;
    bool placed;                /* written alone somewhere (a position) */
    bool used;                  /* appears in some subscript */
} Var;

typedef struct G {
    Rd r;
    GenOptions opt;
    Out decl, body;
    Ten t[MAXT];
    int nt;
    int ninputs, nweights, nstmts, ndefs;
    int64_t con[4];
    int ncon;
    bool defs_done[8];
    /* the statement being written */
    Var v[MAXV];
    int nv;
    int64_t work;               /* points x terms of that statement */
} G;

static const char *const elems[] = {"f32", "f16", "bf16"};

static int elem(G *g)
{
    return chance(&g->r, 8) ? 1 + (int)pick(&g->r, 2) : 0;
}

/* An extent: 1..4 in small programs; in others up to 64. */
static int64_t ext(G *g)
{
    static const int64_t medium[] = {1, 2, 3, 4, 5, 7, 8, 16, 32, 64};
    if (g->opt.small)
        return 1 + (int64_t)pick(&g->r, 4);
    return medium[pick(&g->r, 10)];
}

/* A dimension as written: a number, or a constant of that value. */
static void put_dim(G *g, Out *o, int64_t d)
{
    for (int i = 0; i < g->ncon; i++)
        if (g->con[i] == d && chance(&g->r, 50)) {
            put(o, "C%d", i);
            return;
        }
    put(o, "%lld", (long long)d);
}

static void put_shape(G *g, Out *o, const int64_t *dim, int rank)
{
    put(o, "[");
    for (int d = 0; d < rank; d++) {
        put(o, "%s", d ? ", " : "");
        put_dim(g, o, dim[d]);
    }
    put(o, "]");
}

static int64_t numel(const int64_t *dim, int rank)
{
    int64_t n = 1;
    for (int d = 0; d < rank; d++)
        n *= dim[d];
    return n;
}

static Ten *add_tensor(G *g, const char *prefix, int no, const int64_t *dim, int rank)
{
    Ten *t = &g->t[g->nt < MAXT ? g->nt++ : MAXT - 1];
    snprintf(t->name, sizeof t->name, "%s%d", prefix, no);
    t->rank = rank;
    t->f32 = true;
    memcpy(t->dim, dim, (size_t)rank * sizeof *dim);
    return t;
}

/* A new input or weight of the given shape, declared, of a random
 * element type or f32 (def parameters are f32). */
static Ten *declare_as(G *g, const int64_t *dim, int rank, bool weight, bool f32)
{
    Ten *t = weight ? add_tensor(g, "w", g->nweights++, dim, rank)
                    : add_tensor(g, "x", g->ninputs++, dim, rank);
    int e = f32 ? 0 : elem(g);
    t->f32 = e == 0;
    put(&g->decl, "%s %s : %s", weight ? "weight" : "input ", t->name, elems[e]);
    put_shape(g, &g->decl, dim, rank);
    put(&g->decl, "\n");
    return t;
}

static Ten *declare(G *g, const int64_t *dim, int rank, bool weight)
{
    return declare_as(g, dim, rank, weight, false);
}

/* A random shape: rank 0..4 mostly, sometimes high (extents 1 and 2, at
 * most 10 of them 2, so the tensor stays small). */
static int random_shape(G *g, int64_t *dim)
{
    int rank;
    if (chance(&g->r, 6)) {
        rank = 5 + (int)pick(&g->r, MAXRANK - 4);
        int twos = 0;
        for (int d = 0; d < rank; d++)
            dim[d] = twos < 10 && chance(&g->r, 30) ? (twos++, 2) : 1;
        return rank;
    }
    rank = (int)pick(&g->r, 5);
    for (int d = 0; d < rank; d++)
        dim[d] = ext(g);
    if (!g->opt.small && rank > 0 && chance(&g->r, 3)) {
        /* one dimension past 2^31 (64-bit offsets), the rest 1 */
        for (int d = 0; d < rank; d++)
            dim[d] = 1;
        dim[pick(&g->r, (unsigned)rank)] = chance(&g->r, 50) ? INT64_C(2147483651)
                                                             : INT64_C(1) << 36;
    }
    while (g->opt.small && numel(dim, rank) > 512)
        for (int d = 0; d < rank; d++)
            dim[d] = dim[d] > 1 ? dim[d] / 2 : 1;
    return rank;
}

static Ten *random_tensor(G *g)
{
    if (g->nt == 0 || chance(&g->r, 15)) {
        int64_t dim[MAXRANK];
        int rank = random_shape(g, dim);
        return declare(g, dim, rank, chance(&g->r, 40));
    }
    return &g->t[pick(&g->r, (unsigned)g->nt)];
}

/* The name of the next defined tensor. */
static Ten *define(G *g, const int64_t *dim, int rank)
{
    return add_tensor(g, "t", g->nstmts++, dim, rank);
}

/* ---- indices ---------------------------------------------------------------- */

static int new_var(G *g, const char *name, int64_t e, bool loop)
{
    if (g->nv == MAXV)
        return g->nv - 1;
    Var *v = &g->v[g->nv];
    snprintf(v->name, sizeof v->name, "%s", name);
    v->ext = e;
    v->loop = loop;
    v->placed = v->used = false;
    return g->nv++;
}

static int random_var(G *g)
{
    return (int)pick(&g->r, (unsigned)g->nv);
}

/* An affine index expression of the statement's indices. */
static void put_affine(G *g, Out *o)
{
    int a = random_var(g);
    g->v[a].used = true;
    if (chance(&g->r, 3)) {
        /* far outside every tensor: zeros, but 64-bit arithmetic in the
         * compiler (sema refuses what overflows) */
        static const char *const big[] = {"1048576", "2147483648", "1099511627776",
                                          "2305843009213693952", "9223372036854775807"};
        /* the coefficient's pick first, then the constant's: as two
         * arguments of one call their order would be the compiler's (gcc
         * and clang differ), and a corpus input another program */
        unsigned coef = pick(&g->r, 5), off = pick(&g->r, 5);
        put(o, "%s*%s - %s", big[coef], g->v[a].name, big[off]);
        return;
    }
    switch (pick(&g->r, 4)) {
    case 0:
        put(o, "%s + %u", g->v[a].name, 1 + pick(&g->r, 2));
        break;
    case 1:
        put(o, "%s - %u", g->v[a].name, pick(&g->r, 3));
        break;
    case 2: {
        int b = random_var(g);
        g->v[b].used = true;
        put(o, "%u*%s + %s", 1 + pick(&g->r, 3), g->v[a].name, g->v[b].name);
        break;
    }
    default: {
        int b = random_var(g);
        g->v[b].used = true;
        put(o, "%s - %s + %u", g->v[a].name, g->v[b].name, pick(&g->r, 3));
        break;
    }
    }
}

/* Subscript for a dimension of extent d: the index alone where its extent
 * is d (preferring one not yet placed), else an expression. */
static void put_subscript(G *g, Out *o, int64_t d, bool *taken)
{
    unsigned how = pick(&g->r, 100);
    if (g->nv == 0 || how >= 94) {
        put(o, "%u", pick(&g->r, (unsigned)d + 1));
        return;
    }
    if (how < 60) {
        int best = -1;
        for (int i = 0; i < g->nv; i++)
            if (g->v[i].ext == d && !taken[i] && (best < 0 || !g->v[i].placed))
                best = i;
        if (best < 0 && chance(&g->r, 3))
            best = random_var(g);   /* a mistake, or a where-ranged sum */
        if (best >= 0) {
            /* alone in a dimension of another extent (a mistake), an
             * index is not counted as placed: a loop index then gets a
             * declared shape, which wins, and a sum index a where range,
             * which makes sema ignore its positions */
            taken[best] = true;
            g->v[best].used = true;
            if (g->v[best].ext == d)
                g->v[best].placed = true;
            put(o, "%s", g->v[best].name);
            return;
        }
    }
    if (how < 75) {
        put_affine(g, o);
    } else if (how < 85) {
        put(o, "(");
        put_affine(g, o);
        static const int divs[] = {2, 3, 4, -2};
        put(o, ") / %d", divs[pick(&g->r, 4)]);
    } else {
        put(o, "(");
        put_affine(g, o);
        static const int mods[] = {2, 3, 4, -3};
        put(o, ") %% %d", mods[pick(&g->r, 4)]);
    }
}

static void put_read(G *g, Out *o, const Ten *t)
{
    bool taken[MAXV] = {false};
    put(o, "%s[", t->name);
    for (int d = 0; d < t->rank; d++) {
        put(o, "%s", d ? ", " : "");
        put_subscript(g, o, t->dim[d], taken);
    }
    put(o, "]");
}

/* ---- scalar expressions -------------------------------------------------------- */

static void put_expr(G *g, Out *o, int depth);

static void put_leaf(G *g, Out *o)
{
    unsigned k = pick(&g->r, 20);
    if (k < 15 && g->nt > 0) {
        put_read(g, o, random_tensor(g));
    } else if (k < 17) {
        static const char *const nums[] = {"0.5", "2", "1", "-1.25", "3e-1", "0"};
        put(o, "%s", nums[pick(&g->r, 6)]);
    } else if (k < 18 && g->ncon > 0) {
        put(o, "C%u", pick(&g->r, (unsigned)g->ncon));
    } else if (g->nv > 0) {
        int v = random_var(g);
        put(o, "%s", g->v[v].name);     /* an index as a value */
    } else {
        put(o, "1.5");
    }
}

static void put_cond(G *g, Out *o)
{
    static const char *const ops[] = {"<", "<=", ">", ">=", "==", "!="};
    if (g->nv > 0 && chance(&g->r, 50)) {
        int a = random_var(g), b = random_var(g);
        put(o, "%s %s %s", g->v[a].name, ops[pick(&g->r, 6)], g->v[b].name);
        return;
    }
    put_expr(g, o, 0);
    put(o, " %s ", ops[pick(&g->r, 4)]);
    put_expr(g, o, 0);
}

static void put_expr(G *g, Out *o, int depth)
{
    static const char *const unary[] = {"relu", "sigmoid", "tanh", "abs", "erf",
                                        "exp", "log", "sqrt", "rsqrt"};
    unsigned k = depth <= 0 ? 0 : pick(&g->r, 12);
    switch (k) {
    case 0: case 1: case 2: case 3:
        put_leaf(g, o);
        return;
    case 4: case 5: case 6: {
        static const char *const ops[] = {" + ", " - ", " * ", " / "};
        unsigned op = pick(&g->r, 4);
        put(o, "(");
        put_expr(g, o, depth - 1);
        put(o, "%s", ops[op]);
        if (op == 3 && g->opt.small) {
            put(o, "(abs(");
            put_expr(g, o, depth - 1);
            put(o, ") + 1)");
        } else {
            put_expr(g, o, depth - 1);
        }
        put(o, ")");
        return;
    }
    case 7:
        put(o, "-");
        put_expr(g, o, depth - 1);
        return;
    case 8: case 9: {
        unsigned f = pick(&g->r, 9);
        if (g->opt.small && f >= 5) {
            /* finite on finite arguments */
            static const char *const safe[][2] = {
                {"exp(tanh(", "))"}, {"log(abs(", ") + 1)"}, {"sqrt(abs(", "))"},
                {"rsqrt(abs(", ") + 1)"}};
            put(o, "%s", safe[f - 5][0]);
            put_expr(g, o, depth - 1);
            put(o, "%s", safe[f - 5][1]);
            return;
        }
        put(o, "%s(", unary[f]);
        put_expr(g, o, depth - 1);
        put(o, ")");
        return;
    }
    case 10: {
        static const char *const bin[] = {"max", "min", "pow"};
        unsigned f = pick(&g->r, 3);
        if (f == 2 && g->opt.small) {
            put(o, "pow(abs(tanh(");
            put_expr(g, o, depth - 1);
            put(o, ")) + 1, tanh(");
            put_expr(g, o, depth - 1);
            put(o, "))");
            return;
        }
        put(o, "%s(", bin[f]);
        put_expr(g, o, depth - 1);
        put(o, ", ");
        put_expr(g, o, depth - 1);
        put(o, ")");
        return;
    }
    default:
        put(o, "select(");
        put_cond(g, o);
        put(o, ", ");
        put_expr(g, o, depth - 1);
        put(o, ", ");
        put_expr(g, o, depth - 1);
        put(o, ")");
        return;
    }
}

/* ---- the general statement ------------------------------------------------------- */

static const char *const reduce_ops[] = {"+=", "max=", "min="};

/* y[loops] (: [shape])? OP= body (where ranges, guards)? */
static void stmt_general(G *g)
{
    int64_t dim[MAXRANK];
    int rank;
    Ten *like = g->nt > 0 && chance(&g->r, 60) ? &g->t[pick(&g->r, (unsigned)g->nt)] : NULL;
    if (like) {
        rank = like->rank;
        memcpy(dim, like->dim, (size_t)rank * sizeof *dim);
        if (rank > 0 && chance(&g->r, 30))
            rank--;             /* reduce over the last dimension */
    } else {
        rank = random_shape(g, dim);
    }
    g->nv = 0;
    char name[16];
    for (int d = 0; d < rank; d++) {
        snprintf(name, sizeof name, "i%d", d);
        new_var(g, name, dim[d], true);
    }
    bool reduce = chance(&g->r, 55);
    int nsums = reduce ? (int)pick(&g->r, 4) : 0;
    if (like && rank < like->rank && reduce && nsums == 0)
        nsums = 1;
    g->work = numel(dim, rank);
    for (int k = 0; k < nsums; k++) {
        snprintf(name, sizeof name, "k%d", k);
        int64_t e = like && rank + k < like->rank ? like->dim[rank + k] : ext(g);
        if (g->opt.small && g->work * e > 4096)
            e = 1;
        g->work *= e;
        new_var(g, name, e, false);
    }
    const char *op = reduce ? reduce_ops[chance(&g->r, 30) ? 1 + pick(&g->r, 2) : 0] : "=";
    Out b = {0};
    if (like && chance(&g->r, 50))
        put_read(g, &b, like);      /* the statement's model read first */
    else
        put_expr(g, &b, 1 + (int)pick(&g->r, 3));
    if (chance(&g->r, 40)) {
        put(&b, " * ");
        put_expr(g, &b, 1);
    }
    /* Each sum index must occur on the right: one that the body does not
     * use is summed over by an extra term. */
    for (int k = rank; k < g->nv; k++)
        if (!g->v[k].used && g->nt > 0)
            put(&b, " + %s", g->v[k].name);
    Ten *out = define(g, dim, rank);
    put(&g->body, "%s[", out->name);
    for (int d = 0; d < rank; d++)
        put(&g->body, "%s%s", d ? ", " : "", g->v[d].name);
    put(&g->body, "]");
    bool declare_shape = chance(&g->r, 40);
    for (int d = 0; d < rank; d++)
        declare_shape |= !g->v[d].placed;
    if (declare_shape) {
        put(&g->body, " : ");
        if (chance(&g->r, 10)) {
            int e = (int)pick(&g->r, 3);
            out->f32 = e == 0;
            put(&g->body, "%s", elems[e]);
        }
        put_shape(g, &g->body, dim, rank);
    }
    put(&g->body, " %s %s", op, b.s ? b.s : "0");
    free(b.s);
    /* where: ranges for the sum indices without a position, some for the
     * others too (negative lower bounds read outside: zeros), guards */
    int nitems = 0;
    for (int k = rank; k < g->nv; k++) {
        Var *v = &g->v[k];
        if (v->placed && !chance(&g->r, 20))
            continue;
        put(&g->body, "%s", nitems++ ? ", " : " where ");
        if (chance(&g->r, 50))
            put(&g->body, "%s < %lld", v->name, (long long)v->ext);
        else
            put(&g->body, "%s in %d..%lld", v->name, -(int)pick(&g->r, 2),
                (long long)v->ext);
    }
    int nguards = chance(&g->r, 30) ? 1 + (int)pick(&g->r, 2) : 0;
    for (int i = 0; i < nguards && g->nv > 0; i++) {
        put(&g->body, "%s", nitems++ ? ", " : " where ");
        int a = random_var(g), c = random_var(g);
        switch (pick(&g->r, 5)) {
        case 0: put(&g->body, "%s != %s", g->v[a].name, g->v[c].name); break;
        case 1: put(&g->body, "%s <= %s", g->v[a].name, g->v[c].name); break;
        case 2: put(&g->body, "%s + %s < %lld", g->v[a].name, g->v[c].name,
                    (long long)g->v[a].ext); break;
        case 3: put(&g->body, "(%s + 1 - %s) %% 2 == 0", g->v[a].name, g->v[c].name); break;
        default: put(&g->body, "%s %% 2 == 1 || %s == 0", g->v[a].name, g->v[a].name); break;
        }
    }
    put(&g->body, "\n");
}

/* ---- templates ----------------------------------------------------------------- */

static int64_t small_or(G *g, int64_t lim_small, int64_t lim)
{
    return 1 + (int64_t)pick(&g->r, (unsigned)(g->opt.small ? lim_small : lim));
}

/* Convolution: stride, dilation, padding; plain, grouped or depthwise;
 * then bias and relu sometimes, at times after a per-channel scale. */
static void stmt_conv(G *g)
{
    int64_t n = small_or(g, 2, 2), c = small_or(g, 3, 64), h = small_or(g, 6, 28),
            w = small_or(g, 6, 28), f = small_or(g, 3, 64);
    int64_t r = 1 + pick(&g->r, 3), s = chance(&g->r, 80) ? r : 1 + pick(&g->r, 3);
    int64_t st = 1 + pick(&g->r, 2), dil = chance(&g->r, 20) ? 2 : 1, pad = pick(&g->r, 3);
    int64_t ho = (h + 2 * pad - dil * (r - 1) - 1) / st + 1;
    int64_t wo = (w + 2 * pad - dil * (s - 1) - 1) / st + 1;
    if (ho < 1 || wo < 1) {
        ho = wo = 1;
        pad = 0;
    }
    unsigned kind = pick(&g->r, 6);     /* 0..3 plain, 4 grouped, 5 depthwise */
    int64_t groups = 1 + pick(&g->r, 2), cg = c, fg = f;
    if (kind == 4) {
        c = groups * cg;
        f = groups * fg;
    }
    if (kind == 5)
        f = c;
    int64_t xd[4] = {n, c, h, w}, yd[4] = {n, f, ho, wo};
    int64_t kd[4] = {f, kind == 4 ? cg : c, r, s}, kdw[3] = {c, r, s};
    Ten *x = declare(g, xd, 4, false);
    Ten *k = kind == 5 ? declare(g, kdw, 3, true) : declare(g, kd, 4, true);
    Ten *y = define(g, yd, 4);
    char hh[64], ww[64];
    snprintf(hh, sizeof hh, "%lld*h + %lld*r - %lld", (long long)st, (long long)dil,
             (long long)pad);
    snprintf(ww, sizeof ww, "%lld*w + %lld*s - %lld", (long long)st, (long long)dil,
             (long long)pad);
    put(&g->body, "%s[n, f, h, w] : ", y->name);
    put_shape(g, &g->body, yd, 4);
    if (kind == 4)
        put(&g->body, " += %s[n, %lld*(f / %lld) + c, %s, %s] * %s[f, c, r, s]\n",
            x->name, (long long)cg, (long long)fg, hh, ww, k->name);
    else if (kind == 5)
        put(&g->body, " += %s[n, f, %s, %s] * %s[f, r, s]\n", x->name, hh, ww, k->name);
    else
        put(&g->body, " += %s[n, c, %s, %s] * %s[f, c, r, s]\n", x->name, hh, ww, k->name);
    if (chance(&g->r, 50)) {
        int64_t bd[1] = {f};
        Ten *b = declare(g, bd, 1, true);
        /* at times batch norm's scale first, which goes into the weight at
           load (derive/search/scalefold.c) */
        Ten *sc = chance(&g->r, 50) ? declare(g, bd, 1, true) : NULL;
        Ten *z = define(g, yd, 4);
        if (sc)
            put(&g->body, "%s[n, f, h, w] = relu(%s[n, f, h, w] * %s[f] + %s[f])\n", z->name,
                y->name, sc->name, b->name);
        else
            put(&g->body, "%s[n, f, h, w] = relu(%s[n, f, h, w] + %s[f])\n", z->name,
                y->name, b->name);
    }
}

/* Transposed convolution (DCGAN's form). */
static void stmt_convt(G *g)
{
    int64_t n = small_or(g, 2, 2), c = small_or(g, 3, 64), h = small_or(g, 4, 16),
            w = small_or(g, 4, 16), f = small_or(g, 3, 32);
    int64_t st = 1 + pick(&g->r, 2), r = 1 + pick(&g->r, 4), pad = pick(&g->r, 2);
    int64_t ho = (h - 1) * st - 2 * pad + r, wo = (w - 1) * st - 2 * pad + r;
    if (ho < 1 || wo < 1) {
        pad = 0;
        ho = (h - 1) * st + r;
        wo = (w - 1) * st + r;
    }
    int64_t xd[4] = {n, c, h, w}, kd[4] = {c, f, r, r}, yd[4] = {n, f, ho, wo};
    Ten *x = declare(g, xd, 4, false), *k = declare(g, kd, 4, true);
    Ten *y = define(g, yd, 4);
    put(&g->body, "%s[n, f, h, w] : ", y->name);
    put_shape(g, &g->body, yd, 4);
    put(&g->body, " += %s[n, c, (h + %lld - r) / %lld, (w + %lld - s) / %lld] * %s[c, f, r, s]"
        " where (h + %lld - r) %% %lld == 0, (w + %lld - s) %% %lld == 0\n",
        x->name, (long long)pad, (long long)st, (long long)pad, (long long)st, k->name,
        (long long)pad, (long long)st, (long long)pad, (long long)st);
}

/* (Batched) matrix product, each operand possibly transposed. */
static void stmt_matmul(G *g)
{
    int64_t m = small_or(g, 4, 128), k = small_or(g, 4, 128), n = small_or(g, 4, 128);
    bool batch = chance(&g->r, 30), ta = chance(&g->r, 30), tb = chance(&g->r, 30);
    int64_t b = batch ? small_or(g, 3, 8) : 1;
    int64_t ad[3], bd[3], cd[3];
    int r = 0;
    if (batch)
        ad[r] = bd[r] = cd[r] = b, r++;
    ad[r] = ta ? k : m; ad[r + 1] = ta ? m : k;
    bd[r] = tb ? n : k; bd[r + 1] = tb ? k : n;
    cd[r] = m; cd[r + 1] = n;
    Ten *A = chance(&g->r, 20) ? declare(g, ad, r + 2, true) : declare(g, ad, r + 2, false);
    Ten *B = declare(g, bd, r + 2, chance(&g->r, 70));
    Ten *C = define(g, cd, r + 2);
    const char *bi = batch ? "b, " : "";
    put(&g->body, "%s[%si, j] += %s[%s%s] * %s[%s%s]\n", C->name, bi, A->name, bi,
        ta ? "kk, i" : "i, kk", B->name, bi, tb ? "j, kk" : "kk, j");
    if (!chance(&g->r, 30))
        return;
    /* A copy of the product to another layout, which the product may store
     * itself through a view (derive/search/outview.c): transposed, the
     * batches side by side in each row, or the columns reversed (none). */
    unsigned kind = pick(&g->r, 3);
    int64_t td[3] = {b, n, m}, sd[2] = {m, b * n};
    const int64_t *yd = kind == 0 ? (batch ? td : td + 1) : kind == 1 ? sd : cd;
    int yr = kind == 1 ? 2 : r + 2;
    Ten *y = define(g, yd, yr);
    static const char *const lhs[2][3] = {{"j, i", "i, e", "i, j"}, {"b, j, i", "i, e", "b, i, j"}};
    put(&g->body, "%s[%s] : ", y->name, lhs[batch][kind]);
    put_shape(g, &g->body, yd, yr);
    if (kind == 0)
        put(&g->body, " = %s[%si, j]\n", C->name, bi);
    else if (kind == 1 && batch)
        put(&g->body, " = %s[e / %lld, i, e %% %lld]\n", C->name, (long long)n, (long long)n);
    else if (kind == 1)
        put(&g->body, " = %s[i, e]\n", C->name);
    else
        put(&g->body, " = %s[%si, %lld - j]\n", C->name, bi, (long long)(n - 1));
}

/* Banded products (Longformer's G2BMM and GBMM), with a dilation. */
static void stmt_band(G *g)
{
    int64_t b = small_or(g, 2, 4), l = small_or(g, 8, 64), d = small_or(g, 4, 64);
    int64_t kw = pick(&g->r, 3), dil = 1 + pick(&g->r, 3), j = 2 * kw + 1;
    int64_t qd[3] = {b, l, d}, sd[3] = {b, l, j};
    Ten *q = declare(g, qd, 3, false), *kt = declare(g, qd, 3, false);
    Ten *s = define(g, sd, 3);
    put(&g->body, "%s[b, i, j] : ", s->name);
    put_shape(g, &g->body, sd, 3);
    put(&g->body, " += %s[b, i, d] * %s[b, i + %lld*(j - %lld), d]\n", q->name, kt->name,
        (long long)dil, (long long)kw);
    Ten *x = s;
    if (chance(&g->r, 50)) {
        Ten *v = declare(g, qd, 3, false), *o = define(g, qd, 3);
        put(&g->body, "%s[b, i, d] += %s[b, i, j] * %s[b, i + %lld*(j - %lld), d]\n",
            o->name, s->name, v->name, (long long)dil, (long long)kw);
        x = o;
    }
    if (!chance(&g->r, 40))
        return;
    /* A copy of the last product to another layout, which the product may
     * store itself through a view (derive/search/outview.c): position
     * major, heads merged (batch = 2*b1 + h, or b1 + (b/2)*h), and two it
     * cannot take (the columns to rows, the columns reversed). */
    int64_t c = x->dim[2], h = b / 2;
    unsigned kind = pick(&g->r, 5);
    if ((kind == 1 || kind == 2) && b % 2)
        kind = 0;
    int64_t cd[3] = {l, b, c};
    if (kind == 1 || kind == 2)
        cd[0] = h, cd[1] = l, cd[2] = 2 * c;
    else if (kind == 3)
        cd[0] = b, cd[1] = c, cd[2] = l;
    else if (kind == 4)
        cd[0] = b, cd[1] = l;
    Ten *y = define(g, cd, 3);
    put(&g->body, "%s[u, v, w] : ", y->name);
    put_shape(g, &g->body, cd, 3);
    switch (kind) {
    case 0: put(&g->body, " = %s[v, u, w]\n", x->name); break;
    case 1:
        put(&g->body, " = %s[2*u + w / %lld, v, w %% %lld]\n", x->name, (long long)c,
            (long long)c);
        break;
    case 2:
        put(&g->body, " = %s[u + %lld*(w / %lld), v, w %% %lld]\n", x->name, (long long)h,
            (long long)c, (long long)c);
        break;
    case 3: put(&g->body, " = %s[u, w, v]\n", x->name); break;
    default: put(&g->body, " = %s[u, v, %lld - w]\n", x->name, (long long)(c - 1)); break;
    }
}

/* Max or average pooling over a window with stride. */
static void stmt_pool(G *g)
{
    int64_t n = small_or(g, 2, 2), c = small_or(g, 3, 32), h = 2 * small_or(g, 3, 16),
            w = 2 * small_or(g, 3, 16), k = 2 + pick(&g->r, 2);
    int64_t xd[4] = {n, c, h, w}, yd[4] = {n, c, h / 2, w / 2};
    Ten *x = random_tensor(g);
    if (x->rank != 4)
        x = declare(g, xd, 4, false);
    else
        memcpy(xd, x->dim, sizeof xd), yd[0] = xd[0], yd[1] = xd[1],
        yd[2] = xd[2] / 2 > 0 ? xd[2] / 2 : 1, yd[3] = xd[3] / 2 > 0 ? xd[3] / 2 : 1;
    Ten *y = define(g, yd, 4);
    put(&g->body, "%s[n, c, h, w] : ", y->name);
    put_shape(g, &g->body, yd, 4);
    if (chance(&g->r, 50))
        put(&g->body, " max= %s[n, c, 2*h + i, 2*w + j] where i < %lld, j < %lld\n",
            x->name, (long long)k, (long long)k);
    else
        put(&g->body, " += %s[n, c, 2*h + i - 1, 2*w + j - 1] / %lld where i < 3, j < 3\n",
            x->name, (long long)9);
}

/* A row softmax: max, exp, sum, divide.  Or a causal one (GPT-2's):
 * the scores masked to j <= i + a, the rows' max, sum and quotient taken
 * where j <= i + b, so that the mask is one no reader sees where b <= a
 * (derive/search/unmask.c drops it) and is read on a diagonal where not. */
static void stmt_softmax(G *g)
{
    int64_t m = small_or(g, 4, 64), n = small_or(g, 6, 256);
    int64_t xd[2] = {m, n}, rd[1] = {m};
    Ten *x = declare(g, xd, 2, false);
    if (chance(&g->r, 40)) {
        int a = (int)pick(&g->r, 3) - 1, b = (int)pick(&g->r, 3) - 1;
        Ten *s = define(g, xd, 2);
        put(&g->body, "%s[i, j] : ", s->name);
        put_shape(g, &g->body, xd, 2);
        put(&g->body, " = %s[i, j] / 2 where j <= i + %d\n", x->name, a);
        x = s;
        char w[32];
        snprintf(w, sizeof w, " where j <= i + %d", b);
        Ten *mx = define(g, rd, 1), *e = define(g, xd, 2), *sm = define(g, rd, 1),
            *y = define(g, xd, 2);
        put(&g->body, "%s[i] max= %s[i, j]%s\n", mx->name, x->name, w);
        put(&g->body, "%s[i, j] = exp(%s[i, j] - %s[i])\n", e->name, x->name, mx->name);
        put(&g->body, "%s[i] += %s[i, j]%s\n", sm->name, e->name, w);
        put(&g->body, "%s[i, j] = select(j <= i + %d, %s[i, j] / %s[i], 0)\n", y->name, b,
            e->name, sm->name);
        return;
    }
    Ten *mx = define(g, rd, 1), *e = define(g, xd, 2), *sm = define(g, rd, 1),
        *y = define(g, xd, 2);
    put(&g->body, "%s[i] max= %s[i, j]\n", mx->name, x->name);
    put(&g->body, "%s[i, j] = exp(%s[i, j] - %s[i])\n", e->name, x->name, mx->name);
    put(&g->body, "%s[i] += %s[i, j]\n", sm->name, e->name);
    put(&g->body, "%s[i, j] = %s[i, j] / %s[i]\n", y->name, e->name, sm->name);
}

/* A reduction of a tensor of high rank: over everything, or its last
 * dimension (issue 16's 17- and 40-loop cases). */
static void stmt_high_rank(G *g)
{
    int64_t dim[MAXRANK];
    int rank = 17 + (int)pick(&g->r, MAXRANK - 16);
    int twos = 0;
    for (int d = 0; d < rank; d++)
        dim[d] = twos < (g->opt.small ? 9 : 20) && chance(&g->r, 40) ? (twos++, 2) : 1;
    Ten *x = declare(g, dim, rank, false);
    bool all = chance(&g->r, 50);
    Ten *y = define(g, dim, all ? 0 : rank - 1);
    put(&g->body, "%s[", y->name);
    for (int d = 0; d < y->rank; d++)
        put(&g->body, "%si%d", d ? ", " : "", d);
    put(&g->body, "] %s %s[", reduce_ops[pick(&g->r, 3)], x->name);
    for (int d = 0; d < rank; d++)
        put(&g->body, "%si%d", d ? ", " : "", d);
    put(&g->body, "]\n");
}

/* Reshapes and layout changes: a merge by / and %, a transpose; at
 * times a map that reads the transpose three times, at shifted places (a
 * rotary embedding's form: the view goes into it, derive/search/fuse.c). */
static void stmt_reshape(G *g)
{
    int64_t a = small_or(g, 4, 32), b = small_or(g, 4, 32);
    int64_t md[2] = {a, b}, vd[1] = {a * b}, td[2] = {b, a};
    Ten *m = declare(g, md, 2, chance(&g->r, 50));
    Ten *v = define(g, vd, 1);
    put(&g->body, "%s[i] : ", v->name);
    put_shape(g, &g->body, vd, 1);
    put(&g->body, " = %s[i / %lld, i %% %lld]\n", m->name, (long long)b, (long long)b);
    Ten *t = define(g, td, 2);
    put(&g->body, "%s[i, j] = %s[j, i]\n", t->name, m->name);
    if (chance(&g->r, 50)) {
        Ten *r = define(g, td, 2);
        put(&g->body, "%s[i, j] = %s[i, j] * 0.5 + select(j + 1 < %lld, %s[i, j + 1], -%s[i, 0])\n",
            r->name, t->name, (long long)a, t->name, t->name);
    }
}

/* Products of one input with several weights of one shape: candidates for
 * sibling merging (EinNet's Q/K/V). */
static void stmt_siblings(G *g)
{
    int64_t m = small_or(g, 4, 64), k = small_or(g, 4, 64), n = small_or(g, 4, 64);
    int64_t xd[2] = {m, k}, wd[2] = {k, n}, yd[2] = {m, n};
    Ten *x = declare(g, xd, 2, false);
    int count = 2 + (int)pick(&g->r, 3);
    for (int i = 0; i < count; i++) {
        Ten *w = declare(g, wd, 2, true);
        Ten *y = define(g, yd, 2);
        put(&g->body, "%s[i, j] += %s[i, kk] * %s[kk, j]\n", y->name, x->name, w->name);
    }
}

/* A chain of maps (fusion). */
static void stmt_chain(G *g)
{
    Ten *x = random_tensor(g);
    int n = 2 + (int)pick(&g->r, 6);
    for (int i = 0; i < n; i++) {
        Ten *y = define(g, x->dim, x->rank);
        put(&g->body, "%s[", y->name);
        for (int d = 0; d < x->rank; d++)
            put(&g->body, "%si%d", d ? ", " : "", d);
        put(&g->body, "] = %s(%s[", i % 2 ? "tanh" : "relu", x->name);
        for (int d = 0; d < x->rank; d++)
            put(&g->body, "%si%d", d ? ", " : "", d);
        put(&g->body, "]) + %d\n", i);
        x = y;
    }
}

/* Layers of one form over their own weights (a model's repeated blocks),
 * each reading a map of the last: every layer after the first is the
 * same computation as the first over other tensors, and takes its search
 * (search_reuse); at times a weight is shared, or the product's operands
 * are written the other way round. */
static void stmt_layers(G *g)
{
    bool conv = chance(&g->r, 50), f32 = chance(&g->r, 70);
    int64_t c = small_or(g, 3, 32), h = small_or(g, 4, 14);
    int64_t r = 1 + pick(&g->r, 3), pad = pick(&g->r, 3);
    int64_t xd[4] = {1, c, h, h}, kd[4] = {c, c, r, r}, md[2] = {c, h}, wd[2] = {h, h};
    int count = 2 + (int)pick(&g->r, 3);
    Ten *x = conv ? declare(g, xd, 4, false) : declare(g, md, 2, false), *k = NULL;
    for (int i = 0; i < count; i++) {
        const char *fn = chance(&g->r, 50) ? "tanh" : "relu";
        Ten *a = define(g, x->dim, x->rank);
        if (conv)
            put(&g->body, "%s[n, c, h, w] = %s(%s[n, c, h, w])\n", a->name, fn, x->name);
        else
            put(&g->body, "%s[i, j] = %s(%s[i, j])\n", a->name, fn, x->name);
        if (!k || !chance(&g->r, 25))
            k = conv ? declare_as(g, kd, 4, true, f32) : declare_as(g, wd, 2, true, f32);
        Ten *y = define(g, x->dim, x->rank);
        bool swap = chance(&g->r, 30);
        char ra[96], rk[48];
        if (conv) {
            snprintf(ra, sizeof ra, "%s[n, c, h + r - %lld, w + s - %lld]", a->name,
                     (long long)pad, (long long)pad);
            snprintf(rk, sizeof rk, "%s[f, c, r, s]", k->name);
            put(&g->body, "%s[n, f, h, w] : ", y->name);
            put_shape(g, &g->body, xd, 4);
            put(&g->body, " += %s * %s\n", swap ? rk : ra, swap ? ra : rk);
        } else {
            snprintf(ra, sizeof ra, "%s[i, kk]", a->name);
            snprintf(rk, sizeof rk, "%s[kk, j]", k->name);
            put(&g->body, "%s[i, j] += %s * %s\n", y->name, swap ? rk : ra, swap ? ra : rk);
        }
        x = y;
    }
}

/* ---- defs ------------------------------------------------------------------------- */

static const char *const def_text[] = {
    /* 0: elementwise, any rank 2 */
    "def d0(a : f32[P0, P1]) -> y {\n  y[i, j] = relu(a[i, j]) * 2\n}\n",
    /* 1: a product */
    "def d1(a : f32[P0, P1], b : f32[P1, P2]) -> y {\n  y[i, j] += a[i, k] * b[k, j]\n}\n",
    /* 2: a 3x3 convolution and a block of two, nested */
    "def d2(x : f32[P0, P1, P2, P3], k : f32[P4, P1, 3, 3]) -> y {\n"
    "  y[n, f, h, w] : [P0, P4, P2, P3] += x[n, c, h + r - 1, w + s - 1] * k[f, c, r, s]\n}\n"
    "def d3(x : f32[P0, P1, P2, P3], w1 : f32[P1, P1, 3, 3], w2 : f32[P1, P1, 3, 3]) -> z {\n"
    "  a = d2(x, w1)\n  a2[n, c, h, w] = relu(a[n, c, h, w])\n  b = d2(a2, w2)\n"
    "  z[n, c, h, w] = relu(b[n, c, h, w] + x[n, c, h, w])\n}\n",
    /* 4: two outputs, a reduction with a where range */
    "def d4(x : f32[P0, P1]) -> lo, hi {\n  lo[i] += x[i, j] where j < P1 / 2 + 1\n"
    "  hi[i] max= x[i, j]\n}\n",
};

static void need_def(G *g, int which)
{
    if (!g->defs_done[which]) {
        g->defs_done[which] = true;
        put(&g->decl, "%s", def_text[which]);
    }
}

static void stmt_call(G *g)
{
    switch (pick(&g->r, 4)) {
    case 0: {
        need_def(g, 0);
        int64_t d[2] = {small_or(g, 4, 64), small_or(g, 4, 64)};
        Ten *x = random_tensor(g);
        if (x->rank != 2 || !x->f32 || chance(&g->r, 5))
            x = chance(&g->r, 3) ? x : declare_as(g, d, 2, false, true);   /* rank mistake */
        Ten *y = define(g, x->rank == 2 ? x->dim : d, 2);
        put(&g->body, "%s = d0(%s)\n", y->name, x->name);
        break;
    }
    case 1: {
        need_def(g, 1);
        int64_t a[2] = {small_or(g, 4, 64), small_or(g, 4, 64)}, b[2] = {a[1], small_or(g, 4, 64)};
        if (chance(&g->r, 3))
            b[0] = a[1] + 1;        /* a mistake: shape variables disagree */
        Ten *x = declare_as(g, a, 2, false, true), *w = declare_as(g, b, 2, true, true);
        int64_t c[2] = {a[0], b[1]};
        Ten *y = define(g, c, 2);
        put(&g->body, "%s = d1(%s, %s)\n", y->name, x->name, w->name);
        break;
    }
    case 2: {
        need_def(g, 2);
        int64_t xd[4] = {1, small_or(g, 3, 32), small_or(g, 5, 14), small_or(g, 5, 14)};
        int64_t kd[4] = {xd[1], xd[1], 3, 3};
        Ten *x = declare_as(g, xd, 4, false, true), *w1 = declare_as(g, kd, 4, true, true),
            *w2 = declare_as(g, kd, 4, true, true);
        Ten *z = define(g, xd, 4);
        put(&g->body, "%s = d3(%s, %s, %s)\n", z->name, x->name, w1->name, w2->name);
        break;
    }
    default: {
        need_def(g, 3);
        int64_t xd[2] = {small_or(g, 4, 64), small_or(g, 6, 64)}, rd[1] = {xd[0]};
        Ten *x = declare_as(g, xd, 2, false, true);
        Ten *lo = define(g, rd, 1), *hi = define(g, rd, 1);
        put(&g->body, "%s, %s = d4(%s)\n", lo->name, hi->name, x->name);
        break;
    }
    }
}

/* ---- the program --------------------------------------------------------------------- */

char *gen_ein(const uint8_t *data, size_t size, const GenOptions *opt, size_t *len,
              unsigned *choice)
{
    G *g = calloc(1, sizeof *g);
    if (!g)
        abort();
    g->r = (Rd){data, size, 0};
    g->opt = *opt;
    *choice = pick(&g->r, 65536);
    g->ncon = (int)pick(&g->r, 4);
    for (int i = 0; i < g->ncon; i++) {
        g->con[i] = 1 + (int64_t)pick(&g->r, g->opt.small ? 4 : 64);
        put(&g->decl, "const C%d = %lld\n", i, (long long)g->con[i]);
    }
    if (chance(&g->r, 10))
        put(&g->decl, "model fuzzed\n");
    int nbase = (int)pick(&g->r, 4);
    for (int i = 0; i < nbase; i++) {
        int64_t dim[MAXRANK];
        int rank = random_shape(g, dim);
        declare(g, dim, rank, chance(&g->r, 40));
    }
    /* mostly one to three statements (templates make several), at times
     * up to eight: small programs compile fast, and millions of them run */
    int nstmt = chance(&g->r, 6) ? 4 + (int)pick(&g->r, 5) : 1 + (int)pick(&g->r, 3);
    /* when the bytes run out the program ends (every later choice would
     * be 0: the same statement again and again) */
    for (int i = 0; i < nstmt && g->nt < MAXT - 8 && (i == 0 || g->r.at < g->r.n); i++) {
        switch (pick(&g->r, 24)) {
        case 10: case 11: stmt_conv(g); break;
        case 12: stmt_convt(g); break;
        case 13: case 14: stmt_matmul(g); break;
        case 15: stmt_band(g); break;
        case 16: stmt_pool(g); break;
        case 17: stmt_softmax(g); break;
        case 18: stmt_high_rank(g); break;
        case 19: stmt_reshape(g); break;
        case 20: stmt_siblings(g); break;
        case 21: stmt_chain(g); break;
        case 22: case 23: stmt_call(g); break;
        default: stmt_general(g); break;
        }
    }
    /* then, where bytes are left, at times repeated layers (drawn here, after
     * the statements, so that the inputs found before this template keep
     * their programs unless bytes were left over) */
    if (g->nt < MAXT - 16 && chance(&g->r, 12))
        stmt_layers(g);
    /* outputs: the last tensor defined, and some others */
    int last = -1;
    for (int i = 0; i < g->nt; i++)
        if (g->t[i].name[0] == 't')
            last = i;
    put(&g->body, "output ");
    if (last < 0) {
        /* nothing defined: copy the first input */
        int64_t one[1] = {1};
        Ten *x = g->nt ? &g->t[0] : declare(g, one, 1, false);
        put(&g->body, "%s\n", x->name);
    } else {
        put(&g->body, "%s", g->t[last].name);
        for (int i = 0; i < g->nt; i++)
            if (i != last && g->t[i].name[0] == 't' && chance(&g->r, 25))
                put(&g->body, ", %s", g->t[i].name);
        put(&g->body, "\n");
    }
    Out all = {0};
    put(&all, "%s%s", g->decl.s ? g->decl.s : "", g->body.s ? g->body.s : "");
    free(g->decl.s);
    free(g->body.s);
    free(g);
    *len = all.len;
    return all.s;
}
