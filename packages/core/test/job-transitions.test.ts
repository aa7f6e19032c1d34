import { readdirSync, readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import {
  appendJobLogs, askJobInput, canTransition, findJobWithNames, giveUpMachineJobs, markSlaBreaches, renewJobLeases,
  reportJobProgress, requestRunningJobStop, startJob, sweepOfflineMachines, timeOutJobs, transitionJob, JOB_STATUSES,
  JOB_TRANSITIONS, type JobStatus,
} from '@svc/core/internals';
import { ACTIVE_JOB_STATUSES, FINAL_JOB_STATUSES, JOB_STATUS_TRANSITIONS, RUN_STATUSES, jobStatusInSql, jobStatusSql } from '../src/jobs/transitions';
import { createTestContext, seedJob, seedMachine, seedProcess, seedTenant, type TestContext, recordStatements } from '@svc/testing';
import { sources, sqlTemplates } from './sql-templates';

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
      ['running', 'pending'], ['running', 'waiting_input'], ['running', 'completed'], ['running', 'failed'], ['running', 'stopped'], ['running', 'timed_out'],
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

  it('writes a status or a guard into the SQL text, and nothing that is not a job status', () => {
    const sql = t.sql;
    const text = (q: unknown) => (q as { strings: readonly string[] }).strings.join('');
    expect(text(jobStatusSql(sql, 'waiting_input'))).toBe("'waiting_input'");
    expect(text(jobStatusInSql(sql, 'j.status', ['running']))).toBe("j.status = 'running'");
    expect(text(jobStatusInSql(sql, 'status', JOB_STATUS_TRANSITIONS.fail.from))).toBe("status in ('running', 'waiting_input')");
    expect(() => jobStatusSql(sql, "running' or true or '" as JobStatus)).toThrow(/Unknown job status/);
    expect(() => jobStatusInSql(sql, 'status; drop table jobs; --', ['running'])).toThrow(/Not a job status column/);
    expect(() => jobStatusInSql(sql, 'status', [])).toThrow(/no status/);
  });

  const record = (fn: () => Promise<unknown>) => recordStatements(t.sql, fn);

  it('the engine\'s statements on jobs take one round trip each on the hot paths and write the table\'s statuses into their text', async () => {
    const statuses = new Set<string>(JOB_STATUSES);
    const machine = (await seedMachine(t.sql, tenantId)).row.id;
    const mine = (fields: Record<string, unknown> = {}) => seedJob(t.sql, tenantId, { process_id: processId, machine_id: machine, ...fields });
    const a = await mine();
    const b = await mine({ status: 'running', attempt: 1 });
    const late = await mine({ status: 'running', attempt: 1 });
    await t.sql`update jobs set timeout_at = now() - interval '1 second', sla_due_at = now() - interval '1 second' where id = ${late.id}`;

    const hot: Array<[string, () => Promise<unknown>]> = [
      ['start', () => startJob(t.sql, a.id, machine, { holder: randomUUID(), leaseSeconds: 60 })],
      ['progress', () => reportJobProgress(t.sql, b.id, 1, { progress_percent: 10 })],
      ['append', () => appendJobLogs(t.sql, b.id, 1, { text: 'línea\n' })],
      ['renew', () => renewJobLeases(t.sql, machine, [{ id: b.id, attempt: 1, alive: true }], 60)],
      ['ask', () => askJobInput(t.sql, b.id, 1, { prompt: '¿Seguir?', options: { choices: ['sí', 'no'] } })],
    ];
    const sent: Array<{ text: string; params: unknown[] }> = [];
    for (const [name, fn] of hot) {
      const statements = await record(fn);
      expect({ name, statements: statements.length }).toEqual({ name, statements: 1 });
      sent.push(...statements);
    }
    expect(await findJobWithNames(t.sql, tenantId, a.id)).toMatchObject({ status: 'running', attempt: 1 });
    expect(await findJobWithNames(t.sql, tenantId, b.id)).toMatchObject({ status: 'waiting_input', progress_percent: 10 });

    sent.push(...await record(async () => {
      await markSlaBreaches(t.sql);
      expect((await timeOutJobs(t.sql)).ended.map((j) => j.id)).toContain(late.id);
      await sweepOfflineMachines(t.sql, 3600);
      // `a` was started and never acknowledged by a robot: handed back, not ended
      expect((await giveUpMachineJobs(t.sql, machine)).ended.map((j) => j.id)).toEqual([b.id]);
    }));
    expect((await findJobWithNames(t.sql, tenantId, a.id))!.status).toBe('pending');
    const updates = sent.filter((s) => /update jobs/.test(s.text));
    expect(updates.length).toBeGreaterThanOrEqual(9);
    for (const s of updates) {
      expect({ text: s.text, boundStatuses: s.params.filter((p) => typeof p === 'string' && statuses.has(p)) })
        .toEqual({ text: s.text, boundStatuses: [] });
      expect(s.text).toMatch(new RegExp(`status (= |in \\()'(${JOB_STATUSES.join('|')})'`));
    }
  });

  it('returns the job with its process and machine names', async () => {
    const j = await job();
    const found = await findJobWithNames(t.sql, tenantId, j.id);
    const [names] = await t.sql`select p.name as p, m.name as m from processes p, machines m where p.id = ${processId} and m.id = ${machineId}`;
    expect(found).toMatchObject({ process_name: names!.p, machine_name: names!.m });
    expect(await findJobWithNames(t.sql, (await seedTenant(t.sql)).id, j.id)).toBeNull();
  });
});

