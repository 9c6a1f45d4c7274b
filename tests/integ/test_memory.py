"""Memory budgets and eviction (issue 6): maxmemory policies, OBJECT FREQ/IDLETIME, INFO memory, MEMORY
subcommands, resident memory under a budget and after FLUSHALL, evictions in the WAL.

Every test starts its own server with a small budget.  Tests not marked ruvio_only also pass against Debian's
redis-server 7.0 (RUVIO_TARGET=redis): the policies behave as Redis's do."""
import glob
import os
import time

import pytest
import redis

from conftest import IS_REDIS, poll_until
from ruviotest.procs import rss_kib


def needs_jemalloc(c):
    """RSS and allocator figures are jemalloc's; sanitizer builds use libc's allocator."""
    if not IS_REDIS and not c.info("memory").get("mem_allocator", "").startswith("jemalloc"):
        pytest.skip("this build does not use jemalloc (sanitizer build)")

OOM = "OOM command not allowed when used memory > 'maxmemory'."
ERR_NO_LFU = ("ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that "
              "when switching between policies at runtime LRU and LFU data will take some time to adjust.")
ERR_LFU_IDLE = ("ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when "
                "switching between policies at runtime LRU and LFU data will take some time to adjust.")
VAL = b"v" * 1000


def fill(c, prefix, n, ttl=None, start=0, batch=200):
    """SET prefix<i> for i in [start, start+n) in pipelined batches; returns the number of OOM replies."""
    ooms = 0
    for lo in range(start, start + n, batch):
        p = c.pipeline(transaction=False)
        for i in range(lo, min(lo + batch, start + n)):
            p.set("%s%d" % (prefix, i), VAL, ex=ttl)
        for res in p.execute(raise_on_error=False):
            if isinstance(res, redis.ResponseError):
                assert "OOM" in str(res), res
                ooms += 1
    return ooms


def exist_count(c, keys):
    p = c.pipeline(transaction=False)
    for k in keys:
        p.exists(k)
    return sum(p.execute())


def until_oom(raw, n=200):
    """SET small keys until refused (the last accepted write may have left a little room, and idle
    connection buffers shrink); the reply that ended it."""
    for i in range(n):
        res = raw.cmd("SET", "probe%d" % i, VAL)
        if res != "OK":
            return res
    return res


def until_oom_queued(raw, n=200):
    for i in range(n):
        res = raw.cmd("SET", "probe%d" % i, VAL)
        if res != "QUEUED":
            return res
    return res


def used(c):
    return int(c.info("memory")["used_memory"])


# ---------------------------------------------------------------------------------------------------- policies

def test_noeviction_refuses_writes_but_reads_and_deletes_work(start_server):
    srv = start_server("--maxmemory", "3mb", "--maxmemory-policy", "noeviction")
    c = srv.client()
    assert fill(c, "k", 6000) > 0            # 6 MB of writes against a 3 MB budget
    raw = srv.raw()
    assert until_oom(raw) == OOM
    assert raw.cmd("INCR", "counter") == OOM
    assert raw.cmd("GET", "k0") == VAL
    assert raw.cmd("EXISTS", "k1") == 1
    assert int(c.info("stats")["evicted_keys"]) == 0
    # inside MULTI a refused command aborts the transaction
    assert raw.cmd("MULTI") == "OK"
    assert until_oom_queued(raw) == OOM
    assert raw.cmd("EXEC").startswith("EXECABORT")
    # deleting makes room again
    keys = ["k%d" % i for i in range(3000)]
    for i in range(0, len(keys), 500):
        c.delete(*keys[i:i + 500])
    poll_until(lambda: raw.cmd("SET", "new", "x") == "OK", timeout=5, what="SET after deletes")
    raw.close()


