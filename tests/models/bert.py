"""bert.py - PyTorch reference for examples/bert.ein: one BERT-base encoder
layer, torch.nn.TransformerEncoderLayer(D, NH, FF, activation="gelu",
batch_first=True) in eval mode (post-norm, exact GELU, dropout off),
given the .ein file's weights by their state-dict names."""

import math

import torch

import _modules

EIN = "examples/bert.ein"
CONFIGS = [("small", {"B": 2, "T": 16, "D": 64, "NH": 4, "FF": 256}),
           ("b1", {"B": 1})]


def _dims(cfg):
    return (cfg.get("B", 1), cfg.get("T", 128), cfg.get("D", 768),
            cfg.get("NH", 12), cfg.get("FF", 3072))


def shapes(cfg):
    b, t, d, nh, ff = _dims(cfg)
    s, sf = 1 / math.sqrt(d), 1 / math.sqrt(ff)
    w = {"self_attn_in_proj_weight": (s, (3 * d, d)),
         "self_attn_in_proj_bias": (0.1, (3 * d,)),
         "self_attn_out_proj_weight": (s, (d, d)),
         "self_attn_out_proj_bias": (0.1, (d,)),
         "linear1_weight": (s, (ff, d)), "linear1_bias": (0.1, (ff,)),
         "linear2_weight": (sf, (d, ff)), "linear2_bias": (0.1, (d,))}
    for n in ("norm1", "norm2"):
        w[n + "_weight"] = ("pos", (d,))
        w[n + "_bias"] = (0.1, (d,))
    return {"x": (b, t, d)}, w


def reference(cfg, x, **w):
    _, _, d, nh, ff = _dims(cfg)

    def build():
        return torch.nn.TransformerEncoderLayer(
            d, nh, ff, dropout=0.0, activation="gelu", layer_norm_eps=1e-5,
            batch_first=True)
    layer = _modules.loaded(("bert", d, nh, ff), build, w)
    return {"y": layer(x)}
