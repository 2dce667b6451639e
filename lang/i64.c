/* i64.c - checked 64-bit arithmetic, floor division and modulo with the
 * sign of the divisor, and the gcd, as sema and the IR compute indices. */
#include "config.h"
#include "lang.h"

bool i64_add(int64_t a, int64_t b, int64_t *r)
{
    int64_t t;
    if (__builtin_add_overflow(a, b, &t))
        return false;
    *r = t;
    return true;
}

bool i64_sub(int64_t a, int64_t b, int64_t *r)
{
    int64_t t;
    if (__builtin_sub_overflow(a, b, &t))
        return false;
    *r = t;
    return true;
}

bool i64_mul(int64_t a, int64_t b, int64_t *r)
{
    int64_t t;
    if (__builtin_mul_overflow(a, b, &t))
        return false;
    *r = t;
    return true;
}

int64_t i64_floordiv(int64_t a, int64_t b)
{
    if (b == -1)                    /* INT64_MIN / -1 overflows; wrap is defined here */
        return (int64_t)(0 - (uint64_t)a);
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0)))
        q--;
    return q;
}

int64_t i64_floormod(int64_t a, int64_t b)
{
    if (b == -1)
        return 0;
    int64_t m = a % b;
    if (m != 0 && ((m < 0) != (b < 0)))
        m += b;
    return m;
}

uint64_t u64_gcd(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}
