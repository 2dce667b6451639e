/* grammar.y - the Bison grammar of .ein files; builds the AST of
 * lang/ast.h in the parse arena.
 *
 * Statements end at NEWLINE or ';' (the lexer decides which newlines are
 * tokens, see lexer.re).  Every syntax error is reported, not only the
 * first: `error sep` rules resume at the next statement, and the custom
 * error reporter names what was expected and which bracket is still open
 * ("expected ',' or ')' (to close '(' at line 3) before 'z'"). */

%require "3.8"
%define api.pure full
%define api.prefix {ein_}
%define api.token.prefix {TOK_}
%define api.location.type {Loc}
%define parse.error custom
%define parse.lac full
%locations
%expect 0
%param {Parse *P}
%initial-action { @$ = (Loc){P->file, 0, 0}; }

%code requires {
#include "parser/internal.h"
}

%code provides {
int parse_lex(EIN_STYPE *val, Loc *loc, Parse *P);
}

%code {
#include <stdio.h>
#include <string.h>

#define ein_lex parse_lex

/* A nonterminal spans its first to its last symbol; an empty one sits
 * where the previous symbol ended. */
#define YYLLOC_DEFAULT(Cur, Rhs, N)                                         \
    do {                                                                    \
        if (N) {                                                            \
            (Cur).file = YYRHSLOC(Rhs, 1).file;                             \
            (Cur).begin = YYRHSLOC(Rhs, 1).begin;                           \
            (Cur).end = YYRHSLOC(Rhs, N).end;                               \
        } else {                                                            \
            (Cur).file = YYRHSLOC(Rhs, 0).file;                             \
            (Cur).begin = (Cur).end = YYRHSLOC(Rhs, 0).end;                 \
        }                                                                   \
    } while (0)
#define YYLOCATION_PRINT(File, Loc) ((void)0)

/* The stack holds at most this many states; deeper input is reported as
 * nested too deeply (the lexer's bracket limit usually comes first). */
#define YYMAXDEPTH 10000

/* Resume normal error reporting after a recovery rule. */
#define RECOVERED() do { yyerrok; P->recovering = false; } while (0)

static void ein_error(Loc *loc, Parse *P, const char *msg);

/* ---- node constructors ------------------------------------------------- */

/* An expression node with its tree depth beside it, so that a tree too
 * deep for the recursive walks of later phases is caught here. */
typedef struct DExpr {
    Expr e;
    int depth;
} DExpr;

static int depth_of(const Expr *e)
{
    return e ? ((const DExpr *)e)->depth : 0;
}

static Expr *new_expr(Parse *P, ExprKind k, Loc loc, int child_depth)
{
    DExpr *d = arena_alloc(P->arena, sizeof *d);
    d->e.kind = k;
    d->e.loc = loc;
    d->depth = child_depth + 1;
    if (d->depth == PARSE_MAX_DEPTH + 1)
        diag_error(loc, "expression nested too deeply (more than %d levels)",
                   PARSE_MAX_DEPTH);
    return &d->e;
}

static Expr *mk_bin(Parse *P, BinOp op, Expr *l, Expr *r, Loc loc, Loc op_loc)
{
    int dl = depth_of(l), dr = depth_of(r);
    Expr *e = new_expr(P, EX_BIN, loc, dl > dr ? dl : dr);
    e->bin.op = op;
    e->bin.lhs = l;
    e->bin.rhs = r;
    e->bin.op_loc = op_loc;
    return e;
}

static Expr *mk_unary(Parse *P, ExprKind k, Expr *x, Loc loc)
{
    Expr *e = new_expr(P, k, loc, depth_of(x));
    e->operand = x;
    return e;
}

static Expr *mk_call(Parse *P, ExprKind k, Sym name, Loc name_loc,
                     ExprList args, Loc loc)
{
    int d = 0;
    for (int i = 0; i < args.len; i++)
        if (depth_of(args.data[i]) > d)
            d = depth_of(args.data[i]);
    Expr *e = new_expr(P, k, loc, d);
    e->call.name = name;
    e->call.name_loc = name_loc;
    e->call.args = args.data;
    e->call.nargs = args.len;
    return e;
}

static Stmt *new_stmt(Parse *P, StmtKind k, Loc loc)
{
    Stmt *s = arena_alloc(P->arena, sizeof *s);
    s->kind = k;
    s->loc = loc;
    return s;
}

static StmtList one_stmt(Parse *P, Stmt *s)
{
    StmtList l = {0};
    vec_push(P->arena, &l, s);
    return l;
}

/* elem_type -> f32 | f16 | bf16 | i8 | i16 | i32 | i64 | u8 | bool
 * (plain identifiers, checked here) */
static int elem_type(Sym name, Loc loc)
{
    int e = elem_lookup(sym_str(name));
    if (e >= 0)
        return e;
    diag_error(loc, "unknown element type '%s' (expected f32, f16, bf16, i8, "
               "i16, i32, i64, u8 or bool)", sym_str(name));
    return ELEM_F32;
}

static TypeExpr mk_type(Parse *P, Sym elem, Loc elem_loc, ExprList dims, Loc loc)
{
    (void)P;
    TypeExpr t;
    t.elem = (ElemType)elem_type(elem, elem_loc);
    t.dims = dims.data;
    t.ndims = dims.len;
    t.loc = loc;
    return t;
}

/* assign -> NAME '[' exprs ']' shape? op expr (where conds)?
 * The left-hand subscripts were parsed as expressions so that a wrong one
 * gets a message that says what is wrong with it. */
static Stmt *mk_assign(Parse *P, Loc loc, Sym name, Loc name_loc,
                       ExprList lhs, ShapeDecl shape, Reduce red, Loc op_loc,
                       Expr *body, ExprList where)
{
    Stmt *s = new_stmt(P, ST_ASSIGN, loc);
    s->assign.name = name;
    s->assign.name_loc = name_loc;
    s->assign.idx = arena_alloc(P->arena, (size_t)(lhs.len + 1) * sizeof(Sym));
    s->assign.idx_locs = arena_alloc(P->arena, (size_t)(lhs.len + 1) * sizeof(Loc));
    for (int i = 0; i < lhs.len; i++) {
        Expr *e = lhs.data[i];
        if (e->kind != EX_NAME) {
            diag_error(e->loc, "left-hand subscripts of '%s' must be plain "
                       "index names", sym_str(name));
            continue;
        }
        for (int j = 0; j < s->assign.nidx; j++)
            if (s->assign.idx[j] == e->name) {
                diag_error(e->loc, "index '%s' appears twice on the left of "
                           "'%s'", sym_str(e->name), sym_str(name));
                diag_note(s->assign.idx_locs[j], "first use of '%s'",
                          sym_str(e->name));
                goto next;
            }
        s->assign.idx[s->assign.nidx] = e->name;
        s->assign.idx_locs[s->assign.nidx++] = e->loc;
    next:;
    }
    s->assign.nshape = -1;
    s->assign.elem = -1;
    s->assign.shape_loc = LOC_NONE;
    if (shape.given) {
        s->assign.shape = shape.dims.data;
        s->assign.nshape = shape.dims.len;
        s->assign.elem = shape.elem;
        s->assign.shape_loc = shape.loc;
    }
    s->assign.red = red;
    s->assign.op_loc = op_loc;
    s->assign.body = body;
    s->assign.where = where.data;
    s->assign.nwhere = where.len;
    return s;
}

/* bind -> names '=' NAME '(' names ')'
 * The right side was parsed as any expression; only a call whose
 * arguments are plain names is a def call. */
static Stmt *mk_bind(Parse *P, Loc loc, NameList outs, Expr *rhs)
{
    if (rhs->kind != EX_CALL) {
        diag_error(rhs->loc, "expected a def call after '%s ='; a tensor "
                   "statement needs subscripts, as in '%s[i] = ...'",
                   sym_str(outs.syms.data[0]), sym_str(outs.syms.data[0]));
        return NULL;
    }
    Stmt *s = new_stmt(P, ST_BIND, loc);
    s->bind.outs = outs.syms.data;
    s->bind.out_locs = outs.locs.data;
    s->bind.nouts = outs.syms.len;
    s->bind.callee = rhs->call.name;
    s->bind.callee_loc = rhs->call.name_loc;
    int n = rhs->call.nargs;
    s->bind.args = arena_alloc(P->arena, (size_t)(n + 1) * sizeof(Sym));
    s->bind.arg_locs = arena_alloc(P->arena, (size_t)(n + 1) * sizeof(Loc));
    s->bind.arg_keys = arena_alloc(P->arena, (size_t)(n + 1) * sizeof(Sym));
    s->bind.arg_exprs = rhs->call.args;
    s->bind.nargs = n;
    /* what each argument must be depends on the callee's parameter: sema
     * checks it */
    for (int i = 0; i < n; i++) {
        Expr *a = rhs->call.args[i];
        s->bind.args[i] = a->kind == EX_NAME ? a->name : 0;
        s->bind.arg_locs[i] = a->loc;
        s->bind.arg_keys[i] = rhs->call.keys ? rhs->call.keys[i] : 0;
    }
    return s;
}

/* call -> NAME '(' args ')' with `key = value` arguments: keys beside
 * the arguments, 0 for a positional one. */
static Expr *mk_call_keys(Parse *P, Sym name, Loc name_loc, ArgList args,
                          Loc loc)
{
    Expr *e = mk_call(P, EX_CALL, name, name_loc, args.exprs, loc);
    bool any = false;
    for (int i = 0; i < args.keys.len; i++)
        any |= args.keys.data[i] != 0;
    e->call.keys = any ? args.keys.data : NULL;
    return e;
}

/* A def body holds tensor statements and def calls only. */
static void add_body_stmts(Parse *P, StmtList *body, StmtList add, Loc loc)
{
    static const char *const what[] = {
        [ST_CONST] = "'const'", [ST_TENSOR] = "a tensor declaration",
        [ST_OUTPUT] = "'output'", [ST_DEF] = "a nested 'def'",
        [ST_IMPORT] = "'import'", [ST_MODEL] = "'model'",
    };
    for (int i = 0; i < add.len; i++) {
        Stmt *s = add.data[i];
        if (s->kind != ST_ASSIGN && s->kind != ST_BIND) {
            diag_error(loc, "%s is not allowed in a def body (it holds "
                       "tensor statements and def calls only)", what[s->kind]);
            return;
        }
        vec_push(P->arena, body, s);
    }
}
}

