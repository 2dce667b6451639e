"""seeds.py - what the random tests of tests/derive share
(handoff/chains.py, views/products.py, unmask/masks.py,
scalefold/folds.py): the einc to run
(EINC), numpy and the safetensors reader, a generated C program built by
the command on its first line and run, the comparison of its outputs with
numpy's, and the loop over the seeds.

  compile_c(work, seed, src)     src as p.ein in a folder of its own under
                                 work, einc --verify --main p.ein -o p.c
                                 there, then its plan-json for the C target:
                                 (the folder, None, the plan-json), or (the
                                 folder, what failed, None)
  build_run(folder, name, args)  builds NAME.c in folder, runs ./NAME args;
                                 None, or what failed
  compare(got, want)             each output of want (numpy, float64) against
                                 got's: max |a - b| / max |b| < 1e-5; None,
                                 or what differs
  main(run, each, total)         seeds argv[1]..argv[2]-1: run(seed, work)
                                 gives (error or None, a count); prints a
                                 line per seed ("N each") and the sums
                                 ("N total"); 1 on a failure or a count
                                 of 0 in all
"""

import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "python"))
from einc import safetensors  # noqa: E402,F401 (for the tests)
import numpy as np  # noqa: E402,F401

EINC = os.environ.get("EINC", "einc")
if os.sep in EINC:
    EINC = os.path.abspath(EINC)       # the programs are made in folders of their own


def compile_c(work, seed, src):
    folder = os.path.join(work, f"s{seed}")
    os.makedirs(folder)
    with open(os.path.join(folder, "p.ein"), "w") as fp:
        fp.write(src)
    p = subprocess.run([EINC, "--verify", "--main", "p.ein", "-o", "p.c"], cwd=folder,
                       capture_output=True, text=True)
    if p.returncode != 0 or "error" in p.stderr:     # warnings: a tensor unused
        return folder, f"einc: {p.stderr.strip()}", None
    p = subprocess.run([EINC, "--emit=plan-json", "--target=c", "p.ein", "-o", "-"],
                       cwd=folder, capture_output=True, text=True)
    if p.returncode != 0:
        return folder, f"einc --emit=plan-json: {p.stderr.strip()}", None
    return folder, None, json.loads(p.stdout)


def build_run(folder, name, args):
    with open(os.path.join(folder, name + ".c")) as fp:
        cmd = fp.readline()[len("/* build: "):].rstrip().removesuffix("*/").strip()
    for line in (cmd, f"./{name} {args}"):
        p = subprocess.run(line, shell=True, cwd=folder, capture_output=True, text=True)
        if p.returncode != 0:
            return f"{line}: {p.stderr.strip()[-300:]}"
    return None


def compare(got, want):
    bad = []
    for k, b in want.items():
        a = got[k].astype(np.float64)
        if a.shape != b.shape:
            bad.append(f"{k}: shape {a.shape}, want {b.shape}")
            continue
        err = np.abs(a - b).max() / max(np.abs(b).max(), 1e-30)
        if not err < 1e-5:
            bad.append(f"{k}: rel err {err:.3g}")
    return "; ".join(bad) if bad else None


def main(run, each, total):
    first, last = int(sys.argv[1]), int(sys.argv[2])
    failed = count = 0
    with tempfile.TemporaryDirectory() as work:
        for seed in range(first, last):
            err, n = run(seed, work)
            count += n
            failed += err is not None
            print(f"{'FAIL' if err else 'ok'} random seed {seed}: {n} {each}"
                  + (f": {err}" if err else ""), flush=True)
            if err:
                with open(os.path.join(work, f"s{seed}", "p.ein")) as fp:
                    print(fp.read())
    print(f"{last - first} seeds, {failed} failed, {count} {total}")
    return 1 if failed or not count else 0
