"""The random models of random_models.py: Model draws a seed's plait-dialect model (its ops,
params, optimizer settings and text) and evaluates the same ops in PyTorch, in f64, f32 or
with every value plait stores in bf16 rounded (Bf16).
"""
import math
import pathlib
import random
import re
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from torch_optimizers import Adafactor, Lamb, NAdam  # noqa: E402

B = 2          # samples per step
LR = 0.02
ADAM_LR = 0.005
# The eps of AdamW and the other normalising optimizers, larger than their 1e-8 (1e-10
# Adagrad's, 1e-6 LAMB's). Adam divides each gradient by its own size, so a
# gradient that is 0 but for rounding (a param added along an axis a softmax then
# normalises over) takes steps of about the learning rate in the direction of its rounding
# noise, and a small one that cancels (an attention's key weights: each query's softmax
# gradient sums to 0) is moved as far as a large one by its f32 error: steps at most
# lr * error / eps apart, with eps 1e-2 a few 1e-7 for plait's f32 gradients.
ADAM_EPS = 1e-2
# --clip-grad-norm's max norm, where a model clips (a third of them): below most models'
# first gradients' norm, so that most of them clip.
CLIP_NORM = 0.5
# The ops whose gradient plait computes from their result (ir/VJP.cpp), as it does in
# bf16-mixed: from the result stored in bf16, each op of the gradient rounded (`r`; `g` the
# result's gradient, itself rounded). PyTorch reads its exact result: seed 262's tanh of a
# sum of 4 values near 1 (0.9993) takes 1 - y^2 from a y that bf16 rounds to 1, and the
# gradients of the params before it were 18-47% off in plait, 0.5-4% in roundings that kept
# the exact result.
FROM_RESULT = {
    "plait.tanh": lambda y, g, r, axis: r(g * r(1 - r(y * y))),
    "plait.sigmoid": lambda y, g, r, axis: r(g * r(y * r(1 - y))),
    "plait.exp": lambda y, g, r, axis: r(g * y),
    "plait.sqrt": lambda y, g, r, axis: r(r(g * 0.5) / y),
    "plait.rsqrt": lambda y, g, r, axis: r(r(g * -0.5) * r(y * r(y * y))),
    "plait.reciprocal": lambda y, g, r, axis: -r(g * r(y * y)),
    "plait.elu": lambda y, g, r, axis: torch.where(y > 0, g, r(g * r(y + 1))),
    "plait.softmax": lambda y, g, r, axis: r(y * r(g - r(r(g * y).sum(axis, keepdim=True)))),
    "plait.log_softmax": lambda y, g, r, axis: r(g - r(r(y.exp()) * r(g.sum(axis,
                                                                             keepdim=True)))),
}
# The ops whose operands broadcast: their gradient to a broadcast operand is a sum of
# per-element terms, which plait may store in bf16 before summing them.
BROADCASTING = {"plait.add", "plait.sub", "plait.mul", "plait.div", "plait.max", "plait.min",
                "plait.where", "plait.pow"}


def from_zero(x):
    """How near a kink at 0 (ReLU, abs) x is, and x's largest magnitude (Model.watched)."""
    return x.abs(), x.abs().max()


def apart(x, y):
    """How near a comparison or max/min of x and y is to a tie, and their largest
    magnitude (Model.watched)."""
    return (x - y).abs(), torch.maximum(x.abs().max(), y.abs().max())


def top_two_gap(x, axes):
    """The gap between the largest and the second largest element over `axes`, and x's
    largest magnitude: how near a max over them is to a tie."""
    rest = [d for d in range(x.dim()) if d not in axes]
    flat = x.permute(*rest, *axes).reshape(*[x.shape[d] for d in rest], -1)
    top = flat.topk(2, dim=-1).values
    return top[..., 0] - top[..., 1], x.abs().max()


def tensor_type(shape, element="f32"):
    return "tensor<" + "".join(f"{d}x" for d in shape) + element + ">"


