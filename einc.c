/* einc.c - the command-line driver: options, the pipeline
 *   parse -> sema -> lower -> (print IR | emit C/CUDA | Graphviz)
 * make dependencies, and all-or-nothing output: the result is built in
 * memory and written (through a temporary file and a rename) only when no
 * error was reported, so a failed run never leaves a partial or clobbered
 * file behind.  Exit status: 0 success, 1 errors in the input, 2 usage
 * errors, 3 internal errors. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lang/lang.h"
#include "lang/sb.h"
#include "parser/parser.h"
#include "sema/sema.h"
#include "derive/ir/ir.h"
#include "derive/search/derive.h"
#include "derive/search/tune.h"
#include "emit/emit.h"
#ifdef HAVE_ONNX
#include "onnx/onnx.h"
#endif

typedef enum {
    EMIT_DEFAULT, EMIT_IR, EMIT_C, EMIT_CUDA, EMIT_DOT, EMIT_PLAN, EMIT_PLAN_JSON,
    EMIT_EXPLAIN, EMIT_DOT_DERIVATION, EMIT_TUNER,
} EmitKind;

static const struct { const char *name; EmitKind kind; const char *ext; } emit_kinds[] = {
    {"tuner", EMIT_TUNER, ".cu"},     /* before cuda: -o x.cu means cuda */
    {"ir", EMIT_IR, ".ir"},
    {"c", EMIT_C, ".c"},
    {"cuda", EMIT_CUDA, ".cu"},
    {"dot", EMIT_DOT, ".dot"},
    {"plan", EMIT_PLAN, ".plan"},
    {"plan-json", EMIT_PLAN_JSON, ".json"},
};
#define NKINDS (sizeof emit_kinds / sizeof *emit_kinds)

typedef struct Options {
    const char *input;
    const char *output;             /* -o; NULL: derived from the input */
    EmitKind emit;
    const char *target;             /* --target; NULL: from the output kind */
    bool main;
    bool shared;                    /* --shared */
    bool sleef;                     /* --sleef, --no-sleef */
    bool keep;                      /* --keep-intermediates */
    const char *tune_db;            /* --tune-db */
    int verify;                     /* 0 no, 1 chosen plans, 2 every candidate */
    bool device_given;              /* --device: else the target's own (resolve_target) */
    DeriveOptions derive;
    VEC(const char *) defines;
    VEC(const char *) includes;
    bool dep_only;                  /* -M */
    bool dep_side;                  /* -MD */
    bool dep_phony;                 /* -MP */
    const char *dep_file;           /* -MF */
    VEC(const char *) dep_targets;  /* -MT */
    bool from_onnx;                 /* --from=onnx */
    const char *weights_out;        /* --weights-out */
    const char *bind;               /* --bind */
    bool emit_given;                /* --emit, --target, --dot, --explain */
} Options;

static Arena *arena;

#ifdef HAVE_DNNL
#define DNNL_DEFAULT "--dnnl (configure found oneDNN)"
#else
#define DNNL_DEFAULT "--no-dnnl (configure found no oneDNN)"
#endif
#ifdef HAVE_SLEEF
#define SLEEF_DEFAULT "--sleef (configure found SLEEF)"
#else
#define SLEEF_DEFAULT "--no-sleef (configure found no SLEEF)"
#endif

