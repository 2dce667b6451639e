/* fuzz_compile.c - libFuzzer entry for the whole compile: the input bytes
 * are turned into a well-formed .ein program (gen_ein.c), which goes
 * through the parser, sema, lowering, derive (sibling merging, the search
 * with its rules, instantiation, fusion) and every writer to memory: C
 * and CUDA (with and without --main), the tuner's CUDA program, the
 * program graph, the plan, the plan JSON, the explanations and the search
 * trees.  A byte of the input chooses -O0/-O1/-O2, the device's cost
 * model, the precision and the search depth.  Diagnostics go to
 * /dev/null; what must not happen is a crash, a sanitizer report, an
 * internal compiler error (diag_ice exits, which libFuzzer reports), or
 * a program that sema accepted and a later phase then refused.
 *
 * The differential mode (FUZZ_COMPILE_DIFF, the fuzz-compile-diff
 * target) generates small programs instead, compiles each at -O0 and at
 * -O1 or -O2, evaluates both plans with the IR interpreter (double
 * precision) on the same seeded inputs and weights, and aborts when an
 * output differs by more than 1e-9 of its largest value (the tolerance of
 * einc --verify; the generator keeps NaN and infinity out).  A copy that
 * a band operator or a GEMM stores through a view (derive/search/outview.c) is
 * evaluated as those stores leave it, each of its elements stored once,
 * so a wrong view is a difference.
 *
 *   make fuzz-compile && make fuzz-compile-run FUZZ_COMPILE_TIME=SECONDS
 *   EINC_FUZZ_PRINT=1 tests/fuzz/replay_compile FILE   # the program, and
 *                                                      # its diagnostics
 *
 * The run mode (FUZZ_COMPILE_RUN, gen_run.c's driver) generates the same
 * small programs and checks the code einc writes, end to end: the
 * program goes to a file, the einc binary ($EINC) compiles it to C with
 * --main (its level, oneDNN or not and SLEEF or not drawn from the
 * input), the C file is built by its own line-1 command under ASan and
 * UBSan ($EINC_FUZZ_RUN_CFLAGS), and run on the inputs and weights the
 * differential mode uses (rounded to their element types, written as
 * safetensors); each output must match the -O0 plan under the
 * interpreter within a tolerance of the element types (1e-4 of the
 * output's largest value for f32 programs, 2e-2 where f16 or bf16 meet).
 * A failure keeps its folder and names it.
 *
 * `make check` replays tests/fuzz/corpus-compile/ through replay.c in both
 * the compile and the differential mode (replay-compile.test), and runs
 * a few seeds in the run mode (run-generated.test). */
#include "config.h"
#include "lang/lang.h"
#include "parser/parser.h"
#include "sema/sema.h"
#include "derive/ir/ir.h"
#include "derive/search/derive.h"
#include "derive/search/tune.h"
#include "emit/emit.h"
#include "gen_ein.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

#ifdef FUZZ_COMPILE_DIFF
static const bool diff_mode = true;
#else
static const bool diff_mode = false;
#endif
#ifdef FUZZ_COMPILE_RUN
#include "runtime/st.h"
#include <sys/wait.h>
#include <unistd.h>
static const bool run_mode = true;
#else
static const bool run_mode = false;
#endif

/* The compile options one byte chooses. */
typedef struct Choice {
    int level;
    SearchOptions search;
    bool main;
    bool views;                 /* the program graph and the plan */
    bool extra;                 /* the tuner, JSON, explanations, trees */
} Choice;

