#!/usr/bin/python3
"""int8, uint8, int16, uint16, uint32 and uint64 through plait-compile and plait-run, against numpy.

  small_ints.py make DIR    writes DIR/small_ints.onnx and its inputs DIR/<name>.npy
  small_ints.py check DIR   compares DIR/out/<output>.npy with numpy's results, one line each
  small_ints.py train DIR   writes DIR/u8.onnx, a linear classifier of uint8 images that casts
                            and scales them (x / 255), and DIR/f32.onnx, the same classifier
                            of float images, with their data: DIR/u8/{x,y}.npy and
                            DIR/f32/{x,y}.npy, the same images as float32 x / 255

Each output is computed by numpy on the same inputs (integers exactly, floats within 1e-6):
integer arithmetic wraps modulo 2^bits, division truncates toward zero, Mod takes the divisor's
sign, comparisons give bool, casts between integer types wrap as numpy's astype does, and
BitShift of unsigned integers by the width or more gives 0.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ONNX_TYPE = {np.int8: TensorProto.INT8, np.uint8: TensorProto.UINT8,
             np.int16: TensorProto.INT16, np.uint16: TensorProto.UINT16,
             np.uint32: TensorProto.UINT32, np.uint64: TensorProto.UINT64,
             np.int64: TensorProto.INT64, np.float32: TensorProto.FLOAT, np.bool_: TensorProto.BOOL}


def inputs():
    rng = np.random.default_rng(3)
    return {
        "img": rng.integers(0, 256, (2, 3, 4, 4)).astype(np.uint8),
        "a8": np.array([-128, -7, -1, 0, 5, 127], np.int8),
        "b8": np.array([-1, 2, -3, 7, -2, 3], np.int8),
        "a16": np.array([-32768, -300, -1, 0, 300, 32767], np.int16),
        "u16": np.array([0, 1, 2, 65535, 40000, 7], np.uint16),
        "v16": np.array([1, 2, 65535, 3, 40001, 7], np.uint16),
        "u32": np.array([[4294967295, 1, 2], [3, 2147483648, 5]], np.uint32),
        "u64": np.array([2**64 - 1, 2**63, 2**63 - 1, 5, 0, 12], np.uint64),
        "v64": np.array([2, 2**63 + 1, 2**63, 3, 1, 12], np.uint64),
        "s8": np.array([1, 255, 128, 7, 3, 200], np.uint8),
        "n8": np.array([1, 1, 7, 8, 0, 9], np.uint8),
        "s64": np.array([1, 2**63, 5], np.uint64),
        "n64": np.array([63, 1, 64], np.uint64),
    }


# Constants whose int64 sum and product overflow.
BIG64 = np.array([2**62, 2**62, 2**62, 5], np.int64)
PROD64 = np.array([3**39, 3, -1], np.int64)


def shifted(a, n, left):
    """a shifted by n bits, each in Python's integers: bits past the width are lost, and a
    shift by the width or more gives 0."""
    bits = a.dtype.itemsize * 8
    out = [((int(v) << int(k)) if left else (int(v) >> int(k))) % (1 << bits)
           if int(k) < bits else 0 for v, k in zip(a, n)]
    return np.array(out, a.dtype)


def expected(x):
    a8, b8, a16, u16, v16 = x["a8"], x["b8"], x["a16"], x["u16"], x["v16"]
    u32, u64, v64, img = x["u32"], x["u64"], x["v64"], x["img"]
    with np.errstate(over="ignore"):
        trunc_div = (np.abs(a8.astype(np.int64)) // np.abs(b8.astype(np.int64)) *
                     np.sign(a8.astype(np.int64)) * np.sign(b8.astype(np.int64))).astype(np.int8)
        return {
            "pixels": (img.astype(np.float32) / np.float32(255)).transpose(0, 2, 3, 1),
            "add8": a8 + b8, "sub8": a8 - b8, "mul8": a8 * b8, "div8": trunc_div,
            "mod8": np.mod(a8, b8), "max8": np.maximum(a8, b8), "less8": a8 < b8,
            "clip8": np.clip(a8, -3, 5).astype(np.int8), "abs8": np.abs(a8), "neg8": -a8,
            "sign8": np.sign(a8),
            "wide16": a8.astype(np.int16) * np.int16(300),
            "wrap16": a16.astype(np.uint16),
            "addu16": u16 + v16, "subu16": u16 - v16, "divu16": u16 // v16,
            "modu16": np.mod(u16, v16), "gtu16": u16 > v16,
            "sumu32": u32.sum(axis=1, dtype=np.uint32), "maxu32": u32.max(axis=0),
            "argmaxu32": np.argmax(u32, axis=1).astype(np.int64),
            "maxu64": np.maximum(u64, v64), "lessu64": u64 < v64, "divu64": u64 // v64,
            "floatu64": u64.astype(np.float32),
            "cat16": np.concatenate([a16, u16.astype(np.int16)]),
            "pick8": img.reshape(-1)[[5, 0, 95, 17]],
            "pad8": np.pad(a8, (2, 1), constant_values=-5),
            "where8": np.where(a8 > 0, a8, b8),
            "back8": (img.astype(np.float32) * np.float32(0.5)).astype(np.uint8),
            "shl8": shifted(x["s8"], x["n8"], True), "shr8": shifted(x["s8"], x["n8"], False),
            "slice16": a16[1:5:2], "wide8": np.broadcast_to(a8, (2, 6)).copy(),
            "shl64": shifted(x["s64"], x["n64"], True),
            "shr64": shifted(x["s64"], x["n64"], False),
            # Folded at import from constants: int64 sums and products wrap as numpy's do.
            "foldsum64": np.array(BIG64.sum()), "foldprod64": np.array(PROD64.prod()),
        }


def model(x):
    def vi(name, array):
        return helper.make_tensor_value_info(name, ONNX_TYPE[array.dtype.type], array.shape)

    def const(name, array):
        return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(array))

    node = helper.make_node
    nodes = [
        node("Cast", ["img"], ["img_f"], to=TensorProto.FLOAT),
        const("scale", np.array(255, np.float32)),
        node("Div", ["img_f", "scale"], ["norm"]),
        node("Transpose", ["norm"], ["pixels"], perm=[0, 2, 3, 1]),
        node("Add", ["a8", "b8"], ["add8"]), node("Sub", ["a8", "b8"], ["sub8"]),
        node("Mul", ["a8", "b8"], ["mul8"]), node("Div", ["a8", "b8"], ["div8"]),
        node("Mod", ["a8", "b8"], ["mod8"]), node("Max", ["a8", "b8"], ["max8"]),
        node("Less", ["a8", "b8"], ["less8"]),
        const("lo8", np.array(-3, np.int8)), const("hi8", np.array(5, np.int8)),
        node("Clip", ["a8", "lo8", "hi8"], ["clip8"]),
        node("Abs", ["a8"], ["abs8"]), node("Neg", ["a8"], ["neg8"]),
        node("Sign", ["a8"], ["sign8"]),
        node("Cast", ["a8"], ["a8_16"], to=TensorProto.INT16),
        const("k300", np.array(300, np.int16)),
        node("Mul", ["a8_16", "k300"], ["wide16"]),
        node("Cast", ["a16"], ["wrap16"], to=TensorProto.UINT16),
        node("Add", ["u16", "v16"], ["addu16"]), node("Sub", ["u16", "v16"], ["subu16"]),
        node("Div", ["u16", "v16"], ["divu16"]), node("Mod", ["u16", "v16"], ["modu16"]),
        node("Greater", ["u16", "v16"], ["gtu16"]),
        node("ReduceSum", ["u32", "axis1"], ["sumu32"], keepdims=0),
        const("axis1", np.array([1], np.int64)),
        node("ReduceMax", ["u32"], ["maxu32"], axes=[0], keepdims=0),
        node("ArgMax", ["u32"], ["argmaxu32"], axis=1, keepdims=0),
        node("Max", ["u64", "v64"], ["maxu64"]), node("Less", ["u64", "v64"], ["lessu64"]),
        node("Div", ["u64", "v64"], ["divu64"]),
        node("Cast", ["u64"], ["floatu64"], to=TensorProto.FLOAT),
        node("Cast", ["u16"], ["u16_as16"], to=TensorProto.INT16),
        node("Concat", ["a16", "u16_as16"], ["cat16"], axis=0),
        const("flat", np.array([-1], np.int64)),
        node("Reshape", ["img", "flat"], ["img_flat"]),
        const("picks", np.array([5, 0, 95, 17], np.int64)),
        node("Gather", ["img_flat", "picks"], ["pick8"], axis=0),
        const("pads", np.array([2, 1], np.int64)), const("fill8", np.array(-5, np.int8)),
        node("Pad", ["a8", "pads", "fill8"], ["pad8"]),
        const("zero8", np.array(0, np.int8)),
        node("Greater", ["a8", "zero8"], ["positive8"]),
        node("Where", ["positive8", "a8", "b8"], ["where8"]),
        const("half", np.array(0.5, np.float32)),
        node("Mul", ["img_f", "half"], ["halved"]),
        node("Cast", ["halved"], ["back8"], to=TensorProto.UINT8),
        const("starts", np.array([1], np.int64)), const("ends", np.array([5], np.int64)),
        const("axes0", np.array([0], np.int64)), const("steps", np.array([2], np.int64)),
        node("Slice", ["a16", "starts", "ends", "axes0", "steps"], ["slice16"]),
        const("shape26", np.array([2, 6], np.int64)),
        node("Expand", ["a8", "shape26"], ["wide8"]),
        node("BitShift", ["s8", "n8"], ["shl8"], direction="LEFT"),
        node("BitShift", ["s8", "n8"], ["shr8"], direction="RIGHT"),
        node("BitShift", ["s64", "n64"], ["shl64"], direction="LEFT"),
        node("BitShift", ["s64", "n64"], ["shr64"], direction="RIGHT"),
        const("big64", BIG64), node("ReduceSum", ["big64"], ["foldsum64"], keepdims=0),
        const("prod64", PROD64), node("ReduceProd", ["prod64"], ["foldprod64"], keepdims=0),
    ]
    # Constants first, in the order their users need them.
    nodes.sort(key=lambda n: n.op_type != "Constant")
    want = expected(x)
    graph = helper.make_graph(nodes, "small_ints", [vi(k, v) for k, v in x.items()],
                              [vi(k, v) for k, v in want.items()])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(m)
    return m


def classifiers(folder):
    rng = np.random.default_rng(5)
    w = numpy_helper.from_array((rng.standard_normal((12, 3)) * 0.3).astype(np.float32), "w")
    b = numpy_helper.from_array(np.zeros(3, np.float32), "b")
    node = helper.make_node
    loss = [node("Gemm", ["h", "w", "b"], ["logits"]),
            node("SoftmaxCrossEntropyLoss", ["logits", "y"], ["loss"], reduction="mean")]
    for name, elem, front in [
            ("u8", TensorProto.UINT8,
             [helper.make_node("Constant", [], ["scale"],
                               value=numpy_helper.from_array(np.array(255, np.float32))),
              node("Cast", ["x"], ["xf"], to=TensorProto.FLOAT),
              node("Div", ["xf", "scale"], ["h"])]),
            ("f32", TensorProto.FLOAT, [node("Identity", ["x"], ["h"])])]:
        graph = helper.make_graph(
            front + loss, name,
            [helper.make_tensor_value_info("x", elem, [4, 12]),
             helper.make_tensor_value_info("y", TensorProto.INT64, [4])],
            [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])], initializer=[w, b])
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        onnx.checker.check_model(m)
        onnx.save(m, os.path.join(folder, name + ".onnx"))
    images = rng.integers(0, 256, (32, 12)).astype(np.uint8)
    labels = rng.integers(0, 3, 32).astype(np.int64)
    for name, x in [("u8", images), ("f32", images.astype(np.float32) / np.float32(255))]:
        os.makedirs(os.path.join(folder, name), exist_ok=True)
        np.save(os.path.join(folder, name, "x.npy"), x)
        np.save(os.path.join(folder, name, "y.npy"), labels)


def main():
    mode, folder = sys.argv[1], sys.argv[2]
    x = inputs()
    if mode == "train":
        classifiers(folder)
        return
    if mode == "make":
        onnx.save(model(x), os.path.join(folder, "small_ints.onnx"))
        for name, array in x.items():
            np.save(os.path.join(folder, name + ".npy"), array)
        return
    for name, want in expected(x).items():
        got = np.load(os.path.join(folder, "out", name + ".npy"))
        same = got.dtype == want.dtype and got.shape == want.shape and (
            np.allclose(got, want, rtol=1e-6, atol=0) if want.dtype.kind == "f"
            else np.array_equal(got, want))
        print(name, "ok" if same else "MISMATCH: %s %s %s vs %s %s %s" % (
            got.dtype, got.shape, got.tolist(), want.dtype, want.shape, want.tolist()))


if __name__ == "__main__":
    main()
