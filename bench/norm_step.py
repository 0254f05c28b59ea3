#!/usr/bin/env python3
"""CPU training step and peak memory: layer norms as one op against their exported ops.

PyTorch 1.13 exports nn.LayerNorm (below opset 17) as mean, subtract, pow, mean, add, sqrt,
divide, scale and shift. plait-fuse-norm makes each such chain one plait.layer_norm, whose
gradient is one plait.layer_norm_grad kernel that recomputes the row statistics from its
input, and a residual add before a norm goes into the norm's kernel (plait.add_layer_norm).
For each model (the GPT sample and bench/train_vs_torch.py's 12-layer gpt-10m, both exported
as samples/gpt.py exports the sample), the ONNX file is compiled three times with
`plait-compile --train --optimizer adamw --lr 1e-3`: as is ("fused"), with
--no-fused-add-norm ("no add": the residual adds kernels of their own), and with
--no-fused-norm ("decomposed": the exported ops, and their gradients as reductions and
elementwise ops); every other fusion is on in all three. The peak bytes per
rank are the memory plan's (`memory.peak` of the report: what the plan guarantees, not a
measurement). The plans train the same batches for WARMUP + STEPS steps with `plait-run
--log-jsonl --threads 1` on one thread; a run's step time is the median of its logged step_ms
after the warm-up, the runs alternate fused, no add, decomposed, fused, ... REPEAT times, and
the table shows the medians of the runs. The last column is the largest relative difference
of the fused and decomposed plans' per-step losses.

Run with /usr/bin/python3:  norm_step.py BUILD [--steps N] [--repeat R] [--json OUT]
"""
import argparse
import json
import pathlib
import statistics
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from attention_step import WARMUP, alternate, run_checked  # noqa: E402
from train_vs_torch import GPT10M, export_gpt10m, make_dataset  # noqa: E402

ROOT = HERE.parent


def bench_model(name, onnx_path, build, steps, repeat, work):
    data = work / "data"
    data.mkdir(parents=True)
    make_dataset("gpt", onnx_path, (WARMUP + steps) * 4, data)
    plans, reports = {}, {}
    for variant, flags in (("fused", []), ("no add", ["--no-fused-add-norm"]),
                           ("decomposed", ["--no-fused-norm"])):
        plan, report = work / ("%s.plan" % variant), work / ("%s.json" % variant)
        run_checked([build / "bin" / "plait-compile", onnx_path, "--train", "--optimizer",
                     "adamw", "--lr", "1e-3", "--report", report, "-o", plan] + flags)
        plans[variant], reports[variant] = plan, json.loads(report.read_text())
    norms = reports["fused"].get("fusion", {}).get("norm", {}).get("layer_norm", 0)
    times, rel = alternate(build, plans, data, steps, repeat, work)
    return {
        "model": name,
        "layer_norms": norms,
        "kernels": {v: reports[v]["kernels_per_step"] for v in times},
        "peak_bytes": {v: reports[v]["memory"]["peak"] for v in times},
        "step_ms": {v: statistics.median(t) for v, t in times.items()},
        "runs_ms": times,
        "max_rel_loss_diff": rel,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build", type=pathlib.Path)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=pathlib.Path)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="plait-norm-") as tmp:
        tmp = pathlib.Path(tmp)
        models = [("gpt", ROOT / "samples" / "gpt" / "gpt.onnx"),
                  ("gpt-10m", export_gpt10m(tmp / "export"))]
        for name, path in models:
            rows.append(bench_model(name, path, args.build, args.steps, args.repeat,
                                    tmp / name))
    print("| model | layer norms | kernels/step fused | no add | decomposed | peak bytes fused | "
          "decomposed | peak ratio | ms/step fused | no add | decomposed | speed-up | "
          "max rel loss diff |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        k, p, t = r["kernels"], r["peak_bytes"], r["step_ms"]
        print("| %s | %d | %d | %d | %d | %d | %d | %.3f | %.3f | %.3f | %.3f | %.2f× | %.2g |" % (
            r["model"], r["layer_norms"], k["fused"], k["no add"], k["decomposed"], p["fused"],
            p["decomposed"], p["fused"] / p["decomposed"], t["fused"], t["no add"],
            t["decomposed"], t["decomposed"] / t["fused"], r["max_rel_loss_diff"]))
    print("(GPT10M = %s; %d timed steps after %d warm-up, median of %d alternating runs, one "
          "thread)" % (GPT10M, args.steps, WARMUP, args.repeat))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
