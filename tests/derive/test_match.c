/* test_match.c - operator matching: every pattern on programs written in
 * .ein (through the real front end), with its dimensions, in several
 * spellings; and stages that must not match. */
#include "config.h"
#include "parser/parser.h"
#include "sema/sema.h"
#include "derive/ir/ir.h"
#include "derive/pricing/match.h"
#include "derive/pricing/cost.h"
#include "tests/check.h"

#include <stdio.h>
#include <string.h>


static const IrTensor *matched;    /* the tensor match_named looked at */

/* Lower `src` and match the stage of tensor `name`. */
static bool match_named(const char *src, const char *name, OpMatch *m)
{
    Arena *a = arena_new();
    ParseOptions po = {0};
    Ast *ast = parse_buffer("t.ein", src, strlen(src), &po, a);
    SemaOptions so = {0};
    so.model_name = "t";
    CProgram *cp = ast ? sema_check(ast, &so, a) : NULL;
    if (!cp) {
        printf("FAIL: program did not check:\n%s\n", src);
        failures++;
        return false;
    }
    IrProgram *p = ir_lower(ir_ctx_new(a), cp);
    for (int i = 0; i < p->ntensors; i++)
        if (strcmp(p->tensors[i]->name, name) == 0 && p->tensors[i]->stage)
            return match_stage((matched = p->tensors[i])->stage, m);
    printf("FAIL: no stage named %s\n", name);
    failures++;
    return false;
}

#define EXPECT(cond, src) CHECK(cond, "in: %s", src)

