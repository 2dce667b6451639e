/* model.c - what the importer reads from the protobuf messages that
 * protoc-c's reader (onnx.pb-c.c, generated from Debian's onnx.proto)
 * unpacks: element types, attributes, TensorProto data; and the messages
 * every other file prints through. */
#include "config.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/onnx_int.h"

const char *ox_type_name(int type)
{
    switch (type) {
    case OX_FLOAT: return "float";
    case OX_UINT8: return "uint8";
    case OX_INT8: return "int8";
    case OX_UINT16: return "uint16";
    case OX_INT16: return "int16";
    case OX_INT32: return "int32";
    case OX_INT64: return "int64";
    case OX_STRING: return "string";
    case OX_BOOL: return "bool";
    case OX_FLOAT16: return "float16";
    case OX_DOUBLE: return "double";
    case OX_UINT32: return "uint32";
    case OX_UINT64: return "uint64";
    case OX_BFLOAT16: return "bfloat16";
    case OX_UNDEF: return "undefined";
    default: return "an unknown type";
    }
}

bool ox_type_is_int(int type)
{
    switch (type) {
    case OX_UINT8: case OX_INT8: case OX_UINT16: case OX_INT16: case OX_INT32:
    case OX_INT64: case OX_BOOL: case OX_UINT32: case OX_UINT64:
        return true;
    default:
        return false;
    }
}

/* ---- messages ---------------------------------------------------------------- */

const char *ox_printable(Ox *ox, const char *s)
{
    size_t n = 0;
    for (const char *p = s; *p; p++)
        n += (unsigned char)*p < 0x20 || *p == 0x7f ? 4 : 1;
    char *o = arena_alloc(ox->arena, n + 1), *q = o;
    for (const char *p = s; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (c < 0x20 || c == 0x7f)
            q += sprintf(q, "\\x%02x", c);
        else
            *q++ = (char)c;
    }
    *q = 0;
    return o;
}

/* The message on one line: names from the model are the model's bytes,
 * and a newline in one would start a line that is no message. */
static void vreport(Ox *ox, const OxNode *n, const char *fmt, va_list ap)
{
    ox->failed = true;
    if (ox->quiet)
        return;
    FILE *err = ox->err ? ox->err : stderr;
    char *msg = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&msg, &len);
    if (!fp) {
        fprintf(err, "einc: error: out of memory\n");
        return;
    }
    fprintf(fp, "%s: error: ", ox->path);
    if (n)
        fprintf(fp, "node %d%s%s%s (%s): ", n->index, *n->name ? " '" : "", n->name,
                *n->name ? "'" : "", n->op);
    vfprintf(fp, fmt, ap);
    fclose(fp);
    fprintf(err, "%s\n", ox_printable(ox, msg));
    free(msg);
}

bool ox_error(Ox *ox, const OxNode *n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(ox, n, fmt, ap);
    va_end(ap);
    return false;
}

/* The same words as ox_error; tests/onnx/backend.sh counts a case as
 * unsupported (not failed) by the word "unsupported". */
bool ox_unsupported(Ox *ox, const OxNode *n, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return ox_error(ox, n, "unsupported: %s", buf);
}

/* ---- attributes ------------------------------------------------------------------ */

const Onnx__AttributeProto *ox_attr(const OxNode *n, const char *name)
{
    for (size_t i = 0; i < n->pb->n_attribute; i++) {
        const Onnx__AttributeProto *a = n->pb->attribute[i];
        if (a->name && strcmp(a->name, name) == 0)
            return a;
    }
    return NULL;
}

int64_t ox_attr_int(const OxNode *n, const char *name, int64_t dflt)
{
    const Onnx__AttributeProto *a = ox_attr(n, name);
    return a && (a->has_i || a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT)
               ? a->i : dflt;
}

float ox_attr_float(const OxNode *n, const char *name, float dflt)
{
    const Onnx__AttributeProto *a = ox_attr(n, name);
    return a && (a->has_f || a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT)
               ? a->f : dflt;
}

const char *ox_attr_str(Ox *ox, const OxNode *n, const char *name, const char *dflt)
{
    const Onnx__AttributeProto *a = ox_attr(n, name);
    if (!a || !a->has_s)
        return dflt;
    char *s = arena_alloc(ox->arena, a->s.len + 1);
    if (a->s.len)       /* an empty string's data may be NULL */
        memcpy(s, a->s.data, a->s.len);
    return s;
}

