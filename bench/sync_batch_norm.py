#!/usr/bin/env python3
"""What --sync-batch-norm costs: a ResNet block on 2 CPU ranks, and ResNet-18 predicted on GPUs.

Measured: onnx_ops_step.py's training-mode ResNet block (conv 3x3 -> BatchNorm2d -> ReLU ->
conv 3x3 -> BatchNorm2d, plus the input, [8, 64, 32, 32] per rank) on 2 ranks with ddp, one
thread each (mpirun -np 2), SGD: plait with each rank's own BatchNorm statistics, with
--sync-batch-norm fused (each BatchNorm's statistics one all-gather of 2 x 64 floats a rank, its
gradient's sums one all-reduce of 2 x 64) and decomposed (--no-fused-sync-batch-norm: two
all-reduces of 64 floats in each BatchNorm's forward and two in its backward), and the peer, PyTorch's DistributedDataParallel over gloo with its own statistics
(PyTorch 1.13's SyncBatchNorm refuses CPU tensors). Each is the median logged step after
WARMUP steps; runs alternate the four, --repeat times, and the table shows the medians.

Predicted: plait-zoo's ResNet-18 (--batch-norm, batch 32 a GPU, 224x224) on 8 GPUs of each
--cluster, ddp, without --sync-batch-norm, with it fused and decomposed: the cost model's step
time (the collectives of the statistics are latency-bound: 20 BatchNorms, 40 collectives a step
fused, 80 all-reduces decomposed).

Run with /usr/bin/python3:  sync_batch_norm.py BUILD [--steps 20] [--repeat 3]
                                                 [--cluster samples/clusters/a100-80gb-8.yaml ...]
"""
import argparse
import ctypes
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import warnings

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from onnx_ops_step import BatchNorm, make_data, timed_step  # noqa: E402

WARMUP = 3
BATCH = 8  # per rank
WORLD = 2
MPIRUN = ["mpirun", "--oversubscribe", "--allow-run-as-root", "-np", str(WORLD)]
ENV = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")


def run_plait(bindir, plan, datadir, steps, work):
    log = work / "log.jsonl"
    proc = subprocess.run(MPIRUN + [bindir / "plait-run", plan, "--data", datadir, "--steps",
                                    str(steps), "--threads", "1", "--log-jsonl", log,
                                    "--progress", "none"],
                          capture_output=True, text=True, env=ENV, timeout=600)
    if proc.returncode != 0:
        sys.exit("plait-run failed:\n" + proc.stderr)
    ms = [json.loads(line)["step_ms"] for line in log.read_text().splitlines()]
    return statistics.median(ms[WARMUP:])


def torch_rank(rank, port, data, steps, out):
    """One rank of DistributedDataParallel (gloo): rank r trains slice r of each step's batch,
    on one OpenMP and one OpenBLAS thread (torch.set_num_threads leaves OpenBLAS's own threads
    on every core: onnx_ops_step.torch_thread_splits)."""
    torch.set_num_threads(1)
    ctypes.CDLL("libopenblas.so.0").openblas_set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=WORLD)
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(BatchNorm())
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    ms = []
    for s in range(steps):
        first = (s * WORLD + rank) * BATCH
        args = [torch.from_numpy(data[k][first:first + BATCH]) for k in BatchNorm.shapes]
        dist.barrier()
        ms.append(timed_step(model, opt, args))
    if rank == 0:
        out.put(statistics.median(ms[WARMUP:]))
    dist.destroy_process_group()


def run_torch(data, steps, port):
    ctx = mp.get_context("spawn")
    out = ctx.SimpleQueue()
    mp.start_processes(torch_rank, args=(port, data, steps, out), nprocs=WORLD,
                       start_method="spawn")
    return out.get()


