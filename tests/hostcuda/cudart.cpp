/* cudart.cpp - the CUDA runtime calls einc's output makes, on the host,
 * written from the documentation in cuda_runtime_api.h and the CUDA
 * Runtime API's "API synchronization behavior" and "stream
 * synchronization behavior" notes:
 *
 *  - device memory is host memory, filled with NaN (0x7fc07fc0 words: a
 *    NaN as f32, f16 and bf16) when allocated, every allocation's bounds
 *    recorded; HOSTCUDA_DEVICE_MEMORY bytes in all (default 2G), beyond
 *    which cudaMalloc fails with cudaErrorMemoryAllocation;
 *  - copies check that the pointers are what `kind` says and that the
 *    device range lies inside one allocation;
 *  - the legacy default stream (0), blocking and non-blocking streams and
 *    events order work as documented, and nothing more: work runs when the
 *    host must see it, and then only what that needs (see mock.h);
 *  - cudaGetLastError returns and clears the last error of any call.
 *
 * At exit it prints what is still alive (allocations, streams, events,
 * cuBLAS and cuDNN handles, cuDNN descriptors) and the counts; leaks give
 * exit status 98, uses the documentation does not allow 97.
 *
 * Ambiguities, and what the mock does:
 *  - cudaMalloc(&p, 0) is not documented: success, p = NULL.
 *  - cudaFree "may perform implicit synchronization": a caller cannot count
 *    on it, so freeing memory that queued work still uses is reported;
 *    then it does synchronize, as drivers do.
 *  - cudaMemcpyAsync from pageable memory "might be synchronous" and "may
 *    stage": the source is read at the call (staged), the device is
 *    written when the stream gets there, and a copy to the host is not
 *    waited for (the caller must synchronize).
 *  - pinned host memory does not exist here: all host memory is pageable.
 *
 * Stream capture and graphs (cudaStreamBeginCapture's and
 * cudaThreadExchangeStreamCaptureMode's documentation): while a stream
 * captures, work queued on it is recorded, not run: its calls return
 * success and nothing happens until a launch of the graph instantiated
 * from it, which runs the recorded work in order, as one piece of work on
 * the launch stream, after the exec's previous launch.  Capture may not
 * begin on the legacy stream or on a stream that captures; the calls that
 * conflict with a capture in any mode (synchronising or querying a
 * capturing stream, cudaDeviceSynchronize, work on the legacy stream while
 * a blocking stream captures, a copy from or to host memory into the
 * graph) and, in the modes other than cudaStreamCaptureModeRelaxed, the
 * "potentially unsafe" ones (cudaMalloc, cudaFree, the synchronous
 * cudaMemcpy and cudaMemset, cudaStreamSynchronize and
 * cudaEventSynchronize of any stream or event) are errors: the call
 * returns cudaErrorStreamCaptureUnsupported (cudaErrorStreamCaptureImplicit
 * for the legacy stream), the capture is invalidated and
 * cudaStreamEndCapture returns cudaErrorStreamCaptureInvalidated and no
 * graph.  Events recorded or waited for on a capturing stream (the fork
 * and join of a multi-stream capture) are not modelled: reported.  A
 * launch whose recorded work uses memory freed since the capture is
 * reported.  Graphs and execs still alive at exit are leaks.
 *
 * One host thread only. */
#include "mock.h"

#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <unistd.h>

struct Op;
struct Capture;

struct CUstream_st {
    unsigned flags;
    bool legacy;                    /* the NULL stream */
    bool destroyed;
    unsigned long id;
    std::deque<std::shared_ptr<Op>> q;      /* queued, not yet run */
    std::shared_ptr<Op> last;
    Capture *cap;                   /* capturing: where its work goes */
};

/* A piece of recorded work: what it is, the work, the device pointers
 * it uses (checked at each launch). */
struct Node {
    const char *what;
    hc::Fn fn;
    std::vector<const void *> uses;
};

struct Capture {
    cudaStreamCaptureMode mode;
    bool invalid;                   /* a rule was broken: no graph */
    std::vector<Node> nodes;
};

struct CUgraph_st {
    std::vector<Node> nodes;
};

struct CUgraphExec_st {
    std::shared_ptr<const std::vector<Node>> nodes;
    std::shared_ptr<Op> last;       /* its latest launch */
};

struct CUevent_st {
    unsigned flags;
    bool recorded;
    bool destroyed;
    std::shared_ptr<Op> op;         /* the work it captured */
};

struct Op {
    unsigned long seq;
    CUstream_st *s;
    std::vector<std::shared_ptr<Op>> deps;  /* on other streams */
    hc::Fn fn;
    const char *what;
    std::vector<unsigned long> uses;        /* allocation ids */
    bool done;
    double t;                       /* when it ran (for event timing) */
};