def test_exec_of_a_write_transaction_is_refused_over_budget(start_server):
    srv = start_server("--maxmemory-policy", "noeviction")
    txn = srv.raw()
    assert txn.cmd("MULTI") == "OK"
    assert txn.cmd("SET", "a", "1") == "QUEUED"          # queued while there was no budget
    c = srv.client()
    fill(c, "k", 4000)
    c.config_set("maxmemory", "2mb")                     # now far over it
    assert txn.cmd("EXEC") == "EXECABORT Transaction discarded because of: " + OOM
    assert txn.cmd("GET", "a") is None
    # while over budget nothing is queued (queues grow memory too); plain reads work
    assert txn.cmd("MULTI") == "OK"
    assert txn.cmd("GET", "k0") == OOM
    assert txn.cmd("EXEC").startswith("EXECABORT")
    assert txn.cmd("GET", "k0") == VAL
    txn.close()


def test_allkeys_lru_keeps_a_hot_set_that_fits(start_server):
    # 20 MB budget, a 2 MB hot set read after every batch, 60 MB of other writes
    srv = start_server("--maxmemory", "20mb", "--maxmemory-policy", "allkeys-lru", "--maxmemory-samples", "10")
    c = srv.client()
    hot = ["hot%d" % i for i in range(2000)]
    fill(c, "hot", 2000)
    p = c.pipeline(transaction=False)
    for lo in range(0, 60000, 1500):
        assert fill(c, "cold", 1500, start=lo) == 0
        for k in hot:
            p.get(k)
        p.execute()
        time.sleep(0.12)                      # spread the load over several seconds of the LRU clock
    assert int(c.info("stats")["evicted_keys"]) > 30000
    assert exist_count(c, hot) >= 0.97 * len(hot)
    assert exist_count(c, ["cold%d" % i for i in range(5000)]) < 500   # the oldest writes went first


def test_allkeys_lfu_keeps_frequently_used_keys(start_server):
    srv = start_server("--maxmemory", "10mb", "--maxmemory-policy", "allkeys-lfu", "--maxmemory-samples", "10")
    c = srv.client()
    freq = ["f%d" % i for i in range(1500)]
    fill(c, "f", 1500)
    p = c.pipeline(transaction=False)
    for _ in range(20):
        for k in freq:
            p.get(k)
        p.execute()
    assert fill(c, "once", 30000) == 0
    assert int(c.info("stats")["evicted_keys"]) > 15000
    assert exist_count(c, freq) >= 0.95 * len(freq)


def test_allkeys_random_evicts_and_never_refuses(start_server):
    srv = start_server("--maxmemory", "4mb", "--maxmemory-policy", "allkeys-random")
    c = srv.client()
    assert fill(c, "k", 12000) == 0
    assert 0 < c.dbsize() < 12000
    poll_until(lambda: int(c.info("stats")["evicted_keys"]) == 12000 - c.dbsize(), timeout=5,
               what="evicted_keys to match the missing keys")


@pytest.mark.parametrize("policy", ["volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl"])
def test_volatile_policies_evict_only_keys_with_a_ttl(start_server, policy):
    srv = start_server("--maxmemory", "5mb", "--maxmemory-policy", policy)
    c = srv.client()
    assert fill(c, "perm", 1500) == 0
    assert fill(c, "tmp", 6000, ttl=1000) == 0       # over budget: only these go
    assert exist_count(c, ["perm%d" % i for i in range(1500)]) == 1500
    assert exist_count(c, ["tmp%d" % i for i in range(6000)]) < 6000
    # once nothing with a TTL is left, writes are refused
    ooms = fill(c, "perm", 6000, start=1500)
    assert ooms > 0
    assert exist_count(c, ["tmp%d" % i for i in range(6000)]) == 0
    assert until_oom(srv.raw()) == OOM


