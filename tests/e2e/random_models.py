#!/usr/bin/env python3
"""Random models, trained by plait and by PyTorch (CTest e2e.random_models).

Each seed draws a small plait-dialect model: an input x [B, T, D], then 6 to 14 random ops
over it (elementwise maps, broadcasting binary ops against params and keepdims reductions,
comparisons and where, softmax and log-softmax, layer norm, matmuls with and without bias or
a transposed weight, a matmul over T between two transposes, reshapes, slices swapped and
concatenated, reductions broadcast back), whose unused results are summed into the loss
mean(s * s). The same ops are evaluated by PyTorch. For each model:

  1. a forward plan gives the params plait initialises (--save-weights) and its loss, which
     must be PyTorch's on those weights;
  2. the training step (SGD, 4 steps) is compiled three ways: as plait-compile makes it,
     with --no-fusion, and with --no-codegen (the fused kernels interpreted);
  3. each run's losses and final weights must be PyTorch's (torch.optim.SGD over the same
     batches), and the three runs' losses must agree with each other more closely;
  4. every other model is also trained on 2 ranks (mpirun), under ddp, zero2, fsdp, zero3
     and zero1 in turn, against PyTorch over the global batch.

PyTorch's run is in f64; plait's f32 results must be within 2e-5 of its largest element, or
within 4x what PyTorch's own f32 run is off by (training that amplifies rounding).

The models are what fusion, the GEMM epilogues, transpose folding, the fused norms and the
generated kernels see in no sample: a failure prints the seed and the model's text
(--keep DIR keeps them), and `--seeds S` reruns one.
"""
import argparse
import json
import pathlib
import random
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from train_parity import read_safetensors  # noqa: E402

B = 2          # samples per step
STEPS = 4
LR = 0.02
# Against PyTorch: per-step losses and final weights (f32, different summation orders).
RTOL, ATOL = 2e-5, 2e-6
# Between plait's three compiles of one model: the issue's bound on fused vs --no-fusion.
SELF_RTOL = 1e-6
# A loss this large in PyTorch's run: a diverging model, skipped.
DIVERGED = 1e6
# The 2-rank runs' placements, one per model in turn.
STRATEGIES = ["ddp", "zero2", "fsdp", "zero3", "zero1"]


def tensor_type(shape, element="f32"):
    return "tensor<" + "".join(f"{d}x" for d in shape) + element + ">"


class Value:
    def __init__(self, name, shape, tie):
        self.name, self.shape = name, list(shape)
        # Whether equal elements (relu's zeros, clamp's bounds) may occur: such values only
        # go through ops whose gradients do not depend on how ties are broken.
        self.tie = tie
        self.uses = 0


