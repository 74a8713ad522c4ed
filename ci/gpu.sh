#!/usr/bin/env bash
# GPU build and suites, for the GPU machine: CUDA LibTorch from the Python torch
# package, Z3/RapidCheck/GoogleTest/CLI11/json from .gpudeps (made on a Debian machine
# by ../shared/gpu/bundle-deps.sh). Writes logs under ${OUT:-out}.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}
mkdir -p "$OUT"
TORCH_PREFIX=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
export LD_LIBRARY_PATH=$PWD/.gpudeps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DPASSCHECK_USE_CCACHE=OFF \
  -DCMAKE_PREFIX_PATH="$TORCH_PREFIX;$PWD/.gpudeps/usr" -DCMAKE_CUDA_ARCHITECTURES=90 2>&1 | tee "$OUT/configure.log"
cmake --build build-gpu -j "$(nproc)" 2>&1 | tail -50 | tee "$OUT/build.log"
ctest --test-dir build-gpu -L 'gpu|model' --output-on-failure 2>&1 | tee "$OUT/ctest-gpu.log"
build-gpu/framework/passcheck check --model llama3 --steps 5 --device cuda 2>&1 | tee "$OUT/check-cuda.log"
