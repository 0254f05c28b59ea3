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
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C "$build" -j"$jobs"
