#!/usr/bin/env python3
"""LSTM, GRU and RNN with sequence_lens, trained in plait against PyTorch's packed sequences.

torch.onnx.export writes no sequence_lens for nn.LSTM/GRU/RNN (a packed sequence does not
export), so the ONNX model is built here by hand: one bidirectional LSTM (with peepholes set
to zero and frozen, as PyTorch has none), a bidirectional GRU with linear_before_reset=1 (PyTorch's
GRU) and a bidirectional tanh RNN, each reading the same batch-first input (layout=1, so plait's
data loader batches it) and a per-row length given as int32 data. Their weights are PyTorch's, with the gate blocks reordered to ONNX's
(LSTM i f g o -> i o f c, GRU r z n -> z r h). The loss is the mean square of each Y against a
target (Y is zero past a row's length in both), plus the mean squares of Y_h and Y_c, which
must be each row's last valid state: forward at length - 1, backward at 0 after starting at
length - 1. PyTorch computes the same on pack_padded_sequence / pad_packed_sequence.

plait-compile --train, plait-run for 20 SGD steps on 1 thread and on 2; the per-step losses
must agree within 1e-4 relative and the final weights (reordered back) within rtol 1e-4 /
atol 1e-5. Before training, plait's forward outputs (plait-compile without --train) are
compared with PyTorch's at the initial weights within 1e-5.

Run with /usr/bin/python3 (torch 1.13, onnx 1.12):
  recurrent_lengths_parity.py --build BUILD [--steps 20] [--write-model PATH]
"""
import argparse
import json
import pathlib
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from train_parity import compare_training, read_safetensors  # noqa: E402

T, BATCH, INPUT = 6, 4, 3
LR, MOMENTUM = 0.05, 0.9
# name -> (PyTorch layer, ONNX op, hidden size, ONNX gate block i takes PyTorch's block ORDER[i])
LAYERS = {
    "lstm": (lambda: nn.LSTM(INPUT, 5, bidirectional=True), "LSTM", 5, [0, 3, 1, 2]),
    "gru": (lambda: nn.GRU(INPUT, 4, bidirectional=True), "GRU", 4, [1, 0, 2]),
    "rnn": (lambda: nn.RNN(INPUT, 3, bidirectional=True), "RNN", 3, [0]),
}


def reorder(w, hidden, order):
    """PyTorch's gate blocks (rows) into ONNX's order."""
    return np.concatenate([w[k * hidden:(k + 1) * hidden] for k in order])


def onnx_weights(layer, hidden, order):
    """W [2, G*H, I], R [2, G*H, H], B [2, 2*G*H] from a bidirectional PyTorch layer."""
    p = {k: v.detach().numpy() for k, v in layer.named_parameters()}
    w, r, b = [], [], []
    for suffix in ("_l0", "_l0_reverse"):
        w.append(reorder(p["weight_ih" + suffix], hidden, order))
        r.append(reorder(p["weight_hh" + suffix], hidden, order))
        b.append(np.concatenate([reorder(p["bias_ih" + suffix], hidden, order),
                                 reorder(p["bias_hh" + suffix], hidden, order)]))
    return np.stack(w), np.stack(r), np.stack(b)


