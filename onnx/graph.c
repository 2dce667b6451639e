/* graph.c - onnx_import: read the model, check it, build the table of
 * values and nodes, run the inference (twice: see onnx_int.h), and hand
 * the result to the writer; and the backend tests' TensorProto files as
 * safetensors. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/onnx_int.h"
#include "runtime/st.h"

bool ox_write_program(Ox *ox, const OnnxOptions *opt, OnnxResult *res);

/* The whole file; NULL after an error. */
static uint8_t *read_file(const char *path, size_t *len)
{
    FILE *fp = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!fp) {
        fprintf(stderr, "einc: error: cannot open '%s': %s\n", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = xmalloc(cap);
    for (;;) {
        if (n == cap)
            buf = xrealloc(buf, cap *= 2);
        size_t got = fread(buf + n, 1, cap - n, fp);
        n += got;
        if (got == 0)
            break;
    }
    bool err = ferror(fp);
    if (fp != stdin)
        fclose(fp);
    if (err) {
        fprintf(stderr, "einc: error: cannot read '%s'\n", path);
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

/* ---- names to value ids ---------------------------------------------------------- */

typedef struct NameMap {
    const char **keys;
    int *ids;
    size_t cap;
} NameMap;

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

/* The id of `name`, a new one if `add`; -1 if absent. */
static int lookup(Ox *ox, NameMap *m, const char *name, bool add)
{
    if ((size_t)ox->nvals * 2 + 2 >= m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 256;
        const char **keys = xcalloc(cap, sizeof *keys);
        int *ids = xcalloc(cap, sizeof *ids);
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->keys[i])
                continue;
            size_t j = hash_str(m->keys[i]) & (cap - 1);
            while (keys[j])
                j = (j + 1) & (cap - 1);
            keys[j] = m->keys[i];
            ids[j] = m->ids[i];
        }
        free(m->keys);
        free(m->ids);
        m->keys = keys;
        m->ids = ids;
        m->cap = cap;
    }
    size_t j = hash_str(name) & (m->cap - 1);
    while (m->keys[j]) {
        if (strcmp(m->keys[j], name) == 0)
            return m->ids[j];
        j = (j + 1) & (m->cap - 1);
    }
    if (!add)
        return -1;
    m->keys[j] = name;
    m->ids[j] = ox->nvals;
    return ox->nvals++;
}

/* ---- the graph ----------------------------------------------------------------------- */

typedef struct Graph {
    OxConst **init;                 /* per value: initializer data, or NULL */
    int *init_rank;
    int64_t (*init_shape)[OX_MAXRANK];
    const Onnx__ValueInfoProto **input_info;   /* per graph input */
    const char *batch_param;        /* the first input's first dim_param, or NULL */
    OxConst **bound;                /* per graph input: its --bind value, or NULL */
    int *bound_rank;
    int64_t (*bound_shape)[OX_MAXRANK];
} Graph;

/* The values of graph inputs bound by --bind (safetensors, by ONNX name):
 * they become constants, as if they were initializers of Constant nodes. */
static bool read_bound(Ox *ox, Graph *g, const char *path)
{
    size_t n = (size_t)ox->ninputs + 1;
    g->bound = arena_alloc(ox->arena, n * sizeof *g->bound);
    g->bound_rank = arena_alloc(ox->arena, n * sizeof *g->bound_rank);
    g->bound_shape = arena_alloc(ox->arena, n * sizeof *g->bound_shape);
    if (!path)
        return true;
    char err[ST_ERRLEN];
    StFile *f;
    if (st_open(path, &f, err, sizeof err) != ST_OK) {
        fprintf(ox->err, "einc: error: %s\n", err);
        return false;
    }
    bool ok = true;
    for (int j = 0; j < ox->ninputs && ok; j++) {
        const StTensor *t = st_find(f, ox->vname[ox->inputs[j]]);
        if (!t)
            continue;
        if (t->rank > OX_MAXRANK) {
            ok = ox_unsupported(ox, NULL, "%s: '%s' has rank %d", path, t->name, t->rank);
            break;
        }
        StDtype dt = t->dtype;
        bool fl = dt == ST_F32 || dt == ST_F64;
        size_t size = st_dtype_size(dt);
        if (!fl && dt != ST_I64 && dt != ST_I32 && dt != ST_I16 && dt != ST_I8 &&
            dt != ST_U8 && dt != ST_U16 && dt != ST_U32 && dt != ST_BOOL) {
            ok = ox_unsupported(ox, NULL, "%s: '%s' has dtype %s", path, t->name,
                                st_dtype_name(dt));
            break;
        }
        int type = fl ? OX_FLOAT : dt == ST_BOOL ? OX_BOOL : OX_INT64;
        OxConst *k = ox_const_new(ox, type, (int64_t)t->nelem);
        for (uint64_t e = 0; e < t->nelem; e++) {
            uint64_t v = 0;
            for (size_t b = 0; b < size; b++)
                v |= (uint64_t)t->data[e * size + b] << (8 * b);
            if (dt == ST_F32) {
                uint32_t u = (uint32_t)v;
                memcpy(&k->f[e], &u, sizeof u);
            } else if (dt == ST_F64) {
                double d;
                memcpy(&d, &v, sizeof d);
                k->f[e] = (float)d;
            } else if (dt == ST_I64 || dt == ST_I32 || dt == ST_I16 || dt == ST_I8) {
                uint64_t m = size >= 8 ? 0 : 1ull << (8 * size - 1);
                k->i[e] = size >= 8 ? (int64_t)v : (int64_t)((v ^ m) - m);
            } else {
                k->i[e] = (int64_t)v;
            }
        }
        g->bound[j] = k;
        g->bound_rank[j] = t->rank;
        for (int d = 0; d < t->rank; d++)
            g->bound_shape[j][d] = t->shape[d];
    }
    st_close(f);
    return ok;
}

typedef VEC(const char *) NameVec;

/* The id of a name, a new one (its name recorded) the first time. */
static int val_id(Ox *ox, NameMap *map, NameVec *names, const char *name)
{
    int n0 = ox->nvals;
    int id = lookup(ox, map, name, true);
    if (id == n0)
        vec_push(ox->arena, names, name);
    return id;
}

/* The values of the graph by name: initializers, inputs, the nodes'
 * inputs and outputs, the graph's outputs. */
static bool build_values(Ox *ox, Graph *g, NameMap *map, NameVec *names)
{
    const Onnx__GraphProto *gp = ox->model->graph;
    #define VAL(name) val_id(ox, map, names, (name))
    for (size_t i = 0; i < gp->n_initializer; i++) {
        const char *nm = gp->initializer[i]->name;
        if (!nm || !*nm)
            return ox_error(ox, NULL, "initializer %zu has no name", i);
        if (lookup(ox, map, nm, false) >= 0)
            return ox_error(ox, NULL, "two initializers are named '%s'", nm);
        (void)VAL(nm);
    }
    int ninit = ox->nvals;
    ox->inputs = arena_alloc(ox->arena, (gp->n_input + 1) * sizeof *ox->inputs);
    g->input_info = arena_alloc(ox->arena, (gp->n_input + 1) * sizeof *g->input_info);
    for (size_t i = 0; i < gp->n_input; i++) {
        const char *nm = gp->input[i]->name;
        if (!nm || !*nm)
            return ox_error(ox, NULL, "graph input %zu has no name", i);
        int id = VAL(nm);
        if (id < ninit)
            continue;               /* an initializer listed as input (IR < 4) */
        for (int j = 0; j < ox->ninputs; j++)
            if (ox->inputs[j] == id)
                return ox_error(ox, NULL, "graph input '%s' is listed twice", nm);
        g->input_info[ox->ninputs] = gp->input[i];
        ox->inputs[ox->ninputs++] = id;
    }
    ox->nnodes = (int)gp->n_node;
    ox->nodes = arena_alloc(ox->arena, (gp->n_node + 1) * sizeof *ox->nodes);
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *np = gp->node[i];
        OxNode *n = &ox->nodes[i];
        n->index = (int)i;
        n->name = np->name ? np->name : "";
        n->op = np->op_type ? np->op_type : "";
        n->pb = np;
        n->nin = (int)np->n_input;
        n->nout = (int)np->n_output;
        n->in = arena_alloc(ox->arena, (np->n_input + 1) * sizeof *n->in);
        n->out = arena_alloc(ox->arena, (np->n_output + 1) * sizeof *n->out);
        for (size_t j = 0; j < np->n_input; j++)
            n->in[j] = np->input[j] && *np->input[j] ? VAL(np->input[j]) : -1;
        for (size_t j = 0; j < np->n_output; j++)
            n->out[j] = np->output[j] && *np->output[j] ? VAL(np->output[j]) : -1;
    }
    ox->outputs = arena_alloc(ox->arena, (gp->n_output + 1) * sizeof *ox->outputs);
    for (size_t i = 0; i < gp->n_output; i++) {
        const char *nm = gp->output[i]->name;
        if (!nm || !*nm)
            return ox_error(ox, NULL, "graph output %zu has no name", i);
        int id = lookup(ox, map, nm, false);
        if (id < 0)
            return ox_error(ox, NULL, "graph output '%s' is computed by no node", nm);
        ox->outputs[ox->noutputs++] = id;
    }
    #undef VAL
    return true;
}