static void usage(FILE *fp)
{
    fputs(
"Usage: einc [OPTION]... FILE\n"
"Compile a tensor program written in the ein language (see ein(5)).\n"
"\n"
"Output:\n"
"  -o FILE, --output=FILE  write the output to FILE ('-' for standard\n"
"                        output); default: the input's stem with the\n"
"                        kind's extension\n"
"      --emit=KIND     what to write: ir (the lowered program as text),\n"
"                        c, cuda, dot, plan (the chosen operators),\n"
"                        plan-json (every candidate, as JSON), tuner (a\n"
"                        CUDA program that times every operator of every\n"
"                        candidate and writes a --tune-db file); default:\n"
"                        from -o's extension (.ir .c .cu .dot .plan\n"
"                        .json), else --target's kind, else cuda\n"
"      --target=T      the target the plan is made for: c (the C file:\n"
"                        CBLAS) or cuda (the C+CUDA file: cuBLAS, cuDNN);\n"
"                        without --emit or an extension of -o, the output\n"
"                        kind too; default: that of the output kind, and\n"
"                        for plan, plan-json, dot and explain c with\n"
"                        --device=cpu, else cuda\n"
"      --dot           same as --emit=dot (--dot=program)\n"
"      --main          add a main() harness to C and CUDA output\n"
"      --shared        make line 1 of C and CUDA output build a shared\n"
"                        library (FILE.so) rather than an object\n"
"      --sleef, --no-sleef  C output: the vectorized loops' exp from SLEEF\n"
"                        (its file then links -lsleef), or from glibc's\n"
"                        libmvec as their other functions; default:\n"
"                        " SLEEF_DEFAULT "\n"
"      --keep-intermediates  C and CUDA output: every computed tensor keeps\n"
"                        a buffer of its own, which model_get_tensor reads\n"
"                        after a run; default: the intermediates share one\n"
"                        arena where their lives in a run do not overlap and\n"
"                        hold no value after it (--emit=plan's last line)\n"
"      --explain       write each chosen derivation step by step\n"
"                        (to standard output unless -o is given)\n"
"      --dot=derivation  write the search trees as Graphviz (standard\n"
"                        output unless -o is given)\n"
"\n"
"Derivation:\n"
"  -O0                 no derivation: every statement is one operator\n"
"                        (a library call where one matches, else a kernel)\n"
"  -O1                 fit and match operators and fuse kernels, with the\n"
"                        guided search phase only\n"
"  -O2, -O             search for cheaper derivations (the default)\n"
"      --search-depth=N   depth of the explicit search phase (default 1)\n"
"      --search-budget=MS stop deriving (search and fusion) once the compile\n"
"                        has used MS ms of CPU time (default 60000)\n"
"  -j N, --jobs=N      search with N threads (default: one per processor,\n"
"                        at most 64); the output is the same whatever N\n"
"      --device=NAME   cost model of h200, a100, v100 or cpu (default: cpu\n"
"                        for C output, h200 for the rest)\n"
"      --precision=P   arithmetic of GEMMs and convolutions: fp32 (the\n"
"                        default; TF32 off), tf32, fp16 or bf16 (operands\n"
"                        rounded to that format, f32 accumulation)\n"
"      --dnnl, --no-dnnl  C output: run convolutions on oneDNN (its file\n"
"                        then links -ldnnl), or with im2col and CBLAS;\n"
"                        default: " DNNL_DEFAULT "\n"
"      --tune-db=FILE  use the operator times measured in FILE (by the\n"
"                        program of --emit=tuner) for the operators it holds\n"
"      --verify[=all]  check every chosen derivation (with =all: every\n"
"                        candidate kept) and every fusion with the\n"
"                        interpreter on random data before writing anything\n"
"\n"
"Input:\n"
"      --from=FORMAT   what FILE is: ein (the default) or onnx, an ONNX\n"
"                        model to translate into an ein program (-o,\n"
"                        default FILE's stem with .ein) and its weights\n"
"                        (a safetensors file under the ONNX names)\n"
"      --weights-out=FILE  with --from=onnx: the weights file (default:\n"
"                        the output's name with .safetensors)\n"
"      --bind=FILE     with --from=onnx: the graph inputs found in FILE (a\n"
"                        safetensors file, by ONNX name) become constants\n"
"  -D NAME=VALUE, --define=NAME=VALUE  override the integer constant NAME\n"
"  -I DIR, --include=DIR  search DIR for imported files (after the\n"
"                        importing file's folder; before the standard\n"
"                        library for 'import <nn.ein>')\n"
"\n"
"Make dependencies (as gcc writes them):\n"
"  -M                  write a rule for the output's dependencies instead\n"
"                        of compiling\n"
"  -MD                 compile and also write the rule to -MF's file or\n"
"                        the output's name with '.d' for its extension\n"
"  -MF FILE            write the rule to FILE\n"
"  -MT TARGET          name the rule's target (repeatable)\n"
"  -MP                 add a phony rule for each imported file and the\n"
"                        --tune-db file\n"
"\n"
"Diagnostics:\n"
"  -W NAME, -WNAME     enable warning NAME (unused, sum-invariant, padded-max)\n"
"  -Wno-NAME           disable warning NAME\n"
"  -Wall, -Wno-all     enable, disable every warning\n"
"  -Werror, -Wno-error  treat warnings as errors, or not (the default)\n"
"  -w                  disable every warning\n"
"      --max-errors=N  stop after N errors (0: no limit; default 20)\n"
"\n"
"  -h, --help          show this help and exit\n"
"  -V, --version       show the version and exit\n"
"\n"
"Exit status: 0 success, 1 errors in the input, 2 usage errors,\n"
"3 internal errors.\n", fp);
}

static _Noreturn void usage_error(const char *fmt, const char *arg)
{
    fputs("einc: error: ", stderr);
    fprintf(stderr, fmt, arg);
    fputs("\nTry 'einc --help' for more information.\n", stderr);
    exit(2);
}

static bool has_suffix(const char *s, const char *suf)
{
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && strcmp(s + n - m, suf) == 0;
}

/* A decimal option value in [lo, hi]. */
static long number(const char *val, long lo, long hi, const char *opt)
{
    char *end;
    long n = strtol(val, &end, 10);
    if (*val == 0 || *end || n < lo || n > hi) {
        fprintf(stderr, "einc: error: invalid %s value '%s' (%ld to %ld)\n"
                "Try 'einc --help' for more information.\n", opt, val, lo, hi);
        exit(2);
    }
    return n;
}

/* -D NAME=VALUE: a malformed one is a usage error (exit 2) here; whether
 * NAME is a constant of the program is sema's to say. */
