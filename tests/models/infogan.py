"""infogan.py - PyTorch reference for examples/infogan.ein: InfoGAN's
generator, five transposed convolutions without bias (228 -> 448, kernel 2;
then kernel 4, stride 2, padding 1 down to 3 channels), ReLU after each
but the last, tanh at the end.  Weights [in, out, kh, kw] named w1..w5 as
in the .ein file.  The .ein file fixes every size but the batch."""

import math

import torch
import torch.nn.functional as F

EIN = "examples/infogan.ein"
CONFIGS = [("b1", {"B": 1}), ("b2", {"B": 2})]
CH = [228, 448, 256, 128, 64, 3]


def shapes(cfg):
    ins = {"z": (cfg["B"], 228, 1, 1)}
    wts = {}
    for i in range(5):
        k = 2 if i == 0 else 4
        taps = 1 if i == 0 else 4       # taps that reach one output pixel
        # uniform(-a, a) with variance 2 / fan-in keeps the activations O(1)
        wts["w%d" % (i + 1)] = (math.sqrt(6.0 / (CH[i] * taps)),
                                (CH[i], CH[i + 1], k, k))
    return ins, wts


def reference(cfg, z, w1, w2, w3, w4, w5):
    y = F.relu(F.conv_transpose2d(z, w1))
    for w in (w2, w3, w4):
        y = F.relu(F.conv_transpose2d(y, w, stride=2, padding=1))
    return {"img": torch.tanh(F.conv_transpose2d(y, w5, stride=2, padding=1))}
