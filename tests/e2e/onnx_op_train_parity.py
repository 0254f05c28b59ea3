#!/usr/bin/env python3
"""Training parity of ONNX ops that plait maps onto other ops, against PyTorch.

Each model is a small PyTorch module built here around one ONNX op:
- conv_transpose: ConvTranspose (plait.conv2d_grad_input): Conv2d, then ConvTranspose2d with
  groups, stride 2, padding and output padding, then ConvTranspose2d with dilation, unequal
  strides and no bias; beside it a ConvTranspose1d with output padding. Mean squared error
  against targets.
- det: Det (plait.det, its gradient plait.cofactors): a normalizing flow's log|det W| of a
  parameter and the determinants of data-dependent 3 x 3 matrices.
- einsum: Einsum (diagonals as gathers, summed labels as reductions, contractions as batched
  matmuls): projections, attention scores, a diagonal, an ellipsis broadcast against a size-1
  dimension, a trace with an implicit output, and an outer product.
- gather_elements: GatherElements (torch.gather; plait.gather from the flattened data): the
  log-probabilities of targets picked from a log-softmax (axis -1, one index per row), rows of
  a parameter table picked with repeats (axis 1, so its gradient sums them), and an index
  tensor smaller than its data in the other dimensions.
- scatter: ScatterElements (scatter_add with repeated indices, scatter with distinct ones) and
  ScatterND (index_put of rows), as plait.gather_grad scatter-adds, and advanced indexing.
- scatter_mul: ScatterElements with reduction 'mul' (torch's scatter_reduce 'prod', which 1.13
  cannot export: a symbolic here writes it), at constant indices with repeats, as rounds of
  scatters and products.
- grid_sample: GridSample (opset 16; gathers at positions computed from the grid, weighted
  by differentiable functions of it): a learned grid read with bilinear, nearest and bicubic
  sampling under zeros, border and reflection padding, with and without aligned corners.
- recurrent: LSTM, GRU and RNN (unrolled over the sequence: GEMMs, gate slices and their
  activations): a two-layer bidirectional batch-first LSTM (Y, Y_h and Y_c all used), a GRU
  (PyTorch's, linear_before_reset=1), a ReLU RNN and a tanh RNN from a given initial state.
- resize: Resize (F.interpolate; gathers of constant indices and weighted sums): nearest and
  bilinear 2x upsampling, bilinear to a size with align_corners, bicubic, and a bilinear
  downsampling.
- topk: TopK (K <= 8 selected one by one, then gathers at the top indices): a
  mixture-of-experts router's top-2 gates and expert rows, and the smallest along a middle axis.
- trig: Atan, Asin and Acos (composed from arithmetic: reductions, a polynomial, wheres) on
  pre-activations that reach every branch of the reduction.
- torch_layers: torch.nn's GroupNorm, InstanceNorm2d, depthwise and 1-D convolutions, bilinear
  Upsample, PixelShuffle, ceil-mode and adaptive average pooling and a dozen activations
  (SiLU, Hardswish, Mish, ReLU6, PReLU, ELU, LeakyReLU, Softplus, SELU, Hardsigmoid, Softsign,
  Tanhshrink), as torch.onnx.export decomposes them.
- torch_transformer: torch.nn.TransformerEncoder (post-norm ReLU and pre-norm GELU layers) and
  MultiheadAttention, as exported.
- volumetric: 3-D Conv (one conv2d over depth-stacked slices), MaxPool and AveragePool (two
  2-D poolings) and ConvTranspose (conv2d_grad_input, its depth taps spread and summed): a
  small 3-D U-Net's path with padding, strides, dilations, groups, ceil mode and both
  count_include_pad settings, and a strided, grouped, output-padded transposed convolution.
The module is exported to ONNX (opset 13, or the model's `opset`; its initial weights as
initializers); plait-compile --train builds the step, plait-run trains it on 1 thread and on 2; PyTorch trains the module
from the same weights on the same batches with SGD with momentum. Per-step losses must agree
within 1e-4 relative, the final weights (plait's --save-weights) within rtol 1e-4 / atol 1e-5.

Run with /usr/bin/python3 (torch 1.13, onnx 1.12):
  onnx_op_train_parity.py --build BUILD [--model NAME] [--steps 20] [--write-model PATH]
"""
import argparse
import copy
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
from train_parity import compare_training, read_safetensors  # noqa: E402

BATCH = 4
LR, MOMENTUM = 0.05, 0.9


class Decoder(nn.Module):
    inputs = "xyuv"

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

    @staticmethod
    def data(n, rng):
        return {
            "x": rng.standard_normal((n, 3, 8, 8)).astype(np.float32),
            "y": rng.standard_normal((n, 3, 10, 16)).astype(np.float32),
            "u": rng.standard_normal((n, 4, 5)).astype(np.float32),
            "v": rng.standard_normal((n, 2, 15)).astype(np.float32),
        }


