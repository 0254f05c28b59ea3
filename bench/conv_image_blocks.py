#!/usr/bin/env python3
"""CPU convolutions with several images' columns in one GEMM (plait-conv-image-blocks).

plait's CPU conv2d and its gradients are im2col and an OpenBLAS GEMM per image and group. A
deep layer's output planes are small, so those GEMMs are a few columns wide; with
`image_block` (set by plait-compile's plait-conv-image-blocks, off with --no-conv-image-blocks)
the columns of several images sit side by side and one GEMM multiplies them. Each layer
below is two stacked 3x3 convolutions (or 1x1 ones) of ResNet-18's stages at 96x96 (and one
of ResNet-50's last 1x1 projections at 224x224), a ReLU between them and a mean-squared loss:
a step runs both convolutions forward, both weight gradients and the second's input
gradient. Exported to ONNX (opset 13) and compiled with `plait-compile --train --optimizer
sgd --lr 0.01`, with and without --no-conv-image-blocks; PyTorch trains the same module with
the same SGD. The three run alternating, --repeat times: plait with `plait-run --threads T
--log-jsonl` (the median logged step_ms after the warm-up steps), PyTorch on T threads
(onnx_ops_step.torch_thread_splits: the fastest split between its OpenMP and OpenBLAS
threads; the median of the timed steps). The table shows the medians of the runs, blocked /
per image, and blocked / PyTorch (below 1: plait faster).

A second table times the GEMMs alone, OpenBLAS's cblas_sgemm called through ctypes as the
kernels call it (row-major, one thread, OPENBLAS_CORETYPE as the environment sets it): for
each 3x3 layer, the
forward (W [F, patch] x columns [patch, pixels]), the input gradient (W^T x dy) and the
weight gradient (dy x columns^T) of 8 images, as 8 GEMMs of one image's pixels against one
of all 8 images' side by side; and layer4's weight gradient in row panels of 32 filters
against panels of 128 (conv2d_grad_weight's row-panel form). Best of 7.

Run with /usr/bin/python3:  conv_image_blocks.py BUILD [--threads 1,2] [--steps 12]
                                                        [--repeat 3] [--only NAME ...]
                                                        [--no-gemm-table]
"""
import ctypes
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

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from onnx_ops_step import (BATCH, bench_parser, export_case, run_plait,  # noqa: E402
                           run_torch)


def layer(channels, size, kernel=3, out=None):
    """Two stacked convolutions of `channels` on size x size planes (the first to `out`)."""
    out = out or channels

    class Layer(nn.Module):
        shapes = {"x": (channels, size, size), "y": (channels, size, size)}

        def __init__(self):
            super().__init__()
            pad = kernel // 2
            self.a = nn.Conv2d(channels, out, kernel, padding=pad, bias=False)
            self.b = nn.Conv2d(out, channels, kernel, padding=pad, bias=False)

        def forward(self, x, y):
            d = self.b(torch.relu(self.a(x))) - y
            return (d * d).mean()

    return Layer


LAYERS = {
    "layer1 64ch 24x24": layer(64, 24),
    "layer2 128ch 12x12": layer(128, 12),
    "layer3 256ch 6x6": layer(256, 6),
    "layer4 512ch 3x3": layer(512, 3),
    "r50 1x1 2048-512 7x7": layer(2048, 7, kernel=1, out=512),
    "stem-size 32ch 48x48": layer(32, 48),  # 2,304 pixels a plane: not blocked
}


GEMM_LAYERS = [("layer1", 64, 576, 64), ("layer2", 128, 144, 128), ("layer3", 256, 36, 256),
               ("layer4", 512, 9, 512)]  # name, channels in, pixels a plane, filters


def best_ms(f, reps=7):
    f()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return min(times) * 1e3


def sgemm():
    """OpenBLAS's cblas_sgemm, called as plait's kernels call it (Gemm.cpp: row-major)."""
    lib = ctypes.CDLL("libopenblas.so.0")
    f = lib.cblas_sgemm
    i, fl, ptr = ctypes.c_int, ctypes.c_float, ctypes.c_void_p
    f.argtypes = [i, i, i, i, i, i, fl, ptr, i, ptr, i, fl, ptr, i]
    row_major, no, yes = 101, 111, 112

    def call(ta, tb, m, n, k, a, lda, b, ldb, beta, c, ldc):
        f(row_major, yes if ta else no, yes if tb else no, m, n, k, 1.0, a.ctypes.data, lda,
          b.ctypes.data, ldb, beta, c.ctypes.data, ldc)
    return call


