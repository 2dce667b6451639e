/* handoff.c - convolutions that hand their output to the next one in
 * oneDNN's own layout.  A oneDNN convolution runs in a blocked layout of
 * its choosing (format `any`): runtime/dnnl.c reorders its input from
 * einc's NCHW buffer into that layout and its output back.  Where a
 * convolution's output x is read by nothing but the next convolution y,
 * as y's input (UNet's and CSRNet's conv, conv chains, a ResNet block's
 * first convolution into its second), x's buffer is never needed in NCHW:
 * y takes x in the layout x's primitive wrote, and both reorders go.
 * x's epilogue must be post-ops, if any: a pass after the call would read
 * x's buffer in einc's layout.
 * The runtime links the two only where the primitives want the same
 * layout (it compares their memory descriptors), no bigger than x's
 * buffer, and x's has no sum post-op; elsewhere the reorders stay.  x's
 * buffer then holds x in that layout, which model_get_tensor reorders
 * into einc's when it reads x (runtime/dnnl.c, ein_dnnl_fetch), where x
 * has a buffer of its own (--keep-intermediates; in the arena of
 * storage.c it holds no value after a run).
 *
 * The operator of y records x (PlanOp.src_from); the cost model's prices
 * of the two reorders come off x's and y's operators.  f32 only: at a
 * reduced precision the input is a rounded copy.  Runs last, on the
 * plan's program (derive.c). */
#include "config.h"
#include "derive.h"

#include <stdlib.h>

/* Does op have a full-size binary post-op (dst's shape): a residual add,
 * which the runtime runs as a sum into dst? */
static bool full_binary_post(const PlanOp *op)
{
    LibPost post[LIB_POST_MAX];
    int n = plan_post_ops(op, post);
    for (int i = 0; i < n; i++) {
        if (!post[i].binary || post[i].rank != op->out->rank)
            continue;
        bool full = true;
        for (int d = 0; d < post[i].rank; d++)
            full &= post[i].dims[d] == op->out->shape[d];
        if (full)
            return true;
    }
    return false;
}

/* Does y's operator read x other than as its input: as its weights, or
 * in its epilogue (post-ops, or a pass after the call that would read x's
 * buffer in einc's layout)?  plan_readers counts an operator once. */
static bool reads_else(const PlanOp *yop, const IrTensor *x)
{
    return yop->op.in[1] == x || (yop->epi.value && ir_expr_reads(yop->epi.value, x));
}

static bool dnnl_conv(const PlanOp *op)
{
    return op->impl == IMPL_DNNL_CONV && plan_runs(op) && !op->at_load && !op->rows &&
           op->buf.kind == BUF_OWN;
}

int derive_handoffs(Plan *pl, const CostModel *cm)
{
    IrProgram *p = pl->prog;
    if (pl->precision != PREC_FP32)
        return 0;
    int *readers = plan_readers(pl);
    int made = 0;
    for (int i = 0; i < p->ntensors; i++) {
        const IrTensor *y = p->tensors[i];
        PlanOp *yop = &pl->ops[i];
        if (y->kind != IT_STAGE || !dnnl_conv(yop))
            continue;
        const IrTensor *x = yop->op.in[0];
        if (x->kind != IT_STAGE || x->is_output || x->elem != ELEM_F32 || readers[x->id] != 1 ||
            x->rank != 4 || reads_else(yop, x))
            continue;
        PlanOp *xop = &pl->ops[x->id];
        const OpMatch *a = &xop->op, *b = &yop->op;
        /* x is the whole of y's input as its buffer holds it: one shape */
        if (!dnnl_conv(xop) || full_binary_post(xop) || plan_epilogue_pass(xop) ||
            a->cn != b->cn || a->f != b->c ||
            x->shape[0] != b->cn || x->shape[1] != b->c || x->shape[2] != b->h ||
            x->shape[3] != b->w)
            continue;
        yop->src_from = x;
        double bytes = 4.0 * (double)ir_tensor_numel(x);
        xop->cost -= cost_dnnl_reorder(cm, a, bytes, false);
        yop->cost -= cost_dnnl_reorder(cm, b, bytes, true);
        made++;
    }
    free(readers);
    if (made)
        pl->cost = plan_total(pl);
    return made;
}
