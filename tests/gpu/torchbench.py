"""torchbench.py - the PyTorch columns of tests/gpu/check.sh: run the
PyTorch model of each example (models/STEM.py, the numerical suite's
reference; its `bench_reference` where it has one) on the GPU in f32 with
TF32 off, on the same inputs and weights as the einc program, eagerly and
through torch.compile, in one process (PyTorch and CUDA start once).

    python3 torchbench.py [--device cuda|cpu] [--iters N]
                          [--compile-budget S] [--compile-timeout S]
                          BUNDLE WORK NAME...

For each NAME it reads WORK/NAME.in.st, NAME.wt.st (the inputs and
weights) and NAME.gpu.st (einc's outputs on them), the constants from
BUNDLE/NAME.cfg, and the model STEM from BUNDLE/NAME.model (the batch
variants of prepare.sh) or NAME.  It prints, first for every NAME

    NAME eager MEDIAN_MS REL_ERR         (or NAME eager n/a REASON)

and then, once every eager line is out, for every NAME (the models with
the fewest tensors first, see compile_cost)

    NAME compile MEDIAN_MS REL_ERR COMPILE_S   (or NAME compile n/a REASON)

MEDIAN_MS: the median ms per run over N runs (--iters, default 20) after
warm-ups, each run between two CUDA events; REL_ERR: the max relative
error of einc's outputs against PyTorch's, max|einc - torch| / max|torch|;
COMPILE_S: the wall seconds of the first compiled call.  torch.compile
(default mode: Inductor, no CUDA graphs) failing or missing is no error,
its line says n/a; so does every compile with --compile-budget 0, and a
compile that would start after
--compile-budget seconds (default 150) spent compiling, or that takes
longer than --compile-timeout (default 90; SIGALRM).  Lines are flushed
as they come, so that a caller's timeout loses only what was left.
cuDNN may pick its algorithms (cudnn.benchmark) in the warm-ups.

Exit status: 0 when the lines were printed, 3 when there is no torch or no
CUDA device, 2 on a usage error.  --device cpu runs the same code on the
CPU (time.perf_counter instead of CUDA events), to try it without a GPU.
"""

import importlib.util
import os
import signal
import sys
import time

sys.dont_write_bytecode = True