static bool build(Ox *ox, Graph *g)
{
    const Onnx__GraphProto *gp = ox->model->graph;
    NameMap map = {0};
    NameVec names = {0};
    bool ok = build_values(ox, g, &map, &names);
    free(map.keys);
    free(map.ids);
    ox->vname = names.data;
    if (!ok)
        return false;

    /* Initializers' data, decoded once for both runs. */
    g->init = arena_alloc(ox->arena, (size_t)(ox->nvals + 1) * sizeof *g->init);
    g->init_rank = arena_alloc(ox->arena, (size_t)(ox->nvals + 1) * sizeof *g->init_rank);
    g->init_shape = arena_alloc(ox->arena, (size_t)(ox->nvals + 1) * sizeof *g->init_shape);
    for (size_t i = 0; i < gp->n_initializer; i++) {
        g->init[i] = ox_tensor(ox, NULL, gp->initializer[i], &g->init_rank[i],
                               g->init_shape[i]);
        if (!g->init[i])
            return false;
    }
    return true;
}

/* The type and shape of graph input j in run `r`. */
static bool input_type(Ox *ox, Graph *g, int j, OxVal *v, bool *batched)
{
    *batched = false;
    const Onnx__ValueInfoProto *vi = g->input_info[j];
    const char *nm = vi->name;
    if (!vi->type || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
        !vi->type->tensor_type)
        return ox_unsupported(ox, NULL, "graph input '%s' is not a tensor", nm);
    const Onnx__TypeProto__Tensor *tt = vi->type->tensor_type;
    v->kind = VK_INPUT;
    v->type = tt->elem_type;
    v->alias = -1;
    if (!tt->shape)
        return ox_unsupported(ox, NULL, "graph input '%s' has no shape", nm);
    if (tt->shape->n_dim > OX_MAXRANK)
        return ox_unsupported(ox, NULL, "graph input '%s' has rank %zu (at most %d)", nm,
                              tt->shape->n_dim, OX_MAXRANK);
    v->rank = (int)tt->shape->n_dim;
    int64_t cnt = 1;
    for (int d = 0; d < v->rank; d++) {
        const Onnx__TensorShapeProto__Dimension *dm = tt->shape->dim[d];
        if (dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
            dm->dim_value >= 1 && dm->dim_value <= OX_MAX_ELEMS) {
            v->shape[d] = dm->dim_value;
            if (d == 0 && !g->batch_param && dm->dim_value == ox->batch[0])
                *batched = true;
        } else if (d == 0 && dm->value_case ==
                   ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && g->batch_param &&
                   strcmp(dm->dim_param, g->batch_param) == 0) {
            v->shape[d] = ox->batch[0];
            *batched = true;
        } else if (dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM) {
            return ox_unsupported(ox, NULL, "graph input '%s' has the symbolic dimension "
                                  "'%s' in place %d (only the first dimension of the "
                                  "inputs may be symbolic: it becomes B)", nm,
                                  dm->dim_param, d);
        } else if (dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
                   dm->dim_value == 0) {
            return ox_unsupported(ox, NULL, "graph input '%s' is empty (size 0 in dimension "
                                  "%d): it must be known at import time (--bind)", nm, d);
        } else {
            return ox_error(ox, NULL, "graph input '%s' has no size in dimension %d", nm, d);
        }
        if (!i64_mul(cnt, v->shape[d], &cnt) || cnt > OX_MAX_ELEMS)
            return ox_error(ox, NULL, "graph input '%s' is too large", nm);
    }
    return true;
}

