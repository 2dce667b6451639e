"""cases.py - the numerical test cases: for each NAME.ein in this folder,
the shapes of its inputs and weights and a PyTorch reference.

Each reference computes the same function as the .ein program with
PyTorch's own operators (F.conv2d, F.conv_transpose2d, F.max_pool2d,
torch.softmax, F.layer_norm, torch.einsum, ...), never by transcribing the
.ein loops.  It receives the tensors by their .ein names, as float64 copies
of the f32 values the program gets, and returns a dict output name ->
tensor.  Shapes here are written independently of the .ein declarations,
so a wrong declared shape shows up as a shape mismatch.

Input kinds: a shape tuple means uniform(-1, 1); ("pos", shape) means
uniform(0.5, 2) (for log, sqrt, rsqrt, pow, division); ("f16", shape)
and ("bf16", shape) are uniform(-1, 1) rounded to f16 and bf16 (the
reference gets their values, exactly, in float64).

f16 and bf16 tensors: the reference rounds what the program stores in
those types, as the program does (to nearest even, torch's .to), and
computes the rest in float64.  An f16 or bf16 output is returned as a
torch.float16 or torch.bfloat16 tensor: that is the element type run.py
expects, and it compares such outputs within about one unit in the last
place of the type (run.py, TOL_16); f32 outputs keep the usual tolerance,
so an f32 output computed from a rounded intermediate shows whether the
intermediate was rounded.
"""

import math

import torch
import torch.nn.functional as F


class Case:
    def __init__(self, name, ref, inputs, weights=None, defines=None,
                 ein=None, tol=1e-5, includes=()):
        self.name = name
        self.ref = ref
        self.inputs = inputs
        self.weights = weights or {}
        self.defines = defines or {}
        self.ein = ein or name + ".ein"
        self.tol = tol
        self.includes = includes      # -I folders, relative to tests/num


CASES = []


def case(inputs, weights=None, defines=None, name=None, tol=1e-5,
         includes=()):
    """Register the decorated reference under its function name."""
    def reg(fn):
        CASES.append(Case(name or fn.__name__, fn, inputs, weights, defines,
                          tol=tol, includes=includes))
        return fn
    return reg


def pos(*shape):
    return ("pos", shape)


# ---- the language of issue 13: gathers, integers, padding, concat --------

def _table(emb, idx, outside):
    """emb[idx] row by row, `outside` where idx leaves the table."""
    v = emb.shape[0]
    inside = (idx >= 0) & (idx < v)
    rows = emb[idx.clamp(0, v - 1)]
    return torch.where(inside.unsqueeze(-1), rows, torch.full_like(rows, outside))


