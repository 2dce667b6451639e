/* ops_elem.c - element-wise operators (unary, binary with numpy
 * broadcasting, Clip, variadic Sum/Mean/Max/Min), softmax, the
 * normalizations and the reductions.  Element-wise operators on values
 * known at import time are folded (evaluated here, in double precision),
 * which is what the shape arithmetic of exported models needs. */
#include "config.h"

#include <math.h>
#include <string.h>

#include "onnx/onnx_int.h"

/* ---- broadcasting ---------------------------------------------------------------- */

/* The numpy broadcast of the inputs' shapes into *rank/shape. */
static bool bcast_shape(Ox *ox, const OxNode *n, int from, int *rank, int64_t *shape)
{
    *rank = 0;
    for (int i = from; i < n->nin; i++) {
        if (n->in[i] < 0)
            continue;
        OxVal *v = ox_val(ox, n->in[i]);
        if (v->rank > *rank) {
            for (int d = *rank - 1; d >= 0; d--)
                shape[d + v->rank - *rank] = shape[d];
            for (int d = 0; d < v->rank - *rank; d++)
                shape[d] = 1;
            *rank = v->rank;
        }
        for (int d = 0; d < v->rank; d++) {
            int64_t *o = &shape[*rank - v->rank + d];
            if (v->shape[d] == *o || v->shape[d] == 1)
                continue;
            if (*o != 1)
                return ox_error(ox, n, "shapes do not broadcast: dimension %d is %lld and "
                                "%lld", d, (long long)*o, (long long)v->shape[d]);
            *o = v->shape[d];
        }
    }
    return true;
}

/* The flat index into v of output element `flat` of an output of rank/shape. */
static int64_t bcast_index(const OxVal *v, int rank, const int64_t *shape, int64_t flat)
{
    int64_t idx = 0, stride = 1;
    for (int d = rank - 1; d >= 0; d--) {
        int64_t o = flat % shape[d];
        flat /= shape[d];
        int vd = v->rank - rank + d;
        if (vd >= 0) {
            if (v->shape[vd] != 1)
                idx += o * stride;
            stride *= v->shape[vd];
        }
    }
    return idx;
}

static double kval(const OxConst *k, int64_t j)
{
    return k->f ? k->f[j] : k->i ? (double)k->i[j] : 0;
}

static bool all_known(Ox *ox, const OxNode *n)
{
    for (int i = 0; i < n->nin; i++)
        if (n->in[i] >= 0 && (!ox_val(ox, n->in[i])->k || ox_val(ox, n->in[i])->k->h))
            return false;
    return n->nin > 0;
}

/* ---- element-wise functions ---------------------------------------------------------- */

typedef enum {
    U_RELU, U_SIGMOID, U_TANH, U_EXP, U_LOG, U_SQRT, U_ABS, U_ERF, U_NEG, U_RECIPROCAL,
    U_LEAKYRELU, U_ELU, U_SELU, U_HARDSIGMOID, U_HARDSWISH, U_SOFTPLUS, U_SOFTSIGN,
    U_GELU, U_CLIP, U_SIGN, U_IDENTITY, U_CAST, U_NOT,
    B_ADD, B_SUB, B_MUL, B_DIV, B_MOD, B_FMOD, B_POW, B_MAX, B_MIN, B_SUM, B_MEAN, B_PRELU,
    B_EQUAL, B_LESS, B_GREATER, B_LESS_EQUAL, B_GREATER_EQUAL, B_AND, B_OR, B_XOR,
} Fn;

static const struct { const char *name; Fn fn; } fns[] = {
    {"Relu", U_RELU}, {"Sigmoid", U_SIGMOID}, {"Tanh", U_TANH}, {"Exp", U_EXP},
    {"Log", U_LOG}, {"Sqrt", U_SQRT}, {"Abs", U_ABS}, {"Erf", U_ERF}, {"Neg", U_NEG},
    {"Reciprocal", U_RECIPROCAL}, {"LeakyRelu", U_LEAKYRELU}, {"Elu", U_ELU},
    {"Selu", U_SELU}, {"HardSigmoid", U_HARDSIGMOID}, {"HardSwish", U_HARDSWISH},
    {"Softplus", U_SOFTPLUS}, {"Softsign", U_SOFTSIGN}, {"Gelu", U_GELU}, {"Clip", U_CLIP},
    {"Sign", U_SIGN}, {"Identity", U_IDENTITY}, {"Dropout", U_IDENTITY}, {"Cast", U_CAST},
    {"CastLike", U_CAST},
    {"Add", B_ADD}, {"Sub", B_SUB}, {"Mul", B_MUL}, {"Div", B_DIV}, {"Mod", B_MOD},
    {"Pow", B_POW},
    {"Max", B_MAX}, {"Min", B_MIN}, {"Sum", B_SUM}, {"Mean", B_MEAN}, {"PRelu", B_PRELU},
    {"Equal", B_EQUAL}, {"Less", B_LESS}, {"Greater", B_GREATER},
    {"LessOrEqual", B_LESS_EQUAL}, {"GreaterOrEqual", B_GREATER_EQUAL}, {"And", B_AND},
    {"Or", B_OR}, {"Xor", B_XOR}, {"Not", U_NOT},
};

static Fn fn_of(const OxNode *n)
{
    for (size_t i = 0; i < sizeof fns / sizeof *fns; i++)
        if (strcmp(fns[i].name, n->op) == 0)
            /* Mod: the sign of the divisor, or with fmod=1 C's fmod's, the
             * dividend's */
            return fns[i].fn == B_MOD && ox_attr_int(n, "fmod", 0) ? B_FMOD : fns[i].fn;
    return U_IDENTITY;
}

static bool is_binary(Fn f)
{
    return f >= B_ADD;
}

/* A comparison or a logical operator: a bool result. */
static bool is_compare(Fn f)
{
    return f >= B_EQUAL || f == U_NOT;
}

/* The logical operators, whose inputs are bool. */
static bool is_logical(Fn f)
{
    return f >= B_AND || f == U_NOT;
}

/* The value of a unary function, for folding. */
static double eval_unary(Fn f, double x)
{
    switch (f) {
    case U_RELU: return x > 0 ? x : 0;
    case U_SIGMOID: return 1 / (1 + exp(-x));
    case U_TANH: return tanh(x);
    case U_EXP: return exp(x);
    case U_LOG: return log(x);
    case U_SQRT: return sqrt(x);
    case U_ABS: return fabs(x);
    case U_ERF: return erf(x);
    case U_NEG: return -x;
    case U_RECIPROCAL: return 1 / x;
    case U_SIGN: return x > 0 ? 1 : x < 0 ? -1 : 0;
    case U_NOT: return x == 0;
    default: return x;
    }
}

