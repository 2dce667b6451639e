/* check.h - what the unit tests share: checks that count their failures
 * and go on (CHECK, CHECK_STR, CHECK_NEAR), the summary that ends each
 * test's main (check_finish), a seeded generator, and printing into a
 * string. */
#ifndef EINC_TESTS_CHECK_H
#define EINC_TESTS_CHECK_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures, checks;

/* CHECK(cond) or CHECK(cond, fmt, ...): a failure says where, the
 * condition and, when given, the message (__VA_OPT__ is C23's, and gcc's
 * and clang's in gnu11). */
#define CHECK(cond, ...)                                                     \
    do {                                                                     \
        checks++;                                                            \
        if (!(cond)) {                                                       \
            failures++;                                                      \
            fprintf(stderr, "%s:%d: check failed: %s", __FILE__, __LINE__,   \
                    #cond);                                                  \
            __VA_OPT__(fputs("\n    ", stderr); fprintf(stderr, __VA_ARGS__);) \
            fputc('\n', stderr);                                             \
        }                                                                    \
    } while (0)

/* Two strings are equal (NULL is "(null)"); a failure shows both.  For
 * helpers that check on behalf of a caller's line, check_str_at. */
static inline void check_str_at(const char *file, int line, const char *got,
                                const char *want)
{
    checks++;
    if (got && want && strcmp(got, want) == 0)
        return;
    failures++;
    fprintf(stderr, "%s:%d: got  \"%s\"\n%*s want \"%s\"\n", file, line,
            got ? got : "(null)", (int)strlen(file) + 6, "", want ? want : "(null)");
}
#define CHECK_STR(got, want) check_str_at(__FILE__, __LINE__, (got), (want))

/* |got - want| <= tol * (1 + |want|). */
#define CHECK_NEAR(got, want, tol)                                           \
    do {                                                                     \
        double g_ = (got), w_ = (want);                                      \
        checks++;                                                            \
        if (!(fabs(g_ - w_) <= (tol) * (1 + fabs(w_)))) {                    \
            fprintf(stderr, "%s:%d: got %.17g, want %.17g\n", __FILE__,      \
                    __LINE__, g_, w_);                                       \
            failures++;                                                      \
        }                                                                    \
    } while (0)

/* The end of a test's main: a summary line, and its exit status. */
static inline int check_finish(const char *name)
{
    if (failures)
        fprintf(stderr, "%s: %d of %d checks failed\n", name, failures, checks);
    else
        printf("%s: all %d checks passed\n", name, checks);
    return failures ? 1 : 0;
}

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

#endif
