#!/usr/bin/env python3
"""plait-zoo --family resnet --layers 1,1 --width 4 --image 16 --classes 3 --batch-norm against
the same network in PyTorch (torchvision's structure: convs without bias, each followed by a
training-mode BatchNorm2d): from plait's initial weights (INIT, saved by a run whose step
leaves them unchanged), SGD with momentum on the zoo_data.py batches. Exits 1 unless the
per-step losses agree within 1e-4 relative and the final weights, running statistics
included (num_batches_tracked too: both count from 0), within rtol 1e-4 / atol 1e-5.

  resnet_bn_parity.py DATA INIT.safetensors FINAL.safetensors LOG.jsonl --lr 0.05 --momentum 0.9
                      [--micro-batches K] [--world W --sync]

With --world W --sync (plait-zoo --sync-batch-norm on W ranks, each computing 4 samples of a
global batch of 4 W): PyTorch's SyncBatchNorm, that is one process computing each micro-batch
of every rank at once, the statistics and running statistics those of the global
micro-batch.
"""
import argparse
import json
import pathlib
import sys

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[3] / "e2e"))
from train_parity import compare_training, read_safetensors  # noqa: E402

# torch module -> plait-zoo prefix
CONVS = {"stem": "stem", "b0c1": "blocks.0.conv1", "b0c2": "blocks.0.conv2",
         "b1c1": "blocks.1.conv1", "b1c2": "blocks.1.conv2", "b1sc": "blocks.1.shortcut"}


class ResNet(nn.Module):
    def __init__(self):
        super().__init__()
        shapes = {"stem": (3, 4, 7, 2), "b0c1": (4, 4, 3, 1), "b0c2": (4, 4, 3, 1),
                  "b1c1": (4, 8, 3, 2), "b1c2": (8, 8, 3, 1), "b1sc": (4, 8, 1, 2)}
        for name, (cin, cout, k, stride) in shapes.items():
            setattr(self, name, nn.Conv2d(cin, cout, k, stride, k // 2, bias=False))
            setattr(self, name + "_bn", nn.BatchNorm2d(cout))
        self.head = nn.Linear(8, 3)

    def conv(self, name, x):
        return getattr(self, name + "_bn")(getattr(self, name)(x))

    def forward(self, x, y):
        x = F.max_pool2d(F.relu(self.conv("stem", x)), 3, 2, 1)
        x = F.relu(x + self.conv("b0c2", F.relu(self.conv("b0c1", x))))
        h = self.conv("b1c2", F.relu(self.conv("b1c1", x)))
        x = F.relu(self.conv("b1sc", x) + h)
        return F.cross_entropy(self.head(F.adaptive_avg_pool2d(x, 1).flatten(1)), y)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data", type=pathlib.Path)
    ap.add_argument("init")
    ap.add_argument("final")
    ap.add_argument("log")
    ap.add_argument("--lr", type=float, required=True)
    ap.add_argument("--momentum", type=float, required=True)
    ap.add_argument("--micro-batches", type=int, default=1,
                    help="each step accumulates this many equal micro-batches (each updating "
                         "the running statistics in turn)")
    ap.add_argument("--world", type=int, default=1, help="ranks, each computing 4 samples")
    ap.add_argument("--sync", action="store_true", help="SyncBatchNorm over the ranks")
    args = ap.parse_args()
    if args.world > 1 and not args.sync:
        ap.error("--world needs --sync (the ranks' own statistics are not modelled here)")
    init, final = read_safetensors(args.init), read_safetensors(args.final)
    model = ResNet()
    names = {"head.bias": "head.bias"}
    with torch.no_grad():
        for name, prefix in CONVS.items():
            getattr(model, name).weight.copy_(torch.tensor(init[prefix + ".weight"]))
            names[name + ".weight"] = prefix + ".weight"
            for k in ("weight", "bias", "running_mean", "running_var", "num_batches_tracked"):
                names[f"{name}_bn.{k}"] = f"{prefix}.bn.{k}"
                if k in ("weight", "bias"):
                    getattr(getattr(model, name + "_bn"), k).copy_(
                        torch.tensor(init[f"{prefix}.bn.{k}"]))
        model.head.weight.copy_(torch.tensor(init["head.weight"].T))  # plait: x @ [in, out]
        model.head.bias.copy_(torch.tensor(init["head.bias"]))
    x, y = np.load(args.data / "x.npy"), np.load(args.data / "y.npy")
    losses = [json.loads(line)["loss"] for line in open(args.log)]
    per_rank, k, world = 4, args.micro_batches, args.world
    batch, micro = per_rank * world, per_rank // k
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    torch_losses = []
    for s in range(len(losses)):
        opt.zero_grad()
        total = 0.0
        start = (s * batch) % len(x)
        for m in range(k):  # micro-batch m of every rank, rank 0's first
            rows = np.concatenate([np.arange(start + r * per_rank + m * micro,
                                             start + r * per_rank + (m + 1) * micro)
                                   for r in range(world)])
            loss = model(torch.tensor(x[rows]), torch.tensor(y[rows])) / k
            loss.backward()
            total += float(loss)
        opt.step()
        torch_losses.append(total)
    weights = {names[k]: v.detach().numpy() for k, v in model.state_dict().items() if k in names}
    weights["head.weight"] = model.head.weight.detach().numpy().T
    ok = compare_training("plait-zoo resnet --batch-norm", losses, final, torch_losses, weights)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
