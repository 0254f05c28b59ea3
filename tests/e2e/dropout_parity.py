#!/usr/bin/env python3
"""Training-mode dropout (ONNX Dropout with training_mode, plait.dropout_mask) against PyTorch.

plait draws its masks with a counter-based hash of (seed, stream, step, rank, element)
(codegen/schema/DropoutMask.h), not with PyTorch's generator, so the reference here is
PyTorch training the same module with the same masks: the hash reimplemented in numpy (each
Dropout node's stream is the FNV-1a hash of its output's name, shifted right by one; a
micro-batch k > 0 xors its stream with k * 0x9e3779b97f4a7c15). That checks the masks
bit for bit, the scaling by 1 / (1 - ratio), and the gradients through the kept elements.

The module: a linear layer, ReLU, dropout 0.25, a linear layer, dropout 0.5 on a 3-D
activation, a linear head, mean squared error. It is exported with
torch.onnx.TrainingMode.TRAINING (opset 13). plait trains it with SGD and momentum for 20
steps on 1 thread, on 2, with --micro-batches 2 (the ONNX model, and its import as .mlir, whose
batch plait-compile divides) and with --recompute all (the backward pass recomputes the masks:
the same draws); PyTorch trains it with the masks each run draws.
With --precision bf16-mixed (the same draws, applied in bf16) the losses must be within 2e-2
of fp32's. Per-step losses must agree within 1e-4 relative, final weights within
rtol 1e-4 / atol 1e-5. The kept fraction over all masks drawn must be within 1% of 1 - ratio.
Then a two-rank data-parallel run (--nproc 2, ddp) must train with finite losses.

Run with /usr/bin/python3 (torch 1.13, onnx 1.12):
  dropout_parity.py --build BUILD [--write-model PATH]
"""
import argparse
import json
import pathlib
import subprocess
import sys
import tempfile
import warnings

import numpy as np
import onnx
import torch
from torch import nn

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from train_parity import compare_training, read_safetensors  # noqa: E402

BATCH, STEPS = 8, 20
LR, MOMENTUM = 0.05, 0.9
M64 = (1 << 64) - 1


def mix(z):
    """splitmix64's finaliser on numpy uint64 (wrapping) or Python ints."""
    if isinstance(z, int):
        z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & M64
        z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & M64
        return z ^ (z >> 31)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xbf58476d1ce4e5b9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94d049bb133111eb)
    return z ^ (z >> np.uint64(31))


def plait_mask(shape, ratio, seed, stream, step, rank=0):
    """plait.dropout_mask's values: 0 or 1 / (1 - ratio), as float32."""
    k = mix((seed * 0x9e3779b97f4a7c15 + 0x2545f4914f6cdd1d) & M64)
    k = mix(k ^ ((stream * 0xd1b54a32d192ed03 + 1) & M64))
    k = mix(k ^ ((step * 0xaef17502108ef2d9 + 2) & M64))
    k = mix(k ^ ((rank * 0xf1357aea2e62a9c5 + 3) & M64))
    index = np.arange(int(np.prod(shape)), dtype=np.uint64)
    with np.errstate(over="ignore"):
        draw = mix(np.uint64(k) ^ (index * np.uint64(0x9e3779b97f4a7c15))) >> np.uint64(32)
    keep = draw >= np.uint64(int(ratio * 4294967296.0))
    return np.where(keep, np.float32(1.0 / (1.0 - ratio)), np.float32(0)).reshape(shape)


def stream_of(name):
    h = 1469598103934665603
    for c in name.encode():
        h = ((h ^ c) * 1099511628211) & M64
    return h >> 1


def parity_setup(doc, seed, rows, x_shape, y_shape):
    """The parity scripts' common start: --build and --write-model parsed, one torch thread,
    PyTorch's export warnings off, and regression data: x [rows, *x_shape] and y [rows,
    *y_shape], standard normal from numpy's generator `seed`. Returns (args, bindir, data)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--build", required=True)
    parser.add_argument("--write-model", metavar="PATH",
                        help="only write the model to PATH and exit (for the CUDA plan checks)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore", category=UserWarning)
    rng = np.random.default_rng(seed)
    data = {"x": rng.standard_normal((rows, *x_shape)).astype(np.float32),
            "y": rng.standard_normal((rows, *y_shape)).astype(np.float32)}
    return args, pathlib.Path(args.build) / "bin", data


def export_training(model, data, batch, path):
    """torch.onnx.export of model(x, y) -> loss in training mode (opset 13), the first batch."""
    torch.onnx.export(model, (torch.from_numpy(data["x"][:batch]),
                              torch.from_numpy(data["y"][:batch])), str(path),
                      input_names=["x", "y"], output_names=["loss"], opset_version=13,
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)


def write_data(folder, data):
    """plait-run --data's folder: one NAME.npy per graph input."""
    folder.mkdir()
    for k, v in data.items():
        np.save(folder / f"{k}.npy", v)


