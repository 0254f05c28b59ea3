"""Checks topk.test's outputs against numpy's stable sorts (ties: the lower index first)."""
import sys

import numpy as np

x, out = np.load(sys.argv[1]), sys.argv[2]
for name, k, largest in [("big", 4, True), ("small", 3, False), ("rank_big", 10, True),
                         ("rank_small", 9, False)]:
    order = np.argsort(-x if largest else x, axis=1, kind="stable")[:, :k]
    at, values = np.load(f"{out}/{name}_at.npy"), np.load(f"{out}/{name}.npy")
    same = np.array_equal(at, order) and np.array_equal(values, np.take_along_axis(x, order, 1))
    print(name, "ok" if same else f"MISMATCH: {at.tolist()} vs {order.tolist()}")
