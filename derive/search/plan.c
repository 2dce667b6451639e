/* plan.c - the plan record (plan.h): choosing and pricing one operator,
 * instantiation of derived expressions into pieces, the plan of a program
 * as written, and the --emit=plan views. */
#include "config.h"
#include "plan.h"

#include <math.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ---- one operator -------------------------------------------------------- */

bool plan_has_kernel(const PlanOp *op)
{
    return (op->impl == IMPL_KERNEL && plan_runs(op)) || op->impl == IMPL_CUDNN_CONV;
}

bool plan_in_rows(const PlanOp *op)
{
    return op->rows && op->out != op->rows->members[op->rows->nmembers - 1];
}

typedef struct Count {
    const IrProgram *p;
    int *n, *last;                  /* by tensor id: readers; the last one counted */
    int op;
} Count;

/* (Only tensors of the program: an epilogue's reads of its operator's
 * own value name a tensor that is gone, whose id is stale.) */
static bool count_visit(void *arg, const IExpr *e)
{
    Count *c = arg;
    if (e->kind == IE_ACCESS && e->access.tensor) {
        int id = e->access.tensor->id;
        if (id >= 0 && id < c->p->ntensors && c->p->tensors[id] == e->access.tensor &&
            c->last[id] != c->op) {
            c->last[id] = c->op;
            c->n[id]++;
        }
    }
    return true;
}

int *plan_readers(const Plan *pl)
{
    const IrProgram *p = pl->prog;
    int nt = p->ntensors;
    Count c = {p, xcalloc((size_t)nt + 1, sizeof *c.n),
               xmalloc(((size_t)nt + 1) * sizeof *c.last), 0};
    for (int i = 0; i < nt; i++)
        c.last[i] = -1;
    for (int i = 0; i < nt; i++) {
        const PlanOp *op = &pl->ops[i];
        if (p->tensors[i]->kind != IT_STAGE)
            continue;
        c.op = i;
        ir_expr_visit(op->stage->body, count_visit, &c);
        for (int g = 0; g < op->stage->nguards; g++)
            ir_expr_visit(op->stage->guards[g], count_visit, &c);
        if (op->epi.value)
            ir_expr_visit(op->epi.value, count_visit, &c);
    }
    for (int i = 0; i < p->noutputs; i++)
        c.n[p->outputs[i]]++;
    free(c.last);
    return c.n;
}

bool plan_runs(const PlanOp *op)
{
    return !plan_in_rows(op) && !op->stored_by;
}

PlanOp plan_op_alone(const PlanOp *op)
{
    PlanOp o = *op;
    if (o.buf.kind == BUF_VIEW && (o.impl == IMPL_CUBLAS_GEMM || o.impl == IMPL_CBLAS_GEMM)) {
        const PlanBuf *b = &o.buf;
        o.op.ldc = b->own_ldc;
        o.op.out_nm = b->own_out_nm;
        o.op.split = b->own_split;
        o.op.stride_a = b->own_stride[0];
        o.op.stride_b = b->own_stride[1];
        o.op.stride_c = b->own_stride[2];
        o.op.sstride_a = b->own_sstride[0];
        o.op.sstride_b = b->own_sstride[1];
        o.op.sstride_c = b->own_sstride[2];
    }
    o.buf = (PlanBuf){.kind = BUF_OWN};
    o.stored_by = NULL;
    o.src_from = NULL;
    return o;
}

const Stage *plan_epilogue_stage(IrCtx *cx, const PlanOp *op)
{
    if (!op->epi.value)
        return NULL;
    const Stage *s = op->stage;
    return ir_stage(cx, RED_NONE, s->loops, s->nloops, NULL, 0, NULL, 0, op->epi.value);
}

bool plan_gemm_dst_whole(const PlanOp *op)
{
    const OpMatch *m = &op->op;
    const IrTensor *t = op->out;
    int r = t->rank;
    if (op->impl != IMPL_DNNL_MATMUL || m->out_nm || r < 2 || op->stage->nloops != r ||
        t->shape[r - 2] != m->m || t->shape[r - 1] != m->n || m->ldc != m->n)
        return false;
    for (int d = 0; d < r - 2; d++)
        if (t->shape[d] != 1)
            return false;
    return true;
}

/* Does oneDNN's matmul apply the binary post-op q with its fast kernels:
 * an operand of dst's shape, one per column, or one value?  oneDNN 2.6.3
 * runs others (one value per row: the 1/z of an attention) on its
 * reference kernel, 1.7 s for BERT's q|k|v product. */
static bool matmul_post_fast(const LibPost *q, const IrTensor *dst)
{
    if (!q->binary)
        return true;
    bool full = true, col = true, one = true;
    for (int d = 0; d < q->rank; d++) {
        full &= q->dims[d] == dst->shape[d];
        one &= q->dims[d] == 1;
        col &= q->dims[d] == (d + 1 == q->rank ? dst->shape[d] : 1);
    }
    return full || col || one;
}

/* The epilogue of a forward convolution whose output is [n, f, h, w] as
 * its loops (oneDNN's dst, cuDNN's y), as post-ops: their number, or 0. */
static int conv_post_ops(const PlanOp *op, LibPost *post)
{
    const IrTensor *t = op->out;
    if (!op->epi.value || op->op.kind != OPK_CONV2D || op->stage->nloops != 4 ||
        t->rank != 4 || t->shape[0] != op->op.cn || t->shape[1] != op->op.f)
        return 0;
    int n = cost_post_ops(op->stage, op->epi.self, op->epi.value, post, LIB_POST_MAX);
    return n > 0 ? n : 0;
}

/* post[0..n) as oneDNN computes it right: consecutive linear steps
 * composed into one (a2 (a1 v + b1) + b2), and consecutive clips (a
 * clamp of a clamp is the clamp to the second's clamp of the first's
 * bounds); 0 where two element-wise post-ops of one algorithm remain
 * with other alpha or beta: oneDNN 2.6 gives every post-op of an
 * algorithm the first one's (Debian's libdnnl 2.6.3: relu(v) * 2 + 1
 * came out as 4 relu(v); tests/num/conv_post.ein). */
static int dnnl_chain(LibPost *post, int n)
{
    int m = 0;
    for (int i = 0; i < n; i++) {
        LibPost *q = m ? &post[m - 1] : NULL, *p = &post[i];
        if (q && !q->binary && !p->binary && q->alg == p->alg && p->alg == POST_LINEAR) {
            q->beta = p->alpha * q->beta + p->beta;
            q->alpha *= p->alpha;
            continue;
        }
        if (q && !q->binary && !p->binary && q->alg == p->alg && p->alg == POST_CLIP) {
            double lo = fmin(fmax(q->alpha, p->alpha), p->beta);
            double hi = fmin(fmax(q->beta, p->alpha), p->beta);
            q->alpha = lo;
            q->beta = hi;
            continue;
        }
        post[m++] = *p;
    }
    for (int i = 0; i < m; i++)
        for (int j = i + 1; j < m; j++)
            if (!post[i].binary && !post[j].binary && post[i].alg == post[j].alg &&
                (post[i].alpha != post[j].alpha || post[i].beta != post[j].beta))
                return 0;
    return m;
}

