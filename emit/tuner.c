/* tuner.c - the main() of einc --emit=tuner: a CUDA program that times
 * every operator of the program emit.c wrote (each IT_STAGE tensor with a
 * key in EmitOptions.tune_keys, computed by its ein_op_<id> function) and
 * writes a tuning database that einc --tune-db reads (derive/pricing/tunedb.c,
 * einc(1) TUNING DATABASE):
 *
 *   usage: ./tune DB [--iters N]
 *
 * The program is code in runtime/tuner.cu, pasted here after what it
 * needs from the program: the table of the operators to time (tensor id,
 * function, key, the cuDNN convolution it runs or -1), whether there are
 * cuDNN convolutions (whose engines it times) and the device the
 * database is for. */
#include "config.h"
#include "emit_int.h"


void tuner_write_main(Emit *em)
{
    Sb *o = &em->out;
    const IrProgram *p = em->p;
    const char *const *keys = em->opt->tune_keys;
    int n = 0;
    for (int i = 0; i < p->ntensors; i++)
        if (p->tensors[i]->kind == IT_STAGE && keys[i])
            n++;
    sb_puts(o, "\n/* ---- the tuner: times every operator, writes a tuning database ---- */\n\n");
    sb_printf(o, "typedef int (*ein_tune_fn)(%s_ctx *, void *const *, cudaStream_t);\n\n",
              em->model);
    sb_puts(o, "static const struct {\n    int id;\n    ein_tune_fn run;\n"
               "    const char *key;\n"
               "    int conv;                   /* its slot of ein_convs[], or -1 */\n"
               "} ein_tune_ops[] = {\n");
    for (int i = 0; i < p->ntensors; i++) {
        if (p->tensors[i]->kind != IT_STAGE || !keys[i])
            continue;
        sb_printf(o, "    {%d, ein_op_%d,\n     ", i, i);
        emit_c_string(o, keys[i]);
        sb_printf(o, ", %d},\n",
                  emit_op(em, p->tensors[i])->impl == IMPL_CUDNN_CONV ? em->slot[i] : -1);
    }
    if (n == 0)
        sb_puts(o, "    {-1, 0, \"\", -1},\n");
    sb_puts(o, "};\n");
    sb_printf(o, "#define EIN_TUNE_NOPS %d\n", n);
    sb_printf(o, "#define EIN_TUNE_CONVS %d\n", (em->libs & LIB_CUDNN) != 0);
    sb_puts(o, "#define EIN_TUNE_DEVICE ");
    emit_c_string(o, em->opt->tune_device ? em->opt->tune_device : "h200");
    sb_puts(o, "\n\n");
    emit_paste(em, "tuner.cu");
}
