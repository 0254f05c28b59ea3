#!/usr/bin/python3
"""Checks the importer's numerics on ONNX node tests without the plait runtime.

Usage: node_test_numerics.py [--data DIR] [--filter S] [--verbose] -- IMPORT_COMMAND...
  e.g. node_test_numerics.py -- bash -o pipefail -c \
         "plait-compile {model} {args} --emit mlir -o - | plait-opt --mlir-print-op-generic"

IMPORT_COMMAND must print the imported module in MLIR's generic op form on stdout. {model} is
replaced by the model path; `--const-input NAME=FILE` arguments, added as the import asks for
them, replace {args} (or are appended when there is no {args}).
A small numpy interpreter of the plait ops runs the module on test_data_set_0's inputs and
compares with the expected outputs, so a wrong mapping, decomposition, folding or attribute shows
up as a MISMATCH, independent of the kernels. Exit status 1 when any test mismatches.
"""
import argparse
import glob
import math
import os
import re
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from node_test_sweep import CONST_INPUT, input_files  # noqa: E402

# --------------------------------------------------------------------------------------------
# Parsing the generic form
# --------------------------------------------------------------------------------------------

DTYPES = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "bf16": np.float32,
          "i64": np.int64, "i32": np.int32, "i1": np.bool_}


def parse_type(text):
    m = re.fullmatch(r"tensor<(.*)>", text.strip())
    parts = m.group(1).split("x")
    return tuple(int(p) for p in parts[:-1]), parts[-1]


def split_top(text, sep=","):
    """Splits at `sep` outside brackets, braces, angle brackets and quotes."""
    out, depth, cur, quote = [], 0, "", False
    for ch in text:
        if ch == '"':
            quote = not quote
        elif not quote and ch in "([{<":
            depth += 1
        elif not quote and ch in ")]}>":
            depth -= 1
        if ch == sep and depth == 0 and not quote:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur)
    return [p.strip() for p in out]


def parse_scalar_token(tok, elem):
    tok = tok.strip()
    if tok in ("true", "false"):
        return tok == "true"
    if tok.startswith("0x") and elem.startswith(("f", "bf")):
        bits = int(tok, 16)
        if elem == "f32":
            return np.frombuffer(np.uint32(bits).tobytes(), np.float32)[0]
        if elem == "f64":
            return np.frombuffer(np.uint64(bits).tobytes(), np.float64)[0]
        if elem == "f16":
            return np.frombuffer(np.uint16(bits).tobytes(), np.float16)[0]
        if elem == "bf16":
            return np.frombuffer(np.uint32(bits << 16).tobytes(), np.float32)[0]
    return float(tok) if elem.startswith(("f", "bf")) else int(tok, 0)


def parse_dense(body, shape, elem):
    dtype = DTYPES[elem]
    body = body.strip()
    if not body:  # dense<> of an empty tensor
        return np.zeros(shape, dtype)
    if body.startswith('"0x'):
        raw = bytes.fromhex(body[3:-1])
        if elem == "bf16":
            arr = np.frombuffer(raw, np.uint16).astype(np.uint32) << 16
            arr = arr.view(np.float32)
        elif elem == "i1":
            arr = np.frombuffer(raw, np.uint8).astype(bool)
        else:
            arr = np.frombuffer(raw, dtype)
        n = int(np.prod(shape))
        return (np.full(shape, arr[0]) if arr.size == 1 and n != 1 else arr.reshape(shape)).astype(dtype)
    if not body.startswith("["):
        return np.full(shape, parse_scalar_token(body, elem), dtype=dtype)
    tokens = re.findall(r"\[|\]|\(|\)|[^\[\](),\s]+", body)
    values = [parse_scalar_token(t, elem) for t in tokens if t not in "[]()"]
    values = [complex(v).real if isinstance(v, complex) else v for v in values]
    return np.array(values, dtype=dtype).reshape(shape)


def parse_attr(text):
    text = text.strip()
    m = re.fullmatch(r"dense<(.*)>\s*:\s*(tensor<.*>)", text, re.S)
    if m:
        shape, elem = parse_type(m.group(2))
        return parse_dense(m.group(1), shape, elem)
    m = re.fullmatch(r"array<i64(?::(.*))?>", text)
    if m:
        return [int(v) for v in m.group(1).split(",")] if m.group(1) else []
    m = re.fullmatch(r"(.*?)\s*:\s*(i64|f64|i32|f32|i1)", text)
    if m:
        return float(m.group(1)) if m.group(2).startswith("f") else int(m.group(1))
    if text in ("true", "false"):
        return text == "true"
    if text.startswith('"'):
        return text[1:-1]
    return text


