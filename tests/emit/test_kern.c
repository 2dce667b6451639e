/* test_kern.c - the CUDA kernels run on the CPU.  There is no GPU here, so
 * the kernels einc writes for CUDA (the tiled band kernels of band.c and
 * the thread, warp and block layouts of cuda.c, and the four-elements-a-
 * thread kernels of maps, which run here: calloc's buffers are 16-byte
 * aligned) are compiled as C++ with a
 * small emulation of the CUDA execution model (tests/hostcuda/emu.h):
 * every thread of a block is a fiber, __shared__ arrays are shared between
 * them, __syncthreads is a barrier of the block and __shfl_down_sync an
 * exchange through a barrier of the warp (a mask that is not the whole
 * warp is an error).  A kernel that reaches a barrier from only part of a
 * block or warp stops with a message saying so, where on a GPU it would
 * hang or be undefined.  Every tensor a stage computes is compared with the
 * IR interpreter (derive/ir/interp.c, double precision) on seeded inputs.
 *
 * Programs: a few band programs written here (dilations, batches of
 * several dims, bands wider than the sequence, m < dilation, partial
 * tiles, the warp and block layouts), then every f32 program of
 * tests/num.  Where $NVCC is set the kernels of the programs written here
 * and their launches are also built with `nvcc -O3 -arch=sm_90 -c` and
 * must give no diagnostic at all (nvcc.test builds the examples; the
 * whole of tests/num would take too long).
 *
 * Usage: test_kern [NAME...]   (KEEP=1 keeps the work folder) */
#include "config.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lang/lang.h"
#include "parser/parser.h"
#include "sema/sema.h"
#include "derive/ir/ir.h"
#include "derive/pricing/match.h"
#include "emit/emit_int.h"
#include "tests/check.h"

static int passed, skipped, nband, nwarp, nblock, nv4;
static char workdir[256];
static char emu_dir[1024];          /* tests/hostcuda: emu.h */
static const char *nvcc;

/* ---- programs written here ------------------------------------------------- */

static const struct { const char *name, *text; } inline_cases[] = {
    {"band_dil3",
     "const B = 2, L = 50, D = 40, K = 5, DIL = 3\n"
     "input q : f32[B, L, D], k : f32[B, L, D], v : f32[B, L, D]\n"
     "s[b, i, j] : [B, L, 2*K + 1] += q[b, i, d] * k[b, i + DIL*(j - K), d]\n"
     "o[b, i, d] : [B, L, D] += s[b, i, j] * v[b, i + DIL*(j - K), d]\n"
     "output o\n"},
    /* two batch dims; a band (81) wider than the sequence (30) and than
     * one tile; d (70) in three chunks, the last partial */
    {"band_wide",
     "const B = 2, H = 3, L = 30, D = 70, K = 40\n"
     "input q : f32[B, H, L, D], k : f32[B, H, L, D], v : f32[B, H, L, D]\n"
     "s[b, h, i, j] : [B, H, L, 2*K + 1] += q[b, h, i, d] * k[b, h, i + j - K, d]\n"
     "o[b, h, i, d] : [B, H, L, D] += s[b, h, i, j] * v[b, h, i + j - K, d]\n"
     "output o\n"},
    /* fewer rows than the dilation: residues without rows */
    {"band_short",
     "const L = 3, D = 17, K = 2, DIL = 4\n"
     "input q : f32[1, L, D], k : f32[1, L, D], v : f32[1, L, D]\n"
     "s[b, i, j] : [1, L, 2*K + 1] += q[b, i, d] * k[b, i + DIL*(j - K), d]\n"
     "o[b, i, d] : [1, L, D] += s[b, i, j] * v[b, i + DIL*(j - K), d]\n"
     "output o\n"},
    /* several row tiles per residue, q = k (one tensor twice) */
    {"band_rows",
     "const L = 300, D = 33, K = 7, DIL = 2\n"
     "input q : f32[1, L, D], v : f32[1, L, D]\n"
     "s[b, i, j] : [1, L, 2*K + 1] += q[b, i, d] * q[b, i + DIL*(j - K), d]\n"
     "o[b, i, d] : [1, L, D] += s[b, i, j] * v[b, i + DIL*(j - K), d]\n"
     "output o\n"},
    /* Longformer's sizes (examples/longformer.ein): nvcc only ("big") */
    {"band_longformer_big",
     "const G = 8, L = 10000, D = 64, W = 1000, DIL = 4\n"
     "input q : f32[G, L, D], k : f32[G, L, D], v : f32[G, L, D]\n"
     "s[g, i, j] : [G, L, 2*W + 1] += q[g, i, d] * k[g, i + DIL*(j - W), d]\n"
     "o[g, i, d] : [G, L, D] += s[g, i, j] * v[g, i + DIL*(j - W), d]\n"
     "output o\n"},
    /* the layouts of cuda.c: a block per element, a warp per element with
     * guards and offsets, thread per element */
    {"red_block",
     "const N = 100, M = 90\n"
     "input x : f32[N, M]\n"
     "t[] += x[i, j]\n"
     "u[] max= x[i, j] where i != j\n"
     "w[] min= x[i, j] where (i + j) % 7 == 9\n"
     "c[a] : [3] += x[i, j] * x[j % 100, i % 90] where a <= 1\n"
     "output t, u, w, c\n"},
    {"red_warp",
     "const N = 40, M = 300\n"
     "input x : f32[N, M]\n"
     "r[i] += x[i, j + 1] where j in -1..299, j % 3 != 1\n"
     "mx[i] max= x[i, j] * x[i, M - 1 - j]\n"
     "mn[j] min= x[i, j]\n"
     "e[i] max= x[i, j] where (i + 2 * j) % 5 == 7\n"
     "pm[i] *= 1 + x[i, j] / 64\n"
     "pe[i] *= x[i, j] where j % 100 == 200\n"
     "output r, mx, mn, e, pm, pe\n"},
};

