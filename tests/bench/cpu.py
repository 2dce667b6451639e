#!/usr/bin/python3
"""cpu.py - einc's C target against PyTorch eager on the CPU, for every
model of examples/ that has a PyTorch reference in tests/models/, at one
and at two threads, on an idle machine and on one where another process
keeps a processor busy (run by tests/bench/cpu.sh and busy.sh).  Not part
of `make check`: it prints numbers and asserts nothing about them.

For each model NAME (tests/models/NAME.py and examples/NAME.ein):
  1. inputs and weights made with torch as tests/num/run.py makes them
     (the model's value ranges, a seed per model), written as safetensors;
  2. `einc --main -D B=BATCH NAME.ein -o NAME.c`, built with the command on
     the first line of NAME.c (all models are built before any is timed);
  3. for each thread count T (--threads, default 1,2), REPEAT rounds of:
     `taskset -c CPUS ./NAME --threads T --bench N` (CPUS: the first T
     processors this process may use), then the PyTorch reference in a
     worker process (`cpu.py --torch-worker`) under the same taskset,
     with OMP_NUM_THREADS, OPENBLAS_NUM_THREADS (PyTorch's BLAS, which
     torch.set_num_threads leaves alone), MKL_NUM_THREADS and
     GOTO_NUM_THREADS set to T before torch is imported and
     torch.set_num_threads(T): the model's `bench_reference` where it
     has one (checked first against `reference` in float64), in f32
     under torch.no_grad(), one warm-up call, then the median of N;
     each round's figure is a median of N runs, the table's the median
     of the REPEAT rounds (the two sides alternate, so a change of load
     hits both); with --load busy (or idle,busy), the rounds of the busy
     rows run while a process of this script spins on the second
     processor this process may use (`taskset -c CPU sh -c 'while :; do
     :; done'`), which the T=2 runs share (--no-torch: einc only);
  4. the max relative error of einc's outputs against PyTorch's f32
     outputs, max|einc - torch| / max|torch| (tests/num/run.py's compare).
N is ITERS, or fewer where ITERS runs would take more than BUDGET seconds
(at least 1).  The load average is printed at the start and the end.

Usage: cpu.py [--einc PATH] [--einc-flags FLAGS] [--models A,B,...]
              [--threads 1,2] [--load idle,busy] [--no-torch] [--repeat R]
              [--iters N] [--budget S] [--batch B] [--keep DIR]
Environment: EINC, EINC_FLAGS, CC, MODELS, THREADS, LOAD, REPEAT, ITERS,
BUDGET, BATCH; OPENBLAS_CORETYPE (passed to both sides) chooses OpenBLAS's
kernels where it misdetects the processor; the rest of the environment
(EIN_FIXED_THREADS, OMP_WAIT_POLICY, ...) goes to both sides as it is.
"""

import argparse
import os
import sys
sys.dont_write_bytecode = True   # keep the source tree clean

# The torch worker sets its thread counts before torch is imported (OpenBLAS
# reads OPENBLAS_NUM_THREADS when it is loaded).
if "--torch-worker" in sys.argv:
    _t = sys.argv[sys.argv.index("--threads") + 1]
    for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
               "GOTO_NUM_THREADS"):
        os.environ[_v] = _t

import importlib.util
import json
import math
import platform
import re
import shutil
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(TOP, "tests", "num"))
sys.path.insert(0, os.path.join(TOP, "tests", "models"))

import torch                                  # noqa: E402
import eindecl                                # noqa: E402
import run as num                             # noqa: E402  tests/num/run.py
import stio                                   # noqa: E402

THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
               "GOTO_NUM_THREADS")


def all_models():
    """Every tests/models/NAME.py whose EIN is examples/NAME.ein."""
    out = []
    mdir = os.path.join(TOP, "tests", "models")
    for fn in sorted(os.listdir(mdir)):
        if fn.endswith(".py") and not fn.startswith("_"):
            name = fn[:-3]
            if os.path.exists(os.path.join(TOP, "examples", name + ".ein")):
                out.append(name)
    return out


def thread_env(t):
    return dict(os.environ, **{v: str(t) for v in THREAD_VARS})


def cpus_for(t):
    """The first t processors this process may run on, for taskset."""
    allowed = sorted(os.sched_getaffinity(0))
    return ",".join(str(c) for c in allowed[:t])