int plan_post_ops(const PlanOp *op, LibPost *post)
{
    if (op->epi.value && plan_gemm_dst_whole(op)) {
        int n = cost_post_ops(op->stage, op->epi.self, op->epi.value, post, LIB_POST_MAX);
        for (int i = 0; i < n; i++)
            if (!matmul_post_fast(&post[i], op->out))
                return 0;
        return n > 0 ? dnnl_chain(post, n) : 0;
    }
    /* Not after a transposed convolution: oneDNN 2.6 runs a deconvolution
     * with post-ops on a slower kernel than the same without them and a
     * pass (DCGAN's 128->64 16x16 one with a ReLU: 2.7 ms against 0.64 ms
     * on an AMD EPYC core) */
    return op->impl == IMPL_DNNL_CONV ? dnnl_chain(post, conv_post_ops(op, post)) : 0;
}

/* cuDNN's graph: f32 x, w and y (the pointwise nodes compute in f32 on
 * the f32 y).  Not after a backward-data operation (a transposed
 * convolution): the documentation at hand did not show pointwise nodes
 * after one (tests/gpu/fusion_probe.cu asks a GPU's cuDNN). */
int plan_pointwise(const PlanOp *op, LibPost *post, LibPw *pw)
{
    const OpMatch *m = &op->op;
    if (op->impl != IMPL_CUDNN_CONV || op->out->elem != ELEM_F32 ||
        m->in[0]->elem != ELEM_F32 || m->in[1]->elem != ELEM_F32)
        return 0;
    int n = conv_post_ops(op, post);
    n = n > 0 ? cost_pointwise(post, n, pw, LIB_PW_MAX) : 0;
    return n > 0 ? n : 0;
}

bool plan_dnn_fused(const PlanOp *op)
{
    LibPost post[LIB_POST_MAX];
    LibPw pw[LIB_PW_MAX];
    return plan_pointwise(op, post, pw) > 0;
}

bool plan_epilogue_pass(const PlanOp *op)
{
    LibPost post[LIB_POST_MAX];
    return op->epi.value && op->impl != IMPL_KERNEL && !op->lt.fused && !op->lt.scale &&
           !plan_dnn_fused(op) && plan_post_ops(op, post) == 0;
}

bool plan_gemm_ptrs(const PlanOp *op)
{
    return op->impl == IMPL_CUBLAS_GEMM && op->op.split > 1;
}

bool plan_has_pass(const PlanOp *op)
{
    return plan_epilogue_pass(op) || op->lt.fused || plan_dnn_fused(op);
}

const char *plan_pw_name(const PlanOp *op, char *buf, size_t size)
{
    LibPost post[LIB_POST_MAX];
    LibPw pw[LIB_PW_MAX];
    int n = plan_pointwise(op, post, pw);
    size_t len = 0;
    buf[0] = 0;
    for (int i = 0; i < n && len < size; i++) {
        int w = pw[i].post < 0 && pw[i].mode <= PW_MIN
                    ? snprintf(buf + len, size - len, "%s%s %g", i ? ", " : "",
                               cost_pw_name(pw[i].mode), pw[i].value)
                    : snprintf(buf + len, size - len, "%s%s", i ? ", " : "",
                               cost_pw_name(pw[i].mode));
        len += w > 0 ? (size_t)w : 0;
    }
    return buf;
}

const char *plan_call_name(const PlanOp *op)
{
    return op->lt.fused ? "cublasLtMatmul"
                        : cost_impl_call(op->impl, &op->op);
}

const char *plan_lt_name(const PlanOp *op, char *buf, size_t size)
{
    const LibLt *lt = &op->lt;
    static const char *const act[] = {"", "relu", "gelu_tanh"};
    char ab[40] = "AB", c[40] = "";
    if (!lt->fused)
        return "";
    if (lt->alpha != 1)
        snprintf(ab, sizeof ab, "%g*AB", lt->alpha);
    if (lt->c && lt->beta == 1)
        snprintf(c, sizeof c, " + C");
    else if (lt->c)
        snprintf(c, sizeof c, " + %g*C", lt->beta);
    snprintf(buf, size, "%s%s%s%s%s%s", act[lt->act], lt->act ? "(" : "", ab, c,
             lt->bias ? " + bias" : "", lt->act ? ")" : "");
    return buf;
}

typedef struct Stored {
    IrCtx *cx;
    const IrTensor *self;
    const Stage *value;
} Stored;

static const IExpr *stored_access(void *arg, const IExpr *e)
{
    const Stored *st = arg;
    if (e->access.tensor != st->self)
        return e;
    return ir_access_stage(st->cx, st->value, e->access.idx, e->access.nidx);
}

/* s with its loops renamed, so that reading it inside a stage over s's
 * own loop variables binds nothing twice. */
static const Stage *renamed(IrCtx *cx, const Stage *s)
{
    IrVar *loops = arena_alloc(ir_arena(cx), (size_t)(s->nloops + 1) * sizeof *loops);
    const IExpr *body = s->body;
    const IExpr **guards = arena_alloc(ir_arena(cx), (size_t)(s->nguards + 1) * sizeof *guards);
    for (int g = 0; g < s->nguards; g++)
        guards[g] = s->guards[g];
    for (int d = 0; d < s->nloops; d++) {
        loops[d] = ir_var_new(cx, ir_var_name(cx, s->loops[d].id), s->loops[d].lo,
                              s->loops[d].hi);
        const Ix *to = ix_var(cx, loops[d].id);
        body = ir_subst(cx, body, s->loops[d].id, to);
        for (int g = 0; g < s->nguards; g++)
            guards[g] = ir_subst(cx, guards[g], s->loops[d].id, to);
    }
    return ir_stage(cx, s->red, loops, s->nloops, s->sums, s->nsums, guards, s->nguards, body);
}

/* What op stores, its epilogue applied (plan_stored_stage without the
 * row group). */
static const Stage *stored_plain(IrCtx *cx, const PlanOp *op)
{
    const Stage *s = op->stage;
    if (!op->epi.value)
        return s;
    Stored st = {cx, op->epi.self, renamed(cx, s)};
    const IExpr *v = ir_map_access(cx, op->epi.value, stored_access, &st);
    return ir_stage(cx, RED_NONE, s->loops, s->nloops, NULL, 0, NULL, 0, v);
}

/* A row group's member as it stands alone: its reads of the members that
 * live only in the group replaced by what those store (nested stages). */
typedef struct RowInline {
    IrCtx *cx;
    const PlanRowGroup *g;
} RowInline;

static const Stage *row_member_stage(IrCtx *cx, const PlanRowGroup *g, int k);
static const Stage *row_inline(const RowInline *r, const Stage *s);

/* (Nested stages too: a member's epilogue reads its own value as one.) */
static const IExpr *row_access(void *arg, const IExpr *e)
{
    const RowInline *r = arg;
    if (e->access.stage)
        return ir_access_stage(r->cx, row_inline(r, e->access.stage), e->access.idx,
                               e->access.nidx);
    for (int i = 0; i < r->g->nmembers; i++)
        if (e->access.tensor == r->g->members[i] && !r->g->stored[i])
            return ir_access_stage(r->cx, renamed(r->cx, row_member_stage(r->cx, r->g, i)),
                                   e->access.idx, e->access.nidx);
    return e;
}

/* s with its reads of the row-local members replaced. */
static const Stage *row_inline(const RowInline *r, const Stage *s)
{
    const IExpr **guards = arena_alloc(ir_arena(r->cx), (size_t)(s->nguards + 1) * sizeof *guards);
    for (int i = 0; i < s->nguards; i++)
        guards[i] = ir_map_access(r->cx, s->guards[i], row_access, (void *)r);
    return ir_stage_rebody(r->cx, s, guards, s->nguards,
                           ir_map_access(r->cx, s->body, row_access, (void *)r));
}

