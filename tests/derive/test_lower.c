/* test_lower.c - lowering, end to end through the parser and sema: a
 * program with every construct is lowered and interpreted, and each
 * tensor is compared with a loop nest written here from the language's
 * definition (guards, floor division, zero reads outside shapes, output
 * padding from where-ranges, real division of index values, rank 0).
 * Then what lowering itself rejects, on a checked program built by hand. */
#include "config.h"
#include "derive/ir/ir.h"
#include "parser/parser.h"
#include "sema/sema.h"
#include "tests/check.h"

#include <math.h>

static const char program[] =
    "const C = 2, F = 3, H = 3, W = 2\n"
    "input  x  : f32[1, C, H, W]\n"
    "weight wt : f32[C, F, 4, 4]\n"
    "input  m  : f32[8, 8]\n"
    "input  v  : f32[20]\n"
    "# transposed convolution, kernel 4, stride 2, padding 1\n"
    "tc[n, f, h, w] : [1, F, 2*H, 2*W] += x[n, c, (h + 1 - r) / 2, (w + 1 - s) / 2] * wt[c, f, r, s]\n"
    "    where (h + 1 - r) % 2 == 0, (w + 1 - s) % 2 == 0\n"
    "# 3x3 max pooling, stride 2, padding 1 on a ReLU\n"
    "rl[i, j] = relu(m[i, j])\n"
    "mp[i, j] : [4, 4] max= rl[2*i + a - 1, 2*j + b - 1] where a < 3, b < 3\n"
    "# reshapes\n"
    "fl[i] : [64] = m[i / 8, i % 8]\n"
    "tr[i, j] = m[j, i]\n"
    "nd[i] : [10] = v[i / -2 + 10] + v[i % -3 + 5]\n"
    "# guards, a where-range on a loop index, select\n"
    "band[i] : [8] += m[i, j] where j - i < 2, i - j < 2\n"
    "dg[i] : [8] = m[i, i] where i in 2..6\n"
    "sel[i, j] = select(m[i, j] > 0 && i < j || i == 7, m[i, j], -m[i, j])\n"
    "mn[i] : [8] min= m[i, j] where (i + j) % 3 == 1\n"
    "# index values: / is real division on values\n"
    "pos[t, d] : [8, 8] = t / (d + 1) + (t + d) % 3 - 2 * t + m[t, d]\n"
    "# rank 0\n"
    "g[] += m[i, j]\n"
    "cen[i, j] = m[i, j] - g[] / 64\n"
    "output tc, mp, fl, tr, nd, band, dg, sel, mn, pos, cen\n";

static const IrTensor *find(const IrProgram *p, const char *name)
{
    for (int i = 0; i < p->ntensors; i++)
        if (strcmp(p->tensors[i]->name, name) == 0)
            return p->tensors[i];
    fprintf(stderr, "no tensor %s\n", name);
    exit(99);
}

static double *data[64];

#define T(name) data[find(p, name)->id]

static double fdiv(double a, double b)
{
    return floor(a / b);
}

static double fmodd(double a, double b)
{
    return a - b * floor(a / b);
}