def parse_attr_dict(text):
    attrs = {}
    for item in split_top(text):
        key, _, value = item.partition("=")
        attrs[key.strip()] = parse_attr(value)
    return attrs


OP_RE = re.compile(r'^(?:(%[\w#]+)(?::(\d+))?\s*=\s*)?"([\w.]+)"\((.*?)\)\s*(<\{.*\}>)?\s*(\{.*\})?\s*:\s*\((.*?)\)\s*->\s*(.*)$')


def parse_module(text):
    """Returns (argument names in order, ops as (results, name, operands, attrs, result types))."""
    args, ops = [], []
    for line in text.splitlines():
        line = line.strip()
        m = re.match(r"\^bb0\((.*)\):", line)
        if m:
            args = [(a.split(":")[0].strip(), parse_type(a.split(":", 1)[1]))
                    for a in split_top(m.group(1))]
            continue
        m = OP_RE.match(line)
        if not m or m.group(3) in ("builtin.module", "func.func"):
            continue
        result, count, name, operands, props, attrs, _, out_types = m.groups()
        attributes = {}
        if props:
            attributes.update(parse_attr_dict(props[2:-2]))
        if attrs:
            attributes.update(parse_attr_dict(attrs[1:-1]))
        out_types = out_types.strip()
        if out_types.startswith("("):
            out_types = out_types[1:-1]
        types = [parse_type(t) for t in split_top(out_types) if t]
        results = []
        if result:
            results = [f"{result}#{i}" for i in range(int(count))] if count else [result]
        ops.append((results, name, [o.strip() for o in operands.split(",") if o.strip()],
                    attributes, types))
    return args, ops


# --------------------------------------------------------------------------------------------
# The plait ops in numpy
# --------------------------------------------------------------------------------------------

def norm_axes(axes, rank):
    return tuple(a + rank if a < 0 else a for a in axes) if axes else tuple(range(rank))


def softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def window_positions(size, kernel, stride, pad_begin, pad_end, dilation, ceil_mode):
    span = dilation * (kernel - 1) + 1
    numer = size + pad_begin + pad_end - span
    out = (-(-numer // stride) if ceil_mode else numer // stride) + 1
    if ceil_mode and (out - 1) * stride >= size + pad_begin:
        out -= 1
    return out


def pool2d(x, a, is_max):
    kh, kw = a["kernel"]
    sh, sw = a["strides"]
    top, left, bottom, right = a["pads"]
    dh, dw = a.get("dilations", [1, 1])
    ceil = a.get("ceil_mode", False)
    n, c, h, w = x.shape
    oh = window_positions(h, kh, sh, top, bottom, dh, ceil)
    ow = window_positions(w, kw, sw, left, right, dw, ceil)
    out = np.zeros((n, c, oh, ow), dtype=np.float64)
    for i in range(oh):
        for j in range(ow):
            vals, count_pad = [], 0
            for p in range(kh):
                for q in range(kw):
                    r, s = i * sh - top + p * dh, j * sw - left + q * dw
                    if 0 <= r < h and 0 <= s < w:
                        vals.append(x[:, :, r, s])
                    if -top <= r < h + bottom and -left <= s < w + right:
                        count_pad += 1
            stack = np.stack(vals, axis=-1).astype(np.float64)
            if is_max:
                out[:, :, i, j] = stack.max(axis=-1)
            else:
                divisor = count_pad if a.get("count_include_pad", False) else len(vals)
                out[:, :, i, j] = stack.sum(axis=-1) / divisor
    return out.astype(x.dtype)


def conv2d(x, w, b, a):
    sh, sw = a["strides"]
    top, left, bottom, right = a["pads"]
    dh, dw = a["dilations"]
    g = a.get("group", 1)
    n, c, h, wd = x.shape
    m, cg, kh, kw = w.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (top, bottom), (left, right)))
    oh = (h + top + bottom - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + left + right - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, m, oh, ow))
    mg = m // g
    for gi in range(g):
        xs = xp[:, gi * cg:(gi + 1) * cg]
        ws = w[gi * mg:(gi + 1) * mg].astype(np.float64)
        for p in range(kh):
            for q in range(kw):
                patch = xs[:, :, p * dh: p * dh + sh * (oh - 1) + 1: sh,
                           q * dw: q * dw + sw * (ow - 1) + 1: sw]
                out[:, gi * mg:(gi + 1) * mg] += np.einsum("nchw,mc->nmhw", patch, ws[:, :, p, q])
    if b is not None:
        out += b.reshape(1, -1, 1, 1)
    return out.astype(x.dtype)


