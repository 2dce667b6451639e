/* drv.c - storage.test's driver of a generated C file (included as
 * MODEL_C, its API prefixed MODEL_ / UPPER_): weights from argv[1],
 * inputs from argv[2] (safetensors, as tests/hostcuda/stgen writes them),
 * argv[4] runs of model_run_named (the weights loaded again before the
 * third: the load-time stages run again), after each run but the first
 * every output in the order of model_output_at, raw, to argv[3].  With
 * argv[5], model_get_tensor of that tensor after the runs instead: its
 * message on stdout, exit 0 if it held a value. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include MODEL_C

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define API(x) CAT(MODEL, CAT(_, x))
#define K(x) CAT(UPPER, CAT(_, x))

/* Every output, in the order of model_output_at, raw to out. */
static int write_outputs(API(ctx) *ctx, FILE *out)
{
    for (int k = 0; API(output_at)(k); k++) {
        const API(tensor_info) *t = API(output_at)(k);
        void *buf = malloc(t->nbytes ? t->nbytes : 1);
        if (!buf || API(get_tensor)(ctx, t->name, buf, t->nbytes) != 0) {
            fprintf(stderr, "%s\n", API(last_error)(ctx));
            return -1;
        }
        fwrite(buf, 1, t->nbytes, out);
        free(buf);
    }
    return 0;
}

int main(int argc, char **argv)
{
    API(ctx) *ctx;
    char msg[ST_ERRLEN];
    StFile *f;
    if (argc < 5 || API(create)(&ctx) != 0 || API(load_weights)(ctx, argv[1]) != 0 ||
        st_open(argv[2], &f, msg, sizeof msg) != ST_OK)
        return 2;
    for (int i = 0; i < API(tensor_count)(); i++) {
        const API(tensor_info) *t = API(tensor_at)(i);
        if (t->kind != K(INPUT))
            continue;
        void *buf = malloc(t->nbytes ? t->nbytes : 1);
        if (!buf || st_read(f, t->ext_name, ein_st_dtype(t->elem), t->rank, t->shape, buf,
                            t->nbytes, msg, sizeof msg) != ST_OK ||
            API(set_tensor)(ctx, t->name, buf, t->nbytes) != 0)
            return 3;
        free(buf);
    }
    st_close(f);
    FILE *out = argc > 5 ? NULL : fopen(argv[3], "wb");
    for (int r = 0; r < atoi(argv[4]); r++) {
        if ((r == 2 && API(load_weights)(ctx, argv[1]) != 0) || API(run_named)(ctx) != 0) {
            fprintf(stderr, "%s\n", API(last_error)(ctx));
            return 4;
        }
        if (out && r > 0 && write_outputs(ctx, out) != 0)
            return 6;
    }
    if (argc > 5) {
        const API(tensor_info) *t = NULL;
        for (int i = 0; i < API(tensor_count)(); i++)
            if (strcmp(API(tensor_at)(i)->name, argv[5]) == 0)
                t = API(tensor_at)(i);
        void *buf = t ? malloc(t->nbytes) : NULL;
        if (!buf)
            return 5;
        int rc = API(get_tensor)(ctx, argv[5], buf, t->nbytes);
        printf("%s\n", rc ? API(last_error)(ctx) : "ok");
        free(buf);
        API(destroy)(ctx);
        return rc != 0;
    }
    if (!out || fclose(out) != 0)
        return 7;
    return API(destroy)(ctx) != 0;
}
