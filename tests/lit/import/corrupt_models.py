#!/usr/bin/python3
"""Feeds truncated, bit-flipped and semantically mutated ONNX models to an import command; none
may crash.

Usage: corrupt_models.py [--count N] [--seed S] [--attributes] MODEL... -- IMPORT_COMMAND...
  e.g. corrupt_models.py Inputs/*.onnx -- plait-compile {model} --emit mlir -o /dev/null

For every model, N corrupted copies (truncations at random lengths, random byte flips, random
byte runs; with --attributes instead: well-formed models whose node attributes and input shapes
take random, often invalid values) are imported. Each run must exit 0, or exit 1 with exactly one line on stderr; any
other outcome (a signal, an abort, exit 2, several lines) is printed and makes the script fail.
"""
import argparse
import os
import random
import subprocess
import sys
import tempfile


def corruptions(data, count, rng):
    for i in range(count):
        kind = i % 3
        if kind == 0:
            yield "truncate", data[: rng.randrange(len(data))]
        elif kind == 1:
            buf = bytearray(data)
            for _ in range(rng.randint(1, 8)):
                buf[rng.randrange(len(buf))] ^= 1 << rng.randrange(8)
            yield "flip", bytes(buf)
        else:
            buf = bytearray(data)
            at = rng.randrange(len(buf))
            n = rng.randint(1, 16)
            buf[at:at + n] = bytes(rng.randrange(256) for _ in range(n))
            yield "overwrite", bytes(buf)


INTS = [-(2 ** 62), -(2 ** 31), -5, -2, -1, 0, 1, 2, 3, 7, 2 ** 31, 2 ** 62]
FLOATS = [float("nan"), float("inf"), -float("inf"), -1.0, 0.0, 1e-30, 1e30]
STRINGS = ["", "SAME_UPPER", "SAME_LOWER", "VALID", "reflect", "edge", "none", "tanh", "x" * 40]


def mutated_models(data, count, rng):
    """Well-formed protobufs with one random attribute or input dimension changed."""
    import onnx  # only this mode needs the onnx package
    from onnx import AttributeProto
    for _ in range(count):
        model = onnx.ModelProto()
        model.ParseFromString(data)
        targets = [(n, a) for n in model.graph.node for a in n.attribute
                   if a.type in (AttributeProto.INT, AttributeProto.INTS, AttributeProto.FLOAT,
                                 AttributeProto.FLOATS, AttributeProto.STRING)]
        if targets and rng.random() < 0.8:
            _, attr = rng.choice(targets)
            if attr.type == AttributeProto.INT:
                attr.i = rng.choice(INTS)
            elif attr.type == AttributeProto.INTS:
                del attr.ints[:]
                attr.ints.extend(rng.choice(INTS) for _ in range(rng.randint(0, 6)))
            elif attr.type == AttributeProto.FLOAT:
                attr.f = rng.choice(FLOATS)
            elif attr.type == AttributeProto.FLOATS:
                del attr.floats[:]
                attr.floats.extend(rng.choice(FLOATS) for _ in range(rng.randint(0, 4)))
            else:
                attr.s = rng.choice(STRINGS).encode()
            yield "attribute " + attr.name, model.SerializeToString()
        elif len(model.graph.input):
            value = rng.choice(list(model.graph.input))
            dims = value.type.tensor_type.shape.dim
            if len(dims) and rng.random() < 0.7:
                rng.choice(list(dims)).dim_value = rng.choice([0, 1, 3, 2 ** 40])
            else:
                value.type.tensor_type.shape.dim.add().dim_value = rng.choice([1, 2])
            yield "input shape", model.SerializeToString()


def main():
    argv = sys.argv[1:]
    split = argv.index("--")
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=30)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--attributes", action="store_true")
    parser.add_argument("models", nargs="+")
    opts = parser.parse_args(argv[:split])
    command = argv[split + 1:]
    rng = random.Random(opts.seed)
    failures = runs = 0
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.onnx")
        for model in opts.models:
            data = open(model, "rb").read()
            generate = mutated_models if opts.attributes else corruptions
            for kind, blob in generate(data, opts.count, rng):
                with open(path, "wb") as f:
                    f.write(blob)
                args = [a.replace("{model}", path) for a in command]
                runs += 1
                try:
                    proc = subprocess.run(args, capture_output=True, text=True,
                                          errors="replace", timeout=60)
                    rc, err = proc.returncode, proc.stderr.strip()
                except subprocess.TimeoutExpired:
                    rc, err = "timeout", "no answer within 60 s"
                if rc == 0 or (rc == 1 and len(err.splitlines()) == 1):
                    continue
                failures += 1
                keep = os.path.join(tmp, "..", f"crash_{failures}.onnx")
                with open(keep, "wb") as f:
                    f.write(blob)
                print(f"CRASH {model} ({kind}, kept as {os.path.abspath(keep)}): "
                      f"rc={rc}: {err[-500:]}")
    print(f"{runs} corrupted imports, {failures} crashes")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
