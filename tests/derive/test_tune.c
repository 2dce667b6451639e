/* test_tune.c - the tuning database (derive/pricing/opkey.c, tunedb.c): the parser on good
 * and bad files (every error located, never a crash), operator keys (the
 * same operator gets the same key whatever its tensors and variables are
 * called or numbered; another size, another key), cost_stage taking a
 * measured time over the model, and the search's plan keys (every field
 * of a library operator counts; the form of a kernel does not). */
#include "config.h"
#include "parser/parser.h"
#include "sema/sema.h"
#include "derive/ir/ir.h"
#include "derive/pricing/cost.h"
#include "derive/search/search.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/check.h"

static Arena *arena;

/* Parse `text` as a database; *msgs receives the diagnostics (malloc'ed). */
static TuneDb *parse_db(const char *text, const char *device, char **msgs)
{
    size_t len;
    FILE *fp = open_memstream(msgs, &len);
    diag_set_stream(fp);
    diag_reset();
    TuneDb *db = tune_db_parse(arena, "t.tune", text, strlen(text), device);
    fclose(fp);
    diag_set_stream(stderr);
    return db;
}

/* A database that must fail with `want` (a substring of the messages). */
static void bad(const char *text, const char *want)
{
    char *msgs = NULL;
    TuneDb *db = parse_db(text, "h200", &msgs);
    if (db || !strstr(msgs, want)) {
        fprintf(stderr, "bad database accepted or wrong message\n--- input:\n%s--- got:\n%s"
                "--- want: %s\n", text, msgs, want);
        failures++;
    }
    free(msgs);
}

