#!/usr/bin/env python3
"""ONNX Loop and Scan, unrolled at import, and sequences, in training against PyTorch.

Four models, each trained 20 steps with Adam by plait (1 and 2 threads) and by PyTorch from
the same weights on the same batches:
- loop: an Elman recurrence written as a Python for loop over the sequence in a
  torch.jit.script module (h = tanh(cell([x_t, h])), summed over the steps, then a linear
  head), which torch.onnx.export writes as a Loop whose body reads the weights from the
  enclosing graph; exported at opset 13.
- loop11: the same module exported at opset 11, whose Loop body holds nodes that changed by
  opset 13 (Unsqueeze and Squeeze, their axes attributes): plait's lift rewrites the nodes
  inside the body.
- list: the recurrence collecting its states in a Python list, stacked, split and indexed:
  ONNX sequences (SequenceEmpty, SequenceInsert in the Loop's body, ConcatFromSequence,
  SplitToSequence, SequenceAt), which plait keeps as lists of tensors at import.
- scan: a backward Elman recurrence as an ONNX Scan written with onnx.helper: the sequence read
  along axis 1 in reverse (scan_input_axes, scan_input_directions), the hidden states stacked
  along axis 1 in reverse again so that they line up with the inputs (scan_output_axes,
  scan_output_directions), a learned initial state (a float initializer: a param), and the
  loss over every step's output. PyTorch runs the same recurrence as a loop.
Per-step losses must agree within 1e-4 relative, the final weights within rtol 1e-4 / atol
1e-5 (train_parity.compare_training).

Run with /usr/bin/python3 (torch 1.13, onnx 1.12):
  loop_parity.py --build BUILD [--write-model PATH]
"""
import pathlib
import sys
import tempfile
from typing import List

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper
from torch import nn

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from dropout_parity import (parity_setup, threads_match_torch,  # noqa: E402
                            torch_steps, write_data)

BATCH, STEPS, LR = 4, 20, 0.01
SEQ, FEATURES, HIDDEN, OUT = 6, 5, 8, 3


