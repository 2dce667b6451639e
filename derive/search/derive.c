/* derive.c - searching a whole program, assembling the chosen plan, and
 * verifying it (derive.h). */
#include "config.h"
#include "derive.h"

#include <math.h>
#include <pthread.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Expressions worth a search: reductions.  Maps cannot become library
 * operators; they run as generated kernels. */
static bool searchable(const IrTensor *t)
{
    return t->kind == IT_STAGE && t->stage->nsums > 0;
}

/* EINC_SEARCH_REUSE=0: every reduction searched on its own (search_reuse
 * off), to check that reuse changes no plan (but among equally priced
 * choices: tests/derive/reuse.test). */
static bool reuse_on(void)
{
    const char *v = getenv("EINC_SEARCH_REUSE");
    return !v || strcmp(v, "0") != 0;
}

/* EINC_RERANK=0: each searched tensor keeps the candidate cheapest alone
 * (rerank off), to see what reranking changed. */
static bool rerank_on(void)
{
    const char *v = getenv("EINC_RERANK");
    return !v || strcmp(v, "0") != 0;
}

/* ---- searches in threads -----------------------------------------------------
 * The first reduction of each form is searched in a context of its own, a
 * fork of the program's (ir_ctx_fork) made before any search, by one of
 * the worker threads; then, in program order, each result is adopted into
 * the program's context (search_adopt) and the others of its form reuse
 * it.  Every search starts from the same context and is adopted in the
 * same order whatever the number of threads, so the plan and the output
 * do not depend on it. */

typedef struct Job {
    const IrCtx *base;              /* what each search's context is a fork of */
    const IrTensor *t;
    const SearchOptions *so;
    int first_id;                   /* of the fork's intermediates */
    Arena *arena;                   /* the fork's, freed once adopted */
    SearchResult res;
} Job;

typedef struct Pool {
    Job *jobs;
    int n, next;                    /* jobs taken so far */
    pthread_mutex_t lock;
} Pool;

static void run_job(Job *j)
{
    j->arena = arena_new();
    RuleCtx *rc = rule_ctx_new(ir_ctx_fork(j->base, j->arena));
    int next_id = j->first_id;
    search_tensor(rc, j->t, j->so, &next_id, &j->res);
    rule_ctx_free(rc);
}

static void *worker(void *arg)
{
    Pool *p = arg;
    for (;;) {
        pthread_mutex_lock(&p->lock);
        int k = p->next++;
        pthread_mutex_unlock(&p->lock);
        if (k >= p->n)
            return NULL;
        run_job(&p->jobs[k]);
    }
}

/* Runs the n jobs on `threads` threads (0: one per processor online, at
 * most 64), the calling one among them. */
static void run_jobs(Job *jobs, int n, int threads)
{
    if (threads <= 0) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        threads = cpus > 0 ? (int)(cpus < 64 ? cpus : 64) : 1;
    }
    if (threads > n)
        threads = n;
    Pool p;
    p.jobs = jobs;
    p.n = n;
    p.next = 0;
    pthread_mutex_init(&p.lock, NULL);
    pthread_t *tid = xmalloc((size_t)(threads + 1) * sizeof *tid);
    int started = 0;
    for (int i = 1; i < threads; i++)
        if (pthread_create(&tid[started], NULL, worker, &p) == 0)
            started++;              /* where one cannot start, fewer do it all */
    worker(&p);
    for (int i = 0; i < started; i++)
        pthread_join(tid[i], NULL);
    pthread_mutex_destroy(&p.lock);
    free(tid);
}

/* A tensor of the program as the plan will hold it: a plain operator
 * (dv < 0; op, for a computed one) or derivation dv's pieces. */
typedef struct Item {
    IrTensor *t;
    int dv;
    PlanOp op;
} Item;

/* The plan of the chosen candidates (choice[k] for derivation k): the
 * program's tensors, intermediates before their users, ids = positions. */
static Plan *assemble(IrCtx *cx, Derived *d, const IrProgram *p, const Item *it, int n,
                      const int *choice, const SearchOptions *so)
{
    Arena *a = ir_arena(cx);
    VEC(IrTensor *) order = {0};
    VEC(PlanOp) ops = {0};
    /* sized at once: a rerank assembles the plan once per trial */
    int cap = 0;
    for (int i = 0; i < n; i++)
        cap += it[i].dv < 0 ? 1 : d->ds[it[i].dv].res.cands.data[choice[it[i].dv]].pieces.ops.len;
    order.data = arena_alloc(a, (size_t)(cap + 1) * sizeof *order.data);
    ops.data = arena_alloc(a, (size_t)(cap + 1) * sizeof *ops.data);
    order.cap = ops.cap = cap + 1;
    for (int i = 0; i < n; i++) {
        if (it[i].dv < 0) {
            vec_push(a, &order, it[i].t);
            if (it[i].t->kind == IT_STAGE)
                vec_push(a, &ops, it[i].op);
            continue;
        }
        const Pieces *pc = &d->ds[it[i].dv].res.cands.data[choice[it[i].dv]].pieces;
        for (int k = 0; k < pc->ops.len; k++) {
            PlanOp op = pc->ops.data[k];
            if (k + 1 == pc->ops.len)
                it[i].t->stage = op.stage;  /* the result, flattened */
            vec_push(a, &order, (IrTensor *)op.out);
            vec_push(a, &ops, op);
        }
    }
    IrProgram *np = arena_dup(a, p, sizeof *p);
    np->outputs = arena_alloc(a, (size_t)(p->noutputs + 1) * sizeof *np->outputs);
    for (int i = 0; i < p->noutputs; i++)
        np->outputs[i] = p->outputs[i];
    ir_program_reorder(np, order.data, order.len);
    Plan *pl = arena_alloc(a, sizeof *pl);
    pl->prog = np;
    pl->target = so->target;
    pl->precision = so->precision;
    pl->ops = arena_alloc(a, (size_t)(np->ntensors + 1) * sizeof *pl->ops);
    for (int i = 0; i < ops.len; i++)
        pl->ops[ops.data[i].out->id] = ops.data[i];
    pl->cost = plan_total(pl);
    return pl;
}

