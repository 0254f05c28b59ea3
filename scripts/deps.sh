#!/usr/bin/env bash
# Installs plait's build and test dependencies from Debian's packages; idempotent.
set -euo pipefail
PKGS=(
  build-essential cmake ninja-build ccache git pkg-config
  llvm-19-dev libmlir-19-dev mlir-19-tools llvm-19-tools clang-19 libclang-rt-19-dev
  libflatbuffers-dev flatbuffers-compiler
  libonnx-dev libprotobuf-dev protobuf-compiler
  libopenblas-dev libmimalloc2.0
  libopenmpi-dev openmpi-bin
  libgtest-dev libgmock-dev libcli11-dev libfmt-dev nlohmann-json3-dev libyaml-cpp-dev
  python3 python3-numpy python3-torch python3-torchvision python3-onnx libonnx-testdata
  chromium
)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  echo "deps: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
