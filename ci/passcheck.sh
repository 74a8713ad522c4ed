#!/usr/bin/env bash
# The main job: install what is missing, build the passcheck binary (only it: the test
# suites are the test job's), then train llama3 debug for 5 steps traced and eager side
# by side and compare them bit for bit. Extra arguments replace the default
# `check --model llama3 --steps 5`.
set -euo pipefail
cd "$(dirname "$0")/.."
ci/bootstrap.sh
ci/build.sh --target passcheck
# Python passes (fuzz --python-pass) run in the project's environment, whose torch is the
# build's LibTorch.
export PASSCHECK_PYTHON="${PASSCHECK_PYTHON:-$PWD/.venv/bin/python}"
if [ $# -eq 0 ]; then set -- check --model llama3 --steps 5; fi
exec "${PASSCHECK_BUILD_DIR:-build}/bin/passcheck" "$@"