def gemm_table():
    """The GEMMs alone (run in a process of its own with OPENBLAS_NUM_THREADS=1)."""
    gemm = sgemm()
    rng = np.random.default_rng(0)
    print("| layer | GEMM | 8 GEMMs of one image ms | one GEMM of 8 images ms | one / 8 |")
    print("|---|---|---|---|---|")
    for name, c, pixels, f in GEMM_LAYERS:
        patch, n = c * 9, BATCH * pixels
        w = rng.standard_normal((f, patch), dtype=np.float32)
        dw = np.zeros((f, patch), dtype=np.float32)
        cols = [rng.standard_normal((patch, p), dtype=np.float32) for p in (pixels, n)]
        dy = [rng.standard_normal((f, p), dtype=np.float32) for p in (pixels, n)]
        dcols = [np.zeros((patch, p), dtype=np.float32) for p in (pixels, n)]
        y = [np.zeros((f, p), dtype=np.float32) for p in (pixels, n)]
        # (conv2d, conv2d_grad_input, conv2d_grad_weight) over p pixels: ConvKernels.cpp and
        # GradKernels.cpp's calls; k = 0 one image (8 calls), k = 1 all 8 side by side.
        forms = {
            "forward": lambda k, p: gemm(False, False, f, p, patch, w, patch, cols[k], p, 0.0,
                                         y[k], p),
            "input gradient": lambda k, p: gemm(True, False, patch, p, f, w, patch, dy[k], p,
                                                0.0, dcols[k], p),
            "weight gradient": lambda k, p: gemm(False, True, f, patch, p, dy[k], p, cols[k], p,
                                                 1.0, dw, patch),
        }
        for form, run in forms.items():
            a = best_ms(lambda: [run(0, pixels) for _ in range(BATCH)])
            b = best_ms(lambda: run(1, n))
            print(f"| {name} ({pixels} pixels) | {form} | {a:.2f} | {b:.2f} | {b / a:.2f} |",
                  flush=True)
    name, c, pixels, f = GEMM_LAYERS[-1]
    patch, n = c * 9, BATCH * pixels
    dy = rng.standard_normal((f, n), dtype=np.float32)
    cols = rng.standard_normal((patch, n), dtype=np.float32)
    dw = np.zeros((f, patch), dtype=np.float32)
    panels = {rows: best_ms(lambda: [gemm(False, True, rows, patch, n, dy[r:], n, cols, n, 1.0,
                                          dw[r:], patch) for r in range(0, f, rows)])
              for rows in (32, 128)}
    print(f"\n{name} weight gradient of 8 images in row panels: 32 filters {panels[32]:.2f} ms, "
          f"128 filters {panels[128]:.2f} ms ({panels[128] / panels[32]:.2f})")


def main():
    if "--gemm-table-only" in sys.argv:
        gemm_table()
        return
    ap = bench_parser(__doc__, LAYERS, steps=12, repeat=3)
    ap.add_argument("--no-gemm-table", action="store_true")
    args = ap.parse_args()
    bindir = args.build / "bin"
    warnings.filterwarnings("ignore", category=UserWarning)  # the exporter's shape notes
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        for i, name in enumerate(args.only or list(LAYERS)):
            cls = LAYERS[name]
            work = tmp / f"layer{i}"
            data = export_case(cls, args.steps, work)
            plans = {}
            for mode, extra in (("blocked", []), ("per_image", ["--no-conv-image-blocks"])):
                plans[mode] = work / f"{mode}.plan"
                subprocess.run([bindir / "plait-compile", work / "m.onnx", "-o", plans[mode],
                                "--train", "--optimizer", "sgd", "--lr", "0.01"] + extra,
                               check=True)
            for t in args.threads:
                runs = {"blocked": [], "per_image": [], "torch": []}
                for _ in range(args.repeat):
                    for mode in ("per_image", "blocked"):
                        runs[mode].append(run_plait(bindir, plans[mode], work / "data",
                                                    args.steps, t, work))
                    runs["torch"].append(run_torch(cls(), data, list(cls.shapes), args.steps, t))
                med = {k: statistics.median(v) for k, v in runs.items()}
                rows.append((name, t, med))
                print(f"{name:22} threads {t}: per image {med['per_image']:8.2f} ms  blocked "
                      f"{med['blocked']:8.2f} ms  pytorch {med['torch']:8.2f} ms", flush=True)
    print(f"\n{BATCH} images a step")
    print("\n| layer | threads | plait per image ms | plait blocked ms | PyTorch ms "
          "| blocked / per image | blocked / PyTorch |")
    print("|---|---|---|---|---|---|---|")
    for name, t, m in rows:
        print(f"| {name} | {t} | {m['per_image']:.2f} | {m['blocked']:.2f} | {m['torch']:.2f} "
              f"| {m['blocked'] / m['per_image']:.2f} | {m['blocked'] / m['torch']:.2f} |")
    if not args.no_gemm_table:
        print(f"\nThe GEMMs alone, {BATCH} images (OpenBLAS's sgemm, one thread)\n", flush=True)
        subprocess.run([sys.executable, __file__, "--gemm-table-only"], check=True,
                       env=dict(os.environ, OPENBLAS_NUM_THREADS="1"))


if __name__ == "__main__":
    main()
