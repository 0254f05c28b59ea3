#!/usr/bin/env python3
"""The CUDA backend against the CPU backend, for tests/gpu/run.sh (a GPU machine).

For each sample (mlp, cnn, gpt; and plait-zoo's ResNet with BatchNorms) and precision (fp32,
bf16-mixed) at world size 1: compile the
model for --device cuda and --device cpu with the same flags, train both STEPS steps on the same
data (tests/e2e/train_parity.make_dataset), and compare the per-step losses: relative
difference at most 1e-4 (fp32) or 1e-2 (bf16-mixed). The fp32 CUDA runs also time every
instruction (plait-run --kernel-times), and a second table gives each fused kernel's achieved
bandwidth (bytes read + written per second) against the device's copy bandwidth. The GPT's
fp32 plan also checkpoints on the CUDA backend: half the steps with --checkpoint-dir, the rest
with --resume, against its straight run; and across backends, a CPU run's checkpoint resumed
on CUDA and a CUDA run's resumed on the CPU, each against the CPU's straight run. With two or
more GPUs, the GPT's 2-rank DDP plan runs on NCCL against the CPU backend's MPI run (NCCL
refuses two ranks on one GPU, so one GPU skips it, saying so).

Everything a failure needs to be debugged is printed in one go: the command, its exit code
and its output. Exits 1 when any comparison or run failed.

PLAIT_GPU_RUN_TIMEOUT bounds each training run (150 s).

  backend_parity.py --build BUILD [--steps 20] [--work DIR] [--gpus N] [--stage STAGE]

--stage prepare does everything that needs no GPU (datasets, every plan for both devices, the
CPU runs) into --work; --stage device then runs the CUDA plans of that directory and compares,
on a machine that need not have the compiler (tests/gpu/bundle.sh, run.sh --bundle). The
default, all, does both in one go.

--device-under-test cpu runs the "CUDA" side on the CPU backend too: the script's own check
on machines without a GPU (ctest gpu.backend_parity_selftest), where every comparison must
pass exactly.
"""
import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))
from train_parity import make_dataset, read_safetensors  # noqa: E402

SAMPLES = ("mlp", "cnn", "gpt")
TRAIN = {
    "mlp": ["--optimizer", "sgd", "--lr", "0.05", "--momentum", "0.9"],
    "cnn": ["--optimizer", "sgd", "--lr", "0.02", "--momentum", "0.5"],
    "gpt": ["--optimizer", "adamw", "--lr", "3e-3"],
}
# plait-zoo models among the cases, as their plait-zoo arguments: a ResNet whose convolutions
# are followed by training-mode BatchNorms (plait.batch_norm and batch_norm_grad, and the
# running statistics), batches of 8 images, 3 x 32 x 32, of 10 classes (inputs x and y).
ZOO = {"resnet-bn": ["--family", "resnet", "--layers", "1,1", "--width", "16", "--batch", "8",
                     "--image", "32", "--classes", "10", "--batch-norm"]}
TRAIN["resnet-bn"] = ["--optimizer", "sgd", "--lr", "0.05", "--momentum", "0.9"]
TOLERANCE = {"fp32": 1e-4, "bf16-mixed": 1e-2}
# A model big enough for the kernels to be bound by bandwidth and FLOPs rather than by launches
# (the samples' kernels move kilobytes): plait-zoo's GPT, 2 blocks of width 1024, 8 x 512
# tokens a step. CUDA only (the CPU backend would take minutes a step); its losses must be
# finite and fall.
LARGE_BATCH, LARGE_SEQ = 8, 512
LARGE = ["--family", "gpt", "--layers", "2", "--width", "1024", "--heads", "16",
         "--seq", str(LARGE_SEQ), "--batch", str(LARGE_BATCH), "--vocab", "8192", "--decomposed"]
LARGE_TRAIN = ["--optimizer", "adamw", "--lr", "1e-3"]
LARGE_STEPS = 10
FAILURES = []


