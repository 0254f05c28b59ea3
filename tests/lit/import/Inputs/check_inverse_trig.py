"""Writes inverse-trig.test's inputs, or checks plait's Atan, Asin and Acos against numpy.

  check_inverse_trig.py inputs DIR     writes DIR/{a,u}{32,64}.npy
  check_inverse_trig.py check DIR OUT  compares OUT/*.npy with numpy's arctan, arcsin, arccos:
                                       the largest error in ulps of the result's type (NaN where
                                       numpy gives NaN, exact infinities and zeros' values)
"""
import sys

import numpy as np

MODE, DIR = sys.argv[1], sys.argv[2]
EDGES = [0.0, -0.0, 1.0, -1.0, 0.4142135, 0.4142136, 0.66, 2.4142135, 2.4142137, 1e-30, -1e-30,
         1e30, -1e30, np.inf, -np.inf, np.nan]


def inputs(dtype):
    rng = np.random.default_rng(3)
    n = 4096 - len(EDGES)
    wide = np.concatenate([np.sinh(rng.uniform(-12, 12, n // 2)), rng.uniform(-4, 4, n - n // 2)])
    unit = np.concatenate([np.linspace(-1, 1, n - 64), rng.uniform(-1.5, 1.5, 64)])
    return (np.concatenate([wide, EDGES]).astype(dtype),
            np.concatenate([unit, EDGES]).astype(dtype))


if MODE == "inputs":
    for bits, dtype in (("32", np.float32), ("64", np.float64)):
        a, u = inputs(dtype)
        np.save(f"{DIR}/a{bits}.npy", a)
        np.save(f"{DIR}/u{bits}.npy", u)
    sys.exit(0)

out = sys.argv[3]
for bits, dtype in (("32", np.float32), ("64", np.float64)):
    a, u = inputs(dtype)
    for name, fn, x in (("atan", np.arctan, a), ("asin", np.arcsin, u), ("acos", np.arccos, u)):
        with np.errstate(invalid="ignore"):
            want = fn(x.astype(np.float64)).astype(dtype)
        got = np.load(f"{out}/{name}{bits}.npy")
        nan_ok = np.array_equal(np.isnan(got), np.isnan(want))
        finite = ~np.isnan(want)
        ulps = np.abs(got[finite].astype(np.float64) - want[finite]) / np.spacing(
            np.maximum(np.abs(want[finite]), np.finfo(dtype).tiny)).astype(np.float64)
        worst = float(ulps.max())
        print(f"{name}{bits}: nan {'ok' if nan_ok else 'MISMATCH'}, worst {worst:.0f} ulp")
