#!/usr/bin/python3
"""nodes.py - one-node ONNX models (written by onnxw.py) for what the
backend cases leave out, imported by einc --from=onnx, compiled with
--main, run and compared with PyTorch:

GatherND with negative indices, with known indices (an integer weight),
with one and two batch dimensions, with tuples shorter than the rank (a
slice per tuple), on integers, to a rank-0 output, and with the batch as
a dim_param (`const B`, then -D B=3);

comparisons at run time (broadcast, NaNs, integers), And, Or, Xor and
Not, and Where at run time (a bool tensor, a known condition of one
element, integer values); a padding mask exported from PyTorch
(masked_fill of ids == 0, softmax), then -D B=3; Pad of integers;

Mod (known integers with either sign rule, reals at run time); Dropout's
mask output and a ratio of 0 in training mode; values evaluated at import:
an empty Slice of a shape joined by Concat, ScatterND;

known indices out of range and float indices in Gather, GatherElements
and GatherND, Mod of reals without fmod=1, ScatterND of run-time data, an
empty value into other than Concat: refused with the node and the reason
named.

Needs EINC.  Exit 77 where torch is missing."""

import os
import re
import shlex
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "python"))
sys.path.insert(0, here)
from einc import safetensors  # noqa: E402
from onnxw import BOOL, FLOAT, INT32, INT64, model, node  # noqa: E402

try:
    import numpy as np
    import torch
except ImportError as e:
    print(f"nodes.py: {e}")
    sys.exit(77)

EINC = os.environ["EINC"]
failed = passed = 0


def sh(cmd, cwd):
    p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}\n{p.stdout.decode()}")
    return p.stdout.decode()


def run(work, onnx, inputs, defines=()):
    """Import, compile with --main, build, run: the program's text and outputs."""
    open(os.path.join(work, "m.onnx"), "wb").write(onnx)
    sh([EINC, "--from=onnx", "m.onnx", "-o", "m.ein"], work)
    sh([EINC, *defines, "m.ein", "-o", "m.c", "--main"], work)
    with open(os.path.join(work, "m.c")) as f:
        sh(shlex.split(re.match(r"/\* build: (.*) \*/", f.readline()).group(1)), work)
    safetensors.save(inputs, os.path.join(work, "in.safetensors"))
    sh(["./m", "--weights", "m.safetensors", "--inputs", "in.safetensors", "--outputs",
        "out.safetensors"], work)
    return open(os.path.join(work, "m.ein")).read(), \
        safetensors.load(os.path.join(work, "out.safetensors"))


def check(what, got, ref, ein=None, want=None):
    global failed, passed
    ok = got.shape == ref.shape and got.dtype == ref.dtype and np.array_equal(got, ref)
    if ok and want and want not in ein:
        print(f"FAIL {what}: the program has no '{want}':\n{ein}")
        failed += 1
        return
    failed += not ok
    passed += ok
    print(f"{'ok  ' if ok else 'FAIL'} {what}" +
          ("" if ok else f": got {got.dtype} {got.shape}\n{got}\nPyTorch {ref.dtype} "
                         f"{ref.shape}\n{ref}"))


def gathernd_ref(x, idx, b):
    """ONNX's GatherND by torch's indexing: the batch dimensions as
    broadcast aranges, then one index tensor per element of a tuple."""
    x, idx = torch.from_numpy(x), torch.from_numpy(idx)
    q = idx.dim()
    subs = []
    for d in range(b):
        shape = [1] * (q - 1)
        shape[d] = idx.shape[d]
        subs.append(torch.arange(idx.shape[d]).reshape(shape))
    subs += [idx[..., t] for t in range(idx.shape[-1])]
    return x[tuple(subs)].numpy()


