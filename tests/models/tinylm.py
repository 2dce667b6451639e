"""tinylm.py - PyTorch reference for examples/tinylm.ein: token embedding,
GPT-NeoX rotary embeddings (rotate_half over the head dimension), one
pre-norm block of causal multi-head attention and a GELU MLP, final layer
norm and logits; nn.functional operators, weight names as in the .ein
file (nn.Linear layouts)."""

import math

import torch
import torch.nn.functional as F

EIN = "examples/tinylm.ein"
CONFIGS = [("b1", {"B": 1}), ("b2t8", {"B": 2, "T": 8})]
V, D, NH = 64, 32, 4
FF = 4 * D


def shapes(cfg):
    b, t = cfg["B"], cfg.get("T", 16)
    s = 1 / math.sqrt(D)
    w = {"wte": (1.0, (V, D)),
         "wqkv": (s, (3 * D, D)), "bqkv": (0.1, (3 * D,)),
         "wo": (s, (D, D)), "bo": (0.1, (D,)),
         "w1": (s, (FF, D)), "b1": (0.1, (FF,)),
         "w2": (1 / math.sqrt(FF), (D, FF)), "b2": (0.1, (D,)),
         "wout": (s, (V, D))}
    for n in ("ln1", "ln2", "lnf"):
        w[n + "_g"] = (1.0, (D,))
        w[n + "_b"] = (0.1, (D,))
    return {"tok": (("i32", 0, V), (b, t))}, w


def _rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat([-x[..., h:], x[..., :h]], dim=-1)


def reference(cfg, tok, wte, ln1_g, ln1_b, ln2_g, ln2_b, lnf_g, lnf_b,
              wqkv, bqkv, wo, bo, w1, b1, w2, b2, wout):
    b, t = tok.shape
    hd = D // NH
    x = F.embedding(tok.long(), wte)
    h = F.layer_norm(x, (D,), ln1_g, ln1_b, eps=1e-5)
    q, k, v = F.linear(h, wqkv, bqkv).split(D, dim=-1)
    heads = [z.view(b, t, NH, hd).transpose(1, 2) for z in (q, k, v)]
    inv = torch.exp(-torch.arange(0, hd, 2, dtype=torch.float64) * math.log(10000) / hd)
    ang = torch.arange(t, dtype=torch.float64).unsqueeze(1) * inv
    ang = torch.cat([ang, ang], dim=-1)
    # the angles in float64, used in the model's dtype (f32 in the benchmarks)
    cos, sin = torch.cos(ang).to(x.dtype), torch.sin(ang).to(x.dtype)
    q, k = (z * cos + _rotate_half(z) * sin for z in heads[:2])
    s = q @ k.transpose(-1, -2) / math.sqrt(hd)
    mask = torch.ones(t, t, dtype=torch.bool).tril()
    a = torch.softmax(s.masked_fill(~mask, float("-inf")), -1) @ heads[2]
    x1 = x + F.linear(a.transpose(1, 2).reshape(b, t, D), wo, bo)
    h2 = F.layer_norm(x1, (D,), ln2_g, ln2_b, eps=1e-5)
    x2 = x1 + F.linear(F.gelu(F.linear(h2, w1, b1)), w2, b2)
    hf = F.layer_norm(x2, (D,), lnf_g, lnf_b, eps=1e-5)
    return {"logits": F.linear(hf, wout)}
