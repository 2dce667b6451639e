/* func.c - the scalar functions of the IR (Func, from sema.h): arity,
 * name and value, and the conversion a store into an element type does
 * (ir_convert).  The constructors fold constant calls with them, the
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
        [FN_SELECT] = "select", [FN_SIN] = "sin", [FN_COS] = "cos",
        [FN_FLOOR] = "floor", [FN_CEIL] = "ceil", [FN_ROUND] = "round",
        [FN_SIGN] = "sign", [FN_EXPM1] = "expm1", [FN_LOG1P] = "log1p",
        [FN_SOFTPLUS] = "softplus", [FN_GELU] = "gelu", [FN_TO_F32] = "f32",
        [FN_TO_F16] = "f16", [FN_TO_BF16] = "bf16", [FN_TO_I8] = "i8",
        [FN_TO_I16] = "i16", [FN_TO_I32] = "i32", [FN_TO_I64] = "i64",
        [FN_TO_U8] = "u8", [FN_TO_BOOL] = "bool",
    };
    return (unsigned)fn < sizeof names / sizeof *names && names[fn] ? names[fn] : "?";
}

/* x rounded to a binary format with `mant` fraction bits, exponents from
 * emin, largest finite value `max`: to nearest even, too large going to an
 * infinity (f16, bf16 and f32 as IEEE rounds them). */
static double round_format(double x, int mant, int emin, double max)
{
    if (isnan(x) || isinf(x) || x == 0)
        return x;
    int e;
    frexp(x, &e);                       /* |x| in [2^(e-1), 2^e) */
    e = e - 1 < emin ? emin : e - 1;
    double q = ldexp(1.0, e - mant);
    double r = nearbyint(x / q) * q;
    return fabs(r) > max ? copysign(INFINITY, x) : r;
}

double ir_convert(ElemType t, double x)
{
    switch (t) {
    case ELEM_F32: return round_format(x, 23, -126, 0x1.fffffep127);
    case ELEM_F16: return round_format(x, 10, -14, 65504.0);
    case ELEM_BF16: return round_format(x, 7, -126, 0x1.fep127);
    case ELEM_BOOL: return x != 0;
    default: {
        /* toward zero, saturating; NaN is 0 */
        int64_t lo, hi;
        elem_int_range(t, &lo, &hi);
        if (isnan(x))
            return 0;
        if (x <= (double)lo)
            return (double)lo;
        if (x >= (double)hi)
            return (double)hi;
        return trunc(x);
    }
    }
}

/* NaN propagates through max and min, as in PyTorch's maximum/minimum. */
double ir_func_apply(Func fn, const double *a)
{
    if (FN_IS_TO(fn))
        return ir_convert(FN_TO_ELEM(fn), a[0]);
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
    case FN_SIN: return sin(a[0]);
    case FN_COS: return cos(a[0]);
    case FN_FLOOR: return floor(a[0]);
    case FN_CEIL: return ceil(a[0]);
    case FN_ROUND: return nearbyint(a[0]);     /* ties to even */
    case FN_SIGN: return (a[0] > 0) - (a[0] < 0);   /* NaN: 0, as torch.sign */
    case FN_EXPM1: return expm1(a[0]);
    case FN_LOG1P: return log1p(a[0]);
    case FN_SOFTPLUS: return fmax(a[0], 0.0) + log1p(exp(-fabs(a[0])));
    case FN_GELU: return 0.5 * a[0] * (1.0 + erf(a[0] * M_SQRT1_2));
    case FN_SELECT: break;
    default: break;
    }
    ICE("ir_func_apply: function %d", (int)fn);
}
