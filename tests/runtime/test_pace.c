/* test_pace.c - runtime/pace.c, the thread counts of a C program's runs,
 * driven with made-up run times: a machine where more threads are
 * faster keeps them; one where they are slower (a busy processor) drops
 * to fewer within a few runs, and goes back when the load goes; trials
 * thin out while the count stays, and a costly trial waits longer; one
 * lucky run decides nothing; EIN_FIXED_THREADS's `fixed` never moves;
 * the counts for 1, 2, 6 and 4096 threads. */
#include <stdio.h>
#include <string.h>
#include "runtime/pace.c"

static int failures;

static void check(int ok, const char *what)
{
    printf("%s: %s\n", ok ? "ok" : "FAIL", what);
    failures += !ok;
}

/* A machine: the time of a run at n threads. */
typedef double (*machine)(int n);

static double idle2(int n)        /* two threads twice as fast */
{
    return n >= 2 ? 5.0 : 10.0;
}

static double busy2(int n)        /* one of two processors busy */
{
    return n >= 2 ? 40.0 : 10.0;
}

static double tiny(int n)         /* too little work for threads */
{
    return n >= 2 ? 0.03 : 0.025;
}

static double big8(int n)         /* 8 processors, 3 of them busy */
{
    return n <= 4 ? 40.0 / n : 100.0;
}

/* at[] counts the runs at each thread count (index: count, up to 8);
   total: their time. */
static double total;

static int drive(ein_pace *pc, machine m, int runs, long at[9])
{
    int n = 0;
    total = 0;
    for (int i = 0; i < runs; i++) {
        n = ein_pace_next(pc);
        if (at && n <= 8)
            at[n]++;
        total += m(n);
        ein_pace_done(pc, m(n));
    }
    return n;
}

int main(void)
{
    ein_pace pc;
    long at[9];

    ein_pace_init(&pc, 2, 0);
    check(pc.nc == 2 && pc.count[0] == 2 && pc.count[1] == 1, "counts for 2: 2 1");
    ein_pace_init(&pc, 6, 0);
    check(pc.nc == 4 && pc.count[0] == 6 && pc.count[1] == 3 && pc.count[2] == 2 &&
              pc.count[3] == 1, "counts for 6: 6 3 2 1");
    ein_pace_init(&pc, 1, 0);
    check(pc.nc == 1 && drive(&pc, busy2, 50, NULL) == 1, "one thread: always 1");
    ein_pace_init(&pc, 4096, 0);
    check(pc.nc == 13 && pc.count[12] == 1, "counts for 4096: 13, down to 1");

    /* idle: 2 stays; the trials at 1 thin out */
    ein_pace_init(&pc, 2, 0);
    memset(at, 0, sizeof at);
    check(drive(&pc, idle2, 1000, at) == 2 && at[2] > 950,
          "idle, two faster: 2 threads (more than 950 runs of 1000)");

    /* busy: 1 from the first trial on (the fourth run), and trials at 2
     * rare as they cost 4 runs each */
    ein_pace_init(&pc, 2, 0);
    memset(at, 0, sizeof at);
    drive(&pc, busy2, 3, at);
    check(at[2] == 3, "the first 3 runs: all threads");
    check(ein_pace_next(&pc) == 1, "the fourth run: a trial at 1");
    ein_pace_done(&pc, busy2(1));
    drive(&pc, busy2, 2, NULL);
    check(pc.cur == 1, "after the trial's 3 runs: 1 thread");
    memset(at, 0, sizeof at);
    drive(&pc, busy2, 250, at);
    check(at[2] == 0, "2 threads, 4 times slower, left: not tried again for 250 runs");
    drive(&pc, busy2, 1000, at);
    check(at[1] > 950 && total < 1.05 * 1000 * busy2(1),
          "busy: the trials at 2 threads cost less than 5% of the time");

    /* the load goes: back to 2 once the wait after the costly trials is
     * over (about 289 runs) */
    memset(at, 0, sizeof at);
    int n = drive(&pc, idle2, 400, at);
    check(n == 2 && at[2] > 50, "the load gone: back to 2 threads");

    /* and comes back: a slow run brings the trial forward */
    memset(at, 0, sizeof at);
    drive(&pc, busy2, 20, at);
    check(pc.cur == 1 && at[2] <= 12, "busy again: 1 thread within 20 runs");

    /* a slow first run at 2 on an idle machine decides nothing */
    ein_pace_init(&pc, 2, 0);
    ein_pace_next(&pc);
    ein_pace_done(&pc, 3 * idle2(2));
    drive(&pc, idle2, 20, NULL);
    check(pc.cur == 0, "idle, the first run at 2 slow: still 2 threads");

    /* one lucky run at 2 on a busy machine decides nothing */
    ein_pace_init(&pc, 2, 0);
    drive(&pc, busy2, 6, NULL);        /* 1 is current */
    for (int i = 0; pc.cur == 1 && i < 2000; i++) {
        int k = ein_pace_next(&pc);
        /* the first run of each trial at 2 is lucky */
        ein_pace_done(&pc, k == 2 && pc.trial_left == EIN_PACE_KEEP ? 2.0 : busy2(k));
    }
    check(pc.cur == 1, "a lucky first run of each trial: still 1 thread");

    /* too little work: 1 (within the margin either way: no flapping) */
    ein_pace_init(&pc, 2, 0);
    memset(at, 0, sizeof at);
    check(drive(&pc, tiny, 1000, at) == 1 && at[2] < 100, "tiny runs: 1 thread");

    /* 8 threads, 3 processors busy: down the halvings to 4 */
    ein_pace_init(&pc, 8, 0);
    drive(&pc, big8, 300, NULL);
    check(pc.count[pc.cur] == 4, "8 threads, 3 busy processors: 4");

    /* runs not to be counted change nothing */
    ein_pace_init(&pc, 2, 0);
    for (int i = 0; i < 10; i++) {
        ein_pace_next(&pc);
        ein_pace_done(&pc, -1.0);
    }
    check(pc.runs == 0 && pc.cur == 0, "uncounted runs: nothing measured");

    /* fixed: always the count given */
    ein_pace_init(&pc, 2, 1);
    memset(at, 0, sizeof at);
    drive(&pc, busy2, 100, at);
    check(at[2] == 100, "fixed: every run at 2");

    printf("%d failures\n", failures);
    return failures != 0;
}
