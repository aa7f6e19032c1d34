// B11: a neighbour's flood. Two workspaces on one platform, as two customers would use it:
// - the flood: one workspace bulk-adds N items (100,000 × scale) at 4,500 a second, drained by
//   its two robots doing no work;
// - the neighbour: another workspace does one thing at a time on its own robot, over and over:
//   adds an item and waits until it is processed, reads a settings page (its machines, as the
//   console does), triggers a job and waits until it runs, then stops it.
// The neighbour's p99s are measured alone (quiet) and while the flood is added and drained; the
// flood's drain rate is measured with the neighbour busy and alone. The target of each p99 is at
// most 2 × its quiet value + 20 ms; the flood's drain rate alone is the figure its own robots
// reach when nobody else is busy. `--b11-connections N`: the flood adds as fast as N connections
// can, not paced (a client that opens many connections at once).
import { seedAccessTokens, itemPayload, seedApiKeys, seedMachines, seedProcess, seedQueue, seedTenant } from '../lib/fixtures.mjs';
import { platformCpuMeter, startPlatform, waitMachinesOnline } from '../lib/platform.mjs';
import { sleep } from '../lib/proc.mjs';
import { checkLoad, cpuPer, load, percentile, round, withScenario } from '../lib/scenario.mjs';
import { BULK_SIZE } from './b2-bulk.mjs';

const FLOOD_ITEMS_PER_SEC = 4500;
/**
 * The paced flood: half-size bulks, 9 requests a second over 3 connections. The load generator
 * paces each connection at a whole number of requests a second, so 4.5 requests of 1,000 items
 * over 2 connections would be 4 (4,000 items/s).
 */
const FLOOD_BULK = BULK_SIZE / 2;
const FLOOD_CONNECTIONS = 3;
/** the neighbour's pace: a try, then this pause (a person or a script, not a load generator) */
const PAUSE_MS = 100;

async function call(url, method, headers, body) {
  const res = await fetch(url, { method, headers: { 'content-type': 'application/json', ...headers }, body: body === undefined ? undefined : JSON.stringify(body) });
  const json = await res.json();
  if (!res.ok) throw new Error(`${method} ${url} answered ${res.status}: ${JSON.stringify(json)}`);
  return json.data;
}

/** Polls Postgres until `probe` returns a row (the neighbour's view of its own work). */
async function until(what, probe, timeoutMs = 30_000) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const row = await probe();
    if (row) return row;
    if (Date.now() > end) throw new Error(`B11: ${what} did not happen within ${timeoutMs} ms`);
    await sleep(2);
  }
}

/**
 * The neighbour's one-at-a-time work until `stop()` says so (at least `minTries` tries): each
 * figure from the client's clock before its request to Postgres' timestamp of the state it waits
 * for (one host).
 */
async function neighbourTries(s, n, platform, { minTries, stop }) {
  const out = { addToProcessed: [], settingsRead: [], triggerToRunning: [], stopToStopped: [] };
  // where add → processed and trigger → running go: the row written (its created_at), the item
  // taken (started_at), processed; the job's start
  const legs = { addToRow: [], rowToConsumerRow: [], consumerRowToRunning: [], runningToTaken: [], takenToProcessed: [], triggerToRow: [], rowToRunning: [] };
  out.legs = legs;
  const base = platform.baseUrl;
  for (let i = 0; i < minTries || !stop(); i++) {
    const key = { 'x-api-key': n.keys[i % n.keys.length] };
    let t0 = Date.now();
    const item = await call(`${base}/api/v1/queues/by-name/${n.queue.name}/items`, 'POST', key, { data: itemPayload(i) });
    const done = await until('the neighbour\'s item processed', async () => (await s.sql`
      select qi.created_at, qi.started_at, qi.processed_at, j.created_at as job_created_at, j.started_at as job_started_at
        from queue_items qi join jobs j on j.id = qi.job_id where qi.id = ${item.id} and qi.status = 'completed'`)[0]);
    out.addToProcessed.push(done.processed_at.getTime() - t0);
    legs.addToRow.push(done.created_at.getTime() - t0);
    // a consumer started before the item was added (it was still running) counts as at once
    legs.rowToConsumerRow.push(Math.max(0, done.job_created_at.getTime() - done.created_at.getTime()));
    legs.consumerRowToRunning.push(Math.max(0, done.job_started_at.getTime() - Math.max(done.job_created_at.getTime(), done.created_at.getTime())));
    legs.runningToTaken.push(done.started_at.getTime() - Math.max(done.job_started_at.getTime(), done.created_at.getTime()));
    legs.takenToProcessed.push(done.processed_at.getTime() - done.started_at.getTime());

    t0 = Date.now();
    await call(`${base}/api/v1/settings/machines?limit=50`, 'GET', { authorization: `Bearer ${n.tokens[i % n.tokens.length]}` });
    out.settingsRead.push(Date.now() - t0);

    t0 = Date.now();
    const job = await call(`${base}/api/v1/jobs/trigger`, 'POST', key, { process_id: n.jobProcess.id, input_data: { try: i } });
    const running = await until('the neighbour\'s job running', async () => (await s.sql`
      select created_at, started_at from jobs where id = ${job.id} and status = 'running'`)[0]);
    out.triggerToRunning.push(running.started_at.getTime() - t0);
    legs.triggerToRow.push(running.created_at.getTime() - t0);
    legs.rowToRunning.push(running.started_at.getTime() - running.created_at.getTime());
    const t1 = Date.now();
    await call(`${base}/api/v1/jobs/${job.id}/stop`, 'POST', key, {});
    const stopped = await until('the neighbour\'s job stopped', async () => (await s.sql`
      select finished_at from jobs where id = ${job.id} and status = 'stopped'`)[0]);
    out.stopToStopped.push(stopped.finished_at.getTime() - t1);
    await sleep(PAUSE_MS);
  }
  return out;
}

