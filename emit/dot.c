/* dot.c - emit_dot: the plan's program graph as Graphviz.  Tensors are
 * nodes with their kind and shape (inputs green, weights orange, outputs
 * with a double border); each operator of the plan is a box naming what
 * computes it as the C or CUDA file of the plan's target names it (its
 * generated kernel, or its ein_op_N function and library call), what it
 * fused in, its .ein location and its statement; edges run from the
 * tensors an operator reads to it and from it to the tensor it writes.
 * `dot -Tsvg` draws it. */
#include "config.h"
#include "emit_int.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* A DOT string's contents: quotes and backslashes escaped, line breaks
 * as \l (left-justified lines), at most `max` characters per line. */
static void dot_text(Sb *b, const char *s, size_t n, const char *nl)
{
    for (size_t i = 0; i < n && s[i]; i++) {
        char c = s[i];
        if (c == '"' || c == '\\')
            sb_putc(b, '\\'), sb_putc(b, c);
        else if (c == '\n')
            sb_puts(b, nl);
        else if ((unsigned char)c < 32 || c == 127)
            sb_putc(b, ' ');
        else
            sb_putc(b, c);
    }
}

static void shape_label(Sb *b, const IrTensor *t)
{
    sb_printf(b, "%s[", elem_name(t->elem));
    for (int d = 0; d < t->rank; d++)
        sb_printf(b, "%s%" PRId64, d ? ", " : "", t->shape[d]);
    sb_putc(b, ']');
}

/* What the stage's statement says: the .ein text, else the IR. */
static void stage_label(Emit *em, const IrTensor *t, Sb *b)
{
    const SrcFile *f = t->loc.file >= 0 && t->loc.file < src_count()
                           ? src_get(t->loc.file) : NULL;
    if (f && t->loc.end > t->loc.begin && (size_t)t->loc.end <= f->len) {
        int line, col;
        src_line_col(t->loc, &line, &col);
        const char *s = f->text + t->loc.begin;
        size_t n = (size_t)(t->loc.end - t->loc.begin);
        dot_text(b, f->path, strlen(f->path), "\\n");
        sb_printf(b, ":%d:%d\\l", line, col);
        /* Collapse runs of blanks (continuation lines) to one space. */
        Sb flat = {0};
        bool blank = false;
        for (size_t i = 0; i < n; i++) {
            bool sp = s[i] == ' ' || s[i] == '\n' || s[i] == '\t' || s[i] == '\r';
            if (sp && !blank)
                sb_putc(&flat, ' ');
            else if (!sp)
                sb_putc(&flat, s[i]);
            blank = sp;
        }
        /* Long statements wrap at about 60 characters, at a blank. */
        const char *p = sb_str(&flat);
        while (*p) {
            size_t len = strlen(p);
            size_t cut = len;
            if (len > 60) {
                cut = 60;
                while (cut > 20 && p[cut] != ' ')
                    cut--;
                if (p[cut] != ' ')
                    cut = 60;
            }
            dot_text(b, p, cut, "\\l");
            sb_puts(b, "\\l");
            p += cut;
            while (*p == ' ')
                p++;
        }
        sb_free(&flat);
    } else {
        const char *ir = emit_ir_text(em->arena, em->p->cx, emit_op(em, t)->stage, NULL);
        dot_text(b, ir, strlen(ir), "\\l");
        sb_puts(b, "\\l");
    }
}

static bool reads_tensor(const IExpr *e, const IrTensor *t);

static bool stage_reads(const Stage *st, const IrTensor *t)
{
    if (reads_tensor(st->body, t))
        return true;
    for (int i = 0; i < st->nguards; i++)
        if (reads_tensor(st->guards[i], t))
            return true;
    return false;
}

static bool ix_reads_tensor(const Ix *x, const IrTensor *t)
{
    const IExpr *g[16];
    int n = ix_gathers(x, g, 16);
    for (int i = 0; i < n && i < 16; i++)
        if (reads_tensor(g[i], t))
            return true;
    return false;
}

static bool reads_tensor(const IExpr *e, const IrTensor *t)
{
    switch (e->kind) {
    case IE_CONST:
        return false;
    case IE_INDEX:
        return ix_reads_tensor(e->ix, t);
    case IE_ICMP:
        return ix_reads_tensor(e->icmp.ix, t);
    case IE_ACCESS:
        for (int k = 0; k < e->access.nidx; k++)
            if (ix_reads_tensor(e->access.idx[k], t))
                return true;
        if (e->access.tensor)
            return e->access.tensor == t;
        return stage_reads(e->access.stage, t);
    case IE_CALL:
        for (int i = 0; i < e->call.nargs; i++)
            if (reads_tensor(e->call.args[i], t))
                return true;
        return false;
    case IE_NEG: case IE_NOT:
        return reads_tensor(e->bin.a, t);
    default:
        return reads_tensor(e->bin.a, t) || reads_tensor(e->bin.b, t);
    }
}

/* Does the operator read tensor t: its stage, or its epilogue; a row
 * group's, any of its members' (but a member). */
static bool op_reads(const PlanOp *op, const IrTensor *t)
{
    if (op->rows) {
        for (int i = 0; i < op->rows->nmembers; i++)
            if (op->rows->members[i] == t)
                return false;
        for (int i = 0; i < op->rows->nmembers; i++) {
            const PlanOp *m = &op->rows->ops[i];
            if (stage_reads(m->stage, t) || (m->epi.value && reads_tensor(m->epi.value, t)))
                return true;
        }
        return false;
    }
    return stage_reads(op->stage, t) || (op->epi.value && reads_tensor(op->epi.value, t));
}

