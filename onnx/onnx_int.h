/* onnx_int.h - what the files of onnx/ share: the graph as the importer
 * sees it (values and nodes), the operator table, and the writer's
 * helpers.
 *
 * The importer runs shape inference twice, with the inputs' first
 * dimension at its value b and at b + 1: a dimension that is the same in
 * both runs is a number, one that grows by c is c*B.  That needs no
 * symbolic reasoning in each operator, and a model that fixes its batch
 * size (a Reshape to a constant shape) shows up as a run that fails or a
 * dimension that is not a multiple of B; then every shape is written as
 * a number. */
#ifndef EINC_ONNX_INT_H
#define EINC_ONNX_INT_H

#include <stdint.h>
#include <stdio.h>

#include "lang/lang.h"
#include "onnx/onnx.h"
#include "onnx/onnx.pb-c.h"

enum { OX_MAXRANK = 8 };

/* Limits that keep the importer's arithmetic inside int64: a tensor has
 * at most 2^40 elements, an attribute of a window (kernel, stride,
 * dilation, pad) is at most 2^20, and a value is evaluated at import time
 * only up to 2^24 elements (a larger one is computed by the program). */
#define OX_MAX_ELEMS ((int64_t)1 << 40)
#define OX_MAX_ATTR ((int64_t)1 << 20)
#ifndef OX_MAX_FOLD                 /* the fuzzer's build sets a smaller one */
#define OX_MAX_FOLD ((int64_t)1 << 24)
#endif

/* ONNX element types (TensorProto.DataType). */
enum {
    OX_UNDEF = 0, OX_FLOAT = 1, OX_UINT8 = 2, OX_INT8 = 3, OX_UINT16 = 4,
    OX_INT16 = 5, OX_INT32 = 6, OX_INT64 = 7, OX_STRING = 8, OX_BOOL = 9,
    OX_FLOAT16 = 10, OX_DOUBLE = 11, OX_UINT32 = 12, OX_UINT64 = 13,
    OX_BFLOAT16 = 16,
};
const char *ox_type_name(int type);
bool ox_type_is_int(int type);          /* the integer types and bool */
/* The ein element type of an ONNX one ("f32", "i64", "bool" ...), or
 * NULL where ein has none. */
const char *ox_elem_name(int type);

/* A tensor known at import time: an initializer, a Constant, or folded. */
typedef struct OxConst {
    int type;                       /* its element type */
    int64_t n;                      /* elements */
    float *f;                       /* OX_FLOAT, OX_DOUBLE (as float) */
    int64_t *i;                     /* integer types and bool */
    uint16_t *h;                    /* OX_FLOAT16, OX_BFLOAT16: the bits */
} OxConst;

typedef enum {
    VK_NONE,                        /* not yet defined (or a missing input) */
    VK_INPUT,                       /* a graph input */
    VK_WEIGHT,                      /* an initializer (or a copy of one) */
    VK_CONST,                       /* a Constant node's or folded value */
    VK_DATA,                        /* computed by a node */
} ValKind;

/* A value in one run of the inference. */
typedef struct OxVal {
    ValKind kind;
    int type;                       /* element type */
    int rank;
    int64_t shape[OX_MAXRANK];
    OxConst *k;                     /* known data, or NULL */
    int alias;                      /* Identity of data: the value it is, else -1 */
} OxVal;

typedef struct OxNode {
    int index;                      /* in the graph */
    const char *name;               /* may be "" */
    const char *op;
    int nin, nout;
    int *in, *out;                  /* value ids; -1 for an omitted input */
    const Onnx__NodeProto *pb;      /* for its attributes */
} OxNode;

typedef struct Ox Ox;

/* An integer of the program's text: c * B^e (e = 0: a number). */
typedef struct Dim {
    int64_t c;
    int e;
} Dim;

struct Ox {
    Arena *arena;
    const char *path;
    FILE *err;                      /* the messages' stream */
    Onnx__ModelProto *model;
    int64_t opset;                  /* of the default domain */
    bool no_default_opset;          /* the model imports only other domains */

