#!/usr/bin/env python3
"""The samples trained on the CUDA kernels under the emulation against the CPU backend.

For each sample (mlp, cnn, gpt) and precision (fp32, bf16-mixed), the GPT with its attention
and norms decomposed, the GPT under ZeRO-3 on two ranks, LAMB (grouped, and sharded on two
ranks), plait-zoo's LLaMA in both precisions and its ResNet with training-mode BatchNorm (on
one rank and two, and synchronised on two): compile one CPU plan, train it STEPS steps
with plait-run and with plait-run-emulated (every op that has a CUDA kernel of plait's own
runs that kernel, under the emulation, on the same arena; tests/cuda_emulation/
EmulatedBackend.cpp) on the same data, and compare the per-step losses as tests/gpu/run.sh
compares a GPU's: relative difference at most 1e-4 (fp32) or 1e-2 (bf16-mixed). Every run must
have run emulated kernels and fallen back to the CPU for none. Prints one line per case; exits
1 naming what failed.

  emulated_parity.py --build BUILD [--steps 10]
"""
import argparse
import pathlib
import re
import subprocess
import sys
import tempfile

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))
sys.path.insert(0, str(ROOT / "tests" / "gpu"))
from train_parity import make_dataset  # noqa: E402
# The GPU acceptance run's training flags, tolerances and log reader.
from backend_parity import TOLERANCE, TRAIN, losses  # noqa: E402


def cases():
    """(tag, sample, compile flags, precision, ranks) of every comparison."""
    out = []
    for sample in ("mlp", "cnn", "gpt"):
        for precision in ("fp32", "bf16-mixed"):
            out.append(("%s-%s" % (sample, precision), sample,
                        TRAIN[sample] + ["--precision", precision], precision, 1))
    out.append(("gpt-decomposed-fp32", "gpt",
                TRAIN["gpt"] + ["--no-fused-attention", "--no-fused-norm"], "fp32", 1))
    # Two ranks (processes, MPI between them), params, gradients and optimizer state sharded.
    out.append(("gpt-zero3-w2", "gpt", TRAIN["gpt"] + ["--world-size", "2", "--strategy",
                                                       "zero3"], "fp32", 2))
    # LAMB: grouped (each tensor's norms taken on the device), and on two ranks' flat shards
    # (lamb_norms, all-reduced, then lamb_update with segments).
    lamb = ["--optimizer", "lamb", "--lr", "3e-3"]
    out.append(("mlp-lamb-fp32", "mlp", lamb, "fp32", 1))
    out.append(("gpt-lamb-zero3-w2", "gpt", lamb + ["--world-size", "2", "--strategy", "zero3"],
                "fp32", 2))
    # Adafactor: rows and columns of the second moment, the param's and the update's RMS
    # summed on the device; the cnn's 4-D kernels factored over their last two dimensions,
    # and the GPT's relative step with a first moment on two ranks under ddp, whose one
    # bucket concatenates 29 gradients (the CUDA concat once dropped those after the 16th).
    out.append(("cnn-adafactor-fp32", "cnn", ["--optimizer", "adafactor", "--lr", "3e-3",
                                             "--beta1", "0.9", "--weight-decay", "0.01"],
                "fp32", 1))
    out.append(("gpt-adafactor-ddp-w2", "gpt", ["--optimizer", "adafactor", "--relative-step",
                                               "--beta1", "0.9", "--world-size", "2",
                                               "--strategy", "ddp"], "fp32", 2))
    # plait-zoo's LLaMA: RMS norms (and their gradients, with the residual adds), rotary
    # embeddings (slices, neg, concat), SwiGLU.
    for precision in ("fp32", "bf16-mixed"):
        out.append(("llama-" + precision, "llama", TRAIN["gpt"] + ["--precision", precision],
                    precision, 1))
    # plait-zoo's ResNet with training-mode BatchNorm: batch statistics over (N, H, W), the
    # running statistics' buffers assigned at the end of the step; and on two ranks.
    sgd = ["--optimizer", "sgd", "--lr", "0.05", "--momentum", "0.9"]
    out.append(("resnet-bn-fp32", "resnet", sgd, "fp32", 1))
    out.append(("resnet-bn-zero3-w2", "resnet", sgd + ["--world-size", "2", "--strategy",
                                                       "zero3"], "fp32", 2))
    # SyncBatchNorm: the statistics all-reduced (on the communication stream on a GPU) in the
    # middle of the forward and of the backward.
    out.append(("resnet-sync-bn-zero3-w2", "resnet-sync",
                sgd + ["--world-size", "2", "--strategy", "zero3"], "fp32", 2))
    return out


