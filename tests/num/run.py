#!/usr/bin/python3
"""run.py - the numerical suite: einc's C target against PyTorch on the CPU.

For each case (tests/num/cases.py, and the seven models of tests/models/
at small sizes) this
  1. generates the inputs and weights with torch (seed fixed per case) and
     writes them as safetensors files (stio.py),
  2. runs `einc CASE.ein -o CASE.c --main [-D NAME=VALUE ...]`,
  3. builds CASE.c with the command on its first line (`/* build: ... */`)
     plus -Wall -Wextra; any diagnostic from the build is a failure; where
     clang is installed (CLANG, --clang) it builds it with clang too, the
     same command with clang for cc, and no diagnostic is allowed either,
  4. runs `./CASE --inputs F --weights F --outputs F`,
  5. compares each output with the PyTorch reference, computed in float64
     from the same f32 values:
         err = max|out - ref| / max(max|ref|, 1e-30)     (per output tensor)
     and passes when err < 1e-5 for every output (names, shapes and
     element types must match exactly; a NaN fails; an integer or bool
     output must match element for element).  A reference
     returns an f16 or bf16 output as a torch.float16 or torch.bfloat16
     tensor (the element type expected), rounded as the program stores
     it; such an output passes with err < 1e-3 (f16) or 1e-2 (bf16), a
     little more than one unit in the last place of the type (2^-10,
     2^-7): the program rounds an f32 result, the reference a float64
     one, and the two can land one unit apart.
It prints one line per case and then `N passed, N failed`; the exit status
is 0 when nothing failed, 1 otherwise, 2 on a usage error.

Time limits are safety nets against hangs, never a judgement on speed:
each command may use CPU_LIMIT seconds of CPU time (many times what the
slowest takes: GCN's einc run, about 9 s), and WALL_LIMIT seconds of wall
time for a command that waits instead of computing; a busy machine makes
the suite slower, not red.

With --precision=tf32|fp16|bf16 einc compiles with that precision (its
library calls round their operands to the format), the reference rounds
the operands of its GEMMs and convolutions the same way (RoundOperands),
and the tolerance is 1e-3 (tf32) or 1e-2 (fp16, bf16).

With --same-as EINC2 (or NUM_SAME_AS), a case where EINC2 given the same
arguments writes the very same C file is not built or run but printed as
SAME: a run of the suite with EINC2 checks that file, on the same inputs.
num-O0.test and num-h200.test (einc -O0, --device=h200) skip so the cases
whose plans are the default's, which num.test checks.

Usage: run.py [--einc PATH] [-j JOBS] [-k PATTERN]... [--exclude PATTERN]... [--keep DIR]
              [--no-models] [--models-only] [--precision P] [--same-as EINC2]
              [--list] [-v]
EINC, CC and top_srcdir come from the environment as automake's test
harness sets them.
"""

import argparse
import sys
sys.dont_write_bytecode = True   # keep the source tree clean (distcheck)

import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import time
import zlib
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import torch                                  # noqa: E402
import stio                                   # noqa: E402
import eindecl                                # noqa: E402
import cases as num_cases                     # noqa: E402

TOL_DEFAULT = 1e-5
# f16 and bf16 outputs: a little more than one unit in the last place
# relative to the largest value (2^-10 for f16, 2^-7 for bf16)
TOL_16 = {torch.float16: 1e-3, torch.bfloat16: 1e-2}
ELEM = {torch.float16: "f16", torch.bfloat16: "bf16", torch.int8: "i8",
        torch.int16: "i16", torch.int32: "i32", torch.int64: "i64",
        torch.uint8: "u8", torch.bool: "bool"}   # else f32
INT_KINDS = {"i8": torch.int8, "i16": torch.int16, "i32": torch.int32,
             "i64": torch.int64, "u8": torch.uint8, "bool": torch.bool}
