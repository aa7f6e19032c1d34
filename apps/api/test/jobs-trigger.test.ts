import { seedApiKey, seedJob, seedMachine, seedProcess, seedTenant } from '@svc/testing';
import type { BodyOf } from '@svc/client';
import { apiClient, type ApiTestContext } from '@svc/testing/api';
import {
  CONTRACT_JOB_FIELDS, expectedNewJob, jobCount, quotaUsed, jobRouteSuite, recordingDispatch, seedWorkspace, type Workspace,
} from './jobs-support';

describe('POST /api/v1/jobs/trigger', () => {
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

  const trigger = (key: string, body: unknown) =>
    t.http.post('/api/v1/jobs/trigger').set('X-API-Key', key).send(body as object);
  /** A well-formed trigger as an integrator sends it, through the typed client (@svc/client): answers the job. */
  const triggered = (key: string, body: BodyOf<'triggerJob'>) => apiClient(t, { apiKey: key }).call('triggerJob', { body });

  describe('success', () => {
    it('creates a pending job and answers 201 with every JobResponse field', async () => {
      const res = await trigger(w.key, { process_id: w.process.id, machine_id: w.machine.id, input_data: { order: 42, tags: ['a'] }, priority: 5 });
      expect(res.status).toBe(201);
      expect(res.body.success).toBe(true);
      const job = res.body.data;
      expect(Object.keys(job).sort()).toEqual(CONTRACT_JOB_FIELDS);
      expect(job).toEqual(expectedNewJob(w, { priority: 5, input_data: { order: 42, tags: ['a'] } }));
      const [row] = await t.sql`select status, source, priority, input_data, quota_used from jobs, tenants where jobs.id = ${job.id} and tenants.id = jobs.tenant_id`;
      expect(row).toEqual({ status: 'pending', source: 'api', priority: 5, input_data: { order: 42, tags: ['a'] }, quota_used: 1 });
    });

    it('tells the dispatch engine about the new job after the commit', async () => {
      const job = await triggered(w.key, { process_id: w.process.id, machine_id: w.machine.id });
      expect(rec.created).toContainEqual({ id: job.id, tenant_id: w.tenant.id, machine_id: w.machine.id, priority: 3 });
    });

    it('defaults priority to 3 and input_data to null', async () => {
      expect(await triggered(w.key, { process_id: w.process.id })).toMatchObject({ priority: 3, input_data: null, machine_id: w.machine.id });
    });

    it('accepts every priority from 1 to 5', async () => {
      for (const priority of [1, 2, 3, 4, 5]) {
        expect((await triggered(w.key, { process_id: w.process.id, priority })).priority).toBe(priority);
      }
    });

    it('does not validate input_data against the process input_schema', async () => {
      const p = await seedProcess(t.sql, w.tenant.id, {
        input_schema: { type: 'object', required: ['amount'], properties: { amount: { type: 'number' } } },
      });
      const wrong = await triggered(w.key, { process_id: p.id, input_data: { amount: 'not a number' } });
      expect(wrong.input_data).toEqual({ amount: 'not a number' });
      const none = await triggered(w.key, { process_id: p.id });
      expect(none).toMatchObject({ process_id: p.id, input_data: null, status: 'pending' });
    });

    it('runs on a named machine that is offline: the job waits for it', async () => {
      const { row: offline } = await seedMachine(t.sql, w.tenant.id, { status: 'offline' });
      expect(await triggered(w.key, { process_id: w.process.id, machine_id: offline.id })).toMatchObject({ machine_id: offline.id, machine_name: offline.name, status: 'pending' });
    });

    it('accepts ids written in upper case', async () => {
      expect(await triggered(w.key, { process_id: w.process.id.toUpperCase(), machine_id: w.machine.id.toUpperCase() })).toMatchObject({ process_id: w.process.id, machine_id: w.machine.id });
    });

    it('writes an audit-log row trigger_job with source api', async () => {
      const job = await triggered(w.key, { process_id: w.process.id });
      const rows = await t.sql`select actor_type, actor_id, action, source, resource_type, resource_id from audit_log where tenant_id = ${w.tenant.id}`;
      expect(rows).toEqual([{ actor_type: 'api_key', actor_id: w.keyId, action: 'trigger_job', source: 'api', resource_type: 'job', resource_id: job.id }]);
    });
  });

  describe('machine auto-selection', () => {
    it('picks the least-loaded online, active machine of the tenant', async () => {
      const tenant = await seedTenant(t.sql);
      const { key } = await seedApiKey(t.sql, tenant.id);
      const p = await seedProcess(t.sql, tenant.id);
      const loaded = (await seedMachine(t.sql, tenant.id, { name: 'loaded', slots: 2 })).row; // 2 jobs / 2 slots = 1
      const light = (await seedMachine(t.sql, tenant.id, { name: 'light', slots: 4 })).row; // 1 job / 4 slots = 0.25
      await seedMachine(t.sql, tenant.id, { name: 'offline', status: 'offline' });
      await seedMachine(t.sql, tenant.id, { name: 'busy', status: 'busy' });
      await seedMachine(t.sql, tenant.id, { name: 'inactive', is_active: false });
      const other = await seedTenant(t.sql);
      await seedMachine(t.sql, other.id, { name: 'elsewhere' });
      for (let i = 0; i < 2; i++) await seedJob(t.sql, tenant.id, { process_id: p.id, machine_id: loaded.id, status: i ? 'running' : 'pending' });
      await seedJob(t.sql, tenant.id, { process_id: p.id, machine_id: light.id, status: 'running' });
      // finished jobs are no load
      for (let i = 0; i < 5; i++) await seedJob(t.sql, tenant.id, { process_id: p.id, machine_id: light.id, status: 'completed' });

      expect(await triggered(key, { process_id: p.id, machine_id: null })).toMatchObject({ machine_id: light.id, machine_name: 'light' });
    });

    it('spreads successive triggers over the machines by load', async () => {
      const tenant = await seedTenant(t.sql);
      const { key } = await seedApiKey(t.sql, tenant.id);
      const p = await seedProcess(t.sql, tenant.id);
      const a = (await seedMachine(t.sql, tenant.id)).row;
      const b = (await seedMachine(t.sql, tenant.id)).row;
      const chosen: string[] = [];
      for (let i = 0; i < 4; i++) chosen.push((await triggered(key, { process_id: p.id })).machine_id);
      expect(chosen.filter((id) => id === a.id)).toHaveLength(2);
      expect(chosen.filter((id) => id === b.id)).toHaveLength(2);
    });

    it('answers 409 NO_MACHINE_AVAILABLE when no machine is online and active, creating and consuming nothing', async () => {
      const tenant = await seedTenant(t.sql);
      const { key } = await seedApiKey(t.sql, tenant.id);
      const p = await seedProcess(t.sql, tenant.id);
      await seedMachine(t.sql, tenant.id, { status: 'offline' });
      await seedMachine(t.sql, tenant.id, { status: 'busy' });
      await seedMachine(t.sql, tenant.id, { is_active: false });
      await expect(triggered(key, { process_id: p.id }))
        .rejects.toMatchObject({ status: 409, code: 'NO_MACHINE_AVAILABLE', message: 'No hay ninguna máquina en línea y activa disponible' });
      expect(await jobCount(t.sql, tenant.id)).toBe(0);
      expect(await quotaUsed(t.sql, tenant.id)).toBe(0);
    });
  });

  describe('invalid input', () => {
    const bad: Array<[string, (w: Workspace) => unknown, string]> = [
      ['a missing process_id', () => ({}), 'body → process_id'],
      ['a process_id that is not a UUID', () => ({ process_id: 'abc' }), 'body → process_id'],
      ['a numeric process_id', () => ({ process_id: 12 }), 'body → process_id'],
      ['priority 0', (w) => ({ process_id: w.process.id, priority: 0 }), 'body → priority'],
      ['priority 6', (w) => ({ process_id: w.process.id, priority: 6 }), 'body → priority'],
      ['a fractional priority', (w) => ({ process_id: w.process.id, priority: 2.5 }), 'body → priority'],
      ['a priority sent as text', (w) => ({ process_id: w.process.id, priority: '3' }), 'body → priority'],
      ['a machine_id that is not a UUID', (w) => ({ process_id: w.process.id, machine_id: 'm-1' }), 'body → machine_id'],
      ['input_data as an array', (w) => ({ process_id: w.process.id, input_data: [1, 2] }), 'body → input_data'],
      ['input_data as text', (w) => ({ process_id: w.process.id, input_data: 'x' }), 'body → input_data'],
      ['an unknown field', (w) => ({ process_id: w.process.id, input: { a: 1 } }), 'body → input'],
      ['a body that is an array', () => [1], 'body'],
    ];
    it.each(bad)('rejects %s with 422 and creates nothing', async (_name, body, field) => {
      const res = await trigger(w.key, body(w));
      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe('VALIDATION_ERROR');
      expect(res.body.error.details.map((d: { field: string }) => d.field)).toContain(field);
      expect(res.body.detail.length).toBeGreaterThan(0);
      expect(await jobCount(t.sql, w.tenant.id)).toBe(0);
      expect(await quotaUsed(t.sql, w.tenant.id)).toBe(0);
    });
  });

  describe('existence in the tenant', () => {
    it('answers 404 for a missing process, another tenant\'s process and an inactive process', async () => {
      const other = await seedWorkspace(t.sql);
      const inactive = await seedProcess(t.sql, w.tenant.id, { is_active: false });
      for (const id of ['00000000-0000-4000-8000-000000000000', other.process.id, inactive.id]) {
        await expect(triggered(w.key, { process_id: id })).rejects.toMatchObject({ status: 404, code: 'NOT_FOUND', message: 'Proceso no encontrado' });
      }
      expect(await jobCount(t.sql, w.tenant.id)).toBe(0);
    });

    it('answers 404 for a named machine that is missing, another tenant\'s or inactive', async () => {
      const other = await seedWorkspace(t.sql);
      const { row: inactive } = await seedMachine(t.sql, w.tenant.id, { is_active: false });
      for (const id of ['00000000-0000-4000-8000-000000000000', other.machine.id, inactive.id]) {
        await expect(triggered(w.key, { process_id: w.process.id, machine_id: id }))
          .rejects.toMatchObject({ status: 404, code: 'NOT_FOUND', message: 'Máquina no encontrada' });
      }
      expect(await jobCount(t.sql, w.tenant.id)).toBe(0);
      expect(await quotaUsed(t.sql, w.tenant.id)).toBe(0);
    });

    it('answers 404 before 422 when the process is missing and the rest of the body is invalid', async () => {
      const res = await trigger(w.key, { process_id: '00000000-0000-4000-8000-000000000000', priority: 9, machine_id: 'x' });
      expect(res.status).toBe(404);
    });
  });

  describe('authentication, scope, plan, subscription and quota', () => {
    it('answers 401 without a key and with an unknown key', async () => {
      expect((await t.http.post('/api/v1/jobs/trigger').send({ process_id: w.process.id })).status).toBe(401);
      const res = await trigger('svc_ak_unknown', { process_id: w.process.id });
      expect(res.status).toBe(401);
      expect(res.body.error).toMatchObject({ code: 'UNAUTHORIZED', message: 'Credenciales inválidas' });
    });

    it('answers 403 to a key without jobs:write', async () => {
      const { key } = await seedApiKey(t.sql, w.tenant.id, { scopes: ['jobs:read', 'jobs:stop'] });
      const res = await trigger(key, { process_id: w.process.id });
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('FORBIDDEN');
    });

    it('answers 403 when the plan lacks api_keys', async () => {
      const x = await seedWorkspace(t.sql, { tenant: { plan_features: ['webhooks'] } });
      const res = await trigger(x.key, { process_id: x.process.id });
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('FORBIDDEN');
    });

    it('answers 403 when the subscription is not active', async () => {
      for (const status of ['suspended', 'canceled', 'past_due']) {
        const x = await seedWorkspace(t.sql, { tenant: { subscription_status: status } });
        const res = await trigger(x.key, { process_id: x.process.id });
        expect(res.status).toBe(403);
        expect(res.body.error).toMatchObject({ code: 'FORBIDDEN', message: 'La suscripción del workspace no está activa' });
      }
      const trialing = await seedWorkspace(t.sql, { tenant: { subscription_status: 'trialing' } });
      expect((await trigger(trialing.key, { process_id: trialing.process.id })).status).toBe(201);
    });

    it('answers 429 QUOTA_EXCEEDED once the monthly quota is used up, and counts against it', async () => {
      const x = await seedWorkspace(t.sql, { tenant: { monthly_quota: 2 } });
      expect((await trigger(x.key, { process_id: x.process.id })).status).toBe(201);
      expect((await trigger(x.key, { process_id: x.process.id })).status).toBe(201);
      const res = await trigger(x.key, { process_id: x.process.id });
      expect(res.status).toBe(429);
      expect(res.body.error).toMatchObject({ code: 'QUOTA_EXCEEDED', message: 'Cuota mensual de ejecuciones agotada' });
      expect(res.body.error.details).toEqual({ monthly_quota: 2, quota_used: 2, resets_at: expect.stringMatching(/^\d{4}-\d{2}-01T00:00:00\.000Z$/) });
      expect(await jobCount(t.sql, x.tenant.id)).toBe(2);
    });

    it('puts the plan (403) before the quota, and the quota (429) before the subscription and the process', async () => {
      const noPlan = await seedWorkspace(t.sql, { tenant: { plan_features: ['webhooks'], monthly_quota: 0 } });
      expect((await trigger(noPlan.key, { process_id: noPlan.process.id })).status).toBe(403);
      const spent = await seedWorkspace(t.sql, { tenant: { monthly_quota: 0, subscription_status: 'suspended' } });
      const res = await trigger(spent.key, { process_id: '00000000-0000-4000-8000-000000000000' });
      expect(res.status).toBe(429);
      expect(res.body.error.code).toBe('QUOTA_EXCEEDED');
      const suspended = await seedWorkspace(t.sql, { tenant: { subscription_status: 'suspended' } });
      expect((await trigger(suspended.key, { process_id: '00000000-0000-4000-8000-000000000000' })).status).toBe(403);
    });
  });

  describe('the monthly quota', () => {
    it('creates exactly 100 jobs out of 200 concurrent triggers against a quota of 100', async () => {
      const x = await seedWorkspace(t.sql, { tenant: { monthly_quota: 100 }, machine: { slots: 64 } });
      // the route allows 30 per minute per key: spread the load over 10 keys
      const keys = await Promise.all(Array.from({ length: 10 }, () => seedApiKey(t.sql, x.tenant.id)));
      const results = await Promise.all(
        Array.from({ length: 200 }, (_, i) => trigger(keys[i % 10]!.key, { process_id: x.process.id })),
      );
      const statuses = results.map((r) => r.status);
      expect(statuses.filter((s) => s === 201)).toHaveLength(100);
      expect(statuses.filter((s) => s === 429)).toHaveLength(100);
      expect(results.filter((r) => r.status === 429).every((r) => r.body.error.code === 'QUOTA_EXCEEDED')).toBe(true);
      expect(await jobCount(t.sql, x.tenant.id)).toBe(100);
      expect(await quotaUsed(t.sql, x.tenant.id)).toBe(100);
    });

    it('does not consume the quota when a trigger fails after the quota check', async () => {
      const x = await seedWorkspace(t.sql, { tenant: { monthly_quota: 1 } });
      const other = await seedWorkspace(t.sql);
      const failures = [
        { process_id: '00000000-0000-4000-8000-000000000000' },
        { process_id: x.process.id, priority: 7 },
        { process_id: x.process.id, machine_id: other.machine.id },
      ];
      for (const body of failures) expect((await trigger(x.key, body)).status).toBeGreaterThanOrEqual(400);
      await t.sql`update machines set status = 'offline' where id = ${x.machine.id}`;
      expect((await trigger(x.key, { process_id: x.process.id })).status).toBe(409);
      expect(await quotaUsed(t.sql, x.tenant.id)).toBe(0);
      await t.sql`update machines set status = 'online' where id = ${x.machine.id}`;
      expect((await trigger(x.key, { process_id: x.process.id })).status).toBe(201);
      expect((await trigger(x.key, { process_id: x.process.id })).status).toBe(429);
      expect(await quotaUsed(t.sql, x.tenant.id)).toBe(1);
    });

    it('starts counting again in a new month', async () => {
      const x = await seedWorkspace(t.sql, { tenant: { monthly_quota: 3 } });
      await t.sql`update tenants set quota_used = 3, quota_period = (date_trunc('month', now() at time zone 'utc') - interval '1 month')::date where id = ${x.tenant.id}`;
      const res = await trigger(x.key, { process_id: x.process.id });
      expect(res.status).toBe(201);
      const [row] = await t.sql`select quota_used, quota_period = date_trunc('month', now() at time zone 'utc')::date as current from tenants where id = ${x.tenant.id}`;
      expect(row).toEqual({ quota_used: 1, current: true });
    });

    it('never lets a quota of 0 run anything, even at a new month', async () => {
      const x = await seedWorkspace(t.sql, { tenant: { monthly_quota: 0 } });
      await t.sql`update tenants set quota_period = '2000-01-01' where id = ${x.tenant.id}`;
      expect((await trigger(x.key, { process_id: x.process.id })).status).toBe(429);
      expect(await jobCount(t.sql, x.tenant.id)).toBe(0);
    });
  });

  describe('Idempotency-Key', () => {
    const keyed = (key: string, idem: string, body: unknown) =>
      t.http.post('/api/v1/jobs/trigger').set('X-API-Key', key).set('Idempotency-Key', idem).send(body as object);

    it('answers a repeat with the first response and creates, counts and audits nothing more', async () => {
      const body = { process_id: w.process.id, input_data: { n: 1 } };
      const first = await keyed(w.key, 'order-77', body);
      const nudges = rec.created.length;
      const again = await keyed(w.key, 'order-77', body);
      expect(first.status).toBe(201);
      expect(again.status).toBe(201);
      expect(again.body).toEqual(first.body);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(await jobCount(t.sql, w.tenant.id)).toBe(1);
      expect(await quotaUsed(t.sql, w.tenant.id)).toBe(1);
      const [audit] = await t.sql`select count(*)::int as n from audit_log where tenant_id = ${w.tenant.id}`;
      expect(audit!.n).toBe(1);
      expect(rec.created.length).toBe(nudges);
    });

    it('replays the first response even after that trigger used up the quota', async () => {
      const x = await seedWorkspace(t.sql, { tenant: { monthly_quota: 1 } });
      const first = await keyed(x.key, 'k-1', { process_id: x.process.id });
      const again = await keyed(x.key, 'k-1', { process_id: x.process.id });
      expect(again.status).toBe(201);
      expect(again.body.data.id).toBe(first.body.data.id);
      expect((await keyed(x.key, 'k-2', { process_id: x.process.id })).status).toBe(429);
    });

    it('refuses the same key with another body (422) and creates nothing', async () => {
      await keyed(w.key, 'same', { process_id: w.process.id, priority: 1 });
      const res = await keyed(w.key, 'same', { process_id: w.process.id, priority: 2 });
      expect(res.status).toBe(422);
      expect(await jobCount(t.sql, w.tenant.id)).toBe(1);
    });

    it('frees the key when the trigger fails, so the client may retry it', async () => {
      await t.sql`update machines set status = 'offline' where id = ${w.machine.id}`;
      expect((await keyed(w.key, 'retry-me', { process_id: w.process.id })).status).toBe(409);
      await t.sql`update machines set status = 'online' where id = ${w.machine.id}`;
      const res = await keyed(w.key, 'retry-me', { process_id: w.process.id });
      expect(res.status).toBe(201);
      expect(res.headers['idempotent-replayed']).toBeUndefined();
    });

    it('keeps keys apart per tenant', async () => {
      const x = await seedWorkspace(t.sql);
      const a = await keyed(w.key, 'shared-name', { process_id: w.process.id });
      const b = await keyed(x.key, 'shared-name', { process_id: x.process.id });
      expect(a.status).toBe(201);
      expect(b.status).toBe(201);
      expect(b.body.data.tenant_id).toBe(x.tenant.id);
    });
  });

  it('rate-limits at 30 requests per minute per key', async () => {
    const results = [];
    for (let i = 0; i < 31; i++) results.push(await trigger(w.key, { process_id: 'not-a-uuid' }));
    expect(results.slice(0, 30).every((r) => r.status === 422)).toBe(true);
    const last = results[30]!;
    expect(last.status).toBe(429);
    expect(last.body.error.code).toBe('RATE_LIMIT_EXCEEDED');
    expect(last.headers['retry-after']).toBeDefined();
    expect(results[0]!.headers['x-ratelimit-limit']).toBe('30');
  });
});
