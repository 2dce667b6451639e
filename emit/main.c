/* main.c - the main() that --main adds:
 *
 *   ./net [--weights F] [--inputs F] [--outputs F] [--seed N] [--bench ITERS]
 *
 * The harness itself is code in runtime/ (main.c, with the target's part
 * in main_host.c or main_cuda.cu), pasted here after the one thing it
 * needs from the program: the outputs, by tensor id, in `output` order. */
#include "config.h"
#include "emit_int.h"

void main_write(Emit *em)
{
    const IrProgram *p = em->p;
    Sb *o = &em->out;
    sb_puts(o, "/* ---- main (einc --main) --------------------------------------------------- */\n");
    sb_printf(o, "#define EIN_NOUT %d\n", p->noutputs);
    sb_puts(o, "static const int ein_outputs[EIN_NOUT > 0 ? EIN_NOUT : 1] = {");
    for (int i = 0; i < p->noutputs; i++)
        sb_printf(o, "%s%d", i ? ", " : "", p->outputs[i]);
    sb_puts(o, p->noutputs ? "};\n\n" : "-1};\n\n");
    emit_paste(em, emit_is_cuda(em) ? "main_cuda.cu" : "main_host.c");
    emit_paste(em, "main.c");
}
