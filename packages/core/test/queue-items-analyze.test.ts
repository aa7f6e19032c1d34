import { analyzeQueueItemsIfStale } from '@svc/core';
import { createTestContext, seedQueue, seedTenant, type TestContext } from '@svc/core/testing';

describe('analyzeQueueItemsIfStale (the dispatcher sweep, for servers without autovacuum)', () => {
  let ctx: TestContext;
  beforeAll(async () => {
    ctx = await createTestContext();
    // this test's own database: no autovacuum run may analyze the table behind its back
    await ctx.sql`alter table queue_items set (autovacuum_enabled = false)`;
  });
  afterAll(() => ctx.close());

  const reltuples = async () =>
    (await ctx.sql<{ n: number }[]>`select reltuples::int as n from pg_class where oid = 'queue_items'::regclass`)[0]!.n;

  /** Inserts on one connection and has its statistics sent at once (else up to a second later). */
  async function insertItems(queueId: string, tenantId: string, n: number): Promise<void> {
    const conn = await ctx.sql.reserve();
    try {
      await conn`insert into queue_items (tenant_id, queue_id, data) select ${tenantId}, ${queueId}, '{}'::jsonb from generate_series(1, ${n})`;
      await conn`select pg_stat_force_next_flush()`;
      await conn`select 1`;
    } finally {
      conn.release();
    }
  }

  it('analyzes once enough rows changed, and not again until more do', async () => {
    const tenant = await seedTenant(ctx.sql);
    const queue = await seedQueue(ctx.sql, tenant.id);
    await insertItems(queue.id as string, tenant.id, 500);
    expect(await analyzeQueueItemsIfStale(ctx.sql, 1_000)).toBe(false);
    expect(await reltuples()).toBeLessThan(500);

    await insertItems(queue.id as string, tenant.id, 1_000);
    expect(await analyzeQueueItemsIfStale(ctx.sql, 1_000)).toBe(true);
    // the planner now knows the table's size
    expect(await reltuples()).toBe(1_500);
    expect(await analyzeQueueItemsIfStale(ctx.sql, 1_000)).toBe(false);
  });
});
