/* names.c - printable names of the AST's enumerations. */
#include "config.h"
#include "ast.h"

#include <string.h>

static const char *const elem_names[ELEM_COUNT] = {
    [ELEM_F32] = "f32", [ELEM_F16] = "f16", [ELEM_BF16] = "bf16",
    [ELEM_I8] = "i8", [ELEM_I16] = "i16", [ELEM_I32] = "i32",
    [ELEM_I64] = "i64", [ELEM_U8] = "u8", [ELEM_BOOL] = "bool",
};

const char *elem_name(ElemType t)
{
    return (unsigned)t < ELEM_COUNT ? elem_names[t] : "?";
}

int elem_lookup(const char *name)
{
    for (int i = 0; i < ELEM_COUNT; i++)
        if (strcmp(elem_names[i], name) == 0)
            return i;
    return -1;
}

bool elem_is_int(ElemType t)
{
    return t >= ELEM_I8 && t <= ELEM_BOOL;
}

size_t elem_size(ElemType t)
{
    static const size_t n[ELEM_COUNT] = {
        [ELEM_F32] = 4, [ELEM_F16] = 2, [ELEM_BF16] = 2, [ELEM_I8] = 1, [ELEM_I16] = 2,
        [ELEM_I32] = 4, [ELEM_I64] = 8, [ELEM_U8] = 1, [ELEM_BOOL] = 1,
    };
    return (unsigned)t < ELEM_COUNT ? n[t] : 4;
}

void elem_int_range(ElemType t, int64_t *lo, int64_t *hi)
{
    switch (t) {
    case ELEM_I8: *lo = INT8_MIN; *hi = INT8_MAX; return;
    case ELEM_I16: *lo = INT16_MIN; *hi = INT16_MAX; return;
    case ELEM_I32: *lo = INT32_MIN; *hi = INT32_MAX; return;
    case ELEM_U8: *lo = 0; *hi = UINT8_MAX; return;
    case ELEM_BOOL: *lo = 0; *hi = 1; return;
    default: *lo = INT64_MIN; *hi = INT64_MAX; return;
    }
}

const char *binop_str(BinOp op)
{
    static const char *const s[] = {
        [OP_ADD] = "+", [OP_SUB] = "-", [OP_MUL] = "*", [OP_DIV] = "/",
        [OP_MOD] = "%", [OP_EQ] = "==", [OP_NE] = "!=", [OP_LT] = "<",
        [OP_LE] = "<=", [OP_GT] = ">", [OP_GE] = ">=", [OP_AND] = "&&",
        [OP_OR] = "||",
    };
    return (unsigned)op < sizeof s / sizeof *s ? s[op] : "?";
}

const char *reduce_str(Reduce r)
{
    switch (r) {
    case RED_NONE: return "=";
    case RED_SUM: return "+=";
    case RED_MAX: return "max=";
    case RED_MIN: return "min=";
    case RED_PROD: return "*=";
    }
    return "?";
}
