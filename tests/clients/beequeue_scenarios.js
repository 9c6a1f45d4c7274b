'use strict';
// bee-queue scenarios, run by tests/integ/test_node_libs.py against ruvio and redis-server.
// Usage: node beequeue_scenarios.js <port> <scenario> [host]
// Prints "ok <scenario>" and exits 0 when every expectation holds; otherwise prints the mismatch on stderr and
// exits 1. Every wait is bounded.

const { spawn } = require('child_process');
const Queue = require('bee-queue');

const { port, host, WAIT_MS, fail, expect, eq, within, run } = require('./scenario');

const RUN_MS = 50000;
const prefix = process.env.BQ_PREFIX || 'bq' + process.pid;
const queues = [];

// A queue on its own connections; isWorker false makes a producer only.
function queue(name, opts = {}) {
  const q = new Queue(name, { redis: { host, port }, prefix, removeOnSuccess: false, ...opts });
  q.on('error', (e) => fail('queue error: ' + (e && e.stack || e)));
  queues.push(q);
  return q;
}

// Resolves with [id, data] once `n` events `evt` arrived on q (e.g. 'job succeeded' over pub/sub).
function collect(q, evt, n) {
  return new Promise((resolve) => {
    const seen = [];
    q.on(evt, (id, data) => {
      seen.push([id, data]);
      if (seen.length === n) resolve(seen);
    });
  });
}

