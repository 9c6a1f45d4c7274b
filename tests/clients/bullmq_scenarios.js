'use strict';
// BullMQ queue and worker scenarios, run by tests/integ/test_node_libs.py against ruvio and redis-server.
// Usage: node bullmq_scenarios.js <port> <scenario> [host]
// Prints "ok <scenario>" and exits 0 when every expectation holds; otherwise prints the mismatch on stderr and
// exits 1. Every wait is bounded (WAIT_MS per event, and a whole-run deadline).

const { spawn } = require('child_process');
const IORedis = require('ioredis');
const { Queue, Worker, QueueEvents, FlowProducer } = require('bullmq');

const { port, host, WAIT_MS, fail, expect, eq, within, run } = require('./scenario');

const CLUSTER = process.env.BMQ_CLUSTER === '1';   // an ioredis Cluster per queue/worker, keys in one slot
const redisOpts = { maxRetriesPerRequest: null, enableOfflineQueue: true };
const clusters = [];
// Connection options (BullMQ makes its own ioredis clients), or in cluster mode an ioredis Cluster of its own
function conn() {
  if (!CLUSTER) return { host, port, ...redisOpts };
  const c = new IORedis.Cluster([{ host, port }], { redisOptions: redisOpts, enableOfflineQueue: true });
  clusters.push(c);
  return c;
}
const RUN_MS = 50000;       // the whole scenario
// in cluster mode a hash tag puts every key of the run in one slot, as BullMQ's docs ask
const prefix = process.env.BMQ_PREFIX || (CLUSTER ? '{bmq' + process.pid + '}' : 'bmq' + process.pid);

const closers = [];

function track(x) {
  closers.push(x);
  return x;
}

function queue(name) {
  return track(new Queue(name, { connection: conn(), prefix }));
}

function worker(name, fn, opts = {}) {
  const w = track(new Worker(name, fn, { connection: conn(), prefix, ...opts }));
  w.on('error', (e) => fail('worker error: ' + (e && e.stack || e)));
  return w;
}

async function events(name) {
  const qe = track(new QueueEvents(name, { connection: conn(), prefix }));
  qe.on('error', (e) => fail('queue events error: ' + (e && e.stack || e)));
  await within(qe.waitUntilReady(), 'QueueEvents ready');
  return qe;
}

// Resolves when the worker has completed (or failed, with failed: true) `n` jobs; returns them in order.
function collect(w, n, evt = 'completed') {
  return new Promise((resolve) => {
    const seen = [];
    w.on(evt, (job) => {
      seen.push(job);
      if (seen.length === n) resolve(seen);
    });
  });
}

