"""Writes training-ops.test's models and inputs, or checks plait's outputs against onnx's
reference implementations of the training-domain ops (onnx.backend.test.case.node).

  check_training_ops.py models DIR   writes DIR/{adam,momentum,adagrad}.onnx, their inputs
                                     (DIR/in/*.npy; T in DIR/t0.npy, t3.npy) and the bad models
  check_training_ops.py check DIR CASE OUT T
                                     compares OUT/*.npy (CASE adam, momentum or adagrad, run
                                     with update count T) with the reference's outputs
"""
import pathlib
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper
from onnx.backend.test.case.node.adagrad import apply_adagrad
from onnx.backend.test.case.node.adam import apply_adam
from onnx.backend.test.case.node.momentum import apply_momentum, apply_nesterov

DOMAIN = "ai.onnx.preview.training"
SHAPES = [(3, 4), (5,)]
# Each case: element type, state kinds, attributes.
CASES = {
    "adam": (np.float32, ["V", "H"], dict(alpha=0.9, beta=0.99, epsilon=1e-6,
                                          norm_coefficient=0.01, norm_coefficient_post=0.001)),
    "momentum": (np.float64, ["V"], dict(alpha=0.9, beta=0.5, mode="nesterov",
                                         norm_coefficient=0.02)),
    "adagrad": (np.float32, ["H"], dict(decay_factor=0.3, epsilon=1e-5, norm_coefficient=0.01)),
}


def model(name, dtype, kinds, attrs, version=1, inputs=None):
    elem = TensorProto.FLOAT if dtype == np.float32 else TensorProto.DOUBLE
    names = ["X", "G"] + kinds
    ins = inputs or ["R", "T"] + [f"{k}{i}" for k in names for i in range(len(SHAPES))]
    outs = [f"{k}{i}_new" for k in ["X"] + kinds for i in range(len(SHAPES))]
    node = helper.make_node(name.capitalize(), ins, outs,
                            domain=DOMAIN, **attrs)
    value = lambda n, t, s: helper.make_tensor_value_info(n, t, s)
    graph_inputs = [value(n, elem, []) if n == "R" else value(n, TensorProto.INT64, [])
                    if n == "T" else value(n, elem, SHAPES[int(n[-1])]) for n in ins]
    graph_outputs = [value(o, elem, SHAPES[int(o[-5])]) for o in outs]
    graph = helper.make_graph([node], name, graph_inputs, graph_outputs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid(DOMAIN, version)])


MODE, DIR = sys.argv[1], pathlib.Path(sys.argv[2])
if MODE == "models":
    rng = np.random.default_rng(3)
    for name, (dtype, kinds, attrs) in CASES.items():
        onnx.save(model(name, dtype, kinds, attrs), DIR / f"{name}.onnx")
        d = DIR / "in" / name
        d.mkdir(parents=True, exist_ok=True)
        np.save(d / "R.npy", np.array(0.05, dtype=dtype))
        for k in ["X", "G"] + kinds:
            for i, shape in enumerate(SHAPES):
                v = rng.standard_normal(shape).astype(dtype)
                np.save(d / f"{k}{i}.npy", np.abs(v) if k == "H" else v)
    np.save(DIR / "t0.npy", np.array(0, dtype=np.int64))
    np.save(DIR / "t3.npy", np.array(3, dtype=np.int64))
    dtype, kinds, attrs = CASES["adam"]
    onnx.save(model("adam", dtype, kinds, attrs, version=2), DIR / "bad_version.onnx")
    onnx.save(model("adam", dtype, kinds, attrs, inputs=["R", "T", "X0", "G0", "V0"]),
              DIR / "bad_inputs.onnx")
    sys.exit(0)

case, out, t = sys.argv[3], pathlib.Path(sys.argv[4]), int(sys.argv[5])
dtype, kinds, attrs = CASES[case]
d = DIR / "in" / case
load = lambda n: np.load(d / f"{n}.npy")
r, t = load("R"), np.array(t, dtype=np.int64)
worst, ok = 0.0, True
for i in range(len(SHAPES)):
    x, g = load(f"X{i}"), load(f"G{i}")
    if case == "adam":
        want = apply_adam(r, t, x, g, load(f"V{i}"), load(f"H{i}"), attrs["norm_coefficient"],
                          attrs["norm_coefficient_post"], attrs["alpha"], attrs["beta"],
                          attrs["epsilon"])
    elif case == "momentum":
        want = apply_nesterov(r, t, x, g, load(f"V{i}"), attrs["norm_coefficient"],
                              attrs["alpha"], attrs["beta"])
    else:
        want = apply_adagrad(r, t, x, g, load(f"H{i}"), attrs["norm_coefficient"],
                             attrs["epsilon"], attrs["decay_factor"])
    for k, w in zip(["X"] + kinds, want):
        got = np.load(out / f"{k}{i}_new.npy")
        ok &= got.dtype == dtype and got.shape == w.shape
        err = float(np.max(np.abs(got - w) / (np.abs(w) + 1e-6)))
        worst = max(worst, err)
tol = 1e-6 if dtype == np.float32 else 1e-13
print(f"{case} T={t}:", "ok" if ok and worst <= tol else f"MISMATCH (max rel {worst:.3g})")