def build_model(layers, path):
    nodes, inits, terms = [], [], []
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [BATCH, T, INPUT]),
              helper.make_tensor_value_info("lens", TensorProto.INT32, [BATCH])]
    for name, (layer, op, hidden, order) in layers.items():
        w, r, b = onnx_weights(layer, hidden, order)
        inits += [numpy_helper.from_array(w, f"{name}_W"), numpy_helper.from_array(r, f"{name}_R"),
                  numpy_helper.from_array(b, f"{name}_B")]
        ins = ["x", f"{name}_W", f"{name}_R", f"{name}_B", "lens"]
        outs = [f"{name}_Y", f"{name}_Yh"] + ([f"{name}_Yc"] if op == "LSTM" else [])
        attrs = {"hidden_size": hidden, "direction": "bidirectional", "layout": 1}
        if op == "LSTM":
            ins += ["", "", f"{name}_P"]
            inits.append(numpy_helper.from_array(np.zeros((2, 3 * hidden), np.float32),
                                                 f"{name}_P"))
        if op == "GRU":
            attrs["linear_before_reset"] = 1
        nodes.append(helper.make_node(op, ins, outs, name=name, **attrs))
        inputs.append(helper.make_tensor_value_info(f"{name}_t", TensorProto.FLOAT,
                                                    [BATCH, T, 2, hidden]))
        for out in outs:
            target = f"{name}_t" if out.endswith("_Y") else None
            d = out
            if target:
                nodes.append(helper.make_node("Sub", [out, target], [out + "_d"]))
                d = out + "_d"
            nodes.append(helper.make_node("Mul", [d, d], [out + "_sq"]))
            nodes.append(helper.make_node("ReduceMean", [out + "_sq"], [out + "_m"], keepdims=0))
            terms.append(out + "_m")
    nodes.append(helper.make_node("Sum", terms, ["loss"]))
    outputs = [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])]
    graph = helper.make_graph(nodes, "recurrent_lengths", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    onnx.checker.check_model(model)
    onnx.save(model, path)


def torch_outputs(layers, x, lens):
    """Each layer's [Y, Y_h(, Y_c)] in ONNX's batch-first layout, from packed sequences."""
    out = {}
    for name, (layer, op, hidden, _) in layers.items():
        packed = pack_padded_sequence(x, lens, batch_first=True, enforce_sorted=False)
        y, state = layer(packed)
        y, _ = pad_packed_sequence(y, batch_first=True, total_length=T)  # zeros past lens
        y = y.reshape(BATCH, T, 2, hidden)                               # [B, T, 2, H]
        states = list(state) if op == "LSTM" else [state]
        out[name] = [y] + [v.transpose(0, 1) for v in states]            # [B, 2, H]
    return out


def torch_loss(layers, x, lens, targets):
    loss = 0
    for name, values in torch_outputs(layers, x, lens).items():
        for k, v in enumerate(values):
            d = v - targets[name] if k == 0 else v
            loss = loss + (d * d).mean()
    return loss


def train_torch(layers, data, steps):
    params = [p for layer, _, _, _ in layers.values() for p in layer.parameters()]
    opt = torch.optim.SGD(params, lr=LR, momentum=MOMENTUM)
    losses = []
    for s in range(steps):
        batch = {k: torch.from_numpy(v[s * BATCH:(s + 1) * BATCH]) for k, v in data.items()}
        targets = {name: batch[f"{name}_t"] for name in layers}
        loss = torch_loss(layers, batch["x"], batch["lens"].long(), targets)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    weights = {}
    for name, (layer, _, hidden, order) in layers.items():
        w, r, b = onnx_weights(layer, hidden, order)
        weights.update({f"{name}_W": w, f"{name}_R": r, f"{name}_B": b})
    return losses, weights


def check_forward(layers, data, bindir, model, tmp):
    """plait's Y, Y_h and Y_c of the first batch at the initial weights against PyTorch's."""
    fwd = onnx.load(model)
    fwd.graph.ClearField("output")
    for name, (_, op, hidden, _) in layers.items():
        for out, shape in [("_Y", [BATCH, T, 2, hidden]), ("_Yh", [BATCH, 2, hidden])] + (
                [("_Yc", [BATCH, 2, hidden])] if op == "LSTM" else []):
            fwd.graph.output.append(helper.make_tensor_value_info(name + out, TensorProto.FLOAT,
                                                                  shape))
    fwd_path, plan, outdir = tmp / "forward.onnx", tmp / "forward.plan", tmp / "out"
    onnx.save(fwd, fwd_path)
    inputs = []
    for k, v in data.items():
        np.save(tmp / f"first_{k}.npy", v[:BATCH])
        inputs += ["--input", f"{k}={tmp / f'first_{k}.npy'}"]
    subprocess.run([bindir / "plait-compile", fwd_path, "-o", plan], check=True)
    subprocess.run([bindir / "plait-run", plan, "--output-dir", outdir] + inputs, check=True,
                   stdout=subprocess.DEVNULL)
    with torch.no_grad():
        want = torch_outputs(layers, torch.from_numpy(data["x"][:BATCH]),
                             torch.from_numpy(data["lens"][:BATCH]).long())
    ok = True
    for name, values in want.items():
        for suffix, v in zip(("_Y", "_Yh", "_Yc"), values):
            err = float(np.max(np.abs(np.load(outdir / f"{name}{suffix}.npy") - v.numpy())))
            if err > 1e-5:
                print(f"forward {name}{suffix}: max |plait - pytorch| = {err:.2e}")
                ok = False
    print(f"forward outputs at lengths {data['lens'][:BATCH].tolist()}: "
          f"{'ok' if ok else 'MISMATCH'}")
    return ok


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", required=True)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--write-model", metavar="PATH",
                        help="only write the ONNX model (for the CUDA plan checks) and exit")
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    bindir = pathlib.Path(args.build) / "bin"
    layers = {k: (make(), op, h, order) for k, (make, op, h, order) in LAYERS.items()}
    if args.write_model:
        build_model(layers, args.write_model)
        return 0
    rng = np.random.default_rng(3)
    n = args.steps * BATCH
    data = {"x": rng.standard_normal((n, T, INPUT)).astype(np.float32),
            # lengths 1..T, every batch with a full row and a row of one step
            "lens": np.concatenate([rng.permutation([T, 1] + list(rng.integers(1, T + 1, 2)))
                                    for _ in range(args.steps)]).astype(np.int32)}
    for name, (_, _, hidden, _) in layers.items():
        data[f"{name}_t"] = rng.standard_normal((n, T, 2, hidden)).astype(np.float32) * 0.5
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        model = tmp / "recurrent.onnx"
        build_model(layers, model)
        ok = check_forward(layers, data, bindir, model, tmp)
        (tmp / "data").mkdir()
        for k, v in data.items():
            np.save(tmp / "data" / f"{k}.npy", v)
        plan = tmp / "train.plan"
        subprocess.run([bindir / "plait-compile", model, "-o", plan, "--train", "--optimizer",
                        "sgd", "--lr", str(LR), "--momentum", str(MOMENTUM), "--freeze", "lstm_P"],
                       check=True)
        runs = {}
        for threads in (1, 2):
            log, weights = tmp / f"log{threads}.jsonl", tmp / f"w{threads}.safetensors"
            subprocess.run([bindir / "plait-run", plan, "--data", tmp / "data", "--steps",
                            str(args.steps), "--threads", str(threads), "--log-jsonl", log,
                            "--save-weights", weights], check=True, stdout=subprocess.DEVNULL)
            runs[threads] = ([json.loads(line)["loss"] for line in log.read_text().splitlines()],
                             read_safetensors(weights))
    torch_losses, torch_weights = train_torch(layers, data, args.steps)
    for threads, (losses, weights) in runs.items():
        label = f"recurrent with lengths ({threads} thread{'s' if threads > 1 else ''})"
        ok &= compare_training(label, losses, weights, torch_losses, torch_weights)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