/* An operator whose writer only moves elements (its body a read, or a
 * read of a read): it may compute integer tensors at run time, which
 * keep their values exactly.  Arithmetic on integers is not written (a
 * body computes in reals, ein(5), and ONNX's integer division and
 * wrapping are not that). */
static bool moves_data(const char *op)
{
    static const char *const ops[] = {
        "Gather", "GatherElements", "GatherND", "Reshape", "Flatten", "Squeeze", "Unsqueeze",
        "Transpose", "Concat", "Split", "Slice", "Expand", "Tile", "Identity",
        "DepthToSpace", "SpaceToDepth", "Cast", "CastLike", "Where", "Pad", NULL,
    };
    for (int i = 0; ops[i]; i++)
        if (strcmp(op, ops[i]) == 0)
            return true;
    return false;
}

/* A comparison or a logical operator: its output is a condition, 0 or 1
 * (integers are compared as ein reads them, as reals: ein(5)). */
static bool gives_bool(const char *op)
{
    static const char *const ops[] = {
        "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor",
        "Not", NULL,
    };
    for (int i = 0; ops[i]; i++)
        if (strcmp(op, ops[i]) == 0)
            return true;
    return false;
}

/* One run of the inference with the batch of run ox->run. */
static bool infer(Ox *ox, Graph *g)
{
    int r = ox->run;
    ox->failed = false;
    OxVal *val = ox->val[r] = arena_alloc(ox->arena, (size_t)(ox->nvals + 1) * sizeof *val);
    for (int i = 0; i < ox->nvals; i++) {
        val[i].alias = -1;
        if (g->init[i]) {
            val[i].kind = VK_WEIGHT;
            val[i].type = g->init[i]->type;
            val[i].rank = g->init_rank[i];
            memcpy(val[i].shape, g->init_shape[i], sizeof val[i].shape);
            val[i].k = g->init[i];
        }
    }
    ox->batched_inputs = 0;
    for (int j = 0; j < ox->ninputs; j++) {
        OxVal *v = &val[ox->inputs[j]];
        bool batched;
        if (g->bound[j]) {
            v->kind = VK_CONST;
            v->type = g->bound[j]->type;
            v->rank = g->bound_rank[j];
            memcpy(v->shape, g->bound_shape[j], sizeof v->shape);
            v->k = g->bound[j];
            continue;
        }
        /* Batched: the first dimension is the first input's (the same
         * dim_param, or the same number). */
        if (!input_type(ox, g, j, v, &batched))
            return false;
        if (batched) {
            v->shape[0] = ox->batch[r];
            ox->batched_inputs++;
        }
    }
    for (int i = 0; i < ox->nnodes; i++) {
        const OxNode *n = &ox->nodes[i];
        if (n->pb->domain && *n->pb->domain && strcmp(n->pb->domain, "ai.onnx") != 0)
            return ox_unsupported(ox, n, "operator domain '%s'", n->pb->domain);
        if (ox->no_default_opset)
            return ox_error(ox, n, "the model imports no operator set of the default domain");
        const OxOp *op = ox_find_op(n->op);
        if (!op)
            return ox_unsupported(ox, n, "operator %s", n->op);
        if (n->nout < 1 || n->out[0] < 0)
            return ox_error(ox, n, "the node has no output");
        if (strcmp(n->op, "Constant") != 0 && (n->nin < 1 || n->in[0] < 0))
            return ox_error(ox, n, "the node has no first input");
        for (int j = 0; j < n->nin; j++) {
            if (n->in[j] >= 0 && val[n->in[j]].kind == VK_NONE)
                return ox_error(ox, n, "input '%s' is not computed before the node "
                                "(nodes must be in topological order)",
                                ox->vname[n->in[j]]);
            /* an empty value (a known one, from Slice) goes into Concat only */
            for (int d = 0; n->in[j] >= 0 && d < val[n->in[j]].rank; d++)
                if (val[n->in[j]].shape[d] == 0 && strcmp(n->op, "Concat") != 0)
                    return ox_unsupported(ox, n, "an empty input ('%s')",
                                          ox->vname[n->in[j]]);
        }
        for (int j = 0; j < n->nout; j++) {
            if (n->out[j] >= 0 && val[n->out[j]].kind != VK_NONE)
                return ox_error(ox, n, "output '%s' is defined twice", ox->vname[n->out[j]]);
            for (int k = 0; k < j; k++)
                if (n->out[j] >= 0 && n->out[k] == n->out[j])
                    return ox_error(ox, n, "output '%s' is defined twice",
                                    ox->vname[n->out[j]]);
        }
        if (!op->infer(ox, n) || ox->failed) {
            if (r == 1 && !ox->fixed_by)
                ox->fixed_by = n;
            return false;
        }
        for (int j = 0; j < n->nout; j++) {
            OxVal *v = n->out[j] >= 0 ? &val[n->out[j]] : NULL;
            if (!v)
                continue;
            if (v->kind == VK_NONE)
                return ox_unsupported(ox, n, "output %d ('%s')", j, ox->vname[n->out[j]]);
            int64_t cnt = 1;
            for (int d = 0; d < v->rank; d++)
                if (v->shape[d] < 0 || !i64_mul(cnt, v->shape[d], &cnt) || cnt > OX_MAX_ELEMS)
                    return ox_error(ox, n, "output '%s' is too large", ox->vname[n->out[j]]);
            if (v->k == NULL && v->kind != VK_INPUT && v->type != OX_FLOAT &&
                v->type != OX_FLOAT16 && v->type != OX_BFLOAT16 &&
                !(ox_elem_name(v->type) && moves_data(n->op)) &&
                !(v->type == OX_BOOL && gives_bool(n->op)))
                return ox_unsupported(ox, n, "output '%s' of element type %s computed at run "
                                      "time (only float, float16 and bfloat16 are, "
                                      "integers moved by a gather, a cast, a reshape or "
                                      "Where, and the bools of comparisons)",
                                      ox->vname[n->out[j]], ox_type_name(v->type));
        }
    }
    return true;
}

