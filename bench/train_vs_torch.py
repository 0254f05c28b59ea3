#!/usr/bin/env python3
"""Training step time and peak memory: plait against PyTorch eager, side by side.

For each model (the mlp, cnn and gpt samples, a ~10M-parameter GPT exported at run time from
samples/gpt.py with a bigger config, and the gpt sample on 2 ranks) both frameworks train the
same model (PyTorch's weights are the ONNX initializers), on the same batches, with AdamW
(lr 1e-3), for WARMUP + STEPS steps on ONE thread per process (--threads N: N each):
  - plait: `plait-compile --train --optimizer adamw --lr 1e-3`, then `plait-run --data DIR
    --steps N --log-jsonl LOG --threads 1` with OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1; the
    step time is the log's step_ms. On 2 ranks: `--world-size 2 --strategy ddp` under mpirun.
  - PyTorch: this script re-run as a worker process (torch.set_num_threads(1); with
    --threads N, N and OPENBLAS_NUM_THREADS=OMP_NUM_THREADS=N), each step timed
    with time.perf_counter (forward, zero_grad, backward, optimizer step). On 2 ranks:
    DistributedDataParallel over gloo, 2 worker processes on 127.0.0.1.
Every process runs under /usr/bin/time, whose %M is that process's own peak RSS (on 2 ranks
each rank is wrapped, and the larger rank is reported). The PyTorch figure includes the
interpreter and `import torch` (the header prints that baseline, measured alone); plait's
includes its runtime and BLAS. On several ranks a step's time is the slowest rank's.
The runs alternate plait, PyTorch, plait, ... REPEAT times; a model's ms/step is the median of
the runs' per-step medians (warm-up steps dropped), its RSS the median of the runs' peaks.

Run with /usr/bin/python3 (torch 1.13 CPU, onnx):
  train_vs_torch.py BUILD [--steps N] [--repeat R] [--json OUT] [--only NAME] [--threads N]
                   [--torch-threads T] [--torch-blas-threads K]
"""
import argparse
import datetime
import json
import os
import pathlib
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"
sys.path.insert(0, str(ROOT / "tests" / "e2e"))

LR = 1e-3
WARMUP = 3
# The ~10M-parameter GPT: samples/gpt.py's module constants, overridden before export.
GPT10M = dict(BATCH=4, SEQ=64, VOCAB=512, D_MODEL=256, HEADS=8, LAYERS=12)


# Models: name -> (sample module, ranks, steps divisor). The 10M GPT runs fewer steps.
MODELS = {
    "mlp": ("mlp", 1, 1),
    "cnn": ("cnn", 1, 1),
    "gpt": ("gpt", 1, 1),
    "gpt-10m": ("gpt", 1, 3),
    "gpt-2ranks": ("gpt", 2, 1),
}


def sample_module(kind, config):
    """samples/<kind>.py with its module constants replaced by `config` (empty: the sample)."""
    from train_parity import load_sample_module
    module = load_sample_module(kind)
    for key, value in config.items():
        setattr(module, key, value)
    return module


def gpt_module(config):
    """samples/gpt.py with its module constants replaced by `config`."""
    return sample_module("gpt", config)


def export_sample_module(kind, config, out_root):
    """Exports sample_module(kind, config) the way samples/<kind>.py exports the sample (the
    GPT: opset 14, dynamic batch/sequence axes then pinned); returns the ONNX path."""
    import contextlib
    import io
    with contextlib.redirect_stdout(io.StringIO()):
        return pathlib.Path(sample_module(kind, config).export(str(out_root)))


def export_gpt10m(out_root):
    """Exports the bigger GPT (GPT10M); returns the ONNX path."""
    return export_sample_module("gpt", GPT10M, out_root)


def make_dataset(kind, onnx_path, rows, directory, seed=123):
    """`rows` samples shaped like the model's graph inputs, one .npy per input."""
    import onnx
    rng = np.random.default_rng(seed)
    model = onnx.load(str(onnx_path), load_external_data=False)
    inits = {i.name for i in model.graph.initializer}
    shapes = {i.name: [d.dim_value for d in i.type.tensor_type.shape.dim]
              for i in model.graph.input if i.name not in inits}
    if kind == "gpt":
        t = shapes["idx"][1]
        vocab = [d.dim_value for d in model.graph.output[1].type.tensor_type.shape.dim][-1]
        start = rng.integers(0, vocab, size=(rows, 1))
        seq = (start + 3 * np.arange(t + 1)[None, :] + rng.integers(0, 2, size=(rows, t + 1))) % vocab
        data = {"idx": seq[:, :-1].astype(np.int64), "targets": seq[:, 1:].astype(np.int64)}
    else:
        data = {"x": rng.standard_normal([rows] + shapes["x"][1:]).astype(np.float32),
                "y": rng.integers(0, 10, size=[rows] + shapes["y"][1:]).astype(np.int64)}
    for name, value in data.items():
        np.save(directory / f"{name}.npy", value)
    return shapes[next(iter(shapes))][0], [i for i in shapes]


