#!/usr/bin/env bash
# Installs what passcheck needs, only what is missing: Debian 12 packages (build tools and
# the C++ libraries), then the project's virtual environment .venv with the pinned Python
# packages of ci/requirements.txt (torch 2.15.0 among them: its LibTorch is what the C++
# build compiles and links against). chromium renders the HTML reports in their test
# (suites/report); libgloo-dev provides the gloo headers the wheel's LibTorch does not
# ship; clang-14 and libclang-rt-14-dev serve only the parser fuzzer (ci/parser_fuzz.sh);
# libjemalloc-dev is the executables' allocator (glibc's malloc is slow on million-node graphs).
# Safe to run repeatedly; needs root (or sudo) when a Debian package is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  cmake ninja-build ccache g++ pkg-config
  libgloo-dev
  libgtest-dev libgmock-dev librapidcheck-dev libbenchmark-dev
  libz3-dev libcli11-dev libfmt-dev nlohmann-json3-dev
  chromium
  libboost-graph-dev
  libjemalloc-dev
  clang-14 libclang-rt-14-dev
)
# A Python with venv: the machine's python3 when it has the venv module, else Debian's.
PYTHON=${PASSCHECK_BOOTSTRAP_PYTHON:-python3}
if ! "$PYTHON" -c 'import venv, ensurepip' >/dev/null 2>&1; then
  PYTHON=/usr/bin/python3
  PACKAGES+=(python3-venv)
fi

missing=()
for pkg in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "bootstrap: all ${#PACKAGES[@]} Debian packages present"
else
  echo "bootstrap: installing ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "bootstrap: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
    SUDO="sudo"
  fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# The virtual environment, remade when ci/requirements.txt changes (its hash is stamped).
VENV=${PASSCHECK_VENV:-.venv}
stamp="$VENV/.passcheck-requirements"
want=$(sha256sum ci/requirements.txt | cut -d' ' -f1)
if [ -x "$VENV/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  echo "bootstrap: $VENV up to date ($("$VENV/bin/python" -c 'import torch; print("torch", torch.__version__)'))"
  exit 0
fi
echo "bootstrap: creating $VENV with ci/requirements.txt"
rm -rf "$VENV"
"$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip==26.3
"$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-deps --only-binary=:all: -r ci/requirements.txt
# Every installed package's dependencies present, except the three of torchtitan's that
# graph_trainer never imports (ci/requirements.txt says why).
gaps=$("$VENV/bin/python" -m pip check 2>&1 | grep -v -E '^torchtitan [0-9.]+ requires (wandb|safetensors|torch-checkpointing), which is not installed\.$' || true)
if [ -n "$gaps" ]; then echo "bootstrap: dependency check failed:" >&2; echo "$gaps" >&2; exit 1; fi
echo "$want" > "$stamp"
echo "bootstrap: $VENV ready ($("$VENV/bin/python" -c 'import torch; print("torch", torch.__version__)'))"
