#!/usr/bin/env bash
# Installs passcheck's build and test dependencies from Debian 12 packages, only those
# that are missing. chromium renders the HTML reports in their test (suites/report).
# clang-14 and libclang-rt-14-dev serve only the parser fuzzer
# (ci/parser_fuzz.sh); the normal build and CI use g++. Safe to run repeatedly; needs root (or sudo) when something is missing.
set -euo pipefail

PACKAGES=(
  cmake ninja-build ccache g++ pkg-config
  libtorch-dev libopenblas0-pthread libopenblas-dev libgloo-dev
  libgtest-dev libgmock-dev librapidcheck-dev libbenchmark-dev
  libz3-dev libcli11-dev libfmt-dev nlohmann-json3-dev
  python3-torch python3-networkx
  chromium
  libboost-graph-dev
  clang-14 libclang-rt-14-dev
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "bootstrap: all ${#PACKAGES[@]} packages present"
  exit 0
fi

echo "bootstrap: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "bootstrap: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
