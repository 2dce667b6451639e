#!/usr/bin/python3
"""Run ONNX backend test cases (Debian's libonnx-testdata) through einc.

Each case is a folder with model.onnx and test_data_set_N/{input,output}_K.pb.
For each: einc --from=onnx imports the model (graph inputs that it must
know at import time, which the backend tests use for shapes, axes and
scales, bound with --bind to the first data set's values; a refusal that says
"unsupported" counts as unsupported, any other error as a failure), einc
compiles the program with --main, cc builds it, it runs on each data
set's inputs, and its outputs are compared with the expected ones with
the tolerances of ONNX's own backend tests (rtol 1e-3, atol 1e-7).
A data set's tensor of type UINT16 where the model declares BFLOAT16
holds bfloat16 bit patterns (the generator of ONNX 1.12's cases saved
numpy's uint16 view of them) and is read as bfloat16.

    backend.py [--list FILE] [--jobs N] [--report FILE] [--all-pass] [--verbose]
               [CASE_DIR...]

Without CASE_DIR or --list: every case under the data's node/ and
pytorch-converted/ folders.  --list names cases one a line, relative to
the data folder ("node/test_relu"); '#' starts a comment.  Prints one
line per case and a table per operator; exits 1 if a case failed (with
--all-pass, also if one was unsupported).
Needs EINC (the einc binary) and PB2ST (tests/onnx/pb2st) in the
environment.
"""

import argparse
import collections
import concurrent.futures
import glob
import os
import re
import shlex
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from einc import safetensors  # noqa: E402

import numpy as np  # noqa: E402

DATA_DIRS = ["/usr/share/libonnx-testdata/data", "/usr/include/onnx/backend/test/data"]


def data_dir():
    d = os.environ.get("ONNX_TESTDATA")
    if d:
        return d
    for d in DATA_DIRS:
        if os.path.isdir(os.path.join(d, "node")):
            return d
    return None


def run(cmd, cwd, timeout=300):
    p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=timeout)
    return p.returncode, p.stdout.decode("utf-8", "replace")


def primary_op(case, ops):
    """The operator a case is about: the one its name starts with, else the
    first node's."""
    name = os.path.basename(case)[5:].replace("_", "").lower()
    best = None
    for op in set(ops):
        if name.startswith(op.lower()) and (best is None or len(op) > len(best)):
            best = op
    return best or (ops[0] if ops else "?")


def ein_io(ein):
    """The program's inputs (ein name, external name) and outputs, in order."""
    ins, outs = [], []
    for line in ein.splitlines():
        m = re.match(r'input\s+(\w+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*:', line)
        if m:
            ins.append((m.group(1), (m.group(2) or m.group(1)).replace('\\"', '"')
                        .replace("\\\\", "\\")))
        m = re.match(r"output\s+(.*)", line)
        if m:
            outs = [s.strip() for s in m.group(1).split(",")]
    return ins, outs


BFLOAT16 = 16                       # TensorProto.DataType


def bf16_declared(pb2st, model, work):
    """The graph inputs and outputs (by index) the model declares bfloat16."""
    rc, out = run([pb2st, "--types", model], work)
    ins, outs = set(), set()
    if rc != 0:
        return ins, outs
    n_out = 0
    for line in out.splitlines():
        kind, rest = line.split(" ", 1)
        name, t = rest.rsplit(" ", 1)
        t = int(t)
        if kind == "input" and t == BFLOAT16:
            ins.add(name)
        if kind == "output":
            if t == BFLOAT16:
                outs.add(n_out)
            n_out += 1
    return ins, outs


def as_bf16(a):
    """A UINT16 tensor of bfloat16 bit patterns as float32 (exact)."""
    return safetensors._from_bf16_bits(a) if a.dtype == np.uint16 else a


def pb_index(p):
    return int(re.findall(r"\d+", os.path.basename(p))[0])


