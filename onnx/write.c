/* write.c - the ein program: names, declarations, reads, statements, and
 * the weights file.  Each node's statements come from its operator's
 * writer (ops_*.c) through the helpers here.
 *
 * Names: a value's ONNX name with every character other than a letter,
 * digit or '_' made '_' (runs of them one), without '_' at either end,
 * 't' in front of a digit, '_' after a keyword, a function name, B or a
 * name of the writer's indices (i0, j0, k0 ...), then _2, _3 ... until
 * it is unique.  Inputs and weights keep their ONNX names as external
 * names (ein(5)). */
#include "config.h"

#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/onnx_int.h"
#include "runtime/st.h"

/* ---- dimensions ------------------------------------------------------------------- */

Dim ox_dim_num(int64_t n)
{
    return (Dim){n, 0};
}

Dim ox_dim_mul(Dim a, Dim b)
{
    return (Dim){a.c * b.c, a.e + b.e};
}

void ox_need_fixed(Ox *ox, int id, int d)
{
    if (ox->symbolic && ox->val[0][id].shape[d] != ox->val[1][id].shape[d])
        ox->write_failed = true;
}

void ox_need_fixed_from(Ox *ox, int id, int from)
{
    for (int d = from; d < ox->val[0][id].rank; d++)
        ox_need_fixed(ox, id, d);
}

void ox_need_bcast_same(Ox *ox, int id, int d, int64_t out0)
{
    /* Read at the output's index where the larger run's dim is not 1:
     * right for every B only if the dim is the output's in both runs.
     * In that run they are equal (numpy broadcasting); a dim that varies
     * with B and differs from the output's in run 0 is broadcast there
     * and not for other B (an input [B, ..] against a fixed [2, ..]). */
    if (!ox->symbolic)
        return;
    int64_t a = ox->val[0][id].shape[d], b = ox->val[1][id].shape[d];
    if (a != b && b != 1 && a != out0)
        ox->write_failed = true;
}

Dim ox_dim(Ox *ox, int id, int d)
{
    int64_t a = ox->val[0][id].shape[d];
    if (!ox->symbolic)
        return ox_dim_num(a);
    int64_t b = ox->val[1][id].shape[d];
    if (a == b)
        return ox_dim_num(a);
    return (Dim){a / ox->batch[0], 1};      /* dims_agree checked it divides */
}

Dim ox_dims_prod(Ox *ox, int id, int from, int to)
{
    Dim p = ox_dim_num(1);
    for (int d = from; d < to; d++)
        p = ox_dim_mul(p, ox_dim(ox, id, d));
    return p;
}

const char *ox_dim_str(Ox *ox, Dim d)
{
    if (d.e == 0 || d.c == 0)
        return arena_printf(ox->arena, "%" PRId64, d.c);
    char *s = d.c == 1 ? "B" : arena_printf(ox->arena, "%" PRId64 "*B", d.c);
    for (int i = 1; i < d.e; i++)
        s = arena_printf(ox->arena, "%s*B", s);
    return s;
}

Dim *ox_shape_dims(Ox *ox, int id)
{
    OxVal *v = ox_val(ox, id);
    Dim *s = arena_alloc(ox->arena, (size_t)(v->rank + 1) * sizeof *s);
    for (int d = 0; d < v->rank; d++)
        s[d] = ox_dim(ox, id, d);
    return s;
}

/* ---- names ----------------------------------------------------------------------------- */

static const char *const reserved[] = {
    "const", "def", "import", "in", "input", "model", "output", "weight", "where",
    "relu", "sigmoid", "tanh", "exp", "log", "sqrt", "rsqrt", "abs", "erf", "max", "min",
    "pow", "select", "f32", "f16", "bf16", "B", NULL,
};

static bool is_index_name(const char *s)
{
    if (!strchr("ijk", s[0]) || !s[1])
        return false;
    for (const char *p = s + 1; *p; p++)
        if (!isdigit((unsigned char)*p))
            return false;
    return true;
}

static bool name_taken(Ox *ox, const char *s)
{
    for (int i = 0; i < ox->used_names.len; i++)
        if (strcmp(ox->used_names.data[i], s) == 0)
            return true;
    return false;
}