static double eval_binary(Fn f, double a, double b, bool ints)
{
    switch (f) {
    case B_ADD: case B_SUM: return a + b;
    case B_SUB: return a - b;
    case B_MUL: return a * b;
    case B_DIV: return ints ? (b != 0 ? trunc(a / b) : 0) : a / b;
    case B_MOD: case B_FMOD: {
        if (ints && b == 0)
            return 0;
        double r = fmod(a, b);
        return f == B_MOD && r != 0 && (r < 0) != (b < 0) ? r + b : r;
    }
    case B_POW: return pow(a, b);
    case B_MAX: return a > b ? a : b;
    case B_MIN: return a < b ? a : b;
    case B_EQUAL: return a == b;
    case B_LESS: return a < b;
    case B_GREATER: return a > b;
    case B_LESS_EQUAL: return a <= b;
    case B_GREATER_EQUAL: return a >= b;
    case B_AND: return a && b;
    case B_OR: return a || b;
    case B_XOR: return (a != 0) != (b != 0);
    default: return a;
    }
}

/* Does ein's element type `to` hold every value of ONNX's `from` (an
 * integer type ein reads)?  A float holds them for a cast to it (rounded
 * past 2^24, as ONNX's cast rounds). */
static bool int_holds(int to, int from)
{
    int64_t lo, hi, tlo, thi;
    static const struct { int type; int64_t lo, hi; } r[] = {
        {OX_BOOL, 0, 1}, {OX_UINT8, 0, 255}, {OX_INT8, -128, 127},
        {OX_INT16, -32768, 32767}, {OX_INT32, INT32_MIN, INT32_MAX},
        {OX_INT64, INT64_MIN, INT64_MAX},
    };
    int fi = -1, ti = -1;
    for (int i = 0; i < 6; i++) {
        if (r[i].type == from)
            fi = i;
        if (r[i].type == to)
            ti = i;
    }
    if (fi < 0 || !ox_elem_name(from))
        return false;
    if (to == OX_FLOAT || to == OX_FLOAT16 || to == OX_BFLOAT16)
        return true;
    if (ti < 0)
        return false;
    lo = r[fi].lo, hi = r[fi].hi, tlo = r[ti].lo, thi = r[ti].hi;
    return tlo <= lo && hi <= thi;
}

/* Cast's attribute `to`; CastLike's second input's type (only its type
 * is read). */
static bool cast_target(Ox *ox, const OxNode *n, int *to)
{
    if (strcmp(n->op, "CastLike") != 0) {
        *to = (int)ox_attr_int(n, "to", 0);
        return true;
    }
    *to = OX_UNDEF;
    if (!ox_has_in(n, 1))
        return ox_error(ox, n, "needs two inputs");
    *to = ox_val(ox, n->in[1])->type;
    return true;
}

