#!/bin/sh
# tests/bench/cpu.sh - einc's C target against PyTorch on the CPU, one
# thread each, for the seven models of examples/: a Markdown table of the
# median ms of each, their ratio and the max relative error of einc's
# outputs against PyTorch's.  Not part of `make check`; see
# tests/bench/README.md and tests/bench/cpu.py (which does the work).
#
# Usage: tests/bench/cpu.sh [cpu.py option]...
#   EINC     the einc to run (default: ./einc, else einc on PATH)
#   MODELS   the models, comma- or space-separated (default: all seven)
#   ITERS    timed runs per side at most (default 10)
#   BUDGET   seconds of timed runs per side and model (default 20): a model
#            gets fewer than ITERS runs (at least 1) where ITERS would take
#            longer
#   BATCH    the batch constant B (default 1)
#   CC       the C compiler for the build commands' `cc`
#   EINC_FLAGS  extra einc options, blank-separated (e.g. --device=cpu)
# The table goes to the standard output, progress to the standard error.
# Needs /usr/bin/python3 with torch (Debian's python3-torch).
here=$(cd "$(dirname "$0")" && pwd)
if [ -z "$EINC" ]; then
    if [ -x ./einc ]; then EINC=./einc; else EINC=$(command -v einc); fi
fi
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
"$PY" -c 'import torch' 2>/dev/null || { echo "cpu.sh: $PY has no torch" >&2; exit 77; }
# one thread each: einc's OpenMP and BLAS, and PyTorch (cpu.py also calls
# torch.set_num_threads(1))
OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 GOTO_NUM_THREADS=1
export OMP_NUM_THREADS OPENBLAS_NUM_THREADS MKL_NUM_THREADS GOTO_NUM_THREADS
exec "$PY" "$here/cpu.py" --einc "$EINC" "$@"
