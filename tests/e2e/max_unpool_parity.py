#!/usr/bin/env python3
"""MaxPool's Indices output and MaxUnpool in training, against PyTorch.

Two models, each trained 20 steps with SGD and momentum by plait (1 and 2 threads) and by
PyTorch from the same weights on the same batches:
- unpool: a SegNet-style encoder and decoder: Conv2d, ReLU, max_pool2d with indices, Conv2d,
  ReLU, max_unpool2d at those indices, Conv2d, mean squared error. torch 1.13 cannot export
  max_unpool2d, so its ONNX graph is written here with onnx.helper (MaxPool with its Indices
  output, MaxUnpool with output_shape; PyTorch's weights as initializers named as its
  state_dict) and PyTorch runs the module itself.
- scatter: max_pool2d's indices as torch.onnx.export writes them (ONNX's flat indices turned
  into PyTorch's per-plane ones by subtracting a second MaxPool's), used to scatter the pooled
  values back into zeros (ScatterElements): the unpooling again, this time from the export.
Per-step losses must agree within 1e-4 relative, the final weights within rtol 1e-4 / atol
1e-5 (train_parity.compare_training).

Run with /usr/bin/python3 (torch 1.13, onnx 1.12):
  max_unpool_parity.py --build BUILD [--write-model PATH]
"""
import pathlib
import sys
import tempfile

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper
from torch import nn
from torch.nn import functional as F

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from dropout_parity import (export_training, parity_setup,  # noqa: E402
                            threads_match_torch, torch_steps, write_data)

BATCH, STEPS, LR, MOMENTUM = 4, 20, 0.05, 0.9
C, H, W = 2, 8, 8


class Unpool(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Conv2d(C, 4, 3, padding=1)
        self.mid = nn.Conv2d(4, 4, 3, padding=1)
        self.dec = nn.Conv2d(4, C, 3, padding=1)

    def forward(self, x, y):
        h = torch.relu(self.enc(x))
        p, i = F.max_pool2d(h, 2, return_indices=True)
        z = torch.relu(self.mid(p))
        d = self.dec(F.max_unpool2d(z, i, 2, output_size=h.shape[-2:])) - y
        return (d * d).mean()


class Scatter(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Conv2d(C, 4, 3, padding=1)
        self.dec = nn.Conv2d(4, C, 3, padding=1)

    def forward(self, x, y):
        h = torch.relu(self.enc(x))
        p, i = F.max_pool2d(h, 2, stride=2, padding=1, return_indices=True)
        u = torch.zeros_like(h).flatten(2).scatter(2, i.flatten(2), p.flatten(2)).view_as(h)
        d = self.dec(u) - y
        return (d * d).mean()


def unpool_onnx(model, path):
    """The Unpool module as an ONNX graph (opset 13) with its weights as initializers."""
    n = helper.make_node
    nodes = [n("Conv", ["x", "enc.weight", "enc.bias"], ["e"], pads=[1, 1, 1, 1]),
             n("Relu", ["e"], ["h"]),
             n("MaxPool", ["h"], ["p", "i"], kernel_shape=[2, 2], strides=[2, 2]),
             n("Conv", ["p", "mid.weight", "mid.bias"], ["m"], pads=[1, 1, 1, 1]),
             n("Relu", ["m"], ["z"]),
             n("MaxUnpool", ["z", "i", "shape"], ["u"], kernel_shape=[2, 2], strides=[2, 2]),
             n("Conv", ["u", "dec.weight", "dec.bias"], ["o"], pads=[1, 1, 1, 1]),
             n("Sub", ["o", "y"], ["d"]), n("Mul", ["d", "d"], ["dd"]),
             n("ReduceMean", ["dd"], ["loss"], keepdims=0)]
    inits = [numpy_helper.from_array(v.detach().numpy(), k)
             for k, v in model.state_dict().items()]
    inits.append(numpy_helper.from_array(np.array([BATCH, 4, H, W], np.int64), "shape"))
    graph = helper.make_graph(
        nodes, "unpool", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [BATCH, C, H, W]),
                          helper.make_tensor_value_info("y", TensorProto.FLOAT, [BATCH, C, H, W])],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])], initializer=inits)
    onnx_model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(onnx_model)
    onnx.save(onnx_model, str(path))


def main():
    args, bindir, data = parity_setup(__doc__, 13, STEPS * BATCH, (C, H, W), (C, H, W))
    if args.write_model:
        torch.manual_seed(0)
        unpool_onnx(Unpool(), args.write_model)
        return 0
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        write_data(tmp / "data", data)
        for name, cls in (("unpool", Unpool), ("scatter", Scatter)):
            torch.manual_seed(0)
            model = cls()
            initial = {k: v.clone() for k, v in model.state_dict().items()}
            path = tmp / f"{name}.onnx"
            if name == "unpool":
                unpool_onnx(model, path)
            else:
                export_training(model, data, BATCH, path)
            model.load_state_dict(initial)
            opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
            torch_losses, torch_weights = torch_steps(model, opt, data, BATCH, STEPS)
            ok &= threads_match_torch(name, bindir, path, tmp, tmp / "data", STEPS,
                                      ["--optimizer", "sgd", "--lr", str(LR), "--momentum",
                                       str(MOMENTUM)], torch_losses, torch_weights)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
