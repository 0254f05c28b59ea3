"""A small NumPy interpreter for the ONNX ops the samples use (opset 14).

It is an independent check of the exported files, not a backend: it confirms that each
committed sample .onnx computes PyTorch's expected outputs (so a plait mismatch is plait's),
and it stands in for plait in the conformance runner's self-test. Unknown ops raise
NotImplementedError("unsupported op ...").
"""
import math

import numpy as np
from onnx import helper, mapping, numpy_helper

_ERF = np.vectorize(math.erf, otypes=[np.float64])


def _attrs(node):
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    return {k: v.decode() if isinstance(v, bytes) else v for k, v in attrs.items()}


def _pool_windows(x, kernel, strides, pads):
    n, c, h, w = x.shape
    kh, kw = kernel
    sh, sw = strides
    oh = (h + pads[0] + pads[2] - kh) // sh + 1
    ow = (w + pads[1] + pads[3] - kw) // sw + 1
    return oh, ow


def _conv2d(x, w, b, a):
    pads = a.get("pads", [0, 0, 0, 0])
    strides = a.get("strides", [1, 1])
    dil = a.get("dilations", [1, 1])
    assert a.get("group", 1) == 1 and dil == [1, 1], "conv: only group=1, dilation=1"
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    n, c, h, wd = xp.shape
    m, _, kh, kw = w.shape
    oh = (h - kh) // strides[0] + 1
    ow = (wd - kw) // strides[1] + 1
    out = np.zeros((n, m, oh, ow), dtype=np.float64)
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, :, i:i + strides[0] * oh:strides[0], j:j + strides[1] * ow:strides[1]]
            out += np.einsum("nchw,mc->nmhw", patch, w[:, :, i, j])
    if b is not None:
        out += b.reshape(1, -1, 1, 1)
    return out.astype(x.dtype)


def _pool(x, a, reduce):
    kernel, strides = a["kernel_shape"], a.get("strides", [1, 1])
    pads = a.get("pads", [0, 0, 0, 0])
    assert not a.get("ceil_mode", 0) and not any(pads), "pool: only ceil_mode=0, no pads"
    oh, ow = _pool_windows(x, kernel, strides, pads)
    windows = [x[:, :, i:i + strides[0] * oh:strides[0], j:j + strides[1] * ow:strides[1]]
               for i in range(kernel[0]) for j in range(kernel[1])]
    return reduce(np.stack(windows), axis=0).astype(x.dtype)


def _softmax_ce(logits, labels, a):
    assert a.get("reduction", "mean") == "mean"
    ignore = a.get("ignore_index", None)
    x = logits.astype(np.float64)
    x = x - x.max(axis=1, keepdims=True)
    logp = x - np.log(np.exp(x).sum(axis=1, keepdims=True))
    if logp.ndim > 2:  # [N, C, d1...] → [N*d..., C]
        logp = np.moveaxis(logp, 1, -1).reshape(-1, logp.shape[1])
    labels = labels.reshape(-1)
    keep = labels != ignore if ignore is not None else np.ones_like(labels, dtype=bool)
    picked = -logp[np.arange(labels.size)[keep], labels[keep]]
    return np.array(picked.sum() / keep.sum(), dtype=logits.dtype)


def _reshape(x, shape, allowzero):
    shape = [int(s) for s in shape]
    if not allowzero:
        shape = [x.shape[i] if s == 0 else s for i, s in enumerate(shape)]
    return x.reshape(shape)


def _slice(x, starts, ends, axes=None, steps=None):
    axes = range(len(starts)) if axes is None else axes
    steps = [1] * len(starts) if steps is None else steps
    index = [slice(None)] * x.ndim
    for s, e, ax, st in zip(starts, ends, axes, steps):
        index[int(ax)] = slice(int(s), int(max(min(e, 2**62), -2**62)), int(st))
    return x[tuple(index)]