/* Do the two runs describe each dimension as a number or c*B? */
static bool dims_agree(Ox *ox)
{
    int64_t b0 = ox->batch[0], b1 = ox->batch[1];
    for (int i = 0; i < ox->nvals; i++) {
        OxVal *u = &ox->val[0][i], *v = &ox->val[1][i];
        if (u->kind == VK_NONE)
            continue;
        if (u->kind != v->kind || u->rank != v->rank)
            return false;
        for (int d = 0; d < u->rank; d++)
            if (u->shape[d] != v->shape[d] &&
                (u->shape[d] % b0 != 0 || u->shape[d] / b0 * b1 != v->shape[d]))
                return false;
    }
    return true;
}

bool onnx_import(const OnnxOptions *opt, OnnxResult *res)
{
    memset(res, 0, sizeof *res);
    size_t len = opt->len;
    uint8_t *bytes = NULL;
    if (!opt->bytes && !(bytes = read_file(opt->path, &len)))
        return false;
    Ox ox0 = {0}, *ox = &ox0;
    ox->arena = arena_new();
    ox->path = opt->path;
    ox->err = opt->err ? opt->err : stderr;
    bool ok = false;
    ox->model = onnx__model_proto__unpack(NULL, len, bytes ? bytes : opt->bytes);
    Graph g = {0};
    if (!ox->model) {
        ox_error(ox, NULL, "not an ONNX model: the file is not a well-formed ModelProto "
                 "message (truncated or another kind of file?)");
        goto out;
    }
    if (!ox->model->has_ir_version || !ox->model->graph) {
        ox_error(ox, NULL, "not an ONNX model: %s", !ox->model->graph ? "it has no graph"
                 : "it has no IR version");
        goto out;
    }
    ox->opset = -1;
    for (size_t i = 0; i < ox->model->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *os = ox->model->opset_import[i];
        if ((!os->domain || !*os->domain || strcmp(os->domain, "ai.onnx") == 0) &&
            os->has_version)
            ox->opset = os->version;
    }
    if (ox->opset < 0 && ox->model->ir_version >= 3 && ox->model->n_opset_import == 0) {
        /* Every model since IR 3 imports the default operator set. */
        ox_error(ox, NULL, "not an ONNX model: it imports no operator set of the default "
                 "domain (truncated?)");
        goto out;
    }
    ox->no_default_opset = ox->opset < 0 && ox->model->ir_version >= 3;
    if (ox->opset < 0)
        ox->opset = 1;              /* IR versions 1 and 2 knew no opset_import */
    if (!build(ox, &g) || !read_bound(ox, &g, opt->bind))
        goto out;
    if (ox->noutputs == 0) {
        ox_error(ox, NULL, "the graph has no outputs");
        goto out;
    }
    /* The batch: the first input's first dimension (1 for a dim_param). */
    ox->batch[0] = 1;
    int first = 0;                  /* the first input not bound */
    while (first < ox->ninputs && g.bound[first])
        first++;
    if (first < ox->ninputs) {
        const Onnx__TypeProto *tp = g.input_info[first]->type;
        if (tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE && tp->tensor_type &&
            tp->tensor_type->shape && tp->tensor_type->shape->n_dim >= 1) {
            const Onnx__TensorShapeProto__Dimension *dm = tp->tensor_type->shape->dim[0];
            if (dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM)
                g.batch_param = dm->dim_param;
            else if (dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
                     dm->dim_value >= 1)
                ox->batch[0] = dm->dim_value;
        }
    }
    ox->batch[1] = ox->batch[0] + 1;
    ox->run = 0;
    if (!infer(ox, &g))
        goto out;
    ox->symbolic = false;
    if (ox->batched_inputs > 0) {
        ox->run = 1;
        ox->quiet = true;
        ox->symbolic = infer(ox, &g) && dims_agree(ox);
        ox->quiet = false;
        ox->failed = false;
        ox->run = 0;
    }
    ok = ox_write_program(ox, opt, res);
out:
    if (ox->model)
        onnx__model_proto__free_unpacked(ox->model, NULL);
    free(bytes);
    arena_free(ox->arena);
    return ok;
}

