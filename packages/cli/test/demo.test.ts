import { createTestContext, TEST_ENCRYPTION_KEY, type TestContext } from '@svc/testing';
import { sha256 } from '@svc/core/internals';
import { setUpDemo } from '../src/commands/demo';
import { createCliEngine } from '../src/db';

describe('svc demo (what npm start runs)', () => {
  let ctx: TestContext;
  const env = { ASSET_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY };
  beforeAll(async () => {
    ctx = await createTestContext();
  });
  afterAll(() => ctx.close());

  it('creates the whole demo workspace once, with a key carrying every scope', async () => {
    const first = await setUpDemo(createCliEngine(ctx.sql, env), env);
    expect(first.created).toBe(true);
    expect(first.api_key).toMatch(/^svc_ak_/);
    expect(first.admin_password).toEqual(expect.any(String));
    const [key] = await ctx.sql`select scopes, tenant_id from api_keys where key_hash = ${sha256(first.api_key!)}`;
    expect(key!.tenant_id).toBe(first.tenant_id);
    expect([...key!.scopes].sort()).toEqual(
      ['assets:read', 'jobs:read', 'jobs:stop', 'jobs:write', 'machines:read', 'processes:read', 'queues:read', 'queues:write'],
    );
    const [queue] = await ctx.sql`select q.name, p.name as consumer from queues q join processes p on p.id = q.consumer_process_id
      where q.tenant_id = ${first.tenant_id}`;
    expect(queue).toEqual({ name: 'invoices', consumer: 'invoice-processing' });
    expect(first.machines.map((m) => m.name)).toEqual(['robot-01', 'robot-02']);
    const [{ n }] = (await ctx.sql`select count(*)::int as n from asset_values v join assets a on a.id = v.asset_id
      where a.tenant_id = ${first.tenant_id}`) as unknown as [{ n: number }];
    expect(n).toBe(3);
  });

  it('on later starts creates nothing, shows no secret again, and re-issues the machine keys, each re-issue audited', async () => {
    const [before] = await ctx.sql`select count(*)::int as n from api_keys`;
    const rotations = async () => (await ctx.sql`select resource_id, actor_type, source, details from audit_log
      where action = 'rotate_machine_key' order by created_at, id`).map((r) => ({ ...r }));
    const rotatedBefore = (await rotations()).length;
    const again = await setUpDemo(createCliEngine(ctx.sql, env), env);
    expect(again.created).toBe(false);
    expect(again.api_key).toBeUndefined();
    expect(again.admin_password).toBeUndefined();
    const [after] = await ctx.sql`select count(*)::int as n from api_keys`;
    expect(after!.n).toBe(before!.n);
    for (const m of again.machines) {
      const [row] = await ctx.sql`select machine_key_hash from machines where id = ${m.machine_id}`;
      expect(Buffer.compare(row!.machine_key_hash, sha256(m.machine_key))).toBe(0);
    }
    // one row a machine, by the CLI, never carrying the key
    const rows = (await rotations()).slice(rotatedBefore);
    expect(rows.map((r) => r.resource_id).sort()).toEqual(again.machines.map((m) => m.machine_id).sort());
    for (const r of rows) {
      expect([r.actor_type, r.source]).toEqual(['system', 'cli']);
      expect(JSON.stringify(r.details)).not.toContain(again.machines[0]!.machine_key);
    }
  });

  it('issues another demo key on request', async () => {
    const r = await setUpDemo(createCliEngine(ctx.sql, env), env, { newKey: true });
    expect(r.created).toBe(false);
    expect(r.api_key).toMatch(/^svc_ak_/);
  });
});