static bool elem_infer(Ox *ox, const OxNode *n)
{
    Fn f = fn_of(n);
    if (n->nin < 1 || n->in[0] < 0 || n->nout < 1 || n->out[0] < 0)
        return ox_error(ox, n, "needs an input and an output");
    OxVal *x = ox_val(ox, n->in[0]);
    if (f == U_IDENTITY) {
        if (strcmp(n->op, "Dropout") == 0) {
            /* in training mode with a ratio of 0 it drops nothing either */
            if (ox_has_in(n, 2)) {
                OxVal *t = ox_val(ox, n->in[2]), *r = ox_has_in(n, 1) ? ox_val(ox, n->in[1])
                                                                       : NULL;
                bool none = r && r->k && !r->k->h && ox_numel(r) == 1 && kval(r->k, 0) == 0;
                if ((!t->k || !t->k->i || t->k->i[0] != 0) && !none)
                    return ox_unsupported(ox, n, "Dropout in training mode");
            }
            if (n->nout > 1 && n->out[1] >= 0) {
                /* in inference the mask keeps every element: known trues */
                int64_t cnt = ox_numel(x);
                if (cnt > OX_MAX_FOLD)
                    return ox_unsupported(ox, n, "the mask output of Dropout on %lld "
                                          "elements", (long long)cnt);
                ox_set(ox, n->out[1], OX_BOOL, x->rank, x->shape);
                OxVal *m = ox_val(ox, n->out[1]);
                m->kind = VK_CONST;
                m->k = ox_const_new(ox, OX_INT64, cnt);
                m->k->type = OX_BOOL;
                for (int64_t j = 0; j < cnt; j++)
                    m->k->i[j] = 1;
            }
        }
        OxVal *y = ox_val(ox, n->out[0]);
        *y = *x;
        if (x->kind == VK_INPUT || x->kind == VK_DATA) {
            y->kind = VK_DATA;
            y->alias = n->in[0];
        }
        /* An initializer's copy stays a weight of its own, under its own
         * name, so that a state_dict loads by the names it has. */
        return true;
    }
    if (f == U_CAST) {
        int to;
        if (!cast_target(ox, n, &to))
            return false;
        OxVal *y = ox_val(ox, n->out[0]);
        if (x->k && !x->k->h && (to == OX_FLOAT || to == OX_DOUBLE || ox_type_is_int(to)) &&
            x->k->n <= OX_MAX_FOLD) {
            *y = *x;
            y->kind = VK_CONST;
            y->type = to;
            y->k = ox_const_new(ox, to == OX_DOUBLE ? OX_FLOAT : to, x->k->n);
            for (int64_t j = 0; j < x->k->n; j++) {
                double v = kval(x->k, j);
                if (y->k->f)
                    y->k->f[j] = (float)v;
                else
                    y->k->i[j] = to == OX_BOOL ? v != 0 : ox_f2i(v);
            }
            return true;
        }
        bool fl = x->type == OX_FLOAT || x->type == OX_FLOAT16 || x->type == OX_BFLOAT16;
        if (to == x->type && fl) {
            *y = *x;
            y->kind = VK_DATA;
            y->alias = n->in[0];
            return true;
        }
        bool to_fl = to == OX_FLOAT || to == OX_FLOAT16 || to == OX_BFLOAT16;
        if ((fl || int_holds(to, x->type)) && to_fl) {
            ox_set(ox, n->out[0], to, x->rank, x->shape);   /* a copy that rounds */
            return true;
        }
        /* To an integer type: from a real, toward zero as ONNX (and a store,
         * ein(5)) converts; from an integer type whose values it holds. */
        if (ox_elem_name(to) && !to_fl &&
            (fl || to == OX_BOOL || int_holds(to, x->type))) {
            ox_set(ox, n->out[0], to, x->rank, x->shape);
            return true;
        }
        return ox_unsupported(ox, n, "Cast from %s to %s at run time", ox_type_name(x->type),
                              ox_type_name(to));
    }
    int rank;
    int64_t shape[OX_MAXRANK];
    if (is_binary(f) && f != B_PRELU) {
        if (!bcast_shape(ox, n, 0, &rank, shape))
            return false;
        if ((f <= B_POW || f == B_PRELU || is_compare(f)) && f != B_SUM && f != B_MEAN &&
            f != B_MAX && f != B_MIN && n->nin != 2)
            return ox_error(ox, n, "needs two inputs, not %d", n->nin);
    } else {
        rank = x->rank;
        memcpy(shape, x->shape, sizeof shape);
        if (f == B_PRELU && (n->nin != 2 || n->in[1] < 0))
            return ox_error(ox, n, "needs two inputs");
        if (f == B_PRELU) {
            OxVal *sv = ox_val(ox, n->in[1]);
            bool legacy = ox->opset < 7 && sv->rank == 1 && rank >= 2 &&
                          sv->shape[0] == shape[1];
            for (int d = 0; d < sv->rank && !legacy; d++) {
                int od = rank - sv->rank + d;
                if (od < 0 || (sv->shape[d] != 1 && sv->shape[d] != shape[od]))
                    return ox_error(ox, n, "the slope does not broadcast to the input");
            }
        }
    }
    if (is_binary(f) && is_compare(f) && n->in[1] < 0)
        return ox_error(ox, n, "input 1 is missing");
    for (int i = 0; i < n->nin && is_logical(f); i++)
        if (n->in[i] >= 0 && ox_val(ox, n->in[i])->type != OX_BOOL)
            return ox_error(ox, n, "input %d is %s, not bool", i,
                            ox_type_name(ox_val(ox, n->in[i])->type));
    int type = is_compare(f) ? OX_BOOL : x->type;
    for (int i = 1; i < n->nin && !is_compare(f); i++)
        if (n->in[i] >= 0 && ox_val(ox, n->in[i])->type != x->type && f != B_POW &&
            f != U_CLIP)
            return ox_error(ox, n, "inputs of element types %s and %s", ox_type_name(x->type),
                            ox_type_name(ox_val(ox, n->in[i])->type));
    if (f == B_MOD && !ox_type_is_int(x->type))
        return ox_error(ox, n, "fmod=0 on %s inputs: ONNX's Mod of reals needs fmod=1",
                        ox_type_name(x->type));
    ox_set(ox, n->out[0], type, rank, shape);
    OxVal *y = ox_val(ox, n->out[0]);
    /* Fold what is known. */
    if (all_known(ox, n) && (is_binary(f) || f <= U_RECIPROCAL || f == U_SIGN || f == U_NOT) &&
        ox_numel(y) <= OX_MAX_FOLD) {
        bool ints = ox_type_is_int(type) || (is_compare(f) && ox_type_is_int(x->type));
        int64_t cnt = ox_numel(y);
        y->kind = VK_CONST;
        y->k = ox_const_new(ox, ox_type_is_int(type) ? OX_INT64 : OX_FLOAT, cnt);
        y->k->type = type;
        for (int64_t j = 0; j < cnt; j++) {
            double r = 0;
            for (int i = 0; i < n->nin; i++) {
                if (n->in[i] < 0)
                    continue;
                OxVal *v = ox_val(ox, n->in[i]);
                double a = kval(v->k, bcast_index(v, rank, shape, j));
                if (!is_binary(f) && i > 0)
                    break;
                r = i == 0 ? (is_binary(f) ? a : eval_unary(f, a)) : eval_binary(f, r, a, ints);
            }
            if (f == B_MEAN)
                r /= n->nin;
            if (y->k->f)
                y->k->f[j] = (float)r;
            else
                y->k->i[j] = ox_f2i(r);
        }
    }
    return true;
}

/* The function of `x` (a read) for node n; NULL after an error. */
static const char *unary_body(Ox *ox, const OxNode *n, Fn f, const char *x)
{
    Arena *a = ox->arena;
    switch (f) {
    case U_RELU: return arena_printf(a, "relu(%s)", x);
    case U_SIGMOID: return arena_printf(a, "sigmoid(%s)", x);
    case U_TANH: return arena_printf(a, "tanh(%s)", x);
    case U_EXP: return arena_printf(a, "exp(%s)", x);
    case U_LOG: return arena_printf(a, "log(%s)", x);
    case U_SQRT: return arena_printf(a, "sqrt(%s)", x);
    case U_ABS: return arena_printf(a, "abs(%s)", x);
    case U_ERF: return arena_printf(a, "erf(%s)", x);
    case U_NEG: return arena_printf(a, "-%s", x);
    case U_RECIPROCAL: return arena_printf(a, "1 / %s", x);
    case U_SIGN: return arena_printf(a, "select(%s > 0, 1, select(%s < 0, -1, 0))", x, x);
    case U_LEAKYRELU:
        return arena_printf(a, "select(%s < 0, %s * %s, %s)", x,
                            ox_real(ox, ox_attr_float(n, "alpha", 0.01f)), x, x);
    case U_ELU:
        return arena_printf(a, "select(%s < 0, %s * (exp(%s) - 1), %s)", x,
                            ox_real(ox, ox_attr_float(n, "alpha", 1.0f)), x, x);
    case U_SELU: {
        /* one ox_real at a time: each may report an error */
        const char *g = ox_real(ox, ox_attr_float(n, "gamma", 1.05070102214813232421875f));
        const char *al = ox_real(ox, ox_attr_float(n, "alpha", 1.67326319217681884765625f));
        return arena_printf(a, "%s * select(%s <= 0, %s * (exp(%s) - 1), %s)", g, x, al, x, x);
    }
    case U_HARDSIGMOID: {
        const char *al = ox_real(ox, ox_attr_float(n, "alpha", 0.2f));
        const char *b = ox_real(ox, ox_attr_float(n, "beta", 0.5f));
        return arena_printf(a, "max(0, min(1, %s * %s + %s))", al, x, b);
    }
    case U_HARDSWISH:
        return arena_printf(a, "%s * max(0, min(1, %s / 6 + 0.5))", x, x);
    case U_SOFTPLUS: return arena_printf(a, "log(exp(%s) + 1)", x);
    case U_SOFTSIGN: return arena_printf(a, "%s / (1 + abs(%s))", x, x);
    case U_GELU: {
        const char *approx = ox_attr_str(ox, n, "approximate", "none");
        if (strcmp(approx, "tanh") == 0)
            return arena_printf(a, "0.5 * %s * (1 + tanh(0.7978845608028654 * (%s + "
                                "0.044715 * %s * %s * %s)))", x, x, x, x, x);
        if (strcmp(approx, "none") != 0)
            return ox_error(ox, n, "unknown approximate '%s'", approx), NULL;
        return arena_printf(a, "0.5 * %s * (1 + erf(%s * 0.7071067811865476))", x, x);
    }
    case U_CLIP: {
        const char *lo = NULL, *hi = NULL;
        if (ox->opset < 11) {
            const Onnx__AttributeProto *mn = ox_attr(n, "min"), *mx = ox_attr(n, "max");
            if (mn)
                lo = ox_real(ox, mn->f);
            if (mx)
                hi = ox_real(ox, mx->f);
        } else {
            /* min and max: numbers, or rank-0 tensors read at run time */
            for (int i = 1; i <= 2; i++) {
                if (!ox_has_in(n, i))
                    continue;
                OxVal *b = ox_val(ox, n->in[i]);
                if (b->rank > 1 || ox_numel(b) != 1)
                    return ox_error(ox, n, "input %d must be a single number", i), NULL;
                const char *zero[1] = {"0"};
                const char *r = ox_read(ox, n->in[i], zero);
                *(i == 1 ? &lo : &hi) = r;
            }
        }
        const char *s = x;
        if (hi)
            s = arena_printf(a, "min(%s, %s)", s, hi);
        if (lo)
            s = arena_printf(a, "max(%s, %s)", s, lo);
        return s;
    }
    case U_NOT: return arena_printf(a, "!%s", x);
    default:
        return x;
    }
}

