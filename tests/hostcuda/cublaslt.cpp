/* cublaslt.cpp - the cuBLASLt calls einc's output makes, on the host,
 * written from the cuBLAS Library documentation of the cuBLASLt API
 * (cublasLtCreate, cublasLtDestroy, cublasLtMatmulDescCreate and
 * SetAttribute, cublasLtMatrixLayoutCreate and SetAttribute,
 * cublasLtMatmulPreferenceCreate and SetAttribute,
 * cublasLtMatmulAlgoGetHeuristic, cublasLtMatmul, cublasLtEpilogue_t) and
 * the comments of cublasLt.h:
 *
 *  - descriptors record their attributes; SetAttribute of a null buffer
 *    or a size that is not the attribute's type is
 *    CUBLAS_STATUS_INVALID_VALUE, as documented; an attribute the mock
 *    does not implement is reported;
 *  - the problem (what the heuristics and cublasLtMatmul check): the
 *    layouts' rows and columns agree with the transposes (op(A) m x k,
 *    op(B) k x n, C and D m x n), leading dimensions at least the rows
 *    ("large enough so that matrix memory locations are not
 *    overlapping"), one batch count, TRANSC CUBLAS_OP_N ("currently only
 *    CUBLAS_OP_N is supported"): CUBLAS_STATUS_INVALID_VALUE ("parameters
 *    are in conflict"); a compute type, scale type and A/B/C types not in
 *    the table of cublasLtMatmul (its f32 rows: CUBLAS_COMPUTE_32F and
 *    _PEDANTIC with f32, f16 or bf16 operands, the _FAST_ ones with f32;
 *    scale type CUDA_R_32F): CUBLAS_STATUS_NOT_SUPPORTED; orders other
 *    than CUBLASLT_ORDER_COL, device pointer modes, the AUX and gradient
 *    epilogues, another bias type: reported as not implemented;
 *  - cublasLtMatmulAlgoGetHeuristic: requestedAlgoCount <= 0 is
 *    CUBLAS_STATUS_INVALID_VALUE; it gives one algorithm, which needs the
 *    alignments the preference allowed (CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_*,
 *    256 bytes by default) and that of the bias pointer the descriptor
 *    held ("routines that don't dereference this pointer ... depend on its
 *    value to determine expected pointer alignment"), and the most
 *    workspace the preference allowed, up to 1 MiB (MAX_WORKSPACE_BYTES,
 *    0 by default: none);
 *  - cublasLtMatmul: a null alpha or beta, a workspace smaller than the
 *    algorithm's ("when workspaceSizeInBytes is less than workspace
 *    required by configured algo"): CUBLAS_STATUS_INVALID_VALUE; an
 *    algorithm the heuristics gave for another problem, a pointer below
 *    the alignment it was chosen for, a workspace not 256-byte aligned
 *    device memory, an operand (every batch) or bias outside one
 *    allocation, C overlapping D but for C == D, a bias epilogue without
 *    a bias: errors of the caller; then the column-major reference of
 *    cublas.cpp with the epilogue as documented, D = act(alpha op(A)
 *    op(B) + beta C + bias), queued on the stream, beta = 0 never reading
 *    C; the arithmetic of the compute type as in cublas.cpp (the handle
 *    has no math mode; CUBLAS_EMULATE_SINGLE_PRECISION set at
 *    cublasLtCreate turns CUBLAS_COMPUTE_32F to BF16x9 emulation here too);
 *  - cublasLtDestroy implicitly synchronizes the device, as documented:
 *    refused while a stream captures.
 *
 * The exit report counts "cublasLt matmul fp32" (the arithmetic),
 * "cublasLt matmul with epilogue NAME", "cublasLt heuristic queries";
 * handles and descriptors alive at exit are leaks (cudart.cpp).
 * HOSTCUDA_CUBLASLT_NO_ALGO=1: the heuristics find no algorithm
 * (CUBLAS_STATUS_NOT_SUPPORTED, none returned); HOSTCUDA_CUBLASLT_CREATE=fail:
 * cublasLtCreate says CUBLAS_STATUS_NOT_INITIALIZED.
 *
 * Ambiguities: the ReLU epilogue is documented as max(x, 0), which leaves
 * NaN open: the mock gives 0 (as reported of cuBLASLt on NVIDIA's forum),
 * where a program's relu keeps NaN.  The GELU epilogue is documented as
 * GELU(x); the mock computes the tanh form in f32 (what PyTorch computes
 * where it cannot use the epilogue), and so must a program to use it. */
