"""Running a model through plait-compile and plait-run (from PATH), for the lit tests' check
scripts (check_legacy_opset.py, check_max_pool_indices.py)."""
import os
import subprocess

import numpy as np
import onnx


def compile_and_run(d, name, model, feeds, outputs):
    """Saves `model` as DIR/NAME.onnx, compiles it, runs it on `feeds` (name -> array) and
    returns {output name: array}; None after printing "NAME FAILED: TOOL: its error"."""
    path = os.path.join(d, name + ".onnx")
    onnx.save(model, path)
    plan, outdir = os.path.join(d, name + ".plan"), os.path.join(d, name + "_out")
    run = ["plait-run", plan, "--output-dir", outdir]
    for key, value in feeds.items():
        np.save(os.path.join(d, f"{name}_{key}.npy"), value)
        run += ["--input", f"{key}={os.path.join(d, f'{name}_{key}.npy')}"]
    for cmd in (["plait-compile", path, "-o", plan], run):
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            print(f"{name} FAILED: {cmd[0]}: {p.stderr.strip()}")
            return None
    return {key: np.load(os.path.join(outdir, key + ".npy")) for key in outputs}
