#!/bin/sh
# launches.sh - the work a CUDA run queues, counted by the mocks: for each
# example built by hostcuda.test, the pieces of work a steady run (weights
# unchanged) puts on its stream with its CUDA graph and without one
# (EIN_NO_GRAPH=1): kernels, cuBLAS and cuDNN calls, copies, graph
# launches: what a GPU would see as launches.  A run's count is the
# difference between `--bench 1` (two more runs: the warm-up and one) and
# none, halved.  Not part of `make check`:
#     KEEP=1 make check TESTS=tests/emit/hostcuda.test HOSTCUDA_ARGS=...
#     sh tests/hostcuda/launches.sh WORK_FOLDER [NAME...]
# Prints a Markdown table (sizes are hostcuda.test's: tests/hostcuda/sizes.txt).
work=${1:?usage: launches.sh WORK_FOLDER [NAME...]}
shift
cd "$work" || exit 1
names=$*
[ -n "$names" ] || names=$(ls examples_*.hc | sed 's/^examples_//; s/\.hc$//')
count() {       # count ERRFILE KEY
    awk -v k="$2" 'index($0, "hostcuda: count: " k " ") == 1 { s += $NF } END { print s + 0 }' "$1"
}
echo "| example | launches per run, plain | of which kernels | per run, graph | nodes of the graph |"
echo "|---|---|---|---|---|"
for n in $names; do
    b=examples_$n
    [ -x "$b.hc" ] || { echo "| $n | not built | | | |"; continue; }
    io="--inputs $b.in.st --weights $b.wt.st"
    for mode in plain graph; do
        env=
        [ $mode = plain ] && env=EIN_NO_GRAPH=1
        # shellcheck disable=SC2086
        env $env "./$b.hc" $io --outputs /dev/null >/dev/null 2>"$b.l1.$mode.err"
        # shellcheck disable=SC2086
        env $env "./$b.hc" $io --outputs /dev/null --bench 1 >/dev/null 2>"$b.l3.$mode.err"
    done
    per() {     # per MODE KEY: per steady run
        echo $(( ($(count "$b.l3.$1.err" "$2") - $(count "$b.l1.$1.err" "$2")) / 2 ))
    }
    echo "| $n | $(per plain 'work queued') | $(per plain 'kernel launches') |" \
         "$(per graph 'work queued') | $(count "$b.l1.graph.err" 'captured work') |"
done
