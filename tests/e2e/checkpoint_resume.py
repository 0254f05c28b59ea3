#!/usr/bin/env python3
"""Checkpoints: resume, resharding, damage, export.

For a sample (gpt: AdamW, or mlp: SGD with momentum) on this machine's MPI ranks:
  1. The reference: STEPS steps on 4 ranks under zero3, checkpointing every STEPS/2 steps.
  2. Same plan, resumed from the mid-run checkpoint: the losses of the remaining steps and the
     final weights are bitwise those of the reference.
  3. Resharded: the mid-run checkpoint (4 ranks, zero3) resumed under 2 ranks ddp, 2 ranks
     zero2 (sharded optimizer state, whole params) and 1 rank (each compiled for the same
     global batch): the remaining losses agree with the reference within 1e-5 relative.
  4. Damage: with the newest checkpoint's rank file bit-flipped, or its metadata truncated,
     --resume says which file is damaged, falls back to the previous good checkpoint and
     still gives the reference's losses. A damaged or truncated plan file is refused.
  5. plait-ckpt export writes the final checkpoint's params as safetensors, bitwise equal to
     --save-weights of the reference run.

With --precision bf16-mixed every plan is compiled so: the checkpoints hold the f32 master
weights and optimizer states (the bf16 params are their casts), resuming on the same plan is
still bitwise, and a resharded resume agrees within --reshard-tol (absolute; bf16 rounds a
batch split across ranks differently).

With --ema-decay D every plan keeps a weight EMA: its averages are sharded states of the
checkpoints, the resumed run's EMA weights (--save-ema-weights) are bitwise the reference's,
and a resharded run's within 1e-4 relative + 2e-4.

With --optimizer-flags "FLAGS" every plan trains with those plait-compile optimizer flags
(Adafactor's: its exp_avg sharded, its rows and columns whole on every rank, saved once).

Run with /usr/bin/python3:  checkpoint_resume.py --build BUILD --sample gpt [--steps 12]
                                                 [--precision bf16-mixed] [--ema-decay D]
                                                 [--optimizer-flags "--optimizer ..."]
"""
import argparse
import json
import pathlib
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from dp_parity import TRAIN, rebatch  # noqa: E402
from train_parity import SAMPLES, make_dataset, read_safetensors  # noqa: E402

MPIRUN = ["mpirun", "--oversubscribe", "--allow-run-as-root"]


def run(cmd, timeout=240, expect_ok=True):
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout)
    if expect_ok and p.returncode != 0:
        sys.exit("FAILED (%d): %s\n%s%s" % (p.returncode, " ".join(map(str, cmd)), p.stdout,
                                           p.stderr))
    return p