class Gatherer(nn.Module):
    inputs = ("x", "t", "rows", "cols")

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(6, 10)
        self.table = nn.Parameter(torch.randn(5, 7))

    def forward(self, x, t, rows, cols):
        logp = torch.log_softmax(self.proj(x), -1)                      # [B, 4, 10]
        picked = torch.gather(logp, 2, t.unsqueeze(-1))                 # [B, 4, 1]
        table = self.table.unsqueeze(0).expand(x.shape[0], 5, 7)
        repeated = torch.gather(table, 1, rows)                         # [B, 6, 7], repeats
        corner = torch.gather(logp, 1, cols)                            # [B, 2, 3] of [B, 4, 10]
        return -picked.mean() + (repeated * repeated).mean() - 0.5 * corner.mean()

    @staticmethod
    def data(n, rng):
        return {
            "x": rng.standard_normal((n, 4, 6)).astype(np.float32),
            "t": rng.integers(0, 10, size=(n, 4)).astype(np.int64),
            "rows": rng.integers(0, 5, size=(n, 6, 7)).astype(np.int64),
            "cols": rng.integers(0, 4, size=(n, 2, 3)).astype(np.int64),
        }


class Resizer(nn.Module):
    inputs = "xy"

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 3, 3, padding=1)
        self.mix = nn.Conv2d(12, 2, 1)

    def forward(self, x, y):
        h = self.conv(x)                                                          # [B, 3, 5, 6]
        up = torch.cat([
            F.interpolate(h, scale_factor=2, mode="nearest"),
            F.interpolate(h, scale_factor=2, mode="bilinear", align_corners=False),
            F.interpolate(h, size=(10, 12), mode="bilinear", align_corners=True),
            F.interpolate(h, scale_factor=2, mode="bicubic", align_corners=False),
        ], 1)                                                                      # [B, 12, 10, 12]
        z = self.mix(up) - y
        down = F.interpolate(h, size=(3, 4), mode="bilinear", align_corners=False)
        return (z * z).mean() + (down * down).mean()

    @staticmethod
    def data(n, rng):
        return {
            "x": rng.standard_normal((n, 2, 5, 6)).astype(np.float32),
            "y": rng.standard_normal((n, 2, 10, 12)).astype(np.float32),
        }


class Einsummer(nn.Module):
    inputs = "xy"

    def __init__(self):
        super().__init__()
        self.wq = nn.Parameter(torch.randn(6, 2, 4) * 0.3)
        self.wk = nn.Parameter(torch.randn(6, 2, 4) * 0.3)
        self.mix = nn.Parameter(torch.randn(1, 5, 5) * 0.3)
        self.square = nn.Parameter(torch.randn(3, 3) * 0.5)

    def forward(self, x, y):
        q = torch.einsum("btd,dhe->bhte", x, self.wq)                 # [B, 2, 5, 4]
        k = torch.einsum("btd,dhe->bhte", x, self.wk)
        s = torch.einsum("bhqe,bhke->bhqk", q, k)                     # [B, 2, 5, 5]
        diagonal = torch.einsum("bhii->bhi", s)                       # repeated label
        mixed = torch.einsum("...ij,...jk->...ik", s, self.mix)       # ellipsis, broadcast 1
        trace = torch.einsum("ii", self.square)                       # implicit output
        outer = torch.einsum("i,j->ij", diagonal[0, 0], diagonal[0, 1])
        err = s - y.unsqueeze(1)
        return ((err * err).mean() + (diagonal * diagonal).mean() + 0.1 * (mixed * mixed).mean()
                + trace * trace + 0.1 * (outer * outer).mean())

    @staticmethod
    def data(n, rng):
        return {
            "x": rng.standard_normal((n, 5, 6)).astype(np.float32),
            "y": rng.standard_normal((n, 5, 5)).astype(np.float32),
        }


@torch.onnx.symbolic_helper.parse_args("v", "i", "v", "v", "s", "b")
def _scatter_reduce_prod(g, data, dim, index, src, reduce, include_self):
    """scatter_reduce(reduce='prod', include_self=True) as ONNX's ScatterElements with reduction
    'mul' (opset 16), which PyTorch 1.13's exporter does not write."""
    if reduce != "prod" or not include_self:
        raise RuntimeError("only scatter_reduce 'prod' with include_self exports here")
    return g.op("ScatterElements", data, index, src, axis_i=dim, reduction_s="mul")


