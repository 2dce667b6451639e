/* cudnn.cpp - cuDNN 9's backend (graph) API as einc's output uses it, on
 * the host, written from the cuDNN Backend API documentation (backend
 * descriptor types and their attributes, cudnnBackendSetAttribute,
 * GetAttribute, Finalize, Execute) and cudnn_graph.h:
 *
 *  - every descriptor records its attributes; SetAttribute checks that the
 *    attribute belongs to the descriptor's type, is not read-only, has the
 *    documented attribute type and element count, and that the descriptor
 *    is not finalized; Finalize checks that every required attribute is
 *    there and consistent (tensor strides per dimension, positive sizes,
 *    an alignment that is a multiple of the element size; a convolution's
 *    dilations, strides and paddings one per spatial dimension; an
 *    operation's tensors finalized, of one data type, and their shapes
 *    those the convolution's arithmetic gives:
 *        y = (x + pre + post - dil (w - 1) - 1) / stride + 1,
 *    y's channels the filter count, x's channels a multiple of the
 *    filter's); a pointwise descriptor's mode and math precision (the
 *    forward modes einc uses, FLOAT), a pointwise operation's y and, for
 *    exactly the two-input modes, b, each dimension of x and b y's or 1;
 *    a by-value tensor a scalar; a graph's operations finalized, one
 *    tensor to a uid (a virtual one written by one operation, read by
 *    another), each written once and not by its reader, each virtual one
 *    written and read, no cycle, no convolution into a virtual tensor
 *    with beta other than 0;
 *  - heuristics (modes INSTANT, A, B) return four engine configs: engine 0
 *    is TENSOR_CORE and DOWN_CONVERT_INPUTS (f32 operands become TF32,
 *    truncated), engine 1 NONDETERMINISTIC (its sums start at another
 *    channel each execution and each process: HOSTCUDA_NONDET_SEED, else
 *    the process id), engine 2 asks for a large workspace (4 GiB), engine 3
 *    is plain fp32 with a workspace it really uses (an im2col of one image
 *    and group); mode FALLBACK returns engine 4, plain, no workspace;
 *    a graph of a convolution and pointwise nodes gets the same configs,
 *    and engine 4's plan refuses it (NOT_SUPPORTED);
 *  - HOSTCUDA_REFUSE_ENGINES=1: every execution plan's Finalize says
 *    CUDNN_STATUS_NOT_SUPPORTED; HOSTCUDA_REFUSE_FUSION=1: so does every
 *    plan of a graph with pointwise nodes; HOSTCUDA_CUDNN_CREATE=fail: cudnnCreate
 *    says CUDNN_STATUS_NOT_INITIALIZED (as when the runtime cannot start);
 *  - Execute checks the variant pack: each non-virtual tensor's uid once,
 *    no other uid, each pointer inside one allocation for the tensor's
 *    whole extent and aligned to its CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, a
 *    by-value tensor's in host memory (read at the call), a workspace of
 *    the plan's size inside one allocation; then queues the graph on the
 *    handle's stream: a reference forward convolution or backward-data
 *    (fp32 sums; 16-bit outputs rounded to nearest even), then the
 *    pointwise nodes in FLOAT as cudnnPointwiseMode_t documents them
 *    (pw_apply), virtual tensors in host buffers.
 * Errors of the caller are reported (mock.h) as well as returned.
 *
 * Ambiguities, and what the mock does:
 *  - whether a descriptor set as another's attribute must outlive it: the
 *    mock copies what it needs at Finalize (lenient);
 *  - SetAttribute on a finalized descriptor: CUDNN_STATUS_NOT_INITIALIZED
 *    (the documented status, as far as the documentation goes);
 *  - GetAttribute's *elementCount is the number the attribute has, of
 *    which min(that, requestedElementCount) are written;
 *  - whether Execute's handle must be the plan's: required here;
 *  - uids in the variant pack that the graph does not have: an error here;
 *  - CUDNN_ATTR_OPERATIONGRAPH_HANDLE and CUDNN_ATTR_EXECUTION_PLAN_HANDLE
 *    are deprecated in cuDNN 9.19's header but still documented as
 *    required: required here;
 *  - the TF32 conversion of tensor-core engines (see cublas.cpp);
 *  - NaN in RELU_FWD, MAX, MIN without CUDNN_PROPAGATE_NAN (pw_apply);
 *  - a B on a one-input pointwise mode, a by-value tensor of several
 *    elements: errors here; the order of a graph's operations: any.
 * Only what einc emits is implemented: one convolution (2 spatial dims)
 * per graph, FLOAT/HALF/BFLOAT16 data with FLOAT compute, then forward
 * pointwise nodes in FLOAT. */
#include "mock.h"

#include <algorithm>
#include <cstdarg>
#include <cmath>
#include <cfloat>
#include <cstring>
#include <unistd.h>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

struct cudnnContext {
    cudaStream_t stream;
};