const UPDATES_JOBS = /\bupdate\s+jobs\b/i;
const JOB_STATUS_LITERAL = new RegExp(`'(${JOB_STATUSES.join('|')})'`, 'g');

/** Job status literals written in SQL that updates jobs, as `file:line 'status'`. */
function literalsInJobUpdates(file: string, src: string): string[] {
  return sqlTemplates(src)
    .filter((t) => UPDATES_JOBS.test(t.text))
    .flatMap((t) => (t.text.match(JOB_STATUS_LITERAL) ?? []).map((lit) => `${file}:${t.line} ${lit}`));
}

describe('the job transition table', () => {
  it('names every legal status change once, and each pair belongs to exactly one name', () => {
    const pairs = Object.entries(JOB_STATUS_TRANSITIONS).flatMap(([name, t]) => t.from.map((from) => `${from}→${t.to} ${name}`));
    expect(pairs.sort()).toEqual([
      'pending→failed failPending', 'pending→running start', 'pending→stopped stopPending',
      'running→completed complete', 'running→failed fail', 'running→pending handBack', 'running→stopped stop', 'running→timed_out timeOut',
      'running→waiting_input ask', 'waiting_input→failed fail', 'waiting_input→running answer', 'waiting_input→stopped stop',
    ]);
    // the status groups the guards use agree with the table
    const withWayOut = JOB_STATUSES.filter((s) => JOB_TRANSITIONS[s].length > 0);
    expect([...ACTIVE_JOB_STATUSES].sort()).toEqual([...withWayOut].sort());
    expect(JOB_STATUSES.filter((s) => !withWayOut.includes(s)).sort()).toEqual([...FINAL_JOB_STATUSES].sort());
    expect([...RUN_STATUSES]).toEqual([...JOB_STATUS_TRANSITIONS.fail.from]);
    expect([...RUN_STATUSES]).toEqual([...JOB_STATUS_TRANSITIONS.stop.from]);
  });

});

describe('job status literals in SQL', () => {
  const root = path.join(__dirname, '../../..');
  const dirs = [path.join(root, 'packages/core/src'), ...readdirSync(path.join(root, 'apps')).map((a) => path.join(root, 'apps', a, 'src'))]
    .filter((d) => { try { return readdirSync(d).length > 0; } catch { return false; } });

  it('the scanner finds a literal in an UPDATE of jobs, also inside a nested fragment, and nothing in comments or other tables', () => {
    const sample = [
      "// `update jobs set status = 'failed'` in a comment",
      "const a = sql`update jobs j set status = ${x ? sql`'stopped'` : sql``} where id = ${id}`;",
      "const b = sql`update queue_items set status = 'failed' where ${ok ? sql`j.status = 'running'` : sql``}`;",
      "const c = /`'pending'/.test('`');",
      "const d = tx`",
      "  update jobs set progress_percent = 1",
      "  where status = 'running'`;",
    ].join('\n');
    expect(literalsInJobUpdates('sample.ts', sample)).toEqual(["sample.ts:2 'stopped'", "sample.ts:5 'running'"]);
  });

  it('appear nowhere in statements that update jobs: their statuses come from JOB_STATUS_TRANSITIONS (jobs/transitions.ts)', () => {
    const offenders: string[] = [];
    const updates: string[] = [];
    for (const file of dirs.flatMap(sources)) {
      const src = readFileSync(file, 'utf8');
      const rel = path.relative(root, file);
      for (const t of sqlTemplates(src)) if (UPDATES_JOBS.test(t.text)) updates.push(`${rel}:${t.line}`);
      offenders.push(...literalsInJobUpdates(rel, src));
    }
    expect(offenders).toEqual([]);
    // the scan did read the statements that change a job's status
    for (const file of ['dispatch/job-run.ts', 'dispatch/sweeps.ts', 'jobs/input.ts', 'jobs/transitions.ts']) {
      expect(updates.filter((u) => u.startsWith(`packages/core/src/${file}:`)).length).toBeGreaterThanOrEqual(2);
    }
  });
});
