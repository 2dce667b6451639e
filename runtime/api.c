/* api.c - the API functions of a generated program that are the same for
 * every model and both targets (emit/README.md, "The C API"): create and
 * destroy a context, load, set and get tensors, the tensor table.  Where
 * the targets differ they call the buffer functions of api_host.c or
 * api_cuda.cu; ein_lib_create and ein_lib_destroy, which the generated
 * file writes before this piece, make and free what its library calls
 * need.  model_run and model_run_named, whose parameters are the
 * model's, are written by emit/api.c after this piece. */
#include <stdlib.h>
#include <string.h>
#include "model.h" /* EMBED-SKIP */

static int ein_find(model_ctx *ctx, const char *name)
{
    if (!name)
        return ein_fail(ctx, MODEL_EINVAL, "tensor name is a null pointer"), -1;
    for (int i = 0; i < EIN_NT; i++)
        if (strcmp(ein_tensors[i].name, name) == 0 ||
            strcmp(ein_tensors[i].ext_name, name) == 0)
            return i;
    ein_fail(ctx, MODEL_EINVAL, "the model has no tensor named '%s'", name);
    return -1;
}

/* The host memory a set (get: 0) or get (1) of tensor i copies from or to:
   not a null pointer, and of the tensor's size. */
static int ein_check_data(model_ctx *ctx, int i, const void *data, size_t nbytes, int get)
{
    const model_tensor_info *t = &ein_tensors[i];
    if (!data)
        return ein_fail(ctx, MODEL_EINVAL, "%s for tensor '%s' is a null pointer",
                        get ? "buffer" : "data", t->name);
    if (nbytes != t->nbytes)
        return ein_fail(ctx, MODEL_EINVAL, "tensor '%s' %s %zu bytes, not %zu", t->name,
                        get ? "has" : "takes", t->nbytes, nbytes);
    return MODEL_OK;
}

/* After a run: the computed tensors it left in the context's own
   buffers hold values (model_run's outputs went to the caller's; a view
   has no buffer of its own; the arena's tensors share theirs). */
RT_API void ein_run_done(model_ctx *ctx, void *const *p)
{
    for (int i = 0; i < EIN_NT; i++)
        if (p[i] == ctx->buf[i] && ein_tensors[i].kind == MODEL_COMPUTED && !EIN_VIEW(i) &&
            EIN_AT(i) < 0)
            ctx->valid[i] = 1;
}

int model_create(model_ctx **out)
{
    model_ctx *ctx;
    int rc;
    if (!out)
        return ein_fail(NULL, MODEL_EINVAL, "the place for the context is a null pointer");
    *out = ctx = (model_ctx *)calloc(1, sizeof *ctx);
    if (!ctx)
        return ein_fail(NULL, MODEL_ENOMEM, "out of host memory for the context");
    ctx->weights_changed = 1;
    if ((rc = ein_ctx_open(ctx)) != MODEL_OK)
        return rc;
    if (EIN_ARENA_BYTES &&
        (rc = ein_mem_alloc(ctx, &ctx->arena, EIN_ARENA_BYTES, "")) != MODEL_OK)
        return rc;
    for (int i = 0; i < EIN_NT; i++) {
        if (EIN_AT(i) >= 0)
            ctx->buf[i] = (char *)ctx->arena + EIN_AT(i);
        else if (!EIN_VIEW(i) &&
                 (rc = ein_mem_alloc(ctx, &ctx->buf[i], ein_tensors[i].nbytes,
                                     ein_tensors[i].name)) != MODEL_OK)
            return rc;
    }
    return ein_lib_create(ctx);
}

/* Before a run: every weight loaded or set. */
RT_API int ein_weights_ready(model_ctx *ctx)
{
    for (int i = 0; i < EIN_NT; i++)
        if (ein_tensors[i].kind == MODEL_WEIGHT && !ctx->valid[i])
            return ein_fail(ctx, MODEL_EMISSING, "weight '%s' was never loaded or set",
                            ein_tensors[i].name);
    return MODEL_OK;
}

int model_set_threads(model_ctx *ctx, int n)
{
    if (!ctx)
        return ein_no_ctx();
    if (n < 0)
        return ein_fail(ctx, MODEL_EINVAL, "a thread count of %d: it must be 0 or more", n);
    ctx->threads = n;
    return MODEL_OK;
}

/* Everything is freed whatever fails; the first failure is the result
   (only the CUDA target's calls can fail here). */