static void gemms(void)
{
    OpMatch m;
    const char *mm = "input a : f32[6, 5]\ninput b : f32[5, 7]\n"
                     "c[i, j] += a[i, k] * b[k, j]\noutput c\n";
    EXPECT(match_named(mm, "c", &m) && m.kind == OPK_MATMUL && m.m == 6 &&
           m.n == 7 && m.k == 5 && !m.trans_a && !m.trans_b && !m.out_nm &&
           m.lda == 5 && m.ldb == 7 && m.ldc == 7 && m.off_a == 0, mm);
    /* a window of a bigger matrix: leading dimensions and offsets */
    const char *win = "input a : f32[10, 8]\ninput b : f32[5, 7]\n"
                      "c[i, j] : [6, 7] += a[i + 2, k + 1] * b[k, j] where k < 5\noutput c\n";
    EXPECT(match_named(win, "c", &m) && m.kind == OPK_MATMUL && m.m == 6 && m.k == 5 &&
           m.lda == 8 && m.off_a == 2 * 8 + 1, win);
    /* operands stored transposed, output transposed */
    const char *tt = "input a : f32[5, 6]\ninput b : f32[7, 5]\n"
                     "c[j, i] += b[j, k] * a[k, i]\noutput c\n";
    EXPECT(match_named(tt, "c", &m) && m.kind == OPK_MATMUL && m.m * m.n == 42 &&
           m.k == 5, tt);
    /* a batch, and groups of two iterators that flatten */
    const char *bm = "input q : f32[3, 4, 2, 8]\ninput k : f32[3, 8, 5]\n"
                     "s[b, i, h, j] += q[b, i, h, d] * k[b, d, j]\noutput s\n";
    EXPECT(match_named(bm, "s", &m) && m.kind == OPK_BATCH_MATMUL && m.batch == 3 &&
           m.m == 8 && m.n == 5 && m.k == 8 && m.stride_a == 64 && m.stride_b == 40 &&
           m.stride_c == 40 && m.lda == 8 && m.ldb == 5, bm);
    /* heads interleaved in one dimension (`n*HD + e`): the dimension
     * splits into a batch axis of stride HD and a K axis of stride 1, the
     * rows keep the tensor's row stride; the third of a fused q|k|v */
    const char *hd = "input q : f32[6, 24]\ninput k : f32[5, 24]\n"
                     "s[n, i, j] : [3, 6, 5] += q[i, n * 8 + e] * k[j, n * 8 + e + 0] "
                     "where e < 8\noutput s\n";
    EXPECT(match_named(hd, "s", &m) && m.kind == OPK_BATCH_MATMUL && m.batch == 3 &&
           m.m == 6 && m.n == 5 && m.k == 8 && m.stride_a == 8 && m.stride_b == 8 &&
           m.lda == 24 && m.ldb == 24 && m.trans_b && m.off_a == 0, hd);
    const char *qkv = "input x : f32[4, 36]\n"
                      "s[n, i, j] : [2, 4, 4] += x[i, n * 6 + e] * x[j, n * 6 + e + 12] "
                      "where e < 6\noutput s\n";
    EXPECT(match_named(qkv, "s", &m) && m.kind == OPK_BATCH_MATMUL && m.batch == 2 &&
           m.k == 6 && m.lda == 36 && m.ldb == 36 &&
           m.off_a + m.off_b == 12 && m.off_a * m.off_b == 0, qkv);
    /* a batch of two levels: batch and heads, the heads split out of the
     * features of a packed q|k|v (BERT at batch 2) */
    const char *bh = "input x : f32[2, 5, 36]\n"
                     "s[b, h, i, j] : [2, 3, 5, 5] += x[b, i, h * 4 + d] * x[b, j, h * 4 + d + 12] "
                     "where d < 4\noutput s\n";
    EXPECT(match_named(bh, "s", &m) && m.kind == OPK_BATCH_MATMUL && m.batch == 6 &&
           m.split == 3 && m.m == 5 && m.n == 5 && m.k == 4 && m.lda == 36 && m.ldb == 36 &&
           m.stride_a == 180 && m.sstride_a == 4 && m.stride_b == 180 && m.sstride_b == 4 &&
           m.stride_c == 75 && m.sstride_c == 25 && m.off_a + m.off_b == 12, bh);
    /* the two levels in the other memory order in the operands than in
     * the output (Longformer's heads and residue classes: rows 4i + c) */
    const char *rc = "input q : f32[40, 16]\n"
                     "s[h, c, i, j] : [4, 4, 10, 10] += q[4 * i + c, h * 4 + d] * "
                     "q[4 * j + c, h * 4 + d] where d < 4\noutput s\n";
    EXPECT(match_named(rc, "s", &m) && m.batch == 16 && m.split == 4 && m.lda == 64 &&
           m.stride_a == 4 && m.sstride_a == 16 && m.stride_c == 400 && m.sstride_c == 100,
           rc);
    /* one level where the batch flattens: no split */
    EXPECT(match_named(bm, "s", &m) && m.split <= 1 && m.sstride_a == 0, bm);
    /* three levels do not */
    const char *b3 = "input x : f32[2, 2, 5, 36]\n"
                     "s[a, b, h, i, j] : [2, 2, 3, 5, 5] += x[b, a, i, h * 4 + d] * "
                     "x[b, a, j, h * 4 + d + 12] where d < 4\noutput s\n";
    EXPECT(!match_named(b3, "s", &m), b3);
    /* splits that overlap (n*4 + e, e up to 8) or leave the tensor do not */
    const char *ov = "input q : f32[6, 24]\ninput k : f32[5, 24]\n"
                     "s[n, i, j] : [3, 6, 5] += q[i, n * 4 + e] * k[j, n * 8 + e] "
                     "where e < 8\noutput s\n";
    EXPECT(!match_named(ov, "s", &m), ov);
    const char *out = "input q : f32[6, 24]\ninput k : f32[5, 24]\n"
                      "s[n, i, j] : [3, 6, 5] += q[i, n * 8 + e + 1] * k[j, n * 8 + e] "
                      "where e < 8\noutput s\n";
    EXPECT(!match_named(out, "s", &m), out);
    /* a 1x1 convolution at batch 1 is a matmul */
    const char *c1 = "input x : f32[1, 8, 4, 4]\nweight k : f32[16, 8]\n"
                     "y[n, f, h, w] += x[n, c, h, w] * k[f, c]\noutput y\n";
    EXPECT(match_named(c1, "y", &m) && m.kind == OPK_MATMUL && m.m * m.n == 16 * 16 &&
           m.k == 8, c1);
    /* not GEMMs: a broadcast, an elementwise product, a shifted read that leaves the tensor */
    const char *no1 = "input a : f32[4]\ninput b : f32[4]\nc[i, j] += a[i] * b[k] where j < 3, k < 4\noutput c\n";
    EXPECT(!match_named(no1, "c", &m), no1);
    const char *no2 = "input a : f32[4]\ninput b : f32[4]\nc[i] = a[i] * b[i]\noutput c\n";
    EXPECT(!match_named(no2, "c", &m), no2);
    const char *no3 = "input a : f32[6, 5]\ninput b : f32[5, 7]\n"
                      "c[i, j] : [6, 7] += a[i + 1, k] * b[k, j]\noutput c\n";
    EXPECT(!match_named(no3, "c", &m), no3);
}