class ScatterMultiplier(nn.Module):
    """ScatterElements with reduction 'mul' (torch's scatter_reduce 'prod', exported at opset
    16 through _scatter_reduce_prod) at constant indices with repeats: a param's products
    with learned factors of the data (bounded, so that SGD does not diverge), an element
    multiplied up to four times."""
    inputs = ("x",)
    opset = 16

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(4, 6))
        self.u = nn.Parameter(torch.rand(4, 5) + 0.5)
        # Along the last axis: position 0 of row 0 three times, 4 of row 1 twice.
        # (Not in the state_dict: a constant of the model, not a buffer plait saves.)
        self.register_buffer("at", torch.tensor([[0, 2, 0, 5, 0], [1, 1, 3, 4, 4],
                                                 [5, 4, 3, 2, 1], [2, 2, 2, 2, 0]]),
                             persistent=False)

    def forward(self, x):
        h = x * self.w                                                  # [B, 4, 6]
        at = self.at.expand(x.shape[0], 4, 5)
        factors = torch.sigmoid(x[:, :, :5] * self.u) + 0.5             # (0.5, 1.5)
        y = h.scatter_reduce(2, at, factors, reduce="prod")
        return (y * y).mean()

    @staticmethod
    def data(n, rng):
        return {"x": rng.standard_normal((n, 4, 6)).astype(np.float32)}


class Scatterer(nn.Module):
    inputs = ("x", "add_at", "set_at", "rows", "cols")

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(4, 6))

    def forward(self, x, add_at, set_at, rows, cols):
        h = x * self.w                                                  # [B, 4, 6]
        added = torch.zeros_like(h).scatter_add(2, add_at, h[:, :, :3])  # repeats summed
        replaced = h.scatter(2, set_at, 2 * h[:, :, 3:])                # distinct per row
        flat = h.reshape(-1, 6)                                         # [4B, 6]
        put = flat.index_put((rows.reshape(-1),), 3 * flat[:2 * x.shape[0]])
        picked = flat[rows.reshape(-1), cols.reshape(-1)]
        return ((added * added).mean() + (replaced * replaced).mean() + (put * put).mean() +
                (picked * picked).mean())

    @staticmethod
    def data(n, rng):
        steps = n // BATCH
        rows = np.concatenate([rng.permutation(4 * BATCH)[:2 * BATCH].reshape(BATCH, 2)
                               for _ in range(steps)])
        return {
            "x": rng.standard_normal((n, 4, 6)).astype(np.float32),
            "add_at": rng.integers(0, 6, size=(n, 4, 3)).astype(np.int64),
            "set_at": np.stack([rng.permutation(6)[:3] for _ in range(n * 4)]).reshape(n, 4, 3),
            "rows": rows.astype(np.int64),
            "cols": rng.integers(0, 6, size=(n, 2)).astype(np.int64),
        }


class Recurrent(nn.Module):
    inputs = "xy"

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(5, 6, num_layers=2, bidirectional=True, batch_first=True)
        self.gru = nn.GRU(12, 4)
        self.rnn = nn.RNN(4, 3, nonlinearity="relu")
        self.cell = nn.RNN(3, 3)

    def forward(self, x, y):
        h, (hn, cn) = self.lstm(x)                       # [B, 7, 12], hn and cn [4, B, 6]
        g, gn = self.gru(h.transpose(0, 1))              # time-major [7, B, 4]
        r, _ = self.rnn(g)                               # [7, B, 3]
        t, tn = self.cell(r.flip(0), tn_init(r))         # tanh, from a given state
        err = t.transpose(0, 1) - y
        return ((err * err).mean() + (hn * hn).mean() + (cn * cn).mean() + gn.abs().mean()
                + (tn * tn).mean())

    @staticmethod
    def data(n, rng):
        return {
            "x": rng.standard_normal((n, 7, 5)).astype(np.float32),
            "y": rng.standard_normal((n, 7, 3)).astype(np.float32) * 0.5,
        }


def tn_init(r):
    """An initial state that depends on the data (so its gradient flows): the mean over time."""
    return r.mean(0, keepdim=True)


class GridSampler(nn.Module):
    """A spatial transformer's sampling: a learned grid (tanh of a base grid plus an offset,
    reaching past [-1, 1] so the padding modes matter) read by every mode and padding."""
    inputs = "xy"
    opset = 16  # GridSample's

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 3, 3, padding=1)
        self.offset = nn.Parameter(torch.randn(1, 5, 7, 2) * 0.3)

    def forward(self, x, y):
        h = self.conv(x)                                                   # [B, 3, 6, 8]
        gx = torch.linspace(-1.3, 1.3, 7).reshape(1, 1, 7, 1).expand(1, 5, 7, 1)
        gy = torch.linspace(-1.2, 1.2, 5).reshape(1, 5, 1, 1).expand(1, 5, 7, 1)
        grid = (1.4 * torch.tanh(torch.cat([gx, gy], 3) + self.offset)).expand(x.shape[0], 5, 7, 2)
        samples = [F.grid_sample(h, grid, mode=m, padding_mode=p, align_corners=a)
                   for m, p, a in [("bilinear", "zeros", False), ("bilinear", "border", True),
                                   ("bilinear", "reflection", False),
                                   ("bilinear", "reflection", True), ("nearest", "zeros", False),
                                   ("nearest", "reflection", True), ("bicubic", "zeros", False),
                                   ("bicubic", "border", True), ("bicubic", "reflection", False)]]
        d = torch.cat(samples, 1) - y                                      # [B, 27, 5, 7]
        return (d * d).mean()

    @staticmethod
    def data(n, rng):
        return {
            "x": rng.standard_normal((n, 2, 6, 8)).astype(np.float32),
            "y": rng.standard_normal((n, 27, 5, 7)).astype(np.float32),
        }


