"""Loopback ports and the cheapest liveness probe."""

import fcntl
import os
import random
import socket
import tempfile

HOST = "127.0.0.1"


# Ports handed to servers come from below the kernel's ephemeral range (ip_local_port_range), so no outgoing
# connection of any process takes one between a server's stop and its restart on the same port (a kill -9
# test restarts on its ports; one such restart found 55034 taken). Each port is reserved by an flock on a file
# in _LOCKDIR, held until this process exits: the other pytest workers and ctest's other tests, which pick
# from the same range, skip it. A cluster node's bus port (port + 10000) is reserved the same way.
_LOCKDIR = os.path.join(tempfile.gettempdir(), "ruvio-test-ports")
_LOW = 12000
_held = {}  # port -> the open lock file this process holds
_rnd = random.SystemRandom()  # not the random module's: a test may seed that, and every process would pick alike


def _span():
    """[lo, hi): the client ports to pick from, such that port + 10000 is below the ephemeral range too."""
    eph = 32768
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            eph = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        pass
    return _LOW, max(eph - 10000, _LOW + 4000)


def _reserve(port):
    if port in _held:
        return False
    try:
        os.makedirs(_LOCKDIR, mode=0o1777, exist_ok=True)
        fd = os.open(os.path.join(_LOCKDIR, str(port)), os.O_CREAT | os.O_RDWR, 0o666)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return False
    _held[port] = fd
    return True


def _release(port):
    fd = _held.pop(port, None)
    if fd is not None:
        os.close(fd)  # closing the only descriptor drops the flock


def port_free(port, host=HOST):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def free_ports(n, also_bus=False, host=HOST):
    """Base of n consecutive ports free now and reserved for this process until it exits (and, with also_bus,
    base+10000.. too, for a cluster bus): no other test process picks them, and no outgoing connection gets
    one as its local port."""
    lo, hi = _span()
    for _ in range(1000):
        base = _rnd.randrange(lo, hi - n)
        ports = list(range(base, base + n))
        if also_bus:
            ports += [p + 10000 for p in ports]
        taken = []
        for p in ports:
            if not _reserve(p):
                break
            taken.append(p)
        if len(taken) == len(ports) and all(port_free(p, host) for p in ports):
            return base
        for p in taken:
            _release(p)
    raise RuntimeError("no run of %d free ports in [%d, %d)" % (n, lo, hi))


def free_port(host=HOST):
    """A port free now and reserved for this process (see free_ports)."""
    return free_ports(1, host=host)


def ping_once(host, port, timeout=1.0):
    """True once the server answers an inline PING with any RESP line (PONG, or NOAUTH under requirepass)."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.settimeout(timeout)
            s.sendall(b"PING\r\n")
            return s.recv(64)[:1] in (b"+", b"-")
    except OSError:
        return False
