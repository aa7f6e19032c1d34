import { readFileSync } from 'node:fs';
import { seedWorkspace, testSuite, waitFor, type TestContext } from '@svc/testing';

/** The simulator as a process: a refused key, what its environment holds, its crash mode. */
describe('the agent process', () => {
  const suite = testSuite();
  const { children } = suite;
  let ctx: TestContext;
  beforeAll(() => ({ ctx } = suite));

  it('exits with status 2 and a clear sentence for a key of no active machine', async () => {
    const agent = await children.agent(ctx, ['--machine-key', 'svc_mk_nobody']);
    expect(await agent.exited).toBe(2);
    expect(agent.output()).toMatch(/does not belong to an active machine/);
  });

  it('runs holding only SVC_URL and its keys: no database, Redis or encryption setting in its environment', async () => {
    const ws = await seedWorkspace(ctx.sql);
    const m = await ws.machine();
    const agent = await children.agent(ctx, ['--machine-key', m.machineKey]);
    await waitFor('the machine online', async () => (await ctx.sql`select status from machines where id = ${m.row.id}`)[0]!.status === 'online');
    const names = readFileSync(`/proc/${agent.proc.pid}/environ`, 'utf8').split('\0').map((e) => e.split('=')[0]!).filter(Boolean);
    expect(names).toContain('SVC_URL');
    expect(names.filter((n) => /^(DATABASE_|REDIS_|PG|ASSET_ENCRYPTION_KEY$)/.test(n))).toEqual([]);
  });

  it('crash mode mid-item kills the agent while it holds an item, after the given number of items', async () => {
    const ws = await seedWorkspace(ctx.sql);
    const proc = await ws.process();
    const queue = await ws.queue({ consumer_process_id: proc.id });
    const m = await ws.machine();
    await ctx.sql`insert into queue_item_records (tenant_id, queue_id, data) select ${ws.tenant.id}, ${queue.id}, '{}'::jsonb from generate_series(1, 5)`;
    children.dispatcher(ctx);
    const agent = await children.agent(ctx, ['--machine-key', m.machineKey, '--item-duration', '1ms', '--prefetch', '1', '--crash', 'mid-item', '--crash-after-items', '2']);
    expect(await agent.exited).toBe(-1);
    expect(agent.proc.signalCode).toBe('SIGKILL');
    const rows = await ctx.sql`select status from queue_items where queue_id = ${queue.id}`;
    expect(rows.filter((r) => r.status === 'completed')).toHaveLength(2);
    expect(rows.filter((r) => r.status === 'in_progress')).toHaveLength(1);
    // the engine then gives the dead holder up: the item fails and is retried
    await waitFor('the held item failed and retried', async () => {
      const [r] = await ctx.sql`select count(*)::int as n from queue_items where queue_id = ${queue.id} and status = 'new' and retry_count = 1`;
      return r!.n === 1;
    }, 15_000);
  });
});
