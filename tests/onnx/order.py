#!/usr/bin/python3
"""Find calls whose order of evaluation C leaves unspecified and whose
effects the importer's output shows.

    order.py [--show-effects] [--effect NAME]... CLANG_ARGS... -- FILE.c...

C does not say in which order a call's arguments are evaluated (nor the
operands of +, nor the members of an initializer list).  In the importer
a call such as ox_name or ox_read names a value on first use and
declares it, so two of them in one argument list declare in an order
that depends on the compiler, and the program it writes would differ
between a gcc and a clang build.  This reads clang's syntax tree
(-Xclang -ast-dump=json) of each FILE and prints, gcc-style, each place
where two operands of one call, operator or initializer list each call
a function with such an effect.

A function has an effect when it writes to a stream (fprintf, fputs ...
the program, the declarations, the messages), takes a new name
(new_name), is named by --effect, or calls a function that has one, in
any of the FILEs.  Clang is $CLANG, else clang.  Exits 1 if it found a
place, 0 if none.
"""

import json
import os
import subprocess
import sys

# The effects the output shows: a stream written, a name taken.
SEEDS = {"fprintf", "vfprintf", "fputs", "fputc", "fwrite", "putc", "putchar",
         "printf", "puts", "new_name"}
# Operators whose operands are sequenced (or only one of which runs).
SEQUENCED = {",", "&&", "||"}


def callee(call):
    """The name of the function a CallExpr calls directly, or None."""
    inner = call.get("inner") or []
    stack = inner[:1]
    while stack:
        e = stack.pop()
        if e.get("kind") == "DeclRefExpr":
            d = e.get("referencedDecl", {})
            return d.get("name") if d.get("kind") == "FunctionDecl" else None
        if e.get("kind") in ("ImplicitCastExpr", "ParenExpr"):
            stack.extend(e.get("inner") or [])
    return None


def walk(node):
    yield node
    for c in node.get("inner") or []:
        yield from walk(c)


def functions(tree, path):
    """The function definitions of the main file: (name, node)."""
    cur = None
    for d in tree.get("inner") or []:
        loc = d.get("loc", {})
        loc = loc.get("expansionLoc", loc)
        if "file" in loc:
            cur = loc["file"]
        if d.get("kind") == "FunctionDecl" and cur == path and any(
                c.get("kind") == "CompoundStmt" for c in d.get("inner") or []):
            yield d["name"], d


def calls_in(node):
    return {callee(e) for e in walk(node) if e.get("kind") == "CallExpr"} - {None}


def begin_offset(node):
    b = node.get("range", {}).get("begin", {})
    b = b.get("expansionLoc", b)
    return b.get("offset")


def main():
    argv = sys.argv[1:]
    if "--" not in argv:
        sys.exit(__doc__)
    cut = argv.index("--")
    opts, files = argv[:cut], argv[cut + 1:]
    show = "--show-effects" in opts
    seeds = set(SEEDS)
    args = []
    i = 0
    while i < len(opts):
        if opts[i] == "--effect" and i + 1 < len(opts):
            seeds.add(opts[i + 1])
            i += 1
        elif opts[i] != "--show-effects":
            args.append(opts[i])
        i += 1
    clang = os.environ.get("CLANG") or "clang"
    trees = {}
    for f in files:
        out = subprocess.run([clang, "-fsyntax-only", "-Xclang", "-ast-dump=json"] + args +
                             [f], stdout=subprocess.PIPE, check=True)
        trees[f] = json.loads(out.stdout)
    # The functions with an effect: the seeds, then whatever calls one.
    graph = {}
    for f, t in trees.items():
        for name, d in functions(t, f):
            graph[name] = calls_in(d)
    effect = set(seeds)
    changed = True
    while changed:
        changed = False
        for name, calls in graph.items():
            if name not in effect and calls & effect:
                effect.add(name)
                changed = True
    if show:
        print("effects:", " ".join(sorted(effect - seeds)))
    found = 0
    for f, t in trees.items():
        text = open(f, "rb").read()
        for name, d in functions(t, f):
            for e in walk(d):
                k = e.get("kind")
                if k == "CallExpr" or k == "InitListExpr" or (
                        k in ("BinaryOperator", "CompoundAssignOperator") and
                        e.get("opcode") not in SEQUENCED):
                    ops = []
                    for c in e.get("inner") or []:
                        eff = sorted({callee(x) for x in walk(c)
                                      if x.get("kind") == "CallExpr"} & effect)
                        if eff:
                            ops.append(eff)
                    if len(ops) >= 2:
                        off = begin_offset(e)
                        line = text[:off].count(b"\n") + 1
                        col = off - (text.rfind(b"\n", 0, off) + 1) + 1
                        what = callee(e) if k == "CallExpr" else k
                        print(f"{f}:{line}:{col}: error: in {name}: operands of {what} "
                              f"evaluated in no fixed order each call "
                              + "; ".join(", ".join(o) for o in ops))
                        found += 1
    sys.exit(1 if found else 0)


if __name__ == "__main__":
    main()