/** The flood: N items in bulk at FLOOD_ITEMS_PER_SEC, then until its robots completed them all. */
async function flood(run, s, platform, f, label, timeoutMs) {
  const startedAt = Date.now();
  const adding = load(run, `b11-${label}`, {
    url: platform.baseUrl, method: 'POST', paths: [`/api/v1/queues/by-name/${f.queue.name}/items/bulk`],
    body: { items: f.payloads }, keys: f.keys, amount: f.perRound / FLOOD_BULK,
    ...(run.b11Connections ? { connections: run.b11Connections } : { connections: FLOOD_CONNECTIONS, rate: FLOOD_ITEMS_PER_SEC / FLOOD_BULK }),
  }, timeoutMs);
  adding.catch(() => undefined); // awaited below
  const target = f.completedBefore + f.perRound;
  let completed = f.completedBefore;
  const end = Date.now() + timeoutMs;
  while (completed < target && Date.now() < end) {
    await sleep(200);
    const [row] = await s.sql`select coalesce(sum(n), 0)::int as n from queue_item_counts where queue_id = ${f.queue.id} and status = 'completed'`;
    completed = row.n;
  }
  const added = await adding;
  checkLoad(`B11 ${label}`, added);
  f.completedBefore = completed;
  const [{ last }] = await s.sql`select max(processed_at) as last from queue_items where queue_id = ${f.queue.id} and status = 'completed'`;
  const elapsedSec = (last.getTime() - added.startedAt) / 1000;
  return { startedAt, added, completed: completed - (target - f.perRound), complete: completed >= target, drainPerSec: f.perRound / elapsedSec, elapsedSec, addP99: added.latency.p99 };
}

