import {
  canTransition, findJobWithNames, requestRunningJobStop, transitionJob, JOB_STATUSES, JOB_TRANSITIONS, type JobStatus,
} from '../src';
import { createTestContext, seedJob, seedMachine, seedProcess, seedTenant, type TestContext } from '@svc/testing';

describe('job transitions', () => {
  let t: TestContext;
  let tenantId: string;
  let processId: string;
  let machineId: string;

  beforeAll(async () => {
    t = await createTestContext();
    tenantId = (await seedTenant(t.sql)).id;
    processId = (await seedProcess(t.sql, tenantId)).id;
    machineId = (await seedMachine(t.sql, tenantId)).row.id;
  });
  afterAll(() => t.close());

  const job = (fields: Record<string, unknown> = {}) => seedJob(t.sql, tenantId, { process_id: processId, machine_id: machineId, ...fields });

  it('lists exactly the legal transitions of the job state machine', () => {
    const legal: Array<[JobStatus, JobStatus]> = [];
    for (const from of JOB_STATUSES) for (const to of JOB_STATUSES) if (canTransition(from, to)) legal.push([from, to]);
    expect(legal).toEqual([
      ['pending', 'running'], ['pending', 'failed'], ['pending', 'stopped'],
      ['running', 'waiting_input'], ['running', 'completed'], ['running', 'failed'], ['running', 'stopped'], ['running', 'timed_out'],
      ['waiting_input', 'running'], ['waiting_input', 'failed'], ['waiting_input', 'stopped'],
    ]);
    for (const final of ['completed', 'failed', 'stopped', 'timed_out'] as const) expect(JOB_TRANSITIONS[final]).toEqual([]);
  });

  it('refuses an illegal pair before touching the database', async () => {
    const j = await job({ status: 'completed' });
    await expect(transitionJob(t.sql, { id: j.id, from: 'completed', to: 'running' })).rejects.toThrow('Illegal job transition completed → running');
    await expect(transitionJob(t.sql, { id: j.id, from: ['pending', 'completed'], to: 'stopped' })).rejects.toThrow(/completed → stopped/);
    expect((await findJobWithNames(t.sql, tenantId, j.id))!.status).toBe('completed');
  });

  it('starts a pending job with a new attempt and stamps started_at', async () => {
    const j = await job();
    const started = await transitionJob(t.sql, { id: j.id, from: 'pending', to: 'running', newAttempt: true });
    expect(started).toMatchObject({ id: j.id, status: 'running', attempt: 1, finished_at: null });
    expect(started!.started_at).toBeInstanceOf(Date);
    expect(started!.updated_at.getTime()).toBeGreaterThanOrEqual(j.updated_at.getTime());
  });

  it('completes a running job with its output and metrics when the attempt matches, and stamps finished_at', async () => {
    const j = await job({ status: 'running', attempt: 4 });
    const metrics = { cpu_percent_avg: 1.5, cpu_percent_peak: 3, ram_mb_avg: 10, ram_mb_peak: 12, disk_read_mb: 0, disk_write_mb: 0.5, sample_count: 3, duration_seconds: 2.5 };
    const done = await transitionJob(t.sql, {
      id: j.id, from: 'running', to: 'completed', attempt: 4,
      set: { output_data: { ok: true, n: [1, 2] }, resource_metrics: metrics, logs: 'line 1\nline 2', progress_percent: 100 },
    });
    expect(done).toMatchObject({ status: 'completed', attempt: 4, output_data: { ok: true, n: [1, 2] }, resource_metrics: metrics, logs: 'line 1\nline 2', progress_percent: 100 });
    expect(done!.finished_at).toBeInstanceOf(Date);
  });

  it('refuses a result from a stale attempt and leaves the job untouched', async () => {
    const j = await job({ status: 'running', attempt: 2 });
    const stale = await transitionJob(t.sql, { id: j.id, from: 'running', to: 'failed', attempt: 1, set: { error_message: 'late' } });
    expect(stale).toBeNull();
    const now = await findJobWithNames(t.sql, tenantId, j.id);
    expect(now).toMatchObject({ status: 'running', attempt: 2, error_message: null, finished_at: null });
  });

  it('refuses a transition from the wrong state: a duplicate completion changes nothing', async () => {
    const j = await job({ status: 'running' });
    expect(await transitionJob(t.sql, { id: j.id, from: 'running', to: 'completed', set: { output_data: { first: true } } })).not.toBeNull();
    expect(await transitionJob(t.sql, { id: j.id, from: 'running', to: 'failed', set: { error_message: 'second' } })).toBeNull();
    const pending = await job();
    expect(await transitionJob(t.sql, { id: pending.id, from: 'running', to: 'timed_out' })).toBeNull();
    expect((await findJobWithNames(t.sql, tenantId, j.id))).toMatchObject({ status: 'completed', output_data: { first: true }, error_message: null });
    expect((await findJobWithNames(t.sql, tenantId, pending.id))!.status).toBe('pending');
  });

  it('lets exactly one of two concurrent starts of the same job win', async () => {
    const j = await job();
    const results = await Promise.all([
      transitionJob(t.sql, { id: j.id, from: 'pending', to: 'running', newAttempt: true }),
      transitionJob(t.sql, { id: j.id, from: 'pending', to: 'running', newAttempt: true }),
    ]);
    expect(results.filter((r) => r !== null)).toHaveLength(1);
    expect((await findJobWithNames(t.sql, tenantId, j.id))!.attempt).toBe(1);
  });

  it('guards by tenant when a tenant is given', async () => {
    const other = await seedTenant(t.sql);
    const j = await job();
    expect(await transitionJob(t.sql, { id: j.id, tenantId: other.id, from: 'pending', to: 'stopped' })).toBeNull();
    expect(await transitionJob(t.sql, { id: j.id, tenantId, from: 'pending', to: 'stopped' })).toMatchObject({ status: 'stopped' });
  });

  it('accepts any of several from-states', async () => {
    const a = await job();
    const b = await job({ status: 'running' });
    for (const j of [a, b]) {
      expect(await transitionJob(t.sql, { id: j.id, from: ['pending', 'running'], to: 'stopped' })).toMatchObject({ status: 'stopped' });
    }
  });

  it('marks a stop request only on a running job, leaving its status running', async () => {
    const running = await job({ status: 'running' });
    const pending = await job();
    expect(await requestRunningJobStop(t.sql, running.id)).toMatchObject({ status: 'running', stop_requested: true });
    expect(await requestRunningJobStop(t.sql, pending.id)).toBeNull();
    expect((await findJobWithNames(t.sql, tenantId, pending.id))!.stop_requested).toBe(false);
  });

  it('returns the job with its process and machine names', async () => {
    const j = await job();
    const found = await findJobWithNames(t.sql, tenantId, j.id);
    const [names] = await t.sql`select p.name as p, m.name as m from processes p, machines m where p.id = ${processId} and m.id = ${machineId}`;
    expect(found).toMatchObject({ process_name: names!.p, machine_name: names!.m });
    expect(await findJobWithNames(t.sql, (await seedTenant(t.sql)).id, j.id)).toBeNull();
  });
});
