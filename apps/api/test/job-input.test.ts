import { askJobInput } from '@svc/core/internals';
import { seedJob, seedUser } from '@svc/testing';
import { apiClient, createApiTestContext, type ApiTestContext } from '@svc/testing/api';
import { CONTRACT_JOB_FIELDS, recordingDispatch, seedWorkspace, type Workspace } from './jobs-support';
import { bearer, fieldsOf } from './settings-fixtures';

/**
 * POST /settings/jobs/{job_id}/input: a person answers a job waiting for input
 * (docs/decisions/human-input.md). With real processes: apps/dispatcher/test/job-input.test.ts.
 */
describe('answering a job waiting for input', () => {
  let t: ApiTestContext;
  let w: Workspace;
  let b: Workspace;
  let admin: string;
  let member: string;
  let adminB: string;
  let rec: ReturnType<typeof recordingDispatch>;
  /** what the relay published to the agents: answered jobs */
  const inputs: Array<{ id: string; machine_id: string }> = [];
  beforeAll(async () => {
    t = await createApiTestContext();
    rec = recordingDispatch();
    t.deps.dispatch = { ...rec.port, jobInputAnswered: async (job) => void inputs.push({ id: job.id, machine_id: job.machine_id }) };
    w = await seedWorkspace(t.sql);
    b = await seedWorkspace(t.sql);
    admin = (await seedUser(t.sql, w.tenant.id, { role: 'admin' })).token;
    member = (await seedUser(t.sql, w.tenant.id, { role: 'member' })).token;
    adminB = (await seedUser(t.sql, b.tenant.id, { role: 'admin' })).token;
  });
  afterAll(() => t.close());

  /** A running job of `w` that asked `options`, with `leftSeconds` of its timeout left. */
  async function waiting(options: Record<string, unknown>, leftSeconds = 120) {
    const job = await seedJob(t.sql, w.tenant.id, { process_id: w.process.id, machine_id: w.machine.id, status: 'running' });
    await t.sql`update jobs set timeout_at = now() + make_interval(secs => ${leftSeconds}) where id = ${job.id}`;
    expect(await askJobInput(t.sql, job.id, job.attempt, { prompt: '¿Aprobar la factura F-1?', options })).toEqual({ waiting: true });
    return job.id as string;
  }
  const answer = (id: string, body: unknown, token = admin) => t.http.post(`/api/v1/settings/jobs/${id}/input`).set(bearer(token)).send(body as object);
  /** Well-formed calls whose answers a test reads: through the typed client, as the console makes them. */
  const api = (token = admin) => apiClient(t, { token });
  const answered = (id: string, value: unknown) => api().call('answerJobInput', { path: { job_id: id }, body: { value } });

  it('shows the question on the job while it waits', async () => {
    const id = await waiting({ choices: ['aprobar', 'rechazar'] });
    const job = await api(member).call('getWorkspaceJob', { path: { job_id: id } });
    expect(job).toMatchObject({ status: 'waiting_input', pending_input_prompt: '¿Aprobar la factura F-1?', pending_input_options: { choices: ['aprobar', 'rechazar'] } });
    const listed = await api(member).call('listWorkspaceJobs', { query: { status: 'waiting_input' } });
    expect(listed.map((j) => j.id)).toContain(id);
  });

  it('takes a valid choice: running again, question cleared, timeout running with the time it had left, audited, robot told', async () => {
    const id = await waiting({ choices: ['aprobar', 'rechazar'] }, 120);
    const job = await answered(id, 'rechazar');
    expect(Object.keys(job).sort()).toEqual(CONTRACT_JOB_FIELDS);
    expect(job).toMatchObject({ id, status: 'running', pending_input_prompt: null, pending_input_options: null });
    const [row] = await t.sql`select input_answer, input_timeout_left, extract(epoch from timeout_at - now())::float8 as left from jobs where id = ${id}`;
    expect(row!.input_answer).toEqual({ value: 'rechazar' });
    expect(row!.input_timeout_left).toBeNull();
    expect(row!.left).toBeGreaterThan(100);
    expect(row!.left).toBeLessThanOrEqual(120);
    const [audit] = await t.sql`select * from audit_log where resource_id = ${id} and action = 'answer_job_input'`;
    expect(audit).toMatchObject({ tenant_id: w.tenant.id, actor_type: 'user', source: 'api', resource_type: 'job', details: { kind: 'choices', attempt: 1 } });
    // the value is not in the audit log
    expect(JSON.stringify(audit!.details)).not.toContain('rechazar');
    expect(inputs.filter((i) => i.id === id)).toEqual([{ id, machine_id: w.machine.id }]);
  });

  it('takes null and objects as answers when they are among the choices (compared as JSON)', async () => {
    const id = await waiting({ choices: [null, { a: 1, b: [2] }] });
    expect((await answered(id, { b: [2], a: 1 })).status).toBe('running');
    const [row] = await t.sql`select input_answer from jobs where id = ${id}`;
    expect(row!.input_answer).toEqual({ value: { a: 1, b: [2] } });
  });

  it('refuses a value that is not one of the choices with 422 naming value, and the job keeps waiting', async () => {
    const id = await waiting({ choices: ['aprobar', 'rechazar'] });
    const res = await answer(id, { value: 'quizá' });
    expect([res.status, res.body.error.code, fieldsOf(res.body)]).toEqual([422, 'VALIDATION_ERROR', ['body → value']]);
    expect(res.body.error.message).toMatch(/opciones/);
    const [row] = await t.sql`select status from jobs where id = ${id}`;
    expect(row!.status).toBe('waiting_input');
  });

  it('checks the value against a schema question', async () => {
    const id = await waiting({ schema: { type: 'object', required: ['amount'], additionalProperties: false, properties: { amount: { type: 'number', minimum: 0 } } } });
    for (const value of [{ amount: -1 }, { amount: 'x' }, 'diez', { amount: 1, extra: true }]) {
      const res = await answer(id, { value });
      expect([res.status, fieldsOf(res.body)]).toEqual([422, ['body → value']]);
    }
    expect((await answered(id, { amount: 10.5 })).status).toBe('running');
    const [audit] = await t.sql`select details from audit_log where resource_id = ${id} and action = 'answer_job_input'`;
    expect(audit!.details).toEqual({ kind: 'schema', attempt: 1 });
  });

  it('refuses a body without value, or with other fields, with 422', async () => {
    const id = await waiting({ choices: ['a'] });
    const none = await answer(id, {});
    expect([none.status, fieldsOf(none.body)]).toEqual([422, ['body → value']]);
    const extra = await answer(id, { value: 'a', comment: 'x' });
    expect(extra.status).toBe(422);
  });

  it('answers 409 for a job that is not waiting, and for one answered already', async () => {
    const pending = await seedJob(t.sql, w.tenant.id, { process_id: w.process.id, machine_id: w.machine.id });
    await expect(answered(pending.id, 'a')).rejects.toMatchObject({ status: 409, code: 'CONFLICT', message: expect.stringMatching(/no está esperando/) });
    const id = await waiting({ choices: ['a'] });
    expect((await answered(id, 'a')).status).toBe('running');
    await expect(answered(id, 'a')).rejects.toMatchObject({ status: 409 });
  });

  it('answers 404 for another workspace\'s job and 403 for a member, and changes nothing', async () => {
    const id = await waiting({ choices: ['a'] });
    const foreign = await answer(id, { value: 'a' }, adminB);
    expect([foreign.status, foreign.body.error.code]).toEqual([404, 'NOT_FOUND']);
    const denied = await answer(id, { value: 'a' }, member);
    expect([denied.status, denied.body.error.code]).toEqual([403, 'FORBIDDEN']);
    const [row] = await t.sql`select status from jobs where id = ${id}`;
    expect(row!.status).toBe('waiting_input');
    const audits = await t.sql`select 1 from audit_log where resource_id = ${id} and action = 'answer_job_input'`;
    expect(audits).toHaveLength(0);
  });

  it('stops a waiting job at once: stopped, question cleared, its robot told through the stop path', async () => {
    const id = await waiting({ choices: ['a'] });
    const stopped = await api().call('stopWorkspaceJob', { path: { job_id: id } });
    expect(stopped).toMatchObject({ status: 'stopped', stop_requested: true });
    const [row] = await t.sql`select status, finished_at, pending_input_prompt, pending_input_options from jobs where id = ${id}`;
    expect(row).toMatchObject({ status: 'stopped', pending_input_prompt: null, pending_input_options: null });
    expect(row!.finished_at).toBeInstanceOf(Date);
    expect(rec.stops.filter((s) => s.id === id)).toEqual([{ id, machine_id: w.machine.id }]);
    await expect(answered(id, 'a')).rejects.toMatchObject({ status: 409 });
  });
});
