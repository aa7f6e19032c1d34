import { seedApiKey, seedJob } from '@svc/testing';
import { transitionJob } from '@svc/core/internals';
import { apiClient, type ApiTestContext } from '@svc/testing/api';
import { CONTRACT_STOP_FIELDS, ISO_RE, jobRouteSuite, recordingDispatch, seedWorkspace, type Workspace } from './jobs-support';

describe('POST /api/v1/jobs/:job_id/stop', () => {
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

  const stop = (key: string, id: string) => t.http.post(`/api/v1/jobs/${id}/stop`).set('X-API-Key', key);
  /** A stop as an integrator asks for it, through the typed client (@svc/client): the whole body. */
  const stopped = (key: string, id: string) => apiClient(t, { apiKey: key }).request('stopJob', { path: { job_id: id } });
  const seed = (status: string) => seedJob(t.sql, w.tenant.id, { process_id: w.process.id, machine_id: w.machine.id, status, priority: 2 });

  it('ends a pending job at once as stopped, answering exactly the documented fields', async () => {
    const job = await seed('pending');
    const res = await stopped(w.key, job.id);
    expect(res.success).toBe(true);
    expect(Object.keys(res.data).sort()).toEqual(CONTRACT_STOP_FIELDS);
    expect(res.data).toEqual({
      id: job.id,
      tenant_id: w.tenant.id,
      process_id: w.process.id,
      machine_id: w.machine.id,
      status: 'stopped',
      priority: 2,
      retry_count: 0,
      stop_requested: true,
      logs_archived: false,
      is_attended: false,
      created_at: job.created_at.toISOString(),
      updated_at: expect.stringMatching(ISO_RE),
      resource_metrics: null,
    });
    const [row] = await t.sql`select status, finished_at from jobs where id = ${job.id}`;
    expect(row!.status).toBe('stopped');
    expect(row!.finished_at).toBeInstanceOf(Date);
    expect(rec.stops.find((s) => s.id === job.id)).toBeUndefined();
  });

  it('asks the engine to stop a running job: stop_requested true, status still running', async () => {
    const job = await seed('running');
    expect((await stopped(w.key, job.id)).data).toMatchObject({ id: job.id, status: 'running', stop_requested: true });
    const [row] = await t.sql`select status, stop_requested, finished_at from jobs where id = ${job.id}`;
    expect(row).toEqual({ status: 'running', stop_requested: true, finished_at: null });
    expect(rec.stops).toContainEqual({ id: job.id, machine_id: w.machine.id });
  });

  it('accepts a repeated stop of a running job and nudges the engine again', async () => {
    const job = await seed('running');
    expect((await stopped(w.key, job.id)).data.stop_requested).toBe(true);
    expect((await stopped(w.key, job.id)).data.stop_requested).toBe(true);
    expect(rec.stops.filter((s) => s.id === job.id)).toHaveLength(2);
  });

  it.each(['completed', 'failed', 'stopped', 'timed_out'])('answers 409 for a %s job and changes nothing', async (status) => {
    const job = await seed(status);
    await expect(stopped(w.key, job.id))
      .rejects.toMatchObject({ status: 409, code: 'CONFLICT', message: `El job ya ha finalizado (estado: ${status})`, details: { status } });
    const [row] = await t.sql`select status, stop_requested from jobs where id = ${job.id}`;
    expect(row).toEqual({ status, stop_requested: false });
  });

  it('never loses a stop that races the start of a pending job', async () => {
    for (let i = 0; i < 20; i++) {
      const job = await seed('pending');
      const [res, started] = await Promise.all([
        stopped(w.key, job.id),
        transitionJob(t.sql, { id: job.id, from: 'pending', to: 'running', newAttempt: true }),
      ]);
      const [row] = await t.sql`select status, stop_requested from jobs where id = ${job.id}`;
      if (started) {
        // the engine won: the stop became a request it will act on
        expect(row).toEqual({ status: 'running', stop_requested: true });
        expect(res.data).toMatchObject({ status: 'running', stop_requested: true });
        expect(rec.stops).toContainEqual({ id: job.id, machine_id: w.machine.id });
      } else {
        expect(row).toEqual({ status: 'stopped', stop_requested: true });
        expect(res.data.status).toBe('stopped');
      }
    }
  });

  it('ignores a body', async () => {
    const job = await seed('pending');
    const res = await t.http.post(`/api/v1/jobs/${job.id}/stop`).set('X-API-Key', w.key).send({ status: 'completed', force: true });
    expect(res.status).toBe(200);
    expect(res.body.data.status).toBe('stopped');
  });

  it('answers 404 for a missing job and for another tenant\'s job, leaving it alone', async () => {
    const other = await seedWorkspace(t.sql);
    const foreign = await seedJob(t.sql, other.tenant.id, { process_id: other.process.id, machine_id: other.machine.id, status: 'running' });
    for (const id of ['00000000-0000-4000-8000-000000000000', foreign.id]) {
      await expect(stopped(w.key, id)).rejects.toMatchObject({ status: 404, code: 'NOT_FOUND' });
    }
    const [row] = await t.sql`select stop_requested from jobs where id = ${foreign.id}`;
    expect(row!.stop_requested).toBe(false);
  });

  it('answers 422, not 500, for ids that are not UUIDs', async () => {
    for (const id of ['1', 'abc', 'zzzzzzzz-zzzz-zzzz-zzzz-zzzzzzzzzzzz']) {
      const res = await stop(w.key, id);
      expect(res.status).toBe(422);
      expect(res.body.error.details[0].field).toBe('path → job_id');
    }
  });

  it('answers 401 without a valid key and 403 without jobs:stop', async () => {
    const job = await seed('running');
    expect((await t.http.post(`/api/v1/jobs/${job.id}/stop`)).status).toBe(401);
    const revoked = await seedApiKey(t.sql, w.tenant.id, { is_active: false });
    expect((await stop(revoked.key, job.id)).status).toBe(401);
    const { key } = await seedApiKey(t.sql, w.tenant.id, { scopes: ['jobs:read', 'jobs:write'] });
    const res = await stop(key, job.id);
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('FORBIDDEN');
    const [row] = await t.sql`select stop_requested from jobs where id = ${job.id}`;
    expect(row!.stop_requested).toBe(false);
  });

  it('rate-limits at 30 requests per minute per key', async () => {
    const results = [];
    for (let i = 0; i < 31; i++) results.push(await stop(w.key, '00000000-0000-4000-8000-000000000000'));
    expect(results.slice(0, 30).every((r) => r.status === 404)).toBe(true);
    expect(results[0]!.headers['x-ratelimit-limit']).toBe('30');
    expect(results[30]!.status).toBe(429);
    expect(results[30]!.body.error.code).toBe('RATE_LIMIT_EXCEEDED');
  });
});
