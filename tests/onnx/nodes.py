#!/usr/bin/python3
"""nodes.py - one-node ONNX models (written by onnxw.py) for what the
backend cases leave out, imported by einc --from=onnx, compiled with
--main, run and compared with PyTorch:

GatherND with negative indices, with known indices (an integer weight),
with one and two batch dimensions, with tuples shorter than the rank (a
slice per tuple), on integers, to a rank-0 output, and with the batch as
a dim_param (`const B`, then -D B=3).

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
from onnxw import FLOAT, INT32, INT64, model, node  # noqa: E402

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
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