const int64_t *ox_attr_ints(const OxNode *n, const char *name, int *count)
{
    const Onnx__AttributeProto *a = ox_attr(n, name);
    if (!a) {
        *count = -1;
        return NULL;
    }
    *count = a->n_ints > 1000000 ? 1000000 : (int)a->n_ints;
    return a->ints;
}

const float *ox_attr_floats(const OxNode *n, const char *name, int *count)
{
    const Onnx__AttributeProto *a = ox_attr(n, name);
    if (!a) {
        *count = -1;
        return NULL;
    }
    *count = a->n_floats > 1000000 ? 1000000 : (int)a->n_floats;
    return a->floats;
}

/* ---- tensors ------------------------------------------------------------------------ */

OxConst *ox_const_new(Ox *ox, int type, int64_t n)
{
    OxConst *k = arena_alloc(ox->arena, sizeof *k);
    k->type = type;
    k->n = n;
    size_t m = n > 0 ? (size_t)n : 1;
    if (type == OX_FLOAT || type == OX_DOUBLE)
        k->f = arena_alloc(ox->arena, m * sizeof *k->f);
    else if (type == OX_FLOAT16 || type == OX_BFLOAT16)
        k->h = arena_alloc(ox->arena, m * sizeof *k->h);
    else
        k->i = arena_alloc(ox->arena, m * sizeof *k->i);
    return k;
}

static size_t type_size(int type)
{
    switch (type) {
    case OX_FLOAT: case OX_INT32: case OX_UINT32: return 4;
    case OX_UINT8: case OX_INT8: case OX_BOOL: return 1;
    case OX_UINT16: case OX_INT16: case OX_FLOAT16: case OX_BFLOAT16: return 2;
    case OX_INT64: case OX_UINT64: case OX_DOUBLE: return 8;
    default: return 0;
    }
}

/* Little-endian element j of raw bytes. */
static uint64_t raw_bits(const uint8_t *p, size_t size, int64_t j)
{
    uint64_t v = 0;
    for (size_t b = 0; b < size; b++)
        v |= (uint64_t)p[(size_t)j * size + b] << (8 * b);
    return v;
}

static int64_t sign_extend(uint64_t v, size_t size)
{
    if (size >= 8)
        return (int64_t)v;
    uint64_t m = 1ull << (8 * size - 1);
    return (int64_t)((v ^ m) - m);
}