const scenarios = {
  // a producer and a worker on separate queues objects: create, save, process, the result through the job's
  // own events and through the producer's queue-wide pub/sub events, the stored job afterwards, health counts
  async basic() {
    const producer = queue('basic', { isWorker: false });
    const worker = queue('basic', { getEvents: false });
    await within(Promise.all([producer.ready(), worker.ready()]), 'queues ready');
    const queueWide = collect(producer, 'job succeeded', 3);
    const heard = [];
    producer.on('job succeeded', (id) => heard.push(id));
    const jobs = [];
    for (const x of [1, 2, 3]) jobs.push(await producer.createJob({ x }).save());
    // The worker starts once every job is saved: bee-queue routes a job's own events through the producer's map
    // of saved jobs, which a job finished before its save() resolved is not in yet (the same against Redis).
    worker.process(2, async (job) => job.data.x * 2);
    const results = await within(Promise.all(jobs.map((j) => new Promise((res, rej) => {
      j.on('succeeded', res);
      j.on('failed', rej);
    }))), 'job succeeded events').catch((e) => {
      throw new Error(e.message + ' (queue-wide events heard for jobs ' + JSON.stringify(heard) + ')');
    });
    eq(results, [2, 4, 6], 'results');
    const ev = await within(queueWide, 'queue-wide succeeded events');
    eq(ev.map(([, d]) => d).sort(), [2, 4, 6], 'queue-wide results');
    const stored = await producer.getJob(jobs[1].id);
    eq(stored.status, 'succeeded', 'stored status');
    eq(stored.data, { x: 2 }, 'stored data');
    const health = await producer.checkHealth();
    eq({ waiting: health.waiting, active: health.active, succeeded: health.succeeded, failed: health.failed },
      { waiting: 0, active: 0, succeeded: 3, failed: 0 }, 'health');
    const listed = await producer.getJobs('succeeded', { size: 10 });
    eq(listed.map((j) => j.id).sort(), jobs.map((j) => j.id).sort(), 'succeeded jobs listed');
  },

  // retries with a fixed backoff: a job that fails once then succeeds, one that exhausts its retries
  async retry() {
    const producer = queue('retry', { isWorker: false });
    // a retry with a backoff goes through the delayed set: the worker activates delayed jobs
    const worker = queue('retry', { getEvents: false, activateDelayedJobs: true });
    await within(Promise.all([producer.ready(), worker.ready()]), 'queues ready');
    const runs = {};
    worker.process(async (job) => {
      (runs[job.data.kind] = runs[job.data.kind] || []).push(Date.now());
      if (job.data.kind === 'flaky' && runs.flaky.length < 2) throw new Error('flaky once');
      if (job.data.kind === 'broken') throw new Error('always broken');
      return 'fine';
    });
    const retrying = collect(producer, 'job retrying', 3);    // flaky once, broken twice
    const failed = collect(producer, 'job failed', 1);
    const flaky = await producer.createJob({ kind: 'flaky' }).retries(1).backoff('fixed', 300).save();
    const broken = await producer.createJob({ kind: 'broken' }).retries(2).backoff('fixed', 100).save();
    const ok = await within(new Promise((res, rej) => { flaky.on('succeeded', res); flaky.on('failed', rej); }),
      'the flaky job to succeed');
    eq(ok, 'fine', 'flaky result');
    expect(runs.flaky[1] - runs.flaky[0] >= 250, 'retry after ' + (runs.flaky[1] - runs.flaky[0]) + ' ms');
    const [[fid, ferr]] = await within(failed, 'the broken job to fail');
    eq(fid, broken.id, 'failed job id');
    eq(ferr.message, 'always broken', 'failure reason');
    const r = await within(retrying, 'retrying events');
    eq(r.map(([id]) => id).sort(), [flaky.id, broken.id, broken.id].sort(), 'retrying job ids');
    eq(runs.broken.length, 3, 'broken runs');
    const stored = await producer.getJob(broken.id);
    eq(stored.status, 'failed', 'broken status');
    eq(stored.options.retries, 0, 'retries left');
    const health = await producer.checkHealth();
    eq([health.succeeded, health.failed, health.waiting, health.active], [1, 1, 0, 0], 'health');
  },

  // delayed jobs (activateDelayedJobs), job progress, removal
  async delayed() {
    const worker = queue('delayed', { activateDelayedJobs: true });
    await within(worker.ready(), 'queue ready');
    const DELAY = 1200;
    const start = Date.now();
    worker.process(async (job) => {
      job.reportProgress(50);
      return Date.now();
    });
    const job = await worker.createJob({ d: 1 }).delayUntil(start + DELAY).save();
    const progress = new Promise((res) => job.on('progress', res));
    eq((await worker.checkHealth()).delayed, 1, 'delayed count');
    const ranAt = await within(new Promise((res, rej) => { job.on('succeeded', res); job.on('failed', rej); }),
      'the delayed job');
    expect(ranAt - start >= DELAY - 50, 'ran ' + (ranAt - start) + ' ms after save, delay ' + DELAY);
    eq(await within(progress, 'progress'), 50, 'progress');
    await worker.removeJob(job.id);
    eq(await worker.getJob(job.id), null, 'removed job');
  },

  // a job taken by a worker process that is killed (SIGKILL) is found by another worker's stalled-job check and
  // runs again there
  async stalled() {
    const STALL = 1000;
    const producer = queue('stalled', { isWorker: false, getEvents: false });
    await within(producer.ready(), 'queue ready');
    const job = await producer.createJob({ s: 1 }).save();
    const child = spawn(process.execPath, [__filename, String(port), '_hang', host],
      { env: { ...process.env, BQ_PREFIX: prefix }, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    await within(new Promise((res, rej) => {
      child.stdout.on('data', (d) => { out += d; if (out.includes('taken')) res(); });
      child.on('exit', (code) => rej(new Error('the hanging worker exited with ' + code + ': ' + out)));
    }), 'the hanging worker to take the job');
    child.removeAllListeners('exit');
    child.kill('SIGKILL');
    const rescuer = queue('stalled', { stallInterval: STALL });
    await within(rescuer.ready(), 'rescuer ready');
    const done = collect(rescuer, 'job succeeded', 1);
    rescuer.process(async (j) => 'rescued ' + j.data.s);
    // a job is stalled once its lock went unrenewed for a whole interval: the first check marks, a later one
    // moves it back to waiting
    const deadline = Date.now() + WAIT_MS;
    let found = 0;
    while (found === 0) {
      expect(Date.now() < deadline, 'the stalled job was never found');
      await new Promise((r) => setTimeout(r, STALL / 2));
      found = await rescuer.checkStalledJobs();
    }
    eq(found, 1, 'stalled jobs found');
    const [[id, result]] = await within(done, 'the rescued job');
    eq([id, result], [job.id, 'rescued 1'], 'rescued job');
  },

  // (run by 'stalled' in a child process) take a job and never finish it
  async _hang() {
    const w = queue('stalled', { stallInterval: 1000, getEvents: false });
    await within(w.ready(), 'queue ready');
    w.process(() => { process.stdout.write('taken\n'); return new Promise(() => {}); });
    await new Promise(() => {});      // until killed (or the run deadline)
  },
};

run(scenarios, { runMs: RUN_MS, close: () => Promise.all(queues.map((q) => q.close(2000))) });
