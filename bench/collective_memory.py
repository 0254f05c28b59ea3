#!/usr/bin/env python3
"""All-reduces in place, and hsdp's replicas reduced twice per step with micro-batches.

For plait-zoo GPTs (compile only, AdamW fp32), each row compiles one placement twice with
`plait-compile --report`:

* **peer**: `--no-inplace-collectives --replica-reduce-per-micro-batch`, the plans plait made
  before 2026-12-03: every all-reduce writes a buffer of its own while its operand stays
  live until the wait, and an hsdp unit accumulating in its shards all-reduces each
  micro-batch's shard across the replica groups (as FSDP's HYBRID_SHARD does outside
  `no_sync`);
* **plait**: the defaults: an all-reduce whose operand nothing else reads reduces it in place
  (MPI_IN_PLACE), and hsdp all-reduces the unreduced sum of the first K-1 shards once, then
  the last shard.

It prints each plan's per-rank arena (`memory.peak`), the ratio plait / peer, the all-reduce
bytes each rank sends per step (`comm.all_reduce`) and both predicted step times
(`predicted_step_ms`). A row PASSes when plait's arena and all-reduce bytes are at most the
peer's; the script exits 1 if any row fails.

Run with /usr/bin/python3:  collective_memory.py BUILD [--json OUT]
"""
import argparse
import json
import pathlib
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from grad_memory import compile_report  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
CLUSTERS = ROOT / "samples" / "clusters"
PEER = ["--no-inplace-collectives", "--replica-reduce-per-micro-batch"]

GPT_8x256 = ["--family", "gpt", "--layers", "8", "--width", "256", "--heads", "4", "--seq", "64",
             "--vocab", "512", "--batch", "4"]
GPT_4x1024 = ["--family", "gpt", "--layers", "4", "--width", "1024", "--heads", "16", "--seq",
              "64", "--vocab", "32000", "--batch", "4"]
# name, plait-zoo options, world, cluster, placement, micro-batches
ROWS = [("gpt 8x256 seq 64 b4", GPT_8x256, 8, "h100-sxm-8.yaml", "ddp", 1),
        ("gpt 4x1024 seq 64 b4", GPT_4x1024, 8, "h100-sxm-8.yaml", "ddp", 1),
        ("gpt 4x1024 seq 64 b4", GPT_4x1024, 8, "h100-sxm-8.yaml", "zero3", 4),
        ("gpt 8x256 seq 64 b4", GPT_8x256, 16, "a100-80gb-8x16.yaml", "hsdp:2", 4),
        ("gpt 4x1024 seq 64 b4", GPT_4x1024, 16, "a100-80gb-8x16.yaml", "hsdp:8", 4),
        ("gpt 4x1024 seq 64 b4", GPT_4x1024, 16, "a100-80gb-8x16.yaml", "hsdp:2", 4)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build", type=pathlib.Path)
    ap.add_argument("--json", type=pathlib.Path)
    args = ap.parse_args()
    out, failed = [], False
    print("| model | world | placement | micro-batches | peer arena B | plait arena B | "
          "plait / peer | all-reduce B peer → plait | peer ms | plait ms | result |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="plait-collmem-") as tmp:
        tmp = pathlib.Path(tmp)
        for name, zoo, world, cluster, placement, k in ROWS:
            model = tmp / "model.mlir"
            subprocess.run([args.build / "bin" / "plait-zoo", *zoo, "-o", model], check=True)
            peer = compile_report(args.build, model, placement, k, PEER, tmp, world,
                                  CLUSTERS / cluster)
            plait = compile_report(args.build, model, placement, k, [], tmp, world,
                                   CLUSTERS / cluster)
            pa, qa = peer["memory"]["peak"], plait["memory"]["peak"]
            pr, qr = peer["comm"]["all_reduce"], plait["comm"]["all_reduce"]
            ok = qa <= pa and qr <= pr
            failed |= not ok
            row = {"model": name, "world": world, "placement": placement, "micro_batches": k,
                   "peer_arena": pa, "plait_arena": qa, "peer_all_reduce": pr,
                   "plait_all_reduce": qr, "peer_ms": peer.get("predicted_step_ms"),
                   "plait_ms": plait.get("predicted_step_ms"), "pass": ok}
            out.append(row)
            print("| %s | %d | %s | %d | %s | %s | %.3f | %s → %s | %.3f | %.3f | %s |" % (
                name, world, placement, k, f"{pa:,}", f"{qa:,}", qa / pa, f"{pr:,}", f"{qr:,}",
                row["peer_ms"], row["plait_ms"], "PASS" if ok else "FAIL"), flush=True)
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
