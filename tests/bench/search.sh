#!/bin/sh
# tests/bench/search.sh - how long the derivation search takes, next to
# EinNet's published search times.  Not part of `make check`.
#
# For each search showcase (tests/derive/showcase/*.ein, full size) and each
# model of examples/ (the programs with a batch const B, at B=1):
#   - the search's states and wall milliseconds in all, and those of its
#     largest search, as `einc --emit=plan-json` reports them, whether any
#     search stopped at its limits ("out_of_budget"), and the number of
#     tensors searched (and of them, those that took the search of an
#     earlier statement of the same form: "reused_from");
#   - the wall time of a whole compile, `einc --emit=c` (median of 3 runs,
#     measured with date +%s%N, so it includes process start and writing);
#   - for the showcases, EinNet's search time at depth 7 with fingerprints
#     (OSDI '23, as the project brief quotes it) and the states it visited.
# The table is Markdown on the standard output.
#
# Usage: tests/bench/search.sh [EINC_OPTION]...
#   EINC      the einc to run (default: ./einc, else einc on PATH)
#   top_srcdir  the source tree (default: two folders up from this script)
# Options are passed to every einc run, e.g. --search-depth=2 or
# --device=a100.
here=$(cd "$(dirname "$0")" && pwd)
: "${top_srcdir:=$(cd "$here/../.." && pwd)}"
if [ -z "$EINC" ]; then
    if [ -x ./einc ]; then EINC=./einc; else EINC=einc; fi
fi
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-search.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT HUP INT TERM

# EinNet, depth 7, fingerprints on: "ms (states)"
einnet() {
    case $1 in
    conv3x3)       echo "7,159 (158k)" ;;
    convtranspose) echo "53,603 (901k)" ;;
    conv5x5)       echo "101,286 (2.23M)" ;;
    g2bmm)         echo "714 (18k)" ;;
    *)             echo "" ;;
    esac
}

now_ns() { date +%s%N; }

# Median of three wall times (ms) of `einc --emit=c`.
compile_ms() {
    for i in 1 2 3; do
        t0=$(now_ns)
        "$EINC" "$@" --emit=c -o "$tmp/out.c" 2>/dev/null || { echo "error"; return; }
        t1=$(now_ns)
        echo $(( (t1 - t0) / 1000 ))
    done | sort -n | sed -n 2p | awk '{ if ($1 == "error") print $1; else printf "%.0f\n", $1 / 1000 }'
}

row() {
    label=$1 file=$2
    shift 2
    if ! "$EINC" "$@" --emit=plan-json "$file" -o "$tmp/p.json" 2>"$tmp/err"; then
        echo "| $label | einc failed: $(head -1 "$tmp/err") | | | | | | | | |"
        return
    fi
    cms=$(compile_ms "$@" "$file")
    "$PY" - "$tmp/p.json" "$label" "$cms" "$(einnet "$label")" <<'PYEOF'
import json, sys
path, label, cms, ref = sys.argv[1:5]
d = json.load(open(path))
s = d["search"]
ts = s["tensors"]
big = max(ts, key=lambda t: t["ms"]) if ts else None
oob = sum(1 for t in ts if t["out_of_budget"])
reused = sum(1 for t in ts if t.get("reused_from"))
first = d["candidates"][0]["ops"] if d["candidates"] else []
# EinNet's derivation for the showcases: (predicate, what): where it is
# among the candidates (0: chosen).
WANT = {
    "conv3x3": lambda o: o["kind"] == "matmul" and o["m"] * o["n"] == 49 * 4608 and o["k"] == 512,
    "convtranspose": lambda o: o["kind"] == "matmul" and {o["m"], o["n"]} == {64, 4096} and o["k"] == 448,
    "conv5x5": lambda o: o["kind"] == "conv2d" and o["r"] == 3 and o["s"] == 3 and o["f"] == 4,
    "g2bmm": lambda o: o["kind"] == "g2bmm" and o["dilation"] == 1 and o["b"] * o["m"] == 80000,
}
found = "-"
if label in WANT:
    at = [i for i, c in enumerate(d["candidates"]) if any(WANT[label](o) for o in c["ops"])]
    found = ("chosen" if at[0] == 0 else "candidate %d of %d" % (at[0], len(d["candidates"]))) if at else "not found"
ops = sorted({o["kind"] for o in first if o["kind"] != "kernel"})
print("| %s | %d%s | %d | %.1f | %s | %s | %s | %s | %s | %s |" % (
    label, len(ts), " (%d reused)" % reused if reused else "", s["states"], s["ms"],
    "%s: %d, %.1f" % (big["tensor"], big["states"], big["ms"]) if big else "-",
    oob if oob else "no", cms, ref or "-", found, ", ".join(ops) or "kernels only"))
PYEOF
}

echo "einc: $("$EINC" --version 2>/dev/null)  options: ${*:-(defaults)}  host: $(uname -m), $(nproc 2>/dev/null || echo '?') cores"
echo
echo "| program | tensors searched (reused: einc(1), --explain) | states | search ms | largest search (tensor: states, ms) | out of budget | \`--emit=c\` ms (median of 3) | EinNet depth 7, ms (states) | EinNet's derivation | library ops chosen |"
echo "|---|---:|---:|---:|---|---|---:|---:|---|---|"
for name in conv3x3 convtranspose conv5x5 g2bmm; do
    row "$name" "$top_srcdir/tests/derive/showcase/$name.ein" "$@"
done
for f in "$top_srcdir"/examples/*.ein; do
    grep -Eq '^const B = 1 *($|#)' "$f" || continue     # the seven models
    n=${f##*/}
    row "${n%.ein}" "$f" -D B=1 "$@"
done
