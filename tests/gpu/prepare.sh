#!/bin/sh
# tests/gpu/prepare.sh - make the bundle that tests/gpu/check.sh runs on a
# machine with an NVIDIA GPU (which need have neither einc nor re2c, Bison
# or PyTorch).  Run it here, where einc is built:
#
#   tests/gpu/prepare.sh [-o DIR] [-j JOBS] [-B BATCH] [-P PRECISION] [NAME...]
#
# For each example NAME (default: every examples/*.ein with an `output`),
# with the -D options of tests/gpu/sizes.txt:
#   DIR/NAME.cu          einc --main NAME.ein -o NAME.cu
#   DIR/NAME.spec        its inputs and weights: names, types, shapes and
#                        value ranges (tests/gpu/bundle.py spec), from which
#                        stgen makes the same bytes on any machine
#   DIR/NAME.sum         the checksums of those input and weight files
#   DIR/NAME.ref.safetensors  the C target's outputs on them (big outputs
#                        sampled, see bundle.py), the reference
#   DIR/NAME.cfg         the constants after -D, for the PyTorch timing
# and, for each NAME with a PyTorch model (tests/models/NAME.py) and a
# batch constant `const B`, a batch variant NAME_bBATCH (-B, default 16;
# -B 0: none) compiled with -D B=BATCH: NAME_bBATCH.cu, .spec, .sum, .cfg
# and NAME_bBATCH.model (the model's name), but no C run and no .ref
# (the C target at batch 16 would take minutes): check.sh times it and
# compares its outputs with PyTorch's.
# For the examples of PREC_NAMES (conv_relu matmul resblock fsrcnn: cuDNN
# and cuBLAS calls) a precision variant NAME.PRECISION (-P, default bf16;
# -P none: none) compiled with --precision=PRECISION, with its C target's
# outputs at that precision as the reference: the two targets round the
# operands of their library calls alike, so they must agree as closely.
# And the C API's checks: for each driver tests/hostcuda/NAME.cpp with a
# NAME.ein (streams, align), NAME_api.cu (einc, no --main) and
# NAME_api.cpp.
# Then DIR/MANIFEST, check.sh, stgen.c, stcmp.c, torchbench.py, stio.py and
# the PyTorch models.  DIR defaults to gpu-bundle/ in the source tree (git
# ignores it).  Environment: EINC, top_srcdir, CC, PYTHON (/usr/bin/python3).

: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${EINC:=${top_builddir:-.}/einc}"
: "${PYTHON:=/usr/bin/python3}"
: "${CC:=cc}"
gpu=$top_srcdir/tests/gpu

out=$top_srcdir/gpu-bundle
jobs=2
batch=16
prec=bf16
PREC_NAMES=${PREC_NAMES:-conv_relu matmul resblock fsrcnn}
one=
while [ $# -gt 0 ]; do
    case $1 in
    -o) out=$2; shift 2 ;;
    -j) jobs=$2; shift 2 ;;
    -B) batch=$2; shift 2 ;;
    -P) prec=$2; shift 2 ;;
    --one) one=$2; shift 2 ;;         # internal: prepare one example
    -h|--help) sed -n '2,37p' "$0"; exit 0 ;;
    -*) echo "prepare.sh: unknown option '$1'" >&2; exit 2 ;;
    *) break ;;
    esac
done

die() {
    echo "prepare.sh: $*" >&2
    exit 1
}

case $EINC in /*) ;; *) EINC=$(pwd)/$EINC ;; esac
[ -x "$EINC" ] || die "no einc at '$EINC' (set EINC)"
"$PYTHON" -c 'import numpy' 2>/dev/null || die "$PYTHON cannot import numpy"
export EINC top_srcdir PYTHON CC

# ---- one example (run through xargs -P) -------------------------------------
if [ -n "$one" ]; then
    n=$one
    work=$out/.work/$n
    mkdir -p "$work" || exit 1
    base=$n variant= precision=
    case $n in *.*) base=${n%.*} precision=${n##*.} ;; esac
    if [ ! -f "$top_srcdir/examples/$base.ein" ]; then
        # NAME_bBATCH: the batch variant of NAME
        base=${n%_b*}
        variant=${n##*_b}
    fi
    src=$top_srcdir/examples/$base.ein
    defs=$(sed -n "s/^${base}[[:space:]][[:space:]]*//p" "$gpu/sizes.txt")
    [ -n "$variant" ] && defs="${defs:+$defs }-D B=$variant"
    # einc's options: the -D ones, and --precision for a precision variant
    eopts="$defs${precision:+ --precision=$precision}"
    log=$work/log
    : >"$log"
    step() {
        echo "+ $*" >>"$log"
        "$@" >>"$log" 2>&1 || { echo "FAIL $n: $*"; tail -15 "$log" | sed 's/^/    /'; exit 1; }
    }
    # shellcheck disable=SC2086
    step "$EINC" $eopts --main "$src" -o "$out/$n.cu"
    if [ -z "$variant" ]; then
        # shellcheck disable=SC2086
        [ -n "$precision" ] || step "$EINC" $defs --emit=tuner "$src" -o "$out/$n.tune.cu"
        # shellcheck disable=SC2086
        step "$EINC" $eopts --main "$src" -o "$work/$n.c"
        cmd=$(sed -n '1s|^/\* build: \(.*\) \*/[[:space:]]*$|\1|p' "$work/$n.c")
        [ -n "$cmd" ] || { echo "FAIL $n: no '/* build: ... */' line in $n.c"; exit 1; }
        case $cmd in "cc "*) cmd="$CC ${cmd#cc }" ;; esac
        step sh -c "cd '$work' && $cmd"
    else
        echo "$base" >"$out/$n.model"
    fi
    # shellcheck disable=SC2086
    "$PYTHON" "$gpu/bundle.py" spec $defs "$src" >"$out/$n.spec" 2>>"$log" ||
        { echo "FAIL $n: bundle.py spec"; exit 1; }
    # shellcheck disable=SC2086
    "$PYTHON" -c 'import sys; sys.path.insert(0, sys.argv[1]); import eindecl
