import type { Sql } from '@svc/core';
import { createTrigger, queuesNeedingConsumers, startQueueConsumers } from '@svc/core/internals';
import { insertJob } from '../src/jobs/repo';
import { databaseSuite, seedMachine, seedProcess, seedQueue, seedTenant } from '@svc/testing';

/**
 * The consumer decision per queue trigger (docs/decisions/triggers.md), against Postgres: each
 * trigger's maximum under concurrent decisions, min_items_to_start, its machine, attended machines
 * left to what names them, and the generic trigger's auto-selection.
 */
const db = databaseSuite();
let sql: Sql;
beforeAll(() => ({ sql } = db));

async function world() {
  const tenant = await seedTenant(sql);
  const proc = await seedProcess(sql, tenant.id);
  const queue = await seedQueue(sql, tenant.id);
  const addItems = (n: number) => sql`
    insert into queue_item_records (tenant_id, queue_id, data) select ${tenant.id}, ${queue.id}, '{}'::jsonb from generate_series(1, ${n})`;
  const machine = async (slots: number, kind: 'attended' | 'unattended' = 'unattended') => {
    const { row } = await seedMachine(sql, tenant.id, { slots });
    await sql`update machines set kind = ${kind} where id = ${row.id}`;
    return row.id as string;
  };
  return { tenantId: tenant.id as string, proc, queue, addItems, machine };
}

const jobsOf = (queueId: string) => sql<Array<{ trigger_id: string; machine_id: string; is_attended: boolean; source: string }>>`
  select trigger_id, machine_id, is_attended, source from jobs where queue_id = ${queueId}`;

it("never exceeds a trigger's maximum under concurrent decisions, each trigger counting its own jobs", async () => {
  const { tenantId, proc, queue, addItems, machine } = await world();
  const a = await createTrigger(sql, tenantId, { type: 'queue', queue_id: queue.id, process_id: proc.id, max_concurrent_jobs: 2 });
  const b = await createTrigger(sql, tenantId, { type: 'queue', queue_id: queue.id, process_id: proc.id, max_concurrent_jobs: 3 });
  const m1 = await machine(4);
  const m2 = await machine(4);
  const desk = await machine(16, 'attended');
  await addItems(20);

  const started = await Promise.all(Array.from({ length: 6 }, () => startQueueConsumers(sql, queue.id)));
  expect(started.flat()).toHaveLength(5);
  const jobs = await jobsOf(queue.id);
  expect(jobs.filter((j) => j.trigger_id === a.id)).toHaveLength(2);
  expect(jobs.filter((j) => j.trigger_id === b.id)).toHaveLength(3);
  for (const j of jobs) {
    expect([m1, m2]).toContain(j.machine_id);
    expect(j).toMatchObject({ is_attended: false, source: 'queue' });
  }
  expect(jobs.map((j) => j.machine_id)).not.toContain(desk);
  // full: nothing more, and the sweep does not list the queue
  expect(await startQueueConsumers(sql, queue.id)).toEqual([]);
  expect(await queuesNeedingConsumers(sql, tenantId)).not.toContain(queue.id);
});

it('starts nothing below min_items_to_start, and starts once the queue has that many ready items', async () => {
  const { tenantId, proc, queue, addItems, machine } = await world();
  const tr = await createTrigger(sql, tenantId, { type: 'queue', queue_id: queue.id, process_id: proc.id, max_concurrent_jobs: 10, min_items_to_start: 5 });
  await machine(8);
  await addItems(4);
  expect(await queuesNeedingConsumers(sql, tenantId)).not.toContain(queue.id);
  expect(await startQueueConsumers(sql, queue.id)).toEqual([]);
  await addItems(1);
  expect(await queuesNeedingConsumers(sql, tenantId)).toEqual([queue.id]);
  // no more jobs than ready items
  expect(await startQueueConsumers(sql, queue.id)).toHaveLength(5);
  expect(new Set((await jobsOf(queue.id)).map((j) => j.trigger_id))).toEqual(new Set([tr.id]));
});

