/* stgen.c - write seeded uniform tensors to a safetensors file, the same
 * bytes on every machine, so that the GPU check regenerates the inputs and
 * weights that tests/gpu/prepare.sh gave the C target instead of carrying
 * them (full-size weights are far too big to carry).
 *
 *   stgen SPEC KIND SEED OUT.safetensors
 *
 * SPEC has one line per tensor:  KIND NAME DTYPE LO HI D1 D2 ...
 * (KIND input or weight, DTYPE F32, F16, BF16, I8, I16, I32, I64, U8 or
 * BOOL; rank 0 has no D).  Only
 * the lines of the given KIND are written.  Element i of tensor NAME is
 * LO + (HI - LO) * u, u in [0, 1) from splitmix64 over (SEED, FNV-1a of
 * NAME, i), computed in double and rounded once to the element type.
 * Prints a 64-bit FNV-1a checksum of the file's bytes on stdout.
 * Build with -ffp-contract=off so no machine fuses the multiply-add. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXT 4096
#define MAXR 64                 /* dims of a tensor */

typedef struct {
    char name[256];
    char dtype[8];
    double lo, hi;
    int rank;
    uint64_t dims[MAXR];
    uint64_t count;
    uint64_t off, end;
} Spec;

static Spec specs[MAXT];
static int nspecs;

static uint64_t mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t fnv1a(const void *p, size_t n, uint64_t h)
{
    const unsigned char *s = p;
    while (n--) {
        h ^= *s++;
        h *= 0x100000001b3ull;
    }
    return h;
}

static uint16_t f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    int32_t e = (int32_t)((x >> 23) & 0xff) - 127 + 15;
    uint32_t m = x & 0x7fffffu;
    if (((x >> 23) & 0xff) == 0xff)
        return (uint16_t)(sign | 0x7c00u | (m ? 0x200u : 0));
    if (e >= 31)
        return (uint16_t)(sign | 0x7c00u);
    if (e <= 0) {
        if (e < -10)
            return (uint16_t)sign;
        m |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - e);
        uint32_t half = m >> shift, rem = m & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1)))
            half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = sign | ((uint32_t)e << 10) | (m >> 13);
    uint32_t rem = m & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1)))
        half++;
    return (uint16_t)half;
}

static uint16_t f32_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40);
    x += 0x7fffu + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

static size_t elem_size(const char *dt)
{
    static const struct { const char *n; size_t size; } t[] = {
        {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"I8", 1}, {"I16", 2}, {"I32", 4},
        {"I64", 8}, {"U8", 1}, {"BOOL", 1},
    };
    for (size_t i = 0; i < sizeof t / sizeof *t; i++)
        if (strcmp(dt, t[i].n) == 0)
            return t[i].size;
    return 0;
}

static int is_int(const char *dt)
{
    return dt[0] == 'I' || dt[0] == 'U' || (dt[0] == 'B' && dt[1] == 'O');
}

