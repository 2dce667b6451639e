/* stcmp.c - compare a program's safetensors outputs with reference outputs.
 *
 *   stcmp REF.safetensors OUT.safetensors TOL
 *
 * For each tensor T of REF: OUT must hold T.  When REF's metadata has
 * "T:stride" (prepare.sh keeps every k-th element of a big output, flat
 * order), REF's T holds the samples, "T:shape" the full shape and
 * "T:maxabs" the largest |value| of the whole reference; else shapes must
 * be equal and every element is compared.  The error of T is
 *     max |out - ref| / max(maxabs, 1e-30)
 * (a NaN or an infinity counts as infinite).  Prints "T ERR" per tensor and
 * "max ERR" last; exit 0 when every error is below TOL, 1 when one is not,
 * 2 when a file cannot be read or a tensor is missing or misshapen.
 * F32, F16 and BF16 data. */
#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXT 1024
#define MAXR 64                 /* dims of a tensor */

typedef struct {
    char name[256];
    char dtype[8];
    int rank;
    uint64_t dims[MAXR];
    uint64_t off, end;
} Tensor;

typedef struct {
    char key[300];
    char val[300];
} Meta;

typedef struct {
    const char *path;
    unsigned char *data;            /* after the header */
    size_t ndata;
    Tensor t[MAXT];
    int nt;
    Meta m[MAXT];
    int nm;
} File;

static const char *jp;              /* JSON cursor */
static const char *jend;

static void fail(const char *path, const char *msg)
{
    fprintf(stderr, "stcmp: %s: %s\n", path, msg);
    exit(2);
}

static void ws(void)
{
    while (jp < jend && isspace((unsigned char)*jp))
        jp++;
}

static int eat(char c)
{
    ws();
    if (jp < jend && *jp == c) {
        jp++;
        return 1;
    }
    return 0;
}

/* a JSON string into buf (escapes other than \" \\ \/ kept as is) */
static int str(char *buf, size_t cap)
{
    size_t n = 0;
    if (!eat('"'))
        return 0;
    while (jp < jend && *jp != '"') {
        char c = *jp++;
        if (c == '\\' && jp < jend)
            c = *jp++;
        if (n + 1 < cap)
            buf[n++] = c;
    }
    buf[n] = 0;
    return eat('"');
}

static int num(uint64_t *v)
{
    char *e;
    ws();
    *v = strtoull(jp, &e, 10);
    if (e == jp)
        return 0;
    jp = e;
    return 1;
}

static int uint_array(uint64_t *out, int cap, int *n)
{
    *n = 0;
    if (!eat('['))
        return 0;
    if (eat(']'))
        return 1;
    do {
        uint64_t v;
        if (!num(&v) || *n == cap)
            return 0;
        out[(*n)++] = v;
    } while (eat(','));
    return eat(']');
}

static void read_file(File *f, const char *path)
{
    FILE *fp = fopen(path, "rb");
    unsigned char n8[8];
    uint64_t hl = 0;
    long size;
    f->path = path;
    if (!fp)
        fail(path, "cannot open");
    fseek(fp, 0, SEEK_END);
    size = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    if (size < 8 || fread(n8, 1, 8, fp) != 8)
        fail(path, "too short for a safetensors file");
    for (int i = 7; i >= 0; i--)
        hl = hl << 8 | n8[i];
    if (hl > (uint64_t)size - 8)
        fail(path, "header length past the end of the file");
    char *h = malloc(hl + 1);
    f->ndata = (size_t)((uint64_t)size - 8 - hl);
    f->data = malloc(f->ndata + 1);
    if (!h || !f->data)
        fail(path, "out of memory");
    if (fread(h, 1, hl, fp) != hl || fread(f->data, 1, f->ndata, fp) != f->ndata)
        fail(path, "read error");
    fclose(fp);
    jp = h;
    jend = h + hl;
    if (!eat('{'))
        fail(path, "header is no JSON object");
    if (eat('}'))
        return;
    do {
        char key[256];
        if (!str(key, sizeof key))
            fail(path, "bad header key");
        if (!eat(':') || !eat('{'))
            fail(path, "bad header entry");
        if (strcmp(key, "__metadata__") == 0) {
            if (!eat('}')) {
                do {
                    Meta *m = &f->m[f->nm];
                    if (f->nm == MAXT || !str(m->key, sizeof m->key) || !eat(':') ||
                        !str(m->val, sizeof m->val))
                        fail(path, "bad metadata");
                    f->nm++;
                } while (eat(','));
                if (!eat('}'))
                    fail(path, "bad metadata");
            }
            continue;
        }
        if (f->nt == MAXT)
            fail(path, "too many tensors");
        Tensor *t = &f->t[f->nt++];
        snprintf(t->name, sizeof t->name, "%s", key);
        int have = 0;
        do {
            char field[64];
            if (!str(field, sizeof field) || !eat(':'))
                fail(path, "bad tensor entry");
            if (strcmp(field, "dtype") == 0) {
                if (!str(t->dtype, sizeof t->dtype))
                    fail(path, "bad dtype");
                have |= 1;
            } else if (strcmp(field, "shape") == 0) {
                if (!uint_array(t->dims, MAXR, &t->rank))
                    fail(path, "bad shape");
                have |= 2;
            } else if (strcmp(field, "data_offsets") == 0) {
                uint64_t o[2];
                int n;
                if (!uint_array(o, 2, &n) || n != 2)
                    fail(path, "bad data_offsets");
                t->off = o[0];
                t->end = o[1];
                have |= 4;
            } else {
                fail(path, "unknown field in a tensor entry");
            }
        } while (eat(','));
        if (!eat('}') || have != 7)
            fail(path, "incomplete tensor entry");
        uint64_t count = 1;
        for (int d = 0; d < t->rank; d++)
            count *= t->dims[d];
        size_t es = strcmp(t->dtype, "F32") == 0 ? 4 :
                    strcmp(t->dtype, "F16") == 0 || strcmp(t->dtype, "BF16") == 0 ? 2 : 0;
        if (!es)
            fail(path, "unsupported dtype (F32, F16, BF16)");
        if (t->off > t->end || t->end > f->ndata || t->end - t->off != count * es)
            fail(path, "data_offsets do not match the shape");
    } while (eat(','));
    if (!eat('}'))
        fail(path, "bad header end");
    free(h);
}

