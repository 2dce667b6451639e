/* inline.c - defs: their signatures (checked once), recursion (refused:
 * every call is inlined), and each call  outs = f(args):  unify the
 * parameter shapes with the arguments' to bind the shape variables, then
 * check the body in a fresh scope where the parameters alias the
 * arguments, the outputs are the caller's tensors, and locals are named
 * "<first output>.<local>".  A def no call reaches is still checked, with
 * its shape variables unknown ("dry"), so its mistakes are not hidden. */
#include "config.h"
#include "sema_int.h"

#include <string.h>

static DefInfo *def_info(Sema *s, const Entry *de)
{
    for (int i = 0; i < s->definfo.len; i++)
        if (s->definfo.data[i]->st == de->stmt)
            return s->definfo.data[i];
    return NULL;
}

/* ---- signatures --------------------------------------------------------- */

static bool is_const_param(const Stmt *st, Sym name)
{
    for (int i = 0; i < st->def.nparams; i++)
        if (st->def.params[i].kind == PARAM_CONST && st->def.params[i].name == name)
            return true;
    return false;
}

static void gather_svars(Sema *s, DefInfo *d, const Expr *e)
{
    switch (e->kind) {
    case EX_NAME:
        if (is_const_param(d->st, e->name))
            return;                     /* bound by the call, not by a shape */
        for (int i = 0; i < d->nsvars; i++)
            if (d->svars[i] == e->name)
                return;
        d->svars[d->nsvars] = e->name;
        d->svar_locs[d->nsvars++] = e->loc;
        break;
    case EX_NEG:
    case EX_NOT:
        gather_svars(s, d, e->operand);
        break;
    case EX_BIN:
        gather_svars(s, d, e->bin.lhs);
        gather_svars(s, d, e->bin.rhs);
        break;
    default:
        break;
    }
}

static int count_names(const Expr *e)
{
    switch (e->kind) {
    case EX_NAME: return 1;
    case EX_NEG: case EX_NOT: return count_names(e->operand);
    case EX_BIN: return count_names(e->bin.lhs) + count_names(e->bin.rhs);
    default: return 0;
    }
}

static bool bare_somewhere(const Stmt *st, Sym v)
{
    for (int i = 0; i < st->def.nparams; i++)
        for (int k = 0; k < st->def.params[i].type.ndims; k++) {
            const Expr *e = st->def.params[i].type.dims[k];
            if (e->kind == EX_NAME && e->name == v)
                return true;
        }
    return false;
}

static int param_index(const Stmt *st, Sym name, int upto)
{
    for (int i = 0; i < upto; i++)
        if (st->def.params[i].name == name)
            return i;
    return -1;
}

/* Every dim must be an integer expression of the shape variables. */
static void check_dims(Sema *s, DefInfo *d)
{
    const Stmt *st = d->st;
    Scope *sc = scope_new(s->arena);
    for (int i = 0; i < d->nsvars; i++)
        scope_add(s->arena, sc, d->svars[i], ENT_SHAPEVAR, d->svar_locs[i]);
    for (int i = 0; i < st->def.nparams; i++)
        if (st->def.params[i].kind == PARAM_CONST && !scope_find(sc, st->def.params[i].name))
            scope_add(s->arena, sc, st->def.params[i].name, ENT_SHAPEVAR,
                      st->def.params[i].loc);
    int errors = s->errors;
    for (int i = 0; i < st->def.nparams; i++)
        for (int k = 0; k < st->def.params[i].type.ndims; k++) {
            int64_t v;
            if (const_eval(s, sc, st->def.params[i].type.dims[k], &v) && v < 1)
                sema_error(s, st->def.params[i].type.dims[k]->loc, "dimension "
                           "%d of parameter '%s' is %lld; a dimension must be "
                           "at least 1", k + 1, sym_q(st->def.params[i].name),
                           (long long)v);
        }
    d->bad |= s->errors != errors;
}

