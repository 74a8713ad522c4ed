#!/usr/bin/env bash
# GPU build and suites, for the GPU machine, in one call: CUDA LibTorch from the Python
# torch package, Z3/RapidCheck/GoogleTest/CLI11/json from .gpudeps (made on a Debian
# machine by ../shared/gpu/bundle-deps.sh). Runs the gpu and model suites (the CUDA-graph
# suites among them: suites/gpu/cudagraph_cuda_test.cpp on real CUDA graphs,
# suites/model/cudagraph_training_test.cpp on the replay model), then the CUDA training
# check and the CUDA-graph bench of docs/performance.md. Writes logs under ${OUT:-out}.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}
mkdir -p "$OUT"
TORCH_PREFIX=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
export LD_LIBRARY_PATH=$PWD/.gpudeps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DPASSCHECK_USE_CCACHE=OFF \
  -DCMAKE_PREFIX_PATH="$TORCH_PREFIX;$PWD/.gpudeps/usr" -DCMAKE_CUDA_ARCHITECTURES=90 2>&1 | tee "$OUT/configure.log"
cmake --build build-gpu -j "$(nproc)" 2>&1 | tail -50 | tee "$OUT/build.log"
status=0
ctest --test-dir build-gpu -L 'gpu|model' --output-on-failure 2>&1 | tee "$OUT/ctest-gpu.log" || status=1
build-gpu/suites/passcheck_gpu_tests --gtest_filter='CudaGraphs.*' 2>&1 | tee "$OUT/cudagraph-cuda.log" || status=1
build-gpu/framework/passcheck check --model llama3 --steps 5 --device cuda 2>&1 | tee "$OUT/check-cuda.log" || status=1
build-gpu/framework/passcheck check --model llama3 --steps 5 --device cuda --pipeline 'partition-min-cut,cudagraph{backend=cuda}' \
  2>&1 | tee "$OUT/check-cuda-cudagraph.log" || status=1
build-gpu/framework/passcheck bench --model llama3 --cudagraph cuda --device cuda --repeats 50 2>&1 | tee "$OUT/bench-cudagraph.log" || status=1
build-gpu/framework/passcheck bench --model llama3 --cudagraph cuda --device cuda --repeats 50 \
  --pipeline 'partition-min-cut,cudagraph{backend=cuda}' 2>&1 | tee "$OUT/bench-cudagraph-partitioned.log" || status=1
exit $status