static void check_define(const char *def)
{
    const char *eq = strchr(def, '=');
    bool ident = eq && eq > def && (*def == '_' || ((*def | 32) >= 'a' && (*def | 32) <= 'z'));
    for (const char *p = def; ident && p < eq; p++)
        ident = *p == '_' || (*p >= '0' && *p <= '9') || ((*p | 32) >= 'a' && (*p | 32) <= 'z');
    if (!ident)
        usage_error("invalid -D '%s': expected NAME=VALUE, e.g. -D N=16", def);
    char *end;
    errno = 0;
    (void)strtoll(eq + 1, &end, 10);
    if (eq[1] == 0 || *end || errno == ERANGE || eq[1] == ' ' || eq[1] == '\t')
        usage_error("invalid -D '%s': the value must be an integer", def);
}

static void set_emit(Options *o, const char *name, const char *opt)
{
    for (size_t i = 0; i < NKINDS; i++) {
        if (strcmp(emit_kinds[i].name, name) == 0) {
            o->emit = emit_kinds[i].kind;
            return;
        }
    }
    usage_error(opt, name);
}

static void set_warning(const char *arg)
{
    if (strcmp(arg, "error") == 0) {
        diag_set_werror(true);
    } else if (strcmp(arg, "no-error") == 0) {
        diag_set_werror(false);
    } else if (strcmp(arg, "all") == 0 || strcmp(arg, "no-all") == 0) {
        bool on = arg[0] != 'n';
        for (int i = 0; diag_warning_names[i]; i++)
            diag_set_warning(diag_warning_names[i], on);
    } else {
        bool on = strncmp(arg, "no-", 3) != 0;
        if (!diag_set_warning(on ? arg : arg + 3, on))
            usage_error("unknown warning option '-W%s'", arg);
    }
}

/* Long options follow getopt_long's rules: "--name=value" or "--name
 * value", and any unambiguous prefix of a name. */
static const struct { const char *name; int has_arg; int id; } long_opts[] = {
    {"emit", 1, 'e'}, {"target", 1, 't'}, {"dot", 2, 'g'}, {"main", 0, 'm'},
    {"max-errors", 1, 'x'}, {"help", 0, 'h'}, {"version", 0, 'V'},
    {"output", 1, 'o'}, {"define", 1, 'D'}, {"include", 1, 'I'},
    {"explain", 0, 'X'}, {"search-depth", 1, 'S'}, {"search-budget", 1, 'B'},
    {"jobs", 1, 'j'},
    {"device", 1, 'E'}, {"verify", 2, 'v'}, {"precision", 1, 'P'},
    {"tune-db", 1, 'T'}, {"from", 1, 'F'}, {"shared", 0, 'L'}, {"bind", 1, 'Y'}, {"weights-out", 1, 'U'},
    {"dnnl", 0, 'N'}, {"no-dnnl", 0, 'n'}, {"sleef", 0, 'Q'}, {"no-sleef", 0, 'q'},
    {"keep-intermediates", 0, 'K'},
};
#define NLONG (sizeof long_opts / sizeof *long_opts)

static int match_long(const char *arg, const char **value)
{
    const char *eq = strchr(arg, '=');
    size_t n = eq ? (size_t)(eq - arg) : strlen(arg);
    int found = -1, matches = 0;
    for (size_t i = 0; i < NLONG; i++) {
        if (strncmp(long_opts[i].name, arg, n) != 0)
            continue;
        if (strlen(long_opts[i].name) == n) {     /* exact match wins */
            found = (int)i;
            matches = 1;
            break;
        }
        found = (int)i;
        matches++;
    }
    if (matches == 0)
        usage_error("unrecognized option '--%s'", arg);
    if (matches > 1)
        usage_error("option '--%s' is ambiguous", arg);
    *value = eq ? eq + 1 : NULL;
    if (eq && long_opts[found].has_arg == 0)
        usage_error("option '--%s' doesn't allow an argument", arg);
    return found;
}

