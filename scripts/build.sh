#!/usr/bin/env bash
# Installs dependencies (idempotent) and builds plait into ${PLAIT_BUILD_DIR:-build}.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${PLAIT_BUILD_DIR:-$root/build}"
bash "$root/scripts/deps.sh"
export CCACHE_DIR="${CCACHE_DIR:-$HOME/.ccache}"
# Paths relative to the checkout, so that clones in other folders (CI) hit the same cache.
export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=1
jobs="${PLAIT_JOBS:-$(nproc)}"
# PLAIT_CMAKE_ARGS: extra configure options, e.g. -DCMAKE_CUDA_ARCHITECTURES=90 (tests/gpu/run.sh).
# shellcheck disable=SC2086 # word-split on purpose: several options in one variable
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release ${PLAIT_CMAKE_ARGS:-} >/dev/null
# PLAIT_TARGETS: build only these ninja targets (default: everything).
# shellcheck disable=SC2086
ninja -C "$build" -j"$jobs" ${PLAIT_TARGETS:-}
