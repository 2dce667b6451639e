/* ir_int.h - what the files of derive/ir/ share behind ir.h: the context,
 * the hash mixers, the total orders used to put commutative operands and
 * index atoms in canonical order, and the scalar function table.  Not for
 * use outside derive/ir/. */
#ifndef EINC_IR_INT_H
#define EINC_IR_INT_H

#include "ir.h"

/* ix_const caches the constants in [IR_SMALL_LO, IR_SMALL_HI). */
#define IR_SMALL_LO (-64)
#define IR_SMALL_HI 256

struct IrCtx {
    Arena *arena;
    VEC(IrVar) vars;                /* by id; names owned by the arena */
    VEC(const Ix *) var_ix;         /* ix_var(id), made with the variable so
                                       that an arena release never leaves a
                                       cached pointer to freed memory */
    const Ix *small[IR_SMALL_HI - IR_SMALL_LO];  /* ix_const cache */
    bool overflow;                  /* an int64 operation overflowed */
    int inexact;                    /* ir_lower_inexact */
};

/* ---- hashing ----------------------------------------------------------
 * A 64-bit finaliser (MurmurHash3's fmix64) and a combiner on top of it.
 * The salts below keep kinds apart, so that e.g. a constant 3 and a
 * variable with id 3 hash differently. */
static inline uint64_t ir_fmix(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ULL;
    k ^= k >> 33;
    return k;
}

/* 1, or -1 where EINC_OPERAND_ORDER=reverse: the sign of the tensor-id
 * key in ir_expr_cmp (set by ir_ctx_new). */
extern int ir_operand_order;

static inline uint64_t ir_hcomb(uint64_t h, uint64_t v)
{
    return ir_fmix(h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)));
}

static inline uint64_t ir_hash_double(double v)
{
    uint64_t u;
    __builtin_memcpy(&u, &v, sizeof u);
    return u;
}

enum {
    H_IX = 0x1001, H_TERM, H_EXPR, H_TENSOR, H_STAGE, H_LOOP, H_SUM, H_FREE,
    H_OUTER, H_SELF, H_GUARD, H_INDEX, H_SIG, H_ICMP,
};

/* ---- overflow-checked arithmetic on index coefficients ------------------
 * On overflow the context is flagged (ir_ctx_overflowed) and the result is
 * 0; lowering turns the flag into an error at the offending expression. */
static inline int64_t ir_mul(IrCtx *cx, int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r)) {
        cx->overflow = true;
        return 0;
    }
    return r;
}

static inline int64_t ir_add(IrCtx *cx, int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_add_overflow(a, b, &r)) {
        cx->overflow = true;
        return 0;
    }
    return r;
}

/* ---- orders ------------------------------------------------------------
 * Total orders that are consistent with structural equality: 0 exactly
 * when the two are equal.  Cheap keys first, then the cached hash, then a
 * structural walk (only reached on equal hashes, i.e. nearly always equal
 * nodes). */
int ix_cmp(const Ix *a, const Ix *b);
int ir_term_cmp(const IxTerm *a, const IxTerm *b);   /* atoms only */
int ir_expr_cmp(const IExpr *a, const IExpr *b);
int ir_stage_cmp(const Stage *a, const Stage *b);

bool ir_is_bool_kind(const IExpr *e);
const Ix *ix_icmp_normal(IrCtx *cx, BinOp op, const Ix *ix, bool *truth);

/* ---- scalar functions (func.c) --------------------------------------------- */
int ir_func_arity(Func fn);
const char *ir_func_name(Func fn);
double ir_func_apply(Func fn, const double *args);  /* not FN_SELECT */

#endif
