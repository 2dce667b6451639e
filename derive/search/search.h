/* search.h - the derivation search for one tensor expression.
 *
 * Two phases, as in EinNet.  The explicit phase enumerates every
 * application of the explicit rules (summation splitting, variable
 * substitution, boundary relaxing, traversal merging) breadth first up to
 * a depth, with a budget per rule and state.  The guided phase starts from
 * every state the explicit phase reached and repairs the mismatches
 * between its product stages and the operator patterns (index
 * dimensions that are not a plain iterator) by variable substitutions that
 * lower the mismatch count; it spends no depth.  Boundary tightening is
 * applied eagerly after every step, and layouts are fitted at
 * instantiation (plan.c).  Fingerprints keep any state from being
 * expanded twice.  Every state is instantiated and priced; the distinct
 * plans are the candidates.  The search is deterministic: the limits are
 * counts of states; the time budget is a safety net.  A statement of the
 * same form as one searched before takes that search (search_reuse); a
 * search done in a fork of the context (a thread's) is taken back into
 * it the same way (search_adopt).
 * Prefix: search_. */
#ifndef EINC_SEARCH_H
#define EINC_SEARCH_H

#include "plan.h"
#include "../rules/rules.h"

typedef struct SearchOptions {
    int depth;                  /* explicit phase depth (--search-depth) */
    int max_states;             /* states kept in all */
    int per_rule;               /* applications of one rule per state */
    double budget_ms;           /* --search-budget: CPU ms for the whole compile */
    const Device *dev;
    Precision precision;        /* --precision: what vendor operators compute in */
    const TuneDb *tune_db;      /* --tune-db: measured times, or NULL */
    Target target;              /* whose libraries the plan calls (cost_impl) */
    bool dnnl;                  /* C: convolutions on oneDNN (CostModel.dnnl) */
} SearchOptions;
void search_default_options(SearchOptions *o);

/* Whether the process has used more than budget_ms of CPU time: the
 * budget of --search-budget covers the whole compile (every search, then
 * fusion), counted in CPU time so that a busy machine does not change
 * what is derived. */
bool search_budget_spent(double budget_ms);

/* A state of the search tree. */
typedef struct SearchNode {
    const Stage *expr;
    int parent;                 /* -1 for the root */
    RuleSite via;               /* the rule applied to the parent */
    int depth;                  /* explicit steps from the root */
    bool guided;                /* reached in the guided phase */
    double cost;                /* of its instantiation, seconds */
} SearchNode;

typedef struct Candidate {
    Pieces pieces;
    int node;                   /* the state it instantiates */
    uint64_t key;               /* what makes two plans the same */
} Candidate;

typedef struct SearchResult {
    VEC(SearchNode) nodes;
    VEC(Candidate) cands;       /* the cheapest distinct plans, cheapest first
                                   (derive_program then moves the one it
                                   chooses in the whole plan to the front) */
    int chosen;                 /* index in cands */
    long expanded;              /* states whose successors were generated */
    double ms;                  /* wall time of the search */
    bool out_of_budget;
} SearchResult;

/* Search for the cheapest derivation of the definition of `result`
 * (result->stage).  Intermediate tensors get ids from *next_id. */
void search_tensor(RuleCtx *rc, const IrTensor *result, const SearchOptions *opt,
                   int *next_id, SearchResult *out);

/* Reuse (search.c): the search of `from`, whose expression was from_stage
 * and whose search gave `done`, for `result`, where the two are the same
 * computation over different tensors of one kind, element type and shape
 * each (a repeated layer; ir_fingerprint_form is equal for them): its
 * states and candidates copied over result's tensors (ir_stage_copy), each
 * candidate instantiated again (intermediates get ids from *next_id) and
 * priced, the cheapest for result chosen.  False, with nothing made, where
 * the two are not the same computation; then result needs a search. */
bool search_reuse(RuleCtx *rc, const IrTensor *result, const IrTensor *from,
                  const Stage *from_stage, const SearchResult *done,
                  const SearchOptions *opt, int *next_id, SearchResult *out);

/* The search of result done in another context (a fork of rc's,
 * ir_ctx_fork: a thread's, derive.c), brought into rc's: its states
 * copied (ir_stage_copy), its candidates instantiated again (ids from
 * *next_id) and priced, as search_reuse does for another statement. */
void search_adopt(RuleCtx *rc, const IrTensor *result, const SearchResult *done,
                  const SearchOptions *opt, int *next_id, SearchResult *out);

/* Mismatches between the product stages of `s` and plain operands
 * (search.c says what counts); 0 for a dense GEMM. */
int search_distance(const Stage *s);

/* What makes two plans the same for the search (search.c): the canonical
 * text of every library operator they run per call, with every field
 * that makes two operators differ, and the number of their kernels. */
uint64_t search_plan_key(const Pieces *p, Precision prec);

#endif
