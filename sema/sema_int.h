/* sema_int.h - what the files of sema/ share; not part of the public API.
 *
 * sema works on "working tensors" (STensor, a CTensor plus bookkeeping)
 * and flat scopes of named entries.  A scope is either the file's (its
 * constants and tensors) or one inlined def call's (its shape variables,
 * parameters, outputs and locals): a def sees nothing of the file.  The
 * indices of a statement live in the statement's own context (StmtCtx).
 *
 * Errors never stop the phase: a failed definition poisons its tensor
 * (shape unknown), and whatever reads an unknown shape or constant stays
 * silent about it, so one mistake gives one message. */
#ifndef EINC_SEMA_INT_H
#define EINC_SEMA_INT_H

#include "sema.h"

/* Largest tensor, in bytes, and largest iteration space of a statement. */
#define SEMA_MAX_BYTES ((int64_t)1 << 62)
/* Inlining stops (with an error) past this many tensors or nesting levels. */
#define SEMA_MAX_TENSORS (1 << 17)
#define SEMA_MAX_INLINE_DEPTH 200

typedef enum {
    ENT_CONST,                      /* const of the file (or an import) */
    ENT_SHAPEVAR,                   /* shape variable of a def call */
    ENT_TENSOR,                     /* input, weight, defined tensor, def output */
    ENT_PARAM,                      /* def parameter: alias of an argument */
    ENT_DEF,                        /* def (in the def table only) */
    ENT_REAL,                       /* real scalar parameter of a def call */
} EntKind;

typedef VEC(int) IntVec;
typedef VEC(CExpr *) CExprVec;

typedef struct Entry {
    Sym name;
    EntKind kind;
    Loc loc;                        /* where declared or defined */
    bool known;                     /* CONST, SHAPEVAR: value is valid */
    bool is_param_out;              /* TENSOR: a def output (caller's tensor) */
    bool used;                      /* read somewhere in this scope */
    int64_t value;                  /* CONST, SHAPEVAR */
    double rvalue;                  /* REAL */
    int tensor;                     /* TENSOR, PARAM: tensor id; -1: none */
    int def_stmt;                   /* TENSOR: defining statement of this
                                       scope's block, -1: not (yet) defined */
    const Stmt *stmt;               /* DEF: the def; PARAM: the def called */
    int param;                      /* PARAM: its index in the def */
} Entry;

typedef struct Scope {
    VEC(Entry *) ents;              /* in declaration order */
    int *slots;                     /* hash of ents indices + 1; 0 = empty */
    int nslots;
} Scope;

typedef struct STensor {
    CTensor c;                      /* rank -1 / shape NULL while unknown */
    Sym src_name;                   /* as written (a def local: unprefixed) */
    Loc name_loc;
    const TypeExpr *type;           /* declared type (inputs, weights) */
    bool poisoned;                  /* its definition failed: stay silent */
    bool pending;                   /* defined by a statement not yet checked */
    bool nonneg;                    /* its statement's values are >= 0 or
                                       NaN (for -Wpadded-max) */
    bool nonpos;                    /* ... <= 0 or NaN */
} STensor;

/* What sema knows about one def besides its statement. */
typedef struct DefInfo {
    const Stmt *st;
    Sym *svars;                     /* shape variables, in order of appearance */
    Loc *svar_locs;
    int nsvars;
    bool bad;                       /* its signature has an error (reported) */
    bool recursive;                 /* reported by sema_check_recursion */
    bool called;                    /* inlined at least once for real */
} DefInfo;

typedef struct Define { Sym name; int64_t value; bool used; const char *text; } Define;

typedef struct Sema {
    Arena *arena;
    const SemaOptions *opt;
    int errors;                     /* errors this phase reported */
    VEC(STensor *) tensors;
    VEC(CStmt) stmts;               /* checked statements, in dependence order */
    Scope *globals;                 /* the file's constants and tensors */
    Scope *defs;                    /* ENT_DEF entries; stmt->def */
    Scope *allconsts;               /* every const of the file, for "used
                                       before its definition" */
    VEC(Define) defines;     /* -D */
    VEC(DefInfo *) definfo;         /* parallel to defs->ents */
    VEC(int) outputs;
    VEC(Loc) output_locs;
    const char *model;
    Loc model_loc;
    bool dry;                       /* checking an uncalled def: build nothing */
    int depth;                      /* inlining depth */
    bool too_big;                   /* reported the tensor limit once */
    /* diagnostic de-duplication (a def body is checked once per call) */
    char **seen;
    int nseen, seen_cap;
    bool drop_notes;
    int suggestions;                /* "did you mean" searches made */
    /* the calls being inlined, innermost last, and a copy of them as they
     * were at the last error or warning: "in the call of 'f' here" notes
     * follow that diagnostic's own notes */
    VEC(const Stmt *) calls;
    const Stmt **context;
    int ncontext;
} Sema;