static const Stage *row_member_stage(IrCtx *cx, const PlanRowGroup *g, int k)
{
    RowInline r = {cx, g};
    return row_inline(&r, stored_plain(cx, &g->ops[k]));
}

const Stage *plan_stored_stage(IrCtx *cx, const PlanOp *op)
{
    if (op->rows)
        for (int k = 0; k < op->rows->nmembers; k++)
            if (op->rows->members[k] == op->out)
                return row_member_stage(cx, op->rows, k);
    return stored_plain(cx, op);
}

/* The bytes a row group reads from the tensors outside it (each once)
 * and writes (its stored members); or (g NULL) an operator reads from
 * the tensors of the program (not `self`, its epilogue's value). */
typedef struct RowBytes {
    const PlanRowGroup *g;
    const IrTensor **seen;
    int n, max;
    double bytes;
    const IrTensor *self;
} RowBytes;

static bool row_bytes_visit(void *arg, const IExpr *e)
{
    RowBytes *r = arg;
    if (e->kind != IE_ACCESS || !e->access.tensor || e->access.tensor == r->self)
        return true;
    const IrTensor *t = e->access.tensor;
    for (int i = 0; r->g && i < r->g->nmembers; i++)
        if (r->g->members[i] == t || r->g->ops[i].epi.self == t)
            return true;
    for (int i = 0; i < r->n; i++)
        if (r->seen[i] == t)
            return true;
    if (r->n < r->max)
        r->seen[r->n++] = t;
    r->bytes += (t->elem == ELEM_F32 ? 4.0 : 2.0) * (double)ir_tensor_numel(t);
    return true;
}

static double epilogue_cost(IrCtx *cx, const CostModel *cm, const PlanOp *op);

double plan_kernel_bytes(const PlanOp *op)
{
    const IrTensor *seen[64];
    RowBytes rb = {op->rows, seen, 0, 64, 0, op->epi.self};
    const PlanRowGroup *g = op->rows;
    double out = (op->out->elem == ELEM_F32 ? 4.0 : 2.0) * (double)ir_tensor_numel(op->out);
    if (!plan_runs(op))
        return 0;
    for (int i = 0; g && i < g->nmembers; i++) {
        const Stage *s = g->ops[i].stage;
        ir_expr_visit(s->body, row_bytes_visit, &rb);
        for (int k = 0; k < s->nguards; k++)
            ir_expr_visit(s->guards[k], row_bytes_visit, &rb);
        if (g->ops[i].epi.value)
            ir_expr_visit(g->ops[i].epi.value, row_bytes_visit, &rb);
        if (g->stored[i])
            rb.bytes += 4.0 * (double)ir_tensor_numel(g->members[i]);
    }
    if (g)
        return rb.bytes;
    if (op->impl == IMPL_KERNEL) {
        ir_expr_visit(op->stage->body, row_bytes_visit, &rb);
        for (int k = 0; k < op->stage->nguards; k++)
            ir_expr_visit(op->stage->guards[k], row_bytes_visit, &rb);
        if (op->epi.value)
            ir_expr_visit(op->epi.value, row_bytes_visit, &rb);
        return rb.bytes + out;
    }
    if (!plan_epilogue_pass(op))
        return 0;
    /* the pass after the library call: its output read and written */
    ir_expr_visit(op->epi.value, row_bytes_visit, &rb);
    return rb.bytes + 2 * out;
}

double plan_rows_cost(IrCtx *cx, const CostModel *cm, const PlanRowGroup *g)
{
    const Stage **s = xmalloc((size_t)g->nmembers * sizeof *s);
    const IrTensor *seen[64];
    RowBytes rb = {g, seen, 0, 64, 0, NULL};
    double epi = 0;
    for (int i = 0; i < g->nmembers; i++) {
        const PlanOp *op = &g->ops[i];
        s[i] = op->stage;
        ir_expr_visit(op->stage->body, row_bytes_visit, &rb);
        if (op->epi.value) {
            ir_expr_visit(op->epi.value, row_bytes_visit, &rb);
            epi += epilogue_cost(cx, cm, op);
        }
        if (g->stored[i])
            rb.bytes += 4.0 * (double)ir_tensor_numel(g->members[i]);
    }
    double rows = 1;
    for (int d = 0; d < g->nrow; d++)
        rows *= (double)g->members[0]->shape[d];
    double t = cost_rows(cm, s, g->nmembers, rb.bytes, rows, g->threads) + epi;
    free(s);
    return t;
}

/* The epilogue's own time.  After a library call it is a pass of its own
 * over the output: the kernel of plan_epilogue_stage.  Fused into the store
 * of a generated kernel, or applied by oneDNN's post-ops, it adds that
 * kernel's time less what a pass that only copies self costs (the launch
 * and the pass over the output, which the fused store does not make): its
 * arithmetic and its other reads. */
static double epilogue_cost(IrCtx *cx, const CostModel *cm, const PlanOp *op)
{
    const Stage *pass = plan_epilogue_stage(cx, op);
    double t = cost_stage(cm, pass, NULL);
    if (plan_epilogue_pass(op))
        return t;
    const Stage *s = op->stage;
    const Ix **idx = arena_alloc(ir_arena(cx), (size_t)(s->nloops + 1) * sizeof *idx);
    for (int d = 0; d < s->nloops; d++)
        idx[d] = ix_var(cx, s->loops[d].id);
    const IExpr *self = ir_access_tensor(cx, op->epi.self, idx, s->nloops);
    const Stage *copy = ir_stage(cx, RED_NONE, s->loops, s->nloops, NULL, 0, NULL, 0, self);
    return fmax(0, t - cost_stage(cm, copy, NULL));
}

/* A CUDA cuBLAS GEMM's epilogue in cuBLASLt: f32 operands and output,
 * non-negative strides and offsets, a batch of one level (its layouts
 * take no others). */
static bool lt_takes(const CostModel *cm, const PlanOp *op)
{
    const OpMatch *m = &op->op;
    return cm->target == TARGET_CUDA && op->impl == IMPL_CUBLAS_GEMM && op->epi.value &&
           op->out->elem == ELEM_F32 && m->in[0]->elem == ELEM_F32 &&
           m->in[1]->elem == ELEM_F32 && m->stride_a >= 0 && m->stride_b >= 0 &&
           m->stride_c >= 0 && m->off_a >= 0 && m->off_b >= 0 && m->split <= 1;
}

/* A GEMM whose epilogue may be its alpha: cuBLAS on CUDA, CBLAS on C
 * (runtime/cblas.c), f32 throughout. */
static bool scale_takes(const CostModel *cm, const PlanOp *op)
{
    const OpMatch *m = &op->op;
    bool blas = cm->target == TARGET_CUDA ? op->impl == IMPL_CUBLAS_GEMM
                                          : op->impl == IMPL_CBLAS_GEMM;
    return blas && op->epi.value && op->out->elem == ELEM_F32 &&
           m->in[0]->elem == ELEM_F32 && m->in[1]->elem == ELEM_F32;
}

