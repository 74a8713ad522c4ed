#!/usr/bin/env bash
# Fuzzes the graph text, module text, repro and input-archive readers with libFuzzer (docs/parser-fuzzing.md). Builds
# the targets of suites/parser_fuzz in a separate clang build directory (passcheck's
# IR, check and exec layers instrumented with ASan, UBSan and coverage; LibTorch is the
# prebuilt gcc library) and runs each with the seed corpus for RUNS executions. Not part of the
# normal build or CI, which replay the checked-in corpus instead (CTest label parser).
#
# usage: ci/parser_fuzz.sh [RUNS]   (default 1000000; env JOBS, BUILD_DIR, MAX_TOTAL_TIME,
#                                   TARGETS="graph module repro archive")
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
RUNS="${1:-1000000}"
JOBS="${JOBS:-1}"
BUILD="${BUILD_DIR:-$ROOT/build-fuzz}"
TARGETS="${TARGETS:-graph module repro archive}"
SANITIZERS="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fsanitize=fuzzer-no-link"

CC=clang-14 CXX=clang++-14 cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DPASSCHECK_PARSER_FUZZ=ON -DPASSCHECK_BUILD_TESTS=OFF -DPASSCHECK_USE_PCH=OFF \
  -DCMAKE_CXX_FLAGS="$SANITIZERS -fno-omit-frame-pointer" >/dev/null
cmake --build "$BUILD" -j"$JOBS" --target $(for t in $TARGETS; do printf "parser_fuzz_%s " "$t"; done)

# Seed corpora: copies, since libFuzzer writes what it learns into the first directory.
WORK="$BUILD/parser-fuzz-run"
rm -rf "$WORK"
mkdir -p "$WORK/graph" "$WORK/module" "$WORK/repro" "$WORK/archive" "$WORK/findings"
cp "$ROOT"/suites/passes_text/*.graph "$ROOT"/suites/conformance/corpus.txt "$ROOT"/suites/conformance/make_fx.golden \
  "$ROOT"/suites/parser_fuzz/corpus/graph/* "$WORK/graph/" 2>/dev/null || true
cp "$ROOT"/suites/regressions/*.repro "$ROOT"/suites/parser_fuzz/corpus/repro/* "$WORK/repro/" 2>/dev/null || true
cp "$ROOT"/suites/parser_fuzz/corpus/module/* "$WORK/module/"
cp "$ROOT"/suites/parser_fuzz/corpus/archive/* "$WORK/archive/"

# c10's own allocations are not instrumented; leaks at exit are not parser findings.
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
for target in $TARGETS; do
  echo "== parser_fuzz_$target: $RUNS runs"
  start=$(date +%s)
  rc=0
  "$BUILD/suites/parser_fuzz/parser_fuzz_$target" "$WORK/$target" -runs="$RUNS" -timeout=1 -rss_limit_mb=4096 \
    -max_len=65536 ${MAX_TOTAL_TIME:+-max_total_time=$MAX_TOTAL_TIME} -artifact_prefix="$WORK/findings/$target-" \
    -print_final_stats=1 >"$WORK/$target.log" 2>&1 || rc=$?
  tail -n 25 "$WORK/$target.log"
  echo "== parser_fuzz_$target: exit $rc after $(( $(date +%s) - start )) s (full log $WORK/$target.log)"
done
if compgen -G "$WORK/findings/*" >/dev/null; then
  echo "parser_fuzz: findings in $WORK/findings" >&2
  exit 1
fi
echo "parser_fuzz: no findings"