def _split(x, split, a, nout):
    axis = a.get("axis", 0)
    if split is None:
        split = [x.shape[axis] // nout] * nout
    return np.split(x, np.cumsum(split)[:-1], axis=axis)


def _gemm(a_, b_, c_, a):
    if a.get("transA", 0):
        a_ = a_.T
    if b_ is not None and a.get("transB", 0):
        b_ = b_.T
    y = a.get("alpha", 1.0) * (a_ @ b_)
    if c_ is not None:
        y = y + a.get("beta", 1.0) * c_
    return y.astype(a_.dtype)


def _cast(x, to):
    return x.astype(mapping.TENSOR_TYPE_TO_NP_TYPE[to])


def _run_node(node, ins):
    a = _attrs(node)
    op = node.op_type
    x = ins[0] if ins else None
    if op == "Constant":
        return [numpy_helper.to_array(a["value"])]
    if op in ("Add", "Sub", "Mul", "Div", "Pow", "Equal"):
        f = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide,
             "Pow": np.power, "Equal": np.equal}[op]
        if op == "Div" and np.issubdtype(x.dtype, np.integer):
            return [(x // ins[1]).astype(x.dtype)]
        r = f(x, ins[1])
        return [r if op == "Equal" else r.astype(x.dtype)]
    if op == "Relu":
        return [np.maximum(x, 0).astype(x.dtype)]
    if op == "Erf":
        return [_ERF(x).astype(x.dtype)]
    if op == "Sqrt":
        return [np.sqrt(x)]
    if op == "Identity":
        return [x]
    if op == "Gemm":
        return [_gemm(x, ins[1], ins[2] if len(ins) > 2 else None, a)]
    if op == "MatMul":
        return [np.matmul(x, ins[1])]
    if op == "Transpose":
        return [np.transpose(x, a.get("perm"))]
    if op == "Conv":
        return [_conv2d(x, ins[1], ins[2] if len(ins) > 2 else None, a)]
    if op == "MaxPool":
        return [_pool(x, a, np.max)]
    if op == "AveragePool":
        return [_pool(x, a, np.mean)]
    if op == "Pad":
        assert a.get("mode", "constant") == "constant"
        pads = ins[1].astype(int)
        value = ins[2] if len(ins) > 2 and ins[2] is not None else 0
        r = x.ndim
        return [np.pad(x, [(pads[i], pads[i + r]) for i in range(r)], constant_values=value)]
    if op == "Flatten":
        ax = a.get("axis", 1)
        return [x.reshape(int(np.prod(x.shape[:ax])), -1)]
    if op == "SoftmaxCrossEntropyLoss":
        return [_softmax_ce(x, ins[1], a)]
    if op == "Softmax":
        ax = a.get("axis", -1)
        e = np.exp(x - x.max(axis=ax, keepdims=True))
        return [(e / e.sum(axis=ax, keepdims=True)).astype(x.dtype)]
    if op == "ReduceMean":
        axes = tuple(a["axes"]) if "axes" in a else None
        return [x.mean(axis=axes, keepdims=bool(a.get("keepdims", 1))).astype(x.dtype)]
    if op == "Shape":
        return [np.array(x.shape, dtype=np.int64)]
    if op == "Gather":
        return [np.take(x, ins[1], axis=a.get("axis", 0))]
    if op == "Unsqueeze":
        axes = sorted(int(v) % (x.ndim + len(ins[1])) for v in ins[1])
        for ax in axes:
            x = np.expand_dims(x, ax)
        return [x]
    if op == "Squeeze":
        axes = tuple(int(v) for v in ins[1]) if len(ins) > 1 else None
        return [np.squeeze(x, axis=axes)]
    if op == "Concat":
        return [np.concatenate(ins, axis=a["axis"])]
    if op == "Reshape":
        return [_reshape(x, ins[1], a.get("allowzero", 0))]
    if op == "Cast":
        return [_cast(x, a["to"])]
    if op == "Range":
        return [np.arange(ins[0], ins[1], ins[2]).astype(ins[0].dtype)]
    if op == "ConstantOfShape":
        value = numpy_helper.to_array(a["value"]) if "value" in a else np.zeros(1, np.float32)
        return [np.full(tuple(int(d) for d in x), value.reshape(-1)[0], dtype=value.dtype)]
    if op == "Trilu":
        k = int(ins[1]) if len(ins) > 1 else 0
        return [np.triu(x, k) if a.get("upper", 1) else np.tril(x, k)]
    if op == "Where":
        return [np.where(x, ins[1], ins[2])]
    if op == "Slice":
        return [_slice(x, *[i if i is None else list(i) for i in ins[1:]])]
    if op == "Split":
        return _split(x, ins[1] if len(ins) > 1 else None, a, len(node.output))
    if op == "Neg":
        return [-x]
    raise NotImplementedError("unsupported op %s" % op)


def run_model(model, feeds):
    """Evaluates `model` (onnx.ModelProto) on feeds {input name: ndarray}; returns outputs in order."""
    values = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    values.update(feeds)
    for node in model.graph.node:
        ins = [values[n] if n else None for n in node.input]
        outs = _run_node(node, ins)
        for name, v in zip(node.output, outs):
            values[name] = np.asarray(v)
    return [values[o.name] for o in model.graph.output]
