#!/usr/bin/env python3
"""Training parity: plait vs PyTorch on the samples, same weights, data and optimizer.

For each configuration: the initial weights are the ONNX file's initializers, loaded into the
sample's PyTorch module; a dataset of STEPS distinct batches is written as one .npy per graph
input; plait-compile --train builds the step and plait-run trains it; PyTorch trains the same
module with the same optimizer and schedule. Per-step losses must agree within 1e-4 relative and
the final weights (plait's --save-weights safetensors) within rtol 1e-4 / atol 1e-5.

Run with /usr/bin/python3 (torch 1.13, onnx 1.12):
  train_parity.py --build BUILD [--config NAME] [--steps 30]
"""
import argparse
import importlib.util
import json
import math
import pathlib
import re
import struct
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from train_configs import CONFIGS, ScheduledEma, ema_average  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples"


def load_sample_module(name):
    spec = importlib.util.spec_from_file_location(name, SAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(SAMPLES))
    spec.loader.exec_module(module)
    return module


class SmoothedFunctional:
    """torch.nn.functional with cross_entropy's label_smoothing set: a sample module's F, so
    that its loss is CrossEntropyLoss(label_smoothing=e), which its ONNX export cannot carry
    (plait-compile --label-smoothing adds it)."""

    def __init__(self, e):
        self.e = e

    def __getattr__(self, name):
        return getattr(torch.nn.functional, name)

    def cross_entropy(self, *args, **kwargs):
        return torch.nn.functional.cross_entropy(*args, label_smoothing=self.e, **kwargs)


def build_torch_model(name, onnx_path, label_smoothing=0.0):
    module = load_sample_module(name)
    if label_smoothing:
        module.F = SmoothedFunctional(label_smoothing)
    model = {"mlp": "MLP", "cnn": "CNN", "gpt": "GPT"}[name]
    model = getattr(module, model)()
    weights = {i.name: torch.from_numpy(numpy_helper.to_array(i).copy())
               for i in onnx.load(str(onnx_path)).graph.initializer}
    model.load_state_dict(weights, strict=True)
    return model


def make_dataset(name, steps, directory, seed=123):
    """STEPS batches shaped like the sample's reference inputs, one .npy per graph input."""
    rng = np.random.default_rng(seed)
    ref = {p.stem: np.load(p) for p in (SAMPLES / name / "inputs").glob("*.npy")}
    data = {}
    if name in ("mlp", "cnn"):
        x, y = ref["x"], ref["y"]
        data["x"] = rng.standard_normal((steps * x.shape[0],) + x.shape[1:]).astype(np.float32)
        data["y"] = rng.integers(0, 10, size=(steps * y.shape[0],) + y.shape[1:]).astype(np.int64)
    else:
        idx = ref["idx"]
        b, t = idx.shape
        start = rng.integers(0, 64, size=(steps * b, 1))
        seq = (start + 3 * np.arange(t + 1)[None, :] + rng.integers(0, 2, size=(steps * b, t + 1))) % 64
        data["idx"] = seq[:, :-1].astype(np.int64)
        data["targets"] = seq[:, 1:].astype(np.int64)
    for k, v in data.items():
        np.save(directory / f"{k}.npy", v)
    batch = next(iter(ref.values())).shape[0]
    return data, batch


def schedule_factor(schedule, step):
    """Learning-rate multiplier of 1-based `step`, as the plan's schedule defines it."""
    kind, lr, warmup, total, min_lr = schedule
    scale = min(1.0, step / warmup) if warmup > 0 else 1.0
    if kind == "cosine" and step > warmup:
        p = min(1.0, max(0.0, (step - warmup) / (total - warmup)))
        return (min_lr + (lr - min_lr) * (1 + math.cos(math.pi * p)) / 2) / lr
    return scale


