"""Checks plait's EMA weights after one resumed step: EMA == f32(d) * before + f32(1 - d) * after
for every param, bit for bit (plait.weight_ema in f32, its factors rounded from double).

  check_ema.py BEFORE.safetensors AFTER.safetensors EMA.safetensors DECAY
  check_ema.py same A.safetensors B.safetensors   (the same tensors, bit for bit)
"""
import json
import struct
import sys

import numpy as np


def read(path):
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    body = raw[8 + n:]
    return {k: np.frombuffer(body[v["data_offsets"][0]:v["data_offsets"][1]],
                             dtype=np.float32).reshape(v["shape"])
            for k, v in header.items() if k != "__metadata__"}


if sys.argv[1] == "same":  # check_ema.py same A.safetensors B.safetensors
    a, b = read(sys.argv[2]), read(sys.argv[3])
    same = sorted(a) == sorted(b) and all(np.array_equal(a[k], b[k]) for k in a)
    print(f"{len(a)} tensors, {'equal' if same else 'DIFFERENT'}")
    sys.exit(0)
before, after, ema = (read(p) for p in sys.argv[1:4])
d = float(sys.argv[4])
bad = []
for name, value in ema.items():
    want = np.float32(d) * before[name] + np.float32(1 - d) * after[name]
    if not np.array_equal(value, want) or np.array_equal(value, after[name]):
        bad.append(name)
if bad or sorted(ema) != sorted(after):
    sys.exit(f"EMA weights differ from {d} * step 3 + {1 - d:g} * step 4: {bad or sorted(ema)}")
print(f"{len(ema)} EMA weights: {d} * step 3 + {1 - d:g} * step 4, bitwise")
