/* block.c - the tensor statements of one scope (the file, or one inlined
 * def body): declare what they define (single assignment), order them so
 * that uses follow definitions (reporting cycles), check each, and warn
 * about tensors never used. */
#include "config.h"
#include "sema_int.h"

#include <string.h>

typedef struct Block {
    Sema *s;
    Scope *sc;
    const Stmt **st;                /* the defining statements */
    int n;
    int **outs;                     /* per statement: tensor ids, -1: none */
    GEdges *adj;                    /* statement -> statements it reads */
} Block;

static int nouts(const Stmt *st)
{
    return st->kind == ST_BIND ? st->bind.nouts : 1;
}

static Sym out_name(const Stmt *st, int k)
{
    return st->kind == ST_BIND ? st->bind.outs[k] : st->assign.name;
}

static Loc out_loc(const Stmt *st, int k)
{
    return st->kind == ST_BIND ? st->bind.out_locs[k] : st->assign.name_loc;
}

/* A name a statement defines is taken: say by what. */
static void taken(Sema *s, const Entry *en, Sym name, Loc loc)
{
    if (en->kind == ENT_TENSOR && en->def_stmt >= 0) {
        sema_error(s, loc, "redefinition of '%s'", sym_q(name));
        sema_note(s, en->loc, "previous definition of '%s' was here",
                  sym_q(name));
        return;
    }
    sema_error(s, loc, "cannot assign to %s '%s'", entry_what(s, en),
               sym_q(name));
    sema_note(s, en->loc, "'%s' is declared here", sym_q(name));
}

/* The tensor statement i defines under `name`: new, or a def output the
 * caller declared, or -1 after an error. */
static int declare_out(Block *b, int i, Sym name, Loc loc, const char *prefix)
{
    Sema *s = b->s;
    Entry *en = scope_find(b->sc, name);
    if (en && en->is_param_out && en->def_stmt < 0) {
        en->def_stmt = i;
        en->loc = loc;
        return en->tensor;
    }
    if (en) {
        taken(s, en, name, loc);
        return -1;
    }
    const char *full = prefix ? arena_printf(s->arena, "%s%s", prefix,
                                             sym_q(name))
                              : sym_q(name);
    STensor *t = tensor_new(s, full, name, TENSOR_DEFINED, loc);
    t->pending = true;
    en = scope_add(s->arena, b->sc, name, ENT_TENSOR, loc);
    en->tensor = t->c.id;
    en->def_stmt = i;
    return t->c.id;
}

static void declare_all(Block *b, const char *prefix)
{
    for (int i = 0; i < b->n; i++) {
        const Stmt *st = b->st[i];
        b->outs[i] = arena_alloc(b->s->arena, (size_t)nouts(st) * sizeof(int));
        for (int k = 0; k < nouts(st); k++) {
            int id = declare_out(b, i, out_name(st, k), out_loc(st, k), prefix);
            b->outs[i][k] = id;
            STensor *t = tensor_at(b->s, id);
            if (!t)
                continue;
            t->pending = true;
            t->c.loc = st->loc;
            t->c.rank = st->kind == ST_ASSIGN ? st->assign.nidx : -1;
        }
    }
}

/* ---- dependences ------------------------------------------------------ */

static void edge_to(Block *b, int from, Sym name, Loc loc)
{
    Entry *en = scope_find(b->sc, name);
    if (!en || en->kind != ENT_TENSOR || en->def_stmt < 0)
        return;
    GEdge e = {en->def_stmt, loc};
    vec_push(b->s->arena, &b->adj[from], e);
}

static void reads_of(Block *b, int from, const Expr *e)
{
    switch (e->kind) {
    case EX_ACCESS:
        edge_to(b, from, e->call.name, e->call.name_loc);
        /* fall through */
    case EX_CALL:
        for (int i = 0; i < e->call.nargs; i++)
            reads_of(b, from, e->call.args[i]);
        break;
    case EX_NEG:
    case EX_NOT:
        reads_of(b, from, e->operand);
        break;
    case EX_BIN:
        reads_of(b, from, e->bin.lhs);
        reads_of(b, from, e->bin.rhs);
        break;
    default:
        break;
    }
}

static void dependences(Block *b)
{
    for (int i = 0; i < b->n; i++) {
        const Stmt *st = b->st[i];
        if (st->kind == ST_BIND) {
            for (int k = 0; k < st->bind.nargs; k++)
                edge_to(b, i, st->bind.args[k], st->bind.arg_locs[k]);
            continue;
        }
        reads_of(b, i, st->assign.body);
        for (int k = 0; k < st->assign.nwhere; k++)
            reads_of(b, i, st->assign.where[k]);
    }
}

/* error at the first statement's name, a note at each read that closes
 * the circle: 'a' uses 'b' here, 'b' uses 'a' here. */
static void report_cycle(void *ctx, const int *nodes, const GEdge *edges,
                         int len)
{
    Block *b = ctx;
    Sema *s = b->s;
    const Stmt *first = b->st[nodes[0]];
    sema_error(s, out_loc(first, 0), "circular definition of '%s'",
               sym_q(out_name(first, 0)));
    for (int k = 0; k < len; k++) {
        const Stmt *from = b->st[nodes[k]];
        const Stmt *to = b->st[nodes[(k + 1) % len]];
        if (len == 1)
            sema_note(s, edges[k].loc, "'%s' uses itself here",
                      sym_q(out_name(from, 0)));
        else
            sema_note(s, edges[k].loc, "'%s' uses '%s' here",
                      sym_q(out_name(from, 0)), sym_q(out_name(to, 0)));
    }
}

/* ---- the block ---------------------------------------------------------- */

void block_check(Sema *s, Scope *sc, Stmt **stmts, int n, const char *prefix)
{
    Block b = {s, sc, NULL, 0, NULL, NULL};
    b.st = arena_alloc(s->arena, ((size_t)n + 1) * sizeof *b.st);
    for (int i = 0; i < n; i++) {
        if (stmts[i]->kind == ST_ASSIGN || stmts[i]->kind == ST_BIND)
            b.st[b.n++] = stmts[i];
        else if (prefix)
            sema_error(s, stmts[i]->loc, "a def body holds only tensor "
                       "statements and def calls");
    }
    b.outs = arena_alloc(s->arena, ((size_t)b.n + 1) * sizeof *b.outs);
    b.adj = arena_alloc(s->arena, ((size_t)b.n + 1) * sizeof *b.adj);
    declare_all(&b, prefix);
    dependences(&b);
    int *order = graph_order(s->arena, b.n, b.adj, report_cycle, &b);
    for (int k = 0; k < b.n; k++) {
        int i = order[k];
        if (b.st[i]->kind == ST_ASSIGN)
            stmt_check(s, sc, b.st[i], b.outs[i][0]);
        else
            bind_check(s, sc, b.st[i], b.outs[i]);
    }
}

void block_warn_unused(Sema *s, const Scope *sc, const Stmt *def)
{
    for (int i = 0; i < sc->ents.len; i++) {
        const Entry *en = sc->ents.data[i];
        if (en->used)
            continue;
        if (en->kind == ENT_PARAM) {
            sema_warn(s, en->loc, "unused", "parameter '%s' of '%s' is never "
                      "used", sym_q(en->name), sym_q(def->def.name));
            continue;
        }
        const STensor *t = tensor_at(s, en->tensor);
        if (en->kind != ENT_TENSOR || en->is_param_out || !t || t->poisoned ||
            t->c.is_output)
            continue;
        sema_warn(s, en->loc, "unused", "%s '%s' is never used",
                  entry_what(s, en), sym_q(en->name));
    }
}
