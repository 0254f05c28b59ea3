#!/usr/bin/python3
"""Runs the suite's Python test scripts forked from one process that has imported torch.

Importing torch takes 1.6-1.8 s on the CI machine (most of it loading libtorch), and about 200
of the suite's tests are Python scripts that import it, so the imports alone were 5-6 minutes of
test time. A server imports torch, onnx and numpy once; each test's client hands it the script,
its arguments, working directory, environment and standard streams (the file descriptors
themselves, so output goes straight to CTest), and the server forks a child that runs the
script as __main__. The client exits with the child's status.

  pyfork.py start NAME    start a server for NAME (a build directory) and wait until it serves
  pyfork.py stop NAME     ask it to exit once its running children have finished
  pyfork.py run NAME SCRIPT [ARG ...]   (or -c CODE [ARG ...])
                          run SCRIPT through NAME's server, or, where none answers, exec
                          /usr/bin/python3 SCRIPT ARG ... as before: a test run on its own
                          (ctest -R without the fixture, lit by hand) behaves the same either way

The socket is in Linux's abstract namespace (no file, no path-length limit), named after NAME.
A child runs in a session of its own; if its client goes away (CTest's timeout kills it) the
server kills the child's whole process group, mpirun and its ranks included. The server exits
after 15 idle minutes, so an interrupted suite does not leave it behind for long.

The server never runs a torch operation, so no OpenMP or BLAS thread pool exists when it forks.
PLAIT_NO_PYFORK=1 makes run exec the script directly.
"""
import hashlib
import json
import os
import runpy
import selectors
import signal
import socket
import struct
import sys
import time
import traceback

PYTHON = "/usr/bin/python3"
IDLE_EXIT_S = 15 * 60
PRELOAD = ("numpy", "onnx", "onnx.numpy_helper", "torch", "torch.nn", "torch.nn.functional",
           "torch.onnx")


def version():
    """This file's hash: a server started from an older pyfork.py is replaced, not reused."""
    with open(os.path.abspath(__file__), "rb") as f:
        return hashlib.sha1(f.read()).hexdigest()


def address(name):
    digest = hashlib.sha1(os.path.realpath(name).encode()).hexdigest()[:16]
    return "\0plait-pyfork-" + digest


def send_message(sock, obj, fds=()):
    data = json.dumps(obj).encode()
    header = struct.pack("!I", len(data))
    if fds:
        socket.send_fds(sock, [header + data], list(fds))
    else:
        sock.sendall(header + data)


def recv_exact(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise EOFError
        buf += chunk
    return buf


def recv_message(sock, max_fds=0):
    """One message; with max_fds, also the descriptors sent with its first bytes."""
    fds = []
    if max_fds:
        data, fds, _, _ = socket.recv_fds(sock, 1 << 20, max_fds)
        if len(data) < 4:
            data += recv_exact(sock, 4 - len(data))
    else:
        data = recv_exact(sock, 4)
    (size,) = struct.unpack("!I", data[:4])
    body = data[4:]
    if len(body) < size:
        body += recv_exact(sock, size - len(body))
    return json.loads(body[:size]), fds


# --- the server -------------------------------------------------------------------------------

def run_child(request, fds, listener, conns):
    """In the forked child: become the test script. Never returns."""
    code = 1
    try:
        os.setsid()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        listener.close()
        for c in conns:
            c.close()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        argv = request["argv"]
        try:
            if argv[0] == "-c":  # python3 -c CODE [ARG ...]
                sys.argv = ["-c"] + argv[2:]
                sys.path[0] = ""
                exec(compile(argv[1], "<string>", "exec"), {"__name__": "__main__"})
            else:
                sys.argv = list(argv)
                sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
                runpy.run_path(argv[0], run_name="__main__")
            code = 0
        except SystemExit as e:
            if e.code is None:
                code = 0
            elif isinstance(e.code, int):
                code = e.code
            else:
                print(e.code, file=sys.stderr)
                code = 1
        except BaseException:
            traceback.print_exc()
            code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code & 0xFF if code >= 0 else 1)