namespace hc {

long live_blas, live_dnn, live_desc, live_lt, live_lt_desc;

static thread_local cudaError_t last_error = cudaSuccess;
static long misuses;
static std::map<std::string, long> counts;
static std::map<uintptr_t, Alloc> allocs;
static unsigned long next_alloc, next_seq, next_stream;
static size_t used_bytes;
static long long device_bytes = -1;
static CUstream_st legacy_stream = {0, true, false, 0, {}, nullptr, nullptr};
static CUstream_st per_thread_stream = {0, false, false, 1, {}, nullptr, nullptr};
static std::set<CUstream_st *> streams;     /* created and not destroyed */
static std::set<CUevent_st *> events;
static std::set<CUstream_st *> capturing;   /* streams in capture mode */
static std::set<CUgraph_st *> graphs;
static std::set<CUgraphExec_st *> execs;
static bool running;                        /* inside a queued op */

static void report();

static void init()
{
    static bool done;
    if (done)
        return;
    done = true;
    device_bytes = env_bytes("HOSTCUDA_DEVICE_MEMORY", 2LL << 30);
    atexit(report);
}

void misuse(const char *call, const char *fmt, ...)
{
    init();
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "hostcuda: error: %s: ", call);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    misuses++;
}

void note(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "hostcuda: note: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

void count(const std::string &key, long n)
{
    init();
    counts[key] += n;
}

bool env_flag(const char *name)
{
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") != 0;
}

long long env_bytes(const char *name, long long dflt)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return dflt;
    char *end;
    long long n = strtoll(v, &end, 10);
    switch (*end) {
    case 'K': case 'k': n <<= 10; break;
    case 'M': case 'm': n <<= 20; break;
    case 'G': case 'g': n <<= 30; break;
    default: break;
    }
    return n;
}

const Alloc *find_alloc(const void *p)
{
    uintptr_t a = (uintptr_t)p;
    auto it = allocs.upper_bound(a);
    if (it == allocs.begin())
        return nullptr;
    --it;
    const Alloc &al = it->second;
    return a < (uintptr_t)al.base + al.size ? &al : nullptr;
}

bool is_device(const void *p)
{
    return p && find_alloc(p);
}

bool device_range(const void *p, size_t n)
{
    const Alloc *al = find_alloc(p);
    return al && (uintptr_t)p - (uintptr_t)al->base <= al->size &&
           n <= al->size - ((uintptr_t)p - (uintptr_t)al->base);
}

void set_last_error(cudaError_t e)
{
    if (e != cudaSuccess)
        last_error = e;
}

static cudaError_t fail(cudaError_t e)
{
    set_last_error(e);
    return e;
}

/* ---- streams ---------------------------------------------------------------- */

static CUstream_st *resolve(cudaStream_t s)
{
    if (s == nullptr || s == cudaStreamLegacy)
        return &legacy_stream;
    if (s == cudaStreamPerThread)
        return &per_thread_stream;
    return s;
}

bool stream_ok(const char *call, cudaStream_t s)
{
    init();
    CUstream_st *st = resolve(s);
    if (st == &legacy_stream || st == &per_thread_stream)
        return true;
    if (!streams.count(st)) {
        misuse(call, "stream %p was never created or was destroyed (undefined behaviour)",
               (void *)s);
        return false;
    }
    return true;
}

