#!/usr/bin/env python3
"""Thread parity: one plan trains alike on one thread and on two (plait-run --threads).

Two plans, AdamW, STEPS steps each on the same batches:
  - a plait-zoo GPT (2 blocks of width 128, 2 heads of 64, 128 tokens, batch 4) large enough
    that its GEMMs, attention heads, fused kernels, layer norms, loss gradient and optimizer
    updates are split across the threads (runtime/cpu/Parallel.h). Per-step losses must agree
    within 1e-6 relative: attention_grad's row blocks shrink when its heads are split, and its
    dk and dv sums round differently. The script prints the largest difference;
  - the GPT sample, whose kernels are all too small to split: its losses must be bit-identical.
Each run's summary must say how many threads it used. The sample is compiled with --cluster
(this-machine-cpu, whose thread scaling gives its one rank 2 threads): its step-time line must
say which thread count the prediction is for exactly when the run used another. Bad --threads
values must fail with one line and exit code 1.

Run with /usr/bin/python3:  threads_parity.py --build BUILD [--steps 20]
"""
import argparse
import json
import pathlib
import subprocess
import sys
import tempfile

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
SAMPLE = HERE.parent.parent / "samples" / "gpt" / "gpt.onnx"
CLUSTER = HERE.parent.parent / "samples" / "clusters" / "this-machine-cpu.yaml"
TRAIN = ["--train", "--optimizer", "adamw", "--lr", "1e-3"]
ZOO = ["--family", "gpt", "--layers", "2", "--width", "128", "--heads", "2", "--batch", "4",
       "--seq", "128", "--vocab", "256"]


def run(cmd, expect_ok=True):
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=300)
    if expect_ok and proc.returncode != 0:
        sys.exit("failed: %s\n%s%s" % (" ".join(map(str, cmd)), proc.stdout, proc.stderr))
    return proc


def tokens(path, steps, batch, seq, vocab, seed):
    path.mkdir(parents=True)
    rng = np.random.default_rng(seed)
    t = rng.integers(0, vocab, size=(steps * batch, seq + 1), dtype=np.int64)
    np.save(path / "idx.npy", t[:, :-1])
    np.save(path / "targets.npy", t[:, 1:])


def losses(run_bin, plan, data, steps, threads, log, predicted_threads):
    proc = run([run_bin, plan, "--data", data, "--steps", steps, "--threads", threads,
                "--log-jsonl", log, "--progress", "none"])
    want = "threads: %d per rank" % threads
    if want not in proc.stdout:
        sys.exit("%s --threads %d: the summary does not say '%s':\n%s"
                 % (plan, threads, want, proc.stdout))
    # A plan with a prediction (--cluster): on another thread count than the prediction's,
    # the step-time line says which it is for.
    note = "a prediction for"
    want = None
    if predicted_threads is not None and predicted_threads != threads:
        want = "a prediction for %d thread%s per rank; this run used %d" % (
            predicted_threads, "" if predicted_threads == 1 else "s", threads)
    if (want is None and note in proc.stdout) or (want is not None and want not in proc.stdout):
        sys.exit("%s --threads %d: the step-time line should %s:\n%s"
                 % (plan, threads, "say '%s'" % want if want else "not say '%s'" % note,
                    proc.stdout))
    rows = sorted((json.loads(line) for line in log.read_text().splitlines() if line.strip()),
                  key=lambda r: r["step"])
    return [r["loss"] for r in rows]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", required=True, type=pathlib.Path)
    ap.add_argument("--steps", type=int, default=20)
    args = ap.parse_args()
    bins = args.build / "bin"
    failures = []
    with tempfile.TemporaryDirectory(prefix="plait-threads-") as tmp:
        tmp = pathlib.Path(tmp)
        zoo = tmp / "zoo.mlir"
        run([bins / "plait-zoo", *ZOO, "-o", zoo])
        cases = [("zoo-gpt-128", zoo, (4, 128, 256), 1e-6, []),
                 ("sample-gpt", SAMPLE, (4, 16, 64), 0.0, ["--cluster", CLUSTER])]
        for label, model, (batch, seq, vocab), tolerance, extra in cases:
            plan = tmp / (label + ".plan")
            report = tmp / (label + ".json")
            run([bins / "plait-compile", model, "-o", plan, "--report", report, *TRAIN, *extra])
            data = tmp / (label + "-data")
            tokens(data, args.steps, batch, seq, vocab, seed=seq)
            predicted = json.loads(report.read_text()).get("predicted")
            predicted = predicted["threads_per_rank"] if predicted else None
            one = losses(bins / "plait-run", plan, data, args.steps, 1, tmp / (label + "-1.jsonl"),
                         predicted)
            two = losses(bins / "plait-run", plan, data, args.steps, 2, tmp / (label + "-2.jsonl"),
                         predicted)
            if len(one) != args.steps or len(two) != args.steps:
                failures.append("%s: %d and %d steps logged" % (label, len(one), len(two)))
                continue
            worst = max(abs(a - b) / max(abs(a), 1e-30) for a, b in zip(one, two))
            print("%-12s losses %.6f -> %.6f; 1 vs 2 threads: max rel diff %.3g (bound %g)"
                  % (label, one[0], one[-1], worst, tolerance))
            if worst > tolerance:
                failures.append("%s: 1 vs 2 threads differ by %.3g relative (bound %g)"
                                % (label, worst, tolerance))
            if not one[-1] < one[0]:
                failures.append("%s: the loss did not fall (%g -> %g)" % (label, one[0], one[-1]))
        plan = tmp / "sample-gpt.plan"
        for bad in ("-1", "257"):
            proc = run([bins / "plait-run", plan, "--threads", bad], expect_ok=False)
            lines = proc.stderr.strip().splitlines()
            if proc.returncode != 1 or len(lines) != 1 or "--threads" not in lines[0]:
                failures.append("--threads %s: exit %d, stderr %r (want 1 and one line naming "
                                "--threads)" % (bad, proc.returncode, proc.stderr))
    for f in failures:
        print("FAIL:", f)
    if failures:
        sys.exit(1)
    print("threads parity: OK")


if __name__ == "__main__":
    main()
