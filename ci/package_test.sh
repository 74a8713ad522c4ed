#!/usr/bin/env bash
# The package test (CTest package.out_of_tree_example, label `package`): installs the
# build tree into a fresh prefix inside it, then, against that install only, runs the
# installed binary (a model check, and a Python pass fuzzed through the installed
# passcheck_fx package), checks that the binary names no source or build path, and
# configures, builds and runs the separate project examples/out_of_tree_pass.
# Usage: ci/package_test.sh BUILD_DIR SOURCE_DIR [PYTHON]
#   PYTHON: the interpreter with the build's torch, for the Python pass (skipped without).
set -euo pipefail
build=$(cd "$1" && pwd)
source=$(cd "$2" && pwd)
python=${3:-}
work="$build/package-test"
prefix="$work/prefix"
rm -rf "$prefix"
cmake --install "$build" --prefix "$prefix" > "$work.install.log" || { cat "$work.install.log"; exit 1; }
echo "installed into $prefix ($(find "$prefix" -type f | wc -l) files)"

# The installed binary stands alone: no path of the checkout or the build tree in it (its
# RUNPATH names the torch package's lib/, wherever that environment lives, the project's
# .venv included), and it runs from anywhere with neither on hand.
torch_lib=$(readelf -d "$prefix/bin/passcheck" | sed -n 's/.*R\(UN\)\?PATH.*\[\(.*\)\]/\2/p')
for tree in "$source" "$build"; do
  named=$(grep -a -o "$tree/[[:graph:]]*" "$prefix/bin/passcheck" | grep -v -x -F "$torch_lib" || true)
  if [ -n "$named" ]; then
    echo "FAIL: $prefix/bin/passcheck names $tree:"; echo "$named" | head -5
    exit 1
  fi
done
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
(cd "$scratch" && env -u PASSCHECK_PYTHON_DIR "$prefix/bin/passcheck" check --model mlp --steps 2)
if [ -n "$python" ]; then
  (cd "$scratch" && env -u PASSCHECK_PYTHON_DIR PASSCHECK_PYTHON="$python" "$prefix/bin/passcheck" fuzz \
     --python-pass passcheck_fx.examples.example_passes:upstream_dce --cases 3 --seed 3 --out "$scratch/repros" \
     | tee "$scratch/fuzz.log")
  grep -q "fuzz summary: 3 cases run" "$scratch/fuzz.log"
fi

generator=()
if command -v ninja > /dev/null; then generator=(-G Ninja); fi
launcher=()
if command -v ccache > /dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
# The example's own build directory is kept between runs (only the prefix is fresh), so a
# rerun rebuilds what the new install changed.
cmake -S "$source/examples/out_of_tree_pass" -B "$work/example" "${generator[@]}" "${launcher[@]}" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON
cmake --build "$work/example" -j "${PASSCHECK_PACKAGE_JOBS:-2}"
ctest --test-dir "$work/example" --output-on-failure
