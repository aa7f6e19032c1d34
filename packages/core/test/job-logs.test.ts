import { randomUUID } from 'node:crypto';
import { ConfigError, parseConfig, ValidationError, type Sql } from '@svc/core';
import { toJobResponse } from '@svc/core/internals';
import {
  LOG_APPEND_MAX_BYTES, LOG_INLINE_MAX_BYTES, LOG_TOTAL_MAX_BYTES, LOG_TRUNCATED_MARKER, appendJobLogs,
  archiveJobLogs, finishJob, findJobWithNames, pgLogArchive, readJobLogs, reportJobProgress, startJob,
} from '@svc/core/internals';
import { seedJob, seedMachine, seedProcess, seedTenant, databaseSuite } from '@svc/testing';

/**
 * Job logs (docs/decisions/job-logs.md) on a real Postgres: appends fenced by the run, their
 * bounds, the tail a JobResponse carries, and the archive sweep with its read-back. The same
 * with a real dispatcher and agent: apps/dispatcher/test/job-logs.test.ts.
 */
const db = databaseSuite();
let sql: Sql;
let tenantId: string;
let processId: string;
let machineId: string;

beforeAll(async () => {
  sql = db.sql;
  tenantId = (await seedTenant(sql)).id;
  processId = (await seedProcess(sql, tenantId)).id;
  machineId = (await seedMachine(sql, tenantId)).row.id;
});

async function runningJob(): Promise<{ id: string; attempt: number }> {
  const j = await seedJob(sql, tenantId, { process_id: processId, machine_id: machineId });
  const res = await startJob(sql, j.id as string, machineId, { holder: randomUUID(), leaseSeconds: 30 });
  if (!('started' in res)) throw new Error('not started');
  return { id: res.started.id, attempt: res.started.attempt };
}

async function row(id: string) {
  const [r] = await sql`select logs, logs_dropped_bytes, logs_seq, logs_archived, logs_archive_key from jobs where id = ${id}`;
  return r!;
}

describe('appending to a job log', () => {
  it('appends in order, alone or with a progress report, and a repeated append (same seq) is applied once', async () => {
    const run = await runningJob();
    expect(await appendJobLogs(sql, run.id, run.attempt, { text: 'uno\n', seq: 1 })).toEqual({ stop_requested: false });
    await reportJobProgress(sql, run.id, run.attempt, { progress_percent: 50, logs_append: { text: 'dos ñ €\n', seq: 2 } });
    // the answer was lost and the report is sent again: nothing twice
    await reportJobProgress(sql, run.id, run.attempt, { progress_percent: 50, logs_append: { text: 'dos ñ €\n', seq: 2 } });
    await appendJobLogs(sql, run.id, run.attempt, { text: 'uno\n', seq: 1 });
    const done = await finishJob(sql, run.id, run.attempt, { to: 'completed', logs_append: { text: 'tres\n', seq: 3 } });
    expect(done?.job.status).toBe('completed');
    expect(await row(run.id)).toMatchObject({ logs: 'uno\ndos ñ €\ntres\n', logs_seq: 3 });
  });

  it('a stale attempt appends nothing, and neither does anyone once the job finished', async () => {
    const run = await runningJob();
    await appendJobLogs(sql, run.id, run.attempt, { text: 'mine\n', seq: 1 });
    expect(await appendJobLogs(sql, run.id, run.attempt - 1, { text: 'stale\n', seq: 2 })).toBeNull();
    expect(await reportJobProgress(sql, run.id, run.attempt + 1, { logs_append: { text: 'future\n', seq: 2 } })).toBeNull();
    await finishJob(sql, run.id, run.attempt, { to: 'failed', error_message: 'x' });
    expect(await appendJobLogs(sql, run.id, run.attempt, { text: 'late\n', seq: 3 })).toBeNull();
    // a repeated end after a lost answer with its last lines: refused whole, the log unchanged
    expect(await finishJob(sql, run.id, run.attempt, { to: 'failed', logs_append: { text: 'again\n', seq: 3 } })).toBeNull();
    expect((await row(run.id)).logs).toBe('mine\n');
    const pending = await seedJob(sql, tenantId, { process_id: processId, machine_id: machineId });
    expect(await appendJobLogs(sql, pending.id as string, 0, { text: 'early\n' })).toBeNull();
    expect((await row(pending.id as string)).logs).toBeNull();
  });

  it('refuses an append over the per-call bound, and a seq that is not a positive integer', async () => {
    const run = await runningJob();
    const big = 'x'.repeat(LOG_APPEND_MAX_BYTES - 1) + 'é'; // one byte over, counted in UTF-8
    await expect(appendJobLogs(sql, run.id, run.attempt, { text: big })).rejects.toBeInstanceOf(ValidationError);
    await expect(reportJobProgress(sql, run.id, run.attempt, { logs_append: { text: 'a', seq: 0 } })).rejects.toBeInstanceOf(ValidationError);
    await expect(finishJob(sql, run.id, run.attempt, { to: 'completed', logs_append: { text: big } })).rejects.toBeInstanceOf(ValidationError);
    expect(await row(run.id)).toMatchObject({ logs: null });
    expect((await findJobWithNames(sql, tenantId, run.id))!.status).toBe('running');
  });

  it('keeps the first LOG_TOTAL_MAX_BYTES, then one marker line, and counts what it dropped', async () => {
    const run = await runningJob();
    const chunk = `${'a'.repeat(LOG_APPEND_MAX_BYTES - 1)}\n`;
    const fit = LOG_TOTAL_MAX_BYTES / LOG_APPEND_MAX_BYTES;
    for (let i = 1; i <= fit; i++) await appendJobLogs(sql, run.id, run.attempt, { text: chunk, seq: i });
    expect(Number((await row(run.id)).logs_dropped_bytes)).toBe(0);
    await appendJobLogs(sql, run.id, run.attempt, { text: 'one more\n', seq: fit + 1 });
    await appendJobLogs(sql, run.id, run.attempt, { text: 'y\n', seq: fit + 2 });
    const r = await row(run.id);
    expect(r.logs).toBe(chunk.repeat(fit) + LOG_TRUNCATED_MARKER);
    expect(Number(r.logs_dropped_bytes)).toBe('one more\n'.length + 2);
    // a later small append that would fit in bytes is dropped too: the log keeps its first part
    expect(r.logs.endsWith(LOG_TRUNCATED_MARKER)).toBe(true);
    const read = await readJobLogs(sql, pgLogArchive, tenantId, run.id);
    expect(read).toMatchObject({ size_bytes: LOG_TOTAL_MAX_BYTES + Buffer.byteLength(LOG_TRUNCATED_MARKER), dropped_bytes: 11, archived: false });
  });
});