class Router(nn.Module):
    """A mixture-of-experts router: the top 2 of 8 experts' softmax scores per token, their
    gates renormalised, mixing rows of an expert table picked by the top-k indices; and the 3
    smallest logits along the token axis."""
    inputs = "xy"

    def __init__(self):
        super().__init__()
        self.router = nn.Linear(6, 8)
        self.experts = nn.Parameter(torch.randn(8, 5))

    def forward(self, x, y):
        logits = self.router(x)                                          # [B, 4, 8]
        top, at = torch.topk(torch.softmax(logits, -1), 2, dim=-1)       # [B, 4, 2]
        gates = top / top.sum(-1, keepdim=True)
        mixed = (gates.unsqueeze(-1) * self.experts[at]).sum(2)          # [B, 4, 5]
        low, _ = torch.topk(logits, 3, dim=1, largest=False)             # [B, 3, 8]
        d = mixed - y
        return (d * d).mean() + 0.1 * (low * low).mean()

    @staticmethod
    def data(n, rng):
        return {
            "x": rng.standard_normal((n, 4, 6)).astype(np.float32),
            "y": rng.standard_normal((n, 4, 5)).astype(np.float32),
        }


class Trig(nn.Module):
    inputs = "xy"

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(6, 6)

    def forward(self, x, y):
        h = self.proj(x)
        a = torch.atan(4 * h)
        s = torch.asin(torch.tanh(h) * 0.999)
        c = torch.acos(torch.sigmoid(2 * h) * 1.98 - 0.99)
        d = a + s + 0.5 * c - y
        return (d * d).mean()

    @staticmethod
    def data(n, rng):
        return {
            "x": rng.standard_normal((n, 5, 6)).astype(np.float32),
            "y": rng.standard_normal((n, 5, 6)).astype(np.float32),
        }


class Determinant(nn.Module):
    """A normalizing flow's linear layer: z = x W and its log-likelihood term log|det W| (Det
    of a parameter), and the determinants of data-dependent 3 x 3 matrices (a batched Det whose
    gradient, the cofactors, flows into the projection that built them)."""
    inputs = "xy"

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.eye(4) + 0.2 * torch.randn(4, 4))
        self.proj = nn.Linear(4, 9)

    def forward(self, x, y):
        z = x @ self.w
        logdet = torch.log(torch.abs(torch.det(self.w)))
        m = torch.tanh(self.proj(z)).view(-1, 3, 3)
        d = torch.det(m) - y
        return 0.5 * (z * z).mean() - logdet + 0.1 * (d * d).mean()

    @staticmethod
    def data(n, rng):
        return {
            "x": rng.standard_normal((n, 4)).astype(np.float32),
            "y": rng.standard_normal((n,)).astype(np.float32),
        }


class TorchTransformer(nn.Module):
    """torch.nn's own transformer layers as torch.onnx.export writes them (no hand-written
    attention): a post-norm TransformerEncoder (ReLU) under a causal mask (PyTorch's float
    generate_square_subsequent_mask) and a pre-norm one (GELU) of two layers each, and a
    MultiheadAttention with its output projection, batch first. plait-fuse-attention makes
    every one of their attentions one op (rank-3 heads; the float mask as causal)."""
    inputs = "xy"
    attentions = 5  # what the report must count as fused

    def __init__(self):
        super().__init__()
        self.post = nn.TransformerEncoder(
            nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True), 2)
        self.pre = nn.TransformerEncoder(
            nn.TransformerEncoderLayer(16, 4, 24, dropout=0.0, batch_first=True,
                                       norm_first=True, activation="gelu"), 2)
        self.mha = nn.MultiheadAttention(16, 4, batch_first=True)
        self.head = nn.Linear(16 * 5, 4)
        # A constant of the export (opset 13 has no Trilu to trace it from).
        self.register_buffer("causal", nn.Transformer.generate_square_subsequent_mask(5),
                             persistent=False)

    def forward(self, x, y):
        h = self.pre(self.post(x, mask=self.causal))
        a, _ = self.mha(h, x, x, need_weights=False)
        return F.cross_entropy(self.head((h + a).flatten(1)), y)

    @staticmethod
    def data(n, rng):
        return {
            "x": rng.standard_normal((n, 5, 16)).astype(np.float32),
            "y": rng.integers(0, 4, size=(n,)).astype(np.int64),
        }


