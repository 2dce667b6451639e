#!/usr/bin/python3
"""embed.py - a small language-model front (nn.Embedding on int64 token ids,
a token-type embedding of the ids reshaped, learned positions, the ids
cast to float, LayerNorm, a Linear head)
exported by torch.onnx.export with a dynamic batch, imported by einc
--from=onnx (its Gathers read the ids at run time: ein's gathers), compiled
and compared with PyTorch on the CPU (relative error max|y - ref| /
max|ref| below 1e-5):

1. through the command line: einc --from=onnx, einc --main, line 1's build
   command, ./e --weights --inputs --outputs (the batch B = 1 of the
   dynamic axis); then -D B=3.
2. through the Python module: einc.compile on the .onnx with B = 2, numpy
   int64 ids and torch ids.
3. x[:, perm] with a constant permutation of 20: the indices an i64
   weight, through einc.compile.

Needs EINC.  Exit 77 where torch is missing."""

import os
import re
import shlex
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import einc  # noqa: E402
from einc import safetensors  # noqa: E402

try:
    import numpy as np
    import torch
except ImportError as e:
    print(f"embed.py: {e}")
    sys.exit(77)

EINC = os.environ["EINC"]
TOL = 1e-5
V, D, T, TYPES = 50, 16, 6, 2
failed = passed = 0


class Permute(torch.nn.Module):
    """A gather of 20 known indices that are no progression: an integer
    weight read in the subscript."""

    def __init__(self):
        super().__init__()
        self.register_buffer("perm", torch.randperm(20))

    def forward(self, x):
        return torch.tanh(x[:, self.perm] * 2.0)


class Front(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = torch.nn.Embedding(V, D)
        self.typ = torch.nn.Embedding(TYPES, D)
        self.pos = torch.nn.Embedding(T, D)
        self.norm = torch.nn.LayerNorm(D)
        self.head = torch.nn.Linear(D, 5)

    def forward(self, ids, types):
        pos = torch.arange(ids.shape[1])
        # integers moved at run time (Reshape, Unsqueeze) and cast to float
        typ = self.typ(types.reshape(-1)).reshape(ids.shape[0], ids.shape[1], D)
        x = self.tok(ids) + typ + self.pos(pos) + ids.unsqueeze(-1).float() * 0.01
        return self.head(self.norm(x))


def check(what, y, ref):
    global failed, passed
    y, ref = np.asarray(y, np.float64), np.asarray(ref, np.float64)
    if y.shape != ref.shape:
        print(f"FAIL {what}: shape {y.shape}, PyTorch {ref.shape}")
        failed += 1
        return
    e = float(np.max(np.abs(y - ref)) / np.max(np.abs(ref)))
    ok = e < TOL
    failed += not ok
    passed += ok
    print(f"{'ok  ' if ok else 'FAIL'} {what}: relative error {e:.3g}")


def sh(cmd, cwd):
    p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if p.returncode != 0:
        print(f"FAIL: {' '.join(cmd)}\n{p.stdout.decode()}")
        sys.exit(1)
    return p.stdout.decode()


def build_and_run(cfile, inputs, work, defines=()):
    sh([EINC, *defines, "e.ein", "-o", cfile, "--main"], work)
    with open(os.path.join(work, cfile)) as f:
        cmd = re.match(r"/\* build: (.*) \*/", f.readline()).group(1)
    sh(shlex.split(cmd), work)
    safetensors.save(inputs, os.path.join(work, "in.safetensors"))
    sh(["./" + os.path.splitext(cfile)[0], "--weights", "e.safetensors", "--inputs",
        "in.safetensors", "--outputs", "out.safetensors"], work)
    return safetensors.load(os.path.join(work, "out.safetensors"))


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    m = Front().eval()
    ids = torch.randint(0, V, (2, T))
    types = torch.randint(0, TYPES, (2, T))
    with tempfile.TemporaryDirectory(prefix="einc-embed-") as work:
        torch.onnx.export(m, (ids, types), os.path.join(work, "e.onnx"),
                          input_names=["ids", "types"], output_names=["logits"],
                          opset_version=13,
                          dynamic_axes={"ids": {0: "batch"}, "types": {0: "batch"}})
        sh([EINC, "--from=onnx", "e.onnx", "-o", "e.ein"], work)
        ein = open(os.path.join(work, "e.ein")).read()
        for want in ("const B = 1", "input  ids : i64[B, 6]", "ids[i0, i1] % 50"):
            if want not in ein:
                print(f"FAIL: the program has no '{want}':\n{ein}")
                sys.exit(1)
        ids1, types1 = ids[:1], types[:1]
        with torch.no_grad():
            ref1 = m(ids1, types1).numpy()
        y = build_and_run("e.c", {"ids": ids1.numpy(), "types": types1.numpy()}, work)
        check("embedding front, einc --from=onnx and --main", y["logits"], ref1)
        ids3 = torch.randint(0, V, (3, T))
        types3 = torch.randint(0, TYPES, (3, T))
        with torch.no_grad():
            ref3 = m(ids3, types3).numpy()
        y3 = build_and_run("e3.c", {"ids": ids3.numpy(), "types": types3.numpy()}, work,
                           defines=["-D", "B=3"])
        check("embedding front, -D B=3", y3["logits"], ref3)

        with torch.no_grad():
            ref = m(ids, types).numpy()
        model = einc.compile(os.path.join(work, "e.onnx"), consts={"B": 2})
        elems = {t.name: t.elem for t in model.inputs}
        if elems != {"ids": "i64", "types": "i64"}:
            print(f"FAIL: the module's inputs are {elems}")
            sys.exit(1)
        y = model(ids=ids.numpy(), types=types.numpy())["logits"]
        check("embedding front, einc.compile with numpy ids", y, ref)
        yt = model(ids=ids, types=types)["logits"]
        if not isinstance(yt, torch.Tensor):
            print("FAIL: torch inputs gave no torch outputs")
            sys.exit(1)
        check("the same with torch ids", yt.numpy(), ref)
        model.close()

        # 3. known indices as an integer weight
        p = Permute().eval()
        x = torch.randn(3, 20)
        torch.onnx.export(p, x, os.path.join(work, "p.onnx"), input_names=["x"],
                          output_names=["y"], opset_version=13)
        sh([EINC, "--from=onnx", "p.onnx", "-o", "p.ein"], work)
        ein = open(os.path.join(work, "p.ein")).read()
        if not re.search(r"^weight \w+ .*: i64\[20\]$", ein, re.M):
            print(f"FAIL: the permutation is no i64 weight:\n{ein}")
            sys.exit(1)
        model = einc.compile(os.path.join(work, "p.onnx"))
        with torch.no_grad():
            ref = p(x).numpy()
        check("a gather of known indices (an integer weight)", model(x=x.numpy())["y"], ref)
        model.close()
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
