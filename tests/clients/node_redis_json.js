'use strict';
// node-redis's JSON API (client.json.*, the @redis/json package inside the pinned `redis`), run by
// tests/integ/test_json_node.py against ruvio. node-redis serialises values with JSON.stringify and parses
// JSON.GET/MGET/ARRPOP (and RESP2 NUMINCRBY) replies with JSON.parse, so each expectation is what an
// application sees. Replies follow RedisJSON 2.x's documentation.
// Usage: node node_redis_json.js <port> <scenario> [host]
// Prints "ok <scenario>" and exits 0 when every expectation holds; otherwise the mismatch on stderr and exit 1.

const { createClient } = require('redis');

const { port, host, WAIT_MS, fail, eq, run } = require('./scenario');

const tag = 'nrj' + process.pid + ':';
const clients = [];

async function client(opts = {}) {
  const c = createClient({ socket: { host, port, connectTimeout: WAIT_MS }, ...opts });
  c.on('error', (e) => fail('client error: ' + (e && e.stack || e)));
  clients.push(c);
  await c.connect();
  return c;
}

// The error message of a call that must fail.
async function errorOf(what, promise) {
  try {
    await promise;
  } catch (e) {
    return e.message;
  }
  throw new Error(what + ': did not fail');
}

const DOC = { name: 'Ada', age: 36, tags: ['x', 'y'], addr: { city: 'London', zip: 'N1' }, ok: true };

