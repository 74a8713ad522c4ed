#!/usr/bin/env bash
# The test job: install what is missing, build, run every CTest suite (unit, property,
# model; gpu suites skip themselves without a CUDA device). Extra arguments go to ctest,
# e.g. `ci/test.sh -L unit`.
set -euo pipefail
cd "$(dirname "$0")/.."
ci/bootstrap.sh
ci/build.sh
ctest --test-dir "${PASSCHECK_BUILD_DIR:-build}" -j "$(nproc)" --output-on-failure "$@"