static void test_parser(void)
{
    char *msgs = NULL;
    TuneDb *db = parse_db("# measured by hand\n"
                          "einc-tune 1\r\n"
                          "device h200\n"
                          "\n"
                          "  12.5   matmul fp32 f32,f32 m=2 n=3 k=4  \n"
                          "# a comment\n"
                          "0 kernel t0=f32[4] = L<0:4> S<> t0[0+1*l0]\n",
                          "h200", &msgs);
    CHECK(db != NULL);
    CHECK_STR(msgs, "");
    free(msgs);
    if (!db)
        return;
    CHECK(tune_db_count(db) == 2);
    CHECK_STR(tune_db_device(db), "h200");
    CHECK_NEAR(tune_db_lookup(db, "matmul fp32 f32,f32 m=2 n=3 k=4"), 12.5e-6, 1e-12);
    CHECK_NEAR(tune_db_lookup(db, "kernel t0=f32[4] = L<0:4> S<> t0[0+1*l0]"), 0, 1e-12);
    CHECK(tune_db_lookup(db, "matmul fp32 f32,f32 m=2 n=3 k=5") < 0);
    CHECK(tune_db_lookup(db, "matmul fp32 f32,f32 m=2 n=3") < 0);
    CHECK(tune_db_engine(db, "matmul fp32 f32,f32 m=2 n=3 k=4") == -1);

    /* a convolution's engine, with its time (either first) or alone */
    db = parse_db("einc-tune 1\ndevice h200\n"
                  "3 conv2d a\nengine 17 conv2d a\n"
                  "engine 0 conv2d b\n2 conv2d b\n"
                  "engine  2147483647   conv2d c  \n", "h200", &msgs);
    CHECK(db != NULL);
    CHECK_STR(msgs, "");
    free(msgs);
    if (db) {
        CHECK(tune_db_count(db) == 3);
        CHECK(tune_db_engine(db, "conv2d a") == 17);
        CHECK_NEAR(tune_db_lookup(db, "conv2d a"), 3e-6, 1e-12);
        CHECK(tune_db_engine(db, "conv2d b") == 0);
        CHECK_NEAR(tune_db_lookup(db, "conv2d b"), 2e-6, 1e-12);
        CHECK(tune_db_engine(db, "conv2d c") == 2147483647);
        CHECK(tune_db_lookup(db, "conv2d c") < 0);
        CHECK(tune_db_engine(db, "conv2d d") == -1);
    }

    /* many entries: the table grows */
    char *big = NULL;
    size_t blen;
    FILE *fp = open_memstream(&big, &blen);
    fputs("einc-tune 1\ndevice a100\n", fp);
    for (int i = 0; i < 1000; i++)
        fprintf(fp, "%d.25 op %d\n", i, i * 7);
    fclose(fp);
    db = parse_db(big, NULL, &msgs);
    CHECK(db && tune_db_count(db) == 1000);
    for (int i = 0; db && i < 1000; i += 37) {
        char key[32];
        snprintf(key, sizeof key, "op %d", i * 7);
        CHECK_NEAR(tune_db_lookup(db, key), (i + 0.25) * 1e-6, 1e-9);
    }
    free(msgs);
    free(big);

    bad("", "t.tune:1:1: error: empty tuning database");
    bad("# only a comment\n", "empty tuning database");
    bad("einc-tune\n", "t.tune:1:1: error: expected a version number");
    bad("einc-tune 2\ndevice h200\n", "t.tune:1:11: error: unsupported tuning database "
        "version '2'");
    bad("device h200\neinc-tune 1\n", "t.tune:1:1: error: expected 'einc-tune 1'");
    bad("einc-tune 1\ndevice h200\n1.5x kernel\n", "t.tune:3:1: error: expected "
        "'MICROSECONDS KEY', 'engine N KEY' or 'device NAME', not '1.5x'");
    bad("einc-tune 1\ndevice h200\nfoo bar\n", "t.tune:3:1: error: expected");
    bad("einc-tune 1\ndevice h200\n-3 kernel\n", "t.tune:3:1: error: the time '-3' is not");
    bad("einc-tune 1\ndevice h200\nnan kernel\n", "t.tune:3:1: error: the time 'nan'");
    bad("einc-tune 1\ndevice h200\n7\n", "t.tune:3:1: error: missing the operator key");
    bad("einc-tune 1\ndevice h200\n1 k a\n2 k a\n", "t.tune:4:3: error: a second time for "
        "the same operator");
    bad("einc-tune 1\ndevice h200\n1 k a\n2 k a\n", "t.tune:3:3: note: the first is here");
    bad("einc-tune 1\n1 k a\ndevice h200\n", "t.tune:2:1: error: an operator before the "
        "'device' line");
    bad("einc-tune 1\ndevice a100\n1 k a\n", "t.tune:2:8: error: these times were measured "
        "for the device 'a100', not 'h200'");
    bad("einc-tune 1\ndevice h200\ndevice h200\n", "t.tune:3:1: error: a second 'device' line");
    bad("einc-tune 1\ndevice\n", "expected one device name");
    bad("einc-tune 1\ndevice a b\n", "t.tune:2:8: error: expected one device name");
    bad("einc-tune 1\n1 k\n", "an operator before the 'device' line");
    bad("einc-tune 1\n", "no 'device NAME' line");
    bad("einc-tune 1\ndevice h200\nengine\n", "t.tune:3:1: error: expected 'engine N KEY'");
    bad("einc-tune 1\ndevice h200\nengine x k\n", "t.tune:3:8: error: expected 'engine N KEY'");
    bad("einc-tune 1\ndevice h200\nengine -1 k\n", "t.tune:3:8: error: expected 'engine N");
    bad("einc-tune 1\ndevice h200\nengine 2147483648 k\n", "t.tune:3:8: error: expected");
    bad("einc-tune 1\ndevice h200\nengine 3\n", "t.tune:3:1: error: missing the operator key "
        "after the engine");
    bad("einc-tune 1\ndevice h200\nengine 3 k\nengine 4 k\n", "t.tune:4:10: error: a second "
        "engine for the same operator");
    bad("einc-tune 1\ndevice h200\nengine 3 k\nengine 4 k\n", "t.tune:3:10: note: the first");
    bad("einc-tune 1\nengine 3 k\ndevice h200\n", "t.tune:2:1: error: an operator before");
    /* several errors in one file are all reported */
    msgs = NULL;
    CHECK(!parse_db("einc-tune 1\ndevice h200\nx a\ny b\n", "h200", &msgs));
    CHECK(strstr(msgs, "t.tune:3:1:") && strstr(msgs, "t.tune:4:1:"));
    free(msgs);
}

/* The stage of tensor `name` in `src`, lowered with a context of its own. */
static const Stage *stage_of(const char *src, const char *name)
{
    ParseOptions po = {0};
    Ast *ast = parse_buffer("t.ein", src, strlen(src), &po, arena);
    SemaOptions so = {0};
    so.model_name = "t";
    CProgram *cp = ast ? sema_check(ast, &so, arena) : NULL;
    IrProgram *p = cp ? ir_lower(ir_ctx_new(arena), cp) : NULL;
    for (int i = 0; p && i < p->ntensors; i++)
        if (strcmp(p->tensors[i]->name, name) == 0 && p->tensors[i]->stage)
            return p->tensors[i]->stage;
    fprintf(stderr, "no stage '%s' in:\n%s\n", name, src);
    failures++;
    return NULL;
}