%union {
    int64_t ival;
    double rval;
    Sym sym;
    const char *str;
    Expr *expr;
    Stmt *stmt;
    ExprList exprs;
    StmtList stmts;
    NameList names;
    ParamList params;
    Param param;
    ArgList args;
    TypeExpr type;
    ShapeDecl shape;
    Reduce red;
}

%token <sym> IDENT "identifier"
%token <ival> INT "integer"
%token <rval> REAL "number"
%token <str> STRING "string"
%token <str> LIBPATH "library path"
%token CONST "'const'" INPUT "'input'" WEIGHT "'weight'" OUTPUT "'output'"
       DEF "'def'" IMPORT "'import'" MODEL "'model'" WHERE "'where'" IN "'in'"
%token PLUSEQ "'+='" MAXEQ "'max='" MINEQ "'min='" STAREQ "'*='"
%token EQ "'=='" NE "'!='" LE "'<='" GE "'>='" AND "'&&'" OR "'||'"
%token ARROW "'->'" DOTDOT "'..'" ELVIS "'?:'"
%token NEWLINE "end of line"
%token BAD "invalid token"

%left OR
%left AND
%nonassoc EQ NE '<' LE '>' GE
%left '+' '-'
%left '*' '/' '%'
%precedence UNARY

%type <expr> expr primary cond outside_value opt_default
%type <exprs> exprs opt_exprs conds opt_where
%type <stmts> stmt consts decls outputs body
%type <stmt> const def assign bind decl
%type <names> names
%type <params> params opt_params
%type <param> param def_param
%type <args> args opt_args
%type <type> type
%type <shape> opt_shape
%type <red> assign_op

