"""Checks a plait-run log against its plan file: the arena high water the runtime measured
each step equals the plan's peak_bytes (the compiler's planned peak), which equals the largest
offset + bytes over the plan's tensors; the workspace the runtime allocated is the plan's
workspace_bytes, at least every instruction's declared workspace, and no step used more.

The plan is read independently of plait: flatc converts it to JSON with the schema.

  high_water.py data SAMPLE_INPUTS DIR COPIES   write DIR/NAME.npy: each input repeated
  high_water.py check SCHEMA PLAN LOG.jsonl      print one "high water ok" line, or fail
"""
import json
import pathlib
import shutil
import subprocess
import sys
import tempfile

import numpy as np


def data(src, dst, copies):
    dst = pathlib.Path(dst)
    dst.mkdir(parents=True, exist_ok=True)
    for f in pathlib.Path(src).glob("*.npy"):
        a = np.load(f)
        np.save(dst / f.name, np.concatenate([a] * int(copies)))


def plan_json(schema, plan):
    flatc = shutil.which("flatc")
    if not flatc:
        sys.exit("flatc not found on PATH")
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([flatc, "--json", "--strict-json", "--defaults-json", "--raw-binary",
                        "-o", tmp, schema, "--", plan], check=True)
        return json.loads((pathlib.Path(tmp) / (pathlib.Path(plan).stem + ".json")).read_text())


def check(schema, plan_path, log_path):
    plan = plan_json(schema, plan_path)
    world = plan["world_size"]
    peak = plan.get("peak_bytes") or []
    workspace = plan.get("workspace_bytes") or []
    if len(peak) != world or len(set(peak)) != 1:
        sys.exit(f"peak_bytes {peak}: expected one equal entry per rank (world size {world})")
    if len(workspace) != world or len(set(workspace)) != 1:
        sys.exit(f"workspace_bytes {workspace}: expected one equal entry per rank")
    tensors_peak = max(t["offset"] + t["bytes"] for t in plan["tensors"])
    if peak[0] != tensors_peak:
        sys.exit(f"peak_bytes {peak[0]} != max over tensors of offset + bytes {tensors_peak}")
    if peak[0] > plan["arena_bytes"][0]:
        sys.exit(f"peak_bytes {peak[0]} > arena_bytes {plan['arena_bytes'][0]}")
    declared = max([i["workspace"] for i in plan["instrs"]] + [0])
    if declared > workspace[0]:
        sys.exit(f"an instruction declares {declared} workspace bytes, the plan has {workspace[0]}")
    steps = [json.loads(line) for line in pathlib.Path(log_path).read_text().splitlines()]
    if not steps:
        sys.exit(f"{log_path}: no steps logged")
    for s in steps:
        if s["arena_high_water"] != peak[0]:
            sys.exit(f"step {s['step']}: arena_high_water {s['arena_high_water']} != "
                     f"peak_bytes {peak[0]}")
        if s["workspace_bytes"] != workspace[0]:
            sys.exit(f"step {s['step']}: workspace_bytes {s['workspace_bytes']} != plan "
                     f"{workspace[0]}")
        if s["workspace_high_water"] > workspace[0]:
            sys.exit(f"step {s['step']}: workspace_high_water {s['workspace_high_water']} > "
                     f"{workspace[0]}")
    print(f"high water ok: {len(steps)} steps, world size {world}, arena high water = peak "
          f"{peak[0]} of {plan['arena_bytes'][0]} bytes, workspace high water "
          f"{max(s['workspace_high_water'] for s in steps)} of {workspace[0]} bytes")


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "data":
        data(*sys.argv[2:])
    elif len(sys.argv) == 5 and sys.argv[1] == "check":
        check(*sys.argv[2:])
    else:
        sys.exit(__doc__)
