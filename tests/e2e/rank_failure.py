#!/usr/bin/env python3
"""Failures on 4 MPI ranks: nothing hangs, the messages name the rank and the collective, and
a supervised job restarts from its last checkpoint with an uninterrupted run's losses.

Cases (the gpt sample under zero3, every rank started by plait-run --nproc 4):
  kill     kill -9 rank 2 mid-run: the job exits non-zero within 10 s of the kill; stderr
           names rank 2 (mpirun) and, for the surviving ranks, the step and the collective
           each was waiting in.
  stall    SIGSTOP rank 1 mid-run with --timeout 3: the other ranks give up within 10 s with
           "did not complete within 3 s", naming the step and the instruction.
  restart  kill -9 rank 2 mid-run with --max-restarts 1 --checkpoint-every 5: the job
           restarts from the newest checkpoint and exits 0; its log (steps 1..N, each once)
           has bitwise the losses of an uninterrupted run.

Run with /usr/bin/python3:  rank_failure.py --build BUILD --case kill|stall|restart
"""
import argparse
import json
import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from dp_parity import TRAIN, rebatch  # noqa: E402
from train_parity import SAMPLES, make_dataset  # noqa: E402

WORLD = 4


def rank_pid(plan, rank):
    """The pid of the plait-run process that is MPI rank `rank` of the job running `plan`."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmdline = pathlib.Path("/proc", pid, "cmdline").read_bytes().split(b"\0")
            environ = pathlib.Path("/proc", pid, "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if (str(plan).encode() in cmdline and
                b"OMPI_COMM_WORLD_RANK=%d" % rank in environ):
            return int(pid)
    return None


def log_steps(log):
    try:
        return [json.loads(line)["step"] for line in log.read_text().splitlines() if line]
    except (OSError, ValueError):
        return []


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", required=True, type=pathlib.Path)
    ap.add_argument("--case", required=True, choices=["kill", "stall", "restart"])
    args = ap.parse_args()
    run_bin = args.build / "bin" / "plait-run"
    steps = 60 if args.case == "restart" else 2000
    with tempfile.TemporaryDirectory(prefix="plait-fail-") as tmp:
        tmp = pathlib.Path(tmp)
        data = tmp / "data"
        data.mkdir()
        _, global_batch = make_dataset("gpt", 20, data)
        model = tmp / "gpt-w4.onnx"
        rebatch(SAMPLES / "gpt" / "gpt.onnx", model, global_batch // WORLD)
        plan = tmp / "gpt-w4.plan"
        subprocess.run([str(args.build / "bin" / "plait-compile"), str(model), "--train",
                        *TRAIN["gpt"], "--world-size", str(WORLD), "--strategy", "zero3", "-o",
                        str(plan)], check=True, timeout=120)
        log = tmp / "log.jsonl"
        cmd = [str(run_bin), "--nproc", str(WORLD), str(plan), "--data", str(data), "--steps",
               str(steps), "--log-jsonl", str(log), "--progress", "none"]
        victim, sig = (1, signal.SIGSTOP) if args.case == "stall" else (2, signal.SIGKILL)
        if args.case == "stall":
            cmd += ["--timeout", "3"]
        if args.case == "restart":
            cmd += ["--checkpoint-dir", str(tmp / "ckpt"), "--checkpoint-every", "5",
                    "--max-restarts", "1"]
        job = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # Strike once the run is well under way (and, for restart, past a checkpoint).
        deadline = time.time() + 60
        while len(log_steps(log)) < 12 and job.poll() is None and time.time() < deadline:
            time.sleep(0.01)
        pid = rank_pid(plan, victim)
        if job.poll() is not None or pid is None:
            job.kill()
            sys.exit("FAIL: the job ended or rank %d was not found before the strike" % victim)
        os.kill(pid, sig)
        struck = time.time()
        try:
            out, err = job.communicate(timeout=10 if args.case != "restart" else 120)
        except subprocess.TimeoutExpired:
            job.kill()
            out, err = job.communicate()
            print(err)
            sys.exit("FAIL: the job still ran %d s after the strike" %
                     (10 if args.case != "restart" else 120))
        took = time.time() - struck
        print(err.strip())
        problems = []
        if args.case == "kill":
            if job.returncode == 0:
                problems.append("exit 0 after a rank was killed")
            if "rank 2" not in err:
                problems.append("no message names rank 2")
            if "while waiting for" not in err:
                problems.append("no surviving rank names the collective it waited in")
        elif args.case == "stall":
            if job.returncode == 0:
                problems.append("exit 0 after a rank stalled")
            if "did not complete within 3 s" not in err or "kernel" not in err:
                problems.append("no rank names the collective that timed out")
        else:
            if job.returncode != 0:
                problems.append("the restarted job failed (exit %d)" % job.returncode)
            if "restart 1 of 1" not in err or "resuming after step" not in err:
                problems.append("no restart from a checkpoint was reported")
            got = {}
            for line in log.read_text().splitlines():
                r = json.loads(line)
                if r["step"] in got:
                    problems.append("step %d logged twice" % r["step"])
                got[r["step"]] = r["loss"]
            ref_log = tmp / "ref.jsonl"
            subprocess.run([str(run_bin), "--nproc", str(WORLD), str(plan), "--data", str(data),
                            "--steps", str(steps), "--log-jsonl", str(ref_log), "--progress",
                            "none"], check=True, capture_output=True, timeout=120)
            ref = {json.loads(l)["step"]: json.loads(l)["loss"]
                   for l in ref_log.read_text().splitlines()}
            if got != ref:
                diff = [s for s in ref if got.get(s) != ref[s]]
                problems.append("losses differ from the uninterrupted run at steps %s" %
                                diff[:5])
        print("%s: %s after %.1f s (exit %d)%s" % (
            args.case, "ok" if not problems else "FAIL", took, job.returncode,
            "".join("\n  " + p for p in problems)))
        return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
