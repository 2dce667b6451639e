"""mobilenetv2.py - PyTorch reference for examples/mobilenetv2.ein:
torchvision's InvertedResidual blocks (features.3 and features.4 of
mobilenet_v2: stride 1 with its residual, then stride 2), expand ratio 6,
in eval mode, given the .ein file's weights by their state-dict names
(prefixed b1_, b2_)."""

import math

import torch
from torchvision.models.mobilenetv2 import InvertedResidual

import _modules

EIN = "examples/mobilenetv2.ein"
CONFIGS = [("small", {"B": 2, "C": 8, "H": 10, "W": 10, "F": 16}),
           ("b1", {"B": 1})]


def _dims(cfg):
    return (cfg.get("B", 1), cfg.get("C", 24), cfg.get("H", 56),
            cfg.get("W", 56), cfg.get("F", 32))


class Pair(torch.nn.Module):
    def __init__(self, c, f):
        super().__init__()
        self.b1 = InvertedResidual(c, c, 1, 6)
        self.b2 = InvertedResidual(c, f, 2, 6)

    def forward(self, x):
        return self.b2(self.b1(x))


def _bn(w, p, n):
    w[p + "_weight"] = ("pos", (n,))
    w[p + "_bias"] = (0.1, (n,))
    w[p + "_running_mean"] = (0.1, (n,))
    w[p + "_running_var"] = ("pos", (n,))


def shapes(cfg):
    b, c, h, wd, f = _dims(cfg)
    e = 6 * c
    w = {}
    for blk, out in (("b1", c), ("b2", f)):
        w[blk + "_conv_0_0_weight"] = (math.sqrt(3.0 / c), (e, c, 1, 1))
        _bn(w, blk + "_conv_0_1", e)
        w[blk + "_conv_1_0_weight"] = (math.sqrt(3.0 / 9), (e, 1, 3, 3))
        _bn(w, blk + "_conv_1_1", e)
        w[blk + "_conv_2_weight"] = (math.sqrt(3.0 / e), (out, e, 1, 1))
        _bn(w, blk + "_conv_3", out)
    return {"x": (b, c, h, wd)}, w


def reference(cfg, x, **w):
    _, c, _, _, f = _dims(cfg)
    pair = _modules.loaded(("mobilenetv2", c, f), lambda: Pair(c, f), w)
    return {"y": pair(x)}
