"""bundle.py - helpers of tests/gpu/prepare.sh (run with /usr/bin/python3).

  bundle.py spec [-D NAME=VALUE]... FILE.ein
      print the stgen spec of FILE's inputs and weights: one line
      KIND NAME DTYPE LO HI DIM...  Inputs are uniform(-1, 1).  Weights
      take the ranges of the PyTorch model in tests/models/STEM.py when
      there is one for FILE (it scales them so that deep networks stay
      finite); else uniform(-a, a) with a = sqrt(3 / fan-in), fan-in the
      product of the dims after the first (rank >= 2), or (-1, 1).

  bundle.py ref [--cap N] OUT.safetensors REF.safetensors
      the C target's outputs OUT as the reference the GPU check compares
      with: an output of more than N elements (default 1048576) keeps every
      k-th element (flat order, k = ceil(numel / N)), with "T:stride",
      "T:shape" and "T:maxabs" in the metadata (see stcmp.c), so that the
      bundle stays small enough to carry.
"""

import sys
sys.dont_write_bytecode = True   # keep the source tree clean (distcheck)

import importlib.util
import math
import os

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(TOP, "tests", "num"))

import eindecl                                  # noqa: E402

DTYPE = {"f32": "F32", "f16": "F16", "bf16": "BF16"}


def model_ranges(path, consts):
    """{name: (lo, hi)} from tests/models/STEM.py, or None."""
    stem = os.path.splitext(os.path.basename(path))[0]
    mpath = os.path.join(TOP, "tests", "models", stem + ".py")
    if not os.path.exists(mpath):
        return None
    spec = importlib.util.spec_from_file_location("m_" + stem, mpath)
    mod = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(mod)
    except ImportError:             # no torch here: the heuristic will do
        return None
    if os.path.abspath(os.path.join(TOP, mod.EIN)) != os.path.abspath(path):
        return None
    ins, wts = mod.shapes(dict(consts))
    out = {}
    for name, s in list(ins.items()) + list(wts.items()):
        kind = None
        if isinstance(s, tuple) and len(s) == 2 and isinstance(s[0], (str, float)):
            kind, s = s
        shape = [int(d) for d in s]
        if kind == "pos":
            rng = (0.5, 2.0)
        elif isinstance(kind, float):
            rng = (-kind, kind)
        else:
            rng = (-1.0, 1.0)
        out[name] = (rng, shape)
    return out


def cmd_spec(argv):
    defines, files = {}, []
    it = iter(argv)
    for a in it:
        if a.startswith("-D"):
            k, v = (a[2:] or next(it)).split("=", 1)
            defines[k] = int(v)
        else:
            files.append(a)
    if len(files) != 1:
        sys.exit("usage: bundle.py spec [-D NAME=VALUE]... FILE.ein")
    prog = eindecl.read(files[0], defines)
    ranges = model_ranges(files[0], prog.consts) or {}
    for kind, name, elem, dims in prog.tensors:
        got = ranges.get(name)
        if got and got[1] == dims:
            lo, hi = got[0]
        elif kind == "weight" and len(dims) >= 2:
            fan = 1
            for d in dims[1:]:
                fan *= d
            a = math.sqrt(3.0 / max(fan, 1))
            lo, hi = -a, a
        else:
            lo, hi = -1.0, 1.0
        if got and got[1] != dims:
            print("bundle.py: %s: tests/models gives %s the shape %s, the "
                  ".ein file %s" % (files[0], name, got[1], dims),
                  file=sys.stderr)
        print(kind, name, DTYPE[elem], repr(lo), repr(hi), *dims)


def cmd_ref(argv):
    import stio
    cap = 1 << 20
    if argv[:1] == ["--cap"]:
        cap = int(argv[1])
        argv = argv[2:]
    if len(argv) != 2:
        sys.exit("usage: bundle.py ref [--cap N] OUT.safetensors REF.safetensors")
    outs = stio.load_numpy(argv[0])
    keep, meta = {}, {}
    for name, a in outs.items():
        if a.size <= cap:
            keep[name] = a
            continue
        k = -(-a.size // cap)
        flat = a.reshape(-1)
        keep[name] = flat[::k].copy()
        meta[name + ":stride"] = k
        meta[name + ":shape"] = ",".join(str(d) for d in a.shape)
        meta[name + ":maxabs"] = repr(float(abs(flat.astype("f8")).max()))
    stio.save(keep, argv[1], metadata=meta)


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in ("spec", "ref"):
        sys.exit(__doc__)
    {"spec": cmd_spec, "ref": cmd_ref}[sys.argv[1]](sys.argv[2:])
