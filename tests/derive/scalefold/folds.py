#!/usr/bin/python3
"""folds.py - random sums of products scaled by weights, and maps around
them (tests/derive/scalefold.test, derive/search/scalefold.c): each seed
writes a program with a sum a (a product, a batched product or a
convolution of an input and a weight) and a map y that multiplies a by a
factor: a weight vector over one of a's loop variables (one the weight is
indexed by, or one it is not), a product of two, a quotient, a factor that
reads an input, one computed from weights after a, now and then a bias, a ReLU, the input added back, a
second reader of a or a second read of it.  The generator knows which of
these fold (the factor reads weights only, through variables that are
plain subscripts of the weight, a read once by y alone) and how many
times; plan-json's "folded" must say the same.  It compiles the program
for the C target with --verify, runs it on random inputs and weights and
compares every output with numpy (max |a - b| / max |b| < 1e-5).  Exits 1
on a mismatch or a failure, and when no seed folded.

  folds.py FIRST LAST      (seeds FIRST..LAST-1; EINC, the einc to run)
"""

import os
import random
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import seeds  # noqa: E402
from seeds import np, safetensors  # noqa: E402


def program(r):
    """(source, shapes of the inputs and weights, the reference as a
    function of them, the folds expected)."""
    kind = r.choice(["matmul", "matmul_t", "batched", "conv"])
    m, n, k = r.choice([3, 4, 5]), r.choice([4, 6]), r.choice([3, 5])
    if kind in ("matmul", "matmul_t"):
        loops, dims = ["i", "j"], [m, n]
        shapes = {"x": (m, k), "w": (n, k) if kind == "matmul" else (k, n)}
        wread = "w[j, c]" if kind == "matmul" else "w[c, j]"
        src = [f"a[i, j] : [{m}, {n}] += x[i, c] * {wread}"]
        wvars = {"j"}

        def sum_(v):
            return v["x"] @ (v["w"].T if kind == "matmul" else v["w"])
    elif kind == "batched":
        b = 2
        loops, dims = ["b", "i", "j"], [b, m, n]
        shapes = {"x": (b, m, k), "w": (b, n, k)}
        src = [f"a[b, i, j] : [{b}, {m}, {n}] += x[b, i, c] * w[b, j, c]"]
        wvars = {"b", "j"}

        def sum_(v):
            return np.einsum("bic,bjc->bij", v["x"], v["w"])
    else:
        h = r.choice([4, 5])
        loops, dims = ["n", "f", "h", "w"], [1, n, h, h]
        shapes = {"x": (1, k, h, h), "kw": (n, k, 3, 3)}
        src = [f"a[n, f, h, w] : [1, {n}, {h}, {h}] += "
               "x[n, c, h + r - 1, w + s - 1] * kw[f, c, r, s]"]
        wvars = {"f"}

        def sum_(v):
            xp = np.pad(v["x"], ((0, 0), (0, 0), (1, 1), (1, 1)))
            out = np.zeros((1, n, h, h))
            for r_ in range(3):
                for s_ in range(3):
                    out += np.einsum("nchw,fc->nfhw", xp[:, :, r_:r_ + h, s_:s_ + h],
                                     v["kw"][:, :, r_, s_])
            return out
    idx = ", ".join(loops)

    def vec(name, var):
        """A vector over loop var: its declaration's shape, its read, and
        its value broadcast over a's shape."""
        d = loops.index(var)
        shapes[name] = (dims[d],)

        def val(v):
            s = [1] * len(dims)
            s[d] = dims[d]
            return v[name].reshape(s)
        return f"{name}[{var}]", val

    # the factor
    folds = 0
    var = r.choice(sorted(wvars) + [v for v in loops if v not in wvars])
    g, gval = vec("g", var)
    factor = r.choice(["one", "one", "two", "quotient", "input", "stage"])
    late = []
    if factor == "stage":
        # a factor computed from weights after a (batch norm's scale from
        # its variance, lib/nn.ein): it moves up with the weight it scales
        late = [f"gs[{var}] = {g} * {g} + 0.5"]
        term, tval = f"a[{idx}] * gs[{var}]", lambda v: sum_(v) * (gval(v) ** 2 + 0.5)
        folds = int(var in wvars)
    elif factor == "two":
        var2 = r.choice(sorted(wvars))
        g2, g2val = vec("g2", var2)
        term, tval = f"a[{idx}] * {g} * {g2}", lambda v: sum_(v) * gval(v) * g2val(v)
        # (a * g) * g2: g first, then g2; none where g cannot (a is not
        # a factor of the outer product)
        folds = 2 if var in wvars else 0
    elif factor == "quotient":
        term, tval = (f"a[{idx}] / ({g} * {g} + 0.5)",
                      lambda v: sum_(v) / (gval(v) ** 2 + 0.5))
        folds = int(var in wvars)
    elif factor == "input":
        shapes["xg"] = (dims[loops.index(var)],)
        d = loops.index(var)

        def xgval(v, d=d):
            s = [1] * len(dims)
            s[d] = dims[d]
            return v["xg"].reshape(s)
        term, tval = f"a[{idx}] * xg[{var}]", lambda v: sum_(v) * xgval(v)
        folds = 0
    else:
        term, tval = f"a[{idx}] * {g}", lambda v: sum_(v) * gval(v)
        folds = int(var in wvars)
    body, val = term, tval
    if r.random() < 0.5:
        t, tv = vec("t", loops[-1])
        body, val = f"{body} + {t}", (lambda v, val=val, tv=tv: val(v) + tv(v))
    extra = r.choice(["none", "none", "none", "twice", "reader", "output"])
    if extra == "twice":
        body, val = f"{body} + a[{idx}]", (lambda v, val=val: val(v) + sum_(v))
        folds = 0
    if r.random() < 0.4:
        body, val = f"relu({body})", (lambda v, val=val: np.maximum(val(v), 0))
    src += late
    src.append(f"y[{idx}] = {body}")
    outs = {"y": val}
    if extra == "reader":
        src.append(f"u[{idx}] = a[{idx}] * 2")
        outs["u"] = lambda v: sum_(v) * 2
        folds = 0
    elif extra == "output":
        outs["a"] = sum_
        folds = 0
    decl = []
    for name, shape in shapes.items():
        role = "input" if name in ("x", "xg") else "weight"
        decl.append(f"{role} {name} : f32[{', '.join(map(str, shape))}]")
    src = decl + src + ["output " + ", ".join(outs)]
    return "\n".join(src) + "\n", shapes, outs, folds


def run(seed, work):
    src, shapes, outs, want_folds = program(random.Random(seed))
    d, err, plan = seeds.compile_c(work, seed, src)
    if err:
        return err, 0
    folds = len(plan["folded"])
    if folds != want_folds:
        return f"{folds} folds, want {want_folds}", folds
    rng = np.random.default_rng(seed)
    v = {name: rng.uniform(-1, 1, shape).astype(np.float32) for name, shape in shapes.items()}
    ins = {k: a for k, a in v.items() if k in ("x", "xg")}
    wts = {k: a for k, a in v.items() if k not in ("x", "xg")}
    safetensors.save(ins, os.path.join(d, "in.st"))
    safetensors.save(wts, os.path.join(d, "wt.st"))
    err = seeds.build_run(d, "p", "--inputs in.st --weights wt.st --outputs out.st")
    if err:
        return err, folds
    got = safetensors.load(os.path.join(d, "out.st"))
    v64 = {k: a.astype(np.float64) for k, a in v.items()}
    return seeds.compare(got, {k: f(v64) for k, f in outs.items()}), folds


sys.exit(seeds.main(run, "folds", "folds"))
