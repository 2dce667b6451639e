/* test_st.c - unit tests of the safetensors reader and writer and of the
 * JSON parser under them (runtime/st.c).  Each malformed file is checked
 * for its exact message; each good one for its exact contents. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "runtime/st.h"
#include "tests/check.h"

/* scratch file, in the build folder */
#define TMP "tests/runtime/test_st.tmp"

/* A file image: the header's length, the header, then dlen data bytes. */
static unsigned char *image(const char *header, size_t hlen, const void *data,
                            size_t dlen, size_t *size)
{
    unsigned char *p = (unsigned char *)malloc(8 + hlen + dlen + 1);
    int i;
    for (i = 0; i < 8; i++)
        p[i] = (unsigned char)((uint64_t)hlen >> (8 * i));
    memcpy(p + 8, header, hlen);
    if (dlen)
        memcpy(p + 8 + hlen, data, dlen);
    *size = 8 + hlen + dlen;
    return p;
}

static const unsigned char zeros[4096];

/* The header with dlen zero bytes of data must fail with code and msg
 * (the file is called "t"). */
static void bad_n(int line, const char *header, size_t hlen, size_t dlen,
                  int code, const char *msg)
{
    size_t size;
    unsigned char *img = image(header, hlen, zeros, dlen, &size);
    StFile *f = (StFile *)&f;
    char err[ST_ERRLEN] = "";
    int rc = st_open_memory("t", img, size, &f, err, sizeof err);
    checks++;
    if (rc != code || f != NULL) {
        fprintf(stderr, "%s:%d: status %d (want %d), file %p: %s\n",
                __FILE__, line, rc, code, (void *)f, err);
        failures++;
    }
    check_str_at(__FILE__, line, err, msg);
    free(img);
}

#define BAD(header, dlen, msg) \
    bad_n(__LINE__, header, strlen(header), dlen, ST_EFORMAT, msg)

static StFile *good_n(int line, const char *header, const void *data,
                      size_t dlen)
{
    size_t size;
    unsigned char *img = image(header, strlen(header), data, dlen, &size);
    StFile *f = NULL;
    char err[ST_ERRLEN] = "";
    int rc = st_open_memory("t", img, size, &f, err, sizeof err);
    checks++;
    if (rc != ST_OK || !f) {
        fprintf(stderr, "%s:%d: unexpected error %d: %s\n", __FILE__, line,
                rc, err);
        failures++;
    }
    free(img);
    return f;
}

#define GOOD(header, data, dlen) good_n(__LINE__, header, data, dlen)

/* ---- writing and reading back ------------------------------------------ */