# seconds of CPU time per command (RLIMIT_CPU), and of wall time
CPU_LIMIT = 600
WALL_LIMIT = 3600
# --precision: GEMM and convolution operands rounded to that format (f32
# sums); the tolerance of every output grows to the format's
PRECISION_TOL = {"fp32": TOL_DEFAULT, "tf32": 1e-3, "fp16": 1e-2, "bf16": 1e-2}


class Result:
    def __init__(self, name, ok, msg, secs):
        self.name, self.ok, self.msg, self.secs = name, ok, msg, secs


class Failure(Exception):
    pass


# ---- case lists -----------------------------------------------------------

class Spec:
    """One thing to test: a .ein file, -D overrides, tensors, a reference."""

    def __init__(self, name, ein, inputs, weights, defines, ref, tol,
                 includes=()):
        self.name, self.ein = name, ein
        self.inputs, self.weights = inputs, weights
        self.defines, self.ref, self.tol = defines, ref, tol
        self.includes = includes          # absolute -I folders


def num_specs():
    out = []
    for c in num_cases.CASES:
        out.append(Spec(c.name, os.path.join(HERE, c.ein), c.inputs,
                        c.weights, c.defines, c.ref, c.tol,
                        [os.path.join(HERE, d) for d in c.includes]))
    return out


def model_specs(srcdir):
    """tests/models/NAME.py: EIN (path under the top folder), CONFIGS (a list
    of (label, {const: value})), shapes(cfg) -> (inputs, weights),
    reference(cfg, **tensors) -> {output: tensor}; optional TOL."""
    mdir = os.path.join(srcdir, "tests", "models")
    out, missing = [], []
    if not os.path.isdir(mdir):
        return out, missing
    if mdir not in sys.path:
        sys.path.insert(0, mdir)          # their helpers (_modules.py)
    for fn in sorted(os.listdir(mdir)):
        if not fn.endswith(".py") or fn.startswith("_"):
            continue
        stem = fn[:-3]
        spec = importlib.util.spec_from_file_location("model_" + stem,
                                                      os.path.join(mdir, fn))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        if not hasattr(mod, "EIN"):
            continue
        ein = os.path.join(srcdir, mod.EIN)
        if not os.path.exists(ein):
            missing.append("%s (no %s)" % (stem, mod.EIN))
            continue
        for label, cfg in mod.CONFIGS:
            ins, wts = mod.shapes(cfg)

            def ref(_m=mod, _c=cfg, **t):
                return _m.reference(_c, **t)
            out.append(Spec("%s/%s" % (stem, label), ein, ins, wts, cfg, ref,
                            getattr(mod, "TOL", TOL_DEFAULT)))
    return out, missing


# ---- inputs ------------------------------------------------------------------

def make_tensor(spec, gen):
    """SHAPE: uniform(-1, 1); ("pos", SHAPE): uniform(0.5, 2); ("f16",
    SHAPE), ("bf16", SHAPE): uniform(-1, 1) rounded to f16, bf16; (A,
    SHAPE) with A a float: uniform(-A, A); ((T, LO, HI), SHAPE) with T an
    integer type (i32, bool, ...): integers uniform in [LO, HI)."""
    kind = "uniform"
    if (isinstance(spec, tuple) and len(spec) == 2
            and isinstance(spec[0], (str, float, tuple))):
        kind, spec = spec
    shape = tuple(int(d) for d in spec)
    if isinstance(kind, tuple):
        t, lo, hi = kind
        return torch.randint(lo, hi, shape, generator=gen).to(INT_KINDS[t])
    u = torch.rand(shape, generator=gen, dtype=torch.float32)
    if isinstance(kind, float):
        return (kind * (2 * u - 1)).to(torch.float32)
    if kind == "pos":
        return 0.5 + 1.5 * u
    if kind == "f16":
        return (2 * u - 1).to(torch.float16)
    if kind == "bf16":
        return (2 * u - 1).to(torch.bfloat16)
    if kind == "uniform":
        return 2 * u - 1
    raise ValueError("unknown input kind %r" % kind)