class Model:
    """A random model as plait-dialect text and as a PyTorch evaluation of the same ops."""

    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.T = self.rng.choice([3, 4, 5])
        self.D = self.rng.choice([4, 6, 8])
        self.full = [B, self.T, self.D]
        self.lines, self.ops, self.params = [], [], {}
        self.count = 0
        self.pool = [Value("%x", self.full, False)]

    # -- building blocks ----------------------------------------------------------------
    def new(self, shape, tie):
        self.count += 1
        return Value(f"%v{self.count}", shape, tie)

    def emit(self, out, text, fn, ins):
        """`out` = plait `text`; PyTorch computes fn(*ins)."""
        self.lines.append(f"  {out.name} = {text}")
        self.ops.append((out.name, fn, [v.name for v in ins]))
        for v in ins:
            v.uses += 1
        return out

    def param(self, shape, init):
        name = f"p{len(self.params)}"
        self.params[name] = list(shape)
        v = self.new(shape, False)
        self.lines.append(f'  {v.name} = plait.param "{name}" {{init = "{init}"}} : '
                          f"{tensor_type(shape)}")
        self.ops.append((v.name, None, [name]))  # read from the weights
        return v

    def pick(self, smooth_only=False):
        """A pool value, the recent ones likelier; without ties when asked."""
        choices = [v for v in self.pool if not (smooth_only and v.tie)]
        if not choices:
            return None
        weights = [1 + i for i in range(len(choices))]
        return self.rng.choices(choices, weights)[0]

    # -- the ops -----------------------------------------------------------------------
    SMOOTH = {"tanh": torch.tanh, "sigmoid": torch.sigmoid, "gelu": F.gelu, "silu": F.silu,
              "softplus": F.softplus, "neg": torch.neg, "erf": torch.erf, "sin": torch.sin,
              "cos": torch.cos, "elu": F.elu}
    KINKED = {"relu": torch.relu, "abs": torch.abs}

    def unary(self):
        a = self.pick()
        names = list(self.SMOOTH) + ([] if a.tie else list(self.KINKED) + ["clamp", "leaky"])
        u = self.rng.choice(names)
        t = tensor_type(a.shape)
        if u == "clamp":
            out = self.new(a.shape, True)
            return self.emit(out, f"plait.clamp {a.name} {{max = 5.000000e-01 : f64, min = "
                             f"-5.000000e-01 : f64}} : {t}", lambda x: x.clamp(-0.5, 0.5), [a])
        if u == "leaky":
            out = self.new(a.shape, a.tie)
            return self.emit(out, f"plait.leaky_relu {a.name} {{alpha = 1.000000e-01 : f64}} : "
                             f"{t}", lambda x: F.leaky_relu(x, 0.1), [a])
        fn = self.SMOOTH.get(u) or self.KINKED[u]
        out = self.new(a.shape, a.tie or u == "relu")
        return self.emit(out, f"plait.{u} {a.name} : {t}", fn, [a])

    def bounded(self, a):
        """tanh(a): what exp, log and friends take, so that nothing overflows."""
        out = self.new(a.shape, a.tie)
        return self.emit(out, f"plait.tanh {a.name} : {tensor_type(a.shape)}", torch.tanh, [a])

    def safe_map(self):
        a = self.bounded(self.pick())
        kind = self.rng.choice(["exp", "log_sigmoid", "sqrt_exp", "reciprocal_exp", "rsqrt_exp"])
        t = tensor_type(a.shape)
        first = self.new(a.shape, a.tie)
        if kind == "log_sigmoid":
            self.emit(first, f"plait.sigmoid {a.name} : {t}", torch.sigmoid, [a])
            out = self.new(a.shape, a.tie)
            return self.emit(out, f"plait.log {first.name} : {t}", torch.log, [first])
        self.emit(first, f"plait.exp {a.name} : {t}", torch.exp, [a])
        if kind == "exp":
            return first
        op, fn = {"sqrt_exp": ("sqrt", torch.sqrt), "reciprocal_exp": ("reciprocal",
                  torch.reciprocal), "rsqrt_exp": ("rsqrt", torch.rsqrt)}[kind]
        out = self.new(a.shape, a.tie)
        return self.emit(out, f"plait.{op} {first.name} : {t}", fn, [first])

    def operand_like(self, a):
        """A second operand for `a`: another value, a param broadcast to it, or a keepdims
        reduction of another value."""
        kind = self.rng.choice(["value", "param_d", "param_td", "reduce", "reduce"])
        if kind == "value":
            return self.pick(smooth_only=a.tie)
        if kind in ("param_d", "param_td"):
            shape = [self.D] if kind == "param_d" else [self.T, self.D]
            return self.param(shape, "normal:0.5")
        src = self.pick(smooth_only=True)
        axes = self.rng.choice([[2], [1], [1, 2]])
        op = self.rng.choice(["reduce_sum", "reduce_mean", "reduce_max"])
        shape = [1 if i in axes else d for i, d in enumerate(self.full)]
        out = self.new(shape, op == "reduce_max")
        fns = {"reduce_sum": lambda x, ax=tuple(axes): x.sum(dim=ax, keepdim=True),
               "reduce_mean": lambda x, ax=tuple(axes): x.mean(dim=ax, keepdim=True),
               "reduce_max": lambda x, ax=tuple(axes): x.amax(dim=ax, keepdim=True)}
        attr = ", ".join(str(x) for x in axes)
        return self.emit(out, f"plait.{op} {src.name} {{axes = array<i64: {attr}>}} : "
                         f"({tensor_type(src.shape)}) -> {tensor_type(shape)}", fns[op], [src])

    def binary(self):
        a = self.pick()
        b = self.operand_like(a)
        if b is None or b is a:
            return self.unary()
        names = ["add", "sub", "mul", "div"]
        if not a.tie and not b.tie:
            names += ["max", "min"]
        op = self.rng.choice(names)
        if op == "div":  # by exp(tanh(b)), in [0.37, 2.7]
            b = self.bounded(b)
            e = self.new(b.shape, b.tie)
            b = self.emit(e, f"plait.exp {b.name} : {tensor_type(b.shape)}", torch.exp, [b])
        fns = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div,
               "max": torch.maximum, "min": torch.minimum}
        out = self.new(self.full, a.tie or b.tie or op in ("max", "min"))
        return self.emit(out, f"plait.{op} {a.name}, {b.name} : ({tensor_type(a.shape)}, "
                         f"{tensor_type(b.shape)}) -> {tensor_type(self.full)}", fns[op], [a, b])

    def select(self):
        a, b = self.pick(smooth_only=True), self.pick(smooth_only=True)
        if a is None or b is None or a is b:
            return self.unary()
        c, d = self.pick(), self.pick()
        t = tensor_type(self.full)
        mask = self.new(self.full, True)
        op = self.rng.choice(["greater", "less"])
        self.emit(mask, f"plait.{op} {a.name}, {b.name} : ({t}, {t}) -> "
                  f"{tensor_type(self.full, 'i1')}", torch.gt if op == "greater" else torch.lt,
                  [a, b])
        out = self.new(self.full, True)
        return self.emit(out, f"plait.where {mask.name}, {c.name}, {d.name} : "
                         f"({tensor_type(self.full, 'i1')}, {t}, {t}) -> {t}", torch.where,
                         [mask, c, d])

    def softmax(self):
        a = self.pick()
        axis = self.rng.choice([-1, 1])
        op = self.rng.choice(["softmax", "log_softmax"])
        fn = (lambda x: torch.softmax(x, axis)) if op == "softmax" else \
            (lambda x: torch.log_softmax(x, axis))
        out = self.new(self.full, a.tie)
        return self.emit(out, f"plait.{op} {a.name} {{axis = {axis} : i64}} : "
                         f"{tensor_type(self.full)}", fn, [a])

    def layer_norm(self):
        a = self.pick(smooth_only=True) or self.pick()
        g = self.param([self.D], "ones")
        b = self.param([self.D], "zeros")
        out = self.new(self.full, a.tie)
        d = self.D
        t, p = tensor_type(self.full), tensor_type([self.D])
        return self.emit(out, f"plait.layer_norm {a.name}, {g.name}, {b.name} {{axis = -1 : i64,"
                         f" epsilon = 1.000000e-05 : f64}} : ({t}, {p}, {p}) -> {t}",
                         lambda x, w, c: F.layer_norm(x, (d,), w, c, 1e-5), [a, g, b])

    def matmul(self):
        a = self.pick()
        std = f"normal:{1 / np.sqrt(self.D):.6f}"
        w = self.param([self.D, self.D], std)
        t, wt = tensor_type(self.full), tensor_type([self.D, self.D])
        transpose = self.rng.random() < 0.3
        attr = " {transpose_rhs = true}" if transpose else ""
        out = self.new(self.full, a.tie)
        if self.rng.random() < 0.5:
            bias = self.param([self.D], "normal:0.1")
            fn = (lambda x, m, c: x @ m.T + c) if transpose else (lambda x, m, c: x @ m + c)
            return self.emit(out, f"plait.matmul {a.name}, {w.name}, {bias.name}{attr} : ({t}, "
                             f"{wt}, {tensor_type([self.D])}) -> {t}", fn, [a, w, bias])
        fn = (lambda x, m: x @ m.T) if transpose else (lambda x, m: x @ m)
        return self.emit(out, f"plait.matmul {a.name}, {w.name}{attr} : ({t}, {wt}) -> {t}", fn,
                         [a, w])

    def matmul_over_t(self):
        """transpose to [B, D, T], a GEMM over T, transpose back."""
        a = self.pick()
        swapped = [B, self.D, self.T]
        t, s = tensor_type(self.full), tensor_type(swapped)
        first = self.new(swapped, a.tie)
        self.emit(first, f"plait.transpose {a.name} {{perm = array<i64: 0, 2, 1>}} : ({t}) -> {s}",
                  lambda x: x.transpose(1, 2), [a])
        w = self.param([self.T, self.T], f"normal:{1 / np.sqrt(self.T):.6f}")
        mixed = self.new(swapped, a.tie)
        self.emit(mixed, f"plait.matmul {first.name}, {w.name} : ({s}, "
                  f"{tensor_type([self.T, self.T])}) -> {s}", lambda x, m: x @ m, [first, w])
        out = self.new(self.full, a.tie)
        return self.emit(out, f"plait.transpose {mixed.name} {{perm = array<i64: 0, 2, 1>}} : "
                         f"({s}) -> {t}", lambda x: x.transpose(1, 2), [mixed])

    def reshape(self):
        a = self.pick()
        flat = [B, self.T * self.D]
        t, f = tensor_type(self.full), tensor_type(flat)
        first = self.new(flat, a.tie)
        self.emit(first, f"plait.reshape {a.name} : ({t}) -> {f}",
                  lambda x: x.reshape(x.shape[0], -1), [a])
        mid = self.new(flat, a.tie)
        self.emit(mid, f"plait.sigmoid {first.name} : {f}", torch.sigmoid, [first])
        out = self.new(self.full, a.tie)
        inner = self.full[1:]
        return self.emit(out, f"plait.reshape {mid.name} : ({f}) -> {t}",
                         lambda x: x.reshape(x.shape[0], *inner), [mid])

    def swap_halves(self):
        if self.D % 2:
            return self.unary()
        a = self.pick()
        h = self.D // 2
        half = [B, self.T, h]
        t, ht = tensor_type(self.full), tensor_type(half)
        lo, hi = self.new(half, a.tie), self.new(half, a.tie)
        self.emit(lo, f"plait.slice {a.name} {{starts = array<i64: 0, 0, 0>, ends = array<i64: "
                  f"{B}, {self.T}, {h}>, steps = array<i64: 1, 1, 1>}} : ({t}) -> {ht}",
                  lambda x: x[:, :, :h], [a])
        self.emit(hi, f"plait.slice {a.name} {{starts = array<i64: 0, 0, {h}>, ends = array<i64: "
                  f"{B}, {self.T}, {self.D}>, steps = array<i64: 1, 1, 1>}} : ({t}) -> {ht}",
                  lambda x: x[:, :, h:], [a])
        out = self.new(self.full, a.tie)
        return self.emit(out, f"plait.concat {hi.name}, {lo.name} {{axis = 2 : i64}} : ({ht}, "
                         f"{ht}) -> {t}", lambda x, y: torch.cat([x, y], 2), [hi, lo])

    def broadcast_back(self):
        a = self.pick()
        axis = self.rng.choice([1, 2])
        shape = [1 if i == axis else d for i, d in enumerate(self.full)]
        r = self.new(shape, a.tie)
        self.emit(r, f"plait.reduce_mean {a.name} {{axes = array<i64: {axis}>}} : "
                  f"({tensor_type(self.full)}) -> {tensor_type(shape)}",
                  lambda x, ax=axis: x.mean(dim=ax, keepdim=True), [a])
        out = self.new(self.full, a.tie)
        inner = self.full[1:]
        return self.emit(out, f"plait.broadcast_to {r.name} : ({tensor_type(shape)}) -> "
                         f"{tensor_type(self.full)}", lambda x: x.expand(-1, *inner), [r])

    def build(self):
        kinds = [(self.unary, 4), (self.safe_map, 2), (self.binary, 5), (self.select, 1),
                 (self.softmax, 1), (self.layer_norm, 1), (self.matmul, 3),
                 (self.matmul_over_t, 1), (self.reshape, 1), (self.swap_halves, 1),
                 (self.broadcast_back, 1)]
        for _ in range(self.rng.randint(6, 14)):
            make = self.rng.choices([k for k, _ in kinds], [w for _, w in kinds])[0]
            self.pool.append(make())
        if not self.params:  # something to train
            self.pool.append(self.matmul())
        # The loss: mean(s * s) of the sum s of every full-shape result nothing used.
        leaves = [v for v in self.pool[1:] if v.uses == 0 and v.shape == self.full]
        t = tensor_type(self.full)
        total = leaves[0]
        for v in leaves[1:]:
            s = self.new(self.full, True)
            total = self.emit(s, f"plait.add {total.name}, {v.name} : ({t}, {t}) -> {t}",
                              torch.add, [total, v])
        sq = self.new(self.full, True)
        self.emit(sq, f"plait.mul {total.name}, {total.name} : ({t}, {t}) -> {t}", torch.mul,
                  [total, total])
        loss = self.new([], True)
        self.emit(loss, f"plait.reduce_mean {sq.name} {{axes = array<i64>, keepdims = false}} : "
                  f"({t}) -> tensor<f32>", torch.mean, [sq])
        self.loss = loss.name

    def text(self, seed):
        head = (f"// e2e.random_models seed {seed}\n"
                f'func.func @main(%x: {tensor_type(self.full)} {{plait.name = "x"}}) -> '
                f'(tensor<f32> {{plait.name = "loss"}}) {{\n')
        return head + "\n".join(self.lines) + f"\n  return {self.loss} : tensor<f32>\n}}\n"

    def forward(self, x, weights):
        env = {"%x": x}
        for out, fn, ins in self.ops:
            env[out] = weights[ins[0]] if fn is None else fn(*[env[i] for i in ins])
        return env[self.loss]