def loss(kind, inp, target, weight, a):
    c = inp.shape[1]
    logp = np.log(softmax(inp.astype(np.float64), 1)) if kind == "sce" else inp.astype(np.float64)
    weight = np.ones(c) if weight is None else weight.astype(np.float64)
    ignore = a.get("ignore_index")
    t = target.astype(np.int64)
    valid = np.ones(t.shape, bool) if ignore is None else t != ignore
    tc = np.where(valid, t, 0)
    picked = np.take_along_axis(logp, np.expand_dims(tc, 1), axis=1).squeeze(1)
    wt = np.where(valid, weight[tc], 0.0)
    l = -wt * picked
    red = a.get("reduction", "mean")
    if red == "none":
        return l.astype(inp.dtype)
    if red == "sum":
        return np.array(l.sum(), inp.dtype)
    return np.array(l.sum() / wt.sum(), inp.dtype)


def int_div(x, y):
    q = np.abs(x) // np.abs(y)
    return (np.sign(x) * np.sign(y) * q).astype(x.dtype)


def evaluate(name, ins, a, types):
    x = ins[0] if ins else None
    shape, elem = types[0] if types else ((), "f32")
    dtype = DTYPES.get(elem, np.float32)
    isf = x is not None and np.issubdtype(x.dtype, np.floating)
    op = name.split(".", 1)[1]
    unary = {"exp": np.exp, "log": np.log, "sqrt": np.sqrt, "rsqrt": lambda v: 1 / np.sqrt(v),
             "reciprocal": lambda v: 1 / v, "tanh": np.tanh, "sin": np.sin, "cos": np.cos,
             "sigmoid": lambda v: 1 / (1 + np.exp(-v)), "floor": np.floor, "ceil": np.ceil,
             "round": np.round, "neg": np.negative, "abs": np.abs, "sign": np.sign,
             "relu": lambda v: np.where(v < 0, 0, v), "not": np.logical_not,
             "erf": np.vectorize(math.erf, otypes=[np.float64]),
             "softplus": lambda v: np.logaddexp(0, v), "silu": lambda v: v / (1 + np.exp(-v))}
    if op in unary:
        return [np.asarray(unary[op](x)).astype(dtype)]
    binary = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "max": np.maximum,
              "min": np.minimum, "equal": np.equal, "less": np.less, "less_equal": np.less_equal,
              "greater": np.greater, "greater_equal": np.greater_equal, "and": np.logical_and,
              "or": np.logical_or, "xor": np.logical_xor}
    if op in binary:
        return [np.asarray(binary[op](ins[0], ins[1])).astype(dtype)]
    if op == "div":
        return [(np.divide(*ins) if isf else int_div(*np.broadcast_arrays(*ins))).astype(dtype)]
    if op == "pow":
        if isf:
            return [np.power(ins[0].astype(np.float64), ins[1]).astype(dtype)]
        return [np.trunc(np.power(ins[0].astype(np.float64), ins[1].astype(np.float64))).astype(dtype)]
    if op == "mod":
        return [(np.fmod(*ins) if isf else np.mod(*ins)).astype(dtype)]
    if op == "where":
        return [np.where(ins[0], ins[1], ins[2]).astype(dtype)]
    if op == "clamp":
        r = x
        if "min" in a:
            r = np.maximum(r, a["min"])
        if "max" in a:
            r = np.minimum(r, a["max"])
        return [r.astype(dtype)]
    if op == "leaky_relu":
        return [np.where(x >= 0, x, a.get("alpha", 0.01) * x).astype(dtype)]
    if op == "elu":
        return [np.where(x > 0, x, a.get("alpha", 1.0) * (np.exp(x) - 1)).astype(dtype)]
    if op == "hard_sigmoid":
        return [np.clip(a.get("alpha", 0.2) * x + a.get("beta", 0.5), 0, 1).astype(dtype)]
    if op == "gelu":
        if a.get("approximate", "none") == "tanh":
            r = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
        else:
            r = 0.5 * x * (1 + unary["erf"](x / math.sqrt(2)))
        return [r.astype(dtype)]
    if op == "cast":
        return [x.astype(dtype)]
    if op in ("reshape", "broadcast_to"):
        return [np.broadcast_to(x, shape).copy() if op == "broadcast_to" else x.reshape(shape)]
    if op == "transpose":
        return [np.transpose(x, a["perm"])]
    if op == "slice":
        idx = tuple(slice(b, None if (s < 0 and e == -1) else e, s)
                    for b, e, s in zip(a["starts"], a["ends"], a["steps"]))
        return [x[idx]]
    if op == "pad":
        r = x.ndim
        p = a["pads"]
        return [np.pad(x, [(p[d], p[d + r]) for d in range(r)], constant_values=a.get("value", 0.0))]
    if op == "concat":
        return [np.concatenate(ins, axis=a["axis"])]
    if op == "split":
        cuts = np.cumsum(a["sizes"])[:-1]
        return np.split(x, cuts, axis=a["axis"])
    if op == "gather":
        return [np.take(ins[0], ins[1].astype(np.int64), axis=a.get("axis", 0))]
    if op.startswith("reduce_"):
        axes = norm_axes(a["axes"], x.ndim)
        keep = a.get("keepdims", True)
        fn = {"reduce_sum": np.sum, "reduce_mean": np.mean, "reduce_max": np.max,
              "reduce_min": np.min, "reduce_prod": np.prod}[op]
        r = fn(x.astype(np.float64) if isf else x, axis=axes, keepdims=keep)
        if op == "reduce_mean" and not isf:
            r = np.trunc(r)
        return [np.asarray(r).astype(dtype)]
    if op in ("argmax", "argmin"):
        axis = a["axis"] % x.ndim
        fn = np.argmax if op == "argmax" else np.argmin
        if a.get("select_last_index", False):
            flipped = np.flip(x, axis)
            r = x.shape[axis] - 1 - fn(flipped, axis=axis)
        else:
            r = fn(x, axis=axis)
        if a.get("keepdims", True):
            r = np.expand_dims(r, axis)
        return [r.astype(np.int64)]
    if op == "softmax":
        return [softmax(x.astype(np.float64), a["axis"]).astype(dtype)]
    if op == "log_softmax":
        return [np.log(softmax(x.astype(np.float64), a["axis"])).astype(dtype)]
    if op in ("layer_norm", "rms_norm"):
        axes = tuple(range(a["axis"] % x.ndim, x.ndim))
        xd = x.astype(np.float64)
        if op == "layer_norm":
            mean = xd.mean(axis=axes, keepdims=True)
            var = ((xd - mean) ** 2).mean(axis=axes, keepdims=True)
            y = (xd - mean) / np.sqrt(var + a.get("epsilon", 1e-5)) * ins[1]
            if len(ins) > 2:
                y = y + ins[2]
        else:
            y = xd / np.sqrt((xd ** 2).mean(axis=axes, keepdims=True) + a.get("epsilon", 1e-6)) * ins[1]
        return [y.astype(dtype)]
    if op == "matmul":
        return [np.matmul(*ins).astype(dtype)]
    if op == "gemm":
        A = ins[0].T if a.get("trans_a", False) else ins[0]
        B = ins[1].T if a.get("trans_b", False) else ins[1]
        r = a.get("alpha", 1.0) * (A.astype(np.float64) @ B)
        if len(ins) > 2:
            r = r + a.get("beta", 1.0) * ins[2]
        return [r.astype(dtype)]
    if op == "conv2d":
        return [conv2d(ins[0], ins[1], ins[2] if len(ins) > 2 else None, a)]
    if op in ("max_pool2d", "avg_pool2d"):
        return [pool2d(x, a, op == "max_pool2d")]
    if op == "trilu":
        k = a.get("k", 0)
        r = np.triu(x, k) if a.get("upper", True) else np.tril(x, k)
        return [r.astype(x.dtype)]
    if op in ("softmax_cross_entropy", "nll_loss"):
        kind = "sce" if op == "softmax_cross_entropy" else "nll"
        return [loss(kind, ins[0], ins[1], ins[2] if len(ins) > 2 else None, a)]
    raise NotImplementedError(name)


