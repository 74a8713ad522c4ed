#!/bin/sh
# The production-shapes table of docs/performance.md ("Production scale") in one command:
# passcheck's meta traces and pass times next to PyTorch's make_fx in fake-tensor mode on
# the same configurations. Arguments go to python/bench/real_sizes.py (e.g. --configs llama3:8b --pass-limit 60).
set -eu
cd "$(dirname "$0")/.."
exec .venv/bin/python python/bench/real_sizes.py "$@"