    const char **vname;             /* ONNX name of each value */
    int nvals;
    OxNode *nodes;
    int nnodes;
    int *inputs, ninputs;           /* graph inputs that are not initializers */
    int *outputs, noutputs;

    /* Two runs of the inference (see the top of this file). */
    OxVal *val[2];
    int run;                        /* the run being inferred */
    int64_t batch[2];               /* the inputs' first dimension in each */
    int batched_inputs;             /* how many inputs have B in front */
    bool symbolic;                  /* shapes written with B */
    const OxNode *fixed_by;         /* the node that keeps B from varying */
    bool quiet;                     /* run 1: errors only fail the run */
    bool failed;                    /* an error in this run */

    /* The writer. */
    char **ein;                     /* ein name of each value, once given */
    VEC(const char *) used_names;
    char *decl_buf, *stmt_buf;
    size_t decl_len, stmt_len;
    FILE *decl, *stmt;              /* declarations, statements */
    bool *declared;                 /* per value: declared in the program */
    bool *weight_out;               /* per value: goes into the weights file */
    bool write_failed;              /* symbolic mode failed: write again */
    int ntemp;
    int stmt_type;                  /* element type of the node being written */
    bool uses_lib;                  /* a def of <nn.ein> is called */
};

/* ---- errors -------------------------------------------------------------- */
/* "FILE: error: node N 'NAME' (OP): message"; in a quiet run only marks
 * the run failed.  Returns false, for `return ox_error(...)`. */
