#!/usr/bin/python3
"""Quantized ONNX models through plait-compile and plait-run, against PyTorch and numpy.

  quantized.py make DIR     writes the models and their inputs into DIR:
      qdq.onnx     a CNN statically quantized by PyTorch (torch.ao.quantization, qnnpack) and
                   exported by torch.onnx at opset 13: QuantizeLinear / DequantizeLinear pairs
                   around a float Conv, ReLU and Gemm, int8 weights; DIR/qdq_ref.npy holds
                   PyTorch's own quantized model's output (its integer kernels)
      dynamic.onnx the dynamic quantization ONNX Runtime writes for MatMul:
                   DynamicQuantizeLinear, MatMulInteger (int8 weights, a per-column zero point
                   in the second layer), Cast, Mul by the scales, Add, Relu
      qop.onnx     operator-form quantization: QuantizeLinear, QLinearConv (int8 weights with
                   per-channel scales, an int32 bias, stride 2, padding 1), MaxPool and Reshape
                   of uint8, QLinearMatMul, DequantizeLinear
      x.npy, img.npy the inputs
  quantized.py check DIR    compares DIR/out_*/ with the references, one line per output:
      qdq against PyTorch within one step of the output's quantization scale (the largest
      difference printed), dynamic and qop against numpy's evaluation of the ONNX spec's
      formulas, exactly (integer products, f32 requantization rounded half to even)
  quantized.py errors DIR   writes the malformed or unsupported models the test expects
                            errors from
"""
import copy
import os
import sys
import warnings

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def save(folder, name, array):
    np.save(os.path.join(folder, name + ".npy"), array)


def torch_qdq(folder):
    """A CNN quantized by PyTorch's eager-mode static quantization, exported as QDQ."""
    warnings.filterwarnings("ignore")
    import torch
    import torch.nn as nn
    torch.manual_seed(0)
    torch.backends.quantized.engine = "qnnpack"
    quant = torch.ao.quantization

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.q1, self.dq1 = quant.QuantStub(), quant.DeQuantStub()
            self.q2, self.dq2 = quant.QuantStub(), quant.DeQuantStub()
            self.conv = nn.Conv2d(3, 4, 3, padding=1)
            self.relu = nn.ReLU()
            self.fc = nn.Linear(4 * 6 * 6, 5)

        def forward(self, x):
            x = self.dq1(self.relu(self.conv(self.q1(x))))
            x = x.reshape(x.shape[0], -1)
            return self.dq2(self.fc(self.q2(x)))

    net = Net().eval()
    net.qconfig = quant.get_default_qconfig("qnnpack")
    prepared = quant.prepare(net)
    for _ in range(8):  # calibration
        prepared(torch.randn(2, 3, 6, 6))
    qnet = quant.convert(prepared)
    x = torch.randn(2, 3, 6, 6)
    path = os.path.join(folder, "qdq.onnx")
    torch.onnx.export(qnet, (x,), path, opset_version=13, input_names=["img"],
                      output_names=["logits"])
    save(folder, "img", x.numpy())
    save(folder, "qdq_ref", qnet(x).numpy())
    # The output's quantization step: the last QuantizeLinear's scale.
    model = onnx.load(path)
    consts = {n.output[0]: numpy_helper.to_array(n.attribute[0].t)
              for n in model.graph.node if n.op_type == "Constant"}
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    last = [n for n in model.graph.node if n.op_type == "QuantizeLinear"][-1]
    scale = consts.get(last.input[1], inits.get(last.input[1]))
    save(folder, "qdq_step", np.asarray(scale, np.float32))


def rint_sat(v, dtype):
    info = np.iinfo(dtype)
    return np.clip(np.rint(v), info.min, info.max).astype(dtype)


def dynamic_quantize(x):
    lo, hi = np.minimum(np.float32(0), x.min()), np.maximum(np.float32(0), x.max())
    scale = np.float32((hi - lo) / np.float32(255))
    zp = rint_sat(np.float32(0) - lo / scale, np.uint8)
    return rint_sat(np.rint(x / scale) + zp, np.uint8), scale, zp