void plan_price(IrCtx *cx, const CostModel *cm, PlanOp *op)
{
    op->measured = false;
    if (op->stored_by) {
        op->cost = 0;           /* the other operator's store does it */
        return;
    }
    if (!lt_takes(cm, op) ||
        !cost_lt_epilogue(cx, op->stage, op->epi.self, op->epi.value, &op->op, &op->lt)) {
        /* a scale alone is any BLAS call's alpha */
        LibLt lt;
        bool scale = scale_takes(cm, op) &&
                     cost_lt_epilogue(cx, op->stage, op->epi.self, op->epi.value, &op->op,
                                      &lt) && !lt.c && !lt.bias && lt.act == LT_ACT_NONE;
        memset(&op->lt, 0, sizeof op->lt);
        if (scale) {
            op->lt.scale = true;
            op->lt.alpha = lt.alpha;
        }
    }
    if (op->rows) {
        /* the group as one operator, priced once: at its last member */
        op->cost = plan_in_rows(op) ? 0 : plan_rows_cost(cx, cm, op->rows);
        return;
    }
    op->cost = cost_stage_impl(cm, op->stage, &op->op, op->impl, &op->measured);
    if (op->epi.value)
        op->cost += epilogue_cost(cx, cm, op);
    op->engine = -1;
    if (op->impl == IMPL_CUDNN_CONV && cm->db) {
        char *key = cost_op_key(NULL, op->stage, &op->op, cm->precision);
        op->engine = tune_db_engine(cm->db, key);
        free(key);
    }
}

/* plan_choose without the price. */
static PlanOp match_op(const CostModel *cm, const IrTensor *out, const Stage *s)
{
    PlanOp op;
    memset(&op, 0, sizeof op);
    op.out = out;
    op.stage = s;
    op.at_load = out->weight_only;
    op.buf.kind = BUF_OWN;
    op.engine = -1;
    if (!match_stage(s, &op.op))
        op.op.kind = OPK_KERNEL;
    op.impl = cost_impl(cm, out, s, &op.op);
    if (op.impl == IMPL_KERNEL) {
        memset(&op.op, 0, sizeof op.op);
        op.op.kind = OPK_KERNEL;
    }
    /* C = A B or C^T = B^T A^T, whichever the library runs faster (the
       first on a tie): the operands' order is only that of the IR */
    OpMatch alt;
    if ((op.op.kind == OPK_MATMUL || op.op.kind == OPK_BATCH_MATMUL) &&
        match_gemm_swapped(s, &alt) && cost_impl(cm, out, s, &alt) == op.impl) {
        bool measured;
        if (cost_stage_impl(cm, s, &alt, op.impl, &measured) <
            cost_stage_impl(cm, s, &op.op, op.impl, &measured))
            op.op = alt;
    }
    return op;
}

PlanOp plan_choose(IrCtx *cx, const CostModel *cm, const IrTensor *out, const Stage *s)
{
    PlanOp op = match_op(cm, out, s);
    plan_price(cx, cm, &op);
    return op;
}

/* ---- instantiation --------------------------------------------------------- */

/* Stages of any rank are instantiated: the arrays below are sized by the
 * stage at hand (in the IR arena), never by a constant, since a program
 * decides how many loops a stage has.  Refitting layouts is tried only up
 * to the iterators the operator patterns handle (MATCH_MAX_VARS): past
 * that no layout could match, and the stage runs as it is. */

typedef struct Made {
    const Stage *nested;        /* a nested stage already materialised */
    const IrTensor *t;          /* its tensor */
    int ndims;                  /* dims of t */
    int *perm;                  /* dim j of t is loop perm[j] of `nested` */
} Made;

typedef struct Flat {
    IrCtx *cx;
    const CostModel *cm;
    const IrTensor *result;
    int *next_id;
    Pieces *out;
    VEC(Made) made;
    int64_t *lo, *hi;           /* ranges of the variables in scope, by id */
    int nvars;
    bool swap;                  /* intermediate GEMMs store C^T (see plan_instantiate) */
    bool free_gemm;             /* an intermediate GEMM chose its output's layout */
} Flat;

static void bind(Flat *f, const IrVar *v, int n)
{
    for (int i = 0; i < n; i++) {
        if (v[i].id >= f->nvars) {
            int nn = v[i].id * 2 + 64;
            f->lo = xrealloc(f->lo, (size_t)nn * sizeof *f->lo);
            f->hi = xrealloc(f->hi, (size_t)nn * sizeof *f->hi);
            f->nvars = nn;
        }
        f->lo[v[i].id] = v[i].lo;
        f->hi[v[i].id] = v[i].hi;
    }
}

/* Whether x stays within [lo, hi) over the ranges in scope. */
static bool within(Flat *f, const Ix *x, int64_t lo, int64_t hi)
{
    for (int i = 0; i < x->n; i++)
        if (x->t[i].kind == IX_VAR && x->t[i].var >= f->nvars)
            return false;
    int64_t mn, mx;
    ix_bounds(x, f->lo, f->hi, &mn, &mx);
    return mn >= lo && mx < hi;
}

static const Stage *flatten_stage(Flat *f, const Stage *s);

/* A new intermediate tensor computed by `st`, whose loops start at 0. */
static const IrTensor *add_tensor(Flat *f, const Stage *st)
{
    Arena *a = ir_arena(f->cx);
    int64_t *shape = arena_alloc(a, (size_t)(st->nloops + 1) * sizeof *shape);
    for (int d = 0; d < st->nloops; d++)
        shape[d] = st->loops[d].hi;
    IrTensor *t = arena_alloc(a, sizeof *t);
    t->id = (*f->next_id)++;
    /* '@' never appears in a name of the source, so no clash with the
     * "call.local" names of inlined defs */
    t->name = arena_printf(a, "%s@%d", f->result->name, f->out->ops.len + 1);
    t->kind = IT_STAGE;
    t->elem = ELEM_F32;
    t->rank = st->nloops;
    t->shape = shape;
    t->loc = f->result->loc;
    t->stage = st;
    t->weight_only = ir_stage_weight_only(st);
    PlanOp op = plan_choose(f->cx, f->cm, t, st);
    vec_push(a, &f->out->ops, op);
    return t;
}

/* The operator `s` would be, computing `out`, or (out NULL) a new
 * intermediate, which is f32 with the extent of s's loops (starting at 0,
 * as add_tensor makes it); priced unless only its implementation counts. */
static PlanOp choose_op(Flat *f, const IrTensor *out, const Stage *s, bool price)
{
    IrTensor tmp;
    int64_t *shape = arena_alloc(ir_arena(f->cx), (size_t)(s->nloops + 1) * sizeof *shape);
    if (!out) {
        memset(&tmp, 0, sizeof tmp);
        tmp.kind = IT_STAGE;
        tmp.elem = ELEM_F32;
        tmp.rank = s->nloops;
        for (int d = 0; d < s->nloops; d++)
            shape[d] = s->loops[d].hi;
        tmp.shape = shape;
        tmp.weight_only = ir_stage_weight_only(s);
        out = &tmp;
    }
    PlanOp op = match_op(f->cm, out, s);
    if (price)
        plan_price(f->cx, f->cm, &op);
    op.out = NULL;              /* tmp is gone */
    return op;
}

static PlanOp choose(Flat *f, const IrTensor *out, const Stage *s)
{
    return choose_op(f, out, s, true);
}

/* Whether the target runs `s` (computing out, as choose) as a library call. */
static bool is_call(Flat *f, const IrTensor *out, const Stage *s)
{
    return choose_op(f, out, s, false).impl != IMPL_KERNEL;
}

/* `s` with its loops in the order perm (new position j holds old loop
 * perm[j]) and each shifted to start at 0. */
