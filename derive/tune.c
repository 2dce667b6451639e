/* tune.c - operator keys and the tuning database (cost.h): measured
 * times that replace the cost model's estimates (einc --tune-db), as
 * written by the program of einc --emit=tuner. */
#include "config.h"
#include "tune.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

/* ---- a growing malloc'ed string ------------------------------------------ */

typedef struct Str {
    char *s;
    size_t len, cap;
} Str;

static void str_add(Str *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void str_add(Str *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (b->len + (size_t)n + 1 > b->cap) {
        b->cap = (b->len + (size_t)n + 1) * 2;
        b->s = xrealloc(b->s, b->cap);
    }
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

/* ---- canonical text of a stage --------------------------------------------
 * Variables are named by where they are bound (l0, l1 .. the loops, s0 ..
 * the sums; nested stages add a level: l1.0), tensors by first use (t0,
 * t1 ..), so the text does not depend on ids or names.  Terms of an index
 * expression are sorted by their text. */

#define KEY_MAX_VARS 256
#define KEY_MAX_TENSORS 64

typedef struct Canon {
    struct { int id; char name[24]; } vars[KEY_MAX_VARS];
    int nvars;
    const IrTensor *tensors[KEY_MAX_TENSORS];
    int ntensors;
    int depth;
} Canon;

static void bind_vars(Canon *c, const IrVar *v, int n, char kind)
{
    for (int i = 0; i < n && c->nvars < KEY_MAX_VARS; i++) {
        c->vars[c->nvars].id = v[i].id;
        if (c->depth)
            snprintf(c->vars[c->nvars].name, sizeof c->vars[0].name, "%c%d.%d", kind,
                     c->depth, i);
        else
            snprintf(c->vars[c->nvars].name, sizeof c->vars[0].name, "%c%d", kind, i);
        c->nvars++;
    }
}

static const char *var_name(const Canon *c, int id)
{
    for (int i = c->nvars - 1; i >= 0; i--)
        if (c->vars[i].id == id)
            return c->vars[i].name;
    return "?";
}

static int tensor_no(Canon *c, const IrTensor *t)
{
    for (int i = 0; i < c->ntensors; i++)
        if (c->tensors[i] == t)
            return i;
    if (c->ntensors < KEY_MAX_TENSORS)
        c->tensors[c->ntensors++] = t;
    return c->ntensors - 1;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void put_ix(Canon *c, Str *b, const Ix *x)
{
    char **terms = xmalloc((size_t)(x->n + 1) * sizeof *terms);
    for (int i = 0; i < x->n; i++) {
        const IxTerm *t = &x->t[i];
        Str ts = {0};
        str_add(&ts, "%lld*", (long long)t->coef);
        if (t->kind == IX_VAR) {
            str_add(&ts, "%s", var_name(c, t->var));
        } else {
            str_add(&ts, "(");
            put_ix(c, &ts, t->arg);
            str_add(&ts, ")%c%lld", t->kind == IX_DIV ? '/' : '%', (long long)t->d);
        }
        terms[i] = ts.s;
    }
    qsort(terms, (size_t)x->n, sizeof *terms, cmp_str);
    str_add(b, "%lld", (long long)x->c);
    for (int i = 0; i < x->n; i++) {
        str_add(b, "+%s", terms[i]);
        free(terms[i]);
    }
    free(terms);
}

static void put_stage(Canon *c, Str *b, const Stage *s);

static void put_expr(Canon *c, Str *b, const IExpr *e)
{
    static const char *const ops[] = {
        [IE_ADD] = "add", [IE_SUB] = "sub", [IE_MUL] = "mul", [IE_DIV] = "div",
        [IE_AND] = "and", [IE_OR] = "or",
    };
    switch (e->kind) {
    case IE_CONST:
        str_add(b, "%.17g", e->value);
        return;
    case IE_INDEX:
        str_add(b, "ix(");
        put_ix(c, b, e->ix);
        str_add(b, ")");
        return;
    case IE_ACCESS:
        if (e->access.tensor) {
            str_add(b, "t%d[", tensor_no(c, e->access.tensor));
        } else {
            str_add(b, "{");
            put_stage(c, b, e->access.stage);
            str_add(b, "}[");
        }
        for (int i = 0; i < e->access.nidx; i++) {
            str_add(b, i ? "," : "");
            put_ix(c, b, e->access.idx[i]);
        }
        str_add(b, "]");
        return;
    case IE_NEG:
    case IE_NOT:
        str_add(b, "%s(", e->kind == IE_NEG ? "neg" : "not");
        put_expr(c, b, e->bin.a);
        str_add(b, ")");
        return;
    case IE_CALL:
        str_add(b, "fn%d(", (int)e->call.fn);
        for (int i = 0; i < e->call.nargs; i++) {
            str_add(b, i ? "," : "");
            put_expr(c, b, e->call.args[i]);
        }
        str_add(b, ")");
        return;
    case IE_CMP:
        str_add(b, "cmp%d(", (int)e->bin.op);
        put_expr(c, b, e->bin.a);
        str_add(b, ",");
        put_expr(c, b, e->bin.b);
        str_add(b, ")");
        return;
    case IE_ICMP:
        str_add(b, "icmp%d(", (int)e->icmp.op);
        put_ix(c, b, e->icmp.ix);
        str_add(b, ")");
        return;
    default:
        str_add(b, "%s(", ops[e->kind] ? ops[e->kind] : "?");
        put_expr(c, b, e->bin.a);
        str_add(b, ",");
        put_expr(c, b, e->bin.b);
        str_add(b, ")");
        return;
    }
}

static void put_ranges(Str *b, const char *tag, const IrVar *v, int n)
{
    str_add(b, "%s<", tag);
    for (int i = 0; i < n; i++)
        str_add(b, "%s%lld:%lld", i ? "," : "", (long long)v[i].lo, (long long)v[i].hi);
    str_add(b, ">");
}

static void put_stage(Canon *c, Str *b, const Stage *s)
{
    int mark = c->nvars;
    bind_vars(c, s->loops, s->nloops, 'l');
    bind_vars(c, s->sums, s->nsums, 's');
    c->depth++;
    str_add(b, "%s ", reduce_str(s->red));
    put_ranges(b, "L", s->loops, s->nloops);
    put_ranges(b, " S", s->sums, s->nsums);
    for (int i = 0; i < s->nguards; i++) {
        str_add(b, i ? "," : " where ");
        put_expr(c, b, s->guards[i]);
    }
    str_add(b, " ");
    put_expr(c, b, s->body);
    c->depth--;
    c->nvars = mark;
}

static void put_type(Str *b, const IrTensor *t)
{
    str_add(b, "%s[", elem_name(t->elem));
    for (int d = 0; d < t->rank; d++)
        str_add(b, "%s%lld", d ? "," : "", (long long)t->shape[d]);
    str_add(b, "]");
}

char *cost_op_key(Arena *a, const Stage *s, const OpMatch *m, Precision prec)
{
    Str b = {0};
    if (m && m->kind != OPK_KERNEL) {
        str_add(&b, "%s %s %s,%s", op_kind_name(m->kind), cost_precision_name(prec),
                elem_name(m->in[0]->elem), elem_name(m->in[1]->elem));
        OpDim d[OP_MAX_DIMS];
        int nd = match_dims(m, d);
        for (int i = 0; i < nd; i++)
            str_add(&b, " %s=%lld", d[i].name, (long long)d[i].value);
    } else {
        Canon *c = xcalloc(1, sizeof *c);
        Str body = {0};
        put_stage(c, &body, s);
        str_add(&b, "kernel");
        for (int i = 0; i < c->ntensors; i++) {
            str_add(&b, " t%d=", i);
            put_type(&b, c->tensors[i]);
        }
        str_add(&b, " %s", body.s);
        free(body.s);
        free(c);
    }
    if (!a)
        return b.s;
    char *r = arena_strdup(a, b.s);
    free(b.s);
    return r;
}

/* ---- the database ------------------------------------------------------- */

typedef struct Entry {
    const char *key;
    double seconds;
    Loc loc;
} Entry;

struct TuneDb {
    const char *device;
    Entry *slots;               /* open addressing; key NULL: empty */
    int cap, count;
};

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static Entry *find_slot(const TuneDb *db, const char *key)
{
    uint64_t h = hash_str(key);
    for (int i = 0;; i++) {
        Entry *e = &db->slots[(h + (uint64_t)i) & (uint64_t)(db->cap - 1)];
        if (!e->key || strcmp(e->key, key) == 0)
            return e;
    }
}

static void grow(Arena *a, TuneDb *db)
{
    Entry *old = db->slots;
    int ocap = db->cap;
    db->cap = ocap ? ocap * 2 : 64;
    db->slots = arena_alloc(a, (size_t)db->cap * sizeof *db->slots);
    for (int i = 0; i < ocap; i++)
        if (old[i].key)
            *find_slot(db, old[i].key) = old[i];
}

const char *tune_db_device(const TuneDb *db)
{
    return db->device;
}

int tune_db_count(const TuneDb *db)
{
    return db->count;
}

double tune_db_lookup(const TuneDb *db, const char *key)
{
    if (!db->count)
        return -1;
    const Entry *e = find_slot(db, key);
    return e->key ? e->seconds : -1;
}

static bool blank(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\r';
}

static Loc span(int file, const char *text, const char *from, const char *to)
{
    if (to <= from)
        to = from + 1;
    return (Loc){file, (int32_t)(from - text), (int32_t)(to - text)};
}

/* The end of the word at p. */
static const char *word_end(const char *p, const char *end)
{
    while (p < end && !blank(*p))
        p++;
    return p;
}

static const char *skip_blanks(const char *p, const char *end)
{
    while (p < end && blank(*p))
        p++;
    return p;
}

static bool word_is(const char *p, const char *e, const char *w)
{
    return (size_t)(e - p) == strlen(w) && strncmp(p, w, (size_t)(e - p)) == 0;
}


/* A word of the file as a message quotes it: at most 40 bytes (then
 * "..."), bytes that are not printable ASCII as \xNN. */
static const char *shown(Arena *a, const char *p, const char *e)
{
    size_t n = (size_t)(e - p), cut = n > 40 ? 40 : n;
    char *out = arena_alloc(a, cut * 4 + 4), *o = out;
    for (size_t i = 0; i < cut; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c >= 0x20 && c < 0x7f)
            *o++ = (char)c;
        else
            o += sprintf(o, "\\x%02x", c);
    }
    strcpy(o, n > cut ? "..." : "");
    return out;
}

static TuneDb *parse(Arena *a, int file, const char *device)
{
    const SrcFile *sf = src_get(file);
    const char *text = sf->text, *end = text + sf->len;
    int errors = diag_error_count();
    TuneDb *db = arena_alloc(a, sizeof *db);
    grow(a, db);
    bool header = false;
    Loc device_loc = LOC_NONE;
    for (const char *line = text; line < end;) {
        const char *eol = memchr(line, '\n', (size_t)(end - line));
        if (!eol)
            eol = end;
        const char *p = skip_blanks(line, eol), *stop = eol;
        while (stop > p && blank(stop[-1]))
            stop--;
        const char *next = eol < end ? eol + 1 : end;
        if (p == stop || *p == '#') {
            line = next;
            continue;
        }
        const char *we = word_end(p, stop);
        if (!header) {
            if (!word_is(p, we, "einc-tune")) {
                diag_error(span(file, text, p, we), "expected 'einc-tune 1' on the first "
                           "line of a tuning database");
                return NULL;
            }
            const char *v = skip_blanks(we, stop), *ve = word_end(v, stop);
            if (v == stop) {
                diag_error(span(file, text, p, we), "expected a version number after "
                           "'einc-tune'");
                return NULL;
            }
            if (!word_is(v, ve, "1") || ve != stop) {
                diag_error(span(file, text, v, stop), "unsupported tuning database version "
                           "'%s' (einc reads version 1)", shown(a, v, stop));
                return NULL;
            }
            header = true;
            line = next;
            continue;
        }
        /* A NUL would cut the key or the device name short where they are
         * copied as C strings. */
        const char *nul = memchr(p, 0, (size_t)(stop - p));
        if (nul) {
            diag_error(span(file, text, nul, nul + 1), "a NUL byte in a line of a tuning "
                       "database");
            line = next;
            continue;
        }
        if (word_is(p, we, "device")) {
            const char *v = skip_blanks(we, stop), *ve = word_end(v, stop);
            if (v == stop || ve != stop) {
                diag_error(span(file, text, v == stop ? p : v, stop),
                           "expected one device name after 'device'");
            } else if (device_loc.file >= 0) {
                diag_error(span(file, text, p, stop), "a second 'device' line");
                diag_note(device_loc, "the first is here");
            } else {
                device_loc = span(file, text, v, ve);
                db->device = arena_printf(a, "%.*s", (int)(ve - v), v);
                if (device && strcmp(db->device, device) != 0)
                    diag_error(device_loc, "these times were measured for the device '%s', "
                               "not '%s' (use --device=%s)", shown(a, v, ve), device,
                               shown(a, v, ve));
            }
            line = next;
            continue;
        }
        /* The whole word is the number: a long one is copied whole, not
         * cut to the buffer, and strtod must not skip white space that is
         * not a blank here (\v, \f). */
        char *num_end;
        char buf[64], *num = buf;
        size_t wl = (size_t)(we - p);
        if (wl >= sizeof buf)
            num = arena_alloc(a, wl + 1);
        memcpy(num, p, wl);
        num[wl] = 0;
        double us = strtod(num, &num_end);
        if (num_end != num + wl || isspace((unsigned char)*num)) {
            diag_error(span(file, text, p, we), "expected 'MICROSECONDS KEY' or 'device "
                       "NAME', not '%s'", shown(a, p, we));
            line = next;
            continue;
        }
        if (!isfinite(us) || us < 0) {
            diag_error(span(file, text, p, we), "the time '%s' is not a finite number of "
                       "microseconds >= 0", shown(a, p, we));
            line = next;
            continue;
        }
        const char *k = skip_blanks(we, stop);
        if (k == stop) {
            diag_error(span(file, text, p, we), "missing the operator key after the time");
            line = next;
            continue;
        }
        if (device_loc.file < 0) {
            diag_error(span(file, text, p, stop), "an operator before the 'device' line");
            device_loc = span(file, text, p, p);   /* say it once */
        }
        char *key = arena_printf(a, "%.*s", (int)(stop - k), k);
        if ((db->count + 1) * 2 > db->cap)
            grow(a, db);
        Entry *e = find_slot(db, key);
        if (e->key) {
            diag_error(span(file, text, k, stop), "a second time for the same operator");
            diag_note(e->loc, "the first is here");
        } else {
            *e = (Entry){key, us * 1e-6, span(file, text, k, stop)};
            db->count++;
        }
        line = next;
    }
    if (!header) {
        diag_error(span(file, text, text, text), "empty tuning database: expected "
                   "'einc-tune 1' on its first line");
        return NULL;
    }
    if (!db->device && diag_error_count() == errors)
        diag_error(span(file, text, end > text ? end - 1 : text, end),
                   "no 'device NAME' line in the tuning database");
    return diag_error_count() == errors ? db : NULL;
}

TuneDb *tune_db_load(Arena *a, const char *path, const char *device)
{
    int file = src_load(path, LOC_NONE);
    if (file < 0)
        return NULL;
    return parse(a, file, device);
}

TuneDb *tune_db_parse(Arena *a, const char *path, const char *text, size_t len,
                      const char *device)
{
    return parse(a, src_add(path, text, len), device);
}

/* ---- the tuner's program ---------------------------------------------------- */

/* The inputs of the operators: stand-ins shared by every operator that
 * reads a tensor of the same type and shape (their values are random
 * anyway), but distinct within one operator, so that no operator reads
 * one buffer twice where the program reads two tensors. */
typedef struct Retarget {
    IrCtx *cx;
    VEC(IrTensor *) pool;           /* every stand-in, by id */
    VEC(const IrTensor *) from;     /* this operator's tensors ... */
    VEC(IrTensor *) to;             /* ... and their stand-ins */
} Retarget;

static bool same_type(const IrTensor *a, const IrTensor *b)
{
    if (a->elem != b->elem || a->rank != b->rank)
        return false;
    for (int d = 0; d < a->rank; d++)
        if (a->shape[d] != b->shape[d])
            return false;
    return true;
}

static IrTensor *stand_in(Retarget *r, const IrTensor *t)
{
    Arena *a = ir_arena(r->cx);
    for (int i = 0; i < r->from.len; i++)
        if (r->from.data[i] == t)
            return r->to.data[i];
    IrTensor *in = NULL;
    for (int i = 0; i < r->pool.len && !in; i++) {
        if (!same_type(r->pool.data[i], t))
            continue;
        in = r->pool.data[i];
        for (int j = 0; j < r->to.len; j++)
            if (r->to.data[j] == in)
                in = NULL;
    }
    if (!in) {
        in = arena_alloc(a, sizeof *in);
        in->id = r->pool.len;
        in->name = arena_printf(a, "in%d", r->pool.len);
        in->kind = IT_INPUT;
        in->elem = t->elem;
        in->rank = t->rank;
        in->shape = t->shape;
        in->loc = t->loc;
        vec_push(a, &r->pool, in);
    }
    vec_push(a, &r->from, t);
    vec_push(a, &r->to, in);
    return in;
}

static const IExpr *retarget_access(void *arg, const IExpr *e)
{
    Retarget *r = arg;
    if (!e->access.tensor)
        return e;
    return ir_access_tensor(r->cx, stand_in(r, e->access.tensor), e->access.idx,
                            e->access.nidx);
}

typedef struct TuneOp {
    const PlanOp *op;
    const char *key;
    const Stage *stage;             /* over the stand-ins */
} TuneOp;
typedef VEC(TuneOp) TuneOps;

static void add_op(Retarget *r, TuneOps *ops, const PlanOp *op, const CostModel *cm)
{
    Arena *a = ir_arena(r->cx);
    if (op->out->weight_only || op->out->kind != IT_STAGE)
        return;
    const char *key = cost_op_key(a, op->stage, &op->op, cm->precision);
    for (int i = 0; i < ops->len; i++)
        if (strcmp(ops->data[i].key, key) == 0)
            return;
    const Stage *s = op->stage;
    r->from.len = r->to.len = 0;
    const IExpr **g = arena_alloc(a, (size_t)(s->nguards + 1) * sizeof *g);
    for (int i = 0; i < s->nguards; i++)
        g[i] = ir_map_access(r->cx, s->guards[i], retarget_access, r);
    const IExpr *body = ir_map_access(r->cx, s->body, retarget_access, r);
    TuneOp t = {op, key, ir_stage(r->cx, s->red, s->loops, s->nloops, s->sums, s->nsums,
                                  g, s->nguards, body)};
    vec_push(a, ops, t);
}

IrProgram *tune_program(IrCtx *cx, const Derived *d, const CostModel *cm,
                        const char *const **keys)
{
    Arena *a = ir_arena(cx);
    Retarget r = {cx, {0}, {0}, {0}};
    TuneOps ops = {0};
    /* what the chosen plan runs (fused kernels included), then every
     * operator of every candidate kept */
    const IrProgram *p = d->plan->prog;
    for (int i = 0; i < p->ntensors; i++)
        if (p->tensors[i]->kind == IT_STAGE)
            add_op(&r, &ops, &d->plan->ops[i], cm);
    for (int k = 0; k < d->nds; k++)
        for (int c = 0; c < d->ds[k].res.cands.len; c++) {
            const Pieces *pc = &d->ds[k].res.cands.data[c].pieces;
            for (int j = 0; j < pc->ops.len; j++)
                add_op(&r, &ops, &pc->ops.data[j], cm);
        }
    IrProgram *tp = arena_alloc(a, sizeof *tp);
    tp->cx = cx;
    tp->model = p->model;
    tp->ntensors = r.pool.len + ops.len;
    tp->tensors = arena_alloc(a, (size_t)(tp->ntensors + 1) * sizeof *tp->tensors);
    tp->noutputs = ops.len;
    tp->outputs = arena_alloc(a, (size_t)(ops.len + 1) * sizeof *tp->outputs);
    const char **k = arena_alloc(a, (size_t)(tp->ntensors + 1) * sizeof *k);
    for (int i = 0; i < r.pool.len; i++)
        tp->tensors[i] = r.pool.data[i];
    for (int i = 0; i < ops.len; i++) {
        const PlanOp *op = ops.data[i].op;
        IrTensor *t = arena_alloc(a, sizeof *t);
        int id = r.pool.len + i;
        t->id = id;
        t->name = arena_printf(a, "op%d", i);
        t->kind = IT_STAGE;
        t->elem = op->out->elem;
        t->rank = op->out->rank;
        t->shape = op->out->shape;
        t->loc = op->out->loc;
        t->is_output = true;
        t->stage = ops.data[i].stage;
        tp->tensors[id] = t;
        tp->outputs[i] = id;
        k[id] = ops.data[i].key;
    }
    *keys = k;
    return tp;
}
