"""A small TCP proxy that can delay or stall what it forwards: the kernel here has no sch_netem, so the
Jepsen harness puts one of these in each host's namespace and points that host's replication links
through it (tests/jepsen/README.md).

    proxy.py --control FILE LISTEN_PORT=TARGET_HOST:TARGET_PORT [...]

listens on 127.0.0.1:LISTEN_PORT for each mapping and forwards to the target. FILE holds the mode, read
again whenever it changes (checked every 20 ms):

    {"mode": "pass"}                 forward at once
    {"mode": "delay", "ms": 150}     every chunk leaves `ms` after it arrived, in order, both directions
    {"mode": "stall"}                forward nothing (a black hole: bytes wait, bounded queues push back
                                     on the sender as a full TCP window would); "pass" resumes them

Only Python's standard library: it runs inside a namespace with the test's interpreter."""

import argparse
import asyncio
import json
import os
import signal
import sys
import time

QUEUE_CHUNKS = 64          # per direction: beyond this the proxy stops reading, so the sender is pushed back
TICK = 0.02


class Mode:
    def __init__(self, path):
        self.path = path
        self.mtime = None
        self.mode = "pass"
        self.ms = 0

    def poll(self):
        try:
            st = os.stat(self.path)
        except OSError:
            return
        if st.st_mtime_ns == self.mtime:
            return
        self.mtime = st.st_mtime_ns
        try:
            with open(self.path) as f:
                m = json.load(f)
        except (OSError, ValueError):
            return              # half-written: the harness writes it atomically, so read it again next tick
        self.mode = m.get("mode", "pass")
        self.ms = int(m.get("ms", 0))

    def hold(self, t_arrived):
        """Seconds to wait before a chunk that arrived at t_arrived may leave (0: now)."""
        if self.mode == "stall":
            return TICK
        if self.mode == "delay":
            return max(0.0, t_arrived + self.ms / 1000.0 - time.monotonic())
        return 0.0


async def pump(reader, writer, mode):
    q = asyncio.Queue(maxsize=QUEUE_CHUNKS)

    async def rd():
        try:
            while True:
                data = await reader.read(65536)
                if not data:
                    break
                await q.put((time.monotonic(), data))
        except (OSError, asyncio.CancelledError):
            pass
        await q.put(None)

    task = asyncio.ensure_future(rd())
    try:
        while True:
            item = await q.get()
            if item is None:
                break
            t, data = item
            while True:
                wait = mode.hold(t)
                if wait <= 0:
                    break
                await asyncio.sleep(min(wait, TICK))
            writer.write(data)
            await writer.drain()
    except (OSError, ConnectionError):
        pass
    finally:
        task.cancel()
        try:
            writer.close()
        except Exception:
            pass


def serve(port, host, tport, mode):
    async def on_client(creader, cwriter):
        try:
            ureader, uwriter = await asyncio.wait_for(asyncio.open_connection(host, tport), timeout=5)
        except (OSError, asyncio.TimeoutError):
            cwriter.close()
            return
        await asyncio.gather(pump(creader, uwriter, mode), pump(ureader, cwriter, mode))
    return asyncio.start_server(on_client, "127.0.0.1", port)


async def main(args):
    mode = Mode(args.control)
    mode.poll()
    servers = []
    for m in args.maps:
        lport, target = m.split("=", 1)
        host, tport = target.rsplit(":", 1)
        servers.append(await serve(int(lport), host, int(tport), mode))
    print("proxy ready: %s" % " ".join(args.maps), flush=True)
    while True:
        mode.poll()
        await asyncio.sleep(TICK)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--control", required=True)
    ap.add_argument("maps", nargs="+")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    asyncio.run(main(ap.parse_args()))
