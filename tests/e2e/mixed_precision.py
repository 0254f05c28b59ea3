#!/usr/bin/env python3
"""--precision bf16-mixed: trains like fp32, holds ZeRO's mixed-precision model state, and
moves half the bytes.

For a sample, the reference is the committed model trained in fp32 on one rank. Then with
--precision bf16-mixed, on one rank and on W MPI ranks (batch B/W) under each placement:
  - per-step losses within --tol (absolute, default 2e-2) of the fp32 reference;
  - the report's per-unit and total params / grads / optimizer bytes equal the ZeRO paper's
    mixed-precision closed forms (bf16 params and gradients, f32 master + states: K = 12
    for AdamW), computed here from the units' sizes;
  - the bytes the runtime counted on the wire equal the report's, and they are at most 55%
    of the same placement's fp32 plan (gradients and gathers travel in bf16; with
    --micro-batches the gradients are accumulated and reduced in f32, as the report says);
  - the arena high water the runtime measured equals the planned one;
  - with --no-fused-grad-cast (each gradient's cast to f32 a kernel of its own, instead of
    the grouped updates reading the bf16 gradients), --no-grouped-casts (each param's cast
    to bf16 a kernel of its own, instead of a grouped_cast per few) and --no-fused-loss-cast
    (the loss and its gradient in f32 on a cast of the logits, instead of from the bf16
    logits, the gradient written in bf16), the
    losses are the same bits and the plan runs as many more kernels per step as the report
    says those three saved, less at most one per loss gradient (whose cast back to bf16 may
    be fused with a bias gradient's sum when the loss is not folded) (gradient casts folded
    on every run without micro-batches or clipping: those accumulate or scale their
    gradients in f32; param casts grouped on one rank; the GPT's loss and its gradient, one
    per micro-batch, on every run).

With --clip, every run clips gradients to that global norm; with --micro-batches, every run
splits each rank's batch.

Run with /usr/bin/python3:  mixed_precision.py --build BUILD [--sample gpt] [--world 2]
                                               [--clip F] [--micro-batches K]
"""
import argparse
import json
import pathlib
import sys
import tempfile

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from dp_parity import TRAIN, comm_problems, rebatch, run, train  # noqa: E402
from train_parity import SAMPLES, make_dataset  # noqa: E402

STATES = {"adamw": 2, "sgd": 1}


