#!/usr/bin/python3
"""Feeds truncated and bit-flipped ONNX models to an import command; none may crash.

Usage: corrupt_models.py [--count N] [--seed S] MODEL... -- IMPORT_COMMAND...
  e.g. corrupt_models.py Inputs/*.onnx -- plait-compile {model} --emit mlir -o /dev/null

For every model, N corrupted copies (truncations at random lengths, random byte flips, random
byte runs) are imported. Each run must exit 0, or exit 1 with exactly one line on stderr; any
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


def main():
    argv = sys.argv[1:]
    split = argv.index("--")
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=30)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("models", nargs="+")
    opts = parser.parse_args(argv[:split])
    command = argv[split + 1:]
    rng = random.Random(opts.seed)
    failures = runs = 0
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.onnx")
        for model in opts.models:
            data = open(model, "rb").read()
            for kind, blob in corruptions(data, opts.count, rng):
                with open(path, "wb") as f:
                    f.write(blob)
                args = [a.replace("{model}", path) for a in command]
                proc = subprocess.run(args, capture_output=True, text=True, timeout=120)
                runs += 1
                lines = proc.stderr.strip().splitlines()
                if proc.returncode == 0 or (proc.returncode == 1 and len(lines) == 1):
                    continue
                failures += 1
                keep = os.path.join(tmp, "..", f"crash_{failures}.onnx")
                with open(keep, "wb") as f:
                    f.write(blob)
                print(f"CRASH {os.path.basename(model)} ({kind}, kept as {os.path.abspath(keep)}): "
                      f"rc={proc.returncode}: {proc.stderr.strip()[-500:]}")
    print(f"{runs} corrupted imports, {failures} crashes")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