int model_destroy(model_ctx *ctx)
{
    int rc = MODEL_OK, r;
    if (!ctx)
        return rc;
    if ((r = ein_ctx_idle(ctx)) != MODEL_OK && rc == MODEL_OK)
        rc = r;
    if ((r = ein_lib_destroy(ctx)) != MODEL_OK && rc == MODEL_OK)
        rc = r;
    for (int i = 0; i < EIN_NT; i++)
        if (EIN_AT(i) < 0 && (r = ein_buf_free(ctx->buf[i])) != MODEL_OK && rc == MODEL_OK)
            rc = r;
    if ((r = ein_buf_free(ctx->arena)) != MODEL_OK && rc == MODEL_OK)
        rc = r;
    if ((r = ein_ctx_close(ctx)) != MODEL_OK && rc == MODEL_OK)
        rc = r;
    free(ctx);
    return rc;
}

int model_tensor_count(void)
{
    return EIN_NT;
}

const model_tensor_info *model_tensor_at(int i)
{
    return i >= 0 && i < EIN_NT ? &ein_tensors[i] : NULL;
}

int model_load_weights(model_ctx *ctx, const char *path)
{
    char msg[ST_ERRLEN];
    StFile *f;
    int st, rc;
    if (!ctx)
        return ein_no_ctx();
    if (!path)
        return ein_fail(ctx, MODEL_EINVAL, "weights file name is a null pointer");
    if ((st = st_open(path, &f, msg, sizeof msg)) != ST_OK)
        return ein_fail(ctx, ein_st_code(st), "%s", msg);
    if ((rc = ein_io_after_runs(ctx)) != MODEL_OK) {
        st_close(f);
        return rc;
    }
    for (int i = 0; i < EIN_NT; i++) {
        const model_tensor_info *t = &ein_tensors[i];
        if (t->kind != MODEL_WEIGHT || !st_find(f, t->ext_name))
            continue;
        if ((rc = ein_buf_load(ctx, f, i)) != MODEL_OK) {
            st_close(f);
            return rc;
        }
        ctx->valid[i] = 1;
        ctx->weights_changed = 1;
    }
    st_close(f);
    return MODEL_OK;
}

int model_set_tensor(model_ctx *ctx, const char *name, const void *data, size_t nbytes)
{
    int rc;
    if (!ctx)
        return ein_no_ctx();
    int i = ein_find(ctx, name);
    if (i < 0)
        return MODEL_EINVAL;
    const model_tensor_info *t = &ein_tensors[i];
    if (t->kind == MODEL_COMPUTED)
        return ein_fail(ctx, MODEL_EINVAL, "tensor '%s' is computed by the model; only "
                        "inputs and weights can be set", name);
    if ((rc = ein_check_data(ctx, i, data, nbytes, 0)) != MODEL_OK ||
        (rc = ein_io_after_runs(ctx)) != MODEL_OK ||
        (rc = ein_buf_put(ctx, i, data, nbytes)) != MODEL_OK)
        return rc;
    ctx->valid[i] = 1;
    if (t->kind == MODEL_WEIGHT)
        ctx->weights_changed = 1;
    return MODEL_OK;
}

int model_get_tensor(model_ctx *ctx, const char *name, void *data, size_t nbytes)
{
    int rc;
    if (!ctx)
        return ein_no_ctx();
    int i = ein_find(ctx, name);
    if (i < 0)
        return MODEL_EINVAL;
    if ((rc = ein_check_data(ctx, i, data, nbytes, 1)) != MODEL_OK)
        return rc;
    if (EIN_VIEW(i))
        return ein_fail(ctx, MODEL_EMISSING, "tensor '%s' holds no value: its operator "
                        "stores it straight into the buffer of the copy that reorders it "
                        "(einc --emit=plan: into=)", name);
    if (EIN_AT(i) >= 0)
        return ein_fail(ctx, MODEL_EMISSING, "tensor '%s' holds no value: during a run "
                        "it shares memory with other intermediates (compile with einc "
                        "--keep-intermediates to keep it)", name);
    if (!ctx->valid[i])
        return ein_fail(ctx, MODEL_EMISSING, "tensor '%s' holds no value: it was not "
                        "set, loaded or computed (outputs of model_run go to the "
                        "caller's buffers)", name);
    if ((rc = ein_io_after_runs(ctx)) != MODEL_OK)
        return rc;
    return ein_buf_get(ctx, i, data, nbytes);
}