static Choice choose(unsigned c)
{
    static const char *const devices[] = {"h200", "a100", "v100", "cpu"};
    Choice ch;
    search_default_options(&ch.search);
    ch.level = (int)(c % 3);
    ch.search.dev = cost_device(devices[c >> 2 & 3]);
    ch.search.precision = (Precision)(c >> 4 & 3);
    /* Bounded by counts, so that an input behaves the same on every run
     * (the time budget stays a far-away safety net), and small, so that
     * millions of inputs run in hours: depth 0 or 1 mostly, 2 at times,
     * 48 states, 8 applications of a rule per state. */
    ch.search.depth = (c >> 6 & 3) == 3 ? 2 : (int)(c >> 6 & 1);
    ch.search.max_states = 48;
    ch.search.per_rule = 8;
    ch.main = c >> 8 & 1;
    ch.views = c >> 9 & 1;
    ch.extra = (c >> 10 & 3) == 3;
    /* the plan is made for one target: the C file or the C+CUDA file */
    ch.search.target = c >> 12 & 1 ? TARGET_C : TARGET_CUDA;
    return ch;
}

static void die(const char *what, const char *text)
{
    fprintf(stderr, "fuzz_compile: %s\n--- the program ---\n%s", what, text);
    abort();
}

/* Parse, check, lower and derive `text`; NULL when the front end
 * refuses it (reported to /dev/null). */
static Derived *compile(Arena *arena, const char *text, size_t len, const Choice *ch,
                        IrCtx **cxp)
{
    static const ParseOptions popt = {0};     /* no -I folders, no library */
    Ast *ast = parse_buffer("fuzz.ein", text, len, &popt, arena);
    if (!ast || diag_error_count())
        return NULL;
    SemaOptions sopt = {NULL, 0, "fuzz"};
    CProgram *cp = sema_check(ast, &sopt, arena);
    if (!cp || diag_error_count())
        return NULL;
    IrCtx *cx = ir_ctx_new(arena);
    IrProgram *p = ir_lower(cx, cp);
    /* an index expression whose canonical form leaves 64 bits where the
     * source's does not is lowering's to refuse (lower.c, exact) */
    if (ir_lower_inexact(cx) > 0 && diag_error_count() == ir_lower_inexact(cx))
        return NULL;
    if (!p || diag_error_count())
        die("sema accepted a program that lowering refused", text);
    DeriveOptions dopt = {ch->level, ch->search, 0};
    Derived *d = derive_program(cx, p, &dopt);
    if (diag_error_count())
        die("derive reported an error", text);
    *cxp = cx;
    return d;
}

typedef void (*Writer)(IrCtx *cx, Derived *d, const Choice *ch, int which, FILE *fp);

static void write_one(IrCtx *cx, Derived *d, const Choice *ch, int which, FILE *fp)
{
    EmitOptions eo = {
        .main = ch->main,
        .out_name = which == 0 ? "fuzz.c" : "fuzz.cu",
        .src_name = "fuzz.ein",
    };
    switch (which) {
    case 0:
    case 1:
        /* the file of the plan's target (0: C, 1: CUDA) */
        if ((which == 0) != (d->plan->target == TARGET_C))
            break;
        if (emit_program(d->plan, &eo, fp) != 0 || diag_error_count())
            die(which ? "the CUDA writer refused a derived program"
                      : "the C writer refused a derived program", "");
        break;
    case 2:
        if (emit_dot(d->plan, fp) != 0)
            die("the Graphviz writer failed", "");
        break;
    case 3:
        plan_print(d->plan, fp);
        break;
    case 4:
        derive_print_json(cx, d, fp);
        break;
    case 5:
        derive_explain(cx, d, fp);
        break;
    case 6:
        derive_dot(cx, d, fp);
        break;
    case 7: {
        if (d->plan->target != TARGET_CUDA)
            break;              /* the tuner is a CUDA program */
        CostModel cm = {ch->search.dev, ch->search.precision, NULL, TARGET_CUDA, false};
        const char *const *keys;
        const Plan *tp = tune_program(cx, d, &cm, &keys);
        eo.main = true;
        eo.tune_keys = keys;
        eo.tune_device = ch->search.dev->name;
        if (emit_program(tp, &eo, fp) != 0)
            die("the tuner's writer failed", "");
        break;
    }
    }
}

/* C and CUDA every time; the views of the plan (graph, plan text) half
 * the time and the rest (JSON, explanations, search trees, the tuner)
 * one time in four, to spend the time where most of the code is. */
