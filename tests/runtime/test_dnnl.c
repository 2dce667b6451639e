/* test_dnnl.c - runtime/dnnl.c against plain loops: convolutions
 * (groups, depthwise, stride, dilation, asymmetric padding), a transposed
 * convolution, batched matrix products over strided and offset views,
 * each with post-ops of every kind (bias, eltwise, per-channel and
 * full-size binary operands, sum), and a second run after the weights
 * change; and the sets of operators for other thread counts
 * (ein_dnnl_use): the same bits on 1 thread as on 2, weights shared,
 * every set's weights again after a change; and chains of convolutions
 * that hand their outputs on in oneDNN's layout (spec.src_back): the
 * same bits as apart, the links made where the layouts agree and not
 * after a sum post-op, a handed-on output fetched into its buffer.  Built only where configure
 * found oneDNN. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>
#include "runtime/dnnl_types.h"
#include "rnd.h"

int ein_dnnl_open(ein_dnnl *dn, int nops, char *msg);
int ein_dnnl_create(ein_dnnl *dn, ein_dnnl_op *op, const ein_dnnl_spec *sp,
                    const ein_dnnl_op *like, char *msg);
int ein_dnnl_use(ein_dnnl *dn, int nthr, ein_dnnl_op **ops, int *made, char *msg);
void ein_dnnl_weights_changed(ein_dnnl *dn);
int ein_dnnl_alloc(ein_dnnl *dn, char *msg);
int ein_dnnl_run(ein_dnnl *dn, ein_dnnl_op *op, const void *src, const void *wei,
                 const void *bias, void *dst, const void *const *src1, char *msg);
void ein_dnnl_free(ein_dnnl_op *op);
void ein_dnnl_close(ein_dnnl *dn);
int ein_dnnl_fetch(ein_dnnl *dn, ein_dnnl_op *op, void *dst, char *msg);

static int failures;

static ein_dnnl_view view(int rank, const int64_t *dims)
{
    ein_dnnl_view v;
    memset(&v, 0, sizeof v);
    v.rank = rank;
    int64_t s = 1;
    for (int i = rank - 1; i >= 0; i--) {
        v.dims[i] = dims[i];
        v.strides[i] = s;
        s *= dims[i];
    }
    return v;
}

static void compare(const char *what, const float *got, const double *want, size_t n)
{
    double err = 0, big = 1e-30;
    for (size_t i = 0; i < n; i++) {
        if (fabs(want[i]) > big)
            big = fabs(want[i]);
        double e = fabs(got[i] - want[i]);
        if (!(e <= err))
            err = e;
    }
    int ok = err / big < 1e-5;
    printf("%s: %s (rel err %.2g)\n", ok ? "ok" : "FAIL", what, err / big);
    failures += !ok;
}

static double clip6(double v)
{
    return v < 0 ? 0 : v > 6 ? 6 : v;
}

/* grouped, strided, dilated convolution with asymmetric padding, bias,
   a per-channel scale, a residual and ReLU6 */
