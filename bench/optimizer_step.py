#!/usr/bin/env python3
"""Optimizer-bound training steps: plait's updates against torch.optim, on one thread.

The model is a plait-dialect .mlir written here: N parameter tensors w_i of C elements
(init ones), one input row x of C elements per step, loss = sum_i mean(x * w_i). Its
forward and backward read each tensor once (a product and a sum; the gradient is x / C), so a
step is mostly the optimizer update, which reads and writes the param, its gradient and every
state. Two shapes: 8 tensors of 1 Mi elements (the updates stream 32 MiB arrays from memory)
and 512 tensors of 4 Ki elements (the per-tensor cost of an update matters).

For each optimizer (SGD with momentum, AdamW, Adagrad with lr decay, RMSprop centered with
momentum, Adamax, NAdam, RAdam, Adadelta, LAMB, Adafactor (its params square matrices), and
AdamW with a weight EMA: plait's --ema-decay against torch's AveragedModel, or a foreach EMA)
and shape:
  - plait: `plait-compile --train` with the optimizer's flags, then `plait-run --threads 1`
    (OPENBLAS_NUM_THREADS=1) for WARMUP + STEPS steps; a run's time is the median of its
    logged step_ms after the warm-up. The updates are grouped into multi-tensor kernels
    (plait-group-updates) as in every fused plan.
  - PyTorch 1.13 (NAdam single-tensor: with PyTorch 2's fix, below): this script re-run as a
    worker (--torch-worker) with
    torch.set_num_threads(1), the same model as an nn.Module, the same data, and the same
    torch.optim optimizer, once single-tensor (foreach=False, PyTorch's CPU default) and once
    multi-tensor (foreach=True); each step (forward, zero_grad, backward, opt.step()) timed
    with time.perf_counter.
The runs alternate plait, PyTorch, PyTorch foreach, ... REPEAT times; the table shows the
medians of the runs' medians, and the largest relative difference of plait's per-step losses
from PyTorch's (the same arithmetic: it stays at rounding; above 1e-4 the script exits 1).

Run with /usr/bin/python3 (torch 1.13):
  optimizer_step.py BUILD [--steps N] [--repeat R] [--json OUT] [--only NAME]
"""
import argparse
import datetime
import json
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from attention_step import run_checked, step_log  # noqa: E402

WARMUP = 3
SHAPES = {"8x1Mi": (8, 1 << 20), "512x4Ki": (512, 4096)}

# name -> (plait-compile flags, torch.optim constructor name and keyword arguments).
OPTIMIZERS = {
    "sgd-momentum": (["--optimizer", "sgd", "--lr", "0.01", "--momentum", "0.9"],
                     ("SGD", dict(lr=0.01, momentum=0.9))),
    "adamw": (["--optimizer", "adamw", "--lr", "1e-3"], ("AdamW", dict(lr=1e-3))),
    "adagrad": (["--optimizer", "adagrad", "--lr", "0.01", "--lr-decay", "0.01"],
                ("Adagrad", dict(lr=0.01, lr_decay=0.01))),
    "rmsprop": (["--optimizer", "rmsprop", "--lr", "1e-3", "--centered", "--momentum", "0.9"],
                ("RMSprop", dict(lr=1e-3, centered=True, momentum=0.9))),
    "adamax": (["--optimizer", "adamax", "--lr", "2e-3"], ("Adamax", dict(lr=2e-3))),
    "nadam": (["--optimizer", "nadam", "--lr", "2e-3"], ("NAdam", dict(lr=2e-3))),
    "radam": (["--optimizer", "radam", "--lr", "1e-3"], ("RAdam", dict(lr=1e-3))),
    "adadelta": (["--optimizer", "adadelta", "--lr", "1.0"], ("Adadelta", dict(lr=1.0))),
    "rprop": (["--optimizer", "rprop", "--lr", "1e-2"], ("Rprop", dict(lr=1e-2))),
    "asgd": (["--optimizer", "asgd", "--lr", "1e-2"], ("ASGD", dict(lr=1e-2))),
    # PyTorch has no LAMB: timm's Lamb as tests/e2e/torch_optimizers.py writes it (a loop over the
    # tensors in PyTorch ops, as timm's is; no foreach variant exists).
    "lamb": (["--optimizer", "lamb", "--lr", "1e-3"], ("Lamb", dict(lr=1e-3))),
    # PyTorch 1.13 has no Adafactor: Hugging Face's as tests/e2e/torch_optimizers.py writes it (a
    # loop over the tensors in PyTorch ops, as HF's is). Its params are square matrices
    # (MATRICES), so that its second moment is factored into rows and columns.
    "adafactor": (["--optimizer", "adafactor", "--lr", "1e-3", "--beta1", "0.9"],
                  ("Adafactor", dict(lr=1e-3, beta1=0.9, relative_step=False))),
    # AdamW with a weight EMA (decay 0.999) updated after every step: plait's --ema-decay
    # against torch's AveragedModel (single-tensor) or _foreach_mul_/_foreach_add_ (foreach).
    "adamw-ema": (["--optimizer", "adamw", "--lr", "1e-3", "--ema-decay", "0.999"],
                  ("AdamW", dict(lr=1e-3))),
}
EMA_DECAY = {"adamw-ema": 0.999}
# The optimizers whose params are square matrices (w_i of width elements as sqrt(width) rows).
MATRICES = {"adafactor"}