static void test_round_trip(void)
{
    float a[6] = { 0.5f, -1.0f, 2.25f, 3e-8f, -0.0f, 1e30f };
    uint16_t h[4], b[1];
    int64_t sa[2] = { 2, 3 }, sh[1] = { 4 }, sz[2] = { 0, 5 };
    StOut ts[4];
    const char *meta[4] = { "format", "pt", "note", "q\"uote\n" };
    unsigned char *img;
    size_t size;
    char err[ST_ERRLEN];
    StFile *f;
    const StTensor *t;
    float back[6];
    int i, rc;
    const char *k, *v;

    h[0] = st_f32_to_f16(1.0f);
    h[1] = st_f32_to_f16(-2.5f);
    h[2] = st_f32_to_f16(65504.0f);
    h[3] = st_f32_to_f16(0.0f);
    b[0] = st_f32_to_bf16(3.140625f);
    ts[0].name = "zeta"; ts[0].dtype = ST_F32; ts[0].rank = 2;
    ts[0].shape = sa; ts[0].data = a;
    ts[1].name = "alpha"; ts[1].dtype = ST_F16; ts[1].rank = 1;
    ts[1].shape = sh; ts[1].data = h;
    ts[2].name = "scalar"; ts[2].dtype = ST_BF16; ts[2].rank = 0;
    ts[2].shape = NULL; ts[2].data = b;
    ts[3].name = "empty"; ts[3].dtype = ST_F32; ts[3].rank = 2;
    ts[3].shape = sz; ts[3].data = NULL;

    rc = st_write_memory(ts, 4, meta, 2, 0, &img, &size, err, sizeof err);
    CHECK(rc == ST_OK);
    /* the header as the format describes it, in the order given */
    {
        const char *want = "{\"__metadata__\":{\"format\":\"pt\",\"note\":"
            "\"q\\\"uote\\u000a\"},"
            "\"zeta\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
            "\"alpha\":{\"dtype\":\"F16\",\"shape\":[4],\"data_offsets\":[24,32]},"
            "\"scalar\":{\"dtype\":\"BF16\",\"shape\":[],\"data_offsets\":[32,34]},"
            "\"empty\":{\"dtype\":\"F32\",\"shape\":[0,5],\"data_offsets\":[34,34]}}";
        uint64_t hlen = 0;
        size_t wl = strlen(want);
        for (i = 7; i >= 0; i--)
            hlen = hlen << 8 | img[i];
        CHECK(hlen % 8 == 0 && hlen >= wl && hlen < wl + 8);
        CHECK(memcmp(img + 8, want, wl) == 0);
        for (i = (int)wl; i < (int)hlen; i++)
            CHECK(img[8 + i] == ' ');
        CHECK(size == 8 + hlen + 34);
    }
    rc = st_open_memory("rt", img, size, &f, err, sizeof err);
    CHECK(rc == ST_OK);
    free(img);
    if (rc != ST_OK)
        return;
    CHECK(st_count(f) == 4);
    CHECK(strcmp(st_tensor(f, 0)->name, "zeta") == 0);
    CHECK(strcmp(st_tensor(f, 3)->name, "empty") == 0);
    CHECK(st_tensor(f, 4) == NULL && st_tensor(f, -1) == NULL);
    CHECK(st_metadata_count(f) == 2);
    CHECK(strcmp(st_metadata(f, "note"), "q\"uote\n") == 0);
    CHECK(st_metadata(f, "nope") == NULL);
    st_metadata_at(f, 0, &k, &v);
    CHECK(strcmp(k, "format") == 0 && strcmp(v, "pt") == 0);

    rc = st_read(f, "zeta", ST_F32, 2, sa, back, sizeof back, err, sizeof err);
    CHECK(rc == ST_OK);
    CHECK(memcmp(back, a, sizeof a) == 0);
    t = st_find(f, "alpha");
    CHECK(t && t->dtype == ST_F16 && t->rank == 1 && t->shape[0] == 4 &&
          t->nelem == 4 && t->nbytes == 8 && t->begin == 24);
    if (t) {
        uint16_t hb[4];
        st_copy(t, hb);
        CHECK(st_f16_to_f32(hb[0]) == 1.0f && st_f16_to_f32(hb[1]) == -2.5f &&
              st_f16_to_f32(hb[2]) == 65504.0f && hb[3] == 0);
    }
    t = st_find(f, "scalar");
    CHECK(t && t->rank == 0 && t->nelem == 1 && t->nbytes == 2);
    if (t) {
        uint16_t bb;
        st_copy(t, &bb);
        CHECK(st_bf16_to_f32(bb) == 3.140625f);
    }
    t = st_find(f, "empty");
    CHECK(t && t->nelem == 0 && t->nbytes == 0 && t->shape[0] == 0 &&
          t->shape[1] == 5);
    CHECK(st_get(f, "empty", ST_F32, 2, sz, &t, err, sizeof err) == ST_OK);
    st_close(f);

    /* sorted: keys and data in name order */
    rc = st_write_memory(ts, 4, NULL, 0, ST_WRITE_SORTED, &img, &size, err,
                         sizeof err);
    CHECK(rc == ST_OK);
    CHECK(memcmp(img + 8, "{\"alpha\":{\"dtype\":\"F16\",\"shape\":[4],"
                 "\"data_offsets\":[0,8]},\"empty\":", 57) == 0);
    rc = st_open_memory("rt", img, size, &f, err, sizeof err);
    CHECK(rc == ST_OK);
    free(img);
    if (rc == ST_OK) {
        CHECK(strcmp(st_tensor(f, 0)->name, "alpha") == 0);
        CHECK(st_read(f, "zeta", ST_F32, 2, sa, back, sizeof back, err,
                      sizeof err) == ST_OK);
        CHECK(memcmp(back, a, sizeof a) == 0);
        CHECK(st_metadata_count(f) == 0);
        st_close(f);
    }

    /* through a real file */
    rc = st_write(TMP, ts, 4, meta, 2, 0, err, sizeof err);
    CHECK(rc == ST_OK);
    rc = st_open(TMP, &f, err, sizeof err);
    CHECK(rc == ST_OK);
    if (rc == ST_OK) {
        CHECK(strcmp(st_name(f), TMP) == 0);
        memset(back, 0, sizeof back);
        CHECK(st_read(f, "zeta", ST_F32, 2, sa, back, sizeof back, err,
                      sizeof err) == ST_OK);
        CHECK(memcmp(back, a, sizeof a) == 0);
        st_close(f);
    }
    remove(TMP);

    /* no tensors at all */
    rc = st_write_memory(NULL, 0, NULL, 0, 0, &img, &size, err, sizeof err);
    CHECK(rc == ST_OK && size == 16 && memcmp(img + 8, "{}      ", 8) == 0);
    free(img);
}

static void test_write_errors(void)
{
    float x = 1;
    int64_t s1[1] = { 1 }, sneg[1] = { -1 };
    StOut ts[2];
    char err[ST_ERRLEN];
    unsigned char *img = NULL;
    size_t size;
    const char *meta[4] = { "k", "v", "k", "w" };

    ts[0].name = "a"; ts[0].dtype = ST_F32; ts[0].rank = 1;
    ts[0].shape = s1; ts[0].data = &x;
    ts[1] = ts[0];
    CHECK(st_write_memory(ts, 2, NULL, 0, 0, &img, &size, err, sizeof err)
          == ST_EINVAL && img == NULL);
    check_str_at(__FILE__, __LINE__, err, "st_write_memory: duplicate tensor 'a'");
    CHECK(st_write("x.tmp", ts, 2, NULL, 0, 0, err, sizeof err) == ST_EINVAL);
    check_str_at(__FILE__, __LINE__, err, "x.tmp: duplicate tensor 'a'");
    ts[1].name = "__metadata__";
    CHECK(st_write_memory(ts, 2, NULL, 0, 0, &img, &size, err, sizeof err)
          == ST_EINVAL);
    check_str_at(__FILE__, __LINE__, err, "st_write_memory: tensor 1: name is reserved");
    ts[1].name = "b\xff";
    CHECK(st_write_memory(ts, 2, NULL, 0, 0, &img, &size, err, sizeof err)
          == ST_EINVAL);
    check_str_at(__FILE__, __LINE__, err,
              "st_write_memory: tensor 1: name is not valid UTF-8");
    ts[1].name = "b";
    ts[1].shape = sneg;
    CHECK(st_write_memory(ts, 2, NULL, 0, 0, &img, &size, err, sizeof err)
          == ST_EINVAL);
    check_str_at(__FILE__, __LINE__, err, "st_write_memory: tensor 'b': shape [-1] has a "
              "negative dimension");
    CHECK(st_write_memory(ts, 1, meta, 2, 0, &img, &size, err, sizeof err)
          == ST_EINVAL);
    check_str_at(__FILE__, __LINE__, err, "st_write_memory: duplicate metadata key 'k'");
    CHECK(st_write("/nonexistent/dir/x.st", ts, 1, NULL, 0, 0, err,
                   sizeof err) == ST_EIO);
    check_str_at(__FILE__, __LINE__, err, "/nonexistent/dir/x.st: cannot create: No such "
              "file or directory");
}