def run(cmd, timeout, what):
    """Runs `cmd`; on failure records and prints everything about it. Returns success."""
    start = time.time()
    try:
        p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True,
                           timeout=timeout)
        code, out = p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired as e:
        code = "timeout after %ds" % timeout
        out = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
    seconds = time.time() - start
    if code != 0:
        FAILURES.append(what)
        print("FAILED: %s (exit %s, %.1f s)\n  $ %s\n%s" % (what, code, seconds,
                                                          " ".join(map(str, cmd)),
                                                          "\n".join("  | " + l for l in
                                                                    out.splitlines()[-40:])),
              flush=True)
        return False
    return True


def losses(log):
    return np.array([json.loads(l)["loss"] for l in log.read_text().splitlines() if l.strip()],
                    dtype=np.float64)


def compile_plan(compile_bin, model, flags, device, plan):
    return run([compile_bin, model, "--train", *flags, "--device", device, "-o", plan], 120,
               "compile " + plan.stem)


def train(run_bin, plan, data, steps, log, weights=None, times=None, nproc=1, extra=()):
    """One training run of `plan`; `log` gets its losses (JSON lines)."""
    cmd = [run_bin, plan, "--data", data, "--steps", steps, "--log-jsonl", log, "--timeout", 60,
           *extra]
    if nproc > 1:
        cmd += ["--nproc", nproc]
    if weights:
        cmd += ["--save-weights", weights]
    if times:
        cmd += ["--kernel-times", times]
    limit = int(os.environ.get("PLAIT_GPU_RUN_TIMEOUT", "150"))
    return run(["timeout", limit] + cmd, limit + 10, "train " + log.stem)


def cases():
    """(tag stem, sample, compile flags, precision, ranks) of every comparison."""
    out = []
    for sample in SAMPLES:
        for precision in ("fp32", "bf16-mixed"):
            out.append(("%s-%s" % (sample, precision), sample,
                        TRAIN[sample] + ["--precision", precision], precision, 1))
    out.append(("gpt-ddp2", "gpt", TRAIN["gpt"] + ["--world-size", "2", "--strategy", "ddp"],
                "fp32", 2))
    # The samples' GPT plans run the fused attention (plait.attention) and layer norms
    # (plait.layer_norm); this one the decomposed ones (matmul, mask, softmax, matmul; mean,
    # subtract, pow, mean, add, sqrt, divide in fused elementwise kernels).
    out.append(("gpt-decomposed-fp32", "gpt",
                TRAIN["gpt"] + ["--no-fused-attention", "--no-fused-norm"], "fp32", 1))
    # The other optimizers' update kernels (single-tensor ones and grouped_update's): RMSprop
    # with all three states, Adagrad with its decays, Lion, AdamW's AMSGrad under bf16-mixed
    # (its grouped update reading bf16 gradients).
    out.append(("mlp-rmsprop-fp32", "mlp",
                ["--optimizer", "rmsprop", "--lr", "1e-3", "--centered", "--momentum", "0.5",
                 "--weight-decay", "1e-4"], "fp32", 1))
    out.append(("cnn-adagrad-fp32", "cnn",
                ["--optimizer", "adagrad", "--lr", "0.02", "--lr-decay", "0.01",
                 "--weight-decay", "1e-3"], "fp32", 1))
    out.append(("gpt-lion-fp32", "gpt", ["--optimizer", "lion", "--lr", "3e-4",
                                        "--weight-decay", "0.1"], "fp32", 1))
    # Adamax, NAdam (its momentum products walked on the device), RAdam past its 5 unrectified
    # steps, Adadelta, and Adagrad's initial accumulator (read on step 1).
    out.append(("mlp-adamax-fp32", "mlp", ["--optimizer", "adamax", "--weight-decay", "1e-3"],
                "fp32", 1))
    out.append(("gpt-nadam-fp32", "gpt", ["--optimizer", "nadam", "--lr", "1e-3",
                                         "--momentum-decay", "0.01"], "fp32", 1))
    out.append(("cnn-radam-fp32", "cnn", ["--optimizer", "radam", "--betas", "0.9,0.99"],
                "fp32", 1))
    out.append(("cnn-radamw-fp32", "cnn", ["--optimizer", "radam", "--weight-decay", "0.1",
                                          "--decoupled-weight-decay"], "fp32", 1))
    out.append(("gpt-lr-scale-fp32", "gpt", ["--optimizer", "adamw", "--lr", "3e-3",
                                            "--lr-scale", "wte|wpe=0.1,ln=2",
                                            "--no-weight-decay", "bias"], "fp32", 1))
    out.append(("mlp-adadelta-fp32", "mlp", ["--optimizer", "adadelta", "--rho", "0.95"],
                "fp32", 1))
    out.append(("mlp-adagrad-init-fp32", "mlp", ["--optimizer", "adagrad", "--lr", "0.05",
                                                "--initial-accumulator-value", "0.1"],
                "fp32", 1))
    # Rprop: step 1's step size read from the device's lr, the sign-driven factors after.
    out.append(("cnn-rprop-fp32", "cnn", ["--optimizer", "rprop", "--lr", "2e-3", "--etas",
                                         "0.4,1.3", "--step-sizes", "1e-4,5e-3"], "fp32", 1))
    # ASGD: eta and mu from the previous step's lr on the device, averaging from step 7.
    out.append(("mlp-asgd-fp32", "mlp", ["--optimizer", "asgd", "--lr", "0.05", "--t0", "5",
                                        "--lambd", "0.01"], "fp32", 1))
    # LAMB: each param's trust ratio from its norms, summed on the device in two stages.
    out.append(("gpt-lamb-fp32", "gpt", ["--optimizer", "lamb", "--lr", "3e-3",
                                        "--no-weight-decay", "bias|ln"], "fp32", 1))
    # Adafactor: its rows, columns and RMS sums on the device (five launches per param).
    out.append(("gpt-adafactor-fp32", "gpt", ["--optimizer", "adafactor", "--lr", "3e-3",
                                             "--beta1", "0.9"], "fp32", 1))
    # Training-mode BatchNorm (fused: batch_norm, batch_norm_grad), fp32 and bf16-mixed.
    for precision in ("fp32", "bf16-mixed"):
        out.append(("resnet-bn-" + precision, "resnet-bn",
                    TRAIN["resnet-bn"] + ["--precision", precision], precision, 1))
    out.append(("gpt-amsgrad-bf16-mixed", "gpt",
                ["--optimizer", "adamw", "--lr", "3e-3", "--amsgrad", "--precision",
                 "bf16-mixed"], "bf16-mixed", 1))
    return out