static void write_all(IrCtx *cx, Derived *d, const Choice *ch)
{
    for (int which = 0; which < 8; which++) {
        if ((which >= 2 && which < 4 && !ch->views) || (which >= 4 && !ch->extra))
            continue;
        char *buf = NULL;
        size_t len = 0;
        FILE *fp = open_memstream(&buf, &len);
        if (!fp)
            abort();
        write_one(cx, d, ch, which, fp);
        fclose(fp);
        free(buf);
    }
}

/* ---- the differential mode ------------------------------------------------------ */

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static uint64_t name_hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

/* The operator of x stores it inside the buffer `into` of the copy
 * plan.h's PlanBuf names, through its view: put each element of x where
 * the view says, and die unless every element of the copy gets exactly
 * one. */
static void store_view(const PlanOp *op, const double *x, double *into, const char *text)
{
    const IrTensor *t = op->out, *of = op->buf.of;
    const BandView *v = &op->buf.view;
    size_t n = ir_tensor_numel(t), m = ir_tensor_numel(of);
    int64_t rows = op->buf.rows, cols = op->buf.cols;
    if (rows < 1 || cols < 1)
        die("a view without rows or columns", text);
    unsigned char *hit = calloc(m ? m : 1, 1);
    if (!hit || n != m)
        die("a view's tensor and its copy differ in size", text);
    for (size_t k = 0; k < n; k++) {
        int64_t e = (int64_t)k, c = e % cols, row = e / cols % rows, bb = e / cols / rows;
        int64_t at = bb / v->split * v->stride + bb % v->split * v->sstride +
                     (op->buf.trans ? row + c * v->ld : row * v->ld + c);
        if (at < 0 || (size_t)at >= m || hit[at]++)
            die("an operator's view leaves its copy or stores an element twice", text);
        into[at] = x[k];
    }
    free(hit);
}

/* Evaluate the plan pl with every input and weight filled by its name
 * (the same values in both programs): each tensor as its operator stores
 * it (plan_stored_stage: with its epilogue), and a copy that another
 * operator stores through a view as that operator's stores leave it;
 * returns the buffers, by tensor id.  With `round`, every tensor is
 * rounded to its element type, as a generated program holds it. */
static double **evaluate(const Plan *pl, const char *text, bool round)
{
    const IrProgram *p = pl->prog;
    double **data = calloc((size_t)p->ntensors + 1, sizeof *data);
    if (!data)
        abort();
    for (int i = 0; i < p->ntensors; i++) {
        const IrTensor *t = p->tensors[i];
        size_t n = ir_tensor_numel(t);
        data[i] = calloc(n ? n : 1, sizeof **data);
        if (!data[i])
            abort();
        if (t->kind != IT_STAGE) {
            uint64_t h = name_hash(t->name);
            for (size_t k = 0; k < n; k++)
                data[i][k] = (double)(mix(h + k) >> 11) / 9007199254740992.0 * 2 - 1;
        }
        for (size_t k = 0; round && k < n; k++)
            data[i][k] = ir_convert(t->elem, data[i][k]);
    }
    for (int i = 0; i < p->ntensors; i++) {
        const IrTensor *t = p->tensors[i];
        const PlanOp *op = &pl->ops[t->id];
        if (t->kind != IT_STAGE || op->stored_by)
            continue;
        derive_eval_into(plan_stored_stage(p->cx, op), t, data, data[i]);
        for (size_t k = 0; round && k < ir_tensor_numel(t); k++)
            data[i][k] = ir_convert(t->elem, data[i][k]);
        if (op->buf.kind == BUF_VIEW)
            store_view(op, data[i], data[op->buf.of->id], text);
    }
    return data;
}

static void free_data(const IrProgram *p, double **data)
{
    for (int i = 0; i < p->ntensors; i++)
        free(data[i]);
    free(data);
}