static double now_ms()
{
    using namespace std::chrono;
    return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

static void run_op(const std::shared_ptr<Op> &op)
{
    running = true;
    if (op->fn)
        op->fn();
    running = false;
    op->t = now_ms();
    op->done = true;
    op->fn = nullptr;
    op->deps.clear();
}

/* Run op, and first everything it depends on: the earlier work of its
 * stream and what that waits for on other streams.  op is held by value:
 * the caller's may be the queue's own, which running it pops. */
static void force(std::shared_ptr<Op> op)
{
    if (!op || op->done)
        return;
    if (running) {
        fprintf(stderr, "hostcuda: internal error: queued work waits for the queue\n");
        abort();
    }
    CUstream_st *s = op->s;
    while (!op->done) {
        std::shared_ptr<Op> f = s->q.front();
        for (size_t i = 0; i < f->deps.size(); i++) {
            std::shared_ptr<Op> d = f->deps[i];
            if (d && !d->done)
                force(d);
        }
        s->q.pop_front();
        run_op(f);
    }
}

static void drain(CUstream_st *s)
{
    force(s->last);
}

void drain_all()
{
    /* the oldest queued op first, until none is left */
    for (;;) {
        CUstream_st *first = nullptr;
        auto consider = [&](CUstream_st *s) {
            if (!s->q.empty() && (!first || s->q.front()->seq < first->q.front()->seq))
                first = s;
        };
        consider(&legacy_stream);
        consider(&per_thread_stream);
        for (CUstream_st *s : streams)
            consider(s);
        if (!first)
            break;
        force(first->q.front());
    }
}

/* The documented implicit ordering of the legacy default stream: work on
 * it waits for all earlier work of every blocking stream, and later work
 * on a blocking stream waits for it.  Non-blocking streams
 * (cudaStreamNonBlocking) are ordered with nothing but themselves. */
static const char *mode_name(cudaStreamCaptureMode m)
{
    return m == cudaStreamCaptureModeGlobal ? "cudaStreamCaptureModeGlobal"
           : m == cudaStreamCaptureModeThreadLocal ? "cudaStreamCaptureModeThreadLocal"
                                                   : "cudaStreamCaptureModeRelaxed";
}

/* A call that would wait for a capturing stream (not permitted in any
 * capture mode): reported, every capture invalidated.  True if so. */
static bool conflicts(const char *call, const char *why)
{
    if (capturing.empty())
        return false;
    misuse(call, "%s while stream %lu captures (not permitted in any capture mode)", why,
           (*capturing.begin())->id);
    for (CUstream_st *c : capturing)
        c->cap->invalid = true;
    return true;
}

/* A "potentially unsafe API call" (cudaThreadExchangeStreamCaptureMode):
 * prohibited while this thread has a capture not begun in
 * cudaStreamCaptureModeRelaxed (one host thread: every capture is its).
 * Reported, that capture invalidated.  True if so. */
static bool unsafe(const char *call)
{
    bool bad = false;
    for (CUstream_st *c : capturing)
        if (c->cap->mode != cudaStreamCaptureModeRelaxed) {
            if (!bad)
                misuse(call, "a potentially unsafe call while stream %lu captures in %s", c->id,
                       mode_name(c->cap->mode));
            bad = true;
            c->cap->invalid = true;
        }
    return bad;
}

static cudaError_t add_op(CUstream_st *s, const char *what, Fn fn,
                          const std::vector<const void *> &uses = {})
{
    /* a capturing stream records the work instead */
    if (s->cap) {
        if (s->cap->invalid)
            return cudaErrorStreamCaptureInvalidated;
        if (fn)
            count("captured work");
        s->cap->nodes.push_back(Node{what, std::move(fn), uses});
        return cudaSuccess;
    }
    /* the legacy stream would wait for a capturing blocking stream */
    if (s->legacy)
        for (CUstream_st *c : capturing)
            if (!(c->flags & cudaStreamNonBlocking)) {
                misuse(what, "work on the legacy stream while blocking stream %lu captures "
                       "(an implicit dependency on the capture)", c->id);
                c->cap->invalid = true;
                return cudaErrorStreamCaptureImplicit;
            }
    /* what a GPU would see as launches: kernels, library calls, copies,
     * graphs (not event records and waits) */
    if (fn)
        count("work queued");
    auto op = std::make_shared<Op>();
    for (const void *p : uses)
        if (const Alloc *a = find_alloc(p))
            op->uses.push_back(a->id);
    op->seq = ++next_seq;
    op->s = s;
    op->what = what;
    op->fn = std::move(fn);
    op->done = false;
    op->t = 0;
    auto dep = [&](const std::shared_ptr<Op> &d) {
        if (d && !d->done && d->s != s)
            op->deps.push_back(d);
    };
    if (s->legacy) {
        dep(per_thread_stream.last);
        for (CUstream_st *b : streams)
            if (!(b->flags & cudaStreamNonBlocking))
                dep(b->last);
    } else if (!(s->flags & cudaStreamNonBlocking)) {
        dep(legacy_stream.last);
    }
    s->q.push_back(op);
    s->last = op;
    return cudaSuccess;
}

cudaError_t enqueue(cudaStream_t s, const char *what, Fn fn, std::vector<const void *> uses)
{
    cudaError_t e = add_op(resolve(s), what, std::move(fn), uses);
    set_last_error(e);
    return e;
}

bool is_capturing(cudaStream_t s)
{
    return resolve(s)->cap != nullptr;
}

bool capture_conflict(const char *call, const char *why)
{
    return conflicts(call, why);
}

/* Queued work that uses allocation id, or null. */
static const Op *user_of(unsigned long id)
{
    auto in = [&](CUstream_st *s) -> const Op * {
        for (auto &op : s->q)
            for (unsigned long u : op->uses)
                if (u == id)
                    return op.get();
        return nullptr;
    };
    if (const Op *o = in(&legacy_stream))
        return o;
    if (const Op *o = in(&per_thread_stream))
        return o;
    for (CUstream_st *s : streams)
        if (const Op *o = in(s))
            return o;
    return nullptr;
}

/* ---- the exit report ---------------------------------------------------------- */

static void report()
{
    long nalloc = (long)allocs.size();
    size_t bytes = 0;
    for (auto &a : allocs)
        bytes += a.second.size;
    long nstreams = (long)streams.size(), nevents = (long)events.size();
    long ngraphs = (long)graphs.size(), nexecs = (long)execs.size();
    for (auto &c : counts)
        fprintf(stderr, "hostcuda: count: %s %ld\n", c.first.c_str(), c.second);
    bool leaks = nalloc || nstreams || nevents || live_blas || live_dnn || live_desc ||
                 live_lt || live_lt_desc || ngraphs || nexecs;
    if (leaks)
        fprintf(stderr, "hostcuda: error: leaked at exit: %ld allocations (%zu bytes), %ld "
                "streams, %ld events, %ld cuBLAS handles, %ld cuDNN handles, %ld cuDNN "
                "descriptors, %ld cuBLASLt handles, %ld cuBLASLt descriptors, %ld graphs, "
                "%ld graph execs\n", nalloc, bytes, nstreams, nevents, live_blas, live_dnn,
                live_desc, live_lt, live_lt_desc, ngraphs, nexecs);
    else
        fprintf(stderr, "hostcuda: no leaks\n");
    if (misuses)
        fprintf(stderr, "hostcuda: %ld uses the documentation does not allow\n", misuses);
    fflush(stdout);
    fflush(stderr);
    if (misuses)
        _exit(97);
    if (leaks)
        _exit(98);
}

} /* namespace hc */

