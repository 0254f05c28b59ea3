#!/usr/bin/env python3
"""bf16-mixed losses computed from the bf16 logits (plait-fuse-loss-cast) with class weights
and with logits of rank 3: the same bits as the loss of their f32 cast, and the f32 copies
gone.

The model: features [B, T, F] through two linear layers to per-token logits [B, T, C]; the
loss is PyTorch's cross_entropy of the logits transposed to [B, C, T] (ONNX
SoftmaxCrossEntropyLoss of rank 3) with constant class weights, plus a weighted
cross_entropy of [B, C] logits from the tokens' mean (rank 2). With --label-smoothing E both
are cross_entropy(label_smoothing=E) in PyTorch (which the export cannot carry: the model is
exported without, and plait-compile gets --label-smoothing E). Exported to ONNX and trained
with plait:
  - fp32 on one thread, against PyTorch trained from the same weights on the same batches
    (losses within 1e-4 relative);
  - --precision bf16-mixed on two threads, and again with --no-fused-loss-cast on one
    thread: the per-step losses are the same bits (the loss kernels give the same bits on any
    thread count), within --tol of fp32;
  - the report's fuse_loss_cast counts both losses and both gradients (the sequence head's
    gradient cast back would be fused with its bias gradient's sum if the fold came later),
    its line is in `optimizations`, the plan runs fewer kernels (at most one per cast
    removed), and its planned peak is lower.

Run with /usr/bin/python3 (torch 1.13, onnx 1.12):
  loss_fold_parity.py --build BUILD [--steps 12] [--tol 2e-2] [--label-smoothing E]
"""
import argparse
import json
import pathlib
import subprocess
import sys
import tempfile
import warnings

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from onnx_op_train_parity import train_torch  # noqa: E402

BATCH, TOKENS, FEATURES, HIDDEN, CLASSES = 4, 6, 16, 32, 50
LR = 0.05
# Class weights from 0.5 to 2: a constant in the graph, not a parameter.
WEIGHTS = [0.5 + 1.5 * i / (CLASSES - 1) for i in range(CLASSES)]


class TokenClassifier(nn.Module):
    inputs = ("x", "tokens", "label")

    def __init__(self):
        super().__init__()
        self.smoothing = 0.0  # cross_entropy's label_smoothing (0 for the export)
        self.hidden = nn.Linear(FEATURES, HIDDEN)
        self.tokens_head = nn.Linear(HIDDEN, CLASSES)
        self.sequence_head = nn.Linear(HIDDEN, CLASSES)

    def forward(self, x, tokens, label):
        h = F.gelu(self.hidden(x))                      # [B, T, H]
        per_token = self.tokens_head(h)                 # [B, T, C]
        weight = torch.tensor(WEIGHTS)
        loss = F.cross_entropy(per_token.transpose(1, 2), tokens, weight=weight,
                               label_smoothing=self.smoothing)
        sequence = self.sequence_head(h.mean(dim=1))    # [B, C]
        return loss + F.cross_entropy(sequence, label, weight=weight, reduction="sum",
                                      label_smoothing=self.smoothing) / BATCH


def data(n, rng):
    """Classes a fixed projection of the features picks (so that there is something to
    learn): per token, and for the tokens' mean."""
    x = rng.standard_normal((n, TOKENS, FEATURES)).astype(np.float32)
    projection = rng.standard_normal((FEATURES, CLASSES))
    return {"x": x, "tokens": np.argmax(x @ projection, axis=-1).astype(np.int64),
            "label": np.argmax(x.mean(axis=1) @ projection, axis=-1).astype(np.int64)}