def train_plait(bindir, model_path, plan, data_dir, steps, compile_flags, run_flags=()):
    """Compiles with --train and COMPILE_FLAGS, runs STEPS steps; returns the per-step losses."""
    subprocess.run([bindir / "plait-compile", model_path, "-o", plan, "--train"] +
                   list(compile_flags), check=True, stdout=subprocess.DEVNULL)
    log = plan.with_suffix(".jsonl")
    log.unlink(missing_ok=True)
    subprocess.run([bindir / "plait-run", plan, "--data", data_dir, "--steps", str(steps),
                    "--log-jsonl", log, "--progress", "none"] + list(run_flags), check=True,
                   stdout=subprocess.DEVNULL)
    return [json.loads(line)["loss"] for line in log.read_text().splitlines()]


def torch_steps(model, opt, data, batch, steps):
    """STEPS steps of OPT on model(x, y) -> loss over consecutive batches of DATA; returns the
    per-step losses and the final state_dict as numpy arrays."""
    losses = []
    for s in range(steps):
        rows = slice(s * batch, (s + 1) * batch)
        opt.zero_grad()
        loss = model(torch.from_numpy(data["x"][rows]), torch.from_numpy(data["y"][rows]))
        loss.backward()
        opt.step()
        losses.append(float(loss))
    return losses, {k: v.detach().numpy() for k, v in model.state_dict().items()}


def threads_match_torch(name, bindir, model_path, tmp, data_dir, steps, compile_flags,
                        torch_losses, torch_weights):
    """Trains MODEL_PATH (compiled with --train and COMPILE_FLAGS) STEPS steps on 1 thread,
    then on 2, and compares each run's losses and final weights with PyTorch's
    (train_parity.compare_training). Returns whether both agree."""
    ok = True
    for threads in (1, 2):
        weights = tmp / "w.safetensors"
        losses = train_plait(bindir, model_path, tmp / f"{name}.plan", data_dir, steps,
                             compile_flags, ["--threads", str(threads), "--save-weights", weights])
        ok &= compare_training(f"{name} ({threads} thread{'s' if threads > 1 else ''})", losses,
                               read_safetensors(weights), torch_losses, torch_weights)
    return ok


def two_ranks_finite(label, bindir, model_path, tmp, data_dir, compile_flags):
    """Ten ddp steps on two ranks (each draws its own values: the rank is in the key): prints
    the line and returns whether every loss is finite."""
    losses = train_plait(bindir, model_path, tmp / "ddp.plan", data_dir, 10,
                         list(compile_flags) + ["--world-size", "2", "--strategy", "ddp"],
                         ["--nproc", "2", "--timeout", "60"])
    finite = len(losses) == 10 and all(v is not None and np.isfinite(v) for v in losses)
    print(f"{label} (2 ranks, ddp): 10 steps, loss {losses[0]:.4f} -> {losses[-1]:.4f}: "
          f"{'ok' if finite else 'MISMATCH'}")
    return finite


class Net(nn.Module):
    RATIOS = (0.25, 0.5)

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(12, 24)
        self.fc2 = nn.Linear(6, 6)
        self.head = nn.Linear(24, 3)
        self.masks = None  # None: torch's dropout (for the export); else a function

    def dropout(self, x, k):
        if self.masks is None:
            return nn.functional.dropout(x, self.RATIOS[k], training=True)
        return x * torch.from_numpy(self.masks(k, tuple(x.shape)))

    def forward(self, x, y):
        h = self.dropout(torch.relu(self.fc1(x)), 0)                   # [B, 24]
        h = self.fc2(h.reshape(-1, 4, 6))                              # [B, 4, 6]
        h = self.dropout(torch.tanh(h), 1).reshape(-1, 24)
        d = self.head(h) - y
        return (d * d).mean()


