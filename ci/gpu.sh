#!/usr/bin/env bash
# GPU build and suites, for the GPU machine, in one call (its time is short): CUDA LibTorch
# from that machine's Python torch, Z3/RapidCheck/GoogleTest/CLI11/json/gloo/Boost headers
# from .gpudeps (made here by ci/gpu_bundle.sh). Builds only the targets it runs, then:
#   1. the make_fx conformance reference regenerated with that machine's torch, and the
#      tracer compared against it (the same comparison CI makes against torch 2.15);
#   2. the gpu suite (CUDA graphs on real CUDA graphs, CUDA memory) and the model suite;
#   3. llama3 traced vs eager on CUDA, and under partition + the cuda CUDA-graph backend;
#   4. the CUDA-graph bench, with and without the partitioner.
# Every step's output is appended to ${OUT:-out}/gpu.log (the build's to build.log), the
# reference to make_fx_gpu_torch.golden; a step that fails is recorded and the rest run.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}
mkdir -p "$OUT"
PY=${PASSCHECK_GPU_PYTHON:-python3}
JOBS=$(ci/cores)
status=0
LOG="$OUT/gpu.log"
step() {
  local name=$1; shift
  local log="$OUT/step.tmp"
  [ "$name" = build ] && log="$OUT/build.log"
  echo "=== $name: $*" | tee -a "$LOG"
  local start=$SECONDS
  "$@" > "$log" 2>&1; local rc=$?
  [ "$name" = build ] || cat "$log" >> "$LOG"
  tail -25 "$log"
  echo "=== $name: exit $rc after $((SECONDS - start)) s" | tee -a "$LOG"
  rm -f "$OUT/step.tmp"
  [ $rc -eq 0 ] || status=1
  return $rc
}
export LD_LIBRARY_PATH=$PWD/.gpudeps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | tee -a "$LOG"
$PY -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0))' 2>&1 | tee -a "$LOG"
step configure cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DPASSCHECK_USE_CCACHE=OFF \
  -DPASSCHECK_PYTHON="$(command -v $PY)" -DCMAKE_PREFIX_PATH="$PWD/.gpudeps/usr" -DTORCH_CUDA_ARCH_LIST=9.0 || exit 1
# -k 0: one compile error must not hide the others (each costs a GPU-machine call to find).
step build cmake --build build-gpu -j "$JOBS" --target passcheck passcheck_gpu_tests passcheck_model_tests \
  passcheck_conformance_tests -- -k 0
grep -E "error:|FAILED" "$OUT/build.log" | head -40
[ -x build-gpu/bin/passcheck ] || exit 1
build-gpu/bin/passcheck --version 2>&1 | tee -a "$LOG"
step make_fx_reference $PY python/conformance/make_fx_reference.py --out "$OUT/make_fx_gpu_torch.golden"
golden="$OUT/make_fx_gpu_torch.golden"
case "$golden" in /*) ;; *) golden="$PWD/$golden" ;; esac
PASSCHECK_MAKE_FX_GOLDEN=$golden step conformance \
  build-gpu/suites/passcheck_conformance_tests --gtest_brief=1
step gpu_suite build-gpu/suites/passcheck_gpu_tests --gtest_brief=1
step check_cuda build-gpu/bin/passcheck check --model llama3 --steps 5 --device cuda
step check_cuda_cudagraph build-gpu/bin/passcheck check --model llama3 --steps 5 --device cuda \
  --pipeline 'partition-min-cut,cudagraph{backend=cuda}'
step bench_cudagraph build-gpu/bin/passcheck bench --model llama3 --cudagraph cuda --device cuda --repeats 50
step bench_cudagraph_partitioned build-gpu/bin/passcheck bench --model llama3 --cudagraph cuda --device cuda \
  --repeats 50 --pipeline 'partition-min-cut,cudagraph{backend=cuda}'
# Last: the longest step, bounded so the logs above always come back.
# Its tests run on the CPU: one intra-op thread each, so 16 of them share 16 cores.
OMP_NUM_THREADS=1 step model_suite timeout "${PASSCHECK_GPU_MODEL_SUITE_SECONDS:-240}" ctest --test-dir build-gpu \
  -L model -j "$JOBS" --output-on-failure --timeout 200
exit $status
