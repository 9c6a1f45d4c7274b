"""Shared pieces of the crash harnesses (tests/crash/kill9.py, tests/integ/test_durability_faults.py).

Standard library + redis-py only.  Every wait here is bounded: a harness that hangs is a failed harness.

- RuvioProc: one ruvio process on a data directory (stdout+stderr to a log file), started on a free loopback
  port, with a bounded wait for it to answer PING (or to exit).
- PipelinedWriter: `SET k:1 1`, `SET k:2 2`, ... written over one raw socket as fast as the server takes them,
  replies read by a second thread.  `sent_hi` is an upper bound of the keys the server may have received,
  `acked` the highest i whose +OK the client read (replies are in order, so reply number i is k:i's).
- check_prefix(): the keyspace after a restart must be exactly k:1..k:m with the right values.
"""

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "pylib"))

from ruviotest import procs  # noqa: E402
from ruviotest.net import HOST, free_port  # noqa: E402
from ruviotest.paths import ruvio_bin  # noqa: E402
from ruviotest.net import ping_once as _ping  # noqa: E402


def default_bin():
    return ruvio_bin()


def ping_once(port, timeout=0.5):
    return _ping(HOST, port, timeout)


class RuvioProc:
    """A ruvio process.  start() returns once it answers PING (True) or exited / timed out (False)."""

    def __init__(self, binary, datadir, mode, extra=(), env=None, log_path=None):
        self.binary = binary
        self.datadir = str(datadir)
        self.mode = mode
        self.extra = [str(a) for a in extra]
        self.env = env
        self.log_path = log_path or os.path.join(os.path.dirname(self.datadir.rstrip("/")) or ".",
                                                  "ruvio-%d.log" % os.getpid())
        self.proc = None
        self.port = None
        self.start_s = None

    def argv(self):
        return [self.binary, "--port", str(self.port), "--bind", HOST, "--dir", self.datadir,
                "--durability", self.mode] + self.extra

    def start(self, timeout=10.0):
        last = None
        for _ in range(3):                       # retry only on a port race
            self.port = free_port()
            env = os.environ.copy()
            env.pop("RUVIO_FAILPOINT", None)
            if self.env:
                env.update(self.env)
            t0 = time.monotonic()
            with open(self.log_path, "ab") as log:
                log.write(("\n== %s\n" % " ".join(self.argv())).encode())
                log.flush()
                self.proc = subprocess.Popen(self.argv(), stdout=log, stderr=subprocess.STDOUT,
                                             stdin=subprocess.DEVNULL, env=env)
            if procs.wait_ready(self.proc, HOST, [self.port], timeout=t0 + timeout - time.monotonic(),
                                interval=0.01):
                self.start_s = time.monotonic() - t0
                return True
            if self.proc.poll() is None:
                self.kill()
                return False
            last = self.log_tail()
            if "in use" not in last:
                return False
        return False

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def wait(self, timeout):
        """Exit status, or None if still running after timeout."""
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.wait(10)

    def stop(self, grace=5.0):
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(signal.SIGTERM)
        rc = self.wait(grace)
        if rc is None:
            self.kill()
        return rc

    def log_tail(self, n=4000):
        return procs.read_tail(self.log_path, n)

    def client(self, timeout=10.0):
        return redis.Redis(host=HOST, port=self.port, socket_timeout=timeout, socket_connect_timeout=timeout,
                           decode_responses=True)

    def info(self, section="persistence", timeout=10.0):
        c = self.client(timeout)
        try:
            return {k: str(v) for k, v in c.info(section).items()}
        finally:
            c.close()


def set_cmd(i, prefix=b"k:"):
    s = b"%d" % i
    return b"*3\r\n$3\r\nSET\r\n$%d\r\n%s%s\r\n$%d\r\n%s\r\n" % (len(s) + len(prefix), prefix, s, len(s), s)


MULTI = b"*1\r\n$5\r\nMULTI\r\n"
EXEC = b"*1\r\n$4\r\nEXEC\r\n"


def txn_cmd(i):
    """MULTI, SET k:i i, SET t:i i, EXEC: one WAL record, so both keys or neither after a crash."""
    return MULTI + set_cmd(i) + set_cmd(i, b"t:") + EXEC


TXN_LINES = 6        # +OK +QUEUED +QUEUED *2 +OK +OK


