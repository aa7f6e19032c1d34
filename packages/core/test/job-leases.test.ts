import { randomUUID } from 'node:crypto';
import type { Sql } from '@svc/core';
import { acknowledgeRun, giveUpMachineJobs, machineLeft, renewJobLeases, renewManyJobLeases, startJob, sweepOfflineMachines } from '@svc/core/internals';
import { seedJob, seedMachine, seedProcess, seedQueue, seedTenant, databaseSuite } from '@svc/testing';

/**
 * A run's lease and its start's fencing (docs/decisions/postgres-outages.md), on a real Postgres;
 * the lease at work with real processes: apps/dispatcher/test/fault-stalled-run.test.ts.
 */
const db = databaseSuite();
let sql: Sql;
let tenantId: string;
let processId: string;

beforeAll(async () => {
  sql = db.sql;
  tenantId = (await seedTenant(sql)).id;
  processId = (await seedProcess(sql, tenantId)).id;
});

async function job(id: string) {
  const [row] = await sql`select status, attempt, error_message, lease_expires_at, lease_holder from jobs where id = ${id}`;
  return row!;
}

describe('startJob', () => {
  it('asked again by the same delivery after a lost answer, returns the run it started', async () => {
    const m = (await seedMachine(sql, tenantId)).row.id;
    const pending = await seedJob(sql, tenantId, { process_id: processId, machine_id: m });
    const holder = randomUUID();
    // leases are compared with the clock before the writes: the test may run slowly after them
    const writtenAfter = Date.now();
    const first = await startJob(sql, pending.id, m, { holder, leaseSeconds: 30 });
    const again = await startJob(sql, pending.id, m, { holder, leaseSeconds: 30 });
    expect('started' in first && 'started' in again).toBe(true);
    if (!('started' in first) || !('started' in again)) return;
    expect(again.started.attempt).toBe(first.started.attempt);
    expect(again.started.started_at).toEqual(first.started.started_at);
    // another delivery (a duplicate) finds it running and does nothing
    expect(await startJob(sql, pending.id, m, { holder: randomUUID(), leaseSeconds: 30 })).toEqual({ skipped: 'not_pending', status: 'running' });
    expect(await startJob(sql, pending.id, m)).toEqual({ skipped: 'not_pending', status: 'running' });
    const row = await job(pending.id);
    expect(row.attempt).toBe(first.started.attempt);
    expect(row.lease_holder).toBe(holder);
    expect(row.lease_expires_at.getTime()).toBeGreaterThanOrEqual(writtenAfter + 30_000 - 1000);
  });
});

describe('renewJobLeases', () => {
  it('extends the lease of live runs only, answers their stops, and leaves out what the run no longer owns', async () => {
    const m = (await seedMachine(sql, tenantId)).row.id;
    const started = await Promise.all([1, 2, 3].map(async () => {
      const j = await seedJob(sql, tenantId, { process_id: processId, machine_id: m });
      const res = await startJob(sql, j.id, m, { holder: randomUUID(), leaseSeconds: 1 });
      return 'started' in res ? res.started : null;
    }));
    const [alive, silent, ended] = started as [NonNullable<(typeof started)[0]>, NonNullable<(typeof started)[0]>, NonNullable<(typeof started)[0]>];
    await sql`update jobs set stop_requested = true where id = ${alive.id}`;
    await sql`update jobs set status = 'failed', finished_at = now() where id = ${ended.id}`;
    const before = (await job(silent.id)).lease_expires_at.getTime();
    const renewedAfter = Date.now();
    const owned = await renewJobLeases(sql, m, [
      { id: alive.id, attempt: alive.attempt, alive: true },
      { id: silent.id, attempt: silent.attempt, alive: false },
      { id: ended.id, attempt: ended.attempt, alive: true },
    ], 60);
    expect(owned.sort((a, b) => (a.id < b.id ? -1 : 1))).toEqual([{ id: alive.id, stop_requested: true, queue_id: null }, { id: silent.id, stop_requested: false, queue_id: null }].sort((a, b) => (a.id < b.id ? -1 : 1)));
    expect((await job(alive.id)).lease_expires_at.getTime()).toBeGreaterThanOrEqual(renewedAfter + 60_000 - 1000);
    expect((await job(silent.id)).lease_expires_at.getTime()).toBe(before);
    // a stale token renews nothing
    expect(await renewJobLeases(sql, m, [{ id: alive.id, attempt: alive.attempt + 1, alive: true }], 60)).toEqual([]);
  });
});

