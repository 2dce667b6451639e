/* sema.h - the checker.  sema_check() resolves names, folds constants
 * (with -D overrides), inlines defs with shape unification, infers index
 * ranges, checks shapes, types and single assignment, orders statements by
 * dependence (refusing cycles) and warns about unused tensors and
 * sum-invariant terms.  Its result, the checked program, is what
 * derive/ir/lower.c turns into the tensor-expression IR. */
#ifndef EINC_SEMA_H
#define EINC_SEMA_H

#include "../lang/ast.h"

typedef enum {
    TENSOR_INPUT,                   /* input: bound per call */
    TENSOR_WEIGHT,                  /* weight: loaded once by name */
    TENSOR_DEFINED,                 /* defined by one statement */
} TensorKind;

typedef struct CTensor {
    int id;                         /* index in CProgram.tensors */
    const char *name;               /* unique; def locals are "call.local", e.g. "z1.a" */
    const char *ext;                /* an input's or weight's external name, or NULL */
    Loc ext_loc;
    TensorKind kind;
    ElemType elem;
    int rank;
    const int64_t *shape;           /* rank entries, each >= 1 */
    Loc loc;                        /* declaration or defining statement */
    bool is_output;
    int stmt;                       /* defining statement's index, or -1 */
} CTensor;

typedef enum {
    FN_RELU, FN_SIGMOID, FN_TANH, FN_EXP, FN_LOG, FN_SQRT, FN_RSQRT,
    FN_ABS, FN_ERF,                 /* one argument */
    FN_MAX, FN_MIN, FN_POW,         /* two arguments */
    FN_SELECT,                      /* select(cond, a, b) */
    FN_SIN, FN_COS, FN_FLOOR, FN_CEIL, FN_ROUND, FN_SIGN, FN_EXPM1,
    FN_LOG1P, FN_SOFTPLUS, FN_GELU, /* one argument (added after select so
                                       that the older values stay) */
    FN_TO_F32, FN_TO_F16, FN_TO_BF16, FN_TO_I8, FN_TO_I16, FN_TO_I32,
    FN_TO_I64, FN_TO_U8, FN_TO_BOOL,  /* conversions: f32(x) .. bool(x),
                                         in ElemType order */
} Func;
#define FN_TO(elem) ((Func)(FN_TO_F32 + (int)(elem)))
#define FN_IS_TO(fn) ((fn) >= FN_TO_F32 && (fn) <= FN_TO_BOOL)
#define FN_TO_ELEM(fn) ((ElemType)((fn) - FN_TO_F32))
const char *func_name(Func f);

typedef enum {
    CE_INT,                         /* integer literal or folded constant */
    CE_REAL,                        /* real literal */
    CE_VAR,                         /* an index: CStmt.vars[var] */
    CE_ACCESS,                      /* tensor[idx...]; idx are integer-typed */
    CE_CALL,                        /* func(args) */
    CE_NEG,                         /* -e */
    CE_NOT,                         /* !c */
    CE_BIN,                         /* e op e (BinOp from ast.h) */
} CExprKind;

/* A checked expression.  `is_int` marks integer-typed expressions (index
 * arithmetic: indices, constants, + - * and floor / %); the rest are real.
 * In a real context an integer expression stands for its value. */
typedef struct CExpr CExpr;
struct CExpr {
    CExprKind kind;
    bool is_int;
    bool is_bool;                   /* comparisons, &&, ||, ! */
    Loc loc;
    union {
        int64_t ival;               /* CE_INT */
        double rval;                /* CE_REAL */
        int var;                    /* CE_VAR */
        struct {                    /* CE_ACCESS */
            int tensor;
            CExpr **idx;            /* integer-typed; may hold reads of
                                       integer tensors (gathers) */
            int nidx;
            double outside;         /* what a read outside the shape gives
                                       (`?: v`; 0 when not written) */
            bool outside_given;     /* `?: v` written, even `?: 0` */
        } access;
        struct {                    /* CE_CALL */
            Func fn;
            CExpr **args;
            int nargs;
        } call;
        CExpr *operand;             /* CE_NEG, CE_NOT */
        struct {                    /* CE_BIN */
            BinOp op;
            CExpr *lhs, *rhs;
        } bin;
    };
};

/* An index of a statement with its half-open range. */
typedef struct CVar {
    const char *name;
    int64_t lo, hi;
    Loc loc;                        /* first occurrence */
} CVar;

/* One tensor definition: out[vars[0..nloops)] red body over the sum vars
 * vars[nloops..nvars), counting only the terms where every guard holds. */
typedef struct CStmt {
    int out;                        /* tensor id */
    Reduce red;                     /* RED_NONE iff nvars == nloops */
    CVar *vars;
    int nvars, nloops;
    CExpr **guards;                 /* boolean, over indices only */
    int nguards;
    CExpr *body;                    /* real-typed */
    Loc loc;                        /* the statement (for kernel comments) */
} CStmt;

typedef struct CProgram {
    const char *model;              /* `model NAME`, else the file's stem */
    CTensor *tensors;
    int ntensors;
    CStmt *stmts;                   /* in an order where uses follow definitions */
    int nstmts;
    int *outputs;                   /* tensor ids, in `output` order */
    int noutputs;
} CProgram;

typedef struct SemaOptions {
    const char *const *defines;     /* "NAME=VALUE" from -D */
    int ndefines;
    const char *model_name;         /* default model name (file stem) */
} SemaOptions;

/* Returns the checked program, or NULL after reporting every error found.
 * Everything is allocated in `arena`. */
CProgram *sema_check(const Ast *ast, const SemaOptions *opt, Arena *arena);

/* Print a checked program (debugging and tests). */
void sema_dump(const CProgram *p, void *fp);

#endif
