/* fuzz_safetensors.c - libFuzzer harness for the safetensors reader
 * (runtime/st.c): the input is a whole file image.
 *
 * Besides "no crash, no out-of-bounds read" (ASan, UBSan) it checks what
 * must hold for every file the reader accepts: each tensor is found under
 * its name with its own dtype and shape, refused with another shape, its
 * bytes can be copied, and writing the file back and reading that gives
 * the same tensors.  A refused file must come with a message naming it.
 * The same bytes also go to the JSON checker alone.
 *
 *   make fuzz-st   (clang -fsanitize=fuzzer,address,undefined), then
 *   tests/runtime/fuzz-st.sh SECONDS
 *
 * Built with -DST_FUZZ_REPLAY it has a main() instead, which `make check`
 * runs over tests/fuzz/corpus-st/: files named ok-* must be accepted,
 * bad-* refused, anything else (crash-*, found by the fuzzer) either. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/st.h"

#define FAIL(what)                                                          \
    do {                                                                    \
        fprintf(stderr, "fuzz_safetensors: %s (line %d)\n", what,           \
                __LINE__);                                                  \
        abort();                                                            \
    } while (0)

static void check_tensors(StFile *f)
{
    int n = st_count(f), i, nmeta = st_metadata_count(f);
    StOut *outs = (StOut *)calloc((size_t)(n > 0 ? n : 1), sizeof *outs);
    unsigned char **copies =
        (unsigned char **)calloc((size_t)(n > 0 ? n : 1), sizeof *copies);
    const char **meta =
        (const char **)calloc((size_t)(2 * nmeta + 1), sizeof *meta);
    char err[ST_ERRLEN];
    unsigned char *img;
    size_t size;
    StFile *g;

    if (!outs || !copies || !meta)
        FAIL("out of memory");
    for (i = 0; i < n; i++) {
        const StTensor *t = st_tensor(f, i), *u = NULL;
        if (!t || st_find(f, t->name) != t)
            FAIL("tensor not found under its own name");
        if (st_get(f, t->name, t->dtype, t->rank, t->shape, &u, err,
                   sizeof err) != ST_OK || u != t)
            FAIL("tensor refused with its own dtype and shape");
        if (t->nbytes != t->end - t->begin ||
            t->nbytes != t->nelem * st_dtype_size(t->dtype))
            FAIL("sizes disagree");
        if (t->rank > 0) {
            int64_t *s = (int64_t *)malloc((size_t)t->rank * sizeof *s);
            memcpy(s, t->shape, (size_t)t->rank * sizeof *s);
            s[0] ^= 1;
            if (st_get(f, t->name, t->dtype, t->rank, s, NULL, err,
                       sizeof err) != ST_EMISMATCH)
                FAIL("tensor accepted with another shape");
            free(s);
        }
        copies[i] = (unsigned char *)malloc(t->nbytes ? t->nbytes : 1);
        st_copy(t, copies[i]);
        outs[i].name = t->name;
        outs[i].dtype = t->dtype;
        outs[i].rank = t->rank;
        outs[i].shape = t->shape;
        outs[i].data = copies[i];
    }
    for (i = 0; i < nmeta; i++) {
        st_metadata_at(f, i, &meta[2 * i], &meta[2 * i + 1]);
        if (st_metadata(f, meta[2 * i]) != meta[2 * i + 1])
            FAIL("metadata key not found");
    }

    /* write it back, read that: the same tensors in the same order */
    if (st_write_memory(outs, n, meta, nmeta, 0, &img, &size, err,
                        sizeof err) != ST_OK)
        FAIL(err);
    if (st_open_memory("again", img, size, &g, err, sizeof err) != ST_OK)
        FAIL(err);
    if (st_count(g) != n || st_metadata_count(g) != nmeta)
        FAIL("round trip changed the counts");
    for (i = 0; i < n; i++) {
        const StTensor *a = st_tensor(f, i), *b = st_tensor(g, i);
        if (strcmp(a->name, b->name) != 0 || a->dtype != b->dtype ||
            a->rank != b->rank || a->nbytes != b->nbytes ||
            (a->rank && memcmp(a->shape, b->shape,
                               (size_t)a->rank * sizeof *a->shape) != 0) ||
            (a->nbytes && memcmp(a->data, b->data, a->nbytes) != 0))
            FAIL("round trip changed a tensor");
    }
    for (i = 0; i < nmeta; i++) {
        const char *v = st_metadata(g, meta[2 * i]);
        if (!v || strcmp(v, meta[2 * i + 1]) != 0)
            FAIL("round trip changed the metadata");
    }
    st_close(g);
    free(img);
    for (i = 0; i < n; i++)
        free(copies[i]);
    free(copies);
    free(outs);
    free((void *)meta);
}

/* Returns the reader's status. */
static int run_one(const uint8_t *data, size_t size)
{
    char err[ST_ERRLEN];
    StFile *f = NULL;
    int rc;

    err[0] = 0;
    rc = st_open_memory("fuzz", data, size, &f, err, sizeof err);
    if (rc == ST_OK) {
        if (!f)
            FAIL("no file");
        check_tensors(f);
        st_close(f);
    } else if (f || rc != ST_EFORMAT || strncmp(err, "fuzz: ", 6) != 0 ||
               strlen(err) < 8) {
        FAIL("refused without a proper message");
    }
    err[0] = 0;
    if (st_json_check((const char *)data, size, err, sizeof err) != ST_OK &&
        strncmp(err, "json: malformed header at byte ", 31) != 0)
        FAIL("JSON refused without a proper message");
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    run_one(data, size);
    return 0;
}

#ifdef ST_FUZZ_REPLAY
int main(int argc, char **argv)
{
    int i, bad = 0, ok = 0, refused = 0;
    for (i = 1; i < argc; i++) {
        FILE *fp = fopen(argv[i], "rb");
        unsigned char *buf = NULL;
        size_t len = 0, cap = 0;
        const char *base = strrchr(argv[i], '/');
        int rc;
        base = base ? base + 1 : argv[i];
        if (!fp) {
            fprintf(stderr, "%s: cannot open\n", argv[i]);
            return 99;
        }
        for (;;) {
            size_t got;
            if (len == cap) {
                cap = cap ? 2 * cap : 4096;
                buf = (unsigned char *)realloc(buf, cap);
                if (!buf)
                    return 99;
            }
            got = fread(buf + len, 1, cap - len, fp);
            len += got;
            if (got == 0)
                break;
        }
        fclose(fp);
        rc = run_one(buf, len);
        free(buf);
        if (rc == ST_OK)
            ok++;
        else
            refused++;
        if ((strncmp(base, "ok-", 3) == 0 && rc != ST_OK) ||
            (strncmp(base, "bad-", 4) == 0 && rc == ST_OK)) {
            fprintf(stderr, "%s: %s, expected otherwise\n", argv[i],
                    rc == ST_OK ? "accepted" : "refused");
            bad++;
        }
    }
    printf("replayed %d files: %d accepted, %d refused\n", argc - 1, ok,
           refused);
    return bad ? 1 : 0;
}
#endif
