#!/usr/bin/env python3
"""Attention dropout fused: the same masks as the decomposed dropout, so the same training.

A model of torch.nn's transformer layers with dropout 0.1 everywhere (TransformerEncoderLayer's
default: its MultiheadAttention drops the attention probabilities too; one encoder under a
causal mask), exported in training mode. plait-fuse-attention makes each attention, its
probabilities' dropout included, one plait.attention that draws the mask plait.dropout_mask
would have drawn (codegen/schema/DropoutMask.h, over the [B, H, S, T] probabilities). So the
plan compiled as is and the one compiled with --no-fused-attention draw the same masks and
must train alike: 20 SGD steps, per-step losses within 1e-6 relative in f32 (1 and 2 threads,
and 2 ranks under ddp: each rank draws its own masks), within 2e-2 under --precision
bf16-mixed (the fused kernels keep the probabilities in f32, the decomposed ops round them to
bf16). The report must count every attention fused, each with its dropout, one causal.
PyTorch draws other masks, so it is not the reference here; e2e.train.torch_transformer
checks the same layers against it at p = 0.

Run with /usr/bin/python3:  attention_dropout_parity.py --build BUILD
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
import torch.nn as nn
import torch.nn.functional as F

STEPS, BATCH, SEQ, WIDTH = 20, 4, 6, 16
ATTENTIONS = 3


class DroppedTransformer(nn.Module):
    def __init__(self):
        super().__init__()
        self.causal_layers = nn.TransformerEncoder(
            nn.TransformerEncoderLayer(WIDTH, 2, 32, dropout=0.1, batch_first=True), 1)
        self.layers = nn.TransformerEncoder(
            nn.TransformerEncoderLayer(WIDTH, 4, 32, dropout=0.1, batch_first=True,
                                       norm_first=True, activation="gelu"), 1)
        self.mha = nn.MultiheadAttention(WIDTH, 4, dropout=0.2, batch_first=True)
        self.head = nn.Linear(WIDTH * SEQ, 4)
        self.register_buffer("causal", nn.Transformer.generate_square_subsequent_mask(SEQ),
                             persistent=False)

    def forward(self, x, y):
        h = self.layers(self.causal_layers(x, mask=self.causal))
        a, _ = self.mha(h, x, x, need_weights=False)
        return F.cross_entropy(self.head((h + a).flatten(1)), y)


def losses(bindir, onnx_path, data, work, flags, threads=1, ranks=1):
    plan, report, log = work / "m.plan", work / "report.json", work / "log.jsonl"
    subprocess.run([bindir / "plait-compile", onnx_path, "-o", plan, "--train", "--optimizer",
                    "sgd", "--lr", "0.05", "--report", report, *flags], check=True)
    run = [bindir / "plait-run", plan, "--data", data, "--steps", str(STEPS), "--threads",
           str(threads), "--log-jsonl", log, "--progress", "none"]
    if ranks > 1:
        run = ["timeout", "300", "mpirun", "--oversubscribe", "--allow-run-as-root", "-np",
               str(ranks)] + run
    subprocess.run(run, check=True, stdout=subprocess.DEVNULL, timeout=320)
    fused = json.loads(report.read_text()).get("fusion", {}).get("attention", {})
    return [json.loads(line)["loss"] for line in log.read_text().splitlines()], fused


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", required=True, type=pathlib.Path)
    args = ap.parse_args()
    bindir = args.build / "bin"
    warnings.filterwarnings("ignore")
    torch.manual_seed(0)
    model = DroppedTransformer().train()
    rng = np.random.default_rng(5)
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        (tmp / "data").mkdir()
        np.save(tmp / "data" / "x.npy",
                rng.standard_normal((STEPS * 2 * BATCH, SEQ, WIDTH)).astype(np.float32))
        np.save(tmp / "data" / "y.npy", rng.integers(0, 4, size=(STEPS * 2 * BATCH,)))
        for ranks in (1, 2):
            onnx_path = tmp / f"m{ranks}.onnx"
            example = (torch.zeros(BATCH, SEQ, WIDTH), torch.zeros(BATCH, dtype=torch.int64))
            torch.onnx.export(model, example, str(onnx_path), input_names=["x", "y"],
                              output_names=["loss"], opset_version=13,
                              do_constant_folding=False,
                              training=torch.onnx.TrainingMode.TRAINING)
            cases = [("f32", [], 1, 1e-6), ("f32, 2 threads", [], 2, 1e-6),
                     ("bf16-mixed", ["--precision", "bf16-mixed"], 1, 2e-2)]
            if ranks == 2:
                cases = [("f32, 2 ranks ddp", ["--world-size", "2", "--strategy", "ddp"], 1, 1e-6)]
            for label, flags, threads, tol in cases:
                work = tmp / label.replace(" ", "_").replace(",", "")
                work.mkdir()
                fused, report = losses(bindir, onnx_path, tmp / "data", work, flags, threads,
                                       ranks)
                plain, _ = losses(bindir, onnx_path, tmp / "data", work,
                                  flags + ["--no-fused-attention"], threads, ranks)
                worst = max(abs(a - b) / max(abs(b), 1e-12) for a, b in zip(fused, plain))
                good = (len(fused) == len(plain) == STEPS and worst <= tol and
                        report.get("fused") == ATTENTIONS and report.get("dropout") == ATTENTIONS
                        and report.get("causal") == 1)
                print(f"{label}: {report.get('fused')} of {ATTENTIONS} attentions fused, losses "
                      f"{fused[0]:.4f} -> {fused[-1]:.4f}, max rel diff to --no-fused-attention "
                      f"{worst:.1e} (bound {tol:g}): {'ok' if good else 'FAIL'}")
                ok &= good
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