const scenarios = {
  // set/get with paths (several at once), NX/XX, mGet, mSet, del/forget, type
  async documents() {
    const c = await client();
    const k = tag + 'doc';
    eq(await c.json.set(k, '$', DOC), 'OK', 'set root');
    eq(await c.json.get(k), DOC, 'get (no path)');
    eq(await c.json.get(k, { path: '$.addr.city' }), ['London'], 'get $ path');
    eq(await c.json.get(k, { path: '.addr.city' }), 'London', 'get legacy path');
    eq(await c.json.get(k, { path: ['$.name', '$.tags[1]'] }), { '$.name': ['Ada'], '$.tags[1]': ['y'] },
      'get several paths');
    eq(await c.json.get(k, { path: '$..city' }), ['London'], 'get $..');
    eq(await c.json.get(k, { path: '$.nope' }), [], 'get a missing $ path');
    eq(await c.json.get(tag + 'none'), null, 'get a missing key');
    eq(await c.json.set(k, '$.age', 37, { XX: true }), 'OK', 'set XX existing');
    eq(await c.json.set(k, '$.born', 1815, { XX: true }), null, 'set XX missing');
    eq(await c.json.set(k, '$.born', 1815, { NX: true }), 'OK', 'set NX missing');
    eq(await c.json.set(k, '$.born', 1, { NX: true }), null, 'set NX existing');
    eq(await c.json.set(k, '$.addr.geo', { lat: 51.5, lon: -0.12 }), 'OK', 'set a new member');
    eq(await c.json.get(k, { path: '$.addr' }), [{ city: 'London', zip: 'N1', geo: { lat: 51.5, lon: -0.12 } }],
      'the new member');
    const msg = await errorOf('set a new key below the root', c.json.set(tag + 'new', '$.a', 1));
    eq(msg, 'ERR new objects must be created at the root', 'new key error');

    const ka = tag + '{m}a', kb = tag + '{m}b';
    eq(await c.json.mSet([{ key: ka, path: '$', value: { v: 1, s: 'a' } },
      { key: kb, path: '$', value: { v: 2 } }]), 'OK', 'mSet');
    eq(await c.json.mGet([ka, kb, tag + '{m}none'], '$.v'), [[1], [2], null], 'mGet $');
    eq(await c.json.mGet([ka, kb], '.v'), [1, 2], 'mGet legacy');
    eq(await c.json.mGet([ka, kb], '$.s'), [['a'], []], 'mGet a path one lacks');

    eq(await c.json.type(k), 'object', 'type (root)');
    eq(await c.json.type(k, { path: '$.tags' }), ['array'], 'type $');
    eq(await c.json.type(k, { path: '$..*' }).then((t) => t.length), 13, 'type $..* count');
    eq(await c.json.type(k, { path: '.age' }), 'integer', 'type legacy');
    eq(await c.json.type(k, { path: '$.addr.geo.lat' }), ['number'], 'type number');
    eq(await c.json.del(k, { path: '$.addr.geo' }), 1, 'del a path');
    eq(await c.json.del(k, { path: '$.nope' }), 0, 'del a missing path');
    eq(await c.json.forget(k, { path: '$..zip' }), 1, 'forget $..');
    eq(await c.json.get(k, { path: '$.addr' }), [{ city: 'London' }], 'after del and forget');
    eq(await c.json.del(k), 1, 'del the key');
    eq(await c.exists(k), 0, 'key gone');
  },

  // strings, numbers, booleans, clear, merge
  async values() {
    const c = await client();
    const k = tag + 'v';
    await c.json.set(k, '$', { s: 'ab', n: 5, f: 1.5, b: false, inner: { s: 'cd', n: 1 }, arr: [1, 2] });
    eq(await c.json.strLen(k, { path: '$.s' }), [2], 'strLen $');
    eq(await c.json.strLen(k, { path: '.s' }), 2, 'strLen legacy');
    eq(await c.json.strAppend(k, 'xy', { path: '$..s' }), [4, 4], 'strAppend $..');
    eq(await c.json.strAppend(k, '!', { path: '.s' }), 5, 'strAppend legacy');
    eq(await c.json.get(k, { path: '$..s' }), ['abxy!', 'cdxy'], 'strings after append');
    eq(await c.json.numIncrBy(k, '$.n', 2), [7], 'numIncrBy $');
    eq(await c.json.numIncrBy(k, '.n', 1), 8, 'numIncrBy legacy');
    eq(await c.json.numIncrBy(k, '$..n', 0.5), [8.5, 1.5], 'numIncrBy $.. (doubles)');
    eq(await c.json.numMultBy(k, '$.f', 4), [6], 'numMultBy $');
    eq(await c.json.numIncrBy(k, '$.s', 1), [null], 'numIncrBy on a string');
    eq(await c.json.toggle(k, '$.b'), [1], 'toggle $');
    eq(await c.json.toggle(k, '$.s'), [null], 'toggle a string');
    eq(await c.json.get(k, { path: '.b' }), true, 'toggled');
    eq(await c.json.clear(k, { path: '$.arr' }), 1, 'clear an array');
    eq(await c.json.clear(k, { path: '$.*' }), 3, 'clear $.* (numbers, the object; arr already empty)');
    eq(await c.json.get(k), { s: 'abxy!', n: 0, f: 0, b: true, inner: {}, arr: [] }, 'after clear');

    const m = tag + 'merge';
    eq(await c.json.merge(m, '$', { a: { b: 1, c: [1, 2] }, d: 'x' }), 'OK', 'merge creates the key');
    eq(await c.json.merge(m, '$', { a: { b: null, c: [3], e: { f: 1 } }, d: null, g: true }), 'OK',
      'merge a patch');
    eq(await c.json.get(m), { a: { c: [3], e: { f: 1 } }, g: true }, 'after the patch');
    eq(await c.json.merge(m, '$.a.e', { f: 2, h: 3 }), 'OK', 'merge below the root');
    eq(await c.json.merge(m, '$.a.new', [1]), 'OK', 'merge a missing member');
    eq(await c.json.get(m, { path: '$.a' }), [{ c: [3], e: { f: 2, h: 3 }, new: [1] }], 'after merges');
    const msg = await errorOf('merge a new key below the root', c.json.merge(tag + 'none', '$.a', 1));
    eq(msg, 'ERR new objects must be created at the root', 'merge new key error');
    // a null at the root replaces the document with null (RFC 7386: a patch that is not an object
    // replaces the target); the key stays
    eq(await c.json.merge(m, '$', null), 'OK', 'merge null at the root');
    eq(await c.json.get(m), null, 'the document is null');
    eq(await c.json.type(m), 'null', 'its type');
    eq(await c.exists(m), 1, 'the key stays');
  },

  // arrays and objects
  async containers() {
    const c = await client();
    const k = tag + 'c';
    await c.json.set(k, '$', { a: [1, 'two', { three: 3 }], o: { x: 1, y: [true] }, e: [] });
    eq(await c.json.arrAppend(k, '$.a', 4, [5]), [5], 'arrAppend $');
    eq(await c.json.arrAppend(k, '.e', 'z'), 1, 'arrAppend legacy');
    // `..` matches a node's children before its grandchildren: a, o, e, then a's elements, ...
    eq(await c.json.arrAppend(k, '$..*', null), [6, null, 2, null, null, null, null, 2, null, null, null, 2, null,
      null], 'arrAppend $..* (nil for non-arrays)');
    await c.json.del(k, { path: '$..[?(@ == null)]' });
    eq(await c.json.arrIndex(k, '$.a', 'two'), [1], 'arrIndex $');
    eq(await c.json.arrIndex(k, '.a', { three: 3 }), 2, 'arrIndex of an object');
    eq(await c.json.arrIndex(k, '$.a', 1, { range: { start: 1 } }), [-1], 'arrIndex from 1');
    eq(await c.json.arrIndex(k, '$.a', [5], { range: { start: 0, stop: -1 } }), [4], 'arrIndex a range');
    eq(await c.json.arrInsert(k, '$.a', 1, 'ins', 9), [7], 'arrInsert $');
    eq(await c.json.arrInsert(k, '.a', -1, 'last-but-one'), 8, 'arrInsert negative');
    eq(await c.json.get(k, { path: '.a' }), [1, 'ins', 9, 'two', { three: 3 }, 4, 'last-but-one', [5]],
      'the array');
    const msg = await errorOf('arrInsert out of range', c.json.arrInsert(k, '.a', 99, 1));
    eq(msg, 'ERR index out of bounds', 'arrInsert range error');
    eq(await c.json.arrLen(k, { path: '$.a' }), [8], 'arrLen $');
    eq(await c.json.arrLen(k, { path: '$..y' }), [1], 'arrLen $..');
    eq(await c.json.arrLen(k, { path: '.e' }), 1, 'arrLen legacy');
    eq(await c.json.arrPop(k, { path: '$.a' }), [[5]], 'arrPop $ (the last)');
    eq(await c.json.arrPop(k, { path: '.a', index: 4 }), { three: 3 }, 'arrPop an object');
    eq(await c.json.arrPop(k, { path: '$.a', index: 0 }), [1], 'arrPop the first');
    eq(await c.json.arrPop(k, { path: '$.o' }), [null], 'arrPop a non-array');
    eq(await c.json.arrTrim(k, '$.a', 1, 2), [2], 'arrTrim $');
    eq(await c.json.arrTrim(k, '.e', 5, 9), 0, 'arrTrim out of range empties');
    eq(await c.json.get(k, { path: '$.a' }), [[9, 'two']], 'after pops and trim');
    eq(await c.json.objKeys(k, { path: '$.o' }), [['x', 'y']], 'objKeys $');
    eq(await c.json.objKeys(k, { path: '.o' }), ['x', 'y'], 'objKeys legacy');
    eq(await c.json.objKeys(k), ['a', 'o', 'e'], 'objKeys root');
    eq(await c.json.objKeys(k, { path: '$.a' }), [null], 'objKeys of an array');
    eq(await c.json.objLen(k, { path: '$..o' }), [2], 'objLen $..');
    eq(await c.json.objLen(k), 3, 'objLen root');
    const wt = await errorOf('objLen of an array (legacy)', c.json.objLen(k, { path: '.a' }));
    eq(wt, 'WRONGTYPE wrong type of path value - expected object but found array', 'objLen error');
  },

  // the same API over RESP3, where RedisJSON changes some shapes (TYPE's extra level, NUMINCRBY's array)
  async resp3() {
    const c = await client({ RESP: 3 });
    const k = tag + 'r3';
    eq(await c.json.set(k, '$', { n: 1, s: 'a', arr: [1], o: { p: null } }), 'OK', 'set');
    eq(await c.json.get(k, { path: '$.o' }), [{ p: null }], 'get $');
    eq(await c.json.get(k, { path: '.n' }), 1, 'get legacy');
    eq(await c.json.type(k, { path: '$.arr' }), ['array'], 'type $');
    eq(await c.json.numIncrBy(k, '$.n', 2), [3], 'numIncrBy $');
    eq(await c.json.numMultBy(k, '$.n', 1.5), [4.5], 'numMultBy $');
    eq(await c.json.strAppend(k, 'b', { path: '$.s' }), [2], 'strAppend');
    eq(await c.json.arrAppend(k, '$.arr', 2), [2], 'arrAppend');
    eq(await c.json.arrPop(k, { path: '$.arr' }), [2], 'arrPop');
    eq(await c.json.objKeys(k, { path: '$' }), [['n', 's', 'arr', 'o']], 'objKeys');
    eq(await c.json.toggle(k, '$.s'), [null], 'toggle a string');
    eq(await c.json.merge(k, '$', { o: { p: 1 } }), 'OK', 'merge');
    eq(await c.json.mGet([k], '$.o.p'), [[1]], 'mGet');
    eq(await c.json.del(k, { path: '$.o' }), 1, 'del');
    eq(await c.json.get(k), { n: 4.5, s: 'ab', arr: [1] }, 'the document (no path: the legacy root)');
    eq(await c.json.type(k), 'object', 'type (no path)');
    eq(await c.json.objLen(k), 3, 'objLen (no path)');
    eq(await c.json.arrLen(k, { path: '.arr' }), 1, 'arrLen legacy');
  },

  // JSON commands queued in MULTI: each reply transformed as outside it
  async multi() {
    const c = await client();
    const k = tag + 'mx';
    const r = await c.multi()
      .json.set(k, '$', { a: [1], n: 1 })
      .json.arrAppend(k, '$.a', 2)
      .json.numIncrBy(k, '$.n', 5)
      .json.get(k)
      .exec();
    eq(r, ['OK', [2], [6], { a: [1, 2], n: 6 }], 'MULTI replies');
  },
};

run(scenarios, { runMs: WAIT_MS, close: () => Promise.all(clients.map((c) => c.quit())) });