static void die(const char *msg, const char *arg)
{
    fprintf(stderr, "stgen: %s%s\n", msg, arg ? arg : "");
    exit(1);
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: stgen SPEC KIND SEED OUT.safetensors\n");
        return 2;
    }
    const char *kind = argv[2];
    uint64_t seed = strtoull(argv[3], NULL, 10);
    FILE *in = fopen(argv[1], "r");
    if (!in)
        die("cannot open ", argv[1]);
    char line[4096];
    uint64_t off = 0;
    while (fgets(line, sizeof line, in)) {
        char k[32];
        Spec *s = &specs[nspecs];
        int pos = 0;
        if (line[0] == '#' || line[0] == '\n')
            continue;
        if (sscanf(line, "%31s %255s %7s %lf %lf%n", k, s->name, s->dtype, &s->lo, &s->hi, &pos) != 5)
            die("bad spec line: ", line);
        if (strcmp(k, kind) != 0)
            continue;
        if (elem_size(s->dtype) == 0)
            die("unknown dtype in: ", line);
        s->rank = 0;
        s->count = 1;
        char *p = line + pos;
        for (;;) {
            char *e;
            while (*p == ' ' || *p == '\t')
                p++;
            if (*p == '\n' || *p == 0)
                break;
            if (s->rank == MAXR)
                die("too many dims in: ", line);
            s->dims[s->rank] = strtoull(p, &e, 10);
            if (e == p)
                die("bad dim in: ", line);
            s->count *= s->dims[s->rank++];
            p = e;
        }
        s->off = off;
        s->end = off + s->count * elem_size(s->dtype);
        off = s->end;
        if (++nspecs == MAXT)
            die("too many tensors", NULL);
    }
    fclose(in);

    /* the header: names as given (no characters that need escaping) */
    size_t cap = 1024 + (size_t)nspecs * 512, len = 0;
    char *h = malloc(cap);
    if (!h)
        die("out of memory", NULL);
    len += (size_t)snprintf(h + len, cap - len, "{");
    for (int i = 0; i < nspecs; i++) {
        Spec *s = &specs[i];
        len += (size_t)snprintf(h + len, cap - len, "%s\"%s\":{\"dtype\":\"%s\",\"shape\":[",
                                i ? "," : "", s->name, s->dtype);
        for (int d = 0; d < s->rank; d++)
            len += (size_t)snprintf(h + len, cap - len, "%s%" PRIu64, d ? "," : "", s->dims[d]);
        len += (size_t)snprintf(h + len, cap - len, "],\"data_offsets\":[%" PRIu64 ",%" PRIu64 "]}",
                                s->off, s->end);
    }
    len += (size_t)snprintf(h + len, cap - len, "}");
    while (len % 8)
        h[len++] = ' ';

    FILE *out = fopen(argv[4], "wb");
    if (!out)
        die("cannot write ", argv[4]);
    unsigned char n8[8];
    for (int i = 0; i < 8; i++)
        n8[i] = (unsigned char)((uint64_t)len >> (8 * i));
    uint64_t sum = fnv1a(n8, 8, 0xcbf29ce484222325ull);
    sum = fnv1a(h, len, sum);
    fwrite(n8, 1, 8, out);
    fwrite(h, 1, len, out);

    enum { CHUNK = 1 << 16 };
    static unsigned char buf[CHUNK * 4];
    for (int t = 0; t < nspecs; t++) {
        Spec *s = &specs[t];
        uint64_t stream = mix64(seed ^ mix64(fnv1a(s->name, strlen(s->name), 0xcbf29ce484222325ull)));
        size_t es = elem_size(s->dtype);
        for (uint64_t i0 = 0; i0 < s->count; i0 += CHUNK) {
            uint64_t n = s->count - i0 < CHUNK ? s->count - i0 : CHUNK;
            for (uint64_t j = 0; j < n; j++) {
                uint64_t r = mix64(stream + (i0 + j) * 0x9e3779b97f4a7c15ull);
                double u = (double)(r >> 11) * (1.0 / 9007199254740992.0);
                double dv = s->lo + (s->hi - s->lo) * u;
                float v = (float)dv;
                unsigned char *q = buf + j * es;
                if (is_int(s->dtype)) {
                    /* integers: floor of the value, little-endian two's
                     * complement; BOOL: 1 when the value is >= 0.5 */
                    int64_t iv = (int64_t)dv;
                    iv -= (double)iv > dv;              /* floor, without libm */
                    if (strcmp(s->dtype, "BOOL") == 0)
                        iv = dv >= 0.5;
                    for (size_t b = 0; b < es; b++)
                        q[b] = (unsigned char)((uint64_t)iv >> (8 * b));
                } else if (es == 4) {
                    uint32_t b;
                    memcpy(&b, &v, 4);
                    q[0] = (unsigned char)b; q[1] = (unsigned char)(b >> 8);
                    q[2] = (unsigned char)(b >> 16); q[3] = (unsigned char)(b >> 24);
                } else {
                    uint16_t b = strcmp(s->dtype, "F16") == 0 ? f32_to_f16(v) : f32_to_bf16(v);
                    q[0] = (unsigned char)b; q[1] = (unsigned char)(b >> 8);
                }
            }
            sum = fnv1a(buf, n * es, sum);
            if (fwrite(buf, 1, n * es, out) != n * es)
                die("write error on ", argv[4]);
        }
    }
    if (fclose(out) != 0)
        die("write error on ", argv[4]);
    free(h);
    printf("%016" PRIx64 "\n", sum);
    return 0;
}