class TorchLayers(nn.Module):
    """torch.nn's convolutional layers, norms and activations as torch.onnx.export writes them:
    GroupNorm, InstanceNorm2d, depthwise and 1-D convolutions, bilinear Upsample, PixelShuffle,
    ceil-mode AvgPool2d, AdaptiveAvgPool2d, and SiLU, Hardswish, Mish, ReLU6, PReLU, ELU,
    LeakyReLU, Softplus, SELU, Hardsigmoid, Softsign and Tanhshrink."""
    inputs = "xuy"

    def __init__(self):
        super().__init__()
        self.image = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.GroupNorm(2, 8), nn.SiLU(),
            nn.Conv2d(8, 8, 3, padding=1, groups=8), nn.InstanceNorm2d(8, affine=True),
            nn.Hardswish(), nn.Upsample(scale_factor=2, mode="bilinear"), nn.PixelShuffle(2),
            nn.Conv2d(2, 4, 1), nn.ReLU6(), nn.AvgPool2d(5, 6, ceil_mode=True),  # [B, 4, 6, 6]
            nn.AdaptiveAvgPool2d(2), nn.Flatten())                               # [B, 16]
        self.signal = nn.Sequential(
            nn.Conv1d(3, 6, 3, padding=1), nn.Mish(), nn.Conv1d(6, 6, 3, groups=6), nn.ELU(),
            nn.Flatten())                                                        # [B, 36]
        self.mlp = nn.Sequential(
            nn.Linear(52, 16), nn.PReLU(16), nn.LeakyReLU(0.1), nn.Linear(16, 16), nn.Softplus(),
            nn.SELU(), nn.Linear(16, 16), nn.Hardsigmoid(), nn.Softsign(), nn.Tanhshrink(),
            nn.Linear(16, 4))

    def forward(self, x, u, y):
        return F.cross_entropy(self.mlp(torch.cat([self.image(x), self.signal(u)], 1)), y)

    @staticmethod
    def data(n, rng):
        return {
            "x": rng.standard_normal((n, 3, 8, 8)).astype(np.float32),
            "u": rng.standard_normal((n, 3, 8)).astype(np.float32),
            "y": rng.integers(0, 4, size=(n,)).astype(np.int64),
        }


class Volumetric(nn.Module):
    inputs = "xy"

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv3d(2, 6, (3, 3, 2), stride=(2, 1, 1), padding=(1, 1, 0))
        self.grouped = nn.Conv3d(6, 4, 3, padding=(2, 1, 1), dilation=(2, 1, 1), groups=2,
                                 bias=False)
        self.max = nn.MaxPool3d((3, 2, 2), stride=(2, 2, 1), padding=(1, 1, 0),
                                dilation=(1, 2, 1), ceil_mode=True)
        self.up = nn.ConvTranspose3d(4, 6, (3, 2, 3), stride=(2, 2, 1), padding=(1, 0, 1),
                                     output_padding=(1, 1, 0), groups=2)
        self.fine = nn.ConvTranspose3d(6, 2, (2, 3, 1), stride=(3, 1, 2), padding=(1, 1, 0),
                                       dilation=(2, 1, 1), bias=False)

    def forward(self, x, y):
        h = torch.relu(self.conv(x))                        # [B, 6, 4, 6, 5]
        h = torch.tanh(self.grouped(h))                     # [B, 4, 4, 6, 5]
        p = self.max(h)                                     # [B, 4, 3, 4, 4]
        a = F.avg_pool3d(h, (2, 3, 2), stride=(1, 2, 2), padding=(1, 1, 0),
                         count_include_pad=False, ceil_mode=True)  # [B, 4, 5, 4, 3]
        b = F.avg_pool3d(h, 3, stride=2, padding=1, count_include_pad=True)
        u = torch.relu(self.up(p))                          # [B, 6, 6, 9, 4]
        e = self.fine(u) - y                                # [B, 2, 16, 9, 7]
        return (e * e).mean() + 0.5 * (a * a).mean() + 0.1 * b.abs().mean()

    @staticmethod
    def data(n, rng):
        return {
            "x": rng.standard_normal((n, 2, 8, 6, 6)).astype(np.float32),
            "y": rng.standard_normal((n, 2, 16, 9, 7)).astype(np.float32),
        }