export async function b11(run) {
  return withScenario(run, 'B11', async (s) => {
    const perRound = Math.max(BULK_SIZE, Math.round((100_000 * run.scale) / BULK_SIZE) * BULK_SIZE);
    const timeoutMs = Math.max(120_000, perRound * 10);
    const minTries = Math.max(5, Math.round(300 * run.scale));

    const floodTenant = await seedTenant(s.sql, 'flood');
    const floodConsumer = await seedProcess(s.sql, floodTenant.id, 'flood-consumer');
    const f = {
      keys: await seedApiKeys(s.sql, floodTenant.id, Math.ceil((2 * perRound) / FLOOD_BULK / 15) + 2),
      queue: await seedQueue(s.sql, floodTenant.id, 'flood', { consumer_process_id: floodConsumer.id, max_consumers: 2 }),
      machines: await seedMachines(s.sql, floodTenant.id, 2, { slots: 1, prefix: 'flood-machine' }),
      payloads: Array.from({ length: FLOOD_BULK }, (_, i) => itemPayload(i)),
      perRound,
      completedBefore: 0,
    };
    const neighbourTenant = await seedTenant(s.sql, 'neighbour');
    const neighbourConsumer = await seedProcess(s.sql, neighbourTenant.id, 'neighbour-consumer');
    const n = {
      // 60 adds and 30 triggers and stops a minute per key, 120 reads per token (the public limits)
      keys: await seedApiKeys(s.sql, neighbourTenant.id, 40),
      tokens: await seedAccessTokens(s.sql, neighbourTenant.id, 20),
      queue: await seedQueue(s.sql, neighbourTenant.id, 'neighbour', { consumer_process_id: neighbourConsumer.id, max_consumers: 1 }),
      jobProcess: await seedProcess(s.sql, neighbourTenant.id, 'neighbour-job'),
      // one robot with a slot for the queue's consumer and one for the triggered job
      machines: await seedMachines(s.sql, neighbourTenant.id, 1, { slots: 2, prefix: 'neighbour-machine' }),
    };
    const noWork = { item_duration: 0, duration: 0, progress_steps: 0, log_lines: 0 };
    const platform = s.track(await startPlatform(run, {
      databaseUrl: s.databaseUrl,
      redisPrefix: s.redisPrefix,
      parts: ['api', 'dispatcher', 'agents'],
      profile: run.profile,
      // each workspace's robots on a host of their own; the neighbour's job runs until it is stopped
      agents: [
        { machines: f.machines, config: { defaults: noWork } },
        { machines: n.machines, config: { defaults: noWork, processes: { 'neighbour-job': { duration: '10m' } } } },
      ],
    }));
    await waitMachinesOnline(s.sql, [...f.machines, ...n.machines].map((m) => m.id), Object.values(platform.procs));

    // untimed: connections, JIT, the key caches, the consumers' first start
    await neighbourTries(s, n, platform, { minTries: 3, stop: () => true });
    const quiet = await neighbourTries(s, n, platform, { minTries, stop: () => true });

    // the flood with the neighbour busy, measured over the same time
    let flooding = true;
    const meter = platformCpuMeter(s.sql, platform, run.redisPid);
    await meter.start();
    const floodRun = flood(run, s, platform, f, 'flood-with-neighbour', timeoutMs).finally(() => (flooding = false));
    const busy = await neighbourTries(s, n, platform, { minTries, stop: () => !flooding });
    const withNeighbour = await floodRun;
    const cpu = cpuPer(await meter.stop(), withNeighbour.completed);
    // the flood alone: what its robots drain when nobody else is busy
    const alone = await flood(run, s, platform, f, 'flood-alone', timeoutMs);

    const p99 = (xs) => round(percentile(xs, 99), 1);
    const rows = [];
    const names = {
      addToProcessed: 'neighbour: add → processed p99',
      settingsRead: 'neighbour: settings read p99',
      triggerToRunning: 'neighbour: trigger → running p99',
      stopToStopped: 'neighbour: stop → stopped p99',
    };
    for (const [k, figure] of Object.entries(names)) {
      const q = p99(quiet[k]);
      const b = p99(busy[k]);
      // judged: the three figures the issue names; stop → stopped is shown beside them
      const judged = k !== 'stopToStopped';
      rows.push({ figure: `${figure} during the flood (baseline: quiet)`, unit: 'ms', platform: b, baseline: q, ratio: q ? round(b / q, 2) : null, target: judged ? { max: round(2 * q + 20, 1) } : null, note: `p50 ${round(percentile(busy[k], 50), 1)} during, ${round(percentile(quiet[k], 50), 1)} quiet; ${busy[k].length} and ${quiet[k].length} tries` });
    }
    // where the time went, p99 of each leg (they need not add up to the p99s above)
    const legNames = {
      addToRow: 'add → item row written', rowToConsumerRow: 'item row → its consumer job created (the dispatcher)',
      consumerRowToRunning: 'consumer job created → running on the robot', runningToTaken: 'consumer running → item taken', takenToProcessed: 'taken → processed',
      triggerToRow: 'trigger → job row written', rowToRunning: 'job row → running',
    };
    for (const [k, leg] of Object.entries(legNames)) {
      rows.push({ figure: `neighbour: ${leg}, p99 during the flood (baseline: quiet)`, unit: 'ms', platform: p99(busy.legs[k]), baseline: p99(quiet.legs[k]), ratio: null, target: null });
    }
    rows.push({
      figure: 'flood: items drained/s with the neighbour busy (baseline: alone)', unit: 'items/s', platform: round(withNeighbour.drainPerSec, 0), baseline: round(alone.drainPerSec, 0),
      ratio: round(withNeighbour.drainPerSec / alone.drainPerSec, 3), target: null,
      note: `bulk add p99 ${round(withNeighbour.addP99, 0)} ms with the neighbour, ${round(alone.addP99, 0)} ms alone`,
    });
    return {
      id: 'B11',
      title: `a neighbour's flood: ${perRound.toLocaleString('en')} items in bulk ${run.b11Connections ? `over ${run.b11Connections} connections, not paced,` : `at ${FLOOD_ITEMS_PER_SEC.toLocaleString('en')}/s`} next to one-at-a-time work of another workspace`,
      rows,
      complete: withNeighbour.complete && alone.complete,
      details: { perRound, quiet, busy, withNeighbour, alone, cpu },
    };
  });
}
