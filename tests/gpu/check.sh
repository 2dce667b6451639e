#!/bin/bash
# tests/gpu/check.sh - the GPU check, for a machine with an NVIDIA GPU and
# the CUDA toolkit (no einc, re2c, Bison or PyTorch needed there).
#
#   tests/gpu/prepare.sh            # here, where einc is built: makes gpu-bundle/
#   bash gpu-bundle/check.sh [BUNDLE]   # there
#
# For every example in BUNDLE/MANIFEST it builds NAME.cu with the command on
# the file's first line (nvcc, -arch set to this GPU's), regenerates the
# inputs and weights that prepare.sh gave the C target (stgen, checksums
# compared), runs the program, compares its outputs with the C target's
# (stcmp: max |gpu - c| / max |c| < 1e-4), times it (--bench ITERS: the
# median ms), and where python3 has PyTorch with CUDA, times the PyTorch
# model of the example on the same inputs too.  Prints a table and exits 0
# when every example built, ran and matched; 1 when one did not; 77 when
# there is no nvcc or no GPU; 2 when the bundle is missing.
# Environment: NVCC, NVCC_ARCH (e.g. sm_90), ITERS (20), JOBS (nproc),
# RUN_TIMEOUT (s, 120), TOL (1e-4), NO_TORCH=1 to skip the PyTorch column.

set -u
here=$(cd "$(dirname "$0")" && pwd)
bundle=$(cd "${1:-$here}" 2>/dev/null && pwd) || { echo "check.sh: no folder '${1:-}'" >&2; exit 2; }
ITERS=${ITERS:-20}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 4)}
RUN_TIMEOUT=${RUN_TIMEOUT:-120}
TOL=${TOL:-1e-4}
t_start=$(date +%s)

if [ ! -f "$bundle/MANIFEST" ]; then
    echo "check.sh: no MANIFEST in $bundle: make the bundle with tests/gpu/prepare.sh" \
         "where einc is built, and copy it here" >&2
    exit 2
fi
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
if [ ! -x "$NVCC" ]; then
    echo "check.sh: no nvcc (set NVCC): skipped" >&2
    exit 77
fi
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
    echo "check.sh: no NVIDIA GPU (nvidia-smi -L failed): skipped" >&2
    exit 77
fi
gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
if [ -z "${NVCC_ARCH:-}" ]; then
    cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
    [ -n "$cap" ] && NVCC_ARCH=sm_$cap
fi
host_cc=${CC:-cc}
command -v "$host_cc" >/dev/null 2>&1 || host_cc=gcc

work=$(mktemp -d "${TMPDIR:-/tmp}/einc-gpu.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 2
"$host_cc" -O2 -ffp-contract=off "$bundle/stgen.c" -o stgen &&
"$host_cc" -O2 "$bundle/stcmp.c" -o stcmp -lm || { echo "check.sh: cannot build stgen/stcmp" >&2; exit 2; }

names=$(grep -v '^#' "$bundle/MANIFEST" | awk 'NF { print $1 }')
[ -n "$names" ] || { echo "check.sh: the MANIFEST lists no example" >&2; exit 2; }

# ---- build every program, in parallel ----------------------------------------
build_one() {
    local n=$1 cmd
    cp "$bundle/$n.cu" . || return 1
    cmd=$(sed -n '1s|^// build: \(.*\)$|\1|p; 1s|^/\* build: \(.*\) \*/.*$|\1|p' "$n.cu")
    if [ -z "$cmd" ]; then
        echo "no '// build:' line in $n.cu" >"$n.build.log"
        return 1
    fi
    case $cmd in nvcc\ *) cmd="$NVCC ${cmd#nvcc }" ;; esac
    [ -n "${NVCC_ARCH:-}" ] && cmd=$(echo "$cmd" | sed "s/-arch=[a-z_0-9]*/-arch=$NVCC_ARCH/")
    echo "$cmd" >"$n.build.log"
    eval "$cmd" >>"$n.build.log" 2>&1
}
echo "check.sh: $gpu_name${NVCC_ARCH:+ ($NVCC_ARCH)}; building $(echo $names | wc -w) programs with $NVCC"
for n in $names; do
    ( build_one "$n"; echo $? >"$n.build.rc" ) &
    while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n 2>/dev/null || sleep 0.2; done