void var_ranges_fit(VarRanges *vr, int n)
{
    if (n <= vr->n)
        return;
    int m = n > 2 * vr->n ? n : 2 * vr->n;
    vr->lo = xrealloc(vr->lo, (size_t)m * sizeof *vr->lo);
    vr->hi = xrealloc(vr->hi, (size_t)m * sizeof *vr->hi);
    for (int i = vr->n; i < m; i++) {
        vr->lo[i] = vr->rest_lo;
        vr->hi[i] = vr->rest_hi;
    }
    vr->n = m;
}

void var_ranges_free(VarRanges *vr)
{
    free(vr->lo);
    free(vr->hi);
    vr->lo = vr->hi = NULL;
    vr->n = 0;
}

/* s's loop and sum variables at their ranges in vr (bind), or back at
 * rest (unbind). */
static void var_ranges_set(VarRanges *vr, const Stage *s, bool bind)
{
    for (int d = 0; d < s->nloops + s->nsums; d++) {
        const IrVar *v = d < s->nloops ? &s->loops[d] : &s->sums[d - s->nloops];
        vr->lo[v->id] = bind ? v->lo : vr->rest_lo;
        vr->hi[v->id] = bind ? v->hi : vr->rest_hi;
    }
}

void var_ranges_bind(VarRanges *vr, const Stage *s)
{
    var_ranges_set(vr, s, true);
}

void var_ranges_unbind(VarRanges *vr, const Stage *s)
{
    var_ranges_set(vr, s, false);
}

/* The passes after the search, which change what runs; vr: the ranges of
 * unmask (unbounded at rest) and of fusion (zero at rest). */
static void post_passes(IrCtx *cx, Plan *pl, const CostModel *cm, const SearchOptions *so,
                        VarRanges *vr, bool verify)
{
    derive_unmask(cx, pl, cm, &vr[0], verify);
    derive_fuse(cx, pl, cm, &vr[1], so->budget_ms, verify);
    derive_epilogues(cx, pl, cm, verify);
    derive_rows(cx, pl, cm);
    derive_out_views(pl);
    derive_handoffs(pl, cm);
}

/* What assembling and the passes change in the tensors (ids, stages). */
typedef struct Saved {
    IrTensor *t;
    int id;
    const Stage *stage;
} Saved;

static int save_tensors(const Derived *d, const IrProgram *p, Saved **out)
{
    int n = p->ntensors;
    for (int k = 0; k < d->nds; k++)
        for (int c = 0; c < d->ds[k].res.cands.len; c++)
            n += d->ds[k].res.cands.data[c].pieces.ops.len;
    Saved *s = xmalloc((size_t)(n + 1) * sizeof *s);
    int m = 0;
    for (int i = 0; i < p->ntensors; i++)
        s[m++] = (Saved){p->tensors[i], p->tensors[i]->id, p->tensors[i]->stage};
    for (int k = 0; k < d->nds; k++)
        for (int c = 0; c < d->ds[k].res.cands.len; c++) {
            const Pieces *pc = &d->ds[k].res.cands.data[c].pieces;
            for (int j = 0; j < pc->ops.len; j++) {
                IrTensor *t = (IrTensor *)pc->ops.data[j].out;
                s[m++] = (Saved){t, t->id, t->stage};
            }
        }
    *out = s;
    return m;
}

static void restore_tensors(const Saved *s, int n)
{
    for (int i = 0; i < n; i++) {
        s[i].t->id = s[i].id;
        s[i].t->stage = s[i].stage;
    }
}

/* The estimated time of the plan of `choice` as it will run: assembled
 * and through the passes, then everything put back. */
static double final_cost(IrCtx *cx, Derived *d, const IrProgram *p, const Item *it, int n,
                         const int *choice, const CostModel *cm, const SearchOptions *so,
                         VarRanges *vr, const Saved *saved, int nsaved)
{
    IrMark mark = ir_ctx_mark(cx);
    Plan *pl = assemble(cx, d, p, it, n, choice, so);
    post_passes(cx, pl, cm, so, vr, false);
    double cost = plan_total(pl);
    restore_tensors(saved, nsaved);
    ir_ctx_release(cx, mark);
    return cost;
}

