import { LOG_INLINE_MAX_BYTES, archiveJobLogs, pgLogArchive } from '@svc/core/internals';
import { seedJob, seedUser } from '@svc/testing';
import { apiClient, createApiTestContext, type ApiTestContext } from '@svc/testing/api';
import { seedWorkspace, type Workspace } from './jobs-support';
import { bearer } from './settings-fixtures';

/**
 * GET /settings/jobs/{job_id}/logs (docs/decisions/job-logs.md): the whole log, inline or from
 * the archive, for any member; the JobResponse's capped `logs` next to it.
 */
describe('a job\'s logs through the API', () => {
  let t: ApiTestContext;
  let w: Workspace;
  let other: Workspace;
  let admin: string;
  let member: string;
  let otherAdmin: string;
  beforeAll(async () => {
    t = await createApiTestContext();
    w = await seedWorkspace(t.sql);
    other = await seedWorkspace(t.sql);
    admin = (await seedUser(t.sql, w.tenant.id, { role: 'admin' })).token;
    member = (await seedUser(t.sql, w.tenant.id, { role: 'member' })).token;
    otherAdmin = (await seedUser(t.sql, other.tenant.id, { role: 'admin' })).token;
  });
  afterAll(() => t.close());

  async function finishedJob(logs: string | null, finishedAgo = '1 hour'): Promise<string> {
    const job = await seedJob(t.sql, w.tenant.id, { process_id: w.process.id, machine_id: w.machine.id });
    await t.sql`update jobs set status = 'completed', started_at = now() - ${finishedAgo}::interval, finished_at = now() - ${finishedAgo}::interval,
                 logs = ${logs} where id = ${job.id as string}`;
    return job.id as string;
  }
  const logsOf = (id: string, token = member) => t.http.get(`/api/v1/settings/jobs/${id}/logs`).set(bearer(token));
  /** A read as the console makes it, through the typed client (@svc/client). */
  const readLogs = (id: string, token = member) => apiClient(t, { token }).request('readJobLogs', { path: { job_id: id } });

  it('answers the whole inline log to any member, in the envelope', async () => {
    const text = 'paso 1 ✓\npaso 2: ñ 東京 🤖\n';
    const id = await finishedJob(text);
    for (const token of [member, admin]) {
      expect(await readLogs(id, token)).toEqual({
        success: true,
        data: { job_id: id, status: 'completed', logs: text, archived: false, archive_key: null, size_bytes: Buffer.byteLength(text), dropped_bytes: 0 },
      });
    }
    const empty = await finishedJob(null);
    expect((await readLogs(empty)).data).toMatchObject({ logs: null, size_bytes: 0, archived: false });
  });

  it('reads an archived log back byte for byte, while the JobResponse shows logs null and the archive key', async () => {
    const text = `${'línea con acentos y € — '.repeat(50)}\n`.repeat(40);
    const id = await finishedJob(text, '40 days');
    expect(await archiveJobLogs(t.sql, pgLogArchive, 30)).toContain(id);
    const job = await apiClient(t, { token: member }).call('getWorkspaceJob', { path: { job_id: id } });
    expect(job).toMatchObject({ logs: null, logs_archived: true, logs_archive_key: `pg:job-logs/${w.tenant.id}/${id}` });
    expect((await readLogs(id)).data).toEqual({
      job_id: id, status: 'completed', logs: text, archived: true, archive_key: job.logs_archive_key, size_bytes: Buffer.byteLength(text), dropped_bytes: 0,
    });
  });

  it('caps the JobResponse\'s logs to their tail and keeps the whole text on the logs route', async () => {
    const text = Array.from({ length: 5000 }, (_, i) => `línea ${i + 1} del robot\n`).join('');
    expect(Buffer.byteLength(text)).toBeGreaterThan(LOG_INLINE_MAX_BYTES);
    const id = await finishedJob(text);
    const job = await apiClient(t, { apiKey: w.key }).call('getJob', { path: { job_id: id } });
    const shown = job.logs!;
    expect(shown.startsWith('… (registro recortado: se omiten los primeros ')).toBe(true);
    expect(shown.endsWith('línea 5000 del robot\n')).toBe(true);
    expect(shown).not.toContain('línea 1 del robot\n');
    expect((await readLogs(id)).data.logs).toBe(text);
  });

  it('answers another workspace\'s job like a missing one, and no token with 401', async () => {
    const id = await finishedJob('secreto\n');
    const foreign = await logsOf(id, otherAdmin);
    expect([foreign.status, foreign.body.success, foreign.body.error.code]).toEqual([404, false, 'NOT_FOUND']);
    expect(JSON.stringify(foreign.body)).not.toContain('secreto');
    const missing = await logsOf('00000000-0000-4000-8000-000000000000');
    expect(missing.status).toBe(404);
    expect((await t.http.get(`/api/v1/settings/jobs/${id}/logs`)).status).toBe(401);
  });

  it('refuses hostile job ids with 422 naming the field, never a 500', async () => {
    for (const bad of ['nope', '1', '%00', '..%2F..%2Fetc', '00000000-0000-4000-8000-00000000000Z', encodeURIComponent("' or 1=1 --"), 'ü'.repeat(40)]) {
      const res = await logsOf(encodeURI(bad) === bad ? bad : encodeURIComponent(bad));
      expect([bad, res.status, res.body.error?.details?.[0]?.field]).toEqual([bad, 422, 'path → job_id']);
    }
    // an id far past any bound: refused at the edge too, never a 500
    const long = await logsOf('x'.repeat(5000));
    expect([long.status >= 400, long.status < 500]).toEqual([true, true]);
  });
});
