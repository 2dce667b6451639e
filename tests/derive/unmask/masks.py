#!/usr/bin/python3
"""masks.py - random masked maps and their readers (tests/derive/unmask.test,
derive/search/unmask.c): each seed writes a program with a map t that
zeroes the points where a random condition fails (a `where` or a
`select(c, x, 0)`), now and then a map p of t after it (so t's reads go
through p), and readers of t or p: sums and maxima under conditions of
their own (the mask's, one that implies it, a weaker or another one),
reading it straight or transposed, a select over it, or the tensor
itself as an output.  It compiles the program for the C target with
--verify, runs it on random inputs and compares every output with numpy
(max |a - b| / max |b| < 1e-5).  Prints a line per seed and how many
masks went (plan-json's "unmasked"); exits 1 on a mismatch or a failure,
and when no seed dropped one.

  masks.py FIRST LAST      (seeds FIRST..LAST-1; EINC, the einc to run)
"""

import os
import random
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import seeds  # noqa: E402
from seeds import np, safetensors  # noqa: E402


def cond(r):
    """a*i + b*j + c >= 0 as (a, b, c), a and b not both 0."""
    a, b = r.choice([(1, -1), (-1, 1), (1, 1), (2, -1), (1, -2), (1, 0), (0, 1), (-1, 0)])
    return a, b, r.randint(-3, 3)


def text(c, i="i", j="j"):
    a, b, k = c
    terms = [f"{a}*{i}", f"{b}*{j}", str(k)]
    return " + ".join(t for t in terms if not t.startswith("0")) + " >= 0"


def holds(c, i, j):
    a, b, k = c
    return a * i + b * j + k >= 0


def reader_cond(r, mask):
    """The mask's own condition, one that implies it (a larger constant
    needed), a weaker one or another."""
    a, b, k = mask
    return r.choice([mask, mask, (a, b, k - r.randint(1, 2)), (a, b, k + r.randint(1, 2)),
                     cond(r)])


def program(seed):
    r = random.Random(seed)
    n = r.choice([5, 6, 8])
    mask = cond(r)
    body = r.choice(["x[i, j] * 2", "x[i, j] + y[j, i]", "exp(x[i, j])", "x[j, i] - y[i, j]"])
    lines = [f"input x : f32[{n}, {n}]", f"input y : f32[{n}, {n}]"]
    if r.random() < 0.5:
        lines.append(f"t[i, j] : [{n}, {n}] = {body} where {text(mask)}")
    else:
        lines.append(f"t[i, j] : [{n}, {n}] = select({text(mask)}, {body}, 0)")
    src = "t"
    chain = r.random() < 0.5
    if chain:
        lines.append("p[i, j] = t[i, j] * 3 + y[i, j]")
        src = "p"
    readers, outs = [], []
    for k in range(r.randint(1, 3)):
        kind = r.choice(["sum", "sum", "max", "select", "whole"])
        c = reader_cond(r, mask)
        tr = r.random() < 0.3
        name = f"r{k}"
        if kind in ("sum", "max"):
            op = "+=" if kind == "sum" else "max="
            # over j; transposed: read src[j, i], the condition on (j, i)
            acc = f"{src}[j, i]" if tr else f"{src}[i, j]"
            where = text(c, "j", "i") if tr else text(c)
            lines.append(f"{name}[i] : [{n}] {op} {acc} where {where}")
        elif kind == "select":
            lines.append(f"{name}[i, j] : [{n}, {n}] = select({text(c)}, {src}[i, j] - 1, 0)")
        else:
            name = src
        readers.append((name, kind, c, tr))
        if name not in outs:
            outs.append(name)
    lines.append("output " + ", ".join(outs))
    return "\n".join(lines) + "\n", n, mask, body, chain, readers, outs


def reference(x, y, n, mask, body, chain, readers):
    t = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            if holds(mask, i, j):
                t[i, j] = {"x[i, j] * 2": x[i, j] * 2, "x[i, j] + y[j, i]": x[i, j] + y[j, i],
                           "exp(x[i, j])": np.exp(x[i, j]),
                           "x[j, i] - y[i, j]": x[j, i] - y[i, j]}[body]
    src = t * 3 + y if chain else t
    want = {}
    for name, kind, c, tr in readers:
        if kind == "whole":
            want[name] = src
        elif kind == "select":
            want[name] = np.array([[src[i, j] - 1 if holds(c, i, j) else 0 for j in range(n)]
                                   for i in range(n)])
        else:
            out = np.zeros(n)
            for i in range(n):
                # transposed: src[j, i] under the condition on (j, i)
                vals = [src[j, i] if tr else src[i, j] for j in range(n)
                        if holds(c, *((j, i) if tr else (i, j)))]
                if vals:
                    out[i] = sum(vals) if kind == "sum" else max(vals)
            want[name] = out
    return want


def run(seed, work):
    src, n, mask, body, chain, readers, outs = program(seed)
    d, err, plan = seeds.compile_c(work, seed, src)
    if err:
        return err, 0
    dropped = len(plan["unmasked"])
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    y = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    safetensors.save({"x": x, "y": y}, os.path.join(d, "in.st"))
    err = seeds.build_run(d, "p", "--inputs in.st --outputs out.st")
    if err:
        return err, dropped
    got = safetensors.load(os.path.join(d, "out.st"))
    want = reference(x.astype(np.float64), y.astype(np.float64), n, mask, body, chain, readers)
    return seeds.compare(got, want), dropped


sys.exit(seeds.main(run, "masks dropped", "masks dropped"))