/* A trial of rerank: derivation k at its candidate c, whose own price is
 * `gap` (relative) above that of the one the search chose. */
typedef struct Trial {
    int k, c;
    double gap;
} Trial;

static int trial_cmp(const void *a, const void *b)
{
    const Trial *x = a, *y = b;
    if (x->gap != y->gap)
        return x->gap < y->gap ? -1 : 1;
    return x->k != y->k ? x->k - y->k : x->c - y->c;
}

/* The search prices each expression's candidates alone; the passes after
 * it (fusion, epilogues, row groups, output views) then change what runs
 * around them, and a candidate a little dearer alone can leave a cheaper
 * program (a 1x1 convolution that cuDNN runs with the bias and ReLU after
 * it as pointwise nodes, where the cheapest alone was a GEMM and a pass).
 * So each other candidate of each searched tensor is
 * tried in the whole plan as the passes leave it, the others as chosen so
 * far, and kept where that is cheaper: the closest in price first, until
 * RERANK_WORK tensor-trials (trials x the plan's tensors: the passes cost
 * that) or --search-budget is spent.  Returns how many trials ran; *from
 * and *to: the plan's estimate before and after. */
#define RERANK_WORK 65536

static int rerank(IrCtx *cx, Derived *d, const IrProgram *p, const Item *it, int n, int *choice,
                  const CostModel *cm, const SearchOptions *so, VarRanges *vr, double *from,
                  double *to)
{
    VEC(Trial) trials = {0};
    Arena *a = ir_arena(cx);
    for (int k = 0; k < d->nds; k++) {
        const SearchResult *r = &d->ds[k].res;
        double base = r->cands.data[choice[k]].pieces.cost;
        for (int c = 0; c < r->cands.len; c++)
            if (c != choice[k])
                vec_push(a, &trials, ((Trial){k, c, (r->cands.data[c].pieces.cost - base) /
                                                        fmax(base, 1e-12)}));
    }
    if (trials.len == 0)
        return 0;
    qsort(trials.data, (size_t)trials.len, sizeof *trials.data, trial_cmp);
    Saved *saved;
    int nsaved = save_tensors(d, p, &saved);
    double best = final_cost(cx, d, p, it, n, choice, cm, so, vr, saved, nsaved);
    *from = best;
    long work = 0;
    int ran = 0;
    for (int i = 0; i < trials.len; i++) {
        work += n;
        if (work > RERANK_WORK || search_budget_spent(so->budget_ms))
            break;
        int k = trials.data[i].k, was = choice[k];
        choice[k] = trials.data[i].c;
        double cost = final_cost(cx, d, p, it, n, choice, cm, so, vr, saved, nsaved);
        ran++;
        if (cost < best * (1 - 1e-9))
            best = cost;
        else
            choice[k] = was;
    }
    *to = best;
    free(saved);
    return ran;
}