class Bf16:
    """bf16-mixed's roundings, emulated on f64 values: sample 0 rounds to nearest even, as
    plait does; the others stochastically (a generator seeded with the sample), another
    draw of the same rounding error."""

    def __init__(self, sample):
        self.generator = torch.Generator().manual_seed(sample) if sample else None

    def round(self, t):
        if self.generator is None:
            return t.to(torch.bfloat16).to(t.dtype)
        bits = t.to(torch.float32).view(torch.int32)
        noise = torch.randint(0, 1 << 16, t.shape, generator=self.generator, dtype=torch.int32)
        return ((bits + noise) & ~0xFFFF).view(torch.float32).to(t.dtype)

    def value(self, v):
        """v stored in bf16: rounded, and so is the gradient that reaches it."""
        return _Bf16Stored.apply(v, self, True) if v.is_floating_point() else v

    def use(self, v):
        """A use of v: v itself, and its gradient from this use rounded."""
        if v.is_floating_point() and v.requires_grad:
            return _Bf16Stored.apply(v, self, False)
        return v

    def from_result(self, kind, text, x, value):
        """The result `value` of x's unary op `kind` (its plait `text`), rounded, whose
        gradient is FROM_RESULT's, from the rounded result."""
        axis = re.search(r"axis = (-?\d+)", text)
        return _FromResult.apply(x, self.round(value.detach()), FROM_RESULT[kind], self,
                                 int(axis.group(1)) if axis else None)

    def broadcast(self, args):
        shape = torch.broadcast_shapes(*[a.shape for a in args])
        return [self.use(a.expand(shape)) if a.is_floating_point() and a.shape != shape else a
                for a in args]


class _Bf16Stored(torch.autograd.Function):
    """x, rounded (a value stored) or not (a use of one), and its gradient rounded."""

    @staticmethod
    def forward(ctx, x, bf16, rounded):
        ctx.bf16 = bf16
        return bf16.round(x) if rounded else x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        return ctx.bf16.round(grad), None, None


class _FromResult(torch.autograd.Function):
    """y, x's op's rounded result, the gradient to x computed from y by `vjp`."""

    @staticmethod
    def forward(ctx, x, y, vjp, bf16, axis):
        ctx.save_for_backward(y)
        ctx.vjp, ctx.bf16, ctx.axis = vjp, bf16, axis
        return y.clone()

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return ctx.vjp(y, grad, ctx.bf16.round, ctx.axis), None, None, None, None


