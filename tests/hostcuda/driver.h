/* driver.h - what the C API drivers of tests/hostcuda (align.cpp,
 * graph.cpp, streams.cpp) and the mocks' selftest.cpp share: a check that
 * counts and goes on, and seeded values. */
#ifndef EINC_HOSTCUDA_DRIVER_H
#define EINC_HOSTCUDA_DRIVER_H

#include <cstdint>
#include <cstdio>
#include <vector>

static int checks, failed;

#define CHECK(cond, ...)                                                   \
    do {                                                                   \
        checks++;                                                          \
        if (!(cond)) {                                                     \
            failed++;                                                      \
            fprintf(stderr, "%s:%d: FAIL: ", __FILE__, __LINE__);          \
            fprintf(stderr, __VA_ARGS__);                                  \
            fputc('\n', stderr);                                           \
        }                                                                  \
    } while (0)

/* n values in [-1, 1) from xorshift64, the same for the same seed */
static inline std::vector<float> seeded_values(size_t n, unsigned seed)
{
    std::vector<float> v(n);
    uint64_t s = 0x9e3779b97f4a7c15ull * (seed + 1);
    for (float &x : v) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        x = (float)((double)(s >> 11) / (double)(1ull << 53) * 2 - 1);
    }
    return v;
}

#endif