Derived *derive_program(IrCtx *cx, IrProgram *p, const DeriveOptions *o)
{
    Arena *a = ir_arena(cx);
    Derived *d = arena_alloc(a, sizeof *d);
    d->ds = arena_alloc(a, (size_t)(p->ntensors + 1) * sizeof *d->ds);
    RuleCtx *rc = rule_ctx_new(cx);
    int next_id = p->ntensors;
    VEC(Item) items = {0};
    SearchOptions so = o->search;
    CostModel cm = {so.dev, so.precision, so.tune_db, so.target, so.dnnl};
    d->precision = so.precision;
    bool reuse = reuse_on();
    if (o->level < 2)
        so.depth = 0;
    else
        derive_merge_siblings(cx, p, &cm);
    if (o->level >= 1)
        d->folds = derive_fold_scales(cx, p, o->verify != 0, &d->nfolds);
    for (int i = 0; i < p->ntensors; i++) {
        IrTensor *t = p->tensors[i];
        if (o->level == 0 || !searchable(t)) {
            Item it = {t, -1, {0}};
            if (t->kind == IT_STAGE)
                it.op = plan_choose(cx, &cm, t, t->stage);
            vec_push(a, &items, it);
            continue;
        }
        Derivation *dv = &d->ds[d->nds++];
        dv->tensor = t;
        dv->original = t->stage;
        dv->form = ir_fingerprint_form(t->stage);
        dv->from = -1;
        vec_push(a, &items, ((Item){t, d->nds - 1, {0}}));
    }
    /* the first of each form searched in the threads */
    Job *jobs = xcalloc((size_t)d->nds + 1, sizeof *jobs);
    int *job_of = xmalloc((size_t)(d->nds + 1) * sizeof *job_of), njobs = 0;
    for (int k = 0; k < d->nds; k++) {
        bool first = true;
        for (int e = 0; reuse && e < k && first; e++)
            first = d->ds[e].form != d->ds[k].form;
        job_of[k] = first ? njobs : -1;
        if (first)
            jobs[njobs++] = (Job){.base = cx, .t = d->ds[k].tensor, .so = &so,
                                  .first_id = next_id};
    }
    run_jobs(jobs, njobs, o->jobs);
    for (int k = 0; k < d->nds; k++) {
        Derivation *dv = &d->ds[k];
        const IrTensor *t = dv->tensor;
        for (int e = 0; job_of[k] < 0 && e < k && dv->from < 0; e++) {
            const Derivation *f = &d->ds[e];
            if (f->from < 0 && f->form == dv->form
                && search_reuse(rc, t, f->tensor, f->original, &f->res, &so, &next_id,
                                &dv->res))
                dv->from = e;
        }
        if (dv->from < 0) {
            const Job *j = job_of[k] >= 0 ? &jobs[job_of[k]] : NULL;
            if (j) {
                search_adopt(rc, t, &j->res, &so, &next_id, &dv->res);
                dv->res.ms = j->res.ms;     /* the search's, not the copy's */
            } else {                        /* its form's search did not fit it */
                search_tensor(rc, t, &so, &next_id, &dv->res);
            }
            d->states += dv->res.nodes.len;
        }
        if (job_of[k] >= 0)
            arena_free(jobs[job_of[k]].arena);
        d->ms += dv->res.ms;
    }
    free(jobs);
    free(job_of);
    rule_ctx_free(rc);

    int *choice = arena_alloc(a, (size_t)(d->nds + 1) * sizeof *choice);
    for (int k = 0; k < d->nds; k++)
        choice[k] = d->ds[k].res.chosen;
    /* the passes' (unmask's, unbounded at rest, and fusion's), kept from
     * trial to trial */
    VarRanges vr[2] = {{.rest_lo = INT64_MIN, .rest_hi = INT64_MAX}, {0}};
    if (o->level >= 1 && rerank_on())
        d->reranked = rerank(cx, d, p, items.data, items.len, choice, &cm, &so, vr,
                             &d->rerank_from, &d->rerank_to);
    /* the chosen candidate first: candidate 0 of --emit=plan-json */
    for (int k = 0; k < d->nds; k++) {
        SearchResult *r = &d->ds[k].res;
        Candidate c = r->cands.data[choice[k]];
        memmove(r->cands.data + 1, r->cands.data, (size_t)choice[k] * sizeof c);
        r->cands.data[0] = c;
        d->ds[k].alone = choice[k];
        r->chosen = choice[k] = 0;
    }
    Plan *pl = assemble(cx, d, p, items.data, items.len, choice, &so);
    d->plan = pl;
    /* The originals and candidates read tensors fusion may drop, by ids
     * it changes: they are verified first. */
    if (o->verify)
        derive_verify(cx, d, o->verify == 2);
    if (o->level >= 1)
        post_passes(cx, pl, &cm, &so, vr, o->verify != 0);
    var_ranges_free(&vr[0]);
    var_ranges_free(&vr[1]);
    if (d->reranked == 0)           /* nothing tried: the plan as it is */
        d->rerank_from = d->rerank_to = plan_total(pl);
    return d;
}

/* ---- verification ---------------------------------------------------------- */

double **derive_verify_data(const IrProgram *p, int max_id)
{
    double **data = xcalloc((size_t)max_id + 1, sizeof *data);
    uint64_t seed = 0x2545f4914f6cdd1dULL;
    for (int i = 0; i < p->ntensors; i++) {
        size_t n = ir_tensor_numel(p->tensors[i]);
        data[i] = xmalloc((n ? n : 1) * sizeof **data);
        for (size_t k = 0; k < n; k++) {
            seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
            data[i][k] = (double)(seed >> 11) / 9007199254740992.0 * 2 - 1;
        }
    }
    return data;
}

void derive_verify_free(double **data, int max_id)
{
    for (int i = 0; i <= max_id; i++)
        free(data[i]);
    free(data);
}

bool derive_agree(const double *want, const double *got, size_t n, double *err, double *scale)
{
    *err = *scale = 0;
    for (size_t i = 0; i < n; i++) {
        *scale = fmax(*scale, fabs(want[i]));
        *err = fmax(*err, fabs(want[i] - got[i]));
    }
    return *err <= 1e-9 * fmax(*scale, 1e-300);
}

bool derive_same(const Stage *a, const Stage *b, const IrTensor *t, double *const *data,
                 double *err, double *scale)
{
    size_t n = ir_tensor_numel(t);
    double *want = xmalloc((n ? n : 1) * sizeof *want);
    double *got = xmalloc((n ? n : 1) * sizeof *got);
    derive_eval_into(a, t, data, want);
    derive_eval_into(b, t, data, got);
    bool ok = derive_agree(want, got, n, err, scale);
    free(want);
    free(got);
    return ok;
}

void derive_eval_into(const Stage *s, const IrTensor *t, double *const *data, double *out)
{
    size_t n = 1;
    for (int d = 0; d < s->nloops; d++)
        n *= (size_t)(s->loops[d].hi - s->loops[d].lo);
    double *tmp = xmalloc((n ? n : 1) * sizeof *tmp);
    ir_eval_stage(s, data, tmp);
    memset(out, 0, ir_tensor_numel(t) * sizeof *out);
    int64_t *idx = xcalloc((size_t)s->nloops + 1, sizeof *idx);
    for (size_t k = 0; k < n; k++) {
        size_t rem = k, off = 0;
        for (int d = s->nloops - 1; d >= 0; d--) {
            int64_t ext = s->loops[d].hi - s->loops[d].lo;
            idx[d] = s->loops[d].lo + (int64_t)(rem % (size_t)ext);
            rem /= (size_t)ext;
        }
        for (int d = 0; d < s->nloops; d++)
            off = off * (size_t)t->shape[d] + (size_t)idx[d];
        out[off] = tmp[k];
    }
    free(idx);
    free(tmp);
}