/* ---- broken files ------------------------------------------------------- */

static void test_truncated(void)
{
    float a[6] = { 1, 2, 3, 4, 5, 6 };
    uint16_t h[3] = { 1, 2, 3 };
    int64_t s[2] = { 2, 3 }, s3[1] = { 3 };
    StOut ts[2];
    unsigned char *img;
    size_t size, n;
    char err[ST_ERRLEN];
    StFile *f;
    int all_fail = 1;

    ts[0].name = "a"; ts[0].dtype = ST_F32; ts[0].rank = 2;
    ts[0].shape = s; ts[0].data = a;
    ts[1].name = "h"; ts[1].dtype = ST_F16; ts[1].rank = 1;
    ts[1].shape = s3; ts[1].data = h;
    CHECK(st_write_memory(ts, 2, NULL, 0, 0, &img, &size, err, sizeof err)
          == ST_OK);
    /* every proper prefix of a file is refused, with a message */
    for (n = 0; n < size; n++) {
        err[0] = 0;
        if (st_open_memory("t", img, n, &f, err, sizeof err) != ST_EFORMAT ||
            f != NULL || err[0] == 0)
            all_fail = 0;
    }
    CHECK(all_fail);
    st_open_memory("t", img, 5, &f, err, sizeof err);
    check_str_at(__FILE__, __LINE__, err, "t: file is 5 bytes, too short for a "
              "safetensors header (truncated?)");
    st_open_memory("t", img, 50, &f, err, sizeof err);
    check_str_at(__FILE__, __LINE__, err, "t: header length 112 exceeds the 42 bytes "
              "after the length field (truncated file?)");
    st_open_memory("t", img, size - 1, &f, err, sizeof err);
    check_str_at(__FILE__, __LINE__, err, "t: tensor 'h': data_offsets [24, 30] reach "
              "past the end of the data (29 bytes; truncated file?)");
    CHECK(st_open_memory("t", img, size, &f, err, sizeof err) == ST_OK);
    st_close(f);
    free(img);
    {
        unsigned char big[16] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                  0xff, '{', '}' };
        CHECK(st_open_memory("t", big, 16, &f, err, sizeof err) ==
              ST_EFORMAT);
        check_str_at(__FILE__, __LINE__, err, "t: header length 18446744073709551615 "
                  "is more than the 100000000 bytes safetensors allows (not "
                  "a safetensors file?)");
        big[0] = 0x01; big[1] = 0xe1; big[2] = 0xf5; big[3] = 0x05;
        big[4] = big[5] = big[6] = big[7] = 0;         /* 100000001 */
        st_open_memory("t", big, 16, &f, err, sizeof err);
        check_str_at(__FILE__, __LINE__, err, "t: header length 100000001 is more than "
                  "the 100000000 bytes safetensors allows (not a safetensors "
                  "file?)");
        big[0] = 0x00;                                 /* 100000000 */
        st_open_memory("t", big, 16, &f, err, sizeof err);
        check_str_at(__FILE__, __LINE__, err, "t: header length 100000000 exceeds the 8 "
                  "bytes after the length field (truncated file?)");
    }
}