def generate(spec):
    gen = torch.Generator().manual_seed(zlib.crc32(spec.name.encode()))
    ins = {k: make_tensor(v, gen) for k, v in spec.inputs.items()}
    wts = {k: make_tensor(v, gen) for k, v in spec.weights.items()}
    return ins, wts


# ---- steps -------------------------------------------------------------------

def tail(text, n=12):
    lines = text.strip().splitlines()
    return "\n".join(lines[-n:]) if lines else "(no output)"


# the cases run two at a time on two cores: one OpenMP thread each
RUN_ENV = dict(os.environ)
RUN_ENV.setdefault("OMP_NUM_THREADS", "1")


def with_cpu_limit(argv, shell):
    """The command under a CPU-time limit, set by the shell that then
    execs it: not a preexec_fn, which Python documents as unsafe in a
    program with threads (this runner has two), where it can deadlock."""
    limit = "ulimit -t %d; " % CPU_LIMIT
    if shell:
        return limit + argv
    return ["/bin/sh", "-c", limit + 'exec "$@"', "sh"] + list(argv)


def run_cmd(argv, cwd, wall=None, shell=False):
    what = argv if shell else " ".join(argv)
    wall = wall or WALL_LIMIT
    try:
        p = subprocess.run(with_cpu_limit(argv, shell), cwd=cwd, shell=shell,
                           timeout=wall, env=RUN_ENV,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, errors="replace")
    except subprocess.TimeoutExpired:
        raise Failure("still running after %d s of wall time (hung?): %s"
                      % (wall, what))
    if p.returncode in (-24, -9, 128 + 24, 128 + 9):    # SIGXCPU, SIGKILL
        raise Failure("stopped after %d s of CPU time (in a loop?): %s"
                      % (CPU_LIMIT, what))
    return p


def build_command(csrc, cc):
    with open(csrc, errors="replace") as f:
        first = f.readline()
    m = re.search(r"build:\s*(.*?)\s*(\*/)?\s*$", first)
    if not m or not m.group(1):
        raise Failure("no '/* build: ... */' on the first line of %s: %r"
                      % (os.path.basename(csrc), first.strip()))
    cmd = m.group(1)
    words = shlex.split(cmd)
    if cc and words and words[0] == "cc":
        cmd = cc + cmd[2:]
    exe = None
    if "-o" in words and words.index("-o") + 1 < len(words):
        exe = words[words.index("-o") + 1]
    return cmd + " -Wall -Wextra", exe


def clang_command(cmd, clang):
    """The build command with clang for the C compiler, its program named
    NAME.clang."""
    words = shlex.split(cmd)
    words[0] = clang
    if "-o" in words and words.index("-o") + 1 < len(words):
        words[words.index("-o") + 1] += ".clang"
    return " ".join(shlex.quote(w) for w in words)


def round_to(x, precision):
    """x (a float64 tensor) as an f32 value rounded to `precision` the way
    einc's library calls round their operands (to nearest even)."""
    x32 = x.to(torch.float32)
    if precision == "bf16":
        return x32.to(torch.bfloat16).to(x.dtype)
    if precision == "fp16":
        return x32.to(torch.float16).to(x.dtype)
    u = x32.view(torch.int32).to(torch.int64) & 0xffffffff      # tf32
    finite = (u & 0x7f800000) != 0x7f800000
    r = (u + 0xfff + ((u >> 13) & 1)) & ~0x1fff & 0xffffffff
    u = torch.where(finite, r, u)
    u = torch.where(u >= 2**31, u - 2**32, u).to(torch.int32)
    return u.view(torch.float32).to(x.dtype)


