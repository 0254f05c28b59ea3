"""TopK's outputs in topk.test against numpy's stable sorts (ties: the lower index first; NaN
larger than every number, as in torch.topk).

  check_topk.py X.npy OUT               the small model's four TopKs (topk.onnx)
  check_topk.py make-vocab DIR          writes DIR/vocab.onnx and its inputs DIR/x.npy, DIR/u.npy
  check_topk.py check-vocab DIR OUT     checks the vocabulary model's outputs in OUT
"""
import sys

import numpy as np


def order(x, k, largest, axis=-1):
    """The first k indices along `axis` in TopK's order."""
    x = np.moveaxis(x, axis, -1)
    flat = x.reshape(-1, x.shape[-1])
    rows = []
    for row in flat:
        nan = np.isnan(row) if row.dtype.kind == "f" else np.zeros(row.shape, bool)
        value = np.where(nan, 0, row)
        index = np.arange(row.size)
        if largest:  # NaN first, then the largest
            keys = (index, -value.astype(np.float64) if row.dtype.kind == "f" else
                    -value.astype(np.int64), ~nan)
        else:  # the smallest first, NaN last
            keys = (index, value, nan)
        rows.append(np.lexsort(keys)[:k])
    out = np.array(rows).reshape(x.shape[:-1] + (k,))
    return np.moveaxis(out, -1, axis)


def same(name, x, at, values, k, largest, axis=-1):
    want = order(x, k, largest, axis)
    ok = (at.shape == want.shape and np.array_equal(at, want) and
          np.array_equal(values, np.take_along_axis(x, want, axis), equal_nan=True))
    if ok:
        return f"{name} ok"
    wrong = np.argwhere(at != want)[:3].tolist() if at.shape == want.shape else at.shape
    return f"{name} MISMATCH at {wrong}"


def small(x_path, out):
    x = np.load(x_path)
    for name, k, largest in [("big", 4, True), ("small", 3, False), ("rank_big", 10, True),
                             ("rank_small", 9, False)]:
        print(same(name, x, np.load(f"{out}/{name}_at.npy"), np.load(f"{out}/{name}.npy"), k,
                   largest))


# The vocabulary model: (output, input, K, largest, axis).
VOCAB = [("sample", "x", 50, True, 1), ("low", "x", 1000, False, 1), ("pair", "x", 2, True, 0),
         ("whole", "x", 3, False, 0), ("bytes", "u", 7, True, -1)]


def make_vocab(d):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(7)
    x = rng.standard_normal((3, 50257)).astype(np.float32)
    x[0, 100:140] = 2.5  # ties inside the first K
    x[1, [7, 9000, 40000]] = np.nan
    x[1, 123] = np.inf
    x[2, 5:2000] = -np.inf  # ties at the bottom
    x[2, 3], x[2, 4] = 0.0, -0.0  # equal
    u = rng.integers(0, 4, (2, 300)).astype(np.uint8)  # mostly ties
    np.save(f"{d}/x.npy", x)
    np.save(f"{d}/u.npy", u)
    shapes = {"x": list(x.shape), "u": list(u.shape)}
    types = {"x": TensorProto.FLOAT, "u": TensorProto.UINT8}
    nodes, outputs, inits = [], [], []
    for name, src, k, largest, axis in VOCAB:
        shape = list(shapes[src])
        shape[axis] = k
        inits.append(numpy_helper.from_array(np.array([k], np.int64), f"k_{name}"))
        nodes.append(helper.make_node("TopK", [src, f"k_{name}"], [name, f"{name}_at"],
                                      name=name, axis=axis, largest=int(largest)))
        outputs += [helper.make_tensor_value_info(name, types[src], shape),
                    helper.make_tensor_value_info(f"{name}_at", TensorProto.INT64, shape)]
    graph = helper.make_graph(nodes, "vocab", [
        helper.make_tensor_value_info(n, types[n], shapes[n]) for n in ("x", "u")], outputs,
        initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    onnx.save(model, f"{d}/vocab.onnx")


def check_vocab(d, out):
    inputs = {"x": np.load(f"{d}/x.npy"), "u": np.load(f"{d}/u.npy")}
    for name, src, k, largest, axis in VOCAB:
        print(same(name, inputs[src], np.load(f"{out}/{name}_at.npy"),
                   np.load(f"{out}/{name}.npy"), k, largest, axis))


if __name__ == "__main__":
    if sys.argv[1] == "make-vocab":
        make_vocab(sys.argv[2])
    elif sys.argv[1] == "check-vocab":
        check_vocab(sys.argv[2], sys.argv[3])
    else:
        small(sys.argv[1], sys.argv[2])
