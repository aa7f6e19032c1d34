import { purgeExpiredIdempotencyKeys, sweepExpiredIdempotencyKeys } from '@svc/core/internals';
import { createTestContext, seedTenant, type TestContext } from '@svc/testing';

/** Idempotency-Keys past their 24 hours are deleted in batches, oldest first; live ones stay. */
describe('expired Idempotency-Keys purge', () => {
  let t: TestContext;
  let tenantId: string;

  beforeAll(async () => {
    t = await createTestContext();
    tenantId = (await seedTenant(t.sql)).id;
  });
  afterAll(() => t.close());

  beforeEach(() => t.sql`delete from idempotency_keys`);

  /** `expired` keys aged 25 h and older (key n is n minutes older), plus `live` keys of 23 h. */
  async function seedKeys(expired: number, live: number): Promise<void> {
    await t.sql`
      insert into idempotency_keys (tenant_id, scope, key, request_hash, status, response, created_at)
      select ${tenantId}, 'queue-items.add', 'old-' || g, sha256(convert_to(g::text, 'utf8')), 201, '{}'::json,
             now() - interval '25 hours' - g * interval '1 minute'
      from generate_series(1, ${expired}::int) g`;
    await t.sql`
      insert into idempotency_keys (tenant_id, scope, key, request_hash, status, response, created_at)
      select ${tenantId}, 'jobs.trigger', 'live-' || g, sha256(convert_to(g::text, 'utf8')),
             case when g = 1 then null else 201 end, case when g = 1 then null else '{}'::json end,
             now() - interval '23 hours'
      from generate_series(1, ${live}::int) g`;
  }

  const keys = async () => (await t.sql<Array<{ key: string }>>`select key from idempotency_keys order by key`).map((r) => r.key);

  it('deletes one batch of the oldest expired keys per call', async () => {
    await seedKeys(12, 2);
    expect(await purgeExpiredIdempotencyKeys(t.sql, 5)).toBe(5);
    // the oldest are old-8 … old-12
    expect(await keys()).toEqual(['live-1', 'live-2', 'old-1', 'old-2', 'old-3', 'old-4', 'old-5', 'old-6', 'old-7']);
  });

  it('the sweep purges every expired key over several batches and keeps live keys and claims in flight', async () => {
    await seedKeys(23, 3);
    expect(await sweepExpiredIdempotencyKeys(t.sql, 5)).toBe(23);
    expect(await keys()).toEqual(['live-1', 'live-2', 'live-3']);
    expect(await sweepExpiredIdempotencyKeys(t.sql, 5)).toBe(0);
  });
});
