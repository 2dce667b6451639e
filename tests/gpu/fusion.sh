#!/bin/bash
# tests/gpu/fusion.sh - convolution epilogues in cuDNN's graph on a real
# GPU: before and after, timed.  Two halves, as check.sh:
#
#   tests/gpu/fusion.sh prepare BASE_EINC [-o DIR] [NAME...]   # here
#   bash DIR/fusion.sh run [DIR]                               # on the GPU
#
# prepare: for each example NAME (default: those with cuDNN convolutions
# that carry epilogues: conv_relu resblock resnet18 unet mobilenetv2
# fsrcnn) at --precision=fp32 and tf32, NAME.PREC.after.cu from this
# tree's einc (the epilogues in the convolutions' graphs, the pass kept
# for where no engine takes a graph) and NAME.PREC.before.cu from
# BASE_EINC (an einc without them: a convolution, then its epilogue's
# pass), both --main; and fusion_probe.cu, stcmp.c and this script.
# DIR defaults to fusion-bundle/ in the source tree.
#
# run: builds everything with nvcc (-arch this GPU's; cuDNN's headers and
# library found where they are, pip's wheel included), runs fusion_probe
# (which engines take each graph, at fp32 and tf32, forward and backward
# data; NaN through RELU_FWD), then each program before and after on the
# same seeded inputs and weights (--seed 1): the outputs compared (stcmp,
# max |after - before| / max |before| < TOL, 1e-4), the notes the after
# program printed (a graph no engine took), and --bench ITERS (50) median
# ms of each.  Prints a Markdown table.  Environment: NVCC, NVCC_ARCH,
# ITERS, TOL, JOBS.
set -u
mode=${1:?usage: fusion.sh prepare BASE_EINC [-o DIR] [NAME...] | fusion.sh run [DIR]}
shift
here=$(cd "$(dirname "$0")" && pwd)

if [ "$mode" = prepare ]; then
    base=${1:?usage: fusion.sh prepare BASE_EINC [-o DIR] [NAME...]}
    shift
    top=$(cd "$here/../.." && pwd)
    out=$top/fusion-bundle
    if [ "${1:-}" = -o ]; then out=$2; shift 2; fi
    einc=${EINC:-$top/einc}
    names=${*:-conv_relu resblock resnet18 unet mobilenetv2 fsrcnn}
    mkdir -p "$out" || exit 2
    for n in $names; do
        for p in fp32 tf32; do
            "$einc" --main --precision=$p "$top/examples/$n.ein" -o "$out/$n.$p.after.cu" &&
            "$base" --main --precision=$p "$top/examples/$n.ein" -o "$out/$n.$p.before.cu" ||
                exit 1
        done
    done
    cp "$here/fusion_probe.cu" "$here/stcmp.c" "$here/fusion.sh" "$out/" || exit 2
    echo "$names" >"$out/NAMES"
    echo "fusion.sh: $out ($(du -sh "$out" | cut -f1))"
    exit 0
fi

bundle=$(cd "${1:-$here}" && pwd) || exit 2
ITERS=${ITERS:-50}
TOL=${TOL:-1e-4}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 4)}
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
[ -x "$NVCC" ] || { echo "fusion.sh: no nvcc" >&2; exit 77; }
nvidia-smi -L >/dev/null 2>&1 || { echo "fusion.sh: no GPU" >&2; exit 77; }
if [ -z "${NVCC_ARCH:-}" ]; then
    cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d ' .')
    NVCC_ARCH=sm_$cap
fi
# cuDNN where it is: the toolkit's, the system's, or pip's wheel (whose
# library has no unversioned name: a link to it here)
work=$(mktemp -d) || exit 2
cd "$work" || exit 2
inc= lib=
for d in /usr/local/cuda/include /usr/include $(find / -path /proc -prune -o -name cudnn.h \
        -path '*include*' -print 2>/dev/null | xargs -r -n1 dirname); do
    if [ -f "$d/cudnn.h" ]; then inc=$d; break; fi
done
so=$(find / -path /proc -prune -o -name 'libcudnn.so*' -print 2>/dev/null | sort | head -1)
[ -n "$inc" ] && [ -n "$so" ] || { echo "fusion.sh: no cuDNN (cudnn.h: '$inc', libcudnn: '$so')" >&2; exit 77; }
lib=$(dirname "$so")
mkdir -p lib && ln -sf "$so" lib/libcudnn.so
export CPATH=$inc${CPATH:+:$CPATH} LIBRARY_PATH=$work/lib:$lib${LIBRARY_PATH:+:$LIBRARY_PATH}
export LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
echo "fusion.sh: $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1) ($NVCC_ARCH), cuDNN $inc $so"
cc -O2 "$bundle/stcmp.c" -o stcmp -lm || exit 2
build() {       # build NAME: its first line's command, -arch this GPU's
    cp "$bundle/$1.cu" . || return 1
    local cmd
    cmd=$(sed -n '1s|^// build: \(.*\)$|\1|p' "$1.cu" | sed "s/-arch=[a-z_0-9]*/-arch=$NVCC_ARCH/")
    eval "$NVCC ${cmd#nvcc }" >"$1.build.log" 2>&1
}
progs=$(cd "$bundle" && ls *.after.cu *.before.cu | sed 's/\.cu$//')
( "$NVCC" -O2 -arch="$NVCC_ARCH" "$bundle/fusion_probe.cu" -o fusion_probe -lcudnn \
      >probe.build.log 2>&1; echo $? >probe.rc ) &
for p in $progs; do
    ( build "$p"; echo $? >"$p.rc" ) &
    while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n 2>/dev/null || sleep 0.2; done
done
wait
echo "## fusion_probe"
if [ "$(cat probe.rc)" = 0 ]; then
    timeout 120 ./fusion_probe
else
    tail -5 probe.build.log
fi
echo
echo "| example | precision | before ms | after ms | rel err | graphs refused (notes) |"
echo "|---|---|---|---|---|---|"
ms() {          # ms PROG: --bench's median
    timeout 300 "./$1" --seed 1 --bench "$ITERS" --outputs /dev/null 2>/dev/null |
        sed -n 's/.*median \([0-9.]*\) ms.*/\1/p' | head -1
}
for n in $(cat "$bundle/NAMES"); do
    for p in fp32 tf32; do
        b=$n.$p.before a=$n.$p.after
        if [ "$(cat "$b.rc")" != 0 ] || [ "$(cat "$a.rc")" != 0 ]; then
            echo "| $n | $p | build failed: $(tail -2 "$b.build.log" "$a.build.log" | tr '\n' ' ') |"
            continue
        fi
        timeout 300 "./$b" --seed 1 --outputs "$b.st" >/dev/null 2>"$b.err"
        timeout 300 "./$a" --seed 1 --outputs "$a.st" >/dev/null 2>"$a.err"
        err=$(./stcmp "$b.st" "$a.st" "$TOL" 2>&1 | awk '$1 == "max" { print $2 }')
        ./stcmp "$b.st" "$a.st" "$TOL" >/dev/null 2>&1 || err="FAIL ${err:-no output}"
        notes=$(grep -c 'note: .*pointwise' "$a.err")
        echo "| $n | $p | $(ms "$b") | $(ms "$a") | $err | $notes $(grep -m1 'note:' "$a.err" | cut -c1-160) |"
    done
done
