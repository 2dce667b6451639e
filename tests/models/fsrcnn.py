"""fsrcnn.py - PyTorch reference for examples/fsrcnn.ein: FSRCNN as the
EinNet evaluation built it (ReLU for PReLU, no bias): conv 5x5 1->56, conv
1x1 56->12, four conv 3x3 12->12 (a ReLU after the fourth only), conv 1x1
12->56, and a transposed conv 9x9 56->1 with stride 4, padding 3, output
padding 1: 32x32 -> 128x128.  The .ein file fixes every size but the
batch."""

import math

import torch.nn.functional as F

EIN = "examples/fsrcnn.ein"
CONFIGS = [("b1", {"B": 1}), ("b2", {"B": 2})]
LAYERS = {"w1": (56, 1, 5, 5), "w2": (12, 56, 1, 1), "w3": (12, 12, 3, 3),
          "w4": (12, 12, 3, 3), "w5": (12, 12, 3, 3), "w6": (12, 12, 3, 3),
          "w7": (56, 12, 1, 1)}


def shapes(cfg):
    wts = {k: (math.sqrt(6.0 / (s[1] * s[2] * s[3])), s)
           for k, s in LAYERS.items()}
    # the transposed conv: about 81/16 taps of 56 channels per output pixel
    wts["w8"] = (math.sqrt(6.0 / (56 * 5)), (56, 1, 9, 9))
    return {"x": (cfg["B"], 1, 32, 32)}, wts


def reference(cfg, x, w1, w2, w3, w4, w5, w6, w7, w8):
    y = F.relu(F.conv2d(x, w1, padding=2))
    y = F.relu(F.conv2d(y, w2))
    y = F.conv2d(y, w3, padding=1)
    y = F.conv2d(y, w4, padding=1)
    y = F.conv2d(y, w5, padding=1)
    y = F.relu(F.conv2d(y, w6, padding=1))
    y = F.relu(F.conv2d(y, w7))
    return {"y": F.conv_transpose2d(y, w8, stride=4, padding=3,
                                    output_padding=1)}
