#!/usr/bin/env python3
"""CPU training step of the ONNX ops plait maps onto other ops, against PyTorch eager.

ConvTranspose, Resize, Einsum, GatherElements, ScatterElements, LSTM, GRU, GridSample, 3-D
Conv, pooling and ConvTranspose, and training-mode BatchNorm have no kernels of their own in
plait: the importer writes them as conv2d_grad_input, gathers and weighted sums, batched
matmuls, gathers, scatter-adds, steps of GEMMs and gate activations, gathers at positions
computed from the grid, conv2d over depth-stacked slices, pairs of 2-D poolings,
conv2d_grad_input with its depth taps spread and summed, and the batch's mean and variance as
reductions with elementwise ops around them (compiler/import/onnx/README.md). TopK is a
plait.top_k for the indices and a gather of the values. This measures what
that costs at sizes a model has: one small PyTorch module per op, its layer at the size below
between a 1x1 convolution or linear layer and a mean-squared loss, exported to ONNX (opset 13)
and compiled with `plait-compile --train --optimizer sgd --lr 0.01`. Both train the same
batches with SGD: plait with `plait-run --threads T --log-jsonl` (the median logged step_ms
after WARMUP steps), PyTorch on T threads (the median of the timed steps: forward, backward,
optimizer step; on 2 threads the fastest of its OpenMP and OpenBLAS thread splits,
torch_thread_splits). Runs alternate plait and PyTorch, --repeat times; the table shows the
medians of the runs and plait / PyTorch (below 1: plait faster).

Run with /usr/bin/python3:  onnx_ops_step.py BUILD [--threads 1,2] [--steps 20] [--repeat 3]
                                                    [--only NAME ...]
"""
import argparse
import ctypes
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

WARMUP = 3
BATCH = 8


class ConvTranspose(nn.Module):
    """A U-Net decoder's upsampling: [8, 64, 32, 32] -> ConvTranspose2d(64, 32, 2, stride 2)."""
    shapes = {"x": (64, 32, 32), "y": (32, 64, 64)}

    def __init__(self):
        super().__init__()
        self.up = nn.ConvTranspose2d(64, 32, 2, stride=2)

    def forward(self, x, y):
        d = self.up(x) - y
        return (d * d).mean()


class ResizeBilinear(nn.Module):
    """A feature pyramid's upsampling: [8, 64, 32, 32] -> bilinear 2x, then a 1x1 conv."""
    shapes = {"x": (64, 32, 32), "y": (16, 64, 64)}

    def __init__(self):
        super().__init__()
        self.mix = nn.Conv2d(64, 16, 1)

    def forward(self, x, y):
        d = self.mix(F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False)) - y
        return (d * d).mean()


class ResizeNearest(ResizeBilinear):
    """The same with nearest 2x (nn.Upsample's default)."""

    def forward(self, x, y):
        d = self.mix(F.interpolate(x, scale_factor=2, mode="nearest")) - y
        return (d * d).mean()


class EinsumAttention(nn.Module):
    """Attention written with einsum: [8, 128, 256] projected to 4 heads of 64, scores
    'bhqd,bhkd->bhqk', softmax, 'bhqk,bhkd->bhqd'."""
    shapes = {"x": (128, 256), "y": (128, 256)}

    def __init__(self):
        super().__init__()
        self.qkv = nn.Parameter(torch.randn(256, 3, 4, 64) * 0.05)

    def forward(self, x, y):
        q, k, v = torch.einsum("btc,cshd->sbhtd", x, self.qkv)
        p = torch.softmax(torch.einsum("bhqd,bhkd->bhqk", q, k) * 0.125, -1)
        d = torch.einsum("bhqk,bhkd->bqhd", p, v).reshape(x.shape) - y
        return (d * d).mean()


class GatherLogProb(nn.Module):
    """A language model's target log-probabilities: [8, 128, 256] -> logits over 4096,
    log_softmax, torch.gather of the targets (GatherElements)."""
    shapes = {"x": (128, 256), "t": (128,)}

    def __init__(self):
        super().__init__()
        self.head = nn.Linear(256, 4096)

    def forward(self, x, t):
        logp = torch.log_softmax(self.head(x), -1)
        return -torch.gather(logp, 2, t.unsqueeze(-1)).mean()