static const char *kernel_key(const char *src, const char *name)
{
    const Stage *s = stage_of(src, name);
    return s ? cost_op_key(arena, s, NULL, PREC_FP32) : "";
}

static void test_keys(void)
{
    const char *a = "input x : f32[8, 16]\n"
                    "y[i] : [8] += relu(x[i, j]) * 2\n"
                    "output y\n";
    /* other names, another tensor declared first (ids move), another
     * variable spelling: the same operator */
    const char *b = "input unused : f32[3]\n"
                    "input q : f32[8, 16]\n"
                    "z[r] : [8] += relu(q[r, s]) * 2\n"
                    "w[i] = unused[i]\n"
                    "output z, w\n";
    const char *c = "input x : f32[8, 17]\n"
                    "y[i] : [8] += relu(x[i, j]) * 2\n"
                    "output y\n";
    const char *ka = kernel_key(a, "y"), *kb = kernel_key(b, "z"), *kc = kernel_key(c, "y");
    CHECK_STR(ka, kb);
    CHECK(strcmp(ka, kc) != 0);
    CHECK(strncmp(ka, "kernel t0=f32[8,16] ", 20) == 0);
    CHECK(!strchr(ka, '\n'));
    /* the same file lowered twice */
    CHECK_STR(kernel_key(a, "y"), ka);

    /* a library operator: its kind, precision, types and sizes */
    const char *mm = "input a : f32[4, 6]\ninput b : f32[6, 5]\n"
                     "c[i, j] : [4, 5] += a[i, k] * b[k, j]\noutput c\n";
    const Stage *s = stage_of(mm, "c");
    OpMatch m;
    CHECK(s && match_stage(s, &m) && m.kind == OPK_MATMUL);
    if (!s)
        return;
    const char *k32 = cost_op_key(arena, s, &m, PREC_FP32);
    CHECK(strncmp(k32, "matmul fp32 f32,f32 m=4 n=5 k=6 batch=1 ", 40) == 0);
    CHECK(strcmp(k32, cost_op_key(arena, s, &m, PREC_TF32)) != 0);
    /* as a generated kernel it is another operator */
    CHECK(strncmp(cost_op_key(arena, s, NULL, PREC_FP32), "kernel ", 7) == 0);

    /* cost_stage: the measured time when the database holds the key */
    char *text = NULL;
    size_t len;
    FILE *fp = open_memstream(&text, &len);
    fprintf(fp, "einc-tune 1\ndevice h200\n1234.5 %s\n", k32);
    fclose(fp);
    char *msgs = NULL;
    TuneDb *db = parse_db(text, "h200", &msgs);
    CHECK(db != NULL);
    free(msgs);
    free(text);
    CostModel plain = {cost_device("h200"), PREC_FP32, NULL, TARGET_CUDA, false};
    CostModel tuned = {cost_device("h200"), PREC_FP32, db, TARGET_CUDA, false};
    CostModel other = {cost_device("h200"), PREC_FP16, db, TARGET_CUDA, false};
    bool measured = true;
    double model = cost_stage_ex(&plain, s, &m, &measured);
    CHECK(!measured && model > 0 && model < 1e-3);
    CHECK_NEAR(cost_stage_ex(&tuned, s, &m, &measured), 1234.5e-6, 1e-12);
    CHECK(measured);
    cost_stage_ex(&other, s, &m, &measured);
    CHECK(!measured);
    CHECK_NEAR(cost_stage(&tuned, s, NULL), cost_stage(&plain, s, NULL), 1e-15);
}

/* The model: every device and precision gives a positive finite time,
 * and tensor cores make a big GEMM faster. */