class BatchNorms(nn.Module):
    """Training-mode BatchNorm (exported with torch.onnx.TrainingMode.TRAINING): normalised
    with the batch's statistics, and the running mean and variance carried from step to step
    as buffers (plait.param {buffer}), updated as PyTorch updates them (the variance
    unbiased) and saved with the weights. 2-D with the default momentum, 1-D with momentum
    0.3 and eps 1e-3; then with 2 micro-batches (each updates the running statistics in turn,
    as each forward of an accumulating PyTorch loop does), with --recompute all, and on 2
    ranks (each rank normalises with its own slice's statistics and keeps its own running
    statistics, which are rank 0's in the saved weights, as DistributedDataParallel with
    broadcast_buffers gives them) under ddp and under zero3 with 2 micro-batches. With
    --sync-batch-norm on 2 ranks (ddp; zero3 with 2 micro-batches and recompute) the
    statistics are the global batch's, as PyTorch's SyncBatchNorm computes them: the
    reference is one process training on the ranks' slices together. With --ema-decay and
    --ema-buffers (on 1 rank, and on 2 under zero3) the EMA weights are compared with
    AveragedModel(use_buffers=True)'s float params and buffers."""
    inputs = "xy"
    training_export = True
    batch = 16
    variants = [("2 micro-batches", ["--micro-batches", "2"]),
                ("recompute all", ["--recompute", "all"]),
                ("2 ranks, ddp", ["--world-size", "2", "--strategy", "ddp"]),
                ("2 ranks, zero3, 2 micro-batches",
                 ["--world-size", "2", "--strategy", "zero3", "--micro-batches", "2"]),
                ("2 ranks, ddp, sync batch norm",
                 ["--world-size", "2", "--strategy", "ddp", "--sync-batch-norm"]),
                ("2 ranks, zero3, 2 micro-batches, recompute all, sync batch norm",
                 ["--world-size", "2", "--strategy", "zero3", "--micro-batches", "2",
                  "--recompute", "all", "--sync-batch-norm"]),
                ("EMA of params and buffers", ["--ema-decay", "0.8", "--ema-buffers"]),
                ("2 ranks, zero3, EMA of params and buffers",
                 ["--world-size", "2", "--strategy", "zero3", "--ema-decay", "0.8",
                  "--ema-buffers"])]

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8 * 16, 6)
        self.bn1 = nn.BatchNorm1d(6, momentum=0.3, eps=1e-3)
        self.head = nn.Linear(6, 4)
        with torch.no_grad():  # running statistics that are not the defaults
            self.bn.running_mean.uniform_(-0.5, 0.5)
            self.bn.running_var.uniform_(0.5, 2.0)

    def forward(self, x, y):
        h = F.max_pool2d(torch.relu(self.bn(self.conv(x))), 2)
        h = torch.relu(self.bn1(self.fc(h.flatten(1))))
        return F.cross_entropy(self.head(h), y)

    @staticmethod
    def data(n, rng):
        return {
            "x": (1.5 * rng.standard_normal((n, 3, 8, 8)) + 0.3).astype(np.float32),
            "y": rng.integers(0, 4, size=(n,)).astype(np.int64),
        }


class PaddedEmbedding(nn.Module):
    """nn.Embedding's padding_idx, which torch.onnx.export drops (a plain Gather), given back
    with --padding-idx: the padding rows (0 of the token table, -1, that is 11, of the
    position table) get no gradient, so they stay as they are where PyTorch's do (SGD with
    momentum: without the flag both would train); also with the tables sharded on 2 ranks."""
    inputs = "tpy"
    compile_flags = ["--padding-idx", "emb.weight=0", "--padding-idx", "pos.weight=-1"]
    variants = [("2 ranks, zero3", ["--world-size", "2", "--strategy", "zero3"])]

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(50, 16, padding_idx=0)
        self.pos = nn.Embedding(12, 16, padding_idx=-1)
        with torch.no_grad():  # a padding row that is not zeros: it must stay as it is
            self.pos.weight[11].uniform_(-1.0, 1.0)
        self.out = nn.Linear(16, 5)

    def forward(self, t, p, y):
        h = torch.tanh(self.emb(t) + self.pos(p)).mean(1)
        return F.cross_entropy(self.out(h), y)

    @staticmethod
    def data(n, rng):
        t = rng.integers(0, 50, size=(n, 8))
        t[:, 5:] = 0  # padded tails
        p = np.tile(np.arange(8), (n, 1))
        p[:, 6:] = 11
        return {"t": t.astype(np.int64), "p": p.astype(np.int64),
                "y": rng.integers(0, 5, size=(n,)).astype(np.int64)}


class Norms(nn.Module):
    """Layer norms and an RMS norm as PyTorch 1.13 exports them at opset 13 (mean, subtract,
    pow, mean, add, sqrt, divide, scale, shift; LLaMA's x * rsqrt(mean(x^2) + eps) * weight):
    plait-fuse-norm makes each one op, whose gradient is one op too (layer_norm_grad,
    rms_norm_grad), which trains as PyTorch's do."""
    inputs = "xy"
    # what the report must count as fused: the forward ops and their gradients
    norms = {"layer_norm": 2, "rms_norm": 1, "backward": 3}

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(6, 8)
        self.ln = nn.LayerNorm(8)
        self.plane = nn.LayerNorm([5, 8], eps=1e-3, elementwise_affine=False)
        self.rms_weight = nn.Parameter(1 + 0.1 * torch.randn(8))
        self.out = nn.Linear(8, 3)

    def forward(self, x, y):
        h = self.proj(x)                                                 # [B, 5, 8]
        a = self.ln(torch.tanh(h)) + h
        b = self.plane(a * 2.0 + 1.0)
        r = b * torch.rsqrt(b.pow(2).mean(-1, keepdim=True) + 1e-6) * self.rms_weight
        d = self.out(r) - y
        return (d * d).mean()

    @staticmethod
    def data(n, rng):
        return {
            "x": rng.standard_normal((n, 5, 6)).astype(np.float32),
            "y": rng.standard_normal((n, 5, 3)).astype(np.float32),
        }