static void test_conv(ein_dnnl *dn, int depthwise)
{
    int64_t N = 2, C = depthwise ? 8 : 6, H = 9, W = 7, F = depthwise ? 8 : 4;
    int64_t G = depthwise ? 8 : 2, KH = 3, KW = 2, S = depthwise ? 1 : 2, D = depthwise ? 1 : 2;
    int64_t PT = 1, PL = 0, PB = 2, PR = 1;
    int64_t OH = (H + PT + PB - (D * (KH - 1) + 1)) / S + 1;
    int64_t OW = (W + PL + PR - (D * (KW - 1) + 1)) / S + 1;
    int64_t sd[] = {N, C, H, W}, dd[] = {N, F, OH, OW}, wd[] = {G, F / G, C / G, KH, KW};
    int64_t bd[] = {F}, cd[] = {1, F, 1, 1};
    float *x = rnd((size_t)(N * C * H * W), 1), *w = rnd((size_t)(F * C / G * KH * KW), 2);
    float *b = rnd((size_t)F, 3), *sc = rnd((size_t)F, 4), *res = rnd((size_t)(N * F * OH * OW), 5);
    size_t ny = (size_t)(N * F * OH * OW);
    float *y = malloc(ny * sizeof *y);
    double *want = malloc(ny * sizeof *want);
    ein_dnnl_spec sp;
    memset(&sp, 0, sizeof sp);
    sp.kind = EIN_DNNL_CONV;
    sp.src = view(4, sd);
    sp.wei = view(5, wd);
    sp.bias = view(1, bd);
    sp.dst = view(4, dd);
    sp.has_bias = 1;
    sp.stride[0] = sp.stride[1] = S;
    sp.dilate[0] = sp.dilate[1] = D - 1;
    sp.pad_l[0] = PT, sp.pad_l[1] = PL, sp.pad_r[0] = PB, sp.pad_r[1] = PR;
    sp.wei_const = 1;
    sp.npost = 3;
    sp.post[0].kind = EIN_POST_BINARY, sp.post[0].alg = dnnl_binary_mul;
    sp.post[0].arg = 0, sp.post[0].src1 = view(4, cd);
    sp.post[1].kind = EIN_POST_BINARY, sp.post[1].alg = dnnl_binary_add;
    sp.post[1].arg = 1, sp.post[1].src1 = view(4, dd);
    sp.post[2].kind = EIN_POST_ELTWISE, sp.post[2].alg = dnnl_eltwise_clip;
    sp.post[2].alpha = 0, sp.post[2].beta = 6;
    ein_dnnl_op op;
    char msg[256];
    if (ein_dnnl_create(dn, &op, &sp, NULL, msg) || ein_dnnl_alloc(dn, msg)) {
        printf("FAIL: create: %s\n", msg);
        failures++;
        return;
    }
    for (int round = 0; round < 2; round++) {
        if (round == 1)             /* new weights: reordered again */
            for (int64_t i = 0; i < F * C / G * KH * KW; i++)
                w[i] = -0.5f * w[i] + 0.25f;
        for (int64_t n = 0; n < N; n++)
            for (int64_t f = 0; f < F; f++)
                for (int64_t oh = 0; oh < OH; oh++)
                    for (int64_t ow = 0; ow < OW; ow++) {
                        int64_t g = f / (F / G), cg = C / G;
                        double acc = b[f];
                        for (int64_t c = 0; c < cg; c++)
                            for (int64_t r = 0; r < KH; r++)
                                for (int64_t s = 0; s < KW; s++) {
                                    int64_t ih = oh * S + r * D - PT, iw = ow * S + s * D - PL;
                                    if (ih < 0 || ih >= H || iw < 0 || iw >= W)
                                        continue;
                                    acc += (double)x[((n * C + g * cg + c) * H + ih) * W + iw] *
                                           w[((f * cg + c) * KH + r) * KW + s];
                                }
                        size_t i = (size_t)(((n * F + f) * OH + oh) * OW + ow);
                        want[i] = clip6(acc * sc[f] + res[i]);
                    }
        if (round == 1)
            op.wei_ready = 0;        /* what the generated file does on a weight change */
        const void *src1[] = {sc, res};
        if (ein_dnnl_run(dn, &op, x, w, b, y, src1, msg)) {
            printf("FAIL: run: %s\n", msg);
            failures++;
            break;
        }
        char what[128];
        snprintf(what, sizeof what, "%s convolution, run %d (%s)",
                 depthwise ? "depthwise" : "grouped dilated strided", round + 1, op.impl);
        compare(what, y, want, ny);
    }
    ein_dnnl_free(&op);
    free(x), free(w), free(b), free(sc), free(res), free(y), free(want);
}

/* transposed convolution, kernel 4, stride 2, padding 1, PyTorch's
   [c, f, kh, kw] filter; bias, ReLU, then the sum post-op */