/* ---- helpers ------------------------------------------------------------------- */

static int run(const char *cmd)
{
    int rc = system(cmd);
    return rc == -1 ? -1 : WEXITSTATUS(rc);
}

static char *slurp(const char *path)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return NULL;
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    size_t got = fread(s, 1, (size_t)n, fp);
    s[got] = 0;
    fclose(fp);
    return s;
}

static void put_file(const char *path, const char *text)
{
    FILE *fp = fopen(path, "w");
    if (!fp || fputs(text, fp) < 0 || fclose(fp) != 0) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(99);
    }
}

static uint64_t rng = 88172645463325252ULL;

/* Each program's inputs from a seed of its own (its name's FNV-1a hash),
 * so that a program's data does not depend on which ran before it. */
static void seed(const char *name)
{
    uint64_t h = 14695981039346656037ULL;
    for (; *name; name++)
        h = (h ^ (unsigned char)*name) * 1099511628211ULL;
    rng = h ? h : 88172645463325252ULL;
}

static float uniform(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((double)(rng >> 11) / (double)(1ULL << 53) * 2 - 1);
}

/* The emulation of the CUDA execution model: tests/hostcuda/emu.h (blocks
 * of threads as fibers, barriers, shuffles), shared with the host build of
 * whole .cu files; here each launch runs at once. */
static const char shim[] =
"#include <stdint.h>\n"
"#include <stdio.h>\n"
"#include <stdlib.h>\n"
"#include <cmath>\n"
"#include \"emu.h\"\n"
"using std::isnan;\n"
/* CUDA's float4 (vector_types.h) for the _v4 kernels: four floats on 16 bytes */
"struct __attribute__((aligned(16))) float4 { float x, y, z, w; };\n"
"static inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }\n"
"template <class... P, class... A>\n"
"static void ein_emu(void (*kern)(P...), const char *name, long grid, int block, int smem,\n"
"                    int stream, A... args)\n"
"{\n"
"    (void)smem; (void)stream;\n"
"    if (block % 32 || block > 1024 || grid < 1) { fprintf(stderr, \"bad launch\\n\"); exit(3); }\n"
"    hc_emu::launch(kern, name, hc_emu::Dim{(unsigned)grid, 1, 1},\n"
"                   hc_emu::Dim{(unsigned)block, 1, 1}, args...);\n"
"}\n"
"static int ein_launched(void *ctx, const char *name) { (void)ctx; (void)name; return 0; }\n";