class RoundOperands(torch.overrides.TorchFunctionMode):
    """With a reduced --precision, the reference rounds the operands of
    its GEMMs and convolutions as einc does (its library calls and the
    summed products of its generated kernels, as tensor cores read them),
    and computes the rest exactly: the comparison then measures einc
    against the same arithmetic, not the format's rounding error."""
    # input and weight only: a bias is added after the product, unrounded
    INPUT_WEIGHT = {torch.nn.functional.conv2d, torch.nn.functional.conv_transpose2d,
                    torch.nn.functional.linear}
    ROUNDED = INPUT_WEIGHT | {torch.matmul, torch.mm, torch.bmm, torch.einsum,
                              torch.Tensor.__matmul__, torch.Tensor.__rmatmul__,
                              torch.Tensor.matmul}

    def __init__(self, precision):
        super().__init__()
        self.precision = precision

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if self.precision != "fp32" and func in self.ROUNDED:
            def rnd(a):
                if isinstance(a, torch.Tensor) and a.is_floating_point():
                    return round_to(a, self.precision)
                if isinstance(a, (list, tuple)):
                    return type(a)(rnd(b) for b in a)
                return a
            n = 2 if func in self.INPUT_WEIGHT else len(args)
            args = tuple(rnd(a) if i < n else a for i, a in enumerate(args))
            if func not in self.INPUT_WEIGHT:
                kwargs = {k: rnd(v) for k, v in kwargs.items()}
        return func(*args, **kwargs)


def compare(name, out, ref, tol):
    """Return (worst error, list of problems)."""
    problems = []
    worst = 0.0
    if set(out) != set(ref):
        extra, lack = sorted(set(out) - set(ref)), sorted(set(ref) - set(out))
        if lack:
            problems.append("missing outputs %s" % ", ".join(lack))
        if extra:
            problems.append("unexpected outputs %s" % ", ".join(extra))
    for k in sorted(set(out) & set(ref)):
        o, r = out[k], ref[k].detach()
        want = ELEM.get(r.dtype, "f32")
        if ELEM.get(o.dtype, "f32") != want:
            problems.append("%s: element type %s, expected %s"
                            % (k, ELEM.get(o.dtype, o.dtype), want))
            continue
        ktol = max(tol, TOL_16.get(r.dtype, tol))
        if tuple(o.shape) != tuple(r.shape):
            problems.append("%s: shape %s, expected %s"
                            % (k, list(o.shape), list(r.shape)))
            continue
        if not r.is_floating_point():
            # integers and bools: every element exactly (as floats, a
            # 2^40 one unit off would pass the relative tolerance)
            bad = o.to(torch.int64) != r.to(torch.int64)
            if bad.any():
                at = tuple(int(i) for i in torch.nonzero(bad)[0].tolist())
                problems.append("%s: %d elements differ (at %s: got %d, expected %d)"
                                % (k, int(bad.sum()), list(at), int(o[at]), int(r[at])))
            continue
        r = r.to(torch.float64)
        o = o.to(torch.float64)
        if not torch.isfinite(o).all():
            problems.append("%s: non-finite values" % k)
            continue
        scale = max(r.abs().max().item() if r.numel() else 0.0, 1e-30)
        diff = (o - r).abs()
        err = diff.max().item() / scale if r.numel() else 0.0
        worst = max(worst, err)
        if not err < ktol:
            at = tuple(int(i) for i in
                       torch.nonzero(diff == diff.max())[0].tolist())
            problems.append("%s: rel err %.3g >= %g (at %s: got %.8g, "
                            "expected %.8g)" % (k, err, ktol, list(at),
                                                o[at].item(), r[at].item()))
    return worst, problems


