/* fusion_probe.cu - what the GPU's cuDNN does with the graphs einc builds
 * for a convolution with an epilogue (runtime/cudnn.cu): for a forward
 * convolution and a backward-data one of 1x64x56x56 by 64x64x3x3, each
 * followed by no pointwise node, a bias ADD, a bias ADD and RELU_FWD, and
 * a by-value scalar MUL, a bias ADD and RELU_FWD (einc's nodes: f32,
 * the comparisons with CUDNN_PROPAGATE_NAN), the engines heuristics A and
 * FALLBACK list, each with its numerical notes and whether its plan
 * finalizes, and the engine einc would take at --precision=fp32 (no
 * TENSOR_CORE, DOWN_CONVERT_INPUTS, NONDETERMINISTIC or
 * REDUCED_PRECISION_REDUCTION) and at tf32 (tensor cores allowed).  Then
 * the first graph with nodes that an engine einc may take runs on inputs
 * with some NaN, against the plain convolution and the epilogue on the
 * host: the largest relative error, and whether NaN came through
 * RELU_FWD.  Run by tests/gpu/fusion.sh:
 *   nvcc -O2 -arch=sm_90 fusion_probe.cu -o fusion_probe -lcudnn */
#include <cudnn.h>
#include <cuda_runtime.h>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

typedef cudnnBackendDescriptor_t D;
static cudnnHandle_t h;
static std::vector<D> made;

#define CK(call)                                                                    \
    do {                                                                            \
        cudnnStatus_t s_ = (call);                                                  \
        if (s_ != CUDNN_STATUS_SUCCESS) {                                           \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,           \
                    cudnnGetErrorString(s_));                                       \
            return 0;                                                               \
        }                                                                           \
    } while (0)

static D make(cudnnBackendDescriptorType_t t)
{
    D d = nullptr;
    if (cudnnBackendCreateDescriptor(t, &d) == CUDNN_STATUS_SUCCESS)
        made.push_back(d);
    return d;
}

enum { REAL, VIRT, BYVAL };

static D tensor(int64_t uid, const int64_t *dims, const int64_t *str, int kind)
{
    D t = make(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    int64_t packed[4] = {dims[1] * dims[2] * dims[3], dims[2] * dims[3], dims[3], 1};
    int64_t align = kind == BYVAL ? 4 : 16;
    cudnnDataType_t dt = CUDNN_DATA_FLOAT;
    bool yes = true;
    CK(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt));
    CK(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims));
    CK(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4,
                                str ? str : packed));
    CK(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid));
    CK(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align));
    if (kind == VIRT)
        CK(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &yes));
    if (kind == BYVAL)
        CK(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1,
                                    &yes));
    CK(cudnnBackendFinalize(t));
    return t;
}