static void check_outs(Sema *s, DefInfo *d)
{
    const Stmt *st = d->st;
    for (int k = 0; k < st->def.nouts; k++) {
        Sym o = st->def.outs[k];
        for (int j = 0; j < k; j++)
            if (st->def.outs[j] == o) {
                sema_error(s, st->def.out_locs[k], "output '%s' of def '%s' "
                           "is listed twice", sym_q(o), sym_q(st->def.name));
                d->bad = true;
            }
        int p = param_index(st, o, st->def.nparams);
        if (p >= 0) {
            sema_error(s, st->def.out_locs[k], "output '%s' of def '%s' is "
                       "also a parameter", sym_q(o), sym_q(st->def.name));
            sema_note(s, st->def.params[p].loc, "parameter '%s' declared here",
                      sym_q(o));
            d->bad = true;
        }
        for (int i = 0; i < d->nsvars; i++)
            if (d->svars[i] == o) {
                sema_error(s, st->def.out_locs[k], "output '%s' of def '%s' is "
                           "also a shape variable", sym_q(o), sym_q(st->def.name));
                d->bad = true;
            }
    }
}

static DefInfo *def_signature(Sema *s, const Stmt *st)
{
    DefInfo *d = arena_alloc(s->arena, sizeof *d);
    d->st = st;
    int names = 0;
    for (int i = 0; i < st->def.nparams; i++) {
        const Param *p = &st->def.params[i];
        int j = param_index(st, p->name, i);
        if (j >= 0) {
            sema_error(s, p->loc, "duplicate parameter '%s' in def '%s'",
                       sym_q(p->name), sym_q(st->def.name));
            sema_note(s, st->def.params[j].loc, "first declared here");
            d->bad = true;
        }
        for (int k = 0; k < p->type.ndims; k++)
            names += count_names(p->type.dims[k]);
        if (p->kind == PARAM_SCALAR && p->type.elem != ELEM_F32) {
            sema_error(s, p->type.loc, "scalar parameter '%s' is %s; a scalar "
                       "parameter is an f32 number", sym_q(p->name),
                       elem_name(p->type.elem));
            d->bad = true;
        }
        if (p->kind == PARAM_TENSOR && p->dflt) {
            sema_error(s, p->dflt->loc, "tensor parameter '%s' cannot have a "
                       "default", sym_q(p->name));
            d->bad = true;
        }
    }
    d->svars = arena_alloc(s->arena, ((size_t)names + 1) * sizeof *d->svars);
    d->svar_locs = arena_alloc(s->arena, ((size_t)names + 1) * sizeof(Loc));
    for (int i = 0; i < st->def.nparams; i++)
        for (int k = 0; k < st->def.params[i].type.ndims; k++)
            gather_svars(s, d, st->def.params[i].type.dims[k]);
    for (int i = 0; i < d->nsvars; i++) {
        int p = param_index(st, d->svars[i], st->def.nparams);
        if (p >= 0) {
            sema_error(s, d->svar_locs[i], "'%s' is both a parameter and a "
                       "shape variable of '%s'", sym_q(d->svars[i]),
                       sym_q(st->def.name));
            d->bad = true;
        } else if (!bare_somewhere(st, d->svars[i])) {
            sema_error(s, d->svar_locs[i], "shape variable '%s' of '%s' is "
                       "never a whole dimension, so no call can bind it",
                       sym_q(d->svars[i]), sym_q(st->def.name));
            d->bad = true;
        }
    }
    check_dims(s, d);
    check_outs(s, d);
    return d;
}

static void collect(Sema *s, Stmt **stmts, int n, IntVec *files)
{
    for (int i = 0; i < n; i++) {
        const Stmt *st = stmts[i];
        if (st->kind == ST_IMPORT && st->import.stmts) {
            bool seen = false;
            for (int k = 0; k < files->len; k++)
                seen |= files->data[k] == st->import.file;
            if (!seen) {
                vec_push(s->arena, files, st->import.file);
                collect(s, st->import.stmts, st->import.nstmts, files);
            }
            continue;
        }
        if (st->kind != ST_DEF)
            continue;
        Entry *old = scope_find(s->defs, st->def.name);
        if (old) {
            sema_error(s, st->def.name_loc, "redefinition of def '%s'",
                       sym_q(st->def.name));
            sema_note(s, old->loc, "previous definition of '%s' was here",
                      sym_q(st->def.name));
            continue;
        }
        Entry *e = scope_add(s->arena, s->defs, st->def.name, ENT_DEF,
                             st->def.name_loc);
        e->stmt = st;
        vec_push(s->arena, &s->definfo, def_signature(s, st));
    }
}

void defs_collect(Sema *s, Stmt **stmts, int n)
{
    IntVec files = {0};
    collect(s, stmts, n, &files);
}

/* ---- recursion ---------------------------------------------------------- */