def prepare(args, work):
    """Everything that needs no GPU: datasets, both plans of every case, the CPU runs."""
    compile_bin, run_bin = args.build / "bin" / "plait-compile", args.build / "bin" / "plait-run"
    for sample in SAMPLES:
        data = work / ("data-" + sample)
        data.mkdir(exist_ok=True)
        make_dataset(sample, args.steps, data)
    for sample, zoo_args in ZOO.items():
        run([args.build / "bin" / "plait-zoo", *zoo_args, "-o", work / (sample + ".mlir")], 60,
            "plait-zoo " + sample)
        data = work / ("data-" + sample)
        data.mkdir(exist_ok=True)
        rng = np.random.default_rng(11)
        np.save(data / "x.npy", rng.standard_normal((args.steps * 8, 3, 32, 32)).astype(np.float32))
        np.save(data / "y.npy", rng.integers(0, 10, size=(args.steps * 8,)).astype(np.int64))
    for stem, sample, flags, _, ranks in cases():
        model = (work / (sample + ".mlir") if sample in ZOO
                 else ROOT / "samples" / sample / (sample + ".onnx"))
        for device in ("cpu", "cuda"):
            target = args.device_under_test if device == "cuda" else "cpu"
            plan = work / ("%s-%s.plan" % (stem, device))
            if compile_plan(compile_bin, model, flags, target, plan) and device == "cpu":
                train(run_bin, plan, work / ("data-" + sample), args.steps,
                      work / ("%s-cpu.jsonl" % stem),
                      weights=work / ("%s-cpu.safetensors" % stem) if ranks == 1 else None,
                      nproc=ranks)
    # A CPU checkpoint halfway, for the CUDA backend to resume (CHECKPOINT_CASE).
    stem, sample = CHECKPOINT_CASE
    shutil.rmtree(work / "ckpt-cpu", ignore_errors=True)
    train(run_bin, work / ("%s-cpu.plan" % stem), work / ("data-" + sample), args.steps // 2,
          work / ("%s-cpu-half.jsonl" % stem), extra=["--checkpoint-dir", work / "ckpt-cpu"])
    if args.device_under_test == "cuda":
        prepare_large(args, work)
    (work / "prepared.json").write_text(json.dumps({"steps": args.steps}))


