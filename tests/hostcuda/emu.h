/* emu.h - CUDA's execution model on one CPU thread, for running the
 * kernels einc writes without a GPU (tests/emit/test_kern.c, and the host
 * build of whole .cu files in tests/hostcuda/).  C++17, header only.
 *
 * A launch runs its blocks one after another.  Every thread of a block is
 * a fiber (its own stack, switched by hand: a few instructions on x86-64,
 * swapcontext elsewhere), run until it reaches a barrier or returns; a
 * barrier releases when every thread it names has reached it:
 *
 *   __syncthreads()          every thread of the block
 *   __shfl_*_sync(mask, ..)  the 32 lanes of the warp; the mask must name
 *                            every lane of the warp (einc only writes full
 *                            masks; anything else is an error here)
 *   __syncwarp(mask)         the same
 *
 * __shared__ arrays are `static`: the blocks run one at a time, so one
 * copy serves each.  When no thread can go on (some wait at a barrier the
 * others never reach, or returned past it) the emulation says which
 * barrier, in which kernel and block, and aborts: on a GPU that is a hang
 * or undefined.  Threads run in order 0, 1, ... between barriers, which is
 * one of the orders a GPU may choose; a race between threads of a block
 * that a barrier does not order is not found.
 *
 * Under AddressSanitizer the stack switches are announced to it
 * (__sanitizer_start_switch_fiber), so the fibers' stacks are checked as
 * any other. */
#ifndef HC_EMU_H
#define HC_EMU_H

#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <tuple>
#include <type_traits>
#include <utility>

#include <sys/mman.h>

#if defined(__SANITIZE_ADDRESS__)
#define HC_EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HC_EMU_ASAN 1
#endif
#endif
#ifdef HC_EMU_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

/* The qualifiers, where no CUDA header gave them (test_kern compiles the
 * kernels alone; tests/hostcuda/hostcuda.h includes cuda_runtime.h first,
 * whose host definitions are kept). */
#ifndef __global__
#define __global__
#endif
#ifndef __device__
#define __device__
#endif
#ifndef __host__
#define __host__
#endif
#ifndef __forceinline__
#define __forceinline__ inline
#endif
#ifndef __shared__
#define __shared__ static
#endif
#ifndef __launch_bounds__
#define __launch_bounds__(...)
#endif

namespace hc_emu {

struct Dim {
    unsigned x, y, z;
};

enum { FIBER_READY, FIBER_WAITING, FIBER_DONE };

struct Fiber {
    void *sp;                   /* saved stack pointer (x86-64) */
#if !defined(__x86_64__)
    ucontext_t uc;
#endif
    char *stack;
    size_t size;
    int state;
    int bar;                    /* barrier waited at: 0 the block, 1 + w warp w */
    unsigned long gen;          /* that barrier's generation when it arrived */
    void *fake;                 /* ASan's fake stack of this fiber */
    Dim tid;                    /* its threadIdx */
};

enum { MAX_THREADS = 1024, MAX_WARPS = MAX_THREADS / 32, STACK = 256 * 1024 };

struct Sched {
    Fiber *f;                   /* MAX_THREADS, stacks made when first used */
    void *main_sp;
#if !defined(__x86_64__)
    ucontext_t main_uc;
#endif
    const void *main_bottom;    /* the scheduler's stack, for ASan */
    size_t main_size;
    void *main_fake;
    unsigned n;                 /* threads in a block */
    unsigned cur;               /* the running fiber */
    const std::function<void()> *body;
    const char *kernel;
    unsigned long block_no;
    unsigned arrived[1 + MAX_WARPS];
    unsigned need[1 + MAX_WARPS];
    unsigned long gen[1 + MAX_WARPS];
    unsigned nwait[1 + MAX_WARPS];
    unsigned short waiting[1 + MAX_WARPS][MAX_THREADS];     /* who waits where */
    unsigned runq[MAX_THREADS];         /* the fibers that can go on, in order */
    unsigned long rq_head, rq_tail;
    unsigned char xchg[2][MAX_WARPS][32][8];    /* the shuffles' exchange, by parity */
    unsigned char parity[MAX_THREADS];          /* of each thread's next shuffle */
    bool running;
};

inline Sched sched;

} /* namespace hc_emu */

