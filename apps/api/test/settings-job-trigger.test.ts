import { randomUUID } from 'node:crypto';
import { seedMachine, seedProcess, seedTenant, seedUser, seedWorkspace } from '@svc/testing';
import { apiClient, apiSuite, type ApiTestContext } from '@svc/testing/api';

/**
 * POST /settings/jobs: a workspace admin triggers a job from the console, its input checked
 * against the process's input_schema (the console's form is made from it).
 */
const suite = apiSuite();
let ctx: ApiTestContext;
let ws: Awaited<ReturnType<typeof seedWorkspace>>;
let machineId: string;

const SCHEMA = {
  type: 'object',
  required: ['invoice', 'amount'],
  properties: {
    invoice: { type: 'string', minLength: 1 },
    amount: { type: 'number', minimum: 0 },
    currency: { type: 'string', enum: ['EUR', 'USD'] },
  },
  additionalProperties: false,
};

beforeAll(async () => {
  ({ ctx } = suite);
  ws = await seedWorkspace(ctx.sql);
  machineId = (await ws.machine({ status: 'online' })).row.id as string;
});

const admin = () => ({ Authorization: `Bearer ${ws.adminToken}` });
const trigger = (body: unknown, headers: Record<string, string> = admin()) =>
  ctx.http.post('/api/v1/settings/jobs').set(headers).send(body as object);

describe('POST /settings/jobs', () => {
  it('creates a pending job from valid input, audited as the user, source console', async () => {
    const p = await ws.process({ input_schema: SCHEMA });
    const job = await apiClient(ctx, { token: ws.adminToken }).call('triggerWorkspaceJob', {
      body: { process_id: p.id, input_data: { invoice: 'F-1', amount: 12.5, currency: 'EUR' }, priority: 4 },
    });
    expect(job).toMatchObject({ status: 'pending', process_id: p.id, machine_id: machineId, priority: 4, input_data: { invoice: 'F-1', amount: 12.5, currency: 'EUR' } });
    const [row] = await ctx.sql`select source from jobs where id = ${job.id}`;
    expect(row!.source).toBe('console');
    const audit = await ctx.sql`select actor_type, action from audit_log where resource_id = ${job.id}`;
    expect(audit).toEqual([{ actor_type: 'user', action: 'trigger_job' }]);
  });

  it('refuses input that breaks the schema, naming each field under input_data, and creates nothing', async () => {
    const p = await ws.process({ input_schema: SCHEMA });
    const res = await trigger({ process_id: p.id, input_data: { invoice: '', amount: -1, currency: 'GBP' } });
    expect(res.status).toBe(422);
    const fields = (res.body.error.details as Array<{ field: string }>).map((d) => d.field).sort();
    expect(fields).toEqual(['body → input_data → amount', 'body → input_data → currency', 'body → input_data → invoice']);
    const missing = await trigger({ process_id: p.id });
    expect(missing.status).toBe(422);
    expect(missing.body.error.details[0].field).toBe('body → input_data');
    const [n] = await ctx.sql`select count(*)::int as n from jobs where process_id = ${p.id}`;
    expect(n!.n).toBe(0);
  });

  it('a repeat under the same Idempotency-Key answers the first job', async () => {
    const p = await ws.process();
    const headers = { ...admin(), 'Idempotency-Key': randomUUID() };
    const first = await trigger({ process_id: p.id }, headers);
    const again = await trigger({ process_id: p.id }, headers);
    expect(first.status).toBe(201);
    expect(again.status).toBe(201);
    expect(again.body.data.id).toBe(first.body.data.id);
    const [n] = await ctx.sql`select count(*)::int as n from jobs where process_id = ${p.id}`;
    expect(n!.n).toBe(1);
  });

  describe('hostile input', () => {
    it('another workspace’s process is 404, its machine a 422 on machine_id', async () => {
      const other = await seedWorkspace(ctx.sql);
      const theirProcess = await other.process();
      expect((await trigger({ process_id: theirProcess.id })).status).toBe(404);
      const theirMachine = (await seedMachine(ctx.sql, other.tenant.id)).row;
      const p = await ws.process();
      const res = await trigger({ process_id: p.id, machine_id: theirMachine.id });
      expect(res.status).toBe(422);
      expect(res.body.error.details[0].field).toBe('body → machine_id');
    });

    it.each([
      ['a process id that is not a UUID', 422, { process_id: 'nope' }],
      ['NUL in the input', 422, { input_data: { invoice: 'a\u0000b', amount: 1 } }],
      ['a priority out of range', 422, { priority: 9 }],
      ['an unknown field', 422, { colour: 'red' }],
      ['input that is not an object', 422, { input_data: [1, 2] }],
      ['deeply nested input', 422, { input_data: JSON.parse('{"a":'.repeat(300) + '1' + '}'.repeat(300)) }],
    ])('%s → %i', async (_label, status, extra) => {
      const p = await ws.process();
      const res = await trigger({ process_id: p.id, ...extra });
      expect(res.status).toBe(status);
      expect(res.body.success).toBe(false);
      const [n] = await ctx.sql`select count(*)::int as n from jobs where process_id = ${p.id}`;
      expect(n!.n).toBe(0);
    });

    it('a member is 403, no token 401, a revoked token 401', async () => {
      const p = await ws.process();
      const member = await seedUser(ctx.sql, ws.tenant.id, { role: 'member' });
      expect((await trigger({ process_id: p.id }, { Authorization: `Bearer ${member.token}` })).status).toBe(403);
      expect((await trigger({ process_id: p.id }, {})).status).toBe(401);
      const gone = await seedUser(ctx.sql, ws.tenant.id, { role: 'admin' });
      await ctx.sql`update access_tokens set revoked_at = now() where user_id = ${gone.user.id}`;
      expect((await trigger({ process_id: p.id }, { Authorization: `Bearer ${gone.token}` })).status).toBe(401);
    });

    it('counts against the monthly quota: 429 once it is used up', async () => {
      const tenant = await seedTenant(ctx.sql, { monthly_quota: 1 });
      const user = await seedUser(ctx.sql, tenant.id, { role: 'admin' });
      const p = await seedProcess(ctx.sql, tenant.id);
      await seedMachine(ctx.sql, tenant.id, { status: 'online' });
      const headers = { Authorization: `Bearer ${user.token}` };
      expect((await trigger({ process_id: p.id }, headers)).status).toBe(201);
      const res = await trigger({ process_id: p.id }, headers);
      expect(res.status).toBe(429);
      expect(res.body.error.code).toBe('QUOTA_EXCEEDED');
    });
  });
});