static void check_program(const IrProgram *p)
{
    CHECK(p->ntensors < 64);
    for (int i = 0; i < p->ntensors; i++) {
        const IrTensor *t = p->tensors[i];
        size_t n = 1;
        for (int k = 0; k < t->rank; k++)
            n *= (size_t)t->shape[k];
        data[t->id] = calloc(n, sizeof(double));
        if (t->kind != IT_STAGE)
            for (size_t j = 0; j < n; j++)
                data[t->id][j] = rng_unit();
    }
    ir_eval_program(p, data);
    const double *x = T("x"), *wt = T("wt"), *m = T("m"), *v = T("v");
    enum { C = 2, F = 3, H = 3, W = 2 };

    /* tc: the scatter form of a transposed convolution */
    double tc[F][2 * H][2 * W] = {{{0}}};
    for (int c = 0; c < C; c++)
        for (int f = 0; f < F; f++)
            for (int ih = 0; ih < H; ih++)
                for (int iw = 0; iw < W; iw++)
                    for (int r = 0; r < 4; r++)
                        for (int s = 0; s < 4; s++) {
                            int oh = 2 * ih - 1 + r, ow = 2 * iw - 1 + s;
                            if (oh >= 0 && oh < 2 * H && ow >= 0 && ow < 2 * W)
                                tc[f][oh][ow] += x[(c * H + ih) * W + iw]
                                               * wt[((c * F + f) * 4 + r) * 4 + s];
                        }
    double err = 0;
    for (int f = 0; f < F; f++)
        for (int h = 0; h < 2 * H; h++)
            for (int w = 0; w < 2 * W; w++)
                err = fmax(err, fabs(T("tc")[(f * 2 * H + h) * 2 * W + w] - tc[f][h][w]));
    CHECK(err < 1e-12);

    /* mp: windows that leave the tensor read 0 */
    bool ok = true;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            double best = -INFINITY;
            for (int a = 0; a < 3; a++)
                for (int b = 0; b < 3; b++) {
                    int r = 2 * i + a - 1, c = 2 * j + b - 1;
                    double val = r >= 0 && r < 8 && c >= 0 && c < 8 ? fmax(m[r * 8 + c], 0) : 0;
                    best = fmax(best, val);
                }
            ok &= T("mp")[i * 4 + j] == best;
        }
    CHECK(ok);

    ok = true;
    for (int i = 0; i < 64; i++)
        ok &= T("fl")[i] == m[(i / 8) * 8 + i % 8];
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 8; j++)
            ok &= T("tr")[i * 8 + j] == m[j * 8 + i];
    CHECK(ok);
    ok = true;
    for (int i = 0; i < 10; i++) {
        int a = (int)fdiv(i, -2) + 10, b = (int)fmodd(i, -3) + 5;
        double want = (a >= 0 && a < 20 ? v[a] : 0) + (b >= 0 && b < 20 ? v[b] : 0);
        ok &= T("nd")[i] == want;
    }
    CHECK(ok);

    ok = true;
    for (int i = 0; i < 8; i++) {
        double band = 0, mn = 0;
        bool any = false;
        for (int j = 0; j < 8; j++) {
            if (j - i < 2 && i - j < 2)
                band += m[i * 8 + j];
            if ((i + j) % 3 == 1) {
                mn = any ? fmin(mn, m[i * 8 + j]) : m[i * 8 + j];
                any = true;
            }
        }
        ok &= fabs(T("band")[i] - band) < 1e-12;
        ok &= T("mn")[i] == mn;
        ok &= T("dg")[i] == (i >= 2 && i < 6 ? m[i * 9] : 0);
        for (int j = 0; j < 8; j++) {
            double e = m[i * 8 + j];
            ok &= T("sel")[i * 8 + j] == ((e > 0 && i < j) || i == 7 ? e : -e);
            double pos = (double)i / (j + 1) + (i + j) % 3 - 2 * i + e;
            ok &= fabs(T("pos")[i * 8 + j] - pos) < 1e-12;
        }
    }
    CHECK(ok);

    double g = 0;
    for (int i = 0; i < 64; i++)
        g += m[i];
    CHECK(fabs(T("g")[0] - g) < 1e-12);
    ok = true;
    for (int i = 0; i < 64; i++)
        ok &= fabs(T("cen")[i] - (m[i] - g / 64)) < 1e-12;
    CHECK(ok);

    /* what lowering marks */
    CHECK(find(p, "tc")->weight_only == false);
    CHECK(find(p, "x")->kind == IT_INPUT && find(p, "wt")->kind == IT_WEIGHT);
    CHECK(find(p, "dg")->stage->loops[0].lo == 2 && find(p, "dg")->stage->loops[0].hi == 6);
    CHECK(find(p, "mp")->stage->red == RED_MAX && find(p, "mn")->stage->red == RED_MIN);
    CHECK(find(p, "tc")->stage->nguards == 2);
    CHECK(p->noutputs == 11 && p->tensors[p->outputs[0]] == find(p, "tc"));
    for (int i = 0; i < p->ntensors; i++) {
        CHECK(p->tensors[i]->id == i);
        free(data[i]);
    }
}