/* Is `s` the ONNX name of an input, weight or constant other than `onnx`?
 * Those become external names, which no other tensor may have as its
 * name (ein(5)). */
static bool ext_taken(Ox *ox, const char *s, const char *onnx)
{
    if (onnx && strcmp(s, onnx) == 0)
        return false;
    for (int i = 0; i < ox->nvals; i++) {
        ValKind k = ox->val[0][i].kind;
        if ((k == VK_INPUT || k == VK_WEIGHT || k == VK_CONST) &&
            strcmp(ox->vname[i], s) == 0)
            return true;
    }
    return false;
}

/* A new name made from `onnx`; `self`: the ONNX name of the value it
 * names (its own external name may equal it), or NULL. */
static const char *new_name(Ox *ox, const char *onnx, const char *self)
{
    size_t n = strlen(onnx);
    char *s = arena_alloc(ox->arena, n + 4);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        char c = onnx[i];
        if (!(isalnum((unsigned char)c) || c == '_'))
            c = '_';
        if (c == '_' && (m == 0 || s[m - 1] == '_'))
            continue;
        s[m++] = c;
    }
    while (m > 0 && s[m - 1] == '_')
        m--;
    s[m] = 0;
    const char *base = s;
    if (m == 0)
        base = "t";
    else if (isdigit((unsigned char)s[0]))
        base = arena_printf(ox->arena, "t%s", s);
    for (int i = 0; reserved[i]; i++)
        if (strcmp(base, reserved[i]) == 0)
            base = arena_printf(ox->arena, "%s_", base);
    if (is_index_name(base))
        base = arena_printf(ox->arena, "%s_", base);
    const char *name = base;
    for (int k = 2; name_taken(ox, name) || ext_taken(ox, name, self); k++)
        name = arena_printf(ox->arena, "%s_%d", base, k);
    vec_push(ox->arena, &ox->used_names, name);
    return name;
}

static const char *unique_name(Ox *ox, const char *onnx)
{
    return new_name(ox, onnx, onnx);
}

const char *ox_temp(Ox *ox, int id, const char *suffix)
{
    const char *base = ox_name(ox, id);
    return new_name(ox, arena_printf(ox->arena, "%s_%s", base, suffix), NULL);
}

/* The ONNX name as an ein string (quotes and backslashes escaped). */
static const char *ein_string(Ox *ox, const char *s)
{
    size_t n = strlen(s);
    char *o = arena_alloc(ox->arena, 2 * n + 3);
    size_t m = 0;
    o[m++] = '"';
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '"' || s[i] == '\\')
            o[m++] = '\\';
        o[m++] = s[i];
    }
    o[m++] = '"';
    o[m] = 0;
    return o;
}

const char *ox_elem_name(int type)
{
    switch (type) {
    case OX_FLOAT: return "f32";
    case OX_FLOAT16: return "f16";
    case OX_BFLOAT16: return "bf16";
    case OX_INT64: return "i64";
    case OX_INT32: return "i32";
    case OX_INT16: return "i16";
    case OX_INT8: return "i8";
    case OX_UINT8: return "u8";
    case OX_BOOL: return "bool";
    default: return NULL;           /* uint16, uint32, uint64, double ... */
    }
}

static const char *elem_of(Ox *ox, int id, bool *ok)
{
    const char *e = ox_elem_name(ox_val(ox, id)->type);
    *ok = e != NULL;
    return e ? e : "f32";
}

static void declare(Ox *ox, int id, const char *kind)
{
    OxVal *v = ox_val(ox, id);
    bool ok = true;
    const char *elem = elem_of(ox, id, &ok);
    if (!ok) {
        ox_unsupported(ox, NULL, "%s '%s' of element type %s read as data", kind,
                       ox->vname[id], ox_type_name(v->type));
        return;
    }
    if (strchr(ox->vname[id], '\n')) {
        /* an ein string does not span lines (ein(5)) */
        ox_unsupported(ox, NULL, "%s '%s': a name with a newline (an external name "
                       "cannot hold one)", kind, ox->vname[id]);
        return;
    }
    fprintf(ox->decl, "%-6s %s", kind, ox->ein[id]);
    if (strcmp(ox->ein[id], ox->vname[id]) != 0)
        fprintf(ox->decl, " %s", ein_string(ox, ox->vname[id]));
    fprintf(ox->decl, " : %s[", elem);
    for (int d = 0; d < v->rank; d++)
        fprintf(ox->decl, "%s%s", d ? ", " : "", ox_dim_str(ox, ox_dim(ox, id, d)));
    fprintf(ox->decl, "]\n");
    ox->declared[id] = true;
}

