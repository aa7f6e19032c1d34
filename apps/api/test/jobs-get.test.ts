import { seedApiKey, seedJob } from '@svc/testing';
import { apiClient, createApiTestContext, type ApiTestContext } from '@svc/testing/api';
import { CONTRACT_JOB_FIELDS, ISO_RE, seedWorkspace, type Workspace } from './jobs-support';

describe('GET /api/v1/jobs/:job_id', () => {
  let t: ApiTestContext;
  let w: Workspace;

  beforeAll(async () => {
    t = await createApiTestContext();
  });
  afterAll(() => t.close());
  beforeEach(async () => {
    w = await seedWorkspace(t.sql);
  });

  const get = (key: string, id: string) => t.http.get(`/api/v1/jobs/${id}`).set('X-API-Key', key);
  /** A read as an integrator makes it, through the typed client (@svc/client). */
  const read = (key: string, id: string) => apiClient(t, { apiKey: key }).request('getJob', { path: { job_id: id } });

  it('returns a finished job with every field of JobResponse, datetimes as ISO 8601', async () => {
    const job = await seedJob(t.sql, w.tenant.id, { process_id: w.process.id, machine_id: w.machine.id, status: 'completed', priority: 4, input_data: { a: 1 } });
    const metrics = { cpu_percent_avg: 12.5, cpu_percent_peak: 80, ram_mb_avg: 256, ram_mb_peak: 512.25, disk_read_mb: 1.5, disk_write_mb: 0, sample_count: 10, duration_seconds: 9.75 };
    const triggerId = '11111111-1111-4111-8111-111111111111';
    await t.sql`
      update jobs set output_data = ${t.sql.json({ ok: true })}, logs = 'paso 1\npaso 2', error_message = null, retry_count = 2,
        stop_requested = false, logs_archived = true, logs_archive_key = 'logs/2026/x.gz', is_attended = true,
        pending_input_prompt = '¿Aprobar?', pending_input_options = ${t.sql.json({ choices: ['sí', 'no'] })},
        progress_percent = 100, progress_message = 'hecho', resource_metrics = ${t.sql.json(metrics)}, trigger_id = ${triggerId},
        started_at = '2026-01-02T03:04:05.678Z', finished_at = '2026-01-02T03:05:00Z'
      where id = ${job.id}`;
    const body = await read(w.key, job.id);
    expect(body.success).toBe(true);
    expect(Object.keys(body.data).sort()).toEqual(CONTRACT_JOB_FIELDS);
    expect(body.data).toEqual({
      id: job.id,
      tenant_id: w.tenant.id,
      process_id: w.process.id,
      machine_id: w.machine.id,
      status: 'completed',
      priority: 4,
      input_data: { a: 1 },
      output_data: { ok: true },
      logs: 'paso 1\npaso 2',
      error_message: null,
      exception_type: null,
      started_at: '2026-01-02T03:04:05.678Z',
      finished_at: '2026-01-02T03:05:00.000Z',
      retry_count: 2,
      stop_requested: false,
      logs_archived: true,
      logs_archive_key: 'logs/2026/x.gz',
      is_attended: true,
      pending_input_prompt: '¿Aprobar?',
      pending_input_options: { choices: ['sí', 'no'] },
      progress_percent: 100,
      progress_message: 'hecho',
      created_at: expect.stringMatching(ISO_RE),
      updated_at: expect.stringMatching(ISO_RE),
      process_name: w.process.name,
      machine_name: w.machine.name,
      resource_metrics: metrics,
      trigger_id: triggerId,
      schedule_id: null,
    });
  });

  it('returns a failed job with its error message', async () => {
    const job = await seedJob(t.sql, w.tenant.id, { process_id: w.process.id, machine_id: w.machine.id, status: 'failed' });
    await t.sql`update jobs set error_message = 'La máquina dejó de responder' where id = ${job.id}`;
    const { data } = await read(w.key, job.id);
    expect(data).toMatchObject({ status: 'failed', error_message: 'La máquina dejó de responder', finished_at: expect.stringMatching(ISO_RE) });
  });

  it('finds a job by its id written in upper case', async () => {
    const job = await seedJob(t.sql, w.tenant.id, { process_id: w.process.id, machine_id: w.machine.id });
    const { data } = await read(w.key, job.id.toUpperCase());
    expect(data.id).toBe(job.id);
  });

  it('answers 404 for a missing job and for another tenant\'s job', async () => {
    const other = await seedWorkspace(t.sql);
    const foreign = await seedJob(t.sql, other.tenant.id, { process_id: other.process.id, machine_id: other.machine.id });
    for (const id of ['00000000-0000-4000-8000-000000000000', foreign.id]) {
      await expect(read(w.key, id)).rejects.toMatchObject({ status: 404, code: 'NOT_FOUND', message: 'Job no encontrado' });
    }
  });

  it('answers 422, not 500, for ids that are not UUIDs', async () => {
    for (const id of ['123', 'not-a-uuid', '00000000-0000-4000-8000-00000000000Z', "1' or '1'='1"]) {
      const res = await get(w.key, encodeURIComponent(id));
      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe('VALIDATION_ERROR');
      expect(res.body.error.details[0].field).toBe('path → job_id');
    }
  });

  it('answers 401 without a key or with an expired one, and 403 without jobs:read', async () => {
    const job = await seedJob(t.sql, w.tenant.id, { process_id: w.process.id, machine_id: w.machine.id });
    expect((await t.http.get(`/api/v1/jobs/${job.id}`)).status).toBe(401);
    const expired = await seedApiKey(t.sql, w.tenant.id, { expires_at: new Date(Date.now() - 60_000) });
    expect((await get(expired.key, job.id)).body.error.message).toBe('API key expirada');
    const writer = await seedApiKey(t.sql, w.tenant.id, { scopes: ['jobs:write', 'jobs:stop'] });
    const res = await get(writer.key, job.id);
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('FORBIDDEN');
    const none = await seedApiKey(t.sql, w.tenant.id, { scopes: [] });
    expect((await get(none.key, job.id)).status).toBe(403);
  });

  it('puts the scope (403) before existence (404) and validity (422)', async () => {
    const writer = await seedApiKey(t.sql, w.tenant.id, { scopes: ['jobs:write'] });
    expect((await get(writer.key, '00000000-0000-4000-8000-000000000000')).status).toBe(403);
    expect((await get(writer.key, 'nope')).status).toBe(403);
  });

  it('rate-limits at 60 requests per minute per key', async () => {
    const job = await seedJob(t.sql, w.tenant.id, { process_id: w.process.id, machine_id: w.machine.id });
    const results = [];
    for (let i = 0; i < 61; i++) results.push(await get(w.key, job.id));
    expect(results.slice(0, 60).every((r) => r.status === 200)).toBe(true);
    expect(results[0]!.headers['x-ratelimit-limit']).toBe('60');
    expect(results[60]!.status).toBe(429);
    expect(results[60]!.body.error.code).toBe('RATE_LIMIT_EXCEEDED');
  });
});
