#!/usr/bin/env bash
# The package test (CTest package.out_of_tree_example, label `package`): installs the
# build tree into a fresh prefix inside it, then configures, builds and runs the separate
# project examples/out_of_tree_pass against that install, as another project would.
# Usage: ci/package_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
source=$(cd "$2" && pwd)
work="$build/package-test"
prefix="$work/prefix"
rm -rf "$prefix"
cmake --install "$build" --prefix "$prefix" > "$work.install.log" || { cat "$work.install.log"; exit 1; }
echo "installed into $prefix ($(find "$prefix" -type f | wc -l) files)"

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