# Threads per process, plait's (--threads) and PyTorch's (torch.set_num_threads, and its
# OpenMP and OpenBLAS threads): --threads N, default 1.
THREADS = 1
# OpenBLAS threads of the PyTorch processes (--torch-blas-threads; default THREADS). PyTorch
# calls OpenBLAS from its own threads too: N of each can oversubscribe the cores.
TORCH_BLAS_THREADS = None
# torch.set_num_threads of the PyTorch processes (--torch-threads; default THREADS).
TORCH_THREADS = None


def one_thread_env():
    """The environment of the runs: THREADS OpenMP and OpenBLAS threads (1 by default)."""
    env = dict(os.environ)
    env["OPENBLAS_NUM_THREADS"] = str(THREADS)
    env["OMP_NUM_THREADS"] = str(THREADS)
    return env


def timed(cmd, rss_file):
    return ["/usr/bin/time", "-f", "%M", "-o", str(rss_file)] + [str(c) for c in cmd]


def read_rss_mb(files):
    return max(int(pathlib.Path(f).read_text().split()[-1]) for f in files) / 1024.0


def run_checked(cmd, env=None, timeout=300):
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        sys.exit("FAILED (%d): %s\n%s%s" % (p.returncode, " ".join(map(str, cmd)), p.stdout[-3000:],
                                           p.stderr[-3000:]))
    return p.stdout


def run_plait(build, plan, data, steps, ranks, work):
    log = work / "plait.jsonl"
    if log.exists():
        log.unlink()
    rss = [work / f"plait.rss.{r}" for r in range(ranks)]
    for f in rss:
        if f.exists():
            f.unlink()
    run = [build / "bin" / "plait-run", plan, "--data", data, "--steps", WARMUP + steps,
           "--log-jsonl", log, "--threads", THREADS]
    if ranks == 1:
        cmd = timed(run, rss[0])
    else:
        inner = " ".join(timed(run, str(work / "plait.rss.") + "$OMPI_COMM_WORLD_RANK"))
        cmd = ["mpirun", "--oversubscribe", "--allow-run-as-root", "-np", str(ranks),
               "-x", "OPENBLAS_NUM_THREADS", "-x", "OMP_NUM_THREADS", "sh", "-c", inner]
    run_checked(cmd, env=one_thread_env())
    records = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    # On several ranks every rank may append: keep one record per step (the slowest rank).
    by_step = {}
    for r in records:
        by_step[r["step"]] = max(by_step.get(r["step"], 0.0), r["step_ms"])
    ms = [by_step[s] for s in sorted(by_step) if s > WARMUP]
    return statistics.median(ms), read_rss_mb(rss)


def plait_blas_core(build):
    """The OPENBLAS_CORETYPE plait-run sets for itself on this machine (runtime/cpu/BlasCore.h),
    or None when it keeps OpenBLAS's own choice."""
    out = run_checked([str(build / "bin" / "plait-run"), "--list-devices"], env=one_thread_env())
    for line in out.splitlines():
        if line.startswith("blas:") and "plait set OPENBLAS_CORETYPE=" in line:
            return line.split("OPENBLAS_CORETYPE=", 1)[1].split(";", 1)[0].strip()
    return None


def run_torch(spec, steps, ranks, work, coretype=None):
    rss = [work / f"torch.rss.{r}" for r in range(ranks)]
    outs = [work / f"torch.{r}.json" for r in range(ranks)]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = []
    env = one_thread_env()
    if TORCH_BLAS_THREADS:
        env["OPENBLAS_NUM_THREADS"] = str(TORCH_BLAS_THREADS)
    if coretype:
        env["OPENBLAS_CORETYPE"] = coretype
    for r in range(ranks):
        worker = dict(spec, steps=steps, rank=r, world=ranks, port=port, out=str(outs[r]),
                      threads=TORCH_THREADS or THREADS)
        cmd = timed([sys.executable, __file__, "--torch-worker", json.dumps(worker)], rss[r])
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True))
    for p in procs:
        out, _ = p.communicate(timeout=300)
        if p.returncode != 0:
            sys.exit("PyTorch worker failed (%d):\n%s" % (p.returncode, out[-3000:]))
    per_rank = [json.loads(pathlib.Path(o).read_text())["step_ms"] for o in outs]
    ms = [max(step) for step in zip(*per_rank)][WARMUP:]
    return statistics.median(ms), read_rss_mb(rss)