def param_shape(optimizer, width):
    """w_i's shape: [width], or [r, r] (r = sqrt(width)) for the optimizers in MATRICES."""
    if optimizer not in MATRICES:
        return [width]
    r = int(round(width ** 0.5))
    assert r * r == width, width
    return [r, r]


def write_model(path, tensors, width, shape):
    """The .mlir model: loss = sum_i mean(x * w_i), w_i of `width` elements in `shape`
    (param_shape; x reshaped to it), init ones."""
    t = "tensor<1x%dxf32>" % width
    w = "tensor<%sxf32>" % "x".join(map(str, shape))
    lines = ['func.func @main(%%x: %s {plait.name = "x"}) -> (tensor<f32> {plait.name = "loss"}) {'
             % t]
    x = "%x"
    if len(shape) > 1:
        lines.append("  %%xr = plait.reshape %%x : (%s) -> %s" % (t, w))
        x, t = "%xr", w
    total = None
    for i in range(tensors):
        lines += [
            '  %%w%d = plait.param "w%d" {init = "ones"} : %s' % (i, i, w),
            "  %%p%d = plait.mul %s, %%w%d : (%s, %s) -> %s" % (i, x, i, t, w, t),
            "  %%l%d = plait.reduce_mean %%p%d {axes = array<i64>, keepdims = false} : (%s) -> "
            "tensor<f32>" % (i, i, t),
        ]
        if total is None:
            total = "%%l%d" % i
        else:
            lines.append("  %%s%d = plait.add %s, %%l%d : (tensor<f32>, tensor<f32>) -> "
                         "tensor<f32>" % (i, total, i))
            total = "%%s%d" % i
    lines += ["  return %s : tensor<f32>" % total, "}"]
    path.write_text("\n".join(lines) + "\n")


def torch_worker(args):
    import torch

    torch.set_num_threads(1)
    tensors, width = SHAPES[args.shape]
    name, kwargs = OPTIMIZERS[args.optimizer][1]
    shape = param_shape(args.optimizer, width)
    params = [torch.nn.Parameter(torch.ones(shape)) for _ in range(tensors)]
    if name in ("Lamb", "Adafactor"):
        sys.path.insert(0, str(HERE.parent / "tests" / "e2e"))
        import torch_optimizers  # noqa: E402
        opt = getattr(torch_optimizers, name)(params, **kwargs)
    elif name == "NAdam" and not args.foreach:
        # PyTorch 2's NAdam (plait's rule; 1.13's multiplies mu_product_next by mu once more,
        # pytorch/pytorch#92699), as tests/e2e/torch_optimizers.py writes it: 1.13's single-tensor
        # loop with the fix. The foreach run is 1.13's own (the same work; its losses differ).
        sys.path.insert(0, str(HERE.parent / "tests" / "e2e"))
        from torch_optimizers import NAdam  # noqa: E402
        opt = NAdam(params, **kwargs)
    else:
        opt = getattr(torch.optim, name)(params, foreach=args.foreach, **kwargs)
    x = torch.from_numpy(np.load(pathlib.Path(args.data) / "x.npy"))
    decay = EMA_DECAY.get(args.optimizer)
    averaged, ema, module = None, None, torch.nn.ParameterList(params)
    if decay is not None and not args.foreach:
        averaged = torch.optim.swa_utils.AveragedModel(
            module, avg_fn=lambda a, p, n: decay * a + (1 - decay) * p)
    times, losses = [], []
    for s in range(args.steps):
        xs = x[s:s + 1].reshape(shape)
        start = time.perf_counter()
        loss = sum((xs * w).mean() for w in params)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if averaged is not None:
            averaged.update_parameters(module)
        elif decay is not None:
            with torch.no_grad():
                if ema is None:
                    ema = [p.detach().clone() for p in params]
                else:
                    torch._foreach_mul_(ema, decay)
                    torch._foreach_add_(ema, [p.detach() for p in params], alpha=1 - decay)
        times.append((time.perf_counter() - start) * 1e3)
        losses.append(float(loss))
    print(json.dumps({"step_ms": times, "loss": losses}))