static void test_deconv(ein_dnnl *dn)
{
    int64_t N = 1, C = 5, H = 4, W = 3, F = 3, K = 4, S = 2, P = 1;
    int64_t OH = (H - 1) * S - 2 * P + K, OW = (W - 1) * S - 2 * P + K;
    int64_t sd[] = {N, C, H, W}, dd[] = {N, F, OH, OW}, bd[] = {F};
    float *x = rnd((size_t)(N * C * H * W), 7), *w = rnd((size_t)(C * F * K * K), 8);
    float *b = rnd((size_t)F, 9);
    size_t ny = (size_t)(N * F * OH * OW);
    float *y = rnd(ny, 10);
    double *want = calloc(ny, sizeof *want);
    ein_dnnl_spec sp;
    memset(&sp, 0, sizeof sp);
    sp.kind = EIN_DNNL_DECONV;
    sp.src = view(4, sd);
    sp.wei.rank = 4;                 /* dims [f, c, kh, kw] over the [c, f, kh, kw] buffer */
    int64_t wdims[] = {F, C, K, K}, wstr[] = {K * K, F * K * K, K, 1};
    for (int i = 0; i < 4; i++)
        sp.wei.dims[i] = wdims[i], sp.wei.strides[i] = wstr[i];
    sp.bias = view(1, bd);
    sp.dst = view(4, dd);
    sp.has_bias = 1;
    sp.stride[0] = sp.stride[1] = S;
    sp.pad_l[0] = sp.pad_l[1] = sp.pad_r[0] = sp.pad_r[1] = P;
    sp.wei_const = 1;
    sp.npost = 2;
    sp.post[0].kind = EIN_POST_ELTWISE, sp.post[0].alg = dnnl_eltwise_relu;
    sp.post[1].kind = EIN_POST_SUM, sp.post[1].alpha = 1, sp.post[1].arg = -1;
    for (int64_t f = 0; f < F; f++)
        for (int64_t oh = 0; oh < OH; oh++)
            for (int64_t ow = 0; ow < OW; ow++) {
                double acc = b[f];
                for (int64_t c = 0; c < C; c++)
                    for (int64_t ih = 0; ih < H; ih++)
                        for (int64_t iw = 0; iw < W; iw++) {
                            int64_t r = oh + P - ih * S, s = ow + P - iw * S;
                            if (r >= 0 && r < K && s >= 0 && s < K)
                                acc += (double)x[(c * H + ih) * W + iw] * w[((c * F + f) * K + r) * K + s];
                        }
                size_t i = (size_t)((f * OH + oh) * OW + ow);
                want[i] = (acc > 0 ? acc : 0) + y[i];
            }
    ein_dnnl_op op;
    char msg[256];
    if (ein_dnnl_create(dn, &op, &sp, NULL, msg) || ein_dnnl_alloc(dn, msg) ||
        ein_dnnl_run(dn, &op, x, w, b, y, NULL, msg)) {
        printf("FAIL: transposed convolution: %s\n", msg);
        failures++;
    } else {
        char what[128];
        snprintf(what, sizeof what, "transposed convolution with the sum post-op (%s)", op.impl);
        compare(what, y, want, ny);
    }
    ein_dnnl_free(&op);
    free(x), free(w), free(b), free(y), free(want);
}

/* y[b, m, n] = (sum_k a[b, m, k] * wt[n, k]) * 0.5 * rowscale[b, m] + res[b, m, n]
   + bias[n], with a read as columns 3.. of a wider buffer (an offset view
   with a row stride) and wt an nn.Linear weight (a transposed view);
   run with constant weights and with weights that change each run */
