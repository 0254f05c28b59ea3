"""Writes reverse-sequence.test's inputs, or checks plait's ReverseSequence against numpy.

  check_reverse_sequence.py inputs DIR       writes DIR/{x,z,lens}.npy (lengths 0, 5 and 3)
  check_reverse_sequence.py check DIR OUT    compares OUT/y.npy (time first), OUT/w.npy
"""
import sys

import numpy as np

MODE, DIR = sys.argv[1], sys.argv[2]
if MODE == "inputs":
    rng = np.random.default_rng(11)
    np.save(f"{DIR}/x.npy", rng.standard_normal((5, 3, 2, 2)).astype(np.float32))
    np.save(f"{DIR}/z.npy", rng.standard_normal((3, 5, 2)).astype(np.float32))
    np.save(f"{DIR}/lens.npy", np.array([0, 5, 3], np.int64))
    sys.exit(0)

out = sys.argv[3]
x, z, lens = (np.load(f"{DIR}/{n}.npy") for n in ("x", "z", "lens"))
y, w = x.copy(), z.copy()
for b, n in enumerate(lens):
    y[:n, b] = x[:n, b][::-1]
    w[b, :n] = z[b, :n][::-1]
for name, want in (("y", y), ("w", w)):
    got = np.load(f"{out}/{name}.npy")
    print(name, "ok" if np.array_equal(got, want) else "MISMATCH")