static bool elem_write(Ox *ox, const OxNode *n)
{
    Fn f = fn_of(n);
    int id = n->out[0];
    OxVal *y = ox_val(ox, id);
    if (y->alias >= 0)
        return true;
    const char *const *idx = ox_loop_idx(ox, y->rank);
    const char *body;
    if (f == B_PRELU) {
        const char *x = ox_read(ox, n->in[0], idx);
        OxVal *sv = ox_val(ox, n->in[1]);
        /* Before opset 7 a slope of shape [C] is per channel (dim 1), not
         * numpy-aligned to the last dimension. */
        const char *c[1] = {"i1"};
        bool legacy = ox->opset < 7 && sv->rank == 1 && y->rank >= 2 &&
                      sv->shape[0] == y->shape[1] && sv->shape[0] != 1;
        const char *s = legacy ? ox_read(ox, n->in[1], c)
                               : ox_read_bcast(ox, n->in[1], y->rank, y->shape, idx);
        body = arena_printf(ox->arena, "select(%s < 0, %s * %s, %s)", x, s, x, x);
    } else if (is_binary(f) && is_compare(f)) {
        /* a condition as the whole body of a bool tensor (ein(5)); a bool
         * read is a condition for && and ||, and its value 0 or 1 for != */
        static const char *const op[] = {
            [B_EQUAL] = "==", [B_LESS] = "<", [B_GREATER] = ">", [B_LESS_EQUAL] = "<=",
            [B_GREATER_EQUAL] = ">=", [B_AND] = "&&", [B_OR] = "||", [B_XOR] = "!=",
        };
        const char *a = ox_read_bcast(ox, n->in[0], y->rank, y->shape, idx);
        const char *b = ox_read_bcast(ox, n->in[1], y->rank, y->shape, idx);
        if (f == B_AND || f == B_OR)
            a = ox_cond(ox, a), b = ox_cond(ox, b);
        body = arena_printf(ox->arena, "%s %s %s", a, op[f], b);
    } else if (is_binary(f)) {
        static const char *const op[] = {
            [B_ADD] = "+", [B_SUB] = "-", [B_MUL] = "*", [B_DIV] = "/", [B_SUM] = "+",
            [B_MEAN] = "+",
        };
        body = NULL;
        for (int i = 0; i < n->nin; i++) {
            if (n->in[i] < 0)
                continue;
            const char *r = ox_read_bcast(ox, n->in[i], y->rank, y->shape, idx);
            if (!body)
                body = r;
            else if (f == B_POW)
                body = arena_printf(ox->arena, "pow(%s, %s)", body, r);
            else if (f == B_MAX || f == B_MIN)
                body = arena_printf(ox->arena, "%s(%s, %s)", f == B_MAX ? "max" : "min",
                                    body, r);
            else if (f == B_SUB || f == B_DIV)
                body = arena_printf(ox->arena, "%s %s %s", body, op[f],
                                    strchr(r, ' ') ? arena_printf(ox->arena, "(%s)", r) : r);
            else if (f == B_FMOD) {
                /* a - b * trunc(a / b): a real Mod (integers are folded or
                 * refused: graph.c) */
                const char *a = strchr(body, ' ') || body[0] == '-'
                                    ? arena_printf(ox->arena, "(%s)", body) : body;
                const char *b = strchr(r, ' ') || r[0] == '-'
                                    ? arena_printf(ox->arena, "(%s)", r) : r;
                const char *q = arena_printf(ox->arena, "%s / %s", a, b);
                body = arena_printf(ox->arena, "%s - %s * select(%s < 0, ceil(%s), floor(%s))",
                                    a, b, q, q, q);
            }
            else
                body = arena_printf(ox->arena, "%s %s %s", body, op[f], r);
        }
        if (f == B_MEAN)
            body = arena_printf(ox->arena, "(%s) / %d", body, n->nin);
    } else {
        body = unary_body(ox, n, f, ox_read(ox, n->in[0], idx));
        if (!body)
            return false;
        OxVal *x = ox_val(ox, n->in[0]);
        if (f == U_CAST && ox_type_is_int(y->type) && !ox_type_is_int(x->type))
            /* a real stored into integers needs the conversion written */
            body = arena_printf(ox->arena, "%s(%s)", ox_elem_name(y->type), body);
    }
    ox_stmt(ox, ox_name(ox, id), y->rank, ox_shape_dims(ox, id), "=", body, NULL);
    return true;
}

