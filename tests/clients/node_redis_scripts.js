'use strict';
// node-redis scripts (createClient's `scripts` option with defineScript), run by tests/integ/test_node_libs.py
// against ruvio and redis-server. node-redis sends EVALSHA (EVALSHA_RO for a read-only script) and, on a
// NOSCRIPT error, the same call again as EVAL; inside MULTI it sends EVAL the first time and EVALSHA after.
// Usage: node node_redis_scripts.js <port> <scenario> [host]
// Prints "ok <scenario>" and exits 0 when every expectation holds; otherwise the mismatch on stderr and exit 1.

const { createClient, defineScript } = require('redis');

const { port, host, WAIT_MS, fail, eq, run } = require('./scenario');

const tag = 'nrs' + process.pid + ':';
const clients = [];

const scripts = {
  // INCRBY a key and return the new value and the key's TTL (a table of integers)
  incrTtl: defineScript({
    SCRIPT: "local v = redis.call('INCRBY', KEYS[1], ARGV[1]) " +
      "redis.call('PEXPIRE', KEYS[1], ARGV[2]) return {v, redis.call('PTTL', KEYS[1]) > 0 and 1 or 0}",
    NUMBER_OF_KEYS: 1,
    parseCommand(parser, key, by, ttlMs) {
      parser.pushKey(key);
      parser.push(String(by), String(ttlMs));
    },
    transformReply: undefined,
  }),
  // read-only: sent as EVALSHA_RO (a no-writes script)
  sumOf: defineScript({
    SCRIPT: '#!lua flags=no-writes\n' +
      "local s = 0 for _, k in ipairs(KEYS) do s = s + tonumber(redis.call('GET', k) or '0') end return s",
    IS_READ_ONLY: true,
    parseCommand(parser, keys) {
      parser.push(String(keys.length));
      for (const k of keys) parser.pushKey(k);
    },
    transformReply: undefined,
  }),
  // compare-and-delete (a lock release)
  release: defineScript({
    SCRIPT: "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end",
    NUMBER_OF_KEYS: 1,
    parseCommand(parser, key, token) {
      parser.pushKey(key);
      parser.push(token);
    },
    transformReply: undefined,
  }),
  // replies of each kind: status, error, nil, nested table with a string
  kinds: defineScript({
    SCRIPT: "if ARGV[1] == 'status' then return redis.status_reply('FINE') " +
      "elseif ARGV[1] == 'error' then return redis.error_reply('MYERR custom failure') " +
      "elseif ARGV[1] == 'nil' then return nil " +
      "else return {1, 'two', {3, 'four'}, 3.99} end",
    NUMBER_OF_KEYS: 0,
    parseCommand(parser, kind) {
      parser.push(kind);
    },
    transformReply: undefined,
  }),
};

async function client(opts = {}) {
  const c = createClient({ socket: { host, port, connectTimeout: WAIT_MS }, scripts, ...opts });
  c.on('error', (e) => fail('client error: ' + (e && e.stack || e)));
  clients.push(c);
  await c.connect();
  return c;
}

async function commandCalls(c, name) {
  const m = (await c.info('commandstats')).match(new RegExp('cmdstat_' + name + ':calls=(\\d+)'));
  return m ? Number(m[1]) : 0;
}

const scenarios = {
  // NOSCRIPT then EVAL the first time, EVALSHA after; again after SCRIPT FLUSH
  async fallback() {
    const c = await client();
    const admin = await client();
    await admin.scriptFlush();
    const shas = Object.values(scripts).map((s) => s.SHA1);
    eq(await admin.scriptExists(shas), [0, 0, 0, 0], 'scripts cached before');
    const evals0 = await commandCalls(admin, 'eval');
    const key = tag + 'counter';
    eq(await c.incrTtl(key, 5, 60000), [5, 1], 'first call (EVAL fallback)');
    eq(await c.incrTtl(key, 2, 60000), [7, 1], 'second call (EVALSHA)');
    eq(await commandCalls(admin, 'eval') - evals0, 1, 'EVAL calls');
    eq(await admin.scriptExists([scripts.incrTtl.SHA1]), [1], 'incrTtl cached');
    await admin.scriptFlush();
    eq(await c.incrTtl(key, 3, 60000), [10, 1], 'call after SCRIPT FLUSH');
    eq(await commandCalls(admin, 'eval') - evals0, 2, 'EVAL calls after the flush');
    eq(await c.get(key), '10', 'the key');
  },

  // a read-only script through EVALSHA_RO (and EVAL_RO? no: node-redis falls back to plain EVAL), a lock
  // release, each kind of reply and an error reply
  async replies() {
    const c = await client();
    await c.mSet([[tag + 'a', '3'], [tag + 'b', '4']]);
    eq(await c.sumOf([tag + 'a', tag + 'b', tag + 'none']), 7, 'sumOf (first)');
    eq(await c.sumOf([tag + 'a', tag + 'b']), 7, 'sumOf (EVALSHA_RO)');
    await c.set(tag + 'lock', 'token-1');
    eq(await c.release(tag + 'lock', 'token-2'), 0, 'release with the wrong token');
    eq(await c.get(tag + 'lock'), 'token-1', 'lock kept');
    eq(await c.release(tag + 'lock', 'token-1'), 1, 'release with the right token');
    eq(await c.exists(tag + 'lock'), 0, 'lock gone');
    eq(await c.kinds('status'), 'FINE', 'status reply');
    eq(await c.kinds('nil'), null, 'nil reply');
    eq(await c.kinds('table'), [1, 'two', [3, 'four'], 3], 'table reply (3.99 truncated to an integer)');
    let err = null;
    try {
      await c.kinds('error');
    } catch (e) {
      err = e.message;
    }
    eq(err, 'MYERR custom failure', 'error reply');
    // a write inside a no-writes script is refused
    const ro = defineScript({
      SCRIPT: "#!lua flags=no-writes\nreturn redis.call('SET', KEYS[1], 'x')", NUMBER_OF_KEYS: 1,
      parseCommand(parser, key) { parser.pushKey(key); }, transformReply: undefined,
    });
    const c2 = await client({ scripts: { ro } });
    err = null;
    try {
      await c2.ro(tag + 'ro');
    } catch (e) {
      err = e.message;
    }
    if (!err || !err.startsWith('ERR Write commands are not allowed from read-only scripts')) {
      throw new Error('write in a no-writes script: ' + err);
    }
  },

  // scripts inside MULTI (EVAL first, EVALSHA for a repeat) and over RESP3
  async multi() {
    const c = await client();
    await c.scriptFlush();
    const key = tag + 'm';
    const r = await c.multi().incrTtl(key, 1, 60000).incrTtl(key, 10, 60000).kinds('status').exec();
    eq(r, [[1, 1], [11, 1], 'FINE'], 'MULTI replies');
    const c3 = await client({ RESP: 3 });
    eq(await c3.incrTtl(key, 1, 60000), [12, 1], 'RESP3 call');
    eq(await c3.kinds('table'), [1, 'two', [3, 'four'], 3], 'RESP3 table');
    eq(await c3.kinds('nil'), null, 'RESP3 nil');
  },
};

run(scenarios, { runMs: WAIT_MS, close: () => Promise.all(clients.map((c) => c.quit())) });
