"""Checks a several---cluster report: every cluster a row; the plan written is the cheapest
run's; its world size is that cluster's devices; tokens per step = global batch x seq."""
import json
import sys

r = json.load(open(sys.argv[1]))
rows = [x for x in r["clusters"] if "error" not in x]
cheapest = min(rows, key=lambda x: x["run"]["cost_usd"])
run = r["run"]
print(f"rows={len(r['clusters'])} "
      f"cheapest-written={cheapest['cluster'] == r['cluster']['name']} "
      f"world-matches={r['world_size'] == cheapest['devices']} "
      f"tokens={run['tokens_per_step'] == r['global_batch'] * 16}")