def prepare_large(args, work):
    """The large model's CUDA plans (fp32, bf16-mixed) and LARGE_STEPS batches of tokens."""
    model = work / "gpt-large.mlir"
    if not run([args.build / "bin" / "plait-zoo", *LARGE, "-o", model], 60, "plait-zoo gpt-large"):
        return
    for precision in ("fp32", "bf16-mixed"):
        compile_plan(args.build / "bin" / "plait-compile", model,
                     LARGE_TRAIN + ["--precision", precision], "cuda",
                     work / ("gpt-large-%s-cuda.plan" % precision))
    rng = np.random.default_rng(7)
    start = rng.integers(0, 64, size=(LARGE_STEPS * LARGE_BATCH, 1))
    tokens = (start + 3 * np.arange(LARGE_SEQ + 1)[None, :]) % 64
    data = work / "data-gpt-large"
    data.mkdir(exist_ok=True)
    np.save(data / "idx.npy", tokens[:, :-1].astype(np.int64))
    np.save(data / "targets.npy", tokens[:, 1:].astype(np.int64))


MODES = (("graph", []), ("eager", ["--no-cuda-graphs"]))
# The case whose plans checkpoint and resume across the backends (checkpoints()).
CHECKPOINT_CASE = ("gpt-fp32", "gpt")


def timed_kernels(run_bin, plan, data, steps, stem, model, kernel_rows):
    """A --kernel-times run of `plan`; its fused kernels go into `kernel_rows` as `model`."""
    times = plan.parent / ("%s.kernels.json" % stem)
    if train(run_bin, plan, data, steps, plan.parent / ("%s-timed.jsonl" % stem), times=times):
        report = json.loads(times.read_text())
        kernel_rows.extend((model, k, report["copy_gbps"]) for k in report["kernels"]
                           if k["kernel"] == "fused_elementwise")


def on_device_large(args, work, large_rows, kernel_rows):
    """The large model: graph and eager runs (finite, falling losses), and a timed run."""
    run_bin = args.build / "bin" / "plait-run"
    data = work / "data-gpt-large"
    for precision in ("fp32", "bf16-mixed"):
        plan = work / ("gpt-large-%s-cuda.plan" % precision)
        if not plan.exists():
            FAILURES.append("gpt-large %s: not prepared (%s missing)" % (precision, plan.name))
            continue
        ms = {}
        for mode, extra in MODES:
            log = work / ("gpt-large-%s-cuda-%s.jsonl" % (precision, mode))
            if not train(run_bin, plan, data, LARGE_STEPS, log, extra=extra):
                continue
            got = losses(log)
            if len(got) != LARGE_STEPS or not np.all(np.isfinite(got)) or got[-1] >= got[0]:
                FAILURES.append("gpt-large %s (%s): losses not finite and falling: %s" % (
                    precision, mode, " ".join("%.4g" % x for x in got)))
            ms[mode] = (step_ms(log), got)
        timed_kernels(run_bin, plan, data, LARGE_STEPS, "gpt-large-%s-cuda" % precision,
                      "gpt-large " + precision, kernel_rows)
        if "graph" in ms:
            graph_ms, got = ms["graph"]
            eager_ms = ms["eager"][0] if "eager" in ms else float("nan")
            large_rows.append((precision, got[0], got[-1], eager_ms, graph_ms,
                               LARGE_BATCH * LARGE_SEQ / graph_ms * 1e3))


def step_ms(log):
    """The median step time of a run's steps 2.. (step 1 carries one-time set-up)."""
    ms = [json.loads(l)["step_ms"] for l in log.read_text().splitlines() if l.strip()][1:]
    return float(np.median(ms)) if ms else float("nan")