def losses(log):
    return {r["step"]: r["loss"] for r in map(json.loads, log.read_text().splitlines())}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", required=True, type=pathlib.Path)
    ap.add_argument("--sample", required=True, choices=sorted(TRAIN))
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--precision", default="fp32", choices=["fp32", "bf16-mixed"])
    ap.add_argument("--reshard-tol", type=float, default=None,
                    help="resharded losses: absolute tolerance (default: 1e-5 relative for "
                         "fp32, 2e-2 absolute for bf16-mixed)")
    ap.add_argument("--ema-decay", type=float, default=None,
                    help="keep a weight EMA with this decay, and check it as the weights")
    ap.add_argument("--optimizer-flags", default=None,
                    help="train with these plait-compile optimizer flags instead")
    args = ap.parse_args()
    if args.optimizer_flags is not None:
        TRAIN[args.sample] = args.optimizer_flags.split()
    ema = args.ema_decay is not None
    if ema:
        TRAIN[args.sample] = TRAIN[args.sample] + ["--ema-decay", str(args.ema_decay)]
    if args.reshard_tol is None and args.precision == "bf16-mixed":
        args.reshard_tol = 2e-2
    build, name, steps = args.build, args.sample, args.steps
    half = steps // 2
    compile_bin, run_bin = build / "bin" / "plait-compile", build / "bin" / "plait-run"
    ckpt_bin = build / "bin" / "plait-ckpt"
    failures = []

    def check(ok, what):
        print("%-4s %s" % ("ok" if ok else "FAIL", what))
        if not ok:
            failures.append(what)

    with tempfile.TemporaryDirectory(prefix="plait-ckpt-") as tmp:
        tmp = pathlib.Path(tmp)
        data = tmp / "data"
        data.mkdir()
        _, global_batch = make_dataset(name, steps, data)
        plans = {}
        for world, strategy in ((4, "zero3"), (2, "ddp"), (2, "zero2"), (1, "ddp")):
            model = SAMPLES / name / (name + ".onnx")
            if world > 1:
                model = tmp / ("%s-b%d.onnx" % (name, global_batch // world))
                rebatch(SAMPLES / name / (name + ".onnx"), model, global_batch // world)
            plan = tmp / ("%s-w%d-%s.plan" % (name, world, strategy))
            run([compile_bin, model, "--train", *TRAIN[name], "--world-size", world,
                 "--strategy", strategy, "--precision", args.precision, "-o", plan])
            plans[(world, strategy)] = plan

        def train(world, strategy, ckpt, log, extra=(), expect_ok=True):
            cmd = [run_bin, plans[(world, strategy)], "--data", data, "--steps", steps,
                   "--log-jsonl", log, "--checkpoint-dir", ckpt, *extra]
            if world > 1:
                cmd = MPIRUN + ["-np", world] + cmd
            return run(["timeout", "200"] + cmd, 220, expect_ok)

        # 1. The reference, checkpointing at half and at the end.
        ref_ckpt, ref_log = tmp / "ref-ckpt", tmp / "ref.jsonl"
        def averages(label):
            """--save-ema-weights to tmp/LABEL-ema.safetensors, with --ema-decay."""
            return ["--save-ema-weights", tmp / (label + "-ema.safetensors")] if ema else []

        train(4, "zero3", ref_ckpt, ref_log,
              ["--checkpoint-every", half, "--save-weights", tmp / "ref.safetensors",
               *averages("ref")])
        ref = losses(ref_log)
        check(sorted(ref) == list(range(1, steps + 1)), "reference ran %d steps" % steps)
        saved = sorted(p.name for p in ref_ckpt.iterdir())
        check(saved == ["latest", "step-%08d" % half, "step-%08d" % steps],
              "checkpoint dir holds %s" % saved)
        meta = json.loads((ref_ckpt / ("step-%08d" % half) / "meta.json").read_text())["body"]
        check(meta["world_size"] == 4 and meta["step"] == half and
              meta["samples_seen"] == half * global_batch,
              "metadata: world 4, step %d, %d samples seen" % (half, half * global_batch))

        def mid_run_copy(label):
            """The reference's checkpoint directory as it was after step `half`."""
            d = tmp / label
            shutil.copytree(ref_ckpt, d)
            shutil.rmtree(d / ("step-%08d" % steps))
            (d / "latest").write_text("step-%08d\n" % half)
            return d

        def compare_tail(label, log, exact):
            got = losses(log)
            tail = range(half + 1, steps + 1)
            if sorted(got) != list(range(1, steps + 1)):
                check(False, "%s: log steps %s" % (label, sorted(got)))
                return
            if exact:
                same = all(got[s] == ref[s] for s in range(1, steps + 1))
                check(same, "%s: losses of steps %d-%d bitwise equal" % (label, half + 1, steps))
            elif args.reshard_tol is not None:
                diff = max(abs(got[s] - ref[s]) for s in tail)
                check(diff <= args.reshard_tol, "%s: losses of steps %d-%d within %.2e (<= %g)"
                      % (label, half + 1, steps, diff, args.reshard_tol))
            else:
                rel = max(abs(got[s] - ref[s]) / max(abs(ref[s]), 1e-12) for s in tail)
                check(rel <= 1e-5, "%s: losses of steps %d-%d within %.2e relative (<= 1e-5)"
                      % (label, half + 1, steps, rel))

        # 2. Same plan, resumed: bitwise.
        d = mid_run_copy("same")
        log = tmp / "same.jsonl"
        shutil.copy(ref_log, log)
        p = train(4, "zero3", d, log, ["--resume", "--save-weights", tmp / "same.safetensors",
                                        *averages("same")])
        check("resuming after step %d" % half in p.stderr, "resume says where it resumes")
        compare_tail("4 ranks zero3 -> 4 ranks zero3", log, exact=True)
        check((tmp / "same.safetensors").read_bytes() == (tmp / "ref.safetensors").read_bytes(),
              "resumed final weights bitwise equal")
        if ema:
            check((tmp / "same-ema.safetensors").read_bytes() ==
                  (tmp / "ref-ema.safetensors").read_bytes(),
                  "resumed final EMA weights bitwise equal")

        # 3. Resharded.
        for world, strategy in ((2, "ddp"), (2, "zero2"), (1, "ddp")):
            label = "w%d-%s" % (world, strategy)
            d = mid_run_copy(label)
            log = tmp / (label + ".jsonl")
            shutil.copy(ref_log, log)
            train(world, strategy, d, log, ["--resume", *averages(label)])
            compare_tail("4 ranks zero3 -> %d rank%s %s" % (world, "s" if world > 1 else "",
                                                             strategy), log, exact=False)
            if ema:
                got = read_safetensors(tmp / (label + "-ema.safetensors"))
                want = read_safetensors(tmp / "ref-ema.safetensors")
                worst = max(float(np.max(np.abs(got[k] - want[k]) - 1e-4 * np.abs(want[k])))
                            for k in want)
                check(sorted(got) == sorted(want) and worst <= 2e-4,
                      "%s: EMA weights within 1e-4 relative + %.1e (<= 2e-4)" % (label, worst))

        # 4. Damage: the newest checkpoint bit-flipped or truncated; the previous one is used.
        for damage in ("flip", "truncate-meta"):
            d = tmp / ("damaged-" + damage)
            shutil.copytree(ref_ckpt, d)
            newest = d / ("step-%08d" % steps)
            if damage == "flip":
                victim = newest / "rank-00002.safetensors"
                raw = bytearray(victim.read_bytes())
                raw[len(raw) // 2] ^= 0x04
                victim.write_bytes(bytes(raw))
                expect = "rank-00002.safetensors: checksum mismatch"
            else:
                victim = newest / "meta.json"
                victim.write_bytes(victim.read_bytes()[:100])
                expect = "meta.json: not checkpoint metadata"
            log = tmp / (damage + ".jsonl")
            shutil.copy(ref_log, log)
            p = train(4, "zero3", d, log, ["--resume"])
            check(expect in p.stderr and "resuming after step %d" % half in p.stderr,
                  "%s: refused (%s), fell back to step %d" % (damage, expect, half))
            compare_tail("after %s" % damage, log, exact=True)

        plan_bytes = plans[(1, "ddp")].read_bytes()
        for label, bad in (("truncated", plan_bytes[:-40]),
                           ("bit-flipped", plan_bytes[:len(plan_bytes) // 3] +
                            bytes([plan_bytes[len(plan_bytes) // 3] ^ 1]) +
                            plan_bytes[len(plan_bytes) // 3 + 1:])):
            bad_plan = tmp / ("bad-%s.plan" % label)
            bad_plan.write_bytes(bad)
            p = run([run_bin, bad_plan, "--data", data, "--steps", 1], 60, expect_ok=False)
            want = "truncated plan file" if label == "truncated" else "damaged plan file"
            check(p.returncode == 1 and want in p.stderr and p.stderr.count("\n") == 1,
                  "%s plan refused in one line: %s" % (label, p.stderr.strip()))

        # 5. Export.
        out = tmp / "export.safetensors"
        run([ckpt_bin, "export", ref_ckpt, "-o", out])
        exported, reference = read_safetensors(out), read_safetensors(tmp / "ref.safetensors")
        same = sorted(exported) == sorted(reference) and all(
            np.array_equal(exported[k], reference[k]) for k in reference)
        check(same, "plait-ckpt export: %d params equal --save-weights" % len(reference))
        dtypes = sorted({str(v.dtype) for v in exported.values()})
        check(dtypes == ["float32"], "the checkpoint's params are %s (%s master weights)"
              % (dtypes, args.precision))

    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