static void handle(Options *o, int id, const char *val, const char *spelled)
{
    switch (id) {
    case 'o':
        if (o->output)
            usage_error("more than one output file: '%s'", val);
        o->output = val;
        break;
    case 'D':
        check_define(val);
        vec_push(arena, &o->defines, val);
        break;
    case 'I':
        vec_push(arena, &o->includes, val);
        break;
    case 'e':
        o->emit_given = true;
        set_emit(o, val, "unknown output kind '%s' (ir, c, cuda, dot, plan, plan-json, tuner)");
        break;
    case 't':
        o->emit_given = true;
        if (strcmp(val, "c") != 0 && strcmp(val, "cuda") != 0)
            usage_error("unknown target '%s' (c, cuda)", val);
        o->target = val;
        break;
    case 'g':
        o->emit_given = true;
        if (val && strcmp(val, "derivation") != 0 && strcmp(val, "program") != 0)
            usage_error("unknown --dot kind '%s' (program, derivation)", val);
        o->emit = val && strcmp(val, "derivation") == 0 ? EMIT_DOT_DERIVATION : EMIT_DOT;
        break;
    case 'X': o->emit = EMIT_EXPLAIN; o->emit_given = true; break;
    case 'v':
        if (val && strcmp(val, "all") != 0)
            usage_error("unknown --verify kind '%s' (all)", val);
        o->verify = val ? 2 : 1;
        break;
    case 'S': o->derive.search.depth = (int)number(val, 0, 12, "--search-depth"); break;
    case 'B': o->derive.search.budget_ms = (double)number(val, 1, 86400000, "--search-budget"); break;
    case 'j': o->derive.jobs = (int)number(val, 1, 1024, "--jobs"); break;
    case 'E':
        if (!(o->derive.search.dev = cost_device(val)))
            usage_error("unknown device '%s' (h200, a100, v100, cpu)", val);
        o->device_given = true;
        break;
    case 'T': o->tune_db = val; break;
    case 'F':
        if (strcmp(val, "onnx") != 0 && strcmp(val, "ein") != 0)
            usage_error("unknown input format '%s' (ein, onnx)", val);
        o->from_onnx = strcmp(val, "onnx") == 0;
        break;
    case 'U': o->weights_out = val; break;
    case 'Y': o->bind = val; break;
    case 'P':
        if (!cost_precision_parse(val, &o->derive.search.precision))
            usage_error("unknown precision '%s' (fp32, tf32, fp16, bf16)", val);
        break;
    case 'm': o->main = true; break;
    case 'L': o->shared = true; break;
    case 'N': o->derive.search.dnnl = true; break;
    case 'n': o->derive.search.dnnl = false; break;
    case 'Q': o->sleef = true; break;
    case 'q': o->sleef = false; break;
    case 'K': o->keep = true; break;
    case 'x':
        diag_set_max_errors((int)number(val, 0, 1000000, "--max-errors"));
        break;
    case 'h': usage(stdout); exit(0);
    case 'V':
        printf("einc %s\n", PACKAGE_VERSION);
        exit(0);
    default:
        usage_error("unrecognized option '%s'", spelled);
    }
}

static void parse_args(Options *o, int argc, char **argv)
{
    bool only_files = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (only_files || a[0] != '-' || strcmp(a, "-") == 0) {
            if (o->input)
                usage_error("more than one input file: '%s'", a);
            o->input = a;
            continue;
        }
        if (strcmp(a, "--") == 0) {
            only_files = true;
            continue;
        }
        if (a[1] == '-') {
            const char *val;
            int k = match_long(a + 2, &val);
            if (long_opts[k].has_arg == 1 && !val) {
                if (i + 1 >= argc)
                    usage_error("option '%s' requires an argument", a);
                val = argv[++i];
            }
            handle(o, long_opts[k].id, val, a);
            continue;
        }
        /* gcc-style multi-letter options first. */
        if (strcmp(a, "-M") == 0) { o->dep_only = true; continue; }
        if (strcmp(a, "-MD") == 0) { o->dep_side = true; continue; }
        if (strcmp(a, "-MP") == 0) { o->dep_phony = true; continue; }
        if (strncmp(a, "-MF", 3) == 0 || strncmp(a, "-MT", 3) == 0) {
            const char *val = a[3] ? a + 3 : (i + 1 < argc ? argv[++i] : NULL);
            if (!val)
                usage_error("option '%s' requires an argument", a);
            if (a[2] == 'F')
                o->dep_file = val;
            else
                vec_push(arena, &o->dep_targets, val);
            continue;
        }
        if (strcmp(a, "-O0") == 0 || strcmp(a, "-O1") == 0 || strcmp(a, "-O2") == 0 ||
            strcmp(a, "-O") == 0) {
            o->derive.level = a[2] ? a[2] - '0' : 2;
            continue;
        }
        if (strcmp(a, "-w") == 0) {
            set_warning("no-all");
            continue;
        }
        if (strchr("oDIWj", a[1])) {
            const char *val = a[2] ? a + 2 : (i + 1 < argc ? argv[++i] : NULL);
            if (!val)
                usage_error("option '%s' requires an argument", a);
            if (a[1] == 'W')
                set_warning(val);
            else
                handle(o, a[1], val, a);
            continue;
        }
        if (strcmp(a, "-h") == 0 || strcmp(a, "-V") == 0) {
            handle(o, a[1], NULL, a);
            continue;
        }
        usage_error("unrecognized option '%s'", a);
    }
    if (!o->input)
        usage_error("%s", "no input file");
}

/* The input's file name without folder and extension ("stdin" for -). */
static char *stem(const char *path)
{
    if (strcmp(path, "-") == 0)
        path = "stdin";
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    char *s = arena_strdup(arena, base);
    char *dot = strrchr(s, '.');
    if (dot && dot != s)
        *dot = 0;
    return s;
}

/* A C identifier from the stem: the default model name. */
static char *model_name(const char *path)
{
    char *s = stem(path);
    for (char *p = s; *p; p++)
        if (!(*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
              (*p >= '0' && *p <= '9')))
            *p = '_';
    if (*s == 0 || (*s >= '0' && *s <= '9'))
        s = arena_printf(arena, "m_%s", s);
    return s;
}

