"""Server processes: wait until a new one answers, stop one politely and then not, read the end of its log."""

import glob
import os
import signal
import socket
import subprocess
import time


def answers(host, port, timeout=1.0):
    """True once the server answers an inline PING with a RESP line other than -LOADING (PONG, or NOAUTH under
    requirepass): listening while it loads its data is not ready yet."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.settimeout(timeout)
            s.sendall(b"PING\r\n")
            line = s.recv(64)
            return line[:1] in (b"+", b"-") and not line.startswith(b"-LOADING")
    except OSError:
        return False


def wait_ready(proc, host, ports, timeout=10.0, interval=0.02):
    """True once every port in `ports` answers a PING other than -LOADING (in order); False when proc exits
    first or `timeout` seconds pass."""
    deadline = time.monotonic() + timeout
    pending = list(ports)
    while pending:
        if proc.poll() is not None:
            return False
        if answers(host, pending[0]):
            pending.pop(0)
            continue
        if time.monotonic() > deadline:
            return False
        time.sleep(interval)
    return True


def stop(proc, grace=5.0):
    """SIGTERM, then SIGKILL when it has not exited after `grace` seconds; returns the exit status (None if it
    outlived the SIGKILL's wait too)."""
    if proc is None:
        return None
    if proc.poll() is not None:
        return proc.returncode
    try:
        proc.send_signal(signal.SIGTERM)
        return proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        try:
            return proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            return None
    except ProcessLookupError:
        return proc.poll()


def read_tail(path, n=4000):
    """The last n characters of a log file ('' when there is none)."""
    try:
        with open(path, "r", errors="replace") as f:
            return f.read()[-n:]
    except (OSError, TypeError):
        return ""


def rss_kib(pid):
    """Resident set size of pid in KiB (VmRSS), 0 when /proc does not say."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def _all_stopped(pid):
    states = []
    for f in glob.glob("/proc/%d/task/*/stat" % pid):
        try:
            with open(f) as fh:
                states.append(fh.read().rsplit(")", 1)[1].split()[0])
        except (OSError, IndexError):
            pass  # a thread that just exited
    return bool(states) and all(s in ("T", "t") for s in states)


def pause(pid, timeout=5.0):
    """SIGSTOP pid and wait until every thread of it is stopped: kill() returns while a thread running on
    another CPU may still go on for a moment (under load, long enough to answer or ack one more request)."""
    os.kill(pid, signal.SIGSTOP)
    deadline = time.monotonic() + timeout
    while not _all_stopped(pid):
        if time.monotonic() > deadline:
            raise AssertionError("process %d did not stop within %.1fs of SIGSTOP" % (pid, timeout))
        time.sleep(0.001)