/* Whether plan `pc` computes the value of dv's original definition. */
static bool verify_plan(const Derivation *dv, const Pieces *pc, double **data,
                        const double *want, int cand)
{
    const IrTensor *t = dv->tensor;
    size_t n = ir_tensor_numel(t);
    double *got = xmalloc((n ? n : 1) * sizeof *got);
    double **scratch = xcalloc((size_t)pc->ops.len + 1, sizeof *scratch);
    /* intermediates that are not in the program get buffers of their own */
    for (int j = 0; j + 1 < pc->ops.len; j++) {
        const IrTensor *o = pc->ops.data[j].out;
        scratch[j] = xmalloc((ir_tensor_numel(o) ? ir_tensor_numel(o) : 1) * sizeof **scratch);
    }
    double **view = xmalloc(sizeof *view * (size_t)(dv->max_id + 1));
    memcpy(view, data, sizeof *view * (size_t)(dv->max_id + 1));
    for (int j = 0; j + 1 < pc->ops.len; j++) {
        const PlanOp *op = &pc->ops.data[j];
        if (op->out->id >= 0 && op->out->id <= dv->max_id)
            view[op->out->id] = scratch[j];
    }
    for (int j = 0; j + 1 < pc->ops.len; j++) {
        const PlanOp *op = &pc->ops.data[j];
        derive_eval_into(op->stage, op->out, view, scratch[j]);
    }
    derive_eval_into(pc->ops.data[pc->ops.len - 1].stage, t, view, got);
    double err, scale;
    bool ok = derive_agree(want, got, n, &err, &scale);
    if (!ok)
        diag_error(t->loc, "--verify: the derived form of '%s' (candidate %d) differs "
                   "from its definition (max error %g, max value %g); this is a bug in "
                   "einc", t->name, cand, err, scale);
    for (int j = 0; j + 1 < pc->ops.len; j++)
        free(scratch[j]);
    free(scratch);
    free(view);
    free(got);
    return ok;
}

void derive_verify(IrCtx *cx, const Derived *d, bool all_candidates)
{
    (void)cx;
    const IrProgram *p = d->plan->prog;
    int max_id = p->ntensors;
    for (int k = 0; k < d->nds; k++)
        for (int c = 0; c < d->ds[k].res.cands.len; c++) {
            const Pieces *pc = &d->ds[k].res.cands.data[c].pieces;
            for (int j = 0; j < pc->ops.len; j++)
                if (pc->ops.data[j].out->id > max_id)
                    max_id = pc->ops.data[j].out->id;
        }
    double **data = derive_verify_data(p, max_id);
    int bad = 0;
    for (int k = 0; k < d->nds; k++) {
        Derivation *dv = &d->ds[k];
        dv->max_id = max_id;
        size_t n = ir_tensor_numel(dv->tensor);
        double *want = xmalloc((n ? n : 1) * sizeof *want);
        derive_eval_into(dv->original, dv->tensor, data, want);
        for (int c = 0; c < dv->res.cands.len; c++)
            if (all_candidates || c == dv->res.chosen)
                bad += !verify_plan(dv, &dv->res.cands.data[c].pieces, data, want, c);
        free(want);
    }
    derive_verify_free(data, max_id);
    if (bad)
        ICE("--verify: %d derived form%s differ%s from %s definition%s", bad,
            bad > 1 ? "s" : "", bad > 1 ? "" : "s", bad > 1 ? "their" : "its",
            bad > 1 ? "s" : "");
}

/* ---- showing plans and derivations ----------------------------------------- */

/* Candidate j of the whole program: every searched tensor at its j-th
 * cheapest plan (its last one where it has fewer). */
static const Pieces *nth_plan(const Derivation *dv, int j)
{
    const SearchResult *r = &dv->res;
    return &r->cands.data[j < r->cands.len ? j : r->cands.len - 1].pieces;
}

/* The derivation whose chosen plan computes tensor t, or -1. */
static int owner(const Derived *d, const IrTensor *t)
{
    for (int k = 0; k < d->nds; k++) {
        const Pieces *cur = nth_plan(&d->ds[k], d->ds[k].res.chosen);
        for (int i = 0; i < cur->ops.len; i++)
            if (cur->ops.data[i].out == t)
                return k;
    }
    return -1;
}