static const Stage *reorder_shift(Flat *f, const Stage *s, const int *perm, int n)
{
    Arena *a = ir_arena(f->cx);
    IrVar *loops = arena_alloc(a, (size_t)(n + 1) * sizeof *loops);
    const IExpr *body = s->body;
    const IExpr **g = arena_alloc(a, (size_t)(s->nguards + 1) * sizeof *g);
    if (s->nguards)
        memcpy(g, s->guards, (size_t)s->nguards * sizeof *g);
    for (int j = 0; j < n; j++) {
        const IrVar *v = &s->loops[perm[j]];
        loops[j] = v->lo == 0 ? *v : ir_var_new(f->cx, v->name, 0, v->hi - v->lo);
        if (v->lo == 0)
            continue;
        const Ix *by = ix_add(f->cx, ix_var(f->cx, loops[j].id), ix_const(f->cx, v->lo));
        body = ir_subst(f->cx, body, v->id, by);
        for (int k = 0; k < s->nguards; k++)
            g[k] = ir_subst(f->cx, g[k], v->id, by);
    }
    return ir_stage(f->cx, s->red, loops, n, s->sums, s->nsums, g, s->nguards, body);
}

/* ---- fitting layouts to a GEMM (guided layout transformation) -----------
 * A product of two tensor reads becomes a GEMM when each operand is laid
 * out [batch, rows, inner] and the output [batch, rows, cols].  An operand
 * that is not is relaid out into a new tensor (computed once at load when
 * it depends on weights only); an intermediate's own loops may be
 * reordered freely. */

enum { C_BATCH, C_M, C_N, C_K, C_NONE };

/* The relayout of operand `acc` to dims `vars` (in that order). */
static const IExpr *relayout(Flat *f, const Stage *s, const IExpr *acc, const int *vars, int n)
{
    Arena *a = ir_arena(f->cx);
    IrVar *loops = arena_alloc(a, (size_t)(n + 1) * sizeof *loops);
    for (int j = 0; j < n; j++) {
        for (int i = 0; i < s->nloops; i++)
            if (s->loops[i].id == vars[j])
                loops[j] = s->loops[i];
        for (int i = 0; i < s->nsums; i++)
            if (s->sums[i].id == vars[j])
                loops[j] = s->sums[i];
    }
    int *perm = arena_alloc(a, (size_t)(n + 1) * sizeof *perm);
    for (int j = 0; j < n; j++)
        perm[j] = j;
    const Stage *st = reorder_shift(f, ir_stage(f->cx, RED_NONE, loops, n, NULL, 0,
                                                NULL, 0, acc), perm, n);
    const IrTensor *t = add_tensor(f, st);
    const Ix **idx = arena_alloc(a, (size_t)(n + 1) * sizeof *idx);
    for (int j = 0; j < n; j++)
        idx[j] = ix_sub(f->cx, ix_var(f->cx, vars[j]), ix_const(f->cx, loops[j].lo));
    return ir_access_tensor(f->cx, t, idx, n);
}

/* Try to make `s` a GEMM the target's library takes; *perm receives the
 * loop order (identity unless free_output, else `s` computes the result
 * itself).  Returns the new stage, or NULL. */
static const Stage *fit_gemm(Flat *f, const Stage *s, bool free_output, int *perm)
{
    const IExpr *b = s->body;
    if (s->red != RED_SUM || s->nguards || b->kind != IE_MUL ||
        b->bin.a->kind != IE_ACCESS || b->bin.b->kind != IE_ACCESS ||
        !b->bin.a->access.tensor || !b->bin.b->access.tensor ||
        s->nloops + s->nsums > MATCH_MAX_VARS)
        return NULL;
    /* An intermediate's layout is free: rows of A or of B first, by
       f->swap (which operand is first is only the IR's order: kind, rank,
       tensor id) */
    bool swap = free_output && f->swap;
    const IExpr *A = swap ? b->bin.b : b->bin.a, *B = swap ? b->bin.a : b->bin.b;
    int cls[MATCH_MAX_VARS], nv = s->nloops + s->nsums;
    for (int i = 0; i < nv; i++) {
        bool loop = i < s->nloops;
        int v = loop ? s->loops[i].id : s->sums[i - s->nloops].id;
        bool ia = ir_expr_uses(A, v), ib = ir_expr_uses(B, v);
        cls[i] = loop ? (ia && ib ? C_BATCH : ia ? C_M : ib ? C_N : C_NONE)
                      : (ia && ib ? C_K : C_NONE);
        if (cls[i] == C_NONE)
            return NULL;
    }
    /* canonical orders: batch, M, N by loop position; K by sum position */
    int order_a[MATCH_MAX_VARS], order_b[MATCH_MAX_VARS], na = 0, nb = 0, no = 0;
    static const int ga[] = {C_BATCH, C_M, C_K}, gb[] = {C_BATCH, C_K, C_N},
                     go[] = {C_BATCH, C_M, C_N};
    for (int g = 0; g < 3; g++)
        for (int i = 0; i < nv; i++) {
            int v = i < s->nloops ? s->loops[i].id : s->sums[i - s->nloops].id;
            if (cls[i] == ga[g]) order_a[na++] = v;
            if (cls[i] == gb[g]) order_b[nb++] = v;
            if (cls[i] == go[g] && i < s->nloops) perm[no++] = i;
        }
    if (!free_output)
        for (int i = 0; i < s->nloops; i++)
            perm[i] = i;
    /* Relay out what does not fit: try neither operand, B, A, both, and
     * keep the cheapest that matches (a relayout of weights is free: it
     * runs at load). */
    int best = -1;
    double best_cost = 0;
    for (int pass = 0; pass < 5; pass++) {
        int try = pass < 4 ? pass : best;
        if (pass == 4 && best < 0)
            break;
        const IExpr *ea = A, *eb = B;
        int before = f->out->ops.len;
        if (try & 1)
            eb = relayout(f, s, B, order_b, nb);
        if (try & 2)
            ea = relayout(f, s, A, order_a, na);
        const Stage *t = ir_stage_rebody(f->cx, s, NULL, 0, ir_binary(f->cx, IE_MUL, ea, eb));
        const Stage *r = reorder_shift(f, t, perm, s->nloops);
        if (pass == 4) {
            f->free_gemm |= free_output;
            return t;
        }
        const IrTensor *out = free_output ? NULL : f->result;
        const Stage *op_stage = free_output ? r : t;
        if (is_call(f, out, op_stage)) {
            double c = choose(f, out, op_stage).cost;
            for (int i = before; i < f->out->ops.len; i++)
                if (!f->out->ops.data[i].out->weight_only)
                    c += f->out->ops.data[i].cost;
            if (best < 0 || c < best_cost) {
                best = try;
                best_cost = c;
            }
        }
        f->out->ops.len = before;
    }
    return NULL;
}

/* ---- fitting layouts to a convolution ----------------------------------
 * x[n, c, h + r.., w + s..] * k[..] becomes a convolution when the filter
 * is relaid out [f.., c, r, s] (free: it depends on weights only, so it
 * runs at load) and the loops are ordered n, f.., h, w. */

/* The loop (coefficient > 0) and sum variable of a spatial index. */
static bool spatial_vars(const Stage *s, const Ix *x, int *h, int *r)
{
    *h = *r = -1;
    for (int i = 0; i < x->n; i++) {
        const IxTerm *t = &x->t[i];
        if (t->kind != IX_VAR || t->coef <= 0)
            return false;
        bool loop = false, sum = false;
        for (int j = 0; j < s->nloops; j++)
            loop |= s->loops[j].id == t->var;
        for (int j = 0; j < s->nsums; j++)
            sum |= s->sums[j].id == t->var;
        if (loop && *h < 0)
            *h = t->var;
        else if (sum && *r < 0)
            *r = t->var;
        else
            return false;
    }
    return *h >= 0 && *r >= 0;
}

