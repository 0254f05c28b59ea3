"""Writes a small token dataset for the GPT sample (idx, targets [N,16] i64) into argv[1]."""
import pathlib
import sys

import numpy as np

d = pathlib.Path(sys.argv[1])
d.mkdir(parents=True, exist_ok=True)
rng = np.random.default_rng(0)
start = rng.integers(0, 64, size=(64, 1))
seq = (start + 3 * np.arange(17)[None, :] + rng.integers(0, 2, size=(64, 17))) % 64
np.save(d / "idx.npy", seq[:, :-1].astype(np.int64))
np.save(d / "targets.npy", seq[:, 1:].astype(np.int64))