%%

file
    : items
    ;

items
    : %empty
    | items item
    ;

/* item -> stmt sep | sep | error sep
 * A broken statement is skipped up to its end, and parsing resumes. */
item
    : sep
    | stmt sep
        {
            for (int i = 0; i < $1.len; i++) {
                vec_push(P->arena, &P->stmts, $1.data[i]);
                if ($1.data[i]->kind == ST_IMPORT)
                    parse_import(P, $1.data[i]);
            }
        }
    | error sep                 { RECOVERED(); }
    ;

sep
    : NEWLINE
    | ';'
    ;

stmt
    : CONST consts              { $$ = $2; }
    | INPUT decls
        {
            $$ = $2;
            for (int i = 0; i < $$.len; i++)
                $$.data[i]->decl.kind = DECL_INPUT;
        }
    | WEIGHT decls
        {
            $$ = $2;
            for (int i = 0; i < $$.len; i++)
                $$.data[i]->decl.kind = DECL_WEIGHT;
        }
    | OUTPUT outputs            { $$ = $2; }
    | MODEL IDENT
        {
            Stmt *s = new_stmt(P, ST_MODEL, @$);
            s->model.name = $2;
            $$ = one_stmt(P, s);
        }
    | IMPORT STRING
        {
            Stmt *s = new_stmt(P, ST_IMPORT, @$);
            s->import.path = $2;
            s->import.file = -1;
            $$ = one_stmt(P, s);
        }
    | IMPORT LIBPATH
        {
            Stmt *s = new_stmt(P, ST_IMPORT, @$);
            s->import.path = $2;
            s->import.library = true;
            s->import.file = -1;
            $$ = one_stmt(P, s);
        }
    | def                       { $$ = one_stmt(P, $1); }
    | assign                    { $$ = one_stmt(P, $1); }
    | bind                      { $$ = (StmtList){0}; if ($1) $$ = one_stmt(P, $1); }
    ;

