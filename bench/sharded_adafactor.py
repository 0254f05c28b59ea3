#!/usr/bin/env python3
"""Adafactor on flat shards against ddp: memory, wire bytes and step time on 2 CPU ranks.

A plait-zoo GPT (default 4 blocks of width 512, 8 heads, 128 tokens, vocabulary 8192: 21M
params; batch 4 per rank) is compiled for 2 ranks with Adafactor (--beta1 0.9: an exp_avg, which
shards) and, as the peer, with AdamW, each under ddp, zero1 and zero3. From each plan's report:
the optimizer state and the planned peak per rank, and the bytes each rank sends a step. Each
plan then runs on 2 ranks of one thread each (mpirun -np 2), alternating, --repeat times: the
median logged step after WARMUP steps, and the ratio to the same optimizer's ddp. A traced run
of each Adafactor plan gives rank 0's milliseconds a step in its optimizer kernels
(adafactor_update; sharded also adafactor_stats and adafactor_norms, the sums the whole kernel
takes itself).

Run with /usr/bin/python3:  sharded_adafactor.py BUILD [--steps 10] [--repeat 2]
                                                    [--layers 4] [--width 512]
"""
import argparse
import collections
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

import numpy as np

WARMUP = 3
WORLD = 2
BATCH = 4  # per rank
MPIRUN = ["mpirun", "--oversubscribe", "--allow-run-as-root", "-np", str(WORLD)]
ENV = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
OPTIMIZERS = {"adafactor": ["--optimizer", "adafactor", "--beta1", "0.9", "--lr", "1e-3"],
              "adamw": ["--optimizer", "adamw", "--lr", "1e-3"]}
PLACEMENTS = ["ddp", "zero1", "zero3"]


def run(cmd, **kwargs):
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=ENV,
                       timeout=900, **kwargs)
    if p.returncode != 0:
        sys.exit("failed: %s\n%s" % (" ".join(map(str, cmd)), p.stderr))
    return p


def step_ms(bindir, plan, data, steps, log):
    run(MPIRUN + [bindir / "plait-run", plan, "--data", data, "--steps", steps, "--threads", 1,
                  "--log-jsonl", log, "--progress", "none"])
    ms = [json.loads(line)["step_ms"] for line in log.read_text().splitlines()]
    return statistics.median(ms[WARMUP:])


def optimizer_kernels(bindir, plan, data, work):
    """Rank 0's ms a step in the adafactor_* kernels (a traced run, steps 3 and 4)."""
    trace = work / "trace.json"
    run(MPIRUN + [bindir / "plait-run", plan, "--data", data, "--steps", 4, "--threads", 1,
                  "--trace", trace, "--trace-steps", 4, "--progress", "none"])
    by, steps = collections.defaultdict(float), set()
    for e in json.loads(trace.read_text())["traceEvents"]:
        if (e.get("ph") == "X" and e.get("pid") == 0 and e.get("cat") == "compute"
                and e["name"].startswith("adafactor") and e["args"].get("step", 0) >= 3):
            by[e["name"]] += e["dur"] / 1000
            steps.add(e["args"]["step"])
    return {k: v / max(len(steps), 1) for k, v in by.items()}


def zoo_gpt(bindir, tmp, layers, width, steps):
    """A plait-zoo GPT (8 heads, 128 tokens, vocabulary 8192, batch BATCH) in `tmp`, and
    random token data for `steps` steps of WORLD ranks: (model, data directory)."""
    vocab, seq = 8192, 128
    model = tmp / "zoo.mlir"
    run([bindir / "plait-zoo", "--family", "gpt", "--layers", layers, "--width", width,
         "--heads", 8, "--batch", BATCH, "--seq", seq, "--vocab", vocab, "-o", model])
    data = tmp / "data"
    data.mkdir()
    rng = np.random.default_rng(0)
    rows = steps * BATCH * WORLD
    for name in ("idx", "targets"):
        np.save(data / (name + ".npy"), rng.integers(0, vocab, (rows, seq)).astype(np.int64))
    return model, data


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build", type=pathlib.Path)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--width", type=int, default=512)
    args = ap.parse_args()
    bindir = args.build / "bin"
    with tempfile.TemporaryDirectory(prefix="plait-adafactor-") as tmp:
        tmp = pathlib.Path(tmp)
        model, data = zoo_gpt(bindir, tmp, args.layers, args.width, args.steps)
        plans, reports = {}, {}
        for opt, flags in OPTIMIZERS.items():
            for placement in PLACEMENTS:
                key = (opt, placement)
                plans[key] = tmp / ("%s-%s.plan" % key)
                report = tmp / ("%s-%s.json" % key)
                run([bindir / "plait-compile", model, "--train", *flags, "--world-size", WORLD,
                     "--strategy", placement, "--report", report, "-o", plans[key]])
                reports[key] = json.loads(report.read_text())
        times = collections.defaultdict(list)
        for r in range(args.repeat):
            for key, plan in plans.items():
                times[key].append(step_ms(bindir, plan, data, args.steps, tmp / "log.jsonl"))
        kernels = {key: optimizer_kernels(bindir, plans[key], data, tmp)
                   for key in plans if key[0] == "adafactor"}
    params = reports[("adamw", "ddp")]["memory"]["params"] // 4
    print("plait-zoo GPT, %d blocks of width %d (%.1fM params), %d ranks of one thread, batch %d "
          "per rank; %d steps, medians after %d, %d runs alternating\n"
          % (args.layers, args.width, params / 1e6, WORLD, BATCH, args.steps, WARMUP,
             args.repeat))
    print("| optimizer | placement | optimizer state / rank | planned peak / rank | sent / rank "
          "a step | step ms | / its ddp | rank 0's optimizer kernels, ms a step |")
    print("|---|---|---:|---:|---:|---:|---:|---|")
    for key, report in reports.items():
        ms = statistics.median(times[key])
        ddp = statistics.median(times[(key[0], "ddp")])
        mem = report["memory"]
        detail = ", ".join("%s %.1f" % (k, v) for k, v in sorted(kernels.get(key, {}).items()))
        print("| %s | %s | %.2f MB | %.1f MB | %.2f MB | %.0f | %.2f | %s |" % (
            key[0], key[1], mem["optimizer"] / 1e6, mem["high_water"] / 1e6,
            report["comm"]["total"] / 1e6, ms, ms / ddp, detail or "—"))


if __name__ == "__main__":
    main()
