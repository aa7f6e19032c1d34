import { randomUUID } from 'node:crypto';
import { ValidationError, createBullDispatch, createRedis, decodeInputAnswered, type Sql } from '@svc/core';
import {
  askJobInput, checkInputRequest, checkInputValue, finishJob, giveUpMachineJobs, readJobInput, renewJobLeases,
  startJob, sweepOfflineMachines, timeOutJobs,
} from '@svc/core/internals';
import { databaseSuite, seedJob, seedMachine, seedProcess, seedTenant } from '@svc/testing';

/**
 * Human input from the robot's side and the sweeps (docs/decisions/human-input.md): the ask is
 * fenced by the run's attempt and pauses the timeout; a waiting job keeps its lease, is not timed
 * out, and ends like a running one when its machine is lost. The person's side: apps/api/test/job-input.test.ts.
 */
const db = databaseSuite();
let sql: Sql;
let tenantId: string;
let processId: string;

beforeAll(async () => {
  sql = db.sql;
  tenantId = (await seedTenant(sql)).id;
  processId = (await seedProcess(sql, tenantId, { timeout_seconds: 60 })).id;
});

/** A job started on a new machine (attempt 1, lease 30 s, timeout in 60 s). */
async function running(machineFields: Record<string, unknown> = {}) {
  const m = (await seedMachine(sql, tenantId, machineFields)).row.id as string;
  const j = await seedJob(sql, tenantId, { process_id: processId, machine_id: m });
  const res = await startJob(sql, j.id, m, { holder: randomUUID(), leaseSeconds: 30 });
  if (!('started' in res)) throw new Error('not started');
  return { machineId: m, run: res.started };
}

async function row(id: string) {
  const [r] = await sql`select * from jobs where id = ${id}`;
  return r!;
}

const issueOf = (fn: () => unknown): string | undefined => {
  try {
    fn();
  } catch (err) {
    if (err instanceof ValidationError) return err.issues[0]!.field;
    throw err;
  }
  return undefined;
};

describe('what a robot may ask', () => {
  it('accepts choices or a schema and refuses everything else, naming the field', () => {
    expect(checkInputRequest({ prompt: '¿Aprobar?', options: { choices: ['sí', 'no', { a: 1 }] } }).options).toEqual({ choices: ['sí', 'no', { a: 1 }] });
    expect(checkInputRequest({ prompt: 'Importe', options: { schema: { type: 'number', minimum: 0 } } }).options).toEqual({ schema: { type: 'number', minimum: 0 } });
    expect(issueOf(() => checkInputRequest({ prompt: '', options: { choices: ['a'] } }))).toBe('prompt');
    expect(issueOf(() => checkInputRequest({ prompt: 'x'.repeat(2001), options: { choices: ['a'] } }))).toBe('prompt');
    expect(issueOf(() => checkInputRequest({ prompt: 'p', options: null }))).toBe('options');
    expect(issueOf(() => checkInputRequest({ prompt: 'p', options: { choices: ['a'], schema: {} } }))).toBe('options');
    expect(issueOf(() => checkInputRequest({ prompt: 'p', options: { choices: [] } }))).toBe('options → choices');
    expect(issueOf(() => checkInputRequest({ prompt: 'p', options: { choices: Array.from({ length: 101 }, (_, i) => i) } }))).toBe('options → choices');
    expect(issueOf(() => checkInputRequest({ prompt: 'p', options: { choices: [{ a: 1, b: 2 }, { b: 2, a: 1 }] } }))).toBe('options → choices → 1');
    // the bounded user-schema machinery: a schema that is not one, and a pattern RE2 cannot run
    expect(issueOf(() => checkInputRequest({ prompt: 'p', options: { schema: { type: 'nope' } } }))).toBe('options → schema');
    expect(issueOf(() => checkInputRequest({ prompt: 'p', options: { schema: { type: 'string', pattern: '(a)\\1' } } }))).toMatch(/^options → schema/);
  });

  it('checks an answer against the choices (as JSON) or the schema', () => {
    expect(() => checkInputValue({ choices: ['a', { x: [1, 2], y: null }] }, { y: null, x: [1, 2] })).not.toThrow();
    expect(issueOf(() => checkInputValue({ choices: ['a', 'b'] }, 'c'))).toBe('body → value');
    expect(issueOf(() => checkInputValue({ choices: [1] }, '1'))).toBe('body → value');
    const schema = { schema: { type: 'object', required: ['amount'], properties: { amount: { type: 'number', maximum: 100 } } } };
    expect(() => checkInputValue(schema, { amount: 5 })).not.toThrow();
    expect(issueOf(() => checkInputValue(schema, { amount: 500 }))).toBe('body → value');
    expect(issueOf(() => checkInputValue(schema, 'five'))).toBe('body → value');
  });
});