def median(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


class Timeout(BaseException):
    """A compile past its time: a BaseException, so that no `except
    Exception` inside torch.compile takes it for a failure to fall back
    from."""


def on_alarm(signum, frame):
    raise Timeout()


class Bench:
    def __init__(self, torch, device, iters, bundle, work):
        self.torch, self.iters = torch, iters
        self.bundle, self.work = bundle, work
        self.dev = torch.device(device)
        self.cuda = device == "cuda"

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize()

    def model(self, name):
        """(fn(**tensors) -> {output: tensor}) for NAME, or a reason."""
        stem = name
        mfile = os.path.join(self.bundle, name + ".model")
        if os.path.exists(mfile):
            with open(mfile) as f:
                stem = f.read().strip()
        mpath = os.path.join(self.bundle, "models", stem + ".py")
        if not os.path.exists(mpath):
            return None, "no PyTorch model"
        spec = importlib.util.spec_from_file_location("m_" + stem, mpath)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        if os.path.basename(mod.EIN) != stem + ".ein":
            return None, "no PyTorch model"
        fn0 = getattr(mod, "bench_reference", mod.reference)
        cfg = {}
        with open(os.path.join(self.bundle, name + ".cfg")) as f:
            for kv in f.read().split():
                k, v = kv.split("=")
                cfg[k] = int(v)

        def fn(**t):
            return fn0(cfg, **t)
        return fn, None

    def tensors(self, name):
        import stio
        base = os.path.join(self.work, name)
        t = {k: v.to(self.dev) for k, v in stio.load(base + ".in.st").items()}
        t.update({k: v.to(self.dev)
                  for k, v in stio.load(base + ".wt.st").items()})
        out = stio.load(base + ".gpu.st")
        return t, out

    def rel_err(self, ref, out):
        err = 0.0
        for k, r in ref.items():
            if k not in out:
                return float("inf")
            o = out[k].to(self.dev).double()
            r = r.double()
            if tuple(o.shape) != tuple(r.shape):
                return float("inf")
            scale = max(r.abs().max().item(), 1e-30)
            e = (o - r).abs().max().item() / scale
            if e != e:                  # a NaN on either side
                return float("inf")
            err = max(err, e)
        return err

    def timed(self, fn, t):
        """Median ms of ITERS calls of fn(**t) (the caller warms up)."""
        torch = self.torch
        times = []
        for _ in range(self.iters):
            if self.cuda:
                a = torch.cuda.Event(enable_timing=True)
                b = torch.cuda.Event(enable_timing=True)
                a.record()
                fn(**t)
                b.record()
                torch.cuda.synchronize()
                times.append(a.elapsed_time(b))
            else:
                t0 = time.perf_counter()
                fn(**t)
                times.append((time.perf_counter() - t0) * 1e3)
        return median(times)

    def free(self):
        if self.cuda:
            self.torch.cuda.empty_cache()

    def eager(self, name):
        fn, why = self.model(name)
        if not fn:
            return "n/a (%s)" % why
        t, out = self.tensors(name)
        with self.torch.no_grad():
            for _ in range(3):
                ref = fn(**t)
            self.sync()
            err = self.rel_err(ref, out)
            del ref
            ms = self.timed(fn, t)
        return "%.4f %.3e" % (ms, err)

    def compiled(self, name, timeout):
        torch = self.torch
        fn, why = self.model(name)
        if not fn:
            return "n/a (%s)" % why
        t, out = self.tensors(name)
        cfn = torch.compile(fn)
        signal.alarm(max(1, int(timeout)))
        try:
            with torch.no_grad():
                t0 = time.time()
                got = cfn(**t)
                self.sync()
                secs = time.time() - t0
                signal.alarm(0)
                for _ in range(2):
                    got = cfn(**t)
                self.sync()
                err = self.rel_err(got, out)
                del got
                ms = self.timed(cfn, t)
        finally:
            signal.alarm(0)
        return "%.4f %.3e %.1f" % (ms, err, secs)


def compile_cost(bundle, name):
    """The order of the compiles, cheap ones first, so that a spent budget
    leaves out the dearest: the model's tensors (the lines of NAME.spec,
    about its number of layers), then the batch."""
    try:
        with open(os.path.join(bundle, name + ".spec")) as f:
            ntensors = sum(1 for line in f if line.strip())
        with open(os.path.join(bundle, name + ".cfg")) as f:
            batch = [int(kv.split("=")[1]) for kv in f.read().split()
                     if kv.startswith("B=")]
        return (ntensors, batch[0] if batch else 1, name)
    except (OSError, ValueError):
        return (1 << 30, 0, name)


def main(argv):
    device, iters, budget, per = "cuda", 20, 150.0, 90.0
    while argv and argv[0].startswith("--"):
        opt = argv.pop(0)
        if not argv:
            break
        if opt == "--device":
            device = argv.pop(0)
        elif opt == "--iters":
            iters = max(1, int(argv.pop(0)))
        elif opt == "--compile-budget":
            budget = float(argv.pop(0))
        elif opt == "--compile-timeout":
            per = float(argv.pop(0))
        else:
            print("torchbench.py: unknown option %s" % opt, file=sys.stderr)
            return 2
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    bundle, work, names = argv[0], argv[1], argv[2:]
    sys.path.insert(0, bundle)
    try:
        import torch
    except ImportError:
        return 3
    if device == "cuda" and not torch.cuda.is_available():
        return 3
    # f32 throughout: no TF32 in matrix products or convolutions
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    if hasattr(torch, "set_float32_matmul_precision"):
        torch.set_float32_matmul_precision("highest")
    torch.backends.cudnn.benchmark = True
    b = Bench(torch, device, iters, bundle, work)

    def one(name, what, call):
        try:
            line = call()
        except Timeout:
            line = "n/a (timed out)"
        except Exception as e:          # out of memory, a backend's failure
            msg = ("%s: %s" % (type(e).__name__, e)).strip().splitlines()
            print("torchbench.py: %s %s: %s" % (name, what, msg[0][:300]
                                                 if msg else "?"),
                  file=sys.stderr, flush=True)
            line = "n/a (%s)" % type(e).__name__
        print("%s %s %s" % (name, what, line), flush=True)
        b.free()

    for name in names:
        one(name, "eager", lambda: b.eager(name))
    if budget <= 0:
        for name in names:
            print("%s compile n/a (not asked for)" % name, flush=True)
        return 0
    if not hasattr(torch, "compile"):
        for name in names:
            print("%s compile n/a (no torch.compile in torch %s)"
                  % (name, torch.__version__.split("+")[0]), flush=True)
        return 0
    signal.signal(signal.SIGALRM, on_alarm)
    t_start = time.time()
    for name in sorted(names, key=lambda n: compile_cost(bundle, n)):
        left = budget - (time.time() - t_start)
        if left < 5:
            print("%s compile n/a (compile budget spent)" % name, flush=True)
            continue
        one(name, "compile", lambda: b.compiled(name, min(per, left)))
        try:
            torch._dynamo.reset()       # drop the compiled graphs
        except Exception:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