def run(cmd, timeout=300):
    done = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        sys.exit("FAIL: %s exited %d: %s" % (pathlib.Path(str(cmd[0])).name, done.returncode,
                                             (done.stderr or done.stdout).strip()[-2000:]))
    return done


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", required=True, type=pathlib.Path)
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--tol", type=float, default=2e-2)
    ap.add_argument("--label-smoothing", type=float, default=0.0)
    args = ap.parse_args()
    smoothing = ["--label-smoothing", args.label_smoothing] if args.label_smoothing else []
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = TokenClassifier()
    batches = data(args.steps * BATCH, np.random.default_rng(3))
    bindir = args.build / "bin"
    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        onnx_path = tmp / "tokens.onnx"
        example = tuple(torch.from_numpy(batches[k][:BATCH]) for k in model.inputs)
        warnings.simplefilter("ignore")  # the exporter's notes on the constant weights
        torch.onnx.export(model, example, str(onnx_path), input_names=list(model.inputs),
                          output_names=["loss"], opset_version=13, do_constant_folding=False,
                          training=torch.onnx.TrainingMode.EVAL, export_params=True)
        (tmp / "data").mkdir()
        for k, v in batches.items():
            np.save(tmp / "data" / (k + ".npy"), v)

        def train(label, flags, threads):
            plan, report = tmp / (label + ".plan"), tmp / (label + ".json")
            run([bindir / "plait-compile", onnx_path, "-o", plan, "--train", "--optimizer",
                 "sgd", "--lr", LR, "--report", report, *smoothing, *flags])
            log = tmp / (label + ".jsonl")
            run([bindir / "plait-run", plan, "--data", tmp / "data", "--steps", args.steps,
                 "--threads", threads, "--log-jsonl", log])
            losses = [json.loads(line)["loss"] for line in log.read_text().splitlines()]
            return losses, json.loads(report.read_text())

        fp32, _ = train("fp32", [], 1)
        folded, report = train("bf16", ["--precision", "bf16-mixed"], 2)
        unfolded, plain = train("bf16-unfolded",
                                ["--precision", "bf16-mixed", "--no-fused-loss-cast"], 1)
    model.smoothing = args.label_smoothing
    reference, _ = train_torch(model, batches, args.steps, BATCH,
                               lambda params: torch.optim.SGD(params, lr=LR))
    worst = max(abs(a - b) / max(abs(b), 1e-12) for a, b in zip(fp32, reference))
    if len(fp32) != args.steps or worst > 1e-4:
        problems.append("fp32 losses %s, PyTorch %s (max rel %.1e)" % (fp32, reference, worst))
    if folded != unfolded:
        problems.append("bf16 losses %s, %s with --no-fused-loss-cast: not the same bits"
                        % (folded, unfolded))
    diff = max(abs(a - b) for a, b in zip(folded, fp32))
    if diff > args.tol:
        problems.append("bf16 losses differ from fp32 by %.2e (tolerance %.0e)" % (diff, args.tol))
    fold = report["fusion"].get("fuse_loss_cast", {})
    if (fold.get("losses"), fold.get("gradients")) != (2, 2):
        problems.append("fuse_loss_cast %s: expected both losses and both gradients" % fold)
    if "fuse_loss_cast" not in report["optimizations"]:
        problems.append("no fuse_loss_cast line in the report's optimizations")
    # Each removed cast was a kernel, but one a fused kernel took in (the sequence head's
    # gradient cast, with its bias gradient's sum, when unfolded).
    saved = plain["kernels_per_step"] - report["kernels_per_step"]
    if not 0 < saved <= fold.get("casts", 0):
        problems.append("%d kernels fewer per step, %s casts removed" % (saved, fold.get("casts")))
    # The f32 copies and gradients of the logits are no longer stored.
    peak, plain_peak = report["memory"]["peak"], plain["memory"]["peak"]
    if peak >= plain_peak:
        problems.append("planned peak %d, %d unfolded" % (peak, plain_peak))
    print("loss fold%s: %d steps, bf16 loss %.4f -> %.4f, max |bf16 - fp32| %.2e, fp32 vs PyTorch "
          "%.1e; %s; kernels %d (%d unfolded), peak %d (%d unfolded): %s"
          % (" (label smoothing %g)" % args.label_smoothing if smoothing else "", args.steps,
             folded[0], folded[-1], diff, worst, fold, report["kernels_per_step"],
             plain["kernels_per_step"], peak, plain_peak, "ok" if not problems else "FAIL"))
    for p in problems:
        print("FAIL " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
