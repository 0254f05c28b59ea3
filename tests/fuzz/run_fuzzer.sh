#!/usr/bin/env bash
# Runs one libFuzzer target for a bounded time (CTest's fuzz.<name>):
#   run_fuzzer.sh FUZZER SEEDS REGRESSIONS WORK SECONDS
# New inputs go to WORK/corpus (fresh each run), so the seed and regression folders are only
# read; crashes, leaks and timeouts are written to WORK/artifacts and fail the test.
set -euo pipefail
fuzzer=$1 seeds=$2 regressions=$3 work=$4 seconds=$5
rm -rf "$work"
mkdir -p "$work/corpus" "$work/artifacts" "$seeds"
dirs=("$work/corpus" "$seeds")
[ -d "$regressions" ] && dirs+=("$regressions")
# -timeout: one input taking this long is a hang (a finding). -rss_limit_mb: one input using
# this much memory is one too.
exec "$fuzzer" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=30 \
  -print_final_stats=1 -artifact_prefix="$work/artifacts/" "${dirs[@]}"