static D pointwise(cudnnPointwiseMode_t mode, D x, D b, D y)
{
    D p = make(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    cudnnDataType_t prec = CUDNN_DATA_FLOAT;
    cudnnNanPropagation_t nan = CUDNN_PROPAGATE_NAN;
    CK(cudnnBackendSetAttribute(p, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode));
    CK(cudnnBackendSetAttribute(p, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec));
    if (mode == CUDNN_POINTWISE_RELU_FWD)
        CK(cudnnBackendSetAttribute(p, CUDNN_ATTR_POINTWISE_NAN_PROPAGATION,
                                    CUDNN_TYPE_NAN_PROPOGATION, 1, &nan));
    CK(cudnnBackendFinalize(p));
    D o = make(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    CK(cudnnBackendSetAttribute(o, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR,
                                CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &p));
    CK(cudnnBackendSetAttribute(o, CUDNN_ATTR_OPERATION_POINTWISE_XDESC,
                                CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x));
    if (b)
        CK(cudnnBackendSetAttribute(o, CUDNN_ATTR_OPERATION_POINTWISE_BDESC,
                                    CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b));
    CK(cudnnBackendSetAttribute(o, CUDNN_ATTR_OPERATION_POINTWISE_YDESC,
                                CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y));
    CK(cudnnBackendFinalize(o));
    return o;
}

static const int64_t XD[4] = {1, 64, 56, 56}, WD[4] = {64, 64, 3, 3}, BD[4] = {1, 64, 1, 1},
                     BS[4] = {64, 1, 1, 1}, SD[4] = {1, 1, 1, 1};
static const char *const chains[] = {"none", "add", "add,relu", "mul(scalar),add,relu"};

/* The graph: x uid 1, w 2, y 3, bias 5, scalar 6. */
static D graph(bool bwd, int chain)
{
    int64_t nsp = 2, one[2] = {1, 1}, pad[2] = {1, 1};
    cudnnDataType_t comp = CUDNN_DATA_FLOAT;
    cudnnConvolutionMode_t cm = CUDNN_CROSS_CORRELATION;
    float alpha = 1, beta = 0;
    D c = make(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
    CK(cudnnBackendSetAttribute(c, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &nsp));
    CK(cudnnBackendSetAttribute(c, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp));
    CK(cudnnBackendSetAttribute(c, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1,
                                &cm));
    CK(cudnnBackendSetAttribute(c, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, one));
    CK(cudnnBackendSetAttribute(c, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, one));
    CK(cudnnBackendSetAttribute(c, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pad));
    CK(cudnnBackendSetAttribute(c, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pad));
    CK(cudnnBackendFinalize(c));
    D x = tensor(1, XD, nullptr, REAL), w = tensor(2, WD, nullptr, REAL);
    D y = tensor(3, XD, nullptr, REAL), out = chain ? tensor(4, XD, nullptr, VIRT) : y;
    D ops[4];
    int n = 0;
    ops[n] = make(bwd ? CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR
                      : CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
    /* the operation's attributes: backward data's names, or forward's */
    auto set = [&](cudnnBackendAttributeName_t b, cudnnBackendAttributeName_t f,
                   cudnnBackendAttributeType_t t, const void *v) {
        return cudnnBackendSetAttribute(ops[n], bwd ? b : f, t, 1, v) == CUDNN_STATUS_SUCCESS;
    };
    const cudnnBackendAttributeType_t DESC = CUDNN_TYPE_BACKEND_DESCRIPTOR;
    if (!set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
             CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, DESC, &x) ||
        !set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
             CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, DESC, &w) ||
        !set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
             CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, DESC, &out) ||
        !set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
             CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, DESC, &c) ||
        !set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
             CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, &alpha) ||
        !set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA,
             CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, &beta))
        return 0;
    CK(cudnnBackendFinalize(ops[n++]));
    if (chain == 3) {
        D s = tensor(6, SD, SD, BYVAL), t = tensor(7, XD, nullptr, VIRT);
        if (!(ops[n++] = pointwise(CUDNN_POINTWISE_MUL, out, s, t)))
            return 0;
        out = t;
    }
    if (chain >= 1) {
        D b = tensor(5, BD, BS, REAL), t = chain == 1 ? y : tensor(8, XD, nullptr, VIRT);
        if (!(ops[n++] = pointwise(CUDNN_POINTWISE_ADD, out, b, t)))
            return 0;
        out = t;
    }
    if (chain >= 2 && !(ops[n++] = pointwise(CUDNN_POINTWISE_RELU_FWD, out, nullptr, y)))
        return 0;
    D g = make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    CK(cudnnBackendSetAttribute(g, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, n,
                                ops));
    CK(cudnnBackendSetAttribute(g, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h));
    CK(cudnnBackendFinalize(g));
    return g;
}

/* The heuristics' engines of g, printed; the first plan einc would take
 * (tf32: tensor cores allowed) into *fp32 and *tf32. */
static int engines(D g, D *fp32, D *tf32)
{
    static const cudnnBackendHeurMode_t modes[2] = {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK};
    static const char *const names[] = {"TC", "DC", "FFT", "NONDET", "WINO", "WINO4", "WINO6",
                                        "REDP", "STRICT"};
    *fp32 = *tf32 = nullptr;
    for (int m = 0; m < 2; m++) {
        D heur = make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR), cfg[32];
        CK(cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
                                    CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g));
        CK(cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1,
                                    &modes[m]));
        cudnnStatus_t s = cudnnBackendFinalize(heur);
        printf("    %s:", m ? "FALLBACK" : "A");
        if (s != CUDNN_STATUS_SUCCESS) {
            printf(" heuristics %s\n", cudnnGetErrorString(s));
            continue;
        }
        for (auto &c : cfg)
            c = make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
        int64_t n = 0;
        s = cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, 32, &n, cfg);
        if (s != CUDNN_STATUS_SUCCESS) {
            printf(" results %s\n", cudnnGetErrorString(s));
            continue;
        }
        if (n == 0)
            printf(" none");
        for (int64_t i = 0; i < n && i < 32; i++) {
            D e = make(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
            int64_t k = 0, idx = -1, nn = 0;
            cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
            cudnnBackendGetAttribute(cfg[i], CUDNN_ATTR_ENGINECFG_ENGINE,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &k, &e);
            cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &k,
                                     &idx);
            cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                                     CUDNN_TYPE_NUMERICAL_NOTE, CUDNN_NUMERICAL_NOTE_TYPE_COUNT,
                                     &nn, notes);
            bool tc = false, bad = false;
            std::string ns;
            for (int64_t j = 0; j < nn && j < CUDNN_NUMERICAL_NOTE_TYPE_COUNT; j++) {
                int v = (int)notes[j];
                ns += std::string(ns.empty() ? "" : "+") + (v < 9 ? names[v] : "?");
                tc |= notes[j] == CUDNN_NUMERICAL_NOTE_TENSOR_CORE ||
                      notes[j] == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS;
                bad |= notes[j] == CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC ||
                       notes[j] == CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION;
            }
            D plan = make(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
            cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h);
            cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg[i]);
            s = cudnnBackendFinalize(plan);
            printf(" %lld[%s]%s", (long long)idx, ns.c_str(), s == CUDNN_STATUS_SUCCESS ? "" : "x");
            if (s == CUDNN_STATUS_SUCCESS && !bad && !tc && !*fp32)
                *fp32 = plan;
            if (s == CUDNN_STATUS_SUCCESS && !bad && !*tf32)
                *tf32 = plan;
        }
        printf("\n");
    }
    return 1;
}

