import { createSql } from '@svc/core';
import { testSuite, freePort, itemStatusCounts, seedWorkspace, waitFor, waitForHttp } from '@svc/testing';

/**
 * Fault: a process dies between its commit and the publish of what the commit causes
 * (docs/decisions/outbox.md). The API is killed right after answering, and a relay is killed
 * while it holds the effects it took; a dispatcher started afterwards still puts every job on its
 * machine and starts the queue's consumers.
 */
jest.setTimeout(60_000);
const suite = testSuite();

it('API killed after its commits, relay killed mid-publish: every job and item still runs', async () => {
  const { ctx, children } = suite;
  const ws = await seedWorkspace(ctx.sql);
  const proc = await ws.process();
  const machine = await ws.machine({ slots: 4 });
  const queue = await ws.queue({ consumer_process_id: proc.id, max_consumers: 1 });
  await children.agent(ctx, ['--machine-key', machine.machineKey, '--duration', '10-30ms', '--item-duration', '1-3ms', '--seed', '3']);

  const port = await freePort();
  const api = children.api(ctx, port);
  const base = `http://127.0.0.1:${port}/api/v1`;
  await waitForHttp(`http://127.0.0.1:${port}/health`);
  const post = (path: string, body: unknown) =>
    fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': ws.key }, body: JSON.stringify(body) });
  const jobIds: string[] = [];
  for (let i = 0; i < 3; i++) {
    const res = await post('/jobs/trigger', { process_id: proc.id, machine_id: machine.row.id });
    expect(res.status).toBe(201);
    jobIds.push(((await res.json()) as { data: { id: string } }).data.id);
  }
  expect((await post(`/queues/by-name/${queue.name}/items/bulk`, { items: Array.from({ length: 40 }, (_, i) => ({ i })) })).status).toBe(200);
  api.proc.kill('SIGKILL');
  await api.exited;

  // committed, not published: the effects wait in the outbox
  const [{ n: waiting }] = await ctx.sql<Array<{ n: number }>>`select count(*)::int as n from outbox`;
  expect(waiting).toBe(4);

  // a relay takes them and dies before its commit (its session ends: the transaction rolls back)
  const relaySql = createSql(ctx.config.databaseUrl, { max: 1 });
  const held = relaySql.begin(async (tx) => {
    await tx`select id from outbox for update skip locked`;
    await tx`select pg_terminate_backend(pg_backend_pid())`;
  }).catch((err: Error) => err);
  expect(await held).toBeInstanceOf(Error);
  await relaySql.end({ timeout: 1 }).catch(() => undefined);
  const [{ n: stillWaiting }] = await ctx.sql<Array<{ n: number }>>`select count(*)::int as n from outbox`;
  expect(stillWaiting).toBe(4);

  // a dispatcher's relay publishes what the dead processes left (the reconciler would re-add
  // the jobs too, but never deletes an effect: the empty outbox is the relay's work)
  children.dispatcher(ctx);
  await waitFor('the outbox emptied', async () => {
    const [{ n }] = await ctx.sql<Array<{ n: number }>>`select count(*)::int as n from outbox`;
    return n === 0;
  });

  await waitFor('every triggered job completed', async () => {
    const rows = await ctx.sql<Array<{ status: string }>>`select status from jobs where id = any(${jobIds}::uuid[])`;
    return rows.every((r) => r.status === 'completed');
  }, 30_000);
  const counts = await waitFor('every item completed', async () => {
    const c = await itemStatusCounts(ctx.sql, queue.id as string);
    return c.completed === 40 ? c : null;
  }, 30_000);
  expect(counts).toEqual({ completed: 40 });
});