inline hc_emu::Dim hc_threadIdx, hc_blockIdx, hc_blockDim, hc_gridDim;
#define threadIdx hc_threadIdx
#define blockIdx hc_blockIdx
#define blockDim hc_blockDim
#define gridDim hc_gridDim
#ifndef warpSize
#define warpSize 32
#endif

#if defined(__x86_64__)
/* hc_emu_swap(&save, to): save the callee-saved registers and the stack
 * pointer into *save, load them from `to`.  The SSE and x87 control words
 * are the same in every fiber (kernels do not change them), so they are
 * not switched.  Weak: the header may be in several files of a program. */
extern "C" void hc_emu_swap(void **save, void *to);
asm(".text\n"
    ".weak hc_emu_swap\n"
    ".type hc_emu_swap, @function\n"
    "hc_emu_swap:\n"
    "    pushq %rbp\n"
    "    pushq %rbx\n"
    "    pushq %r12\n"
    "    pushq %r13\n"
    "    pushq %r14\n"
    "    pushq %r15\n"
    "    movq %rsp, (%rdi)\n"
    "    movq %rsi, %rsp\n"
    "    popq %r15\n"
    "    popq %r14\n"
    "    popq %r13\n"
    "    popq %r12\n"
    "    popq %rbx\n"
    "    popq %rbp\n"
    "    ret\n"
    ".size hc_emu_swap, .-hc_emu_swap\n");
#endif

namespace hc_emu {

[[noreturn]] inline void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
[[noreturn]] inline void fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "emu: error: kernel %s, block %lu: ", sched.kernel ? sched.kernel : "?",
            sched.block_no);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    fflush(stderr);
    abort();
}

inline unsigned flat_tid()
{
    return hc_threadIdx.x + hc_blockDim.x * (hc_threadIdx.y + hc_blockDim.y * hc_threadIdx.z);
}

/* From the running fiber back to the scheduler. */
inline void yield()
{
    Fiber *me = &sched.f[sched.cur];
#ifdef HC_EMU_ASAN
    __sanitizer_start_switch_fiber(&me->fake, sched.main_bottom, sched.main_size);
#endif
#if defined(__x86_64__)
    hc_emu_swap(&me->sp, sched.main_sp);
#else
    swapcontext(&me->uc, &sched.main_uc);
#endif
#ifdef HC_EMU_ASAN
    __sanitizer_finish_switch_fiber(me->fake, &sched.main_bottom, &sched.main_size);
#endif
}

/* Each fiber: the kernel's body for the current block, then back; resumed
 * for the next block (never returns). */
inline void fiber_main()
{
    Fiber *me = &sched.f[sched.cur];
#ifdef HC_EMU_ASAN
    __sanitizer_finish_switch_fiber(nullptr, &sched.main_bottom, &sched.main_size);
#endif
    for (;;) {
        (*sched.body)();
        me->state = FIBER_DONE;
        yield();
    }
}

extern "C" inline void hc_emu_entry()
{
    fiber_main();
}

inline void make_fiber(Fiber *f)
{
    f->size = STACK;
    void *m = mmap(nullptr, f->size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
        fprintf(stderr, "emu: error: no memory for a thread's stack\n");
        abort();
    }
    f->stack = (char *)m;
#if defined(__x86_64__)
    /* the frame hc_emu_swap pops: six registers, then the address it
     * returns to (hc_emu_entry, entered as if called: rsp = 8 mod 16) */
    uintptr_t top = ((uintptr_t)f->stack + f->size) & ~(uintptr_t)15;
    uint64_t *sp = (uint64_t *)top;
    *--sp = 0;                              /* hc_emu_entry's return address */
    *--sp = (uint64_t)(uintptr_t)&hc_emu_entry;
    for (int i = 0; i < 6; i++)
        *--sp = 0;                          /* rbp rbx r12 r13 r14 r15 */
    f->sp = sp;
#else
    getcontext(&f->uc);
    f->uc.uc_stack.ss_sp = f->stack;
    f->uc.uc_stack.ss_size = f->size;
    f->uc.uc_link = nullptr;
    makecontext(&f->uc, (void (*)())hc_emu_entry, 0);
#endif
    f->fake = nullptr;
}

