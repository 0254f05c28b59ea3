#!/usr/bin/env bash
# The README's demo command: set up, build, compile the GPT sample into a plan and run it, then
# compile its training step and train it for 40 steps on a small synthetic dataset.
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

echo
echo "== plait-compile samples/gpt/gpt.onnx -o gpt-train.plan --train --optimizer adamw --lr 3e-3"
"$bin/plait-compile" "$sample/gpt.onnx" -o "$out/gpt-train.plan" --train --optimizer adamw \
  --lr 3e-3 --explain
/usr/bin/python3 - "$out/data" <<'PY'
import sys, pathlib, numpy as np
d = pathlib.Path(sys.argv[1]); d.mkdir()
rng = np.random.default_rng(0)
start = rng.integers(0, 64, size=(256, 1))
seq = (start + 3 * np.arange(17)[None, :] + rng.integers(0, 2, size=(256, 17))) % 64
np.save(d / "idx.npy", seq[:, :-1]); np.save(d / "targets.npy", seq[:, 1:])
PY
echo
echo "== plait-run gpt-train.plan --data data/ --steps 40 --log-jsonl log.jsonl"
"$bin/plait-run" "$out/gpt-train.plan" --data "$out/data" --steps 40 --log-jsonl "$out/log.jsonl" \
  --save-weights "$out/gpt.safetensors"
/usr/bin/python3 - "$out/log.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["step"] in (1, 10, 20, 30, 40):
        print(f"  step {r['step']:3d}  loss {r['loss']:.4f}  {r['step_ms']:.2f} ms")
PY

echo
echo "== plait-compile samples/gpt/gpt.onnx -o gpt-fsdp.plan --train --optimizer adamw --lr 3e-3 --world-size 2 --strategy fsdp --placement 'wte|wpe=ddp' --cluster samples/clusters/this-machine-cpu.yaml"
"$bin/plait-compile" "$sample/gpt.onnx" -o "$out/gpt-fsdp.plan" --train --optimizer adamw \
  --lr 3e-3 --world-size 2 --strategy fsdp --placement 'wte|wpe=ddp' --explain \
  --cluster "$root/samples/clusters/this-machine-cpu.yaml"
echo
echo "== plait-run gpt-fsdp.plan --nproc 2 --data data/ --steps 40 --log-jsonl log2.jsonl --checkpoint-dir ckpt/ --checkpoint-every 20"
"$bin/plait-run" "$out/gpt-fsdp.plan" --nproc 2 --data "$out/data" --steps 40 \
  --log-jsonl "$out/log2.jsonl" --checkpoint-dir "$out/ckpt" --checkpoint-every 20
/usr/bin/python3 - "$out/log2.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["step"] in (1, 10, 20, 30, 40):
        c = r["comm_bytes"]
        print(f"  step {r['step']:3d}  loss {r['loss']:.4f}  {r['step_ms']:.2f} ms  sent "
              f"{c['total']} B (all_reduce {c['all_reduce']}, reduce_scatter "
              f"{c['reduce_scatter']}, all_gather {c['all_gather']})")
PY

echo
echo "== plait-ckpt info ckpt/"
"$bin/plait-ckpt" info "$out/ckpt"
echo
echo "== plait-report gpt-fsdp.plan --log log2.jsonl -o report.html"
"$bin/plait-report" "$out/gpt-fsdp.plan" --log "$out/log2.jsonl" -o "$out/report.html"