#include "mock.h"

#include <cublasLt.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>

using namespace hc::blas;

struct cublasLtContext {
    bool emulate;           /* CUBLAS_EMULATE_SINGLE_PRECISION at creation */
};

namespace {

struct Desc {
    cublasComputeType_t compute;
    int32_t scale;
    int32_t pmode = CUBLASLT_POINTER_MODE_HOST;
    int32_t trans[3] = {CUBLAS_OP_N, CUBLAS_OP_N, CUBLAS_OP_N};
    int32_t fill = CUBLAS_FILL_MODE_FULL;
    uint32_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
    const void *bias = nullptr;
    int64_t bias_stride = 0;
    int32_t bias_type = -1;
};

struct Layout {
    uint32_t type;
    int32_t order = CUBLASLT_ORDER_COL;
    uint64_t rows, cols;
    int64_t ld;
    int32_t batch = 1;
    int64_t stride = 0, plane = 0;
    uint32_t batch_mode = 0;
};

struct Pref {
    uint32_t search = CUBLASLT_SEARCH_BEST_FIT;
    uint64_t max_ws = 0;
    uint32_t reduction = CUBLASLT_REDUCTION_SCHEME_MASK;
    uint32_t align[4] = {256, 256, 256, 256};
    float waves = 0;
    uint64_t impl = ~0ull;
};

std::set<cublasLtContext *> handles;
std::map<const void *, Desc> descs;
std::map<const void *, Layout> layouts;
std::map<const void *, Pref> prefs;

/* What an algorithm of the mock holds (cublasLtMatmulAlgo_t's data[8]). */
enum { ALGO_MAGIC, ALGO_PROBLEM, ALGO_WS, ALGO_ALIGN, ALGO_BIAS_ALIGN };
const uint64_t MAGIC = 0x6c74616c676f3031ull;
const uint64_t ALGO_MAX_WS = 1 << 20;

bool handle_ok(const char *call, cublasLtHandle_t h)
{
    if (!h || !handles.count(h)) {
        if (h)
            hc::misuse(call, "handle %p was never created or was destroyed", (void *)h);
        return false;
    }
    return true;
}

template <class M> typename M::mapped_type *find(M &m, const char *call, const void *p,
                                                 const char *what)
{
    auto it = m.find(p);
    if (it == m.end()) {
        hc::misuse(call, "%s %p was never created or was destroyed", what, p);
        return nullptr;
    }
    return &it->second;
}

template <class T> cublasStatus_t set(T &field, const void *buf, size_t size)
{
    if (!buf || size != sizeof(T))
        return CUBLAS_STATUS_INVALID_VALUE;
    memcpy(&field, buf, sizeof(T));
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t not_implemented(const char *call, int attr)
{
    hc::misuse(call, "attribute %d is not implemented by the mock", attr);
    return CUBLAS_STATUS_INVALID_VALUE;
}

/* The largest power of two (up to 256) that p is aligned to. */
uint64_t alignment(const void *p)
{
    uint64_t a = 1;
    while (a < 256 && (uintptr_t)p % (a * 2) == 0)
        a *= 2;
    return a;
}

const char *epilogue_name(uint32_t e)
{
    switch (e) {
    case CUBLASLT_EPILOGUE_DEFAULT: return "DEFAULT";
    case CUBLASLT_EPILOGUE_RELU: return "RELU";
    case CUBLASLT_EPILOGUE_BIAS: return "BIAS";
    case CUBLASLT_EPILOGUE_RELU_BIAS: return "RELU_BIAS";
    case CUBLASLT_EPILOGUE_GELU: return "GELU";
    case CUBLASLT_EPILOGUE_GELU_BIAS: return "GELU_BIAS";
    }
    return nullptr;
}

bool valid_epilogue(uint32_t e)
{
    switch (e) {
    case CUBLASLT_EPILOGUE_DEFAULT: case CUBLASLT_EPILOGUE_RELU: case CUBLASLT_EPILOGUE_RELU_AUX:
    case CUBLASLT_EPILOGUE_BIAS: case CUBLASLT_EPILOGUE_RELU_BIAS:
    case CUBLASLT_EPILOGUE_RELU_AUX_BIAS: case CUBLASLT_EPILOGUE_DRELU:
    case CUBLASLT_EPILOGUE_DRELU_BGRAD: case CUBLASLT_EPILOGUE_GELU:
    case CUBLASLT_EPILOGUE_GELU_AUX: case CUBLASLT_EPILOGUE_GELU_BIAS:
    case CUBLASLT_EPILOGUE_GELU_AUX_BIAS: case CUBLASLT_EPILOGUE_DGELU:
    case CUBLASLT_EPILOGUE_DGELU_BGRAD: case CUBLASLT_EPILOGUE_BGRADA:
    case CUBLASLT_EPILOGUE_BGRADB:
        return true;
    }
    return false;
}

/* A matmul as its descriptors say, checked. */
struct Problem {
    const Desc *d;
    const Layout *a, *b, *c, *dl;
    int m, n, k, batch;
    uint64_t key;               /* a hash of everything but the pointers */
};

uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h;
}

cublasStatus_t problem(const char *call, cublasLtMatmulDesc_t dsc, cublasLtMatrixLayout_t A,
                       cublasLtMatrixLayout_t B, cublasLtMatrixLayout_t C,
                       cublasLtMatrixLayout_t D, Problem *p)
{
    p->d = find(descs, call, dsc, "matmul descriptor");
    p->a = find(layouts, call, A, "layout A");
    p->b = find(layouts, call, B, "layout B");
    p->c = find(layouts, call, C, "layout C");
    p->dl = find(layouts, call, D, "layout D");
    if (!p->d || !p->a || !p->b || !p->c || !p->dl)
        return CUBLAS_STATUS_INVALID_VALUE;
    const Desc &d = *p->d;
    const Layout *l[4] = {p->a, p->b, p->c, p->dl};
    for (const Layout *x : l) {
        if (x->order != CUBLASLT_ORDER_COL || x->plane != 0 || x->batch_mode != 0) {
            hc::misuse(call, "a layout that is not column-major, planar or of pointer arrays "
                       "is not implemented by the mock");
            return CUBLAS_STATUS_NOT_SUPPORTED;
        }
        if (x->ld < 0 || (uint64_t)x->ld < std::max<uint64_t>(1, x->rows) ||
            x->rows > INT32_MAX || x->cols > INT32_MAX || x->batch < 1) {
            hc::count("cublasLt rejected: invalid layout");
            return CUBLAS_STATUS_INVALID_VALUE;
        }
    }
    if (d.pmode != CUBLASLT_POINTER_MODE_HOST || d.fill != CUBLAS_FILL_MODE_FULL) {
        hc::misuse(call, "a pointer mode other than HOST or a fill mode other than FULL is "
                   "not implemented by the mock");
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    for (int i = 0; i < 2; i++)
        if (d.trans[i] != CUBLAS_OP_N && d.trans[i] != CUBLAS_OP_T && d.trans[i] != CUBLAS_OP_C)
            return CUBLAS_STATUS_INVALID_VALUE;
    if (d.trans[2] != CUBLAS_OP_N) {
        hc::count("cublasLt rejected: TRANSC");
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    if (!valid_epilogue(d.epilogue))
        return CUBLAS_STATUS_INVALID_VALUE;
    if (!epilogue_name(d.epilogue)) {
        hc::misuse(call, "epilogue %u (an AUX or gradient one) is not implemented by the mock",
                   d.epilogue);
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    bool ta = d.trans[0] != CUBLAS_OP_N, tb = d.trans[1] != CUBLAS_OP_N;
    uint64_t m = p->dl->rows, n = p->dl->cols, k = ta ? p->a->rows : p->a->cols;
    if ((ta ? p->a->cols : p->a->rows) != m || (tb ? p->b->cols : p->b->rows) != k ||
        (tb ? p->b->rows : p->b->cols) != n || p->c->rows != m || p->c->cols != n ||
        p->a->batch != p->dl->batch || p->b->batch != p->dl->batch ||
        p->c->batch != p->dl->batch) {
        hc::count("cublasLt rejected: sizes in conflict");
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    cudaDataType at = (cudaDataType)p->a->type, ct = (cudaDataType)p->c->type;
    int comb = combination(d.compute, at, ct);
    if (comb < 0) {
        hc::misuse(call, "compute type %d with A type %d and C type %d: a row of the table the "
                   "mock does not implement", (int)d.compute, (int)at, (int)ct);
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    if (comb == 0 || p->b->type != p->a->type || p->dl->type != p->c->type ||
        d.scale != CUDA_R_32F) {
        hc::count("cublasLt rejected: types not supported");
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    if (d.bias_type != -1 && d.bias_type != (int32_t)ct) {
        hc::misuse(call, "a bias type other than D's is not implemented by the mock");
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    p->m = (int)m, p->n = (int)n, p->k = (int)k, p->batch = p->dl->batch;
    uint64_t h = 0;
    uint64_t v[] = {(uint64_t)d.compute, (uint64_t)d.scale, (uint64_t)d.trans[0],
                    (uint64_t)d.trans[1], d.epilogue, (uint64_t)d.bias_stride};
    for (uint64_t x : v)
        h = mix(h, x);
    for (const Layout *x : l) {
        uint64_t w[] = {x->type, x->rows, x->cols, (uint64_t)x->ld, (uint64_t)x->batch,
                        (uint64_t)x->stride};
        for (uint64_t y : w)
            h = mix(h, y);
    }
    p->key = h;
    return CUBLAS_STATUS_SUCCESS;
}

} /* namespace */

cublasStatus_t cublasLtCreate(cublasLtHandle_t *h)
{
    if (!h)
        return CUBLAS_STATUS_INVALID_VALUE;
    const char *mode = getenv("HOSTCUDA_CUBLASLT_CREATE");
    if (mode && strcmp(mode, "fail") == 0) {
        hc::count("cublasLtCreate refused");
        return CUBLAS_STATUS_NOT_INITIALIZED;
    }
    cublasLtContext *c = new cublasLtContext{hc::env_flag("CUBLAS_EMULATE_SINGLE_PRECISION")};
    handles.insert(c);
    hc::live_lt++;
    hc::count("cublasLtCreate");
    *h = c;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t h)
{
    if (!handle_ok("cublasLtDestroy", h))
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (hc::capture_conflict("cublasLtDestroy", "an implicit cudaDeviceSynchronize"))
        return CUBLAS_STATUS_INTERNAL_ERROR;
    hc::drain_all();
    handles.erase(h);
    delete h;
    hc::live_lt--;
    return CUBLAS_STATUS_SUCCESS;
}

const char *cublasLtGetStatusName(cublasStatus_t s)
{
    return cublasGetStatusName(s);
}

const char *cublasLtGetStatusString(cublasStatus_t s)
{
    return cublasGetStatusString(s);
}

/* ---- descriptors ---------------------------------------------------------------- */

template <class O, class R> static cublasStatus_t make(std::map<const void *, R> &m, O **out,
                                                       const R &r)
{
    if (!out)
        return CUBLAS_STATUS_INVALID_VALUE;
    O *o = new O{};
    m[o] = r;
    hc::live_lt_desc++;
    *out = o;
    return CUBLAS_STATUS_SUCCESS;
}

template <class O, class R> static cublasStatus_t unmake(std::map<const void *, R> &m, O *o,
                                                         const char *call)
{
    if (!o)
        return CUBLAS_STATUS_SUCCESS;
    if (!find(m, call, o, "descriptor"))
        return CUBLAS_STATUS_INVALID_VALUE;
    m.erase(o);
    delete o;
    hc::live_lt_desc--;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *d, cublasComputeType_t compute,
                                        cudaDataType_t scale)
{
    Desc r;
    r.compute = compute;
    r.scale = scale;
    return make(descs, d, r);
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d)
{
    return unmake(descs, d, "cublasLtMatmulDescDestroy");
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d,
                                              cublasLtMatmulDescAttributes_t attr,
                                              const void *buf, size_t size)
{
    const char *call = "cublasLtMatmulDescSetAttribute";
    Desc *r = find(descs, call, d, "matmul descriptor");
    if (!r)
        return CUBLAS_STATUS_INVALID_VALUE;
    switch (attr) {
    case CUBLASLT_MATMUL_DESC_COMPUTE_TYPE: {
        int32_t v;
        cublasStatus_t s = set(v, buf, size);
        if (s == CUBLAS_STATUS_SUCCESS)
            r->compute = (cublasComputeType_t)v;
        return s;
    }
    case CUBLASLT_MATMUL_DESC_SCALE_TYPE: return set(r->scale, buf, size);
    case CUBLASLT_MATMUL_DESC_POINTER_MODE: return set(r->pmode, buf, size);
    case CUBLASLT_MATMUL_DESC_TRANSA: return set(r->trans[0], buf, size);
    case CUBLASLT_MATMUL_DESC_TRANSB: return set(r->trans[1], buf, size);
    case CUBLASLT_MATMUL_DESC_TRANSC: return set(r->trans[2], buf, size);
    case CUBLASLT_MATMUL_DESC_FILL_MODE: return set(r->fill, buf, size);
    case CUBLASLT_MATMUL_DESC_EPILOGUE: return set(r->epilogue, buf, size);
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER: return set(r->bias, buf, size);
    case CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE: return set(r->bias_stride, buf, size);
    case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE: return set(r->bias_type, buf, size);
    default: return not_implemented(call, (int)attr);
    }
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *l, cudaDataType type,
                                          uint64_t rows, uint64_t cols, int64_t ld)
{
    Layout r;
    r.type = (uint32_t)type;
    r.rows = rows;
    r.cols = cols;
    r.ld = ld;
    if (type != CUDA_R_32F && type != CUDA_R_16F && type != CUDA_R_16BF)
        hc::misuse("cublasLtMatrixLayoutCreate", "data type %d is not implemented by the mock",
                   (int)type);
    return make(layouts, l, r);
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l)
{
    return unmake(layouts, l, "cublasLtMatrixLayoutDestroy");
}

cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t l,
                                                cublasLtMatrixLayoutAttribute_t attr,
                                                const void *buf, size_t size)
{
    const char *call = "cublasLtMatrixLayoutSetAttribute";
    Layout *r = find(layouts, call, l, "matrix layout");
    if (!r)
        return CUBLAS_STATUS_INVALID_VALUE;
    switch (attr) {
    case CUBLASLT_MATRIX_LAYOUT_TYPE: return set(r->type, buf, size);
    case CUBLASLT_MATRIX_LAYOUT_ORDER: return set(r->order, buf, size);
    case CUBLASLT_MATRIX_LAYOUT_ROWS: return set(r->rows, buf, size);
    case CUBLASLT_MATRIX_LAYOUT_COLS: return set(r->cols, buf, size);
    case CUBLASLT_MATRIX_LAYOUT_LD: return set(r->ld, buf, size);
    case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT: return set(r->batch, buf, size);
    case CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET: return set(r->stride, buf, size);
    case CUBLASLT_MATRIX_LAYOUT_PLANE_OFFSET: return set(r->plane, buf, size);
    case CUBLASLT_MATRIX_LAYOUT_BATCH_MODE: return set(r->batch_mode, buf, size);
    default: return not_implemented(call, (int)attr);
    }
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *p)
{
    return make(prefs, p, Pref{});
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p)
{
    return unmake(prefs, p, "cublasLtMatmulPreferenceDestroy");
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t p,
                                                    cublasLtMatmulPreferenceAttributes_t attr,
                                                    const void *buf, size_t size)
{
    const char *call = "cublasLtMatmulPreferenceSetAttribute";
    Pref *r = find(prefs, call, p, "preference");
    if (!r)
        return CUBLAS_STATUS_INVALID_VALUE;
    switch (attr) {
    case CUBLASLT_MATMUL_PREF_SEARCH_MODE: return set(r->search, buf, size);
    case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES: return set(r->max_ws, buf, size);
    case CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK: return set(r->reduction, buf, size);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES: return set(r->align[0], buf, size);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES: return set(r->align[1], buf, size);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES: return set(r->align[2], buf, size);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES: return set(r->align[3], buf, size);
    case CUBLASLT_MATMUL_PREF_MAX_WAVES_COUNT: return set(r->waves, buf, size);
    case CUBLASLT_MATMUL_PREF_IMPL_MASK: return set(r->impl, buf, size);
    default: return not_implemented(call, (int)attr);
    }
}

/* ---- heuristics and the matmul ---------------------------------------------------- */

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t h, cublasLtMatmulDesc_t d,
                                              cublasLtMatrixLayout_t A, cublasLtMatrixLayout_t B,
                                              cublasLtMatrixLayout_t C, cublasLtMatrixLayout_t D,
                                              cublasLtMatmulPreference_t pref, int requested,
                                              cublasLtMatmulHeuristicResult_t results[],
                                              int *returned)
{
    const char *call = "cublasLtMatmulAlgoGetHeuristic";
    if (!handle_ok(call, h))
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (requested <= 0 || !results || !returned)
        return CUBLAS_STATUS_INVALID_VALUE;
    *returned = 0;
    Pref *pr = find(prefs, call, pref, "preference");
    if (!pr)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (pr->search != CUBLASLT_SEARCH_BEST_FIT) {
        hc::misuse(call, "a search mode other than BEST_FIT is not implemented by the mock");
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    Problem p;
    cublasStatus_t s = problem(call, d, A, B, C, D, &p);
    if (s != CUBLAS_STATUS_SUCCESS)
        return s;
    hc::count("cublasLt heuristic queries");
    if (hc::env_flag("HOSTCUDA_CUBLASLT_NO_ALGO")) {
        hc::count("cublasLt heuristic: no algorithm");
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    cublasLtMatmulHeuristicResult_t &r = results[0];
    memset(&r, 0, sizeof r);
    r.algo.data[ALGO_MAGIC] = MAGIC;
    r.algo.data[ALGO_PROBLEM] = p.key;
    r.algo.data[ALGO_WS] = std::min<uint64_t>(pr->max_ws, ALGO_MAX_WS);
    r.algo.data[ALGO_ALIGN] = (uint64_t)pr->align[0] | (uint64_t)pr->align[1] << 16 |
                              (uint64_t)pr->align[2] << 32 | (uint64_t)pr->align[3] << 48;
    r.algo.data[ALGO_BIAS_ALIGN] = p.d->bias ? alignment(p.d->bias) : 256;
    r.workspaceSize = (size_t)r.algo.data[ALGO_WS];
    r.state = CUBLAS_STATUS_SUCCESS;
    r.wavesCount = 1.0f;
    *returned = 1;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t desc, const void *alpha,
                              const void *A, cublasLtMatrixLayout_t Adesc, const void *B,
                              cublasLtMatrixLayout_t Bdesc, const void *beta, const void *C,
                              cublasLtMatrixLayout_t Cdesc, void *D, cublasLtMatrixLayout_t Ddesc,
                              const cublasLtMatmulAlgo_t *algo, void *ws, size_t ws_bytes,
                              cudaStream_t stream)
{
    const char *call = "cublasLtMatmul";
    if (!handle_ok(call, h))
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!hc::stream_ok(call, stream))
        return CUBLAS_STATUS_INVALID_VALUE;
    Problem p;
    cublasStatus_t s = problem(call, desc, Adesc, Bdesc, Cdesc, Ddesc, &p);
    if (s != CUBLAS_STATUS_SUCCESS)
        return s;
    if (!alpha || !beta)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (hc::is_device(alpha) || hc::is_device(beta))
        hc::misuse(call, "alpha or beta is device memory in CUBLASLT_POINTER_MODE_HOST");
    const Desc &d = *p.d;
    uint64_t need_ws = 0, align[4] = {1, 1, 1, 1}, bias_align = 1;
    if (!algo) {
        hc::count("cublasLt matmul with an implicit heuristic query");
    } else if (algo->data[ALGO_MAGIC] != MAGIC) {
        hc::misuse(call, "the algorithm is none that cublasLtMatmulAlgoGetHeuristic gave");
        return CUBLAS_STATUS_INVALID_VALUE;
    } else if (algo->data[ALGO_PROBLEM] != p.key) {
        hc::misuse(call, "the algorithm was found for another problem (descriptor or layouts "
                   "changed since)");
        return CUBLAS_STATUS_INVALID_VALUE;
    } else {
        need_ws = algo->data[ALGO_WS];
        for (int i = 0; i < 4; i++)
            align[i] = algo->data[ALGO_ALIGN] >> (16 * i) & 0xffff;
        bias_align = algo->data[ALGO_BIAS_ALIGN];
    }
    if (ws_bytes < need_ws) {
        hc::count("cublasLt matmul rejected: workspace smaller than the algorithm's");
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    if (need_ws && ((uintptr_t)ws % 256 || !hc::device_range(ws, ws_bytes))) {
        hc::misuse(call, "the workspace (%zu bytes at %p) is not 256-byte aligned device "
                   "memory", ws_bytes, ws);
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    bool has_bias = d.epilogue & CUBLASLT_EPILOGUE_BIAS;
    if (has_bias && !d.bias) {
        hc::count("cublasLt matmul rejected: a bias epilogue without a bias");
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    const void *ptr[5] = {A, B, C, D, has_bias ? d.bias : nullptr};
    const char *names[5] = {"A", "B", "C", "D", "the bias"};
    for (int i = 0; i < 5; i++) {
        uint64_t want = i < 4 ? align[i] : bias_align;
        if (ptr[i] && (uintptr_t)ptr[i] % want) {
            hc::misuse(call, "%s (%p) is below the %llu-byte alignment the algorithm was "
                       "chosen for", names[i], ptr[i], (unsigned long long)want);
            return CUBLAS_STATUS_INVALID_VALUE;
        }
    }
    float al = *(const float *)alpha, be = *(const float *)beta;
    cudaDataType at = (cudaDataType)p.a->type, ct = (cudaDataType)p.c->type;
    bool ta = d.trans[0] != CUBLAS_OP_N, tb = d.trans[1] != CUBLAS_OP_N;
    if (!operand_ok(call, "A", A, at, (int)p.a->rows, (int)p.a->cols, (int)p.a->ld,
                    p.a->stride, p.batch) ||
        !operand_ok(call, "B", B, at, (int)p.b->rows, (int)p.b->cols, (int)p.b->ld,
                    p.b->stride, p.batch) ||
        (be != 0.0f && !operand_ok(call, "C", C, ct, p.m, p.n, (int)p.c->ld, p.c->stride,
                                   p.batch)) ||
        !operand_ok(call, "D", D, ct, p.m, p.n, (int)p.dl->ld, p.dl->stride, p.batch) ||
        (has_bias && !operand_ok(call, "the bias", d.bias, ct, p.m, 1, p.m, d.bias_stride,
                                 p.batch)))
        return CUBLAS_STATUS_INVALID_VALUE;
    size_t es = elem_size(ct), dn = extent(p.m, p.n, (int)p.dl->ld);
    if (p.batch > 1 && p.m > 0 && p.n > 0 && (size_t)std::llabs(p.dl->stride) < dn)
        hc::misuse(call, "the batches of D overlap (stride %lld, each %zu elements): undefined",
                   (long long)p.dl->stride, dn);
    if (be != 0.0f && C != D) {
        /* C and D apart, or the same matrix: not partly overlapping */
        const char *c0 = (const char *)C, *d0 = (const char *)D;
        size_t span = ((size_t)(p.batch - 1) * (size_t)p.dl->stride + dn) * es;
        if (c0 < d0 + span && d0 < c0 + span)
            hc::misuse(call, "C and D overlap without being the same matrix: undefined");
    }
    Gemm g{};
    g.ta = ta, g.tb = tb;
    g.m = p.m, g.n = p.n, g.k = p.k;
    g.alpha = al, g.beta = be;
    g.a = A, g.b = B, g.c = C, g.d = D;
    g.at = at, g.bt = at, g.ct = ct;
    g.lda = (int)p.a->ld, g.ldb = (int)p.b->ld, g.ldc = (int)p.c->ld, g.ldd = (int)p.dl->ld;
    g.sa = p.a->stride, g.sb = p.b->stride, g.sc = p.c->stride, g.sd = p.dl->stride;
    g.batch = p.batch;
    g.arith = arithmetic(CUBLAS_DEFAULT_MATH, h->emulate, d.compute, at);
    g.bias = has_bias ? d.bias : nullptr;
    g.sbias = d.bias_stride;
    uint32_t act = d.epilogue & ~(uint32_t)CUBLASLT_EPILOGUE_BIAS;
    g.act = act == CUBLASLT_EPILOGUE_RELU ? ACT_RELU : act == CUBLASLT_EPILOGUE_GELU ? ACT_GELU
                                                                                     : ACT_NONE;
    hc::count(std::string("cublasLt matmul ") + arith_name[g.arith]);
    hc::count(std::string("cublasLt matmul with epilogue ") + epilogue_name(d.epilogue));
    if (p.m == 0 || p.n == 0)
        return CUBLAS_STATUS_SUCCESS;
    if (hc::enqueue(stream, call, [g]() { run(g); }, {A, B, C, D, g.bias, ws}) != cudaSuccess)
        return CUBLAS_STATUS_EXECUTION_FAILED;
    return CUBLAS_STATUS_SUCCESS;
}
