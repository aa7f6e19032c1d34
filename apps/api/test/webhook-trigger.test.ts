import { seedApiKey, seedMachine, seedProcess } from '@svc/testing';
import type { BodyOf } from '@svc/client';
import { apiClient, type ApiTestContext } from '@svc/testing/api';
import {
  CONTRACT_JOB_FIELDS, expectedNewJob, jobCount, quotaUsed, jobRouteSuite, recordingDispatch, seedWorkspace, type Workspace,
} from './jobs-support';

const MISSING = '00000000-0000-4000-8000-000000000000';
const SCHEMA = {
  type: 'object',
  required: ['invoice', 'amount'],
  properties: { invoice: { type: 'string', minLength: 3 }, amount: { type: 'number', minimum: 0 } },
};

describe('POST /api/v1/webhooks/trigger/:process_id', () => {
  const suite = jobRouteSuite();
  let t: ApiTestContext;
  let w: Workspace;
  let rec: ReturnType<typeof recordingDispatch>;
  beforeAll(() => {
    ({ t, rec } = suite);
  });
  beforeEach(() => {
    ({ w } = suite);
  });

  const hook = (key: string, processId: string, body: unknown) =>
    t.http.post(`/api/v1/webhooks/trigger/${processId}`).set('X-API-Key', key).send(body as object);
  /** A well-formed webhook call as an integrator sends it, through the typed client (@svc/client): answers the job. */
  const hooked = (key: string, processId: string, body: BodyOf<'triggerJobByWebhook'>) =>
    apiClient(t, { apiKey: key }).call('triggerJobByWebhook', { path: { process_id: processId }, body });

  describe('success', () => {
    it('creates a pending job at the default priority and answers 201 with every JobResponse field', async () => {
      const res = await hook(w.key, w.process.id, { machine_id: w.machine.id, input_data: { any: ['thing'] } });
      expect(res.status).toBe(201);
      expect(res.body.success).toBe(true);
      const job = res.body.data;
      expect(Object.keys(job).sort()).toEqual(CONTRACT_JOB_FIELDS);
      expect(job).toEqual(expectedNewJob(w, { priority: 3, input_data: { any: ['thing'] } }));
      const [row] = await t.sql`select source from jobs where id = ${job.id}`;
      expect(row!.source).toBe('webhook');
      expect(rec.created).toContainEqual({ id: job.id, tenant_id: w.tenant.id, machine_id: w.machine.id, priority: 3 });
      expect(await quotaUsed(t.sql, w.tenant.id)).toBe(1);
    });

    it('writes the audit-log row trigger_job / webhook with the key as actor', async () => {
      const res = await hook(w.key, w.process.id, { machine_id: w.machine.id });
      const rows = await t.sql`
        select actor_type, actor_id, action, source, resource_type, resource_id, details, request_id
        from audit_log where tenant_id = ${w.tenant.id}`;
      expect(rows).toEqual([{
        actor_type: 'api_key', actor_id: w.keyId, action: 'trigger_job', source: 'webhook', resource_type: 'job',
        resource_id: res.body.data.id, details: { process_id: w.process.id, machine_id: w.machine.id, priority: 3 },
        request_id: res.headers['x-request-id'],
      }]);
    });

    it('needs no scope: a key with unrelated scopes triggers', async () => {
      const { key } = await seedApiKey(t.sql, w.tenant.id, { scopes: ['queues:read'] });
      expect(await hooked(key, w.process.id, { machine_id: w.machine.id })).toMatchObject({ process_id: w.process.id, status: 'pending' });
    });

    it('accepts input_data as is, null or absent when the process has no input_schema', async () => {
      for (const body of [{ input_data: { x: 1 } }, { input_data: null }, {}]) {
        expect((await hooked(w.key, w.process.id, { machine_id: w.machine.id, ...body })).input_data).toEqual(body.input_data ?? null);
      }
    });

    it('accepts input_data that satisfies the input_schema', async () => {
      const p = await seedProcess(t.sql, w.tenant.id, { input_schema: SCHEMA });
      const job = await hooked(w.key, p.id, { machine_id: w.machine.id, input_data: { invoice: 'F-001', amount: 10.5 } });
      expect(job.input_data).toEqual({ invoice: 'F-001', amount: 10.5 });
    });

    it('accepts ids written in upper case', async () => {
      expect(await hooked(w.key, w.process.id.toUpperCase(), { machine_id: w.machine.id.toUpperCase() })).toMatchObject({ process_id: w.process.id, machine_id: w.machine.id });
    });

    it('runs on an offline machine of the tenant: the job waits for it', async () => {
      const { row: offline } = await seedMachine(t.sql, w.tenant.id, { status: 'offline' });
      expect((await hooked(w.key, w.process.id, { machine_id: offline.id })).machine_id).toBe(offline.id);
    });
  });

  describe('input_schema (check 5)', () => {
    it('answers 422 with the exact message when input_data is missing or null', async () => {
      const p = await seedProcess(t.sql, w.tenant.id, { input_schema: SCHEMA });
      for (const body of [{ machine_id: w.machine.id }, { machine_id: w.machine.id, input_data: null }]) {
        const res = await hook(w.key, p.id, body);
        expect(res.status).toBe(422);
        expect(res.body.error).toMatchObject({
          code: 'VALIDATION_ERROR',
          message: 'El proceso requiere input_data según su schema',
          details: [{ field: 'body → input_data', message: 'El proceso requiere input_data según su schema' }],
        });
      }
      expect(await jobCount(t.sql, w.tenant.id)).toBe(0);
    });

    it('answers 422 naming the violation after the exact prefix when input_data breaks the schema', async () => {
      const p = await seedProcess(t.sql, w.tenant.id, { input_schema: SCHEMA });
      const res = await hook(w.key, p.id, { machine_id: w.machine.id, input_data: { invoice: 'F-001', amount: -1 } });
      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe('VALIDATION_ERROR');
      expect(res.body.error.message.startsWith('input_data no cumple el schema del proceso:')).toBe(true);
      expect(res.body.error.message).toMatch(/^input_data no cumple el schema del proceso: input_data → amount: .+/);
      expect(res.body.error.details).toEqual([{ field: 'body → input_data → amount', message: expect.any(String) }]);
      const missing = await hook(w.key, p.id, { machine_id: w.machine.id, input_data: { amount: 1 } });
      expect(missing.body.error.message).toMatch(/^input_data no cumple el schema del proceso: input_data → invoice: /);
      expect(await jobCount(t.sql, w.tenant.id)).toBe(0);
      expect(await quotaUsed(t.sql, w.tenant.id)).toBe(0);
    });
  });

  describe('invalid body', () => {
    const bad: Array<[string, (w: Workspace) => unknown, string]> = [
      ['a missing machine_id', () => ({}), 'body → machine_id'],
      ['a null machine_id', () => ({ machine_id: null }), 'body → machine_id'],
      ['a machine_id that is not a UUID', () => ({ machine_id: 'machine-1' }), 'body → machine_id'],
      ['input_data as an array', (w) => ({ machine_id: w.machine.id, input_data: [] }), 'body → input_data'],
      ['input_data as a number', (w) => ({ machine_id: w.machine.id, input_data: 5 }), 'body → input_data'],
      ['a priority, which the webhook does not let callers set', (w) => ({ machine_id: w.machine.id, priority: 5 }), 'body → priority'],
    ];
    it.each(bad)('rejects %s with 422', async (_name, body, field) => {
      const res = await hook(w.key, w.process.id, body(w));
      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe('VALIDATION_ERROR');
      expect(res.body.error.details.map((d: { field: string }) => d.field)).toContain(field);
      expect(await jobCount(t.sql, w.tenant.id)).toBe(0);
    });

    it('rejects with 422 a machine_id that names no active machine of the tenant', async () => {
      const other = await seedWorkspace(t.sql);
      const { row: inactive } = await seedMachine(t.sql, w.tenant.id, { is_active: false });
      for (const id of [MISSING, other.machine.id, inactive.id]) {
        const res = await hook(w.key, w.process.id, { machine_id: id });
        expect(res.status).toBe(422);
        expect(res.body.error.details).toEqual([{ field: 'body → machine_id', message: 'La máquina no existe en este workspace o no está activa' }]);
      }
      expect(await jobCount(t.sql, w.tenant.id)).toBe(0);
      expect(await quotaUsed(t.sql, w.tenant.id)).toBe(0);
    });

    it('rejects a process id that is not a UUID with 422', async () => {
      const res = await hook(w.key, 'not-a-uuid', { machine_id: w.machine.id });
      expect(res.status).toBe(422);
      expect(res.body.error.details[0].field).toBe('path → process_id');
    });
  });

  describe('each check on its own', () => {
    it('401: no key, unknown key, revoked key, expired key', async () => {
      expect((await t.http.post(`/api/v1/webhooks/trigger/${w.process.id}`).send({ machine_id: w.machine.id })).status).toBe(401);
      expect((await hook('svc_ak_nope', w.process.id, { machine_id: w.machine.id })).status).toBe(401);
      const revoked = await seedApiKey(t.sql, w.tenant.id, { is_active: false });
      expect((await hook(revoked.key, w.process.id, { machine_id: w.machine.id })).status).toBe(401);
      const expired = await seedApiKey(t.sql, w.tenant.id, { expires_at: new Date(Date.now() - 1000) });
      const res = await hook(expired.key, w.process.id, { machine_id: w.machine.id });
      expect(res.status).toBe(401);
      expect(res.body.error).toMatchObject({ code: 'UNAUTHORIZED', message: 'API key expirada' });
    });

    it('403: IP not allowed', async () => {
      const { key } = await seedApiKey(t.sql, w.tenant.id, { allowed_ips: ['203.0.113.0/24'] });
      const res = await hook(key, w.process.id, { machine_id: w.machine.id });
      expect(res.status).toBe(403);
      expect(res.body.error.message).toBe('IP no autorizada');
    });

    it('403: the plan lacks webhooks (1)', async () => {
      const x = await seedWorkspace(t.sql, { tenant: { plan_features: ['api_keys'] } });
      const res = await hook(x.key, x.process.id, { machine_id: x.machine.id });
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('FORBIDDEN');
    });

    it('429 QUOTA_EXCEEDED: the monthly quota is used up (2)', async () => {
      const x = await seedWorkspace(t.sql, { tenant: { monthly_quota: 1 } });
      expect((await hook(x.key, x.process.id, { machine_id: x.machine.id })).status).toBe(201);
      const res = await hook(x.key, x.process.id, { machine_id: x.machine.id });
      expect(res.status).toBe(429);
      expect(res.body.error).toMatchObject({ code: 'QUOTA_EXCEEDED', message: 'Cuota mensual de ejecuciones agotada' });
    });

    it('403: the subscription is not active (3)', async () => {
      const x = await seedWorkspace(t.sql, { tenant: { subscription_status: 'past_due' } });
      const res = await hook(x.key, x.process.id, { machine_id: x.machine.id });
      expect(res.status).toBe(403);
      expect(res.body.error.message).toBe('La suscripción del workspace no está activa');
    });

    it('404: the process is missing, another tenant\'s or inactive (4)', async () => {
      const other = await seedWorkspace(t.sql);
      const inactive = await seedProcess(t.sql, w.tenant.id, { is_active: false });
      for (const id of [MISSING, other.process.id, inactive.id]) {
        const res = await hook(w.key, id, { machine_id: w.machine.id });
        expect(res.status).toBe(404);
        expect(res.body.error.code).toBe('NOT_FOUND');
      }
    });
  });

  describe('the check order when several fail at once', () => {
    it('no webhooks feature + exhausted quota → 403', async () => {
      const x = await seedWorkspace(t.sql, { tenant: { plan_features: ['api_keys'], monthly_quota: 0 } });
      const res = await hook(x.key, x.process.id, { machine_id: x.machine.id });
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('FORBIDDEN');
    });

    it('exhausted quota + inactive subscription → the quota error', async () => {
      const x = await seedWorkspace(t.sql, { tenant: { monthly_quota: 0, subscription_status: 'suspended' } });
      const res = await hook(x.key, MISSING, { input_data: 'bad' });
      expect(res.status).toBe(429);
      expect(res.body.error.code).toBe('QUOTA_EXCEEDED');
    });

    it('inactive subscription + missing process → 403', async () => {
      const x = await seedWorkspace(t.sql, { tenant: { subscription_status: 'canceled' } });
      const res = await hook(x.key, MISSING, { machine_id: x.machine.id });
      expect(res.status).toBe(403);
    });

    it('missing process + invalid input → 404', async () => {
      const res = await hook(w.key, MISSING, { machine_id: 'nope', input_data: 7, priority: 9 });
      expect(res.status).toBe(404);
    });

    it('invalid IP + no webhooks feature → the IP error', async () => {
      const x = await seedWorkspace(t.sql, { tenant: { plan_features: [] } });
      const { key } = await seedApiKey(t.sql, x.tenant.id, { allowed_ips: ['198.51.100.7'] });
      const res = await hook(key, x.process.id, { machine_id: x.machine.id });
      expect(res.status).toBe(403);
      expect(res.body.error.message).toBe('IP no autorizada');
    });
  });

  describe('the monthly quota', () => {
    it('creates exactly 100 jobs out of 200 concurrent webhook triggers against a quota of 100', async () => {
      const x = await seedWorkspace(t.sql, { tenant: { monthly_quota: 100 }, machine: { slots: 64 } });
      // 60 per minute per key: spread the load over 4 keys
      const keys = await Promise.all(Array.from({ length: 4 }, () => seedApiKey(t.sql, x.tenant.id)));
      const results = await Promise.all(
        Array.from({ length: 200 }, (_, i) => hook(keys[i % 4]!.key, x.process.id, { machine_id: x.machine.id })),
      );
      expect(results.filter((r) => r.status === 201)).toHaveLength(100);
      expect(results.filter((r) => r.status === 429 && r.body.error.code === 'QUOTA_EXCEEDED')).toHaveLength(100);
      expect(await jobCount(t.sql, x.tenant.id)).toBe(100);
      expect(await quotaUsed(t.sql, x.tenant.id)).toBe(100);
      const [audit] = await t.sql`select count(*)::int as n from audit_log where tenant_id = ${x.tenant.id} and action = 'trigger_job'`;
      expect(audit!.n).toBe(100);
    });

    it('is not consumed by triggers that fail at checks 3, 4 or 5 or on the machine', async () => {
      const x = await seedWorkspace(t.sql, { tenant: { monthly_quota: 1 } });
      const schemaProcess = await seedProcess(t.sql, x.tenant.id, { input_schema: SCHEMA });
      expect((await hook(x.key, MISSING, { machine_id: x.machine.id })).status).toBe(404);
      expect((await hook(x.key, schemaProcess.id, { machine_id: x.machine.id })).status).toBe(422);
      expect((await hook(x.key, schemaProcess.id, { machine_id: x.machine.id, input_data: { invoice: 'x' } })).status).toBe(422);
      expect((await hook(x.key, x.process.id, { machine_id: MISSING })).status).toBe(422);
      expect((await hook(x.key, x.process.id, {})).status).toBe(422);
      await t.sql`update tenants set subscription_status = 'suspended' where id = ${x.tenant.id}`;
      expect((await hook(x.key, x.process.id, { machine_id: x.machine.id })).status).toBe(403);
      await t.sql`update tenants set subscription_status = 'active' where id = ${x.tenant.id}`;
      expect(await quotaUsed(t.sql, x.tenant.id)).toBe(0);
      expect((await hook(x.key, x.process.id, { machine_id: x.machine.id })).status).toBe(201);
      expect(await quotaUsed(t.sql, x.tenant.id)).toBe(1);
      expect((await hook(x.key, x.process.id, { machine_id: x.machine.id })).status).toBe(429);
      const [audit] = await t.sql`select count(*)::int as n from audit_log where tenant_id = ${x.tenant.id}`;
      expect(audit!.n).toBe(1);
    });

    it('starts counting again in a new month', async () => {
      const x = await seedWorkspace(t.sql, { tenant: { monthly_quota: 1 } });
      await t.sql`update tenants set quota_used = 1, quota_period = '2021-06-01' where id = ${x.tenant.id}`;
      expect((await hook(x.key, x.process.id, { machine_id: x.machine.id })).status).toBe(201);
      expect(await quotaUsed(t.sql, x.tenant.id)).toBe(1);
      expect((await hook(x.key, x.process.id, { machine_id: x.machine.id })).status).toBe(429);
    });
  });

  describe('Idempotency-Key', () => {
    const keyed = (idem: string, processId: string, body: unknown) =>
      t.http.post(`/api/v1/webhooks/trigger/${processId}`).set('X-API-Key', w.key).set('Idempotency-Key', idem).send(body as object);

    it('answers a repeat with the first response, with one job, one execution and one audit row', async () => {
      const first = await keyed('evt-1', w.process.id, { machine_id: w.machine.id, input_data: { a: 1 } });
      const again = await keyed('evt-1', w.process.id, { machine_id: w.machine.id, input_data: { a: 1 } });
      expect(first.status).toBe(201);
      expect(again.status).toBe(201);
      expect(again.body).toEqual(first.body);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(await jobCount(t.sql, w.tenant.id)).toBe(1);
      expect(await quotaUsed(t.sql, w.tenant.id)).toBe(1);
      const [audit] = await t.sql`select count(*)::int as n from audit_log where tenant_id = ${w.tenant.id} and action = 'trigger_job'`;
      expect(audit!.n).toBe(1);
    });

    it('refuses the same key for another process (422)', async () => {
      const p2 = await seedProcess(t.sql, w.tenant.id);
      expect((await keyed('evt-2', w.process.id, { machine_id: w.machine.id })).status).toBe(201);
      expect((await keyed('evt-2', p2.id, { machine_id: w.machine.id })).status).toBe(422);
      expect(await jobCount(t.sql, w.tenant.id)).toBe(1);
    });
  });

  it('rate-limits at 60 requests per minute per key', async () => {
    const results = [];
    for (let i = 0; i < 61; i++) results.push(await hook(w.key, MISSING, {}));
    expect(results.slice(0, 60).every((r) => r.status === 404)).toBe(true);
    expect(results[0]!.headers['x-ratelimit-limit']).toBe('60');
    expect(results[60]!.status).toBe(429);
    expect(results[60]!.body.error.code).toBe('RATE_LIMIT_EXCEEDED');
    // another key of the same tenant has its own budget
    const { key } = await seedApiKey(t.sql, w.tenant.id);
    expect((await hook(key, MISSING, {})).status).toBe(404);
  });
});
