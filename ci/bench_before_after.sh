#!/usr/bin/env bash
# The figures of docs/performance.md that compare this checkout with the code before a
# change, in one run on one machine: the baseline and this build measured one after the
# other, part by part, so both see the same machine.
#
#   ci/bench_before_after.sh BASE [OUT_DIR]
#
# BASE is a passcheck binary, or a git ref whose passcheck target is built into
# build-baseline/ (a worktree under .baseline-src/). Parts:
#  1. pass scaling: every pass, the parser, printer, verifier and the default pipeline gated
#     and ungated (the gate's cost per node and pass) at 10^5 and 10^6 synthetic nodes and at
#     10^4 and 10^5 nodes of the llama3 families (`bench --passes --baseline`);
#  2. the default pipeline on the production llama3 405B graph, gated (`bench --production`);
#  3. the sim mesh: llama3 FSDP dp=4 against four single-rank steps;
#  4. fuzz throughput of the default pipeline, --jobs 1 and 2 (persistent workers).
# Meant for an idle machine. SIZES / LLAMA_SIZES / FUZZ_SECONDS shorten a trial run.
set -euo pipefail
cd "$(dirname "$0")/.."
base="${1:?usage: ci/bench_before_after.sh BASE_BINARY_OR_REF [OUT_DIR]}"
out="${2:-bench-before-after}"
mkdir -p "$out"
after="${PASSCHECK:-build/bin/passcheck}"
export OMP_NUM_THREADS=1

if [ -x "$base" ] && [ -f "$base" ]; then
  before="$base"
else
  rm -rf .baseline-src
  git worktree prune
  git worktree add --detach .baseline-src "$base" >/dev/null
  cmake -S .baseline-src -B build-baseline -G Ninja -DCMAKE_BUILD_TYPE=Release -DPASSCHECK_BUILD_TESTS=OFF \
    -DPASSCHECK_PYTHON="$PWD/.venv/bin/python" >/dev/null
  cmake --build build-baseline -j "$(ci/cores)" --target passcheck
  before=build-baseline/bin/passcheck
fi
echo "# before: $before ($("$before" --version)); after: $after ($("$after" --version))"
echo "# $(ci/cores) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"

echo
echo "## 1. Pass scaling"
"$after" bench --passes --baseline "$before" --sizes "${SIZES:-100000,1000000}" --families synthetic \
  --joint-layers 0 --max-seconds 120 --json "$out/scaling_synthetic.json"
"$after" bench --passes --baseline "$before" --sizes "${LLAMA_SIZES:-10000,100000}" \
  --families llama3,llama3-fsdp,llama3-symbolic --joint-layers 126 --max-seconds 120 --json "$out/scaling_llama3.json"

echo
echo "## 2. The default pipeline on the production llama3 405B graph (pass ms, gated ms in parentheses)"
for binary in "$before" "$after"; do
  echo "### $binary"
  "$binary" bench --production --configs llama3:405b --json "$out/production_$(basename "$(dirname "$(dirname "$binary")")").json" \
    | grep -E '^\| (subject|pass|default|autoparallel|---)' || true
done

echo
echo "## 3. Sim mesh: llama3 FSDP dp=4"
for binary in "$before" "$after"; do
  echo "### $binary"
  "$binary" bench --model llama3 --parallel fsdp --mesh dp=4 --backend sim --repeats 5
done

echo
echo "## 4. Fuzz throughput, default pipeline"
for jobs in 1 2; do
  for binary in "$before" "$after"; do
    dir=$(mktemp -d)
    echo "### $binary --jobs $jobs"
    "$binary" fuzz --pipeline default --seconds "${FUZZ_SECONDS:-10}" --jobs "$jobs" --seed 42 --out "$dir" 2>&1 \
      | grep -E '^fuzz summary' || true
    rm -rf "$dir"
  done
done
