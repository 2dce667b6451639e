/* rnd.h - seeded operands in [-1, 1) for the runtime's unit tests
 * (test_dnnl.c, test_cblas.c): a linear congruential generator, the same
 * numbers on every machine. */
#ifndef EINC_TESTS_RND_H
#define EINC_TESTS_RND_H

#include <stdlib.h>

static float *rnd(size_t n, unsigned seed)
{
    float *p = malloc(n * sizeof *p);
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        p[i] = (float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f;
    }
    return p;
}

#endif