static void names_line(Sb *b, const char *what, const IrTensor *const *t, int n)
{
    if (n == 0)
        return;
    sb_printf(b, "%s ", what);
    for (int i = 0; i < n; i++) {
        sb_puts(b, i ? ", " : "");
        dot_text(b, t[i]->name, strlen(t[i]->name), " ");
    }
    sb_puts(b, "\\l");
}

/* The box of t's operator: what computes it, then what it took in. */
static void op_label(Emit *em, const IrTensor *t, Sb *o)
{
    const PlanOp *op = emit_op(em, t);
    bool call = op->impl != IMPL_KERNEL;
    const char *name = em->kname[t->id] ? em->kname[t->id]
                                        : arena_printf(em->arena, "ein_op_%d", t->id);
    sb_printf(o, "%s: %s", name, call ? op_kind_name(op->op.kind)
                          : op->rows ? "fused row group" : "generated kernel");
    if (call)
        sb_printf(o, ", %s", lib_call_name(em, t));
    sb_printf(o, "%s\\l", op->at_load ? ", run at weight load" : "");
    names_line(o, "fused:", op->prologue, op->nprologue);
    if (op->rows)
        names_line(o, "rows of:", op->rows->members, op->rows->nmembers);
    if (op->epi.value)
        names_line(o, "epilogue of:", op->epi.absorbed, op->epi.nabsorbed);
    LibPost post[LIB_POST_MAX];
    int npost = plan_post_ops(op, post);
    if (npost)
        sb_printf(o, "as %d oneDNN post-op%s\\l", npost, npost > 1 ? "s" : "");
    char lt[128], pw[256];
    if (op->lt.fused)
        sb_printf(o, "in cuBLASLt's epilogue: %s\\l", plan_lt_name(op, lt, sizeof lt));
    if (op->lt.scale)
        sb_printf(o, "as the BLAS call's alpha: %g\\l", op->lt.alpha);
    if (plan_dnn_fused(op))
        sb_printf(o, "in cuDNN's graph: %s\\l", plan_pw_name(op, pw, sizeof pw));
    if (em->pname[t->id])
        sb_printf(o, "%s: the epilogue, a pass after the call%s\\l", em->pname[t->id],
                  op->lt.fused ? " where cuBLASLt cannot run it"
                  : plan_dnn_fused(op) ? " where cuDNN cannot run the graph" : "");
}

int emit_dot(const Plan *pl, FILE *out)
{
    EmitOptions opt = {0};
    Emit em;
    emit_setup(&em, pl, &opt);
    const IrProgram *p = pl->prog;
    Sb *o = &em.out;

    sb_puts(o, "digraph \"");
    dot_text(o, em.model, strlen(em.model), " ");
    sb_puts(o, "\" {\n"
               "    graph [rankdir=TB, fontname=\"Helvetica\", fontsize=12, label=\"model ");
    dot_text(o, p->model ? p->model : em.model, strlen(p->model ? p->model : em.model), " ");
    sb_printf(o, " (%s)\", labelloc=t];\n"
               "    node [fontname=\"Helvetica\", fontsize=10];\n"
               "    edge [color=\"#555555\"];\n\n", cost_target_name(pl->target));
    for (int i = 0; i < p->ntensors; i++) {
        const IrTensor *t = p->tensors[i];
        const char *kind = t->kind == IT_INPUT ? "input" : t->kind == IT_WEIGHT ? "weight"
                                                                              : "tensor";
        const char *fill = t->kind == IT_INPUT ? "#d9f2d9" : t->kind == IT_WEIGHT
                                                                 ? "#fde9d0" : "#ffffff";
        sb_printf(o, "    t%d [shape=ellipse, style=filled, fillcolor=\"%s\"%s, label=\"",
                  i, fill, t->is_output ? ", peripheries=2" : "");
        dot_text(o, t->name, strlen(t->name), "\\n");
        sb_printf(o, "\\n%s%s ", kind, t->is_output ? " (output)" : "");
        shape_label(o, t);
        sb_puts(o, "\"];\n");
        if (t->kind != IT_STAGE)
            continue;
        const PlanOp *op = emit_op(&em, t);
        if (plan_in_rows(op)) {
            /* stored by its row group's operator, the box of the last member */
            sb_printf(o, "    k%d -> t%d;\n", op->rows->members[op->rows->nmembers - 1]->id, i);
            continue;
        }
        if (op->stored_by) {
            /* stored by another operator through a view (plan.h, PlanBuf) */
            sb_printf(o, "    k%d -> t%d [style=dashed, label=\"view\"];\n",
                      op->stored_by->id, i);
            continue;
        }
        sb_printf(o, "    k%d [shape=box, style=\"rounded,filled\", fillcolor=\"%s\", label=\"",
                  i, op->impl != IMPL_KERNEL ? "#f8e0f0" : "#dde8f8");
        op_label(&em, t, o);
        stage_label(&em, t, o);
        sb_puts(o, "\"];\n");
        for (int j = 0; j < p->ntensors; j++) {
            if (op_reads(op, p->tensors[j]))
                sb_printf(o, "    t%d -> k%d;\n", j, i);
        }
        sb_printf(o, "    k%d -> t%d;\n", i, i);
    }
    sb_puts(o, "}\n");
    int rc = 0;
    if (fwrite(o->s, 1, o->len, out) != o->len) {
        diag_error(LOC_NONE, "cannot write the output");
        rc = -1;
    }
    sb_free(o);
    arena_free(em.arena);
    return rc;
}
