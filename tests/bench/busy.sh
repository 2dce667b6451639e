#!/bin/sh
# tests/bench/busy.sh - einc's C target on a busy machine: each model at 1
# and 2 threads, on the idle machine and while a process of the script's
# own spins on the second processor (`taskset -c 1 sh -c 'while :; do :;
# done'`), which the 2-thread runs share.  Everything is pinned with
# taskset (the programs to the first T processors); a Markdown table of
# the medians, einc at 2 threads against 1 under each load, and the load
# average at the start, after the builds and at the end.  PyTorch is not
# timed (cpu.sh does that).  Not part of `make check`; see
# tests/bench/README.md and tests/bench/cpu.py (which does the work).
#
# Usage: tests/bench/busy.sh [cpu.py option]...
#   MODELS   the models (default: mobilenetv2,bert,resnet18,tinylm,dcgan)
#   THREADS  the thread counts (default 1,2)
#   LOAD     idle,busy (the default), or one of them
#   REPEAT, ITERS, BUDGET, BATCH, CC, EINC, EINC_FLAGS as for cpu.sh;
#   EIN_FIXED_THREADS=1 makes the programs run at the count they are
#   given (no choosing of fewer threads): the behaviour before it existed.
# Needs /usr/bin/python3 with torch (for the inputs) and taskset.
here=$(cd "$(dirname "$0")" && pwd)
: "${MODELS:=mobilenetv2,bert,resnet18,tinylm,dcgan}"
: "${LOAD:=idle,busy}"
export MODELS LOAD
exec sh "$here/cpu.sh" --no-torch "$@"
