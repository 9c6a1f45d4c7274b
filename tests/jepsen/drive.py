"""What both modes of the harness do the same way (run.py: replication, crun.py: cluster): play the fault
schedule while the clients write, then stop them; write and print the report."""

import json
import os
import time


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
