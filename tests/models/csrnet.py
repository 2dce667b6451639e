"""csrnet.py - PyTorch reference for examples/csrnet.ein: CSRNet's dilated
back end, six 3x3 convolutions with dilation 2 and padding 2, no bias, ReLU
after each: 512 -> 512 -> 512 -> 512 -> 256 -> 128 -> 64 on 14x14.  The
.ein file fixes every size but the batch."""

import math

import torch.nn.functional as F

EIN = "examples/csrnet.ein"
CONFIGS = [("b1", {"B": 1}), ("b2", {"B": 2})]
CH = [512, 512, 512, 512, 256, 128, 64]


def shapes(cfg):
    wts = {"w%d" % (i + 1): (math.sqrt(6.0 / (CH[i] * 9)),
                             (CH[i + 1], CH[i], 3, 3)) for i in range(6)}
    return {"x": (cfg["B"], 512, 14, 14)}, wts


def reference(cfg, x, **w):
    y = x
    for i in range(6):
        y = F.relu(F.conv2d(y, w["w%d" % (i + 1)], padding=2, dilation=2))
    return {"y6": y}
