/* test_copy.c - ir_stage_copy, ir_stage_tensors and ir_fingerprint_form on
 * random stages (gen.h: strides, padded reads, division and modulo,
 * guards, gathers, nested stages): a copy over other tensors of the same
 * shapes holding the same values computes the same values, binds only new
 * variables, reads exactly the tensors it was given, and has the
 * original's form fingerprint; a copy onto the same tensors has the
 * original's fingerprint; a copy whose map leaves out a tensor read is
 * refused; a tensor of another shape changes the form fingerprint. */
#include "config.h"
#include "tests/check.h"
#include "tests/derive/gen.h"

#define NT (GEN_TENSORS + 1)

/* Values of s over its loop box, row-major. */
static double *eval(const Stage *s, double *const *data, size_t *n)
{
    size_t size = 1;
    for (int k = 0; k < s->nloops; k++)
        size *= (size_t)(s->loops[k].hi - s->loops[k].lo);
    double *v = xmalloc((size ? size : 1) * sizeof *v);
    ir_eval_stage(s, data, v);
    *n = size;
    return v;
}

/* Whether some variable bound in s (nested stages too) has an id below
 * `first`: one the copy did not make. */
static bool binds_old(const Stage *s, int first);

static bool expr_binds_old(const IExpr *e, int first)
{
    if (ir_expr_stage(e) && binds_old(ir_expr_stage(e), first))
        return true;
    const IExpr *kids[IR_MAX_CHILDREN];
    int n = ir_expr_children(e, kids);
    for (int i = 0; i < n; i++)
        if (expr_binds_old(kids[i], first))
            return true;
    return false;
}

static bool binds_old(const Stage *s, int first)
{
    for (int k = 0; k < s->nloops; k++)
        if (s->loops[k].id < first)
            return true;
    for (int k = 0; k < s->nsums; k++)
        if (s->sums[k].id < first)
            return true;
    for (int i = 0; i < s->nguards; i++)
        if (expr_binds_old(s->guards[i], first))
            return true;
    return expr_binds_old(s->body, first);
}

static void test_random(int cases)
{
    for (int c = 0; c < cases; c++) {
        Arena *arena = arena_new();
        IrCtx *cx = ir_ctx_new(arena);
        Gen g;
        gen_init(&g, cx, (uint64_t)c + 1);
        const Stage *s = gen_stage(&g);

        /* twins: ids NT.., the same shapes and values */
        IrTensor twin[NT];
        const IrTensor *from[NT], *to[NT];
        double *data[2 * NT];
        for (int i = 0; i < NT; i++) {
            twin[i] = g.tensors[i];
            twin[i].id = NT + i;
            from[i] = &g.tensors[i];
            to[i] = &twin[i];
            data[i] = data[NT + i] = g.data[i];
        }
        const IrTensor *read[NT];
        int nread = ir_stage_tensors(s, read, NT);
        CHECK(nread <= NT);
        for (int i = 0; i < nread && i < NT; i++)
            for (int j = 0; j < i; j++)
                CHECK(read[i] != read[j]);

        int first = ir_var_count(cx);
        const Stage *t = ir_stage_copy(cx, s, from, to, NT);
        CHECK(t != NULL);
        if (!t)
            goto next;
        CHECK(!binds_old(t, first), "case %d: the copy binds a variable of the original", c);
        CHECK(ir_fingerprint_form(t) == ir_fingerprint_form(s), "case %d", c);
        CHECK(nread == 0 || ir_fingerprint(t) != ir_fingerprint(s), "case %d", c);
        const IrTensor *tread[NT];
        CHECK(ir_stage_tensors(t, tread, NT) == nread);
        /* the same set: the order of a walk follows the ids (commutative
         * operands are ordered by them), so it may differ */
        for (int i = 0; i < nread && i < NT; i++) {
            bool found = false;
            for (int j = 0; j < nread && j < NT; j++)
                found |= tread[j] == to[read[i]->id];
            CHECK(found, "case %d: the copy does not read the twin of %s", c, read[i]->name);
        }

        size_t n, m;
        double *want = eval(s, data, &n), *got = eval(t, data, &m);
        CHECK(n == m);
        double err = 0, scale = 0;
        for (size_t i = 0; i < n && n == m; i++) {
            scale = fmax(scale, fabs(want[i]));
            err = fmax(err, fabs(want[i] - got[i]));
        }
        CHECK(err <= 1e-12 * fmax(scale, 1), "case %d: the copy differs by %g", c, err);
        free(want);
        free(got);

        /* onto the same tensors: the same fingerprint */
        CHECK(ir_fingerprint(ir_stage_copy(cx, s, from, from, NT)) == ir_fingerprint(s));
        if (nread > 0) {
            /* a map without the first tensor read: refused */
            const IrTensor *f2[NT], *t2[NT];
            int k = 0;
            for (int i = 0; i < NT; i++)
                if (from[i] != read[0]) {
                    f2[k] = from[i];
                    t2[k++] = to[i];
                }
            CHECK(ir_stage_copy(cx, s, f2, t2, k) == NULL, "case %d", c);
            /* the first tensor read one longer in dimension 0: another form */
            int64_t shape[8];
            IrTensor longer = *read[0];
            for (int d = 0; d < longer.rank; d++)
                shape[d] = longer.shape[d] + (d == 0);
            longer.shape = shape;
            for (int i = 0; i < NT; i++)
                t2[i] = from[i] == read[0] ? &longer : to[i];
            if (longer.rank > 0)
                CHECK(ir_fingerprint_form(ir_stage_copy(cx, s, from, t2, NT))
                          != ir_fingerprint_form(s), "case %d", c);
        }
    next:
        gen_free(&g);
        arena_free(arena);
    }
}

int main(void)
{
    test_random(500);
    return check_finish("test_copy");
}