class ScatterAdd(nn.Module):
    """Pooling rows into buckets: [8, 1024, 64] scatter_add'ed along dim 1 into 64 buckets."""
    shapes = {"x": (1024, 64), "at": (1024, 64), "y": (64, 64)}

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(64, 64)

    def forward(self, x, at, y):
        h = self.proj(x)
        pooled = torch.zeros(x.shape[0], 64, 64).scatter_add(1, at, h)
        d = pooled - y
        return (d * d).mean()


class Lstm(nn.Module):
    """A sequence encoder: [8, 64, 64] (64 steps) through LSTM(64, 128), batch first."""
    shapes = {"x": (64, 64), "y": (64, 128)}

    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(64, 128, batch_first=True)

    def forward(self, x, y):
        d = self.rnn(x)[0] - y
        return (d * d).mean()


class Gru(Lstm):
    """The same through a bidirectional GRU(64, 64)."""

    def __init__(self):
        nn.Module.__init__(self)
        self.rnn = nn.GRU(64, 64, batch_first=True, bidirectional=True)


class GridSample(nn.Module):
    """A spatial transformer: [8, 64, 32, 32] sampled bilinearly on a learned 32x32 grid."""
    shapes = {"x": (64, 32, 32), "y": (64, 32, 32)}
    opset = 16  # GridSample's

    def __init__(self):
        super().__init__()
        self.offset = nn.Parameter(torch.randn(1, 32, 32, 2) * 0.05)

    def forward(self, x, y):
        gx = torch.linspace(-1, 1, 32).reshape(1, 1, 32, 1).expand(1, 32, 32, 1)
        gy = torch.linspace(-1, 1, 32).reshape(1, 32, 1, 1).expand(1, 32, 32, 1)
        grid = (torch.cat([gx, gy], 3) + self.offset).expand(x.shape[0], 32, 32, 2)
        d = F.grid_sample(x, grid, mode="bilinear", padding_mode="zeros",
                          align_corners=False) - y
        return (d * d).mean()


class TopKRouter(nn.Module):
    """A mixture-of-experts router: 8 x 512 tokens of width 256 scored over 64 experts, the
    top 2 softmax scores renormalised as gates over rows of an expert table."""
    shapes = {"x": (512, 256), "y": (512, 64)}

    def __init__(self):
        super().__init__()
        self.router = nn.Linear(256, 64)
        self.experts = nn.Parameter(torch.randn(64, 64) * 0.1)

    def forward(self, x, y):
        top, at = torch.topk(torch.softmax(self.router(x), -1), 2, dim=-1)
        gates = top / top.sum(-1, keepdim=True)
        d = (gates.unsqueeze(-1) * self.experts[at]).sum(2) - y
        return (d * d).mean()


class TopKVocab(nn.Module):
    """Top-k over a vocabulary: 8 x 16 positions of 32,000 logits (plus a trained bias), the
    softmax of the 50 largest against a target."""
    shapes = {"x": (16, 32000), "y": (16, 50)}

    def __init__(self):
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(32000))

    def forward(self, x, y):
        top, _ = torch.topk(x + self.bias, 50, dim=-1)
        d = torch.softmax(top, -1) - y
        return (d * d).mean()


class Conv3d(nn.Module):
    """A video model's block: [8, 32, 8, 28, 28] -> Conv3d(32, 32, 3, padding 1), ReLU."""
    shapes = {"x": (32, 8, 28, 28), "y": (32, 8, 28, 28)}

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv3d(32, 32, 3, padding=1)

    def forward(self, x, y):
        d = torch.relu(self.conv(x)) - y
        return (d * d).mean()


class Pool3d(nn.Module):
    """A 3-D CNN's downsampling: [8, 32, 8, 28, 28] -> MaxPool3d(2) + AvgPool3d(3, 2, 1) of
    ReLU of a 1x1x1 conv."""
    shapes = {"x": (32, 8, 28, 28), "y": (32, 4, 14, 14)}

    def __init__(self):
        super().__init__()
        self.mix = nn.Conv3d(32, 32, 1)

    def forward(self, x, y):
        h = torch.relu(self.mix(x))
        d = F.max_pool3d(h, 2) + F.avg_pool3d(h, 3, 2, 1) - y
        return (d * d).mean()


