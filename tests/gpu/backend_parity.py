#!/usr/bin/env python3
"""The CUDA backend against the CPU backend, for tests/gpu/run.sh (a GPU machine).

For each sample (mlp, cnn, gpt) and precision (fp32, bf16-mixed) at world size 1: compile the
model for --device cuda and --device cpu with the same flags, train both STEPS steps on the same
data (tests/e2e/train_parity.make_dataset), and compare the per-step losses: relative
difference at most 1e-4 (fp32) or 1e-2 (bf16-mixed). The fp32 CUDA runs also time every
instruction (plait-run --kernel-times), and a second table gives each fused kernel's achieved
bandwidth (bytes read + written per second) against the device's copy bandwidth. With two or
more GPUs, the GPT's 2-rank DDP plan runs on NCCL against the CPU backend's MPI run (NCCL
refuses two ranks on one GPU, so one GPU skips it, saying so).

Everything a failure needs to be debugged is printed in one go: the command, its exit code
and its output. Exits 1 when any comparison or run failed.

  backend_parity.py --build BUILD [--steps 20] [--work DIR] [--gpus N]

--device-under-test cpu runs the "CUDA" side on the CPU backend too: the script's own check
on machines without a GPU (ctest gpu.backend_parity_selftest), where every comparison must
pass exactly.
"""
import argparse
import json
import pathlib
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
TOLERANCE = {"fp32": 1e-4, "bf16-mixed": 1e-2}
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", required=True, type=pathlib.Path)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--work", type=pathlib.Path, default=None)
    ap.add_argument("--gpus", type=int, default=1)
    ap.add_argument("--device-under-test", default="cuda", choices=("cuda", "cpu"))
    args = ap.parse_args()
    compile_bin, run_bin = args.build / "bin" / "plait-compile", args.build / "bin" / "plait-run"
    work = args.work or pathlib.Path(tempfile.mkdtemp(prefix="plait-gpu-"))
    work.mkdir(parents=True, exist_ok=True)
    print("work directory: %s" % work, flush=True)

    rows, kernel_rows = [], []
    for sample in SAMPLES:
        data = work / ("data-" + sample)
        data.mkdir(exist_ok=True)
        make_dataset(sample, args.steps, data)
        model = ROOT / "samples" / sample / (sample + ".onnx")
        for precision in ("fp32", "bf16-mixed"):
            got, final = {}, {}
            for device in ("cpu", "cuda"):
                tag = "%s-%s-%s" % (sample, precision, device)
                plan, log = work / (tag + ".plan"), work / (tag + ".jsonl")
                target = args.device_under_test if device == "cuda" else "cpu"
                if not run([compile_bin, model, "--train", *TRAIN[sample], "--precision", precision,
                            "--device", target, "-o", plan], 120, "compile " + tag):
                    continue
                weights = work / (tag + ".safetensors")
                cmd = [run_bin, plan, "--data", data, "--steps", args.steps, "--log-jsonl", log,
                       "--timeout", 60, "--save-weights", weights]
                times = work / (tag + ".kernels.json")
                timed = target == "cuda" and precision == "fp32"
                if timed:
                    cmd += ["--kernel-times", times]
                if run(["timeout", 150] + cmd, 160, "train " + tag):
                    got[device] = losses(log)
                    try:
                        final[device] = read_safetensors(weights)
                    except (KeyError, ValueError, OSError):  # e.g. bf16 params: not compared
                        final[device] = {}
                    if timed:
                        report = json.loads(times.read_text())
                        for k in report["kernels"]:
                            if k["kernel"] == "fused_elementwise":
                                kernel_rows.append((sample, k, report["copy_gbps"]))
            if len(got) < 2:
                rows.append((sample, precision, None, TOLERANCE[precision], "NOT RUN"))
                continue
            cpu, cuda = got["cpu"], got["cuda"]
            if len(cpu) != args.steps or len(cuda) != args.steps:
                FAILURES.append("%s %s: %d cpu / %d cuda steps logged" % (sample, precision,
                                                                          len(cpu), len(cuda)))
                rows.append((sample, precision, None, TOLERANCE[precision], "SHORT LOG"))
                continue
            rel = np.abs(cuda - cpu) / np.maximum(np.abs(cpu), 1e-12)
            ok = bool(np.all(np.isfinite(cuda))) and rel.max() <= TOLERANCE[precision]
            if not ok:
                FAILURES.append("%s %s: losses differ by %.3g (relative)" % (sample, precision,
                                                                              rel.max()))
                for s in range(args.steps):
                    print("  %s %s step %2d: cpu %.8g cuda %.8g rel %.3g" % (
                        sample, precision, s + 1, cpu[s], cuda[s], rel[s]))
            # The final weights, for information (AdamW turns rounding noise in near-zero
            # gradients into lr-sized steps, so weights are not a pass/fail criterion here).
            dw = max((float(np.max(np.abs(final["cuda"][k].astype(np.float64) -
                                          final["cpu"][k].astype(np.float64))))
                      for k in final.get("cpu", {})
                      if k in final.get("cuda", {}) and final["cpu"][k].size),
                     default=float("nan"))
            rows.append((sample, precision, rel.max(), TOLERANCE[precision],
                         "ok" if ok else "FAIL", cpu[0], cpu[-1], cuda[-1], dw))

    if args.gpus >= 2:
        data = work / "data-gpt"
        model = ROOT / "samples" / "gpt" / "gpt.onnx"
        got = {}
        for device in ("cpu", "cuda"):
            tag = "gpt-ddp2-" + device
            plan, log = work / (tag + ".plan"), work / (tag + ".jsonl")
            if run([compile_bin, model, "--train", *TRAIN["gpt"], "--world-size", 2, "--strategy",
                    "ddp", "--device", device, "-o", plan], 120, "compile " + tag) and \
               run(["timeout", 150, run_bin, plan, "--nproc", 2, "--data", data, "--steps",
                    args.steps, "--log-jsonl", log, "--timeout", 60], 160, "train " + tag):
                got[device] = losses(log)
        if len(got) == 2:
            rel = np.abs(got["cuda"] - got["cpu"]) / np.maximum(np.abs(got["cpu"]), 1e-12)
            ok = rel.max() <= 1e-4
            if not ok:
                FAILURES.append("gpt ddp 2 ranks: losses differ by %.3g" % rel.max())
            rows.append(("gpt ddp x2", "fp32", rel.max(), 1e-4, "ok" if ok else "FAIL",
                         got["cpu"][0], got["cpu"][-1], got["cuda"][-1]))
        else:
            rows.append(("gpt ddp x2", "fp32", None, 1e-4, "NOT RUN"))
    else:
        print("gpt ddp x2 on NCCL: skipped (%d GPU; NCCL needs one GPU per rank)" % args.gpus)

    print("\nLosses, CUDA backend against the CPU backend (%d steps, world size 1):" % args.steps)
    print("%-11s %-10s %12s %9s %-8s %12s %12s %12s %12s" % (
        "sample", "precision", "max rel diff", "tolerance", "result", "cpu loss 1", "cpu loss N",
        "cuda loss N", "max |dw|"))
    for r in rows:
        if r[2] is None:
            print("%-11s %-10s %12s %9.0e %-8s" % (r[0], r[1], "-", r[3], r[4]))
        else:
            print("%-11s %-10s %12.3g %9.0e %-8s %12.6g %12.6g %12.6g %12.3g" % (r + (float("nan"),) * (9 - len(r))))

    print("\nFused kernels (fp32 plans; mean over steps 2..%d), achieved bandwidth = bytes read "
          "+ written / time:" % args.steps)
    if kernel_rows:
        copy = kernel_rows[0][2]
        print("device copy bandwidth (cudaMemcpy D2D, read + write): %.1f GB/s" % copy)
        print("%-6s %-16s %-40s %10s %9s %9s %7s" % ("sample", "symbol", "instruction", "bytes",
                                                   "us", "GB/s", "% copy"))
        for sample, k, copy in kernel_rows:
            print("%-6s %-16s %-40.40s %10d %9.2f %9.1f %6.1f%%" % (
                sample, k["symbol"], k["name"], k["bytes"], k["ms"] * 1e3, k["gbps"],
                100 * k["fraction_of_copy"]))
    else:
        print("  none timed")
    if FAILURES:
        print("\n%d FAILURE(S):\n  %s" % (len(FAILURES), "\n  ".join(FAILURES)))
        return 1
    print("\nall comparisons passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
