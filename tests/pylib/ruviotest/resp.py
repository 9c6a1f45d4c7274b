"""RESP over a plain socket: encode a command, read replies parsed or as their exact bytes, parse INFO text.

RawConn returns error replies as RespError with the full line ('ERR syntax error', 'WRONGPASS ...'), unlike
redis-py, which strips the code it knows; exact-wire assertions use it."""

import socket
import time

TIMEOUT = 10          # default socket timeout, seconds


def parse_info_flat(text):
    """INFO text -> {field: str}, sections merged (redis-py's parser would turn a replid of digits into a number)."""
    out = {}
    for line in (text or "").splitlines():
        if ":" in line and not line.startswith("#"):
            k, v = line.split(":", 1)
            out[k] = v.strip()
    return out


class RespError(str):
    """An error reply (-... or !...), full text including the code, e.g. 'ERR syntax error'."""


class Verbatim(str):
    def __new__(cls, fmt, text):
        o = super().__new__(cls, text)
        o.fmt = fmt
        return o


class Push(list):
    pass


class ConnClosed(Exception):
    pass


def parse_info(text):
    """INFO text -> {section (lower case): {field: value}}; every line must be a header or field:value."""
    out, cur = {}, None
    for line in text.split("\r\n"):
        if not line:
            continue
        if line.startswith("# "):
            cur = line[2:].lower()
            out[cur] = {}
            continue
        assert cur is not None, "field before any section header: %r" % line
        k, sep, v = line.partition(":")
        assert sep == ":", "bad INFO line %r" % line
        out[cur][k] = v
    return out


def encode_command(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if isinstance(a, str):
            a = a.encode()
        elif isinstance(a, int):
            a = str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class RawConn:
    """A plain socket speaking RESP2/RESP3, returning parsed replies or exact reply bytes."""

    def __init__(self, host, port, timeout=TIMEOUT):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.settimeout(timeout)
        self.timeout = timeout
        self.buf = b""
        self._raw = None

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.close()

    def send(self, data):
        self.sock.sendall(data)

    def cmd(self, *args):
        self.send(encode_command(*args))
        return self.read_reply()

    def cmd_raw(self, *args):
        self.send(encode_command(*args))
        return self.read_reply_raw()

    # ---- low-level reads
    def _fill(self, timeout=None):
        if timeout is not None:
            self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(65536)
        except ConnectionResetError:
            data = b""
        finally:
            if timeout is not None:
                self.sock.settimeout(self.timeout)
        if not data:
            raise ConnClosed("connection closed by server (buffered %r)" % self.buf[:200])
        self.buf += data

    def _line(self):
        while True:
            i = self.buf.find(b"\r\n")
            if i >= 0:
                line, self.buf = self.buf[:i], self.buf[i + 2:]
                self._raw.append(line + b"\r\n")
                return line
            self._fill()

    def _exact(self, n):
        while len(self.buf) < n + 2:
            self._fill()
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        self._raw.append(data + b"\r\n")
        return data

    def _parse(self):
        line = self._line()
        t, rest = line[:1], line[1:]
        if t == b"+":
            return rest.decode()
        if t == b"-":
            return RespError(rest.decode())
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            return None if n < 0 else self._exact(n)
        if t in (b"*", b"~", b">"):
            n = int(rest)
            if n < 0:
                return None
            items = [self._parse() for _ in range(n)]
            if t == b"~":
                return set(_hashable(x) for x in items)
            if t == b">":
                return Push(items)
            return items
        if t == b"%":
            n = int(rest)
            d = {}
            for _ in range(n):
                k = self._parse()
                d[_hashable(k)] = self._parse()
            return d
        if t == b"|":  # attribute: skip it, return the following reply
            n = int(rest)
            for _ in range(2 * n):
                self._parse()
            return self._parse()
        if t == b"_":
            return None
        if t == b",":
            return float(rest.decode().replace("inf", "inf"))
        if t == b"#":
            return rest == b"t"
        if t == b"(":
            return int(rest)
        if t == b"!":
            return RespError(self._exact(int(rest)).decode())
        if t == b"=":
            data = self._exact(int(rest))
            return Verbatim(data[:3].decode(), data[4:].decode())
        raise AssertionError("unknown RESP type byte in line %r" % line)

    def read_reply(self):
        self._raw = []
        return self._parse()

    def read_reply_raw(self):
        """Exact bytes of the next complete reply."""
        self._raw = []
        self._parse()
        return b"".join(self._raw)

    def read_bytes(self, n):
        while len(self.buf) < n:
            self._fill()
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def read_until_closed(self, timeout=TIMEOUT):
        """Everything the server sends until it closes the connection; fails if it stays open past timeout."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("connection still open after %ss (got %r)" % (timeout, self.buf[:200]))
            try:
                self._fill(timeout=left)
            except ConnClosed:
                data, self.buf = self.buf, b""
                return data
            except socket.timeout:
                continue

    def nothing_pending(self, wait=0.2):
        """True if no bytes arrive within `wait` seconds (used for CLIENT REPLY OFF checks)."""
        if self.buf:
            return False
        try:
            self._fill(timeout=wait)
        except socket.timeout:
            return True
        return False


def _hashable(x):
    if isinstance(x, list):
        return tuple(_hashable(i) for i in x)
    if isinstance(x, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in x.items()))
    if isinstance(x, set):
        return frozenset(x)
    return x
