#!/usr/bin/python3
"""Imports every ONNX node-test model and classifies the outcome.

Usage: node_test_sweep.py [--data DIR] [--verbose] -- IMPORT_COMMAND...
  e.g. node_test_sweep.py -- plait-compile {model} --emit mlir -o /dev/null

IMPORT_COMMAND gets the model path in place of {model} (appended when absent) and
`--const-input NAME=FILE` arguments appended when an import asks for one (the node tests give
shapes, axes, ... as graph inputs; their values come from test_data_set_0). Every model must either
import (exit 0) or fail with exit 1 and exactly one line on stderr; anything else (a crash, an
assert, several lines) is reported as a CRASH and makes the script exit 1.
Outcomes: ok, unsupported (the message says "unsupported"), error (any other one-line message).
"""
import argparse
import collections
import glob
import os
import re
import subprocess
import sys

import onnx

CONST_INPUT = re.compile(r"--const-input (\S+)=FILE")


def input_files(test_dir):
    """Maps graph input names to the test data files holding their values."""
    files = {}
    model = onnx.load(os.path.join(test_dir, "model.onnx"), load_external_data=False)
    inits = {t.name for t in model.graph.initializer}
    names = [i.name for i in model.graph.input if i.name not in inits]
    for path in sorted(glob.glob(os.path.join(test_dir, "test_data_set_0", "input_*.pb"))):
        index = int(re.search(r"input_(\d+)\.pb$", path).group(1))
        tensor = onnx.TensorProto()
        with open(path, "rb") as f:
            tensor.ParseFromString(f.read())
        name = tensor.name or (names[index] if index < len(names) else None)
        if name:
            files[name] = path
    return files


def run(command, model, bindings):
    args = [a.replace("{model}", model) for a in command]
    if not any("{model}" in a for a in command):
        args.append(model)
    for name, path in bindings.items():
        args += ["--const-input", f"{name}={path}"]
    proc = subprocess.run(args, capture_output=True, text=True, errors="replace",
                          timeout=120)
    return proc.returncode, proc.stderr.strip()


def sweep_one(command, test_dir):
    model = os.path.join(test_dir, "model.onnx")
    bindings = {}
    files = None
    while True:
        rc, err = run(command, model, bindings)
        if rc == 0:
            return "ok", "", bindings
        lines = err.splitlines()
        if rc != 1 or len(lines) != 1:
            return "CRASH", f"rc={rc}: {err[-2000:]}", bindings
        match = CONST_INPUT.search(err)
        if match:
            if files is None:
                files = input_files(test_dir)
            name = match.group(1)
            if name in files and name not in bindings:
                bindings[name] = files[name]
                continue
        kind = "unsupported" if "unsupported" in err else "error"
        return kind, err, bindings


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default="/usr/share/libonnx-testdata/data/node")
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--filter", default="")
    parser.add_argument("command", nargs="+")
    opts = parser.parse_args()

    counts = collections.Counter()
    reasons = collections.Counter()
    for test_dir in sorted(glob.glob(os.path.join(opts.data, "*"))):
        name = os.path.basename(test_dir)
        if opts.filter not in name or not os.path.exists(os.path.join(test_dir, "model.onnx")):
            continue
        kind, message, bindings = sweep_one(opts.command, test_dir)
        counts[kind] += 1
        if kind != "ok":
            reason = re.sub(r"^.*?model\.onnx: ", "", message)
            reason = re.sub(r"node '[^']*' ", "", reason)
            reasons[(kind, reason[:110])] += 1
        if opts.verbose or kind in ("CRASH", "error"):
            bound = " ".join(f"{k}" for k in bindings)
            print(f"{kind:12} {name}{' [' + bound + ']' if bound else ''}: {message}")
    print()
    for (kind, reason), n in sorted(reasons.items(), key=lambda kv: -kv[1]):
        print(f"{n:5}  {kind:12} {reason}")
    total = sum(counts.values())
    print(f"\n{total} models: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    return 1 if counts["CRASH"] else 0


if __name__ == "__main__":
    sys.exit(main())
