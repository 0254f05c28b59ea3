#!/usr/bin/env python3
"""Data-parallel parity: W ranks with batch B/W train exactly like one rank with batch B.

For a sample (mlp or gpt) and a world size W, the sample's ONNX file is re-pinned to batch
B/W (B = the committed global batch), compiled with each placement (ddp, zero1, zero2, zero3,
fsdp, hsdp:2 at W = 4, and a mixed plan) and trained for STEPS steps on W MPI ranks
(mpirun --oversubscribe) from the same data. The reference is the committed batch-B model on
one rank. Checked per placement:
  - per-step losses equal the reference within 1e-5 relative;
  - the final weights (--save-weights, gathered from the shards) equal the reference's;
  - the report's per-rank params / grads / optimizer bytes equal the ZeRO paper's closed forms
    (computed here, independently, from the units' sizes);
  - the bytes the runtime counted on the wire each step equal the report's prediction;
  - the arena high water the runtime measured each step (the largest offset + bytes any
    tensor it touched reaches) equals the planned one, byte for byte.

With --clip, every run (the reference too) clips gradients to that global norm: on several
ranks the norm is of the averaged gradients, with a shard's squares summed over its group.
With --adam-l2 F, every run trains with torch.optim.Adam's rule instead (--optimizer adam,
weight decay F added to the gradient as an L2 term), which shards as AdamW does. With
--optimizer-flags "FLAGS", every run trains with those plait-compile optimizer flags instead
(Adagrad's sum, RMSprop's square_avg, grad_avg and momentum buffer, and AMSGrad's
max_exp_avg_sq shard as AdamW's moments); with --ema-decay among them, the weight EMA
(--save-ema-weights, gathered from its shards) is compared with the reference's too.

Run with /usr/bin/python3:
  dp_parity.py --build BUILD --sample mlp --world 2 [--steps 20] [--clip F] [--adam-l2 F]
               [--optimizer-flags "--optimizer rmsprop --centered ..."]
"""
import argparse
import json
import pathlib
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from train_configs import KEY_BIAS, WHOLE_KEY_BIAS  # noqa: E402
from train_parity import SAMPLES, make_dataset, read_safetensors  # noqa: E402

# Optimizer tensors per param (sgd with momentum; rmsprop: states_of).
STATES = {"adam": 2, "adamw": 2, "sgd": 1, "adagrad": 1, "lion": 1, "adamax": 2, "nadam": 2,
          "radam": 2, "adadelta": 2, "rprop": 2, "asgd": 1, "lamb": 2,
          "adafactor": 0}  # adafactor: exp_avg (states_of), and rows and columns
                           # (adafactor_moment_bytes)
TRAIN = {
    "mlp": ["--optimizer", "sgd", "--lr", "0.05", "--momentum", "0.9"],
    "gpt": ["--optimizer", "adamw", "--lr", "3e-3"],
}
MIXED = {"mlp": "fc1=ddp,fc2|head=fsdp", "gpt": "wte|wpe=ddp,blocks=fsdp,ln_f|lm_head=zero2"}


def placements(world):
    out = [("ddp", []), ("zero1", []), ("zero2", []), ("zero3", []), ("fsdp", []),
           ("fsdp-noreshard", ["--no-reshard-after-forward", "--prefetch", "2"])]
    if world == 4:
        out.append(("hsdp:2", []))
    return out


def adafactor():
    """Whether the run trains with Adafactor (whose states are rows and columns)."""
    return any(flags[flags.index("--optimizer") + 1] == "adafactor" for flags in TRAIN.values()
               if "--optimizer" in flags)


def adafactor_moment_bytes(model, names):
    """Bytes of Adafactor's second moments for params `names` of ONNX `model` (f32): a row
    and a column (the shape without its last, and without its second-to-last, dimension) for
    a param of rank >= 2, else a whole exp_avg_sq. Whole on every rank under every placement
    (a sharded one shards only exp_avg, --beta1's, as AdamW's moments)."""
    shapes = {i.name: list(i.dims) for i in onnx.load(str(model)).graph.initializer}
    total = 0
    for name in names:
        shape = shapes[name]
        if len(shape) >= 2:
            total += int(np.prod(shape[:-1])) + int(np.prod(shape[:-2] + shape[-1:]))
        else:
            total += int(np.prod(shape))
    return 4 * total


def rebatch(src, dst, batch):
    """The ONNX model with its graph inputs' (and batch outputs') leading dimension = batch."""
    m = onnx.load(str(src))
    old = m.graph.input[0].type.tensor_type.shape.dim[0].dim_value
    for v in list(m.graph.input) + list(m.graph.output):
        dims = v.type.tensor_type.shape.dim
        if len(dims) and dims[0].dim_value == old:
            dims[0].dim_value = batch
    del m.graph.value_info[:]
    onnx.save(m, str(dst))


