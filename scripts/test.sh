#!/usr/bin/env bash
# The README's test command: set up, build, and run the whole test suite with CTest.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${PLAIT_BUILD_DIR:-$root/build}"
bash "$root/scripts/build.sh"
(cd "$build" && ctest --output-on-failure -j"${PLAIT_TEST_JOBS:-2}" "$@")
# Then the ASan+UBSan build: sanitized unit tests and a bounded run of every fuzzer.
[ "${PLAIT_SKIP_SANITIZERS:-0}" = 1 ] || bash "$root/scripts/test-sanitizers.sh"