class Row:
    """One model at one thread count and load (idle or busy)."""

    def __init__(self, name, threads, load="idle"):
        self.name, self.threads, self.load = name, threads, load
        self.batch = "-"
        self.einc = []              # per round: median ms
        self.torch = []
        self.einc_n = self.torch_n = 0
        self.paced = [0, 0]         # einc's timed runs at another count, of all
        self.err = None
        self.note = ""

    def fail(self, what):
        if what not in self.note:
            self.note = (self.note + "; " if self.note else "") + what

    def einc_ms(self):
        return median(self.einc) if self.einc else None

    def torch_ms(self):
        return median(self.torch) if self.torch else None

    def ratio(self):
        e, t = self.einc_ms(), self.torch_ms()
        return t / e if e and t else None


def load_model(name):
    path = os.path.join(TOP, "tests", "models", name + ".py")
    spec = importlib.util.spec_from_file_location("model_" + name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def check_bench_reference(mod):
    """A model's bench_reference must compute what its reference does: both
    in float64 at the model's test sizes (CONFIGS); None, or what differs."""
    if not hasattr(mod, "bench_reference"):
        return None
    for label, cfg in mod.CONFIGS:
        cfg = dict(cfg)
        ins, wts = mod.shapes(cfg)
        spec = num.Spec("check/" + label, mod.EIN, ins, wts, cfg, None, 0)
        i, w = num.generate(spec)
        t = {k: v.to(torch.float64) for k, v in list(i.items()) +
             list(w.items())}
        with torch.no_grad():
            want = mod.reference(cfg, **t)
            got = mod.bench_reference(cfg, **t)
        worst, problems = num.compare(label, got, want, 1e-12)
        if problems:
            return "bench_reference differs from reference at %s: %s" % (
                label, "; ".join(problems))
    return None


def median(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def runs_for(one_s, iters, budget):
    """How many timed runs: ITERS, or as many as fit in BUDGET seconds."""
    if one_s <= 0:
        return iters
    return max(1, min(iters, int(budget / one_s)))


def config_of(mod, batch):
    """The model's constants after -D B=batch, and the -D options."""
    prog = eindecl.read(os.path.join(TOP, mod.EIN), {"B": batch})
    defines = {"B": batch} if "B" in prog.consts else {}
    return dict(prog.consts), defines


def torch_worker(a):
    """--torch-worker: time one model's PyTorch reference at a.threads
    threads (the environment set them before torch was imported); inputs
    and weights from a.wd, outputs of the first call written there; JSON
    {"ms", "n", "one_s", "blas"} on the standard output."""
    torch.set_num_threads(a.threads)
    mod = load_model(a.torch_worker)
    cfg, _ = config_of(mod, a.batch)
    ins = stio.load(os.path.join(a.wd, "in.safetensors"))
    wts = stio.load(os.path.join(a.wd, "wt.safetensors"))
    fn = getattr(mod, "bench_reference", mod.reference)
    t = {k: v.to(torch.float32) if v.is_floating_point() else v
         for k, v in list(ins.items()) + list(wts.items())}
    with torch.no_grad():
        t0 = time.perf_counter()
        ref = fn(cfg, **t)
        one = time.perf_counter() - t0
        n = a.n or runs_for(one, a.iters, a.budget)
        ms = []
        for _ in range(n):
            t0 = time.perf_counter()
            fn(cfg, **t)
            ms.append((time.perf_counter() - t0) * 1e3)
    out = os.path.join(a.wd, "torch-out.safetensors")
    if not os.path.exists(out):
        stio.save({k: v.detach().to(torch.float32).contiguous()
                   for k, v in ref.items()}, out)
    blas = "?"
    try:
        import ctypes
        lib = ctypes.CDLL("libopenblas.so.0")
        lib.openblas_get_corename.restype = ctypes.c_char_p
        blas = "OpenBLAS %s, %d threads" % (
            lib.openblas_get_corename().decode(), lib.openblas_get_num_threads())
    except (OSError, AttributeError):
        pass
    print(json.dumps({"ms": median(ms), "n": n, "one_s": one, "blas": blas}))
    return 0


class Case:
    """One model: its files, its build, its rows (one per thread count)."""

    def __init__(self, name, args, root):
        self.name, self.args = name, args
        self.rows = [Row(name, t, ld) for ld in args.load for t in args.threads]
        self.wd = os.path.join(root, name)
        self.exe = None
        self.einc_n = self.torch_n = 0
        os.makedirs(self.wd, exist_ok=True)
        self.mod = load_model(name)
        self.ein = os.path.join(TOP, self.mod.EIN)
        self.cfg, self.defines = config_of(self.mod, args.batch)
        for r in self.rows:
            r.batch = str(self.cfg.get("B", "-"))
        ins, wts = self.mod.shapes(self.cfg)
        bad = check_bench_reference(self.mod)
        if bad:
            self.fail(bad)
        self.spec = num.Spec(name, self.ein, ins, wts, self.defines, None,
                             num.TOL_DEFAULT)

    def fail(self, what):
        for r in self.rows:
            r.fail(what)

    def prepare(self):
        """Inputs, einc, the C build (run in a thread pool)."""
        try:
            ins, wts = num.generate(self.spec)
            num.check_decls(self.spec, ins, wts)
            stio.save(ins, os.path.join(self.wd, "in.safetensors"))
            stio.save(wts, os.path.join(self.wd, "wt.safetensors"))
            argv = [self.args.einc, "--main", self.ein, "-o", self.name + ".c"]
            argv += self.args.einc_flags
            for k, v in self.defines.items():
                argv += ["-D", "%s=%d" % (k, v)]
            p = num.run_cmd(argv, self.wd, 600)
            if p.returncode != 0:
                raise num.Failure("einc exited with %d: %s" % (
                    p.returncode, num.tail(p.stderr, 3)))
            cmd, exe = num.build_command(
                os.path.join(self.wd, self.name + ".c"), self.args.cc)
            cmd = cmd[:-len(" -Wall -Wextra")]      # the first line as is
            self.build_cmd = cmd
            p = num.run_cmd(cmd, self.wd, 600, shell=True)
            if p.returncode != 0:
                raise num.Failure("build failed: %s: %s" % (
                    cmd, num.tail(p.stderr + p.stdout, 3)))
            exe = exe or self.name
            self.exe = os.path.join(self.wd, exe)    # unless absolute
        except num.Failure as e:
            self.fail(str(e).replace("\n", " "))
        except Exception as e:
            self.fail("%s: %s" % (type(e).__name__, e))

    def run(self, argv, t, timeout):
        return subprocess.run(["taskset", "-c", cpus_for(t)] + argv,
                              cwd=self.wd, env=thread_env(t), timeout=timeout,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, errors="replace")

    def time_einc(self, r):
        a = self.args
        base = [self.exe, "--threads", str(r.threads),
                "--inputs", "in.safetensors", "--weights", "wt.safetensors"]
        try:
            if not self.einc_n:         # one run: the outputs, and how many fit
                t0 = time.time()
                p = self.run(base + ["--outputs", "out.safetensors"],
                             r.threads, a.timeout)
                one = time.time() - t0
                if p.returncode != 0:
                    r.fail("einc program exited with %d: %s"
                           % (p.returncode, num.tail(p.stderr, 2)))
                    return
                self.einc_n = runs_for(one, a.iters, a.budget)
                self.einc_one = one
            n = self.einc_n
            p = self.run(base + ["--bench", str(n)], r.threads,
                         a.timeout + 3 * self.einc_one * (n + 2))
            m = re.search(r"median ([0-9.]+) ms", p.stdout)
            if p.returncode != 0 or not m:
                r.fail("--bench failed (exit %d): %s"
                       % (p.returncode, num.tail(p.stderr + p.stdout, 2)))
                return
            r.einc.append(float(m.group(1)))
            r.einc_n = n
            # the pace (runtime/pace.c) runs some at fewer threads: its
            # trials, or its choice where fewer were faster
            at = re.search(r"runs per thread count:([0-9: ]*)", p.stdout)
            if at:
                f = [int(x) for x in at.group(1).replace(":", " ").split()]
                for cnt, runs in zip(f[0::2], f[1::2]):
                    r.paced[1] += runs
                    if cnt != r.threads:
                        r.paced[0] += runs
        except subprocess.TimeoutExpired:
            r.fail("einc program timed out")
        except Exception as e:
            r.fail("einc: %s: %s" % (type(e).__name__, e))

    def time_torch(self, r):
        a = self.args
        argv = [sys.executable, os.path.abspath(__file__), "--torch-worker",
                self.name, "--threads", str(r.threads), "--wd", self.wd,
                "--batch", str(a.batch), "--iters", str(a.iters),
                "--budget", str(a.budget), "--n", str(self.torch_n)]
        try:
            p = self.run(argv, r.threads, a.timeout * 4)
            if p.returncode != 0:
                r.fail("torch: exit %d: %s" % (p.returncode,
                                               num.tail(p.stderr, 2)))
                return
            res = json.loads(p.stdout.strip().splitlines()[-1])
            self.torch_n = res["n"]
            r.torch.append(res["ms"])
            r.torch_n = res["n"]
            self.blas = res["blas"]
        except subprocess.TimeoutExpired:
            r.fail("torch timed out")
        except Exception as e:
            r.fail("torch: %s: %s" % (type(e).__name__, e))

    def check(self):
        """einc's outputs against PyTorch's f32 ones."""
        try:
            out = stio.load(os.path.join(self.wd, "out.safetensors"))
            ref = stio.load(os.path.join(self.wd, "torch-out.safetensors"))
        except Exception as e:
            self.fail("no outputs to compare: %s" % e)
            return
        worst, problems = num.compare(self.name, out, ref, self.args.tol)
        for r in self.rows:
            r.err = worst
        if problems:
            self.fail("; ".join(problems))

    def bench(self):
        if not self.exe:
            return
        for rnd in range(self.args.repeat):
            for ld in self.args.load:
                spinner = start_spinner() if ld == "busy" else None
                try:
                    for r in self.rows:
                        if r.load != ld:
                            continue
                        self.time_einc(r)
                        if not self.args.no_torch:
                            self.time_torch(r)
                finally:
                    stop_spinner(spinner)
        if not self.args.no_torch:
            self.check()

    def one_thread(self, r):
        """The row at one thread and r's load, if any."""
        return next((x for x in self.rows
                     if x.threads == 1 and x.load == r.load), None)


def spin_cpu():
    """The processor the busy rows' spinner runs on: the second one this
    process may use (the T=2 runs share it, the T=1 runs do not)."""
    return sorted(os.sched_getaffinity(0))[1]


def start_spinner():
    """A process that keeps spin_cpu() busy until stop_spinner."""
    return subprocess.Popen(["taskset", "-c", str(spin_cpu()), "sh", "-c",
                             "while :; do :; done"])


def stop_spinner(p):
    if p is not None:
        p.kill()
        p.wait()


def fmt_ms(ms):
    if ms is None:
        return "-"
    if ms < 10:
        return "%.3f" % ms
    return "%.1f" % ms if ms < 1000 else "%.0f" % ms


def geomean(v):
    v = [x for x in v if x]
    return math.exp(sum(math.log(x) for x in v) / len(v)) if v else None


def table(cases, a):
    ts = a.threads
    print("| model | B | load | threads | einc C ms | runs | PyTorch ms | runs "
          "| PyTorch / einc | einc vs 1 thread | max rel err | note |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for c in cases:
        for r in c.rows:
            r1 = c.one_thread(r)
            one = r1.einc_ms() if r1 else None
            ratio = r.ratio()
            scale = "-"
            if one and r.einc_ms() and r.threads != 1:
                scale = "%.2fx" % (one / r.einc_ms())
            err = "-" if r.err is None else "%.1e" % r.err
            note = r.note
            if r.paced[0]:
                note = ("einc: %d of %d runs at fewer threads (its pace, "
                        "runtime/pace.c)" % tuple(r.paced)
                        + ("; " + note if note else ""))
            if 0 < r.einc_n < a.iters or 0 < r.torch_n < a.iters:
                note = ("fewer runs (budget)" + ("; " + note if note else ""))
            spread = ""
            if len(r.einc) > 1:
                spread = " (%s-%s)" % (fmt_ms(min(r.einc)), fmt_ms(max(r.einc)))
            print("| %s | %s | %s | %d | %s%s | %s | %s | %s | %s | %s | %s | %s |" % (
                r.name, r.batch, r.load, r.threads, fmt_ms(r.einc_ms()), spread,
                r.einc_n or "-", fmt_ms(r.torch_ms()), r.torch_n or "-",
                "-" if ratio is None else "%.3g" % ratio, scale, err,
                note.replace("|", "/")))
    print()
    for ld in a.load:
        for t in ts:
            rows = [r for c in cases for r in c.rows
                    if r.threads == t and r.load == ld]
            rs = [r.ratio() for r in rows]
            g = geomean(rs)
            if a.no_torch:
                break
            slower = [r.name for r in rows
                      if r.ratio() is not None and r.ratio() < 1]
            print("- %s, %d thread%s: geometric mean of PyTorch / einc %s over "
                  "%d models; slower than PyTorch: %s" % (
                      ld, t, "" if t == 1 else "s",
                      "-" if g is None else "%.3g" % g,
                      len([x for x in rs if x]), ", ".join(slower) or "none"))
        if len(ts) > 1 and ts[0] == 1:
            for t in ts[1:]:
                worse, scale = [], []
                for c in cases:
                    r1 = next((r for r in c.rows
                               if r.threads == 1 and r.load == ld), None)
                    rt = next((r for r in c.rows
                               if r.threads == t and r.load == ld), None)
                    e1 = r1.einc_ms() if r1 else None
                    et = rt.einc_ms() if rt else None
                    if e1 and et:
                        scale.append(e1 / et)
                        if et > e1:
                            worse.append("%s (%.2fx)" % (c.name, e1 / et))
                g = geomean(scale)
                print("- %s: einc at %d threads against 1: geometric mean %s; "
                      "slower than at 1: %s" % (
                          ld, t, "-" if g is None else "%.2fx" % g,
                          ", ".join(worse) or "none"))


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def loadavg():
    try:
        return " ".join(open("/proc/loadavg").read().split()[:3])
    except OSError:
        return "?"


def main():
    env = os.environ
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--einc", default=env.get("EINC"))
    ap.add_argument("--cc", default=env.get("CC"))
    ap.add_argument("--einc-flags", default=env.get("EINC_FLAGS", ""),
                    help="extra einc options, blank-separated (e.g. "
                         "--device=h200: the C file priced for a GPU)")
    ap.add_argument("--models", default=env.get("MODELS", ""),
                    help="comma- or space-separated (default: every model "
                         "of examples/ with a tests/models reference)")
    ap.add_argument("--threads", default=env.get("THREADS", "1,2"),
                    help="thread counts, comma-separated (default 1,2)")
    ap.add_argument("--load", default=env.get("LOAD", "idle"),
                    help="idle, busy or both (comma-separated): busy rows "
                         "run while a process spins on the second "
                         "processor (default idle)")
    ap.add_argument("--no-torch", action="store_true",
                    help="time einc's programs only")
    ap.add_argument("--repeat", type=int, default=int(env.get("REPEAT", "3")),
                    help="rounds per model and thread count; the table has "
                         "the median (default 3)")
    ap.add_argument("--iters", type=int, default=int(env.get("ITERS", "10")),
                    help="timed runs per side and round at most (default 10)")
    ap.add_argument("--budget", type=float,
                    default=float(env.get("BUDGET", "10")),
                    help="seconds of timed runs per side, round and model at "
                         "most, the runs at least 1 (default 10)")
    ap.add_argument("--batch", type=int, default=int(env.get("BATCH", "1")))
    ap.add_argument("--timeout", type=float, default=600,
                    help="seconds one einc program run may take")
    ap.add_argument("--tol", type=float, default=1e-4,
                    help="flag a rel err at or above this in the note")
    ap.add_argument("--keep", help="work in this folder and keep it")
    # the worker that times PyTorch in a process of its own
    ap.add_argument("--torch-worker", help=argparse.SUPPRESS)
    ap.add_argument("--wd", help=argparse.SUPPRESS)
    ap.add_argument("--n", type=int, default=0, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.torch_worker:
        a.threads = int(a.threads)
        return torch_worker(a)
    a.threads = [int(t) for t in re.split(r"[,\s]+", a.threads) if t]
    a.load = [x for x in re.split(r"[,\s]+", a.load) if x]
    if not a.load or any(x not in ("idle", "busy") for x in a.load):
        ap.error("--load: idle, busy or idle,busy")
    if "busy" in a.load and len(os.sched_getaffinity(0)) < 2:
        ap.error("--load busy: needs two processors")
    if not a.threads or min(a.threads) < 1:
        ap.error("--threads: positive counts")
    if max(a.threads) > len(os.sched_getaffinity(0)):
        ap.error("--threads: only %d processors here" % len(os.sched_getaffinity(0)))
    a.einc_flags = a.einc_flags.split()
    names = [n for n in re.split(r"[,\s]+", a.models) if n] or all_models()
    for n in names:
        if not os.path.exists(os.path.join(TOP, "tests", "models", n + ".py")):
            ap.error("no model '%s' (tests/models/%s.py)" % (n, n))
    if not a.einc or not os.access(a.einc, os.X_OK):
        ap.error("no einc to run (set EINC or --einc): %r" % a.einc)
    if not shutil.which("taskset"):
        ap.error("taskset (util-linux) is needed to pin the threads")
    a.einc = os.path.abspath(a.einc)
    ver = subprocess.run([a.einc, "--version"], stdout=subprocess.PIPE,
                         universal_newlines=True).stdout.split("\n")[0]
    try:
        git = subprocess.run(["git", "-C", TOP, "describe", "--always",
                              "--dirty"], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL,
                             universal_newlines=True).stdout.strip()
        inside = os.path.commonpath([a.einc, TOP]) == TOP
        if git and inside:
            ver += " (source tree %s)" % git
        elif git:
            ver += " (%s; the scripts' source tree %s)" % (a.einc, git)
    except (OSError, ValueError):
        pass

    root = os.path.abspath(a.keep or
                           tempfile.mkdtemp(prefix="einc-bench-cpu."))
    os.makedirs(root, exist_ok=True)
    t_start = time.time()
    load0 = loadavg()
    try:
        cases = [Case(n, a, root) for n in names]
        with ThreadPoolExecutor(max_workers=2) as ex:     # einc and cc
            list(ex.map(lambda c: c.prepare(), cases))
        t_built = time.time()
        load1 = loadavg()
        for c in cases:
            c.bench()
            for r in c.rows:
                print("%-12s %d thr: einc %s ms %s, torch %s ms %s, err %s %s" % (
                    c.name, r.threads, fmt_ms(r.einc_ms()),
                    [fmt_ms(x) for x in r.einc], fmt_ms(r.torch_ms()),
                    [fmt_ms(x) for x in r.torch],
                    "-" if r.err is None else "%.1e" % r.err, r.note),
                    file=sys.stderr, flush=True)
    finally:
        if not a.keep:
            shutil.rmtree(root, ignore_errors=True)
    t_end = time.time()
    if a.no_torch:
        print("einc C target on the CPU, %s" % " and ".join(
            "idle" if x == "idle" else "with one processor busy" for x in a.load))
    else:
        print("einc C target against PyTorch %s eager on the CPU"
              % torch.__version__.split("+")[0])
    print()
    print("- machine: %s, %s processors (%s usable); load average %s at the "
          "start, %s after the builds, %s at the end" % (
              cpu_name(), os.cpu_count(), len(os.sched_getaffinity(0)),
              load0, load1, loadavg()))
    cmd = next((c.build_cmd for c in cases if hasattr(c, "build_cmd")), "?")
    print("- %s; each .c built with the command on its first line, e.g. "
          "`%s`" % (ver, cmd))
    print("- einc options: `--main -D B=%d%s`; PyTorch: %s" % (
        a.batch, "".join(" " + f for f in a.einc_flags),
        next((c.blas for c in cases if hasattr(c, "blas")), "?")
        + (", OPENBLAS_CORETYPE=" + env["OPENBLAS_CORETYPE"]
           if env.get("OPENBLAS_CORETYPE") else "")))
    print("- both sides pinned with taskset to the first T processors, "
          "OMP/OPENBLAS/MKL/GOTO_NUM_THREADS=T, `--threads T`, "
          "torch.set_num_threads(T)%s" % (
              "; busy rows: a process spinning on processor %d all along "
              "(`taskset -c %d sh -c 'while :; do :; done'`)" % (
                  spin_cpu(), spin_cpu()) if "busy" in a.load else ""))
    fixed = [v for v in ("EIN_FIXED_THREADS", "OMP_WAIT_POLICY",
                         "GOMP_SPINCOUNT") if env.get(v)]
    if fixed:
        print("- environment: %s" % ", ".join(
            "%s=%s" % (v, env[v]) for v in fixed))
    print("- each figure: the median of REPEAT=%d rounds (einc's range in "
          "brackets), each the median of ITERS=%d runs after a warm-up, "
          "fewer where they would take more than BUDGET=%g s"
          % (a.repeat, a.iters, a.budget))
    print("- PyTorch / einc > 1: einc is faster; max rel err: einc's outputs "
          "against PyTorch's f32 ones, max|einc - torch| / max|torch|")
    print("- wall time %.0f s (prepare %.0f s)" % (t_end - t_start,
                                                  t_built - t_start))
    print()
    table(cases, a)
    return 0 if all(not r.note for c in cases for r in c.rows) else 1


if __name__ == "__main__":
    sys.exit(main())
