/* test_emit.c - unit tests of emit/: programs built by hand with the
 * ir.h constructors are written as C (with --main), built with the
 * command of their first line plus -Wall -Wextra, run on seeded inputs,
 * and their outputs compared with references computed here by plain
 * loops in double precision (the definitions, written independently of
 * the IR: e.g. the transposed convolution as a scatter).  The same
 * programs are written as CUDA and built with nvcc where $NVCC is set
 * (no GPU is needed: compile and link only, no warning allowed).  Also:
 * byte-identical output, the C API's behaviour and error codes (a driver
 * program), name sanitising, 64-bit indexing, rejected programs, f16 and
 * bf16 storage (every bit pattern read; stores of values that round, tie,
 * overflow, underflow, infinities and NaN, against an oracle in double;
 * the API's uint16_t pointers), and the Graphviz output (checked with dot
 * where $DOT is set).
 *
 * Usage: test_emit [CASE...]   (KEEP=1 keeps the work folder) */
#include "config.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lang/lang.h"
#include "derive/ir/ir.h"
#include "emit/emit.h"
#include "runtime/st.h"
#include "tests/check.h"

static char workdir[256];
static const char *nvcc;            /* $NVCC, or NULL: no CUDA builds */
static const char *dotprog;         /* $DOT, or NULL */

/* ---- building programs ----------------------------------------------------- */

#define MAXT 32

typedef struct B {
    Arena *a;
    IrCtx *cx;
    IrTensor *t[MAXT];
    int n;
    int outs[MAXT];
    int nouts;
    const char *model;
} B;

static IrTensor *tensor(B *b, const char *name, IrTensorKind kind, int rank, ...)
{
    IrTensor *t = arena_alloc(b->a, sizeof *t);
    int64_t *shape = arena_alloc(b->a, sizeof *shape * (size_t)(rank + 1));
    va_list ap;
    va_start(ap, rank);
    for (int i = 0; i < rank; i++)
        shape[i] = va_arg(ap, int64_t);
    va_end(ap);
    t->id = b->n;
    t->name = name;
    t->kind = kind;
    t->elem = ELEM_F32;
    t->rank = rank;
    t->shape = shape;
    t->loc = LOC_NONE;
    b->t[b->n++] = t;
    return t;
}

static void free_b(B *b)
{
    arena_free(b->a);
    free(b);
}

static void output(B *b, IrTensor *t)
{
    t->is_output = true;
    b->outs[b->nouts++] = t->id;
}

static IrVar var(B *b, const char *name, int64_t lo, int64_t hi)
{
    return ir_var_new(b->cx, name, lo, hi);
}

/* Index expression  c + Σ k_i * v_i  given as (k, var) pairs ending with
 * a var of id -1. */
static const Ix *V(B *b, IrVar v)
{
    return ix_var(b->cx, v.id);
}

static const Ix *lin(B *b, int64_t c, ...)
{
    const Ix *ix = ix_const(b->cx, c);
    va_list ap;
    va_start(ap, c);
    for (;;) {
        int64_t k = va_arg(ap, int64_t);
        if (k == 0)
            break;
        IrVar v = va_arg(ap, IrVar);
        ix = ix_add(b->cx, ix, ix_scale(b->cx, ix_var(b->cx, v.id), k));
    }
    va_end(ap);
    return ix;
}
#define END ((int64_t)0)

static const IExpr *X(B *b, IrTensor *t, ...)
{
    const Ix *idx[8];
    va_list ap;
    va_start(ap, t);
    for (int i = 0; i < t->rank; i++)
        idx[i] = va_arg(ap, const Ix *);
    va_end(ap);
    return ir_access_tensor(b->cx, t, idx, t->rank);
}

static const IExpr *bin(B *b, IExprKind k, const IExpr *x, const IExpr *y)
{
    return ir_binary(b->cx, k, x, y);
}

static const IExpr *call1(B *b, Func f, const IExpr *x)
{
    return ir_call(b->cx, f, &x, 1);
}

static const IExpr *call2(B *b, Func f, const IExpr *x, const IExpr *y)
{
    const IExpr *a[2] = {x, y};
    return ir_call(b->cx, f, a, 2);
}

static const IExpr *K(B *b, double v)
{
    return ir_const(b->cx, v);
}

static void stage(B *b, IrTensor *t, Reduce red, int nloops, const IrVar *loops,
                  int nsums, const IrVar *sums, int nguards, const IExpr **guards,
                  const IExpr *body)
{
    t->stage = ir_stage(b->cx, red, loops, nloops, sums, nsums, guards, nguards, body);
}

static IrProgram *program(B *b)
{
    IrProgram *p = arena_alloc(b->a, sizeof *p);
    p->cx = b->cx;
    p->model = b->model ? b->model : "net";
    p->tensors = arena_dup(b->a, b->t, sizeof *b->t * (size_t)b->n);
    p->ntensors = b->n;
    p->outputs = arena_dup(b->a, b->outs, sizeof *b->outs * (size_t)(b->nouts + 1));
    p->noutputs = b->nouts;
    return p;
}

/* ---- data --------------------------------------------------------------------- */

static int64_t count(const IrTensor *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++)
        n *= t->shape[i];
    return n;
}

/* Seeded values in [-1, 1) that are exact floats. */
static uint64_t rng = 88172645463325252ULL;
static double uniform(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(float)((double)(rng >> 11) / (double)(1ULL << 53) * 2 - 1);
}

/* Row-major element of d for a tensor of shape s; 0 outside. */
static double at(const double *d, const int64_t *s, int rank, ...)
{
    va_list ap;
    va_start(ap, rank);
    int64_t off = 0;
    bool in = true;
    for (int i = 0; i < rank; i++) {
        int64_t k = va_arg(ap, int64_t);
        in &= k >= 0 && k < s[i];
        off = off * s[i] + k;
    }
    va_end(ap);
    return in ? d[off] : 0.0;
}
#define AT(t, ...) at(D[(t)->id], (t)->shape, (t)->rank, __VA_ARGS__)

static int64_t fdiv(int64_t a, int64_t d)
{
    return (int64_t)floor((double)a / (double)d);
}

static int64_t fmodl_(int64_t a, int64_t d)
{
    return a - d * fdiv(a, d);
}

/* ---- running commands ----------------------------------------------------- */

static char *slurp(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return NULL;
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char *s = xmalloc((size_t)n + 1);
    size_t got = fread(s, 1, (size_t)n, fp);
    fclose(fp);
    s[got] = 0;
    if (len)
        *len = got;
    return s;
}

/* Run a shell command in the work folder; its output goes to LOG.
 * Returns the exit status; *out is the output (caller frees). */
static int sh(char **out, const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    char full[4600];
    snprintf(full, sizeof full, "cd '%s' && ( %s ) >cmd.log 2>&1", workdir, cmd);
    int rc = system(full);
    char log[300];
    snprintf(log, sizeof log, "%s/cmd.log", workdir);
    char *s = slurp(log, NULL);
    if (out)
        *out = s;
    else
        free(s);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
}

/* The plan of p as written for `target` (derive/search/plan.h), the
 * cost model's default device. */
static bool use_dnnl;               /* C: convolutions on oneDNN (case_api) */

static const Plan *plan_as_written(const IrProgram *p, Target target)
{
    CostModel cm = {cost_device("h200"), PREC_FP32, NULL, target, use_dnnl};
    return plan_program(p->cx, &cm, (IrProgram *)p);
}

/* What the cases emit: the plan as written, or one a case makes by hand. */
static const Plan *(*make_plan)(const IrProgram *p, Target target) = plan_as_written;

static const Plan *plan_for(const IrProgram *p, Target target)
{
    return make_plan(p, target);
}

static char *emit_plan_to_string(const Plan *pl, bool main_, const char *out_name, int *rc)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&buf, &len);
    EmitOptions o = {.main = main_, .out_name = out_name, .src_name = "case.ein"};
    *rc = emit_program(pl, &o, fp);
    fclose(fp);
    return buf;
}

static char *emit_to_string(const IrProgram *p, Target target, bool main_, const char *out_name,
                            int *rc)
{
    return emit_plan_to_string(plan_for(p, target), main_, out_name, rc);
}

static bool write_file(const char *name, const char *text)
{
    char path[400];
    snprintf(path, sizeof path, "%s/%s", workdir, name);
    FILE *fp = fopen(path, "wb");
    if (!fp)
        return false;
    fputs(text, fp);
    return fclose(fp) == 0;
}

/* The build command of line 1, or NULL. */
static char *build_line(const char *text, bool cuda)
{
    const char *pre = cuda ? "// build: " : "/* build: ";
    if (strncmp(text, pre, strlen(pre)) != 0)
        return NULL;
    const char *s = text + strlen(pre), *nl = strchr(s, '\n');
    size_t n = (size_t)(nl - s);
    if (!cuda) {
        if (n < 3 || strncmp(s + n - 3, " */", 3) != 0)
            return NULL;
        n -= 3;
    }
    char *c = xmalloc(n + 1);
    memcpy(c, s, n);
    c[n] = 0;
    return c;
}

/* nvcc takes seconds per file: the CUDA builds run at the end, two at a
 * time, in the folder cu/. */
static char *nvcc_jobs[64];
static char *nvcc_names[64];
static int nvcc_njobs;

static void nvcc_job(const char *name, const char *cmd)
{
    if (nvcc_njobs == 64)
        return;
    nvcc_names[nvcc_njobs] = xstrdup(name);
    nvcc_jobs[nvcc_njobs++] = xstrdup(cmd);
}

static void nvcc_run_jobs(void)
{
    if (nvcc_njobs == 0)
        return;
    char path[400];
    snprintf(path, sizeof path, "%s/cu/jobs.sh", workdir);
    FILE *fp = fopen(path, "w");
    if (!fp) {
        CHECK(0, "cannot write %s", path);
        return;
    }
    fprintf(fp, "PATH=\"$(dirname '%s'):$PATH\"\n", nvcc);
    /* The same as in the other tests: keep sanitizer options off nvcc. */
    fputs("unset ASAN_OPTIONS UBSAN_OPTIONS LD_PRELOAD\n", fp);
    for (int i = 0; i < nvcc_njobs; i++) {
        fprintf(fp, "(%s >%s.log 2>&1; echo $? >%s.rc) &\n", nvcc_jobs[i], nvcc_names[i],
                nvcc_names[i]);
        if (i % 2 == 1)
            fputs("wait\n", fp);
    }
    fputs("wait\n", fp);
    fclose(fp);
    int st = sh(NULL, "cd cu && sh jobs.sh");
    CHECK(st == 0, "nvcc jobs: %d", st);
    for (int i = 0; i < nvcc_njobs; i++) {
        char log[400], rcp[400];
        snprintf(log, sizeof log, "%s/cu/%s.log", workdir, nvcc_names[i]);
        snprintf(rcp, sizeof rcp, "%s/cu/%s.rc", workdir, nvcc_names[i]);
        char *l = slurp(log, NULL), *r = slurp(rcp, NULL);
        CHECK(l && r && !*l && strcmp(r, "0\n") == 0, "%s: nvcc failed or warned (%s):\n%s",
              nvcc_names[i], r ? r : "?", l ? l : "");
        printf("%s %s (nvcc)\n", l && r && !*l && strcmp(r, "0\n") == 0 ? "PASS" : "FAIL",
               nvcc_names[i]);
        free(l);
        free(r);
        free(nvcc_names[i]);
        free(nvcc_jobs[i]);
    }
    nvcc_njobs = 0;
}

/* Is `cmd` the command `expect` with vendor libraries linked: the same
 * words, plus -lcublas -lcublasLt -lcudnn -lopenblas (in that order)
 * before a final -lm or at the end? */