/* "    NAME<<<G, B, 0, stream>>>(ARGS);" -> "    ein_emu(NAME, "NAME", G, B, 0, stream, ARGS);" */
static void emu_launches(Sb *o, const char *text)
{
    while (*text) {
        const char *nl = strchr(text, '\n');
        size_t n = nl ? (size_t)(nl - text) : strlen(text);
        char *l = strndup(text, n);
        char *a = strstr(l, "<<<"), *b = strstr(l, ">>>(");
        if (a && b) {
            size_t ind = strspn(l, " ");
            sb_printf(o, "%.*sein_emu(%.*s, \"%.*s\", %.*s, %s\n", (int)ind, l,
                      (int)(a - l - ind), l + ind, (int)(a - l - ind), l + ind,
                      (int)(b - a - 3), a + 3, b + 4);
        } else {
            sb_printf(o, "%s\n", l);
        }
        free(l);
        text += n + (nl != NULL);
    }
}

/* ---- one program ------------------------------------------------------------ */

static void run_program(const char *name, const IrProgram *p, bool with_nvcc)
{
    for (int i = 0; i < p->ntensors; i++)
        if (p->tensors[i]->elem != ELEM_F32) {
            printf("SKIP %s: 16-bit tensors\n", name);
            skipped++;
            return;
        }
    /* the plan for CUDA of the program as written: band kernels where
     * the target takes the band (derive/pricing/libs.c) */
    CostModel cm = {cost_device("h200"), PREC_FP32, NULL, TARGET_CUDA, false};
    const Plan *pl = plan_program(p->cx, &cm, (IrProgram *)p);
    EmitOptions opt = {.out_name = "k.cu"};
    Emit em;
    emit_setup(&em, pl, &opt);
    /* every stage's generic kernel, the band stages' too (the band kernel
     * takes its name and comment) */
    em.kernels = arena_alloc(em.arena, sizeof *em.kernels * (size_t)(p->ntensors + 1));
    for (int i = 0; i < p->ntensors; i++) {
        if (p->tensors[i]->kind != IT_STAGE)
            continue;
        const char *kn = arena_printf(em.arena, "k%d_%s", em.nkernels, em.cname[i]);
        if (kernel_build(&em, &pl->ops[i], false, kn, &em.kernels[em.nkernels]) < 0) {
            CHECK(0, "%s: kernel_build failed", name);
            return;
        }
        em.nkernels++;
    }
    /* kernels, the band kernel wherever the plan has one */
    const OpMatch **op = arena_alloc(em.arena, sizeof *op * (size_t)(p->ntensors + 1));
    bool *band = arena_alloc(em.arena, sizeof *band * (size_t)(p->ntensors + 1));
    int bands = 0;
    for (int i = 0; i < em.nkernels; i++) {
        const IrTensor *t = em.kernels[i].out;
        op[t->id] = &pl->ops[t->id].op;
        band[t->id] = pl->ops[t->id].impl == IMPL_CUDA_BAND;
        bands += band[t->id];
    }
    if (bands > 0)
        band_write_support(&em);        /* runtime/band.cu, as emit.c writes it */
    for (int i = 0; i < em.nkernels; i++) {
        const Kernel *k = &em.kernels[i];
        const IrTensor *t = k->out;
        if (band[t->id]) {
            band_write_kernel(&em, t, op[t->id]);
        } else {
            cuda_write_kernel(&em, k);
        }
    }
    Sb kernels = em.out;
    memset(&em.out, 0, sizeof em.out);
    for (int i = 0; i < em.nkernels; i++) {
        const Kernel *k = &em.kernels[i];
        if (band[k->out->id])
            band_write_launch(&em, k->out, op[k->out->id], "    ");
        else
            cuda_write_launch(&em, k, "    ");
    }
    Sb launches = em.out;
    memset(&em.out, 0, sizeof em.out);
    emit_write_helpers(&em);        /* emit.c's own, for both compilers */
    Sb helpers = em.out;
    memset(&em.out, 0, sizeof em.out);
    int warps = 0, blocks = 0, v4s = 0;
    for (int i = 0; i < em.nkernels; i++)
        v4s += em.kernels[i].vbody != NULL && !band[em.kernels[i].out->id];
    for (const char *s = sb_str(&kernels); (s = strstr(s, "one warp per element")); s++)
        warps++;
    for (const char *s = sb_str(&kernels); (s = strstr(s, "one block per element")); s++)
        blocks++;

    /* the emulation, but for programs too big to run here */
    bool big = strstr(name, "_big") != NULL;
    Sb src = {0};
    sb_puts(&src, shim);
    sb_puts(&src, sb_str(&helpers));
    sb_puts(&src, sb_str(&kernels));
    sb_puts(&src, "static int ein_run(void *ctx, void *const *p, int stream)\n{\n    int rc;\n");
    emu_launches(&src, sb_str(&launches));
    sb_printf(&src, "    return 0;\n}\n"
              "int main(int argc, char **argv)\n{\n"
              "    static const long count[%d] = {", p->ntensors);
    for (int i = 0; i < p->ntensors; i++)
        sb_printf(&src, "%s%ld", i ? ", " : "", (long)em.count[i]);
    sb_printf(&src, "};\n"
              "    void *p[%d];\n"
              "    FILE *f = fopen(argv[1], \"rb\");\n"
              "    for (int i = 0; i < %d; i++) {\n"
              "        p[i] = calloc((size_t)count[i] + 1, 4);\n"
              "        if (fread(p[i], 4, (size_t)count[i], f) != (size_t)count[i]) return 2;\n"
              "    }\n"
              "    fclose(f);\n"
              "    if (ein_run(0, p, 0) != 0) return 2;\n"
              "    f = fopen(argv[2], \"wb\");\n"
              "    for (int i = 0; i < %d; i++)\n"
              "        fwrite(p[i], 4, (size_t)count[i], f);\n"
              "    return fclose(f) != 0 || argc != 3;\n}\n",
              p->ntensors, p->ntensors, p->ntensors);
    char path[512], cmd[2048];
    snprintf(path, sizeof path, "%s/%s.cpp", workdir, name);
    put_file(path, sb_str(&src));

    /* inputs; the interpreter's reference */
    seed(name);
    double **ref = calloc((size_t)p->ntensors, sizeof *ref);
    snprintf(path, sizeof path, "%s/%s.in", workdir, name);
    FILE *fp = big ? NULL : fopen(path, "wb");
    for (int i = 0; i < p->ntensors && fp; i++) {
        const IrTensor *t = p->tensors[i];
        ref[i] = calloc((size_t)em.count[i] + 1, sizeof **ref);
        for (int64_t e = 0; e < em.count[i]; e++) {
            float x = t->kind == IT_STAGE ? 0.0f : uniform();
            ref[i][e] = x;
            fwrite(&x, 4, 1, fp);
        }
    }
    if (fp) {
        fclose(fp);
        ir_eval_program(p, ref);
    }

    snprintf(cmd, sizeof cmd,
             "cd %s && g++ -std=c++17 -O1 -w -I'%s' %s.cpp -o %s.emu > %s.log 2>&1 && "
             /* a safety net against a hang, not a judgement on speed:
              * CPU time, many times what an emulation takes */
             "(ulimit -t 600; exec ./%s.emu %s.in %s.out) >> %s.log 2>&1", workdir, emu_dir,
             name, name, name, name, name, name, name);
    int rc = big ? 0 : run(cmd);
    CHECK(rc == 0, "%s: the emulation failed (%d), see %s/%s.log", name, rc, workdir, name);
    bool ok = rc == 0;
    if (ok && !big) {
        snprintf(path, sizeof path, "%s/%s.out", workdir, name);
        fp = fopen(path, "rb");
        for (int i = 0; i < p->ntensors && fp; i++) {
            const IrTensor *t = p->tensors[i];
            double err = 0, mag = 0;
            int64_t worst = 0;
            bool nan_bad = false;
            for (int64_t e = 0; e < em.count[i]; e++) {
                float x;
                if (fread(&x, 4, 1, fp) != 1) {
                    nan_bad = true;
                    break;
                }
                double r = ref[i][e];
                if (isnan(r) || isnan(x)) {
                    nan_bad |= isnan(r) != isnan(x);
                    continue;
                }
                if (fabs(r) > mag)
                    mag = fabs(r);
                if (fabs(x - r) > err) {
                    err = fabs(x - r);
                    worst = e;
                }
            }
            if (t->kind != IT_STAGE)
                continue;
            double rel = err / (mag > 1e-30 ? mag : 1e-30);
            CHECK(!nan_bad && rel <= 1e-5, "%s: tensor '%s' (%s) differs: relative error "
                  "%.3g at element %ld, NaN mismatch %d", name, t->name,
                  band[t->id] ? "band kernel" : "generic kernel", rel, (long)worst, nan_bad);
            ok &= !nan_bad && rel <= 1e-5;
        }
        if (fp)
            fclose(fp);
    }

    /* the same kernels through nvcc: no diagnostic at all */
    if (nvcc && with_nvcc) {
        Sb cu = {0};
        sb_puts(&cu, "#include <stdint.h>\n#include <math.h>\n\n");
        sb_puts(&cu, sb_str(&helpers));
        sb_puts(&cu, sb_str(&kernels));
        sb_puts(&cu, "static int ein_launched(void *ctx, const char *name)\n{\n"
                     "    (void)ctx;\n    (void)name;\n"
                     "    return cudaGetLastError() != cudaSuccess;\n}\n\n"
                     "int ein_run(void *ctx, void *const *p, cudaStream_t stream)\n{\n"
                     "    int rc;\n");
        sb_puts(&cu, sb_str(&launches));
        sb_puts(&cu, "    return 0;\n}\n");
        snprintf(path, sizeof path, "%s/%s.cu", workdir, name);
        put_file(path, sb_str(&cu));
        snprintf(cmd, sizeof cmd, "cd %s && '%s' -O3 -arch=sm_90 -c %s.cu -o %s.o "
                 "> %s.nvcc 2>&1", workdir, nvcc, name, name, name);
        rc = run(cmd);
        snprintf(path, sizeof path, "%s/%s.nvcc", workdir, name);
        char *log = slurp(path);
        CHECK(rc == 0 && log && !*log, "%s: nvcc failed (%d):\n%s", name, rc, log ? log : "");
        ok &= rc == 0 && log && !*log;
        free(log);
        sb_free(&cu);
    }
    printf("%s %s: %d kernels (%d band, %d warp, %d block, %d four a thread)\n",
           ok ? "PASS" : "FAIL", name, em.nkernels, bands, warps, blocks, v4s);
    passed += ok;
    nband += bands;
    nwarp += warps;
    nblock += blocks;
    nv4 += v4s;
    for (int i = 0; i < p->ntensors; i++)
        free(ref[i]);
    free(ref);
    sb_free(&src);
    sb_free(&helpers);
    sb_free(&kernels);
    sb_free(&launches);
    arena_free(em.arena);
}