describe('renewManyJobLeases (the heartbeats of many robots of one API process in one statement)', () => {
  it('renews each machine\'s own live runs, answers each heartbeat with its own runs, in order', async () => {
    const start = async (m: string) => {
      const j = await seedJob(sql, tenantId, { process_id: processId, machine_id: m });
      const res = await startJob(sql, j.id, m, { holder: randomUUID(), leaseSeconds: 1 });
      if (!('started' in res)) throw new Error('not started');
      return res.started;
    };
    const a = (await seedMachine(sql, tenantId)).row.id;
    const b = (await seedMachine(sql, tenantId)).row.id;
    const [a1, a2, b1] = [await start(a), await start(a), await start(b)];
    await sql`update jobs set stop_requested = true where id = ${b1.id}`;
    const silentBefore = (await job(a2.id)).lease_expires_at.getTime();
    const renewedAfter = Date.now();
    const answers = await renewManyJobLeases(sql, [
      // machine a lists its two runs, one silent, and b's run (not its own)
      { machineId: a, leaseSeconds: 60, runs: [{ id: a1.id, attempt: a1.attempt, alive: true }, { id: a2.id, attempt: a2.attempt, alive: false }, { id: b1.id, attempt: b1.attempt, alive: true }] },
      // b's heartbeat, with a stale token for a's run
      { machineId: b, leaseSeconds: 60, runs: [{ id: b1.id, attempt: b1.attempt, alive: true }, { id: a1.id, attempt: a1.attempt + 1, alive: true }] },
      { machineId: b, leaseSeconds: 60, runs: [] },
      // a's second heartbeat of the batch says its silent run is alive after all
      { machineId: a, leaseSeconds: 60, runs: [{ id: a2.id, attempt: a2.attempt, alive: true }] },
    ]);
    expect(answers).toEqual([
      [{ id: a1.id, stop_requested: false, queue_id: null }, { id: a2.id, stop_requested: false, queue_id: null }],
      [{ id: b1.id, stop_requested: true, queue_id: null }],
      [],
      [{ id: a2.id, stop_requested: false, queue_id: null }],
    ]);
    for (const id of [a1.id, a2.id, b1.id]) expect((await job(id)).lease_expires_at.getTime()).toBeGreaterThanOrEqual(renewedAfter + 60_000 - 1000);
    expect(silentBefore).toBeLessThan(renewedAfter + 60_000 - 1000);
    // alone, the silent run's lease is left to lapse
    const before = (await job(a2.id)).lease_expires_at.getTime();
    expect(await renewManyJobLeases(sql, [{ machineId: a, leaseSeconds: 120, runs: [{ id: a2.id, attempt: a2.attempt, alive: false }] }])).toEqual([[{ id: a2.id, stop_requested: false, queue_id: null }]]);
    expect((await job(a2.id)).lease_expires_at.getTime()).toBe(before);
  });
});