const scenarios = {
  // add, process, the return value stored on the job, the queue's counts afterwards
  async basic() {
    const q = queue('basic');
    const w = worker('basic', async (job) => ({ sum: job.data.a + job.data.b, name: job.name }));
    const done = collect(w, 3);
    const jobs = await q.addBulk([1, 2, 3].map((i) => ({ name: 'add' + i, data: { a: i, b: 10 } })));
    const got = await within(done, 'three completed jobs');
    eq(got.map((j) => j.returnvalue.sum).sort((a, b) => a - b), [11, 12, 13], 'return values');
    const j2 = await q.getJob(jobs[1].id);
    eq(j2.returnvalue, { sum: 12, name: 'add2' }, 'stored return value');
    eq(await j2.getState(), 'completed', 'state');
    const counts = await q.getJobCounts('completed', 'waiting', 'active', 'failed');
    eq(counts, { completed: 3, waiting: 0, active: 0, failed: 0, paused: 0 }, 'job counts');
  },

  // a delayed job waits in the delayed set and runs no earlier than its delay
  async delayed() {
    const q = queue('delayed');
    const DELAY = 1500;
    const added = Date.now();
    const job = await q.add('later', { x: 1 }, { delay: DELAY });
    eq(await job.getState(), 'delayed', 'state right after add');
    eq(await q.getDelayedCount(), 1, 'delayed count');
    const w = worker('delayed', async () => Date.now());
    const [done] = await within(collect(w, 1), 'the delayed job');
    expect(done.returnvalue - added >= DELAY - 50,
      'ran ' + (done.returnvalue - added) + ' ms after add, delay ' + DELAY);
    eq(done.id, job.id, 'job id');
    eq(await q.getDelayedCount(), 0, 'delayed count after');
  },

  // jobs added with priorities run highest first (lower number = higher priority), un-prioritised ones first
  async priorities() {
    const q = queue('prio');
    await q.add('none', { n: 'none' });
    for (const [n, p] of [['p5', 5], ['p1', 1], ['p10', 10], ['p3', 3], ['p1b', 1]]) {
      await q.add(n, { n }, { priority: p });
    }
    eq(await q.getPrioritizedCount(), 5, 'prioritized count');
    const order = [];
    const w = worker('prio', async (job) => { order.push(job.data.n); }, { concurrency: 1, autorun: false });
    const done = collect(w, 6);
    w.run();
    await within(done, 'six prioritised jobs');
    eq(order, ['none', 'p1', 'p1b', 'p3', 'p5', 'p10'], 'processing order');
  },

  // a job that fails twice then succeeds (attempts 3, fixed backoff), and one that fails every attempt
  async retries() {
    const q = queue('retry');
    const BACKOFF = 300;
    const times = {};
    const w = worker('retry', async (job) => {
      (times[job.data.kind] = times[job.data.kind] || []).push(Date.now());
      if (job.data.kind === 'flaky' && job.attemptsMade < 2) throw new Error('flaky ' + job.attemptsMade);
      if (job.data.kind === 'broken') throw new Error('always broken');
      return 'fine';
    });
    const completed = collect(w, 1);
    const failed = collect(w, 4, 'failed');     // every failed attempt: flaky's two, broken's two
    const flaky = await q.add('flaky', { kind: 'flaky' }, { attempts: 3, backoff: { type: 'fixed', delay: BACKOFF } });
    const broken = await q.add('broken', { kind: 'broken' },
      { attempts: 2, backoff: { type: 'exponential', delay: BACKOFF } });
    const [c] = await within(completed, 'the flaky job to complete');
    eq(c.id, flaky.id, 'completed job');
    eq(c.returnvalue, 'fine', 'return value');
    eq(c.attemptsMade, 3, 'attempts made by the flaky job');
    eq(times.flaky.length, 3, 'flaky runs');
    for (let i = 1; i < 3; i++) {
      expect(times.flaky[i] - times.flaky[i - 1] >= BACKOFF - 50, 'retry ' + i + ' came after ' +
        (times.flaky[i] - times.flaky[i - 1]) + ' ms, backoff ' + BACKOFF);
    }
    // 'failed' is emitted on every failed attempt: flaky twice, broken twice
    await within(failed, 'failed attempts');
    const deadline = Date.now() + WAIT_MS;
    let b;
    for (;;) {
      b = await q.getJob(broken.id);
      if (await b.getState() === 'failed') break;
      expect(Date.now() < deadline, 'the broken job never reached the failed state');
      await new Promise((r) => setTimeout(r, 50));
    }
    eq(b.attemptsMade, 2, 'attempts made by the broken job');
    eq(b.failedReason, 'always broken', 'failed reason');
    expect(times.broken.length === 2, 'broken ran ' + times.broken.length + ' times');
    expect(times.broken[1] - times.broken[0] >= BACKOFF - 50, 'exponential backoff too short');
    eq(await q.getFailedCount(), 1, 'failed count');
    eq((await b.getState()), 'failed', 'broken state');
  },

  // a flow: the parent runs only after its children, and reads their return values
  async flow() {
    const flows = track(new FlowProducer({ connection: conn(), prefix }));
    const order = [];
    const cw = worker('flow-child', async (job) => { order.push(job.name); return job.data.v * 2; });
    const pw = worker('flow-parent', async (job) => {
      order.push(job.name);
      const vals = await job.getChildrenValues();
      return Object.values(vals).reduce((a, b) => a + b, 0);
    });
    cw.on('failed', (j, e) => fail('child failed: ' + e));
    pw.on('failed', (j, e) => fail('parent failed: ' + e));
    const parentDone = collect(pw, 1);
    const tree = await flows.add({
      name: 'parent', queueName: 'flow-parent', data: {},
      children: [1, 2, 3].map((v) => ({ name: 'child' + v, queueName: 'flow-child', data: { v } })),
    });
    eq(tree.children.length, 3, 'children in the tree');
    const [p] = await within(parentDone, 'the parent job');
    eq(p.id, tree.job.id, 'parent id');
    eq(p.returnvalue, 12, 'sum of the children');
    eq(order.length, 4, 'jobs run');
    eq(order[3], 'parent', 'the parent ran last');
    const deps = await (await track(new Queue('flow-parent', { connection: conn(), prefix })).getJob(p.id))
      .getDependenciesCount();
    eq(deps.processed, 3, 'processed children');
    eq(deps.unprocessed, 0, 'unprocessed children');
  },

  // QueueEvents receives completed (with the return value) and failed (with the reason) from another connection
  async events() {
    const qe = await events('ev');
    const q = queue('ev');
    const got = { completed: {}, failed: {}, added: {} };
    const allSeen = new Promise((resolve) => {
      const check = () => {
        if (Object.keys(got.completed).length === 2 && Object.keys(got.failed).length === 1) resolve();
      };
      qe.on('completed', ({ jobId, returnvalue }) => { got.completed[jobId] = returnvalue; check(); });
      qe.on('failed', ({ jobId, failedReason }) => { got.failed[jobId] = failedReason; check(); });
      qe.on('added', ({ jobId, name }) => { got.added[jobId] = name; });
    });
    worker('ev', async (job) => {
      if (job.data.bad) throw new Error('bad job ' + job.data.n);
      return { n: job.data.n };
    });
    const a = await q.add('a', { n: 1 });
    const b = await q.add('b', { n: 2, bad: true });
    const c = await q.add('c', { n: 3 });
    // waitUntilFinished rides on QueueEvents too
    eq(await within(c.waitUntilFinished(qe, WAIT_MS), 'c to finish'), { n: 3 }, 'c waitUntilFinished');
    await within(allSeen, 'completed and failed events');
    eq(got.completed[a.id], { n: 1 }, 'a completed event');
    eq(got.completed[c.id], { n: 3 }, 'c completed event');
    eq(got.failed[b.id], 'bad job 2', 'b failed event');
    eq(got.added[a.id], 'a', 'a added event');
    let rejected = null;
    try {
      await within(b.waitUntilFinished(qe, WAIT_MS), 'b to finish');
    } catch (e) {
      rejected = e.message;
    }
    eq(rejected, 'bad job 2', 'waitUntilFinished of a failed job');
  },

  // a job scheduler (every N ms, limit 3) produces jobs; then it is removed
  async scheduler() {
    const q = queue('sched');
    const w = worker('sched', async (job) => job.name);
    const done = collect(w, 3);
    await q.upsertJobScheduler('tick', { every: 300, limit: 3 }, { name: 'tick-job', data: { t: 1 } });
    eq((await q.getJobSchedulers()).map((s) => s.key), ['tick'], 'schedulers');
    const jobs = await within(done, 'three scheduled jobs');
    eq(jobs.map((j) => j.returnvalue), ['tick-job', 'tick-job', 'tick-job'], 'scheduled job names');
    eq(await q.removeJobScheduler('tick'), true, 'scheduler removed');
    eq(await q.getJobSchedulersCount(), 0, 'schedulers left');
  },

  // a worker's rate limit (2 jobs per 500 ms) spaces six jobs over at least a second
  async ratelimit() {
    const q = queue('rl');
    const times = [];
    await q.addBulk([1, 2, 3, 4, 5, 6].map((n) => ({ name: 'j', data: { n } })));
    const start = Date.now();
    const w = worker('rl', async () => { times.push(Date.now() - start); }, { limiter: { max: 2, duration: 500 } });
    await within(collect(w, 6), 'six rate-limited jobs');
    expect(times[5] >= 950, 'six jobs done in ' + times[5] + ' ms at 2 per 500 ms');
  },

  // pause holds jobs in the queue; resume lets the worker take them; the worker shows in getWorkers
  async pause() {
    const q = queue('pz');
    await q.pause();
    eq(await q.isPaused(), true, 'paused');
    const w = worker('pz', async (job) => job.data.n, { name: 'pz-worker' });
    await within(w.waitUntilReady(), 'worker ready');
    await q.add('j', { n: 1 });
    await q.add('j', { n: 2 });
    const workers = await within((async () => {
      for (;;) {
        const ws = await q.getWorkers();
        if (ws.length > 0) return ws;
        await new Promise((r) => setTimeout(r, 50));
      }
    })(), 'the worker in getWorkers');
    eq(workers.length, 1, 'workers listed');
    eq(workers[0].rawname.endsWith(':pz-worker') || workers[0].name === 'pz-worker', true,
      'worker name: ' + JSON.stringify(workers[0]));
    await new Promise((r) => setTimeout(r, 300));
    eq(await q.getJobCounts('paused', 'completed'), { paused: 2, completed: 0 }, 'counts while paused');
    const done = collect(w, 2);
    await q.resume();
    await within(done, 'jobs after resume');
    eq(await q.getCompletedCount(), 2, 'completed after resume');
  },

  // progress and logs reach QueueEvents and the job; removeOnComplete keeps the last N; clean, drain, obliterate
  async progress() {
    const qe = await events('pg');
    const q = queue('pg');
    const progress = [];
    qe.on('progress', ({ jobId, data }) => progress.push([jobId, data]));
    const w = worker('pg', async (job) => {
      await job.updateProgress(30);
      await job.log('step one');
      await job.updateProgress({ pct: 100 });
      return 'ok';
    });
    const j = await q.add('p', {}, { removeOnComplete: 2 });
    await within(j.waitUntilFinished(qe, WAIT_MS), 'the job');
    eq((await q.getJobLogs(j.id)).logs, ['step one'], 'logs');
    const deadline = Date.now() + WAIT_MS;
    while (progress.length < 2) {
      expect(Date.now() < deadline, 'progress events: ' + JSON.stringify(progress));
      await new Promise((r) => setTimeout(r, 50));
    }
    eq(progress, [[j.id, 30], [j.id, { pct: 100 }]], 'progress events');
    const done = collect(w, 4);
    for (let i = 0; i < 4; i++) await q.add('p', {}, { removeOnComplete: 2 });
    await within(done, 'four more jobs');
    eq(await q.getCompletedCount(), 2, 'completed kept (removeOnComplete: 2)');
    await w.close();
    await q.addBulk([1, 2, 3].map(() => ({ name: 'w', data: {} })));
    await q.add('d', {}, { delay: 60000 });
    eq(await q.getJobCounts('wait', 'delayed'), { wait: 3, delayed: 1 }, 'before drain');
    await q.drain(true);
    eq(await q.getJobCounts('wait', 'delayed'), { wait: 0, delayed: 0 }, 'after drain');
    const cleaned = await q.clean(0, 10, 'completed');
    eq(cleaned.length, 2, 'cleaned completed jobs');
    await q.obliterate({ force: true });
    const left = await (await q.client).keys(prefix + ':pg:*');
    eq(left.filter((k) => !k.endsWith(':events') && !k.endsWith(':meta')), [], 'keys after obliterate');
  },

  // a job whose worker process is killed while it runs is found stalled and run by another worker
  async stalled() {
    const q = queue('st');
    const j = await q.add('s', { v: 7 });
    const child = spawn(process.execPath, [__filename, String(port), '_hang', host],
      { env: { ...process.env, BMQ_PREFIX: prefix }, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    await within(new Promise((res, rej) => {
      child.stdout.on('data', (d) => { out += d; if (out.includes('taken')) res(); });
      child.on('exit', (code) => rej(new Error('the hanging worker exited with ' + code + ': ' + out)));
    }), 'the hanging worker to take the job');
    child.removeAllListeners('exit');
    child.kill('SIGKILL');
    eq(await (await q.getJob(j.id)).getState(), 'active', 'state while the dead worker holds it');
    const w = worker('st', async (job) => job.data.v * 6, { stalledInterval: 500, lockDuration: 1000 });
    const stalled = new Promise((res) => w.on('stalled', res));
    const [done] = await within(collect(w, 1), 'the stalled job to run again');
    eq([done.id, done.returnvalue], [j.id, 42], 'the rescued job');
    eq(await within(stalled, 'the stalled event'), j.id, 'stalled job id');
  },

  // (run by 'stalled' in a child process) take a job and never finish it
  async _hang() {
    const w = worker('st', () => { process.stdout.write('taken\n'); return new Promise(() => {}); },
      { lockDuration: 1000, stalledInterval: 500 });
    await within(w.waitUntilReady(), 'worker ready');
    await new Promise(() => {});      // until killed (or the run deadline)
  },

  // deduplication, promote of a delayed job, retry of a failed job
  async manage() {
    const q = queue('mg');
    const a = await q.add('a', { n: 1 }, { deduplication: { id: 'same' } });
    const b = await q.add('a', { n: 2 }, { deduplication: { id: 'same' } });
    eq(b.id, a.id, 'deduplicated job id');
    eq(await q.getDeduplicationJobId('same'), a.id, 'deduplication key');
    eq(await q.getWaitingCount(), 1, 'one job for two adds');
    const d = await q.add('d', { n: 3 }, { delay: 60000 });
    await d.promote();
    eq(await d.getState(), 'waiting', 'promoted state');
    let failOnce = true;
    const w = worker('mg', async (job) => {
      if (job.name === 'f' && failOnce) { failOnce = false; throw new Error('first time'); }
      return job.data.n;
    });
    const failed = collect(w, 1, 'failed');
    const f = await q.add('f', { n: 4 });
    await within(failed, 'the failing job');
    eq(await (await q.getJob(f.id)).getState(), 'failed', 'failed state');
    const done = collect(w, 1);
    await (await q.getJob(f.id)).retry();
    const [r] = await within(done, 'the retried job');
    eq([r.id, r.returnvalue], [f.id, 4], 'the retried job');
    const counts = await q.getJobCounts('completed', 'failed');
    eq(counts, { completed: 3, failed: 0 }, 'final counts');
  },

  // a processor that delays its own job and waits for children it adds (DelayedError, WaitingChildrenError),
  // changePriority, per-priority counts, a failed child failing its parent, global concurrency,
  // trimEvents
  async advanced() {
    const { DelayedError, WaitingChildrenError } = require('bullmq');
    const q = queue('adv');
    const cq = queue('adv-child');
    eq(await q.setGlobalConcurrency(1), 1, 'setGlobalConcurrency');
    eq(await q.getGlobalConcurrency(), 1, 'global concurrency');
    await q.add('x', {}, { priority: 4 });
    const y = await q.add('y', {}, { priority: 4 });
    await q.add('z', {}, { priority: 7 });
    eq(await q.getCountsPerPriority([4, 7, 9]), { 4: 2, 7: 1, 9: 0 }, 'counts per priority');
    await y.changePriority({ priority: 1 });
    eq(await q.getCountsPerPriority([1, 4]), { 1: 1, 4: 1 }, 'counts after changePriority');
    await q.obliterate({ force: true });
    await q.setGlobalConcurrency(1);
    const cw = worker('adv-child', async (job) => {
      if (job.data.bad) throw new Error('child broke');
      return job.data.v;
    });
    const seen = [];
    const w = worker('adv', async (job, token) => {
      seen.push(job.name + ':' + (job.data.step || 'start'));
      if (job.name === 'self-delay' && !job.data.step) {
        await job.updateData({ step: 'delayed' });
        await job.moveToDelayed(Date.now() + 300, token);
        throw new DelayedError();
      }
      if (job.name === 'parent-later' && !job.data.step) {
        await cq.add('c', { v: 5 }, { parent: { id: job.id, queue: job.queueQualifiedName } });
        await job.updateData({ step: 'waiting' });
        if (await job.moveToWaitingChildren(token)) throw new WaitingChildrenError();
      }
      if (job.name === 'parent-later') return (await job.getChildrenValues());
      return job.data.step;
    });
    const failedParent = new Promise((res) => w.on('failed', (j, e) => res([j.name, e.message])));
    const done = collect(w, 2);
    await q.add('self-delay', {});
    await q.add('parent-later', {});
    const got = await within(done, 'the delayed and the waiting-children jobs');
    const byName = Object.fromEntries(got.map((j) => [j.name, j.returnvalue]));
    eq(byName['self-delay'], 'delayed', 'self-delayed job result');
    eq(Object.values(byName['parent-later']), [5], 'children values');
    // (the parent runs again only if its child had not finished when it asked to wait)
    expect(seen.includes('self-delay:delayed'), 'steps: ' + seen);
    // a flow whose child fails with failParentOnFailure fails the parent
    const flows = track(new FlowProducer({ connection: conn(), prefix }));
    await flows.add({ name: 'doomed', queueName: 'adv', children: [
      { name: 'c', queueName: 'adv-child', data: { bad: true }, opts: { failParentOnFailure: true } }] });
    const [pname, preason] = await within(failedParent, 'the parent to fail');
    eq(pname, 'doomed', 'failed parent');
    expect(/child/.test(preason), 'parent failure reason: ' + preason);
    // trimEvents trims with MAXLEN ~: under a full stream node (100 entries) nothing goes, as in Redis
    const ioc = await q.client;
    const before = await ioc.xlen(prefix + ':adv:events');
    expect(before > 5 && before < 100, 'events: ' + before);
    await q.trimEvents(1);
    eq(await ioc.xlen(prefix + ':adv:events'), before, 'events after trimEvents(1)');
  },
};

run(scenarios, {
  runMs: RUN_MS,
  close: async () => {
    await Promise.all(closers.reverse().map((c) => c.close()));
    clusters.forEach((c) => c.disconnect());
  },
});
