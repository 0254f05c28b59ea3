#!/usr/bin/env python3
"""Resuming at another global batch (a batch-size ramp), against PyTorch.

For a sample with its train_parity config (mlp-sgd: SGD, Nesterov momentum, weight decay;
gpt-adamw: AdamW, clipping, a cosine schedule):
  1. The committed model (batch B) trains S1 steps on one rank and checkpoints.
  2. The model re-pinned to a global batch B2 resumes from that checkpoint and trains S2 more
     steps: on one rank, and on 2 ranks under zero2 (B2 / 2 per rank).
The data has N samples, and B2 does not divide what is left of it after step S1, so the
second phase runs into the end of the epoch and starts over at sample 0. The reference is
the sample's PyTorch module with torch.optim, fed the same way: each step takes the next
global batch, and where a whole one no longer fits, the epoch starts over.
Checked per resumed run: losses within 1e-4 relative and final weights (train_parity's
compare_training), the resume's note on stderr, and the last checkpoint's samples_seen
(S1 * B + S2 * B2) and data_position.

Run with /usr/bin/python3:  batch_change_resume.py --build BUILD --sample mlp
"""
import argparse
import json
import pathlib
import shutil
import subprocess
import sys
import tempfile

import onnx

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from dp_parity import rebatch  # noqa: E402
from train_parity import (CONFIGS, SAMPLES, build_torch_model, compare_training,  # noqa: E402
                          make_dataset, read_safetensors, train_torch)

# sample -> (config, B2, S1, S2, batches of B in the data: N = that x B)
CASES = {"mlp": ("mlp-sgd", 12, 6, 10, 13), "gpt": ("gpt-adamw", 6, 6, 10, 13)}
MPIRUN = ["mpirun", "--oversubscribe", "--allow-run-as-root"]


def run(cmd, timeout=240):
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        sys.exit("FAILED (%d): %s\n%s%s" % (p.returncode, " ".join(map(str, cmd)), p.stdout,
                                           p.stderr))
    return p


def positions(samples, batches):
    """The first sample of each step's global batch, for a run of `batches` (one size per
    step): the next batch each step, sample 0 where a whole one no longer fits."""
    out, pos = [], 0
    for b in batches:
        if pos + b > samples:
            pos = 0
        out.append(pos)
        pos += b
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", required=True, type=pathlib.Path)
    ap.add_argument("--sample", required=True, choices=sorted(CASES))
    args = ap.parse_args()
    name = args.sample
    config, b2, s1, s2, batches_in_data = CASES[name]
    cfg = CONFIGS[config]
    bindir = args.build / "bin"
    committed = SAMPLES / name / (name + ".onnx")
    ok = True
    with tempfile.TemporaryDirectory(prefix="plait-ramp-") as tmp:
        tmp = pathlib.Path(tmp)
        (tmp / "data").mkdir()
        data, b = make_dataset(name, batches_in_data, tmp / "data")
        n = batches_in_data * b
        steps = s1 + s2
        input_order = [i.name for i in onnx.load(str(committed)).graph.input]
        sizes = [b] * s1 + [b2] * s2
        wrap = positions(n, sizes)
        ref_losses, ref_weights = train_torch(build_torch_model(name, committed), cfg, data, b,
                                              s1 + s2, input_order, spans=list(zip(wrap, sizes)))
        print("%s: %d samples; steps 1-%d at batch %d, %d-%d at %d; positions %s" % (
            name, n, s1, b, s1 + 1, steps, b2, wrap))

        first = tmp / "first.plan"
        run([bindir / "plait-compile", committed, "--train", *cfg["flags"], "-o", first])
        run([bindir / "plait-run", first, "--data", tmp / "data", "--steps", s1,
             "--checkpoint-dir", tmp / "ck", "--log-jsonl", tmp / "first.jsonl",
             "--progress", "none"])

        for world, strategy in ((1, None), (2, "zero2")):
            label = "%s resumed at batch %d on %d rank%s%s" % (
                name, b2, world, "" if world == 1 else "s", " (%s)" % strategy if strategy else "")
            model = tmp / ("b%d.onnx" % (b2 // world))
            rebatch(committed, model, b2 // world)
            plan = tmp / ("w%d.plan" % world)
            dist = ["--world-size", str(world), "--strategy", strategy] if strategy else []
            run([bindir / "plait-compile", model, "--train", *cfg["flags"], *dist, "-o", plan])
            ck, log = tmp / ("ck%d" % world), tmp / ("w%d.jsonl" % world)
            shutil.copytree(tmp / "ck", ck)
            shutil.copy(tmp / "first.jsonl", log)
            cmd = [bindir / "plait-run", plan, "--data", tmp / "data", "--steps", steps,
                   "--checkpoint-dir", ck, "--resume", "--log-jsonl", log,
                   "--save-weights", tmp / ("w%d.safetensors" % world), "--progress", "none"]
            p = run(MPIRUN + ["-np", str(world)] + cmd if world > 1 else cmd)
            note = ("its steps took a global batch of %d samples, %s takes %d: the data "
                    "continues at sample %d (%d samples seen)" % (b, plan, b2, wrap[s1], s1 * b))
            if note not in p.stderr:
                print("%s: stderr lacks the note %r:\n%s" % (label, note, p.stderr))
                ok = False
            records = [json.loads(line) for line in log.read_text().splitlines()]
            losses = [r["loss"] for r in records]
            ok &= compare_training(label, losses, read_safetensors(
                tmp / ("w%d.safetensors" % world)), ref_losses, ref_weights, cfg["noise_only"])
            meta = json.loads(next(ck.glob("step-%08d/meta.json" % steps)).read_text())["body"]
            seen, at = meta["samples_seen"], meta["data_position"]
            want_at = positions(n, [b] * s1 + [b2] * (s2 + 1))[-1]
            if (seen, at) != (s1 * b + s2 * b2, want_at):
                print("%s: the last checkpoint says samples_seen %d, data_position %d; "
                      "expected %d, %d" % (label, seen, at, s1 * b + s2 * b2, want_at))
                ok = False
    print("%s: %s" % (name, "ok" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
