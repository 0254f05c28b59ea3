#!/usr/bin/env bash
# The README's demo command: set up, build, then compile the GPT sample into a plan and run it.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${PLAIT_BUILD_DIR:-$root/build}"
bash "$root/scripts/build.sh" >/dev/null
bin="$build/bin"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
sample="$root/samples/gpt"

echo "== plait-compile samples/gpt/gpt.onnx -o gpt.plan --explain"
"$bin/plait-compile" "$sample/gpt.onnx" -o "$out/gpt.plan" --explain --report "$out/report.json"
echo
echo "== plait-run gpt.plan --input idx=... --input targets=... --output-dir out/"
"$bin/plait-run" "$out/gpt.plan" --input "idx=$sample/inputs/idx.npy" \
  --input "targets=$sample/inputs/targets.npy" --output-dir "$out/outputs"
/usr/bin/python3 - "$out/outputs" "$sample/expected" <<'PY'
import sys, numpy as np, pathlib
got_dir, want_dir = map(pathlib.Path, sys.argv[1:])
for want in sorted(want_dir.glob("*.npy")):
    g, w = np.load(got_dir / want.name), np.load(want)
    err = float(np.max(np.abs(g.astype(np.float64) - w))) if w.size else 0.0
    print(f"  {want.stem:8s} shape {str(list(w.shape)):12s} max |plait - pytorch| = {err:.2e}")
PY