static void convs(void)
{
    OpMatch m;
    const char *c3 = "input x : f32[2, 4, 7, 7]\nweight k : f32[8, 4, 3, 3]\n"
        "y[n, f, h, w] : [2, 8, 7, 7] += x[n, c, h + r - 1, w + s - 1] * k[f, c, r, s]\noutput y\n";
    EXPECT(match_named(c3, "y", &m) && m.kind == OPK_CONV2D && m.cn == 2 && m.c == 4 &&
           m.h == 7 && m.f == 8 && m.r == 3 && m.stride == 1 && m.pad == 1 &&
           m.dilation == 1, c3);
    const char *st = "input x : f32[1, 3, 16, 16]\nweight k : f32[5, 3, 7, 7]\n"
        "y[n, f, h, w] : [1, 5, 8, 8] += k[f, c, r, s] * x[n, c, 2*h + r - 3, 2*w + s - 3]\noutput y\n";
    EXPECT(match_named(st, "y", &m) && m.kind == OPK_CONV2D && m.stride == 2 &&
           m.pad == 3 && m.r == 7, st);
    const char *dl = "input x : f32[1, 4, 14, 14]\nweight k : f32[4, 4, 3, 3]\n"
        "y[n, f, h, w] : [1, 4, 14, 14] += x[n, c, h + 2*r - 2, w + 2*s - 2] * k[f, c, r, s]\noutput y\n";
    EXPECT(match_named(dl, "y", &m) && m.kind == OPK_CONV2D && m.dilation == 2 &&
           m.pad == 2, dl);
    /* an output that is not what the library computes does not match */
    const char *cr = "input x : f32[1, 4, 7, 7]\nweight k : f32[4, 4, 3, 3]\n"
        "y[n, f, h, w] : [1, 4, 5, 5] += x[n, c, h + r - 1, w + s - 1] * k[f, c, r, s]\noutput y\n";
    EXPECT(!match_named(cr, "y", &m) || m.kind != OPK_CONV2D, cr);
    const char *tc = "input x : f32[2, 6, 4, 4]\nweight wt : f32[6, 3, 4, 4]\n"
        "y[n, f, h, w] : [2, 3, 8, 8] += x[n, c, (h + 1 - r) / 2, (w + 1 - s) / 2] * wt[c, f, r, s]\n"
        "    where (h + 1 - r) % 2 == 0, (w + 1 - s) % 2 == 0\noutput y\n";
    EXPECT(match_named(tc, "y", &m) && m.kind == OPK_CONV_TRANSPOSE2D && m.stride == 2 &&
           m.pad == 1 && m.c == 6 && m.f == 3 && m.r == 4 && m.h == 4, tc);
}

static void grouped(void)
{
    OpMatch m;
    const char *g = "input x : f32[1, 8, 6, 6]\nweight k : f32[8, 4, 3, 3]\n"
        "y[n, f, h, w] : [1, 8, 6, 6] += x[n, 4*(f / 4) + c, h + r - 1, w + s - 1] * k[f, c, r, s]\noutput y\n";
    EXPECT(match_named(g, "y", &m) && m.kind == OPK_CONV2D && m.groups == 2 && m.c == 8 &&
           m.f == 8 && m.r == 3 && m.pad == 1, g);
    const char *dwc = "input x : f32[1, 8, 6, 6]\nweight dw : f32[8, 3, 3]\n"
        "d[n, c, h, w] : [1, 8, 6, 6] += x[n, c, h + r - 1, w + s - 1] * dw[c, r, s]\noutput d\n";
    EXPECT(match_named(dwc, "d", &m) && m.kind == OPK_CONV2D && m.groups == 8 && m.f == 8 &&
           m.c == 8 && m.r == 3, dwc);
    /* PyTorch's depthwise filter [C, 1, R, S], read at 0 */
    const char *dw1 = "input x : f32[1, 8, 6, 6]\nweight dw : f32[8, 1, 3, 3]\n"
        "d[n, c, h, w] : [1, 8, 6, 6] += x[n, c, h + r - 1, w + s - 1] * dw[c, 0, r, s]\noutput d\n";
    EXPECT(match_named(dw1, "d", &m) && m.kind == OPK_CONV2D && m.groups == 8 && m.f == 8 &&
           m.c == 8 && m.r == 3 && m.s == 3 && m.pad == 1, dw1);
    const char *dw2 = "input x : f32[1, 8, 6, 6]\nweight dw : f32[8, 2, 3, 3]\n"
        "d[n, c, h, w] : [1, 8, 6, 6] += x[n, c, h + r - 1, w + s - 1] * dw[c, 1, r, s]\noutput d\n";
    EXPECT(!match_named(dw2, "d", &m) || m.kind != OPK_CONV2D, dw2);
    /* a channel index that is not a group pattern does not match */
    const char *bad = "input x : f32[1, 8, 6, 6]\nweight k : f32[8, 4, 3, 3]\n"
        "y[n, f, h, w] : [1, 8, 6, 6] += x[n, 4*(f / 2) + c, h + r - 1, w + s - 1] * k[f, c, r, s]\noutput y\n";
    EXPECT(!match_named(bad, "y", &m) || m.kind != OPK_CONV2D, bad);
}