/* Whether `s` under the loop order perm is a library call of the target:
 * an intermediate reordered and shifted (as materialise makes it), or the
 * result as it is (perm is the identity then). */
static bool fitted_call(Flat *f, const Stage *s, bool free_output, const int *perm)
{
    return free_output ? is_call(f, NULL, reorder_shift(f, s, perm, s->nloops))
                       : is_call(f, f->result, s);
}

static const Stage *fit_conv(Flat *f, const Stage *s, bool free_output, int *perm)
{
    const IExpr *b = s->body;
    if (s->red != RED_SUM || s->nguards || b->kind != IE_MUL || s->nsums != 3 ||
        b->bin.a->kind != IE_ACCESS || b->bin.b->kind != IE_ACCESS ||
        !b->bin.a->access.tensor || !b->bin.b->access.tensor ||
        s->nloops + s->nsums > MATCH_MAX_VARS)
        return NULL;
    for (int order = 0; order < 2; order++) {
        const IExpr *X = order ? b->bin.b : b->bin.a, *W = order ? b->bin.a : b->bin.b;
        if (X->access.nidx != 4)
            continue;
        const Ix *const *xi = X->access.idx;
        int n, c, h, w, r, sv;
        if (xi[0]->n != 1 || xi[1]->n != 1 || xi[0]->t[0].kind != IX_VAR ||
            xi[1]->t[0].kind != IX_VAR || xi[0]->t[0].coef != 1 || xi[1]->t[0].coef != 1 ||
            !spatial_vars(s, xi[2], &h, &r) || !spatial_vars(s, xi[3], &w, &sv))
            continue;
        n = xi[0]->t[0].var;
        c = xi[1]->t[0].var;
        int pn = ir_loop_pos(s, n), ph = ir_loop_pos(s, h), pw = ir_loop_pos(s, w);
        if (pn < 0 || ir_loop_pos(s, c) >= 0 || ir_expr_uses(W, n) || ir_expr_uses(W, h) ||
            ir_expr_uses(W, w) || !ir_expr_uses(W, c) || !ir_expr_uses(W, r) || !ir_expr_uses(W, sv))
            continue;
        /* the output channels: every other loop, read by the filter only */
        int order_w[MATCH_MAX_VARS], nw = 0, np = 0;
        bool ok = true;
        perm[np++] = pn;
        for (int i = 0; i < s->nloops && ok; i++) {
            int v = s->loops[i].id;
            if (i == pn || i == ph || i == pw)
                continue;
            ok = ir_expr_uses(W, v) && !ir_expr_uses(X, v);
            perm[np++] = i;
            order_w[nw++] = v;
        }
        if (!ok || nw == 0)
            continue;
        perm[np++] = ph;
        perm[np++] = pw;
        if (!free_output)
            for (int i = 0; i < s->nloops; i++)
                ok &= perm[i] == i;
        if (!ok)
            continue;
        order_w[nw++] = c;
        order_w[nw++] = r;
        order_w[nw++] = sv;
        if (fitted_call(f, s, free_output, perm))
            return s;
        const IExpr *w2 = relayout(f, s, W, order_w, nw);
        const Stage *t = ir_stage_rebody(f->cx, s, NULL, 0, ir_binary(f->cx, IE_MUL, X, w2));
        if (fitted_call(f, t, free_output, perm))
            return t;
    }
    return NULL;
}

/* A stage as computed: the cheapest of running it as it is and of the
 * layouts that make it a convolution or a GEMM. */
typedef const Stage *(*FitFn)(Flat *f, const Stage *s, bool free_output, int *perm);
static const FitFn fits[] = {fit_conv, fit_gemm};

static const Stage *instantiate_stage(Flat *f, const Stage *s, bool free_output, int *perm)
{
    for (int i = 0; i < s->nloops; i++)
        perm[i] = i;
    if (s->nloops + s->nsums > MATCH_MAX_VARS)
        return s;
    PlanOp as_is = free_output ? choose(f, NULL, reorder_shift(f, s, perm, s->nloops))
                               : choose(f, f->result, s);
    if (as_is.impl != IMPL_KERNEL)
        return s;
    int best = -1, p2[MATCH_MAX_VARS];
    double best_cost = as_is.cost;
    for (int i = 0; i < (int)(sizeof fits / sizeof *fits); i++) {
        int before = f->out->ops.len;
        const Stage *g = fits[i](f, s, free_output, p2);
        if (g) {
            double c = 0;
            for (int j = before; j < f->out->ops.len; j++)
                if (!f->out->ops.data[j].out->weight_only)
                    c += f->out->ops.data[j].cost;
            c += free_output ? choose(f, NULL, reorder_shift(f, g, p2, s->nloops)).cost
                             : choose(f, f->result, g).cost;
            if (c < best_cost) {
                best = i;
                best_cost = c;
            }
        }
        f->out->ops.len = before;
    }
    return best < 0 ? s : fits[best](f, s, free_output, perm);
}

/* Next permutation of p[0..n) in lexicographic order; false after the last. */
static bool next_perm(int *p, int n)
{
    int i = n - 2;
    while (i >= 0 && p[i] >= p[i + 1])
        i--;
    if (i < 0)
        return false;
    int j = n - 1;
    while (p[j] <= p[i])
        j--;
    int t = p[i]; p[i] = p[j]; p[j] = t;
    for (int a = i + 1, b = n - 1; a < b; a++, b--) {
        t = p[a]; p[a] = p[b]; p[b] = t;
    }
    return true;
}

/* An order of the loops of an intermediate product stage under which it
 * is a library call of the target as it is (guided layout transformation
 * of the output); false when none does. */
static bool fit_loop_order(Flat *f, const Stage *s, int *perm)
{
    const IExpr *b = s->body;
    if (s->red != RED_SUM || b->kind != IE_MUL || s->nloops > 4 ||
        b->bin.a->kind != IE_ACCESS || b->bin.b->kind != IE_ACCESS)
        return false;
    int p[4];
    for (int i = 0; i < s->nloops; i++)
        p[i] = i;
    while (next_perm(p, s->nloops)) {
        if (is_call(f, NULL, reorder_shift(f, s, p, s->nloops))) {
            memcpy(perm, p, (size_t)s->nloops * sizeof *p);
            return true;
        }
    }
    return false;
}

/* The tensor that holds nested stage `s`, read at `idx`: loops it does not
 * depend on dropped (where idx provably stays in their range), the rest
 * reordered as its operator wants and shifted to start at 0. */
