// B4: latency on an idle platform, one try at a time: POST /jobs/trigger → the job is `running`
// (its started_at), then POST /jobs/{id}/stop → the job is `stopped` (its finished_at). Times
// are taken from the client's clock before each request and Postgres' timestamps (one host).
// Baseline: raw BullMQ Queue.add → a waiting Worker starts it, and Redis PUBLISH → heard.
import { seedApiKeys, seedMachines, seedProcess, seedTenant } from '../lib/fixtures.mjs';
import { startPlatform, waitMachinesOnline } from '../lib/platform.mjs';
import { sleep } from '../lib/proc.mjs';
import { percentile, ratio, raw, round, withScenario } from '../lib/scenario.mjs';
import { core } from '../lib/core.mjs';

const MACHINES = 2;

async function waitJob(sql, id, status, timeoutMs) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const [job] = await sql`select status, started_at, finished_at from jobs where id = ${id}`;
    if (job?.status === status) return job;
    if (job && status === 'running' && job.status !== 'pending') throw new Error(`job ${id} became ${job.status}, not running`);
    if (Date.now() > until) throw new Error(`job ${id} did not become ${status} within ${timeoutMs} ms (it is ${job?.status})`);
    await sleep(2);
  }
}

async function post(url, key, body) {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': key }, body: JSON.stringify(body) });
  const json = await res.json();
  if (!res.ok) throw new Error(`${url} answered ${res.status}: ${JSON.stringify(json)}`);
  return json.data;
}

export async function b4(run) {
  return withScenario(run, 'B4', async (s) => {
    const tries = Math.max(5, Math.round(200 * run.scale));
    const baseline = await raw(run, 'b4-raw-latency', 'bullmq-latency.mjs', { redisUrl: run.redisUrl, prefix: `${s.redisPrefix}:raw`, tries });

    const tenant = await seedTenant(s.sql);
    // 30 triggers and 30 stops per minute per key (the public rate-limit table)
    const keys = await seedApiKeys(s.sql, tenant.id, Math.ceil(tries / 20) + 2);
    const proc = await seedProcess(s.sql, tenant.id, 'bench-long');
    const machines = await seedMachines(s.sql, tenant.id, MACHINES, { slots: 1 });
    const platform = s.track(await startPlatform(run, {
      databaseUrl: s.databaseUrl,
      redisPrefix: s.redisPrefix,
      parts: ['api', 'dispatcher', 'agents'],
      profile: run.profile,
      // a job runs until it is stopped
      agents: { machines, config: { defaults: { duration: '10m', progress_steps: 0, log_lines: 0 } } },
    }));
    await waitMachinesOnline(s.sql, machines.map((m) => m.id), Object.values(platform.procs));

    const toRunning = [];
    const toStopped = [];
    const measured = [];
    // two untimed tries first (connections, JIT), then the measured ones
    for (let i = 0; i < tries + 2; i++) {
      const key = keys[i % keys.length];
      const t0 = Date.now();
      const job = await post(`${platform.baseUrl}/api/v1/jobs/trigger`, key, { process_id: proc.id, input_data: { try: i } });
      const running = await waitJob(s.sql, job.id, 'running', 10_000);
      const t1 = Date.now();
      await post(`${platform.baseUrl}/api/v1/jobs/${job.id}/stop`, key, {});
      const stopped = await waitJob(s.sql, job.id, 'stopped', 10_000);
      if (i >= 2) {
        measured.push({ id: job.id, t0 });
        toRunning.push(running.started_at.getTime() - t0);
        toStopped.push(stopped.finished_at.getTime() - t1);
      }
      // the machine is free again before the next try (idle platform)
      await sleep(20);
    }
    const p = (arr, q) => round(percentile(arr, q), 1);
    const legs = await triggerLegs(s.sql, run.redisUrl, s.redisPrefix, measured);
    const rows = [
      { figure: 'trigger → running p50', unit: 'ms', platform: p(toRunning, 50), baseline: round(baseline.addToStart.p50, 2), target: { max: 15 } },
      { figure: 'trigger → running p99', unit: 'ms', platform: p(toRunning, 99), baseline: round(baseline.addToStart.p99, 2), target: { max: 50 } },
      { figure: 'stop → stopped p50', unit: 'ms', platform: p(toStopped, 50), baseline: round(baseline.publishToHeard.p50, 2), target: { max: 100 } },
      { figure: 'stop → stopped p99', unit: 'ms', platform: p(toStopped, 99), baseline: round(baseline.publishToHeard.p99, 2), target: { max: 250 } },
    ].map((r) => ({ ...r, ratio: ratio(r.platform, r.baseline) }));
    // where trigger → running goes, leg by leg (p50 of each; they need not add up to the p50 above)
    for (const [leg, values] of Object.entries(legs)) rows.push({ figure: `trigger → running, ${leg}, p50`, unit: 'ms', platform: p(values, 50), baseline: null, ratio: null, target: null });
    return {
      id: 'B4',
      title: `idle-platform latency, ${tries} tries`,
      rows,
      details: { tries, baseline, toRunning, toStopped, legs },
    };
  });
}

/**
 * The legs of trigger → running, from the clocks of one host: the client's before the request,
 * the job row's `created_at` (the trigger's transaction began: request, key, limits and checks
 * done), the machine queue's BullMQ job (`timestamp`: the relay put it there; `processedOn`: the
 * API's worker took it) and `started_at` (the start statement ran).
 */
async function triggerLegs(sql, redisUrl, prefix, measured) {
  const rows = await sql`select id, machine_id, created_at, started_at from jobs where id = any(${measured.map((m) => m.id)})`;
  const byId = new Map(rows.map((r) => [r.id, r]));
  const dispatch = core.createBullDispatch({ redis: redisUrl, prefix });
  const legs = { 'request → transaction begins': [], 'transaction → on the machine queue': [], 'queue → the API\'s worker takes it': [], 'worker → start statement': [] };
  try {
    for (const m of measured) {
      const row = byId.get(m.id);
      const bull = row && (await dispatch.machineQueue(row.machine_id).getJob(core.bullJobId(m.id)));
      if (!bull?.processedOn) continue;
      legs['request → transaction begins'].push(row.created_at.getTime() - m.t0);
      legs['transaction → on the machine queue'].push(bull.timestamp - row.created_at.getTime());
      legs['queue → the API\'s worker takes it'].push(bull.processedOn - bull.timestamp);
      legs['worker → start statement'].push(row.started_at.getTime() - bull.processedOn);
    }
  } finally {
    await dispatch.close();
  }
  return legs;
}
