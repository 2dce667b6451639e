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
# (stcmp: max |gpu - c| / max |c| < 1e-4), and times it (--bench ITERS: the
# median ms; SLOW_ITERS runs where one run took SLOW seconds or more, 1
# from 4 SLOW).
# The batch variants of the models (NAME_b16, prepare.sh -B) have no C
# reference: their outputs are checked against PyTorch's (rel err <
# TORCH_TOL) where python3 has PyTorch with CUDA.
# Then, in one python3 process (torchbench.py), the PyTorch model of each
# example that has one (bundle's models/) runs on the same inputs on the
# same GPU, f32 with TF32 off: eager, then torch.compile (n/a where it is
# missing, fails, or the compile budget is spent).
# Prints a table of every example and a Markdown table of the models
# against PyTorch, and exits 0 when every example built, ran and matched; 1
# when one did not; 77 when there is no nvcc or no GPU; 2 when the bundle
# is missing.
# Environment: NVCC, NVCC_ARCH (e.g. sm_90), ITERS (20), SLOW (s, 5),
# SLOW_ITERS (5), JOBS (nproc), RUN_TIMEOUT (s, 120), TOL (1e-4),
# TORCH_TOL (1e-3), NO_TORCH=1 to skip PyTorch, TORCH_COMPILE=0 to skip
# torch.compile, COMPILE_BUDGET (s spent in torch.compile in all, 150),
# COMPILE_TIMEOUT (s for one model's compile, 90), TORCH_TIMEOUT (s for
# the whole PyTorch part, 300 + COMPILE_BUDGET), PYTHON (python3),
# TORCH_DEVICE (cuda; cpu runs the PyTorch part on the CPU, to try this
# script without a GPU, see README.md), TUNE_OUT (folder for the tuning
# databases, default BUNDLE/tune), TUNE=0 to skip the tuners.
#
# Each program runs again, twice in one process (--runs 2: its CUDA
# graph replayed, the arena of its intermediates as the first run left
# it), and the second run must give the same bits as the one before
# (einc keeps no nondeterministic cuDNN engine), and every run has
# CUBLAS_EMULATE_SINGLE_PRECISION=1, which fp32 GEMMs must resist
# (CUBLAS_COMPUTE_32F_PEDANTIC; it matters on GPUs with BF16x9 emulation).
# The precision variants NAME.PRECISION are compared with their C target at
# the same precision.  Then the C API's checks NAME_api (NAME_api.cu with
# its driver NAME_api.cpp: streams, align), what emit/README.md promises.
# Tuning: for each model the bundle holds NAME.tune.cu (einc --emit=tuner),
# which is built with the programs and run after them; it times every
# operator of every candidate plan and writes TUNE_OUT/NAME.db, the file
# for `einc --tune-db` (back where einc is; see README.md).

set -u
here=$(cd "$(dirname "$0")" && pwd)
bundle=$(cd "${1:-$here}" 2>/dev/null && pwd) || { echo "check.sh: no folder '${1:-}'" >&2; exit 2; }
ITERS=${ITERS:-20}
SLOW=${SLOW:-5}
SLOW_ITERS=${SLOW_ITERS:-5}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 4)}
RUN_TIMEOUT=${RUN_TIMEOUT:-120}
TOL=${TOL:-1e-4}
TORCH_TOL=${TORCH_TOL:-1e-3}
COMPILE_BUDGET=${COMPILE_BUDGET:-150}
COMPILE_TIMEOUT=${COMPILE_TIMEOUT:-90}
TORCH_TIMEOUT=${TORCH_TIMEOUT:-$((300 + COMPILE_BUDGET))}
PYTHON=${PYTHON:-python3}
TORCH_DEVICE=${TORCH_DEVICE:-cuda}
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
export CUBLAS_EMULATE_SINGLE_PRECISION=1
host_cc=${CC:-cc}
command -v "$host_cc" >/dev/null 2>&1 || host_cc=gcc