def case_op(case, pb2st, work):
    """The operator of a case; for a function's expansion into other
    operators (NAME_expanded), its unexpanded sibling's, marked."""
    sib = case[:-len("_expanded")] if case.endswith("_expanded") else None
    if sib and os.path.isfile(os.path.join(sib, "model.onnx")):
        return case_op(sib, pb2st, work) + " (expanded)"
    rc, ops = run([pb2st, "--ops", os.path.join(case, "model.onnx")], work)
    return primary_op(case, ops.split())


def check_case(case, pb2st, einc, work):
    op = case_op(case, pb2st, work)
    rc, names = run([pb2st, "--inputs", os.path.join(case, "model.onnx")], work)
    names = names.split()
    sets = sorted(glob.glob(os.path.join(case, "test_data_set_*")))
    inputs = {}                     # ONNX input name -> its file, in the first data set
    if sets:
        for p in glob.glob(os.path.join(sets[0], "input_*.pb")):
            if pb_index(p) < len(names):
                inputs[names[pb_index(p)]] = p
    # Inputs that the importer needs as constants (shapes, axes, scales: the
    # backend tests give them as graph inputs) are bound with --bind to the
    # first data set's values, one at a time as the importer names them.
    bound = []
    while True:
        cmd = [einc, "--from=onnx", os.path.join(case, "model.onnx"), "-o", "m.ein"]
        if bound:
            rc, out = run([pb2st, "bind.safetensors"] + [f"{b}={inputs[b]}" for b in bound], work)
            if rc != 0:
                return op, "fail", "bind: " + out.strip()
            cmd.append("--bind=bind.safetensors")
        rc, out = run(cmd, work)
        m = (re.search(r"input \d+ \('([^']*)'\) must be known at import time", out) or
             re.search(r"graph input '([^']*)' .* must be known at import time", out))
        if rc != 0 and m and m.group(1) in inputs and m.group(1) not in bound:
            bound.append(m.group(1))
            continue
        break
    if rc != 0:
        first = out.strip().splitlines()[0] if out.strip() else "exit %d" % rc
        kind = "unsupported" if "unsupported" in out else "fail"
        return op, kind, "import: " + re.sub(r"^.*?: error: ", "", first)
    ein = open(os.path.join(work, "m.ein")).read()
    ins, outs = ein_io(ein)
    bf16_ins, bf16_outs = bf16_declared(pb2st, os.path.join(case, "model.onnx"), work)
    rc, out = run([einc, "m.ein", "-o", "m.c", "--main"], work)
    if rc != 0:
        return op, "fail", "einc: " + out.strip().splitlines()[0]
    build = open(os.path.join(work, "m.c")).readline()
    cmd = build.split("build:", 1)[1].rsplit("*/", 1)[0]
    rc, out = run(shlex.split(cmd), work)
    if rc != 0:
        return op, "fail", "cc: " + out.strip()[:300]
    for ds in sets:
        in_pbs = {names[pb_index(p)]: p for p in glob.glob(os.path.join(ds, "input_*.pb"))
                  if pb_index(p) < len(names)}
        out_pbs = sorted(glob.glob(os.path.join(ds, "output_*.pb")), key=pb_index)
        if ds != sets[0] and any(open(in_pbs[b], "rb").read() != open(inputs[b], "rb").read()
                                 for b in bound):
            return op, "unsupported", "data sets with other values of the bound inputs"
        missing = [ext for _, ext in ins if ext not in in_pbs]
        if missing:
            return op, "fail", f"no input file for {missing}"
        args = [pb2st, "in.safetensors"] + [f"{ext}={in_pbs[ext]}" for _, ext in ins]
        rc, out = run(args, work)
        if rc != 0:
            return op, "fail", "inputs: " + out.strip()
        if any(ext in bf16_ins for _, ext in ins):
            path = os.path.join(work, "in.safetensors")
            t = safetensors.load(path)
            safetensors.save({k: safetensors.bf16(as_bf16(v)) if k in bf16_ins else v
                              for k, v in t.items()}, path)
        rc, out = run([pb2st, "want.safetensors"] +
                      [f"o{i}={p}" for i, p in enumerate(out_pbs)], work)
        if rc != 0:
            return op, "fail", "outputs: " + out.strip()
        rc, out = run(["./m", "--weights", "m.safetensors", "--inputs", "in.safetensors",
                       "--outputs", "got.safetensors"], work)
        if rc != 0:
            return op, "fail", "run: " + out.strip()[:300]
        got = safetensors.load(os.path.join(work, "got.safetensors"))
        want = safetensors.load(os.path.join(work, "want.safetensors"))
        if len(outs) != len(want):
            return op, "fail", f"{len(outs)} outputs, {len(want)} expected"
        for i, name in enumerate(outs):
            g, w = got[name], want[f"o{i}"]
            if i in bf16_outs:
                w = as_bf16(w)
            if g.shape != w.shape:
                return op, "fail", f"output {i}: shape {g.shape}, expected {w.shape}"
            w = w.astype(np.float64)
            g = g.astype(np.float64)
            if not np.allclose(g, w, rtol=1e-3, atol=1e-7, equal_nan=True):
                err = np.abs(g - w) / (1e-7 + 1e-3 * np.abs(w))
                j = np.unravel_index(np.nanargmax(err), err.shape)
                return op, "fail", (f"output {i}: {g[j]} at {j}, expected {w[j]} "
                                    f"({int(np.sum(err > 1))} of {err.size} off)")
    how = f"{len(sets)} data set{'s' if len(sets) != 1 else ''}"
    if bound:
        how += ", bound: " + ", ".join(bound)
    return op, "pass", how


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cases", nargs="*")
    ap.add_argument("--list")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--report")
    ap.add_argument("--all-pass", action="store_true")
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args()
    einc, pb2st = os.environ.get("EINC"), os.environ.get("PB2ST")
    if not einc or not pb2st:
        sys.exit("backend.py: set EINC and PB2ST")
    root = data_dir()
    cases = list(a.cases)
    if a.list:
        if not root:
            print("backend.py: no ONNX backend test data (libonnx-testdata)")
            sys.exit(77)
        for line in open(a.list):
            line = line.split("#", 1)[0].strip()
            if line:
                cases.append(os.path.join(root, line))
    if not cases:
        if not root:
            print("backend.py: no ONNX backend test data (libonnx-testdata)")
            sys.exit(77)
        for sub in ("node", "pytorch-converted"):
            cases += sorted(glob.glob(os.path.join(root, sub, "test_*")))
    results = {}

    def one(case):
        with tempfile.TemporaryDirectory(prefix="einc-onnx-") as work:
            try:
                return case, check_case(case, pb2st, einc, work)
            except subprocess.TimeoutExpired:
                return case, ("?", "fail", "timed out")

    with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as ex:
        for case, (op, kind, why) in ex.map(one, cases):
            results[case] = (op, kind, why)
            rel = os.path.relpath(case, root) if root else case
            print(f"{kind.upper():11s} {rel}  [{op}] {why if kind != 'pass' or a.verbose else ''}",
                  flush=True)
    per = collections.defaultdict(lambda: collections.Counter())
    for op, kind, _ in results.values():
        per[op][kind] += 1
    lines = ["", f"{'operator':24s} {'passed':>7s} {'failed':>7s} {'unsupported':>12s}"]
    tot = collections.Counter()
    for op in sorted(per):
        c = per[op]
        tot.update(c)
        lines.append(f"{op:24s} {c['pass']:7d} {c['fail']:7d} {c['unsupported']:12d}")
    lines.append(f"{'total':24s} {tot['pass']:7d} {tot['fail']:7d} {tot['unsupported']:12d}")
    print("\n".join(lines))
    if a.report:
        with open(a.report, "w") as f:
            for case in cases:
                op, kind, why = results[case]
                rel = os.path.relpath(case, root) if root else case
                f.write(f"{kind}\t{op}\t{rel}\t{why}\n")
            f.write("\n".join(lines) + "\n")
    print(f"{tot['pass']} passed, {tot['fail']} failed, {tot['unsupported']} skipped")
    sys.exit(1 if tot["fail"] or (a.all_pass and tot["unsupported"]) else 0)


if __name__ == "__main__":
    main()
