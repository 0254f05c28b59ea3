#!/usr/bin/env python3
"""Predicted vs measured training step time: the cost model against plait-run on this machine.

1. Calibrates this machine in the same run, right before measuring (its load varies):
   `plait-calibrate --nproc 2 -o SPEC.yaml` (--quick-calibrate: its --quick mode).
2. For each sample (mlp, cnn, gpt) x strategy (ddp, zero2, fsdp) x world size (2, 4): the
   sample's ONNX file re-pinned to batch B/W (B = the committed global batch, as
   tests/e2e/dp_parity.py does), compiled with `--train --optimizer adamw --world-size W
   --strategy S --cluster SPEC.yaml --report R.json`; the report's predicted_step_ms is the
   prediction.
3. Runs the plan for STEPS steps: `plait-run PLAN --nproc W --data DIR --log-jsonl LOG`
   (OPENBLAS_NUM_THREADS=1, as calibrated). The measurement is the median step_ms of rank 0
   without the first 3 steps; with --repeat R, the median of R runs' medians.
Prints every pair with its error (predicted / measured - 1), then the median absolute error
and whether it is at most --target (15%). --detail also prints, per pair, the predicted and
traced (plait-run --trace) milliseconds per kernel name.

Run with /usr/bin/python3:
  predict_step_time.py BUILD [--steps 30] [--repeat 1] [--worlds 2,4] [--only gpt]
                             [--spec SPEC.yaml | --quick-calibrate] [--detail] [--json OUT]
"""
import argparse
import collections
import datetime
import json
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"
sys.path.insert(0, str(ROOT / "tests" / "e2e"))
from dp_parity import rebatch  # noqa: E402
from train_parity import make_dataset  # noqa: E402

MODELS = ["mlp", "cnn", "gpt"]
STRATEGIES = ["ddp", "zero2", "fsdp"]
WARMUP = 3
ENV = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")


def run(cmd, timeout=600):
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout,
                       env=ENV)
    if p.returncode != 0:
        sys.exit("FAILED (%d): %s\n%s%s" % (p.returncode, " ".join(map(str, cmd)), p.stdout,
                                           p.stderr))
    return p.stdout


