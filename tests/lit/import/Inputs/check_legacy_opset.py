"""Models of old opsets that plait's importer lifts to opset 13 (legacy-opset.test), each run
through plait-compile and plait-run and compared with numpy's value of the op as its old
version defines it. Prints "NAME ok" or "NAME MISMATCH ...", one line per case.

  check_legacy_opset.py DIR        (plait-compile and plait-run from PATH; DIR for the files)
  check_legacy_opset.py train DIR  an opset-6 classifier (legacy broadcast of a bias, PRelu-6,
                                   Gemm-6, LogSoftmax-1) trained with Adam, and the same
                                   model written at opset 13, 16 steps: prints both loss
                                   curves' largest difference ("train ok" when the bits agree)
"""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from plait_tools import compile_and_run

F = TensorProto.FLOAT
RNG = np.random.default_rng(3)


def vi(name, shape, elem=F):
    return helper.make_tensor_value_info(name, elem, shape)


def softmax_rows(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def coerced(x, axis, fn):
    """Softmax-1's meaning: x as [prod(d < axis), prod(d >= axis)], fn along the rows."""
    rows = int(np.prod(x.shape[:axis]))
    return fn(x.reshape(rows, -1)).reshape(x.shape)


def hardmax_rows(x):
    out = np.zeros_like(x)
    out[np.arange(x.shape[0]), x.argmax(axis=1)] = 1
    return out


def upsample_linear(x, scales):
    """Upsample-7's linear mode: each output coordinate read at out / scale, interpolated."""
    out = x
    for d, s in enumerate(scales):
        n = out.shape[d]
        m = int(np.floor(n * s))
        src = np.arange(m) / s
        lo = np.minimum(np.floor(src).astype(int), n - 1)
        hi = np.minimum(lo + 1, n - 1)
        w = (src - lo).reshape([-1 if i == d else 1 for i in range(out.ndim)])
        out = np.take(out, lo, axis=d) * (1 - w) + np.take(out, hi, axis=d) * w
    return out.astype(x.dtype)


def cases():
    a4 = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    b34 = RNG.standard_normal((3, 4)).astype(np.float32)
    a3 = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    b4 = RNG.standard_normal(4).astype(np.float32) + 2
    slope = np.array([0.1, -0.5, 2.0], np.float32)
    gemm_b = RNG.standard_normal((4, 3)).astype(np.float32)
    gemm_c = RNG.standard_normal(4).astype(np.float32)
    n = helper.make_node
    out = []

    def case(name, opset, nodes, inputs, outputs, feeds, expected, inits=()):
        out.append((name, opset, nodes, inputs, outputs, feeds, expected, list(inits)))

    case("add6_axis", 6, [n("Add", ["a", "b"], ["y"], broadcast=1, axis=1)],
         [vi("a", [2, 3, 4, 5]), vi("b", [3, 4])], [vi("y", [2, 3, 4, 5])],
         {"a": a4, "b": b34}, {"y": a4 + b34[None, :, :, None]})
    case("sub6_param_axis", 6, [n("Sub", ["a", "bias"], ["y"], broadcast=1, axis=1)],
         [vi("a", [2, 3, 4, 5])], [vi("y", [2, 3, 4, 5])], {"a": a4},
         {"y": a4 - slope[None, :, None, None]}, [numpy_helper.from_array(slope, "bias")])
    case("mul6_suffix", 6, [n("Mul", ["a", "b"], ["y"], broadcast=1)],
         [vi("a", [2, 3, 4]), vi("b", [4])], [vi("y", [2, 3, 4])], {"a": a3, "b": b4},
         {"y": a3 * b4})
    case("pow1_axis", 1, [n("Pow", ["a", "b"], ["y"], broadcast=1, axis=2)],
         [vi("a", [2, 3, 4]), vi("b", [4])], [vi("y", [2, 3, 4])],
         {"a": np.abs(a3) + 0.5, "b": b4}, {"y": (np.abs(a3) + 0.5) ** b4})
    case("gemm6", 6, [n("Gemm", ["a", "b", "c"], ["y"], transB=1, broadcast=1)],
         [vi("a", [2, 3])], [vi("y", [2, 4])], {"a": a3[0, :2, :3]},
         {"y": a3[0, :2, :3] @ gemm_b.T + gemm_c},
         [numpy_helper.from_array(gemm_b, "b"), numpy_helper.from_array(gemm_c, "c")])
    case("prelu6_channels", 6, [n("PRelu", ["x", "slope"], ["y"])], [vi("x", [2, 3, 4, 5])],
         [vi("y", [2, 3, 4, 5])], {"x": a4},
         {"y": np.where(a4 < 0, a4 * slope[None, :, None, None], a4)},
         [numpy_helper.from_array(slope, "slope")])
    case("softmax1_axis1", 1, [n("Softmax", ["x"], ["y"])], [vi("x", [2, 3, 4])],
         [vi("y", [2, 3, 4])], {"x": a3}, {"y": coerced(a3, 1, softmax_rows)})
    case("logsoftmax11_axis2", 11, [n("LogSoftmax", ["x"], ["y"], axis=2)],
         [vi("x", [2, 3, 4, 5])], [vi("y", [2, 3, 4, 5])], {"x": a4},
         {"y": coerced(a4, 2, lambda r: np.log(softmax_rows(r)))})
    case("hardmax1_axis0", 1, [n("Hardmax", ["x"], ["y"], axis=0)], [vi("x", [2, 3, 4])],
         [vi("y", [2, 3, 4])], {"x": a3}, {"y": coerced(a3, 0, hardmax_rows)})
    case("softmax1_last", 1, [n("Softmax", ["x"], ["y"], axis=-1)], [vi("x", [2, 3, 4])],
         [vi("y", [2, 3, 4])], {"x": a3}, {"y": coerced(a3, 2, softmax_rows)})
    mean, var = b4[:3] - 2, np.abs(b4[:3]) + 0.1
    case("batchnorm6_test", 6,
         [n("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], is_test=1, epsilon=1e-3)],
         [vi("x", [2, 3, 4])], [vi("y", [2, 3, 4])], {"x": a3},
         {"y": (a3 - mean[None, :, None]) / np.sqrt(var[None, :, None] + 1e-3) *
          slope[None, :, None] + gemm_c[None, :3, None]},
         [numpy_helper.from_array(slope, "s"), numpy_helper.from_array(gemm_c[:3], "b"),
          numpy_helper.from_array(mean, "m"), numpy_helper.from_array(var, "v")])
    case("dropout6_test", 6, [n("Dropout", ["x"], ["y"], is_test=1, ratio=0.3)],
         [vi("x", [2, 3, 4])], [vi("y", [2, 3, 4])], {"x": a3}, {"y": a3})
    case("dropout10", 10, [n("Dropout", ["x"], ["y"], ratio=0.3)], [vi("x", [2, 3, 4])],
         [vi("y", [2, 3, 4])], {"x": a3}, {"y": a3})
    case("clip6", 6, [n("Clip", ["x"], ["y"], min=-0.5, max=0.7), n("Clip", ["x"], ["z"], max=0.2)],
         [vi("x", [2, 3, 4])], [vi("y", [2, 3, 4]), vi("z", [2, 3, 4])], {"x": a3},
         {"y": np.clip(a3, -0.5, 0.7), "z": np.minimum(a3, 0.2)})
    pads = [0, 1, 2, 0, 2, 1]
    width = ((0, 0), (1, 2), (2, 1))
    case("pad2", 2, [n("Pad", ["x"], ["c"], pads=pads, value=1.5),
                     n("Pad", ["x"], ["r"], pads=pads, mode="reflect"),
                     n("Pad", ["x"], ["e"], pads=pads, mode="edge")],
         [vi("x", [2, 3, 4])], [vi("c", [2, 6, 7]), vi("r", [2, 6, 7]), vi("e", [2, 6, 7])],
         {"x": a3}, {"c": np.pad(a3, width, constant_values=1.5),
                     "r": np.pad(a3, width, mode="reflect"), "e": np.pad(a3, width, mode="edge")})
    case("pad1_paddings", 1, [n("Pad", ["x"], ["y"], paddings=pads)], [vi("x", [2, 3, 4])],
         [vi("y", [2, 6, 7])], {"x": a3}, {"y": np.pad(a3, width)})
    case("reshape1", 1, [n("Reshape", ["x"], ["y"], shape=[3, -1])], [vi("x", [2, 3, 4])],
         [vi("y", [3, 8])], {"x": a3}, {"y": a3.reshape(3, -1)})
    case("split2", 2, [n("Split", ["x"], ["p", "q"], axis=1, split=[1, 2])],
         [vi("x", [2, 3, 4])], [vi("p", [2, 1, 4]), vi("q", [2, 2, 4])], {"x": a3},
         {"p": a3[:, :1], "q": a3[:, 1:]})
    case("squeeze1_unsqueeze1", 1, [n("Unsqueeze", ["x"], ["u"], axes=[0, 4]),
                                    n("Squeeze", ["u"], ["y"], axes=[0])],
         [vi("x", [2, 3, 4])], [vi("u", [1, 2, 3, 4, 1]), vi("y", [2, 3, 4, 1])], {"x": a3},
         {"u": a3[None, :, :, :, None], "y": a3[:, :, :, None]})
    case("reducesum1", 1, [n("ReduceSum", ["x"], ["y"], axes=[1], keepdims=0),
                           n("ReduceSum", ["x"], ["z"])],
         [vi("x", [2, 3, 4])], [vi("y", [2, 4]), vi("z", [1, 1, 1])], {"x": a3},
         {"y": a3.sum(axis=1), "z": a3.sum(keepdims=True)})
    case("slice1", 1, [n("Slice", ["x"], ["y"], starts=[0, 1], ends=[1, 1000], axes=[0, 2])],
         [vi("x", [2, 3, 4])], [vi("y", [1, 3, 3])], {"x": a3}, {"y": a3[:1, :, 1:]})
    top = np.sort(a3, axis=-1)[..., ::-1][..., :2]
    case("topk1", 1, [n("TopK", ["x"], ["v", "i"], k=2)], [vi("x", [2, 3, 4])],
         [vi("v", [2, 3, 2]), vi("i", [2, 3, 2], TensorProto.INT64)], {"x": a3},
         {"v": top, "i": np.argsort(-a3, axis=-1, kind="stable")[..., :2]})
    case("concat1_default_axis", 1, [n("Concat", ["x", "x"], ["y"])], [vi("x", [2, 3, 4])],
         [vi("y", [2, 6, 4])], {"x": a3}, {"y": np.concatenate([a3, a3], axis=1)})
    case("cast1_string_to", 1, [n("Cast", ["x"], ["y"], to="DOUBLE")], [vi("x", [2, 3, 4])],
         [vi("y", [2, 3, 4], TensorProto.DOUBLE)], {"x": a3}, {"y": a3.astype(np.float64)})
    img = a4[:1, :2, :3, :3]
    case("upsample7_nearest", 7, [n("Upsample", ["x"], ["y"], scales=[1.0, 1.0, 2.0, 3.0])],
         [vi("x", [1, 2, 3, 3])], [vi("y", [1, 2, 6, 9])], {"x": img},
         {"y": img.repeat(2, axis=2).repeat(3, axis=3)})
    case("upsample7_linear", 7, [n("Upsample", ["x"], ["y"], mode="linear",
                                   scales=[1.0, 1.0, 2.0, 2.0])],
         [vi("x", [1, 2, 3, 3])], [vi("y", [1, 2, 6, 6])], {"x": img},
         {"y": upsample_linear(img, [1, 1, 2, 2])})
    case("upsample9_nearest", 9, [n("Upsample", ["x", "s"], ["y"])], [vi("x", [1, 2, 3, 3])],
         [vi("y", [1, 2, 3, 9])], {"x": img}, {"y": img.repeat(3, axis=3)},
         [numpy_helper.from_array(np.array([1, 1, 1, 3], np.float32), "s")])
    idx = np.array([[1, 0, 2], [0, 2, 1]], np.int64)
    upd = np.array([[10, 20, 30], [40, 50, 60]], np.float32)
    scattered = a3[0, :2, :3].copy()
    for r in range(2):
        for c in range(3):
            scattered[r, idx[r, c]] = upd[r, c]
    case("scatter9", 9, [n("Scatter", ["x", "i", "u"], ["y"], axis=1)], [vi("x", [2, 3])],
         [vi("y", [2, 3])], {"x": a3[0, :2, :3]}, {"y": scattered},
         [numpy_helper.from_array(idx, "i"), numpy_helper.from_array(upd, "u")])
    return out


def main(d):
    os.makedirs(d, exist_ok=True)
    for name, opset, nodes, inputs, outputs, feeds, expected, inits in cases():
        graph = helper.make_graph(nodes, name, inputs, outputs, initializer=inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        model.ir_version = 3 if opset < 8 else 6
        if model.ir_version < 4:  # initializers were graph inputs then
            model.graph.input.extend(vi(t.name, list(t.dims), t.data_type) for t in inits)
        onnx.checker.check_model(model)
        got = compile_and_run(d, name, model, feeds, expected)
        if got is not None:
            bad = []
            for key, want in expected.items():
                v = got[key]
                if v.shape != want.shape or v.dtype != want.dtype or not np.allclose(
                        v, want, rtol=1e-5, atol=1e-6):
                    err = np.abs(v - want).max() if v.shape == want.shape else "-"
                    bad.append(f"{key}: got {v.dtype}{list(v.shape)} want "
                               f"{want.dtype}{list(want.shape)}, max err {err}")
            print(f"{name} ok" if not bad else f"{name} MISMATCH {'; '.join(bad)}")


def classifier(opset):
    """x [4, 3, 2, 2] -> + bias (per channel) -> PRelu (per channel) -> flatten -> linear ->
    log-softmax -> the mean log-probability of the targets' one-hot, negated."""
    rng = np.random.default_rng(11)
    bias = rng.standard_normal(3).astype(np.float32)
    slope = np.array([0.2, -0.1, 0.3], np.float32)
    w = (rng.standard_normal((5, 12)) * 0.3).astype(np.float32)
    c = rng.standard_normal(5).astype(np.float32) * 0.1
    n = helper.make_node
    channel = (lambda a: a) if opset < 7 else (lambda a: a.reshape(3, 1, 1))
    inits = [numpy_helper.from_array(channel(bias), "bias"),
             numpy_helper.from_array(channel(slope), "slope"),
             numpy_helper.from_array(w, "w"), numpy_helper.from_array(c, "c")]
    legacy = {"broadcast": 1, "axis": 1} if opset < 7 else {}
    nodes = [n("Add", ["x", "bias"], ["h"], **legacy),
             n("PRelu", ["h", "slope"], ["p"]),
             n("Flatten", ["p"], ["f"], axis=1),
             n("Gemm", ["f", "w", "c"], ["z"], transB=1, **({"broadcast": 1} if opset < 7 else {})),
             n("LogSoftmax", ["z"], ["lp"], axis=1),
             n("Mul", ["lp", "onehot"], ["picked"]),
             n("ReduceSum", ["picked"], ["total"], keepdims=0),
             n("Div", ["total", "minus_n"], ["loss"])]
    inits.append(numpy_helper.from_array(np.array(-4.0, np.float32), "minus_n"))
    graph = helper.make_graph(nodes, "legacy_classifier", [vi("x", [4, 3, 2, 2]),
                                                           vi("onehot", [4, 5])],
                              [vi("loss", [])], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 3 if opset < 8 else 7
    if model.ir_version < 4:
        model.graph.input.extend(vi(t.name, list(t.dims), t.data_type) for t in inits)
    onnx.checker.check_model(model)
    return model


def train(d):
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(5)
    data = os.path.join(d, "data")
    os.makedirs(data, exist_ok=True)
    np.save(os.path.join(data, "x.npy"), rng.standard_normal((32, 3, 2, 2)).astype(np.float32))
    np.save(os.path.join(data, "onehot.npy"),
            np.eye(5, dtype=np.float32)[rng.integers(0, 5, 32)])
    losses = {}
    for opset in (6, 13):
        path = os.path.join(d, f"classifier{opset}.onnx")
        onnx.save(classifier(opset), path)
        plan, log = path[:-5] + ".plan", path[:-5] + ".jsonl"
        for cmd in (["plait-compile", path, "--train", "--optimizer", "adam", "--lr", "0.01",
                     "-o", plan],
                    ["plait-run", plan, "--data", data, "--steps", "16", "--log-jsonl", log]):
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode != 0:
                print(f"train FAILED: {cmd[0]} (opset {opset}): {p.stderr.strip()}")
                return
        import json
        losses[opset] = [json.loads(line)["loss"] for line in open(log)]
    a, b = np.array(losses[6]), np.array(losses[13])
    print(f"losses {a[0]:.4f} -> {a[-1]:.4f}")
    print("train ok" if a.shape == b.shape and np.array_equal(a, b) else
          f"train MISMATCH: largest difference {np.abs(a - b).max()}")


if __name__ == "__main__":
    if sys.argv[1] == "train":
        train(sys.argv[2])
    else:
        main(sys.argv[1])