static void padding(void)
{
    OpMatch m;
    /* a 1x7 kernel pads the width only */
    const char *k17 = "input x : f32[1, 4, 9, 9]\nweight k : f32[6, 4, 1, 7]\n"
        "y[n, f, h, w] : [1, 6, 9, 9] += x[n, c, h, w + s - 3] * k[f, c, 0, s]\noutput y\n";
    EXPECT(match_named(k17, "y", &m) && m.kind == OPK_CONV2D && m.r == 1 && m.s == 7 &&
           m.pad == 0 && m.pad_w == 3, k17);
    /* FSRCNN's last layer: 9x9, stride 4, padding 3, output padding 1 */
    const char *op = "input x : f32[1, 8, 5, 5]\nweight k : f32[8, 1, 9, 9]\n"
        "y[n, f, h, w] : [1, 1, 20, 20] += x[n, c, (h + 3 - r) / 4, (w + 3 - s) / 4] * k[c, f, r, s]\n"
        "    where (h + 3 - r) % 4 == 0, (w + 3 - s) % 4 == 0\noutput y\n";
    EXPECT(match_named(op, "y", &m) && m.kind == OPK_CONV_TRANSPOSE2D && m.stride == 4 &&
           m.pad == 3 && m.out_pad == 1 && m.r == 9, op);
}

static void bands(void)
{
    OpMatch m;
    const char *g2 = "const B = 2, L = 40, K = 3, D = 8\n"
        "input q : f32[B, L, D]\ninput kt : f32[B, L, D]\n"
        "s[b, i, j] : [B, L, 2*K + 1] += q[b, i, d] * kt[b, i + 4*(j - K), d]\noutput s\n";
    EXPECT(match_named(g2, "s", &m) && m.kind == OPK_G2BMM && m.gb == 2 && m.gm == 40 &&
           m.gw == 3 && m.gk == 8 && m.gdil == 4, g2);
    const char *gb = "const B = 2, L = 40, K = 3, D = 8\n"
        "input p : f32[B, L, 2*K + 1]\ninput v : f32[B, L, D]\n"
        "o[b, i, d] += p[b, i, j] * v[b, i + j - K, d]\noutput o\n";
    EXPECT(match_named(gb, "o", &m) && m.kind == OPK_GBMM && m.gm == 40 && m.gw == 3 &&
           m.gk == 8 && m.gdil == 1, gb);
    /* dense operands have dense views */
    EXPECT(match_named(g2, "s", &m) && m.gv[0].ld == 8 && m.gv[0].stride == 40 * 8 &&
           m.gv[0].split == 1 && m.gv[0].off == 0 && m.gv[1].ld == 8 && m.gv[1].off == 0, g2);
    /* an asymmetric band (keys i + j - 2 of a band of 7) is no band: its
     * row -1 reads row 0 */
    const char *asym = "const L = 40, D = 8\n"
        "input q : f32[2, L, D]\ninput kt : f32[2, L, D]\n"
        "s[b, i, j] : [2, L - 1, 7] += q[b, i, d] * kt[b, i + j - 2, d]\noutput s\n";
    EXPECT(!match_named(asym, "s", &m) || m.kind != OPK_G2BMM, asym);
}

/* Band operands read through views: heads split out of a stacked q|k|v
 * (Longformer's fused head split), rows of several heads stacked, slices
 * with offsets; and views the kernels cannot read as the dense form. */