work=$(mktemp -d "${TMPDIR:-/tmp}/einc-gpu.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 2
"$host_cc" -O2 -ffp-contract=off "$bundle/stgen.c" -o stgen &&
"$host_cc" -O2 "$bundle/stcmp.c" -o stcmp -lm || { echo "check.sh: cannot build stgen/stcmp" >&2; exit 2; }

names=$(grep -v '^#' "$bundle/MANIFEST" | awk 'NF { print $1 }')
[ -n "$names" ] || { echo "check.sh: the MANIFEST lists no example" >&2; exit 2; }
tuners=
if [ "${TUNE:-1}" != 0 ]; then
    for n in $names; do
        [ -f "$bundle/$n.tune.cu" ] && tuners="$tuners $n.tune"
    done
fi

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
# the biggest .cu first: they take longest
for n in $(cd "$bundle" && for m in $names $tuners; do echo "$(wc -c 2>/dev/null <"$m.cu" || echo 0) $m"; done | sort -rn | awk '{ print $2 }'); do
    ( build_one "$n"; echo $? >"$n.build.rc" ) &
    while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n 2>/dev/null || sleep 0.2; done
done
wait
# the C API's checks (tests/hostcuda/NAME.cpp on NAME.ein: streams, align)
api_report= api_fail=0
for d in "$bundle"/*_api.cpp; do
    [ -f "$d" ] || continue
    a=$(basename "$d" .cpp)
    cp "$bundle/$a.cu" . &&
    "$NVCC" -O2 ${NVCC_ARCH:+-arch=$NVCC_ARCH} -x cu -I. "-DMODEL_CU=\"$a.cu\"" "$d" -o "$a" \
        $(sed -n 's/^ \* Linking its object file takes \(.*\)\.$/\1/p' "$a.cu") \
        >"$a.build.log" 2>&1 &&
    line=$(timeout "$RUN_TIMEOUT" "./$a" 2>"$a.err" | tail -1) || line=
    case $line in
    *" 0 failed") ;;
    *) api_fail=$((api_fail + 1))
       line="FAIL ${line:-$(tail -3 "$a.build.log" "$a.err" 2>/dev/null | tr '\n' ' ')}" ;;
    esac
    api_report="$api_report
  $a: $line"
done
t_built=$(date +%s)

have_torch=0
if [ -z "${NO_TORCH:-}" ] && command -v "$PYTHON" >/dev/null 2>&1 &&
   "$PYTHON" -c 'import torch, numpy, sys; sys.exit(0 if sys.argv[1] != "cuda" or torch.cuda.is_available() else 1)' "$TORCH_DEVICE" 2>/dev/null; then
    have_torch=1
fi

# ---- run, compare, time -----------------------------------------------------------
# the model of an example: NAME.model (a batch variant) or NAME itself
model_of() {
    if [ -f "$bundle/$1.model" ]; then cat "$bundle/$1.model"; else echo "$1"; fi
}
now() { date +%s.%N; }
torch_names=
for n in $names; do
    defs=$(awk -v n="$n" '$1 == n { $1 = ""; sub(/^ /, ""); print; exit }' "$bundle/MANIFEST")
    err=- ms=- status=ok
    : >"$n.detail"
    if [ "$(cat "$n.build.rc")" != 0 ]; then
        status="FAIL: nvcc"
        tail -20 "$n.build.log" >"$n.detail"
    else
        ./stgen "$bundle/$n.spec" input 1 "$n.in.st" >sum.txt &&
        ./stgen "$bundle/$n.spec" weight 1 "$n.wt.st" >>sum.txt
        run_rc=0 run_s=0
        if cmp -s sum.txt "$bundle/$n.sum"; then
            t0=$(now)
            timeout "$RUN_TIMEOUT" "./$n" --inputs "$n.in.st" --weights "$n.wt.st" --outputs "$n.gpu.st" >"$n.run.log" 2>&1
            run_rc=$?
            run_s=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }')
        fi
        if ! cmp -s sum.txt "$bundle/$n.sum"; then
            status="FAIL: inputs differ from prepare.sh's (checksums)"
            echo "stgen made other bytes here than in prepare.sh" >"$n.detail"
        elif [ $run_rc -ne 0 ]; then
            status="FAIL: run (exit $run_rc$([ $run_rc = 124 ] && echo ", timed out"))"
            tail -20 "$n.run.log" >"$n.detail"
        else
            # the same bits again, from the second of two runs in one
            # process (the CUDA graph replayed, the intermediates' arena as
            # the first run left it)
            timeout "$RUN_TIMEOUT" "./$n" --inputs "$n.in.st" --weights "$n.wt.st" --runs 2 --outputs "$n.gpu2.st" >>"$n.run.log" 2>&1 &&
                cmp -s "$n.gpu.st" "$n.gpu2.st" || {
                status="FAIL: a second run gives other bits"
                echo "the second of two runs of $n in one process differs from one run" >"$n.detail"
            }
            rm -f "$n.gpu2.st"
            if [ -f "$bundle/$n.ref.safetensors" ]; then
                ./stcmp "$bundle/$n.ref.safetensors" "$n.gpu.st" "$TOL" >"$n.cmp.log" 2>&1
                rc=$?
                err=$(awk '$1 == "max" { print $2 }' "$n.cmp.log")
                [ -n "$err" ] || err=-
                if [ $rc -eq 1 ]; then
                    case $status in FAIL*) ;; *) status="FAIL: rel err >= $TOL" ;; esac
                    tail -20 "$n.cmp.log" >"$n.detail"
                elif [ $rc -ne 0 ]; then
                    case $status in FAIL*) ;; *) status="FAIL: compare" ;; esac
                    tail -20 "$n.cmp.log" >"$n.detail"
                fi
            else
                err="no C ref"
            fi
            # fewer timed runs for a slow program (the run's wall time, process
            # start and loading included): SLOW_ITERS from SLOW s, 1 from 4 SLOW
            it=$ITERS
            awk -v s="$run_s" -v l="$SLOW" 'BEGIN { exit !(s >= l) }' && it=$SLOW_ITERS
            awk -v s="$run_s" -v l="$SLOW" 'BEGIN { exit !(s >= 4 * l) }' && it=1
            timeout "$RUN_TIMEOUT" "./$n" --inputs "$n.in.st" --weights "$n.wt.st" --bench "$it" >"$n.bench.log" 2>&1
            bench_rc=$?
            if [ $bench_rc -eq 0 ]; then
                ms=$(sed -n 's/.*median \([0-9.][0-9.]*\) ms.*/\1/p' "$n.bench.log" | head -1)
                if [ -n "$ms" ]; then ms=$(printf "%.3f" "$ms"); else ms="?"; fi
                [ "$it" = "$ITERS" ] || ms="$ms ($it)"
            elif [ "$status" = ok ]; then
                status="FAIL: --bench (exit $bench_rc)"
                tail -20 "$n.bench.log" >"$n.detail"
            fi
            if [ $have_torch = 1 ] && [ -f "$bundle/models/$(model_of "$n").py" ]; then
                torch_names="$torch_names $n"
            fi
        fi
    fi
    echo "$err" >"$n.err"
    echo "$ms" >"$n.ms"
    echo "$status" >"$n.status"
    printf "  %-16s %-12s %-22s %s\n" "$n" "$ms" "${defs:-(as declared)}" "$status"
    case " $torch_names " in *" $n "*) ;; *) rm -f "$n.in.st" "$n.wt.st" "$n.gpu.st" ;; esac
