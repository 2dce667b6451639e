#!/usr/bin/python3
"""chains.py - random chains of convolutions (tests/derive/handoff.test):
each seed writes a program of 2 to 6 convolutions (1x1 or 3x3, 3 to 64
channels, an input that is the one before or an earlier tensor, an
epilogue of ReLU, a bias and ReLU, a square (a pass after the call) or
a residual, now and then an output on the way), compiles it for the C
target with --dnnl and with --no-dnnl, runs both (their seeded weights
and inputs) and compares every output: max |a - b| / max |b| < 1e-4.
Prints a line per seed and how many convolutions handed their output
over (`sp.src_back` in the file); exits 1 on a mismatch or a failure,
and when no seed handed anything over (the test would test nothing).

  chains.py FIRST LAST      (seeds FIRST..LAST-1; EINC, the einc to run)
"""

import os
import random
import subprocess
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import seeds  # noqa: E402
from seeds import EINC, np, safetensors  # noqa: E402


def program(seed):
    r = random.Random(seed)
    n, h, w = r.choice([1, 2]), r.choice([14, 16, 28]), r.choice([14, 16, 28])
    shapes = {"x": (n, r.choice([3, 8, 16, 21, 24, 32, 64]), h, w)}
    weights, lines, outs, cur = [], [], set(), "x"
    for i in range(r.randint(2, 6)):
        src = cur if r.random() < 0.8 else r.choice(sorted(shapes))
        c, f, k = shapes[src][1], r.choice([8, 16, 21, 32, 64]), r.choice([1, 3])
        weights.append(f"weight w{i} : f32[{f}, {c}, {k}, {k}]")
        y, t = f"y{i}", f"t{i}"
        lines.append(f"{y}[n, f, h, w] : [{n}, {f}, {h}, {w}] += "
                     f"{src}[n, c, h + r - {k // 2}, w + s - {k // 2}] * w{i}[f, c, r, s]")
        same = [a for a in sorted(shapes) if shapes[a] == (n, f, h, w)]
        e = r.choice(["relu", "relu", "plain", "bias", "bias", "square", "res"])
        if e == "relu":
            lines.append(f"{t}[n, f, h, w] = relu({y}[n, f, h, w])")
        elif e == "bias":
            weights.append(f"weight b{i} : f32[{f}]")
            lines.append(f"{t}[n, f, h, w] = relu({y}[n, f, h, w] + b{i}[f])")
        elif e == "square":
            lines.append(f"{t}[n, f, h, w] = {y}[n, f, h, w] * {y}[n, f, h, w]")
        elif e == "res" and same:
            lines.append(f"{t}[n, f, h, w] = relu({y}[n, f, h, w]) + "
                         f"{r.choice(same)}[n, f, h, w]")
        else:
            t = y
        shapes[t] = (n, f, h, w)
        cur = t
        if r.random() < 0.05:
            outs.add(t)
    outs.add(cur)
    return "\n".join([f"input x : f32[{', '.join(map(str, shapes['x']))}]", *weights, *lines,
                      "output " + ", ".join(sorted(outs)), ""])


def run(seed, work):
    d = os.path.join(work, f"s{seed}")
    os.makedirs(d)
    with open(os.path.join(d, "p.ein"), "w") as fp:
        fp.write(program(seed))
    out = {}
    for mode in ("dnnl", "no-dnnl"):
        name = "p_" + mode.replace("-", "")
        p = subprocess.run([EINC, "--main", "--" + mode, "p.ein", "-o", name + ".c"], cwd=d,
                           capture_output=True, text=True)
        if p.returncode != 0:
            return f"einc --{mode}: {p.stderr.strip()}", 0
        with open(os.path.join(d, name + ".c")) as fp:
            handed = fp.read().count("sp.src_back = ") if mode == "dnnl" else 0
        err = seeds.build_run(d, name, f"--outputs {name}.st")
        if err:
            return f"--{mode}: {err}", 0
        out[mode] = safetensors.load(os.path.join(d, name + ".st"))
        if mode == "dnnl":
            nh = handed
    bad = []
    for k, a in out["dnnl"].items():
        a, b = a.astype(np.float64), out["no-dnnl"][k].astype(np.float64)
        err = np.abs(a - b).max() / max(np.abs(b).max(), 1e-30)
        if not err < 1e-4:
            bad.append(f"{k}: rel err {err:.3g}")
    return ("; ".join(bad) if bad else None), nh


sys.exit(seeds.main(run, "handed over", "convolutions handed over"))
