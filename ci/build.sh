#!/usr/bin/env bash
# Configures and builds passcheck (Release, Ninja, ccache, precompiled LibTorch headers)
# into ${PASSCHECK_BUILD_DIR:-build}.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${PASSCHECK_BUILD_DIR:-build}
JOBS=${PASSCHECK_JOBS:-$(nproc)}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build "$BUILD_DIR" -j "$JOBS"