def on_device(args, work, rows, kernel_rows):
    """Runs each case's CUDA plan and compares its losses with the prepared CPU run.

    Each plan runs as plait-run runs it by default (steps 2.. replayed as a CUDA graph), then
    with --no-cuda-graphs (every kernel launched every step): both must match the CPU run, and
    their step times are reported side by side. fp32 plans run a third time with
    --kernel-times for the bandwidth table."""
    run_bin = args.build / "bin" / "plait-run"
    prepared = json.loads((work / "prepared.json").read_text())
    if prepared["steps"] != args.steps:
        FAILURES.append("%s was prepared for %d steps, not %d" % (work, prepared["steps"],
                                                                  args.steps))
        return
    for stem, sample, _, precision, ranks in cases():
        label = stem if ranks == 1 else "gpt ddp x%d" % ranks
        # The samples' own cases by sample; the others (decomposed, other optimizers, ranks)
        # by their tag.
        name = (sample if stem == "%s-%s" % (sample, precision) else label, precision)
        if ranks > args.gpus:
            print("%s on NCCL: skipped (%d GPU; NCCL needs one GPU per rank)" % (label,
                                                                                 args.gpus))
            continue
        plan = work / ("%s-cuda.plan" % stem)
        cpu_log = work / ("%s-cpu.jsonl" % stem)
        data = work / ("data-" + sample)
        if not plan.exists() or not cpu_log.exists():
            FAILURES.append("%s: not prepared (%s or %s missing)" % (label, plan.name,
                                                                       cpu_log.name))
            rows.append(name + (None, TOLERANCE[precision], "NOT RUN"))
            continue
        cpu = losses(cpu_log)
        got = {}
        for mode, extra in MODES:
            log = work / ("%s-cuda-%s.jsonl" % (stem, mode))
            weights = work / ("%s-cuda.safetensors" % stem) if ranks == 1 and mode == "graph" \
                else None
            if not train(run_bin, plan, data, args.steps, log, weights=weights, nproc=ranks,
                         extra=extra):
                continue
            cuda = losses(log)
            if len(cpu) != args.steps or len(cuda) != args.steps:
                FAILURES.append("%s (%s): %d cpu / %d cuda steps logged" % (
                    label, mode, len(cpu), len(cuda)))
                continue
            rel = np.abs(cuda - cpu) / np.maximum(np.abs(cpu), 1e-12)
            ok = bool(np.all(np.isfinite(cuda))) and rel.max() <= TOLERANCE[precision]
            if not ok:
                FAILURES.append("%s (%s): losses differ by %.3g (relative)" % (label, mode,
                                                                               rel.max()))
                for s in range(args.steps):
                    print("  %s %s step %2d: cpu %.8g cuda %.8g rel %.3g" % (
                        label, mode, s + 1, cpu[s], cuda[s], rel[s]))
            got[mode] = (cuda, rel.max(), ok, step_ms(log))
        if ranks == 1 and precision == "fp32" and args.device_under_test == "cuda":
            timed_kernels(run_bin, plan, data, args.steps, "%s-cuda" % stem, sample, kernel_rows)
        if "graph" not in got:
            rows.append(name + (None, TOLERANCE[precision], "NOT RUN"))
            continue
        cuda, rel, ok, graph_ms = got["graph"]
        eager_ms = got["eager"][3] if "eager" in got else float("nan")
        ok = ok and "eager" in got and got["eager"][2]
        # The final weights, for information (AdamW turns rounding noise in near-zero
        # gradients into lr-sized steps, so weights are not a pass/fail criterion here).
        dw = float("nan")
        if ranks == 1:
            try:
                a = read_safetensors(work / ("%s-cpu.safetensors" % stem))
                b = read_safetensors(work / ("%s-cuda.safetensors" % stem))
                dw = max((float(np.max(np.abs(b[k].astype(np.float64) -
                                              a[k].astype(np.float64))))
                          for k in a if k in b and a[k].size), default=float("nan"))
            except (KeyError, ValueError, OSError):  # e.g. bf16 params: not compared
                pass
        rows.append(name + (rel, TOLERANCE[precision], "ok" if ok else "FAIL", cpu[0], cpu[-1],
                            cuda[-1], dw, step_ms(cpu_log), eager_ms, graph_ms))