def test_volatile_ttl_evicts_the_soonest_deadlines_first(start_server):
    srv = start_server("--maxmemory", "5mb", "--maxmemory-policy", "volatile-ttl", "--maxmemory-samples", "10")
    c = srv.client()
    n = 3000
    p = c.pipeline(transaction=False)
    for i in range(n):
        p.set("t%d" % i, VAL, ex=1000 + 10 * i)   # t0 expires first
    p.execute()
    fill(c, "perm", 2500)
    gone = [i for i in range(n) if not c.exists("t%d" % i)]
    assert len(gone) > 500
    kept = [i for i in range(n) if i not in set(gone)]
    assert sum(gone) / len(gone) < sum(kept) / len(kept) - n / 4
    assert sum(1 for i in gone if i >= n // 2) < len(gone) / 4


# ---------------------------------------------------------------------------------------------------- OBJECT

def test_object_freq_and_idletime_follow_the_policy(start_server):
    srv = start_server()
    raw = srv.raw()
    # the access clock counts whole seconds (as Redis's LRU clock), so a second boundary may fall between SET and
    # IDLETIME (1): of three tries, one within a second must read 0
    idle = []
    for _ in range(3):
        raw.cmd("SET", "k", "v")
        idle.append(raw.cmd("OBJECT", "IDLETIME", "k"))
    assert 0 in idle and set(idle) <= {0, 1}, idle
    assert raw.cmd("OBJECT", "FREQ", "k") == ERR_NO_LFU
    assert raw.cmd("OBJECT", "FREQ", "missing") is None
    assert raw.cmd("CONFIG", "SET", "maxmemory-policy", "allkeys-lfu") == "OK"
    raw.cmd("SET", "k2", "v")
    f0 = raw.cmd("OBJECT", "FREQ", "k2")
    assert 0 <= f0 <= 255
    for _ in range(100):
        raw.cmd("GET", "k2")
    f1 = raw.cmd("OBJECT", "FREQ", "k2")
    assert f1 > f0
    assert raw.cmd("OBJECT", "IDLETIME", "k2") == ERR_LFU_IDLE
    assert raw.cmd("CONFIG", "SET", "maxmemory-policy", "volatile-lru") == "OK"
    assert raw.cmd("OBJECT", "FREQ", "k2") == ERR_NO_LFU
    raw.close()


def test_idletime_grows_and_access_resets_it(start_server):
    srv = start_server()
    c = srv.client()
    c.set("k", "v")
    time.sleep(2.1)
    assert c.object("idletime", "k") >= 2
    c.get("k")
    assert c.object("idletime", "k") <= 1


def test_restore_freq_under_lfu(start_server):
    srv = start_server("--maxmemory-policy", "allkeys-lfu")
    c = srv.client()
    c.set("k", "v")
    dump = c.dump("k")
    c.restore("k2", 0, dump, frequency=100)
    assert c.object("freq", "k2") == 100


# ---------------------------------------------------------------------------------------------------- config

def test_config_set_policy_and_knobs(start_server):
    srv = start_server()
    c = srv.client()
    for k, v in [("maxmemory-policy", "allkeys-lru"), ("maxmemory-samples", "7"), ("maxmemory", "12345678"),
                 ("maxmemory-eviction-tenacity", "20"), ("lfu-log-factor", "5"), ("lfu-decay-time", "2")]:
        assert c.config_set(k, v)
        assert c.config_get(k)[k] == v
    c.config_set("maxmemory-policy", "VOLATILE-TTL")
    assert c.config_get("maxmemory-policy")["maxmemory-policy"] == "volatile-ttl"
    with pytest.raises(redis.ResponseError, match="maxmemory-policy"):
        c.config_set("maxmemory-policy", "sometimes")
    with pytest.raises(redis.ResponseError):
        c.config_set("maxmemory-samples", "0")
    assert c.info("memory")["maxmemory_policy"] == "volatile-ttl"


def test_budget_applies_live(start_server):
    srv = start_server()
    c = srv.client()
    assert fill(c, "k", 5000) == 0
    c.config_set("maxmemory-policy", "allkeys-random")
    c.config_set("maxmemory", "2mb")
    c.set("trigger", "1")
    assert c.dbsize() < 5000
    # the first write evicts for a bounded slice; the timer finishes the job
    poll_until(lambda: used(c) < 3 * 1024 * 1024, timeout=5, what="eviction down to the budget")


@pytest.mark.ruvio_only
def test_eviction_runs_in_slices_and_never_stalls_the_shard(start_server):
    # 200k small keys, then a budget of 1 MB: hundreds of milliseconds of eviction in one go, done in
    # 500 us slices by the timer while another client's PINGs keep being answered promptly
    srv = start_server("--maxmemory-policy", "allkeys-lru")
    c = srv.client()
    for lo in range(0, 200000, 2000):
        p = c.pipeline(transaction=False)
        for i in range(lo, lo + 2000):
            p.set("k%d" % i, "v" * 50)
        p.execute()
    other = srv.client()
    c.config_set("maxmemory", "1mb")
    worst = 0.0
    deadline = time.monotonic() + 30
    while other.dbsize() > 20000 and time.monotonic() < deadline:
        t0 = time.monotonic()
        assert other.ping()
        worst = max(worst, time.monotonic() - t0)
    assert other.dbsize() <= 20000, "eviction did not finish"
    assert worst < 0.15, worst
    assert int(other.info("stats")["evicted_keys"]) >= 180000


@pytest.mark.ruvio_only
def test_max_shard_bytes_and_split_maxmemory(start_server):
    srv = start_server("--max_shard_bytes", "3mb")
    c = srv.client()
    assert fill(c, "k", 6000) > 0
    assert until_oom(srv.raw()) == OOM
    m = c.info("memory")
    assert int(m["shard_maxmemory"]) == 3 * 1024 * 1024
    assert int(m["max_shard_bytes"]) == 3 * 1024 * 1024
    srv2 = start_server("--shards", "2", "--maxmemory", "8mb")
    m2 = srv2.client().info("memory")
    assert int(m2["shard_maxmemory"]) == 4 * 1024 * 1024
    assert int(m2["maxmemory"]) == 8 * 1024 * 1024


@pytest.mark.ruvio_only
def test_max_process_bytes_counts_every_shard(start_server):
    srv = start_server("--shards", "2", "--max_process_bytes", "4mb")
    c0 = srv.client()
    c1 = srv.client(port=srv.port + 1)

    def fill_own(c, shard, n):
        # keys that hash to this shard: let the server answer MOVED for the others and skip them
        ooms = 0
        i = 0
        done = 0
        while done < n and i < 50 * n:
            k = "s%d-%d" % (shard, i)
            i += 1
            try:
                c.set(k, VAL)
                done += 1
            except redis.ResponseError as e:
                if "MOVED" in str(e):
                    continue
                assert "OOM" in str(e)
                ooms += 1
                done += 1
        return ooms
    assert fill_own(c1, 1, 3000) == 0           # shard 1 holds ~3.4 MB
    poll_until(lambda: int(c0.info("memory")["used_memory"]) > 3 * 1024 * 1024, timeout=5,
               what="shard 1's charge published")
    assert fill_own(c0, 0, 1500) > 0           # shard 0 alone is small, the node is over


# ---------------------------------------------------------------------------------------------------- INFO, MEMORY

@pytest.mark.ruvio_only
def test_info_memory_fields(start_server):
    srv = start_server("--maxmemory", "64mb", "--maxmemory-policy", "allkeys-lru")
    c = srv.client()
    m = c.info("memory")
    for f in ("used_memory", "used_memory_human", "used_memory_rss", "used_memory_peak", "used_memory_peak_human",
              "mem_fragmentation_ratio", "allocator_allocated", "allocator_active", "allocator_resident",
              "maxmemory", "maxmemory_human", "maxmemory_policy", "mem_clients_normal", "shard_used_memory",
              "total_system_memory",
              "shard_maxmemory"):
        assert f in m, f
    assert m["maxmemory_policy"] == "allkeys-lru"
    assert m["maxmemory_human"] == "64.00M"
    before = int(m["shard_used_memory"])
    assert fill(c, "k", 5000) == 0
    m = c.info("memory")
    grew = int(m["shard_used_memory"]) - before
    assert 5000 * 1000 <= grew <= 5000 * 1300          # charged from usable sizes: 1 KiB class + entry
    assert int(m["used_memory_peak"]) >= int(m["used_memory"])
    assert int(m["mem_clients_normal"]) >= 16384


def test_memory_subcommands(start_server):
    srv = start_server()
    c = srv.client()
    fill(c, "k", 100)
    st = c.memory_stats()
    for f in ("peak.allocated", "total.allocated", "keys.count", "dataset.bytes", "allocator.allocated",
              "fragmentation"):
        assert f in st, f
    assert st["keys.count"] == 100
    assert isinstance(c.execute_command("MEMORY", "DOCTOR"), str)
    assert c.memory_purge()
    if c.info("memory").get("mem_allocator", "").startswith("jemalloc"):
        assert "jemalloc" in c.execute_command("MEMORY", "MALLOC-STATS")
    assert c.memory_usage("k1") >= 1000
    help_text = " ".join(c.execute_command("MEMORY", "HELP"))
    for sub in ("DOCTOR", "MALLOC-STATS", "PURGE", "STATS", "USAGE"):
        assert sub in help_text


# ---------------------------------------------------------------------------------------------------- RSS

@pytest.mark.ruvio_only
def test_resident_memory_stays_near_the_budget(start_server):
    # CI scale of the 100 MB / 300 MB check in tests/bench/churn.py --budget
    budget = 32 * 1024 * 1024
    srv = start_server("--maxmemory", str(budget), "--maxmemory-policy", "allkeys-lru")
    c = srv.client()
    needs_jemalloc(c)
    base = rss_kib(srv.proc.pid) * 1024
    peak = 0
    for lo in range(0, 96000, 8000):
        assert fill(c, "k", 8000, start=lo, batch=500) == 0
        peak = max(peak, rss_kib(srv.proc.pid) * 1024)
    assert int(c.info("stats")["evicted_keys"]) > 50000
    assert peak <= 1.10 * budget + base + 4 * 1024 * 1024, (peak, base)


@pytest.mark.ruvio_only
def test_rss_returns_near_baseline_after_flushall(start_server):
    srv = start_server()
    c = srv.client()
    needs_jemalloc(c)
    base = rss_kib(srv.proc.pid)
    fill(c, "k", 50000, batch=500)
    assert rss_kib(srv.proc.pid) > base + 40000
    c.flushall()
    poll_until(lambda: rss_kib(srv.proc.pid) < base + 8000, timeout=5, what="RSS back near %d kB" % base)


@pytest.mark.ruvio_only
def test_rss_returns_near_baseline_after_mass_deletion_without_traffic(start_server):
    # no FLUSHALL, no MEMORY PURGE: jemalloc's background threads return the pages (1 s decay)
    srv = start_server()
    c = srv.client()
    needs_jemalloc(c)
    base = rss_kib(srv.proc.pid)
    fill(c, "k", 50000, batch=500)
    assert rss_kib(srv.proc.pid) > base + 40000
    for lo in range(0, 50000, 1000):
        c.delete(*["k%d" % i for i in range(lo, lo + 1000)])
    assert c.dbsize() == 0
    poll_until(lambda: rss_kib(srv.proc.pid) < base + 10000, timeout=8, interval=0.2,
               what="RSS back near %d kB" % base)


# ---------------------------------------------------------------------------------------------------- WAL

@pytest.mark.ruvio_only
def test_evictions_are_logged_as_del_and_stay_gone_after_restart(start_server, tmp_path):
    args = ("--dir", str(tmp_path), "--durability", "everysec", "--maxmemory", "4mb",
            "--maxmemory-policy", "allkeys-lru")
    srv = start_server(*args)
    c = srv.client()
    assert fill(c, "k", 10000) == 0
    # the timer may still be evicting the last bit over budget: wait until nothing changes
    last = [-1]

    def settled():
        n = int(c.info("stats")["evicted_keys"])
        same = n == last[0]
        last[0] = n
        return same
    poll_until(settled, timeout=5, interval=0.3, what="eviction to settle")
    c.config_set("maxmemory", "0")     # SCAN's own reply buffers are charged too: stop evicting first
    evicted = int(c.info("stats")["evicted_keys"])
    assert evicted > 5000
    survivors = set(c.scan_iter(count=1000))
    assert len(survivors) == 10000 - evicted
    srv.stop()
    wal = b"".join(open(p, "rb").read() for p in glob.glob(str(tmp_path / "shard-0" / "wal-*.log")))
    assert wal.count(b"DEL") >= evicted
    # recovery replays the DELs (no budget this time, so nothing is evicted on the way)
    srv2 = start_server(*args[:4])
    c2 = srv2.client()
    assert set(c2.scan_iter(count=1000)) == survivors