static void test_matmul(ein_dnnl *dn, int wei_const)
{
    int64_t B = 3, M = 5, K = 7, N = 9, LD = K + 4;
    float *a = rnd((size_t)(B * M * LD), 11), *wt = rnd((size_t)(N * K), 12);
    float *bias = rnd((size_t)N, 13), *rs = rnd((size_t)(B * M), 14);
    float *res = rnd((size_t)(B * M * N), 15), *y = malloc((size_t)(B * M * N) * sizeof *y);
    double *want = malloc((size_t)(B * M * N) * sizeof *want);
    ein_dnnl_spec sp;
    memset(&sp, 0, sizeof sp);
    sp.kind = EIN_DNNL_MATMUL;
    sp.src.rank = 3;
    int64_t sdims[] = {B, M, K}, sstr[] = {M * LD, LD, 1};
    for (int i = 0; i < 3; i++)
        sp.src.dims[i] = sdims[i], sp.src.strides[i] = sstr[i];
    sp.src.offset = 3;
    sp.wei.rank = 3;
    int64_t wdims[] = {1, K, N}, wstr[] = {N * K, 1, K};
    for (int i = 0; i < 3; i++)
        sp.wei.dims[i] = wdims[i], sp.wei.strides[i] = wstr[i];
    int64_t dd[] = {B, M, N}, bd[] = {1, 1, N}, rd[] = {B, M, 1};
    sp.dst = view(3, dd);
    sp.bias = view(3, bd);
    sp.has_bias = 1;
    sp.wei_const = wei_const;
    sp.npost = 3;
    sp.post[0].kind = EIN_POST_ELTWISE, sp.post[0].alg = dnnl_eltwise_linear;
    sp.post[0].alpha = 0.5f;
    sp.post[1].kind = EIN_POST_BINARY, sp.post[1].alg = dnnl_binary_mul;
    sp.post[1].arg = 0, sp.post[1].src1 = view(3, rd);
    sp.post[2].kind = EIN_POST_BINARY, sp.post[2].alg = dnnl_binary_add;
    sp.post[2].arg = 1, sp.post[2].src1 = view(3, dd);
    ein_dnnl_op op;
    char msg[256];
    if (ein_dnnl_create(dn, &op, &sp, NULL, msg) || ein_dnnl_alloc(dn, msg)) {
        printf("FAIL: matmul create: %s\n", msg);
        failures++;
        return;
    }
    for (int round = 0; round < 2; round++) {
        if (round == 1) {
            for (int64_t i = 0; i < N * K; i++)
                wt[i] = 0.5f - wt[i];
            op.wei_ready = 0;
        }
        for (int64_t b = 0; b < B; b++)
            for (int64_t m = 0; m < M; m++)
                for (int64_t n = 0; n < N; n++) {
                    double acc = 0;
                    for (int64_t k = 0; k < K; k++)
                        acc += (double)a[3 + (b * M + m) * LD + k] * wt[n * K + k];
                    size_t i = (size_t)((b * M + m) * N + n);
                    want[i] = (acc + bias[n]) * 0.5 * rs[b * M + m] + res[i];
                }
        const void *src1[] = {rs, res};
        if (ein_dnnl_run(dn, &op, a, wt, bias, y, src1, msg)) {
            printf("FAIL: matmul run: %s\n", msg);
            failures++;
            break;
        }
        char what[128];
        snprintf(what, sizeof what, "matmul, %s weights, run %d (%s)",
                 wei_const ? "constant" : "changing", round + 1, op.impl);
        compare(what, y, want, (size_t)(B * M * N));
    }
    ein_dnnl_free(&op);
    free(a), free(wt), free(bias), free(rs), free(res), free(y), free(want);
}

/* One operator (a convolution or a matrix product) in sets for 2 and 1
   threads: both right, the same bits, the weights shared where the
   layouts are the same, and both sets' weights reordered again after
   they change. */
