#!/bin/sh
# fuzz-st.sh - run the libFuzzer harness of the safetensors reader
# (tests/fuzz/fuzz_safetensors.c) for a while, from a build folder:
#
#     make fuzz-st && SRCDIR/tests/runtime/fuzz-st.sh [SECONDS [FUZZER ARGS]]
#
# It works in tests/runtime/fuzz-st.dir: a copy of the seed corpus that
# grows as the fuzzer finds new paths, and crashes/ for whatever it finds.
# A crasher, once fixed, goes into tests/fuzz/corpus-st/ as crash-NAME so
# `make check` replays it for ever.  Without `make fuzz-st` it builds the
# harness itself with clang.  FUZZ_ST=file runs the harness of the reader
# on the file system instead (tests/fuzz/fuzz_st_file.c: regular files,
# truncated copies, pipes; make fuzz-st-file).
set -e
secs=${1:-60}
[ $# -gt 0 ] && shift
src=$(cd "$(dirname "$0")/../.." && pwd)
if [ "${FUZZ_ST:-memory}" = file ]; then
    bin=tests/runtime/fuzz_st_file harness=fuzz_st_file.c work=tests/runtime/fuzz-st-file.dir
else
    bin=tests/runtime/fuzz_st harness=fuzz_safetensors.c work=tests/runtime/fuzz-st.dir
fi
if [ ! -x "$bin" ]; then
    mkdir -p tests/runtime
    ${FUZZ_CC:-clang} -g -O1 -fsanitize=fuzzer,address,undefined \
        -fno-sanitize-recover=all -I"$src" -o "$bin" \
        "$src/tests/fuzz/$harness" "$src/runtime/st.c"
fi
mkdir -p "$work/corpus" "$work/crashes"
cp "$src"/tests/fuzz/corpus-st/* "$work/corpus/"
# words of the format, so the fuzzer need not guess them byte by byte
cat > "$work/st.dict" <<'DICT'
"{"
"}"
"["
"]"
":"
","
"\""
"\"dtype\""
"\"shape\""
"\"data_offsets\""
"\"__metadata__\""
"\"F32\""
"\"F16\""
"\"BF16\""
"\"I64\""
"\"BOOL\""
"\\u"
"\\ud83d\\ude00"
"true"
"null"
"-0"
"1e9"
"18446744073709551615"
"9223372036854775807"
"4294967296"
DICT
exec "$bin" -max_total_time="$secs" -max_len=2048 -dict="$work/st.dict" \
    -artifact_prefix="$work/crashes/" -print_final_stats=1 "$@" \
    "$work/corpus"
