#!/bin/sh
# weft's `bench` runs weft-bench beside it (tools/cmd_bench_exec.c): the
# scenarios list through weft, the global --backend reaches weft-bench, a
# weft without weft-bench beside it says so and fails (exit 1), and weft
# itself links none of the toolkit's math libraries.
# usage: test_cli_bench.sh WEFT SCRATCH_DIR
set -u
weft=$1
dir=$2/cli_bench
fail() { echo "FAIL: $*"; exit 1; }

out=$("$weft" --backend host bench --list) || fail "weft bench --list failed"
echo "$out" | grep -q "^  switch " || fail "no scenario list: $out"
out=$("$weft" --backend host bench --quick --repeat 1 switch 2>&1) ||
  fail "weft --backend host bench switch failed: $out"
echo "$out" | grep -q "weft_yield ping-pong" || fail "no switch rows: $out"
echo "$out" | grep -q "backend host" || fail "--backend host did not reach weft-bench: $out"

rm -rf "$dir" && mkdir -p "$dir" && cp "$weft" "$dir/weft" || fail "scratch"
out=$("$dir/weft" bench --list 2>&1)
rc=$?
[ "$rc" -eq 1 ] || fail "weft without weft-bench exited $rc: $out"
echo "$out" | grep -q "cannot run $dir/weft-bench" ||
  fail "no clear error without weft-bench: $out"
rm -rf "$dir"

if command -v ldd >/dev/null; then
  libs=$(ldd "$weft" | grep -E 'lib(cublas|cublasLt|cusolver|cusparse|cufft|curand)\.')
  [ -z "$libs" ] || fail "weft links math libraries: $libs"
fi
echo "weft bench through weft-bench: ok"
