#!/usr/bin/env python3
"""Diff COMMAND DOCS of every command both servers know: Ruvio against Debian's redis-server 7.0.

    python3 scripts/docs_diff.py [--ruvio build/ruvio] [--ours PORT] [--theirs PORT] [-v] [--table]

Starts what it is not given a port for (each in a temporary directory) and prints one line per command whose
docs differ, naming what differs ("arg name", "arg since", "shape", "history", ...), then a count per kind.
Summaries and complexities are Ruvio's own wording and are not compared. Exit status 0 whatever differs: this is
a report; tests/integ/test_command_docs.py pins what must match.

--table prints, for each command whose argument tree has Redis's shape and still differs, the row of
node/commands/cmd_docs_args.h that gives its arguments Redis's names, types, per-argument `since` and
key_spec_index (facts clients read; nothing of Redis's prose). The rows are relative to what the running Ruvio
answers: add a new command's row to the table (sorted); for a command that has a row already, edit that row."""

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests" / "pylib"))
from ruviotest.resp import RawConn  # noqa: E402

HOST = "127.0.0.1"
SKIP = {"summary", "complexity"}


def free_port():
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def start(argv, port, tmp):
    proc = subprocess.Popen(argv, cwd=tmp, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            with RawConn(HOST, port, timeout=2) as c:
                if c.cmd("PING") == "PONG":
                    return proc
        except (OSError, Exception):
            time.sleep(0.05)
    proc.kill()
    sys.exit("%s did not answer on port %d" % (argv[0], port))


def dec(x):
    if isinstance(x, bytes):
        return x.decode()
    if isinstance(x, list):
        return [dec(i) for i in x]
    return x


def pairs(flat):
    return [(dec(flat[i]), flat[i + 1]) for i in range(0, len(flat), 2)]


def docs_of(port):
    """{full name: [(field, value)]}, subcommands flattened in as "parent|sub"."""
    with RawConn(HOST, port, timeout=30) as c:
        out = {}

        def add(name, body):
            fields = pairs(body)
            out[name] = fields
            for k, v in fields:
                if k == "subcommands":
                    for sub, sbody in pairs(v):
                        add(sub, sbody)

        for name, body in pairs(c.cmd("COMMAND", "DOCS")):
            add(name, body)
        return out


def arg_nodes(args):
    return [dict(pairs(a)) | {"_order": [k for k, _ in pairs(a)]} for a in args]


def diff_args(ours, theirs, path, out):
    """Append (kind, path, ours, theirs) for each difference of two argument lists."""
    if len(ours) != len(theirs):
        out.append(("shape", path, len(ours), len(theirs)))
        return
    for i, (o, t) in enumerate(zip(arg_nodes(ours), arg_nodes(theirs))):
        here = "%s/%s" % (path, dec(t.get("name")))
        for k in ("name", "type", "key_spec_index", "token", "since", "display_text", "deprecated_since"):
            if dec(o.get(k)) != dec(t.get(k)):
                out.append(("arg " + k, here, dec(o.get(k)), dec(t.get(k))))
        if sorted(dec(o.get("flags") or [])) != sorted(dec(t.get("flags") or [])):
            out.append(("arg flags", here, dec(o.get("flags")), dec(t.get("flags"))))
        if o["_order"] != t["_order"] and sorted(o["_order"]) == sorted(t["_order"]):
            out.append(("arg field order", here, o["_order"], t["_order"]))
        if ("arguments" in o) != ("arguments" in t):
            out.append(("shape", here, "arguments" in o, "arguments" in t))
        elif "arguments" in o:
            diff_args(o["arguments"], t["arguments"], here, out)


def diff_command(ours, theirs):
    out = []
    o, t = dict(ours), dict(theirs)
    for k in sorted((set(o) | set(t)) - SKIP - {"arguments", "subcommands"}):
        if dec(o.get(k)) != dec(t.get(k)):
            out.append((k, "", dec(o.get(k)), dec(t.get(k))))
    if ("arguments" in o) != ("arguments" in t):
        out.append(("shape", "", "arguments" in o, "arguments" in t))
    elif "arguments" in o:
        diff_args(o["arguments"], t["arguments"], "", out)
    order = lambda fs: [k for k, _ in fs if k not in SKIP]  # noqa: E731
    if order(ours) != order(theirs) and sorted(order(ours)) == sorted(order(theirs)):
        out.append(("field order", "", order(ours), order(theirs)))
    return out


def flatten(args, rows):
    """Pre-order nodes (dicts) of an argument tree."""
    for a in arg_nodes(args):
        rows.append({k: dec(v) for k, v in a.items() if k != "arguments"})
        if "arguments" in a:
            flatten(a["arguments"], rows)


def table_row(name, ours, theirs):
    """The cmd_docs_args.h row for a command (one word per node, pre-order: name[~type][@since][#ksi]), or None
    when it needs none or its tree's shape or tokens differ from Redis's (no row can fix those)."""
    got = []
    diff_args(dict(ours).get("arguments", []), dict(theirs).get("arguments", []), "", got)
    if any(k in ("shape", "arg token") for k, *_ in got):
        return None
    if not any(k in ("arg name", "arg since", "arg type", "arg key_spec_index") for k, *_ in got):
        return None
    mine, ref = [], []
    flatten(dict(ours).get("arguments", []), mine)
    flatten(dict(theirs).get("arguments", []), ref)
    words = []
    for o, t in zip(mine, ref):
        w = "=" if o["name"] == t["name"] else t["name"]
        if o["type"] != t["type"]:
            w += "~" + t["type"]
        if t.get("since"):
            w += "@" + t["since"]
        ko, kt = o.get("key_spec_index"), t.get("key_spec_index")
        if ko != kt:
            w += "#" + ("-" if kt is None else str(kt))
        words.append(w)
    return '    { "%s", "%s" },' % (name, " ".join(words))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ruvio", default=str(REPO / "build" / "ruvio"))
    ap.add_argument("--ours", type=int, help="port of a running Ruvio")
    ap.add_argument("--theirs", type=int, help="port of a running redis-server")
    ap.add_argument("-v", action="store_true", help="print every difference")
    ap.add_argument("--table", action="store_true", help="print cmd_docs_args.h rows")
    a = ap.parse_args()
    procs, tmp = [], tempfile.mkdtemp(prefix="docs_diff.")
    try:
        if a.ours is None:
            a.ours = free_port()
            os.mkdir(os.path.join(tmp, "ruvio"))
            procs.append(start([a.ruvio, "--port", str(a.ours), "--bind", HOST, "--dir",
                                os.path.join(tmp, "ruvio")], a.ours, tmp))
        if a.theirs is None:
            exe = shutil.which("redis-server")
            if exe is None:
                sys.exit("no redis-server on PATH")
            a.theirs = free_port()
            procs.append(start([exe, "--port", str(a.theirs), "--bind", HOST, "--save", "",
                                "--appendonly", "no", "--dir", tmp], a.theirs, tmp))
        ours, theirs = docs_of(a.ours), docs_of(a.theirs)
    finally:
        for p in procs:
            p.terminate()
            p.wait(timeout=10)
        shutil.rmtree(tmp, ignore_errors=True)
    common = sorted(set(ours) & set(theirs))
    if a.table:
        for name in common:
            row = table_row(name, ours[name], theirs[name])
            if row:
                print(row)
        return
    kinds, differing = {}, 0
    for name in common:
        d = diff_command(ours[name], theirs[name])
        if not d:
            continue
        differing += 1
        what = sorted({k for k, *_ in d})
        for k in what:
            kinds[k] = kinds.get(k, 0) + 1
        print("%-28s %s" % (name, ", ".join(what)))
        if a.v:
            for k, path, o, t in d:
                print("    %-16s %-40s ours=%r redis=%r" % (k, path or "-", o, t))
    print("\n%d commands in both, %d differ" % (len(common), differing))
    for k in sorted(kinds, key=lambda k: -kinds[k]):
        print("  %-18s %d commands" % (k, kinds[k]))


if __name__ == "__main__":
    main()