/* ---- reductions: the kept and reduced dimensions ---------------------------------------- */

/* Subscripts for reading x (rank) in a statement over the kept dims:
 * reduced dim d gets "j<k>", kept ones "i<pos>" (their position among
 * the kept) or, with `full`, "i<d>". */
static const char **red_idx(Ox *ox, int rank, const bool *red, bool full)
{
    const char **s = arena_alloc(ox->arena, (size_t)(rank + 1) * sizeof *s);
    int kept = 0, nr = 0;
    for (int d = 0; d < rank; d++)
        s[d] = red[d] ? arena_printf(ox->arena, "j%d", nr++)
                      : arena_printf(ox->arena, "i%d", full ? d : kept++);
    return s;
}

/* Subscripts of the reduced tensor (kept dims only) in a statement over
 * all dims. */
static const char **kept_idx_full(Ox *ox, int rank, const bool *red)
{
    const char **s = arena_alloc(ox->arena, (size_t)(rank + 1) * sizeof *s);
    int k = 0;
    for (int d = 0; d < rank; d++)
        if (!red[d])
            s[k++] = arena_printf(ox->arena, "i%d", d);
    return s;
}

static const char *red_where(Ox *ox, int id, int rank, const bool *red)
{
    const char *w = "";
    int nr = 0;
    for (int d = 0; d < rank; d++)
        if (red[d])
            w = arena_printf(ox->arena, "%s%sj%d < %s", w, nr ? ", " : "", nr,
                             ox_dim_str(ox, ox_dim(ox, id, d))), nr++;
    return w;
}

static Dim *kept_dims(Ox *ox, int id, int rank, const bool *red, int *nk)
{
    Dim *s = arena_alloc(ox->arena, (size_t)(rank + 1) * sizeof *s);
    *nk = 0;
    for (int d = 0; d < rank; d++)
        if (!red[d])
            s[(*nk)++] = ox_dim(ox, id, d);
    return s;
}

/* The product of the reduced dims, as text. */
static const char *red_count(Ox *ox, int id, int rank, const bool *red)
{
    Dim p = ox_dim_num(1);
    for (int d = 0; d < rank; d++)
        if (red[d])
            p = ox_dim_mul(p, ox_dim(ox, id, d));
    const char *s = ox_dim_str(ox, p);
    return strchr(s, '*') ? arena_printf(ox->arena, "(%s)", s) : s;
}

/* `acc[kept] OP body(x read)` where the read is of x over red/kept. */
static const char *reduce_stmt(Ox *ox, int xid, int out_for_name, const char *suffix,
                               const bool *red, const char *op, const char *fmt)
{
    OxVal *x = ox_val(ox, xid);
    int nk;
    Dim *kd = kept_dims(ox, xid, x->rank, red, &nk);
    const char *nm = ox_temp(ox, out_for_name, suffix);
    const char *rd = ox_read(ox, xid, red_idx(ox, x->rank, red, false));
    ox_stmt(ox, nm, nk, kd, op, arena_printf(ox->arena, fmt, rd),
            red_where(ox, xid, x->rank, red));
    return nm;
}

static const char *kept_read(Ox *ox, const char *nm, int rank, const bool *red)
{
    const char **k = kept_idx_full(ox, rank, red);
    char *s = arena_printf(ox->arena, "%s[", nm);
    int nk = 0;
    for (int d = 0; d < rank; d++)
        if (!red[d])
            s = arena_printf(ox->arena, "%s%s%s", s, nk ? ", " : "", k[nk]), nk++;
    return arena_printf(ox->arena, "%s]", s);
}

/* ---- Softmax, LogSoftmax -------------------------------------------------------------- */

static bool softmax_axes(Ox *ox, const OxNode *n, bool *red)
{
    OxVal *x = ox_val(ox, n->in[0]);
    int axis;
    if (!ox_axis(ox, n, ox_attr_int(n, "axis", ox->opset >= 13 ? -1 : 1), x->rank, &axis))
        return false;
    for (int d = 0; d < x->rank; d++)
        red[d] = ox->opset >= 13 ? d == axis : d >= axis;
    return true;
}

static bool same_infer(Ox *ox, const OxNode *n)
{
    if (n->nin < 1 || n->in[0] < 0 || n->nout < 1 || n->out[0] < 0)
        return ox_error(ox, n, "needs an input and an output");
    OxVal *x = ox_val(ox, n->in[0]);
    if (x->rank < 1)
        return ox_error(ox, n, "needs an input of rank 1 or more");
    ox_set(ox, n->out[0], x->type, x->rank, x->shape);
    bool red[OX_MAXRANK];
    return strncmp(n->op, "Softmax", 7) && strncmp(n->op, "LogSoftmax", 10)
           ? true : softmax_axes(ox, n, red);
}

static bool softmax_write(Ox *ox, const OxNode *n)
{
    int xid = n->in[0], yid = n->out[0];
    OxVal *x = ox_val(ox, xid);
    bool red[OX_MAXRANK];
    if (!softmax_axes(ox, n, red))
        return false;
    /* a softmax over the last dimension of a matrix: <nn.ein>'s */
    if (strcmp(n->op, "Softmax") == 0 && x->rank == 2 && !red[0] && red[1] &&
        ox_all_f32(ox, n)) {
        ox_call(ox, yid, "softmax", ox_name(ox, xid));
        return true;
    }
    const char *const *idx = ox_loop_idx(ox, x->rank);
    const char *xr = ox_read(ox, xid, idx);
    const char *m = reduce_stmt(ox, xid, yid, "max", red, "max=", "%s");
    const char *mr = kept_read(ox, m, x->rank, red);
    Dim *shape = ox_shape_dims(ox, yid);
    if (strcmp(n->op, "LogSoftmax") == 0) {
        int nk;
        Dim *kd = kept_dims(ox, xid, x->rank, red, &nk);
        const char *s = ox_temp(ox, yid, "sum");
        const char **ri = red_idx(ox, x->rank, red, false);
        const char **ki = arena_alloc(ox->arena, (size_t)(nk + 1) * sizeof *ki);
        for (int d = 0, k = 0; d < x->rank; d++)
            if (!red[d])
                ki[k] = arena_printf(ox->arena, "i%d", k), k++;
        char *mk = arena_printf(ox->arena, "%s[", m);
        for (int k = 0; k < nk; k++)
            mk = arena_printf(ox->arena, "%s%s%s", mk, k ? ", " : "", ki[k]);
        ox_stmt(ox, s, nk, kd, "+=", arena_printf(ox->arena, "exp(%s - %s])",
                                                  ox_read(ox, xid, ri), mk),
                red_where(ox, xid, x->rank, red));
        ox_stmt(ox, ox_name(ox, yid), x->rank, shape, "=",
                arena_printf(ox->arena, "%s - %s - log(%s)", xr, mr,
                             kept_read(ox, s, x->rank, red)), NULL);
        return true;
    }
    const char *e = ox_temp(ox, yid, "exp");
    ox_stmt(ox, e, x->rank, shape, "=", arena_printf(ox->arena, "exp(%s - %s)", xr, mr), NULL);
    int nk;
    Dim *kd = kept_dims(ox, xid, x->rank, red, &nk);
    const char *s = ox_temp(ox, yid, "sum");
    const char **ri = red_idx(ox, x->rank, red, false);
    char *er = arena_printf(ox->arena, "%s[", e);
    for (int d = 0; d < x->rank; d++)
        er = arena_printf(ox->arena, "%s%s%s", er, d ? ", " : "", ri[d]);
    ox_stmt(ox, s, nk, kd, "+=", arena_printf(ox->arena, "%s]", er),
            red_where(ox, xid, x->rank, red));
    char *ef = arena_printf(ox->arena, "%s[", e);
    for (int d = 0; d < x->rank; d++)
        ef = arena_printf(ox->arena, "%s%s%s", ef, d ? ", " : "", idx[d]);
    ox_stmt(ox, ox_name(ox, yid), x->rank, shape, "=",
            arena_printf(ox->arena, "%s] / %s", ef, kept_read(ox, s, x->rank, red)), NULL);
    return true;
}

