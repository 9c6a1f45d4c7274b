"""Loopback ports and the cheapest liveness probe."""

import socket

HOST = "127.0.0.1"


def free_port(host=HOST):
    """A port the kernel just had free on host (another process may still take it: callers retry on EADDRINUSE)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def port_free(port, host=HOST):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


# Every port free_ports handed out in this process (clients' and buses'): a test that takes several runs before
# starting any server must not get one whose bus is another's client port (nothing is bound yet to say so).
_given = set()


def free_ports(n, also_bus=False, host=HOST):
    """Base of n consecutive free ports (and, with also_bus, base+10000.. free too, for a redis cluster bus),
    none of them handed out before by this process."""
    for _ in range(200):
        base = free_port(host)
        if base + n + (10000 if also_bus else 0) >= 65535:
            continue
        ports = list(range(base, base + n))
        if also_bus:
            ports += [p + 10000 for p in range(base, base + n)]
        if not _given.intersection(ports) and all(port_free(p, host) for p in ports):
            _given.update(ports)
            return base
    raise RuntimeError("no run of %d free ports" % n)


def ping_once(host, port, timeout=1.0):
    """True once the server answers an inline PING with any RESP line (PONG, or NOAUTH under requirepass)."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.settimeout(timeout)
            s.sendall(b"PING\r\n")
            return s.recv(64)[:1] in (b"+", b"-")
    except OSError:
        return False
