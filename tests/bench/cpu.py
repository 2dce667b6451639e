#!/usr/bin/python3
"""cpu.py - einc's C target against PyTorch on the CPU, one thread each, for
the seven models of examples/ (run by tests/bench/cpu.sh).  Not part of
`make check`: it prints numbers and asserts nothing about them.

For each model NAME (tests/models/NAME.py, the numerical suite's PyTorch
reference, and examples/NAME.ein):
  1. inputs and weights made with torch as tests/num/run.py makes them
     (the model's value ranges, a seed per model), written as safetensors;
  2. `einc --main -D B=BATCH NAME.ein -o NAME.c`, built with the command on
     the first line of NAME.c (all models are built before any is timed);
  3. `./NAME --inputs F --weights F --outputs F` once (its wall time sets
     how many timed runs fit in the budget), then `./NAME --inputs F
     --weights F --bench N`: the median of N runs after a warm-up, as the
     program prints it;
  4. PyTorch: the model's reference (its `bench_reference` where it has
     one, checked first against `reference` in float64 at the model's test
     sizes) in f32 under torch.no_grad(), torch.set_num_threads(1): one
     warm-up run (which sets N the same way), then the median of N runs;
  5. the max relative error of einc's outputs against PyTorch's f32
     outputs, max|einc - torch| / max|torch| (tests/num/run.py's compare).
N is ITERS, or fewer where ITERS runs would take more than BUDGET seconds
(at least 1); the table gives N for both sides.  Everything is timed one
model at a time with OMP_NUM_THREADS=1, OPENBLAS_NUM_THREADS=1 (cpu.sh
sets them) so that the two sides run on one core each.

Usage: cpu.py [--einc PATH] [--einc-flags FLAGS] [--models A,B,...]
              [--iters N] [--budget S] [--batch B] [--keep DIR]
Environment: EINC, EINC_FLAGS, top_srcdir, CC, MODELS, ITERS, BUDGET, BATCH.
"""

import argparse
import sys
sys.dont_write_bytecode = True   # keep the source tree clean

import importlib.util
import os
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

MODELS = ["infogan", "dcgan", "fsrcnn", "csrnet", "resnet18", "longformer",
          "gcn"]
ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
              "MKL_NUM_THREADS": "1", "GOTO_NUM_THREADS": "1"}


class Row:
    def __init__(self, name):
        self.name = name
        self.batch = "-"
        self.einc_ms = self.torch_ms = None
        self.einc_n = self.torch_n = 0
        self.err = None
        self.note = ""

    def fail(self, what):
        self.note = (self.note + "; " if self.note else "") + what


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


class Case:
    """One model: its files, its build, its torch tensors."""

    def __init__(self, name, args, root):
        self.name, self.args = name, args
        self.row = Row(name)
        self.wd = os.path.join(root, name)
        self.exe = None
        os.makedirs(self.wd, exist_ok=True)
        self.mod = load_model(name)
        self.ein = os.path.join(TOP, self.mod.EIN)
        prog = eindecl.read(self.ein, {"B": args.batch})
        self.defines = {"B": args.batch} if "B" in prog.consts else {}
        self.cfg = dict(prog.consts)          # every constant, after -D
        self.row.batch = str(self.cfg.get("B", "-"))
        ins, wts = self.mod.shapes(self.cfg)
        bad = check_bench_reference(self.mod)
        if bad:
            self.row.fail(bad)
        self.spec = num.Spec(name, self.ein, ins, wts, self.defines, None,
                             num.TOL_DEFAULT)

    def prepare(self):
        """Inputs, einc, the C build (run in a thread pool)."""
        r = self.row
        try:
            self.ins, self.wts = num.generate(self.spec)
            num.check_decls(self.spec, self.ins, self.wts)
            stio.save(self.ins, os.path.join(self.wd, "in.safetensors"))
            stio.save(self.wts, os.path.join(self.wd, "wt.safetensors"))
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
            r.fail(str(e).replace("\n", " "))
        except Exception as e:
            r.fail("%s: %s" % (type(e).__name__, e))

    def time_einc(self):
        r, a = self.row, self.args
        if not self.exe:
            return None
        env = dict(os.environ, **ONE_THREAD)
        base = [self.exe, "--inputs", "in.safetensors",
                "--weights", "wt.safetensors"]
        try:
            t0 = time.time()
            p = subprocess.run(base + ["--outputs", "out.safetensors"],
                               cwd=self.wd, env=env, timeout=a.timeout,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               universal_newlines=True, errors="replace")
            one = time.time() - t0
            if p.returncode != 0:
                r.fail("einc program exited with %d: %s"
                       % (p.returncode, num.tail(p.stderr, 2)))
                return None
            out = stio.load(os.path.join(self.wd, "out.safetensors"))
            n = runs_for(one, a.iters, a.budget)
            p = subprocess.run(base + ["--bench", str(n)], cwd=self.wd,
                               env=env, timeout=a.timeout + 3 * one * (n + 2),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               universal_newlines=True, errors="replace")
            m = re.search(r"median ([0-9.]+) ms", p.stdout)
            if p.returncode != 0 or not m:
                r.fail("--bench failed (exit %d): %s"
                       % (p.returncode, num.tail(p.stderr + p.stdout, 2)))
                return out
            r.einc_ms, r.einc_n = float(m.group(1)), n
            return out
        except subprocess.TimeoutExpired:
            r.fail("einc program timed out")
        except Exception as e:
            r.fail("einc: %s: %s" % (type(e).__name__, e))
        return None

    def time_torch(self):
        r, a = self.row, self.args
        fn = getattr(self.mod, "bench_reference", self.mod.reference)
        t = {k: v.to(torch.float32) for k, v in self.ins.items()}
        t.update({k: v.to(torch.float32) for k, v in self.wts.items()})
        try:
            with torch.no_grad():
                t0 = time.perf_counter()
                ref = fn(self.cfg, **t)
                one = time.perf_counter() - t0
                n = runs_for(one, a.iters, a.budget)
                ms = []
                for _ in range(n):
                    t0 = time.perf_counter()
                    fn(self.cfg, **t)
                    ms.append((time.perf_counter() - t0) * 1e3)
            r.torch_ms, r.torch_n = median(ms), n
            return ref
        except Exception as e:
            r.fail("torch: %s: %s" % (type(e).__name__, e))
        return None

    def bench(self):
        out = self.time_einc()
        ref = self.time_torch()
        if out is not None and ref is not None:
            worst, problems = num.compare(self.name, out, ref, self.args.tol)
            self.row.err = worst
            if problems:
                self.row.fail("; ".join(problems))
        # free the big tensors before the next model
        self.ins = self.wts = None