describe('the lapsed-lease sweep (sweepOfflineMachines)', () => {
  it('ends a running job whose lease lapsed on a heartbeating machine, fails its items, and leaves live leases alone', async () => {
    const { row: machine } = await seedMachine(sql, tenantId, { name: `lapsing-${randomUUID().slice(0, 8)}` });
    const queue = await seedQueue(sql, tenantId, { consumer_process_id: processId });
    const lapsed = await seedJob(sql, tenantId, { process_id: processId, machine_id: machine.id, status: 'running', source: 'queue' });
    const live = await seedJob(sql, tenantId, { process_id: processId, machine_id: machine.id, status: 'running' });
    const noLease = await seedJob(sql, tenantId, { process_id: processId, machine_id: machine.id, status: 'running' });
    await sql`update jobs set queue_id = ${queue.id}, lease_expires_at = now() - interval '1 second' where id = ${lapsed.id}`;
    await sql`update jobs set lease_expires_at = now() + interval '1 minute' where id = ${live.id}`;
    const [held] = await sql`
      insert into queue_item_records (tenant_id, queue_id, data, status, job_id, attempt)
      values (${tenantId}, ${queue.id}, '{}', 'in_progress', ${lapsed.id}, 1) returning id`;
    await sql`update machines set last_heartbeat_at = now() where id = ${machine.id}`;

    const res = await sweepOfflineMachines(sql, 30);
    expect(res.offline.map((m) => m.id)).not.toContain(machine.id);
    expect(res.ended).toContainEqual({ id: lapsed.id, machine_id: machine.id, status: 'failed' });
    expect(res.failedItemQueues).toContain(queue.id);
    expect(await job(lapsed.id)).toMatchObject({
      status: 'failed',
      error_message: `El job dejó de avanzar en la máquina ${machine.name}: su agente no renovó la concesión a tiempo`,
    });
    const [item] = await sql`select status, error_message from queue_items where id = ${held!.id}`;
    expect(item).toEqual({ status: 'failed', error_message: `El job que procesaba el elemento dejó de avanzar en la máquina ${machine.name}` });
    expect((await job(live.id)).status).toBe('running');
    expect((await job(noLease.id)).status).toBe('running');
  });
});

