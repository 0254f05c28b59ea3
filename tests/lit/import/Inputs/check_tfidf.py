"""tfidf.test's models and inputs, and a loop-by-loop reference of ONNX TfIdfVectorizer (as
onnxruntime and ONNX's reference evaluator count: every pool n-gram at every start and every
skip up to max_skip_count, unigrams once; counts at their ngram_indexes position; IDF and TFIDF
weights indexed by output position), against which plait's outputs are checked.

  check_tfidf.py models DIR          writes DIR/<name>.onnx and DIR/<name>/X.npy for each case
                                     below, and DIR/bad-<what>.onnx, the models each error
                                     message names
  check_tfidf.py check NAME DIR OUT  compares OUT/Y.npy with the reference of DIR/NAME.onnx
                                     on DIR/NAME/X.npy (exactly: counts and weights are exact
                                     in f32)
"""
import pathlib
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper


def reference(x, min_n, max_n, max_skip, mode, starts, indexes, pool, weights=()):
    grams, k = [], 0
    for level, begin in enumerate(starts):
        n = level + 1
        end = starts[level + 1] if level + 1 < len(starts) else len(pool)
        for b in range(begin, end, n):
            grams.append((tuple(pool[b:b + n]), indexes[k]))
            k += 1
    assert k == len(indexes), f"{len(indexes)} ngram_indexes for {k} n-grams"
    rows = x if x.ndim == 2 else x[None]
    outputs = max(indexes) + 1
    out = np.zeros((rows.shape[0], outputs))
    for r, seq in enumerate(rows):
        for n in range(min_n, max_n + 1):
            for skip in range(0, (0 if n == 1 else max_skip) + 1):
                d = skip + 1
                for s in range(len(seq) - (n - 1) * d):
                    window = tuple(int(seq[s + j * d]) for j in range(n))
                    for gram, index in grams:
                        if gram == window:
                            out[r, index] += 1
    w = np.ones(outputs)
    w[:min(len(weights), outputs)] = weights[:outputs]
    if mode == "IDF":
        out = np.where(out > 0, w, 0.0)
    elif mode == "TFIDF":
        out = out * w
    return out if x.ndim == 2 else out[0]


def model(path, x_type, x_shape, y_shape, **attrs):
    node = helper.make_node("TfIdfVectorizer", ["X"], ["Y"], **attrs)
    graph = helper.make_graph([node], "tfidf",
                              [helper.make_tensor_value_info("X", x_type, x_shape)],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, y_shape)])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 9)]), str(path))


# Unigrams 3, 5, 9; bigrams (3, 5), (5, 5), (9, 1); trigrams (3, 5, 9), (1, 1, 1): the
# output positions out of order, and 2, 7 and 9 unused.
POOL = [3, 5, 9, 3, 5, 5, 5, 9, 1, 3, 5, 9, 1, 1, 1]
STARTS = [0, 3, 9]
INDEXES = [4, 0, 8, 1, 6, 3, 5, 10]
WEIGHTS = [0.5, 1.5, 2.0, 0.25, 3.0, 1.0, 0.75, 4.0, 0.125, 9.0, 2.5]
CASES = {
    # 1- to 3-grams at skips 0-2 over a batch of int64 sequences, weighted.
    "tfidf-batch": (TensorProto.INT64, np.int64, [3, 11],
                    dict(min_gram_length=1, max_gram_length=3, max_skip_count=2, mode="TFIDF",
                         ngram_counts=STARTS, ngram_indexes=INDEXES, pool_int64s=POOL,
                         weights=WEIGHTS)),
    # 2- and 3-grams of one int32 sequence, each seen one's weight.
    "idf-int32": (TensorProto.INT32, np.int32, [14],
                  dict(min_gram_length=2, max_gram_length=3, max_skip_count=1, mode="IDF",
                       ngram_counts=STARTS, ngram_indexes=INDEXES, pool_int64s=POOL,
                       weights=WEIGHTS)),
    # Trigrams only, over sequences too short for any at skip 2 and one at skip 0.
    "tf-short": (TensorProto.INT64, np.int64, [2, 3],
                 dict(min_gram_length=3, max_gram_length=3, max_skip_count=2, mode="TF",
                      ngram_counts=STARTS, ngram_indexes=INDEXES, pool_int64s=POOL)),
}