def mixed_closed_forms(unit, world, states, grad_bytes=2):
    """ZeRO paper, mixed precision: (params, grads, optimizer) bytes per rank for one unit
    (gradients of `grad_bytes` each: 2, or 4 when accumulated in f32 over micro-batches)."""
    placement, numel = unit["placement"], unit["numel"]
    g = 1 if placement == "ddp" else int(placement.split(":")[1]) if placement.startswith(
        "hsdp:") else world
    shard = -(-numel // g)  # elements of the padded buffer's shard
    params = 2 * (shard if placement in ("zero3", "fsdp") or placement.startswith("hsdp")
                  else numel)
    grads = grad_bytes * (numel if placement in ("ddp", "zero1") else shard)
    opt = (1 + states) * 4 * (numel if placement == "ddp" else shard)
    return params, grads, opt


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", required=True, type=pathlib.Path)
    ap.add_argument("--sample", default="gpt", choices=sorted(TRAIN))
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--tol", type=float, default=2e-2)
    ap.add_argument("--clip", type=float, default=0.0,
                    help="also clip gradients to this global norm (on every run)")
    ap.add_argument("--micro-batches", type=int, default=1,
                    help="also split each rank's batch into this many micro-batches (all runs)")
    args = ap.parse_args()
    if args.clip > 0:
        TRAIN[args.sample] = TRAIN[args.sample] + ["--clip-grad-norm", str(args.clip)]
    if args.micro_batches > 1:
        TRAIN[args.sample] = TRAIN[args.sample] + ["--micro-batches", str(args.micro_batches)]
    compile_bin = args.build / "bin" / "plait-compile"
    name, world, steps = args.sample, args.world, args.steps
    states = STATES[TRAIN[name][1]]
    failures = []
    with tempfile.TemporaryDirectory(prefix="plait-bf16-") as tmp:
        tmp = pathlib.Path(tmp)
        data = tmp / "data"
        data.mkdir()
        _, global_batch = make_dataset(name, steps, data)
        onnx_path = SAMPLES / name / (name + ".onnx")
        ref_plan = tmp / "ref.plan"
        run([compile_bin, onnx_path, "--train", *TRAIN[name], "-o", ref_plan], 120)
        (tmp / "ref").mkdir()
        ref_log, _ = train(args.build, ref_plan, data, steps, 1, tmp / "ref")
        ref = np.array([r["loss"] for r in ref_log])

        model = tmp / ("%s-b%d.onnx" % (name, global_batch // world))
        rebatch(onnx_path, model, global_batch // world)
        runs = [(1, "ddp")] + [(world, s) for s in ("ddp", "zero1", "zero2", "zero3")]
        if world == 4:
            runs.append((world, "hsdp:2"))
        for w, strategy in runs:
            src = onnx_path if w == 1 else model
            label = "w%d-%s" % (w, strategy.replace(":", "_"))
            problems = []
            reports = {}
            for precision in ("fp32", "bf16-mixed"):
                plan, rep = tmp / (label + precision + ".plan"), tmp / (label + precision + ".json")
                run([compile_bin, src, "--train", *TRAIN[name], "--world-size", str(w),
                     "--strategy", strategy, "--precision", precision, "--report", rep,
                     "-o", plan], 120)
                reports[precision] = (plan, json.loads(rep.read_text()))
            plan, report = reports["bf16-mixed"]
            out = tmp / label
            out.mkdir()
            log, _ = train(args.build, plan, data, steps, w, out)
            losses = np.array([r["loss"] for r in log])
            diff = np.abs(losses - ref).max() if len(losses) == steps else float("inf")
            if diff > args.tol:
                problems.append("losses differ from fp32 by %.3g (> %g)" % (diff, args.tol))
            if report.get("precision") != "bf16-mixed":
                problems.append("report precision %s" % report.get("precision"))
            expect = np.zeros(3, dtype=np.int64)
            for unit in report["units"]:
                forms = mixed_closed_forms(unit, w, states, 4 if args.micro_batches > 1 else 2)
                got = (unit["params_bytes"], unit["grads_bytes"], unit["optimizer_bytes"])
                if got != forms:
                    problems.append("unit %s: report %s, closed forms %s" % (unit["name"], got,
                                                                              forms))
                expect += forms
            mem = report["memory"]
            if (mem["params"], mem["grads"], mem["optimizer"]) != tuple(expect):
                problems.append("memory params/grads/optimizer %s, closed forms %s" % (
                    (mem["params"], mem["grads"], mem["optimizer"]), tuple(expect)))
            measured_hw = {r.get("arena_high_water") for r in log}
            if measured_hw != {mem["high_water"]}:
                problems.append("arena high water %s, planned %d" % (sorted(measured_hw, key=str),
                                                                     mem["high_water"]))
            problems += comm_problems(log, report["comm"])
            casts = report["fusion"]["group_updates"].get("grad_casts", 0)
            grouped = report["fusion"].get("group_casts", {"casts": 0, "kernels": 0})
            loss = report["fusion"].get("fuse_loss_cast", {})
            loss_grads = loss.get("gradients", 0)
            saved = casts + grouped["casts"] - grouped["kernels"] + loss.get("casts", 0)
            unfolded_plan, unfolded_rep = tmp / (label + "-casts.plan"), tmp / (label + "-casts.json")
            run([compile_bin, src, "--train", *TRAIN[name], "--world-size", str(w),
                 "--strategy", strategy, "--precision", "bf16-mixed", "--no-fused-grad-cast",
                 "--no-grouped-casts", "--no-fused-loss-cast", "--report", unfolded_rep, "-o",
                 unfolded_plan], 120)
            unfolded = json.loads(unfolded_rep.read_text())
            (tmp / (label + "-casts")).mkdir()
            unfolded_log, _ = train(args.build, unfolded_plan, data, steps, w,
                                    tmp / (label + "-casts"))
            if [r["loss"] for r in unfolded_log] != [r["loss"] for r in log]:
                problems.append("losses without the cast fusions are not the same bits")
            if args.micro_batches == 1 and args.clip == 0 and casts == 0:
                problems.append("no gradient cast folded into the grouped updates")
            if w == 1 and grouped["kernels"] == 0:
                problems.append("no casts of parameters grouped")
            # The GPT's logits are cast for the loss once per micro-batch.
            if name == "gpt" and (loss_grads, loss.get("losses")) != (args.micro_batches,) * 2:
                problems.append("%d losses and %d loss gradients computed from the bf16 logits"
                                % (loss.get("losses", 0), loss_grads))
            # A loss gradient's cast back to bf16 that the fold removes may, unfolded, be fused
            # with the bias gradient's sum (the MLP's classifier): a cast, not a kernel.
            fewer = unfolded["kernels_per_step"] - report["kernels_per_step"]
            if not saved - loss_grads <= fewer <= saved:
                problems.append("kernels per step %d, %d without the cast fusions, which say "
                                "they saved %d (%d of them loss gradients' casts)"
                                % (report["kernels_per_step"], unfolded["kernels_per_step"],
                                   saved, loss_grads))
            for key, n in (("fused_grad_cast", casts), ("group_casts", grouped["kernels"]),
                           ("fuse_loss_cast", loss_grads + loss.get("losses", 0))):
                if (n > 0) != (key in report["optimizations"]):
                    problems.append("report line %s with %d" % (key, n))
            fp32_comm = reports["fp32"][1]["comm"]["total"]
            # With micro-batches the gradients are summed in f32 and reduced in f32; only the
            # gathers are bf16 then.
            limit = 0.55 if args.micro_batches == 1 else 1.0
            if w > 1 and report["comm"]["total"] > limit * fp32_comm:
                problems.append("comm %d B/step, fp32 plan %d" % (report["comm"]["total"],
                                                                 fp32_comm))
            print("%-5s %-10s bf16-mixed loss %.4f -> %.4f  max |fp32 - bf16| %.2e  comm %d B "
                  "(fp32 %d)  params/grads/opt per rank %s  peak %d (fp32 %d, %d without the "
                  "cast fusions)  kernels %d (%d without)  %s" % (
                      name, label, losses[0], losses[-1], diff, report["comm"]["total"],
                      fp32_comm, tuple(int(v) for v in expect), mem["peak"],
                      reports["fp32"][1]["memory"]["peak"], unfolded["memory"]["peak"],
                      report["kernels_per_step"], unfolded["kernels_per_step"],
                      "ok" if not problems else "FAIL"))
            failures += ["%s %s: %s" % (name, label, p) for p in problems]
    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
