#!/usr/bin/env python3
"""Gradient accumulation parity: K micro-batches of B/K train exactly like one batch of B.

For a sample (mlp or gpt) the committed model (batch B) is trained for STEPS steps on one rank
with --micro-batches 1 (the reference), 2 and 4 from the same data. It is also re-pinned to
batch B/2 and trained on 2 MPI ranks with 2 micro-batches each, with every placement (ddp,
zero1, zero2, zero3, fsdp, fsdp without resharding): that sees the same samples per step as the
reference. The same model as plait-dialect .mlir (the importer's output, whose batch plait-compile
divides itself) is trained with 2 and 4 micro-batches too. Checked per run:
  - per-step losses equal the reference within 1e-5 relative;
  - the final weights (--save-weights) equal the reference's (AdamW's key-bias caveat as in
    train_parity.py);
  - the report says "micro_batches": K and lists the optimization;
  - the gradients are reduced as the placement says: ddp and zero1 once per step (as many
    all-reduces and reduce-scatters as the same plan without micro-batches); zero2, zero3 and
    fsdp once per micro-batch (K times the reduce-scatters, summed in their shards, the units
    reported with accumulate_in_shard), or once with --no-sharded-accumulation (zero2-whole);
    and (zero3/fsdp) K times the all-gathers, since every micro-batch gathers the params for
    its forward and its backward (zero1/2 gather the updated params once);
  - the bytes the runtime counted on the wire each step equal the report's prediction;
  - (.mlir) the per-step losses equal, bit for bit, the ONNX model's with the same micro-batches.
Last, hsdp:2 on 4 ranks with 4 micro-batches of 1 sample against batch 16 on one rank (the same
checks; the replicas all-reduce each unit's shard twice per step, not once per micro-batch).

Run with /usr/bin/python3:  micro_batch_parity.py --build BUILD --sample gpt [--steps 20]
"""
import argparse
import json
import pathlib
import sys
import tempfile

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from dp_parity import (TRAIN, comm_problems, compare, placements, rebatch, run,  # noqa: E402
                       train)
