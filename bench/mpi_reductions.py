#!/usr/bin/env python3
"""plait's pairwise reductions against Open MPI's own: collectives alone, then training steps.

1. plait-bench-reduce under mpirun (2 ranks, and --ranks more; bf16 on 2): float all-reduces
   (in place, as plans run them) and reduce-scatters from 1 KiB to --max-mib through plait's
   communicator, summed by the pairwise exchange and by Open MPI 4.1's non-blocking
   collectives (MPI_Iallreduce, MPI_Ireduce_scatter_block), alternating; each the median of
   the slowest rank's start-to-wait.
2. A plait-zoo GPT (default 4 blocks of width 512, 8 heads, 128 tokens, vocabulary 8192: 21M
   params; batch 4 per rank, AdamW) compiled for 2 ranks under ddp, zero1, zero2 and zero3 runs
   on 2 ranks of one thread each with plait-run --reduce-algorithm auto (the default: the
   exchange on 2 ranks) and mpi, alternating, --repeat times: the median logged step after
   WARMUP steps, their ratio, and the compiler's predicted step (--report's
   predicted_step_ms) on a spec plait-calibrate --nproc 2 measures first (its collectives
   through plait's communicator, --reduce-algorithm auto), unless --cluster names one.

Run with /usr/bin/python3:  mpi_reductions.py BUILD [--steps 10] [--repeat 2] [--ranks 4]
                                               [--max-mib 64] [--dtypes f32 bf16]
                                               [--cluster SPEC.yaml]
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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sharded_adafactor import BATCH, ENV, WARMUP, WORLD, zoo_gpt  # noqa: E402
PLACEMENTS = ["ddp", "zero1", "zero2", "zero3"]
ALGORITHMS = ["auto", "mpi"]


def mpirun(n):
    return ["mpirun", "--oversubscribe", "--allow-run-as-root", "-np", str(n)]


def run(cmd):
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=ENV,
                       timeout=1200)
    if p.returncode != 0:
        sys.exit("failed: %s\n%s" % (" ".join(map(str, cmd)), p.stderr))
    return p.stdout


def step_ms(bindir, plan, data, steps, algorithm, log):
    run(mpirun(WORLD) + [bindir / "plait-run", plan, "--data", data, "--steps", steps,
                         "--threads", 1, "--log-jsonl", log, "--progress", "none",
                         "--reduce-algorithm", algorithm])
    ms = [json.loads(line)["step_ms"] for line in log.read_text().splitlines()]
    log.unlink()
    return statistics.median(ms[WARMUP:])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build", type=pathlib.Path)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--ranks", type=int, nargs="*", default=[4],
                    help="rank counts for the collectives table besides 2")
    ap.add_argument("--max-mib", type=int, default=64)
    ap.add_argument("--dtypes", nargs="*", default=["f32", "bf16"],
                    help="the collectives' dtypes (bf16: bf16-mixed gradients; on 2 ranks)")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--width", type=int, default=512)
    ap.add_argument("--cluster", type=pathlib.Path, default=None)
    args = ap.parse_args()
    bindir = args.build / "bin"

    for dtype in args.dtypes:
        for ranks in [WORLD] + (args.ranks if dtype == "f32" else []):
            print(run(mpirun(ranks) + [bindir / "plait-bench-reduce", args.max_mib, 7, dtype]))

    with tempfile.TemporaryDirectory(prefix="plait-reductions-") as tmp:
        tmp = pathlib.Path(tmp)
        model, data = zoo_gpt(bindir, tmp, args.layers, args.width, args.steps)
        plans, reports = {}, {}
        spec = args.cluster
        if spec is None:
            spec = tmp / "cluster.yaml"
            run([bindir / "plait-calibrate", "--nproc", WORLD, "-o", spec])
        cluster = ["--cluster", spec]
        for placement in PLACEMENTS:
            plans[placement] = tmp / ("%s.plan" % placement)
            report = tmp / ("%s.json" % placement)
            run([bindir / "plait-compile", model, "--train", "--optimizer", "adamw", "--lr",
                 "1e-3", "--world-size", WORLD, "--strategy", placement, *cluster,
                 "--report", report, "-o", plans[placement]])
            reports[placement] = json.loads(report.read_text())
        times = collections.defaultdict(list)
        for _ in range(args.repeat):
            for placement, plan in plans.items():
                for algorithm in ALGORITHMS:
                    times[(placement, algorithm)].append(
                        step_ms(bindir, plan, data, args.steps, algorithm, tmp / "log.jsonl"))
    params = reports["ddp"]["memory"]["params"] // 4
    print("plait-zoo GPT, %d blocks of width %d (%.1fM params), AdamW, %d ranks of one thread, "
          "batch %d per rank; %d steps, medians after %d, %d runs alternating\n"
          % (args.layers, args.width, params / 1e6, WORLD, BATCH, args.steps, WARMUP,
             args.repeat))
    print("| placement | sent / rank a step | step ms, Open MPI (mpi) | step ms, pairwise (auto) "
          "| mpi / auto | predicted step ms |")
    print("|---|---:|---:|---:|---:|---:|")
    for placement, report in reports.items():
        mpi = statistics.median(times[(placement, "mpi")])
        auto = statistics.median(times[(placement, "auto")])
        print("| %s | %.1f MB | %.0f | %.0f | %.2f | %.0f |" % (
            placement, report["comm"]["total"] / 1e6, mpi, auto, mpi / auto,
            report["predicted_step_ms"]))


if __name__ == "__main__":
    main()
