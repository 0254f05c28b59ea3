#!/usr/bin/env python3
"""Choice quality of `plait-compile --strategy auto`: its pick's measured step time against the
measured fastest of the strategies that fit (issue #6).

1. Calibrates this machine once, right before measuring: `plait-calibrate --nproc 2 -o
   SPEC.yaml` (about 30 s; --quick-calibrate: its --quick mode, one noisy round), or reuses
   --spec.
2. For each sample (mlp, cnn, gpt) x world size W (2, 4), the sample's ONNX file re-pinned to
   batch B/W as bench/predict_step_time.py does, compiles `--train --optimizer adamw
   --world-size W --strategy auto --cluster SPEC.yaml --report R.json`. The report's
   `candidates` rank every (placement, recompute, bucket) choice by predicted step time and mark
   the one auto chose. Then it compiles each fixed alternative the same way with `--strategy S
   --recompute none`, S in ddp, zero1, zero2, zero3 and (world 4) hsdp:2, leaving out those
   the report says do not fit. If auto's pick is none of these (recompute, a bucket size), its
   own plan is measured as one more row.
3. Runs every plan under `plait-run --nproc W --steps STEPS --log-jsonl LOG` (one OpenBLAS
   thread), the plans of a case one after the other in each of --repeat rounds, starting each
   round one plan further on so that no plan always runs first. A plan's measurement is the
   median over rounds of rank 0's median step_ms without the first 3 steps. Also shown: the
   10th percentile of all those steps ("quiet"), the step when no other process gets in the way.
Per case: a table of every plan (predicted ms, measured ms, measured / measured fastest, quiet
ms, quiet / quiet fastest) and a verdict: PASS when auto's pick measures within --tolerance
(10%) of the fastest. Last, the cases passed; the target is met when at least --target (80%) of
them pass, else the exit status is 1. The same count on the quiet p10 is printed beside it.

Run with /usr/bin/python3:
  auto_choice.py BUILD [--steps 30] [--repeat 3] [--worlds 2,4] [--only gpt]
                       [--spec SPEC.yaml | --quick-calibrate] [--json OUT]
"""
import argparse
import datetime
import json
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import tempfile

from predict_step_time import MODELS, SAMPLES, make_dataset, measure, percentile, rebatch, run

FIXED = ["ddp", "zero1", "zero2", "zero3"]
HSDP = "hsdp:2"  # only where it differs from ddp and zero3: world 4


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def git_commit():
    p = subprocess.run(["git", "-C", str(SAMPLES.parent), "describe", "--always", "--dirty"],
                       capture_output=True, text=True)
    return p.stdout.strip() or "unknown"


def compile_plan(build, model, world, spec, work, strategy, extra=()):
    """Compiles the training step into WORK/step.plan; returns (plan path, report)."""
    work.mkdir(parents=True)
    plan, report = work / "step.plan", work / "report.json"
    run([build / "bin" / "plait-compile", model, "--train", "--optimizer", "adamw", "--lr", "1e-3",
         "--world-size", world, "--strategy", strategy, "--cluster", spec, "--report", report,
         "-o", plan, *extra])
    return plan, json.loads(report.read_text())


def describe(row):
    """A candidate as --explain names it: placement, then recompute and bucket if not default."""
    s = row["strategy"]
    if row["recompute"] != "none":
        s += " + recompute %s" % row["recompute"]
        if row["recompute"] == "auto":
            s += " (%d segments)" % row["recomputed_segments"]
    if row["bucket_bytes"] > 0:
        s += " + bucket %d B" % row["bucket_bytes"]
    return s


