#!/usr/bin/env python3
"""plait-run --trace on several ranks: the Chrome trace holds every rank's compute and comm.

Compiles a sample for W ranks, trains it for a few steps under `plait-run --nproc W --trace`,
and checks the trace file rank 0 wrote:
  - a Chrome trace document (traceEvents, displayTimeUnit), one process per rank (pid = rank,
    process_name "rank R"), thread 0 "compute" and thread 1 "comm";
  - each rank has one "step" event per traced step (--trace-steps), one compute event per
    instruction of the plan in each (the report's kernels_per_step) and one comm event per
    collective (the report's collectives_per_step), with its bytes and group size;
  - every event lies inside its step's event, and the ranks' steps overlap in time (their
    clocks share an origin: the collectives make a step on one rank wait for the others).

  trace_ranks.py --build BUILD [--sample gpt] [--world 2] [--strategy fsdp]
  trace_ranks.py --check TRACE.json --report REPORT.json --ranks W --steps S   (the checks alone)

Run with /usr/bin/python3.
"""
import argparse
import json
import pathlib
import subprocess
import sys
import tempfile
from collections import defaultdict

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
TRAIN = {
    "mlp": ["--optimizer", "sgd", "--lr", "0.05", "--momentum", "0.9"],
    "gpt": ["--optimizer", "adamw", "--lr", "3e-3"],
}
SLACK_US = 1e-3  # timestamps are exact microseconds with 3 decimals; sums may round


def fail(message):
    sys.exit("FAILED: " + message)


def check(trace_path, report_path, ranks, steps):
    doc = json.loads(pathlib.Path(trace_path).read_text())
    report = json.loads(pathlib.Path(report_path).read_text())
    if not isinstance(doc.get("traceEvents"), list) or "displayTimeUnit" not in doc:
        fail("not a Chrome trace document (traceEvents, displayTimeUnit)")
    instructions = report["kernels_per_step"]
    collectives = sum(report.get("collectives_per_step", {}).values())

    names = {}  # (pid, tid or None, what) -> name
    by_rank = defaultdict(list)
    for e in doc["traceEvents"]:
        if e["ph"] == "M":
            if e["name"] in ("process_name", "thread_name"):
                key = (e["pid"], e["tid"] if e["name"] == "thread_name" else None, e["name"])
                names[key] = e["args"]["name"]
        elif e["ph"] == "X":
            by_rank[e["pid"]].append(e)
        else:
            fail("unexpected event phase %r" % e["ph"])
    if sorted(by_rank) != list(range(ranks)):
        fail("pids %s, expected ranks 0..%d" % (sorted(by_rank), ranks - 1))

    step_spans = defaultdict(dict)  # step -> rank -> (begin, end)
    for rank, events in sorted(by_rank.items()):
        if names.get((rank, None, "process_name")) != "rank %d" % rank:
            fail("rank %d: process_name %r" % (rank, names.get((rank, None, "process_name"))))
        if names.get((rank, 0, "thread_name")) != "compute" or \
                names.get((rank, 1, "thread_name")) != "comm":
            fail("rank %d: threads 0 and 1 are not named compute and comm" % rank)
        spans = {e["args"]["step"]: (e["ts"], e["ts"] + e["dur"])
                 for e in events if e["cat"] == "step"}
        if sorted(spans) != list(range(1, steps + 1)):
            fail("rank %d: step events for steps %s, expected 1..%d" % (rank, sorted(spans), steps))
        compute = defaultdict(int)
        comm = defaultdict(int)
        for e in events:
            if e["cat"] == "step":
                continue
            step = e["args"]["step"]
            begin, end = spans[step]
            if e["ts"] < begin - SLACK_US or e["ts"] + e["dur"] > end + SLACK_US:
                fail("rank %d: %s (%s) at [%s, +%s] is outside step %d [%s, %s]"
                     % (rank, e["name"], e["cat"], e["ts"], e["dur"], step, begin, end))
            if e["cat"] == "compute" and "instr" in e["args"]:
                if e["tid"] != 0:
                    fail("rank %d: compute event on thread %d" % (rank, e["tid"]))
                compute[step] += 1
            if e["cat"] == "comm":
                if e["tid"] < 1:
                    fail("rank %d: comm event on the compute thread" % rank)
                if e["args"]["bytes"] <= 0 or not 1 <= e["args"]["group_size"] <= ranks:
                    fail("rank %d: comm event args %s" % (rank, e["args"]))
                comm[step] += 1
        for step in range(1, steps + 1):
            if compute[step] != instructions:
                fail("rank %d step %d: %d instruction events, the plan has %d instructions"
                     % (rank, step, compute[step], instructions))
            if comm[step] != collectives:
                fail("rank %d step %d: %d comm events, the plan has %d collectives per step"
                     % (rank, step, comm[step], collectives))
            step_spans[step][rank] = spans[step]
        print("rank %d: %d steps, %d instructions and %d collectives per step, every event "
              "inside its step" % (rank, steps, instructions, collectives))
    if ranks > 1 and collectives > 0:
        for step, spans in sorted(step_spans.items()):
            latest_begin = max(b for b, _ in spans.values())
            earliest_end = min(e for _, e in spans.values())
            if latest_begin > earliest_end:
                fail("step %d does not overlap across ranks: %s" % (step, spans))
        print("steps overlap across the %d ranks" % ranks)


def run(cmd):
    p = subprocess.run([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=100)
    if p.returncode != 0:
        fail("(%d) %s\n%s%s" % (p.returncode, " ".join(map(str, cmd)), p.stdout, p.stderr))
    return p.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", help="build directory holding bin/plait-compile, bin/plait-run")
    ap.add_argument("--sample", default="gpt", choices=sorted(TRAIN))
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--strategy", default="fsdp")
    ap.add_argument("--steps", type=int, default=3, help="steps run")
    ap.add_argument("--trace-steps", type=int, default=2, help="steps traced")
    ap.add_argument("--check", help="check this trace file only (with --report, --ranks, --steps)")
    ap.add_argument("--report")
    ap.add_argument("--ranks", type=int)
    args = ap.parse_args()
    if args.check:
        check(args.check, args.report, args.ranks, args.steps)
        return
    if not args.build:
        ap.error("--build or --check is required")
    bindir = pathlib.Path(args.build) / "bin"
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        plan, report, trace = tmp / "model.plan", tmp / "report.json", tmp / "trace.json"
        run([bindir / "plait-compile", ROOT / "samples" / args.sample / (args.sample + ".onnx"),
             "-o", plan, "--train", *TRAIN[args.sample], "--world-size", args.world,
             "--strategy", args.strategy, "--report", report])
        data = tmp / "data"  # the sample's batch, once per rank
        data.mkdir()
        for f in (ROOT / "samples" / args.sample / "inputs").glob("*.npy"):
            np.save(data / f.name, np.concatenate([np.load(f)] * args.world))
        out = run([bindir / "plait-run", "--nproc", args.world, plan, "--data", data,
                   "--steps", args.steps, "--trace", trace, "--trace-steps", args.trace_steps,
                   "--progress", "none"])
        print(out, end="")
        check(trace, report, args.world, min(args.steps, args.trace_steps))
    print("OK")


if __name__ == "__main__":
    main()
