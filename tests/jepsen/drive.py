"""What both modes of the harness do the same way (run.py: replication, crun.py: cluster): the schedule's
skeleton, the run's clock and event log, playing the schedule while the clients write, the teardown, and the
report."""

import json
import os
import random
import shutil
import threading
import time


def schedule(seed, duration, faults, params):
    """[(t, kind, p)], a pure function of the seed: a fault every hold + 0.5..3 s from 1..3 s on; params(rng,
    kind) draws the fault's parameters (with "hold": how long it lasts) from the same generator."""
    rng = random.Random(seed)
    t = rng.uniform(1.0, 3.0)
    out = []
    while t < duration:
        kind = rng.choice(faults)
        p = params(rng, kind)
        out.append((round(t, 3), kind, p))
        t += p["hold"] + rng.uniform(0.5, 3.0)
    return out


class Run:
    """One run's clock, operations and events (a mode's Run adds what its clients share)."""

    def __init__(self, opts):
        self.opts = opts
        self.t0 = time.monotonic()
        self.ops = []
        self.events = []
        self.stop_clients = threading.Event()
        self.lock = threading.Lock()
        self.cluster = None

    def now(self):
        return round(time.monotonic() - self.t0, 3)

    def event(self, kind, desc, **kw):
        e = dict(t=self.now(), kind=kind, desc=desc, **kw)
        with self.lock:
            self.events.append(e)
        if self.opts.verbose:
            print("  [%7.2fs] %s" % (e["t"], desc), flush=True)
        return e


def play(run, clients, schedule, nem, duration, op_timeout):
    """Start the clients, apply each scheduled fault at its time until `duration`, then stop the clients (each
    join bounded) and record it."""
    for t in clients:
        t.start()
    for at, kind, p in schedule:
        while run.now() < at and run.now() < duration:
            time.sleep(0.05)
        if run.now() >= duration:
            break
        nem.apply(kind, p)
    while run.now() < duration:
        time.sleep(0.05)
    run.stop_clients.set()
    for t in clients:
        t.join(timeout=op_timeout + 15)
        if t.is_alive():
            run.event("harness", "client %d did not stop" % t.cid)
    run.event("clients-stopped", "clients stopped after %d operations" % len(run.ops))


def teardown(system, members, out):
    """After a run: copy each member's (host's or node's) log into out, close the system, and say what it left
    behind (namespaces, links)."""
    for m in members:
        if m.proc is not None and os.path.exists(m.proc.log_path):
            shutil.copy(m.proc.log_path, os.path.join(out, "ruvio-%s.log" % m.name))
    system.close()
    left = system.leftovers()
    if left:
        print("jepsen: namespaces/links left behind: %s" % left)


def report(out, ok, lines, summary, events, rerun):
    """report.txt in `out`, the checker's lines and the summary on stdout, and on failure how to rerun (`rerun`:
    the command line) and every event."""
    with open(os.path.join(out, "report.txt"), "w") as f:
        f.write("\n".join(lines) + "\n" + json.dumps(summary, default=str) + "\nevents:\n")
        f.writelines("  [%7.2fs] %s\n" % (e["t"], e["desc"]) for e in events)
    print("\n".join(lines))
    print("jepsen summary: %s" % json.dumps(summary, default=str))
    if not ok:
        print("jepsen: FAILED invariants %s with seed %d; rerun: %s; history: %s" % (
            ",".join(summary["failed"]), summary["seed"], rerun, os.path.join(out, "history.json")))
        print("events:")
        for e in events:
            print("  [%7.2fs] %s" % (e["t"], e["desc"]))
