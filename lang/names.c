/* names.c - printable names of the AST's enumerations. */
#include "config.h"
#include "ast.h"

const char *elem_name(ElemType t)
{
    switch (t) {
    case ELEM_F32: return "f32";
    case ELEM_F16: return "f16";
    case ELEM_BF16: return "bf16";
    }
    return "?";
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
    }
    return "?";
}
