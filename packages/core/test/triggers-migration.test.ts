import { migrate, type Sql } from '@svc/core';
import { databaseBeforeMigration, type DatabaseBeforeMigration } from '@svc/testing';

/**
 * Migration 0011 on a database that already has queues with consumer settings and consumer jobs
 * (docs/decisions/triggers.md): each consumer setting becomes the queue's default trigger, and the
 * consumer jobs it started carry that trigger, so the first decision after the upgrade counts them.
 */
jest.setTimeout(60_000);

let db: DatabaseBeforeMigration;
let sql: Sql;

beforeAll(() => {
  db = databaseBeforeMigration(11);
  sql = db.sql;
});
afterAll(() => db.close());

it('turns existing consumer settings into default triggers and tags their consumer jobs', async () => {
  await db.migrateBefore();
  const [tenant] = await sql`insert into tenants (name) values ('m11') returning id`;
  const [proc] = await sql`insert into processes (tenant_id, name) values (${tenant!.id}, 'consumer') returning id`;
  const [machine] = await sql`insert into machines (tenant_id, name, machine_key_hash, machine_key_prefix)
    values (${tenant!.id}, 'robot', '\\x00'::bytea, 'svc_mk_x') returning id`;
  const [fed] = await sql`insert into queues (tenant_id, name, consumer_process_id, max_consumers) values (${tenant!.id}, 'fed', ${proc!.id}, 3) returning id`;
  const [bare] = await sql`insert into queues (tenant_id, name) values (${tenant!.id}, 'bare') returning id`;
  const job = (source: string, queueId: string | null, status: string) => sql`
    insert into jobs (tenant_id, process_id, machine_id, status, source, queue_id)
    values (${tenant!.id}, ${proc!.id}, ${machine!.id}, ${status}, ${source}, ${queueId}) returning id`;
  const [running] = await job('queue', fed!.id, 'running');
  const [done] = await job('queue', fed!.id, 'completed');
  const [manual] = await job('api', null, 'pending');

  // (later migrations, if any, run too)
  expect((await migrate(sql))[0]).toBe('0011_triggers_attended');

  const triggers = await sql`select tenant_id, type, queue_id, process_id, machine_id, max_concurrent_jobs, min_items_to_start, is_active, is_queue_default
    from triggers`;
  expect(triggers).toEqual([{
    tenant_id: tenant!.id, type: 'queue', queue_id: fed!.id, process_id: proc!.id, machine_id: null, max_concurrent_jobs: 3,
    min_items_to_start: 1, is_active: true, is_queue_default: true,
  }]);
  const [{ id: triggerId }] = await sql`select id from triggers where queue_id = ${fed!.id}`;
  const jobs = await sql`select id, trigger_id from jobs order by id`;
  const byId = new Map(jobs.map((j) => [j.id, j.trigger_id]));
  expect([byId.get(running!.id), byId.get(done!.id), byId.get(manual!.id)]).toEqual([triggerId, triggerId, null]);
  expect(await sql`select id from triggers where queue_id = ${bare!.id}`).toEqual([]);
  // machines keep running unattended work
  expect(await sql`select kind from machines`).toEqual([{ kind: 'unattended' }]);
});