class ConvTranspose3d(nn.Module):
    """A 3-D U-Net decoder's upsampling: [8, 64, 4, 16, 16] -> ConvTranspose3d(64, 32, 2,
    stride 2)."""
    shapes = {"x": (64, 4, 16, 16), "y": (32, 8, 32, 32)}

    def __init__(self):
        super().__init__()
        self.up = nn.ConvTranspose3d(64, 32, 2, stride=2)

    def forward(self, x, y):
        d = self.up(x) - y
        return (d * d).mean()


class BatchNorm(nn.Module):
    """A ResNet stage in training mode: [8, 64, 32, 32] -> conv 3x3 -> BatchNorm2d -> ReLU ->
    conv 3x3 -> BatchNorm2d, plus the input (exported with TrainingMode.TRAINING: batch
    statistics, running statistics kept as buffers)."""
    shapes = {"x": (64, 32, 32), "y": (64, 32, 32)}
    training_export = True

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(64, 64, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.conv2 = nn.Conv2d(64, 64, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(64)

    def forward(self, x, y):
        h = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x))))) + x
        d = F.relu(h) - y
        return (d * d).mean()


MODELS = {"conv_transpose": ConvTranspose, "resize_bilinear": ResizeBilinear,
          "resize_nearest": ResizeNearest, "einsum_attention": EinsumAttention,
          "gather_logprob": GatherLogProb, "scatter_add": ScatterAdd, "lstm": Lstm, "gru": Gru,
          "grid_sample": GridSample, "topk_router": TopKRouter, "topk_vocab": TopKVocab,
          "conv3d": Conv3d,
          "pool3d": Pool3d, "conv_transpose3d": ConvTranspose3d, "batch_norm": BatchNorm}


def make_data(cls, n, rng):
    data = {}
    for name, shape in cls.shapes.items():
        if name == "t":
            data[name] = rng.integers(0, 4096, size=(n,) + shape).astype(np.int64)
        elif name == "at":
            data[name] = rng.integers(0, 64, size=(n,) + shape).astype(np.int64)
        else:
            data[name] = rng.standard_normal((n,) + shape).astype(np.float32)
    return data


def run_plait(bindir, plan, datadir, steps, threads, work):
    log = work / "log.jsonl"
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    proc = subprocess.run([bindir / "plait-run", plan, "--data", datadir, "--steps", str(steps),
                           "--threads", str(threads), "--log-jsonl", log],
                          capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        sys.exit("plait-run failed:\n" + proc.stderr)
    ms = [json.loads(line)["step_ms"] for line in log.read_text().splitlines()]
    return statistics.median(ms[WARMUP:])


def timed_step(model, opt, args):
    """One PyTorch training step (forward, backward, optimizer step) on `args`, in ms."""
    start = time.perf_counter()
    loss = model(*args)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return (time.perf_counter() - start) * 1e3


def torch_thread_splits(threads):
    """The (OpenMP, OpenBLAS) thread counts PyTorch is timed with on `threads` threads.
    torch.set_num_threads sets its OpenMP threads (oneDNN's convolutions, ATen's loops), but
    its GEMMs go to OpenBLAS (Debian's torch: BLAS_INFO generic, libblas.so.3 from
    openblas-pthread), whose own threads take every core unless told: left alone, "1 thread"
    PyTorch ran its linear layers on both cores of this VM. With both at 2, OpenMP's threads
    spin while OpenBLAS's work, and a transformer's step is slower than on one thread (ViT:
    856 ms against 700 on one; 431 with OpenMP at 1), while convolutions want OpenMP's
    (ResNet-18: 156 ms at 2 and 2, 239 with OpenMP at 1). So each split below is timed and
    PyTorch gets its fastest."""
    return [(1, 1)] if threads == 1 else [(threads, threads), (threads, 1), (1, threads)]


def run_torch(model, data, names, steps, threads, batch=BATCH, momentum=0.0):
    """The median step of `steps` (after WARMUP) under each of torch_thread_splits(threads),
    the fastest split's."""
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=momentum)
    blas = ctypes.CDLL("libopenblas.so.0")
    best = None
    for omp, gemm in torch_thread_splits(threads):
        torch.set_num_threads(omp)
        blas.openblas_set_num_threads(gemm)
        ms = []
        for s in range(steps):
            args = [torch.from_numpy(data[k][s * batch:(s + 1) * batch]) for k in names]
            ms.append(timed_step(model, opt, args))
        median = statistics.median(ms[WARMUP:])
        best = median if best is None else min(best, median)
    return best