static void test_sets(int matmul)
{
    int64_t C = 32, H = 20, W = 20, F = 48, M = 96, K = 64, N = 80;
    int64_t sd[] = {1, C, H, W}, wd[] = {F, C, 3, 3}, dd[] = {1, F, H, W};
    int64_t ad[] = {1, M, K}, bd[] = {1, K, N}, cd[] = {1, M, N};
    size_t nx = matmul ? (size_t)(M * K) : (size_t)(C * H * W);
    size_t nw = matmul ? (size_t)(K * N) : (size_t)(F * C * 9);
    size_t ny = matmul ? (size_t)(M * N) : (size_t)(F * H * W);
    float *x = rnd(nx, 11), *w = rnd(nw, 12), *y[2];
    double *want = malloc(ny * sizeof *want);
    y[0] = malloc(ny * sizeof *y[0]);
    y[1] = malloc(ny * sizeof *y[1]);
    ein_dnnl_spec sp;
    memset(&sp, 0, sizeof sp);
    sp.kind = matmul ? EIN_DNNL_MATMUL : EIN_DNNL_CONV;
    sp.src = matmul ? view(3, ad) : view(4, sd);
    sp.wei = matmul ? view(3, bd) : view(4, wd);
    sp.dst = matmul ? view(3, cd) : view(4, dd);
    sp.stride[0] = sp.stride[1] = 1;
    sp.pad_l[0] = sp.pad_l[1] = sp.pad_r[0] = sp.pad_r[1] = 1;
    sp.wei_const = 1;
    sp.npost = 1;
    sp.post[0].kind = EIN_POST_ELTWISE, sp.post[0].alg = dnnl_eltwise_relu;
    ein_dnnl dn;
    ein_dnnl_op *ops;
    char msg[256];
    int made = -1;
    const char *what = matmul ? "matmul" : "convolution";
    omp_set_num_threads(2);
    if (ein_dnnl_open(&dn, 1, msg) || ein_dnnl_create(&dn, &dn.set[0][0], &sp, NULL, msg) ||
        ein_dnnl_alloc(&dn, msg)) {
        printf("FAIL: sets, %s: %s\n", what, msg);
        failures++;
        return;
    }
    for (int round = 0; round < 2; round++) {
        if (round == 1) {
            for (size_t i = 0; i < nw; i++)
                w[i] = 0.25f - w[i];
            ein_dnnl_weights_changed(&dn);
        }
        for (size_t i = 0; i < ny; i++) {
            double acc = 0;
            if (matmul) {
                int64_t m = (int64_t)i / N, n = (int64_t)i % N;
                for (int64_t k = 0; k < K; k++)
                    acc += (double)x[m * K + k] * w[k * N + n];
            } else {
                int64_t f = (int64_t)i / (H * W), oh = (int64_t)i / W % H, ow = (int64_t)i % W;
                for (int64_t c = 0; c < C; c++)
                    for (int64_t r = 0; r < 3; r++)
                        for (int64_t s = 0; s < 3; s++) {
                            int64_t ih = oh + r - 1, iw = ow + s - 1;
                            if (ih >= 0 && ih < H && iw >= 0 && iw < W)
                                acc += (double)x[(c * H + ih) * W + iw] *
                                       w[((f * C + c) * 3 + r) * 3 + s];
                        }
            }
            want[i] = acc > 0 ? acc : 0;
        }
        for (int t = 2; t >= 1; t--) {
            omp_set_num_threads(t);
            if (ein_dnnl_use(&dn, t, &ops, &made, msg) ||
                ein_dnnl_run(&dn, &ops[0], x, w, NULL, y[t - 1], NULL, msg)) {
                printf("FAIL: sets, %s on %d threads: %s\n", what, t, msg);
                failures++;
                break;
            }
            char line[160];
            snprintf(line, sizeof line, "sets, %s on %d thread%s, run %d (%s%s)", what, t,
                     t > 1 ? "s" : "", round + 1, ops[0].impl,
                     made ? ", a new set" : "");
            compare(line, y[t - 1], want, ny);
            if (round == 0 && t == 1 && !made) {
                printf("FAIL: sets, %s: no set made for 1 thread\n", what);
                failures++;
            }
        }
        int same = memcmp(y[0], y[1], ny * sizeof *y[0]) == 0;
        printf("%s: sets, %s: the same bits on 1 thread as on 2, run %d\n",
               same ? "ok" : "FAIL", what, round + 1);
        failures += !same;
    }
    if (dn.nsets != 2 || dn.nthr[0] != 2 || dn.nthr[1] != 1) {
        printf("FAIL: sets, %s: %d sets for %d and %d threads\n", what, dn.nsets, dn.nthr[0],
               dn.nthr[1]);
        failures++;
    }
    printf("note: sets, %s: weights %s\n", what,
           dn.set[1][0].wei_shared ? "shared" : dn.set[1][0].wei_mem ? "in another layout"
                                                                     : "not reordered");
    if (dn.set[1][0].wei_shared && dn.set[1][0].wei_mem != dn.set[0][0].wei_mem) {
        printf("FAIL: sets, %s: shared weights elsewhere\n", what);
        failures++;
    }
    ein_dnnl_close(&dn);
    free(x), free(w), free(y[0]), free(y[1]), free(want);
}