done
# ---- the tuners ---------------------------------------------------------------------
if [ -n "$tuners" ]; then
    tune_dir=${TUNE_OUT:-$bundle/tune}
    mkdir -p "$tune_dir" || exit 2
    echo
    echo "== tuning databases (einc --emit=tuner) -> $tune_dir"
    for t in $tuners; do
        n=${t%.tune}
        if [ "$(cat "$t.build.rc")" != 0 ]; then
            echo "FAIL $n: the tuner did not build"; tail -5 "$t.build.log"
            continue
        fi
        timeout "$RUN_TIMEOUT" "./$t" "$tune_dir/$n.db" >"$t.run.log" 2>&1
        rc=$?
        if [ $rc -eq 0 ]; then
            echo "ok   $n: $(grep -cv '^#\|^einc-tune\|^device\|^$' "$tune_dir/$n.db") operators timed"
        else
            echo "FAIL $n: the tuner exited $rc"; tail -5 "$t.run.log"
        fi
    done
fi
t_ran=$(date +%s)

# ---- PyTorch: eager, then torch.compile, in one process ----------------------
if [ -n "$torch_names" ]; then
    copt=
    [ "${TORCH_COMPILE:-1}" = 0 ] && copt="--compile-budget 0"
    echo "check.sh: PyTorch on$torch_names (compile budget ${COMPILE_BUDGET} s)"
    # shellcheck disable=SC2086
    timeout "$TORCH_TIMEOUT" "$PYTHON" "$bundle/torchbench.py" --device "$TORCH_DEVICE" --iters "$ITERS" \
        --compile-budget "$COMPILE_BUDGET" --compile-timeout "$COMPILE_TIMEOUT" $copt \
        "$bundle" "$work" $torch_names >torch.out 2>torch.log
    trc=$?
    [ $trc -eq 124 ] && echo "check.sh: the PyTorch part timed out after $TORCH_TIMEOUT s" >>torch.log
    sed 's/^/  /' torch.out
    [ -s torch.log ] && sed 's/^/  torch: /' torch.log | tail -30
fi
t_end=$(date +%s)