def dynamic_model(folder):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((4, 8)).astype(np.float32)
    w1 = rng.integers(-127, 128, (8, 6)).astype(np.int8)
    w2 = rng.integers(0, 256, (6, 3)).astype(np.uint8)
    w2_zp = np.array([128, 120, 131], np.uint8)
    s1, s2 = np.float32(0.02), np.float32(0.015)
    b1 = rng.standard_normal(6).astype(np.float32)
    b2 = rng.standard_normal(3).astype(np.float32)
    init = [numpy_helper.from_array(a, n) for a, n in
            [(w1, "w1"), (w2, "w2"), (w2_zp, "w2_zp"), (np.array(s1), "s1"),
             (np.array(s2), "s2"), (b1, "b1"), (b2, "b2")]]
    node = helper.make_node
    nodes = []
    for layer, (inp, w, zp, s, b, out) in enumerate(
            [("x", "w1", "", "s1", "b1", "h"), ("h", "w2", "w2_zp", "s2", "b2", "y")]):
        p = "l%d_" % layer
        nodes += [
            node("DynamicQuantizeLinear", [inp], [p + "q", p + "scale", p + "zp"]),
            node("MatMulInteger", [p + "q", w, p + "zp", zp], [p + "acc"]),
            node("Cast", [p + "acc"], [p + "accf"], to=TensorProto.FLOAT),
            node("Mul", [p + "scale", s], [p + "s"]),
            node("Mul", [p + "accf", p + "s"], [p + "deq"]),
            node("Add", [p + "deq", b], [p + "pre" if layer == 0 else out]),
        ]
        if layer == 0:
            nodes.append(node("Relu", [p + "pre"], [out]))
    graph = helper.make_graph(nodes, "dynamic",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 3])],
                              init)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(folder, "dynamic.onnx"))
    save(folder, "x", x)

    def layer(v, w, wzp, s, b):
        q, scale, zp = dynamic_quantize(v)
        acc = (q.astype(np.int64) - zp) @ (w.astype(np.int64) - wzp.astype(np.int64))
        return acc.astype(np.int32).astype(np.float32) * (scale * s) + b

    h = np.maximum(layer(x, w1, np.zeros(1, np.int8), s1, b1), np.float32(0))
    save(folder, "dynamic_ref", layer(h, w2, w2_zp, s2, b2))


def conv_nchw(x, w, stride, pad):
    """Integer 2-D convolution of int64 arrays, zero padding."""
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    n, c, h, wd = x.shape
    m, _, kh, kw = w.shape
    ho, wo = (h - kh) // stride + 1, (wd - kw) // stride + 1
    out = np.zeros((n, m, ho, wo), np.int64)
    for i in range(ho):
        for j in range(wo):
            patch = x[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw]
            out[:, :, i, j] = np.tensordot(patch, w, axes=([1, 2, 3], [1, 2, 3]))
    return out