/* x[i * j]: sema refuses it, so build the checked program by hand. */
static void check_not_affine(void)
{
    static const int64_t shape[] = {4};
    CTensor tensors[2] = {
        {.id = 0, .name = "x", .kind = TENSOR_INPUT, .rank = 1, .shape = shape,
         .loc = LOC_NONE, .stmt = -1},
        {.id = 1, .name = "y", .kind = TENSOR_DEFINED, .rank = 1, .shape = shape,
         .loc = LOC_NONE, .is_output = true, .stmt = 0},
    };
    CVar vars[2] = {{"i", 0, 4, LOC_NONE}, {"j", 0, 4, LOC_NONE}};
    CExpr vi = {.kind = CE_VAR, .is_int = true, .loc = LOC_NONE, .var = 0};
    CExpr vj = {.kind = CE_VAR, .is_int = true, .loc = LOC_NONE, .var = 1};
    CExpr prod = {.kind = CE_BIN, .is_int = true, .loc = LOC_NONE,
                  .bin = {.op = OP_MUL, .lhs = &vi, .rhs = &vj}};
    CExpr *idx[1] = {&prod};
    CExpr acc = {.kind = CE_ACCESS, .loc = LOC_NONE, .access = {0, idx, 1}};
    CStmt st = {.out = 1, .red = RED_SUM, .vars = vars, .nvars = 2, .nloops = 1,
                .body = &acc, .loc = LOC_NONE};
    int outs[1] = {1};
    CProgram cp = {.model = "bad", .tensors = tensors, .ntensors = 2, .stmts = &st,
                   .nstmts = 1, .outputs = outs, .noutputs = 1};
    char *msg = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&msg, &len);
    diag_set_stream(fp);
    diag_reset();
    Arena *arena = arena_new();
    IrProgram *p = ir_lower(ir_ctx_new(arena), &cp);
    fclose(fp);
    diag_set_stream(stderr);
    CHECK(p == NULL);
    CHECK(diag_error_count() == 1);
    CHECK(strstr(msg, "not affine") != NULL);
    free(msg);
    diag_reset();
    /* the same with j replaced by the constant 3 lowers */
    CExpr three = {.kind = CE_INT, .is_int = true, .loc = LOC_NONE, .ival = 3};
    prod.bin.rhs = &three;
    st.nvars = 1;
    IrCtx *cx = ir_ctx_new(arena);
    p = ir_lower(cx, &cp);
    CHECK(p != NULL && diag_error_count() == 0);
    if (p) {
        const char *s = PRINTED(ir_print_program(p, fp));
        CHECK_STR(s, "model bad\n"
                     "input  x : f32[4]\n"
                     "y : f32[4] = L<i:0..4> { x[3*i] }\n"
                     "output y\n");
    }
    arena_free(arena);
}

int main(void)
{
    Arena *arena = arena_new();
    rng_state = 777;
    Ast *ast = parse_buffer("lower.ein", program, sizeof program - 1, NULL, arena);
    CHECK(ast != NULL);
    SemaOptions so = {.model_name = "lower"};
    CProgram *cp = ast ? sema_check(ast, &so, arena) : NULL;
    CHECK(cp != NULL && diag_error_count() == 0);
    IrProgram *p = cp ? ir_lower(ir_ctx_new(arena), cp) : NULL;
    CHECK(p != NULL);
    if (p)
        check_program(p);
    check_not_affine();
    arena_free(arena);
    return check_finish("test_lower");
}