static bool same_build(const char *cmd, const char *expect)
{
    size_t n = strlen(expect);
    bool lm = n > 4 && strcmp(expect + n - 4, " -lm") == 0;
    size_t stem = lm ? n - 4 : n;
    if (strncmp(cmd, expect, stem) != 0)
        return false;
    const char *rest = cmd + stem;
    static const char *const libs[] = {" -lcublas", " -lcublasLt", " -lcudnn", " -lopenblas"};
    for (int i = 0; i < 4; i++)
        if (strncmp(rest, libs[i], strlen(libs[i])) == 0)
            rest += strlen(libs[i]);
    return strcmp(rest, lm ? " -lm" : "") == 0;
}

/* Emit p as C and CUDA; build both; check line 1 and determinism.
 * Returns the C text (caller frees) or NULL when something failed. */
static char *emit_and_build(const IrProgram *p, const char *name, bool main_)
{
    char cname[64], cuname[64], expect[256];
    snprintf(cname, sizeof cname, "%s.c", name);
    snprintf(cuname, sizeof cuname, "%s.cu", name);
    char path[400];
    snprintf(path, sizeof path, "sub/%s", cname);     /* -o with a folder */
    int rc, rc2;
    char *c = emit_to_string(p, TARGET_C, main_, path, &rc);
    char *c2 = emit_to_string(p, TARGET_C, main_, path, &rc2);
    CHECK(rc == 0 && rc2 == 0, "%s: emit_program (C) failed", name);
    CHECK(strcmp(c, c2) == 0, "%s: two emits differ", name);
    free(c2);
    if (rc != 0)
        return free(c), NULL;
    if (main_)
        snprintf(expect, sizeof expect, "cc -O2 -fopenmp %s -o %s -lm", cname, name);
    else
        snprintf(expect, sizeof expect, "cc -O2 -fopenmp -c %s -o %s.o", cname, name);
    char *cmd = build_line(c, false);
    CHECK(cmd && same_build(cmd, expect), "%s: line 1 is '%.*s'", name,
          (int)strcspn(c, "\n"), c);
    write_file(cname, c);
    char *log = NULL;
    int st = sh(&log, "%s -Wall -Wextra", cmd ? cmd : expect);
    CHECK(st == 0 && log && !*log, "%s: C build failed or warned (%d):\n%s", name, st,
          log ? log : "");
    free(log);
    free(cmd);
    if (st != 0)
        return free(c), NULL;

    if (nvcc) {
        char *cu = emit_to_string(p, TARGET_CUDA, main_, cuname, &rc);
        char *cu2 = emit_to_string(p, TARGET_CUDA, main_, cuname, &rc2);
        CHECK(rc == 0 && rc2 == 0 && strcmp(cu, cu2) == 0, "%s: CUDA emit", name);
        free(cu2);
        if (main_)
            snprintf(expect, sizeof expect, "nvcc -O3 -arch=sm_90 %s -o %s", cuname, name);
        else
            snprintf(expect, sizeof expect, "nvcc -O3 -arch=sm_90 -c %s -o %s.o", cuname,
                     name);
        cmd = build_line(cu, true);
        CHECK(cmd && same_build(cmd, expect), "%s: CUDA line 1 is '%.*s'", name,
              (int)strcspn(cu, "\n"), cu);
        char cupath[100];
        snprintf(cupath, sizeof cupath, "cu/%s", cuname);
        write_file(cupath, cu);
        nvcc_job(name, cmd ? cmd : expect);
        free(cmd);
        free(cu);
    }
    return c;
}

/* ---- one numerical case ------------------------------------------------------ */

typedef void RefFn(B *b, double **D);

/* Build p's C program with main(), run it on seeded inputs and weights,
 * compare its outputs with ref's (which fills D for every stage tensor
 * it computes; only outputs are compared).  Returns the program's data
 * for more checks, or NULL. */
static void run_case(B *b, const char *name, RefFn *ref)
{
    IrProgram *p = program(b);
    char *c = emit_and_build(p, name, true);
    if (!c) {
        free_b(b);
        return;
    }
    free(c);

    double **D = xcalloc((size_t)p->ntensors, sizeof *D);
    double **E = xcalloc((size_t)p->ntensors, sizeof *E);
    StOut *so = xcalloc((size_t)p->ntensors + 1, sizeof *so);
    float **fd = xcalloc((size_t)p->ntensors, sizeof *fd);
    int nso = 0;
    for (int i = 0; i < p->ntensors; i++) {
        IrTensor *t = p->tensors[i];
        D[i] = xcalloc((size_t)count(t), sizeof **D);
        E[i] = xcalloc((size_t)count(t), sizeof **E);
        if (t->kind == IT_STAGE)
            continue;
        fd[i] = xcalloc((size_t)count(t), sizeof **fd);
        for (int64_t k = 0; k < count(t); k++) {
            D[i][k] = E[i][k] = uniform();
            fd[i][k] = (float)D[i][k];
        }
        so[nso++] = (StOut){t->name, ST_F32, t->rank, t->shape, fd[i]};
    }
    char err[ST_ERRLEN], path[400];
    snprintf(path, sizeof path, "%s/%s.in.safetensors", workdir, name);
    CHECK(st_write(path, so, nso, NULL, 0, 0, err, sizeof err) == ST_OK, "%s", err);
    ref(b, D);
    ir_eval_program(p, E);

    char *log = NULL;
    int st = sh(&log, "./%s --weights %s.in.safetensors --inputs %s.in.safetensors "
                "--outputs %s.out.safetensors", name, name, name, name);
    CHECK(st == 0 && log && !*log, "%s: run failed (%d):\n%s", name, st, log ? log : "");
    free(log);
    StFile *f = NULL;
    snprintf(path, sizeof path, "%s/%s.out.safetensors", workdir, name);
    if (st == 0 && st_open(path, &f, err, sizeof err) != ST_OK) {
        CHECK(0, "%s", err);
        f = NULL;
    }
    for (int i = 0; f && i < p->noutputs; i++) {
        IrTensor *t = p->tensors[p->outputs[i]];
        const StTensor *o;
        if (st_get(f, t->name, ST_F32, t->rank, t->shape, &o, err, sizeof err) != ST_OK) {
            CHECK(0, "%s", err);
            continue;
        }
        float *got = xmalloc((size_t)count(t) * sizeof *got);
        st_copy(o, got);
        int bad = 0;
        for (int64_t k = 0; k < count(t); k++) {
            double want = D[t->id][k], interp = E[t->id][k];
            double tol = 1e-5 + 2e-5 * fabs(want);
            bool ok = fabs(got[k] - want) <= tol || (isnan(want) && isnan(got[k]));
            /* Exact zeros (padding, no term, out of bounds) stay exact. */
            ok &= want != 0 || got[k] == 0;
            if (!ok && bad++ < 5)
                CHECK(0, "%s: %s[%lld] = %.9g, reference %.9g", name, t->name,
                      (long long)k, got[k], want);
            if (!(fabs(interp - want) <= tol) && !(isnan(want) && isnan(interp)) &&
                bad++ < 5)
                CHECK(0, "%s: the IR interpreter gives %s[%lld] = %.9g, reference %.9g "
                      "(a bug in the case or in derive/ir/interp.c)", name, t->name,
                      (long long)k, interp, want);
        }
        free(got);
    }
    if (f)
        st_close(f);
    for (int i = 0; i < p->ntensors; i++) {
        free(D[i]);
        free(E[i]);
        free(fd[i]);
    }
    free(D);
    free(E);
    free(fd);
    free(so);
    free_b(b);
}

/* ---- the cases ----------------------------------------------------------------- */

static B *new_b(void)
{
    B *b = xcalloc(1, sizeof *b);
    b->a = arena_new();
    b->cx = ir_ctx_new(b->a);
    return b;
}

/* 3x3 convolution, padding 1, bias, ReLU (examples/conv_relu.ein). */
enum { CN = 2, CC = 3, CH = 5, CW = 6, CF = 4 };

static void conv_ref(B *b, double **D)
{
    IrTensor *x = b->t[0], *w = b->t[1], *bias = b->t[2], *y = b->t[3], *z = b->t[4];
    for (int64_t n = 0; n < CN; n++)
        for (int64_t f = 0; f < CF; f++)
            for (int64_t h = 0; h < CH; h++)
                for (int64_t ww = 0; ww < CW; ww++) {
                    double s = 0;
                    for (int64_t c = 0; c < CC; c++)
                        for (int64_t r = 0; r < 3; r++)
                            for (int64_t q = 0; q < 3; q++)
                                s += AT(x, n, c, h + r - 1, ww + q - 1) * AT(w, f, c, r, q);
                    int64_t o = ((n * CF + f) * CH + h) * CW + ww;
                    D[y->id][o] = s;
                    D[z->id][o] = fmax(s + AT(bias, f), 0);
                }
}

static B *conv_program(void)
{
    B *b = new_b();
    IrTensor *x = tensor(b, "x", IT_INPUT, 4, (int64_t)CN, (int64_t)CC, (int64_t)CH, (int64_t)CW);
    IrTensor *w = tensor(b, "w1", IT_WEIGHT, 4, (int64_t)CF, (int64_t)CC, (int64_t)3, (int64_t)3);
    IrTensor *bias = tensor(b, "b1", IT_WEIGHT, 1, (int64_t)CF);
    IrTensor *y = tensor(b, "z1.y", IT_STAGE, 4, (int64_t)CN, (int64_t)CF, (int64_t)CH, (int64_t)CW);
    IrTensor *z = tensor(b, "z", IT_STAGE, 4, (int64_t)CN, (int64_t)CF, (int64_t)CH, (int64_t)CW);
    IrVar n = var(b, "n", 0, CN), f = var(b, "f", 0, CF), h = var(b, "h", 0, CH),
          w_ = var(b, "w", 0, CW), c = var(b, "c", 0, CC), r = var(b, "r", 0, 3),
          s = var(b, "s", 0, 3);
    IrVar L[] = {n, f, h, w_}, S[] = {c, r, s};
    stage(b, y, RED_SUM, 4, L, 3, S, 0, NULL,
          bin(b, IE_MUL, X(b, x, V(b, n), V(b, c), lin(b, -1, 1L, h, 1L, r, END),
                           lin(b, -1, 1L, w_, 1L, s, END)),
              X(b, w, V(b, f), V(b, c), V(b, r), V(b, s))));
    IrVar n2 = var(b, "n", 0, CN), f2 = var(b, "f", 0, CF), h2 = var(b, "h", 0, CH),
          w2 = var(b, "w", 0, CW);
    IrVar L2[] = {n2, f2, h2, w2};
    stage(b, z, RED_NONE, 4, L2, 0, NULL, 0, NULL,
          call1(b, FN_RELU, bin(b, IE_ADD, X(b, y, V(b, n2), V(b, f2), V(b, h2), V(b, w2)),
                                X(b, bias, V(b, f2)))));
    output(b, z);
    output(b, y);
    return b;
}

static void case_conv(void)
{
    B *b = conv_program();
    run_case(b, "conv", conv_ref);
}

/* Transposed convolution, kernel 4, stride 2, padding 1: the reference
 * is the scatter definition (PyTorch's ConvTranspose2d). */
enum { TN = 2, TC = 3, TH = 2, TW = 3, TF = 4 };

static void tconv_ref(B *b, double **D)
{
    IrTensor *x = b->t[0], *wt = b->t[1], *y = b->t[2];
    int64_t OH = 2 * TH, OW = 2 * TW;
    for (int64_t n = 0; n < TN; n++)
        for (int64_t c = 0; c < TC; c++)
            for (int64_t i = 0; i < TH; i++)
                for (int64_t j = 0; j < TW; j++)
                    for (int64_t f = 0; f < TF; f++)
                        for (int64_t r = 0; r < 4; r++)
                            for (int64_t s = 0; s < 4; s++) {
                                int64_t h = 2 * i - 1 + r, w = 2 * j - 1 + s;
                                if (h < 0 || h >= OH || w < 0 || w >= OW)
                                    continue;
                                D[y->id][((n * TF + f) * OH + h) * OW + w] +=
                                    AT(x, n, c, i, j) * AT(wt, c, f, r, s);
                            }
}

