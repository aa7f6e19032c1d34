import { CLI_ACTOR, createEngine, createLogger } from '@svc/core';
import { noopDispatch, type DispatchJobRef, type DispatchPort } from '@svc/core/internals';
import { databaseSuite, seedApiKey, seedMachine, seedTenant } from '@svc/testing';

/**
 * The engine facade: its commands are the core's own, bound to one pool, and a command's effects
 * reach the port the outbox is drained into. One walk through a tenant's day.
 */
const db = databaseSuite();

it('a queue, its items, a job and its stop through the engine, with their effects', async () => {
  const engine = createEngine({ sql: db.sql, logger: createLogger({ service: 'engine-test', level: 'error' }) });
  const tenant = await seedTenant(db.sql);
  const key = await seedApiKey(db.sql, tenant.id);
  const machine = (await seedMachine(db.sql, tenant.id, { slots: 2 })).row;

  const { record: proc } = await engine.catalog.save(CLI_ACTOR, tenant.id, 'process', 'new', { name: 'facturas' });
  const { record: queue } = await engine.catalog.save(CLI_ACTOR, tenant.id, 'queue', { name: 'entrantes' },
    { consumer_process_id: proc.id });
  expect(await engine.catalog.queues.get(tenant.id, queue.id)).toMatchObject({ name: 'entrantes', consumer_process_id: proc.id });

  const item = await engine.items.addToQueueNamed(tenant.id, 'entrantes', { data: { n: 1 } });
  expect(item).toMatchObject({ queue_id: queue.id, status: 'new', data: { n: 1 } });
  expect(await engine.items.addBulk({ id: queue.id, tenant_id: tenant.id, name: queue.name }, { items: [{ n: 2 }, { n: 3 }] })).toBe(2);
  const page = await engine.items.list({ id: queue.id, tenant_id: tenant.id, name: queue.name }, { page: 1, limit: 20 });
  expect(page.meta.total).toBe(3);

  const job = await engine.jobs.triggerByApi({ tenantId: tenant.id, apiKeyId: key.row.id as string }, {
    rawProcessId: proc.id, body: () => ({ process_id: proc.id, machine_id: machine.id as string }),
  });
  expect((await engine.jobs.get(tenant.id, job.id)).status).toBe('pending');
  expect((await engine.jobs.stop(tenant.id, job.id)).status).toBe('stopped');

  const jobs: DispatchJobRef[] = [];
  const ready: string[] = [];
  const port: DispatchPort = { ...noopDispatch, jobsCreated: async (j) => void jobs.push(...j), queueItemsReady: async (q) => void ready.push(q.id) };
  expect(await engine.outbox.drain(port)).toBe(4);
  expect(jobs.map((j) => j.id)).toEqual([job.id]);
  expect(new Set(ready)).toEqual(new Set([queue.id]));
});