def check_decls(spec, ins, wts):
    """The test's own mistakes first: do the tensors the reference takes
    match what the .ein file declares?"""
    try:
        prog = eindecl.read(spec.ein, spec.defines, spec.includes)
    except (eindecl.DeclError, OSError) as e:
        raise Failure("cannot read the declarations: %s" % e)
    have = {}
    for kind, name, elem, dims in prog.tensors:
        have[name] = (kind, elem, dims)
    given = {k: ("input", ELEM.get(v.dtype, "f32"), list(v.shape))
             for k, v in ins.items()}
    given.update({k: ("weight", ELEM.get(v.dtype, "f32"), list(v.shape))
                  for k, v in wts.items()})
    if have != given:
        diff = ["%s: .ein %s, test %s" % (k, have.get(k), given.get(k))
                for k in sorted(set(have) | set(given))
                if have.get(k) != given.get(k)]
        raise Failure("the test's tensors differ from the declarations: "
                      + "; ".join(diff))


def same_code(spec, args, argv, wd, safe):
    """Whether --same-as's einc, run with the same arguments, writes the
    very same C file: then building and running it again would repeat a
    check another run of the suite (num.test's) makes, on the same inputs
    (their seeds are the case's name).  It writes into a folder of its
    own, under the same file name (which the file's text names)."""
    base = os.path.join(wd, "same-as")
    os.makedirs(base, exist_ok=True)
    p = run_cmd([args.same_as] + argv[1:], base)
    if p.returncode != 0:
        return False
    with open(os.path.join(wd, safe + ".c"), "rb") as f:
        mine = f.read()
    with open(os.path.join(base, safe + ".c"), "rb") as f:
        return f.read() == mine


def run_case(spec, args, root):
    t0 = time.time()
    safe = spec.name.replace("/", "-")
    wd = os.path.join(root, safe)
    os.makedirs(wd, exist_ok=True)
    try:
        ins, wts = generate(spec)
        check_decls(spec, ins, wts)
        argv = [args.einc, spec.ein, "-o", safe + ".c", "--main"]
        if args.precision != "fp32":
            argv.append("--precision=" + args.precision)
        for k, v in spec.defines.items():
            argv += ["-D", "%s=%d" % (k, v)]
        for d in spec.includes:
            argv += ["-I", d]
        p = run_cmd(argv, wd)
        if p.returncode != 0:
            raise Failure("einc exited with %d: %s\n%s" % (
                p.returncode, " ".join(argv[1:]), tail(p.stderr)))
        if p.stderr.strip():
            raise Failure("einc diagnostics:\n" + tail(p.stderr))
        if args.same_as and same_code(spec, args, argv, wd, safe):
            return Result(spec.name, None, "the C file %s writes too, checked"
                          " by its run" % args.same_as, time.time() - t0)
        cmd, exe = build_command(os.path.join(wd, safe + ".c"), args.cc)
        p = run_cmd(cmd, wd, shell=True)
        if p.returncode != 0 or p.stderr.strip():
            raise Failure("build %s: %s\n%s" % (
                "failed" if p.returncode else "warned", cmd,
                tail(p.stderr + p.stdout)))
        if args.clang:
            ccmd = clang_command(cmd, args.clang)
            p = run_cmd(ccmd, wd, shell=True)
            if p.returncode != 0 or p.stderr.strip():
                raise Failure("clang build %s: %s\n%s" % (
                    "failed" if p.returncode else "warned", ccmd,
                    tail(p.stderr + p.stdout)))
        exe = exe or safe
        if not os.path.isabs(exe):
            exe = os.path.join(wd, exe)
        run = [exe, "--outputs", "out.safetensors"]
        if ins:
            stio.save(ins, os.path.join(wd, "inputs.safetensors"))
            run += ["--inputs", "inputs.safetensors"]
        if wts:
            stio.save(wts, os.path.join(wd, "weights.safetensors"))
            run += ["--weights", "weights.safetensors"]
        p = run_cmd(run, wd)
        if p.returncode != 0:
            raise Failure("%s exited with %d\n%s" % (
                " ".join([os.path.basename(exe)] + run[1:]), p.returncode,
                tail(p.stderr + p.stdout)))
        try:
            out = stio.load(os.path.join(wd, "out.safetensors"))
        except (OSError, ValueError) as e:
            raise Failure("cannot read the outputs: %s" % e)
        tensors = {k: v.to(torch.float64) for k, v in ins.items()}
        tensors.update({k: v.to(torch.float64) for k, v in wts.items()})
        with torch.no_grad(), RoundOperands(args.precision):
            ref = spec.ref(**tensors)
        tol = max(spec.tol, PRECISION_TOL[args.precision])
        worst, problems = compare(spec.name, out, ref, tol)
        if problems:
            raise Failure("; ".join(problems))
        return Result(spec.name, True, "max rel err %.2e" % worst,
                      time.time() - t0)
    except Failure as e:
        return Result(spec.name, False, str(e), time.time() - t0)
    except Exception as e:              # a bug in a reference, say
        return Result(spec.name, False, "%s: %s" % (type(e).__name__, e),
                      time.time() - t0)