/* The target the plan is made for (see --help). */
static void resolve_target(Options *o)
{
    bool c = o->target ? strcmp(o->target, "c") == 0 : o->emit == EMIT_C;
    if (!o->target && o->emit != EMIT_C && o->emit != EMIT_CUDA && o->emit != EMIT_TUNER)
        c = strcmp(o->derive.search.dev->name, "cpu") == 0;
    if (o->target && ((o->emit == EMIT_C && !c) || ((o->emit == EMIT_CUDA ||
                                                     o->emit == EMIT_TUNER) && c)))
        usage_error("--target=%s does not write that output kind", o->target);
    o->derive.search.target = c ? TARGET_C : TARGET_CUDA;
    /* C output runs on a CPU: priced for one unless --device says else */
    if (c && !o->device_given)
        o->derive.search.dev = cost_device("cpu");
}

static void resolve_outputs(Options *o)
{
    /* the output's extension says what to write, else --target */
    if (o->emit == EMIT_DEFAULT && o->output && strcmp(o->output, "-") != 0)
        for (size_t i = 0; i < NKINDS; i++)
            if (has_suffix(o->output, emit_kinds[i].ext))
                o->emit = emit_kinds[i].kind;
    if (o->emit == EMIT_DEFAULT && o->target)
        set_emit(o, o->target, "%s");
    if (o->emit == EMIT_DEFAULT && o->output && strcmp(o->output, "-") != 0 &&
        strcmp(o->output, "/dev/null") != 0)
        usage_error("cannot tell what to write from the name '%s'; use --emit=KIND",
                    o->output);
    if (o->emit == EMIT_DEFAULT)
        o->emit = EMIT_CUDA;
    /* Explanations and search trees are for reading: stdout by default. */
    if ((o->emit == EMIT_EXPLAIN || o->emit == EMIT_DOT_DERIVATION) && !o->output)
        o->output = "-";
    if (!o->output) {
        const char *ext = "";
        for (size_t i = 0; i < NKINDS; i++)
            if (emit_kinds[i].kind == o->emit)
                ext = emit_kinds[i].ext;
        o->output = arena_printf(arena, "%s%s", stem(o->input), ext);
    }
    if (o->main && o->emit != EMIT_C && o->emit != EMIT_CUDA)
        usage_error("%s", "--main needs C or CUDA output");
    if (o->shared && (o->main || (o->emit != EMIT_C && o->emit != EMIT_CUDA)))
        usage_error("%s", "--shared needs C or CUDA output without --main");
    resolve_target(o);
}

/* ---- writing files all-or-nothing ---------------------------------------- */

/* What a name stands for, to tell whether two names are one file: the
 * device and inode of the file it resolves to, or, for a name that does
 * not exist yet, its folder's device and inode and its last component.
 * Names are compared this way, never as strings, so that "./a.ein", a
 * symbolic link to it and a hard link all count as "a.ein". */
typedef struct FileId {
    int state;                      /* 0 unknown, 1 exists, 2 would be created */
    bool regular;                   /* an existing regular file */
    dev_t dev;
    ino_t ino;
    const char *base;               /* state 2: the last component */
} FileId;

static FileId file_id(const char *path)
{
    FileId id = {0};
    struct stat st;
    if (strcmp(path, "-") == 0)
        return id;
    if (stat(path, &st) == 0) {
        id.state = 1;
        id.regular = S_ISREG(st.st_mode);
        id.dev = st.st_dev;
        id.ino = st.st_ino;
        return id;
    }
    const char *slash = strrchr(path, '/');
    const char *dir = slash ? arena_printf(arena, "%.*s", (int)(slash - path + 1), path) : ".";
    if (stat(dir, &st) == 0) {
        id.state = 2;
        id.dev = st.st_dev;
        id.ino = st.st_ino;
        id.base = slash ? slash + 1 : path;
    }
    return id;
}

static bool same_file(FileId a, FileId b)
{
    if (a.state == 0 || a.state != b.state)
        return false;
    return a.dev == b.dev && a.ino == b.ino &&
           (a.state == 1 || strcmp(a.base, b.base) == 0);
}

/* The file einc read from: for the standard input, what descriptor 0 is. */
static FileId input_id(const char *path)
{
    if (strcmp(path, "<stdin>") != 0)
        return file_id(path);
    FileId id = {0};
    struct stat st;
    if (fstat(0, &st) == 0) {
        id.state = 1;
        id.regular = S_ISREG(st.st_mode);
        id.dev = st.st_dev;
        id.ino = st.st_ino;
    }
    return id;
}

/* gcc's rule: refuse to write over a file that was read ("input file is
 * the same as output file"), and the output and the rule file may not be
 * one file.  Writing to a device or a pipe (/dev/null, /dev/stdout) loses
 * nothing, so only regular files, and names that would be created, count
 * as outputs here. */
