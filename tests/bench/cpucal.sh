#!/bin/sh
# tests/bench/cpucal.sh - measures, on this machine and one thread, what
# the cost model's CPU figures (derive/pricing/cost.c, `einc --device=cpu`) stand
# for, and prints them fitted, with the model's estimates next to the
# measured times: a Markdown report on the standard output.  Not part of
# `make check`; see tests/bench/README.md and tests/bench/cpucal.py (which
# does the work; cpucal_gemm.c times cblas_sgemm, cpuprof.py times an einc
# program operator by operator).
#
# Usage: tests/bench/cpucal.sh [cpucal.py option]...   (--quick, --keep DIR)
#   EINC     the einc to run (default: ./einc, else einc on PATH)
#   CC       the C compiler (default cc)
# Needs /usr/bin/python3, OpenBLAS (-lopenblas) and cblas.h.  About a
# minute on an idle machine; run it when the machine is otherwise idle.
here=$(cd "$(dirname "$0")" && pwd)
if [ -z "$EINC" ]; then
    if [ -x ./einc ]; then EINC=./einc; else EINC=$(command -v einc); fi
fi
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 GOTO_NUM_THREADS=1
export OMP_NUM_THREADS OPENBLAS_NUM_THREADS MKL_NUM_THREADS GOTO_NUM_THREADS
exec "$PY" "$here/cpucal.py" --einc "$EINC" "$@"
