#!/bin/sh
# tests/bench/versus.sh - the C target of two einc builds against each
# other: each model of examples/ named is compiled by both (`--main`,
# with the einc options given), built with the command on the first line
# of its .c, and run with one thread pinned to one processor
# (`taskset -c CPU ./X --threads 1 --bench ITERS`, OMP_NUM_THREADS,
# OPENBLAS_NUM_THREADS and EIN_FIXED_THREADS 1), the two alternating for
# ROUNDS rounds; a Markdown table of the median of the rounds' medians
# (ms), their range and the ratio.  Inputs and weights are the programs'
# seeded values, the same for both.  Not part of `make check`: it asserts
# nothing (tests/bench/README.md).
#
# Usage: tests/bench/versus.sh OLD_EINC NEW_EINC MODEL... [-- EINC_OPTION...]
#   ROUNDS (5), ITERS (20), CPU (0), CC (the build commands' `cc`)
# e.g.  tests/bench/versus.sh /tmp/einc-before ./einc resnet18 unet -- -D B=16
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
[ $# -ge 3 ] || { sed -n '13,15p' "$0" >&2; exit 2; }
old=$1 new=$2
shift 2
models=
while [ $# -gt 0 ] && [ "$1" != -- ]; do
    models="$models $1"
    shift
done
[ "${1:-}" = -- ] && shift
: "${ROUNDS:=5}" "${ITERS:=20}" "${CPU:=0}"
abs() { case $1 in */*) (cd "$(dirname "$1")" && echo "$PWD/$(basename "$1")") ;;
                   *) command -v "$1" ;; esac; }
old=$(abs "$old") new=$(abs "$new")
tmp=$(mktemp -d "${TMPDIR:-/tmp}/versus.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT HUP INT TERM
cd "$tmp" || exit 99
echo "einc C target, $old (old) against $new (new); options: ${*:-none};"
echo "1 thread on processor $CPU, $ROUNDS rounds of --bench $ITERS; load average" \
     "$(cut -d' ' -f1-3 /proc/loadavg) at the start"
echo
echo "| model | old ms | range | new ms | range | new / old |"
echo "|---|---:|---|---:|---|---:|"
for m in $models; do
    for side in old new; do
        eval e=\$$side
        "$e" --main "$top/examples/$m.ein" "$@" -o "$m.$side.c" || exit 1
        cmd=$(head -1 "$m.$side.c" | sed 's|^/\* build: \(.*\) \*/$|\1|')
        [ -n "$CC" ] && cmd=$(echo "$cmd" | sed "s|^cc |$CC |")
        sh -c "$cmd" || exit 1
    done
    r=0
    while [ $r -lt "$ROUNDS" ]; do
        for side in old new; do
            OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 EIN_FIXED_THREADS=1 \
                taskset -c "$CPU" "./$m.$side" --threads 1 --bench "$ITERS" 2>/dev/null |
                sed -n 's/.*median \([0-9.]*\).*/\1/p' | sed "s/^/$side /"
        done
        r=$((r + 1))
    done | sort -k1,1 -k2n | awk -v m="$m" '
        { v[$1, ++n[$1]] = $2 }
        END {
            for (s = 1; s <= 2; s++) {
                k = s == 1 ? "old" : "new"
                med[k] = v[k, int((n[k] + 1) / 2)]
                rng[k] = sprintf("%.4g-%.4g", v[k, 1], v[k, n[k]])
            }
            printf "| %s | %.4g | %s | %.4g | %s | %.3f |\n", m, med["old"], rng["old"],
                   med["new"], rng["new"], med["new"] / med["old"]
        }'
done
echo
echo "load average $(cut -d' ' -f1-3 /proc/loadavg) at the end"