/* ---- LayerNormalization, InstanceNormalization, BatchNormalization -------------------------- */

static bool norm_infer(Ox *ox, const OxNode *n)
{
    if (!same_infer(ox, n))
        return false;
    OxVal *x = ox_val(ox, n->in[0]);
    bool layer = strcmp(n->op, "LayerNormalization") == 0;
    bool batch = strcmp(n->op, "BatchNormalization") == 0;
    int need = batch ? 5 : layer ? 2 : 3;
    for (int i = 0; i < need; i++)
        if (!ox_has_in(n, i))
            return ox_error(ox, n, "input %d is missing", i);
    if (x->rank < 2 && !layer)
        return ox_error(ox, n, "needs an input of rank 2 or more");
    if (batch) {
        if (ox_attr_int(n, "training_mode", 0) != 0)
            return ox_unsupported(ox, n, "BatchNormalization in training mode");
        for (int j = 1; j < n->nout; j++)
            if (n->out[j] >= 0)
                return ox_unsupported(ox, n, "the running statistics outputs");
        for (int i = 1; i < 5; i++) {
            OxVal *p = ox_val(ox, n->in[i]);
            if (p->rank != 1 || p->shape[0] != x->shape[1])
                return ox_error(ox, n, "input %d must have shape [%lld]", i,
                                (long long)x->shape[1]);
        }
        return true;
    }
    if (layer) {
        int axis;
        if (!ox_axis(ox, n, ox_attr_int(n, "axis", -1), x->rank, &axis))
            return false;
        /* the scale and bias are read broadcast to the input */
        for (int i = 1; i < 3 && i < n->nin; i++) {
            if (n->in[i] < 0)
                continue;
            OxVal *p = ox_val(ox, n->in[i]);
            bool ok = p->rank <= x->rank;
            for (int d = 0; ok && d < p->rank; d++)
                ok = p->shape[d] == 1 || p->shape[d] == x->shape[x->rank - p->rank + d];
            if (!ok)
                return ox_error(ox, n, "input %d does not broadcast to the input", i);
        }
        int64_t shape[OX_MAXRANK];
        for (int d = 0; d < x->rank; d++)
            shape[d] = d < axis ? x->shape[d] : 1;
        for (int j = 1; j < n->nout && j < 3; j++)
            if (n->out[j] >= 0)
                ox_set(ox, n->out[j], OX_FLOAT, x->rank, shape);
        if (n->nout > 3)
            return ox_error(ox, n, "has %d outputs (at most 3)", n->nout);
        return true;
    }
    for (int i = 1; i < 3; i++) {
        OxVal *p = ox_val(ox, n->in[i]);
        if (p->rank != 1 || p->shape[0] != x->shape[1])
            return ox_error(ox, n, "input %d must have shape [%lld]", i,
                            (long long)x->shape[1]);
    }
    return true;
}

/* LayerNormalization over the last dimension of a [N, D] or [B, T, D]
 * input with a scale and bias of [D], and BatchNormalization of a 4-d
 * input, are <nn.ein>'s layernorm, layernorm3 and batchnorm (the same
 * statements). */
static bool norm_lib(Ox *ox, const OxNode *n)
{
    OxVal *x = ox_val(ox, n->in[0]);
    float eps = ox_attr_float(n, "epsilon", 1e-5f);
    const char *e = eps == 1e-5f ? "" : arena_printf(ox->arena, ", eps = %s", ox_real(ox, eps));
    if (!ox_all_f32(ox, n))
        return false;
    if (strcmp(n->op, "BatchNormalization") == 0) {
        if (x->rank != 4)
            return false;
        /* one name at a time: the order of the declarations they make */
        const char *a[5];
        static const int order[5] = {0, 3, 4, 1, 2};
        for (int i = 0; i < 5; i++)
            a[i] = ox_name(ox, n->in[order[i]]);
        ox_call(ox, n->out[0], "batchnorm", arena_printf(ox->arena, "%s, %s, %s, %s, %s%s",
                                                          a[0], a[1], a[2], a[3], a[4], e));
        return true;
    }
    if (strcmp(n->op, "LayerNormalization") != 0 || (x->rank != 2 && x->rank != 3))
        return false;
    int axis;
    if (!ox_axis(ox, n, ox_attr_int(n, "axis", -1), x->rank, &axis) || axis != x->rank - 1 ||
        !ox_has_in(n, 2))
        return false;
    for (int j = 1; j < n->nout; j++)
        if (n->out[j] >= 0)
            return false;
    for (int i = 1; i < 3; i++) {
        OxVal *p = ox_val(ox, n->in[i]);
        if (p->rank != 1 || p->shape[0] != x->shape[x->rank - 1])
            return false;
    }
    const char *a[3];
    for (int i = 0; i < 3; i++)
        a[i] = ox_name(ox, n->in[i]);
    ox_call(ox, n->out[0], x->rank == 2 ? "layernorm" : "layernorm3",
            arena_printf(ox->arena, "%s, %s, %s%s", a[0], a[1], a[2], e));
    return true;
}