static void json_candidate(const Derived *d, int j, FILE *fp)
{
    const IrProgram *p = d->plan->prog;
    double cost = d->plan->cost;
    for (int k = 0; k < d->nds; k++)
        cost += nth_plan(&d->ds[k], j)->cost - nth_plan(&d->ds[k], d->ds[k].res.chosen)->cost;
    fprintf(fp, "    {\"cost_us\": %.3f, \"ops\": [", cost * 1e6);
    bool first = true;
    for (int i = 0; i < p->ntensors; i++) {
        const IrTensor *t = p->tensors[i];
        if (t->kind != IT_STAGE)
            continue;
        int k = owner(d, t);
        if (k >= 0 && t != d->ds[k].tensor)
            continue;                   /* an intermediate of the chosen plan */
        const Pieces *alt = k >= 0 ? nth_plan(&d->ds[k], j) : NULL;
        for (int o = 0; o < (alt ? alt->ops.len : 1); o++) {
            fputs(first ? "\n      " : ",\n      ", fp);
            plan_print_json_op(alt ? &alt->ops.data[o] : &d->plan->ops[t->id],
                               d->precision, fp);
            first = false;
        }
    }
    fputs("]}", fp);
}

/* The plan as it runs, after fusion and the passes: what --emit=plan
 * shows, an operator per tensor. */
static void json_plan(const Plan *pl, Precision prec, FILE *fp)
{
    fprintf(fp, "\"plan\": {\"cost_us\": %.3f, \"ops\": [", pl->cost * 1e6);
    bool first = true;
    for (int i = 0; i < pl->prog->ntensors; i++) {
        const IrTensor *t = pl->prog->tensors[i];
        if (t->kind != IT_STAGE)
            continue;
        fputs(first ? "\n      " : ",\n      ", fp);
        plan_print_json_op(&pl->ops[t->id], prec, fp);
        first = false;
    }
    /* the arena of the intermediates (storage.c): each one's offset */
    fputs("],\n    \"memory\": {", fp);
    if (pl->at) {
        fprintf(fp, "\"arena_bytes\": %" PRId64 ", \"apart_bytes\": %" PRId64
                ", \"peak_bytes\": %" PRId64 ", \"at\": {", pl->arena, pl->apart, pl->peak);
        first = true;
        for (int i = 0; i < pl->prog->ntensors; i++)
            if (pl->at[i] >= 0) {
                fputs(first ? "" : ", ", fp);
                plan_json_string(pl->prog->tensors[i]->name, fp);
                fprintf(fp, ": %" PRId64, pl->at[i]);
                first = false;
            }
        fputc('}', fp);
    }
    fputs("}}", fp);
}

void derive_print_json(const IrCtx *cx, const Derived *d, FILE *fp)
{
    (void)cx;
    int n = 1;
    for (int k = 0; k < d->nds; k++)
        if (d->ds[k].res.cands.len > n)
            n = d->ds[k].res.cands.len;
    fputs("{\"model\": ", fp);
    plan_json_string(d->plan->prog->model, fp);
    fprintf(fp, ", \"target\": \"%s\", \"unmasked\": [", cost_target_name(d->plan->target));
    for (int i = 0; i < d->plan->nunmasked; i++) {
        fputs(i ? ", " : "", fp);
        plan_json_string(d->plan->unmasked[i]->name, fp);
    }
    fputs("], \"folded\": [", fp);
    for (int i = 0; i < d->nfolds; i++) {
        fputs(i ? ", {\"map\": " : "{\"map\": ", fp);
        plan_json_string(d->folds[i].map, fp);
        fputs(", \"sum\": ", fp);
        plan_json_string(d->folds[i].sum, fp);
        fputs(", \"weight\": ", fp);
        plan_json_string(d->folds[i].weight, fp);
        fputc('}', fp);
    }
    fputs("],\n  ", fp);
    json_plan(d->plan, d->precision, fp);
    fputs(",\n  \"chosen\": 0, \"candidates\": [\n", fp);
    for (int j = 0; j < n; j++) {
        fputs(j ? ",\n" : "", fp);
        json_candidate(d, j, fp);
    }
    fprintf(fp, "\n  ],\n  \"search\": {\"states\": %ld, \"ms\": %.3f, "
                "\"rerank\": {\"trials\": %d, \"from_us\": %.3f, \"to_us\": %.3f}, "
                "\"tensors\": [", d->states, d->ms, d->reranked, d->rerank_from * 1e6,
            d->rerank_to * 1e6);
    for (int k = 0; k < d->nds; k++) {
        fprintf(fp, "%s\n    {\"tensor\": ", k ? "," : "");
        plan_json_string(d->ds[k].tensor->name, fp);
        fprintf(fp, ", \"states\": %d, \"ms\": %.3f, \"candidates\": %d, "
                    "\"out_of_budget\": %s, \"reused_from\": ", d->ds[k].res.nodes.len,
                d->ds[k].res.ms, d->ds[k].res.cands.len,
                d->ds[k].res.out_of_budget ? "true" : "false");
        if (d->ds[k].from >= 0)
            plan_json_string(d->ds[d->ds[k].from].tensor->name, fp);
        else
            fputs("null", fp);
        fprintf(fp, ", \"alone\": %d}", d->ds[k].alone);
    }
    fputs("]}}\n", fp);
}

