"""vector.py - the C target's vectorized loops (emit/kernel.c, c.c), run
by vector.test: a program of a masked max= with rows that have no term,
a min=, a masked sum of exp (softmax's), maps calling erf (GELU), tanh,
exp and sigmoid, a masked select, and a layer norm's per-row rsqrt.

1. The C output (--device=cpu) has each mechanism: the maps' innermost
   loops `omp simd` under EIN_VMATH with libmvec's functions declared
   simd, the kernels cloned (EIN_TARGETS), the reductions `omp simd
   reduction(max|min|+)`, the select's operands computed before it, the
   rsqrt once per row (ein_h0 before the innermost loop).
2. Built with its first line (and again with -DEIN_NO_TARGETS, and with
   -fno-openmp: the scalar loops), run on inputs with NaNs and a row of
   large values (up to +-300), each output matches PyTorch: NaN where
   PyTorch has NaN (a NaN among the terms of a max= or min= propagates;
   one whose guard fails does not), a row with no term is 0, the rest
   within 1e-5 (max-norm relative, as tests/num).
3. The vector math's libraries: with --sleef line 1 links -lsleef, the
   program needs it, and its vectorized loops call the file's own expf
   variants (SLEEF's), libmvec's for the other functions; with
   --no-sleef libmvec's for all, and no SLEEF; both give PyTorch's values
   (--sleef is skipped where SLEEF is not installed).
4. The cpu cost model prices such loops as vectorized (PRICE).
Exit 0 pass, 1 fail, 77 no torch."""

import os
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
TOP = os.environ.get("top_srcdir", ".")
sys.path.insert(0, os.path.join(TOP, "tests", "num"))
try:
    import torch
    import stio
except ImportError as e:
    print("vector: no torch (%s): skipped" % e)
    sys.exit(77)

EINC = os.environ.get("EINC", "./einc")
R, C = 7, 40
PROG = """
const R = %d, C = %d
input x : f32[R, C]
weight w : f32[C]
m[i] max= x[i, j]  where j < i
n[i] min= x[i, j]
z[i] += exp(x[i, j] - m[i])  where j <= i
g[i, j] = 0.5 * x[i, j] * (1 + erf(x[i, j] * 0.7071067811865476))
t[i, j] = tanh(x[i, j]) + sigmoid(x[i, j]) * exp(-x[i, j] * x[i, j])
s[i, j] = select(j <= i, x[i, j] / 8, 0)
mu[i] += x[i, j] / C
xc[i, j] = x[i, j] - mu[i]
var[i] += xc[i, j] * xc[i, j] * w[j]
y[i, j] = xc[i, j] * rsqrt(var[i] / C + 1e-5)
output m, n, z, g, t, s, y
""" % (R, C)

# what each mechanism leaves in the file
EXPECT = [
    ("vector math", "EIN_SIMD_FN float erff(float);"),
    ("vector math", "#if defined(_OPENMP) && EIN_VMATH\n#pragma omp simd"),
    ("clones", 'target_clones("avx512f", "avx2", "default")'),
    ("clones", "EIN_TARGETS static void"),
    ("max reduction", "reduction(max:ein_m)"),
    ("min reduction", "reduction(min:ein_m)"),
    ("sum reduction", "reduction(+:acc)"),
    ("select", "? ein_x0 : 0.0f"),
    ("per-row value", "const float ein_h0 = ein_rsqrt("),
]


def reference(x, w):
    mask = torch.arange(C)[None, :] < torch.arange(R)[:, None]       # j < i
    le = torch.arange(C)[None, :] <= torch.arange(R)[:, None]        # j <= i
    m = torch.where(mask, x, torch.tensor(-float("inf"), dtype=x.dtype))
    m = torch.where(mask.any(1), m.amax(1), torch.zeros(R, dtype=x.dtype))
    n = x.amin(1)
    z = torch.where(le, torch.exp(x - m[:, None]), torch.zeros((), dtype=x.dtype)).sum(1)
    g = torch.nn.functional.gelu(x)
    t = torch.tanh(x) + torch.sigmoid(x) * torch.exp(-x * x)
    s = torch.where(le, x / 8, torch.zeros((), dtype=x.dtype))
    xc = x - x.mean(1, keepdim=True)
    var = (xc * xc * w).sum(1)
    y = xc * torch.rsqrt(var / C + 1e-5)[:, None]
    return {"m": m, "n": n, "z": z, "g": g, "t": t, "s": s, "y": y}