inline void resume(unsigned t)
{
    Fiber *f = &sched.f[t];
    sched.cur = t;
    hc_threadIdx = f->tid;
#ifdef HC_EMU_ASAN
    __sanitizer_start_switch_fiber(&sched.main_fake, f->stack, f->size);
#endif
#if defined(__x86_64__)
    hc_emu_swap(&sched.main_sp, f->sp);
#else
    swapcontext(&sched.main_uc, &f->uc);
#endif
#ifdef HC_EMU_ASAN
    __sanitizer_finish_switch_fiber(sched.main_fake, nullptr, nullptr);
#endif
}

/* Barrier b (0: the block, 1 + w: warp w): wait until every thread it
 * names is here.  The last to arrive releases the others (they go to the
 * run queue) and goes on. */
inline void barrier(int b)
{
    Fiber *me = &sched.f[sched.cur];
    if (++sched.arrived[b] == sched.need[b]) {
        sched.arrived[b] = 0;
        sched.gen[b]++;
        for (unsigned i = 0; i < sched.nwait[b]; i++) {
            unsigned t = sched.waiting[b][i];
            sched.f[t].state = FIBER_READY;
            sched.runq[sched.rq_tail++ % MAX_THREADS] = t;
        }
        sched.nwait[b] = 0;
        return;
    }
    me->bar = b;
    me->gen = sched.gen[b];
    me->state = FIBER_WAITING;
    sched.waiting[b][sched.nwait[b]++] = sched.cur;
    yield();
}

inline const char *barrier_name(int b)
{
    return b == 0 ? "__syncthreads" : "a warp shuffle or __syncwarp";
}

/* Run `body` as the grid: every block, every thread. */
inline void run_grid(Dim grid, Dim block, const std::function<void()> &body, const char *name)
{
    unsigned n = block.x * block.y * block.z;
    if (sched.running) {
        fprintf(stderr, "emu: error: kernel %s launched from inside kernel %s\n", name,
                sched.kernel);
        abort();
    }
    if (n < 1 || n > MAX_THREADS || grid.x < 1 || grid.y < 1 || grid.z < 1) {
        fprintf(stderr, "emu: error: kernel %s: bad launch (%u x %u x %u threads)\n", name,
                block.x, block.y, block.z);
        abort();
    }
    if (!sched.f)
        sched.f = (Fiber *)calloc(MAX_THREADS, sizeof *sched.f);
    for (unsigned t = 0; t < n; t++) {
        if (!sched.f[t].stack)
            make_fiber(&sched.f[t]);
        sched.f[t].tid = Dim{t % block.x, t / block.x % block.y, t / (block.x * block.y)};
    }
    sched.running = true;
    sched.n = n;
    sched.body = &body;
    sched.kernel = name;
    hc_gridDim = grid;
    hc_blockDim = block;
    unsigned nw = (n + 31) / 32;
    sched.need[0] = n;
    for (unsigned w = 0; w < nw; w++)
        sched.need[1 + w] = w + 1 < nw || n % 32 == 0 ? 32 : n % 32;
    memset(sched.arrived, 0, sizeof sched.arrived);
    memset(sched.nwait, 0, sizeof sched.nwait);
    memset(sched.parity, 0, sizeof sched.parity);
    sched.block_no = 0;
    for (unsigned bz = 0; bz < grid.z; bz++)
        for (unsigned by = 0; by < grid.y; by++)
            for (unsigned bx = 0; bx < grid.x; bx++, sched.block_no++) {
                hc_blockIdx = Dim{bx, by, bz};
                sched.rq_head = sched.rq_tail = 0;
                for (unsigned t = 0; t < n; t++) {
                    sched.f[t].state = FIBER_READY;
                    sched.runq[sched.rq_tail++ % MAX_THREADS] = t;
                }
                unsigned live = n;
                while (live > 0) {
                    if (sched.rq_head == sched.rq_tail) {
                        unsigned done = 0, t0 = n;
                        for (unsigned t = 0; t < n; t++) {
                            done += sched.f[t].state == FIBER_DONE;
                            if (sched.f[t].state == FIBER_WAITING && t0 == n)
                                t0 = t;
                        }
                        int b = sched.f[t0].bar;
                        fail("threads wait forever at %s (thread %u and %u others; %u of the "
                             "%u threads it needs arrived; %u threads returned)",
                             barrier_name(b), t0, live - 1, sched.arrived[b], sched.need[b],
                             done);
                    }
                    unsigned t = sched.runq[sched.rq_head++ % MAX_THREADS];
                    resume(t);
                    if (sched.f[t].state == FIBER_DONE)
                        live--;
                }
            }
    sched.running = false;
    sched.kernel = nullptr;
}

