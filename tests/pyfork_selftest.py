#!/usr/bin/python3
"""Self-test of tests/pyfork.py (CTest python.pyfork_selftest), on a server of its own.

A script run through the server gets its arguments, working directory, environment and
standard streams, and its exit status comes back; `-c CODE` too; an uncaught exception exits 1
with its traceback; a client killed mid-run takes the script's whole process group with it;
with the server stopped, or with PLAIT_NO_PYFORK=1, the same scripts run in a fresh interpreter
with the same results.
"""
import os
import signal
import subprocess
import sys
import tempfile
import time

PYFORK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pyfork.py")
PYTHON = "/usr/bin/python3"

SCRIPT = """
import os, sys
print("argv", sys.argv[1:], "cwd", os.getcwd(), "env", os.environ.get("PYFORK_SELFTEST"))
print("stdin", sys.stdin.read().strip())
print("pid", os.getpid(), file=sys.stderr)
sys.exit(int(sys.argv[1]))
"""

SLEEPER = """
import subprocess, sys, time
child = subprocess.Popen(["sleep", "300"])
print(child.pid, flush=True)
time.sleep(300)
"""

failures = []


def check(what, ok):
    print(("ok    " if ok else "FAIL  ") + what)
    if not ok:
        failures.append(what)


def run(name, argv, env=None, stdin=""):
    return subprocess.run([PYTHON, PYFORK, "run", name] + argv, input=stdin, text=True,
                          capture_output=True, cwd=tempfile.gettempdir(), env=env, timeout=60)


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (not yet reaped by its parent) is as good as gone.
    with open("/proc/%d/stat" % pid) as f:
        return f.read().split(")")[-1].split()[0] != "Z"


def run_cases(name, label, env=None):
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "script.py")
        with open(script, "w") as f:
            f.write(SCRIPT)
        env = dict(os.environ if env is None else env, PYFORK_SELFTEST="yes")
        r = run(name, [script, "3", "two words"], env=env, stdin="input line\n")
        check("%s: exit status 3" % label, r.returncode == 3)
        check("%s: argv, cwd and environment" % label,
              "argv ['3', 'two words'] cwd %s env yes" % tempfile.gettempdir() in r.stdout)
        check("%s: stdin" % label, "stdin input line" in r.stdout)
        check("%s: stderr" % label, "pid " in r.stderr)
        r = run(name, ["-c", "import sys; print(sys.argv); sys.exit(5)", "a"], env=env)
        check("%s: -c CODE with arguments" % label,
              r.returncode == 5 and "['-c', 'a']" in r.stdout)
        r = run(name, ["-c", "raise ValueError('boom')"], env=env)
        check("%s: an uncaught exception exits 1 with its traceback" % label,
              r.returncode == 1 and "ValueError: boom" in r.stderr)
        sleeper = os.path.join(tmp, "sleeper.py")
        with open(sleeper, "w") as f:
            f.write(SLEEPER)
        client = subprocess.Popen([PYTHON, PYFORK, "run", name, sleeper], stdout=subprocess.PIPE,
                                  text=True, env=env)
        grandchild = int(client.stdout.readline())
        client.kill()
        client.wait()
        if label == "server":
            deadline = time.monotonic() + 10
            while alive(grandchild) and time.monotonic() < deadline:
                time.sleep(0.05)
            check("%s: a killed client takes the script's process group" % label,
                  not alive(grandchild))
        else:  # exec'd: the script is the client; its own child is left, as python3's would be
            check("%s: a killed client ends the script" % label, client.returncode == -9)
            os.kill(grandchild, signal.SIGKILL)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        name = os.path.join(tmp, "server")
        started = subprocess.run([PYTHON, PYFORK, "start", name], capture_output=True, text=True,
                                 timeout=120)
        check("start", started.returncode == 0 and "serving" in started.stdout)
        try:
            run_cases(name, "server")
            run_cases(name, "PLAIT_NO_PYFORK=1", env=dict(os.environ, PLAIT_NO_PYFORK="1"))
        finally:
            subprocess.run([PYTHON, PYFORK, "stop", name], timeout=60)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            r = run(name, ["-c", "import sys; sys.exit(7)"])
            if r.returncode == 7:
                break
            time.sleep(0.1)
        check("stopped: runs in a fresh interpreter", r.returncode == 7)
        run_cases(name, "no server")
    print("%d failed" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
