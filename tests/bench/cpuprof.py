#!/usr/bin/python3
"""cpuprof.py - where the time of an einc C program goes, operator by
operator, next to what the cost model estimated (a helper of cpucal.sh and
of the cost model's CPU figures; not part of `make check`).

  cpuprof.py [--einc EINC] [--iters N] [--threads T] [--keep DIR] FILE.ein
             [EINC OPTION]...

compiles FILE.ein twice with the options given (`--emit=plan` for the
estimates, `--main -o x.c` for the program), wraps every operator call of
the generated run function (`ein_op_N`) in a clock, builds it with the
command on its first line, runs `./x --threads T --bench N` (T threads,
default 1; OMP_NUM_THREADS and OPENBLAS_NUM_THREADS T) and prints, per operator, the
plan's line, its estimate and the median measured microseconds, then the
totals.  Inputs and weights are the program's seeded values.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
sys.dont_write_bytecode = True

PRELUDE = r"""
#include <time.h>
#include <stdio.h>
#define EIN_PROF_OPS %d
#define EIN_PROF_RUNS 4096
static double ein_prof_t[EIN_PROF_OPS][64];
static double *ein_prof_s[EIN_PROF_OPS];
static int ein_prof_n[EIN_PROF_OPS];
static const char *ein_prof_name[EIN_PROF_OPS] = {%s};
static int ein_prof_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
static void ein_prof_dump(void)
{
    for (int i = 0; i < EIN_PROF_OPS; i++) {
        int n = ein_prof_n[i] < EIN_PROF_RUNS ? ein_prof_n[i] : EIN_PROF_RUNS;
        if (n == 0 || !ein_prof_s[i])
            continue;
        qsort(ein_prof_s[i], (size_t)n, sizeof(double), ein_prof_cmp);
        fprintf(stderr, "EINPROF %%s %%.3f %%d\n", ein_prof_name[i], ein_prof_s[i][n / 2], n);
    }
}
static int ein_prof_call(int i, int (*f)(void *, void *const *), void *ctx, void *const *p)
{
    static int init;
    if (!init) {
        init = 1;
        atexit(ein_prof_dump);
    }
    if (!ein_prof_s[i])
        ein_prof_s[i] = calloc(EIN_PROF_RUNS, sizeof(double));
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    int rc = f(ctx, p);
    clock_gettime(CLOCK_MONOTONIC, &b);
    if (ein_prof_n[i] < EIN_PROF_RUNS)
        ein_prof_s[i][ein_prof_n[i]] = (b.tv_sec - a.tv_sec) * 1e6 + (b.tv_nsec - a.tv_nsec) * 1e-3;
    ein_prof_n[i]++;
    return rc;
}
"""


def instrument(src):
    """The program with every operator call of ein_run_stages timed."""
    names = {}
    for m in re.finditer(r"/\* (\S+): [^*]*\*/\nstatic int ein_op_(\d+)\(", src):
        names[int(m.group(2))] = m.group(1)
    start = src.index("static int ein_run_stages(")
    end = src.index("\n}\n", start)
    body = src[start:end]
    ops = sorted(names)
    index = {n: i for i, n in enumerate(ops)}
    body = re.sub(r"ein_op_(\d+)\(ctx, p\)",
                  lambda m: "ein_prof_call(%d, (int (*)(void *, void *const *))"
                            "ein_op_%s, ctx, p)" % (index[int(m.group(1))],
                                                    m.group(1)), body)
    pre = PRELUDE % (max(1, len(ops)),
                     ", ".join('"%s"' % names[n] for n in ops) or '""')
    return src[:start] + pre + body + src[end:]


def profile(einc, path, opts, iters, keep=None, threads=1):
    """Compile `path` with `opts`, time it operator by operator (`threads`
    threads, `--bench iters`): (the --emit=plan text, {tensor: median us},
    the program's standard output)."""
    wd = os.path.abspath(keep or tempfile.mkdtemp(prefix="einc-cpuprof."))
    os.makedirs(wd, exist_ok=True)
    try:
        plan = subprocess.run([einc, "--emit=plan", "--target=c", path, "-o", "-"] + opts,
                              stdout=subprocess.PIPE, universal_newlines=True,
                              check=True).stdout
        subprocess.run([einc, "--main", path, "-o",
                        os.path.join(wd, "x.c")] + opts, check=True)
        src = open(os.path.join(wd, "x.c")).read()
        cmd = src.split("\n", 1)[0]
        cmd = re.sub(r"^/\* build: (.*) \*/$", r"\1", cmd)
        open(os.path.join(wd, "x.c"), "w").write(instrument(src))
        subprocess.run(cmd, shell=True, cwd=wd, check=True)
        env = dict(os.environ, OMP_NUM_THREADS=str(threads),
                   OPENBLAS_NUM_THREADS=str(threads))
        p = subprocess.run(["./x", "--threads", str(threads), "--bench", str(iters)],
                           cwd=wd, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, check=True)
    finally:
        if not keep:
            shutil.rmtree(wd, ignore_errors=True)
    meas = {}
    for line in p.stderr.split("\n"):
        f = line.split()
        if len(f) == 4 and f[0] == "EINPROF":
            meas[f[1]] = float(f[2])
    return plan, meas, p.stdout


def plan_ops(plan):
    """The operators of a --emit=plan text: (kind, tensor, estimated us,
    at load, the line)."""
    ops = []
    for line in plan.split("\n")[1:]:
        m = re.match(r"(\S+)\s+(\S+)\s.*?\s([0-9.]+) us( \(at load\))?$", line)
        if m:
            ops.append((m.group(1), m.group(2), float(m.group(3)),
                        bool(m.group(4)), line))
    return ops


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--einc", default=os.environ.get("EINC", "./einc"))
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--keep")
    ap.add_argument("file")
    a, rest = ap.parse_known_args()
    plan, meas, out = profile(os.path.abspath(a.einc), a.file, rest, a.iters,
                              a.keep, a.threads)
    est_total = meas_total = 0.0
    print(plan.split("\n", 1)[0])
    print("%9s %9s %6s  %s" % ("est us", "meas us", "ratio", "operator"))
    for kind, name, est, load, line in plan_ops(plan):
        if load:
            print("%9.2f %9s %6s  %s" % (est, "load", "", line[:110]))
            continue
        t = meas.get(name)
        est_total += est
        if t is not None:
            meas_total += t
        print("%9.2f %9s %6s  %s" % (
            est, "-" if t is None else "%.2f" % t,
            "-" if not t else "%.2f" % (est / t), line[:110]))
    print("%9.2f %9.2f %6.2f  total (%s)" % (
        est_total, meas_total, est_total / meas_total if meas_total else 0,
        out.strip().split("\n")[-1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