static const Made *materialise(Flat *f, const Stage *s, const Ix *const *idx)
{
    for (int i = 0; i < f->made.len; i++) {
        const Made *m = &f->made.data[i];
        if (!ir_stage_equal(m->nested, s))
            continue;
        bool ok = true;         /* the dropped loops are in range here too */
        for (int d = 0; d < s->nloops; d++)
            if (!ir_stage_uses(s, s->loops[d].id))
                ok &= within(f, idx[d], s->loops[d].lo, s->loops[d].hi);
        if (ok)
            return m;
    }
    Arena *a = ir_arena(f->cx);
    Made m = {s, NULL, 0, NULL};
    const Stage *flat = flatten_stage(f, s);
    int *keep = arena_alloc(a, (size_t)(flat->nloops + 1) * sizeof *keep), nkeep = 0;
    for (int d = 0; d < flat->nloops; d++)
        if (ir_stage_uses(flat, flat->loops[d].id) ||
            !within(f, idx[d], flat->loops[d].lo, flat->loops[d].hi))
            keep[nkeep++] = d;
    if (nkeep < flat->nloops) {
        IrVar *loops = arena_alloc(a, (size_t)(nkeep + 1) * sizeof *loops);
        for (int j = 0; j < nkeep; j++)
            loops[j] = flat->loops[keep[j]];
        flat = ir_stage(f->cx, flat->red, loops, nkeep, flat->sums, flat->nsums,
                        flat->guards, flat->nguards, flat->body);
    }
    int *perm = arena_alloc(a, (size_t)(nkeep + 1) * sizeof *perm);
    m.perm = arena_alloc(a, (size_t)(nkeep + 1) * sizeof *m.perm);
    for (int d = 0; d < flat->nloops; d++)
        perm[d] = d;
    if (!is_call(f, NULL, reorder_shift(f, flat, perm, flat->nloops)) &&
        fit_loop_order(f, flat, perm))
        ;
    else
        flat = instantiate_stage(f, flat, true, perm);
    m.ndims = nkeep;
    for (int j = 0; j < nkeep; j++)
        m.perm[j] = keep[perm[j]];
    m.t = add_tensor(f, reorder_shift(f, flat, perm, flat->nloops));
    vec_push(ir_arena(f->cx), &f->made, m);
    return &f->made.data[f->made.len - 1];
}

/* A read of a nested stage becomes a read of its tensor. */
static const IExpr *flatten_access(void *arg, const IExpr *e)
{
    Flat *f = arg;
    IrCtx *cx = f->cx;
    if (!e->access.stage)
        return e;
    const Stage *s = e->access.stage;
    const Made *m = materialise(f, s, e->access.idx);
    const Ix **idx = arena_alloc(ir_arena(cx), (size_t)(m->ndims + 1) * sizeof *idx);
    for (int j = 0; j < m->ndims; j++)
        idx[j] = ix_sub(cx, e->access.idx[m->perm[j]], ix_const(cx, s->loops[m->perm[j]].lo));
    return ir_access_tensor(cx, m->t, idx, m->ndims);
}

static const IExpr *flatten_expr(Flat *f, const IExpr *e)
{
    return ir_map_access(f->cx, e, flatten_access, f);
}

static const Stage *flatten_stage(Flat *f, const Stage *s)
{
    bind(f, s->loops, s->nloops);
    bind(f, s->sums, s->nsums);
    const IExpr **g = arena_alloc(ir_arena(f->cx), (size_t)(s->nguards + 1) * sizeof *g);
    for (int i = 0; i < s->nguards; i++)
        g[i] = flatten_expr(f, s->guards[i]);
    const IExpr *body = flatten_expr(f, s->body);
    return ir_stage_rebody(f->cx, s, g, s->nguards, body);
}

static bool instantiate(IrCtx *cx, const CostModel *cm, const IrTensor *result,
                        const Stage *s, int *next_id, Pieces *out, bool swap)
{
    Flat f = {cx, cm, result, next_id, out, {0}, NULL, NULL, 0, swap, false};
    const Stage *flat = flatten_stage(&f, s);
    int *perm = arena_alloc(ir_arena(cx), (size_t)(flat->nloops + 1) * sizeof *perm);
    flat = instantiate_stage(&f, flat, false, perm);
    PlanOp op = plan_choose(cx, cm, result, flat);
    vec_push(ir_arena(cx), &out->ops, op);
    free(f.lo);
    free(f.hi);
    out->cost = 0;
    for (int i = 0; i < out->ops.len; i++)
        out->cost += !out->ops.data[i].out->weight_only ? out->ops.data[i].cost : 0;
    return f.free_gemm;
}

/* An intermediate GEMM may store its product in either order, C or C^T
 * (rows of A first, or of B): the pieces that read it decide which is
 * cheaper, so where one chose, the pieces are made both ways and the
 * cheaper kept (the first on a tie), whatever order the product's
 * operands come in. */
void plan_instantiate(IrCtx *cx, const CostModel *cm, const IrTensor *result,
                      const Stage *s, int *next_id, Pieces *out)
{
    if (out->ops.len)
        ICE("plan_instantiate: pieces given are not empty");
    Pieces first = *out;
    if (!instantiate(cx, cm, result, s, next_id, &first, false)) {
        *out = first;
        return;
    }
    Pieces other = *out;
    instantiate(cx, cm, result, s, next_id, &other, true);
    *out = other.cost < first.cost ? other : first;
}

/* ---- whole plans ------------------------------------------------------------ */

double plan_total(const Plan *pl)
{
    double c = 0;
    for (int i = 0; i < pl->prog->ntensors; i++) {
        const IrTensor *t = pl->prog->tensors[i];
        if (t->kind == IT_STAGE && !pl->ops[t->id].at_load)
            c += pl->ops[t->id].cost;
    }
    return c;
}

Plan *plan_program(IrCtx *cx, const CostModel *cm, IrProgram *p)
{
    Arena *a = ir_arena(cx);
    Plan *pl = arena_alloc(a, sizeof *pl);
    pl->prog = p;
    pl->target = cm->target;
    pl->precision = cm->precision;
    pl->ops = arena_alloc(a, (size_t)(p->ntensors + 1) * sizeof *pl->ops);
    for (int i = 0; i < p->ntensors; i++) {
        const IrTensor *t = p->tensors[i];
        if (t->kind == IT_STAGE)
            pl->ops[t->id] = plan_choose(cx, cm, t, t->stage);
    }
    pl->cost = plan_total(pl);
    return pl;
}

/* ---- views ------------------------------------------------------------------- */

static void print_shape(const IrTensor *t, FILE *fp)
{
    fputc('[', fp);
    for (int d = 0; d < t->rank; d++)
        fprintf(fp, "%s%lld", d ? ", " : "", (long long)t->shape[d]);
    fputc(']', fp);
}

static void print_names(const char *tag, const IrTensor *const *t, int n, FILE *fp)
{
    if (n == 0)
        return;
    fprintf(fp, "  %s=", tag);
    for (int i = 0; i < n; i++)
        fprintf(fp, "%s%s", i ? "," : "", t[i]->name);
}

/* "  into=att (ld=512 stride=5120000 split=8 sstride=64)": where a view's
 * elements land (plan.h, PlanBuf; "transposed" where the rows are one
 * apart) */
static void print_view(const PlanOp *o, FILE *fp)
{
    const BandView *v = &o->buf.view;
    fprintf(fp, "  into=%s (ld=%" PRId64 " stride=%" PRId64, o->buf.of->name, v->ld, v->stride);
    if (v->split > 1)
        fprintf(fp, " split=%" PRId64 " sstride=%" PRId64, v->split, v->sstride);
    fputs(o->buf.trans ? " transposed)" : ")", fp);
}