static void test_json_syntax(void)
{
    BAD("", 0, "t: malformed header at byte 8: expected '{' to open the "
        "header object, found the end of the header");
    BAD("[]", 0, "t: malformed header at byte 8: expected '{' to open the "
        "header object, found '['");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}", 4,
        "t: malformed header at byte 61: expected ',' or '}' in the header "
        "object, found the end of the header");
    BAD("{\"a\" {", 0, "t: malformed header at byte 13: expected ':' after "
        "an object key, found '{'");
    BAD("{\"a\":{\"dtype\":\"F32\",}}", 0, "t: malformed header at byte 28: "
        "expected a string, found '}'");
    BAD("{a:1}", 0, "t: malformed header at byte 9: expected a string, "
        "found 'a'");
    BAD("{} x", 0, "t: malformed header at byte 11: unexpected text after "
        "the header object");
    bad_n(__LINE__, "{}\0   ", 6, 0, ST_EFORMAT, "t: malformed header at "
          "byte 10: unexpected text after the header object");
    BAD("{\"abc", 0, "t: malformed header at byte 9: unterminated string");
    BAD("{\"a\\x\":1}", 0, "t: malformed header at byte 12: invalid escape "
        "'\\x'");
    BAD("{\"a\tb\":1}", 0, "t: malformed header at byte 11: control "
        "character 0x09 in a string (it must be escaped)");
    BAD("{\"a\xff\":1}", 0, "t: malformed header at byte 11: invalid UTF-8 "
        "in a string");
    BAD("{\"\xc0\x80\":1}", 0, "t: malformed header at byte 10: invalid "
        "UTF-8 in a string");       /* overlong NUL */
    BAD("{\"\xed\xa0\x80\":1}", 0, "t: malformed header at byte 10: invalid "
        "UTF-8 in a string");       /* a surrogate in UTF-8 */
    BAD("{\"\xf4\x90\x80\x80\":1}", 0, "t: malformed header at byte 10: "
        "invalid UTF-8 in a string");   /* above U+10FFFF */
    BAD("{\"\xe2\x82\":1}", 0, "t: malformed header at byte 10: invalid "
        "UTF-8 in a string");       /* cut short */
    BAD("{\"\\ud800\":1}", 0, "t: malformed header at byte 10: unpaired "
        "surrogate \\uD800");
    BAD("{\"\\ud800\\u0041\":1}", 0, "t: malformed header at byte 10: "
        "unpaired surrogate \\uD800");
    BAD("{\"\\udc00\":1}", 0, "t: malformed header at byte 10: unpaired "
        "surrogate \\uDC00");
    BAD("{\"\\u12g4\":1}", 0, "t: malformed header at byte 14: expected 4 "
        "hex digits after \\u");
    BAD("{\"a\\u0000b\":1}", 0, "t: malformed header at byte 11: \\u0000 in "
        "a string is not supported");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[01],\"data_offsets\":[0,4]}}",
        4, "t: malformed header at byte 38: expected ',' or ']' in an "
        "array, found '1'");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1.],\"data_offsets\":[0,4]}}",
        4, "t: malformed header at byte 39: expected a digit after '.'");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1,],\"data_offsets\":[0,4]}}",
        4, "t: malformed header at byte 39: expected a value");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[-],\"data_offsets\":[0,4]}}",
        4, "t: malformed header at byte 38: expected a digit");
    BAD("{\"a\":{\"x\":tru}}", 0, "t: malformed header at byte 18: expected "
        "a value");
    BAD("{\"a\":{\"x\":[1 2]}}", 0, "t: malformed header at byte 21: "
        "expected ',' or ']' in an array, found '2'");
    BAD("{\"a\":{\"x\":{\"y\" 1}}}", 0, "t: malformed header at byte 23: "
        "expected ':' after an object key, found '1'");
    {
        /* unknown keys may hold any JSON, but only so deep */
        char h[400];
        int i;
        strcpy(h, "{\"a\":{\"x\":");
        for (i = 0; i < 64; i++)
            strcat(h, "[");
        for (i = 0; i < 64; i++)
            strcat(h, "]");
        strcat(h, ",\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]}}");
        StFile *f = GOOD(h, zeros, 4);
        st_close(f);
        strcpy(h, "{\"a\":{\"x\":");
        for (i = 0; i < 65; i++)
            strcat(h, "[");
        BAD(h, 0, "t: malformed header at byte 82: nested more than 64 "
            "deep");
    }
}

