/* ast.h - the syntax tree the parser builds and sema reads.
 * Nodes live in the parse arena and are not changed after parsing.  One
 * Expr node type serves index expressions (in subscripts, shapes, where
 * clauses, const values) and scalar expressions (statement bodies); sema
 * decides which by context. */
#ifndef EINC_AST_H
#define EINC_AST_H

#include "lang.h"

typedef enum {
    ELEM_F32,                       /* f32 */
    ELEM_F16,                       /* f16 */
    ELEM_BF16,                      /* bf16 */
    ELEM_I8,                        /* i8    signed integers, two's complement */
    ELEM_I16,                       /* i16 */
    ELEM_I32,                       /* i32 */
    ELEM_I64,                       /* i64 */
    ELEM_U8,                        /* u8    unsigned */
    ELEM_BOOL,                      /* bool  0 or 1, one byte */
} ElemType;
#define ELEM_COUNT (ELEM_BOOL + 1)
const char *elem_name(ElemType t);
/* An element type's name, or -1 when `name` is none. */
int elem_lookup(const char *name);
bool elem_is_int(ElemType t);        /* the integer types and bool */
/* Bytes per element in a buffer: 1, 2, 4 or 8. */
size_t elem_size(ElemType t);
/* The range of an integer type's values (bool: 0..1). */
void elem_int_range(ElemType t, int64_t *lo, int64_t *hi);

typedef enum {
    OP_ADD,                         /* + */
    OP_SUB,                         /* - */
    OP_MUL,                         /* * */
    OP_DIV,                         /* /  floor division on indices, real on scalars */
    OP_MOD,                         /* %  modulo with the divisor's sign */
    OP_EQ,                          /* == */
    OP_NE,                          /* != */
    OP_LT,                          /* < */
    OP_LE,                          /* <= */
    OP_GT,                          /* > */
    OP_GE,                          /* >= */
    OP_AND,                         /* && */
    OP_OR,                          /* || */
} BinOp;
const char *binop_str(BinOp op);

typedef enum {
    EX_INT,                         /* 42 */
    EX_REAL,                        /* 0.5, 1e-5 */
    EX_NAME,                        /* i, N: an index or a constant */
    EX_ACCESS,                      /* x[i, j + 1], t[] */
    EX_CALL,                        /* relu(e), max(a, b), select(c, a, b) */
    EX_NEG,                         /* -e */
    EX_NOT,                         /* !e */
    EX_BIN,                         /* e op e */
    EX_IN,                          /* i in lo..hi   (only in where) */
} ExprKind;

typedef struct Expr Expr;
struct Expr {
    ExprKind kind;
    Loc loc;                        /* the whole expression */
    union {
        int64_t ival;               /* EX_INT */
        double rval;                /* EX_REAL */
        Sym name;                   /* EX_NAME */
        struct {                    /* EX_ACCESS, EX_CALL */
            Sym name;
            Loc name_loc;
            Expr **args;            /* subscripts or arguments */
            int nargs;
            Expr *outside;          /* EX_ACCESS: `x[..] ?: v`, else NULL */
            Sym *keys;              /* EX_CALL: `name = arg` keys, 0 for a
                                       positional argument; NULL: none */
        } call;
        Expr *operand;              /* EX_NEG, EX_NOT */
        struct {                    /* EX_BIN */
            BinOp op;
            Expr *lhs, *rhs;
            Loc op_loc;
        } bin;
        struct {                    /* EX_IN */
            Sym var;
            Loc var_loc;
            Expr *lo, *hi;          /* half-open [lo, hi) */
        } in;
    };
};

/* f32[N, C, 3, 3] */
typedef struct TypeExpr {
    ElemType elem;
    Expr **dims;
    int ndims;
    Loc loc;
} TypeExpr;

typedef enum {
    RED_NONE,                       /* =    a map */
    RED_SUM,                        /* +=   */
    RED_MAX,                        /* max= */
    RED_MIN,                        /* min= */
    RED_PROD,                       /* *=   product */
} Reduce;
const char *reduce_str(Reduce r);  /* "=", "+=", "max=", "min=", "*=" */

