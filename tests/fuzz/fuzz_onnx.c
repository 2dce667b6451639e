/* fuzz_onnx.c - libFuzzer harness for the ONNX importer (einc --from=onnx):
 * the input is a whole .onnx file, unpacked by protoc-c's reader and
 * imported by onnx_import (onnx/graph.c) from memory.
 *
 * Besides "no crash, no out-of-bounds read, no leak, no undefined
 * behaviour" (ASan, LSan, UBSan) it checks what must hold for what the
 * importer says.  A refused model comes with at least one message, every
 * line of it "fuzz.onnx: error: ..." or "einc: error: ...", and nothing
 * returned.  An accepted one comes without a message, and:
 *   - the program it writes parses and checks (parse_buffer, sema_check)
 *     without an error: the importer never writes a program that einc
 *     then refuses (a name or a comment that breaks out of its line, say);
 *   - its weights image is a well-formed safetensors file of nweights
 *     tensors, and every weight the program declares is in it under its
 *     external name (or its name) with the declared element type and shape:
 *     the program loads the file written with it;
 *   - a second import of the same bytes gives the same program and the
 *     same image, byte for byte.
 *
 *   make fuzz-onnx && make fuzz-onnx-run FUZZ_ONNX_TIME=SECONDS
 *
 * `make check` replays tests/fuzz/corpus-onnx/ through replay.c
 * (replay-onnx.test): with FUZZ_ONNX_EXPECT=ok every input must be
 * accepted, with bad refused (files named ok-* and bad-*); crash-* inputs,
 * found by the fuzzer, may go either way.  The standard library (for
 * `import <nn.ein>`) is looked for in EINC_STDLIB. */
#include "config.h"
#include "lang/lang.h"
#include "onnx/onnx.h"
#include "parser/parser.h"
#include "runtime/st.h"
#include "sema/sema.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

#define FAIL(...)                                                           \
    do {                                                                    \
        fprintf(stderr, "fuzz_onnx: ");                                     \
        fprintf(stderr, __VA_ARGS__);                                       \
        fprintf(stderr, " (line %d)\n", __LINE__);                          \
        abort();                                                            \
    } while (0)

static FILE *devnull;
static int expect = -1;             /* FUZZ_ONNX_EXPECT: 1 ok, 0 bad, -1 either */

/* One import, its messages in *msg (malloc'd). */
static bool import(const unsigned char *data, size_t size, OnnxResult *res, char **msg)
{
    size_t mlen = 0;
    *msg = NULL;
    FILE *err = open_memstream(msg, &mlen);
    if (!err)
        FAIL("out of memory");
    OnnxOptions opt = {.path = "fuzz.onnx", .weights_name = "fuzz.safetensors",
                       .bytes = data, .len = size, .err = err};
    /* An empty input: protobuf-c reads an empty message, which the
     * importer must refuse by itself; a NULL pointer is what libFuzzer
     * may pass for it. */
    static const unsigned char none[1];
    if (!data)
        opt.bytes = none;
    bool ok = onnx_import(&opt, res);
    fclose(err);
    return ok;
}

/* Every line of a refusal's messages is an error of the model's file. */
static void check_refused(const OnnxResult *res, const char *msg)
{
    if (res->ein || res->weights || res->ein_len || res->weights_len)
        FAIL("refused, but something was returned");
    if (!msg || !*msg)
        FAIL("refused without a message");
    for (const char *p = msg; *p;) {
        const char *eol = strchr(p, '\n');
        if (!eol)
            FAIL("a message does not end its line: %s", p);
        if (strncmp(p, "fuzz.onnx: error: ", 18) != 0 && strncmp(p, "einc: error: ", 13) != 0)
            FAIL("a message that is no error of the file: %.*s", (int)(eol - p), p);
        p = eol + 1;
    }
}

/* Does the program's declared element type match the image's dtype? */
static bool same_elem(ElemType e, StDtype d)
{
    return strcasecmp(elem_name(e), st_dtype_name(d)) == 0;
}

