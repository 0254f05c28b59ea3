"""Checks a --strategy auto report: one candidate chosen, ranked first among those that fit;
the candidates sorted by predicted step time; the chosen one fits the limit with its exact
peak; the plan's own numbers are the chosen candidate's; every unit has its placement."""
import json
import sys

r = json.load(open(sys.argv[1]))
rows = r["candidates"]
chosen = [c for c in rows if c["chosen"]]
c = chosen[0]
fitting = [x for x in rows if x["status"] in ("chosen", "fits")]
times = [x["predicted_step_ms"] for x in rows if x["predicted_step_ms"] is not None]
limit = r["auto"]["mem_limit"]
plan_matches = (abs(r["predicted_step_ms"] - c["predicted_step_ms"]) < 1e-9
                and r["memory"]["total"] == c["peak"] and c["peak_exact"])
placements = all(u["placement"] == c["strategy"] for u in r["units"])
print(f"chosen={len(chosen)} first={fitting[0] is c} sorted={times == sorted(times)} "
      f"fits={c['peak'] <= limit} plan-matches={plan_matches} placements={placements}")
