import { randomUUID } from 'node:crypto';
import { createEngine, createLogger, type Engine, type Sql } from '@svc/core';
import { databaseSuite, seedJob, seedMachine, seedProcess, seedQueue, seedTenant } from '@svc/testing';

/**
 * A robot's run requests sent again after a lost answer (machines/run-requests.ts): whether or not
 * the first try was applied, the repeat answers as the first would have and applies nothing twice.
 */
const db = databaseSuite();
let sql: Sql;
let engine: Engine;
let tenantId: string;
let processId: string;

beforeAll(async () => {
  sql = db.sql;
  engine = createEngine({ sql, logger: createLogger({ level: 'error', service: 'test' }) });
  tenantId = (await seedTenant(sql)).id;
  processId = (await seedProcess(sql, tenantId, { timeout_seconds: 60 })).id;
});

async function runningJob(queueId: string | null = null) {
  const machineId = (await seedMachine(sql, tenantId, { slots: 5 })).row.id as string;
  const job = await seedJob(sql, tenantId, { process_id: processId, machine_id: machineId });
  if (queueId) await sql`update jobs set queue_id = ${queueId} where id = ${job.id as string}`;
  const res = await engine.machines.startJob(job.id as string, machineId, { holder: randomUUID(), leaseSeconds: 30 });
  if (!('started' in res)) throw new Error('not started');
  return { id: job.id as string, machineId, attempt: res.started.attempt };
}

async function itemStatuses(queueId: string): Promise<Record<string, string>> {
  const rows = await sql<Array<{ id: string; status: string }>>`select id, status from queue_items where queue_id = ${queueId}`;
  return Object.fromEntries(rows.map((r) => [r.id, r.status]));
}

it('a repeated take settles nothing anew, hands back what the lost answer took beyond what the robot holds, then takes', async () => {
  const queue = await seedQueue(sql, tenantId, { max_retries: 0 });
  const ref = { id: queue.id as string, tenant_id: tenantId, name: queue.name as string };
  await engine.items.addBulk(ref, { items: [{ n: 1 }, { n: 2 }, { n: 3 }, { n: 4 }, { n: 5 }] } as never);
  const job = await runningJob(ref.id);
  const req = { queueId: ref.id, jobId: job.id, jobAttempt: job.attempt, machineId: job.machineId };

  const first = await engine.machines.takeItems({ ...req, outcomes: [], take: 2 });
  const [a, b] = first.claimed as unknown as [{ id: string; attempt: number }, { id: string; attempt: number }];
  // the robot settles a and takes two more; that answer is lost (the items are taken, unknown to it)
  const outcomes = [{ id: a.id, attempt: a.attempt, status: 'completed' as const }];
  const lost = await engine.machines.takeItems({ ...req, outcomes, take: 2 });
  expect(lost.settled).toEqual([{ id: a.id, status: 'completed' }]);
  const unknown = lost.claimed.map((i) => i.id);
  expect(unknown).toHaveLength(2);

  // the repeat: a's outcome is accepted again (settled so already), b is kept, the two unknown go back first
  const again = await engine.machines.takeItems({ ...req, outcomes, take: 3, held: [b.id], repeat: true });
  expect(again.settled).toEqual([{ id: a.id, status: 'completed' }]);
  expect(again.releasedUnknown).toBe(2);
  expect(again.claimed).toHaveLength(3);
  const statuses = await itemStatuses(ref.id);
  expect(statuses[a.id]).toBe('completed');
  expect(statuses[b.id]).toBe('in_progress');
  // the three taken afresh are every other item: the two handed back and the one never taken
  expect(again.claimed.map((i) => i.id).sort()).toEqual(Object.keys(statuses).filter((id) => id !== a.id && id !== b.id).sort());
  expect(Object.values(statuses).filter((s) => s === 'in_progress')).toHaveLength(4);

  // the same take without the repeat mark would have taken nothing back
  const plain = await engine.machines.takeItems({ ...req, outcomes: [], take: 1 });
  expect(plain.releasedUnknown).toBe(0);
  expect(plain.claimed).toEqual([]);
});

it('a repeated finish finds the run ended as it asked; a plain one after the end, or another end, is refused', async () => {
  const job = await runningJob();
  expect((await engine.machines.finishRun(job.id, job.attempt, { to: 'completed', output_data: { ok: 1 } }))?.status).toBe('completed');
  expect(await engine.machines.finishRun(job.id, job.attempt, { to: 'completed' })).toBeNull();
  const repeated = await engine.machines.finishRun(job.id, job.attempt, { to: 'completed' }, { repeat: true });
  expect(repeated).toEqual({ status: 'completed' });
  expect(await engine.jobs.get(tenantId, job.id)).toMatchObject({ status: 'completed', output_data: { ok: 1 } });
  expect(await engine.machines.finishRun(job.id, job.attempt, { to: 'failed', error_message: 'x' }, { repeat: true })).toBeNull();
  // another attempt's repeat finds nothing of its own
  expect(await engine.machines.finishRun(job.id, job.attempt + 1, { to: 'completed' }, { repeat: true })).toBeNull();
});

it('a run stopped while it waited for input: its own `stopped` end is found even without the repeat mark', async () => {
  const job = await runningJob();
  expect(await engine.machines.askInput(job.id, job.attempt, { prompt: '¿Seguir?', options: { choices: ['sí', 'no'] } })).toEqual({ waiting: true });
  await engine.jobs.stop(tenantId, job.id);
  expect(await engine.machines.finishRun(job.id, job.attempt, { to: 'stopped' })).toMatchObject({ status: 'stopped' });
});

it('a repeated question finds itself waiting; a plain one is refused, and so is a repeat of a run that is not waiting', async () => {
  const job = await runningJob();
  const ask = { prompt: '¿Aprobar?', options: { choices: ['sí', 'no'] } };
  expect(await engine.machines.askInput(job.id, job.attempt, ask)).toEqual({ waiting: true });
  expect(await engine.machines.askInput(job.id, job.attempt, ask)).toEqual({ refused: 'not_owned' });
  expect(await engine.machines.askInput(job.id, job.attempt, ask, { repeat: true })).toEqual({ waiting: true });
  const other = await runningJob();
  expect(await engine.machines.finishRun(other.id, other.attempt, { to: 'completed' })).not.toBeNull();
  expect(await engine.machines.askInput(other.id, other.attempt, ask, { repeat: true })).toEqual({ refused: 'not_owned' });
});