def train_torch(model, cfg, data, batch, steps, input_order, spans=None, states=None):
    """`steps` steps of `batch` samples each, in order; or, given `spans`, one step per
    (first sample, samples) in it. `states` (a dict), when given, receives the optimizer's
    final cfg["states"] of each param as PARAM.KEY."""
    spans = spans or [(s * batch, batch) for s in range(steps)]
    params = model.parameters()
    if cfg["no_decay"] or cfg["lr_scale"] or cfg["groups"]:
        # One param group per (factor, decayed, --param-group): the factor of the first
        # matching rule, the options of the first matching group.
        groups = {}
        for n, p in model.named_parameters():
            factor = next((f for r, f in cfg["lr_scale"] or [] if re.search(r, n)), 1.0)
            decayed = not (cfg["no_decay"] and re.search(cfg["no_decay"], n))
            group = next((i for i, (r, _) in enumerate(cfg["groups"] or []) if re.search(r, n)),
                         None)
            groups.setdefault((factor, decayed, group), []).append(p)
        params = [dict(params=ps, **({} if decayed else {"weight_decay": 0.0}),
                       **({} if group is None else cfg["groups"][group][1]))
                  for (factor, decayed, group), ps in groups.items()]
        factors = [factor for factor, decayed, group in groups]
    opt = cfg["optimizer"](params)
    if cfg["lr_scale"]:
        for group, factor in zip(opt.param_groups, factors):
            group["lr_factor"] = factor
            group["lr"] *= factor
    schedule = cfg["schedule"]
    scheduler = cfg["scheduler"](opt) if cfg["scheduler"] else None
    averaged = scheduled = None
    if isinstance(cfg["ema"], dict):
        scheduled = ScheduledEma(model.parameters(), **cfg["ema"])
    elif cfg["ema"]:
        averaged = torch.optim.swa_utils.AveragedModel(model, avg_fn=ema_average(*cfg["ema"]))
    losses, clamped, clipped, norms = [], 0, 0, []
    for s, (first, size) in enumerate(spans):
        if schedule:
            for group in opt.param_groups:
                group["lr"] = (schedule[1] * schedule_factor(schedule, s + 1)
                               * group.get("lr_factor", 1.0))
        args = [torch.from_numpy(data[n][first:first + size]) for n in input_order]
        loss, _ = model(*args)
        opt.zero_grad()
        loss.backward()
        if cfg["clip_value"]:
            grads = [p.grad for p in model.parameters() if p.grad is not None]
            clamped += sum(int((g.abs() > cfg["clip_value"]).sum()) for g in grads)
            torch.nn.utils.clip_grad_value_(model.parameters(), cfg["clip_value"])
        if cfg["clip"]:
            norm = torch.nn.utils.clip_grad_norm_(model.parameters(), cfg["clip"],
                                                  norm_type=cfg["clip_norm_type"])
            clipped += int(norm > cfg["clip"])
            norms.append(float(norm))
        opt.step()
        if averaged is not None:
            averaged.update_parameters(model)
        if scheduled is not None:
            scheduled.step()
        if getattr(scheduler, "reads_loss", False):
            scheduler.step(float(loss))
        elif scheduler:
            scheduler.step()
        losses.append(float(loss))
    if states is not None:
        for n, p in model.named_parameters():
            for key in cfg["states"] or []:
                if key in opt.state[p]:  # Adafactor: a row and a column, or a whole state
                    states[f"{n}.{key}"] = opt.state[p][key].detach().numpy()
    if averaged is not None:  # the averaged params, under the model's names
        states["ema"] = {n: p.detach().numpy() for n, p in averaged.module.named_parameters()}
    if scheduled is not None:
        states["ema"] = {n: s.numpy() for (n, _), s in zip(model.named_parameters(),
                                                            scheduled.shadow)}
    if getattr(scheduler, "reads_loss", False):  # the lr of each step, as it followed the loss
        states["lr"] = scheduler.lrs
    if states is not None:  # callers that compare no states pass none
        if cfg["clip_value"]:
            states["clamped"] = clamped
        if cfg["clip_norm_type"] != 2.0:
            states["clipped"] = clipped
        if cfg["clip"]:
            states["grad_norms"] = norms
    return losses, {k: v.detach().numpy() for k, v in model.state_dict().items()}


def read_safetensors(path):
    raw = pathlib.Path(path).read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    body = raw[8 + n:]
    dtypes = {"F32": np.float32, "F64": np.float64, "I64": np.int64, "I32": np.int32}
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        b, e = info["data_offsets"]
        out[name] = np.frombuffer(body[b:e], dtype=dtypes[info["dtype"]]).reshape(info["shape"])
    return out


