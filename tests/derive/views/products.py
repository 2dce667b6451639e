#!/usr/bin/python3
"""products.py - random products over a batch of two loops
(tests/derive/views.test): each seed writes a program whose product
s[b, h, i, j] sums x * y over k, x and y packed tensors that hold b, h,
the rows and k in dims of a random order (the heads split out of a dim
with the rows or the features, Longformer's residue classes 4i + c now
and then), maybe scaled, and now and then merged back into one tensor
([B, rows, H*cols]); compiles it for the C target, runs it on random
inputs and compares each output with numpy's einsum:
max |a - b| / max |b| < 1e-5.  Prints a line per seed and how many
products ran as a two-level batch (`split=` in the plan); exits 1 on a
mismatch or a failure, and when no seed made one.

  products.py FIRST LAST      (seeds FIRST..LAST-1; EINC, the einc to run)
"""

import os
import random
import subprocess
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import seeds  # noqa: E402
from seeds import EINC, np, safetensors  # noqa: E402


def operand(r, name, rows, sizes, shared):
    """A packed tensor holding b, h, the rows `rows` and k: its dims, the
    subscripts that read element (b, h, rows, k), and numpy's axes."""
    B, H, R, K = sizes["b"], sizes["h"], sizes[rows], sizes["k"]
    off = r.choice([0, 0, 1]) * H * K         # a later part of a q|k|v
    parts = 1 + off // (H * K) + r.choice([0, 1])
    if r.random() < 0.5:
        # [B, rows, parts*H*K]: heads in the features
        dims = [B, R, parts * H * K]
        sub = ["b", rows, f"{off} + h * {K} + k"]
    else:
        # [rows, B, H, K] in a random order
        order = r.sample(["b", "h", rows, "k"], 4)
        dims = [sizes[v] for v in order]
        sub = list(order)
    if r.random() < 0.2 and R % 4 == 0 and dims[sub.index(rows)] == R and shared:
        # Longformer's residue classes: row 4i + c of a tensor of R rows
        sub[sub.index(rows)] = f"4 * {rows} + c"
    return dims, sub


def program(seed):
    r = random.Random(seed)
    sizes = {"b": r.choice([2, 3]), "h": r.choice([2, 3, 4]), "i": r.choice([4, 8, 12]),
             "j": r.choice([4, 8, 16]), "k": r.choice([4, 8])}
    residue = r.random() < 0.3
    if residue:
        sizes["c"] = 4
        sizes["j"] = sizes["i"]
    xd, xs = operand(r, "x", "i", sizes, False)
    yd, ys = operand(r, "y", "j", sizes, False)
    if residue:     # rows 4i + c of both, i over a quarter
        for d, s in ((xd, xs), (yd, ys)):
            for n, v in enumerate(s):
                if v in ("i", "j"):
                    s[n] = f"4 * {v} + c"
                    d[n] = 4 * sizes[v]
    lo = ["b", "h"] + (["c"] if residue else []) + ["i", "j"]
    r.shuffle(lo[:2])
    scale = r.choice(["", "", " / 4", " * 3"])
    dims = ", ".join(str(sizes[v]) for v in lo)
    lines = [f"input x : f32[{', '.join(map(str, xd))}]",
             f"input y : f32[{', '.join(map(str, yd))}]",
             f"s[{', '.join(lo)}] : [{dims}] += x[{', '.join(xs)}] * y[{', '.join(ys)}]{scale}"
             f" where k < {sizes['k']}"]
    outs = ["s"]
    if not residue and lo[:2] == ["b", "h"] and r.random() < 0.5:
        lines.append(f"m[b, i, f] : [{sizes['b']}, {sizes['i']}, {sizes['h'] * sizes['j']}] = "
                     f"s[b, f / {sizes['j']}, i, f % {sizes['j']}]")
        outs = ["m"]
    lines.append("output " + ", ".join(outs))
    return "\n".join(lines) + "\n", sizes, (xd, xs), (yd, ys), lo, scale, outs


def reference(x, y, sizes, xop, yop, lo, scale, outs):
    """s by numpy: each operand's element (b, h, c, row, k) gathered by
    loops over its subscripts, then einsum."""
    def unpack(a, sub, rows):
        names = ["b", "h"] + (["c"] if "c" in sizes else []) + [rows, "k"]
        out = np.zeros([sizes[v] for v in names])
        for idx in np.ndindex(*out.shape):
            env = dict(zip(names, idx))
            pos = tuple(eval(s, {}, env) for s in sub)
            out[idx] = a[pos]
        return out, names
    xa, xn = unpack(x, xop[1], "i")
    ya, yn = unpack(y, yop[1], "j")
    s = np.einsum(f"{''.join(xn)},{''.join(yn)}->{''.join(lo)}", xa, ya)
    s = s / 4 if scale == " / 4" else s * 3 if scale == " * 3" else s
    if outs == ["m"]:
        B, H, I, J = s.shape
        return {"m": s.transpose(0, 2, 1, 3).reshape(B, I, H * J)}
    return {"s": s}


def run(seed, work):
    d = os.path.join(work, f"s{seed}")
    os.makedirs(d)
    src, sizes, xop, yop, lo, scale, outs = program(seed)
    with open(os.path.join(d, "p.ein"), "w") as fp:
        fp.write(src)
    p = subprocess.run([EINC, "--main", "p.ein", "-o", "p.c"], cwd=d, capture_output=True,
                       text=True)
    if p.returncode != 0:
        return f"einc: {p.stderr.strip()}", 0
    p = subprocess.run([EINC, "--emit=plan", "--target=c", "p.ein", "-o", "-"], cwd=d,
                       capture_output=True, text=True)
    split = p.stdout.count(" split=")
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, xop[0]).astype(np.float32)
    y = rng.uniform(-1, 1, yop[0]).astype(np.float32)
    safetensors.save({"x": x, "y": y}, os.path.join(d, "in.st"))
    err = seeds.build_run(d, "p", "--inputs in.st --outputs out.st")
    if err:
        return err, split
    got = safetensors.load(os.path.join(d, "out.st"))
    want = reference(x.astype(np.float64), y.astype(np.float64), sizes, xop, yop, lo, scale,
                     outs)
    return seeds.compare(got, want), split


sys.exit(seeds.main(run, "two-level", "products of two-level batches"))
