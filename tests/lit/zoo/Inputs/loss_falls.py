"""Exits non-zero unless every loss in a plait-run --log-jsonl file is finite and the last is
below the first."""
import json
import math
import sys

losses = [json.loads(line)["loss"] for line in open(sys.argv[1])]
if not losses or not all(math.isfinite(loss) for loss in losses):
    sys.exit(f"loss_falls.py: non-finite loss in {losses}")
if losses[-1] >= losses[0]:
    sys.exit(f"loss_falls.py: loss did not fall: {losses[0]} -> {losses[-1]}")