static const IrProgram *lower(Arena *a, const char *name, const char *path, const char *text)
{
    diag_reset();
    ParseOptions popt = {0};
    Ast *ast = text ? parse_buffer(name, text, strlen(text), &popt, a)
                    : parse_file(path, &popt, a);
    if (!ast || diag_error_count())
        return NULL;
    SemaOptions sopt = {.model_name = name};
    CProgram *cp = sema_check(ast, &sopt, a);
    if (!cp || diag_error_count())
        return NULL;
    IrProgram *p = ir_lower(ir_ctx_new(a), cp);
    return p && !diag_error_count() ? p : NULL;
}

static bool wanted(int argc, char **argv, const char *name)
{
    if (argc < 2)
        return true;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], name) == 0)
            return true;
    return false;
}

/* A band whose output is larger than its loops, and 16-bit bands, are
 * left to the generic kernel. */
static void test_unsupported(void)
{
    static const char *const texts[] = {
        "const L = 20, D = 8\n"
        "input q : f32[1, L, D], k : f32[1, L, D]\n"
        "s[b, i, j] : [1, L + 1, 5] += q[b, i, d] * k[b, i + j - 2, d]\n"
        "output s\n",
        "const L = 20, D = 8\n"
        "input q : f16[1, L, D], k : f32[1, L, D]\n"
        "s[b, i, j] : [1, L, 5] += q[b, i, d] * k[b, i + j - 2, d]\n"
        "output s\n",
        "const L = 20, D = 8\n"
        "input q : f32[1, L, D], k : f32[1, L, D]\n"
        "s[b, i, j] : [1, L, 5] += q[b, i, d] * k[b, i + j - 2, d]\n"
        "output s\n",
    };
    for (int c = 0; c < 3; c++) {
        Arena *a = arena_new();
        const IrProgram *p = lower(a, "unsupported", NULL, texts[c]);
        CHECK(p, "unsupported case %d does not compile", c);
        const IrTensor *t = p ? p->tensors[p->ntensors - 1] : NULL;
        OpMatch m;
        bool is_band = t && match_stage(t->stage, &m) && m.kind == OPK_G2BMM;
        CHECK(c == 0 || is_band, "case %d: no G2BMM match", c);
        bool tiled = is_band && cost_impl(&(CostModel){.target = TARGET_CUDA}, t, t->stage, &m) == IMPL_CUDA_BAND;
        if (is_band)
            CHECK(tiled == (c == 2), "case %d: the tiled band kernel is %staken", c,
                  tiled ? "" : "not ");
        arena_free(a);
    }
}