def qop_model(folder):
    rng = np.random.default_rng(11)
    img = rng.standard_normal((1, 3, 8, 8)).astype(np.float32)
    xs, xzp = np.float32(0.03), np.uint8(120)
    w = rng.integers(-127, 128, (4, 3, 3, 3)).astype(np.int8)
    ws = np.array([0.004, 0.006, 0.005, 0.003], np.float32)
    wzp = np.zeros(4, np.int8)
    ys, yzp = np.float32(0.05), np.uint8(100)
    bias = rng.integers(-500, 500, 4).astype(np.int32)
    b = rng.integers(0, 256, (16, 5)).astype(np.uint8)
    bs, bzp = np.float32(0.01), np.uint8(128)
    zs, zzp = np.float32(0.2), np.int8(-3)
    init = [numpy_helper.from_array(np.asarray(a), n) for a, n in
            [(xs, "xs"), (xzp, "xzp"), (w, "w"), (ws, "ws"), (wzp, "wzp"), (ys, "ys"),
             (yzp, "yzp"), (bias, "bias"), (np.array([1, 16], np.int64), "flat"), (b, "b"),
             (bs, "bs"), (bzp, "bzp"), (zs, "zs"), (zzp, "zzp")]]
    node = helper.make_node
    nodes = [
        node("QuantizeLinear", ["img", "xs", "xzp"], ["xq"]),
        node("QLinearConv", ["xq", "xs", "xzp", "w", "ws", "wzp", "ys", "yzp", "bias"], ["yq"],
             strides=[2, 2], pads=[1, 1, 1, 1]),
        node("MaxPool", ["yq"], ["ypool"], kernel_shape=[2, 2], strides=[2, 2]),
        node("Reshape", ["ypool", "flat"], ["yflat"]),
        node("QLinearMatMul", ["yflat", "ys", "yzp", "b", "bs", "bzp", "zs", "zzp"], ["zq"]),
        node("DequantizeLinear", ["zq", "zs", "zzp"], ["z"]),
    ]
    graph = helper.make_graph(
        nodes, "qop", [helper.make_tensor_value_info("img", TensorProto.FLOAT, img.shape)],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 5]),
         helper.make_tensor_value_info("yq", TensorProto.UINT8, [1, 4, 4, 4])], init)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(folder, "qop.onnx"))
    save(folder, "qop_img", img)

    xq = rint_sat(img / xs + np.float32(xzp), np.uint8)
    acc = conv_nchw(xq.astype(np.int64) - int(xzp), w.astype(np.int64), 2, 1)
    acc = acc + bias.reshape(1, 4, 1, 1)
    mult = ((xs * ws) / ys).reshape(1, 4, 1, 1)
    yq = rint_sat(acc.astype(np.float32) * mult + np.float32(yzp), np.uint8)
    pooled = yq.reshape(1, 4, 2, 2, 2, 2).max(axis=(3, 5))
    acc2 = (pooled.reshape(1, 16).astype(np.int64) - int(yzp)) @ (b.astype(np.int64) - int(bzp))
    zq = rint_sat(acc2.astype(np.float32) * ((ys * bs) / zs) + np.float32(zzp), np.int8)
    save(folder, "qop_yq", yq)
    save(folder, "qop_z", (zq.astype(np.float32) - np.float32(zzp)) * zs)


def errors(folder):
    node = helper.make_node
    f32 = TensorProto.FLOAT

    def write(name, nodes, inputs, outputs, init):
        graph = helper.make_graph(nodes, name, inputs, outputs, init)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        onnx.save(model, os.path.join(folder, name + ".onnx"))

    x = helper.make_tensor_value_info("x", f32, [2, 3])
    # A per-axis scale whose length is not the axis's.
    write("scale_length", [node("QuantizeLinear", ["x", "s", "z"], ["y"], name="q", axis=1)],
          [x], [helper.make_tensor_value_info("y", TensorProto.UINT8, [2, 3])],
          [numpy_helper.from_array(np.ones(4, np.float32), "s"),
           numpy_helper.from_array(np.zeros(4, np.uint8), "z")])
    # A zero point of a type plait does not quantize to.
    write("zero_int32", [node("QuantizeLinear", ["x", "s", "z"], ["y"], name="q32")],
          [x], [helper.make_tensor_value_info("y", TensorProto.INT32, [2, 3])],
          [numpy_helper.from_array(np.array(0.5, np.float32), "s"),
           numpy_helper.from_array(np.array(0, np.int32), "z")])
    # QLinearConv with a float bias.
    xq = helper.make_tensor_value_info("xq", TensorProto.UINT8, [1, 1, 4, 4])
    scalars = [numpy_helper.from_array(np.array(v, t), n) for v, t, n in
               [(0.1, np.float32, "s"), (0, np.uint8, "zu"), (0, np.int8, "zi")]]
    write("float_bias",
          [node("QLinearConv", ["xq", "s", "zu", "w", "s", "zi", "s", "zu", "b"], ["y"],
                name="qconv")],
          [xq], [helper.make_tensor_value_info("y", TensorProto.UINT8, [1, 2, 2, 2])],
          scalars + [numpy_helper.from_array(np.ones((2, 1, 3, 3), np.int8), "w"),
                     numpy_helper.from_array(np.zeros(2, np.float32), "b")])
    # MatMulInteger of float operands.
    write("float_matmul_integer", [node("MatMulInteger", ["x", "w"], ["y"], name="mmi")],
          [x], [helper.make_tensor_value_info("y", TensorProto.INT32, [2, 2])],
          [numpy_helper.from_array(np.ones((3, 2), np.float32), "w")])


