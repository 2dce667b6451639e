/* dot.c - emit_dot: the program graph as Graphviz.  Tensors are nodes
 * with their kind and shape (inputs green, weights orange, outputs with a
 * double border); each stage is a box naming the kernel that computes it
 * (the same name as in the C and CUDA output), its .ein location and its
 * statement; edges run from the tensors a kernel reads to the kernel and
 * from the kernel to the tensor it writes.  `dot -Tsvg` draws it. */
#include "config.h"
#include "emit_int.h"
#include "../derive/pricing/match.h"

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
        char *ir = NULL;
        size_t len = 0;
        FILE *fp = open_memstream(&ir, &len);
        if (!fp)
            ICE("open_memstream failed");
        ir_print_stage(em->p->cx, t->stage, fp);
        fclose(fp);
        dot_text(b, ir, len, "\\l");
        if (len == 0 || ir[len - 1] != '\n')
            sb_puts(b, "\\l");
        free(ir);
    }
}

static bool reads_tensor(const IExpr *e, int id);

static bool stage_reads(const Stage *st, int id)
{
    if (reads_tensor(st->body, id))
        return true;
    for (int i = 0; i < st->nguards; i++)
        if (reads_tensor(st->guards[i], id))
            return true;
    return false;
}

static bool ix_reads_tensor(const Ix *x, int id)
{
    const IExpr *g[16];
    int n = ix_gathers(x, g, 16);
    for (int i = 0; i < n && i < 16; i++)
        if (reads_tensor(g[i], id))
            return true;
    return false;
}

static bool reads_tensor(const IExpr *e, int id)
{
    switch (e->kind) {
    case IE_CONST:
        return false;
    case IE_INDEX:
        return ix_reads_tensor(e->ix, id);
    case IE_ICMP:
        return ix_reads_tensor(e->icmp.ix, id);
    case IE_ACCESS:
        for (int k = 0; k < e->access.nidx; k++)
            if (ix_reads_tensor(e->access.idx[k], id))
                return true;
        if (e->access.tensor)
            return e->access.tensor->id == id;
        return stage_reads(e->access.stage, id);
    case IE_CALL:
        for (int i = 0; i < e->call.nargs; i++)
            if (reads_tensor(e->call.args[i], id))
                return true;
        return false;
    case IE_NEG: case IE_NOT:
        return reads_tensor(e->bin.a, id);
    default:
        return reads_tensor(e->bin.a, id) || reads_tensor(e->bin.b, id);
    }
}

int emit_dot(const IrProgram *p, FILE *out)
{
    if (emit_check_program(p) < 0)
        return -1;
    EmitOptions opt = {.target = TARGET_C};
    Emit em;
    emit_setup(&em, p, &opt);
    emit_name_tensors(&em);
    Sb *o = &em.out;

    sb_puts(o, "digraph \"");
    dot_text(o, em.model, strlen(em.model), " ");
    sb_puts(o, "\" {\n"
               "    graph [rankdir=TB, fontname=\"Helvetica\", fontsize=12, label=\"model ");
    dot_text(o, p->model ? p->model : em.model, strlen(p->model ? p->model : em.model), " ");
    sb_puts(o, "\", labelloc=t];\n"
               "    node [fontname=\"Helvetica\", fontsize=10];\n"
               "    edge [color=\"#555555\"];\n\n");
    int nk = 0;
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
        const char *kname = arena_printf(em.arena, "k%d_%s", nk++, em.cname[i]);
        /* The operator the plan matched (a library call in the C and
         * CUDA output, where the library takes it: lib.c), or a plain
         * generated kernel. */
        OpMatch m;
        bool op = match_stage(t->stage, &m);
        sb_printf(o, "    k%d [shape=box, style=\"rounded,filled\", fillcolor=\"%s\", "
                  "label=\"%s: %s%s\\l", i, op ? "#f8e0f0" : "#dde8f8", kname,
                  op ? op_kind_name(m.kind) : "generated kernel",
                  t->weight_only ? ", run at weight load" : "");
        stage_label(&em, t, o);
        sb_puts(o, "\"];\n");
        for (int j = 0; j < p->ntensors; j++) {
            if (stage_reads(t->stage, j))
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