int main(int argc, char **argv)
{
    const char *srcdir = getenv("top_srcdir");
    nvcc = getenv("NVCC");
    if (nvcc && !*nvcc)
        nvcc = NULL;
    if (run("g++ --version > /dev/null 2>&1") != 0) {
        printf("no g++: skipped\n");
        return 77;
    }
    /* absolute: the compiler runs in the work folder */
    char *abs_src = realpath(srcdir ? srcdir : ".", NULL);
    snprintf(emu_dir, sizeof emu_dir, "%s/tests/hostcuda", abs_src ? abs_src : ".");
    free(abs_src);
    snprintf(workdir, sizeof workdir, "/tmp/test_kern.XXXXXX");
    if (!mkdtemp(workdir))
        return 99;
    if (argc < 2)
        test_unsupported();
    for (size_t i = 0; i < sizeof inline_cases / sizeof *inline_cases; i++) {
        if (!wanted(argc, argv, inline_cases[i].name))
            continue;
        Arena *a = arena_new();
        const IrProgram *p = lower(a, inline_cases[i].name, NULL, inline_cases[i].text);
        CHECK(p, "%s does not compile", inline_cases[i].name);
        if (p)
            run_program(inline_cases[i].name, p, true);
        arena_free(a);
    }
    char dir[512];
    snprintf(dir, sizeof dir, "%s/tests/num", srcdir ? srcdir : ".");
    DIR *d = opendir(dir);
    struct dirent *de;
    char **names = NULL;
    size_t n = 0;
    while (d && (de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l > 4 && strcmp(de->d_name + l - 4, ".ein") == 0) {
            names = realloc(names, sizeof *names * (n + 1));
            names[n++] = strndup(de->d_name, l - 4);
        }
    }
    if (d)
        closedir(d);
    /* readdir's order is the file system's: sort for a stable log */
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            char *t = names[j];
            names[j] = names[j - 1];
            names[j - 1] = t;
        }
    for (size_t i = 0; i < n; i++) {
        if (wanted(argc, argv, names[i])) {
            char path[1024];
            snprintf(path, sizeof path, "%s/%s.ein", dir, names[i]);
            Arena *a = arena_new();
            const IrProgram *p = lower(a, names[i], path, NULL);
            if (p) {
                run_program(names[i], p, false);
            } else {
                printf("SKIP %s: does not compile alone (needs -D or -I)\n", names[i]);
                skipped++;
            }
            arena_free(a);
        }
        free(names[i]);
    }
    free(names);
    printf("%d passed, %d skipped, %d failed; %d band, %d warp, %d block, %d four-a-thread "
           "kernels\n", passed, skipped, failures, nband, nwarp, nblock, nv4);
    if (argc < 2) {
        CHECK(nband >= 8, "only %d band kernels ran", nband);
        CHECK(nwarp >= 8 && nblock >= 3, "only %d warp and %d block kernels ran", nwarp,
              nblock);
        CHECK(nv4 >= 4, "only %d kernels of four elements a thread ran", nv4);
    }
    if (!getenv("KEEP")) {
        char cmd[512];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", workdir);
        run(cmd);
    } else {
        printf("work folder: %s\n", workdir);
    }
    return failures ? 1 : 0;
}