static void compare(const Plan *pa, const Plan *pb, const char *text, int level)
{
    const IrProgram *a = pa->prog, *b = pb->prog;
    if (a->noutputs != b->noutputs)
        die("-O0 and the other level have different outputs", text);
    double **da = evaluate(pa, text, false), **db = evaluate(pb, text, false);
    for (int o = 0; o < a->noutputs; o++) {
        const IrTensor *ta = a->tensors[a->outputs[o]], *tb = b->tensors[b->outputs[o]];
        size_t n = ir_tensor_numel(ta);
        if (strcmp(ta->name, tb->name) != 0 || n != ir_tensor_numel(tb))
            die("an output changed its name or size", text);
        const double *x = da[ta->id], *y = db[tb->id];
        double scale = 0, err = 0;
        for (size_t k = 0; k < n; k++) {
            if (isnan(x[k]) != isnan(y[k]) || (isinf(x[k]) && x[k] != y[k]))
                die("an output differs in NaN or infinity", text);
            if (!isfinite(x[k]))
                continue;
            scale = fmax(scale, fabs(x[k]));
            err = fmax(err, fabs(x[k] - y[k]));
        }
        if (err > 1e-9 * fmax(scale, 1e-300)) {
            fprintf(stderr, "fuzz_compile: output '%s' at -O%d differs from -O0: max error "
                    "%g, max value %g\n", ta->name, level, err, scale);
            die("the derived program computes something else", text);
        }
    }
    free_data(a, da);
    free_data(b, db);
}

/* ---- the run mode ---------------------------------------------------------------- */

#ifdef FUZZ_COMPILE_RUN
/* Where a failing input's files stay: set before die() is called. */
static char run_dir[4096];

static void run_die(const char *what, const char *text)
{
    fprintf(stderr, "fuzz_compile: the files are in %s\n", run_dir);
    die(what, text);
}

/* The command's exit status (a shell's), or -1. */
static int shell(const char *fmt, ...)
{
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof cmd)
        return -1;
    int st = system(cmd);
    return st == -1 || !WIFEXITED(st) ? -1 : WEXITSTATUS(st);
}

static StDtype st_dtype_of(ElemType e)
{
    return e == ELEM_F16 ? ST_F16 : e == ELEM_BF16 ? ST_BF16 : ST_F32;
}

/* The tensors of one kind, their values in their element types, as a
 * safetensors file (none: no file, false). */
static bool write_tensors(const IrProgram *p, double **data, IrTensorKind kind,
                          const char *path, const char *text)
{
    StOut *ts = calloc((size_t)p->ntensors + 1, sizeof *ts);
    void **bufs = calloc((size_t)p->ntensors + 1, sizeof *bufs);
    int n = 0;
    if (!ts || !bufs)
        abort();
    for (int i = 0; i < p->ntensors; i++) {
        const IrTensor *t = p->tensors[i];
        if (t->kind != kind)
            continue;
        size_t m = ir_tensor_numel(t);
        StDtype dt = st_dtype_of(t->elem);
        unsigned char *b = malloc((m ? m : 1) * 4);
        if (!b)
            abort();
        for (size_t k = 0; k < m; k++) {
            float f = (float)data[i][k];
            if (dt == ST_F32) {
                memcpy(b + 4 * k, &f, 4);
            } else {
                uint16_t h = dt == ST_F16 ? st_f32_to_f16(f) : st_f32_to_bf16(f);
                memcpy(b + 2 * k, &h, 2);
            }
        }
        bufs[n] = b;
        ts[n++] = (StOut){t->name, dt, t->rank, t->shape, b};
    }
    char err[ST_ERRLEN];
    if (n && st_write(path, ts, n, NULL, 0, 0, err, sizeof err) != ST_OK)
        run_die(err, text);
    for (int i = 0; i < n; i++)
        free(bufs[i]);
    free(bufs);
    free(ts);
    return n > 0;
}