def traced_ms(trace_path, steps):
    """Per kernel name: traced milliseconds per step on rank 0 (the traced steps after the
    first)."""
    events = json.loads(trace_path.read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    per = collections.defaultdict(float)
    seen = set()
    for e in events:
        if e.get("pid") != 0 or e.get("ph") != "X" or e.get("args", {}).get("step", 1) <= 1:
            continue
        if e.get("cat") in ("compute", "comm", "wait"):
            per[e["name"]] += e["dur"] / 1e3
            seen.add(e["args"]["step"])
    n = max(len(seen), 1)
    return {k: v / n for k, v in per.items()}


def measure(build, plan, data, world, steps, work, trace):
    log = work / "log.jsonl"
    cmd = [build / "bin" / "plait-run", plan, "--nproc", world, "--data", data, "--steps",
           steps, "--log-jsonl", log, "--progress", "none"]
    if trace:
        cmd += ["--trace", work / "trace.json", "--trace-steps", min(steps, 6)]
    run(["timeout", "300"] + cmd, 320)
    records = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    return statistics.median(r["step_ms"] for r in records[WARMUP:])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build", type=pathlib.Path)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--repeat", type=int, default=1, help="runs per pair (median of medians)")
    ap.add_argument("--worlds", default="2,4")
    ap.add_argument("--only", action="append", choices=MODELS)
    ap.add_argument("--strategies", default=",".join(STRATEGIES))
    ap.add_argument("--spec", type=pathlib.Path, help="use this spec instead of calibrating")
    ap.add_argument("--quick-calibrate", action="store_true")
    ap.add_argument("--target", type=float, default=0.15)
    ap.add_argument("--detail", action="store_true")
    ap.add_argument("--json", type=pathlib.Path)
    args = ap.parse_args()
    worlds = [int(w) for w in args.worlds.split(",")]
    strategies = args.strategies.split(",")
    rows = []
    with tempfile.TemporaryDirectory(prefix="plait-predict-") as tmp:
        tmp = pathlib.Path(tmp)
        spec = args.spec
        if spec is None:
            spec = tmp / "this-machine.yaml"
            cmd = [args.build / "bin" / "plait-calibrate", "--nproc", "2", "-o", spec]
            run(cmd + (["--quick"] if args.quick_calibrate else []))
        spec_text = spec.read_text()
        print("spec: %s" % spec)
        for line in spec_text.splitlines():
            if not line.startswith("#") and any(k in line for k in (
                    "memory_bandwidth", "peak_flops", "efficiency", "launch_overhead",
                    "intra_node")):
                print("  " + line.strip())
        print()
        header = "%-5s %-6s %5s %12s %12s %8s   %s" % (
            "model", "strat", "world", "predicted", "measured", "error", "predicted split")
        print(header)
        print("-" * len(header))
        for name in args.only or MODELS:
            data = tmp / name / "data"
            data.mkdir(parents=True)
            _, global_batch = make_dataset(name, args.steps, data)
            for world in worlds:
                if global_batch % world:
                    print("%-5s world %d: global batch %d does not split" % (
                        name, world, global_batch))
                    continue
                model = tmp / name / ("%s-b%d.onnx" % (name, global_batch // world))
                rebatch(SAMPLES / name / (name + ".onnx"), model, global_batch // world)
                for strategy in strategies:
                    work = tmp / name / ("%s-w%d" % (strategy, world))
                    work.mkdir()
                    plan, report_path = work / "step.plan", work / "report.json"
                    run([args.build / "bin" / "plait-compile", model, "--train", "--optimizer",
                         "adamw", "--lr", "1e-3", "--world-size", world, "--strategy",
                         strategy, "--cluster", spec, "--report", report_path, "-o", plan])
                    report = json.loads(report_path.read_text())
                    predicted = report["predicted_step_ms"]
                    p = report["predicted"]
                    measured = statistics.median(
                        measure(args.build, plan, data, world, args.steps, work,
                                args.detail and r == 0) for r in range(args.repeat))
                    error = predicted / measured - 1
                    rows.append(dict(model=name, strategy=strategy, world=world,
                                     predicted_ms=predicted, measured_ms=measured, error=error,
                                     compute_ms=p["compute_ms"], comm_ms=p["comm_ms"],
                                     exposed_comm_ms=p["exposed_comm_ms"],
                                     kernels=report["kernels_per_step"]))
                    print("%-5s %-6s %5d %9.3f ms %9.3f ms %+7.1f%%   compute %.3f, comm %.3f" %
                          (name, strategy, world, predicted, measured, 100 * error,
                           p["compute_ms"], p["comm_ms"]), flush=True)
                    if args.detail:
                        traced = traced_ms(work / "trace.json", args.steps)
                        kernels = p["kernels"]
                        for k in sorted(set(kernels) | set(traced),
                                        key=lambda k: -max(kernels.get(k, {}).get("ms", 0),
                                                           traced.get(k, 0)))[:12]:
                            print("        %-28s predicted %8.3f ms  traced %8.3f ms" % (
                                k, kernels.get(k, {}).get("ms", 0), traced.get(k, 0)))
    errors = [abs(r["error"]) for r in rows]
    med = statistics.median(errors) if errors else float("nan")
    ok = med <= args.target
    print()
    print("median absolute error %.1f%% over %d pairs (target <= %.0f%%): %s" % (
        100 * med, len(rows), 100 * args.target, "PASS" if ok else "FAIL"))
    if args.json:
        meta = dict(date=datetime.datetime.now(datetime.timezone.utc).isoformat(),
                    host=platform.node(), cpus=os.cpu_count(), steps=args.steps,
                    repeat=args.repeat, spec=spec_text, command=" ".join(sys.argv))
        args.json.write_text(json.dumps(dict(meta, rows=rows, median_abs_error=med,
                                             target=args.target, passed=ok), indent=1) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
