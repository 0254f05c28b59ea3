"""MaxPool's Indices output and MaxUnpool (max-unpool.test) against numpy references of ONNX's
definitions: each case a model run through plait-compile and plait-run. Prints "NAME ok" or
"NAME MISMATCH ...", one line per case.

  check_max_pool_indices.py DIR     (plait-compile and plait-run from PATH; DIR for the files)
"""
import itertools
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from plait_tools import compile_and_run

RNG = np.random.default_rng(17)


def pool_reference(x, kernel, strides, pads, dilations, ceil, column_major):
    """Values and flat indices of each window's first largest element (ONNX MaxPool)."""
    rank = x.ndim - 2
    spatial = x.shape[2:]
    out = []
    for j in range(rank):
        span = dilations[j] * (kernel[j] - 1) + 1
        size = spatial[j] + pads[j] + pads[j + rank] - span
        o = (-(-size // strides[j]) if ceil else size // strides[j]) + 1
        if ceil and (o - 1) * strides[j] >= spatial[j] + pads[j]:
            o -= 1  # the last window must start inside the input or its begin padding
        out.append(o)
    values = np.zeros(x.shape[:2] + tuple(out), x.dtype)
    indices = np.zeros(x.shape[:2] + tuple(out), np.int64)
    plane = int(np.prod(spatial))
    for n, c in itertools.product(range(x.shape[0]), range(x.shape[1])):
        for o in itertools.product(*(range(v) for v in out)):
            best, at = -np.inf, None
            for t in itertools.product(*(range(k) for k in kernel)):
                p = [o[j] * strides[j] - pads[j] + t[j] * dilations[j] for j in range(rank)]
                if all(0 <= p[j] < spatial[j] for j in range(rank)):
                    v = x[(n, c) + tuple(p)]
                    if v > best:
                        best, at = v, p
            values[(n, c) + o] = best
            flat = 0
            order = reversed(range(rank)) if column_major else range(rank)
            for j in order:
                flat = flat * spatial[j] + at[j]
            indices[(n, c) + o] = (n * x.shape[1] + c) * plane + flat
    return values, indices


def run(d, name, nodes, inputs, outputs, feeds, inits=()):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    return compile_and_run(d, name, model, feeds, [o.name for o in outputs])


def check(name, got, want):
    if got is None:
        return
    bad = [k for k in want if got[k].shape != want[k].shape or got[k].dtype != want[k].dtype
           or not np.array_equal(got[k], want[k])]
    print(f"{name} ok" if not bad else f"{name} MISMATCH {bad}")


def pool_case(d, name, shape, kernel, strides=None, pads=None, dilations=None, ceil=0,
              storage_order=0, x=None):
    rank = len(kernel)
    strides = strides or [1] * rank
    pads = pads or [0] * (2 * rank)
    dilations = dilations or [1] * rank
    x = RNG.standard_normal(shape).astype(np.float32) if x is None else x
    values, indices = pool_reference(x, kernel, strides, pads, dilations, ceil, storage_order)
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=kernel, strides=strides,
                            pads=pads, dilations=dilations, ceil_mode=ceil,
                            storage_order=storage_order)
    got = run(d, name, [node], [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
              [helper.make_tensor_value_info("y", TensorProto.FLOAT, values.shape),
               helper.make_tensor_value_info("i", TensorProto.INT64, indices.shape)], {"x": x})
    check(name, got, {"y": values, "i": indices})
    return x, indices


def main(d):
    os.makedirs(d, exist_ok=True)
    pool_case(d, "pool2d", [2, 3, 6, 6], [2, 2], [2, 2])
    pool_case(d, "pool2d_pads_ceil", [1, 2, 7, 7], [3, 3], [2, 2], [1, 1, 1, 1], ceil=1)
    pool_case(d, "pool2d_dilated_column_major", [1, 2, 6, 5], [2, 2], [1, 1],
              dilations=[2, 2], storage_order=1)
    pool_case(d, "pool1d", [2, 2, 9], [3], [2], [1, 1])
    pool_case(d, "pool3d", [1, 2, 4, 4, 4], [2, 2, 2], [2, 2, 2])
    ties = np.array([[[[1, 1, 0, 2], [1, 0, 2, 2], [3, 3, 3, 3], [3, 3, 3, 3]]]], np.float32)
    pool_case(d, "pool2d_ties", [1, 1, 4, 4], [2, 2], [2, 2], x=ties)

    # MaxUnpool: each pooled value written back at its index, zeros elsewhere; its default
    # output size ((O - 1) * stride - pads + kernel), and output_shape larger than that.
    x = RNG.standard_normal((2, 3, 6, 6)).astype(np.float32)
    values, indices = pool_reference(x, [2, 2], [2, 2], [0] * 4, [1, 1], 0, False)
    for name, shape in (("unpool2d", None), ("unpool2d_output_shape", [2, 3, 7, 7])):
        out = np.zeros(int(np.prod(shape or x.shape)), np.float32)
        out[indices.reshape(-1)] = values.reshape(-1)
        out = out.reshape(shape or x.shape)
        inputs = ["v", "i"] + (["shape"] if shape else [])
        inits = [numpy_helper.from_array(np.array(shape, np.int64), "shape")] if shape else []
        got = run(d, name, [helper.make_node("MaxUnpool", inputs, ["u"], kernel_shape=[2, 2],
                                             strides=[2, 2])],
                  [helper.make_tensor_value_info("v", TensorProto.FLOAT, values.shape),
                   helper.make_tensor_value_info("i", TensorProto.INT64, indices.shape)],
                  [helper.make_tensor_value_info("u", TensorProto.FLOAT, out.shape)],
                  {"v": values, "i": indices}, inits)
        check(name, got, {"u": out})


if __name__ == "__main__":
    main(sys.argv[1])
