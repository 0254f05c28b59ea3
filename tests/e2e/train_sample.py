#!/usr/bin/python3
"""End-to-end training parity for one sample: plait's losses and final weights vs PyTorch's.

  /usr/bin/python3 tests/e2e/train_sample.py --build BUILD --model gpt --optimizer adamw

Reads samples/<model>/train/: data/<input>.npy (the batches), config.json (steps and optimizer
hyper-parameters) and <optimizer>.npz (PyTorch's loss per step and weights after the last step,
from the same initial weights as the exported model). Compiles with --train and the same
hyper-parameters, runs plait-run --data --steps --log-jsonl --save-weights, and compares.
Exit 0 when losses and weights match, 1 otherwise.

Losses must match within rtol 1e-4 / atol 1e-5 for every optimizer. Weights after SGD (linear in
the gradients) must match element by element. After AdamW they are compared by the relative
norm of the difference of the updates, ||dW_plait - dW_torch|| / ||dW_torch|| <= 1e-3, per
parameter: AdamW divides each gradient by its own magnitude, so an element whose gradient is
near eps (1e-8) — a sum of 1e-3 terms that cancel — has an update decided by float rounding,
in plait as in PyTorch versus float64. SGD's elementwise check is what pins the gradients.
"""
import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SAFETENSORS_DTYPES = {"F32": np.float32, "F64": np.float64, "F16": np.float16, "I64": np.int64,
                      "I32": np.int32}


def compile_flags(cfg):
    flags = ["--train", "--optimizer", cfg["optimizer"], "--lr", repr(cfg["lr"])]
    if "momentum" in cfg:
        flags += ["--momentum", repr(cfg["momentum"])]
    return flags


def read_safetensors(path):
    with open(path, "rb") as f:
        blob = f.read()
    (header_len,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + header_len])
    data = blob[8 + header_len:]
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        tensors[name] = np.frombuffer(data[begin:end], dtype=SAFETENSORS_DTYPES[info["dtype"]]
                                      ).reshape(info["shape"])
    return tensors


def run(cmd, timeout):
    print("+ " + " ".join(cmd), flush=True)
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
    except subprocess.TimeoutExpired:
        sys.exit("FAIL: %s timed out after %d s" % (os.path.basename(cmd[0]), timeout))
    text = p.stdout.decode("utf-8", "replace").rstrip()
    if text:
        print(text)
    if p.returncode != 0:
        sys.exit("FAIL: %s exit %d" % (os.path.basename(cmd[0]), p.returncode))


def errors(got, want):
    g, w = got.astype(np.float64), want.astype(np.float64)
    abs_err = np.abs(g - w)
    rel_err = abs_err / np.maximum(np.abs(w), np.finfo(np.float64).tiny)
    return float(abs_err.max(initial=0.0)), float(rel_err.max(initial=0.0))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--optimizer", required=True, help="a key of train/config.json")
    parser.add_argument("--samples", default=os.path.join(REPO, "samples"))
    parser.add_argument("--loss-rtol", type=float, default=1e-4)
    parser.add_argument("--loss-atol", type=float, default=1e-5)
    parser.add_argument("--weight-rtol", type=float, default=1e-4)
    parser.add_argument("--weight-atol", type=float, default=1e-5)
    parser.add_argument("--update-rtol", type=float, default=1e-3,
                        help="AdamW: bound on ||dW_plait - dW_torch|| / ||dW_torch||")
    parser.add_argument("--timeout", type=int, default=100)
    args = parser.parse_args()

    sample_dir = os.path.join(args.samples, args.model)
    train_dir = os.path.join(sample_dir, "train")
    with open(os.path.join(train_dir, "config.json")) as f:
        config = json.load(f)
    cfg = config["optimizers"][args.optimizer]
    reference = np.load(os.path.join(train_dir, args.optimizer + ".npz"))
    bindir = os.path.join(args.build, "bin")

    with tempfile.TemporaryDirectory(prefix="plait-e2e-train-") as work:
        plan = os.path.join(work, "train.plan")
        log = os.path.join(work, "log.jsonl")
        weights = os.path.join(work, "weights.safetensors")
        run([os.path.join(bindir, "plait-compile"),
             os.path.join(sample_dir, args.model + ".onnx"), "-o", plan] + compile_flags(cfg),
            args.timeout)
        run([os.path.join(bindir, "plait-run"), plan, "--data", os.path.join(train_dir, "data"),
             "--steps", str(config["steps"]), "--log-jsonl", log, "--save-weights", weights],
            args.timeout)
        with open(log) as f:
            records = [json.loads(line) for line in f if line.strip()]
        got_params = read_safetensors(weights)

    failures = []
    got_loss = np.array([r["loss"] for r in records], dtype=np.float64)
    want_loss = reference["loss"]
    if got_loss.shape != want_loss.shape:
        failures.append("logged %d steps, expected %d" % (got_loss.size, want_loss.size))
    else:
        ok = np.allclose(got_loss, want_loss, rtol=args.loss_rtol, atol=args.loss_atol)
        print("  losses plait  %s" % " ".join("%.6f" % l for l in got_loss))
        print("  losses torch  %s" % " ".join("%.6f" % l for l in want_loss))
        print("  loss max abs err %.3e  max rel err %.3e  %s" % (
            *errors(got_loss, want_loss), "ok" if ok else "MISMATCH"))
        if not ok:
            failures.append("losses differ")

    want_params = {k[len("param."):]: reference[k] for k in reference.files
                   if k.startswith("param.")}
    initial = {i.name: numpy_helper.to_array(i) for i in
               onnx.load(os.path.join(sample_dir, args.model + ".onnx")).graph.initializer}
    if sorted(got_params) != sorted(want_params):
        failures.append("weights %s, expected %s" % (sorted(got_params), sorted(want_params)))
    else:
        for name in sorted(want_params):
            got, want = got_params[name], want_params[name]
            if got.shape != want.shape:
                failures.append("%s: shape %s, expected %s" % (name, got.shape, want.shape))
                continue
            abs_err, rel_err = errors(got, want)
            if cfg["optimizer"] == "sgd":
                ok = np.allclose(got, want, rtol=args.weight_rtol, atol=args.weight_atol)
                extra = ""
            else:
                step_want = want.astype(np.float64) - initial[name]
                step_got = got.astype(np.float64) - initial[name]
                update_err = np.linalg.norm(step_got - step_want) / max(
                    np.linalg.norm(step_want), np.finfo(np.float64).tiny)
                ok = update_err <= args.update_rtol
                extra = "  update rel err %.3e" % update_err
            print("  %-28s max abs err %.3e  max rel err %.3e%s  %s" % (
                name, abs_err, rel_err, extra, "ok" if ok else "MISMATCH"))
            if not ok:
                failures.append("%s: max abs err %.3e%s" % (name, abs_err, extra))

    for f in failures:
        print("FAIL %s/%s: %s" % (args.model, args.optimizer, f))
    if not failures:
        print("PASS %s/%s (%d steps)" % (args.model, args.optimizer, config["steps"]))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
