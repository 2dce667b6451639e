"""gcn.py - PyTorch reference for examples/gcn.ein: the Global Convolutional
Network (Peng et al. 2017) as the EinNet evaluation ran it, batch norm
folded into each convolution (weight and bias).  ResNet-50 backbone
(layer1, layer2 bottlenecks; layer3 and layer4 GCN bottlenecks with k = 5
and 7, blocks 1-5 of a stage sharing one set of weights), a GCN block
(k = 11) and a boundary refinement block per level, bilinear upsampling
(align_corners=True) from coarse to fine, 56x56 -> 224x224, and a final
1x1 convolution to 21 classes.  Written with F.conv2d, F.max_pool2d and
F.interpolate; weight names as in the .ein file.  The .ein file fixes the
224x224 input; only the batch changes."""

import math

import torch.nn.functional as F

EIN = "examples/gcn.ein"
CONFIGS = [("b1", {"B": 1})]
NC = 21


def _add_conv(w, name, shape):
    fan = shape[1] * shape[2] * shape[3]
    w[name] = (math.sqrt(3.0 / fan), shape)     # variance 1 / fan-in
    w[name + "_b"] = (0.1, (shape[0],))


def _gcn_branch_weights(w, p, g, c, k):
    _add_conv(w, p + "conv11", (g, c, k, 1))
    _add_conv(w, p + "conv12", (g, g, 1, k))
    _add_conv(w, p + "conv21", (g, c, 1, k))
    _add_conv(w, p + "conv22", (g, g, k, 1))


def shapes(cfg):
    w = {}
    _add_conv(w, "conv1", (64, 3, 7, 7))
    for layer, nblk, m, e, cin in ((1, 3, 64, 256, 64), (2, 4, 128, 512, 256)):
        for b in range(nblk):
            p = "layer%d_%d_" % (layer, b)
            c = cin if b == 0 else e
            _add_conv(w, p + "conv1", (m, c, 1, 1))
            _add_conv(w, p + "conv2", (m, m, 3, 3))
            _add_conv(w, p + "conv3", (e, m, 1, 1))
            if b == 0:
                _add_conv(w, p + "down", (e, c, 1, 1))
    for layer, g, e, cin, k in ((3, 85, 1024, 512, 5), (4, 128, 2048, 1024, 7)):
        for b in (0, 1):
            p = "layer%d_%d_" % (layer, b)
            c = cin if b == 0 else e
            _gcn_branch_weights(w, p + "gcn_", g, c, k)
            _add_conv(w, p + "conv1x1", (e, g, 1, 1))
            if b == 0:
                _add_conv(w, p + "down", (e, c, 1, 1))
    for i, c in enumerate((256, 512, 1024, 2048)):
        _gcn_branch_weights(w, "gcn%d_" % (i + 1), NC, c, 11)
    for i in range(1, 10):
        _add_conv(w, "br%d_conv1" % i, (NC, NC, 3, 3))
        _add_conv(w, "br%d_conv2" % i, (NC, NC, 3, 3))
    _add_conv(w, "final_conv", (NC, NC, 1, 1))
    return {"x": (cfg["B"], 3, 224, 224)}, w


def reference(cfg, x, **w):
    def conv(t, name, stride=1, padding=0):
        return F.conv2d(t, w[name], w[name + "_b"], stride=stride,
                        padding=padding)

    def bottleneck(t, p, stride, proj):
        r1 = F.relu(conv(t, p + "conv1"))
        r2 = F.relu(conv(r1, p + "conv2", stride, 1))
        t3 = conv(r2, p + "conv3")
        sc = conv(t, p + "down", stride) if proj else t
        return F.relu(t3 + sc)

    def branches(t, p, k, act):
        f = F.relu if act else (lambda v: v)
        a = f(conv(f(conv(t, p + "conv11", 1, (k // 2, 0))), p + "conv12", 1,
                   (0, k // 2)))
        b = f(conv(f(conv(t, p + "conv21", 1, (0, k // 2))), p + "conv22", 1,
                   (k // 2, 0)))
        return a + b

    def gcn_bottleneck(t, p, k, first):
        u = conv(branches(t, p + "gcn_", k, True), p + "conv1x1",
                 2 if first else 1)
        return u + (conv(t, p + "down", 2) if first else t)

    def br(t, i):
        r = F.relu(conv(t, "br%d_conv1" % i, 1, 1))
        return conv(r, "br%d_conv2" % i, 1, 1) + t

    def up(t, like):
        return F.interpolate(t, size=like.shape[2:], mode="bilinear",
                             align_corners=True)

    y = F.relu(conv(x, "conv1", 2, 3))
    y = F.max_pool2d(y, 3, stride=2, padding=1)
    feats = []
    for layer, nblk in ((1, 3), (2, 4)):
        for b in range(nblk):
            stride = 2 if layer == 2 and b == 0 else 1
            y = bottleneck(y, "layer%d_%d_" % (layer, b), stride, b == 0)
        feats.append(y)
    for layer, k in ((3, 5), (4, 7)):
        y = gcn_bottleneck(y, "layer%d_0_" % layer, k, True)
        for _ in range(5):
            y = gcn_bottleneck(y, "layer%d_1_" % layer, k, False)
        feats.append(y)
    e = [br(branches(f, "gcn%d_" % (i + 1), 11, False), i + 1)
         for i, f in enumerate(feats)]
    d3 = br(e[2] + up(e[3], e[2]), 5)
    d2 = br(e[1] + up(d3, e[1]), 6)
    d1 = br(e[0] + up(d2, e[0]), 7)
    d0 = br(d1, 8)
    f0 = br(F.interpolate(d0, size=(224, 224), mode="bilinear",
                          align_corners=True), 9)
    return {"score": conv(f0, "final_conv")}