class Recurrence(nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = nn.Linear(FEATURES + HIDDEN, HIDDEN)
        self.head = nn.Linear(HIDDEN, OUT)

    def forward(self, x, y):
        h = torch.zeros(x.size(0), self.head.in_features)
        total = torch.zeros(x.size(0), self.head.in_features)
        for t in range(x.size(1)):
            # A slice and squeeze: at opset 11 the body's Unsqueeze and Squeeze take axes
            # as attributes, which the lift turns into inputs inside the body.
            h = torch.tanh(self.cell(torch.cat([x[:, t:t + 1].squeeze(1), h], 1)))
            total = total + h
        d = self.head(total) - y
        return (d * d).mean()


class ListRecurrence(Recurrence):
    """The recurrence (Recurrence's layers) collecting its states in a Python list
    (SequenceEmpty, SequenceInsert in the Loop's body), stacked (ConcatFromSequence), split
    again (SplitToSequence) and a piece taken (SequenceAt)."""

    def forward(self, x, y):
        h = torch.zeros(x.size(0), self.head.in_features)
        states: List[torch.Tensor] = []
        for t in range(x.size(1)):
            h = torch.tanh(self.cell(torch.cat([x[:, t], h], 1)))
            states.append(h)
        hs = torch.stack(states, 1)
        first = torch.split(hs, 2, dim=1)[0]
        d = self.head(hs).mean(1) - y
        return (d * d).mean() + 0.1 * (first * first).mean()


class BackwardScan(nn.Module):
    def __init__(self):
        super().__init__()
        self.wx = nn.Parameter(torch.randn(FEATURES, HIDDEN) * 0.4)
        self.wh = nn.Parameter(torch.randn(HIDDEN, HIDDEN) * 0.3)
        self.b = nn.Parameter(torch.randn(HIDDEN) * 0.1)
        self.h0 = nn.Parameter(torch.randn(1, HIDDEN) * 0.5)
        self.head = nn.Parameter(torch.randn(HIDDEN, OUT) * 0.4)

    def forward(self, x, y):
        h = self.h0.expand(x.size(0), HIDDEN)
        outs = [None] * x.size(1)
        for t in reversed(range(x.size(1))):
            h = torch.tanh(x[:, t] @ self.wx + h @ self.wh + self.b)
            outs[t] = h
        d = torch.stack(outs, 1) @ self.head - y
        return (d * d).mean()


def export_loop(model, data, path, opset):
    torch.onnx.export(torch.jit.script(model),
                      (torch.from_numpy(data["x"][:BATCH]), torch.from_numpy(data["y"][:BATCH])),
                      str(path), input_names=["x", "y"], output_names=["loss"],
                      opset_version=opset, training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False)
    graph = onnx.load(str(path)).graph
    loops = [n for n in graph.node if n.op_type == "Loop"]
    assert len(loops) == 1, "the export holds no Loop: it unrolled the recurrence itself"
    ops = {n.op_type for n in graph.node} | {n.op_type for n in loops[0].attribute[0].g.node}
    if isinstance(model, ListRecurrence):
        wanted = {"SequenceEmpty", "SequenceInsert", "ConcatFromSequence", "SplitToSequence",
                  "SequenceAt"}
        assert wanted <= ops, f"the export lacks {wanted - ops}"


def scan_onnx(model, path):
    """The BackwardScan module as an ONNX Scan (opset 13), its params as initializers."""
    n = helper.make_node
    body = helper.make_graph(
        [n("MatMul", ["x_t", "wx"], ["xw"]), n("MatMul", ["h_in", "wh"], ["hw"]),
         n("Add", ["xw", "hw"], ["s"]), n("Add", ["s", "b"], ["sb"]),
         n("Tanh", ["sb"], ["h_out"]), n("Identity", ["h_out"], ["h_scan"])],
        "step",
        [helper.make_tensor_value_info("h_in", TensorProto.FLOAT, [BATCH, HIDDEN]),
         helper.make_tensor_value_info("x_t", TensorProto.FLOAT, [BATCH, FEATURES])],
        [helper.make_tensor_value_info("h_out", TensorProto.FLOAT, [BATCH, HIDDEN]),
         helper.make_tensor_value_info("h_scan", TensorProto.FLOAT, [BATCH, HIDDEN])])
    nodes = [n("Expand", ["h0", "state_shape"], ["h_first"]),
             n("Scan", ["h_first", "x"], ["h_last", "hs"], body=body, num_scan_inputs=1,
               scan_input_axes=[1], scan_input_directions=[1], scan_output_axes=[1],
               scan_output_directions=[1]),
             n("MatMul", ["hs", "head"], ["o"]), n("Sub", ["o", "y"], ["d"]),
             n("Mul", ["d", "d"], ["dd"]), n("ReduceMean", ["dd"], ["loss"], keepdims=0)]
    inits = [numpy_helper.from_array(v.detach().numpy(), k)
             for k, v in model.state_dict().items()]
    inits.append(numpy_helper.from_array(np.array([BATCH, HIDDEN], np.int64), "state_shape"))
    graph = helper.make_graph(
        nodes, "scan",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [BATCH, SEQ, FEATURES]),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, [BATCH, SEQ, OUT])],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])], initializer=inits)
    onnx_model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(onnx_model)
    onnx.save(onnx_model, str(path))


def main():
    args, bindir, loop_data = parity_setup(__doc__, 17, STEPS * BATCH, (SEQ, FEATURES), (OUT,))
    scan_data = {"x": loop_data["x"],
                 "y": np.random.default_rng(18).standard_normal(
                     (STEPS * BATCH, SEQ, OUT)).astype(np.float32)}
    if args.write_model:
        torch.manual_seed(0)
        export_loop(Recurrence(), loop_data, args.write_model, 13)
        return 0
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        for name, data in (("loop", loop_data), ("scan", scan_data)):
            write_data(tmp / f"{name}_data", data)
        cases = (("loop", Recurrence, "loop", 13), ("loop11", Recurrence, "loop", 11),
                 ("list", ListRecurrence, "loop", 13), ("scan", BackwardScan, "scan", 13))
        for name, cls, data_name, opset in cases:
            data = loop_data if data_name == "loop" else scan_data
            torch.manual_seed(0)
            model = cls()
            initial = {k: v.clone() for k, v in model.state_dict().items()}
            path = tmp / f"{name}.onnx"
            if name == "scan":
                scan_onnx(model, path)
            else:
                export_loop(model, data, path, opset)
            model.load_state_dict(initial)
            opt = torch.optim.Adam(model.parameters(), lr=LR)
            torch_losses, torch_weights = torch_steps(model, opt, data, BATCH, STEPS)
            ok &= threads_match_torch(name, bindir, path, tmp, tmp / f"{data_name}_data", STEPS,
                                      ["--optimizer", "adam", "--lr", str(LR)], torch_losses,
                                      torch_weights)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