/* Launch kernel k over grid x block with the arguments, as CUDA converts
 * them to the kernel's parameter types. */
template <class... P>
inline void launch_tuple(void (*k)(P...), const char *name, Dim grid, Dim block,
                         const std::tuple<P...> &args)
{
    std::function<void()> body = [k, &args]() { std::apply(k, args); };
    run_grid(grid, block, body, name);
}

template <class... P, class... A>
inline void launch(void (*k)(P...), const char *name, Dim grid, Dim block, A &&...a)
{
    static_assert(sizeof...(P) == sizeof...(A), "a kernel launched with the wrong arguments");
    const std::tuple<P...> args(std::forward<A>(a)...);
    launch_tuple(k, name, grid, block, args);
}

inline unsigned warp_mask()
{
    unsigned w = flat_tid() / 32;
    unsigned lanes = sched.need[1 + w];
    return lanes == 32 ? 0xffffffffu : (1u << lanes) - 1;
}

inline void check_mask(const char *what, unsigned mask)
{
    if (mask != warp_mask())
        fail("%s with mask 0x%08x, not every lane of the warp (0x%08x): einc writes full "
             "masks only", what, mask, warp_mask());
}

/* A shuffle: every lane puts v, the warp waits, each takes its source
 * lane's (src(lane) < 0: its own).  Consecutive shuffles use the two
 * exchange buffers in turn, so one barrier each is enough: a lane can
 * overwrite a buffer only two shuffles later, after the whole warp passed
 * the next barrier, that is after every lane read it. */
template <class T, class F> inline T shuffle(const char *what, unsigned mask, T v, F src)
{
    static_assert(sizeof(T) <= 8, "shuffles of at most 8 bytes");
    check_mask(what, mask);
    unsigned t = flat_tid(), w = t / 32, l = t % 32;
    unsigned p = sched.parity[t];
    sched.parity[t] = (unsigned char)(1 - p);
    memcpy(sched.xchg[p][w][l], &v, sizeof v);
    barrier(1 + (int)w);
    T r = v;
    int s = src((int)l);
    if (s >= 0 && s < (int)sched.need[1 + w])
        memcpy(&r, sched.xchg[p][w][s], sizeof r);
    return r;
}

inline void check_width(const char *what, int width)
{
    if (width < 1 || width > 32 || (width & (width - 1)))
        fail("%s with width %d", what, width);
}

} /* namespace hc_emu */

/* Device intrinsics einc's kernels use, on the host. */
inline unsigned __float_as_uint(float x)
{
    unsigned u;
    memcpy(&u, &x, sizeof u);
    return u;
}

inline float __uint_as_float(unsigned u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

inline int __float_as_int(float x)
{
    int i;
    memcpy(&i, &x, sizeof i);
    return i;
}

inline float __int_as_float(int i)
{
    float x;
    memcpy(&x, &i, sizeof x);
    return x;
}

inline void __syncthreads()
{
    hc_emu::barrier(0);
}

inline void __syncwarp(unsigned mask = 0xffffffffu)
{
    hc_emu::check_mask("__syncwarp", mask);
    hc_emu::barrier(1 + (int)(hc_emu::flat_tid() / 32));
}

template <class T> inline T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32)
{
    hc_emu::check_width("__shfl_down_sync", width);
    return hc_emu::shuffle("__shfl_down_sync", mask, v, [=](int l) {
        return l % width + (int)delta < width ? l + (int)delta : -1;
    });
}

template <class T> inline T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32)
{
    hc_emu::check_width("__shfl_up_sync", width);
    return hc_emu::shuffle("__shfl_up_sync", mask, v, [=](int l) {
        return l % width >= (int)delta ? l - (int)delta : -1;
    });
}

template <class T> inline T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32)
{
    hc_emu::check_width("__shfl_xor_sync", width);
    return hc_emu::shuffle("__shfl_xor_sync", mask, v, [=](int l) {
        int s = l ^ lane_mask;
        return s / width == l / width ? s : -1;
    });
}

template <class T> inline T __shfl_sync(unsigned mask, T v, int src, int width = 32)
{
    hc_emu::check_width("__shfl_sync", width);
    return hc_emu::shuffle("__shfl_sync", mask, v, [=](int l) {
        return l / width * width + ((src % width) + width) % width;
    });
}

#endif /* HC_EMU_H */