namespace {

/* ---- the attribute table ---------------------------------------------------------- */

enum { REQ = 1, RO = 2 };       /* required; read-only */
const int64_t MANY = 1 << 30;

struct Spec {
    cudnnBackendDescriptorType_t desc;
    cudnnBackendAttributeName_t attr;
    cudnnBackendAttributeType_t type, type2;    /* type2: also allowed (ALPHA/BETA) */
    int64_t min, max;
    int flags;
    const char *name;
};

#define T(d, a, t, t2, lo, hi, f) {CUDNN_BACKEND_##d##_DESCRIPTOR, CUDNN_ATTR_##a, CUDNN_TYPE_##t, \
                                   CUDNN_TYPE_##t2, lo, hi, f, "CUDNN_ATTR_" #a}
const Spec specs[] = {
    T(TENSOR, TENSOR_BYTE_ALIGNMENT, INT64, INT64, 1, 1, REQ),
    T(TENSOR, TENSOR_DATA_TYPE, DATA_TYPE, DATA_TYPE, 1, 1, REQ),
    T(TENSOR, TENSOR_DIMENSIONS, INT64, INT64, 1, CUDNN_DIM_MAX, REQ),
    T(TENSOR, TENSOR_STRIDES, INT64, INT64, 1, CUDNN_DIM_MAX, REQ),
    T(TENSOR, TENSOR_UNIQUE_ID, INT64, INT64, 1, 1, REQ),
    T(TENSOR, TENSOR_IS_VIRTUAL, BOOLEAN, BOOLEAN, 1, 1, 0),
    T(TENSOR, TENSOR_IS_BY_VALUE, BOOLEAN, BOOLEAN, 1, 1, 0),
    T(TENSOR, TENSOR_VECTOR_COUNT, INT64, INT64, 1, 1, 0),
    T(TENSOR, TENSOR_VECTORIZED_DIMENSION, INT64, INT64, 1, 1, 0),
    T(TENSOR, TENSOR_REORDERING_MODE, TENSOR_REORDERING_MODE, TENSOR_REORDERING_MODE, 1, 1, 0),
    T(TENSOR, TENSOR_RAGGED_OFFSET_DESC, BACKEND_DESCRIPTOR, BACKEND_DESCRIPTOR, 1, 1, 0),
    T(CONVOLUTION, CONVOLUTION_COMP_TYPE, DATA_TYPE, DATA_TYPE, 1, 1, REQ),
    T(CONVOLUTION, CONVOLUTION_CONV_MODE, CONVOLUTION_MODE, CONVOLUTION_MODE, 1, 1, REQ),
    T(CONVOLUTION, CONVOLUTION_DILATIONS, INT64, INT64, 1, CUDNN_DIM_MAX - 2, REQ),
    T(CONVOLUTION, CONVOLUTION_FILTER_STRIDES, INT64, INT64, 1, CUDNN_DIM_MAX - 2, REQ),
    T(CONVOLUTION, CONVOLUTION_POST_PADDINGS, INT64, INT64, 1, CUDNN_DIM_MAX - 2, REQ),
    T(CONVOLUTION, CONVOLUTION_PRE_PADDINGS, INT64, INT64, 1, CUDNN_DIM_MAX - 2, REQ),
    T(CONVOLUTION, CONVOLUTION_SPATIAL_DIMS, INT64, INT64, 1, 1, REQ),
    T(OPERATION_CONVOLUTION_FORWARD, OPERATION_CONVOLUTION_FORWARD_ALPHA, FLOAT, DOUBLE, 1, 1, REQ),
    T(OPERATION_CONVOLUTION_FORWARD, OPERATION_CONVOLUTION_FORWARD_BETA, FLOAT, DOUBLE, 1, 1, REQ),
    T(OPERATION_CONVOLUTION_FORWARD, OPERATION_CONVOLUTION_FORWARD_CONV_DESC, BACKEND_DESCRIPTOR,
      BACKEND_DESCRIPTOR, 1, 1, REQ),
    T(OPERATION_CONVOLUTION_FORWARD, OPERATION_CONVOLUTION_FORWARD_W, BACKEND_DESCRIPTOR,
      BACKEND_DESCRIPTOR, 1, 1, REQ),
    T(OPERATION_CONVOLUTION_FORWARD, OPERATION_CONVOLUTION_FORWARD_X, BACKEND_DESCRIPTOR,
      BACKEND_DESCRIPTOR, 1, 1, REQ),
    T(OPERATION_CONVOLUTION_FORWARD, OPERATION_CONVOLUTION_FORWARD_Y, BACKEND_DESCRIPTOR,
      BACKEND_DESCRIPTOR, 1, 1, REQ),
    T(OPERATION_CONVOLUTION_BACKWARD_DATA, OPERATION_CONVOLUTION_BWD_DATA_ALPHA, FLOAT, DOUBLE, 1,
      1, REQ),
    T(OPERATION_CONVOLUTION_BACKWARD_DATA, OPERATION_CONVOLUTION_BWD_DATA_BETA, FLOAT, DOUBLE, 1,
      1, REQ),
    T(OPERATION_CONVOLUTION_BACKWARD_DATA, OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
      BACKEND_DESCRIPTOR, BACKEND_DESCRIPTOR, 1, 1, REQ),
    T(OPERATION_CONVOLUTION_BACKWARD_DATA, OPERATION_CONVOLUTION_BWD_DATA_W, BACKEND_DESCRIPTOR,
      BACKEND_DESCRIPTOR, 1, 1, REQ),
    T(OPERATION_CONVOLUTION_BACKWARD_DATA, OPERATION_CONVOLUTION_BWD_DATA_DX, BACKEND_DESCRIPTOR,
      BACKEND_DESCRIPTOR, 1, 1, REQ),
    T(OPERATION_CONVOLUTION_BACKWARD_DATA, OPERATION_CONVOLUTION_BWD_DATA_DY, BACKEND_DESCRIPTOR,
      BACKEND_DESCRIPTOR, 1, 1, REQ),
    T(OPERATIONGRAPH, OPERATIONGRAPH_OPS, BACKEND_DESCRIPTOR, BACKEND_DESCRIPTOR, 1, MANY, REQ),
    T(OPERATIONGRAPH, OPERATIONGRAPH_HANDLE, HANDLE, HANDLE, 1, 1, REQ),
    T(OPERATIONGRAPH, OPERATIONGRAPH_ENGINE_GLOBAL_COUNT, INT64, INT64, 1, 1, RO),
    T(OPERATIONGRAPH, OPERATIONGRAPH_IS_DYNAMIC_SHAPE_ENABLED, BOOLEAN, BOOLEAN, 1, 1, 0),
    T(ENGINEHEUR, ENGINEHEUR_MODE, HEUR_MODE, HEUR_MODE, 1, 1, REQ),
    T(ENGINEHEUR, ENGINEHEUR_OPERATION_GRAPH, BACKEND_DESCRIPTOR, BACKEND_DESCRIPTOR, 1, 1, REQ),
    T(ENGINEHEUR, ENGINEHEUR_RESULTS, BACKEND_DESCRIPTOR, BACKEND_DESCRIPTOR, 0, MANY, RO),
    T(ENGINEHEUR, ENGINEHEUR_SM_COUNT_TARGET, INT32, INT32, 1, 1, 0),
    T(ENGINECFG, ENGINECFG_ENGINE, BACKEND_DESCRIPTOR, BACKEND_DESCRIPTOR, 1, 1, REQ),
    T(ENGINECFG, ENGINECFG_KNOB_CHOICES, BACKEND_DESCRIPTOR, BACKEND_DESCRIPTOR, 0, MANY, 0),
    T(ENGINECFG, ENGINECFG_INTERMEDIATE_INFO, BACKEND_DESCRIPTOR, BACKEND_DESCRIPTOR, 0, 1, RO),
    T(ENGINECFG, ENGINECFG_WORKSPACE_SIZE, INT64, INT64, 1, 1, RO),
    T(ENGINECFG, ENGINECFG_SHARED_MEMORY_USED, INT64, INT64, 1, 1, RO),
    T(ENGINE, ENGINE_OPERATION_GRAPH, BACKEND_DESCRIPTOR, BACKEND_DESCRIPTOR, 1, 1, REQ),
    T(ENGINE, ENGINE_GLOBAL_INDEX, INT64, INT64, 1, 1, REQ),
    T(ENGINE, ENGINE_KNOB_INFO, BACKEND_DESCRIPTOR, BACKEND_DESCRIPTOR, 0, MANY, RO),
    T(ENGINE, ENGINE_NUMERICAL_NOTE, NUMERICAL_NOTE, NUMERICAL_NOTE, 0, MANY, RO),
    T(ENGINE, ENGINE_LAYOUT_INFO, BACKEND_DESCRIPTOR, BACKEND_DESCRIPTOR, 0, MANY, RO),
    T(ENGINE, ENGINE_BEHAVIOR_NOTE, BEHAVIOR_NOTE, BEHAVIOR_NOTE, 0, MANY, RO),
    T(ENGINE, ENGINE_SM_COUNT_TARGET, INT32, INT32, 1, 1, 0),
    T(EXECUTION_PLAN, EXECUTION_PLAN_HANDLE, HANDLE, HANDLE, 1, 1, REQ),
    T(EXECUTION_PLAN, EXECUTION_PLAN_ENGINE_CONFIG, BACKEND_DESCRIPTOR, BACKEND_DESCRIPTOR, 1, 1,
      REQ),
    T(EXECUTION_PLAN, EXECUTION_PLAN_WORKSPACE_SIZE, INT64, INT64, 1, 1, RO),
    T(EXECUTION_PLAN, EXECUTION_PLAN_COMPUTED_INTERMEDIATE_UIDS, INT64, INT64, 0, MANY, RO),
    T(EXECUTION_PLAN, EXECUTION_PLAN_RUN_ONLY_INTERMEDIATE_UIDS, INT64, INT64, 0, MANY, 0),
    T(EXECUTION_PLAN, EXECUTION_PLAN_JSON_REPRESENTATION, CHAR, CHAR, 0, MANY, 0),
    T(VARIANT_PACK, VARIANT_PACK_UNIQUE_IDS, INT64, INT64, 0, MANY, REQ),
    T(VARIANT_PACK, VARIANT_PACK_DATA_POINTERS, VOID_PTR, VOID_PTR, 0, MANY, REQ),
    T(VARIANT_PACK, VARIANT_PACK_INTERMEDIATES, VOID_PTR, VOID_PTR, 0, MANY, 0),
    T(VARIANT_PACK, VARIANT_PACK_WORKSPACE, VOID_PTR, VOID_PTR, 1, 1, 0),
    T(POINTWISE, POINTWISE_MODE, POINTWISE_MODE, POINTWISE_MODE, 1, 1, REQ),
    T(POINTWISE, POINTWISE_MATH_PREC, DATA_TYPE, DATA_TYPE, 1, 1, REQ),
    T(POINTWISE, POINTWISE_NAN_PROPAGATION, NAN_PROPOGATION, NAN_PROPOGATION, 1, 1, 0),
    T(POINTWISE, POINTWISE_RELU_LOWER_CLIP, DOUBLE, FLOAT, 1, 1, 0),
    T(POINTWISE, POINTWISE_RELU_UPPER_CLIP, DOUBLE, FLOAT, 1, 1, 0),
    T(POINTWISE, POINTWISE_RELU_LOWER_CLIP_SLOPE, DOUBLE, FLOAT, 1, 1, 0),
    T(POINTWISE, POINTWISE_ELU_ALPHA, DOUBLE, FLOAT, 1, 1, 0),
    T(POINTWISE, POINTWISE_SOFTPLUS_BETA, DOUBLE, FLOAT, 1, 1, 0),
    T(POINTWISE, POINTWISE_SWISH_BETA, DOUBLE, FLOAT, 1, 1, 0),
    T(POINTWISE, POINTWISE_AXIS, INT64, INT64, 1, 1, 0),
    T(OPERATION_POINTWISE, OPERATION_POINTWISE_PW_DESCRIPTOR, BACKEND_DESCRIPTOR,
      BACKEND_DESCRIPTOR, 1, 1, REQ),
    T(OPERATION_POINTWISE, OPERATION_POINTWISE_XDESC, BACKEND_DESCRIPTOR, BACKEND_DESCRIPTOR, 1,
      1, REQ),
    T(OPERATION_POINTWISE, OPERATION_POINTWISE_BDESC, BACKEND_DESCRIPTOR, BACKEND_DESCRIPTOR, 1,
      1, 0),
    T(OPERATION_POINTWISE, OPERATION_POINTWISE_YDESC, BACKEND_DESCRIPTOR, BACKEND_DESCRIPTOR, 1,
      1, 0),
    T(OPERATION_POINTWISE, OPERATION_POINTWISE_TDESC, BACKEND_DESCRIPTOR, BACKEND_DESCRIPTOR, 1,
      1, 0),
    T(OPERATION_POINTWISE, OPERATION_POINTWISE_DXDESC, BACKEND_DESCRIPTOR, BACKEND_DESCRIPTOR,
      1, 1, 0),
    T(OPERATION_POINTWISE, OPERATION_POINTWISE_DYDESC, BACKEND_DESCRIPTOR, BACKEND_DESCRIPTOR,
      1, 1, 0),
    T(OPERATION_POINTWISE, OPERATION_POINTWISE_ALPHA1, FLOAT, DOUBLE, 1, 1, 0),
    T(OPERATION_POINTWISE, OPERATION_POINTWISE_ALPHA2, FLOAT, DOUBLE, 1, 1, 0),
};
#undef T

const Spec *find_spec(cudnnBackendDescriptorType_t d, cudnnBackendAttributeName_t a)
{
    for (const Spec &s : specs)
        if (s.desc == d && s.attr == a)
            return &s;
    return nullptr;
}

size_t type_size(cudnnBackendAttributeType_t t)
{
    switch (t) {
    case CUDNN_TYPE_HANDLE: return sizeof(cudnnHandle_t);
    case CUDNN_TYPE_DATA_TYPE: return sizeof(cudnnDataType_t);
    case CUDNN_TYPE_BOOLEAN: return sizeof(bool);
    case CUDNN_TYPE_INT64: return sizeof(int64_t);
    case CUDNN_TYPE_FLOAT: return sizeof(float);
    case CUDNN_TYPE_DOUBLE: return sizeof(double);
    case CUDNN_TYPE_VOID_PTR: return sizeof(void *);
    case CUDNN_TYPE_CONVOLUTION_MODE: return sizeof(cudnnConvolutionMode_t);
    case CUDNN_TYPE_HEUR_MODE: return sizeof(cudnnBackendHeurMode_t);
    case CUDNN_TYPE_NUMERICAL_NOTE: return sizeof(cudnnBackendNumericalNote_t);
    case CUDNN_TYPE_BEHAVIOR_NOTE: return sizeof(cudnnBackendBehaviorNote_t);
    case CUDNN_TYPE_BACKEND_DESCRIPTOR: return sizeof(cudnnBackendDescriptor_t);
    case CUDNN_TYPE_TENSOR_REORDERING_MODE: return sizeof(cudnnBackendTensorReordering_t);
    case CUDNN_TYPE_INT32: return sizeof(int32_t);
    case CUDNN_TYPE_CHAR: return sizeof(char);
    case CUDNN_TYPE_POINTWISE_MODE: return sizeof(cudnnPointwiseMode_t);
    case CUDNN_TYPE_NAN_PROPOGATION: return sizeof(cudnnNanPropagation_t);
    default: return 0;
    }
}

/* ---- what finalized descriptors hold ------------------------------------------------ */

struct Tensor {
    cudnnDataType_t dt;
    int nd;
    int64_t dims[CUDNN_DIM_MAX], strides[CUDNN_DIM_MAX];
    int64_t uid, align;
    bool virt, byval;
};

struct Conv {
    cudnnDataType_t comp;
    cudnnConvolutionMode_t mode;
    int nsp;
    int64_t pre[CUDNN_DIM_MAX], post[CUDNN_DIM_MAX], stride[CUDNN_DIM_MAX], dil[CUDNN_DIM_MAX];
};

/* A pointwise descriptor: the mode and what it takes (the ReLU clips,
 * their documented defaults: lower 0, upper the math precision's largest
 * number, slope 0). */
struct Pointwise {
    cudnnPointwiseMode_t mode;
    bool nan_prop;              /* CUDNN_PROPAGATE_NAN was set */
    double lower, upper, slope;
};

/* One operation: a convolution (for backward-data x is dx and y is dy;
 * alpha and beta its scales), or a pointwise node (pw) y = mode(alpha1 x,
 * alpha2 b), b in w where has_b (alpha, beta are alpha1, alpha2). */
struct Op {
    bool bwd, pw, has_b;
    Tensor x, w, y;
    Conv conv;
    Pointwise mode;
    double alpha, beta;
    const Tensor &out() const { return bwd ? x : y; }
};

/* A graph: its operations in the order they can run (each after those
 * whose outputs it reads), the convolution's index in it. */
struct Graph {
    std::vector<Op> ops;
    cudnnHandle_t handle;
    int conv;
    bool fused() const { return ops.size() > 1; }
};

/* The mock's engines (see the header). */
enum { NENGINES = 5, LARGE_WS_ENGINE = 2, IM2COL_ENGINE = 3, FALLBACK_ENGINE = 4 };
const long long LARGE_WS = 4LL << 30;

struct Engine {
    Graph g;
    int64_t index;
};

struct Plan {
    Engine e;
    int64_t ws;
    cudnnHandle_t handle;
};

struct Pack {
    std::vector<int64_t> uids;
    std::vector<void *> ptrs;
    void *ws;
};

const uint32_t MAGIC = 0x444e4e43;  /* "DNNC": a live descriptor */

struct Desc {
    uint32_t magic;
    cudnnBackendDescriptorType_t type;
    bool finalized;
    std::map<int, std::vector<unsigned char>> attrs;    /* bytes */
    std::map<int, int64_t> counts;
    std::map<int, cudnnBackendAttributeType_t> types;
    Tensor tensor;
    Conv conv;
    Pointwise pwd;
    Op op;
    std::shared_ptr<Graph> graph;
    std::shared_ptr<Engine> engine;     /* ENGINE and ENGINECFG */
    std::shared_ptr<Plan> plan;
    Pack pack;
    cudnnBackendHeurMode_t heur;
};

std::set<Desc *> live;
std::set<cudnnContext *> handles;
long executions;

const char *desc_name(cudnnBackendDescriptorType_t t)
{
    switch (t) {
    case CUDNN_BACKEND_TENSOR_DESCRIPTOR: return "tensor";
    case CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR: return "convolution";
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR: return "convolution forward";
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR:
        return "convolution backward data";
    case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR: return "operation graph";
    case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR: return "engine heuristics";
    case CUDNN_BACKEND_ENGINECFG_DESCRIPTOR: return "engine config";
    case CUDNN_BACKEND_ENGINE_DESCRIPTOR: return "engine";
    case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR: return "execution plan";
    case CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR: return "variant pack";
    case CUDNN_BACKEND_POINTWISE_DESCRIPTOR: return "pointwise";
    case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR: return "pointwise operation";
    default: return "descriptor";
    }
}

Desc *as_desc(const void *p)
{
    Desc *d = (Desc *)p;
    return p && live.count(d) && d->magic == MAGIC ? d : nullptr;
}

/* The status for a caller's error, reported. */
cudnnStatus_t bad(cudnnStatus_t s, const char *call, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
cudnnStatus_t bad(cudnnStatus_t s, const char *call, const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    hc::misuse(call, "%s (%s)", msg, cudnnGetErrorString(s));
    return s;
}

template <class V> V get1(const Desc *d, cudnnBackendAttributeName_t a)
{
    V v;
    memcpy(&v, d->attrs.at(a).data(), sizeof v);
    return v;
}

template <class V> std::vector<V> getn(const Desc *d, cudnnBackendAttributeName_t a)
{
    auto it = d->attrs.find(a);
    if (it == d->attrs.end())
        return {};
    std::vector<V> v(it->second.size() / sizeof(V));
    memcpy(v.data(), it->second.data(), v.size() * sizeof(V));
    return v;
}

bool has(const Desc *d, cudnnBackendAttributeName_t a)
{
    return d->attrs.count(a) != 0;
}

size_t dt_size(cudnnDataType_t t)
{
    switch (t) {
    case CUDNN_DATA_FLOAT: return 4;
    case CUDNN_DATA_DOUBLE: return 8;
    case CUDNN_DATA_HALF: case CUDNN_DATA_BFLOAT16: return 2;
    case CUDNN_DATA_INT8: case CUDNN_DATA_UINT8: case CUDNN_DATA_BOOLEAN: return 1;
    case CUDNN_DATA_INT32: return 4;
    case CUDNN_DATA_INT64: return 8;
    default: return 0;
    }
}

/* A descriptor attribute: a live, finalized descriptor of the given type. */
cudnnStatus_t sub(const char *call, const Desc *d, cudnnBackendAttributeName_t a,
                  cudnnBackendDescriptorType_t want, const Desc **out)
{
    const Desc *s = as_desc(get1<cudnnBackendDescriptor_t>(d, a));
    if (!s)
        return bad(CUDNN_STATUS_BAD_PARAM, call, "the %s's %d attribute is not a live "
                   "descriptor", desc_name(d->type), (int)a);
    if (s->type != want)
        return bad(CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE, call, "the %s's attribute %d is a %s "
                   "descriptor, not a %s one", desc_name(d->type), (int)a, desc_name(s->type),
                   desc_name(want));
    if (!s->finalized)
        return bad(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED, call, "the %s set as attribute %d of "
                   "a %s is not finalized", desc_name(want), (int)a, desc_name(d->type));
    *out = s;
    return CUDNN_STATUS_SUCCESS;
}

/* ---- Finalize, per type ------------------------------------------------------------------ */

cudnnStatus_t fin_tensor(Desc *d)
{
    const char *call = "cudnnBackendFinalize(tensor)";
    Tensor &t = d->tensor;
    auto dims = getn<int64_t>(d, CUDNN_ATTR_TENSOR_DIMENSIONS);
    auto strides = getn<int64_t>(d, CUDNN_ATTR_TENSOR_STRIDES);
    if (dims.size() != strides.size())
        return bad(CUDNN_STATUS_BAD_PARAM, call, "%zu dimensions but %zu strides", dims.size(),
                   strides.size());
    t.dt = get1<cudnnDataType_t>(d, CUDNN_ATTR_TENSOR_DATA_TYPE);
    t.nd = (int)dims.size();
    for (int i = 0; i < t.nd; i++) {
        if (dims[i] <= 0 || strides[i] <= 0)
            return bad(CUDNN_STATUS_BAD_PARAM, call, "dimension %d is %lld with stride %lld: "
                       "both must be positive", i, (long long)dims[i], (long long)strides[i]);
        t.dims[i] = dims[i];
        t.strides[i] = strides[i];
    }
    t.uid = get1<int64_t>(d, CUDNN_ATTR_TENSOR_UNIQUE_ID);
    t.align = get1<int64_t>(d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT);
    size_t es = dt_size(t.dt);
    if (es == 0)
        return bad(CUDNN_STATUS_BAD_PARAM, call, "data type %d", (int)t.dt);
    if (t.align <= 0 || t.align % (int64_t)es)
        return bad(CUDNN_STATUS_BAD_PARAM, call, "byte alignment %lld is not a positive "
                   "multiple of the %zu-byte element", (long long)t.align, es);
    t.virt = has(d, CUDNN_ATTR_TENSOR_IS_VIRTUAL) && get1<bool>(d, CUDNN_ATTR_TENSOR_IS_VIRTUAL);
    t.byval = has(d, CUDNN_ATTR_TENSOR_IS_BY_VALUE) &&
              get1<bool>(d, CUDNN_ATTR_TENSOR_IS_BY_VALUE);
    /* a by-value tensor is a scalar on the host: one element here (the
     * documentation shows scalars; what more would be is not said) */
    if (t.byval && (t.virt || std::any_of(t.dims, t.dims + t.nd, [](int64_t n) { return n != 1; })))
        return bad(CUDNN_STATUS_BAD_PARAM, call, "a by-value tensor (uid %lld) that is %s",
                   (long long)t.uid, t.virt ? "virtual too" : "no scalar");
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t fin_conv(Desc *d)
{
    const char *call = "cudnnBackendFinalize(convolution)";
    Conv &c = d->conv;
    c.comp = get1<cudnnDataType_t>(d, CUDNN_ATTR_CONVOLUTION_COMP_TYPE);
    c.mode = get1<cudnnConvolutionMode_t>(d, CUDNN_ATTR_CONVOLUTION_CONV_MODE);
    int64_t nsp = get1<int64_t>(d, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS);
    if (nsp < 1 || nsp > CUDNN_DIM_MAX - 2)
        return bad(CUDNN_STATUS_BAD_PARAM, call, "%lld spatial dimensions", (long long)nsp);
    c.nsp = (int)nsp;
    if (c.mode != CUDNN_CONVOLUTION && c.mode != CUDNN_CROSS_CORRELATION)
        return bad(CUDNN_STATUS_BAD_PARAM, call, "mode %d", (int)c.mode);
    struct {
        cudnnBackendAttributeName_t a;
        int64_t *v;
        int64_t lo;
        const char *what;
    } parts[] = {{CUDNN_ATTR_CONVOLUTION_DILATIONS, c.dil, 1, "dilations"},
                 {CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, c.stride, 1, "filter strides"},
                 {CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, c.pre, 0, "pre-paddings"},
                 {CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, c.post, 0, "post-paddings"}};
    for (auto &p : parts) {
        auto v = getn<int64_t>(d, p.a);
        if ((int64_t)v.size() != nsp)
            return bad(CUDNN_STATUS_BAD_PARAM, call, "%zu %s for %lld spatial dimensions",
                       v.size(), p.what, (long long)nsp);
        for (int i = 0; i < c.nsp; i++) {
            if (v[i] < p.lo)
                return bad(CUDNN_STATUS_BAD_PARAM, call, "%s[%d] is %lld", p.what, i,
                           (long long)v[i]);
            p.v[i] = v[i];
        }
    }
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t fin_op(Desc *d)
{
    bool bwd = d->type == CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR;
    const char *call = bwd ? "cudnnBackendFinalize(convolution backward data)"
                           : "cudnnBackendFinalize(convolution forward)";
    Op &op = d->op;
    op.bwd = bwd;
    const Desc *x, *w, *y, *cv;
    cudnnStatus_t s;
    if ((s = sub(call, d, bwd ? CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX
                              : CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
                 CUDNN_BACKEND_TENSOR_DESCRIPTOR, &x)) ||
        (s = sub(call, d, bwd ? CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W
                              : CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
                 CUDNN_BACKEND_TENSOR_DESCRIPTOR, &w)) ||
        (s = sub(call, d, bwd ? CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY
                              : CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
                 CUDNN_BACKEND_TENSOR_DESCRIPTOR, &y)) ||
        (s = sub(call, d, bwd ? CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC
                              : CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
                 CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, &cv)))
        return s;
    op.x = x->tensor;
    op.w = w->tensor;
    op.y = y->tensor;
    op.conv = cv->conv;
    op.pw = op.has_b = false;
    if (op.x.byval || op.w.byval || op.y.byval)
        return bad(CUDNN_STATUS_BAD_PARAM, call, "a by-value tensor in a convolution");
    for (int i = 0; i < 2; i++) {
        cudnnBackendAttributeName_t a =
            i == 0 ? (bwd ? CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA
                          : CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA)
                   : (bwd ? CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA
                          : CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA);
        double v = d->types.at(a) == CUDNN_TYPE_FLOAT ? get1<float>(d, a) : get1<double>(d, a);
        (i == 0 ? op.alpha : op.beta) = v;
    }
    const char *xn = bwd ? "dx" : "x", *yn = bwd ? "dy" : "y";
    int nd = op.conv.nsp + 2;
    if (op.x.nd != nd || op.w.nd != nd || op.y.nd != nd)
        return bad(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH, call, "%s, w and %s have %d, %d and %d "
                   "dimensions; %d spatial dimensions need %d", xn, yn, op.x.nd, op.w.nd,
                   op.y.nd, op.conv.nsp, nd);
    if (op.x.dt != op.w.dt || op.x.dt != op.y.dt)
        return bad(CUDNN_STATUS_BAD_PARAM, call, "%s, w and %s have data types %d, %d, %d", xn,
                   yn, (int)op.x.dt, (int)op.w.dt, (int)op.y.dt);
    if (op.y.dims[0] != op.x.dims[0] || op.y.dims[1] != op.w.dims[0] ||
        op.x.dims[1] % op.w.dims[1] != 0 ||
        op.w.dims[0] % (op.x.dims[1] / op.w.dims[1]) != 0)
        return bad(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH, call, "%s [%lld, %lld, ...], w [%lld, "
                   "%lld, ...], %s [%lld, %lld, ...]: batch, channels and groups do not agree",
                   xn, (long long)op.x.dims[0], (long long)op.x.dims[1], (long long)op.w.dims[0],
                   (long long)op.w.dims[1], yn, (long long)op.y.dims[0],
                   (long long)op.y.dims[1]);
    for (int i = 0; i < op.conv.nsp; i++) {
        const Conv &c = op.conv;
        int64_t span = c.dil[i] * (op.w.dims[2 + i] - 1) + 1;
        int64_t padded = op.x.dims[2 + i] + c.pre[i] + c.post[i];
        int64_t out = padded < span ? 0 : (padded - span) / c.stride[i] + 1;
        if (out != op.y.dims[2 + i])
            return bad(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH, call, "spatial dimension %d: %s "
                       "%lld, filter %lld, dilation %lld, stride %lld, paddings %lld + %lld "
                       "give %lld, but %s has %lld", i, xn, (long long)op.x.dims[2 + i],
                       (long long)op.w.dims[2 + i], (long long)c.dil[i],
                       (long long)c.stride[i], (long long)c.pre[i], (long long)c.post[i],
                       (long long)out, yn, (long long)op.y.dims[2 + i]);
    }
    return CUDNN_STATUS_SUCCESS;
}

/* The pointwise modes the mock computes (forward ones; see pw_apply). */
bool pw_known(cudnnPointwiseMode_t m)
{
    switch (m) {
    case CUDNN_POINTWISE_ADD: case CUDNN_POINTWISE_SUB: case CUDNN_POINTWISE_MUL:
    case CUDNN_POINTWISE_DIV: case CUDNN_POINTWISE_MAX: case CUDNN_POINTWISE_MIN:
    case CUDNN_POINTWISE_RELU_FWD: case CUDNN_POINTWISE_TANH_FWD:
    case CUDNN_POINTWISE_SIGMOID_FWD: case CUDNN_POINTWISE_EXP: case CUDNN_POINTWISE_ABS:
    case CUDNN_POINTWISE_SQRT: case CUDNN_POINTWISE_GELU_FWD: case CUDNN_POINTWISE_IDENTITY:
        return true;
    default:
        return false;
    }
}

/* Does the mode take two inputs (x and b)? */
bool pw_binary(cudnnPointwiseMode_t m)
{
    return m == CUDNN_POINTWISE_ADD || m == CUDNN_POINTWISE_SUB || m == CUDNN_POINTWISE_MUL ||
           m == CUDNN_POINTWISE_DIV || m == CUDNN_POINTWISE_MAX || m == CUDNN_POINTWISE_MIN;
}

/* A double attribute set as DOUBLE or FLOAT, or its default. */
double scalar_attr(const Desc *d, cudnnBackendAttributeName_t a, double dflt)
{
    if (!has(d, a))
        return dflt;
    return d->types.at(a) == CUDNN_TYPE_FLOAT ? get1<float>(d, a) : get1<double>(d, a);
}

cudnnStatus_t fin_pointwise(Desc *d)
{
    const char *call = "cudnnBackendFinalize(pointwise)";
    Pointwise &p = d->pwd;
    p.mode = get1<cudnnPointwiseMode_t>(d, CUDNN_ATTR_POINTWISE_MODE);
    cudnnDataType_t prec = get1<cudnnDataType_t>(d, CUDNN_ATTR_POINTWISE_MATH_PREC);
    if (!pw_known(p.mode) || prec != CUDNN_DATA_FLOAT) {
        hc::misuse(call, "mode %d in math precision %d: the mock implements the forward modes "
                   "einc uses, in FLOAT", (int)p.mode, (int)prec);
        return CUDNN_STATUS_NOT_SUPPORTED;
    }
    p.nan_prop = has(d, CUDNN_ATTR_POINTWISE_NAN_PROPAGATION) &&
                 get1<cudnnNanPropagation_t>(d, CUDNN_ATTR_POINTWISE_NAN_PROPAGATION) ==
                     CUDNN_PROPAGATE_NAN;
    p.lower = scalar_attr(d, CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP, 0.0);
    p.upper = scalar_attr(d, CUDNN_ATTR_POINTWISE_RELU_UPPER_CLIP, FLT_MAX);
    p.slope = scalar_attr(d, CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP_SLOPE, 0.0);
    return CUDNN_STATUS_SUCCESS;
}

/* y = mode(alpha1 x[, alpha2 b]): b given exactly for the two-input
 * modes; each dimension of x and b y's or 1 (broadcast), y at least one
 * of theirs. */
cudnnStatus_t fin_pwop(Desc *d)
{
    const char *call = "cudnnBackendFinalize(pointwise operation)";
    Op &op = d->op;
    const Desc *pd, *x, *y, *b = nullptr;
    cudnnStatus_t s;
    if ((s = sub(call, d, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR,
                 CUDNN_BACKEND_POINTWISE_DESCRIPTOR, &pd)) ||
        (s = sub(call, d, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_BACKEND_TENSOR_DESCRIPTOR,
                 &x)))
        return s;
    if (has(d, CUDNN_ATTR_OPERATION_POINTWISE_TDESC) ||
        has(d, CUDNN_ATTR_OPERATION_POINTWISE_DXDESC) ||
        has(d, CUDNN_ATTR_OPERATION_POINTWISE_DYDESC)) {
        hc::misuse(call, "a three-input or backward pointwise operation: not implemented by the "
                   "mock");
        return CUDNN_STATUS_NOT_SUPPORTED;
    }
    if (!has(d, CUDNN_ATTR_OPERATION_POINTWISE_YDESC))
        return bad(CUDNN_STATUS_BAD_PARAM, call, "a forward mode without its "
                   "CUDNN_ATTR_OPERATION_POINTWISE_YDESC");
    if ((s = sub(call, d, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_BACKEND_TENSOR_DESCRIPTOR,
                 &y)))
        return s;
    op = Op();
    op.pw = true;
    op.mode = pd->pwd;
    op.has_b = has(d, CUDNN_ATTR_OPERATION_POINTWISE_BDESC);
    if (op.has_b != pw_binary(op.mode.mode))
        return bad(CUDNN_STATUS_BAD_PARAM, call, "mode %d %s", (int)op.mode.mode,
                   op.has_b ? "takes one input, but a B is set" : "takes two inputs, but no B "
                   "is set");
    if (op.has_b && (s = sub(call, d, CUDNN_ATTR_OPERATION_POINTWISE_BDESC,
                             CUDNN_BACKEND_TENSOR_DESCRIPTOR, &b)))
        return s;
    op.x = x->tensor;
    op.y = y->tensor;
    if (b)
        op.w = b->tensor;
    op.alpha = scalar_attr(d, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, 1.0);
    op.beta = scalar_attr(d, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, 1.0);
    if (op.x.dt != CUDNN_DATA_FLOAT || op.y.dt != CUDNN_DATA_FLOAT ||
        (b && op.w.dt != CUDNN_DATA_FLOAT)) {
        hc::misuse(call, "a tensor that is not FLOAT: not implemented by the mock");
        return CUDNN_STATUS_NOT_SUPPORTED;
    }
    if (op.x.byval || op.y.byval)
        return bad(CUDNN_STATUS_BAD_PARAM, call, "a by-value %s", op.y.byval ? "y" : "x");
    if (op.x.nd != op.y.nd || (b && op.w.nd != op.y.nd))
        return bad(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH, call, "x, b and y have %d, %d and %d "
                   "dimensions", op.x.nd, b ? op.w.nd : 0, op.y.nd);
    for (int i = 0; i < op.y.nd; i++) {
        int64_t xn = op.x.dims[i], bn = b ? op.w.dims[i] : 1, yn = op.y.dims[i];
        if ((xn != yn && xn != 1) || (bn != yn && bn != 1) || (yn != xn && yn != bn))
            return bad(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH, call, "dimension %d: x %lld, b "
                       "%lld, y %lld do not broadcast", i, (long long)xn, (long long)bn,
                       (long long)yn);
    }
    return CUDNN_STATUS_SUCCESS;
}

bool same_tensor(const Tensor &a, const Tensor &b)
{
    return a.dt == b.dt && a.nd == b.nd && a.align == b.align && a.virt == b.virt &&
           a.byval == b.byval && std::equal(a.dims, a.dims + a.nd, b.dims) &&
           std::equal(a.strides, a.strides + a.nd, b.strides);
}

/* What an operation reads. */
std::vector<const Tensor *> op_inputs(const Op &op)
{
    if (op.pw)
        return op.has_b ? std::vector<const Tensor *>{&op.x, &op.w}
                        : std::vector<const Tensor *>{&op.x};
    return {op.bwd ? &op.y : &op.x, &op.w};
}

/* The operations finalized, one tensor to a uid (a uid may name the same
 * tensor in several operations: a virtual one is written by one and read
 * by others), each tensor written by at most one operation and never by
 * the one that reads it, each virtual one written and read; then put in
 * an order they can run in (a cycle is refused). */
cudnnStatus_t fin_graph(Desc *d)
{
    const char *call = "cudnnBackendFinalize(operation graph)";
    auto g = std::make_shared<Graph>();
    g->handle = get1<cudnnHandle_t>(d, CUDNN_ATTR_OPERATIONGRAPH_HANDLE);
    if (!handles.count(g->handle))
        return bad(CUDNN_STATUS_BAD_PARAM, call, "the handle is not a live cuDNN handle");
    std::vector<Op> ops;
    for (cudnnBackendDescriptor_t o : getn<cudnnBackendDescriptor_t>(d, CUDNN_ATTR_OPERATIONGRAPH_OPS)) {
        const Desc *od = as_desc(o);
        if (!od)
            return bad(CUDNN_STATUS_BAD_PARAM, call, "an operation is not a live descriptor");
        if (od->type != CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR &&
            od->type != CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR &&
            od->type != CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR) {
            hc::misuse(call, "a %s operation: the mock implements convolution forward, "
                       "backward data and pointwise only", desc_name(od->type));
            return CUDNN_STATUS_NOT_SUPPORTED;
        }
        if (!od->finalized)
            return bad(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED, call, "an operation is not "
                       "finalized");
        ops.push_back(od->op);
    }
    std::map<int64_t, Tensor> tensors;
    std::map<int64_t, int> writer, readers;
    for (size_t i = 0; i < ops.size(); i++) {
        std::vector<const Tensor *> ts = op_inputs(ops[i]);
        for (const Tensor *t : ts)
            readers[t->uid]++;
        ts.push_back(&ops[i].out());
        for (const Tensor *t : ts) {
            auto it = tensors.find(t->uid);
            if (it != tensors.end() && !same_tensor(it->second, *t))
                return bad(CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES, call, "two different "
                           "tensors have uid %lld", (long long)t->uid);
            tensors[t->uid] = *t;
        }
        int64_t out = ops[i].out().uid;
        /* "for fusion use cases, we require beta to always be 0" (NVIDIA, of
         * the runtime fusion engines): a virtual y has no old value */
        if (!ops[i].pw && ops[i].out().virt && ops[i].beta != 0)
            return bad(CUDNN_STATUS_BAD_PARAM, call, "a convolution into a virtual tensor with "
                       "beta %g", ops[i].beta);
        if (writer.count(out))
            return bad(CUDNN_STATUS_BAD_PARAM, call, "two operations write uid %lld",
                       (long long)out);
        writer[out] = (int)i;
        for (size_t k = 0; k + 1 < ts.size(); k++)
            if (ts[k]->uid == out)
                return bad(CUDNN_STATUS_BAD_PARAM, call, "an operation reads the tensor it "
                           "writes (uid %lld)", (long long)out);
    }
    for (const auto &kv : tensors)
        if (kv.second.virt && (!writer.count(kv.first) || !readers.count(kv.first)))
            return bad(CUDNN_STATUS_BAD_PARAM, call, "virtual tensor %lld is never %s",
                       (long long)kv.first, writer.count(kv.first) ? "read" : "written");
    std::vector<bool> done(ops.size(), false);
    g->conv = -1;
    while (g->ops.size() < ops.size()) {
        size_t i = 0;
        for (; i < ops.size(); i++) {
            bool ready = !done[i];
            for (const Tensor *t : op_inputs(ops[i]))
                ready &= !writer.count(t->uid) || done[(size_t)writer[t->uid]];
            if (ready)
                break;
        }
        if (i == ops.size())
            return bad(CUDNN_STATUS_BAD_PARAM, call, "the operations read each other's outputs "
                       "in a cycle");
        done[i] = true;
        if (!ops[i].pw && g->conv < 0)
            g->conv = (int)g->ops.size();
        g->ops.push_back(ops[i]);
    }
    if (g->ops.empty())
        return bad(CUDNN_STATUS_BAD_PARAM, call, "a graph of no operations");
    d->graph = g;
    return CUDNN_STATUS_SUCCESS;
}

/* Can the mock run this graph at all: one 2-d convolution (its operands
 * real tensors) and pointwise nodes after it, f32 where there are nodes? */
bool runnable(const Graph &g)
{
    if (g.conv < 0 || std::count_if(g.ops.begin(), g.ops.end(), [](const Op &o) { return !o.pw; }) != 1)
        return false;
    const Op &op = g.ops[(size_t)g.conv];
    for (const Tensor *t : op_inputs(op))
        if (t->virt)
            return false;
    if (op.conv.nsp != 2 || op.conv.comp != CUDNN_DATA_FLOAT)
        return false;
    if (g.fused())
        return op.x.dt == CUDNN_DATA_FLOAT;
    return op.x.dt == CUDNN_DATA_FLOAT || op.x.dt == CUDNN_DATA_HALF ||
           op.x.dt == CUDNN_DATA_BFLOAT16;
}

int64_t engine_ws(const Engine &e)
{
    if (e.index == LARGE_WS_ENGINE)
        return LARGE_WS;
    if (e.index != IM2COL_ENGINE || e.g.conv < 0)
        return 0;
    /* an im2col matrix of one image and group: (C/G) R S x P Q floats */
    const Op &op = e.g.ops[(size_t)e.g.conv];
    int64_t cg = op.w.dims[1], rs = op.w.dims[2] * op.w.dims[3];
    int64_t pq = op.y.dims[2] * op.y.dims[3];
    return cg * rs * pq * (int64_t)sizeof(float);
}

void engine_notes(const Engine &e, std::vector<cudnnBackendNumericalNote_t> &notes)
{
    bool f32 = e.g.conv >= 0 && e.g.ops[(size_t)e.g.conv].x.dt == CUDNN_DATA_FLOAT;
    if (e.index == 0) {
        notes.push_back(CUDNN_NUMERICAL_NOTE_TENSOR_CORE);
        if (f32)
            notes.push_back(CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS);
    } else if (e.index == 1) {
        notes.push_back(CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC);
    }
}

cudnnStatus_t fin_heur(Desc *d)
{
    const char *call = "cudnnBackendFinalize(engine heuristics)";
    const Desc *g;
    cudnnStatus_t s = sub(call, d, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
                          CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &g);
    if (s)
        return s;
    d->heur = get1<cudnnBackendHeurMode_t>(d, CUDNN_ATTR_ENGINEHEUR_MODE);
    if ((unsigned)d->heur >= CUDNN_HEUR_MODES_COUNT)
        return bad(CUDNN_STATUS_BAD_PARAM, call, "heuristics mode %d", (int)d->heur);
    d->graph = g->graph;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t fin_engine(Desc *d)
{
    const char *call = "cudnnBackendFinalize(engine)";
    const Desc *g;
    cudnnStatus_t s = sub(call, d, CUDNN_ATTR_ENGINE_OPERATION_GRAPH,
                          CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &g);
    if (s)
        return s;
    int64_t i = get1<int64_t>(d, CUDNN_ATTR_ENGINE_GLOBAL_INDEX);
    if (i < 0 || i >= NENGINES)
        return bad(CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND, call, "global index %lld of %d",
                   (long long)i, NENGINES);
    d->engine = std::make_shared<Engine>(Engine{*g->graph, i});
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t fin_cfg(Desc *d)
{
    const Desc *e;
    cudnnStatus_t s = sub("cudnnBackendFinalize(engine config)", d, CUDNN_ATTR_ENGINECFG_ENGINE,
                          CUDNN_BACKEND_ENGINE_DESCRIPTOR, &e);
    if (s)
        return s;
    d->engine = e->engine;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t fin_plan(Desc *d)
{
    const char *call = "cudnnBackendFinalize(execution plan)";
    const Desc *cfg;
    cudnnStatus_t s = sub(call, d, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                          CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &cfg);
    if (s)
        return s;
    cudnnHandle_t h = get1<cudnnHandle_t>(d, CUDNN_ATTR_EXECUTION_PLAN_HANDLE);
    if (!handles.count(h))
        return bad(CUDNN_STATUS_BAD_PARAM, call, "the handle is not a live cuDNN handle");
    if (hc::env_flag("HOSTCUDA_REFUSE_ENGINES")) {
        hc::count("cudnn plans refused (HOSTCUDA_REFUSE_ENGINES)");
        return CUDNN_STATUS_NOT_SUPPORTED;
    }
    if (!runnable(cfg->engine->g)) {
        hc::misuse(call, "a graph the mock does not implement (one 2-d convolution, FLOAT "
                   "compute, FLOAT/HALF/BFLOAT16 data, pointwise nodes after it in FLOAT)");
        return CUDNN_STATUS_NOT_SUPPORTED;
    }
    /* a graph with pointwise nodes: engine 4 runs single convolutions only,
     * and HOSTCUDA_REFUSE_FUSION=1 makes every engine so */
    int64_t ix = cfg->engine->index;
    if (cfg->engine->g.fused() && (ix == FALLBACK_ENGINE ||
                                   hc::env_flag("HOSTCUDA_REFUSE_FUSION"))) {
        hc::count(hc::env_flag("HOSTCUDA_REFUSE_FUSION")
                      ? "cudnn fused plans refused (HOSTCUDA_REFUSE_FUSION)"
                      : "cudnn fused plans refused by engine " + std::to_string(ix));
        return CUDNN_STATUS_NOT_SUPPORTED;
    }
    auto p = std::make_shared<Plan>();
    p->e = *cfg->engine;
    p->ws = engine_ws(p->e);
    p->handle = h;
    d->plan = p;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t fin_pack(Desc *d)
{
    const char *call = "cudnnBackendFinalize(variant pack)";
    d->pack.uids = getn<int64_t>(d, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS);
    d->pack.ptrs = getn<void *>(d, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS);
    d->pack.ws = has(d, CUDNN_ATTR_VARIANT_PACK_WORKSPACE)
                     ? get1<void *>(d, CUDNN_ATTR_VARIANT_PACK_WORKSPACE) : nullptr;
    if (d->pack.uids.size() != d->pack.ptrs.size())
        return bad(CUDNN_STATUS_BAD_PARAM, call, "%zu unique ids but %zu data pointers",
                   d->pack.uids.size(), d->pack.ptrs.size());
    return CUDNN_STATUS_SUCCESS;
}

/* ---- the reference convolution ------------------------------------------------------ */

float ld(cudnnDataType_t t, const void *p, int64_t i)
{
    if (t == CUDNN_DATA_FLOAT)
        return ((const float *)p)[i];
    uint16_t u = ((const uint16_t *)p)[i];
    return t == CUDNN_DATA_HALF ? __half2float(__ushort_as_half(u))
                                : __bfloat162float(__ushort_as_bfloat16(u));
}

void st(cudnnDataType_t t, void *p, int64_t i, float v)
{
    if (t == CUDNN_DATA_FLOAT)
        ((float *)p)[i] = v;
    else if (t == CUDNN_DATA_HALF)
        ((uint16_t *)p)[i] = __half_as_ushort(__float2half_rn(v));
    else
        ((uint16_t *)p)[i] = __bfloat16_as_ushort(__float2bfloat16_rn(v));
}

float tf32(float x)
{
    if (!std::isfinite(x))
        return x;
    uint32_t u;
    memcpy(&u, &x, 4);
    u &= 0xffffe000u;
    memcpy(&x, &u, 4);
    return x;
}

int64_t off4(const Tensor &t, int64_t a, int64_t b, int64_t c, int64_t d)
{
    return a * t.strides[0] + b * t.strides[1] + c * t.strides[2] + d * t.strides[3];
}

struct Exec {
    Op op;
    int64_t engine;
    void *x, *w, *y, *ws;
    int64_t ws_bytes;
    long run;       /* the how-manieth execution: engine 1's order */
};

/* A tensor as packed NCHW floats (TF32 for engine 0 on f32 data). */
std::vector<float> unpack(const Tensor &t, const void *p, bool to_tf32)
{
    int64_t d0 = t.dims[0], d1 = t.dims[1], d2 = t.dims[2], d3 = t.dims[3];
    std::vector<float> v((size_t)(d0 * d1 * d2 * d3));
    size_t i = 0;
    for (int64_t a = 0; a < d0; a++)
        for (int64_t b = 0; b < d1; b++)
            for (int64_t c = 0; c < d2; c++)
                for (int64_t d = 0; d < d3; d++) {
                    float x = ld(t.dt, p, off4(t, a, b, c, d));
                    v[i++] = to_tf32 ? tf32(x) : x;
                }
    return v;
}

/* out = alpha acc + beta out, through the tensor's strides and type. */
void pack_out(const Tensor &t, void *p, const std::vector<float> &acc, float alpha, float beta)
{
    size_t i = 0;
    for (int64_t a = 0; a < t.dims[0]; a++)
        for (int64_t b = 0; b < t.dims[1]; b++)
            for (int64_t c = 0; c < t.dims[2]; c++)
                for (int64_t d = 0; d < t.dims[3]; d++) {
                    int64_t o = off4(t, a, b, c, d);
                    float v = alpha * acc[i++];
                    if (beta != 0.0f)
                        v += beta * ld(t.dt, p, o);
                    st(t.dt, p, o, v);
                }
}

/* Each output element's sum runs over (input channel, r, s) in ascending
 * order (engine 1: the channels from another start each run), in fp32.
 * Forward: per image and group, the patches as an im2col matrix (in the
 * workspace for engine 3, which is its use of it), then each filter's
 * row times it.  Backward data: each (filter, r, s) adds its tap of dy
 * into dx, which gives every dx element its terms in ascending order. */
void run_conv(const Exec &e)
{
    const Op &op = e.op;
    const Conv &c = op.conv;
    const Tensor &X = op.x, &W = op.w, &Y = op.y;
    int64_t N = X.dims[0], C = X.dims[1], H = X.dims[2], Wd = X.dims[3];
    int64_t K = W.dims[0], Cg = W.dims[1], R = W.dims[2], S = W.dims[3];
    int64_t P = Y.dims[2], Q = Y.dims[3];
    int64_t G = C / Cg, Kg = K / G;
    bool tc = e.engine == 0 && X.dt == CUDNN_DATA_FLOAT;
    std::vector<float> w = unpack(W, e.w, tc);
    if (c.mode == CUDNN_CONVOLUTION)    /* true convolution: the filter flipped */
        for (int64_t k = 0; k < K; k++)
            for (int64_t ch = 0; ch < Cg; ch++) {
                float *f = &w[(size_t)((k * Cg + ch) * R * S)];
                std::reverse(f, f + R * S);
            }
    float alpha = (float)op.alpha, beta = (float)op.beta;
    if (!op.bwd) {
        std::vector<float> x = unpack(X, e.x, tc), y((size_t)(N * K * P * Q), 0.0f);
        std::vector<float> own;
        size_t ncol = (size_t)(Cg * R * S * P * Q);
        float *col;
        if (e.engine == IM2COL_ENGINE) {
            col = (float *)e.ws;
        } else {
            own.resize(ncol);
            col = own.data();
        }
        for (int64_t n = 0; n < N; n++)
            for (int64_t g = 0; g < G; g++) {
                for (int64_t ch = 0; ch < Cg; ch++)
                    for (int64_t r = 0; r < R; r++)
                        for (int64_t s = 0; s < S; s++) {
                            float *row = col + ((ch * R + r) * S + s) * P * Q;
                            const float *plane = &x[(size_t)((n * C + g * Cg + ch) * H * Wd)];
                            for (int64_t p = 0; p < P; p++) {
                                int64_t h = p * c.stride[0] - c.pre[0] + r * c.dil[0];
                                for (int64_t q = 0; q < Q; q++) {
                                    int64_t wi = q * c.stride[1] - c.pre[1] + s * c.dil[1];
                                    row[p * Q + q] = h >= 0 && h < H && wi >= 0 && wi < Wd
                                                         ? plane[h * Wd + wi] : 0.0f;
                                }
                            }
                        }
                for (int64_t kk = 0; kk < Kg; kk++) {
                    int64_t k = g * Kg + kk;
                    float *acc = &y[(size_t)((n * K + k) * P * Q)];
                    for (int64_t i = 0; i < Cg; i++) {
                        int64_t ch = e.engine == 1 ? (i + e.run) % Cg : i;
                        for (int64_t rs = 0; rs < R * S; rs++) {
                            const float wv = w[(size_t)((k * Cg + ch) * R * S + rs)];
                            const float *row = col + (ch * R * S + rs) * P * Q;
                            for (int64_t pq = 0; pq < P * Q; pq++)
                                acc[pq] += row[pq] * wv;
                        }
                    }
                }
            }
        pack_out(Y, e.y, y, alpha, beta);
        return;
    }
    std::vector<float> dy = unpack(Y, e.y, tc), dx((size_t)(N * C * H * Wd), 0.0f);
    if (e.engine == IM2COL_ENGINE)
        memset(e.ws, 0, (size_t)e.ws_bytes);    /* the engine's scratch: it must be there */
    for (int64_t n = 0; n < N; n++)
        for (int64_t ch = 0; ch < C; ch++) {
            int64_t g = ch / Cg, cg = ch % Cg;
            float *acc = &dx[(size_t)((n * C + ch) * H * Wd)];
            for (int64_t i = 0; i < Kg; i++) {
                int64_t k = g * Kg + (e.engine == 1 ? (i + e.run) % Kg : i);
                const float *plane = &dy[(size_t)((n * K + k) * P * Q)];
                for (int64_t r = 0; r < R; r++)
                    for (int64_t s = 0; s < S; s++) {
                        const float wv = w[(size_t)(((k * Cg + cg) * R + r) * S + s)];
                        for (int64_t p = 0; p < P; p++) {
                            int64_t h = p * c.stride[0] - c.pre[0] + r * c.dil[0];
                            if (h < 0 || h >= H)
                                continue;
                            for (int64_t q = 0; q < Q; q++) {
                                int64_t wi = q * c.stride[1] - c.pre[1] + s * c.dil[1];
                                if (wi >= 0 && wi < Wd)
                                    acc[h * Wd + wi] += plane[p * Q + q] * wv;
                            }
                        }
                    }
            }
        }
    pack_out(X, e.x, dx, alpha, beta);
}

/* The bytes a tensor spans from its pointer. */
size_t span(const Tensor &t)
{
    int64_t last = 0;
    for (int i = 0; i < t.nd; i++)
        last += (t.dims[i] - 1) * t.strides[i];
    return (size_t)(last + 1) * dt_size(t.dt);
}

/* ---- the pointwise nodes -------------------------------------------------------------- */

/* One element of a pointwise node in FLOAT, a = alpha1 x and b = alpha2 b,
 * as cudnnPointwiseMode_t documents the modes (GELU_FWD: the Gaussian
 * error linear unit, x Phi(x), which GELU_APPROX_TANH_FWD approximates;
 * RELU_FWD: below the lower clip lower + slope (x - lower), above the
 * upper clip the upper).  The comparisons (RELU_FWD, MAX, MIN) propagate a
 * NaN only where CUDNN_ATTR_POINTWISE_NAN_PROPAGATION is
 * CUDNN_PROPAGATE_NAN; what they do else is not documented, and the mock
 * drops it (the lower clip, the other operand): the reading least
 * favourable to a caller who needs NaN to come through. */
float pw_apply(const Pointwise &p, float a, float b)
{
    switch (p.mode) {
    case CUDNN_POINTWISE_ADD: return a + b;
    case CUDNN_POINTWISE_SUB: return a - b;
    case CUDNN_POINTWISE_MUL: return a * b;
    case CUDNN_POINTWISE_DIV: return a / b;
    case CUDNN_POINTWISE_MAX: case CUDNN_POINTWISE_MIN:
        if (std::isnan(a) || std::isnan(b))
            return p.nan_prop ? NAN : std::isnan(a) ? b : a;
        if (p.mode == CUDNN_POINTWISE_MAX)
            return a > b ? a : b;
        return a < b ? a : b;
    case CUDNN_POINTWISE_RELU_FWD: {
        if (std::isnan(a))
            return p.nan_prop ? a : (float)p.lower;
        float lo = (float)p.lower, hi = (float)p.upper, v = a;
        if (v < lo)
            v = lo + (float)p.slope * (v - lo);
        if (v > hi)
            v = hi;
        return v;
    }
    case CUDNN_POINTWISE_TANH_FWD: return std::tanh(a);
    case CUDNN_POINTWISE_SIGMOID_FWD: return 1.0f / (1.0f + std::exp(-a));
    case CUDNN_POINTWISE_EXP: return std::exp(a);
    case CUDNN_POINTWISE_ABS: return std::fabs(a);
    case CUDNN_POINTWISE_SQRT: return std::sqrt(a);
    case CUDNN_POINTWISE_GELU_FWD: return 0.5f * a * (1.0f + std::erf(a / std::sqrt(2.0f)));
    case CUDNN_POINTWISE_IDENTITY: return a;
    default: return NAN;    /* pw_known refused it at Finalize */
    }
}

/* One execution of a graph: the pointers of its real tensors and the
 * values of its by-value ones (read at Execute), by uid. */
struct GraphExec {
    Graph g;
    int64_t engine;
    std::map<int64_t, void *> ptr;
    std::map<int64_t, float> value;
    void *ws;
    int64_t ws_bytes;
    long run;
};

/* The graph's operations in their order, virtual tensors in host
 * buffers laid out by their strides. */
void run_graph(const GraphExec &e)
{
    std::map<int64_t, std::vector<float>> virt;
    std::map<int64_t, float> value = e.value;
    auto at = [&](const Tensor &t) -> void * {
        if (t.byval)
            return &value[t.uid];
        if (!t.virt)
            return e.ptr.at(t.uid);
        std::vector<float> &v = virt[t.uid];
        if (v.empty())
            v.assign(span(t) / sizeof(float), 0.0f);
        return v.data();
    };
    for (const Op &op : e.g.ops) {
        if (!op.pw) {
            run_conv(Exec{op, e.engine, at(op.x), at(op.w), at(op.y), e.ws, e.ws_bytes, e.run});
            continue;
        }
        const float *x = (const float *)at(op.x), *b = op.has_b ? (const float *)at(op.w) : nullptr;
        float *y = (float *)at(op.y);
        int nd = op.y.nd;
        int64_t idx[CUDNN_DIM_MAX] = {0}, count = 1;
        for (int k = 0; k < nd; k++)
            count *= op.y.dims[k];
        for (int64_t n = 0; n < count; n++) {
            int64_t xo = 0, bo = 0, yo = 0;
            for (int k = 0; k < nd; k++) {
                xo += (op.x.dims[k] == 1 ? 0 : idx[k]) * op.x.strides[k];
                bo += b && op.w.dims[k] != 1 ? idx[k] * op.w.strides[k] : 0;
                yo += idx[k] * op.y.strides[k];
            }
            y[yo] = pw_apply(op.mode, (float)op.alpha * x[xo], b ? (float)op.beta * b[bo] : 0.0f);
            for (int k = nd - 1; k >= 0 && ++idx[k] == op.y.dims[k]; k--)
                idx[k] = 0;
        }
    }
}

} /* namespace */

/* ---- the handle ----------------------------------------------------------------------- */

size_t cudnnGetVersion(void)
{
    return CUDNN_VERSION;
}

const char *cudnnGetErrorString(cudnnStatus_t s)
{
    switch (s) {
    case CUDNN_STATUS_SUCCESS: return "CUDNN_STATUS_SUCCESS";
    case CUDNN_STATUS_NOT_INITIALIZED: return "CUDNN_STATUS_NOT_INITIALIZED";
    case CUDNN_STATUS_BAD_PARAM: return "CUDNN_STATUS_BAD_PARAM";
    case CUDNN_STATUS_BAD_PARAM_NULL_POINTER: return "CUDNN_STATUS_BAD_PARAM_NULL_POINTER";
    case CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER:
        return "CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER";
    case CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED: return "CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED";
    case CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND: return "CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND";
    case CUDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT: return "CUDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT";
    case CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH: return "CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH";
    case CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES:
        return "CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES";
    case CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE: return "CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE";
    case CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE: return "CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE";
    case CUDNN_STATUS_NOT_SUPPORTED: return "CUDNN_STATUS_NOT_SUPPORTED";
    case CUDNN_STATUS_INTERNAL_ERROR: return "CUDNN_STATUS_INTERNAL_ERROR";
    case CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED:
        return "CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED";
    case CUDNN_STATUS_EXECUTION_FAILED: return "CUDNN_STATUS_EXECUTION_FAILED";
    default: return "CUDNN_STATUS_UNKNOWN";
    }
}

cudnnStatus_t cudnnCreate(cudnnHandle_t *h)
{
    if (!h)
        return bad(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "cudnnCreate", "a null pointer");
    const char *f = getenv("HOSTCUDA_CUDNN_CREATE");
    if (f && strcmp(f, "fail") == 0) {
        hc::count("cudnnCreate failed (HOSTCUDA_CUDNN_CREATE=fail)");
        return CUDNN_STATUS_NOT_INITIALIZED;
    }
    cudnnContext *c = new cudnnContext{nullptr};
    handles.insert(c);
    hc::live_dnn++;
    hc::count("cudnnCreate");
    *h = c;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnDestroy(cudnnHandle_t h)
{
    if (!handles.count(h))
        return bad(CUDNN_STATUS_BAD_PARAM, "cudnnDestroy", "not a live handle");
    if (hc::capture_conflict("cudnnDestroy", "an implicit cudaDeviceSynchronize"))
        return CUDNN_STATUS_INTERNAL_ERROR;
    hc::drain_all();        /* "will implicitly call cudaDeviceSynchronize" */
    handles.erase(h);
    delete h;
    hc::live_dnn--;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetStream(cudnnHandle_t h, cudaStream_t s)
{
    if (!handles.count(h))
        return bad(CUDNN_STATUS_BAD_PARAM, "cudnnSetStream", "not a live handle");
    if (!hc::stream_ok("cudnnSetStream", s))
        return CUDNN_STATUS_BAD_PARAM;
    h->stream = s;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetStream(cudnnHandle_t h, cudaStream_t *s)
{
    if (!handles.count(h) || !s)
        return bad(CUDNN_STATUS_BAD_PARAM, "cudnnGetStream", "not a live handle, or null");
    *s = h->stream;
    return CUDNN_STATUS_SUCCESS;
}

/* ---- descriptors ------------------------------------------------------------------------ */

cudnnStatus_t cudnnBackendCreateDescriptor(cudnnBackendDescriptorType_t type,
                                           cudnnBackendDescriptor_t *out)
{
    if (!out)
        return bad(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "cudnnBackendCreateDescriptor",
                   "a null pointer");
    if ((int)type < 0 || (int)type > (int)CUDNN_BACKEND_OPERATION_SDPA_BWD_DESCRIPTOR)
        return bad(CUDNN_STATUS_BAD_PARAM, "cudnnBackendCreateDescriptor", "type %d", (int)type);
    Desc *d = new Desc();
    d->magic = MAGIC;
    d->type = type;
    d->finalized = false;
    live.insert(d);
    hc::live_desc++;
    *out = d;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendDestroyDescriptor(cudnnBackendDescriptor_t p)
{
    Desc *d = as_desc(p);
    if (!d)
        return bad(CUDNN_STATUS_BAD_PARAM, "cudnnBackendDestroyDescriptor", "%p is not a live "
                   "descriptor (destroyed twice?)", p);
    d->magic = 0;
    live.erase(d);
    delete d;
    hc::live_desc--;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendInitialize(cudnnBackendDescriptor_t p)
{
    (void)p;
    return bad(CUDNN_STATUS_NOT_SUPPORTED, "cudnnBackendInitialize", "deprecated: use "
               "cudnnBackendCreateDescriptor");
}

cudnnStatus_t cudnnBackendSetAttribute(cudnnBackendDescriptor_t p,
                                       cudnnBackendAttributeName_t name,
                                       cudnnBackendAttributeType_t type, int64_t count,
                                       const void *elems)
{
    const char *call = "cudnnBackendSetAttribute";
    Desc *d = as_desc(p);
    if (!d)
        return bad(CUDNN_STATUS_BAD_PARAM, call, "%p is not a live descriptor", p);
    if (d->finalized)
        return bad(CUDNN_STATUS_NOT_INITIALIZED, call, "attribute %d of a finalized %s",
                   (int)name, desc_name(d->type));
    const Spec *s = find_spec(d->type, name);
    if (!s)
        return bad(CUDNN_STATUS_BAD_PARAM, call, "attribute %d is not an attribute of a %s "
                   "descriptor (or not one the mock knows)", (int)name, desc_name(d->type));
    if (s->flags & RO)
        return bad(CUDNN_STATUS_BAD_PARAM, call, "%s is read-only", s->name);
    if (type != s->type && type != s->type2)
        return bad(CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE, call, "%s is set as attribute type "
                   "%d; the documented type is %d", s->name, (int)type, (int)s->type);
    if (count < s->min || count > s->max)
        return bad(CUDNN_STATUS_BAD_PARAM, call, "%s with %lld elements (documented: %lld to "
                   "%lld)", s->name, (long long)count, (long long)s->min, (long long)s->max);
    if (count > 0 && !elems)
        return bad(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, call, "%s: a null array", s->name);
    size_t es = type_size(type);
    if (type == CUDNN_TYPE_BACKEND_DESCRIPTOR)
        for (int64_t i = 0; i < count; i++)
            if (!as_desc(((const cudnnBackendDescriptor_t *)elems)[i]))
                return bad(CUDNN_STATUS_BAD_PARAM, call, "%s: element %lld is not a live "
                           "descriptor", s->name, (long long)i);
    const unsigned char *b = (const unsigned char *)elems;
    d->attrs[name].assign(b, b + es * (size_t)count);
    d->counts[name] = count;
    d->types[name] = type;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendFinalize(cudnnBackendDescriptor_t p)
{
    const char *call = "cudnnBackendFinalize";
    Desc *d = as_desc(p);
    if (!d)
        return bad(CUDNN_STATUS_BAD_PARAM, call, "%p is not a live descriptor", p);
    if (d->finalized)
        return bad(CUDNN_STATUS_BAD_PARAM, call, "a %s finalized twice", desc_name(d->type));
    for (const Spec &s : specs)
        if (s.desc == d->type && (s.flags & REQ) && !has(d, s.attr))
            return bad(CUDNN_STATUS_BAD_PARAM, call, "the %s has no %s (required)",
                       desc_name(d->type), s.name);
    cudnnStatus_t st;
    switch (d->type) {
    case CUDNN_BACKEND_TENSOR_DESCRIPTOR: st = fin_tensor(d); break;
    case CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR: st = fin_conv(d); break;
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR: st = fin_op(d); break;
    case CUDNN_BACKEND_POINTWISE_DESCRIPTOR: st = fin_pointwise(d); break;
    case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR: st = fin_pwop(d); break;
    case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR: st = fin_graph(d); break;
    case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR: st = fin_heur(d); break;
    case CUDNN_BACKEND_ENGINE_DESCRIPTOR: st = fin_engine(d); break;
    case CUDNN_BACKEND_ENGINECFG_DESCRIPTOR: st = fin_cfg(d); break;
    case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR: st = fin_plan(d); break;
    case CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR: st = fin_pack(d); break;
    default:
        hc::misuse(call, "a %s (type %d): not implemented by the mock", desc_name(d->type),
                   (int)d->type);
        return CUDNN_STATUS_NOT_SUPPORTED;
    }
    if (st == CUDNN_STATUS_SUCCESS)
        d->finalized = true;
    return st;
}

namespace {

/* GetAttribute's copy-out: n values of size es, *count = how many there are. */
cudnnStatus_t give(const void *vals, int64_t have, size_t es, int64_t want, int64_t *count,
                   void *out)
{
    *count = have;
    int64_t n = std::min(have, want);
    if (n > 0)
        memcpy(out, vals, (size_t)n * es);
    return CUDNN_STATUS_SUCCESS;
}

/* Fill a caller's descriptor (created, of type `want`) as a result. */
cudnnStatus_t fill(const char *call, void *slot, cudnnBackendDescriptorType_t want,
                   const std::shared_ptr<Engine> &e)
{
    Desc *r = as_desc(*(cudnnBackendDescriptor_t *)slot);
    if (!r)
        return bad(CUDNN_STATUS_BAD_PARAM, call, "a result slot is not a descriptor made with "
                   "cudnnBackendCreateDescriptor");
    if (r->type != want)
        return bad(CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE, call, "a result slot is a %s "
                   "descriptor, not a %s one", desc_name(r->type), desc_name(want));
    r->engine = e;
    r->attrs.clear();
    r->finalized = true;
    return CUDNN_STATUS_SUCCESS;
}

} /* namespace */

cudnnStatus_t cudnnBackendGetAttribute(cudnnBackendDescriptor_t const p,
                                       cudnnBackendAttributeName_t name,
                                       cudnnBackendAttributeType_t type, int64_t want,
                                       int64_t *count, void *out)
{
    const char *call = "cudnnBackendGetAttribute";
    Desc *d = as_desc(p);
    if (!d)
        return bad(CUDNN_STATUS_BAD_PARAM, call, "%p is not a live descriptor", p);
    const Spec *s = find_spec(d->type, name);
    if (!s)
        return bad(CUDNN_STATUS_BAD_PARAM, call, "attribute %d is not an attribute of a %s "
                   "descriptor", (int)name, desc_name(d->type));
    if (type != s->type && type != s->type2)
        return bad(CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE, call, "%s read as type %d; the "
                   "documented type is %d", s->name, (int)type, (int)s->type);
    if (!count || want < 0 || (want > 0 && !out))
        return bad(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, call, "%s: no count or array", s->name);
    if (!d->finalized)
        return bad(CUDNN_STATUS_NOT_INITIALIZED, call, "%s of a %s that is not finalized",
                   s->name, desc_name(d->type));
    if (name == CUDNN_ATTR_ENGINEHEUR_RESULTS) {
        std::vector<int64_t> idx;
        if (runnable(*d->graph))
            idx = d->heur == CUDNN_HEUR_MODE_FALLBACK ? std::vector<int64_t>{4}
                                                       : std::vector<int64_t>{0, 1, 2, 3};
        *count = (int64_t)idx.size();
        for (int64_t i = 0; i < std::min(want, *count); i++) {
            cudnnStatus_t st = fill(call, (cudnnBackendDescriptor_t *)out + i,
                                    CUDNN_BACKEND_ENGINECFG_DESCRIPTOR,
                                    std::make_shared<Engine>(Engine{*d->graph, idx[i]}));
            if (st)
                return st;
        }
        hc::count("cudnn heuristics queried");
        return CUDNN_STATUS_SUCCESS;
    }
    if (name == CUDNN_ATTR_ENGINECFG_ENGINE) {
        *count = 1;
        return want >= 1 ? fill(call, out, CUDNN_BACKEND_ENGINE_DESCRIPTOR, d->engine)
                         : CUDNN_STATUS_SUCCESS;
    }
    if (name == CUDNN_ATTR_ENGINECFG_WORKSPACE_SIZE) {
        int64_t ws = engine_ws(*d->engine);
        return give(&ws, 1, sizeof ws, want, count, out);
    }
    if (name == CUDNN_ATTR_ENGINE_NUMERICAL_NOTE) {
        std::vector<cudnnBackendNumericalNote_t> notes;
        engine_notes(*d->engine, notes);
        return give(notes.data(), (int64_t)notes.size(), sizeof notes[0], want, count, out);
    }
    if (name == CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE)
        return give(nullptr, 0, 0, want, count, out);
    if (name == CUDNN_ATTR_ENGINE_GLOBAL_INDEX && d->engine)
        return give(&d->engine->index, 1, sizeof(int64_t), want, count, out);
    if (name == CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE)
        return give(&d->plan->ws, 1, sizeof(int64_t), want, count, out);
    if (name == CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT) {
        int64_t n = NENGINES;
        return give(&n, 1, sizeof n, want, count, out);
    }
    auto it = d->attrs.find(name);
    if (it == d->attrs.end())
        return give(nullptr, 0, 0, want, count, out);
    return give(it->second.data(), d->counts[name], type_size(d->types[name]), want, count, out);
}

cudnnStatus_t cudnnBackendExecute(cudnnHandle_t h, cudnnBackendDescriptor_t plan_p,
                                  cudnnBackendDescriptor_t pack_p)
{
    const char *call = "cudnnBackendExecute";
    if (!handles.count(h))
        return bad(CUDNN_STATUS_BAD_PARAM, call, "not a live handle");
    Desc *pd = as_desc(plan_p), *vd = as_desc(pack_p);
    if (!pd || pd->type != CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR)
        return bad(CUDNN_STATUS_BAD_PARAM, call, "the plan is not an execution plan");
    if (!vd || vd->type != CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR)
        return bad(CUDNN_STATUS_BAD_PARAM, call, "the pack is not a variant pack");
    if (!pd->finalized || !vd->finalized)
        return bad(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED, call, "the %s is not finalized",
                   pd->finalized ? "variant pack" : "plan");
    const Plan &plan = *pd->plan;
    const Pack &pack = vd->pack;
    if (plan.handle != h)
        return bad(CUDNN_STATUS_BAD_PARAM, call, "the plan was made for another handle");
    /* the graph's real tensors, by uid: each in the pack once, nothing else */
    const Graph &g = plan.e.g;
    std::map<int64_t, const Tensor *> real;
    for (const Op &op : g.ops) {
        std::vector<const Tensor *> ts = op_inputs(op);
        ts.push_back(&op.out());
        for (const Tensor *t : ts)
            if (!t->virt)
                real[t->uid] = t;
    }
    GraphExec e{g, plan.e.index, {}, {}, pack.ws, plan.ws, 0};
    std::vector<const void *> uses{pack.ws};
    for (size_t i = 0; i < pack.uids.size(); i++) {
        int64_t uid = pack.uids[i];
        if (e.ptr.count(uid))
            return bad(CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES, call, "uid %lld twice",
                       (long long)uid);
        if (!real.count(uid))
            return bad(CUDNN_STATUS_BAD_PARAM, call, "uid %lld is no real tensor of the graph "
                       "(a virtual one has no pointer)", (long long)uid);
        e.ptr[uid] = pack.ptrs[i];
    }
    for (const auto &kv : real) {
        const Tensor &t = *kv.second;
        void *p = e.ptr.count(kv.first) ? e.ptr[kv.first] : nullptr;
        if (!p)
            return bad(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, call, "no pointer for uid %lld",
                       (long long)kv.first);
        if (t.byval) {      /* the scalar itself, in host memory */
            if (hc::device_range(p, 1))
                return bad(CUDNN_STATUS_BAD_PARAM, call, "by-value uid %lld points to device "
                           "memory", (long long)kv.first);
            e.value[kv.first] = *(const float *)p;
            continue;
        }
        if ((uintptr_t)p % (uintptr_t)t.align)
            return bad(CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER, call, "uid %lld at %p is not "
                       "aligned to its CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT of %lld",
                       (long long)kv.first, p, (long long)t.align);
        if (!hc::device_range(p, span(t)))
            return bad(CUDNN_STATUS_BAD_PARAM, call, "uid %lld: %zu bytes at %p are not inside "
                       "one cudaMalloc allocation", (long long)kv.first, span(t), p);
        uses.push_back(p);
    }
    if (plan.ws > 0 && !hc::device_range(pack.ws, (size_t)plan.ws))
        return bad(CUDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT, call, "the plan needs a workspace "
                   "of %lld bytes; %p does not hold them", (long long)plan.ws, pack.ws);
    /* engine 1's order: another each execution, and each process (the
     * seed: HOSTCUDA_NONDET_SEED, else the process id) */
    static long seed = getenv("HOSTCUDA_NONDET_SEED") ? atol(getenv("HOSTCUDA_NONDET_SEED"))
                                                      : (long)getpid();
    e.run = executions++ + seed * 7919;
    hc::count("cudnn executions on engine " + std::to_string(plan.e.index));
    if (g.fused())
        hc::count("cudnn executions of graphs with pointwise nodes");
    std::vector<cudnnBackendNumericalNote_t> notes;
    engine_notes(plan.e, notes);
    for (cudnnBackendNumericalNote_t nn : notes)
        if (nn == CUDNN_NUMERICAL_NOTE_TENSOR_CORE || nn == CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC)
            hc::count(nn == CUDNN_NUMERICAL_NOTE_TENSOR_CORE
                          ? "cudnn executions on a TENSOR_CORE engine"
                          : "cudnn executions on a NONDETERMINISTIC engine");
    if (hc::enqueue(h->stream, call, [e]() { run_graph(e); }, uses) != cudaSuccess)
        return CUDNN_STATUS_EXECUTION_FAILED;
    return CUDNN_STATUS_SUCCESS;
}
