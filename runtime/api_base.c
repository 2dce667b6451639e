/* api_base.c - what every support piece of a generated program builds
 * on: the API's error messages (each failure leaves its message in the
 * context, or in ein_create_err while there is none, for
 * model_last_error) and the safetensors reader's statuses and dtypes in
 * the API's terms.  Both targets; pasted right after struct model_ctx
 * (runtime/README.md, "Support pieces"). */
#include <stdarg.h>
#include <stdio.h>
#include "model.h" /* EMBED-SKIP */

static char ein_create_err[64] = "";

/* Leave the message in ctx (NULL: no context yet) and return rc. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
RT_API int ein_fail(model_ctx *ctx, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (ctx)
        vsnprintf(ctx->err, sizeof ctx->err, fmt, ap);
    else
        vsnprintf(ein_create_err, sizeof ein_create_err, fmt, ap);
    va_end(ap);
    return rc;
}

/* A null context: EINVAL, and the message for model_last_error(NULL). */
RT_API int ein_no_ctx(void)
{
    return ein_fail(NULL, MODEL_EINVAL, "the context is a null pointer");
}

const char *model_last_error(const model_ctx *ctx)
{
    return ctx ? ctx->err : ein_create_err;
}

RT_API int ein_st_code(int st)
{
    return st == ST_EIO ? MODEL_EIO : st == ST_ENOMEM ? MODEL_ENOMEM : MODEL_EFORMAT;
}

RT_API StDtype ein_st_dtype(int elem)
{
    static const StDtype st[] = {ST_F32, ST_F16, ST_BF16, ST_I8, ST_I16, ST_I32,
                                 ST_I64, ST_U8, ST_BOOL};
    return elem >= 0 && elem < (int)(sizeof st / sizeof *st) ? st[elem] : ST_F32;
}
