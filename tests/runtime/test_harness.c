/* test_harness.c - unit tests of runtime/harness.c: the command line, the
 * seeded values, loading and writing tensor lists, the median.  The values
 * themselves are checked against an independent Python implementation in
 * python.test. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/harness.h"
#include "tests/check.h"

/* scratch file, in the build folder */
#define TMP "tests/runtime/test_harness.tmp"

/* Parse a NULL-terminated argument list. */
static int parse(RtArgs *a, char *err, const char *arg0, ...)
{
    char *argv[16];
    int argc = 0;
    va_list ap;
    const char *s = arg0;
    va_start(ap, arg0);
    while (s && argc < 15) {
        argv[argc++] = (char *)s;
        s = va_arg(ap, const char *);
    }
    va_end(ap);
    argv[argc] = NULL;
    err[0] = 0;
    return rt_parse_args(argc, argv, a, err, ST_ERRLEN);
}

static void bad_args(int line, const char *msg, const char *a1,
                     const char *a2, const char *a3)
{
    RtArgs a;
    char err[ST_ERRLEN];
    checks++;
    if (parse(&a, err, "./net", a1, a2, a3, (const char *)NULL) != -1) {
        fprintf(stderr, "%s:%d: accepted\n", __FILE__, line);
        failures++;
    }
    check_str_at(__FILE__, line, err, msg);
}

static void test_args(void)
{
    RtArgs a;
    char err[ST_ERRLEN];

    CHECK(parse(&a, err, "/usr/bin/net", (const char *)NULL) == 0);
    CHECK(strcmp(a.prog, "net") == 0 && !a.weights && !a.inputs &&
          !a.outputs && a.seed == 0 && a.bench == 0 && a.runs == 0 && !a.help);
    CHECK(parse(&a, err, "net", "--runs", "3", "--threads=2", (const char *)NULL) == 0 &&
          a.runs == 3 && a.threads == 2 && a.bench == 0);
    CHECK(parse(&a, err, "net", "--weights", "w.st", "--inputs=i.st",
                "--outputs", "o.st", "--seed", "18446744073709551615",
                "--bench=20", (const char *)NULL) == 0);
    CHECK(strcmp(a.weights, "w.st") == 0 && strcmp(a.inputs, "i.st") == 0 &&
          strcmp(a.outputs, "o.st") == 0 &&
          a.seed == 18446744073709551615ULL && a.bench == 20);
    CHECK(parse(&a, err, "net", "--seed", "7", "--help", "--bogus",
                (const char *)NULL) == 0 && a.help && a.seed == 7);
    CHECK(parse(&a, err, "net", "-h", (const char *)NULL) == 0 && a.help);
    CHECK(parse(&a, err, "", (const char *)NULL) == 0 &&
          strcmp(a.prog, "net") == 0);

    bad_args(__LINE__, "unknown option '--weight'", "--weight", "w", NULL);
    bad_args(__LINE__, "unknown option '-w'", "-w", "x", NULL);
    bad_args(__LINE__, "unknown option '--weightsx'", "--weightsx", NULL,
             NULL);
    bad_args(__LINE__, "unexpected argument 'w.st'", "w.st", NULL, NULL);
    bad_args(__LINE__, "unexpected argument '-'", "-", NULL, NULL);
    bad_args(__LINE__, "option '--weights' needs a file name", "--weights",
             NULL, NULL);
    bad_args(__LINE__, "option '--outputs' needs a file name", "--outputs=",
             NULL, NULL);
    bad_args(__LINE__, "option '--seed' needs a number", "--seed", NULL,
             NULL);
    bad_args(__LINE__, "option '--seed': '-1' is not a number from 0 to "
             "18446744073709551615", "--seed", "-1", NULL);
    bad_args(__LINE__, "option '--seed': '18446744073709551616' is not a "
             "number from 0 to 18446744073709551615", "--seed",
             "18446744073709551616", NULL);
    bad_args(__LINE__, "option '--seed': '1x' is not a number from 0 to "
             "18446744073709551615", "--seed=1x", NULL, NULL);
    bad_args(__LINE__, "option '--bench': '0' is not a count from 1 to "
             "1000000000", "--bench", "0", NULL);
    bad_args(__LINE__, "option '--bench': '1000000001' is not a count from "
             "1 to 1000000000", "--bench", "1000000001", NULL);
    bad_args(__LINE__, "option '--bench': ' 5' is not a count from 1 to "
             "1000000000", "--bench", " 5", NULL);
    bad_args(__LINE__, "option '--inputs' given twice", "--inputs=a",
             "--inputs", "b");
    bad_args(__LINE__, "option '--runs': '0' is not a count from 1 to "
             "1000000000", "--runs", "0", NULL);
    bad_args(__LINE__, "option '--runs' needs a number", "--runs", NULL, NULL);
    bad_args(__LINE__, "option '--runs' given twice", "--runs=2", "--runs", "2");
}