def predicted(bindir, model, cluster, work, flags=()):
    report = work / "predict.json"
    cmd = [bindir / "plait-compile", model, "--train", "--optimizer", "sgd", "--lr", "0.1",
           "--momentum", "0.9", "--world-size", "8", "--strategy", "ddp", "--cluster", cluster,
           "--device", "cuda", "-o", work / "predict.plan", "--report", report, *flags]
    subprocess.run(cmd, check=True, capture_output=True)
    r = json.loads(report.read_text())
    sync = r.get("sync_batch_norm", {})
    return r["predicted_step_ms"], sync.get("all_reduces", 0) + sync.get("all_gathers", 0)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build", type=pathlib.Path)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cluster", action="append", type=pathlib.Path)
    args = ap.parse_args()
    bindir = args.build / "bin"
    root = HERE.parent
    clusters = args.cluster or [root / "samples" / "clusters" / "a100-80gb-8.yaml",
                                root / "samples" / "clusters" / "h100-sxm-8.yaml"]
    warnings.filterwarnings("ignore", category=UserWarning)  # the exporter's shape notes
    with tempfile.TemporaryDirectory() as tmp:
        work = pathlib.Path(tmp)
        torch.manual_seed(0)
        data = make_data(BatchNorm, args.steps * BATCH * WORLD, np.random.default_rng(1))
        (work / "data").mkdir()
        for k, v in data.items():
            np.save(work / "data" / f"{k}.npy", v)
        model = BatchNorm()
        names = list(BatchNorm.shapes)
        example = tuple(torch.from_numpy(data[k][:BATCH]) for k in names)
        torch.onnx.export(model, example, str(work / "m.onnx"), input_names=names,
                          output_names=["loss"], opset_version=13, do_constant_folding=False,
                          export_params=True, training=torch.onnx.TrainingMode.TRAINING)
        variants = (("local", []), ("sync", ["--sync-batch-norm"]),
                    ("decomposed", ["--sync-batch-norm", "--no-fused-sync-batch-norm"]))
        plans = {}
        for label, flags in variants:
            plans[label] = work / f"{label}.plan"
            subprocess.run([bindir / "plait-compile", work / "m.onnx", "-o", plans[label],
                            "--train", "--optimizer", "sgd", "--lr", "0.01", "--world-size",
                            str(WORLD), "--strategy", "ddp", *flags], check=True)
        times = {"local": [], "sync": [], "decomposed": [], "torch": []}
        for r in range(args.repeat):
            for label, _ in variants:
                times[label].append(run_plait(bindir, plans[label], work / "data", args.steps,
                                              work))
            times["torch"].append(run_torch(data, args.steps, 29500 + r))
            print("run %d: plait local %.3f ms, sync fused %.3f ms, sync decomposed %.3f ms, "
                  "PyTorch DDP %.3f ms" % (r + 1, times["local"][-1], times["sync"][-1],
                                           times["decomposed"][-1], times["torch"][-1]),
                  flush=True)
        m = {k: statistics.median(v) for k, v in times.items()}
        print("\n| ResNet block, 2 ranks x 1 thread | step ms | / plait local | / PyTorch DDP |")
        print("|---|---|---|---|")
        print("| PyTorch DDP (gloo), own statistics | %.3f | %.2f | 1.00 |"
              % (m["torch"], m["torch"] / m["local"]))
        print("| plait ddp, own statistics | %.3f | 1.00 | %.2f |"
              % (m["local"], m["local"] / m["torch"]))
        print("| plait ddp, --sync-batch-norm | %.3f | %.2f | %.2f |"
              % (m["sync"], m["sync"] / m["local"], m["sync"] / m["torch"]))
        print("| plait ddp, --sync-batch-norm --no-fused-sync-batch-norm | %.3f | %.2f | %.2f |"
              % (m["decomposed"], m["decomposed"] / m["local"], m["decomposed"] / m["torch"]))

        zoo = {}
        for label in ("local", "sync"):
            zoo[label] = work / f"resnet18-{label}.mlir"
            subprocess.run([bindir / "plait-zoo", "--family", "resnet", "--layers", "2,2,2,2",
                            "--width", "64", "--batch", "32", "--image", "224", "--classes",
                            "1000", "--batch-norm", *(["--sync-batch-norm"] if label == "sync"
                                                      else []), "-o", zoo[label]], check=True)
        print("\n| ResNet-18, batch 32 a GPU, 8 GPUs, ddp | predicted local ms | sync fused ms "
              "| collectives added | sync fused / local | sync decomposed ms | collectives added "
              "| sync decomposed / local |")
        print("|---|---|---|---|---|---|---|---|")
        for cluster in clusters:
            local, _ = predicted(bindir, zoo["local"], cluster, work)
            sync, added = predicted(bindir, zoo["sync"], cluster, work)
            dec, addedDec = predicted(bindir, zoo["sync"], cluster, work,
                                      ["--no-fused-sync-batch-norm"])
            print("| %s | %.2f | %.2f | %d | %.3f | %.2f | %d | %.3f |"
                  % (cluster.stem, local, sync, added, sync / local, dec, addedDec, dec / local))


if __name__ == "__main__":
    main()