from train_parity import SAMPLES, make_dataset  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", required=True, type=pathlib.Path)
    ap.add_argument("--sample", required=True, choices=sorted(TRAIN))
    ap.add_argument("--steps", type=int, default=20)
    args = ap.parse_args()
    compile_bin = args.build / "bin" / "plait-compile"
    name, steps = args.sample, args.steps
    failures = []
    with tempfile.TemporaryDirectory(prefix="plait-mb-") as tmp:
        tmp = pathlib.Path(tmp)
        data_dir = tmp / "data"
        data_dir.mkdir()
        _, batch = make_dataset(name, steps, data_dir)
        committed = SAMPLES / name / (name + ".onnx")

        def compile_plan(model, label, flags):
            plan, report = tmp / (label + ".plan"), tmp / (label + ".json")
            run([compile_bin, model, "--train", *TRAIN[name], *flags, "--report", report,
                 "-o", plan], 120)
            return plan, json.loads(report.read_text())

        ref_plan, ref_report = compile_plan(committed, "ref", [])
        (tmp / "ref").mkdir()
        ref_log, ref_w = train(args.build, ref_plan, data_dir, steps, 1, tmp / "ref")
        ref_losses = np.array([r["loss"] for r in ref_log])
        print("%-4s %-20s loss %.6f -> %.6f  (reference)  arena %d B" % (
            name, "k1", ref_losses[0], ref_losses[-1], ref_report["memory"]["peak"]))

        # (label, model, world, K, strategy)
        runs = [("k%d" % k, committed, 1, k, None) for k in (2, 4)]
        per_rank = tmp / ("%s-b%d.onnx" % (name, batch // 2))
        rebatch(committed, per_rank, batch // 2)
        runs += [("w2-k2-" + p, per_rank, 2, 2, (p, extra)) for p, extra in placements(2)]
        # The off switch: zero2's whole gradients summed over the micro-batches, reduced once.
        runs.append(("w2-k2-zero2-whole", per_rank, 2, 2,
                     ("zero2", ["--no-sharded-accumulation"])))
        # The model as plait-dialect .mlir (the importer's output): plait-compile divides its
        # batch itself (plait-divide-batch), which must give the importer's micro-batch step.
        run([compile_bin, committed, "-o", tmp / "imported.plan", "--dump-dir", tmp / "dump"],
            120)
        imported = tmp / "dump" / "00-imported.mlir"
        runs += [("mlir-k%d" % k, imported, 1, k, None) for k in (2, 4)]
        losses_of = {}
        for label, model, world, k, placement in runs:
            strategy, extra = placement or (None, [])
            strategy = strategy and strategy.split("-")[0]
            dist = ["--world-size", str(world), "--strategy", strategy, *extra] if strategy else []
            plan, report = compile_plan(model, label, dist + ["--micro-batches", str(k)])
            problems = []
            if report.get("micro_batches") != k or \
                    "micro_batches" not in report.get("optimizations", {}):
                problems.append("the report does not say micro_batches %d" % k)
            if world > 1:
                dist_k1 = [f for f in dist if f != "--no-sharded-accumulation"]
                _, single = compile_plan(model, label + "-k1", dist_k1)
                got, once = report["collectives_per_step"], single["collectives_per_step"]
                # zero2/3 and fsdp reduce-scatter every micro-batch's gradients (summed in
                # their shards) unless told not to; ddp and zero1 reduce whole ones once.
                in_shard = strategy in ("zero2", "zero3", "fsdp") and \
                    "--no-sharded-accumulation" not in extra
                if any(u.get("accumulate_in_shard", False) != in_shard
                       for u in report["units"]):
                    problems.append("units' accumulate_in_shard is not %s" % in_shard)
                scatters = (k if in_shard else 1) * once.get("reduce_scatter", 0)
                if got.get("reduce_scatter", 0) != scatters:
                    problems.append("%d reduce_scatter per step, expected %d" % (
                        got.get("reduce_scatter", 0), scatters))
                if got.get("all_reduce", 0) != once.get("all_reduce", 0):
                    problems.append("%d all_reduce per step, %d without micro-batches" % (
                        got.get("all_reduce", 0), once.get("all_reduce", 0)))
                # zero3/fsdp gather params per micro-batch; zero1/2 the updated params once.
                gathers = (k if strategy in ("zero3", "fsdp") else 1) * once.get("all_gather", 0)
                if got.get("all_gather", 0) != gathers:
                    problems.append("%d all_gather per step, expected %d" % (
                        got.get("all_gather", 0), gathers))
            out = tmp / label
            out.mkdir()
            log, weights = train(args.build, plan, data_dir, steps, world, out)
            losses = np.array([r["loss"] for r in log])
            found, rel, worst = compare(name, losses, weights, ref_losses, ref_w, steps)
            problems += found
            losses_of[label] = losses
            if label.startswith("mlir-") and not np.array_equal(losses, losses_of[label[5:]]):
                problems.append("losses differ from the ONNX model's with the same micro-batches "
                                "(max %.2e)" % np.max(np.abs(losses - losses_of[label[5:]])))
            problems += comm_problems(log, report["comm"])
            print("%-4s %-20s loss %.6f -> %.6f  max rel loss diff %.2e  max |dw| %.2e  "
                  "arena %d B  %s" % (name, label, losses[0], losses[-1], rel, worst,
                                      report["memory"]["peak"], "ok" if not problems else "FAIL"))
            failures += ["%s %s: %s" % (name, label, p) for p in problems]
        failures += check_hsdp(args.build, name, steps, batch, committed, tmp, compile_plan)
    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


def check_hsdp(build, name, steps, batch, committed, tmp, compile_plan):
    """hsdp:2 on 4 ranks with 4 micro-batches (per-rank batch 4) against batch 16 on one rank:
    each micro-batch's gradients are reduce-scattered in the shard group and the shards summed
    unreduced; the replicas all-reduce twice per step (the first three micro-batches' sum,
    then the last one's), so the plan has one all-reduce more per unit than without
    micro-batches, not four times as many."""
    wide, world, k = 16, 4, 4
    data_dir = tmp / "data16"
    data_dir.mkdir()
    make_dataset(name, steps * wide // batch, data_dir)  # the same rows, 16 per step
    ref_model, model = tmp / ("%s-b16.onnx" % name), tmp / ("%s-b4.onnx" % name)
    rebatch(committed, ref_model, wide)
    rebatch(committed, model, wide // world)
    ref_plan, _ = compile_plan(ref_model, "hsdp-ref", [])
    (tmp / "hsdp-ref").mkdir()
    ref_log, ref_w = train(build, ref_plan, data_dir, steps, 1, tmp / "hsdp-ref")
    ref_losses = np.array([r["loss"] for r in ref_log])
    dist = ["--world-size", str(world), "--strategy", "hsdp:2"]
    plan, report = compile_plan(model, "hsdp-k4", dist + ["--micro-batches", str(k)])
    _, single = compile_plan(model, "hsdp-k1", dist)
    problems = []
    units = report["units"]
    if not all(u.get("accumulate_in_shard", False) for u in units):
        problems.append("not every unit accumulates in its shards")
    got, once = report["collectives_per_step"], single["collectives_per_step"]
    if got.get("reduce_scatter", 0) != k * once.get("reduce_scatter", 0):
        problems.append("%d reduce_scatter per step, expected %d" % (
            got.get("reduce_scatter", 0), k * once.get("reduce_scatter", 0)))
    if got.get("all_reduce", 0) != once.get("all_reduce", 0) + len(units):
        problems.append("%d all_reduce per step, expected %d (one more per unit than without "
                        "micro-batches)" % (got.get("all_reduce", 0),
                                            once.get("all_reduce", 0) + len(units)))
    out = tmp / "hsdp-k4"
    out.mkdir()
    log, weights = train(build, plan, data_dir, steps, world, out)
    losses = np.array([r["loss"] for r in log])
    found, rel, worst = compare(name, losses, weights, ref_losses, ref_w, steps)
    problems += found + comm_problems(log, report["comm"])
    print("%-4s %-20s loss %.6f -> %.6f  max rel loss diff %.2e  max |dw| %.2e  arena %d B  "
          "%s" % (name, "w4-k4-hsdp:2", losses[0], losses[-1], rel, worst,
                  report["memory"]["peak"], "ok" if not problems else "FAIL"))
    return ["%s w4-k4-hsdp:2: %s" % (name, p) for p in problems]


if __name__ == "__main__":
    sys.exit(main())