class PipelinedWriter:
    """SET k:i i for i = 1, 2, ... on one connection, replies read on a second thread.

    sent_hi: every key above it was certainly not sent (a kill may cut the last batch short, so keys up to
    sent_hi may or may not have reached the server).  acked: the highest i whose +OK was read (an error
    reply in between is counted in nerrors; errors keeps the first few with their reply number).
    limit: stop after that many keys (None: until stop()).  batch: commands per send.  window: at most that many
    SETs sent and not yet answered (0: no bound, the client never waits for replies)."""

    def __init__(self, port, batch=512, limit=None, window=0, txn=False, io_timeout=0.2):
        self.port = port
        self.txn = txn                     # units are MULTI/SET k:i/SET t:i/EXEC instead of SET k:i
        self._lines = 0
        self.batch = min(batch, window) if window else batch
        self.limit = limit
        self.window = window               # at most this many unanswered SETs (0: no bound)
        self._cv = threading.Condition()
        self.sock = socket.create_connection((HOST, port), timeout=10)
        self.sock.settimeout(io_timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sent_hi = 0
        self.sent_done = 0                 # keys whose bytes were all handed to the kernel
        self.acked = 0
        self.replies = 0
        self.errors = []                   # the first few (reply number, line)
        self.nerrors = 0
        self.send_exc = None
        self.recv_exc = None
        self.eof = False
        self._stop_send = threading.Event()
        self._stop_recv = threading.Event()
        self._tx = threading.Thread(target=self._send_loop, daemon=True)
        self._rx = threading.Thread(target=self._recv_loop, daemon=True)

    def start(self):
        self._rx.start()
        self._tx.start()
        return self

    def _send_loop(self):
        i = 1
        try:
            while not self._stop_send.is_set():
                n = self.batch
                if self.limit is not None:
                    n = min(n, self.limit - i + 1)
                    if n <= 0:
                        return
                unit = txn_cmd if self.txn else set_cmd
                data = b"".join(unit(j) for j in range(i, i + n))
                if self.window:
                    with self._cv:
                        while (self.sent_done - self.replies + n > self.window and self._rx.is_alive()
                               and not self._stop_send.is_set()):
                            self._cv.wait(0.05)
                self.sent_hi = i + n - 1
                view = memoryview(data)
                off = 0
                while off < len(view):
                    if self._stop_send.is_set():
                        return
                    try:
                        off += self.sock.send(view[off:])
                    except socket.timeout:
                        continue
                self.sent_done = i + n - 1
                i += n
        except OSError as e:               # the server died: EPIPE, ECONNRESET
            self.send_exc = e

    def _recv_loop(self):
        buf = b""
        try:
            while True:
                try:
                    data = self.sock.recv(1 << 20)
                except socket.timeout:
                    if self._stop_recv.is_set():
                        return
                    continue
                if not data:
                    self.eof = True
                    return
                buf += data
                j = buf.rfind(b"\r\n")
                if j < 0:
                    continue
                chunk, buf = buf[:j + 2], buf[j + 2:]
                n = chunk.count(b"\r\n")
                ok = chunk.count(b"+OK\r\n")
                if self.txn:
                    self._txn_lines(chunk, n)
                elif ok == n:
                    self.replies += n
                    self.acked = self.replies
                else:
                    for line in chunk.split(b"\r\n")[:-1]:
                        self.replies += 1
                        if line == b"+OK":
                            self.acked = self.replies
                        else:
                            self.nerrors += 1
                            if len(self.errors) < 5:
                                self.errors.append((self.replies, line.decode(errors="replace")))
                if self.window:
                    with self._cv:
                        self._cv.notify()
        except OSError as e:
            self.recv_exc = e

    def _txn_lines(self, chunk, n):
        if chunk.startswith((b"-", b"*-1")) or b"\n-" in chunk or b"*-1\r\n" in chunk:
            for k, line in enumerate(chunk.split(b"\r\n")[:-1]):
                if line.startswith(b"-") or line == b"*-1":
                    self.nerrors += 1
                    if len(self.errors) < 5:
                        self.errors.append(((self._lines + k) // TXN_LINES + 1, line.decode(errors="replace")))
        self._lines += n
        self.replies = self._lines // TXN_LINES
        if not self.nerrors:
            self.acked = self.replies

    def stop_sending(self):
        self._stop_send.set()

    def finish(self, timeout=5.0):
        """Stop sending; read until EOF, until every sent command was answered, or until timeout."""
        self._stop_send.set()
        self._tx.join(timeout)
        deadline = time.monotonic() + timeout
        while self._rx.is_alive() and time.monotonic() < deadline:
            if not self._tx.is_alive() and self.replies >= self.sent_done and self.sent_done == self.sent_hi:
                break
            self._rx.join(0.02)
        self._stop_recv.set()
        self._rx.join(max(0.5, deadline - time.monotonic()))
        try:
            self.sock.close()
        except OSError:
            pass
        return not self._tx.is_alive() and not self._rx.is_alive()

    def wait_acked(self, n, timeout=10.0):
        deadline = time.monotonic() + timeout
        while self.acked < n and time.monotonic() < deadline and self._rx.is_alive():
            time.sleep(0.005)
        return self.acked >= n


def check_prefix(client, sent_hi, batch=5000, prefixes=("k:",)):
    """The keyspace must be exactly k:1..k:m with value i for k:i (and t:1..t:m too with prefixes
    ("k:", "t:"), the transaction workload).  Returns (m, problems)."""
    problems = []
    total = int(client.dbsize())
    n = total // len(prefixes)
    if total % len(prefixes):
        problems.append("dbsize %d is not a multiple of %d: a transaction was half applied" % (total, len(prefixes)))
    missing = []
    wrong = []
    for pre in prefixes:
        for lo in range(1, n + 1, batch):
            hi = min(n, lo + batch - 1)
            vals = client.mget(["%s%d" % (pre, i) for i in range(lo, hi + 1)])
            for i, v in zip(range(lo, hi + 1), vals):
                if v is None:
                    if len(missing) < 5:
                        missing.append(pre + str(i))
                elif v != str(i):
                    if len(wrong) < 5:
                        wrong.append((pre + str(i), v))
            if len(missing) >= 5 and len(wrong) >= 5:
                break
    if missing or wrong:
        extra = []
        for k in client.scan_iter(count=1000):
            pre, num = k[:2], k[2:]
            if pre not in prefixes or not num.isdigit() or not 1 <= int(num) <= n:
                extra.append(k)
                if len(extra) >= 5:
                    break
        problems.append("not a prefix: dbsize=%d but missing %s wrong values %s keys outside %s1..%d %s"
                        % (total, missing, wrong, "/".join(prefixes), n, extra))
    if n > sent_hi:
        problems.append("%d keys but only k:1..k:%d were ever sent" % (n, sent_hi))
    return n, problems