static void case_tconv(void)
{
    B *b = new_b();
    IrTensor *x = tensor(b, "x", IT_INPUT, 4, (int64_t)TN, (int64_t)TC, (int64_t)TH, (int64_t)TW);
    IrTensor *wt = tensor(b, "wt", IT_WEIGHT, 4, (int64_t)TC, (int64_t)TF, (int64_t)4, (int64_t)4);
    IrTensor *y = tensor(b, "y", IT_STAGE, 4, (int64_t)TN, (int64_t)TF, (int64_t)(2 * TH),
                         (int64_t)(2 * TW));
    IrVar n = var(b, "n", 0, TN), f = var(b, "f", 0, TF), h = var(b, "h", 0, 2 * TH),
          w = var(b, "w", 0, 2 * TW), c = var(b, "c", 0, TC), r = var(b, "r", 0, 4),
          s = var(b, "s", 0, 4);
    const Ix *hh = lin(b, 1, 1L, h, -1L, r, END), *ww = lin(b, 1, 1L, w, -1L, s, END);
    const IExpr *g[] = {
        ir_icmp(b->cx, OP_EQ, ix_mod(b->cx, hh, 2), ix_const(b->cx, 0)),
        ir_icmp(b->cx, OP_EQ, ix_mod(b->cx, ww, 2), ix_const(b->cx, 0)),
    };
    IrVar L[] = {n, f, h, w}, S[] = {c, r, s};
    stage(b, y, RED_SUM, 4, L, 3, S, 2, g,
          bin(b, IE_MUL, X(b, x, V(b, n), V(b, c), ix_div(b->cx, hh, 2), ix_div(b->cx, ww, 2)),
              X(b, wt, V(b, c), V(b, f), V(b, r), V(b, s))));
    output(b, y);
    run_case(b, "tconv", tconv_ref);
}

/* Pooling: max= over a padded window (zeros are terms), max= after a
 * ReLU, min= without padding. */
enum { PC = 3, PH = 6, PW = 5 };

static void pool_ref(B *b, double **D)
{
    IrTensor *x = b->t[0], *a = b->t[1], *q = b->t[2], *pq = b->t[3], *mn = b->t[4];
    for (int64_t i = 0; i < count(a); i++)
        D[a->id][i] = fmax(D[x->id][i], 0);
    for (int64_t c = 0; c < PC; c++)
        for (int64_t h = 0; h < PH / 2; h++)
            for (int64_t w = 0; w < (PW + 1) / 2; w++) {
                double m = -INFINITY, ma = -INFINITY, mi = INFINITY;
                for (int64_t i = 0; i < 3; i++)
                    for (int64_t j = 0; j < 3; j++) {
                        m = fmax(m, AT(x, c, 2 * h + i - 1, 2 * w + j - 1));
                        ma = fmax(ma, AT(a, c, 2 * h + i - 1, 2 * w + j - 1));
                    }
                for (int64_t i = 0; i < 2; i++)
                    for (int64_t j = 0; j < 2; j++)
                        mi = fmin(mi, AT(x, c, 2 * h + i, 2 * w + j));
                int64_t o = (c * (PH / 2) + h) * ((PW + 1) / 2) + w;
                D[q->id][o] = m;
                D[pq->id][o] = ma;
                D[mn->id][o] = mi;
            }
}

static void case_pool(void)
{
    B *b = new_b();
    int64_t OH = PH / 2, OW = (PW + 1) / 2;
    IrTensor *x = tensor(b, "x", IT_INPUT, 3, (int64_t)PC, (int64_t)PH, (int64_t)PW);
    IrTensor *q = tensor(b, "q", IT_STAGE, 3, (int64_t)PC, OH, OW);
    IrTensor *a = tensor(b, "a", IT_STAGE, 3, (int64_t)PC, (int64_t)PH, (int64_t)PW);
    IrTensor *pq = tensor(b, "pq", IT_STAGE, 3, (int64_t)PC, OH, OW);
    IrTensor *mn = tensor(b, "mn", IT_STAGE, 3, (int64_t)PC, OH, OW);
    for (int k = 0; k < 3; k++) {
        IrVar c = var(b, "c", 0, PC), h = var(b, "h", 0, OH), w = var(b, "w", 0, OW);
        IrVar i = var(b, "i", 0, k < 2 ? 3 : 2), j = var(b, "j", 0, k < 2 ? 3 : 2);
        IrVar L[] = {c, h, w}, S[] = {i, j};
        int64_t off = k < 2 ? -1 : 0;
        stage(b, k == 0 ? q : k == 1 ? pq : mn, k < 2 ? RED_MAX : RED_MIN, 3, L, 2, S, 0, NULL,
              X(b, k == 1 ? a : x, V(b, c), lin(b, off, 2L, h, 1L, i, END),
                lin(b, off, 2L, w, 1L, j, END)));
    }
    IrVar c = var(b, "c", 0, PC), h = var(b, "h", 0, PH), w = var(b, "w", 0, PW);
    IrVar L[] = {c, h, w};
    stage(b, a, RED_NONE, 3, L, 0, NULL, 0, NULL,
          call1(b, FN_RELU, X(b, x, V(b, c), V(b, h), V(b, w))));
    /* a is defined after its first reader in tensor order: reorder. */
    b->t[1] = a, b->t[2] = q;
    a->id = 1, q->id = 2;
    output(b, q);
    output(b, pq);
    output(b, mn);
    run_case(b, "pool", pool_ref);
}

/* Softmax over rows, in four stages (examples/softmax.ein). */
enum { SR = 3, SN = 7 };

static void softmax_ref(B *b, double **D)
{
    IrTensor *x = b->t[0], *y = b->t[4];
    for (int64_t i = 0; i < SR; i++) {
        double m = -INFINITY, z = 0;
        for (int64_t j = 0; j < SN; j++)
            m = fmax(m, AT(x, i, j));
        for (int64_t j = 0; j < SN; j++)
            z += exp(AT(x, i, j) - m);
        for (int64_t j = 0; j < SN; j++)
            D[y->id][i * SN + j] = exp(AT(x, i, j) - m) / z;
    }
}

static void case_softmax(void)
{
    B *b = new_b();
    IrTensor *x = tensor(b, "x", IT_INPUT, 2, (int64_t)SR, (int64_t)SN);
    IrTensor *m = tensor(b, "m", IT_STAGE, 1, (int64_t)SR);
    IrTensor *e = tensor(b, "e", IT_STAGE, 2, (int64_t)SR, (int64_t)SN);
    IrTensor *z = tensor(b, "z", IT_STAGE, 1, (int64_t)SR);
    IrTensor *y = tensor(b, "y", IT_STAGE, 2, (int64_t)SR, (int64_t)SN);
    IrVar i = var(b, "i", 0, SR), j = var(b, "j", 0, SN);
    IrVar L1[] = {i}, S1[] = {j}, L2[] = {i, j};
    stage(b, m, RED_MAX, 1, L1, 1, S1, 0, NULL, X(b, x, V(b, i), V(b, j)));
    stage(b, e, RED_NONE, 2, L2, 0, NULL, 0, NULL,
          call1(b, FN_EXP, bin(b, IE_SUB, X(b, x, V(b, i), V(b, j)), X(b, m, V(b, i)))));
    stage(b, z, RED_SUM, 1, L1, 1, S1, 0, NULL, X(b, e, V(b, i), V(b, j)));
    stage(b, y, RED_NONE, 2, L2, 0, NULL, 0, NULL,
          bin(b, IE_DIV, X(b, e, V(b, i), V(b, j)), X(b, z, V(b, i))));
    output(b, y);
    run_case(b, "softmax", softmax_ref);
}

/* Rank-0 tensors: a total, a constant, a scale by the total. */
static void rank0_ref(B *b, double **D)
{
    IrTensor *x = b->t[0], *s = b->t[1], *y = b->t[2], *k = b->t[3], *t = b->t[4];
    double sum = 0, mx = -INFINITY;
    for (int64_t i = 0; i < count(x); i++) {
        sum += D[x->id][i];
        mx = fmax(mx, D[x->id][i]);
    }
    D[s->id][0] = sum;
    for (int64_t i = 0; i < count(x); i++)
        D[y->id][i] = D[x->id][i] / sum;
    D[k->id][0] = 2.5;
    D[t->id][0] = mx;
}

static void case_rank0(void)
{
    B *b = new_b();
    IrTensor *x = tensor(b, "x", IT_INPUT, 2, (int64_t)4, (int64_t)5);
    IrTensor *s = tensor(b, "s", IT_STAGE, 0);
    IrTensor *y = tensor(b, "y", IT_STAGE, 2, (int64_t)4, (int64_t)5);
    IrTensor *k = tensor(b, "k", IT_STAGE, 0);
    IrTensor *t = tensor(b, "t", IT_STAGE, 0);
    IrVar i = var(b, "i", 0, 4), j = var(b, "j", 0, 5);
    IrVar S[] = {i, j};
    stage(b, s, RED_SUM, 0, NULL, 2, S, 0, NULL, X(b, x, V(b, i), V(b, j)));
    stage(b, t, RED_MAX, 0, NULL, 2, S, 0, NULL, X(b, x, V(b, i), V(b, j)));
    stage(b, y, RED_NONE, 2, S, 0, NULL, 0, NULL,
          bin(b, IE_DIV, X(b, x, V(b, i), V(b, j)), ir_access_tensor(b->cx, s, NULL, 0)));
    stage(b, k, RED_NONE, 0, NULL, 0, NULL, 0, NULL, K(b, 2.5));
    output(b, s);
    output(b, y);
    output(b, k);
    output(b, t);
    run_case(b, "rank0", rank0_ref);
}

/* Output padding, guards at the loop and the sum level, a reduction with
 * no term, an empty sum range. */
static void guards_ref(B *b, double **D)
{
    IrTensor *x = b->t[0], *x2 = b->t[1], *y = b->t[2], *g = b->t[3], *h = b->t[4],
             *k = b->t[5], *e = b->t[6], *m = b->t[7];
    for (int64_t i = 1; i < 5; i++)
        D[y->id][i] = AT(x, i) + 1;
    for (int64_t i = 0; i < 4; i++) {
        for (int64_t j = 0; j < 5; j++) {
            D[g->id][i * 5 + j] = i >= j ? AT(x2, i, j) : 0;
            if (j <= i)
                D[h->id][i] += AT(x2, i, j);
        }
        D[k->id][i] = 0;
        D[e->id][i] = 0;
        double mx = -INFINITY;
        for (int64_t j = 0; j < 5; j++)
            if ((i + j) % 2 == 1)
                mx = fmax(mx, AT(x2, i, j));
        D[m->id][i] = i >= 1 && i < 3 ? mx : 0;
    }
}

