import { consumeExecution, quotaResetsAt, readQuotaUsage, isSubscriptionActive } from '@svc/core/internals';
import { createTestContext, seedTenant, type TestContext } from '@svc/testing';

describe('monthly execution quota', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestContext({});
  });
  afterAll(() => t.close());

  it('lets exactly the remaining executions through when 200 consumers race for 100', async () => {
    const tenant = await seedTenant(t.sql, { monthly_quota: 100 });
    // each consumer in its own transaction, as the trigger does it
    const results = await Promise.all(
      Array.from({ length: 200 }, () => t.sql.begin((tx) => consumeExecution(tx, tenant.id))),
    );
    expect(results.filter((r) => r !== null)).toHaveLength(100);
    const used = results.filter((r) => r !== null).map((r) => r!.quota_used).sort((a, b) => a - b);
    expect(used).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
    expect((await readQuotaUsage(t.sql, tenant.id))!.quota_used).toBe(100);
  });

  it('gives nothing back when the consuming transaction rolls back', async () => {
    const tenant = await seedTenant(t.sql, { monthly_quota: 5 });
    await expect(
      t.sql.begin(async (tx) => {
        expect(await consumeExecution(tx, tenant.id)).toMatchObject({ quota_used: 1 });
        throw new Error('the trigger failed later');
      }),
    ).rejects.toThrow('the trigger failed later');
    expect((await readQuotaUsage(t.sql, tenant.id))!.quota_used).toBe(0);
  });

  it('restarts the count at a new month and reports the usage of the current one', async () => {
    const tenant = await seedTenant(t.sql, { monthly_quota: 2 });
    await t.sql`update tenants set quota_used = 2, quota_period = '2020-02-01' where id = ${tenant.id}`;
    expect((await readQuotaUsage(t.sql, tenant.id))!.quota_used).toBe(0);
    const after = await consumeExecution(t.sql, tenant.id);
    expect(after!.quota_used).toBe(1);
    expect(after!.period_start.getUTCDate()).toBe(1);
    expect(after!.period_start.getUTCMonth()).toBe(new Date().getUTCMonth());
  });

  it('refuses everything with a quota of zero', async () => {
    const tenant = await seedTenant(t.sql, { monthly_quota: 0 });
    expect(await consumeExecution(t.sql, tenant.id)).toBeNull();
    await t.sql`update tenants set quota_period = '2020-02-01' where id = ${tenant.id}`;
    expect(await consumeExecution(t.sql, tenant.id)).toBeNull();
  });

  it('frees an exhausted quota at the first instant of the next UTC month', () => {
    expect(quotaResetsAt(new Date('2026-12-01T00:00:00Z')).toISOString()).toBe('2027-01-01T00:00:00.000Z');
    expect(quotaResetsAt(new Date('2026-02-01T00:00:00Z')).toISOString()).toBe('2026-03-01T00:00:00.000Z');
  });

  it('treats active and trialing subscriptions as active, and nothing else', () => {
    expect(['active', 'trialing', 'past_due', 'suspended', 'canceled'].filter(isSubscriptionActive)).toEqual(['active', 'trialing']);
  });
});
