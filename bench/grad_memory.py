#!/usr/bin/env python3
"""Gradient memory of sharded placements: whole gradients freed during the backward.

For plait-zoo GPTs on 8 ranks of an H100 node (`samples/clusters/h100-sxm-8.yaml`, compile
only, AdamW fp32), each row compiles one placement twice with `plait-compile --report`:

* **peer**: `--reduce-scatters-in-flight 0 --no-sharded-accumulation`, the plans plait made
  before 2026-12-03: a reduce-scatter completes only where the optimizer reads its shard, so
  the unit's whole gradient (its input) lives until then, and micro-batches sum whole
  gradients and reduce them once;
* **plait**: the defaults: at most 2 reduce-scatters in flight, and with micro-batches the
  sharded placements reduce-scatter each micro-batch's gradients and sum the shards.

It prints each plan's per-rank arena (`memory.peak`), the ratio plait / peer, both predicted
step times (`predicted_step_ms`) and the reduce-scatters per step. A row PASSes when plait's
arena is at most the peer's; the script exits 1 if any row fails.

Run with /usr/bin/python3:  grad_memory.py BUILD [--json OUT]
"""
import argparse
import json
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
CLUSTER = ROOT / "samples" / "clusters" / "h100-sxm-8.yaml"
PEER = ["--reduce-scatters-in-flight", "0", "--no-sharded-accumulation"]

# name, plait-zoo options, placement, micro-batches
GPT_B1 = ["--family", "gpt", "--layers", "4", "--width", "1024", "--heads", "16", "--seq", "64",
          "--vocab", "32000", "--batch", "1"]
GPT_B8 = ["--family", "gpt", "--layers", "4", "--width", "1024", "--heads", "16", "--seq", "256",
          "--vocab", "32000", "--batch", "8"]
ROWS = [("gpt 4x1024 seq 64 b1", GPT_B1, placement, 1)
        for placement in ("zero1", "zero2", "zero3")]
ROWS += [("gpt 4x1024 seq 256 b8", GPT_B8, "zero3", k) for k in (1, 2, 4, 8)]
ROWS += [("gpt 4x1024 seq 256 b8", GPT_B8, "zero2", 4)]


def compile_report(build, model, placement, k, extra, tmp, world=8, cluster=CLUSTER):
    """`plait-compile --train --optimizer adamw` of `model` with `placement` on `world` ranks
    of `cluster` and `k` micro-batches (plus `extra`): its --report, parsed."""
    report = tmp / "report.json"
    cmd = [build / "bin" / "plait-compile", model, "--train", "--optimizer", "adamw",
           "--world-size", str(world), "--strategy", placement, "--micro-batches", str(k),
           "--cluster", cluster, "--report", report, "-o", tmp / "plan", *extra]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("FAILED: %s\n%s" % (" ".join(map(str, cmd)), p.stderr))
    return json.loads(report.read_text())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build", type=pathlib.Path)
    ap.add_argument("--json", type=pathlib.Path)
    args = ap.parse_args()
    out, failed = [], False
    print("| model | placement | micro-batches | peer arena B | plait arena B | plait / peer "
          "| peer ms | plait ms | reduce-scatters peer / plait | result |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="plait-grad-memory-") as tmp:
        tmp = pathlib.Path(tmp)
        models = {}
        for name, zoo, placement, k in ROWS:
            if name not in models:
                models[name] = tmp / ("m%d.mlir" % len(models))
                subprocess.run([args.build / "bin" / "plait-zoo", *zoo, "-o", models[name]],
                               check=True)
            peer = compile_report(args.build, models[name], placement, k, PEER, tmp)
            ours = compile_report(args.build, models[name], placement, k, [], tmp)
            ratio = ours["memory"]["peak"] / peer["memory"]["peak"]
            ok = ours["memory"]["peak"] <= peer["memory"]["peak"]
            failed |= not ok
            row = {"model": name, "placement": placement, "micro_batches": k,
                   "peer_peak": peer["memory"]["peak"], "peak": ours["memory"]["peak"],
                   "peer_ms": peer["predicted_step_ms"], "ms": ours["predicted_step_ms"],
                   "peer_reduce_scatters": peer["collectives_per_step"].get("reduce_scatter", 0),
                   "reduce_scatters": ours["collectives_per_step"].get("reduce_scatter", 0)}
            out.append(row)
            print("| %s | %s | %d | %s | %s | %.3f | %.3f | %.3f | %d / %d | %s |" % (
                name, placement, k, format(row["peer_peak"], ","), format(row["peak"], ","),
                ratio, row["peer_ms"], row["ms"], row["peer_reduce_scatters"],
                row["reduce_scatters"], "PASS" if ok else "FAIL"))
    print("\noverall: %s" % ("FAIL" if failed else "PASS"))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
