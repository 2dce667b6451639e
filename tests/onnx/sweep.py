#!/usr/bin/python3
"""sweep.py - torchvision's models through einc --from=onnx and the C
target, each against PyTorch on the CPU (not part of `make check`: about
a minute a model on one core).

    EINC=./einc sweep.py [--keep DIR] [NAME...]

For each NAME (default: the list below; `segmentation.` and `video.`
prefixes name those modules' models), with torch's seed 0: the model in
eval mode (a segmentation model's "out"; vit's zero-initialized head
drawn normal, so that its output is not all zeros), torch.onnx.export at
opset 13, einc --from=onnx, einc --main, the build command of line 1,
a run on the same input, and one line: ok and the relative error
max|einc - torch| / max|torch| (below 1e-4), MISMATCH, or the step that
failed and its first message.  Exit status 1 if any was not ok.
"""

import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from einc import safetensors  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torchvision  # noqa: E402

MODELS = """squeezenet1_0 mobilenet_v3_small mobilenet_v3_large shufflenet_v2_x0_5
shufflenet_v2_x1_0 alexnet googlenet densenet121 mnasnet0_5 mnasnet1_0 regnet_y_400mf
regnet_x_400mf efficientnet_b0 efficientnet_v2_s convnext_tiny vit_b_16 inception_v3
resnext50_32x4d wide_resnet50_2 vgg11_bn swin_t segmentation.lraspp_mobilenet_v3_large
segmentation.deeplabv3_mobilenet_v3_large segmentation.fcn_resnet50 video.r3d_18""".split()


class Out(torch.nn.Module):
    """A segmentation model's "out"."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, x):
        return self.m(x)["out"]


def build(name):
    mod = torchvision.models
    for part in name.split(".")[:-1]:
        mod = getattr(mod, part)
    seg = name.startswith("segmentation.")
    m = getattr(mod, name.split(".")[-1])(**({"weights_backbone": None} if seg else {}))
    if name.startswith("vit"):
        torch.nn.init.normal_(m.heads.head.weight)
        torch.nn.init.normal_(m.heads.head.bias)
    m = (Out(m) if seg else m).eval()
    if name.startswith("video."):
        x = torch.randn(1, 3, 8, 112, 112)
    else:
        x = torch.randn(1, 3, 299, 299) if name == "inception_v3" else torch.randn(1, 3, 224, 224)
    return m, x


def step(cmd, cwd, what):
    p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        first = p.stdout.strip().splitlines()[0] if p.stdout.strip() else f"exit {p.returncode}"
        raise RuntimeError(f"{what}: {first}")


def one(name, work, einc):
    torch.manual_seed(0)
    m, x = build(name)
    with torch.no_grad():
        ref = m(x)
    ref = (ref.logits if hasattr(ref, "logits") else ref).numpy()
    torch.onnx.export(m, x, os.path.join(work, "m.onnx"), input_names=["input"],
                      output_names=["out"], opset_version=13)
    step([einc, "--from=onnx", "m.onnx", "-o", "m.ein"], work, "import")
    step([einc, "m.ein", "-o", "m.c", "--main"], work, "einc")
    with open(os.path.join(work, "m.c")) as f:
        cmd = re.match(r"/\* build: (.*) \*/", f.readline()).group(1)
    step(shlex.split(cmd), work, "build")
    safetensors.save({"input": x.numpy()}, os.path.join(work, "in.safetensors"))
    step(["./m", "--weights", "m.safetensors", "--inputs", "in.safetensors", "--outputs",
          "out.safetensors"], work, "run")
    y = safetensors.load(os.path.join(work, "out.safetensors"))["out"]
    if y.shape != ref.shape:
        return f"MISMATCH shape {y.shape}, PyTorch {ref.shape}"
    e = float(np.max(np.abs(y.astype(np.float64) - ref)) / np.max(np.abs(ref)))
    return f"{'ok' if e < 1e-4 else 'MISMATCH'} relative error {e:.3g}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", help="keep each model's files in DIR/NAME")
    ap.add_argument("names", nargs="*", default=MODELS)
    args = ap.parse_args()
    einc = os.environ.get("EINC", "einc")
    if os.sep in einc:          # the steps run in another folder
        einc = os.path.abspath(einc)
    bad = 0
    for name in args.names:
        if args.keep:
            work = os.path.join(args.keep, name)
            os.makedirs(work, exist_ok=True)
            ctx = None
        else:
            ctx = tempfile.TemporaryDirectory(prefix="einc-sweep-")
            work = ctx.name
        try:
            line = one(name, work, einc)
        except Exception as e:      # a failed step, or a model this torchvision lacks
            line = f"FAIL {e}"
        finally:
            if ctx:
                ctx.cleanup()
        bad += not line.startswith("ok")
        print(f"{name}: {line}", flush=True)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
