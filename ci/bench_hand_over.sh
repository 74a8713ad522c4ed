#!/usr/bin/env bash
# Campaign throughput of Python passes per kind of caller, with the graph handed over as
# its caller does (--python-hand-over caller, the default) and bare (tensor_meta only, no
# context: how earlier releases handed it), side by side in one run, alternating, on the
# same cases (--seed 11). Prints one line per campaign: kind, pass, hand-over, cases,
# cases/s, what the pass changed. docs/performance.md ("Python passes") has the figures.
# Usage: ci/bench_hand_over.sh [CASES] [REPEATS]   (defaults 40 and 2; partitioner cases /4)
set -euo pipefail
cd "$(dirname "$0")/.."
CASES=${1:-40}
REPEATS=${2:-2}
BIN=${PASSCHECK_BUILD_DIR:-build}/bin/passcheck
export PASSCHECK_PYTHON="${PASSCHECK_PYTHON:-$PWD/.venv/bin/python}"
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
targets=(
  "fx passcheck_fx.examples.example_passes:annotate_value_bytes"
  "graph_trainer passcheck_fx.targets.graph_trainer:remove_identity_view"
  "inductor-post-grad passcheck_fx.targets.inductor:remove_noop_ops"
  "partitioner passcheck_fx.examples.example_passes:upstream_min_cut"
)
for ((r = 1; r <= REPEATS; r++)); do
  for t in "${targets[@]}"; do
    read -r kind spec <<<"$t"
    n=$CASES
    [ "$kind" = partitioner ] && n=$((CASES / 4))
    for how in bare caller; do
      log="$OUT/$kind-$how-$r.log"
      "$BIN" fuzz --python-pass "$spec" --python-hand-over "$how" --cases "$n" --seed 11 --jobs 1 --no-minimize \
        --out "$OUT/repros-$kind-$how-$r" >"$log" 2>&1 || true
      rate=$(sed -n 's/.* \([0-9.]*\) cases\/s.*/\1/p' "$log" | head -1)
      failures=$(sed -n 's/.*cases run, \([0-9]*\) failures.*/\1/p' "$log" | head -1)
      changes=$(sed -n 's/^changes: //p' "$log" | head -1)
      printf '%-19s %-64s %-6s run %d: %3d cases, %7s cases/s, %s failures; %s\n' "$kind" "$spec" "$how" "$r" "$n" \
        "${rate:-?}" "${failures:-?}" "${changes:-?}"
    done
  done
done
