/* st_tool.c - the C side of the runtime's shell tests (python.test,
 * args.test): dumps and writes safetensors files with runtime/st.c, prints
 * seeded values and parsed command lines from runtime/harness.c, in the
 * formats tests/runtime/st.py prints, so the two can be compared.
 *
 *   st_tool dump FILE            tensors in header order, values as %.9g
 *   st_tool write-sample FILE    a file of known values (see below)
 *   st_tool fill SEED NAME N     rt_uniform values of the tensor NAME
 *   st_tool narrow IN OUT        each F32 tensor t of IN as t.f16, t.bf16
 *   st_tool args ARG...          rt_main_args, then the fields */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/harness.h"

static float value_at(const StTensor *t, const unsigned char *p, uint64_t i)
{
    uint16_t h;
    float f;
    switch (t->dtype) {
    case ST_F32:
        memcpy(&f, p + 4 * i, 4);
        return f;
    case ST_F16:
        memcpy(&h, p + 2 * i, 2);
        return st_f16_to_f32(h);
    default:
        memcpy(&h, p + 2 * i, 2);
        return st_bf16_to_f32(h);
    }
}

static int dump(const char *path)
{
    char err[ST_ERRLEN];
    StFile *f;
    int i, j;
    if (st_open(path, &f, err, sizeof err) != ST_OK) {
        fprintf(stderr, "st_tool: %s\n", err);
        return 1;
    }
    for (i = 0; i < st_metadata_count(f); i++) {
        const char *k, *v;
        st_metadata_at(f, i, &k, &v);
        printf("meta %s=%s\n", k, v);
    }
    for (i = 0; i < st_count(f); i++) {
        const StTensor *t = st_tensor(f, i);
        unsigned char *buf = (unsigned char *)malloc(t->nbytes + 1);
        uint64_t k;
        printf("%s %s [", t->name, st_dtype_name(t->dtype));
        for (j = 0; j < t->rank; j++)
            printf("%s%lld", j ? ", " : "", (long long)t->shape[j]);
        printf("]\n");
        st_copy(t, buf);
        if (t->dtype == ST_F32 || t->dtype == ST_F16 || t->dtype == ST_BF16)
            for (k = 0; k < t->nelem; k++)
                printf("  %.9g\n", (double)value_at(t, buf, k));
        free(buf);
    }
    st_close(f);
    return 0;
}

/* x: F32 [2, 3] = i / 4 - 1; h: F16 [5] of edge values; b: BF16 [2, 2];
 * s: F32 scalar; metadata format=pt. */
static int write_sample(const char *path)
{
    float x[6], s = 0.1f;
    uint16_t h[5], b[4];
    float hv[5] = { 1.0f, -0.0f, 65504.0f, 5.9604645e-08f, 0.33325195f };
    int64_t sx[2] = { 2, 3 }, sh[1] = { 5 }, sb[2] = { 2, 2 };
    StOut o[4];
    const char *meta[2] = { "format", "pt" };
    char err[ST_ERRLEN];
    int i;
    for (i = 0; i < 6; i++)
        x[i] = (float)i / 4 - 1;
    for (i = 0; i < 5; i++)
        h[i] = st_f32_to_f16(hv[i]);
    for (i = 0; i < 4; i++)
        b[i] = st_f32_to_bf16(1.0f / (float)(i + 3));
    o[0].name = "x"; o[0].dtype = ST_F32; o[0].rank = 2; o[0].shape = sx;
    o[0].data = x;
    o[1].name = "h"; o[1].dtype = ST_F16; o[1].rank = 1; o[1].shape = sh;
    o[1].data = h;
    o[2].name = "b"; o[2].dtype = ST_BF16; o[2].rank = 2; o[2].shape = sb;
    o[2].data = b;
    o[3].name = "s"; o[3].dtype = ST_F32; o[3].rank = 0; o[3].shape = NULL;
    o[3].data = &s;
    if (st_write(path, o, 4, meta, 1, 0, err, sizeof err) != ST_OK) {
        fprintf(stderr, "st_tool: %s\n", err);
        return 1;
    }
    return 0;
}