def prepare_case(build, name, world, global_batch, spec, root):
    """Compiles auto's plan and the fixed alternatives of one case; returns the case with its
    plans, each {label, strategy, plan, predicted_ms, auto} (measured added later)."""
    root.mkdir(parents=True)
    model = root / ("%s-b%d.onnx" % (name, global_batch // world))
    rebatch(SAMPLES / name / (name + ".onnx"), model, global_batch // world)
    auto_plan, auto_report = compile_plan(build, model, world, spec, root / "auto", "auto")
    candidates = auto_report["candidates"]
    chosen = next(c for c in candidates if c["chosen"])

    def candidate(strategy):
        """The candidate a fixed `--strategy S --recompute none` compile is (default bucket)."""
        rows = [c for c in candidates if c["strategy"] == strategy and c["recompute"] == "none"]
        return next((c for c in rows if c["bucket_bytes"] == 0), rows[0] if rows else None)

    plans, left_out = [], []
    for strategy in FIXED + ([HSDP] if world == 4 else []):
        c = candidate(strategy)
        if c is not None and not c["fits"]:
            left_out.append(strategy)
            continue
        plan, report = compile_plan(build, model, world, spec, root / strategy.replace(":", ""),
                                    strategy, ["--recompute", "none"])
        plans.append(dict(label=strategy, strategy=strategy, recompute="none", plan=plan,
                          predicted_ms=report["predicted_step_ms"], auto=c is chosen,
                          candidate_rank=candidates.index(c) + 1 if c else None, runs=[],
                          steps=[]))
    if not any(p["auto"] for p in plans):
        plans.append(dict(label=describe(chosen), strategy=chosen["strategy"],
                          recompute=chosen["recompute"], plan=auto_plan,
                          predicted_ms=auto_report["predicted_step_ms"], auto=True,
                          candidate_rank=candidates.index(chosen) + 1, runs=[], steps=[]))
    return dict(model=name, world=world, plans=plans, left_out=left_out,
                chosen=describe(chosen), reason=auto_report["auto"]["reason"],
                threads=auto_report["predicted"].get("threads_per_rank", 1),
                candidates=candidates, mem_limit=auto_report.get("mem_limit"))


def judge(case, tolerance):
    """Adds each plan's measured median and quiet p10 with their ratios to the fastest, and the
    verdicts on both, to CASE."""
    plans = case["plans"]
    pick = next(p for p in plans if p["auto"])
    for p in plans:
        p["measured_ms"] = statistics.median(p["runs"])
        p["quiet_ms"] = percentile(p["steps"], 0.1)
    for key, prefix in (("measured_ms", ""), ("quiet_ms", "quiet_")):
        fastest = min(plans, key=lambda p: p[key])
        for p in plans:
            p[prefix + "vs_fastest"] = p[key] / fastest[key] - 1
        gap = pick[prefix + "vs_fastest"]
        case.update({prefix + "fastest": fastest["label"], prefix + "fastest_ms": fastest[key],
                     prefix + "auto_ms": pick[key], prefix + "auto_gap": gap,
                     prefix + "passed": gap <= tolerance})


def print_case(case, tolerance):
    print("%s, world %d: auto chose %s" % (case["model"], case["world"], case["chosen"]))
    print("  why: " + case["reason"])
    header = "  %-36s %6s %6s %13s %13s %11s %10s %11s %7s" % (
        "plan", "cand#", "meas#", "predicted ms", "measured ms", "vs fastest", "quiet ms",
        "vs fastest", "")
    print(header)
    print("  " + "-" * (len(header) - 2))
    by_measured = sorted(case["plans"], key=lambda p: p["measured_ms"])
    for p in sorted(case["plans"], key=lambda p: (p["candidate_rank"] or len(case["candidates"]),
                                                  p["predicted_ms"])):
        print("  %-36s %6s %6d %13.3f %13.3f %+10.1f%% %10.3f %+10.1f%% %7s" % (
            p["label"], p["candidate_rank"] or "-", by_measured.index(p) + 1,
            p["predicted_ms"], p["measured_ms"], 100 * p["vs_fastest"], p["quiet_ms"],
            100 * p["quiet_vs_fastest"], "<- auto" if p["auto"] else ""))
    if case["left_out"]:
        print("  does not fit: " + ", ".join(case["left_out"]))
    print("  verdict: auto's %s measured %.3f ms, fastest %s %.3f ms: %+.1f%% (<= %.0f%%) %s" % (
        case["chosen"], case["auto_ms"], case["fastest"], case["fastest_ms"],
        100 * case["auto_gap"], 100 * tolerance, "PASS" if case["passed"] else "FAIL"))
    print("  on the quiet p10: auto %.3f ms, fastest %s %.3f ms: %+.1f%% %s" % (
        case["quiet_auto_ms"], case["quiet_fastest"], case["quiet_fastest_ms"],
        100 * case["quiet_auto_gap"], "PASS" if case["quiet_passed"] else "FAIL"))
    print()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build", type=pathlib.Path)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--repeat", type=int, default=3, help="rounds over every plan (median)")
    ap.add_argument("--worlds", default="2,4")
    ap.add_argument("--only", action="append", choices=MODELS)
    ap.add_argument("--spec", type=pathlib.Path, help="use this spec instead of calibrating")
    ap.add_argument("--quick-calibrate", action="store_true",
                    help="plait-calibrate --quick (seconds, one round: rough)")
    ap.add_argument("--tolerance", type=float, default=0.10,
                    help="a case passes when auto's pick is at most this much slower")
    ap.add_argument("--target", type=float, default=0.80, help="fraction of cases to pass")
    ap.add_argument("--json", type=pathlib.Path)
    args = ap.parse_args()
    worlds = [int(w) for w in args.worlds.split(",")]
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="plait-auto-") as tmp:
        tmp = pathlib.Path(tmp)
        spec = args.spec
        if spec is None:
            spec = tmp / "this-machine.yaml"
            quick = ["--quick"] if args.quick_calibrate else []
            how = "plait-calibrate --nproc 2" + (" --quick" if quick else "")
            log("calibrating: " + how)
            run([args.build / "bin" / "plait-calibrate", "--nproc", 2, "-o", spec] + quick)
        spec_text = spec.read_text()
        print("spec: %s" % (args.spec or "calibrated now (%s)" % how))
        cases = []
        for name in args.only or MODELS:
            data = tmp / name / "data"
            data.mkdir(parents=True)
            _, global_batch = make_dataset(name, args.steps, data)
            for world in worlds:
                if global_batch % world:
                    print("%s world %d: global batch %d does not split" % (
                        name, world, global_batch))
                    continue
                log("compiling %s world %d" % (name, world))
                case = prepare_case(args.build, name, world, global_batch, spec,
                                    tmp / name / ("w%d" % world))
                case["data"] = data
                cases.append(case)
        for r in range(args.repeat):
            for case in cases:
                plans = case["plans"]
                log("round %d/%d: %s world %d (%d plans)" % (
                    r + 1, args.repeat, case["model"], case["world"], len(plans)))
                for i in range(len(plans)):
                    p = plans[(i + r) % len(plans)]
                    median, steps = measure(args.build, p["plan"], case["data"],
                                            case["world"], args.steps, p["plan"].parent, False,
                                            case["threads"])
                    p["runs"].append(median)
                    p["steps"] += steps
    print()
    for case in cases:
        judge(case, args.tolerance)
        print_case(case, args.tolerance)
    passed = sum(c["passed"] for c in cases)
    ok = bool(cases) and passed >= args.target * len(cases)
    print("auto within %.0f%% of the measured fastest in %d of %d cases (%.0f%%; target >= "
          "%.0f%%): %s" % (100 * args.tolerance, passed, len(cases),
                           100 * passed / max(len(cases), 1), 100 * args.target,
                           "PASS" if ok else "FAIL"))
    quiet = sum(c["quiet_passed"] for c in cases)
    print("on the quiet p10: within %.0f%% in %d of %d cases" % (
        100 * args.tolerance, quiet, len(cases)))
    load_after = os.getloadavg()
    print("load average %.2f before, %.2f after" % (load_before[0], load_after[0]))
    if args.json:
        for case in cases:
            case.pop("data")
            for p in case["plans"]:
                p["plan"] = str(p["plan"].relative_to(tmp))
        meta = dict(date=datetime.datetime.now(datetime.timezone.utc).isoformat(),
                    commit=git_commit(), host=platform.node(), cpus=os.cpu_count(),
                    steps=args.steps, repeat=args.repeat, spec=spec_text,
                    command=" ".join(sys.argv), load_average=[load_before, load_after])
        args.json.write_text(json.dumps(dict(meta, cases=cases, passed=passed, total=len(cases),
                                             quiet_passed=quiet, tolerance=args.tolerance,
                                             target=args.target, met=ok), indent=1) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
