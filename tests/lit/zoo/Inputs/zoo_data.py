"""Writes a random training set for a plait-zoo model: one .npy per graph input.

usage: zoo_data.py MODEL.mlir DIR [--batches N]

The inputs (name, shape, dtype) are read from the model's @main signature; integer inputs are
class indices below the --vocab / --classes of the model's header line, float inputs N(0, 1).
DIR gets N batches of samples (leading dimension N x the model's batch), seeded, so a run is
repeatable.
"""
import argparse
import pathlib
import re
import sys

import numpy as np

DTYPES = {"f32": np.float32, "i64": np.int64, "i32": np.int32}


def model_inputs(text):
    """(name, shape, dtype) of every @main argument with a plait.name."""
    signature = re.search(r"func\.func @main\((.*?)\) ->", text)
    if not signature:
        sys.exit("zoo_data.py: no func.func @main in the model")
    args = re.findall(r"tensor<([0-9x]+)x(f32|i64|i32)> \{plait\.name = \"([^\"]+)\"\}",
                      signature.group(1))
    return [(name, [int(d) for d in dims.split("x")], DTYPES[dtype]) for dims, dtype, name in args]


def class_count(text):
    header = re.search(r"--(?:vocab|classes) (\d+)", text.split("\n", 1)[0])
    if not header:
        sys.exit("zoo_data.py: the first line names no --vocab or --classes "
                 "(not a plait-zoo model?)")
    return int(header.group(1))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("dir")
    parser.add_argument("--batches", type=int, default=4)
    args = parser.parse_args()
    text = pathlib.Path(args.model).read_text()
    classes = class_count(text)
    out = pathlib.Path(args.dir)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for name, shape, dtype in model_inputs(text):
        shape = [shape[0] * args.batches] + shape[1:]
        if np.issubdtype(dtype, np.integer):
            data = rng.integers(0, classes, shape).astype(dtype)
        else:
            data = rng.standard_normal(shape).astype(dtype)
        np.save(out / f"{name}.npy", data)


if __name__ == "__main__":
    main()