typedef enum {
    ST_CONST,                       /* const N = 1 */
    ST_TENSOR,                      /* input x : f32[..] / weight w : f32[..] */
    ST_OUTPUT,                      /* output z */
    ST_DEF,                         /* def f(params) -> outs { body } */
    ST_IMPORT,                      /* import "file.ein", import <nn.ein> */
    ST_MODEL,                       /* model NAME */
    ST_ASSIGN,                      /* y[i, j] : [M, N] += body where conds */
    ST_BIND,                        /* a, b = f(x, y)   (a def call) */
} StmtKind;

typedef enum { DECL_INPUT, DECL_WEIGHT } DeclKind;

typedef enum {
    PARAM_TENSOR,                   /* x : f32[N, C, H, W] */
    PARAM_CONST,                    /* const K [= 3]     an integer constant */
    PARAM_SCALAR,                   /* eps : f32 [= 1e-5]  a real number */
} ParamKind;

typedef struct Param {              /* a def parameter */
    Sym name;
    Loc loc;
    ParamKind kind;
    TypeExpr type;                  /* PARAM_TENSOR; PARAM_SCALAR: elem only */
    Expr *dflt;                     /* CONST, SCALAR: the default, or NULL */
} Param;

typedef struct Stmt Stmt;
struct Stmt {
    StmtKind kind;
    Loc loc;                        /* the whole statement */
    union {
        struct {                    /* ST_CONST: one name per statement */
            Sym name;
            Loc name_loc;
            Expr *value;
        } cnst;
        struct {                    /* ST_TENSOR: one name per statement */
            DeclKind kind;
            Sym name;
            Loc name_loc;
            TypeExpr type;
            const char *ext;        /* external name ("conv1.weight"), or NULL */
            Loc ext_loc;
        } decl;
        struct {                    /* ST_OUTPUT: one name per statement */
            Sym name;
            Loc name_loc;
        } output;
        struct {                    /* ST_DEF */
            Sym name;
            Loc name_loc;
            Param *params;
            int nparams;
            Sym *outs;              /* names after -> */
            Loc *out_locs;
            int nouts;
            Stmt **body;
            int nbody;
        } def;
        struct {                    /* ST_IMPORT */
            const char *path;       /* unescaped */
            bool library;           /* import <path>: the -I folders and the
                                       standard library, not the importer's */
            int file;               /* src id once loaded, else -1 */
            Stmt **stmts;           /* the imported file's statements */
            int nstmts;
        } import;
        struct {                    /* ST_MODEL */
            Sym name;
        } model;
        struct {                    /* ST_ASSIGN */
            Sym name;
            Loc name_loc;
            Sym *idx;               /* left-hand indices: plain names */
            Loc *idx_locs;
            int nidx;
            Expr **shape;           /* declared shape, or NULL */
            int nshape;             /* -1: none declared */
            int elem;               /* ElemType of `: f16[..]`, -1: not given */
            Loc shape_loc;
            Reduce red;
            Loc op_loc;
            Expr *body;
            Expr **where;           /* conditions, in order; EX_IN for ranges */
            int nwhere;
        } assign;
        struct {                    /* ST_BIND: outs = callee(args) */
            Sym *outs;
            Loc *out_locs;
            int nouts;
            Sym callee;
            Loc callee_loc;
            Sym *args;              /* a tensor name, or 0 for another expression */
            Loc *arg_locs;
            Expr **arg_exprs;       /* each argument as written */
            Sym *arg_keys;          /* `key = value` arguments' keys, else 0 */
            int nargs;
        } bind;
    };
};

/* A parsed file: its statements in order.  Imports are resolved by the
 * parse driver, which loads each file once and refuses cycles. */
typedef struct Ast {
    Stmt **stmts;
    int nstmts;
    int file;                       /* src id of the main file */
} Ast;

/* Dump an AST in a stable s-expression form (for parser tests). */
void ast_dump(const Ast *ast, void *fp);

#endif