/* const -> NAME '=' expr   (one statement per name) */
consts
    : const                     { $$ = one_stmt(P, $1); }
    | consts ',' const          { $$ = $1; vec_push(P->arena, &$$, $3); }
    ;

const
    : IDENT '=' expr
        {
            $$ = new_stmt(P, ST_CONST, @$);
            $$->cnst.name = $1;
            $$->cnst.name_loc = @1;
            $$->cnst.value = $3;
        }
    ;

/* decl -> NAME [STRING] ':' type   (input and weight lists; the string
 * is the external name the tensor is loaded and set by) */
decls
    : decl                      { $$ = one_stmt(P, $1); }
    | decls ',' decl            { $$ = $1; vec_push(P->arena, &$$, $3); }
    ;

decl
    : param
        {
            $$ = new_stmt(P, ST_TENSOR, @1);
            $$->decl.name = $1.name;
            $$->decl.name_loc = $1.loc;
            $$->decl.type = $1.type;
        }
    | IDENT STRING ':' type
        {
            $$ = new_stmt(P, ST_TENSOR, @1);
            $$->decl.name = $1;
            $$->decl.name_loc = @1;
            $$->decl.type = $4;
            $$->decl.ext = $2;
            $$->decl.ext_loc = @2;
        }
    ;

outputs
    : names
        {
            $$ = (StmtList){0};
            for (int i = 0; i < $1.syms.len; i++) {
                Stmt *s = new_stmt(P, ST_OUTPUT, $1.locs.data[i]);
                s->output.name = $1.syms.data[i];
                s->output.name_loc = $1.locs.data[i];
                vec_push(P->arena, &$$, s);
            }
        }
    ;

