#!/usr/bin/env bash
# The ASan+UBSan build: configures ${PLAIT_SAN_BUILD_DIR:-build-san} with clang, PLAIT_FUZZ and
# PLAIT_SANITIZE, builds it and runs its CTest suite: the unit tests under the sanitizers and
# every fuzz target for PLAIT_FUZZ_SECONDS (15) over a seed corpus made from the samples, and
# determinism.same_plan_across_builds against the main build.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${PLAIT_SAN_BUILD_DIR:-$root/build-san}"
bash "$root/scripts/deps.sh"
export CCACHE_DIR="${CCACHE_DIR:-$HOME/.ccache}"
export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=1
jobs="${PLAIT_JOBS:-$(nproc)}"
# -O1 keeps the sanitized tests fast enough; line tables are all the reports need.
flags="-O1 -gline-tables-only"
# The main (GCC) build, when it has been built, is the reference that
# determinism.same_plan_across_builds compares this Clang build's plans with.
reference="${PLAIT_BUILD_DIR:-$root/build}"
[ -x "$reference/bin/plait-compile" ] || reference=""
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="$flags" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$flags" \
  -DPLAIT_FUZZ=ON -DPLAIT_FUZZ_SECONDS="${PLAIT_FUZZ_SECONDS:-15}" \
  -DPLAIT_REFERENCE_BUILD="$reference" >/dev/null
ninja -C "$build" -j"$jobs"
cd "$build"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
ctest --output-on-failure -j"${PLAIT_TEST_JOBS:-2}" "$@"