def torch_worker(spec):
    """One PyTorch training process: the model from the ONNX initializers, AdamW, each step
    timed; with world > 1, DDP over gloo."""
    import onnx
    from onnx import numpy_helper
    import torch
    torch.set_num_threads(spec["threads"])
    rank, world = spec["rank"], spec["world"]
    if spec["kind"] == "gpt":
        model = gpt_module(spec["gpt_config"]).GPT()
    else:
        from train_parity import load_sample_module
        module = load_sample_module(spec["kind"])
        model = getattr(module, spec["kind"].upper())()
    weights = {i.name: torch.from_numpy(numpy_helper.to_array(i).copy())
               for i in onnx.load(spec["onnx"]).graph.initializer}
    model.load_state_dict(weights, strict=True)
    model.train()
    if world > 1:
        import torch.distributed as dist
        dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % spec["port"],
                                rank=rank, world_size=world)
        model = torch.nn.parallel.DistributedDataParallel(model)
    data = [torch.from_numpy(np.load(pathlib.Path(spec["data"]) / f"{n}.npy"))
            for n in spec["inputs"]]
    batch, total = spec["batch"], WARMUP + spec["steps"]
    opt = torch.optim.AdamW(model.parameters(), lr=LR)
    step_ms = []
    for s in range(total):
        lo = (s * world + rank) * batch
        args = [d[lo:lo + batch] for d in data]
        t0 = time.perf_counter()
        loss, _ = model(*args)
        opt.zero_grad()
        loss.backward()
        opt.step()
        step_ms.append((time.perf_counter() - t0) * 1e3)
    if world > 1:
        torch.distributed.destroy_process_group()
    pathlib.Path(spec["out"]).write_text(json.dumps({"step_ms": step_ms, "loss": float(loss)}))


def bench_model(name, build, steps, repeat, tmp, coretype):
    kind, ranks, divisor = MODELS[name]
    steps = max(5, steps // divisor)
    work = tmp / name
    (work / "data").mkdir(parents=True)
    if name == "gpt-10m":
        onnx_path, gpt_config = export_gpt10m(work / "export"), GPT10M
    else:
        onnx_path, gpt_config = SAMPLES / kind / f"{kind}.onnx", {}
    batch, inputs = make_dataset(kind, onnx_path, (WARMUP + steps) * batch_of(onnx_path) * ranks,
                                 work / "data")
    import onnx
    params = sum(int(np.prod(i.dims)) for i in
                 onnx.load(str(onnx_path), load_external_data=False).graph.initializer)
    plan = work / "model.plan"
    compile_cmd = [build / "bin" / "plait-compile", onnx_path, "-o", plan, "--train",
                   "--optimizer", "adamw", "--lr", str(LR)]
    if ranks > 1:
        compile_cmd += ["--world-size", str(ranks), "--strategy", "ddp"]
    run_checked([str(c) for c in compile_cmd])
    spec = dict(kind=kind, gpt_config=gpt_config, onnx=str(onnx_path), data=str(work / "data"),
                inputs=inputs, batch=batch)
    plait_runs, torch_runs, tuned_runs = [], [], []
    for _ in range(repeat):
        plait_runs.append(run_plait(build, plan, work / "data", steps, ranks, work))
        torch_runs.append(run_torch(spec, steps, ranks, work))
        if coretype:
            tuned_runs.append(run_torch(spec, steps, ranks, work, coretype))
    p_ms = statistics.median(r[0] for r in plait_runs)
    t_ms = statistics.median(r[0] for r in torch_runs)
    p_rss = statistics.median(r[1] for r in plait_runs)
    t_rss = statistics.median(r[1] for r in torch_runs)
    row = dict(model=name, params=params, ranks=ranks, threads=THREADS, batch_per_rank=batch,
               steps=steps, plait_ms=p_ms, torch_ms=t_ms, speedup=t_ms / p_ms,
               plait_rss_mb=p_rss, torch_rss_mb=t_rss, rss_ratio=p_rss / t_rss,
               plait_runs_ms=[r[0] for r in plait_runs], torch_runs_ms=[r[0] for r in torch_runs])
    if coretype:
        tuned_ms = statistics.median(r[0] for r in tuned_runs)
        row.update(torch_tuned_ms=tuned_ms, speedup_tuned=tuned_ms / p_ms,
                   torch_tuned_runs_ms=[r[0] for r in tuned_runs])
    return row


def batch_of(onnx_path):
    import onnx
    model = onnx.load(str(onnx_path), load_external_data=False)
    return model.graph.input[0].type.tensor_type.shape.dim[0].dim_value


def header():
    try:
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True).stdout.strip()
    except OSError:
        commit = "?"
    cpu = platform.processor() or platform.machine()
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import torch
    with tempfile.TemporaryDirectory() as tmp:
        rss = pathlib.Path(tmp) / "rss"
        run_checked(timed([sys.executable, "-c", "import numpy, onnx, torch"], rss))
        baseline = read_rss_mb([rss])
    return dict(torch_baseline_rss_mb=baseline, date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                machine="%s, %d cores, %s" % (cpu, os.cpu_count(), platform.platform()),
                commit=commit, torch=torch.__version__)