bool ox_error(Ox *ox, const OxNode *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
bool ox_unsupported(Ox *ox, const OxNode *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* `s` with its control characters written \xNN, for a message or a
 * comment (a name of the model may hold any byte but NUL). */
const char *ox_printable(Ox *ox, const char *s);

/* ---- values of the current run --------------------------------------------- */
static inline OxVal *ox_val(Ox *ox, int id) { return &ox->val[ox->run][id]; }
/* The value whose shapes decide the form of the text (where a dimension
 * is 1, say): with B, the run with the larger batch, in which B is no 1. */
static inline OxVal *ox_sval(Ox *ox, int id)
{
    return &ox->val[ox->symbolic ? 1 : 0][id];
}
OxConst *ox_const_new(Ox *ox, int type, int64_t n);
int64_t ox_numel(const OxVal *v);
/* A folded real as an integer: toward zero, saturating, NaN 0 (a C cast
 * of a value outside int64 is undefined). */
int64_t ox_f2i(double v);
/* Set an output's type and shape (and make it VK_DATA). */
void ox_set(Ox *ox, int id, int type, int rank, const int64_t *shape);

/* ---- attributes -------------------------------------------------------- */
const Onnx__AttributeProto *ox_attr(const OxNode *n, const char *name);
int64_t ox_attr_int(const OxNode *n, const char *name, int64_t dflt);
float ox_attr_float(const OxNode *n, const char *name, float dflt);
/* The string (NUL-terminated copy), or dflt. */
const char *ox_attr_str(Ox *ox, const OxNode *n, const char *name, const char *dflt);
/* The ints; *count = -1 when absent. */
const int64_t *ox_attr_ints(const OxNode *n, const char *name, int *count);
const float *ox_attr_floats(const OxNode *n, const char *name, int *count);
/* Decode a TensorProto; NULL after an error (n: the node, for messages). */
OxConst *ox_tensor(Ox *ox, const OxNode *n, const Onnx__TensorProto *t, int *rank,
                   int64_t *shape);

/* The node's input i as constant integers (after checking it is known);
 * NULL after an error.  *count gets the number. */
const int64_t *ox_const_ints(Ox *ox, const OxNode *n, int i, int *count);
/* Input i as a known float scalar; false after an error. */
bool ox_const_scalar(Ox *ox, const OxNode *n, int i, double *out);
/* Does input i exist (not omitted)? */
static inline bool ox_has_in(const OxNode *n, int i) { return i < n->nin && n->in[i] >= 0; }
/* Normalize an axis of a tensor of `rank` ([-rank, rank) for operators,
 * [-rank-1, rank] with `extra`); false after an error. */
bool ox_axis(Ox *ox, const OxNode *n, int64_t a, int rank, int *out);

/* ---- the operator table ----------------------------------------------------- */
typedef struct OxOp {
    const char *name;
    /* Set the outputs (shapes, and data where the op folds constants). */
    bool (*infer)(Ox *, const OxNode *);
    /* Write the statements for the outputs. */
    bool (*write)(Ox *, const OxNode *);
} OxOp;

extern const OxOp ox_ops_elem[], ox_ops_nn[], ox_ops_shape[];
const OxOp *ox_find_op(const char *name);

/* ---- the writer (write.c) ---------------------------------------------------- */
Dim ox_dim(Ox *ox, int id, int d);          /* dimension d of value id */
Dim ox_dim_num(int64_t n);
/* A writer bakes dimension d of value id into its text as a number: with
 * B, it must be the same in both runs, else the program is written again
 * with every shape a number. */
void ox_need_fixed(Ox *ox, int id, int d);
void ox_need_fixed_from(Ox *ox, int id, int from);  /* dims from.. */
/* A writer reads dim d of value id at the output's index (not broadcast
 * in the run with the larger batch): the output's dim is out0 in run 0;
 * where they differ with B the program is written again with numbers. */
void ox_need_bcast_same(Ox *ox, int id, int d, int64_t out0);
Dim ox_dim_mul(Dim a, Dim b);
const char *ox_dim_str(Ox *ox, Dim d);      /* "64", "B", "8*B" */
/* The product of dims [from, to) of value id. */
Dim ox_dims_prod(Ox *ox, int id, int from, int to);

/* The ein name of value id (for reading it: declares inputs, weights and
 * constants on first use). */
const char *ox_name(Ox *ox, int id);
/* A new name for a tensor of the writer's own, from a value's name. */
const char *ox_temp(Ox *ox, int id, const char *suffix);
/* Read value id: "x[i0, i1]" with the given subscripts; a constant with
 * one element is its value.  idx[rank] strings. */
const char *ox_read(Ox *ox, int id, const char *const *idx);
/* Read value id broadcast (numpy rules) into an output of rank `rank`
 * whose subscripts are idx (i0, ..): size-1 dims read at 0, leading dims
 * dropped. */
const char *ox_read_bcast(Ox *ox, int id, int rank, const int64_t *shape,
                          const char *const *idx);
/* A read as a condition (of select, && and ||): a read of a tensor is
 * one, a number (a known value of one element) becomes one with bool(). */
const char *ox_cond(Ox *ox, const char *read);
/* The loop index names i0..i{n-1}. */
const char *const *ox_loop_idx(Ox *ox, int n);
/* A real literal that reads back as the same float. */
const char *ox_real(Ox *ox, double v);
/* An integer literal of the exact value (negative ones in parentheses;
 * INT64_MIN, which no literal is, as an expression). */
const char *ox_int(Ox *ox, int64_t v);

/* Write a tensor statement: `name[i0..] : [shape] OP body [where ...]`.
 * shape: rank Dims; `where` may be NULL. */
void ox_stmt(Ox *ox, const char *name, int rank, const Dim *shape, const char *op,
             const char *body, const char *where);
/* The output's shape as Dims (value id's, in this run). */
Dim *ox_shape_dims(Ox *ox, int id);
/* Standard-library calls (lib/nn.ein, `import <nn.ein>`): `y = def(args)`
 * for output id; args is the argument list (value names from ox_name). */
void ox_call(Ox *ox, int id, const char *def, const char *args);
/* Are the node's inputs that exist and its first output all f32 (the
 * element type of <nn.ein>'s defs)? */
bool ox_all_f32(Ox *ox, const OxNode *n);
/* A comment line before a node's statements. */
void ox_comment_node(Ox *ox, const OxNode *n);

#endif
