#!/usr/bin/env bash
# Fuzz throughput, side by side: each pipeline at --jobs 1 and 2 under the three
# isolation modes: one child per case forked by the campaign (per-case, the old design and
# the baseline column), a fresh process per case forked from a warm worker (fork-server),
# and warm workers running the cases (persistent, the default). Prints a markdown table
# of cases/s and CPU milliseconds per case (user+sys of the campaign and every case
# process, startup included: less sensitive than cases/s to other load on the machine).
#
#   ci/bench_fuzz_throughput.sh [SECONDS]      # default 20 s per run
#   PASSCHECK=build/bin/passcheck PIPELINES="default dce,cse" ci/bench_fuzz_throughput.sh 10
#
# Meant for an idle machine; the runs are sequential so they never compete for cores.
set -euo pipefail

seconds="${1:-20}"
passcheck="${PASSCHECK:-build/bin/passcheck}"
pipelines="${PIPELINES:-default dce,cse,remove-detach,remove-identity-view}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

# One run: prints "cases/s cpu-ms-per-case".
run() {
  local pipeline="$1" jobs="$2" isolation="$3" dir
  dir="$out/$RANDOM$RANDOM"
  local log="$dir.log" times="$dir.time"
  /usr/bin/time -f "%U %S" -o "$times" "$passcheck" fuzz --pipeline "$pipeline" --seconds "$seconds" \
    --jobs "$jobs" --seed 42 --isolation "$isolation" --out "$dir" > "$log" 2>&1 || true
  local rate cases cpu
  rate="$(sed -n 's/.* \([0-9.]*\) cases\/s.*/\1/p' "$log")"
  cases="$(sed -n 's/^fuzz summary: \([0-9]*\) cases run.*/\1/p' "$log")"
  cpu="$(awk -v n="${cases:-0}" '{ if (n > 0) printf "%.1f", ($1 + $2) * 1000 / n; else print "?" }' "$times")"
  echo "${rate:-?} $cpu"
}

echo "fuzz throughput, ${seconds} s per run, $("$(dirname "$0")/cores") cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| pipeline | jobs | per-case cases/s (CPU ms/case) | fork-server | persistent | persistent vs per-case |"
echo "|---|---|---|---|---|---|"
for pipeline in $pipelines; do
  declare -A persistent_rate=()
  for jobs in 1 2; do
    read -r old_rate old_cpu < <(run "$pipeline" "$jobs" per-case)
    read -r fork_rate fork_cpu < <(run "$pipeline" "$jobs" fork-server)
    read -r new_rate new_cpu < <(run "$pipeline" "$jobs" persistent)
    persistent_rate[$jobs]="$new_rate"
    speedup="$(awk -v a="$old_rate" -v b="$new_rate" 'BEGIN { if (a > 0) printf "%.2fx", b / a; else print "?" }')"
    echo "| \`$pipeline\` | $jobs | $old_rate ($old_cpu) | $fork_rate ($fork_cpu) | $new_rate ($new_cpu) | $speedup |"
  done
  scaling="$(awk -v a="${persistent_rate[1]}" -v b="${persistent_rate[2]}" 'BEGIN { if (a > 0) printf "%.2fx", b / a; else print "?" }')"
  echo "| \`$pipeline\` | 2 vs 1 | | | persistent scaling $scaling | |"
done