static void case_guards(void)
{
    B *b = new_b();
    IrTensor *x = tensor(b, "x", IT_INPUT, 1, (int64_t)6);
    IrTensor *x2 = tensor(b, "x2", IT_INPUT, 2, (int64_t)4, (int64_t)5);
    IrTensor *y = tensor(b, "y", IT_STAGE, 1, (int64_t)6);
    IrTensor *g = tensor(b, "g", IT_STAGE, 2, (int64_t)4, (int64_t)5);
    IrTensor *h = tensor(b, "h", IT_STAGE, 1, (int64_t)4);
    IrTensor *k = tensor(b, "k", IT_STAGE, 1, (int64_t)4);
    IrTensor *e = tensor(b, "e", IT_STAGE, 1, (int64_t)4);
    IrTensor *m = tensor(b, "m", IT_STAGE, 1, (int64_t)4);
    IrVar i = var(b, "i", 1, 5);
    IrVar L[] = {i};
    stage(b, y, RED_NONE, 1, L, 0, NULL, 0, NULL, bin(b, IE_ADD, X(b, x, V(b, i)), K(b, 1)));
    IrVar i2 = var(b, "i", 0, 4), j2 = var(b, "j", 0, 5);
    IrVar L2[] = {i2, j2}, L1[] = {i2}, S1[] = {j2};
    const IExpr *ge = ir_icmp(b->cx, OP_GE, V(b, i2), V(b, j2));
    stage(b, g, RED_NONE, 2, L2, 0, NULL, 1, &ge, X(b, x2, V(b, i2), V(b, j2)));
    const IExpr *le = ir_icmp(b->cx, OP_LE, V(b, j2), V(b, i2));
    stage(b, h, RED_SUM, 1, L1, 1, S1, 1, &le, X(b, x2, V(b, i2), V(b, j2)));
    const IExpr *never = ir_icmp(b->cx, OP_GT, V(b, j2), ix_const(b->cx, 10));
    stage(b, k, RED_MAX, 1, L1, 1, S1, 1, &never, X(b, x2, V(b, i2), V(b, j2)));
    IrVar j3 = var(b, "j", 3, 3);
    IrVar S3[] = {j3};
    stage(b, e, RED_SUM, 1, L1, 1, S3, 0, NULL, X(b, x2, V(b, i2), V(b, j3)));
    /* max= with a sum-level guard on both variables and output padding. */
    IrVar i4 = var(b, "i", 1, 3), j4 = var(b, "j", 0, 5);
    IrVar L4[] = {i4}, S4[] = {j4};
    const IExpr *odd = ir_icmp(b->cx, OP_EQ, ix_mod(b->cx, lin(b, 0, 1L, i4, 1L, j4, END), 2),
                               ix_const(b->cx, 1));
    stage(b, m, RED_MAX, 1, L4, 1, S4, 1, &odd, X(b, x2, V(b, i4), V(b, j4)));
    output(b, y);
    output(b, g);
    output(b, h);
    output(b, k);
    output(b, e);
    output(b, m);
    run_case(b, "guards", guards_ref);
}

/* Every scalar function and operator, index values, conditions. */
enum { FN_COUNT = 26 };

static double ref_erf(double v)
{
    return erf(v);
}

static void funcs_ref(B *b, double **D)
{
    IrTensor *x = b->t[0], *y = b->t[1], *o = b->t[2];
    for (int64_t i = 0; i < 8; i++) {
        double a = AT(x, i), c = AT(y, i);
        double v[FN_COUNT] = {
            fmax(a, 0), 1 / (1 + exp(-a)), tanh(a), exp(a), log(fabs(a) + 0.5),
            sqrt(fabs(a)), 1 / sqrt(fabs(a) + 0.1), fabs(a), ref_erf(a), fmax(a, c),
            fmin(a, c), pow(fabs(a) + 0.1, c), a > c ? a : c * 2,
            ((i < 2 && i != 3) || i >= 5) ? -a : (double)i * a - 0.5,
            (a < c) * 3.0 - a / (c + 2), -(a - c),
            sin(a), cos(a), floor(a * 3), ceil(a * 3), nearbyint(a * 3),
            (double)((a > 0) - (a < 0)), expm1(a), log1p(fabs(a)),
            fmax(a * 4, 0) + log1p(exp(-fabs(a * 4))), 0.5 * a * (1 + ref_erf(a / sqrt(2))),
        };
        for (int k = 0; k < FN_COUNT; k++)
            D[o->id][k * 8 + i] = v[k];
    }
}

static void case_funcs(void)
{
    B *b = new_b();
    IrTensor *x = tensor(b, "x", IT_INPUT, 1, (int64_t)8);
    IrTensor *y = tensor(b, "y", IT_INPUT, 1, (int64_t)8);
    IrTensor *o = tensor(b, "o", IT_STAGE, 2, (int64_t)FN_COUNT, (int64_t)8);
    IrVar k = var(b, "k", 0, FN_COUNT), i = var(b, "i", 0, 8);
    const IExpr *a = X(b, x, V(b, i)), *c = X(b, y, V(b, i));
    const IExpr *absa = call1(b, FN_ABS, a);
    const IExpr *sel[3] = {ir_cmp(b->cx, OP_GT, a, c), a, bin(b, IE_MUL, c, K(b, 2))};
    const IExpr *cond =
        ir_binary(b->cx, IE_OR,
                  ir_binary(b->cx, IE_AND, ir_icmp(b->cx, OP_LT, V(b, i), ix_const(b->cx, 2)),
                            ir_unary(b->cx, IE_NOT, ir_icmp(b->cx, OP_EQ, V(b, i),
                                                            ix_const(b->cx, 3)))),
                  ir_icmp(b->cx, OP_GE, V(b, i), ix_const(b->cx, 5)));
    const IExpr *sel2[3] = {cond, ir_unary(b->cx, IE_NEG, a),
                            bin(b, IE_SUB, bin(b, IE_MUL, ir_index(b->cx, V(b, i)), a),
                                K(b, 0.5))};
    const IExpr *v[FN_COUNT] = {
        call1(b, FN_RELU, a), call1(b, FN_SIGMOID, a), call1(b, FN_TANH, a),
        call1(b, FN_EXP, a), call1(b, FN_LOG, bin(b, IE_ADD, absa, K(b, 0.5))),
        call1(b, FN_SQRT, absa), call1(b, FN_RSQRT, bin(b, IE_ADD, absa, K(b, 0.1))), absa,
        call1(b, FN_ERF, a), call2(b, FN_MAX, a, c), call2(b, FN_MIN, a, c),
        call2(b, FN_POW, bin(b, IE_ADD, absa, K(b, 0.1)), c), ir_call(b->cx, FN_SELECT, sel, 3),
        ir_call(b->cx, FN_SELECT, sel2, 3),
        bin(b, IE_SUB, bin(b, IE_MUL, ir_cmp(b->cx, OP_LT, a, c), K(b, 3)),
            bin(b, IE_DIV, a, bin(b, IE_ADD, c, K(b, 2)))),
        ir_unary(b->cx, IE_NEG, bin(b, IE_SUB, a, c)),
        call1(b, FN_SIN, a), call1(b, FN_COS, a), call1(b, FN_FLOOR, bin(b, IE_MUL, a, K(b, 3))),
        call1(b, FN_CEIL, bin(b, IE_MUL, a, K(b, 3))), call1(b, FN_ROUND, bin(b, IE_MUL, a, K(b, 3))),
        call1(b, FN_SIGN, a), call1(b, FN_EXPM1, a), call1(b, FN_LOG1P, absa),
        call1(b, FN_SOFTPLUS, bin(b, IE_MUL, a, K(b, 4))), call1(b, FN_GELU, a),
    };
    /* One stage: o[k, i] = select(k == 0, v0, select(k == 1, v1, ...)). */
    const IExpr *body = v[FN_COUNT - 1];
    for (int n = FN_COUNT - 2; n >= 0; n--) {
        const IExpr *s[3] = {ir_icmp(b->cx, OP_EQ, V(b, k), ix_const(b->cx, n)), v[n], body};
        body = ir_call(b->cx, FN_SELECT, s, 3);
    }
    IrVar L[] = {k, i};
    stage(b, o, RED_NONE, 2, L, 0, NULL, 0, NULL, body);
    output(b, o);
    run_case(b, "funcs", funcs_ref);
}

/* Floor division and modulo of negative values; reshapes. */
static void divmod_ref(B *b, double **D)
{
    IrTensor *m = b->t[0], *x = b->t[1], *v = b->t[2], *w = b->t[3], *u = b->t[4];
    for (int64_t i = 0; i < 12; i++)
        D[v->id][i] = AT(m, i / 4, i % 4);
    for (int64_t i = 0; i < 10; i++)
        D[w->id][i] = AT(x, fmodl_(i - 3, 4)) + 10 * AT(x, fdiv(i - 5, 3) + 1) -
                      AT(x, fdiv(-i, 4) + 2);
    for (int64_t i = 0; i < 9; i++)
        for (int64_t j = 0; j < 4; j++)
            if (fmodl_(i - j - 4, 3) == 0)
                D[u->id][i] += AT(x, j) * (double)fdiv(i - 7, 2);
}

static void case_divmod(void)
{
    B *b = new_b();
    IrTensor *m = tensor(b, "m", IT_INPUT, 2, (int64_t)3, (int64_t)4);
    IrTensor *x = tensor(b, "x", IT_INPUT, 1, (int64_t)4);
    IrTensor *v = tensor(b, "v", IT_STAGE, 1, (int64_t)12);
    IrTensor *w = tensor(b, "w", IT_STAGE, 1, (int64_t)10);
    IrTensor *u = tensor(b, "u", IT_STAGE, 1, (int64_t)9);
    IrCtx *cx = b->cx;
    IrVar i = var(b, "i", 0, 12);
    IrVar L[] = {i};
    stage(b, v, RED_NONE, 1, L, 0, NULL, 0, NULL,
          X(b, m, ix_div(cx, V(b, i), 4), ix_mod(cx, V(b, i), 4)));
    IrVar i2 = var(b, "i", 0, 10);
    IrVar L2[] = {i2};
    stage(b, w, RED_NONE, 1, L2, 0, NULL, 0, NULL,
          bin(b, IE_SUB,
              bin(b, IE_ADD, X(b, x, ix_mod(cx, lin(b, -3, 1L, i2, END), 4)),
                  bin(b, IE_MUL, K(b, 10),
                      X(b, x, ix_add(cx, ix_div(cx, lin(b, -5, 1L, i2, END), 3),
                                     ix_const(cx, 1))))),
              X(b, x, ix_add(cx, ix_div(cx, lin(b, 0, -1L, i2, END), 4), ix_const(cx, 2)))));
    IrVar i3 = var(b, "i", 0, 9), j3 = var(b, "j", 0, 4);
    IrVar L3[] = {i3}, S3[] = {j3};
    const IExpr *g = ir_icmp(cx, OP_EQ, ix_mod(cx, lin(b, -4, 1L, i3, -1L, j3, END), 3),
                             ix_const(cx, 0));
    stage(b, u, RED_SUM, 1, L3, 1, S3, 1, &g,
          bin(b, IE_MUL, X(b, x, V(b, j3)),
              ir_index(cx, ix_div(cx, lin(b, -7, 1L, i3, END), 2))));
    output(b, v);
    output(b, w);
    output(b, u);
    run_case(b, "divmod", divmod_ref);
}

/* A weight-only stage, and outputs that are an input, a weight and a
 * load-time stage (copied by M_run). */
static void wonly_ref(B *b, double **D)
{
    IrTensor *x = b->t[0], *w = b->t[1], *w2 = b->t[2], *y = b->t[3];
    for (int64_t i = 0; i < 5; i++) {
        D[w2->id][i] = AT(w, i) * 2;
        D[y->id][i] = AT(x, i) + D[w2->id][i];
    }
}

static B *wonly_program(void)
{
    B *b = new_b();
    b->model = "wonly";
    IrTensor *x = tensor(b, "x", IT_INPUT, 1, (int64_t)5);
    IrTensor *w = tensor(b, "w", IT_WEIGHT, 1, (int64_t)5);
    IrTensor *w2 = tensor(b, "w2", IT_STAGE, 1, (int64_t)5);
    IrTensor *y = tensor(b, "y", IT_STAGE, 1, (int64_t)5);
    IrVar i = var(b, "i", 0, 5);
    IrVar L[] = {i};
    stage(b, w2, RED_NONE, 1, L, 0, NULL, 0, NULL, bin(b, IE_MUL, X(b, w, V(b, i)), K(b, 2)));
    w2->weight_only = true;
    stage(b, y, RED_NONE, 1, L, 0, NULL, 0, NULL,
          bin(b, IE_ADD, X(b, x, V(b, i)), X(b, w2, V(b, i))));
    output(b, y);
    output(b, w2);
    output(b, x);
    output(b, w);
    return b;
}

static void case_wonly(void)
{
    run_case(wonly_program(), "wonly", wonly_ref);
}

/* Names that are no C identifiers or clash with C, C++ or the API. */
static void names_ref(B *b, double **D)
{
    for (int64_t i = 0; i < 3; i++) {
        D[2][i] = D[0][i] + D[1][i];
        D[3][i] = D[2][i] * 2;
        D[4][i] = D[3][i] - D[0][i];
        D[5][i] = D[4][i] + 1;
        D[6][i] = D[5][i] * 3;
        D[7][i] = D[6][i] + D[0][i];
        D[8][i] = D[7][i] + 1;
        D[9][i] = D[8][i] * 0.5;
    }
}