def time_alternating(name, threads, repeat, plait_ms, torch_ms, rows, digits=3, peer="pytorch"):
    """plait_ms(t) and torch_ms(t) (or another `peer`'s), each a run's median step, alternated
    `repeat` times per thread count; appends (name, t, plait median, peer median) to `rows`
    and prints it."""
    width = digits + 6
    for t in threads:
        p_runs, q_runs = [], []
        for _ in range(repeat):
            p_runs.append(plait_ms(t))
            q_runs.append(torch_ms(t))
        p, q = statistics.median(p_runs), statistics.median(q_runs)
        rows.append((name, t, p, q))
        print(f"{name:20} threads {t}: plait {p:{width}.{digits}f} ms  {peer} "
              f"{q:{width}.{digits}f} ms  x{p / q:.2f}", flush=True)


def print_table(rows, digits=3, peer="PyTorch"):
    print(f"\n| model | threads | plait ms | {peer} ms | plait / {peer} |")
    print("|---|---|---|---|---|")
    for name, t, p, q in rows:
        print(f"| {name} | {t} | {p:.{digits}f} | {q:.{digits}f} | {p / q:.2f} |")


def bench_parser(doc, choices, steps, repeat):
    """The CPU step benches' arguments: BUILD, --threads (a list of ints), --steps, --repeat,
    --only (one of `choices`, repeatable); a bench adds its own."""
    ap = argparse.ArgumentParser(description=doc,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build", type=pathlib.Path)
    ap.add_argument("--threads", default=[1, 2], type=lambda s: [int(t) for t in s.split(",")],
                    help="thread counts to time, comma-separated (default 1,2)")
    ap.add_argument("--steps", type=int, default=steps)
    ap.add_argument("--repeat", type=int, default=repeat)
    ap.add_argument("--only", action="append", choices=sorted(choices))
    return ap


def export_case(cls, steps, work):
    """A module class's case in `work`: `steps` batches of its inputs (make_data) saved as
    work/data/<name>.npy, and cls() exported to work/m.onnx (opset 13 unless the class says,
    training mode where it asks), its weights from torch.manual_seed(0). Returns the data."""
    torch.manual_seed(0)
    names = list(cls.shapes)
    data = make_data(cls, steps * BATCH, np.random.default_rng(1))
    (work / "data").mkdir(parents=True)
    for k, v in data.items():
        np.save(work / "data" / f"{k}.npy", v)
    model = cls()
    example = tuple(torch.from_numpy(data[k][:BATCH]) for k in names)
    torch.onnx.export(model, example, str(work / "m.onnx"), input_names=names,
                      output_names=["loss"], opset_version=getattr(model, "opset", 13),
                      do_constant_folding=False, export_params=True,
                      training=(torch.onnx.TrainingMode.TRAINING
                                if getattr(model, "training_export", False)
                                else torch.onnx.TrainingMode.EVAL))
    return data


def main():
    args = bench_parser(__doc__, MODELS, steps=20, repeat=3).parse_args()
    bindir = args.build / "bin"
    warnings.filterwarnings("ignore", category=UserWarning)  # the exporter's shape notes
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        for name in args.only or list(MODELS):
            cls = MODELS[name]
            work = tmp / name
            data = export_case(cls, args.steps, work)
            subprocess.run([bindir / "plait-compile", work / "m.onnx", "-o", work / "m.plan",
                            "--train", "--optimizer", "sgd", "--lr", "0.01"], check=True)
            time_alternating(
                name, args.threads, args.repeat,
                lambda t: run_plait(bindir, work / "m.plan", work / "data", args.steps, t, work),
                lambda t: run_torch(cls(), data, list(cls.shapes), args.steps, t), rows)
    print_table(rows)


if __name__ == "__main__":
    main()