describe('the log in a JobResponse', () => {
  it('shows a short log whole and a long one as its last 64 KiB after a line saying what was left out', async () => {
    const run = await runningJob();
    await appendJobLogs(sql, run.id, run.attempt, { text: 'corto ✓\n', seq: 1 });
    expect(toJobResponse((await findJobWithNames(sql, tenantId, run.id))!).logs).toBe('corto ✓\n');
    // 3-byte characters so the cut falls inside one: the tail must start at a whole character
    const line = `${'€'.repeat(1000)}\n`;
    for (let i = 2; i <= 40; i++) await appendJobLogs(sql, run.id, run.attempt, { text: line, seq: i });
    const full = 'corto ✓\n' + line.repeat(39);
    const shown = toJobResponse((await findJobWithNames(sql, tenantId, run.id))!).logs!;
    const [head, ...rest] = shown.split('\n');
    const tail = rest.join('\n');
    expect(head).toMatch(/^… \(registro recortado: se omiten los primeros \d+ de \d+ bytes; el texto completo en GET \/api\/v1\/settings\/jobs\/\{job_id\}\/logs\)$/);
    expect(head).toContain(`de ${Buffer.byteLength(full)} bytes`);
    expect(full.endsWith(tail)).toBe(true);
    expect(Buffer.byteLength(tail)).toBeLessThanOrEqual(LOG_INLINE_MAX_BYTES);
    expect(Buffer.byteLength(tail)).toBeGreaterThan(LOG_INLINE_MAX_BYTES - 3);
    expect(tail.includes('\uFFFD')).toBe(false);
  });
});