static void report_recursion(void *ctx, const int *nodes, const GEdge *edges,
                             int len)
{
    Sema *s = ctx;
    const Stmt *first = s->definfo.data[nodes[0]]->st;
    sema_error(s, first->def.name_loc, "def '%s' is recursive; defs are "
               "inlined and cannot call themselves", sym_q(first->def.name));
    for (int k = 0; k < len; k++) {
        const Stmt *from = s->definfo.data[nodes[k]]->st;
        const Stmt *to = s->definfo.data[nodes[(k + 1) % len]]->st;
        sema_note(s, edges[k].loc, "'%s' calls '%s' here", sym_q(from->def.name),
                  sym_q(to->def.name));
        s->definfo.data[nodes[k]]->recursive = true;
    }
}

void defs_check_recursion(Sema *s)
{
    int n = s->definfo.len;
    GEdges *adj = arena_alloc(s->arena, ((size_t)n + 1) * sizeof *adj);
    for (int i = 0; i < n; i++) {
        const Stmt *st = s->definfo.data[i]->st;
        for (int k = 0; k < st->def.nbody; k++) {
            const Stmt *b = st->def.body[k];
            if (b->kind != ST_BIND)
                continue;
            Entry *de = scope_find(s->defs, b->bind.callee);
            if (!de)
                continue;
            for (int j = 0; j < n; j++)
                if (s->definfo.data[j]->st == de->stmt) {
                    GEdge e = {j, b->bind.callee_loc};
                    vec_push(s->arena, &adj[i], e);
                }
        }
    }
    graph_order(s->arena, n, adj, report_recursion, s);
}

/* ---- unification ---------------------------------------------------------- */

typedef struct Call {
    const Stmt *st;                 /* the ST_BIND */
    const DefInfo *d;
    const Stmt *def;
    Scope *ds;                      /* the def's scope for this call */
    const int *argt;                /* argument tensor ids by parameter, -1: none */
    const int *argof;               /* parameter -> argument index, -1: default */
    bool *param_ok;                 /* argument matches its parameter */
    int *bound_by;                  /* shape variable -> argument binding it */
} Call;

static void param_note(Sema *s, const Param *p)
{
    sema_note(s, p->loc, "parameter '%s' declared here as %s", sym_q(p->name),
              type_text(s->arena, &p->type));
}

/* Where parameter i's argument is, and its name. */
static Loc arg_loc(const Call *c, int i)
{
    int a = c->argof ? c->argof[i] : -1;
    return a >= 0 ? c->st->bind.arg_locs[a] : c->def->def.params[i].loc;
}

static const char *arg_name(const Call *c, int i)
{
    int a = c->argof ? c->argof[i] : -1;
    return a >= 0 && c->st->bind.args[a] ? sym_q(c->st->bind.args[a])
                                         : sym_q(c->def->def.params[i].name);
}

static void mismatch(Sema *s, Call *c, int i, const char *why)
{
    const Param *p = &c->def->def.params[i];
    sema_error(s, arg_loc(c, i), "argument '%s' does not match "
               "parameter '%s' of '%s': %s", arg_name(c, i),
               sym_q(p->name), sym_q(c->def->def.name), why);
    param_note(s, p);
    c->param_ok[i] = false;
}

static int svar_index(const DefInfo *d, Sym name)
{
    for (int i = 0; i < d->nsvars; i++)
        if (d->svars[i] == name)
            return i;
    return -1;
}

/* Pass 1: rank, element type and the dims that are a bare shape variable. */
static void unify_bare(Sema *s, Call *c, int i)
{
    const Param *p = &c->def->def.params[i];
    if (p->kind != PARAM_TENSOR)
        return;
    const STensor *t = tensor_at(s, c->argt[i]);
    if (!t || t->poisoned || t->c.rank < 0) {
        c->param_ok[i] = false;
        return;
    }
    if (t->c.rank != p->type.ndims) {
        sema_error(s, arg_loc(c, i), "argument '%s' has rank %d, "
                   "but parameter '%s' of '%s' has rank %d",
                   arg_name(c, i), t->c.rank, sym_q(p->name),
                   sym_q(c->def->def.name), p->type.ndims);
        param_note(s, p);
        c->param_ok[i] = false;
        return;
    }
    if (t->c.elem != p->type.elem) {
        mismatch(s, c, i, arena_printf(s->arena, "its elements are %s, not %s",
                                       elem_name(t->c.elem),
                                       elem_name(p->type.elem)));
        return;
    }
    if (!tensor_shape_known(t))
        return;
    for (int k = 0; k < p->type.ndims; k++) {
        const Expr *dim = p->type.dims[k];
        int v = dim->kind == EX_NAME ? svar_index(c->d, dim->name) : -1;
        if (v < 0)
            continue;
        Entry *en = scope_find(c->ds, dim->name);
        if (!en->known) {
            en->known = true;
            en->value = t->c.shape[k];
            c->bound_by[v] = i;
        } else if (en->value != t->c.shape[k]) {
            mismatch(s, c, i, arena_printf(s->arena, "dimension %d is %lld, "
                     "but '%s' is %lld from argument '%s'", k + 1,
                     (long long)t->c.shape[k], sym_q(dim->name),
                     (long long)en->value, arg_name(c, c->bound_by[v])));
            return;
        }
    }
}

