"""torchbench.py - the PyTorch column of tests/gpu/check.sh: run the
PyTorch model of an example (models/NAME.py, the numerical suite's
reference) on the GPU in f32 with TF32 off, on the same inputs and weights
as the einc program, and print
    MEDIAN_MS REL_ERR
(the median time per run over ITERS runs after a warm-up, and the max
relative error of einc's GPU outputs against PyTorch's, max|a-b|/max|b|).
Exits 3 when there is no model for NAME or no CUDA device, 1 on an error.

    python3 torchbench.py BUNDLE NAME INPUTS WEIGHTS EINC_OUTPUTS ITERS
"""

import importlib.util
import os
import sys


def main(argv):
    bundle, name, fin, fwt, fout, iters = argv
    iters = int(iters)
    sys.path.insert(0, bundle)
    try:
        import torch
    except ImportError:
        return 3
    if not torch.cuda.is_available():
        return 3
    mpath = os.path.join(bundle, "models", name + ".py")
    if not os.path.exists(mpath):
        return 3
    spec = importlib.util.spec_from_file_location("m_" + name, mpath)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    if os.path.basename(mod.EIN) != name + ".ein":
        return 3
    import stio
    cfg = {}
    with open(os.path.join(bundle, name + ".cfg")) as f:
        for kv in f.read().split():
            k, v = kv.split("=")
            cfg[k] = int(v)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    t = {k: v.to(dev) for k, v in stio.load(fin).items()}
    t.update({k: v.to(dev) for k, v in stio.load(fwt).items()})
    with torch.no_grad():
        for _ in range(3):
            ref = mod.reference(cfg, **t)
        torch.cuda.synchronize()
        times = []
        for _ in range(iters):
            a = torch.cuda.Event(enable_timing=True)
            b = torch.cuda.Event(enable_timing=True)
            a.record()
            mod.reference(cfg, **t)
            b.record()
            torch.cuda.synchronize()
            times.append(a.elapsed_time(b))
    times.sort()
    n = len(times)
    med = times[n // 2] if n % 2 else (times[n // 2 - 1] + times[n // 2]) / 2
    out = stio.load(fout)
    err = 0.0
    for k, r in ref.items():
        o = out[k].to(dev).double()
        r = r.double()
        if tuple(o.shape) != tuple(r.shape):
            err = float("inf")
            continue
        scale = max(r.abs().max().item(), 1e-30)
        err = max(err, (o - r).abs().max().item() / scale)
    print("%.4f %.3e" % (med, err))
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 7:
        sys.exit(__doc__)
    try:
        sys.exit(main(sys.argv[1:]))
    except Exception as e:          # out of memory at full size, say
        print("torchbench.py: %s: %s" % (type(e).__name__, e), file=sys.stderr)
        sys.exit(1)
