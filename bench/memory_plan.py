#!/usr/bin/python3
"""Memory-plan benchmark: plait's planned arena against the liveness lower bound.

usage: bench/memory_plan.py BUILD_DIR [--repeat N] [--filter REGEX] [--target RATIO] [--json FILE]

For every sample model (samples/{mlp,cnn,gpt}/*.onnx) and a set of plait-zoo models, forward
only and as a training step at world size 1 and 2 with ddp and fsdp, it runs
`plait-compile --report` from BUILD_DIR/bin and prints one table row: kernels per step, the
planned arena (report memory.peak, bytes per rank), the liveness lower bound
(memory.lower_bound), their ratio, and the compile time. Each row PASSes when the ratio is
at most --target (1.05). Exit status: 0 when every row passes, 1 otherwise.

The compile time is the wall time of the plait-compile process (the best of --repeat runs).
When the report has per-pass timings (a "timings" object of name -> ms) they are printed;
otherwise the time is split by a second run with `--emit mlir`, which stops before memory
planning: "front" is import + training step + sharding (+ printing the IR), "plan" is the
rest (memory planning, lowering, writing the plan and report).

There is no external planner to compare with: plait's planner is its own peer, measured
against the lower bound for memory and against nothing for time.
"""
import argparse
import datetime
import json
import os
import pathlib
import platform
import re
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent

# (name, plait-zoo arguments). zoo-gpt-48 is the size whose training step has >= 5,000 kernels.
ZOO_MODELS = [
    ("zoo-gpt-4", ["--family", "gpt", "--layers", "4"]),
    ("zoo-gpt-48", ["--family", "gpt", "--layers", "48"]),
    ("zoo-mlp-32", ["--family", "mlp", "--layers", "32"]),
    ("zoo-cnn-16", ["--family", "cnn", "--layers", "16"]),
]
SAMPLES = ["mlp", "cnn", "gpt"]
# (mode, world size, strategy): the forward alone, then the training step.
CONFIGS = [("infer", 1, None)] + [("train", w, s) for w in (1, 2) for s in ("ddp", "fsdp")]


class ToolError(Exception):
    pass


def run(cmd):
    """Runs cmd; returns its wall time in ms. Raises ToolError with its first stderr line."""
    start = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    elapsed = (time.perf_counter() - start) * 1000
    if proc.returncode != 0:
        first = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[0]
        raise ToolError(first)
    return elapsed


def compile_row(compiler, model, mode, world, strategy, work, repeat):
    args = [compiler, str(model)]
    if mode == "train":
        args += ["--train", "--world-size", str(world), "--strategy", strategy]
    plan, report_path = work / "model.plan", work / "report.json"
    total = min(run(args + ["-o", str(plan), "--report", str(report_path)]) for _ in range(repeat))
    try:
        report = json.loads(report_path.read_text())
        row = {
            "kernels": report["kernels_per_step"],
            "peak": report["memory"]["peak"],
            "lower_bound": report["memory"]["lower_bound"],
            "compile_ms": total,
        }
    except (ValueError, KeyError, TypeError) as error:
        raise ToolError(f"{report_path.name}: unreadable report ({error!r})")
    if isinstance(report.get("timings"), dict):
        row["timings"] = report["timings"]
    else:
        front = min(run(args + ["--emit", "mlir", "-o", os.devnull]) for _ in range(repeat))
        row["front_ms"] = front
        row["plan_ms"] = max(total - front, 0.0)
    return row


def machine():
    cpu = platform.processor() or platform.machine()
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} cores ({cpu}), {platform.system()} {platform.release()}"