static int narrow(const char *in, const char *out)
{
    char err[ST_ERRLEN];
    StFile *f;
    StOut *o;
    char **names;
    void **bufs;
    int i, n = 0, nt, rc = 0;
    if (st_open(in, &f, err, sizeof err) != ST_OK) {
        fprintf(stderr, "st_tool: %s\n", err);
        return 1;
    }
    nt = st_count(f);
    o = (StOut *)calloc((size_t)(2 * nt + 1), sizeof *o);
    names = (char **)calloc((size_t)(2 * nt + 1), sizeof *names);
    bufs = (void **)calloc((size_t)(3 * nt + 1), sizeof *bufs);
    for (i = 0; i < nt; i++) {
        const StTensor *t = st_tensor(f, i);
        float *v;
        uint16_t *h, *b;
        uint64_t k;
        int w;
        if (t->dtype != ST_F32)
            continue;
        v = (float *)malloc(t->nbytes + 4);
        h = (uint16_t *)malloc(t->nelem * 2 + 2);
        b = (uint16_t *)malloc(t->nelem * 2 + 2);
        st_copy(t, v);
        for (k = 0; k < t->nelem; k++) {
            h[k] = st_f32_to_f16(v[k]);
            b[k] = st_f32_to_bf16(v[k]);
        }
        bufs[3 * i] = v;
        bufs[3 * i + 1] = h;
        bufs[3 * i + 2] = b;
        for (w = 0; w < 2; w++) {
            size_t len = strlen(t->name) + 6;
            names[n] = (char *)malloc(len);
            snprintf(names[n], len, "%s.%s", t->name, w ? "bf16" : "f16");
            o[n].name = names[n];
            o[n].dtype = w ? ST_BF16 : ST_F16;
            o[n].rank = t->rank;
            o[n].shape = t->shape;
            o[n].data = w ? (void *)b : (void *)h;
            n++;
        }
    }
    if (st_write(out, o, n, NULL, 0, ST_WRITE_SORTED, err, sizeof err)
        != ST_OK) {
        fprintf(stderr, "st_tool: %s\n", err);
        rc = 1;
    }
    for (i = 0; i < n; i++)
        free(names[i]);
    for (i = 0; i < 3 * nt; i++)
        free(bufs[i]);
    free(names);
    free(bufs);
    free(o);
    st_close(f);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "dump") == 0)
        return dump(argv[2]);
    if (argc == 3 && strcmp(argv[1], "write-sample") == 0)
        return write_sample(argv[2]);
    if (argc == 4 && strcmp(argv[1], "narrow") == 0)
        return narrow(argv[2], argv[3]);
    if (argc == 5 && strcmp(argv[1], "fill") == 0) {
        uint64_t seed = strtoull(argv[2], NULL, 10), s, i;
        long n = atol(argv[4]);
        s = rt_stream(seed, argv[3]);
        for (i = 0; i < (uint64_t)n; i++)
            printf("%.9g\n", (double)rt_uniform(s, i));
        return 0;
    }
    if (argc >= 2 && strcmp(argv[1], "args") == 0) {
        RtArgs a;
        argv[1] = argv[0];
        rt_main_args(argc - 1, argv + 1, &a);
        printf("prog=%s weights=%s inputs=%s outputs=%s seed=%llu bench=%ld threads=%d\n",
               a.prog, a.weights ? a.weights : "-",
               a.inputs ? a.inputs : "-", a.outputs ? a.outputs : "-",
               (unsigned long long)a.seed, a.bench, a.threads);
        return 0;
    }
    fprintf(stderr, "usage: st_tool dump|write-sample|narrow|fill|args ...\n");
    return 2;
}
