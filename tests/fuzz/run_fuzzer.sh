#!/usr/bin/env bash
# Runs one libFuzzer target for a bounded time (CTest's fuzz.<name>):
#   run_fuzzer.sh FUZZER SEEDS REGRESSIONS WORK SECONDS
# New inputs go to WORK/corpus (fresh each run), so the seed and regression folders are only
# read; crashes, leaks and timeouts are written to WORK/artifacts and fail the test.
#
# libFuzzer's progress lines (thousands of them) go to WORK/fuzzer.log, not to the test's
# output: a CI log keeps only part of a failing test's output, and the finding must be in it.
# So the output is the finding first (the sanitizer's or libFuzzer's report, and each
# artifact's name, size and, when small, its bytes), then the final statistics.
set -uo pipefail
fuzzer=$1 seeds=$2 regressions=$3 work=$4 seconds=$5
rm -rf "$work"
mkdir -p "$work/corpus" "$work/artifacts" "$seeds" || exit 1
dirs=("$work/corpus" "$seeds")
[ -d "$regressions" ] && dirs+=("$regressions")
log="$work/fuzzer.log"
# -timeout: one input taking this long is a hang (a finding). -rss_limit_mb: one input using
# this much memory is one too.
"$fuzzer" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=30 -print_final_stats=1 \
  -artifact_prefix="$work/artifacts/" "${dirs[@]}" >"$log" 2>&1
rc=$?
if [ "$rc" -ne 0 ] || [ -n "$(ls -A "$work/artifacts")" ]; then
  echo "$(basename "$fuzzer") failed (exit $rc); the whole log: $log"
  # The report: from the first sanitizer/libFuzzer error line to the end, without progress.
  report=$(awk '/^==[0-9]+==|runtime error:|^ERROR: libFuzzer|^ALARM:|deadly signal|out-of-memory/ {
                  found = 1 }
                found && !/^#[0-9]+/ { print }' "$log" | head -n 80)
  # No report recognised: the log's last lines other than progress.
  [ -n "$report" ] || report=$(grep -v '^#[0-9]' "$log" | tail -n 40)
  echo "$report"
  for f in "$work"/artifacts/*; do
    [ -e "$f" ] || continue
    size=$(stat -c %s "$f")
    echo "artifact: $f ($size bytes, sha1 $(sha1sum "$f" | cut -c1-40))"
    # Small enough to rebuild from the log alone: base64, to decode into a regression input.
    [ "$size" -le 4096 ] && base64 -w 0 "$f" && echo
  done
  [ "$rc" -ne 0 ] || rc=1
  exit "$rc"
fi
grep '^stat::' "$log"
grep -m1 '^Done ' "$log"
exit 0