static bool outputs_are_safe(const Options *o, const char *dep)
{
    struct { const char *path, *what; FileId id; } out[2];
    int nout = 0;
    if (!o->dep_only && strcmp(o->output, "-") != 0)
        out[nout].path = o->output, out[nout++].what = "output file";
    if (dep && strcmp(dep, "-") != 0)
        out[nout].path = dep, out[nout++].what = "dependency file";
    for (int i = 0; i < nout; i++)
        out[i].id = file_id(out[i].path);
    bool ok = true;
    for (int i = 0; i < nout; i++) {
        if (out[i].id.state == 1 && !out[i].id.regular)
            continue;
        for (int k = 0; k <= src_count(); k++) {
            const char *in = k < src_count() ? src_get(k)->path : o->tune_db;
            if (!in)
                continue;
            if (same_file(input_id(in), out[i].id)) {
                fprintf(stderr, "einc: error: input file '%s' is the same as the %s '%s'\n",
                        in, out[i].what, out[i].path);
                ok = false;
            }
        }
    }
    if (nout == 2 && !(out[0].id.state == 1 && !out[0].id.regular) &&
        same_file(out[0].id, out[1].id)) {
        fprintf(stderr, "einc: error: the output file '%s' is the same as the "
                "dependency file '%s'\n", out[0].path, out[1].path);
        ok = false;
    }
    return ok;
}

/* Write `len` bytes to `path` ("-": stdout).  A regular file (or a new one)
 * is written through a temporary file in the same folder and renamed, so
 * readers never see a partial file; other files (/dev/null, a pipe) are
 * written in place.  A symbolic link is followed: the file it names is
 * replaced, the link stays. */
static bool write_all(const char *path, const char *data, size_t len)
{
    if (strcmp(path, "-") == 0) {
        if (fwrite(data, 1, len, stdout) != len || fflush(stdout) != 0) {
            fprintf(stderr, "einc: error: cannot write to standard output: %s\n",
                    strerror(errno));
            return false;
        }
        return true;
    }
    struct stat st;
    bool exists = stat(path, &st) == 0;
    struct stat lst;
    bool dangling = !exists && lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode);
    if ((exists && !S_ISREG(st.st_mode)) || dangling) {
        /* In place; through a dangling link this creates its target, as
         * gcc does.  O_NONBLOCK: open(2) of a FIFO that no one reads would
         * block forever; it fails with ENXIO instead, and is refused. */
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NONBLOCK | O_CLOEXEC, 0666);
        if (fd < 0 && errno == ENXIO) {
            fprintf(stderr, "einc: error: cannot write '%s': it is %s that no "
                    "process reads\n", path, src_file_kind(st.st_mode));
            return false;
        }
        if (fd >= 0)
            fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
        FILE *fp = fd >= 0 ? fdopen(fd, "wb") : NULL;
        if (fd >= 0 && !fp)
            close(fd);
        bool ok = fp && fwrite(data, 1, len, fp) == len;
        if (fp && fclose(fp) != 0)
            ok = false;
        if (!ok)
            fprintf(stderr, "einc: error: cannot write '%s': %s\n", path,
                    strerror(errno));
        return ok;
    }
    const char *target = path;
    if (exists && lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode)) {
        char *real = realpath(path, NULL);
        if (!real) {
            fprintf(stderr, "einc: error: cannot resolve '%s': %s\n", path,
                    strerror(errno));
            return false;
        }
        target = arena_strdup(arena, real);
        free(real);
    }
    /* The temporary file: the target's name, cut so that the name with
     * its suffix still fits in a folder entry, then ".tmpXXXXXX". */
    const char *slash = strrchr(target, '/');
    const char *base = slash ? slash + 1 : target;
    const char *dir = slash ? arena_printf(arena, "%.*s", (int)(slash - target + 1), target)
                            : "./";
    long name_max = pathconf(dir, _PC_NAME_MAX);
    if (name_max <= 0 || name_max > 4096)
        name_max = 255;
    size_t keep = strlen(base);
    if (keep + 10 > (size_t)name_max)
        keep = (size_t)name_max - 10;
    char *tmp = arena_printf(arena, "%.*s%.*s.tmpXXXXXX", (int)(base - target), target,
                             (int)keep, base);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        fprintf(stderr, "einc: error: cannot create the temporary file '%s' for '%s': %s\n",
                tmp, path, strerror(errno));
        return false;
    }
    mode_t mask = umask(0);
    umask(mask);
    fchmod(fd, exists ? (st.st_mode & 07777) : (0666 & ~mask));
    size_t off = 0;
    while (off < len) {
        ssize_t n = write(fd, data + off, len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        off += (size_t)n;
    }
    int saved = errno;
    if (close(fd) != 0 && off == len)
        saved = errno, off = 0;
    if (off != len) {
        fprintf(stderr, "einc: error: cannot write the temporary file '%s' for '%s': %s\n",
                tmp, path, strerror(saved));
        unlink(tmp);
        return false;
    }
    if (rename(tmp, target) != 0) {
        fprintf(stderr, "einc: error: cannot rename the temporary file '%s' to '%s': %s\n",
                tmp, target, strerror(errno));
        unlink(tmp);
        return false;
    }
    return true;
}

/* ---- make dependencies ---------------------------------------------------- */

