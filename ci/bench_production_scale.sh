#!/usr/bin/env bash
# Every figure of docs/performance.md "Production scale" in one command, one machine, one run:
#  1. production shapes on meta: passcheck's trace next to PyTorch make_fx (fake-tensor
#     mode) on the same configurations, every pass and the default and autoparallel
#     pipelines with the verifier on, peak RSS (python/bench/real_sizes.py);
#  2. pass scaling: every pass, the parser, printer and verifier at 10^3..10^6 nodes with
#     the fitted exponents, and the default pipeline on the 126-layer (405B-shaped) joint
#     graph (`passcheck bench --passes`);
#  3. fuzz throughput: per-case, fork-server and persistent isolation at --jobs 1 and 2
#     (ci/bench_fuzz_throughput.sh).
# Meant for an idle machine: the parts run one after another and never share the cores.
#
#   ci/bench_production_scale.sh [OUT_DIR]        # tables on stdout, JSON under OUT_DIR (default bench-production-scale)
#   SYNTHETIC_SIZES=1000,10000 LLAMA_SIZES=1000,10000 FUZZ_SECONDS=5 ci/bench_production_scale.sh   # a quick pass
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-bench-production-scale}"
mkdir -p "$out"
passcheck="${PASSCHECK:-build/bin/passcheck}"

echo "# production-scale benchmarks: $(ci/cores) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"
echo
echo "## 1. Production shapes on meta"
.venv/bin/python python/bench/real_sizes.py --passcheck "$passcheck" --json "$out/production.json"
echo
echo "## 1b. Per rank under fsdp x tp (dp=16, tp=8: 128 ranks)"
"$passcheck" bench --production --configs llama3:8b,llama3:70b,llama3:405b --parallel fsdp,tp --mesh dp=16,tp=8 \
  --json "$out/production_tp.json"
echo
echo "## 2. Pass scaling"
"$passcheck" bench --passes --sizes "${SYNTHETIC_SIZES:-1000,10000,100000,1000000}" --families synthetic \
  --max-seconds 60 --joint-layers 0 --json "$out/scaling_synthetic.json"
"$passcheck" bench --passes --sizes "${LLAMA_SIZES:-1000,10000,100000}" --families llama3,llama3-fsdp,llama3-symbolic \
  --max-seconds 60 --joint-layers 126 --json "$out/scaling_llama3.json"
echo
echo "## 3. Fuzz throughput"
PASSCHECK="$passcheck" ci/bench_fuzz_throughput.sh "${FUZZ_SECONDS:-20}"