def serve(name):
    me = version()
    for module in PRELOAD:
        __import__(module)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(address(name))
    except OSError:
        return 0  # another server for this build already serves
    listener.listen(64)
    listener.setblocking(False)
    sel = selectors.DefaultSelector()
    sel.register(listener, selectors.EVENT_READ, None)
    children = {}  # pid -> connection
    stopping = False
    last_active = time.monotonic()
    # A child's exit wakes the select through this pipe (Python retries an interrupted select
    # by itself); the wait below reaps.
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    sel.register(wake_r, selectors.EVENT_READ, "wake")
    while True:
        if stopping and not children:
            return 0
        if not children and time.monotonic() - last_active > IDLE_EXIT_S:
            return 0
        for key, _ in sel.select(timeout=1.0):
            conn = key.fileobj
            if key.data == "wake":
                try:
                    os.read(wake_r, 4096)
                except BlockingIOError:
                    pass
                continue
            if conn is listener:
                try:
                    conn, _ = listener.accept()
                except (BlockingIOError, InterruptedError):
                    continue
                conn.setblocking(True)
                try:
                    request, fds = recv_message(conn, max_fds=3)
                except (EOFError, OSError, ValueError):
                    conn.close()
                    continue
                if request.get("op") == "stop":
                    stopping = True
                    sel.unregister(listener)
                    listener.close()
                    send_message(conn, {"ok": True})
                    conn.close()
                    continue
                if request.get("op") == "ping":
                    send_message(conn, {"ok": True, "version": me})
                    conn.close()
                    continue
                if stopping or len(fds) != 3:
                    for fd in fds:
                        os.close(fd)
                    conn.close()
                    continue
                pid = os.fork()
                if pid == 0:
                    signal.set_wakeup_fd(-1)
                    os.close(wake_r)
                    os.close(wake_w)
                    run_child(request, fds, listener, [c for c in children.values()] + [conn])
                for fd in fds:
                    os.close(fd)
                children[pid] = conn
                try:
                    send_message(conn, {"started": pid})
                except OSError:
                    pass
                sel.register(conn, selectors.EVENT_READ, pid)
            else:
                # A client's socket became readable: it went away (it sends nothing more).
                pid = key.data
                try:
                    os.killpg(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        while children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            conn = children.pop(pid, None)
            if conn is None:
                continue
            sel.unregister(conn)
            code = os.waitstatus_to_exitcode(status)
            try:
                send_message(conn, {"exit": code})
            except OSError:
                pass
            conn.close()
            last_active = time.monotonic()


def connect(name, timeout=None):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    if timeout is not None:
        sock.settimeout(timeout)
    sock.connect(address(name))
    sock.settimeout(None)
    return sock


def ping(name):
    """The serving server's version, or None."""
    try:
        with connect(name, timeout=5) as sock:
            send_message(sock, {"op": "ping"})
            return recv_message(sock)[0].get("version", "unknown")
    except (OSError, EOFError, ValueError):
        return None


def start(name):
    serving = ping(name)
    if serving == version():
        return 0
    if serving is not None:  # left by an interrupted run of older code
        stop(name)
        deadline = time.monotonic() + 60
        while ping(name) is not None and time.monotonic() < deadline:
            time.sleep(0.1)
    pid = os.fork()
    if pid == 0:
        os.setsid()
        if os.fork() != 0:
            os._exit(0)
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        os.chdir("/")
        code = 1
        try:
            code = serve(name)
        finally:
            os._exit(code)
    os.waitpid(pid, 0)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if ping(name) is not None:
            print("pyfork: serving %s (torch, onnx and numpy imported once)" % name)
            return 0
        time.sleep(0.05)
    # Not fatal: every run falls back to a fresh interpreter.
    print("pyfork: no server for %s after 60 s; tests run in fresh interpreters" % name)
    return 0


def stop(name):
    try:
        with connect(name, timeout=5) as sock:
            send_message(sock, {"op": "stop"})
            recv_message(sock)
    except (OSError, EOFError, ValueError):
        pass
    return 0


def run(name, argv):
    if os.environ.get("PLAIT_NO_PYFORK") != "1":
        try:
            sock = connect(name, timeout=5)
        except OSError:
            sock = None
        if sock is not None:
            request = {"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ)}
            try:
                send_message(sock, request, fds=(0, 1, 2))
                started, _ = recv_message(sock)
            except (OSError, EOFError, ValueError):
                # Refused (the server is stopping) before the script started: run it here.
                started = None
            if started is not None:
                try:
                    code = recv_message(sock)[0]["exit"]
                except (OSError, EOFError, ValueError, KeyError):
                    print("pyfork: the server running %s went away" % argv[0], file=sys.stderr)
                    return 1
                if code < 0:  # killed by a signal: report it as a shell would
                    sys.stdout.flush()
                    signal.signal(-code, signal.SIG_DFL)
                    os.kill(os.getpid(), -code)
                return code
    os.execv(PYTHON, [PYTHON] + argv)


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in ("start", "stop", "run"):
        print("usage: pyfork.py start|stop NAME | pyfork.py run NAME SCRIPT [ARG ...]",
              file=sys.stderr)
        return 2
    op, name = sys.argv[1], sys.argv[2]
    if op == "start":
        return start(name)
    if op == "stop":
        return stop(name)
    if len(sys.argv) < 4 or (sys.argv[3] == "-c" and len(sys.argv) < 5):
        print("pyfork.py run: no script", file=sys.stderr)
        return 2
    if sys.argv[3].startswith("-") and sys.argv[3] != "-c":  # other interpreter options
        os.execv(PYTHON, [PYTHON] + sys.argv[3:])
    return run(name, sys.argv[3:])


if __name__ == "__main__":
    sys.exit(main())