/* Same data in both runs?  (A constant that depends on B cannot be a
 * weight of a program for every B.) */
static bool same_const(Ox *ox, int id)
{
    if (!ox->symbolic)
        return true;
    const OxConst *a = ox->val[0][id].k, *b = ox->val[1][id].k;
    if (a == b)
        return true;
    if (!a || !b || a->n != b->n || a->type != b->type)
        return false;
    size_t n = (size_t)a->n;
    if (a->f)
        return memcmp(a->f, b->f, n * sizeof *a->f) == 0;
    if (a->i)
        return memcmp(a->i, b->i, n * sizeof *a->i) == 0;
    return memcmp(a->h, b->h, n * sizeof *a->h) == 0;
}

const char *ox_name(Ox *ox, int id)
{
    while (ox_val(ox, id)->alias >= 0)
        id = ox_val(ox, id)->alias;
    if (!ox->ein[id])
        ox->ein[id] = (char *)unique_name(ox, ox->vname[id]);
    OxVal *v = ox_val(ox, id);
    if (!ox->declared[id] && (v->kind == VK_WEIGHT || v->kind == VK_CONST)) {
        if (!same_const(ox, id))
            ox->write_failed = true;
        declare(ox, id, "weight");
        ox->weight_out[id] = true;
    }
    return ox->ein[id];
}

const char *ox_cond(Ox *ox, const char *read)
{
    return strchr(read, '[') ? read : arena_printf(ox->arena, "bool(%s)", read);
}

const char *const *ox_loop_idx(Ox *ox, int n)
{
    const char **s = arena_alloc(ox->arena, (size_t)(n + 1) * sizeof *s);
    for (int i = 0; i < n; i++)
        s[i] = arena_printf(ox->arena, "i%d", i);
    return s;
}

const char *ox_real(Ox *ox, double v)
{
    if (!isfinite(v)) {
        ox_unsupported(ox, NULL, "the constant %g (ein has no literal for it)", v);
        return "0";
    }
    float f = (float)v;
    char buf[64];
    /* The shortest %g that reads back as the same float. */
    for (int p = 1; p <= 9; p++) {
        snprintf(buf, sizeof buf, "%.*g", p, (double)f);
        if (strtof(buf, NULL) == f)
            break;
    }
    if (buf[0] == '-')
        return arena_printf(ox->arena, "(%s)", buf);
    return arena_strdup(ox->arena, buf);
}

const char *ox_int(Ox *ox, int64_t v)
{
    if (v == INT64_MIN)
        return "(-9223372036854775807 - 1)";
    if (v < 0)
        return arena_printf(ox->arena, "(%" PRId64 ")", v);
    return arena_printf(ox->arena, "%" PRId64, v);
}

/* A constant with one element, as a literal; NULL otherwise. */
static const char *const_literal(Ox *ox, int id)
{
    while (ox_val(ox, id)->alias >= 0)
        id = ox_val(ox, id)->alias;
    OxVal *v = ox_val(ox, id);
    if (v->kind != VK_CONST || !v->k || v->k->n != 1)
        return NULL;
    if (!same_const(ox, id))
        ox->write_failed = true;
    if (v->k->f)
        return ox_real(ox, v->k->f[0]);
    if (v->k->i)
        /* an integer literal: exact, and an integer wherever an integer
         * tensor's statement reads it (ein(5), Stores) */
        return ox_int(ox, v->k->i[0]);
    float f = v->k->type == OX_FLOAT16 ? st_f16_to_f32(v->k->h[0])
                                       : st_bf16_to_f32(v->k->h[0]);
    return ox_real(ox, f);
}