class Value:
    def __init__(self, name, shape, tie):
        self.name, self.shape = name, list(shape)
        # Whether equal elements (relu's zeros, clamp's bounds) may occur: such values only
        # go through ops whose gradients do not depend on how ties are broken.
        self.tie = tie
        self.uses = 0
        # Whether a param reaches it through differentiable ops (not only through a
        # comparison's mask).
        self.grad = False


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
        # What the fused compile must have made one op of: exported attentions, norms and
        # the residual adds before them (checked against its --report).
        self.expect_fused = {"attention": 0, "norm": 0, "residual_adds": 0, "batch_norm": 0}
        # The smallest distance of a kink's or comparison's operand from where it decides
        # (relative to the operands' size), over PyTorch's f64 runs: see watched().
        self.margin, self.recording = np.inf, False
        self.skipped = None  # why the model is not tested
        self.mixes_batch = False  # a BatchNorm: statistics over the batch (of each rank)

    # -- building blocks ----------------------------------------------------------------
    def new(self, shape, tie):
        self.count += 1
        return Value(f"%v{self.count}", shape, tie)

    def emit(self, out, text, fn, ins):
        """`out` = plait `text`; PyTorch computes fn(*ins)."""
        self.lines.append(f"  {out.name} = {text}")
        self.ops.append((out.name, fn, [v.name for v in ins], text))
        for v in ins:
            v.uses += 1
        out.grad = any(v.grad for v in ins)
        return out

    def param(self, shape, init):
        name = f"p{len(self.params)}"
        self.params[name] = list(shape)
        v = self.new(shape, False)
        v.grad = True
        self.lines.append(f'  {v.name} = plait.param "{name}" {{init = "{init}"}} : '
                          f"{tensor_type(shape)}")
        self.ops.append((v.name, None, [name], "plait.param"))  # read from the weights
        return v

    def pick(self, smooth_only=False):
        """A pool value, the recent ones likelier; without ties when asked."""
        choices = [v for v in self.pool if not (smooth_only and v.tie)]
        if not choices:
            return None
        weights = [1 + i for i in range(len(choices))]
        return self.rng.choices(choices, weights)[0]

    def watched(self, fn, gap):
        """fn, recording in f64 runs how near its operands come to where it decides (gap:
        the distance per element; `scale`: the operands' largest magnitude). A ReLU of a
        value that is 0 but for rounding, or a comparison of a value with itself plus a mean
        that is 0 but for rounding, decides by rounding: plait's f32 and PyTorch's then take
        different branches, and the model tests nothing (it is skipped)."""
        def call(*args):
            if self.recording:
                g, scale = gap(*args)
                if g.numel():
                    rel = float(g.min()) / max(float(scale), 1e-30)
                    self.margin = min(self.margin, rel)
            return fn(*args)
        return call

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
            fn = self.watched(lambda x: x.clamp(-0.5, 0.5), lambda x: (
                torch.minimum((x - 0.5).abs(), (x + 0.5).abs()), x.abs().max()))
            return self.emit(out, f"plait.clamp {a.name} {{max = 5.000000e-01 : f64, min = "
                             f"-5.000000e-01 : f64}} : {t}", fn, [a])
        if u == "leaky":
            out = self.new(a.shape, a.tie)
            return self.emit(out, f"plait.leaky_relu {a.name} {{alpha = 1.000000e-01 : f64}} : "
                             f"{t}", self.watched(lambda x: F.leaky_relu(x, 0.1), from_zero), [a])
        fn = self.SMOOTH.get(u) or self.watched(self.KINKED[u], from_zero)
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
        axes = self.rng.choice([[2], [1], [1, 2]])
        op = self.rng.choice(["reduce_sum", "reduce_mean", "reduce_max"])
        # A sum or mean's gradient does not depend on ties; a max's does.
        src = self.pick(smooth_only=op == "reduce_max")
        shape = [1 if i in axes else d for i, d in enumerate(self.full)]
        out = self.new(shape, src.tie or op == "reduce_max")
        fns = {"reduce_sum": lambda x, ax=tuple(axes): x.sum(dim=ax, keepdim=True),
               "reduce_mean": lambda x, ax=tuple(axes): x.mean(dim=ax, keepdim=True),
               "reduce_max": self.watched(lambda x, ax=tuple(axes): x.amax(dim=ax, keepdim=True),
                                          lambda x, ax=tuple(axes): top_two_gap(x, ax))}
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
               "max": self.watched(torch.maximum, apart),
               "min": self.watched(torch.minimum, apart)}
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
                  f"{tensor_type(self.full, 'i1')}",
                  self.watched(torch.gt if op == "greater" else torch.lt, apart), [a, b])
        mask.grad = False
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
        # Its rows repeat one value: ties (a max over them), and a norm of them only
        # normalises rounding noise (PyTorch's f64 and f32 runs disagree on such a model).
        out = self.new(self.full, True)
        inner = self.full[1:]
        return self.emit(out, f"plait.broadcast_to {r.name} : ({tensor_type(shape)}) -> "
                         f"{tensor_type(self.full)}", lambda x: x.expand(-1, *inner), [r])

    def attention(self):
        """Self-attention as an export writes it: q, k and v projections, heads split by
        reshapes and transposes, scaled scores, a causal mask filled with -inf or none,
        softmax, the product with v, heads merged back (what plait-fuse-attention makes one
        plait.attention of)."""
        a = self.pick()
        heads = 2 if self.D % 2 == 0 else 1
        dh = self.D // heads
        T, D = self.T, self.D
        t, wt = tensor_type(self.full), tensor_type([D, D])
        split, qs = [B, T, heads, dh], [B, heads, T, dh]
        ks, ss = [B, heads, dh, T], [B, heads, T, T]
        heads_of = {}
        for role, perm, shape in (("q", "0, 2, 1, 3", qs), ("k", "0, 2, 3, 1", ks),
                                  ("v", "0, 2, 1, 3", qs)):
            src = a if role == "q" or self.rng.random() < 0.6 else self.pick()
            w = self.param([D, D], f"normal:{1 / np.sqrt(D):.6f}")
            proj = self.new(self.full, src.tie)
            self.emit(proj, f"plait.matmul {src.name}, {w.name} : ({t}, {wt}) -> {t}",
                      lambda x, m: x @ m, [src, w])
            four = self.new(split, src.tie)
            self.emit(four, f"plait.reshape {proj.name} : ({t}) -> {tensor_type(split)}",
                      lambda x, s=split[1:]: x.reshape(x.shape[0], *s), [proj])
            h = self.new(shape, src.tie)
            dims = tuple(int(d) for d in perm.split(", "))
            heads_of[role] = self.emit(
                h, f"plait.transpose {four.name} {{perm = array<i64: {perm}>}} : "
                f"({tensor_type(split)}) -> {tensor_type(shape)}",
                lambda x, d=dims: x.permute(*d), [four])
        q, k, v = heads_of["q"], heads_of["k"], heads_of["v"]
        tie = q.tie or k.tie
        scores = self.new(ss, tie)
        self.emit(scores, f"plait.matmul {q.name}, {k.name} : ({tensor_type(qs)}, "
                  f"{tensor_type(ks)}) -> {tensor_type(ss)}", torch.matmul, [q, k])
        c = self.scalar(1 / np.sqrt(dh))
        scaled = self.new(ss, tie)
        self.emit(scaled, f"plait.mul {scores.name}, {c.name} : ({tensor_type(ss)}, "
                  f"tensor<f32>) -> {tensor_type(ss)}", torch.mul, [scores, c])
        if self.rng.random() < 0.5:
            rows = ", ".join("[" + ", ".join("true" if j > i else "false" for j in range(T)) + "]"
                             for i in range(T))
            mask = self.constant(f"[{rows}]", lambda: torch.ones(T, T, dtype=torch.bool).triu(1),
                                 [T, T], "i1")
            inf = self.constant("0xFF800000", lambda: torch.tensor(float("-inf")))
            masked = self.new(ss, tie)
            scaled = self.emit(masked, f"plait.where {mask.name}, {inf.name}, {scaled.name} : "
                               f"({tensor_type([T, T], 'i1')}, tensor<f32>, {tensor_type(ss)}) "
                               f"-> {tensor_type(ss)}",
                               lambda m, i, x: torch.where(m, i.to(x.dtype), x),
                               [mask, inf, scaled])
        self.expect_fused["attention"] += 1
        p = self.new(ss, tie)
        self.emit(p, f"plait.softmax {scaled.name} {{axis = -1 : i64}} : {tensor_type(ss)}",
                  lambda x: torch.softmax(x, -1), [scaled])
        o = self.new(qs, tie or v.tie)
        self.emit(o, f"plait.matmul {p.name}, {v.name} : ({tensor_type(ss)}, {tensor_type(qs)}) "
                  f"-> {tensor_type(qs)}", torch.matmul, [p, v])
        back = self.new(split, o.tie)
        self.emit(back, f"plait.transpose {o.name} {{perm = array<i64: 0, 2, 1, 3>}} : "
                  f"({tensor_type(qs)}) -> {tensor_type(split)}", lambda x: x.permute(0, 2, 1, 3),
                  [o])
        out = self.new(self.full, o.tie)
        return self.emit(out, f"plait.reshape {back.name} : ({tensor_type(split)}) -> {t}",
                         lambda x, s=self.full[1:]: x.reshape(x.shape[0], *s), [back])

    def embedding(self):
        """A table lookup at indices from the data (x's argmax over D: rows repeat within a
        batch, so the table's gradient adds up several rows' at one index)."""
        table = self.param([self.D, self.D], "normal:0.5")
        rows = [B, self.T]
        idx = self.new(rows, True)
        t = tensor_type(self.full)
        self.emit(idx, f"plait.argmax %x {{axis = 2 : i64, keepdims = false}} : ({t}) -> "
                  f"{tensor_type(rows, 'i64')}", lambda x: x.argmax(2), [self.pool[0]])
        out = self.new(self.full, True)  # equal rows where indices repeat
        return self.emit(out, f"plait.gather {table.name}, {idx.name} : "
                         f"({tensor_type([self.D, self.D])}, {tensor_type(rows, 'i64')}) -> {t}",
                         lambda w, i: w[i], [table, idx])

    def conv(self, x, out_ch, kernel, group=1, bias=False, dilation=1):
        """plait.conv2d of x [B, C, T, D], stride 1, padded to keep T x D."""
        in_ch, kh, kw = x.shape[1], kernel[0], kernel[1]
        w = self.param([out_ch, in_ch // group, kh, kw],
                       f"normal:{1 / np.sqrt(in_ch // group * kh * kw):.6f}")
        b = self.param([out_ch], "normal:0.1") if bias else None
        ph, pw = dilation * (kh // 2), dilation * (kw // 2)
        shape = [B, out_ch, self.T, self.D]
        ins = [x, w] + ([b] if b else [])
        types = ", ".join(tensor_type(v.shape) for v in ins)
        out = self.new(shape, x.tie)
        return self.emit(out, f"plait.conv2d {', '.join(v.name for v in ins)} {{dilations = "
                         f"array<i64: {dilation}, {dilation}>, group = {group} : i64, pads = "
                         f"array<i64: {ph}, {pw}, {ph}, {pw}>, strides = array<i64: 1, 1>}} : "
                         f"({types}) -> {tensor_type(shape)}",
                         lambda x, w, b=None, p=(ph, pw), g=group, d=dilation: F.conv2d(
                             x, w, b, padding=p, groups=g, dilation=d), ins)

    def convolutions(self):
        """The [T, D] plane as a one-channel image: a convolution to C channels (3x3, 1x3 or
        3x1, a bias or none), then one back to a channel, a depthwise 3x3 and a pointwise
        one, or a 3x3 dilated by 2 to 4 channels in gcd(C, 4) groups (dense from 3 channels,
        2 in each of 2 groups from 4, a depthwise one doubling 2 channels) and a pointwise
        one (plait's im2col GEMMs, image blocks, grouped and depthwise kernels, and their
        gradients)."""
        a = self.pick()
        image = [B, 1, self.T, self.D]
        t, it = tensor_type(self.full), tensor_type(image)
        x = self.new(image, a.tie)
        self.emit(x, f"plait.reshape {a.name} : ({t}) -> {it}",
                  lambda v, s=image[1:]: v.reshape(v.shape[0], *s), [a])
        channels = self.rng.choice([2, 3, 4])
        kernel = self.rng.choice([(3, 3), (1, 3), (3, 1)])
        y = self.conv(x, channels, kernel, bias=self.rng.random() < 0.5)
        branch = self.rng.choice(["back", "depthwise", "grouped"])
        if branch == "back":
            y = self.conv(y, 1, (3, 3), bias=self.rng.random() < 0.5)
        else:
            if branch == "depthwise":
                y = self.conv(y, channels, (3, 3), group=channels)
            else:
                y = self.conv(y, 4, (3, 3), group=math.gcd(channels, 4), dilation=2,
                              bias=self.rng.random() < 0.5)
            y = self.conv(y, 1, (1, 1))
        out = self.new(self.full, y.tie)
        return self.emit(out, f"plait.reshape {y.name} : ({it}) -> {t}",
                         lambda v, s=self.full[1:]: v.reshape(v.shape[0], *s), [y])

    def constant(self, literal, value, shape=(), element="f32"):
        """plait.constant dense<literal>; PyTorch reads value()."""
        c = self.new(list(shape), False)
        self.lines.append(f"  {c.name} = plait.constant dense<{literal}> : "
                          f"{tensor_type(shape, element)}")
        self.ops.append((c.name, value, [], "plait.constant"))
        return c

    def scalar(self, x):
        """An f32 scalar constant (PyTorch reads it rounded to f32, as plait parses it)."""
        return self.constant(f"{x:.9e}", lambda: torch.tensor(float(np.float32(x))))

    def exported_norm(self):
        """A layer norm or RMS norm over the last axis as an export writes it, op by op, often
        of a residual sum (what plait-fuse-norm makes one layer_norm or rms_norm of, and
        plait-fuse-add-norm one add_layer_norm or add_rms_norm)."""
        a = self.pick(smooth_only=True) or self.pick()
        t, r = tensor_type(self.full), tensor_type([B, self.T, 1])
        row = [B, self.T, 1]
        if self.rng.random() < 0.5:
            b = self.pick(smooth_only=True)
            if b is not None and b is not a:
                s = self.new(self.full, a.tie or b.tie)
                a = self.emit(s, f"plait.add {a.name}, {b.name} : ({t}, {t}) -> {t}", torch.add,
                              [a, b])
                self.expect_fused["residual_adds"] += 1
        self.expect_fused["norm"] += 1
        rms = self.rng.random() < 0.5
        eps = self.rng.choice([1e-5, 1e-6])
        centred = a
        if not rms:
            m = self.new(row, a.tie)
            self.emit(m, f"plait.reduce_mean {a.name} {{axes = array<i64: -1>}} : ({t}) -> {r}",
                      lambda x: x.mean(-1, keepdim=True), [a])
            centred = self.new(self.full, a.tie)
            self.emit(centred, f"plait.sub {a.name}, {m.name} : ({t}, {r}) -> {t}", torch.sub,
                      [a, m])
        two = self.scalar(2.0)
        sq = self.new(self.full, a.tie)
        self.emit(sq, f"plait.pow {centred.name}, {two.name} : ({t}, tensor<f32>) -> {t}",
                  torch.pow, [centred, two])
        var = self.new(row, a.tie)
        self.emit(var, f"plait.reduce_mean {sq.name} {{axes = array<i64: 2>}} : ({t}) -> {r}",
                  lambda x: x.mean(-1, keepdim=True), [sq])
        e = self.scalar(eps)
        ve = self.new(row, a.tie)
        self.emit(ve, f"plait.add {var.name}, {e.name} : ({r}, tensor<f32>) -> {r}", torch.add,
                  [var, e])
        sd = self.new(row, a.tie)
        self.emit(sd, f"plait.sqrt {ve.name} : {r}", torch.sqrt, [ve])
        n = self.new(self.full, a.tie)
        if rms:
            inv = self.new(row, a.tie)
            self.emit(inv, f"plait.reciprocal {sd.name} : {r}", torch.reciprocal, [sd])
            self.emit(n, f"plait.mul {centred.name}, {inv.name} : ({t}, {r}) -> {t}", torch.mul,
                      [centred, inv])
        else:
            self.emit(n, f"plait.div {centred.name}, {sd.name} : ({t}, {r}) -> {t}", torch.div,
                      [centred, sd])
        g = self.param([self.D], "ones")
        p = tensor_type([self.D])
        out = self.new(self.full, a.tie)
        self.emit(out, f"plait.mul {n.name}, {g.name} : ({t}, {p}) -> {t}", torch.mul, [n, g])
        if rms:
            return out
        beta = self.param([self.D], "zeros")
        shifted = self.new(self.full, a.tie)
        return self.emit(shifted, f"plait.add {beta.name}, {out.name} : ({p}, {t}) -> {t}",
                         torch.add, [beta, out])

    def exported_batch_norm(self):
        """A training-mode BatchNorm over T as channels (the statistics over axes 0 and 2), op
        by op as the ONNX importer writes it: the mean, the centred values, their square (pow
        or a product) and its mean, + eps, rsqrt or a division by the square root, then
        gamma and beta per channel ([T, 1] or [1, T, 1], each or neither); what
        plait-fuse-norm makes one batch_norm of. PyTorch evaluates it as one op, as the
        fused kernel computes it: under bf16-mixed its intermediates are not rounded, only y
        (and the gradients it sends). It mixes the batch: the reference computes it per rank
        (torch_training), and the model takes no micro-batches."""
        a = self.pick(smooth_only=True) or self.pick()
        self.mixes_batch = True
        self.expect_fused["batch_norm"] += 1
        t, r = tensor_type(self.full), tensor_type([1, self.T, 1])
        row = [1, self.T, 1]

        def text(out, line):  # an op of the chain: plait's text only
            self.lines.append(f"  {out.name} = {line}")
            return out

        m = text(self.new(row, a.tie),
                 f"plait.reduce_mean {a.name} {{axes = array<i64: 0, 2>}} : ({t}) -> {r}")
        c = text(self.new(self.full, a.tie), f"plait.sub {a.name}, {m.name} : ({t}, {r}) -> {t}")
        sq = self.new(self.full, a.tie)
        if self.rng.random() < 0.5:
            two = self.scalar(2.0)
            text(sq, f"plait.pow {c.name}, {two.name} : ({t}, tensor<f32>) -> {t}")
        else:
            text(sq, f"plait.mul {c.name}, {c.name} : ({t}, {t}) -> {t}")
        var = text(self.new(row, a.tie),
                   f"plait.reduce_mean {sq.name} {{axes = array<i64: 0, 2>}} : ({t}) -> {r}")
        eps = self.rng.choice([1e-5, 1e-3])
        e = self.scalar(eps)
        ve = text(self.new(row, a.tie), f"plait.add {var.name}, {e.name} : ({r}, tensor<f32>) -> {r}")
        n = self.new(self.full, a.tie)
        if self.rng.random() < 0.5:
            inv = text(self.new(row, a.tie), f"plait.rsqrt {ve.name} : {r}")
            text(n, f"plait.mul {c.name}, {inv.name} : ({t}, {r}) -> {t}")
        else:
            sd = text(self.new(row, a.tie), f"plait.sqrt {ve.name} : {r}")
            text(n, f"plait.div {c.name}, {sd.name} : ({t}, {r}) -> {t}")
        out, ins = n, [a]
        shape = self.rng.choice([[self.T, 1], [1, self.T, 1]])
        p = tensor_type(shape)
        gamma = beta = None
        if self.rng.random() < 0.75:
            gamma = self.param(shape, "normal:0.5")
            out = text(self.new(self.full, a.tie),
                       f"plait.mul {out.name}, {gamma.name} : ({t}, {p}) -> {t}")
            ins.append(gamma)
        if self.rng.random() < 0.75:
            beta = self.param(shape, "normal:0.1")
            out = text(self.new(self.full, a.tie),
                       f"plait.add {out.name}, {beta.name} : ({t}, {p}) -> {t}")
            ins.append(beta)

        def batch_norm(x, *affine, eps=float(np.float32(eps)), scaled=gamma is not None,
                       shifted=beta is not None):
            mean = x.mean((0, 2), keepdim=True)
            y = (x - mean) / torch.sqrt(((x - mean) ** 2).mean((0, 2), keepdim=True) + eps)
            if scaled:
                y = y * affine[0]
            if shifted:
                y = y + affine[-1]
            return y

        self.ops.append((out.name, batch_norm, [v.name for v in ins], "plait.batch_norm"))
        for v in ins:
            v.uses += 1
        out.grad = any(v.grad for v in ins)
        return out

    def build(self):
        kinds = [(self.unary, 4), (self.safe_map, 2), (self.binary, 5), (self.select, 1),
                 (self.softmax, 1), (self.layer_norm, 1), (self.matmul, 3),
                 (self.matmul_over_t, 1), (self.reshape, 1), (self.swap_halves, 1),
                 (self.broadcast_back, 1), (self.attention, 1), (self.exported_norm, 1),
                 (self.embedding, 1), (self.convolutions, 1), (self.exported_batch_norm, 1)]
        for _ in range(self.rng.randint(6, 14)):
            make = self.rng.choices([k for k, _ in kinds], [w for _, w in kinds])[0]
            self.pool.append(make())
        # The loss: mean(s * s) of the sum s of every full-shape result nothing used, one of
        # which a param reaches (plait-compile refuses a loss that no param reaches through
        # a differentiable op, as PyTorch's backward would).
        leaves = [v for v in self.pool[1:] if v.uses == 0 and v.shape == self.full]
        if not any(v.grad for v in leaves):
            leaves.append(self.matmul())
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
        if self.rng.random() < 0.4:
            # Plus a cross-entropy of the sum as logits over T (classes on axis 1, as
            # [N, C, d1]) against x's argmax over T: a loss with its fused gradient, whose
            # targets come from the data.
            cls = [B, self.D]
            target = self.new(cls, True)
            self.emit(target, f"plait.argmax %x {{axis = 1 : i64, keepdims = false}} : ({t}) -> "
                      f"{tensor_type(cls, 'i64')}", lambda x: x.argmax(1), [self.pool[0]])
            ce = self.new([], True)
            self.emit(ce, f"plait.softmax_cross_entropy {total.name}, {target.name} : ({t}, "
                      f"{tensor_type(cls, 'i64')}) -> tensor<f32>", F.cross_entropy,
                      [total, target])
            both = self.new([], True)
            loss = self.emit(both, f"plait.add {loss.name}, {ce.name} : (tensor<f32>, "
                             f"tensor<f32>) -> tensor<f32>", torch.add, [loss, ce])
        self.loss = loss.name
        # The optimizer, one of OPTIMIZERS; and in a third of the models the gradients
        # clipped to a global norm first (clip_grad_norm_).
        self.optimizer = self.rng.choice(sorted(OPTIMIZERS))
        self.clip = self.rng.choice([None, None, CLIP_NORM])
        # Param groups, each in a third of the models: some params at half the lr
        # (--lr-scale), and some without weight decay where the optimizer has it
        # (--no-weight-decay): torch param groups of their own.
        names = sorted(self.params)
        subset = lambda: set(self.rng.sample(names, self.rng.randint(1, len(names))))
        self.half_lr = subset() if self.rng.random() < 1 / 3 else set()
        decays = "--weight-decay" in OPTIMIZERS[self.optimizer][0] or self.optimizer == "adamw"
        self.no_decay = subset() if decays and self.rng.random() < 1 / 3 else set()

    def optimizer_flags(self):
        """plait-compile's flags for the model's optimizer, clipping and param groups."""
        flags = list(OPTIMIZERS[self.optimizer][0])
        if self.clip:
            flags += ["--clip-grad-norm", self.clip]
        if self.half_lr:
            flags += ["--lr-scale", f"^({'|'.join(sorted(self.half_lr))})$=0.5"]
        if self.no_decay:
            flags += ["--no-weight-decay", f"^({'|'.join(sorted(self.no_decay))})$"]
        return flags

    def param_groups(self, params):
        """The torch param groups of `params` (name -> tensor) that optimizer_flags makes."""
        flags = OPTIMIZERS[self.optimizer][0]
        lr = float(flags[flags.index("--lr") + 1])
        groups = {}
        for name, p in params.items():
            key = (name in self.half_lr, name in self.no_decay)
            if key not in groups:
                groups[key] = {"params": [], "lr": lr * 0.5 if key[0] else lr}
                if key[1]:
                    groups[key]["weight_decay"] = 0.0
            groups[key]["params"].append(p)
        return list(groups.values())

    def text(self, seed):
        head = (f"// e2e.random_models seed {seed}\n"
                f'func.func @main(%x: {tensor_type(self.full)} {{plait.name = "x"}}) -> '
                f'(tensor<f32> {{plait.name = "loss"}}) {{\n')
        return head + "\n".join(self.lines) + f"\n  return {self.loss} : tensor<f32>\n}}\n"

    def forward(self, x, weights, bf16=None):
        """The loss of batch x. With bf16 (a Bf16), as --precision bf16-mixed computes it:
        x, each param, constant and op result rounded to bf16 (but scalars, the loss's terms
        and their sum, which plait computes in f32), and in the backward each gradient plait
        stores in bf16 rounded: an op's result's, each use's, and an elementwise op's per
        element before a broadcast operand's sum; a gradient plait takes from the op's
        result (FROM_RESULT) taken from the rounded result."""
        env = {"%x": x if bf16 is None else bf16.value(x)}
        for out, fn, ins, text in self.ops:
            if fn is None:
                value = weights[ins[0]]
            elif bf16 is None:
                value = fn(*[env[i] for i in ins])
            else:
                kind = text.split()[0]
                args = [bf16.use(env[i]) for i in ins]
                value = fn(*(bf16.broadcast(args) if kind in BROADCASTING else args))
                if kind in FROM_RESULT:
                    value = bf16.from_result(kind, text, args[0], value)
            env[out] = value if bf16 is None or not value.dim() else bf16.value(value)
        return env[self.loss]


# Each optimizer's plait-compile flags and PyTorch's optimizer with the same settings: every
# optimizer plait has whose update is continuous in the gradient. Lion and Rprop are not
# drawn: they step by the sign of a gradient (or of a moment), and a gradient that is 0 but
# for rounding (see ADAM_EPS) takes a full step in a direction rounding decides. The
# normalising ones take ADAM_EPS as their eps, for the same reason; they run with some weight
# decay, coupled or decoupled, and their less usual options (AMSGrad, centred RMSprop with
# momentum, Adagrad's lr decay). Lion's and Lamb's torch versions are torch_optimizers.py's
# (PyTorch 1.13 has neither), and so is its NAdam (1.13's with PyTorch 2's fix).
OPTIMIZERS = {
    "sgd": (["--optimizer", "sgd", "--lr", LR], lambda p: torch.optim.SGD(p, lr=LR)),
    "nesterov": (["--optimizer", "sgd", "--lr", LR, "--momentum", 0.9, "--nesterov",
                  "--weight-decay", 0.01],
                 lambda p: torch.optim.SGD(p, lr=LR, momentum=0.9, nesterov=True,
                                           weight_decay=0.01)),
    "adamw": (["--optimizer", "adamw", "--lr", ADAM_LR, "--eps", ADAM_EPS],
              lambda p: torch.optim.AdamW(p, lr=ADAM_LR, eps=ADAM_EPS)),
    "adam-amsgrad": (["--optimizer", "adam", "--lr", ADAM_LR, "--eps", ADAM_EPS, "--amsgrad",
                      "--weight-decay", 0.01],
                     lambda p: torch.optim.Adam(p, lr=ADAM_LR, eps=ADAM_EPS, amsgrad=True,
                                                weight_decay=0.01)),
    "adagrad": (["--optimizer", "adagrad", "--lr", LR, "--eps", ADAM_EPS, "--lr-decay", 0.05],
                lambda p: torch.optim.Adagrad(p, lr=LR, eps=ADAM_EPS, lr_decay=0.05)),
    "rmsprop": (["--optimizer", "rmsprop", "--lr", ADAM_LR, "--eps", ADAM_EPS, "--alpha", 0.9,
                 "--centered", "--momentum", 0.5],
                lambda p: torch.optim.RMSprop(p, lr=ADAM_LR, eps=ADAM_EPS, alpha=0.9,
                                              centered=True, momentum=0.5)),
    "adamax": (["--optimizer", "adamax", "--lr", ADAM_LR, "--eps", ADAM_EPS, "--weight-decay",
                0.01],
               lambda p: torch.optim.Adamax(p, lr=ADAM_LR, eps=ADAM_EPS, weight_decay=0.01)),
    "nadam": (["--optimizer", "nadam", "--lr", ADAM_LR, "--eps", ADAM_EPS, "--weight-decay",
               0.05, "--decoupled-weight-decay"],
              lambda p: NAdam(p, lr=ADAM_LR, eps=ADAM_EPS, weight_decay=0.05,
                              decoupled_weight_decay=True)),
    # (Four steps are all within RAdam's first five, its unrectified momentum steps.)
    "radam": (["--optimizer", "radam", "--lr", ADAM_LR, "--eps", ADAM_EPS, "--weight-decay",
               0.01],
              lambda p: torch.optim.RAdam(p, lr=ADAM_LR, eps=ADAM_EPS, weight_decay=0.01)),
    "adadelta": (["--optimizer", "adadelta", "--lr", 1.0, "--eps", 1e-4, "--rho", 0.8],
                 lambda p: torch.optim.Adadelta(p, lr=1.0, eps=1e-4, rho=0.8)),
    "asgd": (["--optimizer", "asgd", "--lr", LR, "--weight-decay", 0.01, "--lambd", 0.1],
             lambda p: torch.optim.ASGD(p, lr=LR, weight_decay=0.01, lambd=0.1, foreach=False)),
    "lamb": (["--optimizer", "lamb", "--lr", ADAM_LR, "--eps", ADAM_EPS, "--weight-decay", 0.01],
             lambda p: Lamb(p, lr=ADAM_LR, eps=ADAM_EPS, weight_decay=0.01)),
    # Adafactor (Hugging Face's, torch_optimizers.py's): its eps1 is added to the squared
    # gradient, so ADAM_EPS squared; a first moment and decoupled decay.
    "adafactor": (["--optimizer", "adafactor", "--lr", ADAM_LR, "--eps", ADAM_EPS ** 2,
                   "--beta1", 0.9, "--weight-decay", 0.01],
                  lambda p: Adafactor(p, lr=ADAM_LR, eps=(ADAM_EPS ** 2, 1e-3), beta1=0.9,
                                      weight_decay=0.01, relative_step=False)),
}
