#!/usr/bin/env python3
"""Compile-only test of the generated CUDA kernels (ctest gpu.compile_all, label cuda).

Compiles every sample (samples/{mlp,cnn,gpt}) for every strategy with plait-compile --train
--device cuda: one rank; ddp, zero1, zero2, zero3, fsdp and hsdp:2 at --world-size 2; and
--precision bf16-mixed at one rank and with fsdp at two. Each plan is then checked by
check_cuda_plan.py: every fused kernel compiled by nvcc into the plan's fatbin for sm_80 and
sm_90. The bf16-mixed plans must hold fused kernels that read or write bf16 (plait_bf16
pointers in kernels.cu), so that nvcc compiles the bf16 loads, stores and roundings.

The plans take their fatbins from the codegen cache plait-compile uses ($PLAIT_CODEGEN_CACHE,
else ~/.cache/plait/codegen): a cached fatbin is what this nvcc made of this very source with
these flags (the key holds nvcc's resolved file, size and time), so a kernel compiled once,
here or by an earlier run, is not compiled again; new kernels are. --fresh-cache compiles
every kernel in an empty cache (identical sources once).

Usage: compile_all.py --build BUILD_DIR [--jobs N] [--fresh-cache]
"""
import argparse
import concurrent.futures
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLES = ["mlp", "cnn", "gpt"]
CONFIGS = [("w1", [])] + [
    (f"w2-{s.replace(':', '')}", ["--world-size", "2", "--strategy", s])
    for s in ["ddp", "zero1", "zero2", "zero3", "fsdp", "hsdp:2"]
] + [
    ("w1-bf16", ["--precision", "bf16-mixed"]),
    ("w2-fsdp-bf16", ["--world-size", "2", "--strategy", "fsdp", "--precision", "bf16-mixed"]),
]


def compile_one(build, work, sample, name, flags):
    out = os.path.join(work, f"{sample}-{name}")
    cmd = [os.path.join(build, "bin", "plait-compile"), os.path.join(ROOT, "samples", sample,
           f"{sample}.onnx"), "--train", "--device", "cuda", "-o", out + ".plan",
           "--report", out + ".json", "--dump-dir", out] + flags
    start = time.time()
    done = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.time() - start
    if done.returncode != 0:
        return f"{sample} {name}: plait-compile failed (exit {done.returncode}): " \
               f"{done.stderr.strip()}", None
    check = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "gpu",
                                                        "check_cuda_plan.py"),
                            out + ".plan", out + ".json", out], capture_output=True, text=True)
    if check.returncode != 0:
        return f"{sample} {name}: {check.stderr.strip()}", None
    return None, f"{sample:4} {name:13} {seconds:5.1f} s  {check.stdout.strip().split(': ', 1)[1]}"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", required=True)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--fresh-cache", action="store_true",
                        help="compile every kernel in an empty codegen cache")
    args = parser.parse_args()
    start = time.time()
    with tempfile.TemporaryDirectory(prefix="plait-cuda-compile-") as work:
        if args.fresh_cache:
            os.environ["PLAIT_CODEGEN_CACHE"] = os.path.join(work, "cache")
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            jobs = [pool.submit(compile_one, args.build, work, sample, name, flags)
                    for sample in SAMPLES for name, flags in CONFIGS]
            results = [j.result() for j in jobs]
        bf16_kernels = 0
        for sample in SAMPLES:
            for name, _ in CONFIGS:
                source = os.path.join(work, f"{sample}-{name}", "kernels.cu")
                if name.endswith("bf16") and os.path.exists(source):
                    bf16_kernels += open(source).read().count("const plait_bf16 *__restrict__ in")
        if bf16_kernels == 0:
            results.append(("no bf16-mixed plan has a fused kernel with a bf16 input", None))
        fresh = os.environ.get("PLAIT_CODEGEN_CACHE") if args.fresh_cache else None
        compiled = len(os.listdir(fresh)) if fresh and os.path.isdir(fresh) else None
    failures = [error for error, _ in results if error]
    for _, line in results:
        if line:
            print(line)
    print(f"{len(results) - len(failures)} of {len(results)} plans checked"
          + (f", {compiled} distinct fatbins compiled" if compiled is not None else "")
          + f", {time.time() - start:.0f} s")
    for error in failures:
        print(f"FAIL {error}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