static void case_names(void)
{
    B *b = new_b();
    b->model = "my-net";
    IrTensor *t0 = tensor(b, "int", IT_INPUT, 1, (int64_t)3);
    IrTensor *t1 = tensor(b, "ctx", IT_WEIGHT, 1, (int64_t)3);
    IrTensor *t2 = tensor(b, "z1.a", IT_STAGE, 1, (int64_t)3);
    IrTensor *t3 = tensor(b, "z1_a", IT_STAGE, 1, (int64_t)3);
    IrTensor *t4 = tensor(b, "stream", IT_STAGE, 1, (int64_t)3);
    IrTensor *t5 = tensor(b, "main", IT_STAGE, 1, (int64_t)3);
    IrTensor *t6 = tensor(b, "rc", IT_STAGE, 1, (int64_t)3);
    IrTensor *t7 = tensor(b, "p", IT_STAGE, 1, (int64_t)3);
    IrTensor *t8 = tensor(b, "errno", IT_STAGE, 1, (int64_t)3);
    IrTensor *t9 = tensor(b, "ein_p", IT_STAGE, 1, (int64_t)3);
    IrVar i = var(b, "int", 0, 3);
    IrVar L[] = {i};
    stage(b, t2, RED_NONE, 1, L, 0, NULL, 0, NULL,
          bin(b, IE_ADD, X(b, t0, V(b, i)), X(b, t1, V(b, i))));
    stage(b, t3, RED_NONE, 1, L, 0, NULL, 0, NULL, bin(b, IE_MUL, X(b, t2, V(b, i)), K(b, 2)));
    stage(b, t4, RED_NONE, 1, L, 0, NULL, 0, NULL,
          bin(b, IE_SUB, X(b, t3, V(b, i)), X(b, t0, V(b, i))));
    stage(b, t5, RED_NONE, 1, L, 0, NULL, 0, NULL, bin(b, IE_ADD, X(b, t4, V(b, i)), K(b, 1)));
    stage(b, t6, RED_NONE, 1, L, 0, NULL, 0, NULL, bin(b, IE_MUL, X(b, t5, V(b, i)), K(b, 3)));
    stage(b, t7, RED_NONE, 1, L, 0, NULL, 0, NULL,
          bin(b, IE_ADD, X(b, t6, V(b, i)), X(b, t0, V(b, i))));
    stage(b, t8, RED_NONE, 1, L, 0, NULL, 0, NULL, bin(b, IE_ADD, X(b, t7, V(b, i)), K(b, 1)));
    stage(b, t9, RED_NONE, 1, L, 0, NULL, 0, NULL, bin(b, IE_MUL, X(b, t8, V(b, i)), K(b, 0.5)));
    output(b, t9);
    output(b, t8);
    output(b, t7);
    output(b, t6);
    output(b, t5);
    output(b, t4);
    output(b, t3);
    output(b, t2);
    run_case(b, "names", names_ref);

    /* Models named like the runtime's prefixes get "_model". */
    B *s = new_b();
    s->model = "st";
    IrTensor *x = tensor(s, "x", IT_INPUT, 1, (int64_t)3);
    IrTensor *y = tensor(s, "y", IT_STAGE, 1, (int64_t)3);
    IrVar j = var(s, "j", 0, 3);
    IrVar Lj[] = {j};
    stage(s, y, RED_NONE, 1, Lj, 0, NULL, 0, NULL, X(s, x, V(s, j)));
    output(s, y);
    char *c = emit_and_build(program(s), "stmodel", false);
    CHECK(c && strstr(c, "int st_model_run(st_model_ctx *ctx"), "model st: no st_model_run");
    free(c);
    free_b(s);
}

/* More elements than an int can index: the kernels use int64_t.  Built,
 * not run (it would need 16 GiB). */
static void case_wide(void)
{
    B *b = new_b();
    IrTensor *x = tensor(b, "x", IT_INPUT, 2, (int64_t)65536, (int64_t)65536);
    IrTensor *y = tensor(b, "y", IT_STAGE, 1, (int64_t)65536);
    IrVar i = var(b, "i", 0, 65536), j = var(b, "j", 0, 65536);
    IrVar L[] = {i}, S[] = {j};
    stage(b, y, RED_SUM, 1, L, 1, S, 0, NULL,
          X(b, x, V(b, i), ix_mod(b->cx, lin(b, -3, 1L, j, END), 65536)));
    output(b, y);
    char *c = emit_and_build(program(b), "wide", false);
    CHECK(c && strstr(c, "for (int64_t v_j = 0;") && strstr(c, "for (int64_t v_i = 0;"),
          "wide: no 64-bit indices");
    free(c);
    free_b(b);
}

/* The C API: a driver program linked with the generated conv.c. */
static const char api_driver[] =
    "#include <math.h>\n"
    "#include <stdio.h>\n"
    "#include <stdlib.h>\n"
    "#include <string.h>\n"
    "#ifdef _OPENMP\n"
    "#include <omp.h>\n"
    "#endif\n"
    "#define CONV_API_ONLY\n"
    "#include \"apiconv.c\"\n"
    "#define OK(call) do { int rc_ = (call); if (rc_) { printf(\"line %d: %s -> %d: %s\\n\", __LINE__, #call, rc_, conv_last_error(ctx)); return 1; } } while (0)\n"
    "#define FAILS(call, code, text) do { int rc_ = (call); if (rc_ != (code) || !strstr(conv_last_error(ctx), (text))) { printf(\"line %d: %s -> %d: %s\\n\", __LINE__, #call, rc_, conv_last_error(ctx)); return 1; } } while (0)\n"
    "int main(void)\n"
    "{\n"
    "    conv_ctx *ctx = NULL;\n"
    "    static float x[2*3*5*6], w1[4*3*3*3], b1[4], z[2*4*5*6], y[2*4*5*6], z2[2*4*5*6], y2[2*4*5*6], yy[2*4*5*6];\n"
    "    for (size_t i = 0; i < sizeof x / 4; i++) x[i] = (float)((i * 7) % 11) / 5 - 1;\n"
    "    for (size_t i = 0; i < sizeof w1 / 4; i++) w1[i] = (float)((i * 5) % 13) / 6 - 1;\n"
    "    b1[0] = 0.5f, b1[1] = -0.25f, b1[2] = 0, b1[3] = 1;    /* as in b1.safetensors */\n"
    "    if (conv_tensor_count() != 5 || strcmp(conv_tensor_at(3)->name, \"z1.y\") || conv_tensor_at(5)\n"
    "        || conv_tensor_at(0)->kind != CONV_INPUT || conv_tensor_at(3)->shape[3] != 6 || conv_tensor_at(4)->count != 240) { puts(\"tensor table\"); return 1; }\n"
    "    OK(conv_create(&ctx));\n"
    "    FAILS(conv_run(ctx, x, z, y), CONV_EMISSING, \"weight 'w1' was never loaded or set\");\n"
    "    FAILS(conv_run_named(ctx), CONV_EMISSING, \"input 'x' was never set\");\n"
    "    FAILS(conv_set_tensor(ctx, \"nope\", x, sizeof x), CONV_EINVAL, \"no tensor named 'nope'\");\n"
    "    FAILS(conv_set_tensor(ctx, \"w1\", w1, 4), CONV_EINVAL, \"takes 432 bytes, not 4\");\n"
    "    FAILS(conv_set_tensor(ctx, \"z\", z, sizeof z), CONV_EINVAL, \"computed by the model\");\n"
    "    FAILS(conv_load_weights(ctx, \"no-such-file.safetensors\"), CONV_EIO, \"no-such-file.safetensors\");\n"
    "    FAILS(conv_load_weights(ctx, \"bad.safetensors\"), CONV_EFORMAT, \"w1\");\n"
    "    FAILS(conv_get_tensor(ctx, \"z\", z, sizeof z), CONV_EMISSING, \"holds no value\");\n"
    "    OK(conv_set_tensor(ctx, \"w1\", w1, sizeof w1));\n"
    "    OK(conv_load_weights(ctx, \"b1.safetensors\"));\n"
    "    FAILS(conv_run(ctx, NULL, z, y), CONV_EINVAL, \"input 'x' is a null pointer\");\n"
    "    OK(conv_run(ctx, x, z, y));\n"
    "    FAILS(conv_get_tensor(ctx, \"z\", z2, sizeof z2), CONV_EMISSING, \"holds no value\");\n"
    "    OK(conv_set_tensor(ctx, \"x\", x, sizeof x));\n"
    "    OK(conv_run_named(ctx));\n"
    "    OK(conv_get_tensor(ctx, \"z\", z2, sizeof z2));\n"
    "    OK(conv_get_tensor(ctx, \"z1.y\", y2, sizeof y2));\n"
    "    if (memcmp(z, z2, sizeof z) || memcmp(y, y2, sizeof y)) { puts(\"run and run_named differ\"); return 1; }\n"
    "    for (int i = 0; i < 240; i++) if (z[i] != (y[i] + b1[(i / 30) % 4] > 0 ? y[i] + b1[(i / 30) % 4] : 0)) { puts(\"z != relu(y + b)\"); return 1; }\n"
    "    b1[1] = 7;\n"
    "    OK(conv_set_tensor(ctx, \"b1\", b1, sizeof b1));\n"
    "    OK(conv_run(ctx, x, z2, yy));\n"
    "    if (z2[30] != (y[30] + 7 > 0 ? y[30] + 7 : 0) || memcmp(y, yy, sizeof y)) { puts(\"changed weight not used\"); return 1; }\n"
    "    for (size_t i = 0; i < sizeof w1 / 4; i++) w1[i] *= 2;   /* doubles y exactly */\n"
    "    OK(conv_set_tensor(ctx, \"w1\", w1, sizeof w1));\n"
    "    OK(conv_run(ctx, x, z2, yy));\n"
    "    for (int i = 0; i < 240; i++) if (yy[i] != 2 * y[i]) { puts(\"changed filter not used\"); return 1; }\n"
    "    FAILS(conv_set_threads(ctx, -1), CONV_EINVAL, \"a thread count of -1\");\n"
    "    OK(conv_set_threads(ctx, 3));\n"
    "#ifdef _OPENMP\n"
    "    omp_set_num_threads(5);\n"
    "#endif\n"
    "    OK(conv_run(ctx, x, z2, yy));\n"
    "#ifdef _OPENMP\n"
    "    if (omp_get_max_threads() != 5) { puts(\"the caller's OpenMP count not put back\"); return 1; }\n"
    "#endif\n"
    "    for (int i = 0; i < 240; i++) if (yy[i] != 2 * y[i]) { puts(\"3 threads differ\"); return 1; }\n"
    "    OK(conv_set_threads(ctx, 0));\n"
    "    if (conv_destroy(ctx)) return 1;\n"
    "    ctx = NULL;\n"
    "    if (strcmp(conv_last_error(NULL), \"\")) return 1;\n"
    "    /* a null context: EINVAL, and last_error(NULL) says why */\n"
    "    if (conv_set_tensor(NULL, \"x\", x, sizeof x) != CONV_EINVAL ||\n"
    "        !strstr(conv_last_error(NULL), \"null pointer\")) { puts(\"null ctx\"); return 1; }\n"
    "    if (conv_run_named(NULL) != CONV_EINVAL) return 1;\n"
    "    puts(\"api ok\");\n"
    "    return 0;\n"
    "}\n";

