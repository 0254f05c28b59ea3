#!/usr/bin/python3
"""Self-test of run.py's plumbing against fake_plait.py (NumPy), without plait itself.

Checks that a correct result passes, an unknown op is "unsupported", a Reshape shape input is
bound through the --const-input retry, a wrong result fails with exit 1, a listed known failure
does not fail the run, and the closing line and JSON summary are written.
"""
import json
import os
import shlex
import stat
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
FILTER = r"^test_(relu|abs|reshape_reordered_all_dims|reshape_negative_dim|add_bcast|matmul_2d|" \
         r"softmax_axis_1|sce_mean|where_example)$"


def make_bin(root):
    """The fake tools, each fake_plait.py MODE. Under CTest (PLAIT_PYFORK_NAME: the build
    directory whose tests/pyfork.py server has numpy and onnx imported) they run forked from
    that server, as the suite's Python tests do, instead of importing both for every call."""
    bindir = os.path.join(root, "bin")
    os.makedirs(bindir)
    python = ["/usr/bin/python3"]
    if os.environ.get("PLAIT_PYFORK_NAME"):
        python += [os.path.join(os.path.dirname(HERE), "pyfork.py"), "run",
                   os.environ["PLAIT_PYFORK_NAME"]]
    for tool, mode in (("plait-compile", "compile"), ("plait-run", "run")):
        path = os.path.join(bindir, tool)
        command = python + [os.path.join(HERE, "fake_plait.py"), mode]
        with open(path, "w") as f:
            f.write('#!/bin/sh\nexec %s "$@"\n' % " ".join(shlex.quote(w) for w in command))
        os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)


def run(build, extra, env=None):
    cmd = [sys.executable, os.path.join(HERE, "run.py"), "--build", build, "--filter", FILTER,
           "-j", "2", "--known-failures", os.path.join(build, "known.txt")] + extra
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       env=dict(os.environ, **(env or {})))
    out = p.stdout.decode()
    with open(os.path.join(build, "conformance_summary.json")) as f:
        return p.returncode, out, json.load(f)


def main():
    failures = []

    def check(cond, what, out):
        if not cond:
            failures.append(what)
            print("SELFTEST FAIL: %s\n%s" % (what, out))

    with tempfile.TemporaryDirectory(prefix="plait-conf-selftest-") as build:
        make_bin(build)
        open(os.path.join(build, "known.txt"), "w").close()

        rc, out, summary = run(build, ["--expect-min-pass", "3"])
        status = {n: t["status"] for n, t in summary["tests"].items()}
        print(out)
        check(rc == 0, "clean run exits 0", out)
        check(status.get("test_relu") == "passed", "test_relu passes", out)
        check(status.get("test_abs") == "unsupported", "test_abs is unsupported", out)
        check(status.get("test_reshape_reordered_all_dims") == "passed",
              "reshape passes through the --const-input retry", out)
        check(out.strip().splitlines()[-1] == "%d passed, %d failed, %d unsupported" % (
            summary["totals"]["passed"], summary["totals"]["failed"],
            summary["totals"]["unsupported"]), "closing line matches the summary", out)
        check(summary["by_op"].get("Relu", {}).get("passed") == 1, "per-op summary", out)

        rc, out, summary = run(build, ["--expect-min-pass", "100"])
        check(rc == 1, "--expect-min-pass above the pass count exits 1", out)

        rc, out, summary = run(build, [], env={"PLAIT_FAKE_BREAK": "Relu"})
        check(rc == 1 and summary["tests"]["test_relu"]["status"] == "failed"
              and "FAIL test_relu [Relu]: output 'y'" in out, "a wrong result fails", out)

        with open(os.path.join(build, "known.txt"), "w") as f:
            f.write("# comment\ntest_relu  perturbed on purpose by the self-test\n")
        rc, out, summary = run(build, [], env={"PLAIT_FAKE_BREAK": "Relu"})
        check(rc == 0 and "FAIL (known) test_relu" in out, "a known failure does not fail", out)
        rc, out, summary = run(build, [])
        check(rc == 0 and "note: test_relu passes now" in out, "a fixed known failure is noted",
              out)

    print("selftest: %s" % ("%d problem(s)" % len(failures) if failures else "ok"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