static void test_model(void)
{
    const char *mm = "input a : f32[1024, 1024]\ninput b : f32[1024, 1024]\n"
                     "c[i, j] : [1024, 1024] += a[i, k] * b[k, j]\noutput c\n";
    const Stage *s = stage_of(mm, "c");
    OpMatch m;
    if (!s || !match_stage(s, &m))
        return;
    const char *devs[] = {"h200", "a100", "v100", "cpu"};
    for (int i = 0; i < 4; i++) {
        const Device *d = cost_device(devs[i]);
        CHECK(d != NULL);
        for (int p = 0; d && p < PREC_COUNT; p++) {
            double t = cost_model(d, (Precision)p, s, &m), k = cost_model(d, (Precision)p, s, NULL);
            CHECK(isfinite(t) && t > 0 && isfinite(k) && k > 0);
        }
    }
    const Device *h = cost_device("h200");
    CHECK(cost_model(h, PREC_FP16, s, &m) < cost_model(h, PREC_FP32, s, &m) / 3);
    CHECK(cost_model(h, PREC_FP32, s, &m) < cost_model(h, PREC_FP32, s, NULL));
    CHECK(cost_device("tpu") == NULL);
}

/* The key of a plan of one operator. */
static uint64_t key_of(const PlanOp *op)
{
    Pieces pc = {{0}, 0};
    vec_push(arena, &pc.ops, *op);
    return search_plan_key(&pc, PREC_FP32);
}

/* Two plans whose one library operator differs in any field (here: as
 * matched, then with one field changed) are two plans to the search; two
 * whose kernels differ only in their expressions are one. */
static void test_plan_key(void)
{
    const char *conv = "input x : f32[1, 4, 9, 9]\nweight k : f32[8, 4, 3, 3]\n"
                       "y[n, f, h, w] : [1, 8, 9, 9] += x[n, c, h + r - 1, w + s - 1] * "
                       "k[f, c, r, s]\noutput y\n";
    const char *mm = "input a : f32[4, 6]\ninput b : f32[6, 5]\n"
                     "c[i, j] : [4, 5] += a[i, k] * b[k, j]\noutput c\n";
    const Stage *cs = stage_of(conv, "y"), *ms = stage_of(mm, "c");
    PlanOp cv = {0}, mt = {0};
    if (!cs || !ms || !match_stage(cs, &cv.op) || !match_stage(ms, &mt.op)) {
        CHECK(!"no conv2d or matmul match");
        return;
    }
    cv.stage = cs;
    cv.impl = IMPL_CUDNN_CONV;
    mt.stage = ms;
    mt.impl = IMPL_CUBLAS_GEMM;
    uint64_t kc = key_of(&cv), km = key_of(&mt);
    CHECK(kc != km);
    /* the same operator, the same key */
    CHECK(key_of(&cv) == kc);
    int64_t *conv_fields[] = {&cv.op.pad, &cv.op.pad_w, &cv.op.dilation, &cv.op.groups,
                              &cv.op.stride, &cv.op.out_pad, &cv.op.r, &cv.op.c};
    for (size_t i = 0; i < sizeof conv_fields / sizeof *conv_fields; i++) {
        int64_t keep = *conv_fields[i];
        *conv_fields[i] = keep + 1;
        CHECK(key_of(&cv) != kc, "conv field %zu is not in the plan key", i);
        *conv_fields[i] = keep;
    }
    int64_t *mm_fields[] = {&mt.op.lda, &mt.op.ldb, &mt.op.ldc, &mt.op.stride_a,
                            &mt.op.stride_b, &mt.op.stride_c, &mt.op.off_a, &mt.op.off_b,
                            &mt.op.batch, &mt.op.k};
    for (size_t i = 0; i < sizeof mm_fields / sizeof *mm_fields; i++) {
        int64_t keep = *mm_fields[i];
        *mm_fields[i] = keep + 2;
        CHECK(key_of(&mt) != km, "matmul field %zu is not in the plan key", i);
        *mm_fields[i] = keep;
    }
    bool *flags[] = {&mt.op.trans_a, &mt.op.trans_b, &mt.op.out_nm};
    for (size_t i = 0; i < sizeof flags / sizeof *flags; i++) {
        *flags[i] = !*flags[i];
        CHECK(key_of(&mt) != km, "matmul flag %zu is not in the plan key", i);
        *flags[i] = !*flags[i];
    }
    /* the implementation counts */
    mt.impl = IMPL_CBLAS_GEMM;
    CHECK(key_of(&mt) != km);
    /* kernels: how many, not what they compute */
    PlanOp k1 = {0}, k2 = {0};
    k1.stage = cs;
    k2.stage = ms;
    k1.op.kind = k2.op.kind = OPK_KERNEL;
    CHECK(key_of(&k1) == key_of(&k2));
    CHECK(key_of(&k1) != kc);
}

int main(void)
{
    arena = arena_new();
    test_parser();
    test_keys();
    test_model();
    test_plan_key();
    return check_finish("test_tune");
}