static bool norm_write(Ox *ox, const OxNode *n)
{
    int xid = n->in[0], yid = n->out[0];
    OxVal *x = ox_val(ox, xid);
    if (norm_lib(ox, n))
        return true;
    const char *const *idx = ox_loop_idx(ox, x->rank);
    const char *xr = ox_read(ox, xid, idx);
    Dim *shape = ox_shape_dims(ox, yid);
    const char *eps = ox_real(ox, ox_attr_float(n, "epsilon", 1e-5f));
    if (strcmp(n->op, "BatchNormalization") == 0) {
        const char *c[1] = {"i1"};
        const char *sc = ox_read(ox, n->in[1], c), *b = ox_read(ox, n->in[2], c);
        const char *mu = ox_read(ox, n->in[3], c), *var = ox_read(ox, n->in[4], c);
        ox_stmt(ox, ox_name(ox, yid), x->rank, shape, "=",
                arena_printf(ox->arena, "(%s - %s) * rsqrt(%s + %s) * %s + %s", xr, mu, var,
                             eps, sc, b), NULL);
        return true;
    }
    bool layer = strcmp(n->op, "LayerNormalization") == 0;
    bool red[OX_MAXRANK];
    int axis = 0;
    if (layer)
        ox_axis(ox, n, ox_attr_int(n, "axis", -1), x->rank, &axis);
    for (int d = 0; d < x->rank; d++)
        red[d] = layer ? d >= axis : d >= 2;
    const char *cnt = red_count(ox, xid, x->rank, red);
    const char *mean = reduce_stmt(ox, xid, yid, "mean", red, "+=",
                                   arena_printf(ox->arena, "%%s / %s", cnt));
    const char *mr = kept_read(ox, mean, x->rank, red);
    /* The variance of the centred values, as the reference computes it. */
    const char *xc = ox_temp(ox, yid, "centred");
    ox_stmt(ox, xc, x->rank, shape, "=", arena_printf(ox->arena, "%s - %s", xr, mr), NULL);
    int nk;
    Dim *kd = kept_dims(ox, xid, x->rank, red, &nk);
    const char *var = ox_temp(ox, yid, "var");
    const char **ri = red_idx(ox, x->rank, red, false);
    char *cr = arena_printf(ox->arena, "%s[", xc);
    for (int d = 0; d < x->rank; d++)
        cr = arena_printf(ox->arena, "%s%s%s", cr, d ? ", " : "", ri[d]);
    cr = arena_printf(ox->arena, "%s]", cr);
    ox_stmt(ox, var, nk, kd, "+=", arena_printf(ox->arena, "%s * %s / %s", cr, cr, cnt),
            red_where(ox, xid, x->rank, red));
    char *cf = arena_printf(ox->arena, "%s[", xc);
    for (int d = 0; d < x->rank; d++)
        cf = arena_printf(ox->arena, "%s%s%s", cf, d ? ", " : "", idx[d]);
    cf = arena_printf(ox->arena, "%s]", cf);
    const char *vr = kept_read(ox, var, x->rank, red);
    const char *sc, *b = NULL;
    if (layer) {
        sc = ox_read_bcast(ox, n->in[1], x->rank, x->shape, idx);
        if (ox_has_in(n, 2))
            b = ox_read_bcast(ox, n->in[2], x->rank, x->shape, idx);
    } else {
        const char *c[1] = {"i1"};
        sc = ox_read(ox, n->in[1], c);
        b = ox_read(ox, n->in[2], c);
    }
    ox_stmt(ox, ox_name(ox, yid), x->rank, shape, "=",
            arena_printf(ox->arena, "%s * rsqrt(%s + %s) * %s%s%s", cf, vr, eps, sc,
                         b ? " + " : "", b ? b : ""), NULL);
    /* LayerNormalization's optional outputs: the mean and 1/stddev, with
     * the normalized dims kept as 1. */
    for (int j = 1; layer && j < n->nout && j < 3; j++) {
        int id = n->out[j];
        if (id < 0)
            continue;
        OxVal *o = ox_val(ox, id);
        const char **k = arena_alloc(ox->arena, (size_t)(x->rank + 1) * sizeof *k);
        int nk2 = 0;
        for (int d = 0; d < x->rank; d++)
            if (!red[d])
                k[nk2++] = arena_printf(ox->arena, "i%d", d);
        char *rd = arena_printf(ox->arena, "%s[", j == 1 ? mean : var);
        for (int q = 0; q < nk2; q++)
            rd = arena_printf(ox->arena, "%s%s%s", rd, q ? ", " : "", k[q]);
        rd = arena_printf(ox->arena, "%s]", rd);
        ox_stmt(ox, ox_name(ox, id), o->rank, ox_shape_dims(ox, id), "=",
                j == 1 ? rd : arena_printf(ox->arena, "rsqrt(%s + %s)", rd, eps), NULL);
    }
    return true;
}

/* ---- ReduceMean, ReduceSum, ReduceMax, ReduceMin, ... ------------------------------------ */

static bool reduce_axes(Ox *ox, const OxNode *n, bool *red, bool *keep)
{
    OxVal *x = ox_val(ox, n->in[0]);
    *keep = ox_attr_int(n, "keepdims", 1) != 0;
    int cnt;
    const int64_t *axes = NULL;
    /* ReduceSum takes its axes as an input from opset 13, the others from 18. */
    bool axes_input = (strcmp(n->op, "ReduceSum") == 0 && ox->opset >= 13) || ox->opset >= 18;
    if (axes_input) {
        cnt = -1;
        if (ox_has_in(n, 1) && !(axes = ox_const_ints(ox, n, 1, &cnt)))
            return false;
    } else {
        axes = ox_attr_ints(n, "axes", &cnt);
    }
    bool none = cnt <= 0;
    if (none && axes_input && ox_attr_int(n, "noop_with_empty_axes", 0))
        return ox_unsupported(ox, n, "noop_with_empty_axes");
    for (int d = 0; d < x->rank; d++)
        red[d] = none;
    for (int i = 0; i < cnt; i++) {
        int a;
        if (!ox_axis(ox, n, axes[i], x->rank, &a))
            return false;
        red[a] = true;
    }
    return true;
}

