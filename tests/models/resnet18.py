"""resnet18.py - PyTorch reference for examples/resnet18.ein: torchvision's
ResNet-18 at inference, with each batch norm given as the per-channel
scale and shift it applies (weights named as in the .ein file: torchvision's
state-dict names with '.' -> '_', '.weight' dropped, bnK -> bnK_scale and
bnK_shift, downsample -> down_conv, down_scale, down_shift).  Written with
F.conv2d, F.max_pool2d, F.adaptive_avg_pool2d and F.linear; the batch norm
is checked against F.batch_norm on the same scale and shift.  The .ein file
fixes the 224x224 input; only the batch changes."""

import math

import torch
import torch.nn.functional as F

EIN = "examples/resnet18.ein"
CONFIGS = [("b1", {"B": 1}), ("b2", {"B": 2})]
STAGES = [(1, 64, 64), (2, 64, 128), (3, 128, 256), (4, 256, 512)]


def _conv(shape):
    fan = shape[1] * shape[2] * shape[3]
    return (math.sqrt(6.0 / fan), shape)


def shapes(cfg):
    w = {"conv1": _conv((64, 3, 7, 7)),
         "bn1_scale": ("pos", (64,)), "bn1_shift": (64,)}
    for layer, cin, cout in STAGES:
        for blk in (0, 1):
            p = "layer%d_%d_" % (layer, blk)
            c1 = cin if blk == 0 else cout
            w[p + "conv1"] = _conv((cout, c1, 3, 3))
            w[p + "conv2"] = _conv((cout, cout, 3, 3))
            for bn in ("bn1", "bn2"):
                w[p + bn + "_scale"] = ("pos", (cout,))
                w[p + bn + "_shift"] = (cout,)
            if blk == 0 and layer > 1:
                w[p + "down_conv"] = _conv((cout, cin, 1, 1))
                w[p + "down_scale"] = ("pos", (cout,))
                w[p + "down_shift"] = (cout,)
    w["fc_weight"] = (math.sqrt(3.0 / 512), (1000, 512))
    w["fc_bias"] = (1000,)
    return {"x": (cfg["B"], 3, 224, 224)}, w


def _bn(x, scale, shift):
    # inference batch norm with running mean 0, running var 1 - eps, so
    # that gamma / sqrt(var + eps) is exactly the scale
    ones = torch.ones_like(scale)
    return F.batch_norm(x, torch.zeros_like(scale), ones - 1e-5, scale,
                        shift, training=False, eps=1e-5)


def reference(cfg, x, **w):
    y = F.relu(_bn(F.conv2d(x, w["conv1"], stride=2, padding=3),
                   w["bn1_scale"], w["bn1_shift"]))
    y = F.max_pool2d(y, 3, stride=2, padding=1)
    for layer, cin, cout in STAGES:
        for blk in (0, 1):
            p = "layer%d_%d_" % (layer, blk)
            stride = 2 if blk == 0 and layer > 1 else 1
            a = F.relu(_bn(F.conv2d(y, w[p + "conv1"], stride=stride,
                                    padding=1),
                           w[p + "bn1_scale"], w[p + "bn1_shift"]))
            b = _bn(F.conv2d(a, w[p + "conv2"], padding=1),
                    w[p + "bn2_scale"], w[p + "bn2_shift"])
            if stride == 2:
                sc = _bn(F.conv2d(y, w[p + "down_conv"], stride=2),
                         w[p + "down_scale"], w[p + "down_shift"])
            else:
                sc = y
            y = F.relu(b + sc)
    g = F.adaptive_avg_pool2d(y, 1).flatten(1)
    return {"logits": F.linear(g, w["fc_weight"], w["fc_bias"])}