/* The chosen path of one derivation, root first. */
static int chosen_path(const Derivation *dv, int *path, int max)
{
    int n = 0;
    for (int at = dv->res.cands.data[dv->res.chosen].node; at >= 0 && n < max;
         at = dv->res.nodes.data[at].parent)
        path[n++] = at;
    for (int i = 0; i < n / 2; i++) {
        int t = path[i];
        path[i] = path[n - 1 - i];
        path[n - 1 - i] = t;
    }
    return n;
}

void derive_explain(const IrCtx *cx, const Derived *d, FILE *fp)
{
    for (int k = 0; k < d->nds; k++) {
        const Derivation *dv = &d->ds[k];
        const SearchResult *r = &dv->res;
        int path[64];
        int n = chosen_path(dv, path, 64);
        fprintf(fp, "%s: %d states", dv->tensor->name, r->nodes.len);
        if (dv->from >= 0)
            fprintf(fp, " (the search of %s, reused)", d->ds[dv->from].tensor->name);
        fprintf(fp, ", %.1f ms, %d candidates; chosen: %d step%s, estimated %.2f us", r->ms,
                r->cands.len, n - 1, n == 2 ? "" : "s",
                r->cands.data[r->chosen].pieces.cost * 1e6);
        if (dv->alone > 0)
            fprintf(fp, " (number %d by its own price, the cheapest in the whole plan)",
                    dv->alone + 1);
        fputc('\n', fp);
        fputs("  start:  ", fp);
        ir_print_stage(cx, dv->original, fp);
        fputc('\n', fp);
        for (int i = 1; i < n; i++) {
            const SearchNode *node = &r->nodes.data[path[i]];
            fprintf(fp, "  %d. %s%s\n     ", i, rule_table[node->via.rule].name,
                    node->guided ? " (guided)" : "");
            ir_print_stage(cx, node->expr, fp);
            fputc('\n', fp);
        }
        const Pieces *pc = &r->cands.data[r->chosen].pieces;
        for (int j = 0; j < pc->ops.len; j++) {
            fprintf(fp, "  -> %s %s: ", op_kind_name(pc->ops.data[j].op.kind),
                    pc->ops.data[j].out->name);
            ir_print_stage(cx, pc->ops.data[j].stage, fp);
            fputc('\n', fp);
        }
    }
    for (int i = 0; i < d->nfolds; i++)
        fprintf(fp, "%s: its factor went into the weight of %s before the search: %s, "
                "computed at load\n", d->folds[i].map, d->folds[i].sum, d->folds[i].weight);
    for (int i = 0; i < d->plan->nunmasked; i++)
        fprintf(fp, "%s: mask dropped after the search: no reader sees it\n",
                d->plan->unmasked[i]->name);
}

/* Text in a DOT string: quotes and backslashes escaped, line breaks and
 * other control characters as blanks. */
static void dot_str(FILE *fp, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fputc('\\', fp), fputc(c, fp);
        else if (c < 32 || c == 127)
            fputc(' ', fp);
        else
            fputc(c, fp);
    }
}

/* Lines of an expression in a state's box: at most DOT_LINES lines of
 * DOT_COLS characters, the rest cut with "..." (--explain has it whole). */
enum { DOT_COLS = 44, DOT_LINES = 4, DOT_OTHERS = 2 };

static void dot_expr(const IrCtx *cx, const Stage *st, FILE *fp)
{
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    if (!m)
        ICE("open_memstream failed");
    ir_print_stage(cx, st, m);
    fclose(m);
    /* one line, blanks collapsed */
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        char c = text[i] == '\n' || text[i] == '\t' ? ' ' : text[i];
        if (c == ' ' && (n == 0 || text[n - 1] == ' '))
            continue;
        text[n++] = c;
    }
    while (n && text[n - 1] == ' ')
        n--;
    text[n] = 0;
    const char *p = text;
    for (int line = 0; *p && line < DOT_LINES; line++) {
        size_t cut = strlen(p);
        bool last = line == DOT_LINES - 1 && cut > DOT_COLS;
        if (cut > DOT_COLS) {
            cut = last ? DOT_COLS - 3 : DOT_COLS;
            for (size_t c = cut; c > DOT_COLS / 2; c--)
                if (p[c] == ' ') {
                    cut = c;
                    break;
                }
            while (cut > 0 && ((unsigned char)p[cut] & 0xc0) == 0x80)
                cut--;                  /* not inside a UTF-8 character (Σ) */
        }
        char save = p[cut];
        ((char *)p)[cut] = 0;
        dot_str(fp, p);
        ((char *)p)[cut] = save;
        fputs(last ? "...\\l" : "\\l", fp);
        p += cut;
        while (*p == ' ')
            p++;
    }
    free(text);
}

static void dot_state(const IrCtx *cx, const SearchResult *r, int k, int i, bool on,
                      FILE *fp)
{
    const SearchNode *s = &r->nodes.data[i];
    fprintf(fp, "    d%d_%d [label=\"#%d%s  %.2f us  dist %d\\l", k, i, i,
            s->parent < 0 ? " start" : "", s->cost * 1e6, search_distance(s->expr));
    dot_expr(cx, s->expr, fp);
    fprintf(fp, "\"%s];\n", on ? ", color=red, penwidth=2" : ", fontcolor=\"#555555\"");
    if (s->parent >= 0)
        fprintf(fp, "    d%d_%d -> d%d_%d [label=\"%s%s\"%s];\n", k, s->parent, k, i,
                rule_table[s->via.rule].tag, s->guided ? " (guided)" : "",
                on ? ", color=red, penwidth=2" : ", style=dashed");
}