names
    : IDENT
        {
            $$ = (NameList){0};
            vec_push(P->arena, &$$.syms, $1);
            vec_push(P->arena, &$$.locs, @1);
        }
    | names ',' IDENT
        {
            $$ = $1;
            vec_push(P->arena, &$$.syms, $3);
            vec_push(P->arena, &$$.locs, @3);
        }
    ;

param
    : IDENT ':' type
        {
            $$ = (Param){.name = $1, .loc = @1, .kind = PARAM_TENSOR, .type = $3};
        }
    ;

/* type -> ELEM '[' dims ']' */
type
    : IDENT '[' opt_exprs ']'   { $$ = mk_type(P, $1, @1, $3, @$); }
    ;

/* def -> 'def' NAME '(' params ')' '->' names '{' body '}'
 * The '{' may start the next line. */
def
    : DEF IDENT '(' opt_params ')' ARROW names opt_newline '{' body '}'
        {
            $$ = new_stmt(P, ST_DEF, @$);
            $$->def.name = $2;
            $$->def.name_loc = @2;
            $$->def.params = $4.data;
            $$->def.nparams = $4.len;
            $$->def.outs = $7.syms.data;
            $$->def.out_locs = $7.locs.data;
            $$->def.nouts = $7.syms.len;
            $$->def.body = $10.data;
            $$->def.nbody = $10.len;
        }
    ;

opt_newline
    : %empty
    | NEWLINE
    ;

opt_params
    : %empty                    { $$ = (ParamList){0}; }
    | params
    ;

params
    : def_param                 { $$ = (ParamList){0}; vec_push(P->arena, &$$, $1); }
    | params ',' def_param      { $$ = $1; vec_push(P->arena, &$$, $3); }
    ;

/* def_param -> NAME ':' type | NAME ':' ELEM ('=' expr)? | 'const' NAME ('=' expr)? */
def_param
    : param
    | IDENT ':' IDENT opt_default
        {
            $$ = (Param){.name = $1, .loc = @1, .kind = PARAM_SCALAR, .dflt = $4};
            $$.type = mk_type(P, $3, @3, (ExprList){0}, @3);
        }
    | CONST IDENT opt_default
        {
            $$ = (Param){.name = $2, .loc = @2, .kind = PARAM_CONST, .dflt = $3};
            $$.type.loc = @2;
        }
    ;

opt_default
    : %empty                    { $$ = NULL; }
    | '=' expr                  { $$ = $2; }
    ;

body
    : %empty                    { $$ = (StmtList){0}; }
    | body sep
    | body stmt sep             { $$ = $1; add_body_stmts(P, &$$, $2, @2); }
    | body error sep            { $$ = $1; RECOVERED(); }
    ;

/* assign -> NAME '[' idx ']' (':' type-or-dims)? op expr ('where' conds)? */
assign
    : IDENT '[' opt_exprs ']' opt_shape assign_op expr opt_where
        {
            $$ = mk_assign(P, @$, $1, @1, $3, $5, $6, @6, $7, $8);
        }
    ;

opt_shape
    : %empty
        {
            $$ = (ShapeDecl){.given = false, .elem = -1};
        }
    | ':' '[' opt_exprs ']'
        {
            $$ = (ShapeDecl){.given = true, .elem = -1, .dims = $3, .loc = @$};
        }
    | ':' IDENT '[' opt_exprs ']'
        {
            $$ = (ShapeDecl){.given = true, .elem = elem_type($2, @2),
                             .dims = $4, .loc = @$};
        }
    ;

assign_op
    : '='                       { $$ = RED_NONE; }
    | PLUSEQ                    { $$ = RED_SUM; }
    | MAXEQ                     { $$ = RED_MAX; }
    | MINEQ                     { $$ = RED_MIN; }
    | STAREQ                    { $$ = RED_PROD; }
    ;

opt_where
    : %empty                    { $$ = (ExprList){0}; }
    | WHERE conds               { $$ = $2; }
    ;

