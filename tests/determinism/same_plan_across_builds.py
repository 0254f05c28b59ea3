#!/usr/bin/python3
"""A plan must not depend on the C++ compiler that built plait.

  same_plan_across_builds.py --build BUILD --reference-build REFERENCE [--work DIR]

BUILD and REFERENCE are two builds of the same source with different host compilers (the
sanitizer build uses Clang, the main build GCC). C++ leaves the evaluation order of a call's
arguments to the compiler, so code such as `mul(scalar(x), exp(y))` creates its two ops in
opposite orders under GCC and Clang: the step's op order, its schedule and its memory plan
would then differ by compiler, and "the same plan" would not be.

Checks, with both builds:
  * every sample compiled in several configurations (CPU and CUDA, each placement, bf16,
    recompute, no fusion) gives the same plan bytes;
  * every VJP rule of tests/unit/autodiff gives the same gradient IR (plait_autodiff_tests
    writes it when PLAIT_VJP_IR_DIR is set).
On a difference it names the configuration and the first IR stage (plait-compile
--dump-dir) or line that differs. Exits 1 on any difference or failure, and at once when
either build's plait-compile (or a shared library of its build) is older than the newest
compiler or runtime source (a build of other sources: run ninja on it first).
"""
import argparse
import difflib
import filecmp
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CONFIGS = [
    ("mlp", "sgd", ["--optimizer", "sgd", "--momentum", "0.9"]),
    ("mlp", "adamw-nofusion", ["--optimizer", "adamw", "--no-fusion"]),
    ("cnn", "sgd", ["--optimizer", "sgd", "--momentum", "0.9"]),
    ("cnn", "zero2-bf16", ["--world-size", "2", "--strategy", "zero2",
                           "--precision", "bf16-mixed"]),
    ("gpt", "adamw", ["--optimizer", "adamw"]),
    ("gpt", "fsdp", ["--optimizer", "adamw", "--world-size", "2", "--strategy", "fsdp"]),
    ("gpt", "hsdp-clip-mb", ["--world-size", "4", "--strategy", "hsdp:2",
                             "--clip-grad-norm", "1.0", "--micro-batches", "2"]),
    ("gpt", "recompute", ["--recompute", "all"]),
    ("gpt", "cuda", ["--device", "cuda"]),
]


def tool(build, name):
    path = os.path.join(build, "bin", name)
    if not os.access(path, os.X_OK):
        sys.exit(f"same_plan_across_builds: {path} does not exist; build {build} first")
    return path


SOURCE_DIRS = ("ir", "passes", "compiler", "codegen", "runtime")
SOURCE_SUFFIXES = (".cpp", ".h", ".td", ".cu", ".cuh", ".inc")


def stale_builds(builds):
    """The builds whose plait-compile is older than the newest compiler or runtime source:
    built from other sources than the checkout's, so a difference would say nothing."""
    newest, newest_path = 0.0, None
    for folder in SOURCE_DIRS:
        for dirpath, _, files in os.walk(os.path.join(ROOT, folder)):
            for name in files:
                if name.endswith(SOURCE_SUFFIXES):
                    path = os.path.join(dirpath, name)
                    mtime = os.path.getmtime(path)
                    if mtime > newest:
                        newest, newest_path = mtime, path
    return [f"{build}: its plait-compile is older than {os.path.relpath(newest_path, ROOT)}; "
            f"rebuild it (ninja -C {build})"
            for build in builds if built_at(build) < newest]


def built_at(build):
    """When `build`'s plait-compile was last brought up to date: the newest of the executable
    and the shared libraries it loads from the build (ninja does not relink an executable
    when only a shared library it links changed)."""
    times = [os.path.getmtime(tool(build, "plait-compile"))]
    lib = os.path.join(build, "lib")
    if os.path.isdir(lib):
        times += [os.path.getmtime(os.path.join(lib, name)) for name in os.listdir(lib)
                  if name.endswith(".so")]
    return max(times)


def compile_plan(build, sample, flags, out, dump_dir=None):
    cmd = [tool(build, "plait-compile"), os.path.join(ROOT, "samples", sample, f"{sample}.onnx"),
           "--train", "-o", out] + flags
    if dump_dir:
        cmd += ["--dump-dir", dump_dir]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        return f"{' '.join(cmd)} exited {done.returncode}: {done.stderr.strip()}"
    return None