def table(meta, rows):
    tuned = meta.get("blas_coretype")
    out = ["date: %s" % meta["date"], "machine: %s" % meta["machine"],
           "commit: %s, torch %s" % (meta["commit"], meta["torch"]),
           "PyTorch process baseline (interpreter + import numpy, onnx, torch): %.0f MB RSS"
           % meta["torch_baseline_rss_mb"],
           ("plait-run sets OPENBLAS_CORETYPE=%s for itself (OpenBLAS detected generic kernels); "
            "'PyTorch+%s' is PyTorch run with the same setting" % (tuned, tuned)) if tuned else
           "plait-run keeps OpenBLAS's own kernel choice", ""]
    head = ("| model | params | ranks | threads | plait ms/step | PyTorch ms/step | speed-up "
            "(PyTorch/plait) |")
    rule = "|---|---:|---:|---:|---:|---:|---:|"
    if tuned:
        head += " PyTorch+%s ms/step | speed-up (PyTorch+%s/plait) |" % (tuned, tuned)
        rule += "---:|---:|"
    out += [head + " plait peak RSS MB | PyTorch peak RSS MB | RSS ratio (plait/PyTorch) |",
            rule + "---:|---:|---:|"]
    for r in rows:
        line = "| %s | %s | %d | %d | %.3f | %.3f | %.2f× |" % (
            r["model"], "{:,}".format(r["params"]), r["ranks"], r["threads"], r["plait_ms"],
            r["torch_ms"], r["speedup"])
        if tuned:
            line += " %.3f | %.2f× |" % (r["torch_tuned_ms"], r["speedup_tuned"])
        out.append(line + " %.0f | %.0f | %.2f |" % (r["plait_rss_mb"], r["torch_rss_mb"],
                                                    r["rss_ratio"]))
    return "\n".join(out)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--torch-worker":
        torch_worker(json.loads(sys.argv[2]))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build", type=pathlib.Path)
    ap.add_argument("--steps", type=int, default=30, help="timed steps per run (gpt-10m: /3)")
    ap.add_argument("--repeat", type=int, default=3, help="alternating plait/PyTorch runs")
    ap.add_argument("--json", type=pathlib.Path)
    ap.add_argument("--only", action="append", choices=sorted(MODELS))
    ap.add_argument("--threads", type=int, default=1,
                    help="threads per process for both (plait-run --threads, "
                         "torch.set_num_threads)")
    ap.add_argument("--torch-threads", type=int,
                    help="torch.set_num_threads of the PyTorch processes (default: --threads)")
    ap.add_argument("--torch-blas-threads", type=int,
                    help="OpenBLAS threads of the PyTorch processes (default: --threads)")
    args = ap.parse_args()
    global THREADS, TORCH_BLAS_THREADS, TORCH_THREADS
    THREADS = args.threads
    TORCH_BLAS_THREADS = args.torch_blas_threads
    TORCH_THREADS = args.torch_threads
    build = args.build.resolve()
    meta = header()
    meta["blas_coretype"] = plait_blas_core(build)
    rows = []
    with tempfile.TemporaryDirectory(prefix="plait-vs-torch-") as tmp:
        for name in args.only or list(MODELS):
            t0 = time.time()
            rows.append(bench_model(name, build, args.steps, args.repeat, pathlib.Path(tmp),
                                    meta["blas_coretype"]))
            print("%s: plait %.3f ms, PyTorch %.3f ms (%.0f s)" % (
                name, rows[-1]["plait_ms"], rows[-1]["torch_ms"], time.time() - t0),
                file=sys.stderr)
    print(table(meta, rows))
    if args.json:
        args.json.write_text(json.dumps(dict(meta, command=" ".join(sys.argv), rows=rows),
                                        indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