/* Pass 2: dims that are not shape variables (expressions, literals, const
 * parameters) are checked. */
static void unify_exprs(Sema *s, Call *c, int i)
{
    const Param *p = &c->def->def.params[i];
    if (p->kind != PARAM_TENSOR)
        return;
    const STensor *t = tensor_at(s, c->argt[i]);
    if (!c->param_ok[i] || !tensor_shape_known(t))
        return;
    for (int k = 0; k < p->type.ndims; k++) {
        const Expr *dim = p->type.dims[k];
        int64_t want;
        if ((dim->kind == EX_NAME && svar_index(c->d, dim->name) >= 0) ||
            !const_eval(s, c->ds, dim, &want) || want == t->c.shape[k])
            continue;
        const char *what = dim->kind == EX_INT
            ? arena_printf(s->arena, "%lld", (long long)want)
            : arena_printf(s->arena, "%s = %lld", expr_text(s->arena, dim),
                           (long long)want);
        mismatch(s, c, i, arena_printf(s->arena, "dimension %d is %lld, "
                 "expected %s", k + 1, (long long)t->c.shape[k], what));
        return;
    }
}

/* ---- inlining ------------------------------------------------------------- */

/* A stand-in tensor for a parameter whose argument did not match, or for
 * every parameter of a def checked without a call. */
static int placeholder(Sema *s, const Param *p, bool poisoned)
{
    STensor *t = tensor_new(s, sym_q(p->name), p->name, TENSOR_INPUT, p->loc);
    t->c.rank = p->type.ndims;
    t->c.elem = p->type.elem;
    t->poisoned = poisoned;
    return t->c.id;
}

static void inline_body(Sema *s, Call *c, const int *outs, const char *prefix)
{
    const Stmt *def = c->def;
    for (int i = 0; i < def->def.nparams; i++) {
        const Param *p = &def->def.params[i];
        if (p->kind != PARAM_TENSOR)
            continue;                           /* bound by bind_scalars */
        if (scope_find(c->ds, p->name))
            continue;                           /* reported by def_signature */
        Entry *e = scope_add(s->arena, c->ds, p->name, ENT_PARAM, p->loc);
        e->stmt = def;
        e->param = i;
        e->tensor = c->param_ok[i] ? c->argt[i] : placeholder(s, p, !s->dry);
    }
    for (int k = 0; k < def->def.nouts; k++) {
        Sym o = def->def.outs[k];
        if (scope_find(c->ds, o))
            continue;
        Entry *e = scope_add(s->arena, c->ds, o, ENT_TENSOR, def->def.out_locs[k]);
        e->is_param_out = true;
        e->tensor = outs[k];
    }
    /* what goes wrong in the body may depend on this call's shapes; what
     * is wrong with the def itself (below) does not */
    s->depth++;
    if (!s->dry)
        vec_push(s->arena, &s->calls, c->st);
    block_check(s, c->ds, def->def.body, def->def.nbody, prefix);
    if (!s->dry)
        s->calls.len--;
    s->depth--;
    for (int k = 0; k < def->def.nouts; k++) {
        Entry *e = scope_find(c->ds, def->def.outs[k]);
        if (!e->is_param_out || e->def_stmt >= 0)
            continue;
        sema_error(s, def->def.out_locs[k], "output '%s' of def '%s' is never "
                   "defined in its body", sym_q(e->name), sym_q(def->def.name));
        STensor *t = tensor_at(s, outs[k]);
        if (t)
            t->poisoned = true;
    }
    block_warn_unused(s, c->ds, def);
}