static void test_schema(void)
{
    StFile *f;
    const char *e4 = ",\"shape\":[1],\"data_offsets\":[0,4]}}";

    BAD("{\"a\":1}", 0, "t: tensor 'a': expected an object with dtype, "
        "shape and data_offsets");
    BAD("{\"a\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
        "t: tensor 'a': missing 'dtype'");
    BAD("{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", 4,
        "t: tensor 'a': missing 'shape'");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4,
        "t: tensor 'a': missing 'data_offsets'");
    BAD("{\"a\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[1],"
        "\"data_offsets\":[0,4]}}", 4, "t: tensor 'a': duplicate key "
        "'dtype'");
    BAD("{\"a\":{\"dtype\":\"F128\",\"shape\":[1],\"data_offsets\":[0,4]}}",
        4, "t: tensor 'a': unknown dtype 'F128'");
    BAD("{\"a\":{\"dtype\":32,\"shape\":[1],\"data_offsets\":[0,4]}}",
        4, "t: tensor 'a': dtype: expected a string");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,4]}}",
        4, "t: tensor 'a': shape: -2 is negative");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1e0],\"data_offsets\":[0,4]}}",
        4, "t: tensor 'a': shape: 1e0 is not an integer");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[\"1\"],\"data_offsets\":[0,4]}}",
        4, "t: tensor 'a': shape: expected an array of non-negative "
        "integers");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":1,\"data_offsets\":[0,4]}}",
        4, "t: tensor 'a': shape: expected an array of non-negative "
        "integers");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[9223372036854775808],"
        "\"data_offsets\":[0,4]}}", 4, "t: tensor 'a': shape: "
        "9223372036854775808 is too large");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],"
        "\"data_offsets\":[0,4]}}", 4, "t: tensor 'a': shape [4294967296, "
        "4294967296] is too large");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[4611686018427387904],"
        "\"data_offsets\":[0,4]}}", 4, "t: tensor 'a': shape "
        "[4611686018427387904] is too large");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,8]}}",
        8, "t: tensor 'a': data_offsets: expected [begin, end], found 3 "
        "numbers");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4]}}",
        8, "t: tensor 'a': data_offsets: expected [begin, end], found 1 "
        "number");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,"
        "18446744073709551616]}}", 8, "t: tensor 'a': data_offsets: "
        "18446744073709551616 is too large");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":{}}}",
        8, "t: tensor 'a': data_offsets: expected [begin, end]");
    /* headers that lie about sizes and offsets */
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,20]}}",
        24, "t: tensor 'a': shape [2, 3] of F32 is 24 bytes, but "
        "data_offsets [0, 20] hold 20");
    BAD("{\"a\":{\"dtype\":\"BF16\",\"shape\":[2,3],\"data_offsets\":[0,24]}}",
        24, "t: tensor 'a': shape [2, 3] of BF16 is 12 bytes, but "
        "data_offsets [0, 24] hold 24");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,4]}}",
        8, "t: tensor 'a': data_offsets [8, 4] end before they begin");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}",
        8, "t: tensor 'a': data_offsets [8, 12] reach past the end of the "
        "data (8 bytes; truncated file?)");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":"
        "[18446744073709551612,18446744073709551615]}}", 8,
        "t: tensor 'a': shape [1] of F32 is 4 bytes, but data_offsets "
        "[18446744073709551612, 18446744073709551615] hold 3");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":"
        "[18446744073709551611,18446744073709551615]}}", 8,
        "t: tensor 'a': data_offsets [18446744073709551611, "
        "18446744073709551615] reach past the end of the data (8 bytes; "
        "truncated file?)");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
        "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
        12, "t: tensors 'a' [0, 8] and 'b' [4, 12] overlap");
    BAD("{\"b\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,12]},"
        "\"c\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4,4]},"
        "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}",
        12, "t: tensors 'b' [0, 12] and 'a' [8, 12] overlap");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
        "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
        8, "t: duplicate tensor 'a'");
    /* the same name spelled two ways is still one name */
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
        "\"\\u0061\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
        8, "t: duplicate tensor 'a'");
    BAD("{\"__metadata__\":[]}", 0, "t: __metadata__: expected an object of "
        "strings");
    BAD("{\"__metadata__\":{\"k\":1}}", 0, "t: __metadata__: value of 'k' is "
        "not a string");
    BAD("{\"__metadata__\":{\"k\":\"1\",\"k\":\"2\"}}", 0, "t: "
        "__metadata__: duplicate key 'k'");
    BAD("{\"__metadata__\":{},\"__metadata__\":{}}", 0, "t: duplicate "
        "__metadata__");

    /* fine: empty header, holes, empty tensors anywhere, unknown keys,
     * white space, escapes that spell the dtype */
    f = GOOD("{}", NULL, 0);
    CHECK(f && st_count(f) == 0 && st_find(f, "a") == NULL);
    st_close(f);
    f = GOOD(" \t\r\n{ } \n ", NULL, 0);
    st_close(f);
    /* a scalar alone (once found by the fuzzer: no dims at all) */
    f = GOOD("{\"s\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]}}",
             zeros, 4);
    CHECK(f && st_find(f, "s") && st_find(f, "s")->rank == 0 &&
          st_find(f, "s")->nelem == 1);
    st_close(f);
    BAD("{\"s\":{\"dtype\":\"F64\",\"shape\":[],\"data_offsets\":[0,16]}}",
        16, "t: tensor 's': shape [] of F64 is 8 bytes, but data_offsets "
        "[0, 16] hold 16");
    f = GOOD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]},"
             "\"e\":{\"dtype\":\"F32\",\"shape\":[0,7],\"data_offsets\":[9,9]},"
             "\"z\":{\"extra\":{\"k\":[1,2.5e-3,true,false,null,\"s\"]},"
             "\"dtype\":\"F\\u0033\\u0032\"" "," "\"shape\":[],"
             "\"data_offsets\" : [ 0 , 4 ] } }", zeros, 16);
    CHECK(f && st_count(f) == 3);
    if (f) {
        const StTensor *t = st_find(f, "z");
        CHECK(t && t->dtype == ST_F32 && t->rank == 0 && t->nelem == 1);
        t = st_find(f, "a");
        CHECK(t && t->data == st_find(f, "z")->data + 8);
        st_close(f);
    }
    /* other dtypes are read (a state dict holds I64 counters), sized, and
     * refused when asked for as F32 */
    f = GOOD("{\"n\":{\"dtype\":\"I64\",\"shape\":[2],\"data_offsets\":[0,16]},"
             "\"m\":{\"dtype\":\"BOOL\",\"shape\":[3],\"data_offsets\":[16,19]}"
             "}", zeros, 19);
    if (f) {
        char err[ST_ERRLEN];
        int64_t s2[1] = { 2 };
        CHECK(st_get(f, "n", ST_F32, 1, s2, NULL, err, sizeof err)
              == ST_EMISMATCH);
        check_str_at(__FILE__, __LINE__, err, "t: tensor 'n': dtype I64, expected F32");
        st_close(f);
    }
    (void)e4;
}