/* ---- report.c: diagnostics, suggestions, printing ---- */
void sema_error(Sema *s, Loc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void sema_note(Sema *s, Loc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Print the call-context notes of the last diagnostic (once). */
void sema_flush_context(Sema *s);
void sema_warn(Sema *s, Loc loc, const char *flag, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Whether a "did you mean" search may be made for the error about to be
 * reported: not when that error will be dropped (past --max-errors), and
 * at most SEMA_MAX_SUGGESTIONS times in a compilation.  A search scans a
 * whole scope, so without the limit N misspelt names among N definitions
 * would take N^2 (clang bounds its typo correction the same way,
 * -fspell-checking-limit, default 50).  Counts the search. */
#define SEMA_MAX_SUGGESTIONS 50
bool sema_may_suggest(Sema *s);
/* The closest of `cands` to `name` by edit distance, or 0 when none is
 * close enough to be a likely typo. */
Sym suggest_name(Sym name, const Sym *cands, int n);
/* "; did you mean 'x'?" or "" (in the arena). */
const char *did_you_mean(Sema *s, Sym name, const Sym *cands, int n);
/* "unknown tensor 'q'<where>; did you mean 'p'?" and, in a def, a note
 * when the file has a tensor of that name. */
void unknown_tensor(Sema *s, const Scope *sc, Sym name, Loc loc,
                    const char *where);
/* Source-like text of an AST expression / a type: "f32[N, C, 3, 3]". */
char *expr_text(Arena *a, const Expr *e);
char *type_text(Arena *a, const TypeExpr *t);
char *shape_text(Arena *a, ElemType elem, int rank, const int64_t *shape);

/* ---- scope.c ---- */
Scope *scope_new(Arena *a);
Entry *scope_find(const Scope *sc, Sym name);
/* Adds an entry; the caller checked that the name is free. */
Entry *scope_add(Arena *a, Scope *sc, Sym name, EntKind kind, Loc loc);
/* Names of the entries whose kind bit (1 << kind) is in `kinds`. */
int scope_names(Arena *a, const Scope *sc, unsigned kinds, Sym **out);
/* "constant", "input", "weight", "tensor", "parameter", ... */
const char *entry_what(const Sema *s, const Entry *e);
STensor *tensor_new(Sema *s, const char *name, Sym src, TensorKind kind,
                    Loc loc);
STensor *tensor_at(const Sema *s, int id);
bool tensor_shape_known(const STensor *t);

/* ---- const.c: constant expressions, -D ---- */
/* Fold an integer constant expression over the constants / shape
 * variables of `sc`.  False when it has no value: an error was reported,
 * or it depends on an unknown (poisoned) constant. */
bool const_eval(Sema *s, const Scope *sc, const Expr *e, int64_t *out);
/* a op b for + - * / %, reporting overflow and division by zero at e. */
bool const_binop(Sema *s, const Expr *e, BinOp op, int64_t a, int64_t b,
                 int64_t *out);
/* Evaluate a shape: dims >= 1 and at most SEMA_MAX_BYTES in all.
 * `what` names the tensor in messages.  NULL when it has no value. */
int64_t *shape_eval(Sema *s, const Scope *sc, Expr **dims, int ndims,
                    ElemType elem, const char *what, Loc loc);
/* Element count times element size within SEMA_MAX_BYTES? */
bool shape_fits(int rank, const int64_t *shape, ElemType elem);
void consts_check(Sema *s, Stmt **stmts, int n);
/* -D NAME=VALUE: the override for `name`, if any. */
void defines_parse(Sema *s);
const Define *define_find(Sema *s, Sym name);
void defines_check_used(Sema *s);

/* ---- order.c: dependence order with cycle reports ---- */
typedef struct GEdge { int to; Loc loc; } GEdge;
typedef VEC(GEdge) GEdges;
/* nodes[0..len) form a cycle; edges[k] leads from nodes[k] to the next. */
typedef void (*CycleFn)(void *ctx, const int *nodes, const GEdge *edges,
                        int len);
/* Every node after the nodes it has edges to (but within cycles); the
 * order follows node numbers where the edges leave a choice. */
int *graph_order(Arena *a, int n, const GEdges *adj, CycleFn fn, void *ctx);

/* ---- block.c: a scope's tensor statements ---- */
/* Declare the tensors that `stmts` define in `sc`, order the statements
 * by dependence (reporting cycles) and check each.  Tensors defined in a
 * def body get names prefix + local name ("z1." + "a"). */
void block_check(Sema *s, Scope *sc, Stmt **stmts, int n, const char *prefix);
/* Warn about the tensors of `sc` that were never used. */
void block_warn_unused(Sema *s, const Scope *sc, const Stmt *def);

/* ---- shapeops.c: concat, stack, split ---- */
/* Whether `name` is one of the built-in shape operations. */
bool shapeop_is(Sym name);
/* The names of the shape operations, for suggestions. */
#define SHAPEOP_COUNT 3
extern const char *const shapeop_names[SHAPEOP_COUNT];
void shapeop_check(Sema *s, Scope *sc, const Stmt *st, const int *outs);
/* Fold a real constant expression (numbers, inf, nan, constants, real
 * parameters, + - * / and unary -); false after an error (reported). */
bool real_const_eval(Sema *s, const Scope *sc, const Expr *e, double *out);

/* ---- inline.c: def calls ---- */
void defs_collect(Sema *s, Stmt **stmts, int n);
void defs_check_recursion(Sema *s);
void bind_check(Sema *s, Scope *sc, const Stmt *st, const int *outs);
void defs_check_uncalled(Sema *s);

/* ---- stmt.c / expr.c / range.c: one tensor statement ---- */
typedef enum { CTX_BODY, CTX_SUBSCRIPT, CTX_WHERE } ExprCtx;

typedef struct SVar {
    Sym name;
    Loc loc;                        /* first occurrence */
    bool loop;                      /* on the left */
    bool in_subscript;              /* in some subscript */
    bool in_where;                  /* the variable of a where `in` */
    bool unknown;                   /* some fact about it is unknown: no errors */
    bool has_wlo, has_whi;          /* where gave a bound */
    int64_t wlo, whi;
    Loc wloc;                       /* the where item that gave a bound */
    int64_t lo, hi;                 /* the result */
    bool ok;
} SVar;

/* A bare index standing as a whole subscript of a tensor of known shape. */
typedef struct Position {
    int var, tensor, dim;
    Loc loc;
    Sym name;                       /* the tensor as named there */
} Position;

typedef struct StmtCtx {
    Sema *s;
    const Scope *sc;
    const Stmt *st;
    VEC(SVar) vars;                 /* loop indices first, then sum indices */
    int nloops;
    VEC(Position) pos;
    ExprCtx ctx;
    bool failed;                    /* an error was reported in this statement */
    bool in_def;                    /* the scope is a def body */
} StmtCtx;

CExpr *expr_real(StmtCtx *c, const Expr *e);
CExpr *expr_int(StmtCtx *c, const Expr *e);
CExpr *expr_cond(StmtCtx *c, const Expr *e, bool ints_only);
/* Is name a builtin function of elements (relu, exp, f16, ...)? */
bool func_is(Sym name);
int stmt_var(StmtCtx *c, Sym name, Loc loc, bool create);
void vars_unknown(StmtCtx *c, const Expr *e);
/* Where items: ranges into c->vars, the rest into `guards`. */
void where_check(StmtCtx *c, CExpr ***guards, int *nguards);
/* Ranges of every index; `decl` is the declared shape or NULL.  Fills
 * `shape` (rank entries) with the output shape when it can be inferred.
 * False after an error or when something is unknown. */
bool ranges_infer(StmtCtx *c, const int64_t *decl, int64_t *shape);
/* Interval check of the integer expressions once the ranges are known. */
bool intervals_check(StmtCtx *c, const CExpr *e);
void stmt_check(Sema *s, Scope *sc, const Stmt *st, int out);

/* ---- warn.c ---- */
void warn_sum_invariant(StmtCtx *c, const CStmt *cs);
/* -Wpadded-max; and whether the statement's values are never negative
 * (sign 1) or never positive (sign -1). */
void warn_padded(StmtCtx *c, const CStmt *cs);
bool stmt_signed(Sema *s, const CStmt *cs, int sign);
/* range.c: the values an integer expression takes over the ranges. */
bool expr_interval(StmtCtx *c, const CExpr *e, int64_t *lo, int64_t *hi);

/* ---- misc ---- */
const char *sym_q(Sym s);           /* the symbol's text */

#endif
