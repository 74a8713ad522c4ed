#!/usr/bin/env bash
# Configures and builds passcheck (Release, Ninja, ccache, precompiled LibTorch headers)
# into ${PASSCHECK_BUILD_DIR:-build}. `--target T` builds that target only (the main job
# builds just the passcheck binary); other arguments go to the configure step.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${PASSCHECK_BUILD_DIR:-build}
JOBS=${PASSCHECK_JOBS:-$(ci/cores)}
targets=()
if [ "${1:-}" = "--target" ]; then
  targets=(--target "$2")
  shift 2
fi
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build "$BUILD_DIR" -j "$JOBS" "${targets[@]}"
