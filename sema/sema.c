/* sema.c - the entry point: sema_check() runs the checks in order
 *   -D, constants, defs (signatures, recursion), inputs and weights,
 *   the file's tensor statements (defs inlined at each call), outputs,
 *   -Wunused, defs no call reached,
 * and assembles the checked program when no error was reported. */
#include "config.h"
#include "sema_int.h"

#include <string.h>

/* input x : f32[..] / weight w : f32[..] of the main file. */
static void decl_check(Sema *s, const Stmt *st)
{
    Sym name = st->decl.name;
    Entry *old = scope_find(s->globals, name);
    if (old) {
        sema_error(s, st->decl.name_loc, "redefinition of '%s'", sym_q(name));
        sema_note(s, old->loc, "previous definition of '%s' was here",
                  sym_q(name));
        return;
    }
    STensor *t = tensor_new(s, sym_q(name), name, st->decl.kind == DECL_INPUT
                            ? TENSOR_INPUT : TENSOR_WEIGHT, st->decl.name_loc);
    t->type = &st->decl.type;
    t->c.elem = st->decl.type.elem;
    t->c.rank = st->decl.type.ndims;
    t->c.shape = shape_eval(s, s->globals, st->decl.type.dims,
                            st->decl.type.ndims, st->decl.type.elem,
                            sym_q(name), st->decl.type.loc);
    t->poisoned = !t->c.shape;
    t->c.ext = st->decl.ext;
    t->c.ext_loc = st->decl.ext_loc;
    if (t->c.ext && !*t->c.ext) {
        sema_error(s, st->decl.ext_loc, "an empty external name");
        t->c.ext = NULL;
    }
    Entry *e = scope_add(s->arena, s->globals, name, ENT_TENSOR,
                         st->decl.name_loc);
    e->tensor = t->c.id;
}

/* An external name is what the compiled program loads and sets the tensor
 * by, as it does a tensor by its own name: it must name no other tensor,
 * by either name. */
static void ext_names_check(Sema *s)
{
    for (int i = 0; i < s->tensors.len; i++) {
        const CTensor *a = &s->tensors.data[i]->c;
        if (!a->ext)
            continue;
        for (int j = 0; j < s->tensors.len; j++) {
            const CTensor *b = &s->tensors.data[j]->c;
            if (j == i)
                continue;
            if (strcmp(a->ext, b->name) == 0 || (b->ext && j < i && strcmp(a->ext, b->ext) == 0)) {
                sema_error(s, a->ext_loc, "external name \"%s\" is %s of '%s'", a->ext,
                           strcmp(a->ext, b->name) == 0 ? "the name" : "the external name",
                           b->name);
                sema_note(s, b->ext && strcmp(a->ext, b->ext) == 0 ? b->ext_loc : b->loc,
                          "'%s' is declared here", b->name);
                break;
            }
        }
    }
}

static void model_check(Sema *s, const Stmt *st)
{
    if (s->model) {
        sema_error(s, st->loc, "the model is named twice");
        sema_note(s, s->model_loc, "first named here");
        return;
    }
    s->model = sym_q(st->model.name);
    s->model_loc = st->loc;
}

static void output_check(Sema *s, const Stmt *st)
{
    Sym name = st->output.name;
    Loc loc = st->output.name_loc;
    Entry *en = scope_find(s->globals, name);
    STensor *t = en && en->kind == ENT_TENSOR ? tensor_at(s, en->tensor) : NULL;
    if (!en) {
        unknown_tensor(s, s->globals, name, loc, " in output");
        return;
    }
    en->used = true;
    if (!t) {
        sema_error(s, loc, "%s '%s' cannot be an output", entry_what(s, en),
                   sym_q(name));
        sema_note(s, en->loc, "'%s' is defined here", sym_q(name));
        return;
    }
    if (t->c.kind != TENSOR_DEFINED) {
        sema_error(s, loc, "%s '%s' cannot be an output; copy it: "
                   "'y[...] = %s[...]'", entry_what(s, en), sym_q(name),
                   sym_q(name));
        return;
    }
    for (int i = 0; i < s->outputs.len; i++)
        if (s->outputs.data[i] == t->c.id) {
            sema_error(s, loc, "'%s' is listed as an output twice",
                       sym_q(name));
            sema_note(s, s->output_locs.data[i], "first listed here");
            return;
        }
    t->c.is_output = true;
    vec_push(s->arena, &s->outputs, t->c.id);
    vec_push(s->arena, &s->output_locs, loc);
}

static const char *file_stem(Arena *a, int file)
{
    const SrcFile *f = src_get(file);
    const char *p = f && f->path ? f->path : "model";
    const char *slash = strrchr(p, '/');
    p = slash ? slash + 1 : p;
    const char *dot = strrchr(p, '.');
    size_t n = dot && dot != p ? (size_t)(dot - p) : strlen(p);
    char *stem = arena_alloc(a, n + 1);
    memcpy(stem, p, n);
    return stem;
}

static CProgram *assemble(Sema *s, int ntensors, const Ast *ast)
{
    CProgram *p = arena_alloc(s->arena, sizeof *p);
    p->model = s->model ? s->model
             : s->opt && s->opt->model_name ? s->opt->model_name
             : file_stem(s->arena, ast->file);
    p->tensors = arena_alloc(s->arena, ((size_t)ntensors + 1) * sizeof *p->tensors);
    for (int i = 0; i < ntensors; i++) {
        p->tensors[i] = s->tensors.data[i]->c;
        if (p->tensors[i].rank < 0 || !p->tensors[i].shape)
            ICE("tensor '%s' has no shape after sema", p->tensors[i].name);
    }
    p->ntensors = ntensors;
    p->stmts = s->stmts.data;
    p->nstmts = s->stmts.len;
    p->outputs = s->outputs.data;
    p->noutputs = s->outputs.len;
    return p;
}

CProgram *sema_check(const Ast *ast, const SemaOptions *opt, Arena *arena)
{
    Sema s = {.arena = arena, .opt = opt};
    s.globals = scope_new(arena);
    s.defs = scope_new(arena);
    s.allconsts = scope_new(arena);
    defines_parse(&s);
    consts_check(&s, ast->stmts, ast->nstmts);
    defs_collect(&s, ast->stmts, ast->nstmts);
    defs_check_recursion(&s);

    VEC(Stmt *) defs = {0};
    for (int i = 0; i < ast->nstmts; i++) {
        Stmt *st = ast->stmts[i];
        if (st->kind == ST_TENSOR)
            decl_check(&s, st);
        else if (st->kind == ST_MODEL)
            model_check(&s, st);
        else if (st->kind == ST_ASSIGN || st->kind == ST_BIND)
            vec_push(arena, &defs, st);
    }
    defines_check_used(&s);
    block_check(&s, s.globals, defs.data, defs.len, NULL);

    bool any_output = false;
    for (int i = 0; i < ast->nstmts; i++)
        if (ast->stmts[i]->kind == ST_OUTPUT) {
            output_check(&s, ast->stmts[i]);
            any_output = true;
        }
    if (!any_output) {
        const SrcFile *f = src_get(ast->file);
        sema_error(&s, LOC_NONE, "%s: no output; name the program's results "
                   "with 'output NAME'", f ? f->path : "input");
    }
    if (any_output)                 /* else everything is unused: no noise */
        block_warn_unused(&s, s.globals, NULL);
    ext_names_check(&s);
    int ntensors = s.tensors.len;
    sema_flush_context(&s);
    defs_check_uncalled(&s);
    sema_flush_context(&s);
    return s.errors ? NULL : assemble(&s, ntensors, ast);
}