def run_config(name, build, steps):
    cfg = CONFIGS[name]
    sample, flags = cfg["sample"], cfg["flags"]
    onnx_path = SAMPLES / sample / f"{sample}.onnx"
    bindir = pathlib.Path(build) / "bin"
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        (tmp / "data").mkdir()
        data, batch = make_dataset(sample, steps, tmp / "data")
        plan = tmp / "model.plan"
        subprocess.run([bindir / "plait-compile", onnx_path, "-o", plan, "--train", *flags],
                       check=True)
        checkpoint = ["--checkpoint-dir", tmp / "ckpt"] if cfg["states"] else []
        ema = ["--save-ema-weights", tmp / "ema.safetensors"] if cfg["ema"] else []
        subprocess.run([bindir / "plait-run", plan, "--data", tmp / "data", "--steps", str(steps),
                        "--log-jsonl", tmp / "log.jsonl", "--save-weights",
                        tmp / "weights.safetensors", *checkpoint, *ema], check=True,
                       stdout=subprocess.DEVNULL)
        plait_ema = read_safetensors(tmp / "ema.safetensors") if cfg["ema"] else None
        plait_states = {}
        if cfg["states"]:
            subprocess.run([bindir / "plait-ckpt", "export", tmp / "ckpt", "-o",
                            tmp / "states.safetensors", "--optimizer"], check=True,
                           stdout=subprocess.DEVNULL)
            plait_states = read_safetensors(tmp / "states.safetensors")
        log = [json.loads(line) for line in (tmp / "log.jsonl").read_text().splitlines()]
        plait_losses = [record["loss"] for record in log]
        plait_lrs = [record["lr"] for record in log]
        plait_norms = [record.get("grad_norm") for record in log]
        plait_weights = read_safetensors(tmp / "weights.safetensors")

    input_order = [i.name for i in onnx.load(str(onnx_path)).graph.input]
    model = build_torch_model(sample, onnx_path, cfg["label_smoothing"])
    reads_loss = getattr(cfg["scheduler"], "reads_loss", False)
    torch_states = ({} if cfg["states"] or cfg["ema"] or reads_loss or cfg["clip_value"]
                    or cfg["clip"] else None)
    torch_losses, torch_weights = train_torch(model, cfg, data, batch, steps, input_order,
                                              states=torch_states)
    ok = compare_training(name, plait_losses, plait_weights, torch_losses, torch_weights,
                          cfg["noise_only"])
    if reads_loss:
        ok &= compare_lrs(name, plait_lrs, torch_states.pop("lr"))
    if cfg["clip"]:
        # plait-run logs the norm clip_grad_norm_ returns (before clipping) as grad_norm.
        torch_norms = torch_states.pop("grad_norms")
        worst = max((abs(a - b) / max(abs(b), 1e-12) if a is not None else float("inf")
                     for a, b in zip(plait_norms, torch_norms)), default=float("inf"))
        print(f"{name}: grad_norm {plait_norms[0]:.6g} -> {plait_norms[-1]:.6g}, max rel diff "
              f"from torch's clip_grad_norm_ {worst:.1e}")
        if len(plait_norms) != len(torch_norms) or not worst <= 1e-4:
            print(f"{name}: grad_norm {plait_norms} differs from torch's {torch_norms}")
            ok = False
    if cfg["clip_norm_type"] != 2.0:
        clipped = torch_states.pop("clipped")
        print(f"{name}: {clipped} of {steps} steps clipped to {cfg['clip_norm_type']:g}-norm "
              f"{cfg['clip']:g}")
        if clipped == 0:
            print(f"{name}: no step's norm exceeded the clip: the config checks nothing")
            ok = False
    if cfg["clip_value"]:
        clamped = torch_states.pop("clamped")
        print(f"{name}: {clamped} gradient elements clamped to +-{cfg['clip_value']:g} over "
              f"{steps} steps")
        if clamped == 0:
            print(f"{name}: no gradient element reached the clip value: the config checks nothing")
            ok = False
    if cfg["ema"]:
        ok &= compare_averages(name, plait_ema, torch_states.pop("ema"), plait_weights,
                               cfg["noise_only"])
    if cfg["states"]:
        ok &= compare_states(name, plait_states, torch_states)
    return ok


def outside(noise_only, key, value):
    """`value`'s elements outside the `noise_only` slices of `key` (all when it has none)."""
    if key not in noise_only:
        return value
    keep = np.ones(value.shape, dtype=bool)
    keep[noise_only[key]] = False
    return value[keep]


def compare_averages(label, plait_ema, torch_ema, plait_weights, noise_only):
    """plait's EMA weights (--save-ema-weights) within rtol 1e-4 / atol 1e-5 of the
    AveragedModel's params (outside `noise_only`), and apart from the trained weights (an EMA
    that were the params themselves would pass the parity check too)."""
    def masked(values):
        return {k: outside(noise_only, k, v) for k, v in values.items()}
    plait_ema, torch_ema = masked(plait_ema), masked(torch_ema)
    ok = compare_states(label, plait_ema, torch_ema, "EMA weights")
    apart = max((float(np.max(np.abs(v - outside(noise_only, k, plait_weights[k]))))
                 for k, v in plait_ema.items() if k in plait_weights), default=0.0)
    if apart < 1e-3:
        print(f"{label}: the EMA weights are within {apart:.1e} of the trained ones: MISMATCH")
        ok = False
    return ok


