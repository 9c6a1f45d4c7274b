'use strict';
// What the scenario scripts of tests/integ/test_node_libs.py share: their command line, bounded waits, checks
// and the run of one scenario. A script is run as `node <script> <port> <scenario> [host]`; it prints
// "ok <scenario>" and exits 0 when every expectation holds, else names the mismatch on stderr and exits 1.

const port = Number(process.argv[2]);
const scenario = process.argv[3];
const host = process.argv[4] || '127.0.0.1';
const WAIT_MS = 20000;      // one awaited event, generous for a loaded 2-core machine

function fail(msg) {
  process.stderr.write('FAIL ' + scenario + ': ' + msg + '\n');
  process.exit(1);
}

function expect(cond, msg) {
  if (!cond) throw new Error(msg);
}

function eq(got, want, what) {
  const g = JSON.stringify(got), w = JSON.stringify(want);
  if (g !== w) throw new Error(what + ': got ' + g + ', want ' + w);
}

// A promise that rejects after ms, naming what it waited for.
function within(promise, what, ms = WAIT_MS) {
  let t;
  const timeout = new Promise((_, rej) => {
    t = setTimeout(() => rej(new Error('timed out waiting for ' + what)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(t));
}

// Run the scenario the command line names, then close(), all within runMs.
async function run(scenarios, { runMs, close }) {
  const fn = scenarios[scenario];
  if (!fn) fail('unknown scenario (have: ' + Object.keys(scenarios).join(', ') + ')');
  setTimeout(() => fail('the scenario did not finish in ' + runMs + ' ms'), runMs).unref();
  try {
    await fn();
  } catch (e) {
    fail(e && e.stack || String(e));
  }
  await within(Promise.resolve().then(close), 'close').catch((e) => fail(String(e)));
  process.stdout.write('ok ' + scenario + '\n');
  process.exit(0);
}

module.exports = { port, scenario, host, WAIT_MS, fail, expect, eq, within, run };