# ---- main --------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--einc", default=os.environ.get("EINC"))
    ap.add_argument("--srcdir", default=os.environ.get("top_srcdir")
                    or os.path.dirname(os.path.dirname(HERE)))
    ap.add_argument("--cc", default=os.environ.get("CC"))
    ap.add_argument("--clang", default=os.environ.get("CLANG"),
                    help="also build each program with this clang ('' for none)")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("-k", action="append", default=[],
                    help="run only cases whose name contains this")
    ap.add_argument("--exclude", action="append", default=[],
                    help="skip cases whose name contains this")
    ap.add_argument("--keep", help="work in this folder and keep it")
    ap.add_argument("--same-as", default=os.environ.get("NUM_SAME_AS") or None,
                    help="skip a case where this einc, given the same arguments, "
                    "writes the same C file (a run of the suite with it checks that code)")
    ap.add_argument("--no-models", action="store_true")
    ap.add_argument("--models-only", action="store_true")
    ap.add_argument("--precision", choices=sorted(PRECISION_TOL), default="fp32",
                    help="einc --precision (tolerance: %s)" % ", ".join(
                        "%s %g" % kv for kv in sorted(PRECISION_TOL.items())))
    ap.add_argument("--list", action="store_true")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(1)

    specs, missing = [], []
    if not args.models_only:
        specs += num_specs()
    if not args.no_models:
        ms, missing = model_specs(os.path.abspath(args.srcdir))
        specs += ms
    if args.k:
        specs = [s for s in specs if any(k in s.name for k in args.k)]
    if args.exclude:
        specs = [s for s in specs if not any(k in s.name for k in args.exclude)]
    if args.list:
        for s in specs:
            print(s.name)
        return 0
    if not args.einc or not os.access(args.einc, os.X_OK):
        print("run.py: no einc to run (set EINC or --einc): %r" % args.einc,
              file=sys.stderr)
        return 2
    args.einc = os.path.abspath(args.einc)
    if args.same_as:
        args.same_as = os.path.abspath(args.same_as)

    root = args.keep or tempfile.mkdtemp(prefix="einc-num.")
    os.makedirs(root, exist_ok=True)
    t0 = time.time()
    npass = nfail = nsame = 0
    try:
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as ex:
            futs = [ex.submit(run_case, s, args, root) for s in specs]
            for f in futs:
                r = f.result()
                if r.ok is None:
                    nsame += 1
                    print("SAME %-28s %s" % (r.name, r.msg), flush=True)
                elif r.ok:
                    npass += 1
                    print("PASS %-28s %s  (%.1f s)" % (r.name, r.msg, r.secs),
                          flush=True)
                else:
                    nfail += 1
                    msg = r.msg if args.verbose else tail(r.msg, 14)
                    print("FAIL %-28s %s" % (r.name, msg.replace(
                        "\n", "\n     ")), flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    for m in missing:
        print("note: model %s: not tested" % m)
    print("time: %.0f s" % (time.time() - t0))
    print("%d passed, %d failed" % (npass, nfail)
          + (", %d the same C file as --same-as's" % nsame
             if args.same_as else ""))
    return 0 if nfail == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