static void case_api(void)
{
    B *b = conv_program();
    b->model = "conv";
    IrProgram *p = program(b);
    int rc;
    char *c = emit_to_string(p, TARGET_C, false, "apiconv.c", &rc);
    CHECK(rc == 0, "api: emit");
    write_file("apiconv.c", c);
    write_file("apidriver.c", api_driver);
    free(c);
    /* b1 alone, and a file where w1 has the wrong shape. */
    float b1[4] = {0.5f, -0.25f, 0, 1}, w1[3] = {1, 2, 3};
    int64_t s4[] = {4}, s3[] = {3};
    StOut o1 = {"b1", ST_F32, 1, s4, b1}, o2 = {"w1", ST_F32, 1, s3, w1};
    char err[ST_ERRLEN], path[400];
    snprintf(path, sizeof path, "%s/b1.safetensors", workdir);
    CHECK(st_write(path, &o1, 1, NULL, 0, 0, err, sizeof err) == 0, "%s", err);
    snprintf(path, sizeof path, "%s/bad.safetensors", workdir);
    CHECK(st_write(path, &o2, 1, NULL, 0, 0, err, sizeof err) == 0, "%s", err);
    char *log = NULL;
    int st = sh(&log, "cc -std=c99 -O1 -fopenmp -Wall -Wextra -c apiconv.c -o apiconv.o && "
                "cc -std=c99 -fopenmp -Wall -Wextra -c apidriver.c -o apidriver.o && "
                "cc -fopenmp apidriver.o apiconv.o -o apidriver -lopenblas -lm && ./apidriver");
    CHECK(st == 0 && log && strcmp(log, "api ok\n") == 0, "api: %d\n%s", st, log ? log : "");
    free(log);
#ifdef HAVE_DNNL
    /* The same with the convolution on oneDNN: its filter reordered once,
     * and again when it changes. */
    use_dnnl = true;
    c = emit_to_string(p, TARGET_C, false, "apiconv.c", &rc);
    use_dnnl = false;
    CHECK(rc == 0 && c && strstr(c, "ein_dnnl_run(") && !strstr(c, "cblas_sgemm("),
          "api: the convolution is not on oneDNN");
    write_file("apiconv.c", c);
    free(c);
    st = sh(&log, "cc -std=c99 -O1 -fopenmp -Wall -Wextra -c apiconv.c -o apiconv.o && "
            "cc -fopenmp apidriver.o apiconv.o -o apidriver -ldnnl -lm && ./apidriver");
    CHECK(st == 0 && log && strcmp(log, "api ok\n") == 0, "api (oneDNN): %d\n%s", st,
          log ? log : "");
    free(log);
#endif
    if (nvcc) {
        /* The CUDA API from C++ through its declarations alone. */
        c = emit_to_string(p, TARGET_CUDA, false, "apiconv.cu", &rc);
        write_file("apiconv.cu", c);
        free(c);
        write_file("apiuse.cpp",
                   "#define CONV_API_ONLY\n#include \"apiconv.cu\"\n"
                   "int main() { conv_ctx *c = 0; int rc = conv_create(&c);\n"
                   "  float *x = 0, *z = 0, *y = 0;\n"
                   "  if (!rc) rc = conv_run(c, x, z, y, (cudaStream_t)0);\n"
                   "  conv_destroy(c); return rc; }\n");
        st = sh(&log, "PATH=\"$(dirname '%s'):$PATH\"; nvcc -O3 -arch=sm_90 -c apiconv.cu "
                "-o apiconv_cu.o && g++ -Wall -Wextra -I/usr/local/cuda/include -c "
                "apiuse.cpp -o apiuse.o && nvcc -arch=sm_90 apiuse.o apiconv_cu.o -o apiuse "
                "-lcublas -lcudnn",
                nvcc);
        CHECK(st == 0 && log && !*log, "api (CUDA, C++): %d\n%s", st, log ? log : "");
        free(log);
    }
    free_b(b);
}

/* ---- f16 and bf16 storage ---------------------------------------------------- *
 * The expected values come from an oracle written here in double
 * precision (decode by ldexp; round by scaling to the grid of the type,
 * ties to even, overflow where IEEE rounding to nearest overflows), not
 * from the runtime's integer conversions that the C target calls. */

/* Value of an f16 (mbits 10, emin -14) or bf16 (7, -126) bit pattern. */
static double half_decode(unsigned h, int mbits, int ebits)
{
    int emax = (1 << ebits) - 1, bias = (1 << (ebits - 1)) - 1;
    unsigned m = h & ((1u << mbits) - 1), e = (h >> mbits) & (unsigned)emax;
    double s = (h >> (mbits + ebits)) & 1 ? -1.0 : 1.0;
    if ((int)e == emax)
        return m ? NAN : s * INFINITY;
    if (e == 0)
        return s * ldexp(m, 1 - bias - mbits);
    return s * ldexp((double)((1u << mbits) + m), (int)e - bias - mbits);
}

/* x rounded to nearest even in the type with mbits stored mantissa bits
 * and exponents from emin to emax. */
static double half_round(double x, int mbits, int emin, int emax)
{
    if (isnan(x) || isinf(x))
        return x;
    double ax = fabs(x);
    /* Halfway between the largest finite value and 2^(emax+1), whose
       mantissa is even: that and above round to infinity. */
    double over = ldexp(2.0 - ldexp(1, -mbits - 1), emax);
    if (ax >= over)
        return copysign(INFINITY, x);
    int e;
    frexp(ax, &e);                      /* ax in [2^(e-1), 2^e) */
    double ulp = ldexp(1, (e - 1 < emin ? emin : e - 1) - mbits);
    double q = ax / ulp, fl = floor(q), rem = q - fl;
    if (rem > 0.5 || (rem == 0.5 && fmod(fl, 2) == 1))
        fl += 1;
    return copysign(fl * ulp, x);
}
#define F16_DEC(h) half_decode((h), 10, 5)
#define BF16_DEC(h) half_decode((h), 7, 8)
#define F16_RND(x) half_round((x), 10, -14, 15)
#define BF16_RND(x) half_round((x), 7, -126, 127)

/* Same value, NaN for NaN, and the same sign for zeros and infinities. */
static bool same_value(double got, double want)
{
    if (isnan(want) || isnan(got))
        return isnan(want) && isnan(got);
    return got == want && signbit(got) == signbit(want);
}

enum { HALF_NV = 4096, HALF_NFIN = 64, HALF_NP = 65536 };

/* 32 random bits from the same generator as uniform(). */
static uint32_t bits32(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 32);
}

static float f_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* The f32 values the program stores as f16 and bf16: HALF_NFIN small
 * multiples of 2^-6 (summed exactly in float), values that round,
 * ties, infinities, NaN, overflow, subnormals, then random ones. */
static void half_values(float *v)
{
    int n = 0;
    for (int i = 0; i < HALF_NFIN; i++)
        v[n++] = (float)((int)(uniform() * 64)) / 64;
    const float special[] = {
        0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN,
        65504.0f, 65519.99f, 65520.0f, -65520.0f, 65536.0f, 1e6f, FLT_MAX, -FLT_MAX,
        0x1p-24f, 0x1p-25f, 0x3p-25f, 0x1.8p-25f, 0x1p-26f, FLT_MIN, 0x1p-149f,
        -0x1p-149f, 0x1p-14f, 0x1.ff8p-15f,
        1 + 0x1p-11f, 1 + 0x3p-11f, 1 + 0x1p-11f + 0x1p-23f, 1 - 0x1p-12f,
        1 + 0x1p-8f, 1 + 0x3p-8f, 1 + 0x1p-8f + 0x1p-23f, -(1 + 0x1p-8f),
        0x1.fep127f, 0x1.ffp127f, 0x1p-133f, 0x1.8p-134f, 0.1f, -1.0f / 3,
    };
    for (size_t i = 0; i < sizeof special / sizeof *special; i++)
        v[n++] = special[i];
    /* Midpoints between neighbours of each type, and one float either
       side of them. */
    while (n < HALF_NV / 2) {
        uint32_t r = bits32();
        unsigned k16 = r % 0x7BFF, k8 = r % 0x7F7F;      /* k + 1 is finite */
        double m16 = (F16_DEC(k16) + F16_DEC(k16 + 1)) / 2;
        double m8 = (BF16_DEC(k8) + BF16_DEC(k8 + 1)) / 2;
        double m = (r >> 16) & 1 ? m16 : m8;
        if (r & 0x8000)
            m = -m;
        v[n++] = (float)m;
        v[n++] = nextafterf((float)m, INFINITY);
        v[n++] = nextafterf((float)m, -INFINITY);
    }
    /* Random floats, most of them within the range of f16. */
    while (n < HALF_NV) {
        uint32_t r = bits32();
        if (n % 4)
            r = (r & 0x807FFFFFu) | (uint32_t)(100 + (r >> 23) % 50) << 23;
        v[n++] = f_bits(r);
    }
}

static void case_half(void)
{
    B *b = new_b();
    b->model = "half";
    IrTensor *a = tensor(b, "a", IT_INPUT, 1, (int64_t)HALF_NP);
    IrTensor *c = tensor(b, "c", IT_INPUT, 1, (int64_t)HALF_NP);
    IrTensor *v = tensor(b, "v", IT_INPUT, 1, (int64_t)HALF_NV);
    IrTensor *ha = tensor(b, "ha", IT_STAGE, 1, (int64_t)HALF_NP);
    IrTensor *cb = tensor(b, "cb", IT_STAGE, 1, (int64_t)HALF_NP);
    IrTensor *h = tensor(b, "h", IT_STAGE, 1, (int64_t)HALF_NV);
    IrTensor *g = tensor(b, "g", IT_STAGE, 1, (int64_t)HALF_NV);
    IrTensor *t = tensor(b, "t", IT_STAGE, 1, (int64_t)HALF_NV);
    IrTensor *u = tensor(b, "u", IT_STAGE, 1, (int64_t)HALF_NV);
    IrTensor *sm = tensor(b, "sm", IT_STAGE, 0);
    a->elem = h->elem = t->elem = ELEM_F16;
    c->elem = g->elem = u->elem = sm->elem = ELEM_BF16;
    IrVar i = var(b, "i", 0, HALF_NP), j = var(b, "j", 0, HALF_NV);
    IrVar k = var(b, "k", 0, HALF_NFIN);
    IrVar Li[] = {i}, Lj[] = {j}, Sk[] = {k};
    stage(b, ha, RED_NONE, 1, Li, 0, NULL, 0, NULL, X(b, a, V(b, i)));
    stage(b, cb, RED_NONE, 1, Li, 0, NULL, 0, NULL, X(b, c, V(b, i)));
    stage(b, h, RED_NONE, 1, Lj, 0, NULL, 0, NULL, X(b, v, V(b, j)));
    stage(b, g, RED_NONE, 1, Lj, 0, NULL, 0, NULL, X(b, v, V(b, j)));
    stage(b, t, RED_NONE, 1, Lj, 0, NULL, 0, NULL, bin(b, IE_MUL, X(b, v, V(b, j)), K(b, 3)));
    stage(b, u, RED_NONE, 1, Lj, 0, NULL, 0, NULL, X(b, t, V(b, j)));
    stage(b, sm, RED_SUM, 0, NULL, 1, Sk, 0, NULL, X(b, t, V(b, k)));
    IrTensor *outs[] = {ha, cb, h, g, u, sm};
    for (size_t n = 0; n < sizeof outs / sizeof *outs; n++)
        output(b, outs[n]);
    IrProgram *p = program(b);
    char *text = emit_and_build(p, "half", true);
    if (!text) {
        free_b(b);
        return;
    }
    CHECK(strstr(text, "int half_run(half_ctx *ctx,\n        const uint16_t *a,\n"
                       "        const uint16_t *c,\n        const float *v,\n"
                       "        float *ha,\n        float *cb,\n        uint16_t *h,\n"),
          "half: the run prototype takes no uint16_t pointers");
    free(text);

    /* Inputs: every f16 and bf16 bit pattern, and the values above. */
    uint16_t *pa = xmalloc(HALF_NP * sizeof *pa), *pc = xmalloc(HALF_NP * sizeof *pc);
    float *pv = xmalloc(HALF_NV * sizeof *pv);
    for (int n = 0; n < HALF_NP; n++)
        pa[n] = pc[n] = (uint16_t)n;
    half_values(pv);
    StOut so[] = {{"a", ST_F16, 1, a->shape, pa}, {"c", ST_BF16, 1, c->shape, pc},
                  {"v", ST_F32, 1, v->shape, pv}};
    char err[ST_ERRLEN], path[400];
    snprintf(path, sizeof path, "%s/half.in.safetensors", workdir);
    CHECK(st_write(path, so, 3, NULL, 0, 0, err, sizeof err) == ST_OK, "%s", err);
    char *log = NULL;
    int st = sh(&log, "./half --inputs half.in.safetensors --outputs half.out.safetensors");
    CHECK(st == 0 && log && !*log, "half: run failed (%d):\n%s", st, log ? log : "");
    free(log);
    StFile *f = NULL;
    snprintf(path, sizeof path, "%s/half.out.safetensors", workdir);
    if (st == 0 && st_open(path, &f, err, sizeof err) != ST_OK) {
        CHECK(0, "%s", err);
        f = NULL;
    }
    /* Each output with the dtype of its element type, and its values. */
    const StDtype dt[] = {ST_F32, ST_F32, ST_F16, ST_BF16, ST_BF16, ST_BF16};
    double sum = 0;
    for (int n = 0; n < HALF_NFIN; n++)
        sum += F16_RND((double)(pv[n] * 3.0f));
    for (size_t o = 0; f && o < sizeof outs / sizeof *outs; o++) {
        const StTensor *ot;
        IrTensor *ir = outs[o];
        if (st_get(f, ir->name, dt[o], ir->rank, ir->shape, &ot, err, sizeof err) != ST_OK) {
            CHECK(0, "half: %s", err);
            continue;
        }
        void *data = xmalloc(ot->nbytes);
        st_copy(ot, data);
        int bad = 0;
        for (int64_t n = 0; n < count(ir); n++) {
            const float *fl = data;
            const uint16_t *u16 = data;
            double got, want, in = n < HALF_NV ? (double)pv[n] : 0;
            switch (o) {
            case 0: got = fl[n], want = F16_DEC((unsigned)n); break;
            case 1: got = fl[n], want = BF16_DEC((unsigned)n); break;
            case 2: got = F16_DEC(u16[n]), want = F16_RND(in); break;
            case 3: got = BF16_DEC(u16[n]), want = BF16_RND(in); break;
            case 4:
                got = BF16_DEC(u16[n]);
                want = BF16_RND(F16_RND((double)(pv[n] * 3.0f)));
                break;
            default: got = BF16_DEC(u16[n]), want = BF16_RND(sum); break;
            }
            if (!same_value(got, want) && bad++ < 5)
                CHECK(0, "half: %s[%lld] = %.9g, expected %.9g (from %.9g)", ir->name,
                      (long long)n, got, want, in);
        }
        free(data);
    }
    if (f)
        st_close(f);
    free(pa);
    free(pc);
    free(pv);
    free_b(b);
}