static const Tensor *find(const File *f, const char *name)
{
    for (int i = 0; i < f->nt; i++)
        if (strcmp(f->t[i].name, name) == 0)
            return &f->t[i];
    return NULL;
}

static const char *meta(const File *f, const char *name, const char *what)
{
    char key[300];
    snprintf(key, sizeof key, "%s:%s", name, what);
    for (int i = 0; i < f->nm; i++)
        if (strcmp(f->m[i].key, key) == 0)
            return f->m[i].val;
    return NULL;
}

static double f16_to_double(uint16_t h)
{
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m | 0x400, e - 25);
    return h & 0x8000 ? -v : v;
}

static double get(const File *f, const Tensor *t, uint64_t i)
{
    const unsigned char *p = f->data + t->off;
    if (strcmp(t->dtype, "F32") == 0) {
        uint32_t b = (uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 |
                     (uint32_t)p[4 * i + 2] << 16 | (uint32_t)p[4 * i + 3] << 24;
        float v;
        memcpy(&v, &b, 4);
        return v;
    }
    uint16_t h = (uint16_t)(p[2 * i] | p[2 * i + 1] << 8);
    if (strcmp(t->dtype, "F16") == 0)
        return f16_to_double(h);
    uint32_t b = (uint32_t)h << 16;
    float v;
    memcpy(&v, &b, 4);
    return v;
}

static uint64_t numel(const Tensor *t)
{
    uint64_t n = 1;
    for (int d = 0; d < t->rank; d++)
        n *= t->dims[d];
    return n;
}

static File ref, out;

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: stcmp REF.safetensors OUT.safetensors TOL\n");
        return 2;
    }
    double tol = atof(argv[3]), worst = 0;
    read_file(&ref, argv[1]);
    read_file(&out, argv[2]);
    for (int i = 0; i < ref.nt; i++) {
        const Tensor *r = &ref.t[i];
        const Tensor *o = find(&out, r->name);
        const char *stride_s = meta(&ref, r->name, "stride");
        uint64_t stride = stride_s ? strtoull(stride_s, NULL, 10) : 1;
        char want[256] = "", got[256] = "";
        if (!o) {
            fprintf(stderr, "stcmp: %s: no output '%s'\n", argv[2], r->name);
            return 2;
        }
        for (int d = 0; d < o->rank; d++)
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s%llu", d ? "," : "",
                     (unsigned long long)o->dims[d]);
        if (stride_s) {
            const char *s = meta(&ref, r->name, "shape");
            snprintf(want, sizeof want, "%s", s ? s : "?");
        } else {
            for (int d = 0; d < r->rank; d++)
                snprintf(want + strlen(want), sizeof want - strlen(want), "%s%llu",
                         d ? "," : "", (unsigned long long)r->dims[d]);
        }
        if (strcmp(want, got) != 0) {
            fprintf(stderr, "stcmp: output '%s' has shape [%s], the reference [%s]\n",
                    r->name, got, want);
            return 2;
        }
        uint64_t n = numel(r), on = numel(o);
        double maxabs = 0, maxdiff = 0;
        const char *ma = meta(&ref, r->name, "maxabs");
        for (uint64_t k = 0; k < n; k++) {
            double a = get(&ref, r, k), b;
            if (k * stride >= on) {
                fprintf(stderr, "stcmp: output '%s' is too short for the samples\n", r->name);
                return 2;
            }
            b = get(&out, o, k * stride);
            if (fabs(a) > maxabs)
                maxabs = fabs(a);
            if (!isfinite(b) || !isfinite(a))
                maxdiff = INFINITY;
            else if (fabs(a - b) > maxdiff)
                maxdiff = fabs(a - b);
        }
        if (ma)
            maxabs = atof(ma);
        double err = maxdiff / (maxabs > 1e-30 ? maxabs : 1e-30);
        printf("%s %.3e\n", r->name, err);
        if (!(err <= worst))
            worst = err;
    }
    printf("max %.3e\n", worst);
    return worst < tol ? 0 : 1;
}