conds
    : cond                      { $$ = (ExprList){0}; vec_push(P->arena, &$$, $1); }
    | conds ',' cond            { $$ = $1; vec_push(P->arena, &$$, $3); }
    ;

/* cond -> NAME 'in' expr '..' expr | expr */
cond
    : IDENT IN expr DOTDOT expr
        {
            int d = depth_of($3) > depth_of($5) ? depth_of($3) : depth_of($5);
            $$ = new_expr(P, EX_IN, @$, d);
            $$->in.var = $1;
            $$->in.var_loc = @1;
            $$->in.lo = $3;
            $$->in.hi = $5;
        }
    | expr
    ;

/* bind -> names '=' call   (checked in mk_bind) */
bind
    : names '=' expr            { $$ = mk_bind(P, @$, $1, $3); }
    ;

expr
    : expr OR expr              { $$ = mk_bin(P, OP_OR, $1, $3, @$, @2); }
    | expr AND expr             { $$ = mk_bin(P, OP_AND, $1, $3, @$, @2); }
    | expr EQ expr              { $$ = mk_bin(P, OP_EQ, $1, $3, @$, @2); }
    | expr NE expr              { $$ = mk_bin(P, OP_NE, $1, $3, @$, @2); }
    | expr '<' expr             { $$ = mk_bin(P, OP_LT, $1, $3, @$, @2); }
    | expr LE expr              { $$ = mk_bin(P, OP_LE, $1, $3, @$, @2); }
    | expr '>' expr             { $$ = mk_bin(P, OP_GT, $1, $3, @$, @2); }
    | expr GE expr              { $$ = mk_bin(P, OP_GE, $1, $3, @$, @2); }
    | expr '+' expr             { $$ = mk_bin(P, OP_ADD, $1, $3, @$, @2); }
    | expr '-' expr             { $$ = mk_bin(P, OP_SUB, $1, $3, @$, @2); }
    | expr '*' expr             { $$ = mk_bin(P, OP_MUL, $1, $3, @$, @2); }
    | expr '/' expr             { $$ = mk_bin(P, OP_DIV, $1, $3, @$, @2); }
    | expr '%' expr             { $$ = mk_bin(P, OP_MOD, $1, $3, @$, @2); }
    | '-' expr %prec UNARY      { $$ = mk_unary(P, EX_NEG, $2, @$); }
    | '!' expr %prec UNARY      { $$ = mk_unary(P, EX_NOT, $2, @$); }
    | primary
    ;

primary
    : INT
        {
            $$ = new_expr(P, EX_INT, @$, 0);
            $$->ival = $1;
        }
    | REAL
        {
            $$ = new_expr(P, EX_REAL, @$, 0);
            $$->rval = $1;
        }
    | IDENT
        {
            $$ = new_expr(P, EX_NAME, @$, 0);
            $$->name = $1;
        }
    | IDENT '(' opt_args ')'    { $$ = mk_call_keys(P, $1, @1, $3, @$); }
    | IDENT '[' opt_exprs ']'   { $$ = mk_call(P, EX_ACCESS, $1, @1, $3, @$); }
    | IDENT '[' opt_exprs ']' ELVIS outside_value
        {
            $$ = mk_call(P, EX_ACCESS, $1, @1, $3, @$);
            $$->call.outside = $6;
        }
    | '(' expr ')'              { $$ = $2; }
    ;

/* outside_value -> '-'* primary   (`x[i] ?: -inf`; sema wants a constant) */
outside_value
    : primary
    | '-' outside_value         { $$ = mk_unary(P, EX_NEG, $2, @$); }
    ;

opt_args
    : %empty                    { $$ = (ArgList){0}; }
    | args
    ;