def checkpoints(args, work, rows):
    """Checkpoints on the CUDA backend: the straight run's steps against (1) a CUDA run of half
    the steps with --checkpoint-dir, then --resume to the end; (2) the CPU run's checkpoint of
    half the steps (prepared) resumed on CUDA; (3) (1)'s CUDA checkpoint resumed on the CPU
    backend. (1) compares with the straight CUDA run, (2) and (3) with the straight CPU run;
    steps half+1..N of each, within the case's tolerance (run to run, the CUDA backend's float
    atomics in gather gradients and fused sums are not bit-reproducible)."""
    stem, sample = CHECKPOINT_CASE
    run_bin = args.build / "bin" / "plait-run"
    data = work / ("data-" + sample)
    half, steps = args.steps // 2, args.steps
    tolerance = TOLERANCE["fp32"]
    cuda_plan, cpu_plan = work / ("%s-cuda.plan" % stem), work / ("%s-cpu.plan" % stem)
    straight = {"cuda": work / ("%s-cuda-graph.jsonl" % stem), "cpu": work / ("%s-cpu.jsonl" % stem)}
    ckpt_cuda = work / "ckpt-cuda"
    shutil.rmtree(ckpt_cuda, ignore_errors=True)
    first = train(run_bin, cuda_plan, data, half, work / ("%s-cuda-half.jsonl" % stem),
                  extra=["--checkpoint-dir", ckpt_cuda])
    runs = []  # (label, plan, checkpoint directory to copy, reference)
    if first:
        runs.append(("cuda -> cuda", cuda_plan, ckpt_cuda, "cuda"))
    runs.append(("cpu -> cuda", cuda_plan, work / "ckpt-cpu", "cpu"))
    if first:
        runs.append(("cuda -> cpu", cpu_plan, ckpt_cuda, "cpu"))
    for label, plan, source, reference in runs:
        tag = label.replace(" -> ", "-to-")
        resume_dir = work / ("ckpt-" + tag)
        shutil.rmtree(resume_dir, ignore_errors=True)
        if not source.exists():
            FAILURES.append("checkpoint %s: %s was not written" % (label, source))
            rows.append((label, None, tolerance, "NOT RUN"))
            continue
        shutil.copytree(source, resume_dir)  # each resume writes its own checkpoints
        log = work / ("%s-resumed-%s.jsonl" % (stem, tag))
        log.unlink(missing_ok=True)
        if not train(run_bin, plan, data, steps, log,
                     extra=["--checkpoint-dir", resume_dir, "--resume"]):
            rows.append((label, None, tolerance, "FAIL"))
            continue
        if not straight[reference].exists():
            FAILURES.append("checkpoint %s: no straight %s run to compare with" % (label,
                                                                                reference))
            rows.append((label, None, tolerance, "NOT RUN"))
            continue
        want, got = losses(straight[reference])[half:], losses(log)
        if len(got) != steps - half or len(want) != steps - half:
            FAILURES.append("checkpoint %s: %d steps logged after step %d, %d expected" % (
                label, len(got), half, steps - half))
            rows.append((label, None, tolerance, "FAIL"))
            continue
        rel = float(np.max(np.abs(got - want) / np.maximum(np.abs(want), 1e-12)))
        ok = bool(np.all(np.isfinite(got))) and rel <= tolerance
        if not ok:
            FAILURES.append("checkpoint %s: losses after step %d differ by %.3g (relative)" % (
                label, half, rel))
        rows.append((label, rel, tolerance, "ok" if ok else "FAIL"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", required=True, type=pathlib.Path)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--work", type=pathlib.Path, default=None)
    ap.add_argument("--gpus", type=int, default=1)
    ap.add_argument("--device-under-test", default="cuda", choices=("cuda", "cpu"))
    ap.add_argument("--stage", default="all", choices=("all", "prepare", "device"),
                    help="prepare: plans, data and CPU runs (no GPU needed); device: the CUDA "
                         "runs and the comparison, on a work directory prepared before")
    args = ap.parse_args()
    work = args.work or pathlib.Path(tempfile.mkdtemp(prefix="plait-gpu-"))
    work.mkdir(parents=True, exist_ok=True)
    print("work directory: %s" % work, flush=True)
    if args.stage in ("all", "prepare"):
        prepare(args, work)
    if args.stage == "prepare":
        if FAILURES:
            print("\n%d FAILURE(S):\n  %s" % (len(FAILURES), "\n  ".join(FAILURES)))
            return 1
        print("prepared %s for %d steps" % (work, args.steps))
        return 0
    rows, kernel_rows, large_rows, checkpoint_rows = [], [], [], []
    on_device(args, work, rows, kernel_rows)
    checkpoints(args, work, checkpoint_rows)
    if args.device_under_test == "cuda":
        on_device_large(args, work, large_rows, kernel_rows)

    print("\nLosses, CUDA backend against the CPU backend (%d steps); step times are medians "
          "of steps 2..%d (CPU: the machine that prepared the plans)" % (args.steps, args.steps))
    print("%-11s %-10s %12s %9s %-7s %10s %10s %10s %9s %9s %9s %9s" % (
        "sample", "precision", "max rel diff", "tolerance", "result", "cpu loss 1", "cpu loss N",
        "cuda lossN", "max |dw|", "cpu ms", "eager ms", "graph ms"))
    for r in rows:
        if r[2] is None:
            print("%-11s %-10s %12s %9.0e %-7s" % (r[0], r[1], "-", r[3], r[4]))
        else:
            print("%-11s %-10s %12.3g %9.0e %-7s %10.6g %10.6g %10.6g %9.3g %9.3f %9.3f %9.3f"
                  % r)

    print("\nCheckpoints (%s, %d steps): saved after step %d on one backend, resumed on the "
          "named one, steps %d..%d against that backend's straight run" % (
              CHECKPOINT_CASE[0], args.steps, args.steps // 2, args.steps // 2 + 1, args.steps))
    print("%-13s %12s %9s %-7s" % ("saved -> run", "max rel diff", "tolerance", "result"))
    for r in checkpoint_rows:
        if r[1] is None:
            print("%-13s %12s %9.0e %-7s" % (r[0], "-", r[2], r[3]))
        else:
            print("%-13s %12.3g %9.0e %-7s" % r)

    if large_rows:
        print("\nLarger model: plait-zoo %s, AdamW, %d steps on CUDA only (losses must be "
              "finite and fall):" % (" ".join(LARGE), LARGE_STEPS))
        print("%-10s %10s %10s %9s %9s %12s" % ("precision", "loss 1", "loss N", "eager ms",
                                               "graph ms", "tokens/s"))
        for r in large_rows:
            print("%-10s %10.5g %10.5g %9.3f %9.3f %12.0f" % r)

    print("\nFused kernels (mean over steps 2..N and over the instructions that run each "
          "kernel), achieved bandwidth = bytes read + written / time:")
    if kernel_rows:
        copy = kernel_rows[0][2]
        print("device copy bandwidth (cudaMemcpy D2D, read + write): %.1f GB/s" % copy)
        print("%-20s %-16s %-34s %5s %11s %9s %9s %7s" % (
            "model", "symbol", "first instruction", "runs", "bytes", "us", "GB/s", "% copy"))
        grouped = {}
        for model, k, copy in kernel_rows:
            grouped.setdefault((model, k["symbol"]), []).append(k)
        for (model, symbol), ks in grouped.items():
            nbytes = float(np.mean([k["bytes"] for k in ks]))
            us = float(np.mean([k["ms"] for k in ks])) * 1e3
            gbps = nbytes / us / 1e3
            name = ks[0]["name"]  # ONNX node names; a zoo model's are FILE.mlir:LINE:COL
            if ".mlir:" in name:
                name = name.rsplit("/", 1)[-1]
            print("%-20s %-16s %-34.34s %5d %11.0f %9.2f %9.1f %6.1f%%" % (
                model, symbol, name, len(ks), nbytes, us, gbps, 100 * gbps / copy))
    else:
        print("  none timed")
    if FAILURES:
        print("\n%d FAILURE(S):\n  %s" % (len(FAILURES), "\n  ".join(FAILURES)))
        return 1
    print("\nall comparisons passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