/* The command on line 1 of the C file ("/" "* build: ... *" "/"). */
static void build_line(const char *path, char *out, size_t size, const char *text)
{
    FILE *fp = fopen(path, "r");
    char line[4096];
    if (!fp || !fgets(line, sizeof line, fp))
        run_die("no C file, or an empty one", text);
    fclose(fp);
    char *b = strstr(line, "build:"), *e = strstr(line, "*/");
    if (!b || !e || e < b)
        run_die("no build command on line 1 of the C file", text);
    b += 6;
    while (*b == ' ')
        b++;
    while (e > b && e[-1] == ' ')
        e--;
    if ((size_t)(e - b) >= size)
        run_die("a build command too long", text);
    memcpy(out, b, (size_t)(e - b));
    out[e - b] = 0;
}

/* Compare what the program wrote with the interpreter's values. */
static void compare_outputs(const Plan *pl, double **data, const char *path, double tol,
                            const char *text)
{
    const IrProgram *p = pl->prog;
    StFile *f;
    char err[ST_ERRLEN];
    if (st_open(path, &f, err, sizeof err) != ST_OK)
        run_die(err, text);
    for (int o = 0; o < p->noutputs; o++) {
        const IrTensor *t = p->tensors[p->outputs[o]];
        const StTensor *st;
        StDtype dt = st_dtype_of(t->elem);
        if (st_get(f, t->name, dt, t->rank, t->shape, &st, err, sizeof err) != ST_OK)
            run_die(err, text);
        size_t n = ir_tensor_numel(t), es = dt == ST_F32 ? 4 : 2;
        unsigned char *b = malloc(n * es + 1);
        if (!b)
            abort();
        st_copy(st, b);
        double scale = 0, err_max = 0;
        const double *want = data[t->id];
        for (size_t k = 0; k < n; k++) {
            float f32;
            uint16_t h;
            if (dt == ST_F32) {
                memcpy(&f32, b + 4 * k, 4);
            } else {
                memcpy(&h, b + 2 * k, 2);
                f32 = dt == ST_F16 ? st_f16_to_f32(h) : st_bf16_to_f32(h);
            }
            if (isnan(f32) != isnan(want[k]) || (isinf(want[k]) && f32 != want[k]) ||
                (isinf(f32) && !isinf(want[k]))) {
                fprintf(stderr, "fuzz_compile: output '%s' element %zu is %g, the "
                        "interpreter's %g\n", t->name, k, f32, want[k]);
                run_die("the generated program computes something else", text);
            }
            if (!isfinite(want[k]))
                continue;
            scale = fmax(scale, fabs(want[k]));
            err_max = fmax(err_max, fabs(want[k] - f32));
        }
        free(b);
        if (err_max > tol * fmax(scale, 1e-6)) {
            fprintf(stderr, "fuzz_compile: output '%s' of the generated program differs "
                    "from the interpreter's: max error %g, max value %g\n", t->name,
                    err_max, scale);
            run_die("the generated program computes something else", text);
        }
    }
    st_close(f);
}

/* The program text as the file at path. */
static bool write_text(const char *path, const char *text, size_t len)
{
    FILE *fp = fopen(path, "w");
    if (!fp)
        return false;
    bool ok = fwrite(text, 1, len, fp) == len;
    return fclose(fp) == 0 && ok;
}

/* Write the program, compile it with the einc binary, build and run
 * what it wrote, and compare its outputs with the -O0 plan pl0. */