const char *ox_read(Ox *ox, int id, const char *const *idx)
{
    const char *lit = const_literal(ox, id);
    if (lit)
        return lit;
    const char *nm = ox_name(ox, id);
    OxVal *v = ox_val(ox, id);
    char *s = arena_printf(ox->arena, "%s[", nm);
    for (int d = 0; d < v->rank; d++)
        s = arena_printf(ox->arena, "%s%s%s", s, d ? ", " : "", idx[d]);
    return arena_printf(ox->arena, "%s]", s);
}

const char *ox_read_bcast(Ox *ox, int id, int rank, const int64_t *shape,
                          const char *const *idx)
{
    OxVal *v = ox_sval(ox, id);
    const char **sub = arena_alloc(ox->arena, (size_t)(v->rank + 1) * sizeof *sub);
    for (int d = 0; d < v->rank; d++) {
        sub[d] = v->shape[d] == 1 ? "0" : idx[rank - v->rank + d];
        ox_need_bcast_same(ox, id, d, shape[rank - v->rank + d]);
    }
    return ox_read(ox, id, sub);
}

void ox_stmt(Ox *ox, const char *name, int rank, const Dim *shape, const char *op,
             const char *body, const char *where)
{
    fprintf(ox->stmt, "%s[", name);
    for (int d = 0; d < rank; d++)
        fprintf(ox->stmt, "%si%d", d ? ", " : "", d);
    /* A node computing f16 or bf16 stores its results so, as ONNX does. */
    const char *elem = ox_elem_name(ox->stmt_type);
    fprintf(ox->stmt, "] : %s[", elem && ox->stmt_type != OX_FLOAT ? elem : "");
    for (int d = 0; d < rank; d++)
        fprintf(ox->stmt, "%s%s", d ? ", " : "", ox_dim_str(ox, shape[d]));
    fprintf(ox->stmt, "] %s %s", op, body);
    if (where && *where)
        fprintf(ox->stmt, "\n    where %s", where);
    fputc('\n', ox->stmt);
}

void ox_call(Ox *ox, int id, const char *def, const char *args)
{
    ox->uses_lib = true;
    fprintf(ox->stmt, "%s = %s(%s)\n", ox_name(ox, id), def, args);
}

bool ox_all_f32(Ox *ox, const OxNode *n)
{
    for (int i = 0; i < n->nin; i++)
        if (n->in[i] >= 0 && ox_val(ox, n->in[i])->type != OX_FLOAT)
            return false;
    return n->nout >= 1 && n->out[0] >= 0 && ox_val(ox, n->out[0])->type == OX_FLOAT;
}

void ox_comment_node(Ox *ox, const OxNode *n)
{
    /* the model's names in a comment: a newline would end it */
    fprintf(ox->stmt, "\n# %s", n->op);
    if (*n->name)
        fprintf(ox->stmt, " '%s'", ox_printable(ox, n->name));
    fputs(":", ox->stmt);
    for (int i = 0; i < n->nin; i++)
        if (n->in[i] >= 0)
            fprintf(ox->stmt, "%s %s", i ? "," : "", ox_printable(ox, ox->vname[n->in[i]]));
    fputs(" ->", ox->stmt);
    for (int i = 0; i < n->nout; i++)
        if (n->out[i] >= 0)
            fprintf(ox->stmt, "%s %s", i ? "," : "", ox_printable(ox, ox->vname[n->out[i]]));
    fputc('\n', ox->stmt);
}

/* ---- the program ------------------------------------------------------------------------- */

static bool node_is_folded(Ox *ox, const OxNode *n)
{
    for (int j = 0; j < n->nout; j++) {
        if (n->out[j] < 0)
            continue;
        OxVal *v = ox_val(ox, n->out[j]);
        if (v->kind == VK_DATA && v->alias < 0)
            return false;
    }
    return true;
}

static void reset_writer(Ox *ox)
{
    size_t n = (size_t)ox->nvals + 1;
    ox->ein = arena_alloc(ox->arena, n * sizeof *ox->ein);
    ox->declared = arena_alloc(ox->arena, n * sizeof *ox->declared);
    ox->weight_out = arena_alloc(ox->arena, n * sizeof *ox->weight_out);
    ox->used_names = (typeof(ox->used_names)){0};
    ox->write_failed = false;
    ox->failed = false;
    ox->uses_lib = false;
    ox->decl = open_memstream(&ox->decl_buf, &ox->decl_len);
    ox->stmt = open_memstream(&ox->stmt_buf, &ox->stmt_len);
    if (!ox->decl || !ox->stmt) {
        fprintf(stderr, "einc: error: out of memory\n");
        exit(1);
    }
}