static float bits_to_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static double bits_to_double(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

OxConst *ox_tensor(Ox *ox, const OxNode *n, const Onnx__TensorProto *t, int *rank,
                   int64_t *shape)
{
    const char *tn = t->name && *t->name ? t->name : "(unnamed)";
    if (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
        return ox_unsupported(ox, n, "tensor '%s' keeps its data in an external file", tn),
               NULL;
    if (t->n_dims > OX_MAXRANK)
        return ox_unsupported(ox, n, "tensor '%s' has rank %zu (at most %d)", tn, t->n_dims,
                              OX_MAXRANK), NULL;
    int64_t count = 1;
    for (size_t d = 0; d < t->n_dims; d++) {
        if (t->dims[d] < 0)
            return ox_error(ox, n, "tensor '%s' has a negative dimension", tn), NULL;
        if (!i64_mul(count, t->dims[d], &count) || count > OX_MAX_ELEMS)
            return ox_error(ox, n, "tensor '%s' is too large", tn), NULL;
        shape[d] = t->dims[d];
    }
    *rank = (int)t->n_dims;
    int type = t->data_type;
    size_t size = type_size(type);
    if (!size)
        return ox_unsupported(ox, n, "tensor '%s' has element type %s", tn,
                              ox_type_name(type)), NULL;
    /* The data's size checked before the tensor is made: the dims alone
     * may claim 2^40 elements. */
    size_t have;
    switch (type) {
    case OX_FLOAT: have = t->n_float_data; break;
    case OX_DOUBLE: have = t->n_double_data; break;
    case OX_INT64: have = t->n_int64_data; break;
    case OX_UINT32: case OX_UINT64: have = t->n_uint64_data; break;
    default: have = t->n_int32_data; break;
    }
    if (t->has_raw_data && t->raw_data.len != (size_t)count * size)
        return ox_error(ox, n, "tensor '%s' has %zu bytes of data, not %lld", tn,
                        t->raw_data.len, (long long)((size_t)count * size)), NULL;
    if (!t->has_raw_data && have != (size_t)count)
        return ox_error(ox, n, "tensor '%s' has %zu elements, its shape %lld", tn, have,
                        (long long)count), NULL;
    OxConst *k = ox_const_new(ox, type, count);
    if (t->has_raw_data) {
        const uint8_t *p = t->raw_data.data;
        for (int64_t j = 0; j < count; j++) {
            uint64_t v = raw_bits(p, size, j);
            if (type == OX_FLOAT)
                k->f[j] = bits_to_float((uint32_t)v);
            else if (type == OX_DOUBLE)
                k->f[j] = (float)bits_to_double(v);
            else if (type == OX_FLOAT16 || type == OX_BFLOAT16)
                k->h[j] = (uint16_t)v;
            else if (type == OX_UINT8 || type == OX_UINT16 || type == OX_UINT32 ||
                     type == OX_BOOL)
                k->i[j] = (int64_t)v;
            else
                k->i[j] = sign_extend(v, size);
        }
        return k;
    }
    for (int64_t j = 0; j < count; j++) {
        switch (type) {
        case OX_FLOAT: k->f[j] = t->float_data[j]; break;
        case OX_DOUBLE: k->f[j] = (float)t->double_data[j]; break;
        case OX_INT64: k->i[j] = t->int64_data[j]; break;
        case OX_UINT32: case OX_UINT64: k->i[j] = (int64_t)t->uint64_data[j]; break;
        case OX_FLOAT16: case OX_BFLOAT16: k->h[j] = (uint16_t)t->int32_data[j]; break;
        default: k->i[j] = t->int32_data[j]; break;    /* int32 ... uint8, bool */
        }
    }
    return k;
}

/* ---- inputs as constants ------------------------------------------------------------ */

const int64_t *ox_const_ints(Ox *ox, const OxNode *n, int i, int *count)
{
    if (!ox_has_in(n, i))
        return ox_error(ox, n, "input %d is missing", i), NULL;
    OxVal *v = ox_val(ox, n->in[i]);
    if (!v->k)
        return ox_unsupported(ox, n, "input %d ('%s') must be known at import time "
                              "(a constant or an initializer)", i, ox->vname[n->in[i]]),
               NULL;
    if (!v->k->i)
        return ox_error(ox, n, "input %d ('%s') must be integers, not %s", i,
                        ox->vname[n->in[i]], ox_type_name(v->k->type)), NULL;
    *count = (int)v->k->n;
    return v->k->i;
}

bool ox_const_scalar(Ox *ox, const OxNode *n, int i, double *out)
{
    if (!ox_has_in(n, i))
        return ox_error(ox, n, "input %d is missing", i);
    OxVal *v = ox_val(ox, n->in[i]);
    if (!v->k || v->k->n != 1)
        return ox_unsupported(ox, n, "input %d ('%s') must be a single number known at "
                              "import time", i, ox->vname[n->in[i]]);
    if (v->k->f)
        *out = v->k->f[0];
    else if (v->k->i)
        *out = (double)v->k->i[0];
    else
        return ox_unsupported(ox, n, "input %d has element type %s", i,
                              ox_type_name(v->k->type));
    return true;
}

bool ox_axis(Ox *ox, const OxNode *n, int64_t a, int rank, int *out)
{
    if (a < -rank || a >= rank)
        return ox_error(ox, n, "axis %lld is out of range for rank %d", (long long)a, rank);
    *out = (int)(a < 0 ? a + rank : a);
    return true;
}

int64_t ox_f2i(double v)
{
    if (v != v)
        return 0;
    if (v >= 9223372036854775807.0)
        return INT64_MAX;
    if (v <= -9223372036854775808.0)
        return INT64_MIN;
    return (int64_t)v;
}

int64_t ox_numel(const OxVal *v)
{
    /* saturating: an operator's inference may ask before the importer
     * has checked the output's size */
    int64_t n = 1;
    for (int d = 0; d < v->rank; d++)
        if (!i64_mul(n, v->shape[d], &n))
            return INT64_MAX;
    return n;
}

void ox_set(Ox *ox, int id, int type, int rank, const int64_t *shape)
{
    OxVal *v = ox_val(ox, id);
    v->kind = VK_DATA;
    v->type = type;
    v->rank = rank;
    v->alias = -1;
    for (int d = 0; d < rank; d++)
        v->shape[d] = shape[d];
}