static void test_lookup(void)
{
    const char *hdr = "{\"w1\":{\"dtype\":\"F32\",\"shape\":[64,3,3,3],"
                      "\"data_offsets\":[0,6912]}}";
    size_t size;
    unsigned char *img = image(hdr, strlen(hdr), zeros, 4096, &size);
    unsigned char *big = (unsigned char *)calloc(1, size + 2816);
    int64_t want[4] = { 64, 64, 3, 3 }, have[4] = { 64, 3, 3, 3 };
    const StTensor *t = (const StTensor *)&t;
    char err[ST_ERRLEN];
    StFile *f;
    float *buf = (float *)malloc(6912);

    memcpy(big, img, size);
    CHECK(st_open_memory("weights.safetensors", big, size + 2816, &f, err,
                         sizeof err) == ST_OK);
    CHECK(st_get(f, "w1", ST_F32, 4, want, &t, err, sizeof err)
          == ST_EMISMATCH && t == NULL);
    check_str_at(__FILE__, __LINE__, err, "weights.safetensors: tensor 'w1': shape "
              "[64, 3, 3, 3], expected [64, 64, 3, 3]");
    CHECK(st_get(f, "w1", ST_F32, 2, want, &t, err, sizeof err)
          == ST_EMISMATCH);
    check_str_at(__FILE__, __LINE__, err, "weights.safetensors: tensor 'w1': shape "
              "[64, 3, 3, 3], expected [64, 64]");
    CHECK(st_get(f, "w1", ST_F16, 4, have, &t, err, sizeof err)
          == ST_EMISMATCH);
    check_str_at(__FILE__, __LINE__, err, "weights.safetensors: tensor 'w1': dtype F32, "
              "expected F16");
    {
        /* long shapes are cut in messages */
        int64_t longs[40];
        int i;
        for (i = 0; i < 40; i++)
            longs[i] = 1000000 + i;
        CHECK(st_get(f, "w1", ST_F32, 40, longs, &t, err, sizeof err)
              == ST_EMISMATCH);
        check_str_at(__FILE__, __LINE__, err, "weights.safetensors: tensor 'w1': shape "
                  "[64, 3, 3, 3], expected [1000000, 1000001, 1000002, "
                  "1000003, 1000004, 1000005, 1000006, 1000007, 1000008, "
                  "1000009, 1000010, 1000011, 1000012, ...]");
    }
    CHECK(st_get(f, "w2", ST_F32, 4, have, &t, err, sizeof err)
          == ST_ENOTFOUND);
    check_str_at(__FILE__, __LINE__, err, "weights.safetensors: tensor 'w2' not found");
    CHECK(st_get(f, "w1", ST_F32, 4, have, &t, err, sizeof err) == ST_OK &&
          t == st_find(f, "w1"));
    CHECK(st_read(f, "w1", ST_F32, 4, have, buf, 6900, err, sizeof err)
          == ST_EINVAL);
    check_str_at(__FILE__, __LINE__, err, "weights.safetensors: tensor 'w1': 6912 bytes, "
              "but the buffer holds 6900");
    CHECK(st_read(f, "w1", ST_F32, 4, have, buf, 6912, err, sizeof err)
          == ST_OK);
    st_close(f);
    free(buf);
    free(big);
    free(img);

    CHECK(st_open("/nonexistent.safetensors", &f, err, sizeof err) == ST_EIO
          && f == NULL);
    check_str_at(__FILE__, __LINE__, err, "/nonexistent.safetensors: cannot open: No such "
              "file or directory");
    CHECK(st_open(".", &f, err, sizeof err) == ST_EIO && f == NULL);
    check_str_at(__FILE__, __LINE__, err, ".: cannot read: it is a directory, not a "
                 "regular file");
    /* messages survive tiny buffers, and no buffer at all */
    CHECK(st_open(".", &f, err, 4) == ST_EIO);
    check_str_at(__FILE__, __LINE__, err, ".: ");
    CHECK(st_open(".", &f, NULL, 0) == ST_EIO);
}

static void test_names(void)
{
    StFile *f;
    char err[ST_ERRLEN];
    int64_t s1[1] = { 1 };
    /* escapes and UTF-8 decode; the message quotes a name safely */
    f = GOOD("{\"a\\nb\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":"
             "[0,4]},\"w\xc3\xa9\\u00e9\\ud83d\\ude00\\\"'\\\\\":{\"dtype\":"
             "\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", zeros, 8);
    CHECK(f && st_find(f, "a\nb") != NULL);
    CHECK(f && st_find(f, "w\xc3\xa9\xc3\xa9\xf0\x9f\x98\x80\"'\\") != NULL);
    if (f) {
        CHECK(st_get(f, "a\nb", ST_F16, 1, s1, NULL, err, sizeof err)
              == ST_EMISMATCH);
        check_str_at(__FILE__, __LINE__, err, "t: tensor 'a\\x0ab': dtype F32, expected "
                  "F16");
        CHECK(st_get(f, "w\xc3\xa9\xc3\xa9\xf0\x9f\x98\x80\"'\\", ST_F16, 1,
                     s1, NULL, err, sizeof err) == ST_EMISMATCH);
        check_str_at(__FILE__, __LINE__, err, "t: tensor 'w\xc3\xa9\xc3\xa9\xf0\x9f\x98\x80"
                  "\"\\'\\\\': dtype F32, expected F16");
        st_close(f);
    }
    /* a very long name is cut in messages */
    {
        char h[1200], name[1001], want[200];
        memset(name, 'x', 1000);
        name[1000] = 0;
        snprintf(h, sizeof h, "{\"%s\":1}", name);
        snprintf(want, sizeof want, "t: tensor '%.120s...': expected an "
                 "object with dtype, shape and data_offsets", name);
        BAD(h, 0, want);
    }
    /* even one that is not UTF-8 at all, asked for by the caller */
    f = GOOD("{}", NULL, 0);
    if (f) {
        char name[300], want[200];
        memset(name, 0x80, 299);
        name[299] = 0;
        CHECK(st_get(f, name, ST_F32, 0, NULL, NULL, err, sizeof err)
              == ST_ENOTFOUND);
        snprintf(want, sizeof want, "t: tensor '%.123s...' not found", name);
        check_str_at(__FILE__, __LINE__, err, want);
        st_close(f);
    }
}