/* Three convolutions in a chain, x -> a -> b -> c, b and c taking their
 * input from the one before (src_back = 1) or not (0): the same bits
 * either way, on 2 threads and on 1 (a set of its own, linked the same).
 * With `residual`, b adds a full-size operand (the runtime's sum post-op),
 * so c must not take b's output in b's layout: its dst then starts as
 * the operand, not as what the convolution computed. */
static void test_handoff(int residual)
{
    int64_t C = 16, F = 32, H = 12, W = 12;
    int64_t xd[] = {1, C, H, W}, ad[] = {1, F, H, W}, cd[] = {1, C, H, W};
    int64_t w3[] = {F, C, 3, 3}, w3b[] = {F, F, 3, 3}, w1[] = {C, F, 1, 1};
    size_t na = (size_t)(F * H * W), nc = (size_t)(C * H * W);
    float *x = rnd(nc, 21), *wa = rnd((size_t)(F * C * 9), 22);
    float *wb = rnd((size_t)(F * F * 9), 23), *wc = rnd((size_t)(C * F), 24);
    float *res = rnd(na, 25);
    float *buf[2][3];
    for (int k = 0; k < 2; k++) {
        buf[k][0] = calloc(na, sizeof(float));
        buf[k][1] = calloc(na, sizeof(float));
        buf[k][2] = calloc(nc, sizeof(float));
    }
    ein_dnnl_spec sp[3];
    const float *wei[3] = {wa, wb, wc};
    int64_t *wdims[3] = {w3, w3b, w1}, *sdims[3] = {xd, ad, ad}, *ddims[3] = {ad, ad, cd};
    for (int i = 0; i < 3; i++) {
        memset(&sp[i], 0, sizeof sp[i]);
        sp[i].kind = EIN_DNNL_CONV;
        sp[i].src = view(4, sdims[i]);
        sp[i].wei = view(4, wdims[i]);
        sp[i].dst = view(4, ddims[i]);
        sp[i].stride[0] = sp[i].stride[1] = 1;
        sp[i].pad_l[0] = sp[i].pad_l[1] = sp[i].pad_r[0] = sp[i].pad_r[1] = i < 2;
        sp[i].wei_const = 1;
        sp[i].npost = 1;
        sp[i].post[0].kind = EIN_POST_ELTWISE, sp[i].post[0].alg = dnnl_eltwise_relu;
    }
    if (residual) {
        sp[1].npost = 1;
        sp[1].post[0].kind = EIN_POST_BINARY, sp[1].post[0].alg = dnnl_binary_add;
        sp[1].post[0].arg = 0, sp[1].post[0].src1 = view(4, ad);
    }
    const char *what = residual ? "a chain with a residual" : "a chain";
    char msg[256];
    for (int t = 2; t >= 1; t--) {
        const char *on = t > 1 ? "2 threads" : "1 thread";
        for (int linked = 0; linked < 2; linked++) {
            ein_dnnl dn;
            ein_dnnl_op *ops;
            int made;
            sp[1].src_back = sp[2].src_back = linked;
            omp_set_num_threads(2);
            int rc = ein_dnnl_open(&dn, 3, msg);
            for (int i = 0; i < 3 && !rc; i++)
                rc = ein_dnnl_create(&dn, &dn.set[0][i], &sp[i], NULL, msg);
            rc = rc || ein_dnnl_alloc(&dn, msg);
            omp_set_num_threads(t);
            rc = rc || ein_dnnl_use(&dn, t, &ops, &made, msg);
            const void *src1[] = {res};
            float *b = buf[linked][0];
            for (int i = 0; i < 3 && !rc; i++)
                rc = ein_dnnl_run(&dn, &ops[i], i ? buf[linked][i - 1] : x, wei[i], NULL,
                                  buf[linked][i], src1, msg);
            if (rc) {
                printf("FAIL: %s on %s: %s\n", what, on, msg);
                failures++;
                ein_dnnl_close(&dn);
                continue;
            }
            if (linked) {
                /* linked where a's and b's primitives want one layout for
                 * a's output, b's for b's unless b sums */
                for (int i = 1; i < 3; i++) {
                    const dnnl_memory_desc_t *from = NULL, *to = NULL;
                    if (ops[i - 1].dst_mem && ops[i].src_mem) {
                        dnnl_memory_get_memory_desc(ops[i - 1].dst_mem, &from);
                        dnnl_memory_get_memory_desc(ops[i].src_mem, &to);
                    }
                    int want = from && to && dnnl_memory_desc_equal(from, to) &&
                               !(residual && i == 2);
                    int ok = (ops[i].src_kept != NULL) == want &&
                             (ops[i - 1].keep != NULL) == want;
                    printf("%s: %s on %s: operator %d %s\n", ok ? "ok" : "FAIL", what, on,
                           i, ops[i].src_kept ? "takes its input in oneDNN's layout"
                                                 : "reads its input's buffer");
                    failures += !ok;
                }
                /* a's output, handed on in its buffer in oneDNN's layout:
                   into einc's on demand, once (a second fetch changes
                   nothing) */
                int kept = memcmp(b, buf[0][0], na * sizeof *b) != 0;
                if (ein_dnnl_fetch(&dn, &ops[0], b, msg) || ein_dnnl_fetch(&dn, &ops[0], b, msg)) {
                    printf("FAIL: %s: fetch: %s\n", what, msg);
                    failures++;
                } else {
                    int same = memcmp(b, buf[0][0], na * sizeof *b) == 0;
                    printf("%s: %s on %s: a's output %sfetched as computed apart\n",
                           same ? "ok" : "FAIL", what, on, kept ? "in another layout, " : "");
                    failures += !same;
                }
            }
            ein_dnnl_close(&dn);
        }
        int same = memcmp(buf[0][2], buf[1][2], nc * sizeof(float)) == 0;
        printf("%s: %s on %s: the same bits linked as apart\n", same ? "ok" : "FAIL", what,
               on);
        failures += !same;
    }
    for (int k = 0; k < 2; k++)
        free(buf[k][0]), free(buf[k][1]), free(buf[k][2]);
    free(x), free(wa), free(wb), free(wc), free(res);
}

int main(void)
{
    ein_dnnl dn;
    char msg[256];
    if (ein_dnnl_open(&dn, 0, msg)) {
        printf("FAIL: %s\n", msg);
        return 1;
    }
    test_conv(&dn, 0);
    test_conv(&dn, 1);
    test_deconv(&dn);
    test_matmul(&dn, 1);
    test_matmul(&dn, 0);
    ein_dnnl_close(&dn);
    test_sets(0);
    test_sets(1);
    test_handoff(0);
    test_handoff(1);
    printf("%d failures\n", failures);
    return failures != 0;
}
