#!/usr/bin/env python3
"""CPU training step and peak memory: the fused attention against the decomposed one.

For each sequence length SEQ, a plait-zoo GPT (2 blocks of width 256, 4 heads of 64, vocab
512, batch 4) is compiled twice with `plait-compile --train --optimizer adamw --lr 1e-3`: as
is (plait-fuse-attention: one plait.attention kernel per block, its gradient recomputing the
scores) and with --no-fused-attention (matmul, scale, causal mask, softmax, matmul, each
keeping its [B, H, S, S] result for the backward). Every other fusion is on in both. The
peak bytes per rank are the memory plan's (`memory.peak` of the report: what the plan
guarantees, not a measurement). Both plans train the same token batches for WARMUP + STEPS
steps with `plait-run --log-jsonl --threads 1` on one thread; a run's step time
is the median of its logged step_ms after the warm-up, the runs alternate fused, decomposed,
fused, ... REPEAT times, and the table shows the medians of the runs. The last column is the
largest relative difference of the two plans' per-step losses.

Run with /usr/bin/python3:  attention_step.py BUILD [--seqs 128,256,512] [--steps N]
                                                     [--repeat R] [--json OUT]
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

import numpy as np

WARMUP = 2
WIDTH, HEADS, LAYERS, BATCH, VOCAB = 256, 4, 2, 4, 512


def run_checked(cmd, env=None, timeout=600):
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env,
                          timeout=timeout)
    if proc.returncode != 0:
        sys.exit("failed: %s\n%s%s" % (" ".join(map(str, cmd)), proc.stdout, proc.stderr))
    return proc.stdout


def step_log(path):
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    rows.sort(key=lambda r: r["step"])
    return [r["step_ms"] for r in rows], [r["loss"] for r in rows]


def alternate(build, plans, data, steps, repeat, work):
    """Trains each of `plans` ("fused", "decomposed", and any others) on `data` for WARMUP +
    steps steps, on one thread, alternating REPEAT times. Returns each variant's per-run
    median step_ms after the warm-up, and the largest relative difference of the fused and
    decomposed plans' per-step losses."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    times = {variant: [] for variant in plans}
    losses = {}
    for i in range(repeat):
        for variant in plans:
            log = work / ("%s-%d.jsonl" % (variant, i))
            run_checked([build / "bin" / "plait-run", plans[variant], "--data", data, "--steps",
                         WARMUP + steps, "--log-jsonl", log, "--progress", "none",
                         "--threads", "1"], env=env)
            ms, loss = step_log(log)
            times[variant].append(statistics.median(ms[WARMUP:]))
            losses[variant] = loss
    fl, dl = np.array(losses["fused"]), np.array(losses["decomposed"])
    return times, float(np.max(np.abs(fl - dl) / np.maximum(np.abs(dl), 1e-12)))


def bench_seq(build, seq, steps, repeat, tmp):
    work = tmp / ("seq%d" % seq)
    data = work / "data"
    data.mkdir(parents=True)
    model = work / "gpt.mlir"
    run_checked([build / "bin" / "plait-zoo", "--family", "gpt", "--layers", LAYERS, "--width",
                 WIDTH, "--heads", HEADS, "--batch", BATCH, "--seq", seq, "--vocab", VOCAB,
                 "-o", model])
    rng = np.random.default_rng(seq)
    tokens = rng.integers(0, VOCAB, size=((WARMUP + steps) * BATCH, seq + 1), dtype=np.int64)
    np.save(data / "idx.npy", tokens[:, :-1])
    np.save(data / "targets.npy", tokens[:, 1:])
    plans, peaks, kernels = {}, {}, {}
    for variant, flags in (("fused", []), ("decomposed", ["--no-fused-attention"])):
        plan, report = work / ("%s.plan" % variant), work / ("%s.json" % variant)
        run_checked([build / "bin" / "plait-compile", model, "--train", "--optimizer", "adamw",
                     "--lr", "1e-3", "--report", report, "-o", plan] + flags)
        r = json.loads(report.read_text())
        plans[variant], peaks[variant], kernels[variant] = plan, r["memory"]["peak"], \
            r["kernels_per_step"]
    times, rel = alternate(build, plans, data, steps, repeat, work)
    return {"seq": seq, "peak_fused": peaks["fused"], "peak_decomposed": peaks["decomposed"],
            "kernels_fused": kernels["fused"], "kernels_decomposed": kernels["decomposed"],
            "ms_fused": statistics.median(times["fused"]),
            "ms_decomposed": statistics.median(times["decomposed"]), "max_rel_loss": rel}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build", type=pathlib.Path)
    ap.add_argument("--seqs", default="128,256,512")
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", type=pathlib.Path)
    args = ap.parse_args()
    rows = []
    print("GPT %d blocks, width %d, %d heads, batch %d, vocab %d; AdamW; 1 thread" % (
        LAYERS, WIDTH, HEADS, BATCH, VOCAB))
    print("%5s  %14s %14s %6s  %9s %9s %6s  %9s  %12s" % (
        "seq", "peak fused B", "peak decomp B", "ratio", "ms fused", "ms decomp", "speed",
        "kernels", "max rel loss"))
    with tempfile.TemporaryDirectory(prefix="plait-attention-") as tmp:
        for seq in [int(s) for s in args.seqs.split(",")]:
            r = bench_seq(args.build, seq, args.steps, args.repeat, pathlib.Path(tmp))
            rows.append(r)
            print("%5d  %14d %14d %5.2fx  %9.2f %9.2f %5.2fx  %4d/%-4d  %12.3g" % (
                r["seq"], r["peak_fused"], r["peak_decomposed"],
                r["peak_decomposed"] / r["peak_fused"], r["ms_fused"], r["ms_decomposed"],
                r["ms_decomposed"] / r["ms_fused"], r["kernels_fused"],
                r["kernels_decomposed"], r["max_rel_loss"]), flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