static void test_uniform(void)
{
    uint64_t s = rt_stream(0, "x"), i;
    double sum = 0, sum2 = 0;
    float lo = 1, hi = -1, buf[100], buf2[100];
    int n = 1000000, ok = 1;

    for (i = 0; i < (uint64_t)n; i++) {
        float v = rt_uniform(s, i);
        double scaled = ((double)v + 1.0) * 8388608.0;
        if (!(v >= -1.0f && v < 1.0f) || scaled != floor(scaled))
            ok = 0;
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
        sum += v;
        sum2 += (double)v * v;
    }
    CHECK(ok);
    CHECK(lo < -0.9999f && hi > 0.9999f);
    CHECK(fabs(sum / n) < 0.005);                    /* mean 0 */
    CHECK(fabs(sum2 / n - 1.0 / 3) < 0.005);         /* variance 1/3 */

    /* streams differ by seed and by name; a fill is the stream */
    CHECK(rt_stream(0, "x") != rt_stream(1, "x"));
    CHECK(rt_stream(0, "x") != rt_stream(0, "y"));
    CHECK(rt_stream(0, "") != rt_stream(0, "x"));
    rt_fill_uniform(buf, ST_F32, 100, 42, "w1");
    for (i = 0; i < 100; i++)
        ok &= buf[i] == rt_uniform(rt_stream(42, "w1"), i);
    CHECK(ok);
    rt_fill_uniform(buf2, ST_F32, 100, 43, "w1");
    CHECK(memcmp(buf, buf2, sizeof buf) != 0);
    {
        uint16_t h[100], b[100];
        unsigned char z[8];
        rt_fill_uniform(h, ST_F16, 100, 42, "w1");
        rt_fill_uniform(b, ST_BF16, 100, 42, "w1");
        for (i = 0; i < 100; i++)
            ok &= h[i] == st_f32_to_f16(buf[i]) &&
                  b[i] == st_f32_to_bf16(buf[i]);
        CHECK(ok);
        memset(z, 7, sizeof z);
        rt_fill_uniform(z, ST_I32, 2, 42, "w1");
        CHECK(z[0] == 0 && z[7] == 0);
    }
}

static void test_median(void)
{
    double a[5] = { 5, 1, 4, 2, 3 }, b[4] = { 10, 1, 3, 2 }, c[1] = { 7 };
    double t0 = rt_now_ms(), t1 = rt_now_ms();
    CHECK(rt_median(a, 5) == 3);
    CHECK(a[0] == 1 && a[4] == 5);          /* sorted in place */
    CHECK(rt_median(b, 4) == 2.5);
    CHECK(rt_median(c, 1) == 7);
    CHECK(rt_median(NULL, 0) == 0);
    CHECK(t1 >= t0 && t0 > 0);
}

static void test_tensor_lists(void)
{
    float w[6], x[2], back[6];
    uint16_t h[3];
    int64_t sw[2] = { 2, 3 }, sx[1] = { 2 }, sh[1] = { 3 }, bad[2] = { 3, 2 };
    RtTensor ts[3];
    char err[ST_ERRLEN];
    int i, ok = 1;

    ts[0].name = "w"; ts[0].dtype = ST_F32; ts[0].rank = 2;
    ts[0].shape = sw; ts[0].data = w;
    ts[1].name = "x"; ts[1].dtype = ST_F32; ts[1].rank = 1;
    ts[1].shape = sx; ts[1].data = x;
    ts[2].name = "h"; ts[2].dtype = ST_F16; ts[2].rank = 1;
    ts[2].shape = sh; ts[2].data = h;
    CHECK(rt_nelem(&ts[0]) == 6 && rt_nbytes(&ts[0]) == 24 &&
          rt_nbytes(&ts[2]) == 6);

    /* no file: seeded values (the message goes to stderr) */
    CHECK(rt_load_or_fill("test_harness", "--weights", NULL, ts, 3, 5, err,
                          sizeof err) == ST_OK);
    for (i = 0; i < 6; i++)
        ok &= w[i] == rt_uniform(rt_stream(5, "w"), (uint64_t)i);
    CHECK(ok);
    CHECK(h[2] == st_f32_to_f16(rt_uniform(rt_stream(5, "h"), 2)));

    /* written, then read back into other buffers */
    CHECK(rt_write_tensors(TMP, ts, 3, err, sizeof err)
          == ST_OK);
    ts[0].data = back;
    memset(back, 0, sizeof back);
    CHECK(rt_load_or_fill("test_harness", "--weights", TMP,
                          ts, 1, 0, err, sizeof err) == ST_OK);
    CHECK(memcmp(back, w, sizeof w) == 0);
    ts[0].shape = bad;
    CHECK(rt_load_or_fill("test_harness", "--weights", TMP,
                          ts, 1, 0, err, sizeof err) == ST_EMISMATCH);
    check_str_at(__FILE__, __LINE__, err, TMP ": tensor 'w': shape [2, 3], "
              "expected [3, 2]");
    ts[0].shape = sw;
    ts[0].name = "v";
    CHECK(rt_load_or_fill("test_harness", "--weights", TMP,
                          ts, 1, 0, err, sizeof err) == ST_ENOTFOUND);
    check_str_at(__FILE__, __LINE__, err, TMP ": tensor 'v' not found");
    remove(TMP);
    CHECK(rt_load_or_fill("test_harness", "--inputs", TMP,
                          ts, 1, 0, err, sizeof err) == ST_EIO);
    check_str_at(__FILE__, __LINE__, err, TMP ": cannot open: No such file "
              "or directory");
}

int main(void)
{
    test_args();
    test_uniform();
    test_median();
    test_tensor_lists();
    return check_finish("test_harness");
}
