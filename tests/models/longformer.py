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


BLOCK = 256     # queries per block in band_attention


def band_attention(q, k, v, K, dil, block=BLOCK):
    """softmax(band(q . k) / sqrt(D)) . band(v) for q, k, v [G, L, D], the
    band of query i being the keys i + dil*(j - K), j < 2K+1, zero outside,
    without a [G, L, 2K+1, D] copy.  Queries i = r (mod dil) see only keys
    = r (mod dil): splitting the sequence by residue (as EinNet does) makes
    the band undilated, rows t .. t+2K of the residue's padded keys for its
    query t.  A block of C queries then takes one dense product with its
    C+2K keys, [C, C+2K], from which the band is the skewed diagonal
    (entry [c, c+j]): flattened, padded by C and reshaped to [C, C+2K+1],
    its first 2K+1 columns.  The weights go back the other way (padded by C,
    flattened, cut, reshaped to [C, C+2K]) into a second dense product."""
    G, L, D = q.shape
    T = -(-L // dil)                    # queries per residue
    Lp = T * dil
    qp = F.pad(q, (0, 0, 0, Lp - L))
    kp = F.pad(k, (0, 0, dil * K, dil * K + Lp - L))
    vp = F.pad(v, (0, 0, dil * K, dil * K + Lp - L))

    def split(t, n):                    # [G, n*dil, D] -> [G*dil, n, D]
        return t.reshape(G, n, dil, D).transpose(1, 2).reshape(G * dil, n, D)
    qr, kr, vr = split(qp, T), split(kp, T + 2 * K), split(vp, T + 2 * K)
    qr = qr / math.sqrt(D)
    outs = []
    for t0 in range(0, T, block):
        C = min(block, T - t0)
        kw = kr[:, t0:t0 + C + 2 * K]
        # [G*dil, C, C+2K]
        dense = torch.bmm(qr[:, t0:t0 + C], kw.transpose(1, 2))
        s = F.pad(dense.reshape(-1, C * (C + 2 * K)), (0, C))
        s = s.reshape(-1, C, C + 2 * K + 1)[:, :, :2 * K + 1]
        a = torch.softmax(s, dim=-1)
        a = F.pad(a, (0, C)).reshape(-1, C * (C + 2 * K + 1))
        a = a[:, :C * (C + 2 * K)].reshape(-1, C, C + 2 * K)
        outs.append(torch.bmm(a, vr[:, t0:t0 + C + 2 * K]))
    o = torch.cat(outs, dim=1)                                   # [Gd, T, D]
    o = o.reshape(G, dil, T, D).transpose(1, 2).reshape(G, Lp, D)
    return o[:, :L]


def bench_reference(cfg, x, wq, wk, wv, w1, b1, w2, b2):
    """`reference`, computed blockwise (band_attention) to fit in memory."""
    B, L, E, NH, D = cfg["B"], cfg["L"], cfg["E"], cfg["NH"], cfg["D"]

    def heads(t):
        return t.reshape(B, L, NH, D).transpose(1, 2).reshape(B * NH, L, D)
    q, k, v = (heads(F.linear(x, m)) for m in (wq, wk, wv))
    o = band_attention(q, k, v, cfg["W"], cfg["DIL"])
    att = o.reshape(B, NH, L, D).transpose(1, 2).reshape(B, L, E)
    r1 = F.relu(F.linear(att, w1, b1))
    r2 = F.relu(F.linear(r1, w2, b2))
    return {"y": x + r2}