describe('the archive sweep', () => {
  async function finishedJob(text: string, finishedAgo: string): Promise<string> {
    const run = await runningJob();
    await appendJobLogs(sql, run.id, run.attempt, { text, seq: 1 });
    await finishJob(sql, run.id, run.attempt, { to: 'completed' });
    await sql`update jobs set finished_at = now() - ${finishedAgo}::interval where id = ${run.id}`;
    return run.id;
  }

  it('archives a finished job past the retention once, even with two sweeps at once, and reads it back byte for byte', async () => {
    const text = 'línea 1: ñandú, 東京, emoji 🤖\nlínea 2: "quotes" \\ back\\slash\n\tend\n';
    const old = await finishedJob(text, '3 days');
    const young = await finishedJob('young\n', '1 hour');
    const running = await runningJob();
    await appendJobLogs(sql, running.id, running.attempt, { text: 'still running\n', seq: 1 });
    await sql`update jobs set started_at = now() - interval '10 days' where id = ${running.id}`;

    const [a, b] = await Promise.all([archiveJobLogs(sql, pgLogArchive, 2), archiveJobLogs(sql, pgLogArchive, 2)]);
    const archivedNow = [...a, ...b];
    expect(archivedNow.filter((id) => id === old)).toHaveLength(1);
    expect(archivedNow).not.toContain(young);
    expect(archivedNow).not.toContain(running.id);
    expect(await archiveJobLogs(sql, pgLogArchive, 2)).not.toContain(old);
    const [{ n }] = await sql`select count(*)::int as n from job_log_archives where job_id = ${old}`;
    expect(n).toBe(1);

    const r = await row(old);
    expect(r).toMatchObject({ logs: null, logs_archived: true, logs_archive_key: `pg:job-logs/${tenantId}/${old}` });
    const response = toJobResponse((await findJobWithNames(sql, tenantId, old))!);
    expect(response).toMatchObject({ logs: null, logs_archived: true, logs_archive_key: r.logs_archive_key });
    const read = await readJobLogs(sql, pgLogArchive, tenantId, old);
    expect(read).toEqual({
      job_id: old, status: 'completed', logs: text, archived: true, archive_key: r.logs_archive_key, size_bytes: Buffer.byteLength(text), dropped_bytes: 0,
    });
    expect(Buffer.from(read.logs!, 'utf8').equals(Buffer.from(text, 'utf8'))).toBe(true);
    // what is stored is compressed, not the text
    const [{ data }] = await sql`select data from job_log_archives where job_id = ${old}`;
    expect((data as Buffer).subarray(0, 2).toString('hex')).toBe('1f8b');

    expect(await row(young)).toMatchObject({ logs: 'young\n', logs_archived: false, logs_archive_key: null });
    expect(await row(running.id)).toMatchObject({ logs: 'still running\n', logs_archived: false });
  });

  it('with a retention of 0 archives a job as soon as it ended, and another tenant cannot read it', async () => {
    const id = await finishedJob('now\n', '0 seconds');
    expect(await archiveJobLogs(sql, pgLogArchive, 0)).toContain(id);
    expect((await readJobLogs(sql, pgLogArchive, tenantId, id)).logs).toBe('now\n');
    const other = (await seedTenant(sql)).id;
    await expect(readJobLogs(sql, pgLogArchive, other, id)).rejects.toMatchObject({ status: 404 });
  });

  it('leaves jobs with no log alone', async () => {
    const run = await runningJob();
    await finishJob(sql, run.id, run.attempt, { to: 'completed' });
    await sql`update jobs set finished_at = now() - interval '40 days' where id = ${run.id}`;
    expect(await archiveJobLogs(sql, pgLogArchive, 30)).not.toContain(run.id);
    expect(await row(run.id)).toMatchObject({ logs: null, logs_archived: false });
    expect(await readJobLogs(sql, pgLogArchive, tenantId, run.id)).toMatchObject({ logs: null, size_bytes: 0, archived: false });
  });
});

describe('LOG_RETENTION_DAYS', () => {
  const env = { ASSET_ENCRYPTION_KEY: '0'.repeat(64) };
  it('defaults to 30 days, takes fractions and 0, and refuses the rest with one sentence', () => {
    expect(parseConfig(env).logRetentionDays).toBe(30);
    expect(parseConfig({ ...env, LOG_RETENTION_DAYS: '0.5' }).logRetentionDays).toBe(0.5);
    expect(parseConfig({ ...env, LOG_RETENTION_DAYS: '0' }).logRetentionDays).toBe(0);
    for (const bad of ['-1', 'abc', 'Infinity', '1e9']) {
      expect(() => parseConfig({ ...env, LOG_RETENTION_DAYS: bad })).toThrow(ConfigError);
    }
    expect(() => parseConfig({ ...env, LOG_RETENTION_DAYS: 'x' })).toThrow(/^LOG_RETENTION_DAYS must be a number between 0 and 36500, got "x"\.$/);
  });
});