# plait-zoo --family resnet --batch-norm at these sizes (zoo_data() writes its inputs).
RESNET = ["--layers", "1,1", "--width", "4", "--batch", "4", "--image", "16", "--classes", "3",
          "--batch-norm"]


def llama_data(steps, directory):
    """plait-zoo --family llama's default inputs: idx and targets, i64 [4, 16] below 64."""
    rng = np.random.default_rng(7)
    for name in ("idx", "targets"):
        np.save(directory / (name + ".npy"), rng.integers(0, 64, size=(steps * 4, 16)))


def resnet_data(steps, directory):
    """The RESNET model's inputs: x f32 [4, 3, 16, 16] a step (two ranks' halves), y below 3."""
    rng = np.random.default_rng(7)
    np.save(directory / "x.npy", rng.standard_normal((steps * 4, 3, 16, 16)).astype(np.float32))
    np.save(directory / "y.npy", rng.integers(0, 3, size=(steps * 4,)))


def run(cmd, what):
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        sys.exit("%s failed (exit %d): %s\n%s%s" % (what, p.returncode, " ".join(map(str, cmd)),
                                                    p.stdout, p.stderr))
    return p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", type=pathlib.Path, required=True)
    ap.add_argument("--steps", type=int, default=10)
    args = ap.parse_args()
    compile_bin = args.build / "bin" / "plait-compile"
    cpu_bin = args.build / "bin" / "plait-run"
    emulated_bin = args.build / "tests" / "cuda_emulation" / "plait-run-emulated"
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        work = pathlib.Path(tmp)
        for sample in ("mlp", "cnn", "gpt", "llama", "resnet"):
            (work / sample).mkdir()
            if sample == "llama":
                llama_data(args.steps, work / sample)
            elif sample == "resnet":
                resnet_data(args.steps, work / sample)
            else:
                make_dataset(sample, args.steps, work / sample)
        zoo = {"llama": work / "llama.mlir", "resnet": work / "resnet.mlir",
               "resnet-sync": work / "resnet-sync.mlir"}
        run([args.build / "bin" / "plait-zoo", "--family", "llama", "-o", zoo["llama"]],
            "plait-zoo")
        run([args.build / "bin" / "plait-zoo", "--family", "resnet", *RESNET, "-o",
             zoo["resnet"]], "plait-zoo")
        run([args.build / "bin" / "plait-zoo", "--family", "resnet", *RESNET,
             "--sync-batch-norm", "-o", zoo["resnet-sync"]], "plait-zoo")
        print("%-22s %-6s %-12s %s" % ("case", "steps", "max rel diff", "emulated CUDA kernels"))
        for tag, sample, flags, precision, ranks in cases():
            plan = work / (tag + ".plan")
            model = zoo.get(sample, ROOT / "samples" / sample / (sample + ".onnx"))
            run([compile_bin, model, "--train", *flags, "-o", plan], "compile " + tag)
            logs = {}
            for side, binary in (("cpu", cpu_bin), ("emulated", emulated_bin)):
                logs[side] = work / ("%s-%s.jsonl" % (tag, side))
                data = work / ("resnet" if sample.startswith("resnet") else sample)
                p = run([binary, plan, "--data", data, "--steps", args.steps,
                         "--log-jsonl", logs[side], "--timeout", 120, "--nproc", ranks],
                        "train %s (%s)" % (tag, side))
                if side == "emulated":
                    m = re.search(r"emulated CUDA kernels ran: (.*); fell back to the CPU: (.*)",
                                  p.stderr)
                    ran, fell = (m.group(1), m.group(2)) if m else ("?", "?")
            cpu, emulated = losses(logs["cpu"]), losses(logs["emulated"])
            if len(cpu) != args.steps or len(emulated) != args.steps:
                failures.append("%s: %d and %d losses for %d steps" % (tag, len(cpu),
                                                                       len(emulated), args.steps))
                continue
            diff = float(np.max(np.abs(emulated - cpu) / np.maximum(np.abs(cpu), 1e-12)))
            kinds = len(ran.split(", ")) if ran not in ("none", "?") else 0
            print("%-22s %-6d %-12.3g %d kinds (%s)" % (tag, args.steps, diff, kinds, ran))
            if not np.all(np.isfinite(emulated)) or not diff <= TOLERANCE[precision]:
                failures.append("%s: losses differ by %.3g (relative; tolerance %g): cpu %s, "
                                "emulated %s" % (tag, diff, TOLERANCE[precision], cpu.tolist(),
                                                 emulated.tolist()))
            if kinds == 0 or fell != "none":
                failures.append("%s: emulated kernels ran: %s; fell back to the CPU: %s" % (
                    tag, ran, fell))
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        return 1
    print("all %d cases within tolerance" % len(cases()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