def tree():
    try:
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "-uno"],
                               capture_output=True, text=True, check=True).stdout.strip()
        return head + (" + uncommitted changes" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("build_dir", type=pathlib.Path)
    parser.add_argument("--repeat", type=int, default=3, help="runs per timing (best is kept)")
    parser.add_argument("--filter", default="", help="only rows whose model name matches")
    parser.add_argument("--target", type=float, default=1.05, help="largest passing ratio")
    parser.add_argument("--json", type=pathlib.Path, help="also write the rows as JSON")
    args = parser.parse_args()
    bin_dir = args.build_dir / "bin"
    compiler, zoo = bin_dir / "plait-compile", bin_dir / "plait-zoo"
    for tool in (compiler, zoo):
        if not os.access(tool, os.X_OK):
            sys.exit(f"memory_plan.py: {tool} not found (build plait-compile and plait-zoo)")
    if args.repeat < 1:
        sys.exit("memory_plan.py: --repeat must be >= 1")

    print("# plait memory plan: planned arena vs liveness lower bound")
    print(f"date {datetime.date.today().isoformat()}; machine {machine()}; tree {tree()}")
    print("peer: none. plait's planner is its own peer: memory is measured against the liveness "
          "lower bound, compile time is plait-compile's own (no external planner is run).")
    print()

    rows = []
    with tempfile.TemporaryDirectory(prefix="plait-bench-") as tmp:
        work = pathlib.Path(tmp)
        models = [(f"sample-{name}", ROOT / "samples" / name / f"{name}.onnx") for name in SAMPLES]
        for name, zoo_args in ZOO_MODELS:
            path = work / f"{name}.mlir"
            run([zoo, *zoo_args, "-o", str(path)])
            models.append((name, path))
        header = ("| model | mode | world | strategy | ops/step | arena (peak) B | lower bound B "
                  "| ratio | compile ms | front ms | plan ms | result |")
        print(header)
        print("|" + "---|" * (header.count("|") - 1))
        for name, path in models:
            if args.filter and not re.search(args.filter, name):
                continue
            for mode, world, strategy in CONFIGS:
                row = {"model": name, "mode": mode, "world": world, "strategy": strategy or "-"}
                try:
                    row.update(compile_row(compiler, path, mode, world, strategy, work,
                                           args.repeat))
                    row["ratio"] = row["peak"] / row["lower_bound"] if row["lower_bound"] else None
                    row["result"] = ("PASS" if row["ratio"] is not None
                                     and row["ratio"] <= args.target else "FAIL")
                except ToolError as error:
                    row["result"] = "ERROR"
                    row["error"] = str(error)
                rows.append(row)
                print(format_row(row), flush=True)

    failed = [r for r in rows if r["result"] != "PASS"]
    print()
    if any("timings" in r for r in rows):
        print("per-pass timings (ms) from the report:")
        for r in rows:
            if "timings" in r:
                print(f"  {r['model']} {r['mode']} w{r['world']} {r['strategy']}: "
                      + ", ".join(f"{k} {v}" for k, v in r["timings"].items()))
    worst = max((r for r in rows if r.get("ratio")), key=lambda r: r["ratio"], default=None)
    summary = f"{len(rows) - len(failed)}/{len(rows)} rows with ratio <= {args.target}"
    if worst:
        summary += (f"; worst {worst['ratio']:.4f} ({worst['model']} {worst['mode']} "
                    f"w{worst['world']} {worst['strategy']})")
    print(("overall: PASS, " if not failed else "overall: FAIL, ") + summary)
    for r in failed:
        if r["result"] == "ERROR":
            print(f"  ERROR {r['model']} {r['mode']} w{r['world']} {r['strategy']}: {r['error']}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 1 if failed else 0


def format_row(r):
    if r["result"] == "ERROR":
        cells = ["-"] * 7
    else:
        timings = "timings" in r
        cells = [f"{r['kernels']:,}", f"{r['peak']:,}", f"{r['lower_bound']:,}",
                 f"{r['ratio']:.4f}" if r["ratio"] else "-", f"{r['compile_ms']:.0f}",
                 "see below" if timings else f"{r['front_ms']:.0f}",
                 "see below" if timings else f"{r['plan_ms']:.0f}"]
    return "| " + " | ".join([r["model"], r["mode"], str(r["world"]), r["strategy"], *cells,
                              r["result"]]) + " |"


if __name__ == "__main__":
    sys.exit(main())