def run(cmd, timeout):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        sys.exit("FAILED (%d): %s\n%s%s" % (p.returncode, " ".join(map(str, cmd)), p.stdout,
                                           p.stderr))
    return p.stdout


def closed_forms(unit, world, states):
    """ZeRO paper, full precision: (params, grads, optimizer) bytes per rank for one unit."""
    placement, numel, e = unit["placement"], unit["numel"], 4
    g = 1 if placement == "ddp" else int(placement.split(":")[1]) if placement.startswith(
        "hsdp:") else world
    shard = -(-numel // g) * e  # ceil(numel / g) elements: the padded buffer's shard
    whole = numel * e
    params = shard if placement in ("zero3", "fsdp") or placement.startswith("hsdp") else whole
    grads = whole if placement in ("ddp", "zero1") else shard
    opt = states * (whole if placement == "ddp" else shard)
    return params, grads, opt


RUN_FLAGS = []  # --run-flags: more plait-run flags for the multi-rank runs


def train(build, plan, data, steps, world, out, ema=False):
    """The run's log records and final weights; with `ema`, its weight EMA's too
    (--save-ema-weights, gathered from the shards) under the key "ema". With RUN_FLAGS
    naming a --reduce-algorithm, the run's summary must say it took that path."""
    log, weights, averages = out / "log.jsonl", out / "w.safetensors", out / "ema.safetensors"
    for f in (log, weights, averages):
        if f.exists():
            f.unlink()
    run_cmd = [str(build / "bin" / "plait-run"), str(plan), "--data", str(data), "--steps",
               str(steps), "--log-jsonl", str(log), "--save-weights", str(weights)]
    if ema:
        run_cmd += ["--save-ema-weights", str(averages)]
    if world > 1:
        run_cmd = (["mpirun", "--oversubscribe", "--allow-run-as-root", "-np", str(world)] +
                   run_cmd + RUN_FLAGS)
    summary = run(["timeout", "240"] + run_cmd, 260)
    if world > 1 and "--reduce-algorithm" in RUN_FLAGS:
        algorithm = RUN_FLAGS[RUN_FLAGS.index("--reduce-algorithm") + 1]
        # "reductions: N float ... by pairwise exchange ..., M by Open MPI's own ..." or
        # "reductions: M float ... by Open MPI's own collectives (--reduce-algorithm mpi)"
        match = re.search(r"reductions: (\d+) float [^ ]+ by (pairwise exchange|Open MPI)",
                          summary)
        pairwise = int(match.group(1)) if match and match.group(2) != "Open MPI" else 0
        if not match or (algorithm == "pairwise") != (pairwise > 0):
            sys.exit("FAILED: --reduce-algorithm %s, but the run says: %s" % (
                algorithm, match.group(0) if match else summary))
    records = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    w = read_safetensors(weights)
    if ema:
        w = dict(w, ema=read_safetensors(averages))
    return records, w


def compare(name, losses, weights, ref_losses, ref_w, steps):
    """Problems with one run against the reference, and (max rel loss, max |dw|)."""
    problems = []
    rel = np.abs(losses - ref_losses) / np.maximum(np.abs(ref_losses), 1e-12)
    if len(losses) != steps or rel.max() > 1e-5:
        problems.append("losses differ: max rel %.3g" % rel.max())
    # Adam's, AdamW's and Lion's steps do not shrink with the gradient (a ratio to its RMS, a
    # sign): a gradient at rounding noise moves its weight by about lr either way.
    adamw = TRAIN[name][1] in ("adam", "adamw", "lion", "adafactor")
    weight_issues, worst = weight_problems(adamw, {k: v for k, v in weights.items() if k != "ema"},
                                           {k: v for k, v in ref_w.items() if k != "ema"})
    if "ema" in ref_w:  # the weight EMA, gathered from its shards, as the reference's
        ema_issues, ema_worst = weight_problems(adamw, weights.get("ema", {}), ref_w["ema"])
        weight_issues += ["EMA " + p for p in ema_issues]
        worst = max(worst, ema_worst)
    return problems + weight_issues, rel.max(), worst


def weight_problems(adamw, weights, ref_w):
    """Problems with final weights against the reference's, and the largest |difference|:
    1e-4 relative plus an absolute tolerance. With the FMA GEMM kernels plait-run selects
    (OpenBLAS SkylakeX/Haswell, runtime/cpu/BlasCore.h), a per-rank batch of another shape
    rounds differently, and AdamW turns the rounding of a near-zero gradient into an update
    difference of up to lr per step: the GPT's 2-rank weights differ from 1 rank's by up to
    5.9e-5 (one element, 20 steps, lr 3e-3; 1.1e-6 with the generic kernels) while the losses
    agree to 2.6e-7; with the fused attention (plait.attention), whose trajectory rounds
    differently, 1.19e-4 for one element of the second block's value projection, the losses
    within 4.7e-7. So AdamW runs get 2e-4; SGD, without that amplification, 2e-5. The
    attention key bias is masked under AdamW (see train_configs.KEY_BIAS)."""
    problems, worst = [], 0.0
    atol = 2e-4 if adamw else 2e-5
    for key, ref in ref_w.items():
        got = weights.get(key)
        if got is None or got.shape != ref.shape:
            problems.append("weight %s missing or reshaped" % key)
            continue
        a, b = got.copy(), ref.copy()
        masked = WHOLE_KEY_BIAS if adafactor() else KEY_BIAS  # train_parity says why
        if adamw and key in masked:
            a[masked[key]] = b[masked[key]] = 0
        d = np.abs(a - b)
        worst = max(worst, float(d.max()))
        if (d - 1e-4 * np.abs(b)).max() > atol:
            problems.append("weight %s differs by %.3g at %s" % (
                key, d.max(), np.unravel_index(d.argmax(), d.shape)))
    return problems, worst


def comm_problems(log, predicted):
    """The first step whose wire bytes (the runtime's count) differ from the report's."""
    for r in log:
        measured = r.get("comm_bytes", {})
        if any(measured.get(k, 0) != predicted[k] for k in predicted):
            return ["step %d: runtime sent %s, report predicts %s" % (r["step"], measured,
                                                                      predicted)]
    return []


def states_of(flags, param):
    """Optimizer tensors that plait-compile `flags` train `param` with: the run's settings, or
    those of the first --param-group matching it (its momentum, amsgrad, centered), and a
    momentum buffer where a cyclical schedule cycles the momentum."""
    optimizer = flags[flags.index("--optimizer") + 1]
    momentum = float(flags[flags.index("--momentum") + 1]) if "--momentum" in flags else 0.0
    settings = {"amsgrad": str("--amsgrad" in flags), "centered": str("--centered" in flags),
                "momentum": str(momentum)}
    for i, flag in enumerate(flags):
        if flag == "--param-group":
            regex, _, keys = flags[i + 1].rpartition(":")
            if re.search(regex, param):
                settings.update(kv.split("=", 1) for kv in keys.split(","))
                break
    on = {k: settings[k].lower() in ("true", "1") for k in ("amsgrad", "centered")}
    # onecycle and cyclic cycle SGD's and RMSprop's momentum (a buffer even without
    # --momentum) unless --no-cycle-momentum.
    cycled = any(flags[i + 1] in ("onecycle", "cyclic") for i, flag in enumerate(flags)
                 if flag == "--lr-schedule") and "--no-cycle-momentum" not in flags
    moment = float(settings["momentum"]) != 0 or cycled
    ema = int("--ema-decay" in flags)  # the weight EMA, sharded with the optimizer's states
    if optimizer == "rmsprop":
        return 1 + on["centered"] + moment + ema
    if optimizer == "sgd":
        return int(moment) + ema
    if optimizer == "adafactor":
        return int("--beta1" in flags) + ema
    return STATES[optimizer] + on["amsgrad"] + ema


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", required=True, type=pathlib.Path)
    ap.add_argument("--sample", required=True, choices=sorted(TRAIN))
    ap.add_argument("--world", required=True, type=int)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--clip", type=float, default=0.0,
                    help="also clip gradients to this global norm (on every run)")
    ap.add_argument("--adam-l2", type=float, default=None,
                    help="train with --optimizer adam and this weight decay (L2) instead")
    ap.add_argument("--optimizer-flags", default=None,
                    help="train with these plait-compile optimizer flags instead")
    ap.add_argument("--run-flags", default="",
                    help="more plait-run flags for the multi-rank runs")
    args = ap.parse_args()
    RUN_FLAGS.extend(args.run_flags.split())
    if args.optimizer_flags is not None:
        TRAIN[args.sample] = args.optimizer_flags.split()
    if args.adam_l2 is not None:
        lr = TRAIN[args.sample][TRAIN[args.sample].index("--lr") + 1]
        TRAIN[args.sample] = ["--optimizer", "adam", "--lr", lr,
                              "--weight-decay", str(args.adam_l2)]
    if args.clip > 0:
        TRAIN[args.sample] = TRAIN[args.sample] + ["--clip-grad-norm", str(args.clip)]
    compile_bin = args.build / "bin" / "plait-compile"
    name, world, steps = args.sample, args.world, args.steps
    failures = []
    with tempfile.TemporaryDirectory(prefix="plait-dp-") as tmp:
        tmp = pathlib.Path(tmp)
        data_dir = tmp / "data"
        data_dir.mkdir()
        _, global_batch = make_dataset(name, steps, data_dir)
        if global_batch % world:
            sys.exit("global batch %d does not split over %d ranks" % (global_batch, world))
        # The reference: the committed model (global batch) on one rank.
        ref_plan = tmp / "ref.plan"
        run([compile_bin, SAMPLES / name / (name + ".onnx"), "--train", *TRAIN[name], "-o",
             ref_plan], 120)
        ref_out = tmp / "ref"
        ref_out.mkdir()
        ema = "--ema-decay" in TRAIN[name]
        ref_log, ref_w = train(args.build, ref_plan, data_dir, steps, 1, ref_out, ema)
        ref_losses = np.array([r["loss"] for r in ref_log])
        ref_lrs = [r["lr"] for r in ref_log]
        if "plateau" in TRAIN[name] and len(set(ref_lrs)) < 2:
            failures.append("%s: the plateau schedule never reduced the reference's lr: the "
                            "run checks no reduction" % name)

        model = tmp / ("%s-b%d.onnx" % (name, global_batch // world))
        rebatch(SAMPLES / name / (name + ".onnx"), model, global_batch // world)
        runs = placements(world)
        runs.append(("mixed", ["--placement", MIXED[name]]))
        for label, extra in runs:
            strategy = label.split("-")[0] if label != "mixed" else "fsdp"
            plan, report_path = tmp / "dp.plan", tmp / "report.json"
            run([compile_bin, model, "--train", *TRAIN[name], "--world-size", str(world),
                 "--strategy", strategy, *extra, "--report", report_path, "-o", plan], 120)
            report = json.loads(report_path.read_text())
            out = tmp / label.replace(":", "_")
            out.mkdir()
            log, weights = train(args.build, plan, data_dir, steps, world, out, ema)
            losses = np.array([r["loss"] for r in log])
            problems, rel_max, worst = compare(name, losses, weights, ref_losses, ref_w, steps)
            if [r["lr"] for r in log] != ref_lrs:  # the plateau schedule's: read on each rank
                problems.append("the lr of some step differs from the reference's")
            # The gradients' global norm (--clip-grad-norm, --log-grad-norm): of the averaged
            # gradients, from every rank's shards, as the reference's from whole ones.
            norms = [r.get("grad_norm") for r in log]
            ref_norms = [r.get("grad_norm") for r in ref_log]
            if (None in norms) != (None in ref_norms):
                problems.append("grad_norm logged %s, by the reference %s" % (norms, ref_norms))
            elif None not in norms:
                norm_rel = max(abs(a - b) / max(abs(b), 1e-12) for a, b in zip(norms, ref_norms))
                if len(norms) != len(ref_norms) or norm_rel > 1e-4:
                    problems.append("grad_norm %s, the reference's %s (max rel %.1e)"
                                    % (norms, ref_norms, norm_rel))
            mem = report["memory"]
            expect = np.zeros(3, dtype=np.int64)
            for unit in report["units"]:
                forms = closed_forms(unit, world, states_of(TRAIN[name], unit["params"][0]))
                if adafactor():  # exp_avg (with --beta1) as a moment, then the rows and columns
                    forms = forms[:2] + (forms[2] + adafactor_moment_bytes(model,
                                                                           unit["params"]),)
                got = (unit["params_bytes"], unit["grads_bytes"], unit["optimizer_bytes"])
                if got != forms:
                    problems.append("unit %s: report %s, closed forms %s" % (unit["name"], got,
                                                                              forms))
                expect += forms
            if (mem["params"], mem["grads"], mem["optimizer"]) != tuple(expect):
                problems.append("memory params/grads/optimizer %s, closed forms %s" % (
                    (mem["params"], mem["grads"], mem["optimizer"]), tuple(expect)))
            planned = report["memory"]["high_water"]
            measured_hw = {r.get("arena_high_water") for r in log}
            if measured_hw != {planned}:
                problems.append("arena high water %s, planned %d" % (sorted(measured_hw, key=str),
                                                                     planned))
            predicted = report["comm"]
            problems += comm_problems(log, predicted)
            print("%-5s world %d %-15s loss %.6f -> %.6f  max rel loss diff %.2e  max |dw| "
                  "%.2e  comm %d B/step  params/grads/opt per rank %s  %s" % (
                      name, world, label, losses[0], losses[-1], rel_max, worst,
                      predicted["total"], tuple(int(v) for v in expect),
                      "ok" if not problems else "FAIL"))
            failures += ["%s %s: %s" % (name, label, p) for p in problems]
    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
