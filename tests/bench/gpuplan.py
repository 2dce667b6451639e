#!/usr/bin/python3
"""gpuplan.py - what the CUDA plan of each example runs, as the plan says
(no GPU needed): per run its launches (kernels, library calls, and the
epilogue passes after library calls; a run is one CUDA graph launch of
these), the bytes its generated kernels move (each tensor a kernel reads
once, what it stores: the model's best case), the cost model's estimate,
and the device memory of the intermediates that share one arena
(plan-json's "memory": the arena, and what they would take in buffers
of their own), at B=1 and B=16.

  EINC=./einc /usr/bin/python3 ../tests/bench/gpuplan.py [--base EINC0] [NAME...]

With --base, the same columns from another einc (an older build: "before")
side by side.  Both read `--emit=plan-json`'s "launches" and
"kernel_bytes" of the plan as it runs ("plan"); an einc without it, those
of the chosen candidate, whose searched tensors are the search's pieces
before fusion, epilogues and row groups (so its counts are too high
where those passes merged operators); an einc without those fields is
counted from the operators (a library call with an epilogue and no
post-ops: one more launch) and shows no bytes.  Prints Markdown."""
import json
import os
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
top = os.path.dirname(os.path.dirname(here))


def plan(einc, ein, b):
    args = [einc, "--emit=plan-json", "-o", "-", ein]
    if b is not None:
        args[1:1] = ["-D", "B=%d" % b]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    doc = json.loads(out)
    # the plan as it runs; an older einc: the chosen candidate, whose
    # searched tensors are the search's pieces before fusion and the passes
    cand = doc.get("plan") or doc["candidates"][doc["chosen"]]
    ops = [o for o in cand["ops"] if not o["at_load"]]
    launches, nbytes, known = 0, 0.0, True
    for o in ops:
        if "launches" in o:
            launches += o["launches"]
            nbytes += o["kernel_bytes"]
            continue
        known = False
        if o.get("cost_us", 1) == 0 and "rows" not in o:
            continue
        launches += 1
        if o["impl"] != "kernel" and "epilogue" in o and "post_ops" not in o:
            launches += 1
    mem = doc.get("plan", {}).get("memory")
    return launches, (nbytes if known else None), cand["cost_us"], mem


def has_b(ein):
    with open(ein) as f:
        return any(line.startswith("const") and
                   any(w.strip(" ,") == "B" for w in line.split()[1:])
                   for line in f)


def fmt_bytes(n):
    return "-" if n is None else "%.1f" % (n / 1e6)


def fmt_mem(m):
    """The intermediates' arena and what they take apart, MiB; "-" for an
    einc that shares no memory (--keep-intermediates, or older)."""
    if not m:
        return "-"
    return "%.1f (%.1f)" % (m["arena_bytes"] / 2**20, m["apart_bytes"] / 2**20)


def main():
    argv = sys.argv[1:]
    base = None
    if argv[:1] == ["--base"]:
        base, argv = argv[1], argv[2:]
    einc = os.environ.get("EINC", "./einc")
    names = argv or sorted(f[:-4] for f in os.listdir(os.path.join(top, "examples"))
                           if f.endswith(".ein"))
    cols = "launches | MB moved by kernels | estimate us | arena MiB (apart)"
    head = "| example | B | " + (cols if not base else
                                 " | ".join("%s before | %s after" % (c, c)
                                            for c in cols.split(" | "))) + " |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for name in names:
        ein = os.path.join(top, "examples", name + ".ein")
        for b in ([1, 16] if has_b(ein) else [None]):
            after = plan(einc, ein, b)
            row = ["%d" % after[0], fmt_bytes(after[1]), "%.1f" % after[2],
                   fmt_mem(after[3])]
            if base:
                before = plan(base, ein, b)
                row = ["%d | %d" % (before[0], after[0]),
                       "%s | %s" % (fmt_bytes(before[1]), fmt_bytes(after[1])),
                       "%.1f | %.1f" % (before[2], after[2]),
                       "%s | %s" % (fmt_mem(before[3]), fmt_mem(after[3]))]
            print("| %s | %s | %s |" % (name, "-" if b is None else b, " | ".join(row)))


if __name__ == "__main__":
    main()
