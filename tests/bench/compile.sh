#!/bin/sh
# tests/bench/compile.sh - how long einc takes to compile each search
# showcase (tests/derive/showcase/*.ein) and each of the seven models of
# examples/ (at B=1), and how long the C compiler takes on what it writes.
# Not part of `make check`: it prints a Markdown table and asserts nothing.
#
# Columns: the tensors searched (and of them, those whose search was that
# of an earlier statement of the same form, reused: einc(1), --explain),
# the states the search visited and its wall ms in all, summed over the
# searches, which run in threads (the "search" field
# of `einc --emit=plan-json`), the wall ms of a whole
# `einc FILE -o x.c` (median of 3 runs, process start and writing
# included), the part of it outside the search (with -j1 as an option:
# at more threads the search ms is theirs summed), the size of x.c, and the
# wall seconds of building x.c with the command on its first line (once).
#
# Usage: tests/bench/compile.sh [EINC_OPTION]...
#   EINC        the einc to run (default: ./einc, else einc on PATH)
#   top_srcdir  the source tree (default: two folders up from this script)
#   CC          the C compiler for the build command's `cc`
#   NAMES       programs to run (showcase or model names, default all)
# Options are passed to every einc run, e.g. --search-depth=2.
here=$(cd "$(dirname "$0")" && pwd)
: "${top_srcdir:=$(cd "$here/../.." && pwd)}"
if [ -z "$EINC" ]; then
    if [ -x ./einc ]; then EINC=./einc; else EINC=einc; fi
fi
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-compile.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT HUP INT TERM

now_ns() { date +%s%N; }

# wall ms of `einc ARGS... -o x.c`, median of three; "error" on a failure
einc_ms() {
    for _ in 1 2 3; do
        t0=$(now_ns)
        "$EINC" "$@" -o "$tmp/x.c" 2>"$tmp/err" || { echo error; continue; }
        t1=$(now_ns)
        echo $(( (t1 - t0) / 1000 ))
    done | sort -n | sed -n 2p | awk '{ if ($1 == "error") print $1; else printf "%.0f\n", $1 / 1000 }'
}

want() {
    [ -z "$NAMES" ] && return 0
    for w in $NAMES; do [ "$w" = "$1" ] && return 0; done
    return 1
}

row() {
    label=$1 file=$2
    shift 2
    want "$label" || return 0
    if ! "$EINC" "$@" --emit=plan-json "$file" -o "$tmp/p.json" 2>"$tmp/err"; then
        echo "| $label | einc failed: $(head -1 "$tmp/err" | tr '|' /) | | | | | | |"
        return
    fi
    ems=$(einc_ms "$@" "$file")
    if [ "$ems" = error ] || [ ! -s "$tmp/x.c" ]; then
        echo "| $label | | | einc -o x.c failed: $(head -1 "$tmp/err" | tr '|' /) | | | | |"
        return
    fi
    lines=$(wc -l <"$tmp/x.c")
    cmd=$(sed -n '1s|^/\* build: \(.*\) \*/[[:space:]]*$|\1|p' "$tmp/x.c")
    case $cmd in "cc "*) [ -n "$CC" ] && cmd="$CC ${cmd#cc }" ;; esac
    if [ -z "$cmd" ]; then
        ccs="no build line"
    else
        t0=$(now_ns)
        if (cd "$tmp" && eval "$cmd") >"$tmp/cc.log" 2>&1; then
            t1=$(now_ns)
            ccs=$(awk -v d=$((t1 - t0)) 'BEGIN { printf "%.1f", d / 1e9 }')
        else
            ccs="failed"
        fi
    fi
    "$PY" - "$tmp/p.json" "$label" "$ems" "$lines" "$ccs" <<'PYEOF'
import json, sys
path, label, ems, lines, ccs = sys.argv[1:6]
s = json.load(open(path))["search"]
ts = s["tensors"]
oob = sum(1 for t in ts if t["out_of_budget"])
reused = sum(1 for t in ts if t.get("reused_from"))
print("| %s | %d%s | %d%s | %.1f | %s | %.0f | %s | %s |" % (
    label, len(ts), " (%d reused)" % reused if reused else "", s["states"], " (%d out of budget)" % oob if oob else "",
    s["ms"], ems, max(0.0, float(ems) - s["ms"]), lines, ccs))
PYEOF
}

echo "einc: $("$EINC" --version 2>/dev/null | head -1)  options: ${*:-(defaults)}"
echo "host: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -1), $(nproc 2>/dev/null || echo '?') cores, load average $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"
echo
echo "| program | tensors searched (a search of the same form reused) | states | search ms | \`einc -o x.c\` ms (median of 3) | outside the search, ms | x.c lines | cc x.c, s |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
for name in conv3x3 convtranspose conv5x5 g2bmm; do
    row "$name" "$top_srcdir/tests/derive/showcase/$name.ein" "$@"
done
for n in infogan dcgan fsrcnn csrnet resnet18 longformer gcn; do
    f=$top_srcdir/examples/$n.ein
    [ -f "$f" ] || continue
    if grep -Eq '^const B = ' "$f"; then
        row "$n" "$f" -D B=1 "$@"
    else
        row "$n" "$f" "$@"
    fi
done