def compare(name, got, ref):
    """'' or what is wrong."""
    got, ref = got.double(), ref.double()
    if got.shape != ref.shape:
        return "%s: shape %s, expected %s" % (name, tuple(got.shape), tuple(ref.shape))
    gn, rn = torch.isnan(got), torch.isnan(ref)
    if not torch.equal(gn, rn):
        return "%s: NaN at %s, PyTorch at %s" % (
            name, gn.nonzero().tolist(), rn.nonzero().tolist())
    ok = ~rn
    if ok.any():
        scale = max(ref[ok].abs().max().item(), 1e-30)
        err = (got[ok] - ref[ok]).abs().max().item() / scale
        if err >= 1e-5:
            return "%s: max rel err %.2e" % (name, err)
    return ""


# The cpu cost model prices these loops as the vectorized loops they are
# (derive/pricing's cpu_vec): a tanh map and a sum of exp over 256x3072,
# 0.35 and 0.25 ms by its figures, not 12.9 and 3.3 ms as scalar libm
# calls and an add chain.
PRICE = """
input x : f32[256, 3072]
y[i, j] = tanh(x[i, j])
s[i] += exp(x[i, j])
output y, s
"""


def check_prices(tmp, fails):
    src = os.path.join(tmp, "price.ein")
    with open(src, "w") as f:
        f.write(PRICE)
    p = subprocess.run([EINC, "--device=cpu", "--emit=plan", src, "-o", "-"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    if p.returncode != 0:
        fails.append("pricing: einc: %s" % p.stderr)
        return
    for t in ("y", "s"):
        us = [float(w[-2]) for w in (ln.split() for ln in p.stdout.splitlines())
              if len(w) > 3 and w[0] == "kernel" and w[1] == t and w[-1] == "us"]
        if len(us) != 1 or us[0] > 1000:
            fails.append("pricing: %s not priced as a vectorized loop (< 1000 us): %s"
                         % (t, p.stdout.strip()))


# What a --sleef and a --no-sleef program need (readelf -d) and not, and
# where its vector expf calls go: to the file's own (SLEEF's) variants,
# or to libmvec's (through the PLT).
NEEDED = {"--sleef": (["libsleef.so", "libmvec.so"], [], "v_expf>"),
          "--no-sleef": (["libmvec.so"], ["libsleef.so"], "v_expf@plt>")}


def vmath_variants(src, tmp, cc, fails):
    """(label, build command) of the program with --sleef and --no-sleef,
    each written over vec.c; [] for --sleef where SLEEF does not link."""
    out = []
    for flag in ("--sleef", "--no-sleef"):
        cfile = os.path.join(tmp, "vec%s.c" % flag.replace("-", "_"))
        p = subprocess.run([EINC, "--main", "--device=cpu", flag, src, "-o", cfile],
                           stderr=subprocess.PIPE, universal_newlines=True)
        if p.returncode != 0:
            fails.append("%s: einc: %s" % (flag, p.stderr))
            continue
        first = open(cfile).read().split("\n", 1)[0]
        if ("-lsleef" in first) != (flag == "--sleef"):
            fails.append("%s: line 1 is %s" % (flag, first))
        build = first[first.index("build:") + 6:first.rindex("*/")].strip()
        build = build.replace("-o %s" % os.path.basename(cfile)[:-2], "-o vec")
        if build.startswith("cc "):
            build = cc + build[2:]
        if flag == "--sleef":
            probe = os.path.join(tmp, "probe.c")
            with open(probe, "w") as f:
                f.write("int main(void) { return 0; }\n")
            p = subprocess.run("%s %s -o %s -lsleef" % (cc, probe, probe[:-2]),
                               shell=True, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT)
            if p.returncode != 0:
                print("vector: no SLEEF to link: --sleef skipped")
                continue
        out.append((flag, build))
    return out


def main():
    fails = []
    with tempfile.TemporaryDirectory() as tmp:
        check_prices(tmp, fails)
        src = os.path.join(tmp, "vec.ein")
        with open(src, "w") as f:
            f.write(PROG)
        cfile = os.path.join(tmp, "vec.c")
        p = subprocess.run([EINC, "--main", "--device=cpu", src, "-o", cfile],
                           stderr=subprocess.PIPE, universal_newlines=True)
        if p.returncode != 0:
            print("FAIL einc: %s" % p.stderr)
            return 1
        text = open(cfile).read()
        for what, s in EXPECT:
            if s not in text:
                fails.append("%s: no '%s' in the C output" % (what, s.replace("\n", "\\n")))
        # per-row value: written before the innermost loop, not inside it
        lines = text.split("\n")
        for k, ln in enumerate(lines):
            if "const float ein_h0 = ein_rsqrt(" in ln:
                nxt = [x.strip() for x in lines[k + 1:k + 5] if not x.startswith("#")]
                if not nxt or not nxt[0].startswith("for ("):
                    fails.append("per-row value: not before the innermost loop: %r"
                                 % lines[k:k + 5])
        torch.manual_seed(11)
        x = torch.randn(R, C, dtype=torch.float32) * 2
        x[3, 1] = float("nan")      # a term of m[3], n[3], z[3]: NaN
        x[1, 30] = float("nan")     # guarded out of m[1] and z[1], not of n[1]
        x[5] *= 150                 # exp, tanh, erf far outside [-88, 88]
        w = torch.rand(C, dtype=torch.float32) + 0.5
        stio.save({"x": x}, os.path.join(tmp, "in.safetensors"))
        stio.save({"w": w}, os.path.join(tmp, "wt.safetensors"))
        ref = reference(x.double(), w.double())
        first = text.split("\n", 1)[0]
        build = first[first.index("build:") + 6:first.rindex("*/")].strip()
        cc = os.environ.get("CC") or "cc"
        if build.startswith("cc "):
            build = cc + build[2:]
        variants = [("as built", build + " -Wall -Wextra -Werror"),
                    ("-DEIN_NO_TARGETS", build + " -DEIN_NO_TARGETS"),
                    ("without OpenMP", build.replace("-fopenmp", "-fno-openmp"))]
        variants += vmath_variants(src, tmp, cc, fails)
        for label, cmd in variants:
            p = subprocess.run(cmd, shell=True, cwd=tmp, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, universal_newlines=True)
            if p.returncode != 0 or p.stdout.strip():
                fails.append("%s: build: %s: %s" % (label, cmd, p.stdout.strip()))
                continue
            out = os.path.join(tmp, "out.safetensors")
            p = subprocess.run(["./vec", "--inputs", "in.safetensors", "--weights",
                                "wt.safetensors", "--outputs", out], cwd=tmp,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               universal_newlines=True)
            if p.returncode != 0:
                fails.append("%s: run: %s" % (label, p.stdout.strip()))
                continue
            if label in NEEDED:
                p = subprocess.run(["readelf", "-d", "vec"], cwd=tmp,
                                   stdout=subprocess.PIPE, universal_newlines=True)
                want, not_want, call = NEEDED[label]
                libs = [ln.split("[")[-1].rstrip("]") for ln in p.stdout.splitlines()
                        if "(NEEDED)" in ln]
                if (not all(any(w in x for x in libs) for w in want) or
                        any(n in x for x in libs for n in not_want)):
                    fails.append("%s: the program should need %s, and not %s: it needs %s"
                                 % (label, " ".join(want), " ".join(not_want) or "-",
                                    " ".join(libs)))
                p = subprocess.run(["objdump", "-d", "vec"], cwd=tmp,
                                   stdout=subprocess.PIPE, universal_newlines=True)
                calls = set(ln.split()[-1] for ln in p.stdout.splitlines()
                            if "call" in ln and "_ZGV" in ln and "expf" in ln)
                if not calls or any(not c.endswith(call) for c in calls):
                    fails.append("%s: the vector expf calls should end in %s: %s"
                                 % (label, call, " ".join(sorted(calls))))
            got = stio.load(out)
            for k in sorted(ref):
                msg = compare(k, got[k], ref[k])
                if msg:
                    fails.append("%s: %s" % (label, msg))
    for f in fails:
        print("FAIL " + f)
    print("vector: %s" % ("%d failures" % len(fails) if fails else "pass"))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
