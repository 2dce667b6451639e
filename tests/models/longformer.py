"""longformer.py - PyTorch reference for examples/longformer.ein: one
Longformer layer with dilated sliding-window attention.  Q/K/V projections
(F.linear, no bias), heads split to [B*NH, L, D], G2BMM scores over the
band i + DIL*(j - W), softmax(scores / sqrt(D)) over the band (keys past
either end are zero vectors and take part with score 0, as in the EinNet
evaluation's model), GBMM with the values, heads merged, two linear layers
with bias and ReLU, and the residual.  The band is built with F.pad and
Tensor.unfold.  Small sizes through -D overrides of the .ein constants."""

import math

import torch
import torch.nn.functional as F

EIN = "examples/longformer.ein"
_SMALL = {"L": 48, "E": 32, "NH": 4, "D": 8, "W": 3, "DIL": 4}
CONFIGS = [("b1", dict(_SMALL, B=1)),
           ("b2", dict(_SMALL, B=2, L=37, W=5, DIL=2))]


def shapes(cfg):
    B, L, E = cfg["B"], cfg["L"], cfg["E"]
    a = math.sqrt(3.0 / E)
    w = {k: (a, (E, E)) for k in ("wq", "wk", "wv", "w1", "w2")}
    w["b1"] = (E,)
    w["b2"] = (E,)
    return {"x": (B, L, E)}, w


def band(t, K, dil):
    """[G, L, D] -> [G, L, 2K+1, D]: rows i + dil*(j - K), zero outside."""
    tp = F.pad(t, (0, 0, dil * K, dil * K))
    win = tp.unfold(1, 2 * dil * K + 1, 1)        # [G, L, D, 2*dil*K+1]
    return win[..., ::dil].permute(0, 1, 3, 2)


def reference(cfg, x, wq, wk, wv, w1, b1, w2, b2):
    B, L, E, NH, D = cfg["B"], cfg["L"], cfg["E"], cfg["NH"], cfg["D"]
    W, DIL = cfg["W"], cfg["DIL"]

    def heads(t):
        return t.reshape(B, L, NH, D).transpose(1, 2).reshape(B * NH, L, D)
    q, k, v = (heads(F.linear(x, m)) for m in (wq, wk, wv))
    s = torch.einsum("gid,gijd->gij", q, band(k, W, DIL))
    a = torch.softmax(s / math.sqrt(D), dim=-1)
    o = torch.einsum("gij,gijd->gid", a, band(v, W, DIL))
    att = o.reshape(B, NH, L, D).transpose(1, 2).reshape(B, L, E)
    r1 = F.relu(F.linear(att, w1, b1))
    r2 = F.relu(F.linear(r1, w2, b2))
    return {"y": x + r2}
