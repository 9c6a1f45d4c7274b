#!/usr/bin/env node
// A Redis Cluster client run by tests/integ/test_cluster_clients.py (issue 16, "clients unchanged").
//
//   node cluster_client.js ioredis|node-redis HOST:PORT [--keys N] [--prefix P]
//
// 1. connects with the library's cluster client, replica reads on (ioredis scaleReads: 'slave', node-redis
//    useReplicas: true, both sending READONLY to replicas), writes N keys spread over the slots and reads each
//    one back (a read from a replica may lag its primary: it is retried, bounded); prints {"phase":"ready"}.
// 2. keeps writing and reading keys (retrying failed commands, as an application does) until a line "stop" on
//    stdin; the test runs CLUSTER FAILOVER meanwhile.
// 3. writes N more keys, then reads every key it ever had acknowledged, and prints {"phase":"done", ...}:
//    counts of acknowledged writes, reads, retries, stale replica reads and the keys that were lost or wrong.
// Every line on stdout is one JSON object. Exit status 0 unless the client could not be used at all.
"use strict";

const readline = require("readline");

const [, , lib, seed, ...rest] = process.argv;
const opt = { keys: 300, prefix: "cc" };
for (let i = 0; i < rest.length; i += 2) opt[rest[i].replace(/^--/, "")] = rest[i + 1];
const NKEYS = parseInt(opt.keys, 10);
const PREFIX = `${opt.prefix}:${lib}`;
const [HOST, PORT] = seed.split(":");
const RETRIES = 200;             // x RETRY_MS: a command may fail for up to ~20 s (failover, slot refresh)
const RETRY_MS = 100;
const STALE_TRIES = 100;         // a replica read is retried for up to ~5 s until it shows the write
const STALE_MS = 50;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const out = (o) => process.stdout.write(JSON.stringify(o) + "\n");
const stats = { writes: 0, reads: 0, retries: 0, stale_reads: 0, errors: [] };

function note(e) {
  stats.retries += 1;
  const m = String((e && e.message) || e).slice(0, 160);
  if (stats.errors.length < 20 && !stats.errors.includes(m)) stats.errors.push(m);
}

async function retry(what, fn) {
  let last;
  for (let i = 0; i < RETRIES; i++) {
    try {
      return await fn();
    } catch (e) {
      last = e;
      note(e);
      await sleep(RETRY_MS);
    }
  }
  throw new Error(`${what}: gave up after ${RETRIES} tries: ${last && last.message}`);
}

async function connect() {
  if (lib === "ioredis") {
    const Redis = require("ioredis");
    const c = new Redis.Cluster([{ host: HOST, port: Number(PORT) }], {
      scaleReads: "slave",
      maxRedirections: 32,
      retryDelayOnFailover: 200,
      retryDelayOnClusterDown: 200,
      retryDelayOnTryAgain: 200,
      slotsRefreshTimeout: 5000,
      clusterRetryStrategy: (times) => Math.min(100 * times, 1000),
      redisOptions: { connectTimeout: 5000, commandTimeout: 5000, maxRetriesPerRequest: 2 },
    });
    c.on("error", (e) => note(e));
    await new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error("ioredis: not ready within 20 s")), 20000);
      c.once("ready", () => { clearTimeout(t); resolve(); });
    });
    return {
      set: (k, v) => c.set(k, v),
      get: (k) => c.get(k),
      close: () => c.quit().catch(() => c.disconnect()),
    };
  }
  if (lib === "node-redis") {
    const { createCluster } = require("redis");
    const c = createCluster({
      rootNodes: [{ socket: { host: HOST, port: Number(PORT) } }],
      useReplicas: true,
      maxCommandRedirections: 32,
      defaults: { socket: { connectTimeout: 5000, reconnectStrategy: (n) => Math.min(100 * n, 1000) } },
    });
    c.on("error", (e) => note(e));
    await c.connect();
    return {
      set: (k, v) => c.set(k, v),
      get: (k) => c.get(k),
      close: () => c.quit().catch(() => c.disconnect()),
    };
  }
  throw new Error(`unknown client library ${lib} (ioredis or node-redis)`);
}

const written = new Map();       // every acknowledged write: key -> value

async function write(c, k, v) {
  const r = await retry(`SET ${k}`, () => c.set(k, v));
  if (r !== "OK") throw new Error(`SET ${k}: ${r}`);
  written.set(k, v);
  stats.writes += 1;
}

// a read that may go to a replica: retried while it shows an older value (replication is asynchronous)
async function read(c, k) {
  let v;
  for (let i = 0; i < STALE_TRIES; i++) {
    v = await retry(`GET ${k}`, () => c.get(k));
    stats.reads += 1;
    if (v === written.get(k)) return v;
    stats.stale_reads += 1;
    await sleep(STALE_MS);
  }
  return v;
}

async function main() {
  let stop = false;
  const rl = readline.createInterface({ input: process.stdin });
  rl.on("line", (l) => { if (l.trim() === "stop") stop = true; });
  rl.on("close", () => { stop = true; });

  const c = await connect();
  for (let i = 0; i < NKEYS; i++) await write(c, `${PREFIX}:a:${i}`, `v${i}`);
  for (let i = 0; i < NKEYS; i++) await read(c, `${PREFIX}:a:${i}`);
  out({ phase: "ready", lib, ...stats });

  // under the failover: overwrite the first keys round and round, read each back
  let n = 0;
  while (!stop) {
    const k = `${PREFIX}:a:${n % NKEYS}`;
    await write(c, k, `w${n}`);
    await read(c, k);
    n += 1;
  }
  const during = n;
  for (let i = 0; i < NKEYS; i++) await write(c, `${PREFIX}:b:${i}`, `v${i}`);
  const lost = [];
  const wrong = [];
  for (const [k, v] of written) {
    const got = await read(c, k);
    if (got === null) lost.push(k);
    else if (got !== v) wrong.push(`${k}=${got} (wrote ${v})`);
  }
  await c.close();
  out({ phase: "done", lib, during, keys: written.size, lost: lost.slice(0, 20), lost_count: lost.length,
        wrong: wrong.slice(0, 20), wrong_count: wrong.length, ...stats });
  rl.close();
}

main().then(() => process.exit(0), (e) => {
  out({ phase: "error", lib, error: String((e && e.stack) || e), ...stats });
  process.exit(1);
});