d = {}
for a in sys.argv[3:]:
    if a != "-D": k, v = a.split("="); d[k] = int(v)
p = eindecl.read(sys.argv[2], d)
print(" ".join("%s=%d" % kv for kv in p.consts.items()))' \
        "$top_srcdir/tests/num" "$src" $defs >"$out/$n.cfg" ||
        { echo "FAIL $n: constants"; exit 1; }
    {
        "$work/../stgen" "$out/$n.spec" input 1 "$work/in.st" &&
        "$work/../stgen" "$out/$n.spec" weight 1 "$work/wt.st"
    } >"$out/$n.sum" || { echo "FAIL $n: stgen"; exit 1; }
    if [ -n "$variant" ]; then
        echo "$n $defs" >"$work/manifest"
        echo "ok   $n ($defs) no C run: checked against PyTorch on the GPU"
        rm -f "$work/in.st" "$work/wt.st"
        exit 0
    fi
    t0=$(date +%s)
    step "$work/$n" --inputs "$work/in.st" --weights "$work/wt.st" --outputs "$work/out.st"
    t1=$(date +%s)
    step "$PYTHON" "$gpu/bundle.py" ref "$work/out.st" "$out/$n.ref.safetensors"
    echo "$n $eopts" >"$work/manifest"
    echo "ok   $n ${eopts:+($eopts) }C run $((t1 - t0)) s"
    rm -f "$work/in.st" "$work/wt.st" "$work/out.st" "$work/$n" "$work/$n.c"
    exit 0
fi

# ---- the whole bundle -----------------------------------------------------------
mkdir -p "$out/.work" || die "cannot create $out"
"$CC" -O2 -ffp-contract=off "$gpu/stgen.c" -o "$out/.work/stgen" || die "cannot build stgen"
if [ $# -eq 0 ]; then
    set -- $(cd "$top_srcdir/examples" && grep -l '^[[:space:]]*output\b' *.ein | sed 's/\.ein$//')
fi
names=$*
if [ "$prec" != none ]; then
    for n in $PREC_NAMES; do
        case " $names " in *" $n "*) names="$names $n.$prec" ;; esac
    done
fi
if [ "$batch" != 0 ]; then
    for n in $names; do
        [ -f "$top_srcdir/tests/models/$n.py" ] &&
        grep -Eq '^const B = ' "$top_srcdir/examples/$n.ein" 2>/dev/null &&
        names="$names ${n}_b$batch"
    done
fi
echo "prepare.sh: $names -> $out"
rm -f "$out/MANIFEST"
printf '%s\n' $names | xargs -P "$jobs" -I{} sh "$0" -o "$out" --one {}
status=$?
{
    echo "# made by tests/gpu/prepare.sh on $(date -u '+%Y-%m-%d %H:%M UTC'); $("$EINC" --version 2>/dev/null | head -1)"
    for n in $names; do
        [ -f "$out/.work/$n/manifest" ] && cat "$out/.work/$n/manifest"
    done
} >"$out/MANIFEST"
cp "$gpu/check.sh" "$gpu/stgen.c" "$gpu/stcmp.c" "$gpu/torchbench.py" \
   "$top_srcdir/tests/num/stio.py" "$out/" || die "cannot copy the scripts"
# the drivers of the C API (tests/hostcuda/NAME.cpp on NAME.ein, no --main)
for d in "$top_srcdir"/tests/hostcuda/*.cpp; do
    a=$(basename "$d" .cpp)
    [ -f "${d%.cpp}.ein" ] || continue
    cp "$d" "$out/${a}_api.cpp" && "$EINC" "${d%.cpp}.ein" -o "$out/${a}_api.cu" ||
        die "cannot bundle the C API check $a"
done
mkdir -p "$out/models" && cp "$top_srcdir"/tests/models/*.py "$out/models/"
rm -rf "$out/.work"
du -sh "$out" | sed 's/^/prepare.sh: bundle size /'
[ "$status" -eq 0 ] || die "some examples failed (see above)"
echo "prepare.sh: done; on the GPU machine run: bash $(basename "$out")/check.sh"
