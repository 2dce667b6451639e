/* check.h - the few macros the derive/ unit tests share: checks that count
 * failures instead of stopping, a seeded generator, and printing an IR
 * node into a string. */
#ifndef EINC_TEST_CHECK_H
#define EINC_TEST_CHECK_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

#define CHECK(cond)                                                          \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, \
                    #cond);                                                  \
            failures++;                                                      \
        }                                                                    \
    } while (0)

#define CHECK_STR(got, want)                                                 \
    do {                                                                     \
        const char *g_ = (got), *w_ = (want);                                \
        if (strcmp(g_, w_) != 0) {                                           \
            fprintf(stderr, "%s:%d: got  \"%s\"\n%*s want \"%s\"\n", __FILE__, \
                    __LINE__, g_, (int)strlen(__FILE__) + 6, "", w_);        \
            failures++;                                                      \
        }                                                                    \
    } while (0)

#define CHECK_NEAR(got, want, tol)                                           \
    do {                                                                     \
        double g_ = (got), w_ = (want);                                      \
        if (!(fabs(g_ - w_) <= (tol) * (1 + fabs(w_)))) {                    \
            fprintf(stderr, "%s:%d: got %.17g, want %.17g\n", __FILE__,      \
                    __LINE__, g_, w_);                                       \
            failures++;                                                      \
        }                                                                    \
    } while (0)

/* xorshift64*: fixed seeds make every run the same. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static inline uint64_t rng_next(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dULL;
}

/* Uniform in [lo, hi]. */
static inline int64_t rng_range(int64_t lo, int64_t hi)
{
    return lo + (int64_t)(rng_next() % (uint64_t)(hi - lo + 1));
}

static inline double rng_unit(void)            /* uniform in [-1, 1) */
{
    return (double)(rng_next() >> 11) / (double)(1ULL << 52) - 1.0;
}

/* Capture what fn(args..., fp) prints; the string lives until the next call. */
#define PRINTED(call_with_fp)                                                \
    ({                                                                       \
        static char *buf_;                                                   \
        size_t len_;                                                         \
        free(buf_);                                                          \
        FILE *fp = open_memstream(&buf_, &len_);                             \
        call_with_fp;                                                        \
        fclose(fp);                                                          \
        (const char *)buf_;                                                  \
    })

static inline int finish(const char *name)
{
    if (failures)
        fprintf(stderr, "%s: %d check(s) failed\n", name, failures);
    else
        printf("%s: all checks passed\n", name);
    return failures ? 1 : 0;
}

#endif
