#!/bin/sh
# weft's `bench` runs weft-bench beside it (tools/cmd_bench_exec.c): the
# scenarios list through weft, the global --backend reaches weft-bench, a
# weft without weft-bench beside it says so and fails (exit 1), weft
# itself links none of the toolkit's math libraries, and WEFT_BENCH_TILES
# picks the data-flow scenarios' sizes (a bad one fails with its value);
# --json and --plot are checked before the run. The sizes are checked on
# dataflow-fp64, which shares dataflow's parser but not its record-cost
# rows (10 000-spawn loops: minutes under ThreadSanitizer).
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

out=$(WEFT_BENCH_TILES=64:16,96:32 "$weft" --backend host bench --quick \
  --repeat 1 dataflow-fp64 2>&1) || fail "WEFT_BENCH_TILES=64:16,96:32 failed: $out"
echo "$out" | grep -q "declared, n=64 b=16 " || fail "no n=64 b=16 rows: $out"
echo "$out" | grep -q "declared, n=96 b=32 " || fail "no n=96 b=32 rows: $out"
out=$(WEFT_BENCH_TILES=64:15 "$weft" --backend host bench --quick --repeat 1 \
  dataflow-fp64 2>&1)
rc=$?
[ "$rc" -eq 1 ] || fail "WEFT_BENCH_TILES=64:15 exited $rc: $out"
echo "$out" | grep -q "WEFT_BENCH_TILES='64:15'" ||
  fail "no clear error for WEFT_BENCH_TILES=64:15: $out"

# Outputs checked before the run: one path for both is refused, and a
# chart folder made for a run that cannot start is removed again.
mkdir -p "$dir" || fail "scratch"
out=$("$weft" --backend host bench --json "$dir/x" --plot "$dir/x" switch 2>&1)
rc=$?
[ "$rc" -eq 2 ] || fail "--json X --plot X exited $rc: $out"
out=$(WEFT_WORKERS=0 "$weft" --backend host bench --plot "$dir/charts" switch 2>&1)
rc=$?
[ "$rc" -eq 1 ] || fail "a bench that cannot start exited $rc: $out"
[ ! -e "$dir/charts" ] || fail "a failed start left its chart folder"

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
