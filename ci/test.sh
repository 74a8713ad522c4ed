#!/usr/bin/env bash
# The test job: install what is missing, build, run every CTest suite (unit, property,
# model; gpu suites skip themselves without a CUDA device). Extra arguments go to ctest,
# e.g. `ci/test.sh -L unit`.
set -euo pipefail
cd "$(dirname "$0")/.."
ci/bootstrap.sh
ci/build.sh
cores=$(ci/cores)  # not plain nproc: it would answer the OMP_NUM_THREADS=1 set below
# One intra-op thread per test: ctest already runs one test per core, and LibTorch's
# OpenMP threads spinning on cores another test holds made the suite four times slower
# (Zoo/ZooModel: 128 s against 30 s at -j 2). A test that needs more sets it itself.
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
# Every pipeline verifies each pass incrementally and in full, and fails when the
# incremental verifier misses what the full one finds (docs/passes.md, "Incremental
# verification").
export PASSCHECK_VERIFY="${PASSCHECK_VERIFY:-checked}"
ctest --test-dir "${PASSCHECK_BUILD_DIR:-build}" -j "$cores" --output-on-failure "$@"