@case({"tok": (("i32", -2, 15), (2, 7))}, {"emb": (13, 8)})
def embed_pos(tok, emb):
    tok = tok.long()
    T, D = 7, 8
    pos = torch.arange(T, dtype=torch.float64).unsqueeze(1)
    freq = torch.exp(-torch.arange(0, D, 2, dtype=torch.float64) * math.log(10000) / D)
    pe = torch.zeros(T, D, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(pos * freq)
    pe[:, 1::2] = torch.cos(pos * freq)
    return {"h": _table(emb, tok, 0.0) + pe, "g": _table(emb, tok, -1.0)}


@case({"x": (2, 3, 9, 8)})
def maxpool_pad(x):
    return {"p": F.max_pool2d(x, 3, 2, padding=1),
            "q": -F.max_pool2d(-x, 3, 2, padding=1)}


@case({"enc": (2, 3, 6, 6), "dec": (2, 5, 3, 3)}, {"k": (4, 8, 3, 3)})
def unet_concat(enc, dec, k):
    up = F.interpolate(dec, scale_factor=2, mode="nearest")
    cat = torch.cat([enc, up], dim=1)
    a, b = torch.split(cat, [2, 6], dim=-3)
    return {"y": F.conv2d(cat, k, padding=1), "sa": a * 2 + b[:, 1:3],
            "st": torch.stack([enc, enc, enc], dim=4)}


@case({"a": (("i64", -2**33, 2**33), (4, 6)), "b": (("i64", -2**40, 2**40), (2, 6)),
       "w": (("i32", -2**31, 2**31), (5,)), "m": (("bool", 0, 2), (4, 6)),
       "ix": (("i64", -8, 8), (3,))})
def int_move(a, b, w, m, ix):
    # the inputs come as float64 (exact: every value is below 2^53)
    a, b, w, m, ix = a.long(), b.long(), w.long(), m.bool(), ix.long()
    i32 = torch.iinfo(torch.int32)
    return {"r": a.reshape(4, 3, 2), "t": a.t().contiguous(), "c": torch.cat([a, b], 0),
            "s": torch.where(m, a, torch.tensor(-16777217, dtype=torch.int64)),
            "g": a[ix % 4], "n32": a.clamp(i32.min, i32.max).to(torch.int32),
            "w64": w.to(torch.int64)}


@case({"q": (2, 6, 4), "k": (2, 6, 4), "len": (("i32", 1, 7), (2,))})
def int_mask(q, k, len):
    L = 6
    j = torch.arange(L).view(1, 1, L)
    i = torch.arange(L).view(1, L, 1)
    m = (j < len.long().view(-1, 1, 1)) & (j <= i)
    s = torch.einsum("bid,bjd->bij", q, k).masked_fill(~m, float("-inf"))
    return {"m": m, "p": torch.softmax(s, dim=-1),
            "cnt": m.sum(-1).to(torch.int32),
            "twice": (len * 2 - 1).to(torch.int32),
            "sat": (q * 300).clamp(0, 255).trunc().to(torch.uint8),
            "rnd": torch.round(q * 10).to(torch.int32),
            "ks": (k * (j.view(1, L, 1) < len.long().view(-1, 1, 1))).sum(1)}


def _rms(x, g, eps):
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * g


@case({"x": (2, 3, 9, 8), "a": (2, 5), "s": (2, 3, 5),
       "tok": (("i32", 0, 7), (2, 3)),
       "q": (2, 2, 4, 8), "k": (2, 2, 4, 8), "v": (2, 2, 4, 8)},
      {"lw": (6, 5), "lb": (6,), "cw": (4, 3, 3, 3), "cb": (4,), "emb": (7, 8),
       "mean": (3,), "var": pos(3), "g": (3,), "b": (3,), "lg": (5,),
       "lbeta": (5,)})
def nn_lib(x, a, s, tok, q, k, v, lw, lb, cw, cb, emb, mean, var, g, b, lg,
           lbeta):
    scale = 1 / math.sqrt(8)
    w = torch.softmax(q @ k.transpose(-1, -2) * scale, -1)
    causal = torch.ones(4, 4, dtype=torch.bool).tril()
    cs = (q @ k.transpose(-1, -2) * scale).masked_fill(~causal, float("-inf"))
    return {"lin": F.linear(a, lw, lb), "lin3": F.linear(s, lw, lb),
            "conv": F.conv2d(x, cw, cb, stride=2, padding=1),
            "convd": F.conv2d(x, cw, cb, padding=2, dilation=2),
            "e": F.embedding(tok.long(), emb),
            "bn": F.batch_norm(x, mean, var, g, b, training=False, eps=1e-5),
            "ln": F.layer_norm(a, (5,), lg, lbeta, eps=1e-5),
            "ln3": F.layer_norm(s, (5,), lg, lbeta, eps=1e-3),
            "rms": _rms(a, lg, 1e-6), "rms3": _rms(s, lg, 1e-4),
            "sm": torch.softmax(a, -1), "ge": F.gelu(a),
            "get": F.gelu(a, approximate="tanh"),
            "att": w @ v, "catt": torch.softmax(cs, -1) @ v,
            "mp": F.max_pool2d(x, 3, 2, 1),
            "ap": F.avg_pool2d(x, 3, 2, 1, count_include_pad=True),
            "gp": x.mean((2, 3))}


@case({"x": (2.0, (3, 5, 4)), "n": (("i32", -3, 4), (3, 5))})
def prod(x, n):
    keep = torch.tensor([0, 1, 3, 4])
    return {"p": x.reshape(3, -1).prod(-1), "q": x[:, keep].prod(1),
            "r": n.prod(-1).to(torch.int64)}


# ---- products ----------------------------------------------------------

@case({"a": (13, 37)}, {"b": (37, 11)})
def matmul(a, b):
    return {"c": a @ b}


@case({"a": (3, 9, 20), "b": (3, 20, 7)})
def bmm(a, b):
    return {"c": torch.bmm(a, b)}


@case({"t0": (5, 7)})
def chain(t0):
    # t_n = a^n t_0 + b (1 - a^n) / (1 - a), a = 0.99, b = 0.02, n = 300
    a = 0.99 ** 300
    return {"t300": a * t0 + 0.02 * (1 - a) / (1 - 0.99)}


@case({"x": (2, 5, 6, 4)}, {"w": (4, 7, 6)})
def einsum3(x, w):
    return {"y": torch.einsum("bijk,klj->lbi", x, w)}


@case({"x": (4, 33)}, {"w": (10, 33), "b": (10,)})
def linear(x, w, b):
    return {"y": F.linear(x, w, b)}


@case({"q": (9, 8), "k": (11, 8), "v": (11, 8)})
def attention(q, k, v):
    p = torch.softmax(q @ k.t() / math.sqrt(8), dim=-1)
    return {"o": p @ v}


def band(t, K, dil):
    """[B, L, D] -> [B, L, 2K+1, D]: rows i + dil*(j - K), zero outside."""
    tp = F.pad(t, (0, 0, dil * K, dil * K))
    w = tp.unfold(1, 2 * dil * K + 1, 1)        # [B, L, D, 2*dil*K+1]
    return w[..., ::dil].permute(0, 1, 3, 2)


@case({"q": (2, 40, 5), "kt": (2, 40, 5), "p": (2, 40, 7), "v": (2, 40, 5)})
def g2bmm(q, kt, p, v):
    s = torch.einsum("bid,bijd->bij", q, band(kt, 3, 4))
    o = torch.einsum("bij,bijd->bid", p, band(v, 3, 4))
    return {"s": s, "o": o}


# Long enough for several blocks of rows per residue class (the C target
# multiplies 64 rows of one residue at a time), L not a multiple of 4.
CASES.append(Case("g2bmm_long", lambda q, kt, p, v: {
    "s": torch.einsum("bid,bijd->bij", q, band(kt, 9, 4)),
    "o": torch.einsum("bij,bijd->bid", p, band(v, 9, 4))},
    {"q": (1, 599, 5), "kt": (1, 599, 5), "p": (1, 599, 19), "v": (1, 599, 5)},
    defines={"B": 1, "L": 599, "K": 9}, ein="g2bmm.ein"))


# Band operands as views: heads of a stacked q|k|v (fused into the band as
# strided reads), heads' rows stacked behind a select, slices at offsets.
@case({"x": (2, 70, 54), "p": (6, 70, 9), "q2": (6, 70, 6), "kf": (422, 6),
       "pb": (2, 70, 11), "vb": (2, 74, 11)})
def band_views(x, p, q2, kf, pb, vb):
    b, n, h, d, k = 2, 70, 3, 6, 4
    q, kt, v = x.reshape(b, n, 3, h, d).permute(2, 0, 3, 1, 4).reshape(3, b * h, n, d)
    return {
        "s": torch.einsum("bid,bijd->bij", q, band(kt, k, 3)),
        "o": torch.einsum("bij,bijd->bid", p, band(v, k, 3)),
        "s2": torch.einsum("bid,bijd->bij", q2, band(kf[2:].reshape(b * h, n, d), k, 2)),
        "o2": torch.einsum("bij,bijd->bid", pb[:, :, 1:2 * k + 2],
                           band(vb[:, 2:n + 2, 3:d + 3], k, 1))}


# Band outputs stored through views into the copies that reorder them
# (derive/search/outview.c): scores position-major, heads merged from a
# flat batch and from a batch loop of their own; the last a transpose that
# stays a kernel.
@case({"q": (6, 150, 6), "kt": (6, 150, 6), "p": (6, 150, 9), "v": (6, 150, 6),
       "p2": (2, 3, 150, 9), "v2": (2, 3, 150, 6)})
def band_out(q, kt, p, v, p2, v2):
    b, h, n, d = 2, 3, 150, 6
    s = torch.einsum("bid,bijd->bij", q, band(kt, 4, 3))
    o = torch.einsum("bij,bijd->bid", p, band(v, 4, 2))
    o2 = torch.einsum("bij,bijd->bid", p2.reshape(b * h, n, 9), band(v2.reshape(b * h, n, d), 4, 1))
    o3 = torch.einsum("bij,bijd->bid", p, band(kt, 4, 1))
    merge = lambda t: t.reshape(b, h, n, d).permute(0, 2, 1, 3).reshape(b, n, h * d)
    return {"st": s.permute(1, 0, 2), "om": merge(o), "om2": merge(o2),
            "ot": o3.transpose(1, 2)}


# Products stored through views (derive/search/outview.c): heads merged
# after a batched product, a product stored transposed; the heads of two
# batch loops stay a copy.
@case({"p1": (3, 40, 40), "v1": (3, 40, 8), "x": (40, 40), "p": (6, 40, 40),
       "v": (6, 40, 8)}, {"w": (40, 8)})
def gemm_out(p1, v1, x, p, v, w):
    merge = lambda t, b: t.reshape(b, 3, 40, 8).permute(0, 2, 1, 3).reshape(b, 40, 24)
    return {"m1": merge(p1 @ v1, 1)[0], "mt": (x @ w).t(), "om": merge(p @ v, 2)}


# A product's output both copied (a view could store it) and read by
# another product's epilogue: it keeps its buffer.
@case({"a": (4, 32, 16), "b": (4, 16, 24), "b2": (4, 16, 24)})
def gemm_out_read(a, b, b2):
    o = a @ b
    return {"t": o.permute(1, 0, 2), "v": a @ b2 + o}


# ---- convolutions --------------------------------------------------------

@case({"x": (2, 5, 9, 7)}, {"w1": (6, 5, 3, 3), "b1": (6,)})
def conv_relu(x, w1, b1):
    return {"z": F.relu(F.conv2d(x, w1, b1, padding=1))}


@case({"x%d" % i: (1, 32, 28, 28) for i in range(1, 6)},
      dict({"w%d" % i: (0.05, (32, 32, 3, 3)) for i in range(1, 6)},
           q=(32, 2), b=(32,)))
def conv_post(x1, x2, x3, x4, x5, w1, w2, w3, w4, w5, q, b):
    def y(x, w):
        return F.conv2d(x, w, padding=1)
    qf = lambda j: q[:, j].view(1, -1, 1, 1)
    return {"z1": F.relu(y(x1, w1)) * 2 + 1,
            "z2": y(x2, w2).clamp(-0.25, 0.5),
            "z3": F.relu(y(x3, w3) * 0.5) * 3,
            "z4": y(x4, w4) * qf(1),
            "z5": 1.5 - y(x5, w5) * qf(0) + b.view(1, -1, 1, 1)}


@case({"x": (2, 3, 11, 8)}, {"k": (4, 3, 3, 3)})
def conv_stride(x, k):
    return {"y": F.conv2d(x, k, stride=2, padding=1)}


@case({"x": (1, 4, 10, 9)}, {"k": (3, 4, 3, 3)})
def conv_dilation(x, k):
    return {"z": F.relu(F.conv2d(x, k, padding=2, dilation=2))}


@case({"x": (2, 6, 6, 7)}, {"k": (9, 2, 3, 3)})
def conv_groups(x, k):
    return {"y": F.conv2d(x, k, padding=1, groups=3)}


@case({"x": (2, 5, 8, 6)}, {"k": (5, 1, 5, 5)})
def conv_depthwise(x, k):
    return {"y": F.conv2d(x, k, padding=2, groups=5)}


@case({"x": (1, 4, 12, 13)},
      {"kl1": (3, 4, 11, 1), "kl2": (3, 3, 1, 11),
       "kr1": (3, 4, 1, 11), "kr2": (3, 3, 11, 1)})
def conv_1xk(x, kl1, kl2, kr1, kr2):
    left = F.conv2d(F.conv2d(x, kl1, padding=(5, 0)), kl2, padding=(0, 5))
    right = F.conv2d(F.conv2d(x, kr1, padding=(0, 5)), kr2, padding=(5, 0))
    return {"y": left + right}


@case({"x": (2, 3, 9, 10)}, {"k": (4, 3, 5, 5)})
def conv5x5(x, k):
    return {"same": F.conv2d(x, k, padding=2), "valid": F.conv2d(x, k)}


@case({"x": (2, 6, 3, 4)}, {"wt": (6, 5, 4, 4)})
def convt_s2(x, wt):
    return {"z": torch.tanh(F.conv_transpose2d(x, wt, stride=2, padding=1))}


@case({"x": (2, 7, 3, 2)}, {"wt": (7, 4, 2, 2)})
def convt_k2(x, wt):
    return {"z": F.relu(F.conv_transpose2d(x, wt))}


@case({"x": (1, 6, 5, 4)}, {"wt": (6, 2, 9, 9)})
def convt_s4(x, wt):
    return {"y": F.conv_transpose2d(x, wt, stride=4, padding=3,
                                    output_padding=1)}


# ---- pooling and reductions ----------------------------------------------

@case({"x": (2, 3, 10, 7)})
def maxpool2(x):
    return {"p": F.max_pool2d(x, 2)}


@case({"x": (2, 3, 9, 8)})
def maxpool3(x):
    return {"p": F.max_pool2d(x, 3, stride=2, padding=1)}


@case({"x": (2, 3, 6, 5)})
def avgpool(x):
    return {"a": F.avg_pool2d(x, 3, stride=1, padding=1,
                              count_include_pad=True),
            "g": F.adaptive_avg_pool2d(x, 1).flatten(1)}


@case({"x": (7, 12)})
def minmax(x):
    return {"mx": torch.amax(x, 1), "mn": torch.amin(x, 0),
            "top": x.max(), "low": x.min()}


# extents 1 and 2 in turn: gcc unrolls loops of extent 2 completely, and
# 2^17 copies take it long to compile
@case({"x": (1, 2) * 8 + (1, 3), "u": (1, 2) * 9})
def high_rank(x, u):
    return {"y": x.sum(-1), "z": u.sum()}


@case({"x": (7, 7)})
def guards(x):
    n = x.shape[0]
    ones = torch.ones(n, n, dtype=torch.bool)
    eye = torch.eye(n, dtype=torch.bool)
    bandm = torch.triu(torch.tril(ones, 2), -2)
    strict = torch.tril(ones, -1)
    below = x.masked_fill(~strict, -math.inf).amax(1)
    below = torch.where(torch.isinf(below), torch.zeros_like(below), below)
    diag = torch.diagonal(x).clone()
    diag[:2] = 0
    return {"offd": x.masked_fill(eye, 0).sum(1),
            "causal": torch.tril(x).sum(1),
            "band": (x * bandm).sum(1),
            "odd": x[:, 1::2].amax(1),
            "below": below,
            "tail": x[:, 3:].sum(1),
            "diag": diag}


# ---- normalisations and activations --------------------------------------

@case({"x": (3, 5, 17)})
def softmax(x):
    return {"y": torch.softmax(x, -1), "ls": torch.log_softmax(x, -1)}


@case({"x": (2, 6, 24)}, {"g": (24,), "beta": (24,)})
def layernorm(x, g, beta):
    return {"y": F.layer_norm(x, (24,), g, beta, eps=1e-5)}


@case({"x": (2, 5, 3, 4)},
      {"mean": (5,), "var": pos(5), "gamma": (5,), "beta": (5,)})
def batchnorm(x, mean, var, gamma, beta):
    return {"y": F.relu(F.batch_norm(x, mean, var, gamma, beta,
                                     training=False, eps=1e-5))}


@case({"x": (40,), "p": pos(40)})
def unary(x, p):
    return {"r_relu": F.relu(x), "r_sigmoid": torch.sigmoid(x),
            "r_tanh": torch.tanh(x), "r_exp": torch.exp(x),
            "r_log": torch.log(p), "r_sqrt": torch.sqrt(p),
            "r_rsqrt": torch.rsqrt(p), "r_abs": torch.abs(x),
            "r_erf": torch.erf(x), "r_neg": torch.neg(x)}


@case({"x": (4.0, (64,)), "p": pos(64)})
def unary2(x, p):
    return {"r_sin": torch.sin(x), "r_cos": torch.cos(x),
            "r_floor": torch.floor(x), "r_ceil": torch.ceil(x),
            "r_round": torch.round(x * 2), "r_sign": torch.sign(x),
            "r_expm1": torch.expm1(x / 64), "r_log1p": torch.log1p(p / 64),
            "r_softplus": F.softplus(x * 8), "r_gelu": F.gelu(x)}


@case({"s": (300.0, (2, 37, 37)), "x": (300.0, (96,))})
def vmath_range(s, x):
    causal = torch.ones(37, 37, dtype=torch.bool).tril()
    a = x.abs()
    return {"p": torch.softmax(s.masked_fill(~causal, float("-inf")), -1),
            "r_exp": torch.exp(x - 300), "r_tanh": torch.tanh(x),
            "r_sig": torch.sigmoid(x), "r_erf": torch.erf(x),
            "r_gelu": F.gelu(x), "r_expm1": torch.expm1(x - 300),
            "r_log": torch.log(a * 1e30 + 1), "r_log1p": torch.log1p(a * 1e30),
            "r_sin": torch.sin(x * 64), "r_cos": torch.cos(x * 64)}


@case({"a": (30,), "b": (30,), "p": pos(30), "q": pos(30)})
def binary(a, b, p, q):
    return {"r_max": torch.maximum(a, b), "r_min": torch.minimum(a, b),
            "r_pow": torch.pow(p, b), "r_div": a / q,
            "r_arith": (a - b * 2.5) * (a + 1) + b / 4,
            "r_clamp": torch.clamp(a * 3, -1, 1)}


@case({"x": (4, 25)})
def gelu(x):
    return {"y": F.gelu(x), "t": F.gelu(x, approximate="tanh")}


@case({"x": (6, 6), "z": (6, 6)})
def select(x, z):
    eye = torch.eye(6, dtype=torch.bool)
    return {"pick": torch.where(x > z, x, 2 * z),
            "lower": torch.tril(x),
            "mixed": torch.where(eye | ((x < 0) & ~(z > 0.5)),
                                 torch.ones_like(x), x),
            "leaky": F.leaky_relu(x, 0.01)}


# ---- layout ----------------------------------------------------------------

@case({"x": (5, 8), "y": (2, 3, 4, 5)})
def permute(x, y):
    return {"t": x.t(), "p": y.permute(0, 3, 1, 2)}


@case({"m": (6, 4), "x": (2, 3, 4, 5)})
def reshape(m, x):
    v = m.reshape(-1)
    return {"v": v, "m2": v.reshape(12, 2), "f": torch.flatten(x, 1)}


@case({"x": (2, 12, 4, 5)})
def pixel_shuffle(x):
    y = F.pixel_shuffle(x, 2)
    return {"y": y, "u": F.pixel_unshuffle(y, 2)}


@case({"x": (1, 2, 4, 5)})
def upsample(x):
    return {"near": F.interpolate(x, scale_factor=2, mode="nearest"),
            "bil": F.interpolate(x, scale_factor=2, mode="bilinear",
                                 align_corners=False)}


@case({"x": (5, 7), "v": (4,)})
def roll(x, v):
    rep = torch.repeat_interleave(v, 3)
    return {"r": torch.roll(x, shifts=(3, -2), dims=(0, 1)),
            "d": F.pad(rep, (1, 0))[:12]}


@case({"x": (9,)})
def narrow(x):
    zero = torch.zeros_like(x)
    head = torch.cat([x[:4], zero[4:]])
    mid = torch.cat([zero[:2], 2 * x[2:5], zero[5:]])
    return {"head": head, "mid": mid, "crop": x[3:7],
            "pad": F.pad(x, (2, 2))}


@case({"a": (19,), "b": (19,), "s": ()})
def rank0(a, b, s):
    dot = torch.dot(a, b)
    return {"dot": dot, "y": a * dot + s, "sq": s * s}


@case({"x": (4, 6)})
def index_value(x):
    i = torch.arange(4, dtype=x.dtype)
    j = torch.arange(6, dtype=x.dtype)
    return {"y": x + 0.5 * i[:, None] - j[None, :] / 6,
            "z": x[:, 0] * (6 / 4) + (i + 1) / 3}


# ---- program structure -----------------------------------------------------

def _block(x, w1, w2):
    a = F.relu(F.conv2d(x, w1, padding=1))
    return F.relu(F.conv2d(a, w2, padding=1) + x)


@case({"x": (1, 4, 6, 5)},
      {"wa": (4, 4, 3, 3), "wb": (4, 4, 3, 3),
       "wc": (4, 4, 3, 3), "wd": (4, 4, 3, 3)})
def defs(x, wa, wb, wc, wd):
    z1 = _block(x, wa, wb)
    return {"z1": z1, "z2": _block(z1, wc, wd)}


@case({"x": (5, 12), "y": (7, 5)})
def def_multi(x, y):
    return {"mx": x.mean(1), "vx": x.var(1, unbiased=False),
            "my": y.mean(1), "vy": y.var(1, unbiased=False)}


@case({"x": (2, 3, 6, 6)}, {"k": (3, 3, 3, 3), "g": (3,)})
def imports(x, k, g):
    b = F.silu(F.conv2d(x, k, padding=1) * g[None, :, None, None])
    return {"b": b, "p": F.max_pool2d(b, 2)}


@case({"x": (2, 3, 4, 5)}, includes=("lib",))
def include_path(x):
    return {"y": F.silu(x)}


@case({"x": (3, 5)}, defines={"N": 3, "H": 5})
def defines(x):
    # HH = 9, R = 9 % 4 + 1 = 2, Q = 3
    y = torch.repeat_interleave(x, 2, dim=1)[:, :9] * 2
    return {"y": y, "z": y[:, :3].t()}


@case({"x": (10,)})
def order(x):
    a = F.pad(2 * x[:8], (0, 2))
    b = a + 1
    return {"c": b * a, "b": b}


@case({"x": ("f16", (6, 8))})
def f16(x):
    return {"y": (2 * x).to(torch.float16), "s": (3 * x).sum(1)}


@case({"x": ("bf16", (5, 12))}, {"w": ("bf16", (12, 7)), "b": (7,)})
def bf16(x, w, b):
    bf = torch.bfloat16
    y = (x @ w).to(bf).to(torch.float64)        # stored as bf16
    return {"s": (y * y).sum(1),
            "z": (F.relu(y + b) / 3).to(bf),
            "m": y.amax(0).to(bf)}


@case({"x": (2, 16, 72)})
def heads(x):
    nh, d = 3, 8
    q, k, v = (t.reshape(2, 16, nh, d).transpose(1, 2) for t in x.split(nh * d, dim=2))
    s = q @ k.transpose(2, 3) / 4
    y = (s @ v).transpose(1, 2).reshape(2, 16, nh * d)
    # rows 4i + c of batch 1: residue class c is q1[:, c::4]
    q1, k1 = q[1], k[1]
    r = torch.stack([q1[:, c::4] @ k1[:, c::4].transpose(1, 2) for c in range(4)], dim=1)
    return {"s": s, "y": y, "r": r}


@case({"x": (12, 24)})
def causal(x):
    nh, t, d = 2, 12, 4
    q, k, v = (c.reshape(t, nh, d).transpose(0, 1) for c in x.split(nh * d, dim=1))
    s = q @ k.transpose(1, 2) / 2
    keep = torch.ones(t, t, dtype=torch.bool).tril()
    p = torch.softmax(s.masked_fill(~keep, float("-inf")), dim=-1)
    a = (p @ v).transpose(0, 1).reshape(t, nh * d)
    cols = torch.arange(t)
    u = (x[:, cols % 5] * 3).masked_fill(~keep, 0)
    w = (x[:, cols % 7] + 1).masked_fill(~keep.tril(-1), 0)
    tt = (x[:, cols % 3] - 2).masked_fill(~keep, 0)
    return {"a": a, "us": u.sum(1), "ws": (w * keep).sum(1), "ts": (tt * tt).sum(0)}