static void poison_outs(Sema *s, const Stmt *st, const int *outs)
{
    for (int k = 0; k < st->bind.nouts; k++) {
        STensor *t = tensor_at(s, outs[k]);
        if (t) {
            t->poisoned = true;
            t->pending = false;
        }
    }
}

/* Parameter -> argument: positional arguments first, then `key = value`
 * ones by name; a parameter without an argument takes its default.  NULL
 * after an error (reported). */
static int *map_args(Sema *s, const Stmt *st, const DefInfo *d)
{
    const Stmt *def = d->st;
    int np = def->def.nparams;
    int *argof = arena_alloc(s->arena, ((size_t)np + 1) * sizeof *argof);
    for (int i = 0; i < np; i++)
        argof[i] = -1;
    bool ok = true, keyed = false;
    int pos = 0;
    for (int a = 0; a < st->bind.nargs; a++) {
        Sym key = st->bind.arg_keys[a];
        int p = -1;
        if (!key) {
            if (keyed) {
                sema_error(s, st->bind.arg_locs[a], "positional argument after "
                           "'name = value' arguments in the call to '%s'",
                           sym_q(def->def.name));
                ok = false;
                continue;
            }
            p = pos++;
            if (p >= np) {
                sema_error(s, st->bind.callee_loc, "def '%s' takes %d argument%s, "
                           "but %d %s given", sym_q(def->def.name), np,
                           np == 1 ? "" : "s", st->bind.nargs,
                           st->bind.nargs == 1 ? "was" : "were");
                sema_note(s, def->def.name_loc, "'%s' is defined here",
                          sym_q(def->def.name));
                return NULL;
            }
        } else {
            keyed = true;
            p = param_index(def, key, np);
            if (p < 0) {
                Sym *cands = arena_alloc(s->arena, ((size_t)np + 1) * sizeof *cands);
                for (int i = 0; i < np; i++)
                    cands[i] = def->def.params[i].name;
                sema_error(s, st->bind.arg_locs[a], "def '%s' has no parameter "
                           "'%s'%s", sym_q(def->def.name), sym_q(key),
                           did_you_mean(s, key, cands, sema_may_suggest(s) ? np : 0));
                sema_note(s, def->def.name_loc, "'%s' is defined here",
                          sym_q(def->def.name));
                ok = false;
                continue;
            }
            if (argof[p] >= 0) {
                sema_error(s, st->bind.arg_locs[a], "parameter '%s' of '%s' is "
                           "given twice", sym_q(key), sym_q(def->def.name));
                ok = false;
                continue;
            }
        }
        argof[p] = a;
    }
    int missing = 0;
    for (int i = 0; i < np; i++)
        missing += argof[i] < 0 && !def->def.params[i].dflt;
    int defaults = 0;
    for (int i = 0; i < np; i++)
        defaults += def->def.params[i].dflt != NULL;
    if (ok && missing) {
        if (!keyed && !defaults) {
            sema_error(s, st->bind.callee_loc, "def '%s' takes %d argument%s, "
                       "but %d %s given", sym_q(def->def.name), np,
                       np == 1 ? "" : "s", st->bind.nargs,
                       st->bind.nargs == 1 ? "was" : "were");
        } else {
            for (int i = 0; i < np; i++)
                if (argof[i] < 0 && !def->def.params[i].dflt)
                    sema_error(s, st->bind.callee_loc, "the call to '%s' gives "
                               "no argument for parameter '%s'",
                               sym_q(def->def.name), sym_q(def->def.params[i].name));
        }
        sema_note(s, def->def.name_loc, "'%s' is defined here", sym_q(def->def.name));
        ok = false;
    }
    return ok ? argof : NULL;
}

/* The caller's tensors named as arguments of tensor parameters (by
 * parameter); -1 after an error or for another parameter. */