static void close_writer(Ox *ox)
{
    fclose(ox->decl);
    fclose(ox->stmt);
}

static bool write_body(Ox *ox)
{
    for (int j = 0; j < ox->ninputs; j++) {
        int id = ox->inputs[j];
        if (ox_val(ox, id)->kind != VK_INPUT)
            continue;               /* bound by --bind: a constant */
        ox->ein[id] = (char *)unique_name(ox, ox->vname[id]);
        declare(ox, id, "input");
    }
    for (int i = 0; i < ox->nnodes && !ox->failed; i++) {
        const OxNode *n = &ox->nodes[i];
        if (node_is_folded(ox, n))
            continue;
        ox_comment_node(ox, n);
        bool was = ox->write_failed;
        ox->stmt_type = n->nout > 0 && n->out[0] >= 0 ? ox_val(ox, n->out[0])->type : OX_FLOAT;
        if (!ox_find_op(n->op)->write(ox, n))
            ox->failed = true;
        if (ox->write_failed && !was && !ox->fixed_by)
            ox->fixed_by = n;       /* named in the program's comment */
    }
    if (ox->failed)
        return false;
    /* Outputs: a graph output that is not computed here gets a copy. */
    const char **outs = arena_alloc(ox->arena, (size_t)(ox->noutputs + 1) * sizeof *outs);
    for (int j = 0; j < ox->noutputs; j++) {
        int id = ox->outputs[j], src = id;
        while (ox_val(ox, src)->alias >= 0)
            src = ox_val(ox, src)->alias;
        for (int d = 0; d < ox_val(ox, src)->rank; d++)
            if (ox_val(ox, src)->shape[d] == 0)
                return ox_unsupported(ox, NULL, "graph output '%s' is empty", ox->vname[id]);
        bool copy = ox_val(ox, src)->kind != VK_DATA || src != id;
        for (int k = 0; k < j; k++)
            if (ox->outputs[k] == id)
                copy = true;        /* listed twice: ein names an output once */
        if (!copy) {
            outs[j] = ox_name(ox, id);
            continue;
        }
        OxVal *v = ox_val(ox, src);
        ox_read(ox, src, ox_loop_idx(ox, v->rank));    /* declares it first */
        const char *nm = new_name(ox, ox->vname[id], NULL);
        fprintf(ox->stmt, "\n# graph output %s\n", ox_printable(ox, ox->vname[id]));
        ox->stmt_type = v->type;
        ox_stmt(ox, nm, v->rank, ox_shape_dims(ox, src), "=",
                ox_read(ox, src, ox_loop_idx(ox, v->rank)), NULL);
        outs[j] = nm;
    }
    fputs("\noutput ", ox->stmt);
    for (int j = 0; j < ox->noutputs; j++)
        fprintf(ox->stmt, "%s%s", j ? ", " : "", outs[j]);
    fputc('\n', ox->stmt);
    return !ox->failed;
}

/* The safetensors dtype of an integer element type ein has. */
static bool int_dtype(int type, StDtype *out)
{
    switch (type) {
    case OX_INT64: *out = ST_I64; return true;
    case OX_INT32: *out = ST_I32; return true;
    case OX_INT16: *out = ST_I16; return true;
    case OX_INT8: *out = ST_I8; return true;
    case OX_UINT8: *out = ST_U8; return true;
    case OX_BOOL: *out = ST_BOOL; return true;
    default: return false;
    }
}