using namespace hc;

/* For selftest.cpp: the count of forbidden uses so far, and forget them. */
long hc_misuses(bool reset)
{
    long n = misuses;
    if (reset)
        misuses = 0;
    return n;
}

/* For the drivers of the C API: a count of the exit report so far. */
long hc_count(const char *key)
{
    auto it = counts.find(key);
    return it == counts.end() ? 0 : it->second;
}

/* ---- errors and devices -------------------------------------------------------------- */

cudaError_t cudaGetLastError(void)
{
    cudaError_t e = last_error;
    last_error = cudaSuccess;
    return e;
}

cudaError_t cudaPeekAtLastError(void)
{
    return last_error;
}

static const struct {
    cudaError_t e;
    const char *name, *text;
} error_names[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {cudaErrorInitializationError, "cudaErrorInitializationError", "initialization error"},
    {cudaErrorInvalidConfiguration, "cudaErrorInvalidConfiguration",
     "invalid configuration argument"},
    {cudaErrorInvalidMemcpyDirection, "cudaErrorInvalidMemcpyDirection",
     "invalid copy direction for memcpy"},
    {cudaErrorInvalidDevicePointer, "cudaErrorInvalidDevicePointer", "invalid device pointer"},
    {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle",
     "invalid resource handle"},
    {cudaErrorNotReady, "cudaErrorNotReady", "device not ready"},
    {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {cudaErrorNoDevice, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
    {cudaErrorLaunchFailure, "cudaErrorLaunchFailure", "unspecified launch failure"},
    {cudaErrorNotSupported, "cudaErrorNotSupported", "operation not supported"},
    {cudaErrorIllegalState, "cudaErrorIllegalState",
     "the resource is not in a valid state to perform the requested operation"},
    {cudaErrorStreamCaptureUnsupported, "cudaErrorStreamCaptureUnsupported",
     "operation not permitted when stream is capturing"},
    {cudaErrorStreamCaptureInvalidated, "cudaErrorStreamCaptureInvalidated",
     "operation failed due to a previous error during capture"},
    {cudaErrorStreamCaptureImplicit, "cudaErrorStreamCaptureImplicit",
     "operation would make the legacy stream depend on a capturing blocking stream"},
    {cudaErrorUnknown, "cudaErrorUnknown", "unknown error"},
};

const char *cudaGetErrorName(cudaError_t e)
{
    for (auto &n : error_names)
        if (n.e == e)
            return n.name;
    return "cudaErrorUnknown";
}

const char *cudaGetErrorString(cudaError_t e)
{
    for (auto &n : error_names)
        if (n.e == e)
            return n.text;
    return "unrecognized error code";
}

cudaError_t cudaGetDevice(int *device)
{
    if (!device)
        return fail(cudaErrorInvalidValue);
    *device = 0;
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int device)
{
    return device == 0 ? cudaSuccess : fail(cudaErrorInvalidDevice);
}

/* "Returns in *prop the properties of device dev": the one device here, a
   made-up sm_90 whose name says what it is; the rest zero. */
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int device)
{
    if (!prop)
        return fail(cudaErrorInvalidValue);
    if (device != 0)
        return fail(cudaErrorInvalidDevice);
    memset(prop, 0, sizeof *prop);
    snprintf(prop->name, sizeof prop->name, "hostcuda emulation on the CPU");
    prop->major = 9;
    prop->minor = 0;
    prop->multiProcessorCount = 1;
    prop->warpSize = 32;
    prop->maxThreadsPerBlock = 1024;
    prop->sharedMemPerBlock = 48 * 1024;
    return cudaSuccess;
}

cudaError_t cudaGetDeviceCount(int *n)
{
    if (!n)
        return fail(cudaErrorInvalidValue);
    *n = 1;
    return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void)
{
    init();
    if (conflicts("cudaDeviceSynchronize", "waiting for every stream"))
        return fail(cudaErrorStreamCaptureUnsupported);
    drain_all();
    return cudaSuccess;
}

/* ---- memory ----------------------------------------------------------------------- */

cudaError_t cudaMalloc(void **p, size_t size)
{
    init();
    if (!p)
        return fail(cudaErrorInvalidValue);
    if (unsafe("cudaMalloc"))
        return fail(cudaErrorStreamCaptureUnsupported);
    if (size == 0) {
        *p = nullptr;
        return cudaSuccess;
    }
    if ((long long)size < 0 || used_bytes + size > (size_t)device_bytes) {
        count("cudaMalloc failed");
        return fail(cudaErrorMemoryAllocation);
    }
    void *m = nullptr;
    if (posix_memalign(&m, 256, size) != 0)
        return fail(cudaErrorMemoryAllocation);
    static const uint32_t nan_bits = 0x7fc07fc0u;
    uint32_t *w = (uint32_t *)m;
    for (size_t i = 0; i < size / 4; i++)
        w[i] = nan_bits;
    memcpy((char *)m + size / 4 * 4, &nan_bits, size % 4);
    allocs[(uintptr_t)m] = Alloc{(char *)m, size, ++next_alloc};
    used_bytes += size;
    *p = m;
    count("cudaMalloc");
    return cudaSuccess;
}

cudaError_t cudaFree(void *p)
{
    init();
    if (!p)
        return cudaSuccess;
    if (unsafe("cudaFree"))
        return fail(cudaErrorStreamCaptureUnsupported);
    auto it = allocs.find((uintptr_t)p);
    if (it == allocs.end()) {
        misuse("cudaFree", "%p is not an allocation of cudaMalloc (or was freed)", p);
        return fail(cudaErrorInvalidValue);
    }
    /* "may perform implicit synchronization": a caller may not count on
     * it, so freeing what queued work still uses is an error; then it
     * does synchronize, as drivers do */
    if (const Op *u = user_of(it->second.id))
        misuse("cudaFree", "%p is still used by queued work (%s): synchronize first", p,
               u->what);
    drain_all();
    used_bytes -= it->second.size;
    allocs.erase(it);
    free(p);
    return cudaSuccess;
}

static const char *kind_name(cudaMemcpyKind k)
{
    switch (k) {
    case cudaMemcpyHostToHost: return "cudaMemcpyHostToHost";
    case cudaMemcpyHostToDevice: return "cudaMemcpyHostToDevice";
    case cudaMemcpyDeviceToHost: return "cudaMemcpyDeviceToHost";
    case cudaMemcpyDeviceToDevice: return "cudaMemcpyDeviceToDevice";
    case cudaMemcpyDefault: return "cudaMemcpyDefault";
    }
    return "?";
}

/* Is [p, p + n) device memory (1), host memory (0), or device memory that
 * runs past its allocation (-1)? */
static int side(const void *p, size_t n)
{
    if (!find_alloc(p))
        return 0;
    return device_range(p, n) ? 1 : -1;
}

/* The checks of both copies; the kind with cudaMemcpyDefault resolved. */
static cudaError_t check_copy(const char *call, void *dst, const void *src, size_t n,
                              cudaMemcpyKind *kind)
{
    if (n == 0)
        return cudaSuccess;
    if (!dst || !src) {
        misuse(call, "a null pointer");
        return cudaErrorInvalidValue;
    }
    int d = side(dst, n), s = side(src, n);
    if (d < 0 || s < 0) {
        misuse(call, "%zu bytes at %s %p run past the end of its allocation", n,
               d < 0 ? "destination" : "source", d < 0 ? dst : (void *)src);
        return cudaErrorInvalidValue;
    }
    cudaMemcpyKind want = d ? (s ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice)
                            : (s ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost);
    if (*kind == cudaMemcpyDefault) {
        *kind = want;
    } else if ((unsigned)*kind > cudaMemcpyDefault) {
        return cudaErrorInvalidMemcpyDirection;
    } else if (*kind != want) {
        misuse(call, "%s, but the pointers make it %s (undefined behaviour)", kind_name(*kind),
               kind_name(want));
        return cudaErrorInvalidValue;
    }
    if ((const char *)dst < (const char *)src + n && (const char *)src < (const char *)dst + n) {
        misuse(call, "the source and destination overlap");
        return cudaErrorInvalidValue;
    }
    return cudaSuccess;
}

/* The copy as queued work; a host source is read now (staged). */
static Fn copy_op(void *dst, const void *src, size_t n, cudaMemcpyKind kind)
{
    if (kind == cudaMemcpyHostToDevice) {
        auto staged = std::make_shared<std::vector<unsigned char>>(
            (const unsigned char *)src, (const unsigned char *)src + n);
        return [dst, staged]() { memcpy(dst, staged->data(), staged->size()); };
    }
    return [dst, src, n]() { memcpy(dst, src, n); };
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, cudaMemcpyKind kind)
{
    init();
    cudaError_t e = check_copy("cudaMemcpy", dst, src, count, &kind);
    if (e != cudaSuccess)
        return fail(e);
    if (count == 0)
        return cudaSuccess;
    if (kind != cudaMemcpyHostToHost && unsafe("cudaMemcpy"))
        return fail(cudaErrorStreamCaptureUnsupported);
    hc::count(std::string("cudaMemcpy ") + kind_name(kind));
    if (kind == cudaMemcpyHostToHost) {
        memcpy(dst, src, count);
        return cudaSuccess;
    }
    /* on the legacy stream; host to device: "a stream sync is performed
     * before the copy is initiated" and the function returns once the
     * source is staged; device to host returns once the copy is done;
     * device to device: "no host-side synchronization" */
    if ((e = add_op(&legacy_stream, "cudaMemcpy", copy_op(dst, src, count, kind), {dst, src})) !=
        cudaSuccess)
        return fail(e);
    if (kind != cudaMemcpyDeviceToDevice)
        force(legacy_stream.last);
    return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, cudaMemcpyKind kind,
                            cudaStream_t stream)
{
    init();
    if (!stream_ok("cudaMemcpyAsync", stream))
        return fail(cudaErrorInvalidResourceHandle);
    cudaError_t e = check_copy("cudaMemcpyAsync", dst, src, count, &kind);
    if (e != cudaSuccess)
        return fail(e);
    if (count == 0)
        return cudaSuccess;
    hc::count(std::string("cudaMemcpyAsync ") + kind_name(kind));
    if (kind == cudaMemcpyHostToHost) {
        memcpy(dst, src, count);
        return cudaSuccess;
    }
    /* a graph's copies are between device buffers: pageable host memory
     * (all host memory here) cannot be captured */
    if (resolve(stream)->cap && kind != cudaMemcpyDeviceToDevice) {
        misuse("cudaMemcpyAsync", "%s of pageable host memory into a capture", kind_name(kind));
        resolve(stream)->cap->invalid = true;
        return fail(cudaErrorStreamCaptureUnsupported);
    }
    return fail(add_op(resolve(stream), "cudaMemcpyAsync", copy_op(dst, src, count, kind),
                       {dst, src}));
}

cudaError_t cudaMemset(void *p, int value, size_t count)
{
    init();
    if (count && !device_range(p, count)) {
        misuse("cudaMemset", "%zu bytes at %p are not inside one allocation", count, p);
        return fail(cudaErrorInvalidValue);
    }
    if (unsafe("cudaMemset"))
        return fail(cudaErrorStreamCaptureUnsupported);
    return fail(add_op(&legacy_stream, "cudaMemset",
                       [p, value, count]() { memset(p, value, count); }, {p}));
}

cudaError_t cudaMemsetAsync(void *p, int value, size_t count, cudaStream_t stream)
{
    init();
    if (!stream_ok("cudaMemsetAsync", stream))
        return fail(cudaErrorInvalidResourceHandle);
    if (count && !device_range(p, count)) {
        misuse("cudaMemsetAsync", "%zu bytes at %p are not inside one allocation", count, p);
        return fail(cudaErrorInvalidValue);
    }
    return fail(add_op(resolve(stream), "cudaMemsetAsync",
                       [p, value, count]() { memset(p, value, count); }, {p}));
}

/* ---- streams and events ---------------------------------------------------------- */

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags)
{
    init();
    if (!s || (flags & ~(unsigned)cudaStreamNonBlocking))
        return fail(cudaErrorInvalidValue);
    CUstream_st *st = new CUstream_st{flags, false, false, ++next_stream + 1, {}, nullptr, nullptr};
    streams.insert(st);
    *s = st;
    return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t *s)
{
    return cudaStreamCreateWithFlags(s, cudaStreamDefault);
}