QAT_STEPS, QAT_BATCH, QAT_LR = 20, 8, 0.2


def qat_net(power_of_two):
    """A classifier (a convolution and two linear layers) prepared for quantization-aware
    training by PyTorch (FakeQuantize modules: activations per tensor, uint8, weights per
    channel, int8 symmetric), calibrated on a few
    batches, its observers then frozen, returning the cross-entropy loss. With
    `power_of_two`, every scale is rounded to a power of two, so that PyTorch's x * (1 / scale)
    and ONNX's x / scale are the same number."""
    warnings.filterwarnings("ignore")
    import torch
    import torch.nn as nn
    quant = torch.ao.quantization
    torch.manual_seed(3)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.q, self.dq = quant.QuantStub(), quant.DeQuantStub()
            self.conv = nn.Conv2d(1, 3, 3, padding=1)  # the 12 features as a 3x4 image
            self.fc1, self.relu, self.fc2 = nn.Linear(36, 16), nn.ReLU(), nn.Linear(16, 5)
            self.loss = nn.CrossEntropyLoss()

        def forward(self, x, y):
            h = self.relu(self.conv(self.q(x).reshape(-1, 1, 3, 4))).reshape(-1, 36)
            return self.loss(self.dq(self.fc2(self.relu(self.fc1(h)))), y)

    net = Net().train()
    net.qconfig = quant.QConfig(
        activation=quant.FakeQuantize.with_args(
            observer=quant.MovingAverageMinMaxObserver, quant_min=0, quant_max=255,
            dtype=torch.quint8),
        weight=quant.FakeQuantize.with_args(
            observer=quant.MovingAveragePerChannelMinMaxObserver, quant_min=-128,
            quant_max=127, dtype=torch.qint8, qscheme=torch.per_channel_symmetric))
    qat = quant.prepare_qat(net)
    calib = torch.Generator().manual_seed(5)
    for _ in range(4):
        qat(torch.randn(QAT_BATCH, 12, generator=calib) * 2,
            torch.randint(0, 5, (QAT_BATCH,), generator=calib))
    qat.apply(quant.disable_observer)
    if power_of_two:
        for m in qat.modules():
            if isinstance(m, quant.FakeQuantize):
                m.scale.copy_(2.0 ** torch.round(torch.log2(m.scale)))
    return qat


def qat_model(folder, tag, power_of_two):
    """DIR/qat_TAG.onnx (exported for training, the fake quantizations as QuantizeLinear /
    DequantizeLinear pairs), its data DIR/qat_data/{x,y}.npy and PyTorch's losses over
    QAT_STEPS SGD steps, DIR/qat_TAG_ref.npy."""
    import torch
    net = qat_net(power_of_two)
    rng = np.random.default_rng(9)
    data = os.path.join(folder, "qat_data")
    os.makedirs(data, exist_ok=True)
    # Four batches, taken in turn (plait-run's epochs, in order), of a learnable rule.
    x = (rng.standard_normal((4 * QAT_BATCH, 12)) * 2).astype(np.float32)
    y = np.argmax(x[:, :5] + x[:, 5:10], axis=1).astype(np.int64)
    np.save(os.path.join(data, "x.npy"), x)
    np.save(os.path.join(data, "y.npy"), y)
    torch.onnx.export(net, (torch.from_numpy(x[:QAT_BATCH]), torch.from_numpy(y[:QAT_BATCH])),
                      os.path.join(folder, "qat_%s.onnx" % tag), opset_version=13,
                      do_constant_folding=False, training=torch.onnx.TrainingMode.TRAINING,
                      input_names=["x", "y"], output_names=["loss"])
    def train(model):
        opt = torch.optim.SGD(model.parameters(), lr=QAT_LR)
        losses = []
        for step in range(QAT_STEPS):
            batch = slice(step % 4 * QAT_BATCH, (step % 4 + 1) * QAT_BATCH)
            loss = model(torch.from_numpy(x[batch]), torch.from_numpy(y[batch]))
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return np.array(losses)

    divided = copy.deepcopy(net)
    save(folder, "qat_%s_ref" % tag, train(net))
    # The same model with each FakeQuantize computing x / scale, as ONNX's QuantizeLinear does,
    # where PyTorch's kernel multiplies by 1 / scale; the rest (round half to even, the clamp,
    # the straight-through gradient where the value was in range) is FakeQuantize's.
    for m in divided.modules():
        if isinstance(m, torch.ao.quantization.FakeQuantize):
            m.forward = dividing_fake_quantize(m)
    save(folder, "qat_%s_div" % tag, train(divided))