/* A name in a make rule, quoted as gcc quotes it: a blank or '#' gets a
 * backslash, and the backslashes before a blank are doubled (make reads
 * 2N+1 backslashes and a blank as N backslashes and the blank); '$' is
 * doubled.  A line break cannot be written in a rule at all. */
static void put_escaped(Sb *b, const char *s)
{
    int slashes = 0;
    for (; *s; s++) {
        if (*s == ' ' || *s == '\t') {
            for (; slashes > 0; slashes--)
                sb_putc(b, '\\');
            sb_putc(b, '\\');
        } else if (*s == '#') {
            sb_putc(b, '\\');
        } else if (*s == '$') {
            sb_putc(b, '$');
        }
        slashes = *s == '\\' ? slashes + 1 : 0;
        sb_putc(b, *s);
    }
}

/* Every name a rule would hold can be written in one: none holds a line
 * break (which would end the rule, and a tab after it begin a recipe). */
static bool dep_names_ok(const Options *o)
{
    bool ok = true;
    int n = o->dep_targets.len ? o->dep_targets.len : 1;
    for (int i = 0; i < n + src_count(); i++) {
        const char *p = i < n ? (o->dep_targets.len ? o->dep_targets.data[i] : o->output)
                              : src_get(i - n)->path;
        if (strpbrk(p, "\n\r")) {
            fputs("einc: error: cannot write a make rule for a file name with a "
                  "line break: '", stderr);
            for (; *p; p++)
                fputs(*p == '\n' ? "\\n" : *p == '\r' ? "\\r" : (char[2]){*p, 0}, stderr);
            fputs("'\n", stderr);
            ok = false;
        }
    }
    return ok;
}

static char *dep_rule(const Options *o, size_t *len)
{
    Sb b = {0};
    int col = 0;
    if (o->dep_targets.len) {
        for (int i = 0; i < o->dep_targets.len; i++) {
            sb_puts(&b, i ? " " : "");
            put_escaped(&b, o->dep_targets.data[i]);
        }
    } else {
        put_escaped(&b, o->output);
    }
    sb_putc(&b, ':');
    col = 1;
    for (int i = 0; i < src_count(); i++) {
        const char *p = src_get(i)->path;
        if (col + strlen(p) > 76) {
            sb_puts(&b, " \\\n");
            col = 0;
        }
        sb_putc(&b, ' ');
        put_escaped(&b, p);
        col += (int)strlen(p) + 1;
    }
    sb_putc(&b, '\n');
    if (o->dep_phony) {
        for (int i = 1; i < src_count(); i++) {
            sb_putc(&b, '\n');
            put_escaped(&b, src_get(i)->path);
            sb_puts(&b, ":\n");
        }
    }
    *len = b.len;
    return b.s;
}

static const char *dep_path(const Options *o)
{
    if (o->dep_file)
        return o->dep_file;
    if (o->dep_only)
        return "-";
    const char *out = o->output;
    if (strcmp(out, "-") == 0)
        return arena_printf(arena, "%s.d", stem(o->input));
    const char *slash = strrchr(out, '/');
    const char *dot = strrchr(out, '.');
    size_t n = dot && (!slash || dot > slash) ? (size_t)(dot - out) : strlen(out);
    return arena_printf(arena, "%.*s.d", (int)n, out);
}

/* ---- the pipeline ---------------------------------------------------------- */