static int *bind_args(Sema *s, Scope *sc, const Stmt *st, const DefInfo *d,
                      const int *argof)
{
    int np = d->st->def.nparams;
    int *argt = arena_alloc(s->arena, ((size_t)np + 1) * sizeof *argt);
    for (int i = 0; i < np; i++) {
        const Param *p = &d->st->def.params[i];
        int a = argof[i];
        argt[i] = -1;
        if (p->kind != PARAM_TENSOR || a < 0)
            continue;
        Sym name = st->bind.args[a];
        if (!name) {
            sema_error(s, st->bind.arg_locs[a], "argument %d of the call to "
                       "'%s' must be a tensor name (parameter '%s' is a tensor)",
                       a + 1, sym_q(d->st->def.name), sym_q(p->name));
            continue;
        }
        Entry *en = scope_find(sc, name);
        if (en && (en->kind == ENT_TENSOR || en->kind == ENT_PARAM)) {
            en->used = true;
            argt[i] = en->tensor;
        } else if (en) {
            sema_error(s, st->bind.arg_locs[a], "%s '%s' is not a tensor",
                       entry_what(s, en), sym_q(name));
            sema_note(s, en->loc, "'%s' is defined here", sym_q(name));
        } else {
            unknown_tensor(s, sc, name, st->bind.arg_locs[a], "");
        }
    }
    return argt;
}

/* The constant and scalar parameters of a call, in its scope: an argument
 * is evaluated in the caller's scope, a default in the file's (so a
 * default may name the file's constants). */
static void bind_scalars(Sema *s, Scope *caller, Call *c)
{
    const Stmt *def = c->def;
    for (int i = 0; i < def->def.nparams; i++) {
        const Param *p = &def->def.params[i];
        if (p->kind == PARAM_TENSOR || scope_find(c->ds, p->name))
            continue;
        int a = c->argof ? c->argof[i] : -1;
        const Expr *e = a >= 0 ? c->st->bind.arg_exprs[a] : p->dflt;
        const Scope *where = a >= 0 ? caller : s->globals;
        Entry *en = scope_add(s->arena, c->ds, p->name,
                              p->kind == PARAM_CONST ? ENT_CONST : ENT_REAL, p->loc);
        en->used = true;
        if (s->dry && a < 0) {
            /* an uncalled def: its constants are unknown, its reals 1 */
            en->known = p->kind == PARAM_SCALAR;
            en->rvalue = 1;
            continue;
        }
        if (p->kind == PARAM_CONST)
            en->known = const_eval(s, where, e, &en->value);
        else
            en->known = real_const_eval(s, where, e, &en->rvalue);
    }
}

/* The def a call names, or NULL (reported unless the def is known bad). */
static DefInfo *callee(Sema *s, const Stmt *st)
{
    Entry *de = scope_find(s->defs, st->bind.callee);
    if (!de && func_is(st->bind.callee)) {
        /* relu(x) of a whole tensor: the function applies to elements */
        const char *f = sym_q(st->bind.callee);
        const char *x = st->bind.nargs > 0 && st->bind.args[0] ? sym_q(st->bind.args[0]) : "x";
        sema_error(s, st->bind.callee_loc, "'%s' is a function of elements, not a def; "
                   "apply it to each element, as in '%s[i] = %s(%s[i])'", f,
                   sym_q(st->bind.outs[0]), f, x);
        return NULL;
    }
    if (!de) {
        /* the defs and the shape operations (conact: concat) */
        Sym *cands = NULL;
        int n = 0;
        if (sema_may_suggest(s)) {
            Sym *defs;
            int nd = scope_names(s->arena, s->defs, 1u << ENT_DEF, &defs);
            cands = arena_alloc(s->arena, ((size_t)nd + SHAPEOP_COUNT) * sizeof *cands);
            for (; n < nd; n++)
                cands[n] = defs[n];
            for (int i = 0; i < SHAPEOP_COUNT; i++)
                cands[n++] = sym_intern_cstr(shapeop_names[i]);
        }
        sema_error(s, st->bind.callee_loc, "unknown def '%s'%s",
                   sym_q(st->bind.callee), did_you_mean(s, st->bind.callee,
                                                        cands, n));
        return NULL;
    }
    DefInfo *d = def_info(s, de);
    const Stmt *def = d->st;
    if (d->bad || d->recursive)
        return NULL;
    if (st->bind.nouts != def->def.nouts) {
        sema_error(s, st->bind.out_locs[0], "def '%s' returns %d tensor%s, but "
                   "%d %s bound", sym_q(def->def.name), def->def.nouts,
                   def->def.nouts == 1 ? "" : "s", st->bind.nouts,
                   st->bind.nouts == 1 ? "is" : "are");
        sema_note(s, def->def.name_loc, "'%s' is defined here",
                  sym_q(def->def.name));
        return NULL;
    }
    return d;
}

