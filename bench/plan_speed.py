#!/usr/bin/env python3
"""Planning speed: `plait-compile --strategy auto` on large shapes-only models (issue #6).

For each configuration, plait-zoo writes the model (params by shape and initializer, no
data), and `plait-compile MODEL --train --optimizer adamw --strategy auto --cluster SPEC
--report R.json -o PLAN` plans it: the full search (every placement, hsdp group size,
recompute, ddp bucket size, under the cluster's device memory), then the exact compile of
the choice (memory plan, collective-order check, plan file). The time is the process's wall
time, the median of --repeat runs. The peer, measured in the same run, is one plain compile of the
chosen placement with `--strategy S --recompute none` (no search): the search's whole cost
over compiling one candidate is the ratio.

The target (issue #6): GPT-3 175B (96 layers, width 12288, 96 heads, seq 2048, vocab 50257)
for 1,024 GPUs (128 nodes x 8 H100) plans in under 2 seconds here.

Run with /usr/bin/python3:  plan_speed.py BUILD [--repeat 5] [--json OUT]
"""
import argparse
import json
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
CLUSTERS = ROOT / "samples" / "clusters"

CONFIGS = [
    # name, plait-zoo options, cluster, precision, target seconds (or None)
    ("gpt-175b", ["--family", "gpt", "--layers", "96", "--width", "12288", "--heads", "96",
                  "--seq", "2048", "--vocab", "50257", "--batch", "1"],
     "h100-sxm-8x128.yaml", "fp32", 2.0),
    ("gpt-175b", ["--family", "gpt", "--layers", "96", "--width", "12288", "--heads", "96",
                  "--seq", "2048", "--vocab", "50257", "--batch", "1"],
     "h100-sxm-8x128.yaml", "bf16-mixed", 2.0),
    ("gpt-175b", ["--family", "gpt", "--layers", "96", "--width", "12288", "--heads", "96",
                  "--seq", "2048", "--vocab", "50257", "--batch", "1"],
     "h100-sxm-8x16.yaml", "bf16-mixed", None),
    ("gpt-1.3b", ["--family", "gpt", "--layers", "24", "--width", "2048", "--heads", "16",
                  "--seq", "2048", "--vocab", "50257", "--batch", "4"],
     "h100-sxm-8.yaml", "bf16-mixed", None),
]


def timed(cmd):
    start = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if p.returncode != 0:
        sys.exit("FAILED (%d): %s\n%s" % (p.returncode, " ".join(map(str, cmd)), p.stderr))
    return elapsed


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build", type=pathlib.Path)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", type=pathlib.Path)
    args = ap.parse_args()
    zoo, compiler = args.build / "bin" / "plait-zoo", args.build / "bin" / "plait-compile"
    rows, failed = [], False
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="plait-plan-speed-") as tmp:
        tmp = pathlib.Path(tmp)
        for name, zoo_args, cluster, precision, target in CONFIGS:
            model = tmp / (name + ".mlir")
            if not model.exists():
                subprocess.run([zoo, *zoo_args, "-o", model], check=True)
            report = tmp / "auto.json"
            base = [compiler, model, "--train", "--optimizer", "adamw", "--precision", precision,
                    "--cluster", CLUSTERS / cluster]
            auto_times, plain_times = [], []
            chosen = None
            for _ in range(args.repeat):
                auto_times.append(timed(base + ["--strategy", "auto", "--report", report,
                                                "-o", tmp / "auto.plan"]))
                r = json.loads(report.read_text())
                chosen = r["units"][0]["placement"]
                rc = r.get("recompute")
                recompute = "none" if not rc else (
                    "all" if rc["mode"] == "all" else "auto(%d)" % rc["recomputed"])
                # The peer: one exact compile of the chosen placement, no search (and no
                # recompute, so no memory limit: a larger step than auto's when it recomputes).
                plain = base + ["--strategy", chosen, "-o", tmp / "plain.plan",
                                "--world-size", str(r["world_size"]), "--mem-limit", "1000TB"]
                plain_times.append(timed(plain))
            auto_s, plain_s = statistics.median(auto_times), statistics.median(plain_times)
            a = r["auto"]
            row = {"model": name, "cluster": cluster[:-5], "world": r["world_size"],
                   "precision": precision, "params": sum(u["numel"] for u in r["units"]),
                   "candidates": a["candidates"], "exact_compiles": a["exact_compiles"],
                   "chosen": chosen + ("" if recompute == "none" else " + recompute " + recompute),
                   "auto_s": auto_s, "plain_s": plain_s, "target_s": target,
                   "peak_gib": r["memory"]["total"] / 2**30,
                   "predicted_step_ms": r["predicted_step_ms"]}
            if target is not None:
                row["pass"] = auto_s < target
                failed |= not row["pass"]
            rows.append(row)
            print("%-9s %-15s %5d  %-10s %4d cand  %d exact  %-22s auto %6.2f s  plain %6.2f s"
                  "  x%.2f  %s" % (name, row["cluster"], row["world"], precision,
                                   row["candidates"], row["exact_compiles"], row["chosen"],
                                   auto_s, plain_s, auto_s / plain_s,
                                   "" if target is None else
                                   ("PASS" if row["pass"] else "FAIL") + " (< %.0f s)" % target),
                  flush=True)
    print("%s, %d cores, load average %.2f before, %.2f after" % (
        platform.node(), os.cpu_count(), load_before, os.getloadavg()[0]))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
