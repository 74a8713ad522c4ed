#!/usr/bin/env bash
# Prepares .gpudeps/ for the GPU machine (which cannot fetch anything): the Debian C++
# libraries the shared bundle script packs (Z3, RapidCheck, GoogleTest/Mock, Google
# Benchmark, CLI11, fmt, nlohmann-json), plus the headers passcheck needs that the GPU
# machine's torch does not ship: gloo's (whole, 352 KB) and the part of Boost that the
# min-cut partitioner includes (found by the compiler, about 1% of Boost). Run here, once
# per checkout, after a configure (it reads build/compile_commands.json).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${PASSCHECK_BUILD_DIR:-build}
SHARED=${PASSCHECK_SHARED_DIR:-../shared}
bash "$SHARED/gpu/bundle-deps.sh"
dest=.gpudeps/usr/include
mkdir -p "$dest"
cp -a /usr/include/gloo "$dest/"
# Every Boost header min_cut.cpp reaches, by the compiler's own dependency list.
cmd=$(python3 - "$BUILD_DIR" <<'PY'
import json, sys
# min_cut.cpp itself, or the unity batch that includes it (PASSCHECK_UNITY_BUILD).
for e in json.load(open(sys.argv[1] + "/compile_commands.json")):
    f = e["file"]
    if f.endswith("passes/partition/min_cut.cpp") or (
            f.endswith(".cxx") and "passes/partition/min_cut.cpp" in open(f).read()):
        print(e["command"])
        break
PY
)
[ -n "$cmd" ] || { echo "gpu_bundle: configure first (no min_cut.cpp in $BUILD_DIR/compile_commands.json)" >&2; exit 2; }
deps=$(mktemp)
cmd=$(echo "$cmd" | sed -E "s/ -o [^ ]+/ /")  # no object file: -M writes the dependency list only
(cd "$BUILD_DIR" && eval "$cmd -M -MF $deps -o /dev/null" >/dev/null)
tr ' \\' '\n\n' < "$deps" | grep '^/usr/include/boost/' | sort -u | while read -r f; do
  mkdir -p "$dest/$(dirname "${f#/usr/include/}")"
  cp -a "$f" "$dest/${f#/usr/include/}"
done
rm -f "$deps"
du -sh .gpudeps | awk '{print "gpu_bundle: .gpudeps is " $1}'