static bool too_big(Sema *s, const Stmt *st)
{
    if (s->depth >= SEMA_MAX_INLINE_DEPTH) {
        sema_error(s, st->bind.callee_loc, "defs nested more than %d deep",
                   SEMA_MAX_INLINE_DEPTH);
        return true;
    }
    if (s->tensors.len < SEMA_MAX_TENSORS)
        return false;
    if (!s->too_big)
        sema_error(s, st->bind.callee_loc, "inlining the defs makes more than "
                   "%d tensors", SEMA_MAX_TENSORS);
    s->too_big = true;
    return true;
}

static Call call_new(Sema *s, const Stmt *st, DefInfo *d, const int *argt,
                     const int *argof)
{
    Call c = {st, d, d->st, scope_new(s->arena), argt, argof, NULL, NULL};
    c.param_ok = arena_alloc(s->arena, ((size_t)d->st->def.nparams + 1) *
                                           sizeof *c.param_ok);
    c.bound_by = arena_alloc(s->arena, ((size_t)d->nsvars + 1) * sizeof(int));
    for (int i = 0; i < d->st->def.nparams; i++)
        c.param_ok[i] = argt[i] >= 0 || d->st->def.params[i].kind != PARAM_TENSOR;
    for (int i = 0; i < d->nsvars; i++)
        scope_add(s->arena, c.ds, d->svars[i], ENT_SHAPEVAR, d->svar_locs[i]);
    return c;
}

void bind_check(Sema *s, Scope *sc, const Stmt *st, const int *outs)
{
    if (!scope_find(s->defs, st->bind.callee) && shapeop_is(st->bind.callee)) {
        shapeop_check(s, sc, st, outs);
        return;
    }
    int errors = s->errors;
    DefInfo *d = callee(s, st);
    int *argof = d ? map_args(s, st, d) : NULL;
    int *argt = argof ? bind_args(s, sc, st, d, argof) : NULL;
    if (!argt)          /* no -Wunused for what a broken call names */
        for (int a = 0; a < st->bind.nargs; a++) {
            Entry *en = st->bind.args[a] ? scope_find(sc, st->bind.args[a]) : NULL;
            if (en)
                en->used = true;
        }
    if (!argt || s->dry || too_big(s, st)) {
        /* A dry check stops at calls: the callee gets its own check. */
        poison_outs(s, st, outs);
        return;
    }
    Call c = call_new(s, st, d, argt, argof);
    bind_scalars(s, sc, &c);
    for (int i = 0; i < st->bind.nargs; i++)
        unify_bare(s, &c, i);
    for (int i = 0; i < st->bind.nargs; i++)
        unify_exprs(s, &c, i);
    const STensor *first = tensor_at(s, outs[0]);
    const char *prefix = arena_printf(s->arena, "%s.", first ? first->c.name
                                      : sym_q(st->bind.outs[0]));
    d->called = true;
    inline_body(s, &c, outs, prefix);
    if (s->errors != errors)
        poison_outs(s, st, outs);
}

/* ---- defs no call reached ------------------------------------------------- */

static void check_dry(Sema *s, DefInfo *d)
{
    const Stmt *def = d->st;
    int *argt = arena_alloc(s->arena, ((size_t)def->def.nparams + 1) * sizeof(int));
    int *outs = arena_alloc(s->arena, ((size_t)def->def.nouts + 1) * sizeof(int));
    for (int i = 0; i < def->def.nparams; i++)
        argt[i] = def->def.params[i].kind == PARAM_TENSOR
                      ? placeholder(s, &def->def.params[i], false) : -1;
    for (int k = 0; k < def->def.nouts; k++) {
        STensor *t = tensor_new(s, sym_q(def->def.outs[k]), def->def.outs[k],
                                TENSOR_DEFINED, def->def.out_locs[k]);
        t->pending = true;
        outs[k] = t->c.id;
    }
    Stmt call = {.kind = ST_BIND, .loc = def->loc};
    Call c = call_new(s, &call, d, argt, NULL);
    bind_scalars(s, NULL, &c);
    inline_body(s, &c, outs, arena_printf(s->arena, "%s.", sym_q(def->def.name)));
}

void defs_check_uncalled(Sema *s)
{
    s->dry = true;
    for (int i = 0; i < s->definfo.len; i++) {
        DefInfo *d = s->definfo.data[i];
        if (!d->called && !d->bad && !d->recursive)
            check_dry(s, d);
    }
    s->dry = false;
}
