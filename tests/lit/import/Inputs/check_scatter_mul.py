"""scatter-mul.test's models and inputs: ScatterND and ScatterElements with reduction 'mul',
their indices initializers (known at import), against numpy applying the updates one by one in
index order, as ONNX's reference does (an element written k times is multiplied k times).

  check_scatter_mul.py models DIR        writes DIR/<name>.onnx and DIR/<name>/{data,updates}.npy,
                                         and the models of the two errors
  check_scatter_mul.py check NAME DIR OUT  compares OUT/y.npy with the reference, exactly
"""
import pathlib
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

CASES = {
    # Row 1 written four times (-4 is row 1 too), row 3 once.
    "nd-rows": ("ScatterND", [5, 3], np.array([[1], [3], [-4], [1], [1]]), [5, 3], {}),
    # 2-tuples into [3, 4, 2]: slices of 2, one written twice, one addressed from the end.
    "nd-tuples": ("ScatterND", [3, 4, 2], np.array([[0, 1], [2, 3], [0, 1], [-1, -1]]), [4, 2],
                  {}),
    # Along axis 1 of [3, 5], indices [3, 3]: duplicates within a row, a negative index.
    "elements": ("ScatterElements", [3, 5], np.array([[0, 4, 0], [2, 2, -1], [1, 1, 1]]), [3, 3],
                 {"axis": 1}),
}


def reference(op, data, indices, updates, axis=0):
    out = data.copy()  # f32, each product rounded, as the reference's numpy computes
    if op == "ScatterND":
        for t in np.ndindex(indices.shape[:-1]):
            out[tuple(indices[t])] *= updates[t]
    else:
        for p in np.ndindex(indices.shape):
            q = list(p)
            q[axis] = indices[p]
            out[tuple(q)] *= updates[p]
    return out


def model(path, op, data_shape, indices, update_shape, attrs):
    node = helper.make_node(op, ["data", "indices", "updates"], ["y"], reduction="mul", **attrs)
    graph = helper.make_graph(
        [node], "scatter_mul",
        [helper.make_tensor_value_info("data", TensorProto.FLOAT, data_shape),
         helper.make_tensor_value_info("updates", TensorProto.FLOAT, update_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, data_shape)],
        [numpy_helper.from_array(indices.astype(np.int64), "indices")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)]), str(path))


if sys.argv[1] == "models":
    d = pathlib.Path(sys.argv[2])
    rng = np.random.default_rng(3)
    for name, (op, shape, indices, update_shape, attrs) in CASES.items():
        model(d / f"{name}.onnx", op, shape, indices, update_shape, attrs)
        (d / name).mkdir(exist_ok=True)
        np.save(d / name / "data.npy", rng.standard_normal(shape).astype(np.float32))
        np.save(d / name / "updates.npy",
                rng.uniform(0.5, 2.0, update_shape).astype(np.float32) *
                rng.choice([-1, 1], update_shape).astype(np.float32))
    model(d / "out-of-range.onnx", "ScatterND", [5, 3], np.array([[1], [5]]), [2, 3], {})
    model(d / "many-rounds.onnx", "ScatterND", [2, 1], np.zeros((4097, 1)), [4097, 1], {})
    sys.exit(0)

name, d, out = sys.argv[2], pathlib.Path(sys.argv[3]), pathlib.Path(sys.argv[4])
op, _, indices, _, attrs = CASES[name]
data, updates = np.load(d / name / "data.npy"), np.load(d / name / "updates.npy")
expect = reference(op, data, indices, updates, attrs.get("axis", 0))
got = np.load(out / "y.npy")
if got.shape != expect.shape or not np.array_equal(got, expect):
    print(f"{name}: plait {got.tolist()}, reference {expect.tolist()}")
    sys.exit(1)
print(f"{name}: ok ({int((expect != data).sum())} of {expect.size} elements multiplied)")
