/* func.c - the scalar functions of the IR (Func, from sema.h): arity,
 * name and value.  The constructors fold constant calls with them, the
 * interpreter evaluates calls with them. */
#include "config.h"
#include "ir_int.h"

#include <math.h>

int ir_func_arity(Func fn)
{
    switch (fn) {
    case FN_MAX: case FN_MIN: case FN_POW: return 2;
    case FN_SELECT: return 3;
    default: return 1;
    }
}

const char *ir_func_name(Func fn)
{
    static const char *const names[] = {
        [FN_RELU] = "relu", [FN_SIGMOID] = "sigmoid", [FN_TANH] = "tanh",
        [FN_EXP] = "exp", [FN_LOG] = "log", [FN_SQRT] = "sqrt",
        [FN_RSQRT] = "rsqrt", [FN_ABS] = "abs", [FN_ERF] = "erf",
        [FN_MAX] = "max", [FN_MIN] = "min", [FN_POW] = "pow",
        [FN_SELECT] = "select",
    };
    return (unsigned)fn < sizeof names / sizeof *names && names[fn] ? names[fn] : "?";
}

/* NaN propagates through max and min, as in PyTorch's maximum/minimum. */
double ir_func_apply(Func fn, const double *a)
{
    switch (fn) {
    case FN_RELU: return a[0] < 0 ? 0.0 : a[0];
    case FN_SIGMOID: return 1.0 / (1.0 + exp(-a[0]));
    case FN_TANH: return tanh(a[0]);
    case FN_EXP: return exp(a[0]);
    case FN_LOG: return log(a[0]);
    case FN_SQRT: return sqrt(a[0]);
    case FN_RSQRT: return 1.0 / sqrt(a[0]);
    case FN_ABS: return fabs(a[0]);
    case FN_ERF: return erf(a[0]);
    case FN_MAX: return isnan(a[0]) || isnan(a[1]) ? NAN : a[0] > a[1] ? a[0] : a[1];
    case FN_MIN: return isnan(a[0]) || isnan(a[1]) ? NAN : a[0] < a[1] ? a[0] : a[1];
    case FN_POW: return pow(a[0], a[1]);
    case FN_SELECT: break;
    }
    ICE("ir_func_apply: function %d", (int)fn);
}