/* args -> (NAME '=')? expr, ... */
args
    : expr
        {
            $$ = (ArgList){0};
            vec_push(P->arena, &$$.exprs, $1);
            vec_push(P->arena, &$$.keys, (Sym)0);
        }
    | IDENT '=' expr
        {
            $$ = (ArgList){0};
            vec_push(P->arena, &$$.exprs, $3);
            vec_push(P->arena, &$$.keys, $1);
        }
    | args ',' expr
        {
            $$ = $1;
            vec_push(P->arena, &$$.exprs, $3);
            vec_push(P->arena, &$$.keys, (Sym)0);
        }
    | args ',' IDENT '=' expr
        {
            $$ = $1;
            vec_push(P->arena, &$$.exprs, $5);
            vec_push(P->arena, &$$.keys, $3);
        }
    ;

opt_exprs
    : %empty                    { $$ = (ExprList){0}; }
    | exprs
    ;

exprs
    : expr                      { $$ = (ExprList){0}; vec_push(P->arena, &$$, $1); }
    | exprs ',' expr            { $$ = $1; vec_push(P->arena, &$$, $3); }
    ;

%%

/* ---- syntax errors ------------------------------------------------------
 * "expected A, B or C before X", with the tokens that start an expression
 * or a statement, and the binary operators, said as one word each. */

static bool has(const bool *set, yysymbol_kind_t k)
{
    return set[k];
}

/* Token kinds of one-character tokens. */
#define CH(c) YYTRANSLATE(c)

static const int expr_start[] = {
    TOK_IDENT, TOK_INT, TOK_REAL, '(', '-', '!',
};
static const int stmt_start[] = {
    TOK_CONST, TOK_INPUT, TOK_WEIGHT, TOK_OUTPUT, TOK_DEF, TOK_IMPORT,
    TOK_MODEL, TOK_IDENT,
};
static const int bin_ops[] = {
    TOK_OR, TOK_AND, TOK_EQ, TOK_NE, '<', TOK_LE, '>', TOK_GE, '+', '-',
    '*', '/', '%', TOK_ELVIS,
};
#define COUNT(a) (int)(sizeof a / sizeof *a)

static bool has_all(const bool *set, const int *ts, int n)
{
    for (int i = 0; i < n; i++)
        if (!set[CH(ts[i])])
            return false;
    return true;
}

static void clear_all(bool *set, const int *ts, int n)
{
    for (int i = 0; i < n; i++)
        set[CH(ts[i])] = false;
}

/* The order in which expected tokens are listed; the closing bracket the
 * innermost open one wants comes last, with where that one opened. */
static const int display_order[] = {
    TOK_IDENT, TOK_INT, TOK_REAL, TOK_STRING, TOK_LIBPATH, TOK_CONST, TOK_INPUT,
    TOK_WEIGHT, TOK_OUTPUT, TOK_DEF, TOK_IMPORT, TOK_MODEL, '=', TOK_PLUSEQ, TOK_STAREQ,
    TOK_MAXEQ, TOK_MINEQ, ':', TOK_ARROW, TOK_IN, TOK_DOTDOT, TOK_WHERE, TOK_ELVIS, '[',
    '(', '{', ',', TOK_OR, TOK_AND, TOK_EQ, TOK_NE, '<', TOK_LE, '>', TOK_GE,
    '+', '-', '*', '/', '%', '!', ']', ')', '}',
};