/* The search trees, drawn so that they fit a screen: for each searched
 * tensor its chosen path from the top down, each state with its cost, its
 * mismatch distance and its (shortened) expression and each edge with the
 * rule; beside each step the DOT_OTHERS cheapest other states derived
 * from the same parent, and one box that counts the rest of that
 * subtree; at the bottom the operators of the chosen plan.  The trees
 * follow one another down the page. */
void derive_dot(const IrCtx *cx, const Derived *d, FILE *fp)
{
    fputs("digraph derivation {\n"
          "  graph [rankdir=TB, newrank=true, nodesep=0.15, ranksep=0.3, "
          "fontname=\"Helvetica\", fontsize=11];\n"
          "  node [shape=box, fontname=\"monospace\", fontsize=9];\n"
          "  edge [fontname=\"Helvetica\", fontsize=9];\n", fp);
    for (int k = 0; k < d->nds; k++) {
        const Derivation *dv = &d->ds[k];
        const SearchResult *r = &dv->res;
        int n = r->nodes.len;
        int path[64];
        int np = chosen_path(dv, path, 64);
        bool *on = xcalloc((size_t)n + 1, 1);
        for (int i = 0; i < np; i++)
            on[path[i]] = true;
        /* subtree sizes: a child's index is always above its parent's */
        int *size = xcalloc((size_t)n + 1, sizeof *size);
        for (int i = n - 1; i >= 0; i--) {
            size[i] += 1;
            if (r->nodes.data[i].parent >= 0)
                size[r->nodes.data[i].parent] += size[i];
        }
        fprintf(fp, "  subgraph cluster_%d {\n    label=\"", k);
        dot_str(fp, dv->tensor->name);
        fprintf(fp, ": %d states", n);
        if (dv->from >= 0) {
            fputs(" (the search of ", fp);
            dot_str(fp, d->ds[dv->from].tensor->name);
            fputs(", reused)", fp);
        }
        fprintf(fp, ", %d candidates, chosen in %d step%s\";\n", r->cands.len, np - 1,
                np == 2 ? "" : "s");
        for (int s = 0; s < np; s++) {
            int at = path[s];
            if (s == 0)
                dot_state(cx, r, k, at, true, fp);
            if (s + 1 >= np)
                break;
            /* the children of `at`: the path's next state, then the
             * cheapest others */
            int shown[DOT_OTHERS], nshown = 0, rest = 0;
            for (int c = at + 1; c < n; c++) {
                if (r->nodes.data[c].parent != at || c == path[s + 1])
                    continue;
                rest += size[c];
                int pos = nshown;
                while (pos > 0 && r->nodes.data[shown[pos - 1]].cost > r->nodes.data[c].cost)
                    pos--;
                if (pos >= DOT_OTHERS)
                    continue;
                if (nshown < DOT_OTHERS)
                    nshown++;
                memmove(shown + pos + 1, shown + pos, sizeof *shown * (size_t)(nshown - 1 - pos));
                shown[pos] = c;
            }
            dot_state(cx, r, k, path[s + 1], true, fp);
            for (int j = 0; j < nshown; j++) {
                rest -= 1;
                dot_state(cx, r, k, shown[j], false, fp);
            }
            if (rest > 0)
                fprintf(fp, "    m%d_%d [shape=plaintext, fontname=\"Helvetica\", "
                            "label=\"+ %d more state%s\"];\n    d%d_%d -> m%d_%d [style=dotted];\n",
                        k, at, rest, rest == 1 ? "" : "s", k, at, k, at);
            fprintf(fp, "    { rank=same; d%d_%d", k, path[s + 1]);
            for (int j = 0; j < nshown; j++)
                fprintf(fp, "; d%d_%d", k, shown[j]);
            if (rest > 0)
                fprintf(fp, "; m%d_%d", k, at);
            fputs(" }\n", fp);
        }
        /* the chosen plan */
        const Pieces *pc = &r->cands.data[r->chosen].pieces;
        fprintf(fp, "    p%d [shape=box, style=\"rounded,filled\", fillcolor=\"#f8e0f0\", "
                    "label=\"plan: %.2f us\\l", k, pc->cost * 1e6);
        for (int j = 0; j < pc->ops.len; j++) {
            fprintf(fp, "%s ", op_kind_name(pc->ops.data[j].op.kind));
            dot_str(fp, pc->ops.data[j].out->name);
            fputs("\\l", fp);
        }
        fprintf(fp, "\"];\n    d%d_%d -> p%d [color=red, penwidth=2];\n  }\n", k,
                path[np - 1], k);
        /* the next tree goes below this one */
        if (k > 0)
            fprintf(fp, "  p%d -> d%d_%d [style=invis];\n", k - 1, k, path[0]);
        free(size);
        free(on);
    }
    fputs("}\n", fp);
}