/* The C API of a model with f16 and bf16 tensors: uint16_t pointers in
 * M_run (a float pointer would not compile with -Werror), sizes in
 * bytes of the element type, outputs copied from an input and a weight. */
static const char half_api_driver[] =
    "#include <stdio.h>\n"
    "#include <string.h>\n"
    "#define HAPI_API_ONLY\n"
    "#include \"hapi.c\"\n"
    "#define OK(call) do { int rc_ = (call); if (rc_) { printf(\"line %d: %s -> %d: %s\\n\", __LINE__, #call, rc_, hapi_last_error(ctx)); return 1; } } while (0)\n"
    "#define FAILS(call, code, text) do { int rc_ = (call); if (rc_ != (code) || !strstr(hapi_last_error(ctx), (text))) { printf(\"line %d: %s -> %d: %s\\n\", __LINE__, #call, rc_, hapi_last_error(ctx)); return 1; } } while (0)\n"
    "int main(void)\n"
    "{\n"
    "    hapi_ctx *ctx = NULL;\n"
    "    /* f16 1, 2, -3, 1365/4096; bf16 1, 3, 0.5, 2 */\n"
    "    uint16_t x[4] = {0x3C00, 0x4000, 0xC200, 0x3555}, w[4] = {0x3F80, 0x4040, 0x3F00, 0x4000};\n"
    "    /* bf16 of 1, 6, -1.5, 1365/2048 (rounded up to 171/256) */\n"
    "    const uint16_t want[4] = {0x3F80, 0x40C0, 0xBFC0, 0x3F2B};\n"
    "    uint16_t y[4], xo[4], wo[4];\n"
    "    float s = 0;\n"
    "    const hapi_tensor_info *t0 = hapi_tensor_at(0), *t1 = hapi_tensor_at(1), *t3 = hapi_tensor_at(3);\n"
    "    if (t0->elem != HAPI_F16 || t0->nbytes != 8 || t1->elem != HAPI_BF16 || t1->nbytes != 8\n"
    "        || t3->elem != HAPI_F32 || t3->nbytes != 4 || t3->count != 1) { puts(\"tensor table\"); return 1; }\n"
    "    OK(hapi_create(&ctx));\n"
    "    FAILS(hapi_set_tensor(ctx, \"w\", w, 16), HAPI_EINVAL, \"takes 8 bytes, not 16\");\n"
    "    OK(hapi_set_tensor(ctx, \"w\", w, sizeof w));\n"
    "    OK(hapi_run(ctx, x, y, &s, xo, wo));\n"
    "    if (memcmp(y, want, sizeof y)) { printf(\"y = %04x %04x %04x %04x\\n\", y[0], y[1], y[2], y[3]); return 1; }\n"
    "    if (s != 6.25f) { printf(\"s = %g\\n\", s); return 1; }\n"
    "    if (memcmp(xo, x, sizeof x) || memcmp(wo, w, sizeof w)) { puts(\"copied outputs differ\"); return 1; }\n"
    "    memset(y, 0, sizeof y);\n"
    "    OK(hapi_set_tensor(ctx, \"x\", x, sizeof x));\n"
    "    OK(hapi_run_named(ctx));\n"
    "    FAILS(hapi_get_tensor(ctx, \"y\", y, 4), HAPI_EINVAL, \"has 8 bytes, not 4\");\n"
    "    OK(hapi_get_tensor(ctx, \"y\", y, sizeof y));\n"
    "    if (memcmp(y, want, sizeof y)) { puts(\"run_named differs\"); return 1; }\n"
    "    if (hapi_destroy(ctx)) return 1;\n"
    "    puts(\"api ok\");\n"
    "    return 0;\n"
    "}\n";

static void case_half_api(void)
{
    B *b = new_b();
    b->model = "hapi";
    IrTensor *x = tensor(b, "x", IT_INPUT, 1, (int64_t)4);
    IrTensor *w = tensor(b, "w", IT_WEIGHT, 1, (int64_t)4);
    IrTensor *y = tensor(b, "y", IT_STAGE, 1, (int64_t)4);
    IrTensor *s = tensor(b, "s", IT_STAGE, 0);
    x->elem = ELEM_F16;
    w->elem = y->elem = ELEM_BF16;
    IrVar i = var(b, "i", 0, 4), k = var(b, "k", 0, 2);
    IrVar L[] = {i}, S[] = {k};
    stage(b, y, RED_NONE, 1, L, 0, NULL, 0, NULL,
          bin(b, IE_MUL, X(b, x, V(b, i)), X(b, w, V(b, i))));
    /* Σ_k x[k] * w[k] + y[2] / 4 for k < 2, y[2] = -1.5 read back from
       bf16: (1 - 0.375) + (6 - 0.375) = 6.25 */
    stage(b, s, RED_SUM, 0, NULL, 1, S, 0, NULL,
          bin(b, IE_ADD, bin(b, IE_MUL, X(b, x, V(b, k)), X(b, w, V(b, k))),
              bin(b, IE_MUL, bin(b, IE_MUL, X(b, y, lin(b, 2, END)), K(b, 0.5)),
                  K(b, 0.5))));
    output(b, y);
    output(b, s);
    output(b, x);
    output(b, w);
    IrProgram *p = program(b);
    int rc;
    char *c = emit_to_string(p, TARGET_C, false, "hapi.c", &rc);
    CHECK(rc == 0, "half api: emit");
    write_file("hapi.c", c);
    free(c);
    write_file("hapidriver.c", half_api_driver);
    char *log = NULL;
    int st = sh(&log, "cc -std=c99 -O1 -fopenmp -Wall -Wextra -Werror -c hapi.c -o hapi.o && "
                "cc -std=c99 -Wall -Wextra -Werror -c hapidriver.c -o hapidriver.o && "
                "cc -fopenmp hapidriver.o hapi.o -o hapidriver -lm && ./hapidriver");
    CHECK(st == 0 && log && strcmp(log, "api ok\n") == 0, "half api: %d\n%s", st,
          log ? log : "");
    free(log);
    free_b(b);
}

/* Programs the emitter refuses: an internal error (ICE, exit status 3)
 * with a message, in a child process, since an ICE ends the process. */
static void expect_error(const IrProgram *p, const char *want)
{
    char path[400];
    snprintf(path, sizeof path, "%s/ice.log", workdir);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        FILE *fp = fopen(path, "w");
        if (!fp)
            _exit(99);
        diag_set_stream(fp);
        int rc;
        char *c = emit_to_string(p, TARGET_C, false, "x.c", &rc);
        free(c);
        fclose(fp);
        _exit(rc == 0 ? 0 : 1);
    }
    int st = 0;
    CHECK(pid > 0 && waitpid(pid, &st, 0) == pid, "expect_error: fork failed");
    char *msgs = slurp(path, NULL);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 3 && msgs && strstr(msgs, want),
          "expected an internal error '%s', got status %d:\n%s", want,
          WIFEXITED(st) ? WEXITSTATUS(st) : -1, msgs ? msgs : "");
    free(msgs);
}

static void case_errors(void)
{
    B *b = new_b();
    IrTensor *x = tensor(b, "x", IT_INPUT, 1, (int64_t)4);
    IrTensor *y = tensor(b, "y", IT_STAGE, 1, (int64_t)4);
    IrVar i = var(b, "i", 0, 4), j = var(b, "j", 0, 4);
    IrVar L[] = {i}, Lj[] = {j};
    const Stage *inner = ir_stage(b->cx, RED_NONE, Lj, 1, NULL, 0, NULL, 0,
                                  X(b, x, V(b, j)));
    const Ix *ii = V(b, i);
    stage(b, y, RED_NONE, 1, L, 0, NULL, 0, NULL, ir_access_stage(b->cx, inner, &ii, 1));
    output(b, y);
    expect_error(program(b), "internal compiler error: the stage of 'y' reads a nested stage");

    B *h = new_b();
    IrTensor *xh = tensor(h, "xh", IT_INPUT, 1, (int64_t)4);
    xh->elem = (ElemType)97;
    output(h, xh);
    expect_error(program(h), "internal compiler error: tensor 'xh' has element type 97");
    free_b(b);
    free_b(h);
}

/* ---- plans made by hand ----------------------------------------------------------
 * emit/ writes what the plan says, including choices the matcher and the
 * search would not make: a GEMM-matchable stage forced to a generated
 * kernel, and a map attached to an operator as its epilogue (fused into
 * a kernel's store, or a pass after a library call). */
enum { PM = 5, PK = 7, PN = 6 };

static void gemm_ref(B *b, double **D)
{
    IrTensor *a = b->t[0], *w = b->t[1], *bias = b->t[2], *y = b->t[3], *z = b->t[4];
    for (int64_t m = 0; m < PM; m++)
        for (int64_t n = 0; n < PN; n++) {
            double s = 0;
            for (int64_t k = 0; k < PK; k++)
                s += AT(a, m, k) * AT(w, k, n);
            D[y->id][m * PN + n] = s;
            D[z->id][m * PN + n] = fmax(s + AT(bias, n), 0);
        }
}