/* ---- TensorProto files --------------------------------------------------------------- */

bool onnx_tensors_to_safetensors(const char *const *paths, const char *const *names,
                                 int n, unsigned char **out, size_t *len)
{
    Ox ox0 = {0}, *ox = &ox0;
    ox->arena = arena_new();
    StOut *ts = arena_alloc(ox->arena, (size_t)(n + 1) * sizeof *ts);
    bool ok = true;
    Onnx__TensorProto **msgs = xcalloc((size_t)n + 1, sizeof *msgs);
    uint8_t **bytes = xcalloc((size_t)n + 1, sizeof *bytes);
    for (int i = 0; i < n && ok; i++) {
        size_t blen;
        ox->path = paths[i];
        if (!(bytes[i] = read_file(paths[i], &blen))) {
            ok = false;
            break;
        }
        msgs[i] = onnx__tensor_proto__unpack(NULL, blen, bytes[i]);
        if (!msgs[i]) {
            ok = ox_error(ox, NULL, "not a well-formed TensorProto message");
            break;
        }
        int rank;
        int64_t *shape = arena_alloc(ox->arena, OX_MAXRANK * sizeof *shape);
        OxConst *k = ox_tensor(ox, NULL, msgs[i], &rank, shape);
        if (!k) {
            ok = false;
            break;
        }
        const char *nm = names && names[i] ? names[i] : msgs[i]->name;
        ts[i] = (StOut){arena_strdup(ox->arena, nm ? nm : ""), ST_F32, rank, shape, k->f};
        if (k->h)
            ts[i].dtype = k->type == OX_FLOAT16 ? ST_F16 : ST_BF16, ts[i].data = k->h;
        else if (k->i) {
            /* integers keep their type: a program's integer input is
             * declared so (i32, bool ...) */
            static const struct { int type; StDtype dt; } m[] = {
                {OX_INT64, ST_I64}, {OX_INT32, ST_I32}, {OX_INT16, ST_I16},
                {OX_INT8, ST_I8}, {OX_UINT8, ST_U8}, {OX_UINT16, ST_U16},
                {OX_UINT32, ST_U32}, {OX_UINT64, ST_U64}, {OX_BOOL, ST_BOOL},
            };
            ts[i].dtype = ST_I64;
            for (size_t j = 0; j < sizeof m / sizeof *m; j++)
                if (m[j].type == k->type)
                    ts[i].dtype = m[j].dt;
            size_t w = st_dtype_size(ts[i].dtype);
            uint8_t *p = arena_alloc(ox->arena, (size_t)k->n * w + 1);
            for (int64_t e = 0; e < k->n; e++)
                for (size_t b = 0; b < w; b++)
                    p[(size_t)e * w + b] = (uint8_t)((uint64_t)k->i[e] >> (8 * b));
            ts[i].data = p;
        }
        if (msgs[i]->data_type == OX_DOUBLE) {
            /* keep the doubles: the tests compare with them */
            double *dd = arena_alloc(ox->arena, (size_t)(k->n + 1) * sizeof *dd);
            if (k->n && msgs[i]->has_raw_data)     /* no data may be NULL */
                memcpy(dd, msgs[i]->raw_data.data, (size_t)k->n * sizeof *dd);
            else if (k->n)
                memcpy(dd, msgs[i]->double_data, (size_t)k->n * sizeof *dd);
            ts[i].dtype = ST_F64;
            ts[i].data = dd;
        }
    }
    if (ok) {
        char err[ST_ERRLEN];
        if (st_write_memory(ts, n, NULL, 0, 0, out, len, err, sizeof err) != ST_OK) {
            fprintf(stderr, "einc: error: %s\n", err);
            ok = false;
        }
    }
    for (int i = 0; i < n; i++) {
        if (msgs[i])
            onnx__tensor_proto__free_unpacked(msgs[i], NULL);
        free(bytes[i]);
    }
    free(msgs);
    free(bytes);
    arena_free(ox->arena);
    return ok;
}