cudaError_t cudaStreamDestroy(cudaStream_t s)
{
    init();
    CUstream_st *st = resolve(s);
    if (st == &legacy_stream || st == &per_thread_stream) {
        misuse("cudaStreamDestroy", "the default stream cannot be destroyed");
        return fail(cudaErrorInvalidResourceHandle);
    }
    if (!stream_ok("cudaStreamDestroy", s))
        return fail(cudaErrorInvalidResourceHandle);
    if (st->cap) {
        misuse("cudaStreamDestroy", "stream %lu is capturing: end the capture first", st->id);
        return fail(cudaErrorStreamCaptureUnsupported);
    }
    /* "will return immediately and the resources ... released once the
     * device has completed all work": queued work stays queued */
    streams.erase(st);
    st->destroyed = true;
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
    init();
    if (!stream_ok("cudaStreamSynchronize", s))
        return fail(cudaErrorInvalidResourceHandle);
    CUstream_st *st = resolve(s);
    if (st->cap) {
        misuse("cudaStreamSynchronize", "stream %lu is capturing (not permitted in any capture "
               "mode)", st->id);
        st->cap->invalid = true;
        return fail(cudaErrorStreamCaptureUnsupported);
    }
    if (unsafe("cudaStreamSynchronize"))
        return fail(cudaErrorStreamCaptureUnsupported);
    drain(st);
    /* the legacy stream also waits for what it implicitly follows */
    return cudaSuccess;
}