def bf16_round(x):
    """Rounds float32 values to bfloat16 precision (nearest even), kept as float32."""
    bits = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.astype(np.uint32).view(np.float32)


def from_bf16_bits(array):
    return (array.astype(np.uint32) << 16).view(np.float32)


def interpret(text, inputs):
    args, ops = parse_module(text)
    env = {}
    for (name, (_, elem)), value in zip(args, inputs):
        env[name] = from_bf16_bits(value) if elem == "bf16" and value.dtype == np.uint16 else value
    returned = None
    with np.errstate(all="ignore"):
        for results, name, operands, attrs, types in ops:
            if name == "func.return":
                returned = [env[o] for o in operands]
                continue
            if name in ("plait.param", "plait.constant"):
                env[results[0]] = attrs["value"]
                continue
            outs = evaluate(name, [env[o] for o in operands], attrs, types)
            for r, v, t in zip(results, outs, types):
                v = np.asarray(v)
                if t[1] == "bf16":
                    v = bf16_round(v)
                if tuple(v.shape) != t[0]:
                    raise AssertionError(f"{name} produced shape {v.shape}, the IR says {t[0]}")
                env[r] = v
    return returned


# --------------------------------------------------------------------------------------------

def tensor_to_array(t):
    """numpy_helper.to_array, with bfloat16 (raw uint16 bits in onnx 1.12) widened to float32."""
    array = numpy_helper.to_array(t)
    if t.data_type == onnx.TensorProto.BFLOAT16:
        array = (array.astype(np.uint32) << 16).view(np.float32)
    return array