torch.onnx.register_custom_op_symbolic("aten::scatter_reduce", _scatter_reduce_prod, 16)

MODELS = {"batch_norm": BatchNorms, "conv_transpose": Decoder, "det": Determinant,
          "einsum": Einsummer, "gather_elements": Gatherer,
          "grid_sample": GridSampler, "recurrent": Recurrent, "resize": Resizer,
          "norms": Norms, "padded_embedding": PaddedEmbedding, "scatter": Scatterer,
          "scatter_mul": ScatterMultiplier, "topk": Router, "trig": Trig,
          "torch_layers": TorchLayers, "torch_transformer": TorchTransformer,
          "volumetric": Volumetric}


def train_torch(model, data, steps, batch=BATCH, optimizer=None, micro_batches=1, world=1,
                sync=False, ema=None):
    """PyTorch's per-step losses and final weights, `batch` samples a step (SGD with this
    file's momentum unless `optimizer`, a function of the parameters, makes another). With
    `world` W, as DistributedDataParallel on W ranks: rank r computes on the r-th of W equal
    slices of the batch, the gradients are the ranks' mean and the buffers (BatchNorm's
    running statistics) rank 0's, as broadcast_buffers keeps them. With `micro_batches` K,
    each rank's slice is K equal micro-batches whose gradients are accumulated (the mean of
    their losses, as plait-compile --micro-batches). The loss is the mean over ranks and
    micro-batches. With `sync` (SyncBatchNorm), one process computes each micro-batch of every
    rank at once (rank 0's slice, then rank 1's, ...): BatchNorm's statistics are then those of
    all the ranks' values, and its buffers everyone's. BatchNorm's num_batches_tracked, which
    the ONNX export does not carry (plait counts from 0), is the forwards since the start.
    With `ema` D, also the float entries of an AveragedModel(use_buffers=True) with the
    average D * avg + (1 - D) * p, updated after each step (a third result)."""
    opt = (optimizer or (lambda p: torch.optim.SGD(p, lr=LR, momentum=MOMENTUM)))(
        model.parameters())
    losses = []
    counts = {k: v.clone() for k, v in model.state_dict().items()
              if k.endswith("num_batches_tracked")}
    per_rank = batch // world
    micro = per_rank // micro_batches
    averaged = None if ema is None else torch.optim.swa_utils.AveragedModel(
        model, avg_fn=lambda a, p, n: ema * a + (1 - ema) * p, use_buffers=True)
    for s in range(steps):
        opt.zero_grad()
        total = 0.0
        kept = None  # rank 0's buffers after its forwards
        if sync:
            for m in range(micro_batches):
                firsts = [s * batch + r * per_rank + m * micro for r in range(world)]
                args = [torch.from_numpy(np.concatenate([data[k][f:f + micro] for f in firsts]))
                        for k in model.inputs]
                loss = model(*args) / micro_batches
                loss.backward()
                total += float(loss)
        for r in range(world if not sync else 0):
            if r == 1:
                kept = {k: v.clone() for k, v in model.named_buffers()}
            for m in range(micro_batches):
                first = s * batch + r * per_rank + m * micro
                args = [torch.from_numpy(data[k][first:first + micro]) for k in model.inputs]
                loss = model(*args) / (micro_batches * world)
                loss.backward()
                total += float(loss)
        if kept is not None:
            with torch.no_grad():
                for k, v in model.named_buffers():
                    v.copy_(kept[k])
        opt.step()
        if averaged is not None:
            averaged.update_parameters(model)
        losses.append(total)
    weights = {k: (v - counts[k] if k in counts else v).detach().numpy()
               for k, v in model.state_dict().items()}
    if averaged is None:
        return losses, weights
    return losses, weights, {k: v.detach().numpy()
                             for k, v in averaged.module.state_dict().items()
                             if v.is_floating_point()}


def export(model, data, path, batch=None):
    batch = batch or getattr(model, "batch", BATCH)
    example = tuple(torch.from_numpy(data[k][:batch]) for k in model.inputs)
    warnings.filterwarnings("ignore", category=UserWarning)  # the exporter's shape notes
    torch.onnx.export(model, example, str(path), input_names=list(model.inputs),
                      output_names=["loss"], opset_version=getattr(model, "opset", 13),
                      do_constant_folding=False,
                      training=(torch.onnx.TrainingMode.TRAINING
                                if getattr(model, "training_export", False)
                                else torch.onnx.TrainingMode.EVAL),
                      export_params=True, keep_initializers_as_inputs=False)


def flag_value(flags, name, default=1):
    return int(flags[flags.index(name) + 1]) if name in flags else default