cudaError_t cudaStreamQuery(cudaStream_t s)
{
    init();
    if (!stream_ok("cudaStreamQuery", s))
        return fail(cudaErrorInvalidResourceHandle);
    CUstream_st *st = resolve(s);
    if (st->cap) {
        misuse("cudaStreamQuery", "stream %lu is capturing (not permitted in any capture mode)",
               st->id);
        st->cap->invalid = true;
        return fail(cudaErrorStreamCaptureUnsupported);
    }
    return st->q.empty() ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags)
{
    init();
    if (!e)
        return fail(cudaErrorInvalidValue);
    CUevent_st *ev = new CUevent_st{flags, false, false, nullptr};
    events.insert(ev);
    *e = ev;
    return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *e)
{
    return cudaEventCreateWithFlags(e, cudaEventDefault);
}

static bool event_ok(const char *call, cudaEvent_t e)
{
    init();
    if (!e || !events.count(e)) {
        misuse(call, "event %p was never created or was destroyed", (void *)e);
        return false;
    }
    return true;
}

cudaError_t cudaEventDestroy(cudaEvent_t e)
{
    if (!event_ok("cudaEventDestroy", e))
        return fail(cudaErrorInvalidResourceHandle);
    events.erase(e);
    delete e;
    return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
    if (!event_ok("cudaEventRecord", e))
        return fail(cudaErrorInvalidResourceHandle);
    if (!stream_ok("cudaEventRecord", s))
        return fail(cudaErrorInvalidResourceHandle);
    CUstream_st *st = resolve(s);
    if (st->cap) {
        misuse("cudaEventRecord", "an event recorded in a capture (a multi-stream capture): "
               "not modelled by the mock");
        st->cap->invalid = true;
        return fail(cudaErrorStreamCaptureUnsupported);
    }
    cudaError_t r = add_op(st, "cudaEventRecord", nullptr);
    if (r != cudaSuccess)
        return fail(r);
    e->op = st->last;
    e->recorded = true;
    return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t e)
{
    if (!event_ok("cudaEventSynchronize", e))
        return fail(cudaErrorInvalidResourceHandle);
    if (unsafe("cudaEventSynchronize"))
        return fail(cudaErrorStreamCaptureUnsupported);
    force(e->op);
    return cudaSuccess;
}

