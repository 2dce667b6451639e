/* hostcuda.h - what a generated .cu needs to build as host C++ against
 * NVIDIA's own headers and the mock libraries of this folder.  Given to
 * the compiler with -include; the .cu itself is unchanged but for its
 * launches, rewritten by hostcuda.test from
 *
 *     NAME<<<GRID, BLOCK, SMEM, STREAM>>>(ARGS);
 * to
 *     HC_LAUNCH(NAME, GRID, BLOCK, SMEM, STREAM)(ARGS);
 *
 * Every type, enum and prototype is NVIDIA's (cuda_runtime.h, cublas_v2.h,
 * cublasLt.h, cudnn.h): a call the mocks do not implement fails to link.
 * In host compilation cuda_runtime.h makes __global__, __device__ and
 * __host__ empty; __shared__ is defined first as `static` (host_defines.h
 * keeps a definition it finds), which emu.h's one-block-at-a-time
 * emulation needs. */
#ifndef HOSTCUDA_H
#define HOSTCUDA_H

#ifndef __cplusplus
#error "hostcuda.h is C++"
#endif

#define __shared__ static

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <functional>
#include <tuple>
#include <type_traits>
#include <vector>

#include "emu.h"

/* The mock's side of a launch (cudart.cpp): checks the configuration as
 * cudaLaunchKernel does (an error for cudaGetLastError, nothing queued),
 * then queues `run` on the stream. */
void hc_launch_enqueue(const char *name, dim3 grid, dim3 block, size_t smem,
                       cudaStream_t stream, std::function<void()> run,
                       std::vector<const void *> uses);
/* A pointer argument of a kernel must be device memory (or null). */
void hc_check_kernel_pointer(const char *name, int arg, const void *p);

template <class... P> struct hc_launcher {
    void (*kern)(P...);
    const char *name;
    dim3 grid, block;
    size_t smem;
    cudaStream_t stream;

    template <class T>
    static void check_arg(const char *name, int i, const T &v, std::vector<const void *> &uses)
    {
        if constexpr (std::is_pointer<T>::value) {
            hc_check_kernel_pointer(name, i, (const void *)v);
            uses.push_back((const void *)v);
        }
    }

    template <size_t... I>
    void check(const std::tuple<P...> &a, std::vector<const void *> &uses,
               std::index_sequence<I...>) const
    {
        (void)a;
        (void)uses;
        (check_arg(name, (int)I + 1, std::get<I>(a), uses), ...);
    }

    template <class... A> void operator()(A &&...a) const
    {
        static_assert(sizeof...(A) == sizeof...(P), "a kernel launched with the wrong arguments");
        const std::tuple<P...> args(std::forward<A>(a)...);
        std::vector<const void *> uses;
        check(args, uses, std::index_sequence_for<P...>{});
        auto k = kern;
        const char *n = name;
        hc_emu::Dim g{grid.x, grid.y, grid.z}, b{block.x, block.y, block.z};
        hc_launch_enqueue(name, grid, block, smem, stream,
                          [k, n, g, b, args]() { hc_emu::launch_tuple(k, n, g, b, args); },
                          std::move(uses));
    }
};

template <class... P>
hc_launcher<P...> hc_launch(void (*kern)(P...), const char *name, dim3 grid, dim3 block,
                            size_t smem = 0, cudaStream_t stream = 0)
{
    return hc_launcher<P...>{kern, name, grid, block, smem, stream};
}

#define HC_LAUNCH(kern, ...) hc_launch(kern, #kern, __VA_ARGS__)

#endif /* HOSTCUDA_H */