def fmt_ms(ms):
    if ms is None:
        return "-"
    if ms < 10:
        return "%.3f" % ms
    return "%.1f" % ms if ms < 1000 else "%.0f" % ms


def table(rows, iters):
    print("| model | B | einc C ms | runs | PyTorch ms | runs "
          "| PyTorch / einc | max rel err | note |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        ratio = "-"
        if r.einc_ms and r.torch_ms:
            ratio = "%.3g" % (r.torch_ms / r.einc_ms)
        err = "-" if r.err is None else "%.1e" % r.err
        note = r.note
        if 0 < r.einc_n < iters or 0 < r.torch_n < iters:
            note = ("fewer runs (budget)" + ("; " + note if note else ""))
        print("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r.name, r.batch, fmt_ms(r.einc_ms), r.einc_n or "-",
            fmt_ms(r.torch_ms), r.torch_n or "-", ratio, err,
            note.replace("|", "/")))


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
                         "--device=cpu)")
    ap.add_argument("--models", default=env.get("MODELS", ",".join(MODELS)),
                    help="comma- or space-separated (default: all seven)")
    ap.add_argument("--iters", type=int, default=int(env.get("ITERS", "10")),
                    help="timed runs per side at most (default 10)")
    ap.add_argument("--budget", type=float,
                    default=float(env.get("BUDGET", "20")),
                    help="seconds of timed runs per side and model at most, "
                         "the runs at least 1 (default 20)")
    ap.add_argument("--batch", type=int, default=int(env.get("BATCH", "1")))
    ap.add_argument("--timeout", type=float, default=600,
                    help="seconds one einc program run may take")
    ap.add_argument("--tol", type=float, default=1e-4,
                    help="flag a rel err at or above this in the note")
    ap.add_argument("--keep", help="work in this folder and keep it")
    a = ap.parse_args()
    a.einc_flags = a.einc_flags.split()
    torch.set_num_threads(1)
    names = [n for n in re.split(r"[,\s]+", a.models) if n]
    for n in names:
        if not os.path.exists(os.path.join(TOP, "tests", "models", n + ".py")):
            ap.error("no model '%s' (tests/models/%s.py)" % (n, n))
    if not a.einc or not os.access(a.einc, os.X_OK):
        ap.error("no einc to run (set EINC or --einc): %r" % a.einc)
    a.einc = os.path.abspath(a.einc)
    ver = subprocess.run([a.einc, "--version"], stdout=subprocess.PIPE,
                         universal_newlines=True).stdout.split("\n")[0]
    try:
        git = subprocess.run(["git", "-C", TOP, "describe", "--always",
                              "--dirty"], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL,
                             universal_newlines=True).stdout.strip()
        if git:
            ver += " (source tree %s)" % git
    except OSError:
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
        for c in cases:
            c.bench()
            r = c.row
            print("%-10s einc %s ms (%d), torch %s ms (%d), err %s %s" % (
                c.name, fmt_ms(r.einc_ms), r.einc_n, fmt_ms(r.torch_ms),
                r.torch_n, "-" if r.err is None else "%.1e" % r.err, r.note),
                file=sys.stderr, flush=True)
    finally:
        if not a.keep:
            shutil.rmtree(root, ignore_errors=True)
    t_end = time.time()
    print("einc C target against PyTorch %s on the CPU, one thread each"
          % torch.__version__.split("+")[0])
    print()
    print("- machine: %s, %s cores; load average %s at the start, %s at the "
          "end" % (cpu_name(), os.cpu_count(), load0, loadavg()))
    cmd = next((c.build_cmd for c in cases if hasattr(c, "build_cmd")), "?")
    print("- %s; each .c built with the command on its first line, e.g. "
          "`%s`" % (ver, cmd))
    print("- einc options: `--main -D B=%d%s`" % (
        a.batch, "".join(" " + f for f in a.einc_flags)))
    print("- median of ITERS=%d runs after a warm-up, fewer where they "
          "would take more than BUDGET=%g s (the runs column); batch %d"
          % (a.iters, a.budget, a.batch))
    print("- PyTorch / einc > 1: einc is faster; max rel err: einc's outputs "
          "against PyTorch's f32 ones, max|einc - torch| / max|torch|")
    print("- wall time %.0f s (prepare %.0f s)" % (t_end - t_start,
                                                  t_built - t_start))
    print()
    table([c.row for c in cases], a.iters)
    return 0 if all(not c.row.note for c in cases) else 1


if __name__ == "__main__":
    sys.exit(main())