def attrs_of(path):
    node = onnx.load(str(path)).graph.node[0]
    get = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    mode = get["mode"].decode()
    return (get.get("min_gram_length"), get.get("max_gram_length"), get.get("max_skip_count", 0),
            mode, list(get["ngram_counts"]), list(get["ngram_indexes"]),
            list(get["pool_int64s"]), list(get.get("weights", [])))


if sys.argv[1] == "models":
    d = pathlib.Path(sys.argv[2])
    rng = np.random.default_rng(9)
    for name, (x_type, dtype, shape, attrs) in CASES.items():
        outputs = max(attrs["ngram_indexes"]) + 1
        model(d / f"{name}.onnx", x_type, shape, shape[:-1] + [outputs], **attrs)
        (d / name).mkdir(exist_ok=True)
        # Mostly pool ids, so that n-grams repeat at several starts and skips.
        x = rng.choice([1, 1, 3, 5, 5, 9, 7], size=shape).astype(dtype)
        if name == "tf-short":
            x[0] = [1, 1, 1]
        if name == "tfidf-batch":  # each trigram at skips 0, 1 and 2
            x[1] = [3, 5, 9, 3, 1, 5, 1, 9, 1, 1, 1]
        np.save(d / name / "X.npy", x)
    base = dict(min_gram_length=1, max_gram_length=2, max_skip_count=0, mode="TF",
                ngram_counts=[0, 2], ngram_indexes=[0, 1, 2], pool_int64s=[4, 5, 4, 5])
    bad = {
        "strings": dict(base, pool_int64s=None, pool_strings=["a", "b", "a", "b"]),
        "min-gram": dict(base, min_gram_length=0),
        "skip": dict(base, max_skip_count=-1),
        "mode": dict(base, mode="BM25"),
        "no-pool": dict(base, pool_int64s=None),
        "starts": dict(base, ngram_counts=[1, 2]),
        "level": dict(base, ngram_counts=[0, 1]),
        "indexes": dict(base, ngram_indexes=[0, 1]),
        "negative": dict(base, ngram_indexes=[0, -1, 2]),
        "weights": dict(base, mode="IDF", weights=[1.0, 2.0]),
        "huge": dict(base, pool_int64s=list(range(20000)), ngram_counts=[0],
                     ngram_indexes=list(range(20000)), max_gram_length=1),
    }
    for what, attrs in bad.items():
        attrs = {k: v for k, v in attrs.items() if v is not None}
        length = 20000 if what == "huge" else 6
        model(d / f"bad-{what}.onnx", TensorProto.INT64, [1, length], [1, 3], **attrs)
    model(d / "bad-float.onnx", TensorProto.FLOAT, [6], [3], **base)
    model(d / "bad-rank.onnx", TensorProto.INT64, [2, 2, 6], [2, 2, 3], **base)
    sys.exit(0)

name, d, out = sys.argv[2], pathlib.Path(sys.argv[3]), pathlib.Path(sys.argv[4])
x = np.load(d / name / "X.npy")
expect = reference(x, *attrs_of(d / f"{name}.onnx"))
got = np.load(out / "Y.npy")
if got.shape != expect.shape or got.dtype != np.float32 or not np.array_equal(got, expect):
    print(f"{name}: plait {got.tolist()} ({got.dtype}), reference {expect.tolist()}")
    sys.exit(1)
print(f"{name}: ok ({int((expect != 0).sum())} non-zero of {expect.size}, "
      f"largest {expect.max():g})")
