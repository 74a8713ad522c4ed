#!/usr/bin/env bash
# The main job: install what is missing, build, then train llama3 debug for 5 steps
# traced and eager side by side and compare them bit for bit. Extra arguments replace
# the default `check --model llama3 --steps 5`.
set -euo pipefail
cd "$(dirname "$0")/.."
ci/bootstrap.sh
ci/build.sh
if [ $# -eq 0 ]; then set -- check --model llama3 --steps 5; fi
exec "${PASSCHECK_BUILD_DIR:-build}/framework/passcheck" "$@"