static void band_views(void)
{
    OpMatch m;
    /* heads g = (b, h) of x[b, l, 3*H*D]: batch strides L*3*H*D and D */
    const char *heads = "const B = 2, H = 3, L = 40, K = 3, D = 8\n"
        "input x : f32[B, L, 3 * H * D]\n"
        "s[g, i, j] : [B*H, L, 2*K + 1] += x[g / H, i, (g % H)*D + d] * "
        "x[g / H, i + 4*(j - K), H*D + (g % H)*D + d] where d < D\noutput s\n";
    EXPECT(match_named(heads, "s", &m) && m.kind == OPK_G2BMM && m.gb == 6 && m.gm == 40 &&
           m.gw == 3 && m.gk == 8 && m.gdil == 4 && m.in[0] == m.in[1] &&
           m.gv[0].ld == 72 && m.gv[0].stride == 40 * 72 && m.gv[0].split == 3 &&
           m.gv[0].sstride == 8 && m.gv[0].off == 0 && m.gv[1].ld == 72 &&
           m.gv[1].split == 3 && m.gv[1].sstride == 8 && m.gv[1].off == 24, heads);
    /* one batch of heads: g / H is 0, one stride */
    const char *one = "const H = 3, L = 40, K = 3, D = 8\n"
        "input x : f32[1, L, 3, H * D]\n"
        "o[g, i, d] : [H, L, D] += p[g, i, j] * x[g / H, i + j - K, 2, (g % H)*D + d]\n"
        "input p : f32[H, L, 2*K + 1]\noutput o\n";
    EXPECT(match_named(one, "o", &m) && m.kind == OPK_GBMM && m.gb == 3 && m.gk == 8 &&
           m.gv[0].ld == 7 && m.gv[0].stride == 40 * 7 && m.gv[1].ld == 72 &&
           m.gv[1].stride == 8 && m.gv[1].split == 1 && m.gv[1].off == 48, one);
    /* the heads as a second batch loop */
    const char *bh = "const B = 2, H = 3, L = 40, K = 3, D = 8\n"
        "input q : f32[B, L, H * D], kt : f32[B, L, H * D]\n"
        "s[b, h, i, j] : [B, H, L, 2*K + 1] += q[b, i, h*D + d] * kt[b, i + j - K, h*D + d] "
        "where d < D\n"
        "output s\n";
    EXPECT(match_named(bh, "s", &m) && m.kind == OPK_G2BMM && m.gb == 6 &&
           m.gv[1].ld == 24 && m.gv[1].stride == 40 * 24 && m.gv[1].split == 3 &&
           m.gv[1].sstride == 8 && m.gv[1].off == 0, bh);
    /* the heads' rows stacked, [G*L + 5, D] from row 5: a key row outside
     * [0, L) would read another head's, so only with the select that
     * fusing a view writes, which makes it zero; not without it, with a
     * guard on one side only (rows past the end read the next head's), a
     * guard that drops a row the band has, or the last head's last row
     * past the tensor */
    static const struct { const char *read; bool band; } stacked[] = {
        {"select(R >= 0 && R < L, kf[g*L + R + 5, d], 0)", true},
        {"kf[g*L + R + 5, d]", false},
        {"select(R >= 0, kf[g*L + R + 5, d], 0)", false},
        {"select(R >= 0 && R < L - 1, kf[g*L + R + 5, d], 0)", false},
        {"select(R >= 0 && R < L, kf[g*L + R + 6, d], 0)", false},
    };
    for (size_t k = 0; k < sizeof stacked / sizeof *stacked; k++) {
        char src[512], read[160];
        const char *r = stacked[k].read;
        size_t n = 0;
        for (; *r && n + 16 < sizeof read; r++)    /* R: the key row */
            n += (size_t)snprintf(read + n, sizeof read - n, *r == 'R' ? "(i + 2*(j - K))" : "%c",
                                  *r);
        snprintf(src, sizeof src, "const G = 3, L = 40, K = 3, D = 8\n"
                 "input q : f32[G, L, D], kf : f32[G*L + 5, D]\n"
                 "s[g, i, j] : [G, L, 2*K + 1] += q[g, i, d] * %s\noutput s\n", read);
        bool band = match_named(src, "s", &m) && m.kind == OPK_G2BMM;
        EXPECT(band == stacked[k].band &&
               (!band || (m.gdil == 2 && m.gv[1].ld == 8 && m.gv[1].stride == 40 * 8 &&
                          m.gv[1].off == 5 * 8)), src);
    }
    /* a slice whose rows outside [0, L) leave the tensor needs no guard:
     * columns from 2 of a [B, L, 12] tensor */
    const char *slice = "const B = 2, L = 40, K = 3, D = 8\n"
        "input p : f32[B, L, 2*K + 3], v : f32[B, L, 12]\n"
        "o[b, i, d] : [B, L, D] += p[b, i, j + 1] * v[b, i + j - K, d + 2] where j < 2*K + 1\n"
        "output o\n";
    EXPECT(match_named(slice, "o", &m) && m.kind == OPK_GBMM && m.gw == 3 &&
           m.gv[0].ld == 9 && m.gv[0].off == 1 && m.gv[1].ld == 12 && m.gv[1].off == 2,
           slice);
    /* not a unit column stride; heads in three levels; the band in two dims */
    const char *strided = "const L = 40, K = 3, D = 8\n"
        "input q : f32[2, L, D], kt : f32[2, L, 2*D]\n"
        "s[b, i, j] : [2, L, 2*K + 1] += q[b, i, d] * kt[b, i + j - K, 2*d]\noutput s\n";
    EXPECT(!match_named(strided, "s", &m) || m.kind != OPK_G2BMM, strided);
    const char *three = "const L = 40, K = 3, D = 8\n"
        "input x : f32[2, L, 2, 3*D]\n"
        "s[a, g, i, j] : [2, 6, L, 2*K + 1] += x[a, i, g / 3, (g % 3)*D + d] * "
        "x[g / 3, i + j - K, a, (g % 3)*D + d] where d < D\noutput s\n";
    EXPECT(!match_named(three, "s", &m) || m.kind != OPK_G2BMM, three);
    const char *twodims = "const L = 40, K = 3, D = 8\n"
        "input q : f32[2, L, D], kt : f32[2, L, L, D]\n"
        "s[b, i, j] : [2, L, 2*K + 1] += q[b, i, d] * kt[b, i + j - K, i, d]\noutput s\n";
    EXPECT(!match_named(twodims, "s", &m) || m.kind != OPK_G2BMM, twodims);

    /* which target takes which view (libs.c): the CUDA kernels any inside
     * its tensor, the C target's cblas blocks rows at least a row apart;
     * key row r of kw is kw[b, r .. r + 8), rows 1 apart */
    CostModel cuda = {.target = TARGET_CUDA}, c = {.target = TARGET_C};
    EXPECT(match_named(heads, "s", &m) &&
           cost_impl(&cuda, matched, matched->stage, &m) == IMPL_CUDA_BAND &&
           cost_impl(&c, matched, matched->stage, &m) == IMPL_CBLAS_BAND, heads);
    const char *window = "const L = 40, K = 3, D = 8\n"
        "input q : f32[2, L, D], kw : f32[2, L + D - 1]\n"
        "s[b, i, j] : [2, L, 2*K + 1] += q[b, i, d] * "
        "select(i + j - K >= 0 && i + j - K < L, kw[b, i + j - K + d], 0)\noutput s\n";
    EXPECT(match_named(window, "s", &m) && m.kind == OPK_G2BMM && m.gv[1].ld == 1 &&
           m.gv[1].stride == 47 && cost_impl(&cuda, matched, matched->stage, &m) == IMPL_CUDA_BAND &&
           cost_impl(&c, matched, matched->stage, &m) == IMPL_KERNEL, window);
    /* a view reaching past its tensor is refused where the kernel is
     * granted, whatever the matcher said: k's last element is 5711 past
     * its first (batch 5 = (1, 2): 2880 + 16, row 39, column 7), at 24 of
     * 5760 */
    if (match_named(heads, "s", &m)) {
        m.gv[1].off += 24;
        EXPECT(cost_impl(&cuda, matched, matched->stage, &m) == IMPL_CUDA_BAND, heads);
        m.gv[1].off += 1;
        EXPECT(cost_impl(&cuda, matched, matched->stage, &m) == IMPL_KERNEL &&
               cost_impl(&c, matched, matched->stage, &m) == IMPL_KERNEL, heads);
    }
}

int main(void)
{
    gemms();
    convs();
    grouped();
    padding();
    bands();
    band_views();
    return check_finish("test_match");
}