def gathernd(work, what, x, idx, b=0, known=False, batch=False, want=None):
    xs = ["N" if batch and d == 0 else s for d, s in enumerate(x.shape)]
    ys = list(gathernd_ref(x, idx, b).shape)
    if batch:
        ys[0] = "N"
    ins = [("x", {np.float32: FLOAT, np.int32: INT32}[x.dtype.type], xs)]
    inits = []
    if known:
        inits = [("idx", idx)]
    else:
        ins.append(("idx", INT64, ["N" if batch and d == 0 else s
                                   for d, s in enumerate(idx.shape)]))
    m = model([node("GatherND", ["x", "idx"], ["y"], batch_dims=b)], ins,
              [("y", ins[0][1], ys)], inits)
    inputs = {"x": x} if known else {"x": x, "idx": idx}
    ein, out = run(work, m, inputs)
    check(what, out["y"], gathernd_ref(x, idx, b), ein, want)
    return m


ONNX_TYPE = {np.float32: FLOAT, np.int32: INT32, np.int64: INT64, np.bool_: BOOL}


def graph(work, what, nodes, ins, outs, ref, inits=(), want=None):
    """A model of `nodes` on the arrays `ins` (name: array), `outs` the
    outputs' names; ref: PyTorch's outputs (name: array)."""
    m = model(nodes, [(k, ONNX_TYPE[v.dtype.type], list(v.shape)) for k, v in ins.items()],
              [(k, ONNX_TYPE[ref[k].dtype.type], list(ref[k].shape)) for k in outs],
              [(k, v) for k, v in inits])
    ein, out = run(work, m, ins)
    for k in outs:
        check(f"{what}: {k}", out[k], ref[k], ein, want)


