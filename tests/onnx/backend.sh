#!/bin/sh
# backend.sh - every ONNX backend test case Debian ships (node/ and
# pytorch-converted/) through einc, with a table of the cases passed,
# failed and unsupported per operator.  From a build folder:
#   ../tests/onnx/backend.sh [--report FILE] [--jobs N]
# (about 20 minutes on two cores).
here=$(cd "$(dirname "$0")" && pwd)
EINC=${EINC:-$PWD/einc}
PB2ST=${PB2ST:-$PWD/tests/onnx/pb2st}
export EINC PB2ST
exec /usr/bin/python3 "$here/backend.py" "$@"