def train_torch(model, data, streams, micro_batches):
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
    losses, kept, total = [], 0.0, 0
    for s in range(STEPS):
        rows = slice(s * BATCH, (s + 1) * BATCH)
        x, y = torch.from_numpy(data["x"][rows]), torch.from_numpy(data["y"][rows])
        opt.zero_grad()
        loss_sum = 0.0
        size = BATCH // micro_batches
        for m in range(micro_batches):
            def masks(k, shape, m=m):
                stream = streams[k] ^ ((m * 0x9e3779b97f4a7c15) & M64) if m else streams[k]
                mask = plait_mask(shape, Net.RATIOS[k], 0, stream, s + 1)
                nonlocal kept, total
                kept += float(np.count_nonzero(mask)) - (1 - Net.RATIOS[k]) * mask.size
                total += mask.size
                return mask
            model.masks = masks
            loss = model(x[m * size:(m + 1) * size], y[m * size:(m + 1) * size]) / micro_batches
            loss.backward()
            loss_sum += float(loss)
        opt.step()
        losses.append(loss_sum)
    return losses, {k: v.detach().numpy() for k, v in model.state_dict().items()}, kept / total


def main():
    args, bindir, data = parity_setup(__doc__, 5, STEPS * BATCH, (12,), (3,))
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
        path = tmp / "dropout.onnx"
        export(path)
        drops = [n for n in onnx.load(str(path)).graph.node if n.op_type == "Dropout"]
        if len(drops) != 2:
            print(f"expected 2 Dropout nodes in the export, found {len(drops)}")
            return 1
        streams = [stream_of(n.output[0]) for n in drops]
        write_data(tmp / "data", data)
        # --recompute all recomputes the masks in the backward pass: the same draws. The model
        # as plait-dialect .mlir (the importer's output), whose batch plait-compile divides
        # itself, each mask by the activation it multiplies: the same draws again.
        subprocess.run([bindir / "plait-compile", path, "-o", tmp / "imported.plan",
                        "--dump-dir", tmp / "dump"], check=True, stdout=subprocess.DEVNULL)
        imported = tmp / "dump" / "00-imported.mlir"
        runs = [("1 thread", 1, 1, [], path), ("2 threads", 2, 1, [], path),
                ("2 micro-batches", 1, 2, [], path),
                ("2 micro-batches, .mlir", 1, 2, [], imported),
                ("recompute all", 1, 1, ["--recompute", "all"], path)]
        for label, threads, micro, flags, model_path in runs:
            plan = tmp / f"m{micro}.plan"
            subprocess.run([bindir / "plait-compile", model_path, "-o", plan, "--train",
                            "--optimizer", "sgd", "--lr", str(LR), "--momentum", str(MOMENTUM),
                            "--micro-batches", str(micro)] + flags, check=True)
            log, weights = tmp / "log.jsonl", tmp / "w.safetensors"
            subprocess.run([bindir / "plait-run", plan, "--data", tmp / "data", "--steps",
                            str(STEPS), "--threads", str(threads), "--log-jsonl", log,
                            "--save-weights", weights, "--progress", "none"], check=True,
                           stdout=subprocess.DEVNULL)
            losses = [json.loads(line)["loss"] for line in log.read_text().splitlines()]
            model.load_state_dict(initial)
            torch_losses, torch_weights, kept_off = train_torch(model, data, streams, micro)
            ok &= compare_training(f"dropout ({label})", losses, read_safetensors(weights),
                                   torch_losses, torch_weights)
            if abs(kept_off) > 0.01:
                print(f"dropout ({label}): kept fraction off by {kept_off:.4f}")
                ok = False
        # bf16-mixed draws the same masks (the step stays f32), in bf16: losses within 2e-2.
        bf16 = train_plait(bindir, path, tmp / "bf16.plan", tmp / "data", STEPS,
                           ["--optimizer", "sgd", "--lr", str(LR), "--momentum", str(MOMENTUM),
                            "--precision", "bf16-mixed"])
        model.load_state_dict(initial)
        fp32 = train_torch(model, data, streams, 1)[0]
        worst = max(abs(a - b) / abs(b) for a, b in zip(bf16, fp32))
        print(f"dropout (bf16-mixed): {STEPS} steps, max rel loss diff to fp32 {worst:.1e}: "
              f"{'ok' if worst <= 2e-2 and len(bf16) == STEPS else 'MISMATCH'}")
        ok &= worst <= 2e-2 and len(bf16) == STEPS
        ok &= two_ranks_finite("dropout", bindir, path, tmp, tmp / "data",
                               ["--optimizer", "sgd", "--lr", str(LR)])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