def run_test(command, test_dir):
    model_path = os.path.join(test_dir, "model.onnx")
    bindings, files = {}, None
    while True:
        extra = [f"--const-input {k}={v}" for k, v in bindings.items()]
        args = [a.replace("{model}", model_path) for a in command]
        if any("{args}" in a for a in args):
            args = [a.replace("{args}", " ".join(extra)) for a in args]
        else:
            args += " ".join(extra).split()
        proc = subprocess.run(args, capture_output=True, text=True, timeout=120)
        if proc.returncode == 0:
            break
        m = CONST_INPUT.search(proc.stderr)
        if not m:
            return "skip", proc.stderr.strip()[:150]
        files = files or input_files(test_dir)
        if m.group(1) not in files or m.group(1) in bindings:
            return "skip", proc.stderr.strip()[:150]
        bindings[m.group(1)] = files[m.group(1)]
    model = onnx.load(model_path)
    inits = {t.name for t in model.graph.initializer}
    names = [i.name for i in model.graph.input if i.name not in inits and i.name not in bindings]
    data = os.path.join(test_dir, "test_data_set_0")
    inputs = {}
    for path in sorted(glob.glob(os.path.join(data, "input_*.pb"))):
        t = onnx.TensorProto()
        t.ParseFromString(open(path, "rb").read())
        idx = int(re.search(r"input_(\d+)", path).group(1))
        all_names = [i.name for i in model.graph.input if i.name not in inits]
        inputs[t.name or all_names[idx]] = tensor_to_array(t)
    expected = []
    for path in sorted(glob.glob(os.path.join(data, "output_*.pb")),
                       key=lambda p: int(re.search(r"output_(\d+)", p).group(1))):
        t = onnx.TensorProto()
        t.ParseFromString(open(path, "rb").read())
        expected.append(tensor_to_array(t))
    try:
        got = interpret(proc.stdout, [inputs[n] for n in names])
    except NotImplementedError as e:
        return "noimpl", str(e)
    except Exception as e:  # a bug in the interpreter or the IR
        return "MISMATCH", f"interpreter: {type(e).__name__}: {e}"
    if got is None:
        return "MISMATCH", "the command printed no function"
    for i, (g, e) in enumerate(zip(got, expected)):
        if e.dtype == np.uint16 and g.dtype == np.float32:  # bfloat16 stored as raw bits
            e = from_bf16_bits(e)
        if g.shape != e.shape:
            return "MISMATCH", f"output {i}: shape {g.shape} vs expected {e.shape}"
        if e.dtype.kind in "fc":
            ok = np.allclose(g.astype(np.float64), e.astype(np.float64), rtol=1e-3, atol=1e-5,
                             equal_nan=True)
            if not ok and np.array_equal(bf16_round(g), g, equal_nan=True):
                # bfloat16 results: the reference truncates where plait rounds (one bf16 ulp).
                ok = np.allclose(g, e, rtol=1e-2, equal_nan=True)
        else:
            ok = np.array_equal(g.astype(e.dtype), e)
        if not ok:
            diff = np.nanmax(np.abs(g.astype(np.float64) - e.astype(np.float64))) if g.size else 0
            return "MISMATCH", f"output {i}: max abs diff {diff}"
    return "ok", ""


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default="/usr/share/libonnx-testdata/data/node")
    parser.add_argument("--filter", default="")
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("command", nargs="+")
    opts = parser.parse_args()
    counts = {}
    for test_dir in sorted(glob.glob(os.path.join(opts.data, "*"))):
        name = os.path.basename(test_dir)
        if opts.filter not in name:
            continue
        status, detail = run_test(opts.command, test_dir)
        counts[status] = counts.get(status, 0) + 1
        if status in ("MISMATCH", "noimpl") or opts.verbose:
            print(f"{status:9} {name}: {detail}")
    print(", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    return 1 if counts.get("MISMATCH") else 0


if __name__ == "__main__":
    sys.exit(main())