describe('askJobInput', () => {
  it('moves the run to waiting_input, stores the question and pauses the timeout with the time it had left', async () => {
    const { run } = await running();
    const options = { choices: ['aprobar', 'rechazar'] };
    expect(await askJobInput(sql, run.id, run.attempt, { prompt: '¿Aprobar la factura?', options })).toEqual({ waiting: true });
    const r = await row(run.id);
    expect(r).toMatchObject({ status: 'waiting_input', pending_input_prompt: '¿Aprobar la factura?', pending_input_options: options, timeout_at: null, input_answer: null });
    // about 60 s were left (the interval comes back as text)
    const [{ left }] = await sql`select extract(epoch from input_timeout_left)::float8 as left from jobs where id = ${run.id}`;
    expect(left).toBeGreaterThan(50);
    expect(left).toBeLessThanOrEqual(60);
    expect(await readJobInput(sql, run.id, run.attempt)).toEqual({ status: 'waiting_input', stop_requested: false, answer: null, timeout_at: null });
  });

  it('is refused for a stale attempt and when a stop was requested', async () => {
    const { run } = await running();
    const ask = { prompt: 'p', options: { choices: [1] } };
    expect(await askJobInput(sql, run.id, run.attempt - 1, ask)).toEqual({ refused: 'not_owned' });
    await sql`update jobs set stop_requested = true where id = ${run.id}`;
    expect(await askJobInput(sql, run.id, run.attempt, ask)).toEqual({ refused: 'stop_requested' });
    expect((await row(run.id)).status).toBe('running');
    expect(await readJobInput(sql, run.id, run.attempt - 1)).toBeNull();
  });

  it('lets the robot itself give up while it waits (failed or stopped), but not complete without an answer', async () => {
    const { run } = await running();
    await askJobInput(sql, run.id, run.attempt, { prompt: 'p', options: { choices: [1] } });
    expect(await finishJob(sql, run.id, run.attempt, { to: 'completed', output_data: {} })).toBeNull();
    const ended = await finishJob(sql, run.id, run.attempt, { to: 'failed', error_message: 'El agente se detuvo' });
    expect(ended!.job).toMatchObject({ status: 'failed', pending_input_prompt: null, pending_input_options: null });
  });

  it('refuses bad options before touching the job', async () => {
    const { run } = await running();
    await expect(askJobInput(sql, run.id, run.attempt, { prompt: 'p', options: { choices: 'a' } })).rejects.toBeInstanceOf(ValidationError);
    expect((await row(run.id)).status).toBe('running');
  });
});

describe('a waiting job and the sweeps', () => {
  it('is not timed out while it waits, even long past its old timeout_at', async () => {
    const { run } = await running();
    await sql`update jobs set timeout_at = now() + interval '1 second' where id = ${run.id}`;
    await askJobInput(sql, run.id, run.attempt, { prompt: 'p', options: { choices: [1] } });
    // a sweep after the old timeout: the job waits on
    await sql`update jobs set input_timeout_left = interval '1 second' where id = ${run.id}`;
    await timeOutJobs(sql);
    expect((await row(run.id)).status).toBe('waiting_input');
  });

  it('keeps its lease renewed by its agent and hears its stop through the renewal', async () => {
    const { machineId, run } = await running();
    await askJobInput(sql, run.id, run.attempt, { prompt: 'p', options: { choices: [1] } });
    await sql`update jobs set lease_expires_at = now() + interval '1 second' where id = ${run.id}`;
    const renewedAfter = Date.now(); // the clock before the renewal: the test may run slowly after it
    const owned = await renewJobLeases(sql, machineId, [{ id: run.id, attempt: run.attempt, alive: true }], 30);
    expect(owned).toEqual([{ id: run.id, stop_requested: false, queue_id: null }]);
    expect((await row(run.id)).lease_expires_at.getTime()).toBeGreaterThanOrEqual(renewedAfter + 30_000 - 1000);
  });

  it('fails, its question cleared, when its machine goes offline or its agent restarts', async () => {
    const a = await running({ status: 'online' });
    const b = await running({ status: 'online' });
    for (const { run } of [a, b]) await askJobInput(sql, run.id, run.attempt, { prompt: 'p', options: { choices: [1] } });
    await sql`update machines set last_heartbeat_at = now() - interval '10 minutes' where id = ${a.machineId}`;
    const swept = await sweepOfflineMachines(sql, 60);
    expect(swept.ended.map((e) => e.id)).toContain(a.run.id);
    expect(await row(a.run.id)).toMatchObject({ status: 'failed', pending_input_prompt: null, pending_input_options: null });
    expect((await row(a.run.id)).error_message).toMatch(/dejó de enviar latidos/);
    const given = await giveUpMachineJobs(sql, b.machineId);
    expect(given.ended).toEqual([{ id: b.run.id, machine_id: b.machineId, status: 'failed' }]);
    expect((await row(b.run.id)).error_message).toMatch(/se reinició/);
  });
});

describe('the answer reaches the agents', () => {
  it('is published on the job-input channel that agents subscribe to', async () => {
    const bull = createBullDispatch({ redis: db.ctx.redisTarget, prefix: db.ctx.redisPrefix });
    const sub = createRedis(db.ctx.redisTarget, { blocking: true });
    try {
      const heard = new Promise<string>((resolve) => sub.on('message', (_channel: string, raw: string) => resolve(raw)));
      await sub.subscribe(bull.keys.jobInputs);
      await bull.jobInputAnswered({ id: 'job-1', machine_id: 'machine-1' });
      expect(decodeInputAnswered(await heard)).toEqual({ job_id: 'job-1', machine_id: 'machine-1' });
      expect(decodeInputAnswered('not json')).toBeNull();
    } finally {
      sub.disconnect();
      await bull.close();
    }
  });
});