it('counts ready items past the claim floor while floors are engaged: items below the floor are those already taken', async () => {
  const { tenantId, proc, queue, addItems, machine } = await world();
  await createTrigger(sql, tenantId, { type: 'queue', queue_id: queue.id, process_id: proc.id, max_concurrent_jobs: 10, min_items_to_start: 3 });
  await machine(8);
  await addItems(3);
  // items created before the floor are not counted: a floor is only ever above items taken or ended
  await sql`insert into queue_ready_floor (queue_id, floor) values (${queue.id}, now() + interval '1 hour')`;
  const floor = { floor: true };
  expect(await queuesNeedingConsumers(sql, tenantId, floor)).not.toContain(queue.id);
  expect(await startQueueConsumers(sql, queue.id, floor)).toEqual([]);
  // a floor at or below them: counted as without floors, with a deadline counted whatever the floor
  await sql`update queue_ready_floor set floor = now() - interval '1 hour' where queue_id = ${queue.id}`;
  expect(await queuesNeedingConsumers(sql, tenantId, floor)).toEqual([queue.id]);
  await sql`update queue_ready_floor set floor = now() + interval '1 hour' where queue_id = ${queue.id}`;
  await sql`update queue_items set deadline = now() + interval '1 day' where queue_id = ${queue.id}`;
  expect(await startQueueConsumers(sql, queue.id, floor)).toHaveLength(3);
  await sql`delete from queue_ready_floor where queue_id = ${queue.id}`;
});

it("runs a trigger's jobs on its machine, an attended one included, with is_attended true", async () => {
  const { tenantId, proc, queue, addItems, machine } = await world();
  await machine(8);
  const desk = await machine(2, 'attended');
  const tr = await createTrigger(sql, tenantId, { type: 'queue', queue_id: queue.id, process_id: proc.id, max_concurrent_jobs: 5, machine_id: desk });
  await addItems(10);
  // the machine's two slots bound it, even with room under the maximum
  expect(await startQueueConsumers(sql, queue.id)).toHaveLength(2);
  expect(await jobsOf(queue.id)).toEqual([
    { trigger_id: tr.id, machine_id: desk, is_attended: true, source: 'queue' },
    { trigger_id: tr.id, machine_id: desk, is_attended: true, source: 'queue' },
  ]);
});

it('starts nothing for an inactive trigger, a paused queue or an inactive process', async () => {
  const { tenantId, proc, queue, addItems, machine } = await world();
  await machine(8);
  await addItems(3);
  const tr = await createTrigger(sql, tenantId, { type: 'queue', queue_id: queue.id, process_id: proc.id, is_active: false });
  expect(await startQueueConsumers(sql, queue.id)).toEqual([]);
  await sql`update triggers set is_active = true where id = ${tr.id}`;
  await sql`update queues set is_paused = true where id = ${queue.id}`;
  expect(await startQueueConsumers(sql, queue.id)).toEqual([]);
  await sql`update queues set is_paused = false where id = ${queue.id}`;
  await sql`update processes set is_active = false where id = ${proc.id}`;
  expect(await startQueueConsumers(sql, queue.id)).toEqual([]);
  await sql`update processes set is_active = true where id = ${proc.id}`;
  expect(await startQueueConsumers(sql, queue.id)).toHaveLength(1);
});

it('never auto-selects an attended machine for a job without one, and takes one that is named', async () => {
  const { tenantId, proc, machine } = await world();
  const desk = await machine(8, 'attended');
  const job = (machineId: string | null) => insertJob(sql, {
    tenantId, processId: proc.id, machineId, priority: 3, inputData: null, source: 'api', slaDeadlineMinutes: null,
  });
  expect(await job(null)).toBeNull();
  expect(await job(desk)).toMatchObject({ machine_id: desk, is_attended: true, trigger_id: null });
  const robot = await machine(1);
  expect(await job(null)).toMatchObject({ machine_id: robot, is_attended: false });
});

it("gives the queue's own consumer the first jobs when ready items run short", async () => {
  const { tenantId, proc, queue, addItems, machine } = await world();
  await machine(8);
  const extra = await createTrigger(sql, tenantId, { type: 'queue', queue_id: queue.id, process_id: proc.id, max_concurrent_jobs: 2 });
  await sql`update queues set consumer_process_id = ${proc.id}, max_consumers = 2 where id = ${queue.id}`;
  const [def] = await sql`select id from triggers where queue_id = ${queue.id} and is_queue_default`;
  await addItems(2);
  expect(await startQueueConsumers(sql, queue.id)).toHaveLength(2);
  const jobs = await jobsOf(queue.id);
  expect(jobs.map((j) => j.trigger_id)).toEqual([def!.id, def!.id]);
  expect(jobs.map((j) => j.trigger_id)).not.toContain(extra.id);
});