static void print_op(const PlanOp *o, FILE *fp)
{
    const OpMatch *m = &o->op;
    fprintf(fp, "%-16s %s ", op_kind_name(m->kind), o->out->name);
    print_shape(o->out, fp);
    if (m->kind != OPK_KERNEL)
        fprintf(fp, " = %s %s %s ", m->in[0]->name,
                m->kind == OPK_CONV2D || m->kind == OPK_CONV_TRANSPOSE2D ? "*" : "x",
                m->in[1]->name);
    OpDim d[OP_MAX_DIMS];
    int nd = match_dims(m, d);
    for (int i = 0; i < nd; i++)
        fprintf(fp, " %s=%lld", d[i].name, (long long)d[i].value);
    if (o->impl != IMPL_KERNEL)
        fprintf(fp, "  %s", cost_impl_name(o->impl));
    print_names("fused", o->prologue, o->nprologue, fp);
    if (o->epi.value)
        print_names("epilogue", o->epi.absorbed, o->epi.nabsorbed, fp);
    LibPost post[LIB_POST_MAX];
    int npost = plan_post_ops(o, post);
    if (npost)
        fprintf(fp, " (%d post-op%s)", npost, npost > 1 ? "s" : "");
    char lt[128], pw[256];
    if (o->lt.fused)
        fprintf(fp, " (cublasLt: %s)", plan_lt_name(o, lt, sizeof lt));
    if (o->lt.scale)
        fprintf(fp, " (alpha %g)", o->lt.alpha);
    if (plan_dnn_fused(o))
        fprintf(fp, " (cudnn graph: %s)", plan_pw_name(o, pw, sizeof pw));
    if (o->buf.kind == BUF_VIEW)
        print_view(o, fp);
    if (o->stored_by)
        fprintf(fp, "  stored by %s", o->stored_by->name);
    if (o->src_from)
        fprintf(fp, "  src from %s in oneDNN's layout", o->src_from->name);
    if (plan_in_rows(o))
        fprintf(fp, "  in the rows of %s", o->rows->members[o->rows->nmembers - 1]->name);
    else if (o->rows)
        print_names("rows", o->rows->members, o->rows->nmembers, fp);
    if (o->rows && !plan_in_rows(o) && o->rows->threads > 1)
        fprintf(fp, " (%d threads a row)", o->rows->threads);
    if (o->engine >= 0)
        fprintf(fp, "  engine=%" PRId64, o->engine);
    fprintf(fp, "  %.2f us%s%s\n", o->cost * 1e6, o->measured ? " (measured)" : "",
            o->at_load ? " (at load)" : "");
}

void plan_print(const Plan *pl, FILE *fp)
{
    fprintf(fp, "plan %s for %s: estimated %.2f us\n", pl->prog->model,
            cost_target_name(pl->target), pl->cost * 1e6);
    for (int i = 0; i < pl->prog->ntensors; i++) {
        const IrTensor *t = pl->prog->tensors[i];
        if (t->kind == IT_STAGE)
            print_op(&pl->ops[t->id], fp);
    }
    if (pl->at)
        fprintf(fp, "memory: %d intermediate%s share%s an arena of %.2f MiB (%.2f MiB in "
                "buffers of their own)\n", pl->nshared, pl->nshared == 1 ? "" : "s",
                pl->nshared == 1 ? "s" : "", (double)pl->arena / 1048576,
                (double)pl->apart / 1048576);
    else
        fputs("memory: every tensor in a buffer of its own\n", fp);
}

/* A JSON string of `s`, quotes included (RFC 8259: quotes, backslashes
 * and control characters escaped). */
void plan_json_string(const char *s, FILE *fp)
{
    fputc('"', fp);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(fp, "\\%c", c);
        else if (c < 32)
            fprintf(fp, "\\u%04x", c);
        else
            fputc(c, fp);
    }
    fputc('"', fp);
}

static void json_names(const char *tag, const IrTensor *const *t, int n, FILE *fp)
{
    fprintf(fp, ", \"%s\": [", tag);
    for (int i = 0; i < n; i++) {
        fputs(i ? ", " : "", fp);
        plan_json_string(t[i]->name, fp);
    }
    fputc(']', fp);
}

void plan_print_json_op(const PlanOp *o, Precision prec, FILE *fp)
{
    const OpMatch *m = &o->op;
    fprintf(fp, "{\"kind\": \"%s\", \"impl\": \"%s\", \"tensor\": ", op_kind_name(m->kind),
            cost_impl_name(o->impl));
    plan_json_string(o->out->name, fp);
    fprintf(fp, ", \"cost_us\": %.3f, \"at_load\": %s", o->cost * 1e6,
            o->at_load ? "true" : "false");
    if (o->measured)
        fputs(", \"measured\": true", fp);
    /* what a tuning database (--tune-db) holds the operator's time under */
    char *key = cost_op_key(NULL, o->stage, o->impl == IMPL_KERNEL ? NULL : m, prec);
    fputs(", \"key\": ", fp);
    plan_json_string(key, fp);
    free(key);
    if (o->nprologue)
        json_names("fused", o->prologue, o->nprologue, fp);
    if (o->epi.value)
        json_names("epilogue", o->epi.absorbed, o->epi.nabsorbed, fp);
    LibPost post[LIB_POST_MAX];
    int npost = plan_post_ops(o, post);
    if (npost)
        fprintf(fp, ", \"post_ops\": %d", npost);
    char lt[128], pw[256];
    if (o->lt.fused) {
        fputs(", \"cublaslt\": ", fp);
        plan_json_string(plan_lt_name(o, lt, sizeof lt), fp);
    }
    if (o->lt.scale)
        fprintf(fp, ", \"alpha\": %.17g", o->lt.alpha);
    if (plan_dnn_fused(o)) {
        fputs(", \"cudnn_pointwise\": ", fp);
        plan_json_string(plan_pw_name(o, pw, sizeof pw), fp);
    }
    if (o->buf.kind == BUF_VIEW) {
        const BandView *v = &o->buf.view;
        fputs(", \"view_of\": ", fp);
        plan_json_string(o->buf.of->name, fp);
        fprintf(fp, ", \"view\": {\"ld\": %" PRId64 ", \"stride\": %" PRId64
                ", \"split\": %" PRId64 ", \"sstride\": %" PRId64 ", \"transposed\": %s}",
                v->ld, v->stride, v->split, v->sstride, o->buf.trans ? "true" : "false");
    }
    if (o->stored_by) {
        fputs(", \"stored_by\": ", fp);
        plan_json_string(o->stored_by->name, fp);
    }
    if (o->rows)
        json_names("rows", o->rows->members, o->rows->nmembers, fp);
    if (o->rows && o->rows->threads > 1)
        fprintf(fp, ", \"row_threads\": %d", o->rows->threads);
    /* what runs each time: its launches (a library call's pass counts
     * one more, and so does the kernel that writes the pointers of a
     * cuBLAS product of a two-level batch) and the bytes its generated
     * code moves */
    fprintf(fp, ", \"launches\": %d, \"kernel_bytes\": %.0f",
            !plan_runs(o) ? 0 : 1 + (o->impl != IMPL_KERNEL && plan_epilogue_pass(o)) +
                                    plan_gemm_ptrs(o),
            plan_kernel_bytes(o));
    if (o->engine >= 0)
        fprintf(fp, ", \"engine\": %" PRId64, o->engine);
    OpDim d[OP_MAX_DIMS];
    int nd = match_dims(m, d);
    for (int i = 0; i < nd; i++) {
        if (d[i].is_bool)
            fprintf(fp, ", \"%s\": %s", d[i].name, d[i].value ? "true" : "false");
        else
            fprintf(fp, ", \"%s\": %lld", d[i].name, (long long)d[i].value);
    }
    fputc('}', fp);
}