def refused(work):
    """What einc can see is wrong or will not translate (known indices out
    of range, float indices, Mod of reals without fmod=1, ScatterND at run
    time, an empty value into other than Concat): exit 1, the error naming
    the node, no program."""
    global failed, passed
    x = ("x", FLOAT, [3, 5])
    i64 = lambda *v: np.array(v, dtype=np.int64)  # noqa: E731
    cases = [
        ("Gather", {"axis": 1}, np.array([0, 5]), "index 5 is out of range for size 5"),
        ("Gather", {}, np.array([-4]), "index -4 is out of range for size 3"),
        ("GatherElements", {"axis": 0}, np.array([[0, 1, 2, 3, 4], [2, 1, 0, 3, 3]]),
         "index 3 is out of range for size 3"),
        # the second of each tuple indexes x's axis 1 (size 5), the first axis 0 (3)
        ("GatherND", {}, np.array([[2, 4], [1, -6]]), "index -6 is out of range for size 5"),
        ("GatherND", {}, np.array([[3, 0]]), "index 3 is out of range for size 3"),
        ("Gather", {}, np.array([0.0, 1.0], dtype=np.float32),
         "the indices are float, not integers"),
        ("Mod", {}, np.array([2.0], dtype=np.float32),
         "fmod=0 on float inputs: ONNX's Mod of reals needs fmod=1"),
    ]
    models = [(f"{op} {idx.tolist()}", op, msg,
               model([node(op, ["x", "idx"], ["y"], **attrs)], [x], [("y", FLOAT, [])],
                     [("idx", idx)])) for op, attrs, idx, msg in cases]
    models.append(("ScatterND into run-time data", "ScatterND",
                   "input 0 ('x') must be known at import time (ScatterND is evaluated there)",
                   model([node("ScatterND", ["x", "ix", "u"], ["y"])], [x], [("y", FLOAT, [])],
                         [("ix", i64([1])), ("u", np.ones((1, 5), dtype=np.float32))])))
    models.append(("an empty Slice into Relu", "Relu", "an empty input ('e')",
                   model([node("Slice", ["w", "b1", "b1"], ["e"]), node("Relu", ["e"], ["r"]),
                          node("Concat", ["x", "r"], ["y"], axis=0)], [x], [("y", FLOAT, [])],
                         [("w", np.ones((2, 5), dtype=np.float32)), ("b1", i64(1))])))
    for what, op, msg, m in models:
        for f in ("b.ein", "b.safetensors"):
            if os.path.exists(os.path.join(work, f)):
                os.remove(os.path.join(work, f))
        open(os.path.join(work, "b.onnx"), "wb").write(m)
        p = subprocess.run([EINC, "--from=onnx", "b.onnx", "-o", "b.ein"], cwd=work,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        ok = p.returncode == 1 and re.match(rf"b\.onnx: error: node \d+ \({op}\): ",
                                            p.stderr) is not None and msg in p.stderr and \
            not os.path.exists(os.path.join(work, "b.ein"))
        failed += not ok
        passed += ok
        print(f"{'ok  ' if ok else 'FAIL'} {what}: {msg}" +
              ("" if ok else f": exit {p.returncode}, {p.stderr!r}"))


def logic(work, rng):
    t = torch.from_numpy
    a = rng.standard_normal((2, 3, 4)).astype(np.float32)
    b = rng.standard_normal((3, 1)).astype(np.float32)
    a[0, 0, :2] = np.nan
    b[1, 0] = a[1, 1, 2]                        # equal somewhere
    nodes = [node(op, ["a", "b"], [op]) for op in
             ("Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual")]
    ref = {"Equal": t(a) == t(b), "Less": t(a) < t(b), "Greater": t(a) > t(b),
           "LessOrEqual": t(a) <= t(b), "GreaterOrEqual": t(a) >= t(b)}
    graph(work, "comparisons, broadcast, NaNs", nodes, {"a": a, "b": b}, list(ref),
          {k: v.numpy() for k, v in ref.items()}, want="Less[i0, i1, i2] : bool[B, 3, 4] = a[i0, i1, i2] < b[i1, 0]")
    i = rng.integers(-3, 3, (4, 5))
    j = rng.integers(-3, 3, (5,))
    graph(work, "Equal of int64", [node("Equal", ["i", "j"], ["e"])], {"i": i, "j": j}, ["e"],
          {"e": (t(i) == t(j)).numpy()})
    p = rng.integers(0, 2, (3, 4)).astype(np.bool_)
    q = rng.integers(0, 2, (4,)).astype(np.bool_)
    nodes = [node("And", ["p", "q"], ["and"]), node("Or", ["p", "q"], ["or"]),
             node("Xor", ["p", "q"], ["xor"]), node("Not", ["p"], ["not"])]
    ref = {"and": t(p) & t(q), "or": t(p) | t(q), "xor": t(p) ^ t(q), "not": ~t(p)}
    graph(work, "And, Or, Xor, Not", nodes, {"p": p, "q": q}, list(ref),
          {k: v.numpy() for k, v in ref.items()})
    nodes = [node("Less", ["k0", "k1"], ["c"]), node("Or", ["p", "c"], ["or"])]
    graph(work, "Or with a known condition", nodes, {"p": p}, ["or"],
          {"or": (t(p) | torch.tensor(False)).numpy()},
          inits=[("k0", np.array([2], np.float32)), ("k1", np.array([1], np.float32))],
          want="p[i0, i1] || bool(0)")
    x = rng.standard_normal((2, 3)).astype(np.float32)
    y = rng.standard_normal((3,)).astype(np.float32)
    nodes = [node("Less", ["x", "y"], ["m"]), node("Where", ["m", "x", "y"], ["w"])]
    graph(work, "Where of a comparison", nodes, {"x": x, "y": y}, ["w"],
          {"w": torch.where(t(x) < t(y), t(x), t(y)).numpy()},
          want="select(m[i0, i1], x[i0, i1], y[i1])")
    # a condition known at import time, one element: a number made a condition
    nodes = [node("Less", ["k0", "k1"], ["c"]), node("Where", ["c", "x", "y"], ["w"])]
    graph(work, "Where of a known condition", nodes, {"x": x, "y": y}, ["w"],
          {"w": torch.where(torch.tensor(True), t(x), t(y)).numpy()},
          inits=[("k0", np.array([1], np.float32)), ("k1", np.array([2], np.float32))],
          want="select(bool(1), ")
    c = rng.integers(0, 2, (4, 1)).astype(np.bool_)
    u = rng.integers(-1000, 1000, (4, 6))
    v = rng.integers(-1000, 1000, (6,))
    graph(work, "Where of int64", [node("Where", ["c", "u", "v"], ["w"])],
          {"c": c, "u": u, "v": v}, ["w"], {"w": torch.where(t(c), t(u), t(v)).numpy()})


def pads(work, rng):
    t = torch.from_numpy
    F = torch.nn.functional
    x = rng.integers(-1000, 1000, (2, 3, 4))
    pads = np.array([0, 1, 2, 1, 0, 1])
    graph(work, "Pad of int64, constant -3e9", [node("Pad", ["x", "pads", "v"], ["y"])], {"x": x},
          ["y"], {"y": F.pad(t(x), (2, 1, 1, 0, 0, 1), value=-3000000000).numpy()},
          inits=[("pads", pads), ("v", np.array(-3000000000))], want="(-3000000000))")
    x = rng.integers(-99, 99, (1, 3, 4)).astype(np.int32)
    graph(work, "Pad of int32, edge", [node("Pad", ["x", "pads"], ["y"], mode="edge")],
          {"x": x}, ["y"],
          {"y": F.pad(t(x).double(), (2, 1, 1, 0), mode="replicate").int().numpy()},
          inits=[("pads", np.array([0, 1, 2, 0, 0, 1]))])


def mod_dropout(work, rng):
    """Mod (known integers folded with either sign rule; reals at run time
    with fmod=1) and Dropout's mask output and a ratio of 0 in training."""
    t = torch.from_numpy
    a = np.array([7, -7, 7, -7, 0, 5], dtype=np.int64)
    b = np.array([3, 3, -3, -3, 2, 5], dtype=np.int64)
    x = rng.integers(-99, 99, (6,)).astype(np.float32)
    for fm, ref in ((0, torch.remainder), (1, torch.fmod)):
        graph(work, f"Mod of known integers, fmod={fm}",
              [node("Mod", ["a", "b"], ["m"], fmod=fm), node("Cast", ["m"], ["mf"], to=FLOAT),
               node("Add", ["x", "mf"], ["y"])], {"x": x}, ["y"],
              {"y": (t(x) + ref(t(a), t(b)).float()).numpy()}, inits=[("a", a), ("b", b)])
    # quarters over 1.5, -2.5, 0.75, 3: every step of a - b * trunc(a / b) exact
    xr = (rng.integers(-160, 160, (4, 5)) / 4).astype(np.float32)
    yr = np.array([1.5, -2.5, 0.75, 3, -1.5], dtype=np.float32)
    graph(work, "Mod of reals at run time (fmod=1)", [node("Mod", ["x", "d"], ["y"], fmod=1)],
          {"x": xr, "d": yr}, ["y"], {"y": torch.fmod(t(xr), t(yr)).numpy()})
    graph(work, "Dropout with its mask output (inference)",
          [node("Dropout", ["x"], ["y", "mask"])], {"x": xr}, ["y"], {"y": xr})
    graph(work, "Dropout in training mode with a ratio of 0",
          [node("Dropout", ["x", "r", "tm"], ["y"])], {"x": xr}, ["y"], {"y": xr},
          inits=[("r", np.array(0, dtype=np.float32)), ("tm", np.array(True))])


def known_values(work, rng):
    """What exported models compute from shapes, evaluated at import: an
    empty Slice of a shape joined by Concat into a new shape (swin_t), and
    ScatterND of known values (its shifted-window mask)."""
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    i64 = lambda *v: np.array(v, dtype=np.int64)  # noqa: E731
    graph(work, "an empty Slice of a shape into Concat",
          [node("Shape", ["x"], ["s"]), node("Slice", ["s", "b0", "b2"], ["a"]),
           node("Slice", ["s", "b3", "b3"], ["e"]),
           node("Concat", ["e", "a", "m1", "e"], ["c"], axis=0),
           node("Reshape", ["x", "c"], ["y"])], {"x": x}, ["y"], {"y": x},
          inits=[("b0", i64(0)), ("b2", i64(2)), ("b3", i64(3)), ("m1", i64(-1))])
    ix = i64([3], [1], [3])
    up = np.arange(9, dtype=np.float32).reshape(3, 3) + 1
    xs = x.reshape(2, 4, 3)
    for red in ("none", "add", "mul"):
        d = np.full((4, 3), 2 if red == "mul" else 0, dtype=np.float32)
        ref = d.copy()
        for t, (r,) in enumerate(ix):     # in order: row 3 twice
            ref[r] = up[t] if red == "none" else ref[r] + up[t] if red == "add" \
                else ref[r] * up[t]
        graph(work, f"ScatterND of known values, reduction {red}",
              [node("ScatterND", ["d", "ix", "up"], ["sc"], reduction=red),
               node("Add", ["x", "sc"], ["y"])], {"x": xs}, ["y"],
              {"y": xs + ref}, inits=[("d", d), ("ix", ix), ("up", up)])


class Masked(torch.nn.Module):
    """Scores over a row of token ids, the padding (id 0) masked out."""

    def forward(self, ids, s):
        return torch.softmax(s.masked_fill(ids.unsqueeze(1) == 0, -1e9), dim=-1)


def masked(work):
    global failed, passed
    m = Masked().eval()
    ids = torch.tensor([[5, 3, 0, 0, 7]])
    s = torch.randn(1, 4, 5)
    path = os.path.join(work, "k.onnx")
    torch.onnx.export(m, (ids, s), path, input_names=["ids", "s"], output_names=["p"],
                      opset_version=13, dynamic_axes={"ids": {0: "b"}, "s": {0: "b"}})
    for what, ids, s, defines in (
            ("a padding mask from PyTorch", ids, s, ()),
            ("the same, -D B=3", torch.tensor([[5, 3, 0, 0, 7], [0, 1, 2, 0, 4], [9, 9, 9, 9, 0]]),
             torch.randn(3, 4, 5), ["-D", "B=3"])):
        ein, out = run(work, open(path, "rb").read(), {"ids": ids.numpy(), "s": s.numpy()},
                       defines)
        with torch.no_grad():
            ref = m(ids, s).numpy()
        e = float(np.max(np.abs(out["p"] - ref)))
        ok = out["p"].shape == ref.shape and e < 1e-6 and "const B = 1" in ein
        failed += not ok
        passed += ok
        print(f"{'ok  ' if ok else 'FAIL'} {what}: max error {e:.3g}" + ("" if ok else ein))


def main():
    rng = np.random.default_rng(0)

    def f32(*s):
        return rng.standard_normal(s).astype(np.float32)

    def ints(hi, *s):
        return rng.integers(-hi, hi, s).astype(np.int64)

    with tempfile.TemporaryDirectory(prefix="einc-nodes-") as work:
        gathernd(work, "GatherND, negative indices", f32(4, 5, 3),
                 np.array([[[1, -2], [-4, 0]], [[0, 4], [3, -1]]]),
                 want="idx[i0, i1, 0] % 4, idx[i0, i1, 1] % 5, i2]")
        gathernd(work, "GatherND, tuples of one: slices", f32(6, 4), ints(6, 3, 2, 1))
        gathernd(work, "GatherND, known indices (an integer weight)", f32(3, 4),
                 np.array([[2, -1], [0, 1], [1, 3]]), known=True,
                 want="weight idx : i64[3, 2]")
        gathernd(work, "GatherND, batch_dims 1", f32(2, 5, 6), ints(5, 2, 3, 1), b=1)
        gathernd(work, "GatherND, batch_dims 2", f32(2, 3, 4, 5), ints(4, 2, 3, 2)[..., :2] % 4,
                 b=2)
        gathernd(work, "GatherND, int32 data", rng.integers(-99, 99, (3, 4, 2)).astype(np.int32),
                 ints(3, 5, 2) % 3)
        gathernd(work, "GatherND, a rank-0 output", f32(3, 4), np.array([2, -1]))
        x, idx = f32(1, 5, 4), ints(5, 1, 3, 1)
        m = gathernd(work, "GatherND, the batch a dim_param", x, idx, b=1, batch=True,
                     want="const B = 1")
        x3, idx3 = f32(3, 5, 4), ints(5, 3, 3, 1)
        _, out = run(work, m, {"x": x3, "idx": idx3}, defines=["-D", "B=3"])
        check("GatherND, -D B=3", out["y"], gathernd_ref(x3, idx3, 1))
        logic(work, rng)
        masked(work)
        pads(work, rng)
        mod_dropout(work, rng)
        known_values(work, rng)
        refused(work)
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
