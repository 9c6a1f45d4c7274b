"""Replication waits on redis-py clients (decode_responses=True): the link is up, the replica has applied
what the primary had produced."""

import redis

from .wait import wait_for


def link_up(c):
    """True when c's INFO replication says it is a replica with its link to the primary up."""
    try:
        i = c.info("replication")
    except redis.exceptions.RedisError:
        return False
    return i.get("role") == "slave" and i.get("master_link_status") == "up"


def wait_link_up(c, timeout=10, interval=0.02, what="master_link_status:up"):
    wait_for(lambda: c.info("replication").get("master_link_status") == "up", timeout=timeout,
             interval=interval, what=what)


def wait_offset(p, r, timeout=10, interval=0.02):
    """Until replica r applied everything primary p has produced so far (slave_repl_offset >= its offset)."""
    target = p.info("replication")["master_repl_offset"]
    wait_for(lambda: r.info("replication").get("slave_repl_offset", -1) >= target, timeout=timeout,
             interval=interval, what="replica offset >= %d" % target)