/* ---- the JSON parser on its own ----------------------------------------- */

static void json_ok(int line, const char *text)
{
    char err[ST_ERRLEN] = "";
    checks++;
    if (st_json_check(text, strlen(text), err, sizeof err) != ST_OK) {
        fprintf(stderr, "%s:%d: rejected %s: %s\n", __FILE__, line, text,
                err);
        failures++;
    }
}

static void json_bad(int line, const char *text, const char *msg)
{
    char err[ST_ERRLEN] = "";
    checks++;
    if (st_json_check(text, strlen(text), err, sizeof err) != ST_EFORMAT) {
        fprintf(stderr, "%s:%d: accepted %s\n", __FILE__, line, text);
        failures++;
    }
    check_str_at(__FILE__, line, err, msg);
}

static void test_json(void)
{
    char deep[200];
    int i;
    json_ok(__LINE__, "0");
    json_ok(__LINE__, "-0.5e+10");
    json_ok(__LINE__, "1E-2");
    json_ok(__LINE__, " \"s\\\"\\\\\\/\\b\\f\\n\\r\\t\\u20AC\\uD834\\uDD1E\" ");
    json_ok(__LINE__, "[1, 2.5e-3, true, false, null, {\"a\": []}]");
    json_ok(__LINE__, "{\"a\":{\"b\":{\"c\":[[],{}]}}}");
    json_ok(__LINE__, "\"\xe2\x82\xac\xf0\x9d\x84\x9e\xf4\x8f\xbf\xbf\"");
    json_bad(__LINE__, "", "json: malformed header at byte 0: expected a "
             "value, found the end of the header");
    json_bad(__LINE__, "[1,]", "json: malformed header at byte 3: expected "
             "a value");
    json_bad(__LINE__, "{\"a\":1,}", "json: malformed header at byte 7: "
             "expected a string, found '}'");
    json_bad(__LINE__, "{1:2}", "json: malformed header at byte 1: expected "
             "a string, found '1'");
    json_bad(__LINE__, "-", "json: malformed header at byte 1: expected a "
             "digit");
    json_bad(__LINE__, "1e", "json: malformed header at byte 2: expected a "
             "digit in the exponent");
    json_bad(__LINE__, "+1", "json: malformed header at byte 0: expected a "
             "value");
    json_bad(__LINE__, ".5", "json: malformed header at byte 0: expected a "
             "value");
    json_bad(__LINE__, "\"\\u12\"", "json: malformed header at byte 5: "
             "expected 4 hex digits after \\u");
    json_bad(__LINE__, "nul", "json: malformed header at byte 0: expected "
             "a value");
    json_bad(__LINE__, "[", "json: malformed header at byte 1: expected a "
             "value, found the end of the header");
    json_bad(__LINE__, "[1", "json: malformed header at byte 2: expected "
             "',' or ']' in an array, found the end of the header");
    json_bad(__LINE__, "1 2", "json: malformed header at byte 2: unexpected "
             "text after the value");
    json_bad(__LINE__, "\"\x7f\x80\"", "json: malformed header at byte 2: "
             "invalid UTF-8 in a string");
    json_bad(__LINE__, "\"\\'\"", "json: malformed header at byte 2: "
             "invalid escape '\\''");
    /* nesting: 65 levels are fine (the value itself is depth 0) */
    for (i = 0; i < 65; i++)
        deep[i] = '[';
    for (i = 0; i < 65; i++)
        deep[65 + i] = ']';
    deep[130] = 0;
    json_ok(__LINE__, deep);
    for (i = 0; i < 66; i++)
        deep[i] = '[';
    for (i = 0; i < 66; i++)
        deep[66 + i] = ']';
    deep[132] = 0;
    json_bad(__LINE__, deep, "json: malformed header at byte 65: nested "
             "more than 64 deep");
    /* not NUL-terminated: the parser must stop at len */
    {
        char buf[4] = { '[', '1', ']', '@' };
        char err[ST_ERRLEN];
        CHECK(st_json_check(buf, 3, err, sizeof err) == ST_OK);
        CHECK(st_json_check(buf, 2, err, sizeof err) == ST_EFORMAT);
    }
}

/* ---- half and bfloat16 -------------------------------------------------- */

