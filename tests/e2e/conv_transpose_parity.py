#!/usr/bin/env python3
"""Training parity of ONNX ConvTranspose (plait.conv2d_grad_input) against PyTorch.

A small decoder built here in PyTorch: Conv2d, then ConvTranspose2d with groups, stride 2,
padding and output padding, then ConvTranspose2d with dilation, unequal strides and no bias;
beside it a ConvTranspose1d with output padding. The loss is the mean squared error of both
against targets. The module is exported to ONNX (opset 13, its initial weights as
initializers); plait-compile --train builds the step, plait-run trains it on 1 thread and on 2;
PyTorch trains the module from the same weights on the same batches with the same optimizer
(SGD with momentum). Per-step losses must agree within 1e-4 relative, the final weights
(plait's --save-weights) within rtol 1e-4 / atol 1e-5.

Run with /usr/bin/python3 (torch 1.13, onnx 1.12):
  conv_transpose_parity.py --build BUILD [--steps 20]
"""
import argparse
import json
import pathlib
import subprocess
import sys
import tempfile

import numpy as np
import torch
from torch import nn

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from train_parity import compare_training, read_safetensors  # noqa: E402

BATCH = 4
LR, MOMENTUM = 0.05, 0.9


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.down = nn.Conv2d(3, 8, 3, stride=2, padding=1)                    # 8x8 -> 4x4
        self.up = nn.ConvTranspose2d(8, 6, 3, stride=2, padding=1, output_padding=1,
                                     groups=2)                                 # 4x4 -> 8x8
        self.out = nn.ConvTranspose2d(6, 3, (3, 2), stride=(1, 2), padding=(1, 0),
                                      dilation=(2, 1), bias=False)             # 8x8 -> 10x16
        self.up1d = nn.ConvTranspose1d(4, 2, 3, stride=3, padding=1,
                                       output_padding=2)                       # 5 -> 15

    def forward(self, x, y, u, v):
        h = torch.tanh(self.up(torch.relu(self.down(x))))
        d = self.out(h) - y
        e = self.up1d(u) - v
        return (d * d).mean() + (e * e).mean()


def make_data(steps, rng):
    return {
        "x": rng.standard_normal((steps * BATCH, 3, 8, 8)).astype(np.float32),
        "y": rng.standard_normal((steps * BATCH, 3, 10, 16)).astype(np.float32),
        "u": rng.standard_normal((steps * BATCH, 4, 5)).astype(np.float32),
        "v": rng.standard_normal((steps * BATCH, 2, 15)).astype(np.float32),
    }


def train_torch(model, data, steps):
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
    losses = []
    for s in range(steps):
        args = [torch.from_numpy(data[k][s * BATCH:(s + 1) * BATCH]) for k in "xyuv"]
        loss = model(*args)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    return losses, {k: v.detach().numpy() for k, v in model.state_dict().items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", required=True)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    bindir = pathlib.Path(args.build) / "bin"
    model = Decoder()
    data = make_data(args.steps, np.random.default_rng(7))
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        onnx_path = tmp / "decoder.onnx"
        example = tuple(torch.from_numpy(data[k][:BATCH]) for k in "xyuv")
        torch.onnx.export(model, example, str(onnx_path), input_names=list("xyuv"),
                          output_names=["loss"], opset_version=13, do_constant_folding=False,
                          training=torch.onnx.TrainingMode.EVAL, export_params=True,
                          keep_initializers_as_inputs=False)
        (tmp / "data").mkdir()
        for k, v in data.items():
            np.save(tmp / "data" / f"{k}.npy", v)
        plan = tmp / "decoder.plan"
        subprocess.run([bindir / "plait-compile", onnx_path, "-o", plan, "--train", "--optimizer",
                        "sgd", "--lr", str(LR), "--momentum", str(MOMENTUM)], check=True)
        runs = {}
        for threads in (1, 2):
            log, weights = tmp / f"log{threads}.jsonl", tmp / f"w{threads}.safetensors"
            subprocess.run([bindir / "plait-run", plan, "--data", tmp / "data", "--steps",
                            str(args.steps), "--threads", str(threads), "--log-jsonl", log,
                            "--save-weights", weights], check=True, stdout=subprocess.DEVNULL)
            runs[threads] = ([json.loads(line)["loss"] for line in log.read_text().splitlines()],
                             read_safetensors(weights))
    torch_losses, torch_weights = train_torch(model, data, args.steps)
    for threads, (losses, weights) in runs.items():
        label = f"conv_transpose ({threads} thread{'s' if threads > 1 else ''})"
        ok &= compare_training(label, losses, weights, torch_losses, torch_weights)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