def first_difference(a_path, b_path):
    with open(a_path) as f:
        a = f.read().splitlines()
    with open(b_path) as f:
        b = f.read().splitlines()
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return f"line {i + 1}: `{x.strip()}` vs `{y.strip()}`"
    return f"line {min(len(a), len(b)) + 1}: one file ends ({len(a)} vs {len(b)} lines)"


def explain_plan_difference(args, sample, flags, work):
    """Dumps every IR stage with both builds and names the first stage that differs."""
    dumps = []
    for label, build in (("build", args.build), ("reference", args.reference_build)):
        d = os.path.join(work, f"dump-{label}")
        shutil.rmtree(d, ignore_errors=True)
        error = compile_plan(build, sample, flags, d + ".plan", d)
        if error:
            return error
        dumps.append(d)
    for name in sorted(os.listdir(dumps[1])):
        mine, theirs = os.path.join(dumps[0], name), os.path.join(dumps[1], name)
        if not os.path.exists(mine):
            return f"IR stage {name} is missing from the build's dump"
        if not filecmp.cmp(mine, theirs, shallow=False):
            return f"IR stage {name} differs first, at {first_difference(mine, theirs)}"
    return "every IR stage is the same; the plan's bytes differ after lowering"


def check_plans(args, work):
    failures = []
    for sample, name, flags in CONFIGS:
        plans = []
        for label, build in (("build", args.build), ("reference", args.reference_build)):
            out = os.path.join(work, f"{sample}-{name}-{label}.plan")
            error = compile_plan(build, sample, flags, out)
            if error:
                failures.append(f"{sample} {name}: {error}")
                break
            plans.append(out)
        if len(plans) != 2:
            continue
        if filecmp.cmp(plans[0], plans[1], shallow=False):
            print(f"{sample:4} {name:15} same plan ({os.path.getsize(plans[0])} bytes)")
        else:
            why = explain_plan_difference(args, sample, flags, work)
            failures.append(f"{sample} {name} ({' '.join(flags)}): the plans differ; {why}")
    return failures


def check_vjp_rules(args, work):
    dirs = []
    for label, build in (("build", args.build), ("reference", args.reference_build)):
        binary = os.path.join(build, "tests", "unit", "autodiff", "plait_autodiff_tests")
        if not os.access(binary, os.X_OK):
            return [f"{binary} does not exist; build {build} first"]
        d = os.path.join(work, f"vjp-{label}")
        os.makedirs(d)
        done = subprocess.run([binary], env=dict(os.environ, PLAIT_VJP_IR_DIR=d),
                              capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            return [f"{binary} with PLAIT_VJP_IR_DIR exited {done.returncode}: "
                    f"{done.stdout[-2000:]}"]
        dirs.append(d)
    names = sorted(os.listdir(dirs[1]))
    if not names or sorted(os.listdir(dirs[0])) != names:
        return [f"the two builds wrote different VJP cases: {sorted(os.listdir(dirs[0]))} vs "
                f"{names}"]
    failures = []
    for name in names:
        mine, theirs = os.path.join(dirs[0], name), os.path.join(dirs[1], name)
        if not filecmp.cmp(mine, theirs, shallow=False):
            failures.append(f"VJP case {name[:-5]}: the gradient IR differs at "
                            f"{first_difference(mine, theirs)}")
    print(f"{len(names)} VJP cases, {len(names) - len(failures)} with the same gradient IR")
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", required=True)
    parser.add_argument("--reference-build", required=True)
    parser.add_argument("--work", help="keep the plans and dumps here (default: a temporary "
                        "folder, removed afterwards)")
    args = parser.parse_args()
    stale = stale_builds([args.build, args.reference_build])
    if stale:
        for line in stale:
            print(f"same_plan_across_builds: {line}")
        return 1
    work = args.work or tempfile.mkdtemp(prefix="plait-same-plan-")
    os.makedirs(work, exist_ok=True)
    try:
        failures = check_plans(args, work) + check_vjp_rules(args, work)
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    for failure in failures:
        print(f"FAIL: {failure}")
    if failures:
        print(f"{len(failures)} difference(s) between {args.build} and {args.reference_build}")
        return 1
    print(f"{args.build} and {args.reference_build} compile the same plans")
    return 0


if __name__ == "__main__":
    sys.exit(main())
