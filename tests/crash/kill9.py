#!/usr/bin/env python3
"""kill -9 harness (issue 4): pipelined SETs, SIGKILL at a random moment, restart, check the keyspace.

Per trial: start ruvio (one shard) on a fresh data directory in the given mode; pipeline SET k:1 1, SET k:2 2,
... over one socket as fast as the server takes them while a second thread reads the replies and records the
highest i whose +OK was read (acked); odd trials never wait for replies, even trials keep at most 1024 SETs
unanswered (--window), so that in always mode replies do come back before the kill; SIGKILL the server after a random 50-350 ms (seeded); restart it on the
same directory (bounded wait for PING) and check that

  - recovery ran: the restarted server answers, INFO persistence says loading:0, and the WAL position it
    resumed from (wal_last_lsn) equals the number of keys (every SET is one record);
  - the keyspace is exactly k:1..k:m with the right values (a prefix: no holes, no strays), m <= keys sent;
  - always: m >= acked (nothing acknowledged is lost);
  - everysec: acknowledged keys may be lost (acked - m is reported), but the rest must still hold.
    (SIGKILL leaves the page cache alone, so a loss here still points at a bug; it is reported, not failed.)

Prints one line per trial and a summary (with --json: one JSON object per line instead); exits 1 on any
violation, 2 when the harness itself could not run (the first start failed).

    tests/crash/kill9.py --mode always --trials 12
    tests/crash/kill9.py --mode everysec,always --trials 200 --seed 7 --bin build/ruvio
"""

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from crashlib import PipelinedWriter, RuvioProc, check_prefix, default_bin  # noqa: E402


def run_trial(args, mode, trial, rng, workroot):
    delay_ms = rng.randint(args.min_ms, args.max_ms)
    tdir = tempfile.mkdtemp(prefix="kill9-%s-%d-" % (mode, trial), dir=workroot)
    data = os.path.join(tdir, "data")
    os.mkdir(data)
    log = os.path.join(tdir, "ruvio.log")
    extra = list(args.server_arg or [])
    window = args.window if args.window is not None else (0 if trial % 2 else 1024)
    res = {"trial": trial, "mode": mode, "delay_ms": delay_ms, "window": window, "dir": tdir, "violations": []}
    v = res["violations"]

    srv = RuvioProc(args.bin, data, mode, extra, log_path=log)
    if not srv.start(args.start_timeout):
        res["error"] = "first start failed: " + srv.log_tail(600)
        return res
    w = None
    try:
        w = PipelinedWriter(srv.port, batch=args.batch, window=window, txn=args.txn).start()
        time.sleep(delay_ms / 1000.0)
        srv.proc.kill()
        rc = srv.wait(10)
        if rc is None:
            v.append("server still running 10 s after SIGKILL")
            return res
        w.finish(timeout=5)
        res.update(sent=w.sent_hi, acked=w.acked, replies=w.replies, reply_errors=w.nerrors)
        if w.nerrors:
            v.append("error replies before the kill: %d, first %r" % (w.nerrors, w.errors[:3]))
    finally:
        srv.kill()

    again = RuvioProc(args.bin, data, mode, extra, log_path=log)
    t0 = time.monotonic()
    if not again.start(args.start_timeout):
        v.append("restart failed (recovery did not complete within %.0f s): %s"
                 % (args.start_timeout, again.log_tail(800)))
        again.kill()
        return res
    res["restart_s"] = round(time.monotonic() - t0, 3)
    try:
        info = again.info()
        c = again.client()
        try:
            m, problems = check_prefix(c, w.sent_hi, prefixes=("k:", "t:") if args.txn else ("k:",))
        finally:
            c.close()
        v.extend(problems)
        res["present"] = m
        res["torn_tails"] = int(info.get("loading_torn_tails", -1))
        res["wal_records"] = int(info.get("loading_wal_records", -1))
        res["lost_acked"] = max(0, w.acked - m)
        if info.get("loading") != "0":
            v.append("INFO persistence loading:%s after the restart answered" % info.get("loading"))
        if info.get("durability") != mode:
            v.append("restarted in durability %s, not %s" % (info.get("durability"), mode))
        if int(info.get("wal_last_lsn", -1)) != m:
            v.append("recovered WAL position wal_last_lsn=%s but %d keys (one record per SET or EXEC)"
                     % (info.get("wal_last_lsn"), m))
        if m > 0 and int(info.get("checkpoint_lsn", 0)) == 0 and res["wal_records"] != m:
            v.append("loading_wal_records=%d but %d keys" % (res["wal_records"], m))
        if mode == "always" and m < w.acked:
            v.append("always: %d acknowledged keys lost (acked k:1..k:%d, present k:1..k:%d)"
                     % (w.acked - m, w.acked, m))
    except Exception as e:          # a restarted server that cannot answer is a violation, not a crash
        v.append("checking the restarted server failed: %r" % (e,))
    finally:
        rc = again.stop()
        if rc not in (0, None) and not v:
            v.append("restarted server exited %s on SIGTERM" % rc)
    log_text = again.log_tail(1 << 20)
    for mark in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:"):
        if mark in log_text:
            v.append("sanitizer report in %s (%s)" % (log, mark))
    return res


