#!/usr/bin/env python3
"""Each kernel's time per training step on 1 thread and on 2, for a plait-zoo model on one rank.

Compiles `plait-zoo FAMILY ...` for training (AdamW), runs it with `plait-run --threads 1`
and `--threads 2`, alternating, --repeat times each, and traces every step
(`plait-run --trace`). Prints the median compute milliseconds per step (rank 0, the first 2
steps left out: warm-up) and, per kernel name, its median milliseconds per step on each
thread count and their ratio (the 2-thread speed-up; below 1: slower on two). With --against
BUILD2 the same table for a second build follows, measured in the same rounds (an A/B of a
runtime change; both builds compile the same model with their own plait-compile).

Run with /usr/bin/python3:
  kernel_threads.py BUILD [--against BUILD2] [--repeat 2] [--steps 8] -- ZOO-ARGS
e.g. -- --family cnn --layers 4 --width 32 --batch 16 --image 32
The families with x/y inputs (cnn, resnet, mlp) and idx/targets (gpt, llama) are fed random
data of the model's shapes.
"""
import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ENV = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
WARMUP = 2


def run(cmd):
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=ENV)
    if p.returncode != 0:
        sys.exit("FAILED (%d): %s\n%s%s" % (p.returncode, " ".join(map(str, cmd)), p.stdout,
                                           p.stderr))
    return p.stdout


def arg(zoo, name, default):
    return int(zoo[zoo.index(name) + 1]) if name in zoo else default


def make_data(zoo, steps, out):
    family = zoo[zoo.index("--family") + 1]
    rng = np.random.default_rng(1)
    batch = arg(zoo, "--batch", 4)
    if family in ("gpt", "llama"):
        seq, vocab = arg(zoo, "--seq", 16), arg(zoo, "--vocab", 64)
        tokens = rng.integers(0, vocab, size=(steps * batch, seq + 1), dtype=np.int64)
        np.save(out / "idx.npy", tokens[:, :-1])
        np.save(out / "targets.npy", tokens[:, 1:])
        return
    classes = arg(zoo, "--classes", 10)
    if family == "mlp":
        x = rng.standard_normal((steps * batch, arg(zoo, "--width", 64)))
    else:
        image = arg(zoo, "--image", 16 if family == "cnn" else 32)
        x = rng.standard_normal((steps * batch, 3, image, image))
    np.save(out / "x.npy", x.astype(np.float32))
    np.save(out / "y.npy", rng.integers(0, classes, size=(steps * batch,), dtype=np.int64))


def traced(build, plan, data, steps, threads, work):
    """Per step after the warm-up: {kernel name: ms}."""
    trace = work / "trace.json"
    run([build / "bin" / "plait-run", plan, "--data", data, "--steps", steps, "--threads",
         threads, "--trace", trace, "--trace-steps", steps])
    events = json.loads(trace.read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    per = collections.defaultdict(lambda: collections.defaultdict(float))
    for e in events:
        if (e.get("ph") == "X" and e.get("pid") == 0 and e.get("cat") == "compute" and
                e.get("args", {}).get("step", 1) > WARMUP):
            per[e["args"]["step"]][e["name"]] += e["dur"] / 1e3
    return list(per.values())


def median(values):
    return float(np.median(values)) if values else 0.0


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build", type=Path)
    ap.add_argument("--against", type=Path)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--top", type=int, default=8)
    ap.add_argument("zoo", nargs="+")
    args = ap.parse_args()
    builds = [args.build] + ([args.against] if args.against else [])
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        data = tmp / "data"
        data.mkdir()
        make_data(args.zoo, args.steps, data)
        plans = []
        for i, build in enumerate(builds):
            work = tmp / str(i)
            work.mkdir()
            run([build / "bin" / "plait-zoo", *args.zoo, "-o", work / "model.mlir"])
            run([build / "bin" / "plait-compile", work / "model.mlir", "--train", "--optimizer",
                 "adamw", "--lr", "1e-3", "-o", work / "step.plan"])
            plans.append(work)
        steps = {(i, t): [] for i in range(len(builds)) for t in (1, 2)}
        for _ in range(args.repeat):
            for i, build in enumerate(builds):
                for t in (1, 2):
                    steps[(i, t)] += traced(build, plans[i] / "step.plan", data, args.steps, t,
                                            plans[i])
        print("plait-zoo %s, one rank, AdamW; ms per step, median of %d traced steps" %
              (" ".join(args.zoo), args.repeat * (args.steps - WARMUP)))
        for i, build in enumerate(builds):
            one = [sum(s.values()) for s in steps[(i, 1)]]
            two = [sum(s.values()) for s in steps[(i, 2)]]
            print("\n%s: compute %.2f on 1 thread, %.2f on 2 (x%.2f)" % (
                build, median(one), median(two), median(one) / median(two)))
            names = sorted({k for s in steps[(i, 2)] for k in s},
                           key=lambda k: -median([s.get(k, 0) for s in steps[(i, 2)]]))
            print("  %-24s %9s %9s %7s" % ("kernel", "1 thread", "2 threads", "x"))
            for k in names[:args.top]:
                a = median([s.get(k, 0) for s in steps[(i, 1)]])
                b = median([s.get(k, 0) for s in steps[(i, 2)]])
                print("  %-24s %9.3f %9.3f %7.2f" % (k, a, b, a / b if b else 0))


if __name__ == "__main__":
    main()
