/* scope.c - flat scopes of named entries (a hash from Sym to entry,
 * entries kept in declaration order for stable messages) and the working
 * tensor table. */
#include "config.h"
#include "sema_int.h"

#include <string.h>

Scope *scope_new(Arena *a)
{
    return arena_alloc(a, sizeof(Scope));
}

static size_t slot_of(Sym name, int nslots)
{
    return (size_t)(name * 2654435761u) & (size_t)(nslots - 1);
}

Entry *scope_find(const Scope *sc, Sym name)
{
    if (!sc->nslots)
        return NULL;
    for (size_t i = slot_of(name, sc->nslots); sc->slots[i];
         i = (i + 1) & (size_t)(sc->nslots - 1)) {
        Entry *e = sc->ents.data[sc->slots[i] - 1];
        if (e->name == name)
            return e;
    }
    return NULL;
}

static void rehash(Arena *a, Scope *sc)
{
    int n = sc->nslots ? 2 * sc->nslots : 16;
    sc->slots = arena_alloc(a, (size_t)n * sizeof *sc->slots);
    sc->nslots = n;
    for (int k = 0; k < sc->ents.len; k++) {
        size_t i = slot_of(sc->ents.data[k]->name, n);
        while (sc->slots[i])
            i = (i + 1) & (size_t)(n - 1);
        sc->slots[i] = k + 1;
    }
}

Entry *scope_add(Arena *a, Scope *sc, Sym name, EntKind kind, Loc loc)
{
    Entry *e = arena_alloc(a, sizeof *e);
    e->name = name;
    e->kind = kind;
    e->loc = loc;
    e->tensor = -1;
    e->def_stmt = -1;
    vec_push(a, &sc->ents, e);
    if (2 * sc->ents.len > sc->nslots) {
        rehash(a, sc);
    } else {
        size_t i = slot_of(name, sc->nslots);
        while (sc->slots[i])
            i = (i + 1) & (size_t)(sc->nslots - 1);
        sc->slots[i] = sc->ents.len;
    }
    return e;
}

int scope_names(Arena *a, const Scope *sc, unsigned kinds, Sym **out)
{
    Sym *v = arena_alloc(a, ((size_t)sc->ents.len + 1) * sizeof *v);
    int n = 0;
    for (int i = 0; i < sc->ents.len; i++)
        if (kinds & (1u << sc->ents.data[i]->kind))
            v[n++] = sc->ents.data[i]->name;
    *out = v;
    return n;
}

const char *entry_what(const Sema *s, const Entry *e)
{
    switch (e->kind) {
    case ENT_CONST: return "constant";
    case ENT_SHAPEVAR: return "shape variable";
    case ENT_REAL: return "real parameter";
    case ENT_PARAM: return "parameter";
    case ENT_DEF: return "def";
    case ENT_TENSOR:
        break;
    }
    const STensor *t = tensor_at(s, e->tensor);
    if (t && t->c.kind == TENSOR_INPUT)
        return "input";
    if (t && t->c.kind == TENSOR_WEIGHT)
        return "weight";
    return "tensor";
}

STensor *tensor_new(Sema *s, const char *name, Sym src, TensorKind kind,
                    Loc loc)
{
    STensor *t = arena_alloc(s->arena, sizeof *t);
    t->c.id = s->tensors.len;
    t->c.name = name;
    t->c.kind = kind;
    t->c.elem = ELEM_F32;
    t->c.rank = -1;
    t->c.loc = loc;
    t->c.stmt = -1;
    t->src_name = src;
    t->name_loc = loc;
    vec_push(s->arena, &s->tensors, t);
    return t;
}

STensor *tensor_at(const Sema *s, int id)
{
    return id >= 0 && id < s->tensors.len ? s->tensors.data[id] : NULL;
}

bool tensor_shape_known(const STensor *t)
{
    return t && !t->poisoned && !t->pending && t->c.rank >= 0 && t->c.shape;
}