# torch_field NAME eager|compile FIELD: a field of torchbench's line, or
# the n/a reason; "-" for an example that has no PyTorch model, "n/a" when
# torchbench printed no line for it (it stopped or timed out first)
torch_field() {
    case " $torch_names " in *" $1 "*) ;; *) echo -; return ;; esac
    [ -f torch.out ] || { echo n/a; return; }
    awk -v n="$1" -v w="$2" -v f="$3" '
        $1 == n && $2 == w { found = 1
            if ($3 == "n/a") { $1 = $2 = ""; sub(/^ */, ""); print; exit }
            print $(f + 2); exit }
        END { if (!found) print "n/a" }' torch.out
}
ratio() {
    awk -v t="$1" -v e="$2" 'BEGIN {
        if (t + 0 > 0 && e + 0 > 0 && t ~ /^[0-9.]+$/ && e ~ /^[0-9.]+$/) printf "%.2f", t / e
        else print "-" }'
}

# the batch variants: einc against PyTorch where there is no C reference
nok=0 nfail=0
fmt="%-16s %-22s %12s %14s %10s %10s  %s\n"
rows=$(printf "$fmt" example sizes "rel err (C)" "median ms" "torch ms" "torch err" status)
for n in $names; do
    defs=$(awk -v n="$n" '$1 == n { $1 = ""; sub(/^ /, ""); print; exit }' "$bundle/MANIFEST")
    status=$(cat "$n.status") err=$(cat "$n.err") ms=$(cat "$n.ms")
    tms=$(torch_field "$n" eager 1) terr=$(torch_field "$n" eager 2)
    case $tms in "n/a"*) terr=-; tms=n/a ;; esac
    case $terr in "n/a"*) terr=- ;; esac
    if [ "$status" = ok ] && [ "$err" = "no C ref" ]; then
        if [ "$terr" = - ]; then
            status="ok (ran; no reference here)"
        elif ! awk -v e="$terr" -v t="$TORCH_TOL" 'BEGIN { exit !(e ~ /^[0-9.]+(e[-+][0-9]+)?$/ && e + 0 < t + 0) }'; then
            status="FAIL: rel err against PyTorch >= $TORCH_TOL"
        fi
    fi
    case $status in ok*) nok=$((nok + 1)) ;; *) nfail=$((nfail + 1)) ;; esac
    rows="$rows
$(printf "$fmt" "$n" "${defs:-(as declared)}" "$err" "$ms" "$tms" "$terr" "$status")"
done

echo
echo "== einc on $gpu_name: the CUDA target against the C target (rel err < $TOL), median ms of $ITERS runs"
echo "$rows"
for n in $names; do
    if [ -s "$n.detail" ]; then
        echo "== $n: $(cat "$n.status")"
        cat "$n.detail"
    fi
done

# ---- the models against PyTorch --------------------------------------------
if [ -n "$torch_names" ]; then
    echo
    echo "== the models against PyTorch $("$PYTHON" -c 'import torch; print(torch.__version__)' 2>/dev/null) on $gpu_name, f32, TF32 off"
    echo "   median ms of $ITERS runs (einc: of N runs where it says (N)), each between CUDA events;"
    echo "   ratio = PyTorch ms / einc ms (> 1: einc faster); compile s: torch.compile's first call"
    echo
    echo "| model | batch | einc ms | PyTorch eager ms | torch.compile ms | eager / einc | compile / einc | einc vs PyTorch rel err | compile s |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    # one row per model and batch, the batches of a model together
    for n in $torch_names; do
        echo "$(model_of "$n") $(tr ' ' '\n' <"$bundle/$n.cfg" | sed -n 's/^B=//p') $n"
    done | sort -k1,1 -k2,2n | while read -r _ b n; do
        ms=$(cat "$n.ms") e=$(torch_field "$n" eager 1) terr=$(torch_field "$n" eager 2)
        c=$(torch_field "$n" compile 1) cs=$(torch_field "$n" compile 3)
        case $e in "n/a"*) terr=- ;; esac
        case $terr in "n/a"*) terr=- ;; esac
        case $c in "n/a"*) cs=- ;; esac
        printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n" "$(model_of "$n")" "${b:--}" \
            "$ms" "$e" "$c" "$(ratio "$e" "${ms%% *}")" "$(ratio "$c" "${ms%% *}")" "$terr" "$cs"
    done
fi
echo
echo "C API checks:${api_report:- none in the bundle}"
nfail=$((nfail + api_fail))
echo
echo "$nok ok, $nfail failed; build $((t_built - t_start)) s, einc runs $((t_ran - t_built)) s, PyTorch $((t_end - t_ran)) s, total $((t_end - t_start)) s"
[ "$nfail" -eq 0 ]