static int yyreport_syntax_error(const yypcontext_t *ctx, Parse *P)
{
    yysymbol_kind_t la = yypcontext_token(ctx);
    Loc loc = *yypcontext_location(ctx);
    int tok = P->prev;          /* the lookahead is the last token lexed */
    if (la == YYSYMBOL_BAD || P->fatal) {
        /* The lexer has said what is wrong. */
        lex_enter_recovery(P, tok);
        return 0;
    }

    yysymbol_kind_t exp[YYNTOKENS];
    int n = yypcontext_expected_tokens(ctx, exp, YYNTOKENS);
    if (n < 0)
        return n;
    bool set[YYNTOKENS] = {false};
    for (int i = 0; i < n; i++)
        set[exp[i]] = true;

    const char *words[YYNTOKENS + 4];
    int nw = 0;
    if (has(set, CH('+')) && !has(set, CH('<')) &&
        (tok == '<' || tok == '>' || tok == TOK_LE || tok == TOK_GE ||
         tok == TOK_EQ || tok == TOK_NE)) {
        /* A comparison right after a comparison. */
        diag_error(loc, "comparisons do not chain; write 'a <= i && i < b' "
                   "(or 'a <= i, i < b' in a where clause)");
        lex_enter_recovery(P, tok);
        return 0;
    }
    bool statement = has(set, YYSYMBOL_CONST) && has(set, YYSYMBOL_IDENT);
    if (statement) {
        clear_all(set, stmt_start, COUNT(stmt_start));
        words[nw++] = "statement";
    }
    if (has_all(set, expr_start, COUNT(expr_start))) {
        clear_all(set, expr_start, COUNT(expr_start));
        words[nw++] = "expression";
    }
    /* Where '+' may go on, so may every operator that is still allowed. */
    bool ops = has(set, CH('+')) && has(set, CH('*'));
    if (ops)
        clear_all(set, bin_ops, COUNT(bin_ops));
    bool eol = has(set, YYSYMBOL_NEWLINE) && !statement;
    bool eof = has(set, YYSYMBOL_YYEOF) && !statement;
    set[YYSYMBOL_NEWLINE] = set[CH(';')] = set[YYSYMBOL_YYEOF] = false;

    /* The closing bracket the innermost open one wants, if it is expected;
     * then the operators and postfix brackets that could also go on are
     * noise. */
    const Bracket *open = lex_open_bracket(P);
    int closer = 0;
    if (open) {
        closer = open->ch == '(' ? ')' : open->ch == '[' ? ']' : '}';
        if (!set[CH(closer)])
            closer = 0;
    }
    if (closer) {
        set[CH(closer)] = false;
        ops = false;
    }
    if (ops || closer)
        set[CH('[')] = set[CH('(')] = set[CH(TOK_ELVIS)] = false;
    if (closer == ')')
        set[CH('=')] = false;           /* `key = value` arguments: noise */

    for (int i = 0; i < COUNT(display_order); i++) {
        yysymbol_kind_t k = CH(display_order[i]);
        if (set[k])
            words[nw++] = yysymbol_name(k);
        set[k] = false;
    }
    if (closer) {
        int line, col;
        src_line_col(open->loc, &line, &col);
        words[nw++] = arena_printf(P->arena, "'%c' (to close '%c' at line %d)",
                                   closer, open->ch, line);
    }
    if (ops)
        words[nw++] = "operator";
    if (eol)
        words[nw++] = "end of line";
    if (eof && nw == 0)
        words[nw++] = "end of file";

    const char *found = lex_describe(P, tok, loc);
    bool op = false;
    for (int i = 0; i < COUNT(bin_ops); i++)
        op |= tok == bin_ops[i];
    if (statement && op) {
        /* The usual cause: a statement broken before an operator. */
        diag_error(loc, "expected statement before %s (to continue the "
                   "previous line, end it with the operator)", found);
    } else if (nw == 0 || nw > 6) {
        diag_error(loc, "unexpected %s", found);
    } else {
        char msg[1024];
        size_t len = 0;
        for (int i = 0; i < nw && len < sizeof msg; i++) {
            const char *glue = i == 0 ? "" : i == nw - 1 ? " or " : ", ";
            len += (size_t)snprintf(msg + len, sizeof msg - len, "%s%s", glue,
                                    words[i]);
        }
        diag_error(loc, "expected %s before %s", msg, found);
    }
    lex_enter_recovery(P, tok);
    return 0;
}

/* Bison calls this only when its stack is exhausted. */
static void ein_error(Loc *loc, Parse *P, const char *msg)
{
    (void)msg;
    if (!P->fatal)
        diag_error(*loc, "expression nested too deeply");
    P->fatal = true;
}

bool parse_run(Parse *P)
{
    return ein_parse(P) == 0;
}
