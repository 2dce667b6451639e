/* pace.c - how many threads each run of a C program computes with.
 *
 * A context may use up to `max` threads (model_set_threads, else as many
 * as OpenMP would).  More are not always faster: the threads of a kernel
 * meet at a barrier after every parallel loop, and where another program
 * holds one of the processors, the thread that shares it with that
 * program comes late to every barrier (mobilenetv2 at 2 threads on 2
 * cores, one of them busy: 72 ms a run against 4 ms at one thread).  So
 * the context measures its runs and computes with the count whose recent
 * runs were the fastest, among max, max/2, max/4, ..., 1 (rounded up):
 *
 * - it runs at its current count, and now and then runs a trial of
 *   EIN_PACE_KEEP runs at the next count below or above it (in turn
 *   where there are both), once the current count has EIN_PACE_KEEP
 *   runs of its own (the first of a context is not one: it runs the
 *   load-time stages);
 * - a count's time is the median of its last EIN_PACE_KEEP runs (one
 *   lucky run on a machine whose load comes and goes decides nothing); a
 *   trial whose time beats the current count's by EIN_PACE_MARGIN makes
 *   its count the current one;
 * - trials come EIN_PACE_GAP runs after a change, then twice as far
 *   apart each time the count stays, up to EIN_PACE_GAP_MAX runs, and
 *   never sooner after a lost trial (or after leaving a count) than
 *   EIN_PACE_COST times its extra time, in runs (after a trial 4 times
 *   slower than the current count, 32 x 3 x 3 + 1 = 289 runs), so that
 *   the trials cost about 1/EIN_PACE_COST of the time at most;
 * - when the current count's time moves past EIN_PACE_SLOW times (or
 *   below 1/EIN_PACE_SLOW of) what it was at the latest trial, the load
 *   has changed, and what the trials cost with it: the next one comes
 *   EIN_PACE_GAP runs after that trial.
 *
 * The choice depends on measured times only, so it varies from run to
 * run; what a run computes does not depend on it (the thread counts
 * divide work between threads, never the terms of a sum: emit/README.md,
 * "Threads").  Here are pure functions of the times given: no clock and
 * no OpenMP, so tests/runtime/test_pace.c drives them with made-up times;
 * api_host.c times the runs and sets the counts. */
#include <string.h>
#include "rt.h" /* EMBED-SKIP */

#define EIN_PACE_MAXC 16        /* counts: max, max/2, ..., 1 (max <= 32768) */
#define EIN_PACE_KEEP 3         /* runs kept per count, and the runs of a trial */
#define EIN_PACE_MARGIN 0.97    /* a trial must take less than this times the current */
#define EIN_PACE_GAP 4          /* runs from a change to the next trial */
#define EIN_PACE_GAP_MAX 64     /* the longest gap between trials that cost nothing */
#define EIN_PACE_COST 32.0      /* runs to wait after a lost trial, per unit of extra time */
#define EIN_PACE_SLOW 1.5       /* a change of the current count's time by this factor */

typedef struct ein_pace {
    int fixed;                  /* every run at `max`: no trials (EIN_FIXED_THREADS) */
    int nc;                     /* how many counts */
    int count[EIN_PACE_MAXC];   /* the counts, from max down to 1 */
    double ms[EIN_PACE_MAXC][EIN_PACE_KEEP];    /* the last runs of each, a ring */
    long nms[EIN_PACE_MAXC];    /* runs measured at each */
    int cur;                    /* the current count's index */
    int run_at;                 /* the index of the count of the run under way */
    int up;                     /* the next trial goes above the current count */
    int trial_left;             /* runs of the trial under way still to come */
    long runs;                  /* runs measured */
    long last;                  /* the run of the latest trial or change */
    long gap;                   /* runs after it to the next trial */
    long wait;                  /* runs after it that a costly lost trial asks for */
    double base;                /* the current count's time at the latest trial */
} ein_pace;

