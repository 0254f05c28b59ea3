"""roi-align.test's models and inputs, and a loop-by-loop numpy reference of ONNX RoiAlign (the
algorithm of ONNX's reference implementation and onnxruntime: bilinear samples on a per-bin
grid, averaged or maxed), in double precision, against which plait's outputs are checked.

  check_roi_align.py models DIR               writes DIR/{max,f64}.onnx and their inputs,
                                              and DIR/adaptive.onnx (sampling_ratio 0)
  check_roi_align.py check MODEL IN_DIR OUT   compares OUT/<output>.npy with the reference of
                                              MODEL's RoiAlign on IN_DIR's X, rois, batch
                                              indices (.pb or .npy)
  check_roi_align.py rounded MODEL TEST_DIR OUT  also: the node test's expected output is
                                              the reference cut to 4 decimals (a multiple of
                                              1e-4 within 1e-4 of it, element for element)
"""
import math
import pathlib
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def bilinear(img, y, x):
    """The four (weight, value) taps of one sample, as the reference computes them."""
    h, w = img.shape
    if y < -1.0 or y > h or x < -1.0 or x > w:
        return [(0.0, 0.0)] * 4
    y, x = max(y, 0.0), max(x, 0.0)
    yl, xl = int(y), int(x)
    if yl >= h - 1:
        yh = yl = h - 1
        y = float(yl)
    else:
        yh = yl + 1
    if xl >= w - 1:
        xh = xl = w - 1
        x = float(xl)
    else:
        xh = xl + 1
    ly, lx = y - yl, x - xl
    hy, hx = 1 - ly, 1 - lx
    return [(hy * hx, img[yl, xl]), (hy * lx, img[yl, xh]), (ly * hx, img[yh, xl]),
            (ly * lx, img[yh, xh])]


def roi_align(x, rois, batch, oh, ow, ratio, scale, mode, half_pixel):
    r, c = rois.shape[0], x.shape[1]
    out = np.zeros((r, c, oh, ow))
    offset = 0.5 if half_pixel else 0.0
    for n in range(r):
        x1, y1, x2, y2 = (float(v) * scale - offset for v in rois[n])
        rw, rh = x2 - x1, y2 - y1
        if not half_pixel:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        bh, bw = rh / oh, rw / ow
        gh = ratio or math.ceil(rh / oh)
        gw = ratio or math.ceil(rw / ow)
        count = max(gh * gw, 1)
        for ch in range(c):
            img = x[batch[n], ch].astype(np.float64)
            for ph in range(oh):
                for pw in range(ow):
                    acc = 0.0 if mode == "avg" else -math.inf
                    for iy in range(gh):
                        yy = y1 + ph * bh + (iy + 0.5) * bh / gh
                        for ix in range(gw):
                            xx = x1 + pw * bw + (ix + 0.5) * bw / gw
                            taps = [wt * v for wt, v in bilinear(img, yy, xx)]
                            acc = acc + sum(taps) if mode == "avg" else max(acc, *taps)
                    out[n, ch, ph, pw] = acc / count if mode == "avg" else acc
    return out


def node_attrs(model_path):
    model = onnx.load(str(model_path))
    node = next(n for n in model.graph.node if n.op_type == "RoiAlign")
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    get = lambda k, d: attrs[k].decode() if isinstance(attrs.get(k), bytes) else attrs.get(k, d)
    return (model, int(get("output_height", 1)), int(get("output_width", 1)),
            int(get("sampling_ratio", 0)), float(get("spatial_scale", 1.0)), get("mode", "avg"),
            get("coordinate_transformation_mode", "half_pixel") == "half_pixel")


def load(directory, name, index):
    d = pathlib.Path(directory)
    if (d / f"{name}.npy").exists():
        return np.load(d / f"{name}.npy")
    return numpy_helper.to_array(onnx.load_tensor(str(d / f"input_{index}.pb")))


def model(path, dtype, x_shape, rois, out_shape, **attrs):
    elem = TensorProto.FLOAT if dtype == np.float32 else TensorProto.DOUBLE
    node = helper.make_node("RoiAlign", ["X", "rois", "batch_indices"], ["Y"], **attrs)
    graph = helper.make_graph(
        [node], "roi_align",
        [helper.make_tensor_value_info("X", elem, x_shape),
         helper.make_tensor_value_info("rois", elem, [rois, 4]),
         helper.make_tensor_value_info("batch_indices", TensorProto.INT64, [rois])],
        [helper.make_tensor_value_info("Y", elem, out_shape)])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)]), str(path))


MODE = sys.argv[1]
if MODE == "models":
    d = pathlib.Path(sys.argv[2])
    rng = np.random.default_rng(5)
    # Two images; regions inside, over the border, past it (zeros), degenerate (x2 < x1).
    rois = np.array([[1.0, 2.0, 9.5, 7.0], [-3.0, -2.0, 4.0, 12.0], [14.0, 1.0, 30.0, 5.0],
                     [6.0, 6.0, 5.0, 5.5], [0.0, 0.0, 15.9, 11.9]])
    batch = np.array([0, 1, 1, 0, 1], dtype=np.int64)
    for name, dtype, attrs in (
            ("max", np.float32, dict(mode="max", output_height=3, output_width=4,
                                     sampling_ratio=3, spatial_scale=0.5)),
            ("f64", np.float64, dict(coordinate_transformation_mode="output_half_pixel",
                                     output_height=2, output_width=2, sampling_ratio=2))):
        model(d / f"{name}.onnx", dtype, [2, 3, 12, 16], len(rois),
              [len(rois), 3, attrs["output_height"], attrs["output_width"]], **attrs)
        (d / name).mkdir(exist_ok=True)
        np.save(d / name / "X.npy", rng.standard_normal((2, 3, 12, 16)).astype(dtype))
        np.save(d / name / "rois.npy", (rois * (2.0 if name == "max" else 1.0)).astype(dtype))
        np.save(d / name / "batch_indices.npy", batch)
    model(d / "adaptive.onnx", np.float32, [2, 3, 12, 16], len(rois), [len(rois), 3, 1, 1])
    sys.exit(0)

model_path, inputs, out = sys.argv[2], sys.argv[3], pathlib.Path(sys.argv[4])
m, oh, ow, ratio, scale, mode, half = node_attrs(model_path)
x, rois, batch = (load(inputs, n, i) for i, n in enumerate(["X", "rois", "batch_indices"]))
want = roi_align(x, rois, batch, oh, ow, ratio, scale, mode, half)
got = np.load(out / "Y.npy")
err = float(np.max(np.abs(got - want)))
tol = 1e-12 if got.dtype == np.float64 else 2e-6
print(f"{pathlib.Path(model_path).parent.name if MODE == 'rounded' else pathlib.Path(model_path).stem}: "
      f"{'ok' if got.shape == want.shape and err <= tol else 'MISMATCH'} (max abs diff {err:.1e})")
if MODE == "rounded":
    expected = numpy_helper.to_array(onnx.load_tensor(str(pathlib.Path(inputs) / "output_0.pb")))
    # Cut to 4 decimals, some rounded and some truncated (0.97278 is written 0.9727, 0.75015
    # 0.7502): every expected value a multiple of 1e-4 within 1e-4 of the reference.
    off = float(np.max(np.abs(expected - want)))
    grid = float(np.max(np.abs(expected * 1e4 - np.round(expected * 1e4))))
    print(f"the test's data is the reference cut to 4 decimals: {off < 1e-4 and grid < 1e-3}")
