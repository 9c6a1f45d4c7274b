"""Helpers shared by Ruvio's Python test harnesses (tests/integ, tests/crash, tests/multihost, tests/jepsen,
tests/bench). Standard library only, except `repl`, which takes redis-py clients.

    wait     wait_for: a bounded poll of a condition (the one way a test waits for something to happen);
             wait_durable: the WAL is on disk up to its last record (INFO persistence)
    net      HOST, free_port, free_ports, ping_once (has a server on host:port answered a PING?)
    resp     encode_command, RawConn (exact RESP2/RESP3 replies over a socket), parse_info, parse_info_flat
    procs    wait_ready (a new server answers PING, not -LOADING), answers, stop (SIGTERM, a grace, then SIGKILL), read_tail
    paths    REPO, ruvio_bin() (RUVIO_BIN, else <repo>/build/ruvio)
    repl     replication waits on redis-py clients: link_up, wait_link_up, wait_offset
    skipcode pytest plugin: a session whose every test was skipped exits with SKIPPED_EXIT (for ctest)

Each entry point puts tests/pylib on sys.path itself (integ/conftest.py, crash/crashlib.py, multihost/mh_fixtures.py,
jepsen/cluster.py and test_proxy.py, bench/bench.py), so
`python3 -m pytest tests/integ/...`, ctest and the scripts all find it without PYTHONPATH."""