/* y[m, n] = sum_k a[m, k] w[k, n]; z[m, n] = relu(y[m, n] + bias[n]) */
static B *gemm_program(void)
{
    B *b = new_b();
    IrTensor *a = tensor(b, "a", IT_INPUT, 2, (int64_t)PM, (int64_t)PK);
    IrTensor *w = tensor(b, "w", IT_WEIGHT, 2, (int64_t)PK, (int64_t)PN);
    IrTensor *bias = tensor(b, "bias", IT_WEIGHT, 1, (int64_t)PN);
    IrTensor *y = tensor(b, "y", IT_STAGE, 2, (int64_t)PM, (int64_t)PN);
    IrTensor *z = tensor(b, "z", IT_STAGE, 2, (int64_t)PM, (int64_t)PN);
    IrVar m = var(b, "m", 0, PM), n = var(b, "n", 0, PN), k = var(b, "k", 0, PK);
    IrVar L[] = {m, n}, S[] = {k};
    stage(b, y, RED_SUM, 2, L, 1, S, 0, NULL,
          bin(b, IE_MUL, X(b, a, V(b, m), V(b, k)), X(b, w, V(b, k), V(b, n))));
    IrVar m2 = var(b, "m", 0, PM), n2 = var(b, "n", 0, PN);
    IrVar L2[] = {m2, n2};
    stage(b, z, RED_NONE, 2, L2, 0, NULL, 0, NULL,
          call1(b, FN_RELU, bin(b, IE_ADD, X(b, y, V(b, m2), V(b, n2)), X(b, bias, V(b, n2)))));
    output(b, z);
    return b;
}

static bool hand_call;              /* the GEMM a library call, else a kernel */

typedef struct Copies {
    IrCtx *cx;
    const IrTensor *from[8];
    IrTensor *to[8];
    int n;
} Copies;

static const IExpr *copy_access(void *arg, const IExpr *e)
{
    Copies *c = arg;
    for (int i = 0; i < c->n; i++)
        if (e->access.tensor == c->from[i])
            return ir_access_tensor(c->cx, c->to[i], e->access.idx, e->access.nidx);
    return e;
}

/* The plan of gemm_program's p with y's operator computing z: y's GEMM
 * forced to a generated kernel (!hand_call) or the target's GEMM call,
 * and z's map as its epilogue, absorbing y.  Its program holds copies of
 * a, w, bias and z, so that p keeps its ids for the reference. */
static const Plan *plan_by_hand(const IrProgram *p, Target target)
{
    IrCtx *cx = p->cx;
    Arena *ar = ir_arena(cx);
    const IrTensor *y = p->tensors[3], *zt = p->tensors[4];
    Copies c = {cx, {0}, {0}, 0};
    IrProgram *q = arena_dup(ar, p, sizeof *p);
    q->tensors = arena_alloc(ar, sizeof *q->tensors * 4);
    q->ntensors = 4;
    q->outputs = arena_alloc(ar, sizeof *q->outputs);
    q->outputs[0] = 3;
    q->noutputs = 1;
    for (int i = 0; i < 5; i++) {
        if (i == 3)
            continue;
        IrTensor *t = arena_dup(ar, p->tensors[i], sizeof *t);
        t->id = i < 3 ? i : 3;
        q->tensors[t->id] = t;
        c.from[c.n] = p->tensors[i];
        c.to[c.n++] = t;
    }
    IrTensor *z = q->tensors[3];
    const Stage *ys = y->stage;
    const Stage *g = ir_stage(cx, ys->red, ys->loops, ys->nloops, ys->sums, ys->nsums, NULL,
                              0, ir_map_access(cx, ys->body, copy_access, &c));
    z->stage = g;
    CostModel cm = {cost_device("h200"), PREC_FP32, NULL, target, false};
    Plan *pl = plan_program(cx, &cm, q);
    PlanOp *op = &pl->ops[3];
    CHECK(op->impl == (target == TARGET_C ? IMPL_CBLAS_GEMM : IMPL_CUBLAS_GEMM),
          "by hand: the stage is not the target's GEMM as written (%s)",
          cost_impl_name(op->impl));
    if (!hand_call) {
        op->impl = IMPL_KERNEL;
        memset(&op->op, 0, sizeof op->op);
        op->op.kind = OPK_KERNEL;
        plan_price(cx, &cm, op);
    }
    /* z's body over the GEMM's loop variables, y read as the value */
    const Stage *zs = zt->stage;
    const IExpr *v = ir_map_access(cx, zs->body, copy_access, &c);
    for (int d = 0; d < 2; d++)
        v = ir_subst(cx, v, zs->loops[d].id, ix_var(cx, g->loops[d].id));
    const IrTensor **abs = arena_alloc(ar, sizeof *abs);
    abs[0] = y;
    op->epi = (PlanEpilogue){v, y, abs, 1};
    double bare = op->cost;
    plan_price(cx, &cm, op);
    CHECK(op->cost > bare, "by hand: the epilogue adds nothing to the price (%g, %g)",
          op->cost, bare);
    pl->cost = plan_total(pl);
    return pl;
}

static void case_by_hand(void)
{
    B *pb = gemm_program();
    IrProgram *p = program(pb);
    const Plan *as_is = plan_as_written(p, TARGET_C);
    CHECK(as_is->ops[3].impl == IMPL_CBLAS_GEMM && as_is->ops[4].impl == IMPL_KERNEL,
          "by hand: the plan as written is not a call and a kernel");
    make_plan = plan_by_hand;
    for (int call = 0; call < 2; call++) {
        hand_call = call;
        const char *name = call ? "hand_call" : "hand_kernel";
        int rc;
        const Plan *pl = plan_for(p, TARGET_C);
        char *c = emit_plan_to_string(pl, true, "x.c", &rc);
        CHECK(rc == 0, "%s: emit", name);
        /* the operator is what the plan says, the epilogue where it says */
        bool sgemm = strstr(c, "\n    ein_sgemm(") != NULL;
        CHECK(sgemm == call, "%s: the GEMM is %sa cblas call", name, sgemm ? "" : "not ");
        CHECK(strstr(c, call ? "/* z: cblas_sgemm */" : "/* z: generated kernel */"),
              "%s: the operator's comment", name);
        if (call)
            CHECK(strstr(c, "static void k0_z_epilogue(") &&
                  strstr(c, "    k0_z_epilogue(p[2], p[3]);\n") &&
                  strstr(c, "ein_relu((t_z["), "%s: no epilogue pass after the call:\n%s",
                  name, c);
        else
            CHECK(strstr(c, "t_z[v_m * 6 + v_n] = ein_relu((acc + t_bias[v_n]));"),
                  "%s: the epilogue is not fused into the store:\n%s", name, c);
        free(c);
        /* the views say the same */
        char *txt = NULL;
        size_t len = 0;
        FILE *fp = open_memstream(&txt, &len);
        plan_print(pl, fp);
        CHECK(emit_dot(pl, fp) == 0, "%s: dot", name);
        fclose(fp);
        CHECK(strstr(txt, call ? "cblas  epilogue=y" : "kernel           z [5, 6]  epilogue=y"),
              "%s: --emit=plan:\n%s", name, txt);
        CHECK(strstr(txt, call ? "ein_op_3: matmul, cblas_sgemm\\lepilogue of: y\\l"
                               : "k0_z: generated kernel\\lepilogue of: y\\l"),
              "%s: dot:\n%s", name, txt);
        free(txt);
        /* and it computes z (the CUDA file is built where $NVCC is set) */
        run_case(gemm_program(), name, gemm_ref);
    }
    make_plan = plan_as_written;
    free_b(pb);
}

/* Kernel comments: the statement from the .ein file with its location. */
static void case_comment(void)
{
    static const char src[] = "input x : f32[4]\n"
                              "y[i] = x[i] */\n"
                              "   * 2 ?\?/ \n";
    int id = src_add("dir/net.ein", src, sizeof src - 1);
    B *b = new_b();
    IrTensor *x = tensor(b, "x", IT_INPUT, 1, (int64_t)4);
    IrTensor *y = tensor(b, "y", IT_STAGE, 1, (int64_t)4);
    y->loc = (Loc){id, 17, (int32_t)(sizeof src - 3)};
    IrVar i = var(b, "i", 0, 4);
    IrVar L[] = {i};
    stage(b, y, RED_NONE, 1, L, 0, NULL, 0, NULL, bin(b, IE_MUL, X(b, x, V(b, i)), K(b, 2)));
    output(b, y);
    char *c = emit_and_build(program(b), "comment", false);
    CHECK(c && strstr(c, "/* dir/net.ein:2:1:\n *     y[i] = x[i] * /\n *        * 2 ? ?/\n"
                         " * IR: "),
          "comment: kernel comment not found:\n%s", c ? strstr(c, "/* dir/net.ein") : "");
    free(c);
    free_b(b);
}

/* Graphviz: the tensors, the kernels (with the operator a stage matches)
 * and who reads what. */
static void case_dot(void)
{
    B *b = conv_program();
    IrProgram *p = program(b);
    char *buf = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&buf, &len);
    CHECK(emit_dot(plan_for(p, TARGET_CUDA), fp) == 0, "dot: emit_dot failed");
    fclose(fp);
    CHECK(strstr(buf, "t0 -> k3;") && strstr(buf, "t1 -> k3;") && strstr(buf, "k3 -> t3;") &&
          strstr(buf, "t2 -> k4;") && strstr(buf, "t3 -> k4;") && strstr(buf, "k4 -> t4;") &&
          strstr(buf, "k0_z1_y: conv2d") && strstr(buf, "k1_z: generated kernel") &&
          strstr(buf, "z1.y\\ntensor (output) f32[2, 4, 5, 6]") &&
          strstr(buf, "w1\\nweight f32[4, 3, 3, 3]"), "dot: unexpected graph:\n%s", buf);
    write_file("conv.dot", buf);
    free(buf);
    if (dotprog) {
        char *log = NULL;
        int st = sh(&log, "'%s' -Tsvg conv.dot -o conv.svg", dotprog);
        CHECK(st == 0 && log && !*log, "dot -Tsvg: %d\n%s", st, log ? log : "");
        free(log);
    }
    free_b(b);
}

static const struct { const char *name; void (*fn)(void); } cases[] = {
    {"conv", case_conv}, {"tconv", case_tconv}, {"pool", case_pool},
    {"softmax", case_softmax}, {"rank0", case_rank0}, {"guards", case_guards},
    {"funcs", case_funcs}, {"divmod", case_divmod}, {"wonly", case_wonly},
    {"names", case_names}, {"wide", case_wide}, {"api", case_api},
    {"errors", case_errors}, {"comment", case_comment}, {"dot", case_dot},
    {"half", case_half}, {"half_api", case_half_api}, {"by_hand", case_by_hand},
};

int main(int argc, char **argv)
{
    nvcc = getenv("NVCC");
    if (nvcc && !*nvcc)
        nvcc = NULL;
    dotprog = getenv("DOT");
    if (dotprog && !*dotprog)
        dotprog = NULL;
    snprintf(workdir, sizeof workdir, "%s/einc-emit-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(workdir)) {
        perror("mkdtemp");
        return 99;
    }
    char sub[300];
    snprintf(sub, sizeof sub, "%s/cu", workdir);
    if (mkdir(sub, 0777) != 0) {
        perror("mkdir");
        return 99;
    }
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        bool run = argc < 2;
        for (int a = 1; a < argc; a++)
            run |= strcmp(argv[a], cases[i].name) == 0;
        if (!run)
            continue;
        int before = failures;
        cases[i].fn();
        printf("%s %s\n", failures == before ? "PASS" : "FAIL", cases[i].name);
        fflush(stdout);
    }
    if (!nvcc)
        printf("note: NVCC not set: CUDA output not compiled\n");
    else
        nvcc_run_jobs();
    if (failures == 0 && !getenv("KEEP")) {
        char cmd[400];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", workdir);
        if (system(cmd) != 0)
            fprintf(stderr, "cannot remove %s\n", workdir);
    } else {
        printf("work folder kept: %s\n", workdir);
    }
    return failures ? 1 : 0;
}