def torch_training(model, weights, data, dtype, batch=B):
    params = {k: torch.tensor(v, dtype=dtype, requires_grad=True) for k, v in weights.items()}
    opt = torch.optim.SGD(list(params.values()), lr=LR)
    losses = []
    for step in range(STEPS):
        opt.zero_grad()
        loss = model.forward(torch.tensor(data[step * batch:(step + 1) * batch], dtype=dtype),
                             params)
        loss.backward()
        opt.step()
        losses.append(float(loss))
    return np.array(losses), {k: v.detach().numpy() for k, v in params.items()}


def close(got, f64, f32, rtol=RTOL, atol=ATOL):
    """Whether plait's f32 `got` is PyTorch's f64 result `f64` within RTOL/ATOL of its
    largest element, or within 4x what PyTorch's own f32 run is off by: a model whose training
    amplifies rounding (a norm of a nearly constant row; gradients that grow 1000x in four
    steps) is held to what f32 can do for it, not to a fixed bound."""
    got, f64, f32 = (np.asarray(a, dtype=np.float64) for a in (got, f64, f32))
    err = np.max(np.abs(got - f64), initial=0)
    return bool(err <= atol + rtol * np.max(np.abs(f64), initial=0) +
                4 * np.max(np.abs(f32 - f64), initial=0))


