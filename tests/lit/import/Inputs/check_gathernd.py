"""Writes gathernd-batch.test's inputs, or checks plait's GatherND (batch_dims 1 and 2) against
numpy's fancy indexing (ONNX's reference, negative indices counted from the end).

  check_gathernd.py inputs DIR       writes DIR/{d1,i1,d2,i2}.npy
  check_gathernd.py check DIR OUT    compares OUT/g1.npy and OUT/g2.npy
"""
import sys

import numpy as np

MODE, DIR = sys.argv[1], sys.argv[2]
if MODE == "inputs":
    rng = np.random.default_rng(5)
    np.save(f"{DIR}/d1.npy", rng.standard_normal((2, 3, 4)).astype(np.float32))
    np.save(f"{DIR}/i1.npy", np.array([[[2], [-3]], [[0], [-1]]], np.int64))
    np.save(f"{DIR}/d2.npy", rng.standard_normal((2, 3, 4, 5)).astype(np.float32))
    np.save(f"{DIR}/i2.npy", rng.integers(-4, 4, (2, 3, 2, 2)) % np.array([4, 5]) -
            np.array([0, 5]) * rng.integers(0, 2, (2, 3, 2, 1)))
    sys.exit(0)

out = sys.argv[3]
d1, i1, d2, i2 = (np.load(f"{DIR}/{n}.npy") for n in ("d1", "i1", "d2", "i2"))
want1 = np.stack([d1[b][i1[b][:, 0]] for b in range(2)])
want2 = np.stack([np.stack([d2[b, c][i2[b, c][:, 0], i2[b, c][:, 1]] for c in range(3)])
                  for b in range(2)])
for name, want in (("g1", want1), ("g2", want2)):
    got = np.load(f"{out}/{name}.npy")
    print(name, "ok" if got.shape == want.shape and np.array_equal(got, want)
          else f"MISMATCH {got.tolist()} vs {want.tolist()}")
print("negative indices:", int((i1 < 0).sum()), int((i2 < 0).sum()))