cudaError_t cudaEventQuery(cudaEvent_t e)
{
    if (!event_ok("cudaEventQuery", e))
        return fail(cudaErrorInvalidResourceHandle);
    return !e->op || e->op->done ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b)
{
    if (!ms)
        return fail(cudaErrorInvalidValue);
    if (!event_ok("cudaEventElapsedTime", a) || !event_ok("cudaEventElapsedTime", b))
        return fail(cudaErrorInvalidResourceHandle);
    if (!a->recorded || !b->recorded || (a->flags & cudaEventDisableTiming) ||
        (b->flags & cudaEventDisableTiming))
        return fail(cudaErrorInvalidResourceHandle);
    if (!a->op->done || !b->op->done)
        return fail(cudaErrorNotReady);
    /* the host time between the two ran here: not a GPU's time */
    *ms = (float)(b->op->t - a->op->t);
    return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned flags)
{
    if (!event_ok("cudaStreamWaitEvent", e))
        return fail(cudaErrorInvalidResourceHandle);
    if (!stream_ok("cudaStreamWaitEvent", s))
        return fail(cudaErrorInvalidResourceHandle);
    if (flags & ~(unsigned)cudaEventWaitExternal)
        return fail(cudaErrorInvalidValue);
    CUstream_st *st = resolve(s);
    if (st->cap) {
        misuse("cudaStreamWaitEvent", "a wait in a capture (a multi-stream capture, or a "
               "dependency across the capture's boundary): not modelled by the mock");
        st->cap->invalid = true;
        return fail(cudaErrorStreamCaptureUnsupported);
    }
    /* the event's state now; later records do not change this wait */
    std::shared_ptr<Op> waited = e->op;
    cudaError_t r = add_op(st, "cudaStreamWaitEvent", nullptr);
    if (r != cudaSuccess)
        return fail(r);
    if (waited && !waited->done && waited->s != st)
        st->last->deps.push_back(waited);
    return cudaSuccess;
}

/* ---- kernel launches (hostcuda.h) ---------------------------------------------------- */

void hc_launch_enqueue(const char *name, dim3 grid, dim3 block, size_t smem,
                       cudaStream_t stream, std::function<void()> run,
                       std::vector<const void *> uses)
{
    init();
    unsigned long threads = (unsigned long)block.x * block.y * block.z;
    if (block.x < 1 || block.y < 1 || block.z < 1 || block.x > 1024 || block.y > 1024 ||
        block.z > 64 || threads > 1024 || grid.x < 1 || grid.y < 1 || grid.z < 1 ||
        grid.x > 2147483647u || grid.y > 65535 || grid.z > 65535 || smem > 48 * 1024) {
        count("launch with a bad configuration");
        set_last_error(cudaErrorInvalidConfiguration);
        return;
    }
    if (!stream_ok(name, stream)) {
        set_last_error(cudaErrorInvalidResourceHandle);
        return;
    }
    CUstream_st *st = resolve(stream);
    count(st->cap ? "captured kernel launches" : "kernel launches");
    /* einc's four-elements-a-thread maps and row groups (emit/cuda.c), for
     * align.cpp */
    size_t len = strlen(name);
    if (len > 3 && strcmp(name + len - 3, "_v4") == 0)
        count("_v4 kernel launches");
    set_last_error(add_op(st, name, std::move(run), uses));
}

void hc_check_kernel_pointer(const char *name, int arg, const void *p)
{
    if (p && !is_device(p))
        misuse(name, "kernel argument %d (%p) is not device memory", arg, p);
}

/* ---- stream capture and graphs --------------------------------------------------------- */

cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode mode)
{
    init();
    if (!stream_ok("cudaStreamBeginCapture", s))
        return fail(cudaErrorInvalidResourceHandle);
    CUstream_st *st = resolve(s);
    if (st->legacy) {
        misuse("cudaStreamBeginCapture", "capture may not be initiated on the legacy stream");
        return fail(cudaErrorStreamCaptureUnsupported);
    }
    if (st->cap) {
        misuse("cudaStreamBeginCapture", "stream %lu is already capturing", st->id);
        return fail(cudaErrorIllegalState);
    }
    if (mode != cudaStreamCaptureModeGlobal && mode != cudaStreamCaptureModeThreadLocal &&
        mode != cudaStreamCaptureModeRelaxed)
        return fail(cudaErrorInvalidValue);
    /* a driver that cannot capture: the caller's fallback */
    if (env_flag("HOSTCUDA_REFUSE_CAPTURE"))
        return fail(cudaErrorNotSupported);
    st->cap = new Capture{mode, false, {}};
    capturing.insert(st);
    return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *graph)
{
    init();
    if (!stream_ok("cudaStreamEndCapture", s))
        return fail(cudaErrorInvalidResourceHandle);
    if (!graph)
        return fail(cudaErrorInvalidValue);
    CUstream_st *st = resolve(s);
    if (!st->cap) {
        misuse("cudaStreamEndCapture", "stream %lu is not capturing", st->id);
        return fail(cudaErrorIllegalState);
    }
    std::unique_ptr<Capture> c(st->cap);
    st->cap = nullptr;
    capturing.erase(st);
    if (c->invalid) {
        *graph = nullptr;
        count("graph captures invalidated");
        return fail(cudaErrorStreamCaptureInvalidated);
    }
    CUgraph_st *g = new CUgraph_st{std::move(c->nodes)};
    graphs.insert(g);
    count("graph captures");
    *graph = g;
    return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t s, cudaStreamCaptureStatus *status)
{
    init();
    if (!status)
        return fail(cudaErrorInvalidValue);
    if (!stream_ok("cudaStreamIsCapturing", s))
        return fail(cudaErrorInvalidResourceHandle);
    CUstream_st *st = resolve(s);
    if (st->legacy && !capturing.empty())
        for (CUstream_st *c : capturing)
            if (!(c->flags & cudaStreamNonBlocking))
                return fail(cudaErrorStreamCaptureImplicit);
    *status = !st->cap ? cudaStreamCaptureStatusNone
              : st->cap->invalid ? cudaStreamCaptureStatusInvalidated
                                 : cudaStreamCaptureStatusActive;
    return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t g, unsigned long long flags)
{
    init();
    if (!exec)
        return fail(cudaErrorInvalidValue);
    if (!g || !graphs.count(g)) {
        misuse("cudaGraphInstantiate", "graph %p was never captured or was destroyed",
               (void *)g);
        return fail(cudaErrorInvalidValue);
    }
    if (flags != 0) {
        misuse("cudaGraphInstantiate", "flags %#llx: not modelled by the mock", flags);
        return fail(cudaErrorInvalidValue);
    }
    /* the exec is independent of its graph, which may be destroyed */
    CUgraphExec_st *x = new CUgraphExec_st{std::make_shared<const std::vector<Node>>(g->nodes),
                                           nullptr};
    execs.insert(x);
    count("graph instantiations");
    *exec = x;
    return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t x, cudaStream_t s)
{
    init();
    if (!x || !execs.count(x)) {
        misuse("cudaGraphLaunch", "exec %p was never instantiated or was destroyed", (void *)x);
        return fail(cudaErrorInvalidValue);
    }
    if (!stream_ok("cudaGraphLaunch", s))
        return fail(cudaErrorInvalidResourceHandle);
    CUstream_st *st = resolve(s);
    if (st->cap) {
        misuse("cudaGraphLaunch", "a graph launched into a capture (a child graph): not "
               "modelled by the mock");
        st->cap->invalid = true;
        return fail(cudaErrorStreamCaptureUnsupported);
    }
    /* the recorded pointers are used as they were: their memory must
     * still be allocated */
    std::vector<const void *> uses;
    for (size_t i = 0; i < x->nodes->size(); i++)
        for (const void *p : (*x->nodes)[i].uses) {
            if (p && !find_alloc(p)) {
                misuse("cudaGraphLaunch", "node %zu (%s) uses %p, which is no longer allocated "
                       "(freed since the capture)", i, (*x->nodes)[i].what, p);
                return fail(cudaErrorInvalidValue);
            }
            uses.push_back(p);
        }
    count("graph launches");
    count("graph nodes launched", (long)x->nodes->size());
    std::shared_ptr<const std::vector<Node>> nodes = x->nodes;
    cudaError_t e = add_op(st, "cudaGraphLaunch", [nodes]() {
        for (const Node &n : *nodes)
            if (n.fn)
                n.fn();
    }, uses);
    if (e != cudaSuccess)
        return fail(e);
    /* "ordered behind ... any previous launches of graphExec" */
    if (x->last && !x->last->done && x->last->s != st)
        st->last->deps.push_back(x->last);
    x->last = st->last;
    return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t x)
{
    init();
    if (!x || !execs.count(x)) {
        misuse("cudaGraphExecDestroy", "exec %p was never instantiated or was destroyed",
               (void *)x);
        return fail(cudaErrorInvalidValue);
    }
    /* a launch in flight keeps its own reference to the work */
    execs.erase(x);
    delete x;
    return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t g)
{
    init();
    if (!g || !graphs.count(g)) {
        misuse("cudaGraphDestroy", "graph %p was never captured or was destroyed", (void *)g);
        return fail(cudaErrorInvalidValue);
    }
    graphs.erase(g);
    delete g;
    return cudaSuccess;
}