def run_model(name, bindir, steps):
    torch.manual_seed(0)
    model = MODELS[name]()
    initial = copy.deepcopy(model)
    batch = getattr(model, "batch", BATCH)
    data = model.data(steps * batch, np.random.default_rng(7))
    sgd = ["--train", "--optimizer", "sgd", "--lr", str(LR), "--momentum", str(MOMENTUM)]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        onnx_path = tmp / f"{name}.onnx"
        export(model, data, onnx_path)
        (tmp / "data").mkdir()
        for k, v in data.items():
            np.save(tmp / "data" / f"{k}.npy", v)
        plan, report = tmp / f"{name}.plan", tmp / f"{name}.json"
        flags = getattr(model, "compile_flags", [])
        subprocess.run([bindir / "plait-compile", onnx_path, "-o", plan, *sgd, *flags,
                        "--report", report], check=True)
        expected = getattr(model, "norms", None)
        fused = json.loads(report.read_text()).get("fusion", {}).get("norm", {})
        if expected and any(fused.get(k) != v for k, v in expected.items()):
            print(f"{name}: plait-fuse-norm fused {fused}, expected {expected}")
            return False
        attention = json.loads(report.read_text()).get("fusion", {}).get("attention", {})
        if hasattr(model, "attentions") and attention.get("fused") != model.attentions:
            print(f"{name}: plait-fuse-attention fused {attention}, expected {model.attentions}")
            return False
        # (label, plan, threads, micro-batches, ranks, the exported module, --sync-batch-norm):
        # 2 threads, then each of the model's variants (more plait-compile flags) on 1. A
        # variant on W ranks compiles a model exported at batch / W: a training-mode export's
        # trace updates the running statistics once, and its ONNX file holds them so, so each
        # export's module is its reference's start.
        runs = [("1 thread", plan, 1, 1, 1, model, False, None),
                ("2 threads", plan, 2, 1, 1, model, False, None)]
        for label, flags in getattr(model, "variants", []):
            variant = tmp / f"{name}-{len(runs)}.plan"
            world, source, exported = flag_value(flags, "--world-size"), onnx_path, model
            if world > 1:
                source, exported = tmp / f"{name}-{len(runs)}.onnx", copy.deepcopy(initial)
                export(exported, data, source, batch // world)
            subprocess.run([bindir / "plait-compile", source, "-o", variant, *sgd,
                            *getattr(model, "compile_flags", []), *flags], check=True)
            runs.append((label, variant, 1, flag_value(flags, "--micro-batches"), world,
                         exported, "--sync-batch-norm" in flags,
                         float(flags[flags.index("--ema-decay") + 1])
                         if "--ema-decay" in flags else None))
        results = []
        for label, run_plan, threads, micro, world, exported, sync, ema in runs:
            log, weights = tmp / f"log{len(results)}.jsonl", tmp / f"w{len(results)}.safetensors"
            averages = tmp / f"ema{len(results)}.safetensors"
            command = [bindir / "plait-run", run_plan, "--data", tmp / "data", "--steps",
                       str(steps), "--threads", str(threads), "--log-jsonl", log,
                       "--save-weights", weights]
            if ema is not None:
                command += ["--save-ema-weights", averages]
            if world > 1:
                command = ["timeout", "240", "mpirun", "--oversubscribe", "--allow-run-as-root",
                           "-np", str(world)] + command
            subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
            results.append((label, micro, world, exported, sync, ema,
                            [json.loads(line)["loss"] for line in log.read_text().splitlines()],
                            read_safetensors(weights),
                            read_safetensors(averages) if ema is not None else None))
    ok = True
    references = {}
    for label, micro, world, exported, sync, ema, losses, weights, averages in results:
        key = (micro, world, id(exported), sync, ema)
        if key not in references:
            references[key] = train_torch(copy.deepcopy(exported), data, steps, batch=batch,
                                          micro_batches=micro, world=world, sync=sync, ema=ema)
        ok &= compare_training(f"{name} ({label})", losses, weights, *references[key][:2])
        if ema is not None:  # the averaged params and float buffers, as the weights are
            ok &= compare_training(f"{name} ({label}): EMA weights", losses,
                                   {k: v for k, v in averages.items() if k in references[key][2]},
                                   references[key][0], references[key][2])
    return ok


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", required=True)
    parser.add_argument("--model", action="append", choices=sorted(MODELS))
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--write-model", metavar="PATH",
                        help="only export the (one) --model to PATH and exit (for the CUDA "
                             "plan checks)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.write_model:
        if not args.model or len(args.model) != 1:
            parser.error("--write-model needs exactly one --model")
        torch.manual_seed(0)
        model = MODELS[args.model[0]]()
        export(model, model.data(BATCH, np.random.default_rng(7)), args.write_model)
        return 0
    bindir = pathlib.Path(args.build) / "bin"
    results = [run_model(m, bindir, args.steps) for m in (args.model or sorted(MODELS))]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