static bool reduce_infer(Ox *ox, const OxNode *n)
{
    if (n->nin < 1 || n->in[0] < 0 || n->nout < 1 || n->out[0] < 0)
        return ox_error(ox, n, "needs an input and an output");
    OxVal *x = ox_val(ox, n->in[0]);
    bool red[OX_MAXRANK], keep;
    if (!reduce_axes(ox, n, red, &keep))
        return false;
    int64_t shape[OX_MAXRANK];
    int r = 0;
    for (int d = 0; d < x->rank; d++)
        if (!red[d] || keep)
            shape[r++] = red[d] ? 1 : x->shape[d];
    ox_set(ox, n->out[0], x->type, r, shape);
    return true;
}

static bool reduce_write(Ox *ox, const OxNode *n)
{
    int xid = n->in[0], yid = n->out[0];
    OxVal *x = ox_val(ox, xid), *y = ox_val(ox, yid);
    bool red[OX_MAXRANK], keep;
    if (!reduce_axes(ox, n, red, &keep))
        return false;
    /* Subscripts of x in a statement over y's dims. */
    const char **s = arena_alloc(ox->arena, (size_t)(x->rank + 1) * sizeof *s);
    int nr = 0, k = 0;
    for (int d = 0; d < x->rank; d++) {
        if (red[d]) {
            s[d] = arena_printf(ox->arena, "j%d", nr++);
            k += keep;
        } else {
            s[d] = arena_printf(ox->arena, "i%d", k++);
        }
    }
    const char *xr = ox_read(ox, xid, s);
    const char *op = "+=", *body = xr;
    const char *cnt = red_count(ox, xid, x->rank, red);
    if (strcmp(n->op, "ReduceMean") == 0)
        body = arena_printf(ox->arena, "%s / %s", xr, cnt);
    else if (strcmp(n->op, "ReduceMax") == 0)
        op = "max=";
    else if (strcmp(n->op, "ReduceMin") == 0)
        op = "min=";
    else if (strcmp(n->op, "ReduceSumSquare") == 0)
        body = arena_printf(ox->arena, "%s * %s", xr, xr);
    else if (strcmp(n->op, "ReduceL1") == 0)
        body = arena_printf(ox->arena, "abs(%s)", xr);
    const char *nm = ox_name(ox, yid);
    if (strcmp(n->op, "ReduceL2") == 0 || strcmp(n->op, "ReduceLogSumExp") == 0 ||
        strcmp(n->op, "ReduceLogSum") == 0) {
        bool l2 = n->op[7] == '2';
        bool lse = strcmp(n->op, "ReduceLogSumExp") == 0;
        const char *t = ox_temp(ox, yid, l2 ? "sumsq" : "sum");
        ox_stmt(ox, t, y->rank, ox_shape_dims(ox, yid), "+=",
                l2 ? arena_printf(ox->arena, "%s * %s", xr, xr)
                   : lse ? arena_printf(ox->arena, "exp(%s)", xr) : xr,
                red_where(ox, xid, x->rank, red));
        const char *tr = ox_read(ox, yid, ox_loop_idx(ox, y->rank));
        tr = arena_printf(ox->arena, "%s%s", t, strchr(tr, '['));
        ox_stmt(ox, nm, y->rank, ox_shape_dims(ox, yid), "=",
                arena_printf(ox->arena, "%s(%s)", l2 ? "sqrt" : "log", tr), NULL);
        return true;
    }
    ox_stmt(ox, nm, y->rank, ox_shape_dims(ox, yid), op, body,
            red_where(ox, xid, x->rank, red));
    return true;
}

const OxOp ox_ops_elem[] = {
    {"Relu", elem_infer, elem_write}, {"Sigmoid", elem_infer, elem_write},
    {"Tanh", elem_infer, elem_write}, {"Exp", elem_infer, elem_write},
    {"Log", elem_infer, elem_write}, {"Sqrt", elem_infer, elem_write},
    {"Abs", elem_infer, elem_write}, {"Erf", elem_infer, elem_write},
    {"Neg", elem_infer, elem_write}, {"Reciprocal", elem_infer, elem_write},
    {"LeakyRelu", elem_infer, elem_write}, {"Elu", elem_infer, elem_write},
    {"Selu", elem_infer, elem_write}, {"HardSigmoid", elem_infer, elem_write},
    {"HardSwish", elem_infer, elem_write}, {"Softplus", elem_infer, elem_write},
    {"Softsign", elem_infer, elem_write}, {"Gelu", elem_infer, elem_write},
    {"Clip", elem_infer, elem_write}, {"Sign", elem_infer, elem_write},
    {"Identity", elem_infer, elem_write}, {"Dropout", elem_infer, elem_write},
    {"Cast", elem_infer, elem_write},
    {"CastLike", elem_infer, elem_write},
    {"Add", elem_infer, elem_write}, {"Sub", elem_infer, elem_write},
    {"Mul", elem_infer, elem_write}, {"Div", elem_infer, elem_write},
    {"Mod", elem_infer, elem_write},
    {"Pow", elem_infer, elem_write}, {"Max", elem_infer, elem_write},
    {"Min", elem_infer, elem_write}, {"Sum", elem_infer, elem_write},
    {"Mean", elem_infer, elem_write}, {"PRelu", elem_infer, elem_write},
    {"Equal", elem_infer, elem_write}, {"Less", elem_infer, elem_write},
    {"Greater", elem_infer, elem_write}, {"LessOrEqual", elem_infer, elem_write},
    {"GreaterOrEqual", elem_infer, elem_write}, {"And", elem_infer, elem_write},
    {"Or", elem_infer, elem_write}, {"Xor", elem_infer, elem_write},
    {"Not", elem_infer, elem_write},
    {"Softmax", same_infer, softmax_write}, {"LogSoftmax", same_infer, softmax_write},
    {"LayerNormalization", norm_infer, norm_write},
    {"BatchNormalization", norm_infer, norm_write},
    {"InstanceNormalization", norm_infer, norm_write},
    {"ReduceMean", reduce_infer, reduce_write}, {"ReduceSum", reduce_infer, reduce_write},
    {"ReduceMax", reduce_infer, reduce_write}, {"ReduceMin", reduce_infer, reduce_write},
    {"ReduceSumSquare", reduce_infer, reduce_write}, {"ReduceL1", reduce_infer, reduce_write},
    {"ReduceL2", reduce_infer, reduce_write}, {"ReduceLogSum", reduce_infer, reduce_write},
    {"ReduceLogSumExp", reduce_infer, reduce_write},
    {NULL, NULL, NULL},
};
