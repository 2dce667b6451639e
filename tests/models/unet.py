"""unet.py - PyTorch reference for examples/unet.ein: one U-Net level from
torch.nn modules: the encoder's double convolution (Conv2d 3x3 without
bias, BatchNorm2d, ReLU, twice), MaxPool2d(2), the level below's double
convolution, ConvTranspose2d(2F, F, 2, stride=2), torch.cat with the
encoder's features along the channels, the decoder's double
convolution; eval mode, weights by their state-dict names."""

import math

import torch
from torch import nn

import _modules

EIN = "examples/unet.ein"
CONFIGS = [("small", {"B": 2, "C": 3, "H": 12, "W": 12, "F": 8}),
           ("b1", {"B": 1})]


def _dims(cfg):
    return (cfg.get("B", 1), cfg.get("C", 32), cfg.get("H", 64),
            cfg.get("W", 64), cfg.get("F", 64))


def _double(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU(),
                         nn.Conv2d(cout, cout, 3, padding=1, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU())


class Level(nn.Module):
    def __init__(self, c, f):
        super().__init__()
        self.enc = _double(c, f)
        self.pool = nn.MaxPool2d(2)
        self.mid = _double(f, 2 * f)
        self.up = nn.ConvTranspose2d(2 * f, f, 2, stride=2)
        self.dec = _double(2 * f, f)

    def forward(self, x):
        e = self.enc(x)
        u = self.up(self.mid(self.pool(e)))
        return self.dec(torch.cat([e, u], dim=1))


def shapes(cfg):
    b, c, h, wd, f = _dims(cfg)
    g = 2 * f
    w = {}

    def conv(name, co, ci):
        w[name + "_weight"] = (math.sqrt(6.0 / (ci * 9)), (co, ci, 3, 3))

    def bn(name, n):
        w[name + "_weight"] = ("pos", (n,))
        w[name + "_bias"] = (0.1, (n,))
        w[name + "_running_mean"] = (0.1, (n,))
        w[name + "_running_var"] = ("pos", (n,))
    for blk, ci, co in (("enc", c, f), ("mid", f, g), ("dec", g, f)):
        conv(blk + "_0", co, ci)
        bn(blk + "_1", co)
        conv(blk + "_3", co, co)
        bn(blk + "_4", co)
    w["up_weight"] = (math.sqrt(3.0 / (g * 4)), (g, f, 2, 2))
    w["up_bias"] = (0.1, (f,))
    return {"x": (b, c, h, wd)}, w


def reference(cfg, x, **w):
    _, c, _, _, f = _dims(cfg)
    lvl = _modules.loaded(("unet", c, f), lambda: Level(c, f), w)
    return {"y": lvl(x)}