def fmt_line(r):
    if "error" in r:
        return "trial %d mode=%s HARNESS ERROR %s" % (r["trial"], r["mode"], r["error"])
    s = ("trial %2d mode=%-8s delay=%3dms window=%-4s sent<=%-7s acked=%-7s present=%-7s lost_acked=%-5s "
         "torn=%s restart=%ss") % (
        r["trial"], r["mode"], r["delay_ms"], r["window"] or "-", r.get("sent", "?"), r.get("acked", "?"),
        r.get("present", "?"), r.get("lost_acked", "?"), r.get("torn_tails", "?"), r.get("restart_s", "?"))
    if r["violations"]:
        s += " VIOLATION: " + " | ".join(r["violations"]) + " (kept %s)" % r["dir"]
    else:
        s += " ok"
    return s


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mode", default="always", help="everysec, always, or a comma list (default always)")
    ap.add_argument("--trials", type=int, default=12, help="trials per mode (default 12)")
    ap.add_argument("--seed", type=int, default=None, help="seed for the kill delays (default: random, printed)")
    ap.add_argument("--bin", default=default_bin(), help="ruvio binary (default $RUVIO_BIN or build/ruvio)")
    ap.add_argument("--json", action="store_true", help="one JSON object per trial and one for the summary")
    ap.add_argument("--min-ms", type=int, default=50)
    ap.add_argument("--max-ms", type=int, default=350)
    ap.add_argument("--batch", type=int, default=256, help="SETs per send() (default 256)")
    ap.add_argument("--txn", action="store_true",
                    help="each unit is MULTI, SET k:i i, SET t:i i, EXEC: both keys or neither after the crash")
    ap.add_argument("--window", type=int, default=None,
                    help="at most N unanswered SETs, 0 for no bound (default: odd trials 0, even trials 1024)")
    ap.add_argument("--start-timeout", type=float, default=15.0, help="bound on each start / restart (s)")
    ap.add_argument("--workdir", default=None, help="where the data directories go (default $TMPDIR)")
    ap.add_argument("--keep", action="store_true", help="keep data directories of passing trials too")
    ap.add_argument("--server-arg", action="append", help="extra ruvio argument (repeat: --server-arg=--x)")
    args = ap.parse_args()

    modes = [m.strip() for m in args.mode.split(",") if m.strip()]
    for m in modes:
        if m not in ("everysec", "always"):
            ap.error("--mode: %r is not everysec or always" % m)
    if not os.access(args.bin, os.X_OK):
        ap.error("--bin: %s is not an executable (build ruvio or set RUVIO_BIN)" % args.bin)
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1, 1 << 31)
    workroot = tempfile.mkdtemp(prefix="ruvio-kill9-", dir=args.workdir)

    def out(obj, text):
        print(json.dumps(obj, sort_keys=True) if args.json else text, flush=True)

    out({"start": True, "seed": args.seed, "modes": modes, "trials": args.trials, "bin": args.bin, "txn": args.txn},
        "kill9: seed=%d modes=%s trials=%d%s bin=%s" % (args.seed, ",".join(modes), args.trials,
                                                       " txn" if args.txn else "", args.bin))
    t0 = time.monotonic()
    results = []
    harness_error = False
    for mode in modes:
        rng = random.Random("%d/%s" % (args.seed, mode))
        for t in range(1, args.trials + 1):
            r = run_trial(args, mode, t, rng, workroot)
            results.append(r)
            out(r, fmt_line(r))
            if "error" in r:
                harness_error = True
                break
            if not r["violations"] and not args.keep:
                shutil.rmtree(r["dir"], ignore_errors=True)
        if harness_error:
            break

    summary = {"summary": True, "seed": args.seed, "elapsed_s": round(time.monotonic() - t0, 1)}
    for mode in modes:
        rs = [r for r in results if r["mode"] == mode and "error" not in r]
        summary[mode] = {
            "trials": len(rs),
            "violations": sum(1 for r in rs if r["violations"]),
            "acked": sum(r.get("acked", 0) for r in rs),
            "lost_acked": sum(r.get("lost_acked", 0) for r in rs),
            "max_lost_acked": max([r.get("lost_acked", 0) for r in rs] or [0]),
            "torn_tails": sum(max(0, r.get("torn_tails", 0)) for r in rs),
        }
    bad = sum(summary[m]["violations"] for m in modes)
    text = ["summary: seed=%d %.1fs" % (args.seed, summary["elapsed_s"])]
    for m in modes:
        s = summary[m]
        text.append("  %-8s trials=%d violations=%d acked=%d lost_acked=%d (max %d per trial) torn_tails=%d"
                    % (m, s["trials"], s["violations"], s["acked"], s["lost_acked"], s["max_lost_acked"],
                       s["torn_tails"]))
    text.append("  result: %s" % ("HARNESS ERROR" if harness_error else "FAIL" if bad else "ok"))
    out(summary, "\n".join(text))
    if not bad and not harness_error and not args.keep:
        shutil.rmtree(workroot, ignore_errors=True)
    if harness_error:
        return 2
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
