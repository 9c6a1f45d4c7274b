#!/usr/bin/env python3
"""scripts/layers.py: the include rule of docs/architecture.md, checked.

Every C file belongs to a layer (its folder); it may include headers of its
own layer and of layers below it, never above. The build runs this before
compiling anything (CMake target `layers`), so an include that runs back up
fails the build, and the per-layer libraries make an upward call fail to link.

  scripts/layers.py [--root DIR] [--list]
"""
import argparse
import os
import re
import sys

# Bottom to top. A folder's rank: it may include any folder of lower or equal
# rank that is listed as visible to it. Siblings of equal rank (wal and
# control) must not include each other unless listed in SIBLING_OK.
LAYERS = [
    ("base", 0),
    ("proto", 1),
    ("cluster", 1),
    ("wal", 2),
    ("control", 2),
    ("replication", 3),
    ("node/keyspace", 4),
    ("node/types", 5),
    ("node/core", 6),
    ("node/obs", 7),
    ("node/persist", 8),
    ("node/features", 9),
    ("node/commands", 10),
    ("node/server", 11),
    ("tools", 12),
]
SIBLING_OK = set()
# A module's private header (name ending in _int.h or _priv.h) is for its own
# folder; these are the exceptions, each with its reason in the header.
PB_OK = {"replication/repl_msg.c", "replication/repl_msg_pb.h"}
PRIVATE_OK = {("node/server/shard.c", "node/core/shard_int.h")}  # the shard's thread owns its fields too
INC = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layer_of(path):
    best = None
    for name, rank in LAYERS:
        if path == name or path.startswith(name + "/"):
            if best is None or len(name) > len(best[0]):
                best = (name, rank)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default=os.path.join(os.path.dirname(__file__), ".."))
    ap.add_argument("--list", action="store_true", help="print every violation, not only the first 50")
    a = ap.parse_args()
    root = os.path.abspath(a.root)
    bad = []
    for top in ("base", "proto", "cluster", "wal", "control", "replication", "node", "tools"):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if not f.endswith((".c", ".h")):
                    continue
                path = os.path.relpath(os.path.join(dirpath, f), root)
                me = layer_of(path)
                if me is None:
                    bad.append(f"{path}: in no layer (add its folder to scripts/layers.py)")
                    continue
                text = open(os.path.join(root, path), encoding="utf-8", errors="replace").read()
                for inc in INC.findall(text):
                    if "/" not in inc:          # generated or same-folder by name
                        continue
                    if (inc.endswith(("_int.h", "_priv.h")) and os.path.dirname(inc) != os.path.dirname(path)
                            and (path, inc) not in PRIVATE_OK):
                        bad.append(f"{path}: includes {inc}, private to {os.path.dirname(inc)}/")
                        continue
                    if inc.endswith(".pb-c.h") and path not in PB_OK:
                        bad.append(f"{path}: includes {inc}; protobuf-c's types stay in replication's message module")
                        continue
                    if inc.startswith("proto/") and inc.endswith(".pb-c.h"):
                        other = ("replication", 3)  # generated messages belong to replication
                    else:
                        other = layer_of(inc)
                    if other is None or other[0] == me[0]:
                        continue
                    if other[1] > me[1] or (other[1] == me[1] and (me[0], other[0]) not in SIBLING_OK):
                        bad.append(f"{path}: includes {inc} ({me[0]} may not depend on {other[0]})")
    for b in bad[: None if a.list else 50]:
        print("layers: " + b, file=sys.stderr)
    if bad:
        print(f"layers: {len(bad)} include(s) against the layer order (docs/architecture.md)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