def run_torch(shape, optimizer, foreach, data, steps):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    out = run_checked([sys.executable, __file__, "--torch-worker", "--shape", shape,
                       "--optimizer", optimizer, "--data", data, "--steps", steps]
                      + (["--foreach"] if foreach else []), env=env)
    row = json.loads(out.strip().splitlines()[-1])
    return statistics.median(row["step_ms"][WARMUP:]), row["loss"]


def bench(build, shape, optimizer, steps, repeat, work):
    tensors, width = SHAPES[shape]
    case = work / ("%s-%s" % (shape, optimizer))
    data = case / "data"
    data.mkdir(parents=True)
    rng = np.random.default_rng(7)
    np.save(data / "x.npy", rng.standard_normal((WARMUP + steps, width)).astype(np.float32))
    model, plan, report = case / "model.mlir", case / "model.plan", case / "report.json"
    write_model(model, tensors, width, param_shape(optimizer, width))
    run_checked([build / "bin" / "plait-compile", model, "-o", plan, "--train", "--report",
                 report] + OPTIMIZERS[optimizer][0])
    kernels = json.loads(report.read_text())["kernels"]
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    times = {"plait": [], "torch": [], "torch-foreach": []}
    losses = {}
    for i in range(repeat):
        log = case / ("plait-%d.jsonl" % i)
        run_checked([build / "bin" / "plait-run", plan, "--data", data, "--steps",
                     WARMUP + steps, "--log-jsonl", log, "--progress", "none", "--threads", "1"],
                    env=env)
        ms, loss = step_log(log)
        times["plait"].append(statistics.median(ms[WARMUP:]))
        losses["plait"] = loss
        for variant, foreach in (("torch", False), ("torch-foreach", True)):
            if foreach and OPTIMIZERS[optimizer][1][0] in ("Lamb", "Adafactor"):
                continue
            ms, loss = run_torch(shape, optimizer, foreach, data, WARMUP + steps)
            times[variant].append(ms)
            losses[variant] = loss
    p, t = np.array(losses["plait"]), np.array(losses["torch"])
    return {
        "shape": shape,
        "optimizer": optimizer,
        "params": tensors * width,
        "update_kernels": kernels.get("grouped_update", 0) + kernels.get("adafactor_update", 0),
        "ema_kernels": kernels.get("weight_ema", 0),
        "step_ms": {v: statistics.median(r) if r else None for v, r in times.items()},
        "runs_ms": times,
        "max_rel_loss_diff": float(np.max(np.abs(p - t) / np.maximum(np.abs(t), 1e-12))),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build", nargs="?")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json")
    parser.add_argument("--only", help="OPTIMIZER or SHAPE/OPTIMIZER")
    parser.add_argument("--torch-worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--shape", help=argparse.SUPPRESS)
    parser.add_argument("--optimizer", help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    parser.add_argument("--foreach", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.torch_worker:
        return torch_worker(args)
    if not args.build:
        parser.error("BUILD is required")
    build = pathlib.Path(args.build).resolve()
    commit = subprocess.run(["git", "-C", str(HERE), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    import torch

    print("date: %s" % datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC"))
    print("machine: %s, %d cores, %s" % (platform.processor() or platform.machine(),
                                        os.cpu_count(), platform.platform()))
    print("commit: %s, torch %s; one thread per process, %d steps after %d warm-up, %d runs"
          % (commit, torch.__version__, args.steps, WARMUP, args.repeat))
    rows = []
    with tempfile.TemporaryDirectory(prefix="plait-optstep-") as tmp:
        for shape in SHAPES:
            for optimizer in OPTIMIZERS:
                if args.only and args.only not in (optimizer, "%s/%s" % (shape, optimizer)):
                    continue
                rows.append(bench(build, shape, optimizer, args.steps, args.repeat,
                                  pathlib.Path(tmp)))
    print()
    print("| params | optimizer | plait update kernels | plait ms/step | PyTorch ms/step | "
          "speed-up | PyTorch foreach ms/step | speed-up | max rel loss diff |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        ms = r["step_ms"]
        foreach = ("%.3f | %.2f×" % (ms["torch-foreach"], ms["torch-foreach"] / ms["plait"])
                   if ms["torch-foreach"] else "— | —")
        kernels = "%d" % r["update_kernels"]
        if r["ema_kernels"]:
            kernels += " + %d EMA" % r["ema_kernels"]
        print("| %s | %s | %s | %.3f | %.3f | %.2f× | %s | %.1e |" % (
            r["shape"], r["optimizer"], kernels, ms["plait"], ms["torch"],
            ms["torch"] / ms["plait"], foreach, r["max_rel_loss_diff"]))
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")
    # Both sides train the same model: their losses may differ by rounding only.
    off = [r for r in rows if not r["max_rel_loss_diff"] <= 1e-4]
    if off:
        sys.exit("losses differ from PyTorch's by more than 1e-4: %s" % ", ".join(
            "%s/%s" % (r["shape"], r["optimizer"]) for r in off))


if __name__ == "__main__":
    main()