def run(cmd):
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(str(c) for c in cmd)} failed ({p.returncode}):\n"
                           f"{p.stderr.strip()}")


def check_seed(seed, bindir, work):
    model = Model(seed)
    model.build()
    path = work / "model.mlir"
    path.write_text(model.text(seed))
    rng = np.random.default_rng(seed)
    data = rng.standard_normal((STEPS * B * 2, model.T, model.D)).astype(np.float32)
    (work / "data").mkdir(exist_ok=True)
    np.save(work / "data" / "x.npy", data)
    np.save(work / "x0.npy", data[:B])
    compile_, plait_run = bindir / "plait-compile", bindir / "plait-run"
    problems = []

    # The params plait initialises, and the forward loss on them.
    run([compile_, path, "-o", work / "forward.plan"])
    run([plait_run, work / "forward.plan", "--input", f"x={work / 'x0.npy'}", "--output-dir",
         work / "out", "--save-weights", work / "w0.safetensors", "--progress", "none"])
    weights = read_safetensors(work / "w0.safetensors")
    with torch.no_grad():
        expect = float(model.forward(torch.tensor(data[:B]),
                                     {k: torch.tensor(v) for k, v in weights.items()}))
    got = float(np.load(work / "out" / "loss.npy"))
    if not np.isclose(got, expect, rtol=RTOL, atol=ATOL):
        problems.append(f"forward loss {got!r}, PyTorch {expect!r}")

    refs = {1: [torch_training(model, weights, data, dtype)
                for dtype in (torch.float64, torch.float32)]}  # per world size
    # A model whose training diverges in PyTorch too (a square of a square of a matmul, each
    # step multiplying the gradients) is drawn, not tested: plait stops such a run.
    if not np.all(np.abs(refs[1][0][0]) < DIVERGED):
        return model, problems or None, []
    runs = {}
    configs = [("fused", [], 1), ("no-fusion", ["--no-fusion"], 1),
               ("no-codegen", ["--no-codegen"], 1)]
    if seed % 2 == 0:  # every other model also on 2 ranks, the placements in turn
        strategy = STRATEGIES[seed // 2 % len(STRATEGIES)]
        configs.append((f"{strategy}-w2", ["--world-size", "2", "--strategy", strategy], 2))
    for label, flags, world in configs:
        if world not in refs:
            refs[world] = [torch_training(model, weights, data, dtype, B * world)
                           for dtype in (torch.float64, torch.float32)]
        (ref_losses, ref_weights), (f32_losses, f32_weights) = refs[world]
        plan = work / f"{label}.plan"
        run([compile_, path, "-o", plan, "--train", "--optimizer", "sgd", "--lr", LR, *flags])
        log = work / f"{label}.jsonl"
        log.unlink(missing_ok=True)
        cmd = [plait_run, plan, "--data", work / "data", "--steps", STEPS, "--log-jsonl", log,
               "--save-weights", work / f"{label}.safetensors", "--progress", "none"]
        if world > 1:
            cmd = ["mpirun", "--oversubscribe", "--allow-run-as-root", "-np", world] + cmd
        run(["timeout", "120"] + cmd)
        losses = [json.loads(line)["loss"] for line in log.read_text().splitlines()]
        runs[label] = losses
        if len(losses) != STEPS or \
                not all(close(*step) for step in zip(losses, ref_losses, f32_losses)):
            problems.append(f"{label}: losses {losses}, PyTorch {list(ref_losses)}")
        trained = read_safetensors(work / f"{label}.safetensors")
        for name, ref in ref_weights.items():
            if not close(trained[name], ref, f32_weights[name]):
                worst = float(np.max(np.abs(trained[name] - ref)))
                problems.append(f"{label}: weight {name} off by up to {worst:.3g}")
    # Fused and unfused losses as close as the issue asks, or as close as rounding lets a
    # model that amplifies it: 4x what f32 moves PyTorch's losses by.
    (ref_losses, _), (f32_losses, _) = refs[1]
    noise = np.abs(np.asarray(f32_losses) - ref_losses)
    fused = np.asarray(runs["fused"])
    for label in ("no-fusion", "no-codegen"):
        if np.any(np.abs(np.asarray(runs[label]) - fused) > SELF_RTOL * np.abs(fused) + 4 * noise):
            problems.append(f"fused vs {label}: {runs['fused']} vs {runs[label]}")
    return model, problems, list(runs)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", required=True, help="the build folder (bin/plait-compile)")
    parser.add_argument("--seeds", default="0:24",
                        help="seeds, S or FIRST:END, separated by commas (default 0:24)")
    parser.add_argument("--keep", help="write each failing model here")
    args = parser.parse_args()
    seeds = []
    for item in args.seeds.split(","):
        first, _, end = item.partition(":")
        seeds += range(int(first), int(end)) if end else [int(first)]
    bindir = pathlib.Path(args.build) / "bin"
    failed = skipped = 0
    for seed in seeds:
        with tempfile.TemporaryDirectory() as tmp:
            try:
                model, problems, labels = check_seed(seed, bindir, pathlib.Path(tmp))
            except RuntimeError as e:
                model, problems, labels = None, [str(e)], []
                text = (pathlib.Path(tmp) / "model.mlir").read_text()
            else:
                text = model.text(seed)
            ops = sum(1 for line in text.splitlines() if "= plait." in line)
            if problems is None:
                skipped += 1
                print(f"seed {seed}: skipped ({ops} ops; its training diverges in PyTorch)")
            elif problems:
                failed += 1
                print(f"seed {seed}: FAILED ({ops} ops)")
                for p in problems:
                    print(f"  {p}")
                print(text)
                if args.keep:
                    pathlib.Path(args.keep).mkdir(parents=True, exist_ok=True)
                    (pathlib.Path(args.keep) / f"seed{seed}.mlir").write_text(text)
            else:
                print(f"seed {seed}: ok ({ops} ops; {', '.join(labels)})")
    print(f"{len(seeds) - failed - skipped} of {len(seeds) - skipped} random models train as "
          f"PyTorch does ({skipped} skipped: they diverge in PyTorch)")
    if skipped * 2 > len(seeds):
        print("more than half the models were skipped: the generator draws too many that diverge")
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
