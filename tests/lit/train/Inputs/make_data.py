"""Writes good and bad training datasets for the MLP sample (x [N,16] f32, y [N] i64)."""
import pathlib
import sys

import numpy as np

root = pathlib.Path(sys.argv[1])
rng = np.random.default_rng(0)
x = rng.standard_normal((64, 16)).astype(np.float32)
y = rng.integers(0, 10, 64).astype(np.int64)
sets = {
    "ok": (x, y),
    "shape": (x[:, :15], y),
    "dtype": (x, y.astype(np.int32)),
    "few": (x[:5], y[:5]),
    "count": (x, y[:60]),
    "missing": (x, None),
}
for name, (xs, ys) in sets.items():
    (root / name).mkdir(parents=True, exist_ok=True)
    np.save(root / name / "x.npy", xs)
    if ys is not None:
        np.save(root / name / "y.npy", ys)