static bool write_weights(Ox *ox, OnnxResult *res)
{
    int n = 0;
    for (int i = 0; i < ox->nvals; i++)
        n += ox->weight_out[i];
    StOut *ts = arena_alloc(ox->arena, (size_t)(n + 1) * sizeof *ts);
    n = 0;
    for (int i = 0; i < ox->nvals; i++) {
        if (!ox->weight_out[i])
            continue;
        OxVal *v = ox_val(ox, i);
        StOut *t = &ts[n++];
        t->name = ox->vname[i];
        t->rank = v->rank;
        t->shape = v->shape;
        t->dtype = v->k->type == OX_FLOAT16 ? ST_F16 : v->k->type == OX_BFLOAT16 ? ST_BF16
                                                                                : ST_F32;
        t->data = v->k->h ? (const void *)v->k->h : (const void *)v->k->f;
        StDtype it;
        if (v->k->i && int_dtype(v->type, &it)) {
            /* an integer tensor as declared (elem_of), little-endian */
            size_t w = st_dtype_size(it);
            uint8_t *p = arena_alloc(ox->arena, (size_t)v->k->n * w + 1);
            for (int64_t j = 0; j < v->k->n; j++)
                for (size_t b = 0; b < w; b++)
                    p[(size_t)j * w + b] = (uint8_t)((uint64_t)v->k->i[j] >> (8 * b));
            t->dtype = it;
            t->data = p;
        } else if (v->k->i) {
            /* a folded integer constant read as data: its values as floats */
            float *f = arena_alloc(ox->arena, (size_t)(v->k->n + 1) * sizeof *f);
            for (int64_t j = 0; j < v->k->n; j++)
                f[j] = (float)v->k->i[j];
            t->data = f;
        }
    }
    char err[ST_ERRLEN];
    res->nweights = n;
    if (st_write_memory(ts, n, NULL, 0, ST_WRITE_SORTED, &res->weights, &res->weights_len,
                        err, sizeof err) != ST_OK) {
        fprintf(ox->err, "einc: error: %s\n", err);
        return false;
    }
    return true;
}

bool ox_write_program(Ox *ox, const OnnxOptions *opt, OnnxResult *res)
{
    bool ok;
    for (;;) {
        reset_writer(ox);
        ok = write_body(ox);
        close_writer(ox);
        if (!ok || !ox->write_failed || !ox->symbolic)
            break;
        /* A constant depends on B: write every shape as a number. */
        free(ox->decl_buf);
        free(ox->stmt_buf);
        ox->symbolic = false;
    }
    if (ok)
        ok = write_weights(ox, res);
    if (!ok) {
        free(ox->decl_buf);
        free(ox->stmt_buf);
        return false;
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&buf, &len);
    const char *base = strrchr(opt->path, '/');
    base = base ? base + 1 : opt->path;
    fprintf(fp, "# imported from %s (ONNX IR %" PRId64 ", opset %" PRId64 "%s%s%s) by einc "
            "--from=onnx\n", ox_printable(ox, base), ox->model->ir_version, ox->opset,
            ox->model->producer_name && *ox->model->producer_name ? ", made by " : "",
            ox->model->producer_name ? ox_printable(ox, ox->model->producer_name) : "",
            ox->model->producer_version && *ox->model->producer_version
                ? arena_printf(ox->arena, " %s",
                               ox_printable(ox, ox->model->producer_version)) : "");
    if (opt->weights_name)
        fprintf(fp, "# weights: %s (%d tensors, by their ONNX names)\n",
                ox_printable(ox, opt->weights_name), res->nweights);
    if (ox->uses_lib)
        fprintf(fp, "import <nn.ein>\n");
    if (ox->symbolic) {
        fprintf(fp, "const B = %" PRId64 "    # the inputs' first dimension\n", ox->batch[0]);
    } else if (ox->batched_inputs > 0) {
        const OxNode *n = ox->fixed_by;
        fprintf(fp, "# shapes are numbers: the model fixes its batch size");
        if (n)
            fprintf(fp, " (node %d%s%s%s, %s)", n->index, *n->name ? " '" : "",
                    ox_printable(ox, n->name), *n->name ? "'" : "", n->op);
        fputc('\n', fp);
    }
    fputc('\n', fp);
    fwrite(ox->decl_buf, 1, ox->decl_len, fp);
    fwrite(ox->stmt_buf, 1, ox->stmt_len, fp);
    fclose(fp);
    free(ox->decl_buf);
    free(ox->stmt_buf);
    res->ein = buf;
    res->ein_len = len;
    return true;
}
