import { IDEMPOTENCY_PURGE_EVERY_MS, type BullDispatch } from '@svc/core';
import { seedTenant, type TestContext, processSuite, waitFor } from '@svc/testing';

/**
 * Housekeeping that the dispatcher schedules as a BullMQ job scheduler (one replica runs each
 * tick): expired Idempotency-Keys are purged by a running dispatcher.
 */
jest.setTimeout(60_000);
const suite = processSuite();
const { children } = suite;
let ctx: TestContext;
let bull: BullDispatch;

beforeAll(() => ({ ctx, bull } = suite));

describe('a running dispatcher', () => {
  it('schedules the Idempotency-Key purge every ten minutes and purges expired keys, keeping live ones', async () => {
    const tenant = await seedTenant(ctx.sql);
    await ctx.sql`
      insert into idempotency_keys (tenant_id, scope, key, request_hash, status, response, created_at)
      select ${tenant.id}, 'queue-items.add', case when g <= 40 then 'expired-' else 'live-' end || g,
             sha256(convert_to(g::text, 'utf8')), 201, '{}'::json,
             case when g <= 40 then now() - interval '24 hours 1 minute' - g * interval '1 minute' else now() - interval '1 hour' end
      from generate_series(1, 45) g`;

    children.dispatcher(ctx);

    const scheduler = await waitFor('the purge scheduler', () => bull.dispatchQueue.getJobScheduler('purge-idempotency-keys'));
    expect(scheduler.every).toBe(IDEMPOTENCY_PURGE_EVERY_MS);
    expect(IDEMPOTENCY_PURGE_EVERY_MS).toBe(600_000);

    // a scheduler's first tick runs at once: the new dispatcher's purge removes the expired keys
    await waitFor('the expired keys purged', async () => {
      const [r] = await ctx.sql<Array<{ n: number }>>`select count(*)::int as n from idempotency_keys where key like 'expired-%'`;
      return r!.n === 0;
    });
    const left = await ctx.sql<Array<{ key: string }>>`select key from idempotency_keys order by key`;
    expect(left.map((r) => r.key)).toEqual(['live-41', 'live-42', 'live-43', 'live-44', 'live-45']);
  });
});
