#!/bin/sh
# tests/bench/cpu.sh - einc's C target against PyTorch eager on the CPU,
# for every model of examples/ that has a PyTorch reference in
# tests/models/, at 1 and 2 threads, each side pinned with taskset: a
# Markdown table of the median ms of each, their ratio, einc at 2 threads
# against 1, the max relative error of einc's outputs against PyTorch's,
# and the geometric mean of the ratios.  Not part of `make check`; see
# tests/bench/README.md and tests/bench/cpu.py (which does the work).
#
# Usage: tests/bench/cpu.sh [cpu.py option]...
#   EINC     the einc to run (default: ./einc, else einc on PATH)
#   MODELS   the models, comma- or space-separated (default: all)
#   THREADS  the thread counts (default 1,2)
#   REPEAT   rounds per model and thread count, the table has the median (3)
#   ITERS    timed runs per side and round at most (default 10)
#   BUDGET   seconds of timed runs per side, round and model (default 10): a
#            model gets fewer than ITERS runs (at least 1) where ITERS would
#            take longer
#   BATCH    the batch constant B (default 1)
#   CC       the C compiler for the build commands' `cc`
#   EINC_FLAGS  extra einc options, blank-separated (e.g. --device=h200)
#   OPENBLAS_CORETYPE  passed to both sides: OpenBLAS's kernels where it
#            does not recognise the processor (e.g. SkylakeX)
# The table goes to the standard output, progress to the standard error.
# Needs /usr/bin/python3 with torch (Debian's python3-torch) and taskset.
here=$(cd "$(dirname "$0")" && pwd)
if [ -z "$EINC" ]; then
    if [ -x ./einc ]; then EINC=./einc; else EINC=$(command -v einc); fi
fi
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
"$PY" -c 'import torch' 2>/dev/null || { echo "cpu.sh: $PY has no torch" >&2; exit 77; }
top=$(cd "$here/../.." && pwd)
EINC_STDLIB=$(cd "${EINC_STDLIB:-$top/lib}" && pwd) || exit 1
export EINC_STDLIB
exec "$PY" "$here/cpu.py" --einc "$EINC" "$@"