static void run_generated(const Plan *pl0, const char *text, size_t len, unsigned c)
{
    /* gen_run --write: the program only, for another harness */
    const char *wdir = getenv("EINC_FUZZ_WRITE"), *seed = getenv("EINC_FUZZ_SEED");
    if (wdir) {
        char path[4300];
        snprintf(path, sizeof path, "%s/g%s.ein", wdir, seed ? seed : "");
        if (!write_text(path, text, len))
            die("cannot write the program", text);
        return;
    }
    const char *einc = getenv("EINC");
    const char *cflags = getenv("EINC_FUZZ_RUN_CFLAGS");
    const char *tmp = getenv("TMPDIR");
    if (!einc)
        die("the run mode needs EINC, the einc binary to run", "");
    if (!cflags)
        cflags = "-g -fsanitize=address,undefined -fno-sanitize-recover=all";
    snprintf(run_dir, sizeof run_dir, "%s/einc-run.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(run_dir))
        die("cannot make a folder for the run mode", "");
    char path[4300], build[4096];
    snprintf(path, sizeof path, "%s/p.ein", run_dir);
    if (!write_text(path, text, len))
        run_die("cannot write the program", text);
    const IrProgram *p = pl0->prog;
    double **data = evaluate(pl0, text, true);
    double tol = 1e-4;
    for (int i = 0; i < p->ntensors; i++)
        if (p->tensors[i]->elem != ELEM_F32)
            tol = 2e-2;
    snprintf(path, sizeof path, "%s/inputs.safetensors", run_dir);
    bool ins = write_tensors(p, data, IT_INPUT, path, text);
    snprintf(path, sizeof path, "%s/weights.safetensors", run_dir);
    bool wts = write_tensors(p, data, IT_WEIGHT, path, text);
    /* einc's choices: -O0 to -O2, oneDNN or not, SLEEF or not */
    int level = (int)(c % 3);
    const char *dnnl = c >> 2 & 1 ? "--no-dnnl" : "", *sleef = c >> 3 & 1 ? "--no-sleef" : "";
    if (shell("cd '%s' && '%s' -O%d %s %s --main -o p.c p.ein > einc.log 2>&1", run_dir, einc,
              level, dnnl, sleef) != 0)
        run_die("the einc binary refused a program the compile accepted (einc.log)", text);
    snprintf(path, sizeof path, "%s/p.c", run_dir);
    build_line(path, build, sizeof build, text);
    if (shell("cd '%s' && %s %s > build.log 2>&1", run_dir, build, cflags) != 0)
        run_die("the generated C file did not build (build.log)", text);
    if (shell("cd '%s' && ASAN_OPTIONS=detect_leaks=1 timeout 300 ./p %s %s --outputs "
              "out.safetensors > run.log 2>&1", run_dir,
              ins ? "--inputs inputs.safetensors" : "",
              wts ? "--weights weights.safetensors" : "") != 0)
        run_die("the generated program failed (run.log)", text);
    snprintf(path, sizeof path, "%s/out.safetensors", run_dir);
    compare_outputs(pl0, data, path, tol, text);
    free_data(p, data);
    if (!getenv("EINC_FUZZ_KEEP"))
        shell("rm -rf '%s'", run_dir);
}
#endif

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    static FILE *devnull;
    if (!devnull) {
        devnull = fopen("/dev/null", "w");
        diag_set_stream(getenv("EINC_FUZZ_PRINT") ? stderr : devnull);
    }
    GenOptions go = {diff_mode || run_mode};
    size_t len;
    unsigned c;
    char *text = gen_ein(data, size, &go, &len, &c);
    if (getenv("EINC_FUZZ_PRINT"))
        fprintf(stderr, "%s---\n", text);
    Choice ch = choose(c);
    src_reset();
    diag_reset();
    Arena *arena = arena_new();
    IrCtx *cx;
    if (run_mode) {
        Choice c0 = ch;
        c0.level = 0;
        Derived *d0 = compile(arena, text, len, &c0, &cx);
#ifdef FUZZ_COMPILE_RUN
        if (d0)
            run_generated(d0->plan, text, len, c);
#else
        (void)d0;
#endif
    } else if (!diff_mode) {
        Derived *d = compile(arena, text, len, &ch, &cx);
        if (d)
            write_all(cx, d, &ch);
    } else {
        Choice c0 = ch;
        c0.level = 0;
        if (ch.level == 0)
            ch.level = 2;
        IrCtx *cx0;
        Derived *d0 = compile(arena, text, len, &c0, &cx0);
        if (d0) {
            Derived *d = compile(arena, text, len, &ch, &cx);
            if (!d)
                die("a program accepted once was refused the second time", text);
            compare(d0->plan, d->plan, text, ch.level);
        }
    }
    if (getenv("EINC_FUZZ_PRINT"))
        fprintf(stderr, "%s\n", diag_error_count() ? "(refused)" : "(compiled)");
    arena_free(arena);
    free(text);
    return 0;
}
