"""data-shape.test's models, and checks of plait's NonZero, Compress and Unique against numpy.

  check_data_shape.py models DIR    writes DIR/{ops,runtime}.onnx and DIR/x.npy
  check_data_shape.py check DIR OUT compares OUT/*.npy with numpy on DIR/x.npy and the
                                    models' constants
"""
import pathlib
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

COND = np.array([True, False, True, True, False])  # shorter than x's axis 1 (6)
BIG = np.array([[2**60 + 1, 5, 2**60, 5], [2**60 + 1, 5, 2**60, 5], [7, -3, 7, 0]],
               dtype=np.int64)  # above 2^53: equal as doubles, not as integers
MASK = np.array([[0.0, 1.5, 0.0], [-2.0, 0.0, 0.0]], dtype=np.float32)

MODE, DIR = sys.argv[1], pathlib.Path(sys.argv[2])
if MODE == "models":
    inits = [numpy_helper.from_array(COND, "cond"), numpy_helper.from_array(BIG, "big"),
             numpy_helper.from_array(MASK, "mask")]
    nodes = [helper.make_node("Compress", ["x", "cond"], ["kept"], axis=1),
             helper.make_node("Compress", ["x", "cond"], ["flat"]),
             helper.make_node("Unique", ["big"], ["uy", "ui", "uinv", "uc"], axis=1, sorted=1),
             helper.make_node("Unique", ["big"], ["vy", "vi", "vinv", "vc"], sorted=0),
             helper.make_node("NonZero", ["mask"], ["nz"])]
    f32, i64 = TensorProto.FLOAT, TensorProto.INT64
    outs = [helper.make_tensor_value_info(n, t, s) for n, t, s in
            [("kept", f32, [4, 3]), ("flat", f32, [3]), ("uy", i64, [3, 4]), ("ui", i64, [4]),
             ("uinv", i64, [4]), ("uc", i64, [4]), ("vy", i64, [6]), ("vi", i64, [6]),
             ("vinv", i64, [12]), ("vc", i64, [6]), ("nz", i64, [2, 2])]]
    x = helper.make_tensor_value_info("x", f32, [4, 6])
    graph = helper.make_graph(nodes, "ops", [x], outs, inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]),
              str(DIR / "ops.onnx"))
    runtime = helper.make_graph([helper.make_node("NonZero", ["x"], ["nz"])], "runtime", [x],
                                [helper.make_tensor_value_info("nz", i64, [2, "count"])])
    onnx.save(helper.make_model(runtime, opset_imports=[helper.make_opsetid("", 13)]),
              str(DIR / "runtime.onnx"))
    np.save(DIR / "x.npy", np.random.default_rng(1).standard_normal((4, 6)).astype(np.float32))
    sys.exit(0)

out = pathlib.Path(sys.argv[3])
x = np.load(DIR / "x.npy")
got = lambda n: np.load(out / f"{n}.npy")
checks = {
    "kept": np.compress(COND, x, axis=1),
    "flat": np.compress(COND, x),
    "nz": np.array(np.nonzero(MASK)),
}
uy, ui, uinv, uc = np.unique(BIG, axis=1, return_index=True, return_inverse=True,
                             return_counts=True)
checks.update(uy=uy, ui=ui, uinv=uinv, uc=uc)
vy, vi, vinv, vc = np.unique(BIG, return_index=True, return_inverse=True, return_counts=True)
first = np.argsort(vi)  # sorted=0: in the order of first occurrence
checks.update(vy=vy[first], vi=vi[first], vinv=np.argsort(first)[vinv], vc=vc[first])
for name, want in checks.items():
    g = got(name)
    print(name, "ok" if g.shape == want.shape and np.array_equal(g, want) else
          f"MISMATCH {g.tolist()} vs {want.tolist()}")