/* Counts max, ceil(max/2), ..., 1; the current one max.  fixed: always max. */
RT_API void ein_pace_init(ein_pace *pc, int max, int fixed)
{
    memset(pc, 0, sizeof *pc);
    if (max < 1)
        max = 1;
    pc->fixed = fixed;
    for (int c = max; pc->nc < EIN_PACE_MAXC; c = (c + 1) / 2) {
        pc->count[pc->nc++] = c;
        if (c == 1)
            break;
    }
    if (pc->count[pc->nc - 1] != 1)     /* max past 2^15: 1 replaces the last */
        pc->count[pc->nc - 1] = 1;
    pc->last = 0;                       /* the first trial: after 3 runs */
    pc->gap = 0;
}

/* The median of count i's kept runs; 0 when there are none. */
RT_API double ein_pace_time(const ein_pace *pc, int i)
{
    long n = pc->nms[i] < EIN_PACE_KEEP ? pc->nms[i] : EIN_PACE_KEEP;
    double v[EIN_PACE_KEEP];
    if (n == 0)
        return 0;
    for (long k = 0; k < n; k++) {      /* insertion sort of at most 3 */
        double x = pc->ms[i][k];
        long j = k;
        for (; j > 0 && v[j - 1] > x; j--)
            v[j] = v[j - 1];
        v[j] = x;
    }
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Runs to wait before trying a count whose runs took `t` again, the
 * current count's taking `now`: a trial's extra time is about
 * 1/EIN_PACE_COST of the time from one trial to the next. */
RT_API long ein_pace_wait(double t, double now)
{
    return t > now ? (long)(EIN_PACE_COST * EIN_PACE_KEEP * (t / now - 1.0)) + 1 : 0;
}

/* The thread count of the next run: the current one, or a trial's. */
RT_API int ein_pace_next(ein_pace *pc)
{
    long wait = pc->gap > pc->wait ? pc->gap : pc->wait;
    if (pc->trial_left > 0)
        return pc->count[pc->run_at];
    pc->run_at = pc->cur;
    /* a trial is weighed against the current count's last 3 runs */
    if (pc->fixed || pc->nc < 2 || pc->runs < pc->last + wait ||
        pc->nms[pc->cur] < EIN_PACE_KEEP)
        return pc->count[pc->cur];
    int down = pc->cur + 1 < pc->nc, up = pc->cur > 0;
    pc->run_at = up && (pc->up || !down) ? pc->cur - 1 : pc->cur + 1;
    pc->trial_left = EIN_PACE_KEEP;
    return pc->count[pc->run_at];
}

/* The run of ein_pace_next took `ms` milliseconds; ms < 0: not to be
 * counted (its weights had changed, it failed). */
RT_API void ein_pace_done(ein_pace *pc, double ms)
{
    int i = pc->run_at, c = pc->cur;
    if (ms < 0 || pc->fixed)
        return;
    pc->ms[i][pc->nms[i] % EIN_PACE_KEEP] = ms;
    pc->nms[i]++;
    pc->runs++;
    if (i == c) {
        /* the machine got busier or idler */
        double now = ein_pace_time(pc, c);
        if (pc->base > 0 && (now > EIN_PACE_SLOW * pc->base || now * EIN_PACE_SLOW < pc->base)) {
            pc->gap = EIN_PACE_GAP;
            pc->wait = 0;
            pc->base = now;
        }
        return;
    }
    if (--pc->trial_left > 0)
        return;
    double t = ein_pace_time(pc, i), now = ein_pace_time(pc, c);
    pc->last = pc->runs;
    pc->up = !pc->up;
    if (now == 0 || t < EIN_PACE_MARGIN * now) {
        /* the trial wins: the count left is as a lost trial (a busy
           machine does not try 2 threads again 4 runs after leaving them
           for 1 at a quarter of the time) */
        pc->cur = i;
        pc->gap = EIN_PACE_GAP;
        pc->wait = now > 0 ? ein_pace_wait(now, t) : 0;
        pc->base = t;
        return;
    }
    pc->base = now;
    pc->gap = pc->gap * 2 < EIN_PACE_GAP_MAX ? pc->gap * 2 : EIN_PACE_GAP_MAX;
    pc->wait = ein_pace_wait(t, now);
}