static char *compile(const Options *o, size_t *len)
{
    /* import <nn.ein>: after the -I folders, $EINC_STDLIB (the tests'
     * uninstalled lib/), the installed standard library, or, where that
     * is not installed, the source tree's lib/ of this build (an einc run
     * from its build folder: the programs --from=onnx writes import it) */
    const char *lib = getenv("EINC_STDLIB");
    if (!lib || !*lib)
        lib = access(EINC_LIBDIR "/nn.ein", R_OK) != 0 &&
                      access(EINC_SRCLIB "/nn.ein", R_OK) == 0
                  ? EINC_SRCLIB : EINC_LIBDIR;
    ParseOptions popt = {o->includes.data, o->includes.len, lib};
    Ast *ast = parse_file(o->input, &popt, arena);
    if (!ast || diag_error_count())
        return NULL;
    /* read after the program's files: make dependencies name it last */
    DeriveOptions dopt = o->derive;
    if (o->tune_db &&
        !(dopt.search.tune_db = tune_db_load(arena, o->tune_db, dopt.search.dev->name)))
        return NULL;
    SemaOptions sopt = {o->defines.data, o->defines.len, model_name(o->input)};
    CProgram *cp = sema_check(ast, &sopt, arena);
    if (!cp || diag_error_count())
        return NULL;
    if (o->dep_only) {
        *len = 0;
        return arena_strdup(arena, "");
    }
    IrCtx *cx = ir_ctx_new(arena);
    IrProgram *p = ir_lower(cx, cp);
    if (!p || diag_error_count())
        return NULL;
    Derived *d = NULL;
    if (o->emit != EMIT_IR) {
        dopt.verify = o->verify;
        d = derive_program(cx, p, &dopt);
        if (!o->keep)
            derive_storage(cx, d->plan);
    }

    char *buf = NULL;
    FILE *fp = open_memstream(&buf, len);
    if (!fp) {
        fprintf(stderr, "einc: error: out of memory\n");
        exit(1);
    }
    int rc = 0;
    EmitOptions eo = {
        .main = o->main,
        .shared = o->shared,
        .sleef = o->sleef,
        .out_name = strcmp(o->output, "-") == 0 ? NULL : o->output,
        .src_name = o->input,
    };
    switch (o->emit) {
    case EMIT_IR: ir_print_program(p, fp); break;
    case EMIT_DOT: rc = emit_dot(d->plan, fp); break;
    case EMIT_PLAN: plan_print(d->plan, fp); break;
    case EMIT_PLAN_JSON: derive_print_json(cx, d, fp); break;
    case EMIT_EXPLAIN: derive_explain(cx, d, fp); break;
    case EMIT_DOT_DERIVATION: derive_dot(cx, d, fp); break;
    case EMIT_TUNER: {
        CostModel cm = {dopt.search.dev, dopt.search.precision, NULL, dopt.search.target,
                        dopt.search.dnnl};
        const char *const *keys;
        const Plan *tp = tune_program(cx, d, &cm, &keys);
        eo.main = true;
        eo.tune_keys = keys;
        eo.tune_device = dopt.search.dev->name;
        rc = emit_program(tp, &eo, fp);
        break;
    }
    default: rc = emit_program(d->plan, &eo, fp); break;
    }
    fclose(fp);
    if (rc != 0 || diag_error_count()) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* ---- --from=onnx ------------------------------------------------------------ */

/* The output's name with its extension replaced by `ext`. */
static const char *with_ext(const char *path, const char *ext)
{
    const char *slash = strrchr(path, '/');
    const char *dot = strrchr(path, '.');
    size_t n = dot && (!slash || dot > slash) && dot != (slash ? slash + 1 : path)
                   ? (size_t)(dot - path) : strlen(path);
    return arena_printf(arena, "%.*s%s", (int)n, path, ext);
}

static int import_onnx(Options *o, int argc, char **argv)
{
    if (o->emit_given || o->main || o->shared || o->dep_only || o->dep_side || o->defines.len)
        usage_error("%s", "--from=onnx writes an ein program: --emit, --target, --dot, "
                    "--explain, --main, --shared, -M, -MD and -D do not apply");
    if (!o->output)
        o->output = arena_printf(arena, "%s.ein", stem(o->input));
    if (strcmp(o->output, "-") != 0 && !has_suffix(o->output, ".ein"))
        usage_error("with --from=onnx the output is an ein program: '%s' does not end "
                    "in .ein", o->output);
    const char *wpath = o->weights_out ? o->weights_out
                        : strcmp(o->output, "-") == 0
                            ? arena_printf(arena, "%s.safetensors", stem(o->input))
                            : with_ext(o->output, ".safetensors");
#ifdef HAVE_ONNX
    const char *wbase = strrchr(wpath, '/');
    OnnxOptions io = {.path = o->input, .weights_name = wbase ? wbase + 1 : wpath,
                      .bind = o->bind};
    OnnxResult r;
    (void)argc, (void)argv;
    if (!onnx_import(&io, &r))
        return 1;
    /* The weights first: a program is never left naming a file that
     * was not written. */
    bool ok = write_all(wpath, (const char *)r.weights, r.weights_len) &&
              write_all(o->output, r.ein, r.ein_len);
    free(r.weights);
    free(r.ein);
    arena_free(arena);
    return ok ? 0 : 1;
#else
    (void)argc, (void)argv, (void)wpath;
    fprintf(stderr, "einc: error: this einc was built without the ONNX importer "
            "(configure found no protoc-c, onnx.proto or libprotobuf-c)\n");
    return 1;
#endif
}

int main(int argc, char **argv)
{
    arena = arena_new();
    Options o = {0};
    o.derive.level = 2;
    search_default_options(&o.derive.search);
#ifdef HAVE_DNNL
    o.derive.search.dnnl = true;   /* configure found oneDNN */
#endif
#ifdef HAVE_SLEEF
    o.sleef = true;                /* configure found SLEEF */
#endif
    parse_args(&o, argc, argv);
    if (o.from_onnx)
        return import_onnx(&o, argc, argv);
    if (o.weights_out || o.bind)
        usage_error("%s", "--weights-out and --bind are for --from=onnx");
    resolve_outputs(&o);

    size_t len = 0;
    char *out = compile(&o, &len);
    if (!out)
        return 1;
    bool deps = o.dep_only || o.dep_side;
    const char *dep = deps ? dep_path(&o) : NULL;
    if (!outputs_are_safe(&o, dep) || (deps && !dep_names_ok(&o)))
        return 1;
    if (deps) {
        size_t dlen;
        char *rule = dep_rule(&o, &dlen);
        bool ok = write_all(dep, rule, dlen);
        free(rule);
        if (!ok)
            return 1;
    }
    if (!o.dep_only && !write_all(o.output, out, len))
        return 1;
    if (!o.dep_only)
        free(out);
    arena_free(arena);
    return 0;
}