describe('a hand-off its robot never acknowledged (dispatch/hand-back.ts)', () => {
  async function started(machineId: string, fields: Record<string, unknown> = {}) {
    const j = await seedJob(sql, tenantId, { process_id: processId, machine_id: machineId, ...fields });
    const res = await startJob(sql, j.id, machineId, { holder: randomUUID(), leaseSeconds: 30 });
    if (!('started' in res)) throw new Error(`not started: ${JSON.stringify(res)}`);
    return res.started;
  }
  const acknowledged = async (id: string) => (await sql`select acknowledged_at from jobs where id = ${id}`)[0]!.acknowledged_at as Date | null;
  /** the jobs-created effects recorded for a job: what enqueues it again */
  const enqueued = async (id: string) => (await sql`
    select j.value as ref from outbox o, jsonb_array_elements(o.payload->'jobs') j
     where o.kind = 'jobs-created' and j.value->>'id' = ${id}`).map((r) => r.ref as { id: string; attempt?: number });

  it('a start clears the acknowledgement; the robot\'s job.started or a heartbeat listing the run stamps it, fenced by attempt and machine', async () => {
    const m = (await seedMachine(sql, tenantId)).row.id;
    const other = (await seedMachine(sql, tenantId)).row.id;
    const a = await started(m);
    const b = await started(m);
    expect(await acknowledged(a.id)).toBeNull();
    expect(await acknowledgeRun(sql, a.id, a.attempt + 1, m)).toBeNull();
    expect(await acknowledgeRun(sql, a.id, a.attempt, other)).toBeNull();
    expect(await acknowledged(a.id)).toBeNull();
    await sql`update jobs set stop_requested = true where id = ${a.id}`;
    expect(await acknowledgeRun(sql, a.id, a.attempt, m)).toEqual({ stop_requested: true });
    const first = await acknowledged(a.id);
    expect(first).toBeInstanceOf(Date);
    // acknowledged again (a repeat), it keeps its first stamp
    expect(await acknowledgeRun(sql, a.id, a.attempt, m)).toEqual({ stop_requested: true });
    expect(await acknowledged(a.id)).toEqual(first);
    await renewJobLeases(sql, m, [{ id: b.id, attempt: b.attempt, alive: false }], 30);
    expect(await acknowledged(b.id)).toBeInstanceOf(Date);
  });

  it('the sweep hands back an unacknowledged run whose lease lapsed or whose machine went offline, and fails an acknowledged one', async () => {
    const { row: live } = await seedMachine(sql, tenantId, { name: `live-${randomUUID().slice(0, 8)}` });
    const { row: gone } = await seedMachine(sql, tenantId, { name: `gone-${randomUUID().slice(0, 8)}` });
    const neverHeard = await started(live.id, { priority: 2 });
    const heard = await started(live.id);
    const stopAsked = await started(live.id);
    const onGone = await started(gone.id);
    await acknowledgeRun(sql, heard.id, heard.attempt, live.id);
    await sql`update jobs set stop_requested = true where id = ${stopAsked.id}`;
    await sql`update jobs set lease_expires_at = now() - interval '1 second' where id in ${sql([neverHeard.id, heard.id, stopAsked.id])}`;
    await sql`update machines set last_heartbeat_at = now(), status = 'online' where id = ${live.id}`;
    await sql`update machines set last_heartbeat_at = now() - interval '1 hour', status = 'online' where id = ${gone.id}`;

    const res = await sweepOfflineMachines(sql, 30);
    expect(res.handedBack.map((j) => j.id).sort()).toEqual([neverHeard.id, onGone.id].sort());
    expect(res.ended).toContainEqual({ id: heard.id, machine_id: live.id, status: 'failed' });
    expect(res.ended).toContainEqual({ id: stopAsked.id, machine_id: live.id, status: 'stopped' });
    const [back] = await sql`select status, attempt, started_at, timeout_at, lease_expires_at, lease_holder, finished_at, error_message from jobs where id = ${neverHeard.id}`;
    expect(back).toEqual({
      status: 'pending', attempt: neverHeard.attempt, started_at: null, timeout_at: null, lease_expires_at: null, lease_holder: null, finished_at: null, error_message: null,
    });
    // enqueued again under its attempt: the BullMQ id of its first delivery may still be kept as finished
    expect(await enqueued(neverHeard.id)).toEqual([expect.objectContaining({ id: neverHeard.id, attempt: neverHeard.attempt, priority: 2, machine_id: live.id })]);
    // handed out again, it is a new run
    const again = await startJob(sql, neverHeard.id, live.id, { holder: randomUUID(), leaseSeconds: 30 });
    expect('started' in again && again.started.attempt).toBe(neverHeard.attempt + 1);
    // on its offline machine it waits like any pending job
    expect((await job(onGone.id)).status).toBe('pending');
  });

  it('a fresh robot process fails what its predecessor acknowledged and hands back what it never did', async () => {
    const m = (await seedMachine(sql, tenantId)).row.id;
    const held = await started(m);
    const lost = await started(m);
    await acknowledgeRun(sql, held.id, held.attempt, m);
    const res = await giveUpMachineJobs(sql, m);
    expect(res.ended).toEqual([{ id: held.id, machine_id: m, status: 'failed' }]);
    expect((await job(lost.id)).status).toBe('pending');
    expect(await enqueued(lost.id)).toHaveLength(1);
  });

  it('a robot\'s bye marks its machine offline and hands back what reached it as it left; its acknowledged runs are left to their leases', async () => {
    const { row: machine } = await seedMachine(sql, tenantId);
    await sql`update machines set status = 'online', last_heartbeat_at = now() where id = ${machine.id}`;
    const held = await started(machine.id);
    const late = await started(machine.id);
    await acknowledgeRun(sql, held.id, held.attempt, machine.id);
    expect((await machineLeft(sql, machine.id)).map((j) => j.id)).toEqual([late.id]);
    expect((await sql`select status from machines where id = ${machine.id}`)[0]!.status).toBe('offline');
    expect((await job(late.id)).status).toBe('pending');
    expect((await job(held.id)).status).toBe('running');
  });
});