static uint32_t bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static void test_half(void)
{
    unsigned h;
    int ok = 1;
    /* every half survives a round trip through float */
    for (h = 0; h < 0x10000; h++) {
        float f = st_f16_to_f32((uint16_t)h);
        if (((h >> 10) & 0x1F) == 0x1F && (h & 0x3FF))
            ok &= isnan(f) && st_f32_to_f16(f) == (h | 0x200);
        else
            ok &= st_f32_to_f16(f) == h;
    }
    CHECK(ok);
    CHECK(st_f16_to_f32(0x3C00) == 1.0f);
    CHECK(st_f16_to_f32(0x0001) == ldexpf(1, -24));
    CHECK(st_f16_to_f32(0x03FF) == ldexpf(1023, -24));
    CHECK(st_f16_to_f32(0x7BFF) == 65504.0f);
    CHECK(st_f16_to_f32(0xFC00) == -INFINITY);
    /* rounding: ties to even, overflow, underflow */
    CHECK(st_f32_to_f16(1.0f + ldexpf(1, -11)) == 0x3C00);      /* tie, even */
    CHECK(st_f32_to_f16(1.0f + 3 * ldexpf(1, -11)) == 0x3C02);  /* tie, up */
    CHECK(st_f32_to_f16(nextafterf(1.0f + ldexpf(1, -11), 2)) == 0x3C01);
    CHECK(st_f32_to_f16(65519.0f) == 0x7BFF);
    CHECK(st_f32_to_f16(65520.0f) == 0x7C00);
    CHECK(st_f32_to_f16(-1e10f) == 0xFC00);
    CHECK(st_f32_to_f16(ldexpf(1, -25)) == 0x0000);             /* tie to 0 */
    CHECK(st_f32_to_f16(nextafterf(ldexpf(1, -25), 1)) == 0x0001);
    CHECK(st_f32_to_f16(ldexpf(3, -25)) == 0x0002);             /* tie, even */
    CHECK(st_f32_to_f16(ldexpf(2047, -25)) == 0x0400);   /* rounds to normal */
    CHECK(st_f32_to_f16(-0.0f) == 0x8000);
    CHECK(st_f32_to_f16(from_bits(0x7FC00000)) == 0x7E00);
    CHECK(st_f32_to_f16(from_bits(0x7F800001)) == 0x7E00);  /* stays NaN */
#if defined(__FLT16_MAX__) && !defined(__cplusplus)
    /* against the compiler's own conversion where it has _Float16 */
    {
        uint32_t x = 0x12345678u, i;
        ok = 1;
        for (i = 0; i < 4000000; i++) {
            float f;
            _Float16 g;
            uint16_t gb;
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            /* half of them near the half range, where it matters */
            f = from_bits(i & 1 ? x : (x & 0x8FFFFFFFu) | 0x30000000u);
            if (isnan(f))
                continue;
            g = (_Float16)f;
            memcpy(&gb, &g, 2);
            if (gb != st_f32_to_f16(f)) {
                if (ok)
                    fprintf(stderr, "f16(%a): 0x%04x, want 0x%04x\n", f,
                            st_f32_to_f16(f), gb);
                ok = 0;
            }
        }
        CHECK(ok);
    }
#endif
    /* bfloat16 */
    CHECK(st_f32_to_bf16(1.0f) == 0x3F80);
    CHECK(st_f32_to_bf16(from_bits(0x3F808000)) == 0x3F80);     /* tie, even */
    CHECK(st_f32_to_bf16(from_bits(0x3F818000)) == 0x3F82);     /* tie, up */
    CHECK(st_f32_to_bf16(from_bits(0x3F808001)) == 0x3F81);
    CHECK(st_f32_to_bf16(from_bits(0x7F7FFFFF)) == 0x7F80);     /* to inf */
    CHECK(st_f32_to_bf16(from_bits(0xFF800000)) == 0xFF80);
    CHECK(st_f32_to_bf16(from_bits(0x7F800001)) == 0x7FC0);     /* stays NaN */
    CHECK(bits(st_bf16_to_f32(0xC040)) == 0xC0400000);
}

static void test_dtypes(void)
{
    StDtype d;
    int i;
    for (i = 0; i < ST_NDTYPES; i++) {
        CHECK(st_dtype_parse(st_dtype_name((StDtype)i), &d) == 0 && (int)d == i);
        CHECK(st_dtype_size((StDtype)i) >= 1);
    }
    CHECK(st_dtype_parse("f32", &d) == -1);
    CHECK(st_dtype_size(ST_F32) == 4 && st_dtype_size(ST_BF16) == 2 &&
          st_dtype_size(ST_I64) == 8 && st_dtype_size(ST_BOOL) == 1);
    CHECK(strcmp(st_dtype_name(ST_NDTYPES), "?") == 0);
}

/* ---- files that are not regular files ----------------------------------
 * A FIFO no one writes to would block fopen forever, a device is no file
 * of tensors: both are refused at once (einc issue 16).  A FIFO that a
 * process writes is read (tests/fuzz/fuzz_st_file.c). */
static void test_not_regular(void)
{
    char err[ST_ERRLEN];
    StFile *f = NULL;
    const char *fifo = "tests/runtime/test_st.fifo";
    float x = 1;
    int64_t s1[1] = { 1 };
    StOut t;

    t.name = "a"; t.dtype = ST_F32; t.rank = 1; t.shape = s1; t.data = &x;
    CHECK(st_open("/dev/zero", &f, err, sizeof err) == ST_EIO && f == NULL);
    check_str_at(__FILE__, __LINE__, err, "/dev/zero: cannot read: it is a character device, "
              "not a regular file");
    unlink(fifo);
    if (mkfifo(fifo, 0600) != 0) {
        perror(fifo);
        failures++;
        return;
    }
    CHECK(st_open(fifo, &f, err, sizeof err) == ST_EIO && f == NULL);
    check_str_at(__FILE__, __LINE__, err, "tests/runtime/test_st.fifo: cannot read: it is a "
              "FIFO that no process writes");
    CHECK(st_write(fifo, &t, 1, NULL, 0, 0, err, sizeof err) == ST_EIO);
    check_str_at(__FILE__, __LINE__, err, "tests/runtime/test_st.fifo: cannot write: it is a "
              "FIFO that no process reads");
    unlink(fifo);
    /* a device that takes writes is fine */
    CHECK(st_write("/dev/null", &t, 1, NULL, 0, 0, err, sizeof err) == ST_OK);
}

int main(void)
{
    test_not_regular();
    test_round_trip();
    test_write_errors();
    test_truncated();
    test_json_syntax();
    test_schema();
    test_lookup();
    test_names();
    test_json();
    test_half();
    test_dtypes();
    return check_finish("test_st");
}
