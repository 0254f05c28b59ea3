#!/usr/bin/env python3
"""Predicted vs measured training step time: the cost model against plait-run on this machine.

1. Calibrates this machine in the same run, right before measuring (its load varies):
   `plait-calibrate --nproc 2 -o SPEC.yaml` (--quick-calibrate: its --quick mode). The cost
   model runs 4 ranks on this 2-rank spec as oversubscribed (each rank gets 2/4 of a core).
   With --calibrate-per-world, each world size W gets its own `plait-calibrate --nproc W`
   spec instead: W ranks measured running at once, oversubscription included.
2. For each sample (mlp, cnn, gpt, and gpt-zoo: a plait-zoo GPT of 128 tokens whose kernels
   split across threads) x strategy (ddp, zero2, fsdp) x world size (2, 4): the sample's
   ONNX file re-pinned to batch B/W (B = the committed global batch, as
   tests/e2e/dp_parity.py does; gpt-zoo: plait-zoo --batch 8/W), compiled with `--train --optimizer adamw --world-size W
   --strategy S --cluster SPEC.yaml --report R.json`; the report's predicted_step_ms is the
   prediction.
3. Runs the plan for STEPS steps: `plait-run PLAN --nproc W --data DIR --log-jsonl LOG
   --threads T`, T the threads per rank the prediction is for (the report's
   predicted.threads_per_rank: 1 for world sizes 2 and 4 on a 2-rank spec of 2 CPUs). The measurement is the median step_ms
   of rank 0 without the first 3 steps; with --repeat R, the median of R runs' medians. The runs go in
   rounds over all pairs (every pair once per round), so a pair's R runs are minutes apart.
   Also shown: the 10th percentile of all its steps ("quiet"), what the step takes when no
   other process on the machine gets in the way.
Prints every pair with its error (predicted / measured - 1), then the median absolute error
and whether it is at most --target (15%). --detail also prints, per pair, the predicted and
traced (plait-run --trace) milliseconds per kernel name.

Run with /usr/bin/python3:
  predict_step_time.py BUILD [--steps 30] [--repeat 1] [--worlds 2,4] [--only gpt]
                             [--spec SPEC.yaml | --quick-calibrate | --calibrate-per-world]
                             [--detail] [--json OUT]
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

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"
sys.path.insert(0, str(ROOT / "tests" / "e2e"))
from dp_parity import rebatch  # noqa: E402
from train_parity import make_dataset  # noqa: E402

MODELS = ["mlp", "cnn", "gpt"]
# A plait-zoo GPT large enough that its GEMMs, attention heads and elementwise kernels split
# across a rank's threads (2 blocks of width 256, 4 heads, 128 tokens, vocabulary 256, global
# batch 8), so that the prediction's thread scaling is measured too. Its batch is fixed in
# its .mlir: world W compiles the zoo model with batch 8 / W.
ZOO = ["--family", "gpt", "--layers", "2", "--width", "256", "--heads", "4", "--seq", "128",
       "--vocab", "256"]
ZOO_BATCH = 8
LARGER = ["gpt-zoo"]
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


def percentile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def measure(build, plan, data, world, steps, work, trace, threads=1):
    """The median step_ms of rank 0 without the warm-up steps, and those steps, on `threads`
    threads per rank (the ones the plan's prediction is for)."""
    log = work / "log.jsonl"
    cmd = [build / "bin" / "plait-run", plan, "--nproc", world, "--data", data, "--steps",
           steps, "--log-jsonl", log, "--progress", "none", "--threads", threads]
    if trace:
        cmd += ["--trace", work / "trace.json", "--trace-steps", min(steps, 6)]
    run(["timeout", "300"] + cmd, 320)
    records = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    kept = [r["step_ms"] for r in records[WARMUP:]]
    return statistics.median(kept), kept


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build", type=pathlib.Path)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--repeat", type=int, default=1, help="runs per pair (median of medians)")
    ap.add_argument("--worlds", default="2,4")
    ap.add_argument("--only", action="append", choices=MODELS + LARGER)
    ap.add_argument("--strategies", default=",".join(STRATEGIES))
    ap.add_argument("--spec", type=pathlib.Path, help="use this spec instead of calibrating")
    ap.add_argument("--quick-calibrate", action="store_true")
    ap.add_argument("--calibrate-per-world", action="store_true",
                    help="calibrate with --nproc W for each world size W")
    ap.add_argument("--target", type=float, default=0.15)
    ap.add_argument("--detail", action="store_true")
    ap.add_argument("--json", type=pathlib.Path)
    args = ap.parse_args()
    worlds = [int(w) for w in args.worlds.split(",")]
    strategies = args.strategies.split(",")
    rows = []
    with tempfile.TemporaryDirectory(prefix="plait-predict-") as tmp:
        tmp = pathlib.Path(tmp)
        specs = {}
        for world in worlds if args.calibrate_per_world else [2]:
            spec = args.spec
            if spec is None:
                spec = tmp / ("this-machine-%d.yaml" % world)
                cmd = [args.build / "bin" / "plait-calibrate", "--nproc", world, "-o", spec]
                run(cmd + (["--quick"] if args.quick_calibrate else []))
            specs[world] = spec
            print("spec for %s: %s" % ("world %d" % world if args.calibrate_per_world
                                       else "every world size", spec))
            for line in spec.read_text().splitlines():
                if not line.startswith("#") and any(k in line for k in (
                        "devices_per_node", "memory_bandwidth", "peak_flops", "efficiency",
                        "launch_overhead", "intra_node")):
                    print("  " + line.strip())
        spec_text = {w: s.read_text() for w, s in specs.items()}
        print()
        header = "%-5s %-6s %5s %12s %12s %8s %12s %8s   %s" % (
            "model", "strat", "world", "predicted", "measured", "error", "quiet (p10)",
            "error", "predicted split")
        print(header)
        print("-" * len(header))
        # Compile every pair first, then measure in rounds over all of them: a pair's runs
        # are minutes apart, as plait-calibrate's rounds are, so that both stand for the
        # machine's usual speed rather than for the spell one of them met.
        pairs = []
        for name in args.only or MODELS + LARGER:
            data = tmp / name / "data"
            data.mkdir(parents=True)
            if name == "gpt-zoo":
                global_batch = ZOO_BATCH
                rng = np.random.default_rng(123)
                seq = rng.integers(0, 256, size=(args.steps * global_batch, 129), dtype=np.int64)
                np.save(data / "idx.npy", seq[:, :-1])
                np.save(data / "targets.npy", seq[:, 1:])
            else:
                _, global_batch = make_dataset(name, args.steps, data)
            for world in worlds:
                if global_batch % world:
                    print("%-5s world %d: global batch %d does not split" % (
                        name, world, global_batch))
                    continue
                model = tmp / name / ("%s-b%d.onnx" % (name, global_batch // world))
                if name == "gpt-zoo":
                    model = tmp / name / ("%s-b%d.mlir" % (name, global_batch // world))
                    run([args.build / "bin" / "plait-zoo", *ZOO, "--batch",
                         global_batch // world, "-o", model])
                else:
                    rebatch(SAMPLES / name / (name + ".onnx"), model, global_batch // world)
                for strategy in strategies:
                    work = tmp / name / ("%s-w%d" % (strategy, world))
                    work.mkdir()
                    plan, report_path = work / "step.plan", work / "report.json"
                    spec = specs.get(world, specs[min(specs)])
                    run([args.build / "bin" / "plait-compile", model, "--train", "--optimizer",
                         "adamw", "--lr", "1e-3", "--world-size", world, "--strategy",
                         strategy, "--cluster", spec, "--report", report_path, "-o", plan])
                    pairs.append(dict(name=name, world=world, strategy=strategy, work=work,
                                      plan=plan, data=data, runs=[],
                                      report=json.loads(report_path.read_text())))
        for r in range(args.repeat):
            for pair in pairs:
                pair["runs"].append(measure(
                    args.build, pair["plan"], pair["data"], pair["world"], args.steps,
                    pair["work"], args.detail and r == 0,
                    pair["report"]["predicted"].get("threads_per_rank", 1)))
        for pair in pairs:
            name, world, strategy, report = (pair["name"], pair["world"], pair["strategy"],
                                              pair["report"])
            predicted = report["predicted_step_ms"]
            p = report["predicted"]
            runs = pair["runs"]
            measured = statistics.median(m for m, _ in runs)
            quiet = percentile([x for _, steps in runs for x in steps], 0.1)
            error, quiet_error = predicted / measured - 1, predicted / quiet - 1
            rows.append(dict(model=name, strategy=strategy, world=world,
                             predicted_ms=predicted, measured_ms=measured, error=error,
                             quiet_ms=quiet, quiet_error=quiet_error,
                             compute_ms=p["compute_ms"], comm_ms=p["comm_ms"],
                             exposed_comm_ms=p["exposed_comm_ms"],
                             kernels=report["kernels_per_step"]))
            print("%-5s %-6s %5d %9.3f ms %9.3f ms %+7.1f%% %9.3f ms %+7.1f%%   "
                  "compute %.3f, comm %.3f, exposed %.3f" %
                  (name, strategy, world, predicted, measured, 100 * error, quiet,
                   100 * quiet_error, p["compute_ms"], p["comm_ms"], p["exposed_comm_ms"]),
                  flush=True)
            if args.detail:
                traced = traced_ms(pair["work"] / "trace.json", args.steps)
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
    for world in worlds:
        at = [abs(r["error"]) for r in rows if r["world"] == world]
        quiet = [abs(r["quiet_error"]) for r in rows if r["world"] == world]
        if at:
            print("world %d: median absolute error %.1f%% (against the quiet p10: %.1f%%)" % (
                world, 100 * statistics.median(at), 100 * statistics.median(quiet)))
    quiet_med = statistics.median(abs(r["quiet_error"]) for r in rows) if rows else float("nan")
    print("median absolute error %.1f%% over %d pairs (target <= %.0f%%): %s   "
          "(against the quiet p10: %.1f%%)" % (100 * med, len(rows), 100 * args.target,
                                               "PASS" if ok else "FAIL", 100 * quiet_med))
    if args.json:
        meta = dict(date=datetime.datetime.now(datetime.timezone.utc).isoformat(),
                    host=platform.node(), cpus=os.cpu_count(), steps=args.steps,
                    repeat=args.repeat, specs=spec_text, command=" ".join(sys.argv),
                    load_average=os.getloadavg())
        args.json.write_text(json.dumps(dict(meta, rows=rows, median_abs_error=med,
                                             median_abs_error_quiet=quiet_med,
                                             target=args.target, passed=ok), indent=1) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