def dividing_fake_quantize(m):
    """FakeQuantize module `m`'s forward with the input divided by the scale."""
    import torch

    def forward(x):
        shape = [1] * x.dim()
        axis = m.ch_axis if m.is_per_channel else 0
        shape[axis] = -1
        scale = m.scale.reshape(shape if m.is_per_channel else [])
        zero = m.zero_point.to(x.dtype).reshape(shape if m.is_per_channel else [])
        r = torch.round(x / scale) + zero
        inside = (r >= m.quant_min) & (r <= m.quant_max)
        y = (torch.clamp(r, m.quant_min, m.quant_max) - zero) * scale
        return y.detach() + torch.where(inside, x - x.detach(), torch.zeros_like(x))
    return forward


def check_qat(folder):
    """plait's losses against PyTorch's FakeQuantize (ref) and against the same with x / scale
    (div). PyTorch multiplies by 1 / scale where ONNX divides: with a scale that is not a power
    of two, a value at a rounding boundary can round to the neighbouring level in one of them,
    and the runs drift apart by about a level's effect on the loss (1e-2 allowed there)."""
    import json
    for tag, reference, limit in (("pow2", "ref", 1e-5), ("calibrated", "div", 1e-5),
                                  ("calibrated", "ref", 1e-2)):
        ref = np.load(os.path.join(folder, "qat_%s_%s.npy" % (tag, reference)))
        with open(os.path.join(folder, "qat_%s.jsonl" % tag)) as log:
            got = np.array([json.loads(line)["loss"] for line in log])
        rel = float(np.max(np.abs(got - ref) / np.abs(ref)))
        moved = ref[-4:].mean() < ref[:4].mean() * 0.9  # it trains: the loss falls
        print("qat", tag, reference, "ok" if got.shape == ref.shape and rel <= limit and moved
              else "MISMATCH", "loss %.4f -> %.4f, max rel diff %.2g" % (ref[0], ref[-1], rel))


def check(folder):
    def out(run, name):
        return np.load(os.path.join(folder, "out_" + run, name + ".npy"))

    got, ref = out("qdq", "logits"), np.load(os.path.join(folder, "qdq_ref.npy"))
    step = float(np.load(os.path.join(folder, "qdq_step.npy")))
    diff = float(np.abs(got - ref).max())
    print("qdq", "ok" if diff <= step * 1.0001 else "MISMATCH",
          "max diff %.3g, %.3g steps of %.3g" % (diff, diff / step, step))
    cases = [("dynamic", "y", "dynamic_ref"), ("qop", "z", "qop_z"), ("qop", "yq", "qop_yq")]
    for run, name, refname in cases:
        got, ref = out(run, name), np.load(os.path.join(folder, refname + ".npy"))
        same = got.dtype == ref.dtype and got.shape == ref.shape and np.array_equal(got, ref)
        print(run, name, "ok" if same else "MISMATCH %s %s %s" % (got.dtype, got.shape, got))


def main():
    command, folder = sys.argv[1], sys.argv[2]
    if command == "make":
        torch_qdq(folder)
        dynamic_model(folder)
        qop_model(folder)
    elif command == "errors":
        errors(folder)
    elif command == "qat":
        qat_model(folder, "pow2", True)
        qat_model(folder, "calibrated", False)
    elif command == "check-qat":
        check_qat(folder)
    else:
        check(folder)


if __name__ == "__main__":
    main()
