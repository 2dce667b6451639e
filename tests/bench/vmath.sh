#!/bin/sh
# tests/bench/vmath.sh - the vector functions of the C target's
# vectorized loops, from SLEEF's GNU-ABI library (libsleefgnuabi, whose
# functions have libmvec's names) and from glibc's libmvec:
# tests/bench/vmath.c built against each, for AVX2 and, where the
# processor has it, AVX-512 (the variants gcc calls from the clones of
# target_clones): a Markdown table each (error in ulp, special values, ns
# per element with and without an -inf or out-of-range lane).  Measured,
# einc takes exp from SLEEF and the rest from libmvec (emit/README.md,
# "Vector math").  Needs an x86-64 processor with AVX2, gcc,
# libsleef-dev (else only libmvec's tables) and glibc >= 2.35.
here=$(cd "$(dirname "$0")" && pwd)
cc=${CC:-cc}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
echo "vector math, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'); load average $(cut -d' ' -f1-3 /proc/loadavg)"
isas=avx2
grep -q avx512f /proc/cpuinfo && isas="avx2 avx512f"
for isa in $isas; do
    for lib in sleefgnuabi mvec; do
        echo
        flags="-m$isa"
        [ $isa = avx512f ] && flags="$flags -DAVX512"
        if ! $cc -O2 $flags "$here/vmath.c" -o "$tmp/vmath" -l$lib -lm 2>"$tmp/err"; then
            echo "lib$lib, $isa: no build: $(head -3 "$tmp/err")"
            continue
        fi
        echo "lib$lib, $isa (-l$lib -lm):"
        echo
        "$tmp/vmath"
    done
done
