#!/usr/bin/python3
"""devmem.py - the device memory a generated CUDA file allocates for its
tensors (no GPU needed): every buffer of its own (inputs, weights,
outputs, load-time tensors a run reads, and with --keep-intermediates
every intermediate) plus the arena the intermediates share
(derive/search/storage.c), read from the file's tensor table
(EIN_ARENA_BYTES, ein_at, EIN_VIEW), for each example named at B=1 and
B=16, with --keep-intermediates and without.  Workspaces (cuBLAS, cuDNN)
are not counted.  Prints Markdown.

  EINC=./einc /usr/bin/python3 tests/bench/devmem.py [NAME...]
"""
import os
import re
import subprocess
import sys
sys.dont_write_bytecode = True
from gpuplan import has_b   # noqa: E402 (this folder: the same constant B)

here = os.path.dirname(os.path.abspath(__file__))
top = os.path.dirname(os.path.dirname(here))
ROW = re.compile(r'^    \{"[^"]*", "[^"]*", [A-Z0-9_]+_(?:INPUT|WEIGHT|COMPUTED), \d,'
                 r'.* (\d+)\},$', re.M)


def device_bytes(einc, args):
    c = subprocess.run([einc] + args + ["-o", "-"], capture_output=True, text=True,
                       check=True).stdout
    sizes = [int(n) for n in ROW.findall(c)]
    arena = int(re.search(r"EIN_ARENA_BYTES \(\(size_t\)(\d+)\)", c).group(1))
    at = re.search(r"ein_at\[EIN_NT\] = \{([^}]*)\}", c)
    at = [int(x) for x in at.group(1).split(",")] if at else [-1] * len(sizes)
    views = {int(x) for x in re.findall(r"\(i\) == (\d+)",
                                        re.search(r"#define EIN_VIEW\(i\) \((.*)\)", c).group(1))}
    return arena + sum(n for i, (n, o) in enumerate(zip(sizes, at)) if o < 0 and i not in views)


def main():
    einc = os.environ.get("EINC", "./einc")
    names = sys.argv[1:] or sorted(f[:-4] for f in os.listdir(os.path.join(top, "examples"))
                                   if f.endswith(".ein"))
    print("| example | B | MiB, --keep-intermediates | MiB, arena | arena / keep |")
    print("|---|---|---:|---:|---:|")
    for name in names:
        ein = os.path.join(top, "examples", name + ".ein")
        for b in (["1", "16"] if has_b(ein) else [None]):
            args = (["-D", "B=" + b] if b else []) + [ein]
            keep = device_bytes(einc, ["--keep-intermediates"] + args)
            shared = device_bytes(einc, args)
            print("| %s | %s | %.1f | %.1f | %.2f |" % (name, b or "-", keep / 2**20,
                                                       shared / 2**20, shared / keep))


if __name__ == "__main__":
    main()