static float urand(unsigned *s)
{
    *s = *s * 1664525u + 1013904223u;
    return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}

/* The fused plan against the plain one and the epilogue on the host. */
static int compare(D fused, D plain, int chain, const char *what)
{
    size_t nx = 64 * 56 * 56, nw = 64 * 64 * 9;
    std::vector<float> hx(nx), hw(nw), hb(64), y1(nx), y2(nx);
    unsigned seed = 7;
    for (auto &v : hx) v = urand(&seed);
    for (auto &v : hw) v = urand(&seed) * 0.05f;
    for (auto &v : hb) v = urand(&seed);
    for (size_t i = 0; i < nx; i += 997)
        hx[i] = NAN;
    float *dx, *dw, *db, *dy;
    void *ws;
    cudaMalloc(&dx, nx * 4), cudaMalloc(&dw, nw * 4), cudaMalloc(&db, 256), cudaMalloc(&dy, nx * 4);
    cudaMalloc(&ws, (size_t)1 << 30);
    cudaMemcpy(dx, hx.data(), nx * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(dw, hw.data(), nw * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(db, hb.data(), 256, cudaMemcpyHostToDevice);
    float scale = 0.5f;
    auto run = [&](D plan, bool nodes, std::vector<float> &out) {
        int64_t uids[5] = {1, 2, 3, 5, 6};
        void *ptr[5] = {dx, dw, dy, db, &scale};
        int n = nodes ? (chain == 3 ? 5 : 4) : 3;
        D pack = make(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
        CK(cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, uids));
        CK(cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR,
                                    n, ptr));
        CK(cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1,
                                    &ws));
        CK(cudnnBackendFinalize(pack));
        CK(cudnnBackendExecute(h, plan, pack));
        cudaMemcpy(out.data(), dy, nx * 4, cudaMemcpyDeviceToHost);
        return 1;
    };
    if (!run(plain, false, y1) || !run(fused, true, y2))
        return 0;
    double worst = 0, top = 0;
    long nan_ref = 0, nan_kept = 0;
    for (size_t i = 0; i < nx; i++) {
        float v = y1[i] * (chain == 3 ? scale : 1.0f) + hb[i / (56 * 56)];
        if (chain >= 2)
            v = v < 0 ? 0 : v;  /* NaN stays NaN, as einc's relu */
        if (std::isnan(v)) {
            nan_ref++;
            nan_kept += std::isnan(y2[i]);
            continue;
        }
        worst = std::fmax(worst, std::fabs((double)v - y2[i]));
        top = std::fmax(top, std::fabs((double)v));
    }
    printf("  %s: max |fused - (conv, then the epilogue)| / max = %.3g; NaN: %ld of %ld kept\n",
           what, worst / top, nan_kept, nan_ref);
    return 1;
}

int main()
{
    if (cudnnCreate(&h) != CUDNN_STATUS_SUCCESS) {
        printf("cudnnCreate failed\n");
        return 1;
    }
    printf("cuDNN %zu (compiled against %d)\n", cudnnGetVersion(), CUDNN_VERSION);
    D plain_fp32 = nullptr, plain_tf32 = nullptr;
    D best[2][4][2] = {};
    for (int bwd = 0; bwd < 2; bwd++)
        for (int chain = 0; chain < 4; chain++) {
            printf("%s + %s:\n", bwd ? "backward data" : "forward", chains[chain]);
            D g = graph(bwd, chain);
            if (!g) {
                printf("    the graph does not finalize\n");
                continue;
            }
            engines(g, &best[bwd][chain][0], &best[bwd][chain][1]);
            printf("    einc at fp32: %s; at tf32: %s\n",
                   best[bwd][chain][0] ? "an engine" : "NONE",
                   best[bwd][chain][1] ? "an engine" : "NONE");
        }
    plain_fp32 = best[0][0][0];
    plain_tf32 = best[0][0][1];
    for (int chain = 1; chain < 4; chain++)
        for (int p = 0; p < 2; p++)
            if (best[0][chain][p] && (p ? plain_tf32 : plain_fp32))
                compare(best[0][chain][p], p ? plain_tf32 : plain_fp32, chain,
                        (std::string("forward + ") + chains[chain] + (p ? " (tf32)" : " (fp32)")).c_str());
    for (size_t i = made.size(); i-- > 0;)
        cudnnBackendDestroyDescriptor(made[i]);
    cudnnDestroy(h);
    return 0;
}