def compare_states(label, plait_states, torch_states, what="optimizer states"):
    """Final optimizer states (PARAM.KEY) within rtol 1e-4 / atol 1e-5 of torch's; prints the
    largest difference."""
    ok, worst = True, 0.0
    for k, want in torch_states.items():
        got = plait_states.get(k)
        if got is None or got.shape != want.shape:
            print(f"{label}: {k} missing or misshapen in plait's {what}")
            ok = False
            continue
        worst = max(worst, float(np.max(np.abs(got - want))))
        if not np.allclose(got, want, rtol=1e-4, atol=1e-5):
            print(f"{label}: {k}: max |plait - pytorch| = {np.max(np.abs(got - want)):.2e}")
            ok = False
    print(f"{label}: {len(torch_states)} {what}, max abs diff {worst:.1e}: "
          f"{'ok' if ok else 'MISMATCH'}")
    return ok


def compare_lrs(label, plait_lrs, torch_lrs):
    """Each step's lr of a schedule that reads the loss: the same doubles as torch's
    scheduler's, and reduced at least once (else the test would check nothing)."""
    ok = plait_lrs == torch_lrs
    for s, (a, b) in enumerate(zip(plait_lrs, torch_lrs)):
        if a != b:
            print(f"{label}: step {s + 1}: plait's lr {a!r}, torch's {b!r}")
            break
    reductions = sum(1 for a, b in zip(torch_lrs, torch_lrs[1:]) if b != a)
    if reductions == 0:
        print(f"{label}: torch's scheduler never changed the lr: the config checks nothing")
        ok = False
    print(f"{label}: lr {torch_lrs[0]:g} -> {torch_lrs[-1]:g} ({reductions} reductions), "
          f"{'the same each step' if plait_lrs == torch_lrs else 'MISMATCH'}")
    return ok


def compare_training(label, plait_losses, plait_weights, torch_losses, torch_weights,
                     noise_only=None, loss_rtol=1e-4, rtol=1e-4, atol=1e-5):
    """Per-step losses within `loss_rtol` relative (1e-4), final weights within `rtol` /
    `atol` (1e-4 / 1e-5; outside the `noise_only` slices); prints each mismatch and a
    summary line."""
    ok = len(plait_losses) == len(torch_losses)
    worst_loss = 0.0
    for s, (a, b) in enumerate(zip(plait_losses, torch_losses)):
        if a is None:  # not a finite number in plait's log
            print(f"{label}: step {s + 1}: plait loss is not finite (pytorch {b:.7g})")
            ok = False
            continue
        rel = abs(a - b) / max(abs(b), 1e-12)
        worst_loss = max(worst_loss, rel)
        if rel > loss_rtol:
            print(f"{label}: step {s + 1}: plait loss {a:.17g} vs pytorch {b:.17g} "
                  f"(rel {rel:.2e})")
            ok = False
    worst_weight = 0.0
    for k, want in torch_weights.items():
        got = plait_weights.get(k)
        if got is None or got.shape != want.shape:
            print(f"{label}: weight {k} missing or misshapen in plait's safetensors")
            ok = False
            continue
        if noise_only:
            got, want = outside(noise_only, k, got), outside(noise_only, k, want)
            if got.size == 0:  # all noise (WHOLE_KEY_BIAS)
                continue
        worst_weight = max(worst_weight, float(np.max(np.abs(got - want))))
        if not np.allclose(got, want, rtol=rtol, atol=atol):
            print(f"{label}: weight {k}: max |plait - pytorch| = {np.max(np.abs(got - want)):.2e}")
            ok = False
    print(f"{label}: {len(torch_losses)} steps, loss {torch_losses[0]:.4f} -> "
          f"{torch_losses[-1]:.4f}, max rel loss diff {worst_loss:.1e}, max abs weight diff "
          f"{worst_weight:.1e}: {'ok' if ok else 'MISMATCH'}")
    return ok


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", required=True)
    parser.add_argument("--config", action="append", choices=sorted(CONFIGS))
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    results = [run_config(c, args.build, args.steps) for c in (args.config or sorted(CONFIGS))]
    passed = sum(results)
    print(f"{passed} passed, {len(results) - passed} failed")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