static void check_accepted(const OnnxResult *res, const char *msg)
{
    if (msg && *msg)
        FAIL("accepted with a message: %s", msg);
    if (!res->ein || !res->weights)
        FAIL("accepted without a program or weights");
    if (memchr(res->ein, 0, res->ein_len))
        FAIL("the program holds a NUL byte");

    /* The weights image on its own. */
    char err[ST_ERRLEN];
    StFile *f;
    if (st_open_memory("fuzz.safetensors", res->weights, res->weights_len, &f, err,
                       sizeof err) != ST_OK)
        FAIL("the weights image does not read back: %s", err);
    if (st_count(f) != res->nweights)
        FAIL("the image has %d tensors, not nweights %d", st_count(f), res->nweights);

    /* The program through the front end. */
    src_reset();
    diag_reset();
    Arena *arena = arena_new();
    const char *lib = getenv("EINC_STDLIB");
    static const char *const dirs[] = {"/nonexistent-einc-fuzz"};
    ParseOptions po = {.include_dirs = dirs, .ninclude = 1,
                       .lib_dir = lib && *lib ? lib : NULL};
    Ast *ast = parse_buffer("fuzz.ein", res->ein, res->ein_len, &po, arena);
    CProgram *prog = NULL;
    if (ast) {
        SemaOptions so = {NULL, 0, "fuzz"};
        prog = sema_check(ast, &so, arena);
    }
    if (!prog || diag_error_count() != 0) {
        /* say why: the program and einc's messages */
        fprintf(stderr, "fuzz_onnx: the program written:\n%.*s\n", (int)res->ein_len,
                res->ein);
        diag_set_stream(stderr);
        src_reset();
        diag_reset();
        ast = parse_buffer("fuzz.ein", res->ein, res->ein_len, &po, arena);
        if (ast) {
            SemaOptions so = {NULL, 0, "fuzz"};
            sema_check(ast, &so, arena);
        }
        FAIL("einc refuses the program the importer wrote");
    }
    int weights = 0;
    for (int i = 0; i < prog->ntensors; i++) {
        const CTensor *t = &prog->tensors[i];
        if (t->kind != TENSOR_WEIGHT)
            continue;
        weights++;
        const char *nm = t->ext ? t->ext : t->name;
        const StTensor *w = st_find(f, nm);
        if (!w)
            FAIL("weight '%s' is not in the weights image", nm);
        if (!same_elem(t->elem, w->dtype))
            FAIL("weight '%s' is %s in the program, %s in the image", nm,
                 elem_name(t->elem), st_dtype_name(w->dtype));
        /* A rank-0 weight and a one-element tensor of any rank both read
         * as the one number. */
        bool same = w->rank == t->rank;
        for (int d = 0; same && d < t->rank; d++)
            same = w->shape[d] == t->shape[d];
        if (!same)
            FAIL("weight '%s' has another shape in the image", nm);
    }
    if (weights != res->nweights)
        FAIL("the program declares %d weights, the image holds %d", weights, res->nweights);
    arena_free(arena);
    st_close(f);
    src_reset();
    diag_reset();
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    if (!devnull) {
        devnull = fopen("/dev/null", "w");
        diag_set_stream(devnull);
        const char *e = getenv("FUZZ_ONNX_EXPECT");
        expect = !e ? -1 : strcmp(e, "ok") == 0 ? 1 : strcmp(e, "bad") == 0 ? 0 : -1;
    }
    OnnxResult res;
    char *msg;
    bool ok = import(data, size, &res, &msg);
    if (expect >= 0 && ok != (expect == 1)) {
        fprintf(stderr, "fuzz_onnx: %s", msg ? msg : "");
        FAIL(ok ? "accepted a model expected to be refused"
                : "refused a model expected to be accepted");
    }
    if (ok) {
        check_accepted(&res, msg);
        OnnxResult again;
        char *msg2;
        if (!import(data, size, &again, &msg2))
            FAIL("the second import refused it: %s", msg2 ? msg2 : "");
        if (again.ein_len != res.ein_len || memcmp(again.ein, res.ein, res.ein_len) != 0)
            FAIL("the second import wrote another program");
        if (again.weights_len != res.weights_len ||
            memcmp(again.weights, res.weights, res.weights_len) != 0)
            FAIL("the second import wrote other weights");
        free(again.ein);
        free(again.weights);
        free(msg2);
    } else {
        check_refused(&res, msg);
    }
    free(res.ein);
    free(res.weights);
    free(msg);
    return 0;
}