done
wait
t_built=$(date +%s)

have_torch=0
if [ -z "${NO_TORCH:-}" ] && command -v python3 >/dev/null 2>&1 &&
   python3 -c 'import torch, numpy, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    have_torch=1
fi

# ---- run, compare, time -----------------------------------------------------------
fmt="%-16s %-14s %12s %10s %10s %11s  %s\n"
rows=$(printf "$fmt" example sizes "max rel err" "median ms" "torch ms" "torch err" status)
nok=0 nfail=0
details=
# fail WHAT LOG: mark the current example failed, keep LOG's tail
fail() {
    status="FAIL: $1"
    details="$details
== $n: $1
$(tail -20 "$2" 2>/dev/null)"
}
for n in $names; do
    defs=$(awk -v n="$n" '$1 == n { $1 = ""; sub(/^ /, ""); print; exit }' "$bundle/MANIFEST")
    sizes=${defs:-(as declared)}
    err=- ms=- tms=- terr=- status=ok
    if [ "$(cat "$n.build.rc")" != 0 ]; then
        fail "nvcc" "$n.build.log"
    else
        ./stgen "$bundle/$n.spec" input 1 in.st >sum.txt &&
        ./stgen "$bundle/$n.spec" weight 1 wt.st >>sum.txt
        run_rc=0
        if cmp -s sum.txt "$bundle/$n.sum"; then
            timeout "$RUN_TIMEOUT" "./$n" --inputs in.st --weights wt.st --outputs gpu.st >"$n.run.log" 2>&1
            run_rc=$?
        fi
        if ! cmp -s sum.txt "$bundle/$n.sum"; then
            echo "stgen made other bytes here than in prepare.sh" >sum.log
            fail "inputs differ from prepare.sh's (checksums)" sum.log
        elif [ $run_rc -ne 0 ]; then
            fail "run (exit $run_rc$([ $run_rc = 124 ] && echo ", timed out"))" "$n.run.log"
        else
            ./stcmp "$bundle/$n.ref.safetensors" gpu.st "$TOL" >"$n.cmp.log" 2>&1
            rc=$?
            err=$(awk '$1 == "max" { print $2 }' "$n.cmp.log")
            [ -n "$err" ] || err=-
            if [ $rc -eq 1 ]; then
                fail "rel err >= $TOL" "$n.cmp.log"
            elif [ $rc -ne 0 ]; then
                fail "compare" "$n.cmp.log"
            fi
            timeout "$RUN_TIMEOUT" "./$n" --inputs in.st --weights wt.st --bench "$ITERS" >"$n.bench.log" 2>&1
            bench_rc=$?
            if [ $bench_rc -eq 0 ]; then
                ms=$(sed -n 's/.*median \([0-9.][0-9.]*\) ms.*/\1/p' "$n.bench.log" | head -1)
                if [ -n "$ms" ]; then ms=$(printf "%.3f" "$ms"); else ms="?"; fi
            elif [ "$status" = ok ]; then
                fail "--bench (exit $bench_rc)" "$n.bench.log"
            fi
            if [ $have_torch = 1 ]; then
                if tb=$(timeout "$RUN_TIMEOUT" python3 "$bundle/torchbench.py" "$bundle" "$n" in.st wt.st gpu.st "$ITERS" 2>"$n.torch.log"); then
                    tms=$(echo "$tb" | awk '{ print $1 }')
                    terr=$(echo "$tb" | awk '{ print $2 }')
                elif [ -s "$n.torch.log" ]; then
                    tms="error"
                fi
            fi
        fi
    fi
    if [ "$status" = ok ]; then nok=$((nok + 1)); else nfail=$((nfail + 1)); fi
    row=$(printf "$fmt" "$n" "$sizes" "$err" "$ms" "$tms" "$terr" "$status")
    echo "$row"
    rows="$rows
$row"
    rm -f in.st wt.st gpu.st
done

t_end=$(date +%s)
echo
echo "== einc on $gpu_name: the CUDA target against the C target (rel err < $TOL), median of $ITERS runs"
echo "$rows"
[ -n "$details" ] && echo "$details"
echo
echo "$nok ok, $nfail failed; build $((t_built - t_start)) s, total $((t_end - t_start)) s"
[ "$nfail" -eq 0 ]
