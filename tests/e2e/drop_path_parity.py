#!/usr/bin/env python3
"""Random draws in a training step (plait.random) against PyTorch: stochastic depth and noise.

The module: two residual blocks whose branches are dropped per sample (stochastic depth, as
timm's drop_path: torch.bernoulli of a [B, 1] keep probability, which torch.onnx.export writes
as RandomUniformLike, Less and Cast), Gaussian noise added to the input (torch.randn_like:
RandomNormalLike), a linear head and mean squared error. Exported with
torch.onnx.TrainingMode.TRAINING (opset 13).

plait draws with a counter-based hash of (seed, stream, step, rank, element)
(codegen/schema/RandomDraw.h), not with PyTorch's generator, so the reference is PyTorch
training the same module with the same draws: the hash reimplemented in numpy (each node's
stream is the FNV-1a hash of its output's name, shifted right by one). plait trains it with
Adam for 20 steps on 1 thread, on 2, and with --recompute all (the backward recomputes the
draws: the same values); per-step losses must agree within 1e-4 relative, final weights within
rtol 1e-4 / atol 1e-5. The fraction of branches kept must be within 5% of 0.75. Then two
ranks (ddp) must train with finite losses, each drawing its own values.

Run with /usr/bin/python3 (torch 1.13, onnx 1.12):
  drop_path_parity.py --build BUILD [--write-model PATH]
"""
import pathlib
import sys
import tempfile

import numpy as np
import onnx
import torch
from torch import nn

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from dropout_parity import (M64, export_training, mix, parity_setup, stream_of,  # noqa: E402
                            train_plait, two_ranks_finite, write_data)
from train_parity import compare_training, read_safetensors  # noqa: E402

BATCH, STEPS, WIDTH = 16, 20, 12
KEEP, NOISE, LR = 0.75, 0.1, 0.01


def key(seed, stream, step, rank=0):
    k = mix((seed * 0x9e3779b97f4a7c15 + 0x2545f4914f6cdd1d) & M64)
    k = mix(k ^ ((stream * 0xd1b54a32d192ed03 + 1) & M64))
    k = mix(k ^ ((step * 0xaef17502108ef2d9 + 2) & M64))
    return mix(k ^ ((rank * 0xf1357aea2e62a9c5 + 3) & M64))


def unit(k, index, bits):
    """RandomDraw.h's unit(): a multiple of 2^-bits in [0, 1), in float64."""
    with np.errstate(over="ignore"):
        h = mix(np.uint64(k) ^ (index.astype(np.uint64) * np.uint64(0x9e3779b97f4a7c15)))
    return (h >> np.uint64(64 - bits)).astype(np.float64) * 2.0 ** -bits


def plait_uniform(shape, stream, step):
    return unit(key(0, stream, step), np.arange(int(np.prod(shape))), 24).astype(
        np.float32).reshape(shape)


def plait_normal(shape, stream, step, mean=0.0, scale=1.0):
    i = np.arange(int(np.prod(shape)))
    k = key(0, stream, step)
    u1, u2 = 1.0 - unit(k, 2 * i, 53), unit(k, 2 * i + 1, 53)
    z = np.sqrt(-2.0 * np.log(u1)) * np.cos(6.283185307179586 * u2)
    return (mean + scale * z).astype(np.float32).reshape(shape)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList(nn.Linear(WIDTH, WIDTH) for _ in range(2))
        self.head = nn.Linear(WIDTH, 3)
        self.draws = None  # None: torch's generator (for the export); else (kind, k, shape)

    def keep(self, k, x):
        if self.draws is None:
            return torch.bernoulli(torch.full((x.shape[0], 1), KEEP))
        return torch.from_numpy((self.draws("uniform", k, (x.shape[0], 1)) < KEEP)
                                .astype(np.float32))

    def forward(self, x, y):
        noise = torch.randn_like(x) if self.draws is None else torch.from_numpy(
            self.draws("normal", 0, tuple(x.shape)))
        h = x + NOISE * noise
        for k, block in enumerate(self.blocks):
            h = h + torch.tanh(block(h)) * self.keep(k, h) / KEEP
        d = self.head(h) - y
        return (d * d).mean()


def train_torch(model, data, streams):
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    losses, kept, total = [], 0, 0
    for s in range(STEPS):
        rows = slice(s * BATCH, (s + 1) * BATCH)
        x, y = torch.from_numpy(data["x"][rows]), torch.from_numpy(data["y"][rows])

        def draws(kind, k, shape):
            nonlocal kept, total
            if kind == "normal":
                return plait_normal(shape, streams["normal"], s + 1)
            u = plait_uniform(shape, streams["uniform"][k], s + 1)
            kept += int(np.count_nonzero(u < KEEP))
            total += u.size
            return u
        model.draws = draws
        opt.zero_grad()
        loss = model(x, y)
        loss.backward()
        opt.step()
        losses.append(float(loss))
    return losses, {k: v.detach().numpy() for k, v in model.state_dict().items()}, kept / total


def main():
    args, bindir, data = parity_setup(__doc__, 9, STEPS * BATCH, (WIDTH,), (3,))
    torch.manual_seed(0)
    model = Net()
    initial = {k: v.clone() for k, v in model.state_dict().items()}

    def export(path):
        export_training(model, data, BATCH, path)

    if args.write_model:
        export(args.write_model)
        return 0
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        path = tmp / "drop_path.onnx"
        export(path)
        nodes = onnx.load(str(path)).graph.node
        uniform = [n.output[0] for n in nodes if n.op_type == "RandomUniformLike"]
        normal = [n.output[0] for n in nodes if n.op_type == "RandomNormalLike"]
        if len(uniform) != 2 or len(normal) != 1:
            print(f"expected 2 RandomUniformLike and 1 RandomNormalLike nodes in the export, "
                  f"found {len(uniform)} and {len(normal)}")
            return 1
        streams = {"uniform": [stream_of(n) for n in uniform], "normal": stream_of(normal[0])}
        write_data(tmp / "data", data)
        for label, threads, flags in [("1 thread", 1, []), ("2 threads", 2, []),
                                      ("recompute all", 1, ["--recompute", "all"])]:
            weights = tmp / "w.safetensors"
            losses = train_plait(bindir, path, tmp / "drop_path.plan", tmp / "data", STEPS,
                                 ["--optimizer", "adam", "--lr", str(LR)] + flags,
                                 ["--threads", str(threads), "--save-weights", weights])
            model.load_state_dict(initial)
            torch_losses, torch_weights, kept = train_torch(model, data, streams)
            ok &= compare_training(f"drop path ({label})", losses, read_safetensors(weights),
                                   torch_losses, torch_weights)
            if abs(kept - KEEP) > 0.05:
                print(f"drop path ({label}): kept fraction {kept:.3f}, expected {KEEP}")
                ok = False
        ok &= two_ranks_finite("drop path", bindir, path, tmp, tmp / "data",
                               ["--optimizer", "adam", "--lr", str(LR)])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
