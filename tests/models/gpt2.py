"""gpt2.py - PyTorch reference for examples/gpt2.ein: one GPT-2 small block
(pre-norm) from torch.nn modules: LayerNorm, MultiheadAttention with a
causal attn_mask, LayerNorm, Linear, GELU(approximate="tanh"), Linear,
with both residuals; weights by their state-dict names."""

import math

import torch

import _modules

EIN = "examples/gpt2.ein"
CONFIGS = [("small", {"B": 2, "T": 24, "D": 64, "NH": 4}),
           ("b1", {"B": 1})]


def _dims(cfg):
    d = cfg.get("D", 768)
    return cfg.get("B", 1), cfg.get("T", 256), d, cfg.get("NH", 12), 4 * d


class Block(torch.nn.Module):
    def __init__(self, d, nh, ff):
        super().__init__()
        self.ln_1 = torch.nn.LayerNorm(d, eps=1e-5)
        self.attn = torch.nn.MultiheadAttention(d, nh, batch_first=True)
        self.ln_2 = torch.nn.LayerNorm(d, eps=1e-5)
        self.mlp_fc = torch.nn.Linear(d, ff)
        self.act = torch.nn.GELU(approximate="tanh")
        self.mlp_proj = torch.nn.Linear(ff, d)

    def forward(self, x):
        t = x.shape[1]
        mask = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
        h = self.ln_1(x)
        a, _ = self.attn(h, h, h, attn_mask=mask, need_weights=False)
        x1 = x + a
        return x1 + self.mlp_proj(self.act(self.mlp_fc(self.ln_2(x1))))


def shapes(cfg):
    b, t, d, nh, ff = _dims(cfg)
    s, sf = 1 / math.sqrt(d), 1 / math.sqrt(ff)
    w = {"attn_in_proj_weight": (s, (3 * d, d)),
         "attn_in_proj_bias": (0.1, (3 * d,)),
         "attn_out_proj_weight": (s, (d, d)),
         "attn_out_proj_bias": (0.1, (d,)),
         "mlp_fc_weight": (s, (ff, d)), "mlp_fc_bias": (0.1, (ff,)),
         "mlp_proj_weight": (sf, (d, ff)), "mlp_proj_bias": (0.1, (d,))}
    for n in ("ln_1", "ln_2"):
        w[n + "_weight"] = ("pos", (d,))
        w[n + "_bias"] = (0.1, (d,))
    return {"x": (b, t, d)}, w


def reference(cfg, x, **w):
    _, _, d, nh, ff = _dims(cfg)
    blk = _modules.loaded(("gpt2", d, nh), lambda: Block(d, nh, ff), w)
    return {"y": blk(x)}
