#!/usr/bin/python3
"""models.py - torchvision's resnet18 and swin_t and nn.TransformerEncoderLayer,
exported by torch.onnx.export, imported by einc --from=onnx, compiled and
compared with PyTorch on the CPU (relative error max|y - ref| / max|ref|
below 1e-5):

1. resnet18 through the command line, as a user would:
   einc --from=onnx r.onnx -o r.ein && einc r.ein -o r.c --main, the
   build command of r.c's first line, ./r --weights --inputs --outputs;
   then the same program for a batch of 2 with -D B=2.
2. the transformer layer the same way, and through the Python module
   (einc.compile of the .onnx file, model(src=...)).
3. a state_dict round trip through the Python module: resnet18 exported
   with its batch norms kept (TrainingMode.PRESERVE, so the initializers
   are the state_dict's keys), compiled with einc.compile, loaded with
   another resnet18's state_dict, compared with that one.
4. torchvision's swin_t through the command line (a Swin transformer:
   shapes and its shifted-window mask computed in the graph).

Needs EINC.  Exit 77 where torch or torchvision is missing."""

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
    import torchvision
except ImportError as e:
    print(f"models.py: {e}")
    sys.exit(77)

EINC = os.environ["EINC"]
TOL = 1e-5
failed = 0
passed = 0


def rel_err(y, ref):
    y, ref = np.asarray(y, np.float64), np.asarray(ref, np.float64)
    return float(np.max(np.abs(y - ref)) / np.max(np.abs(ref)))


def check(what, y, ref):
    global failed, passed
    if y.shape != ref.shape:
        print(f"FAIL {what}: shape {y.shape}, PyTorch {ref.shape}")
        failed += 1
        return
    e = rel_err(y, ref)
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


def build_and_run(ein, cfile, inputs, work, defines=()):
    """einc ein -o cfile --main, line 1's command, run: the outputs."""
    sh([EINC, *defines, ein, "-o", cfile, "--main"], work)
    with open(os.path.join(work, cfile)) as f:
        cmd = re.match(r"/\* build: (.*) \*/", f.readline()).group(1)
    sh(shlex.split(cmd), work)
    exe = "./" + os.path.splitext(cfile)[0]
    safetensors.save(inputs, os.path.join(work, "in.safetensors"))
    sh([exe, "--weights", os.path.splitext(ein)[0] + ".safetensors", "--inputs",
        "in.safetensors", "--outputs", "out.safetensors"], work)
    return safetensors.load(os.path.join(work, "out.safetensors"))


def through_cli(work, m, x, stem, inp, out):
    """m exported to STEM.onnx with input inp and output out, imported by
    einc --from=onnx, built and run with --main on x: the program's text,
    einc's output and PyTorch's."""
    torch.onnx.export(m, x, os.path.join(work, stem + ".onnx"), input_names=[inp],
                      output_names=[out], opset_version=13)
    sh([EINC, "--from=onnx", stem + ".onnx", "-o", stem + ".ein"], work)
    with torch.no_grad():
        ref = m(x).numpy()
    y = build_and_run(stem + ".ein", stem + ".c", {inp: x.numpy()}, work)[out]
    return open(os.path.join(work, stem + ".ein")).read(), y, ref


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory(prefix="einc-models-") as work:
        # 1. resnet18 through the command line, then with -D B=2.
        m = torchvision.models.resnet18().eval()
        x = torch.randn(1, 3, 224, 224)
        ein, y, ref = through_cli(work, m, x, "r", "input", "logits")
        if "const B = 1" not in ein:
            print("FAIL resnet18: the program has no const B")
            sys.exit(1)
        # the standard library's layers where a node is one
        for want in ("import <nn.ein>", "= conv2d(input_, ", "= maxpool2d(", "= linear("):
            if want not in ein:
                print(f"FAIL resnet18: the program has no '{want}'")
                sys.exit(1)
        check("resnet18, einc --from=onnx and --main", y, ref)
        x2 = torch.randn(2, 3, 224, 224)
        with torch.no_grad():
            ref2 = m(x2).numpy()
        y2 = build_and_run("r.ein", "r2.c", {"input": x2.numpy()}, work,
                           defines=["-D", "B=2"])["logits"]
        check("resnet18, -D B=2", y2, ref2)

        # 2. the transformer encoder layer.
        t = torch.nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128,
                                             dropout=0.0).eval()
        s = torch.randn(10, 2, 64)
        _, y, ref = through_cli(work, t, s, "t", "src", "out")
        check("TransformerEncoderLayer", y, ref)
        with einc.compile(os.path.join(work, "t.onnx")) as model:
            check("TransformerEncoderLayer (einc.compile)", model(src=s.numpy())["out"], ref)

        # 3. a state_dict loaded by its names through the Python module.
        a = torchvision.models.resnet18().eval()
        b = torchvision.models.resnet18().eval()
        for p in b.modules():
            if isinstance(p, torch.nn.BatchNorm2d):      # statistics of their own
                p.running_mean.uniform_(-0.1, 0.1)
                p.running_var.uniform_(0.5, 1.5)
        torch.onnx.export(a, x, os.path.join(work, "p.onnx"), input_names=["input"],
                          output_names=["logits"], opset_version=13,
                          training=torch.onnx.TrainingMode.PRESERVE,
                          do_constant_folding=False)
        model = einc.compile(os.path.join(work, "p.onnx"))
        res = model.load_state_dict(b.state_dict(), strict=False)
        unexpected = sorted(res.unexpected_keys)
        if res.missing_keys or any(not k.endswith("num_batches_tracked") for k in unexpected):
            print(f"FAIL load_state_dict: missing {res.missing_keys}, unexpected {unexpected}")
            sys.exit(1)
        with torch.no_grad():
            ref = b(x).numpy()
        y = model(input=x.numpy())["logits"]
        check("resnet18 with another model's state_dict (einc.compile)", y, ref)
        yt = model(input=x)["logits"]
        if not isinstance(yt, torch.Tensor):
            print("FAIL: torch inputs gave no torch outputs")
            sys.exit(1)
        check("the same with torch tensors", yt.numpy(), ref)
        model.close()

        # 4. swin_t: shapes computed in the graph (an empty Slice of a
        # shape into Concat), its shifted windows' mask built by ScatterND
        # of known values, Mod, Dropout's mask output.
        _, y, ref = through_cli(work, torchvision.models.swin_t().eval(), x, "s", "input",
                                "logits")
        check("swin_t, einc --from=onnx and --main", y, ref)
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
