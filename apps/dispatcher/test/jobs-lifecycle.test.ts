import { apiClient, apiSuite, type ApiTestContext } from '@svc/testing/api';
import { seedWorkspace, waitFor } from '@svc/testing';

/**
 * Jobs end to end: the in-process API (its DispatchPort is BullMQ), a real dispatcher and real
 * agent-sim processes. pending → running → completed / failed / stopped / timed_out, retries
 * with delay, chaining, SLA.
 */
// the waits are liveness bounds for a loaded host: they return as soon as the status shows
jest.setTimeout(180_000);
const suite = apiSuite({ dispatcher: true });
const { children } = suite;
let ctx: ApiTestContext;
let ws: Awaited<ReturnType<typeof seedWorkspace>>;

beforeAll(async () => {
  ({ ctx } = suite);
  ws = await seedWorkspace(ctx.sql);
});

/** The API as an integrator calls it: through the typed client (@svc/client). */
const integrator = () => apiClient(ctx, { apiKey: ws.key });

async function trigger(processId: string, machineId: string, input: Record<string, unknown> | null = null) {
  return integrator().call('triggerJob', { body: { process_id: processId, machine_id: machineId, input_data: input } });
}

/** The job as GET /jobs/{id} shows it (rate limited: used once per check, not for polling). */
async function getJob(id: string) {
  return (await integrator().call('getJob', { path: { job_id: id } })) as Record<string, any>;
}

const stop = (id: string) => integrator().call('stopJob', { path: { job_id: id } });

/** Polls Postgres (not the rate-limited API) for the status, then reads the job through the API. */
async function waitStatus(id: string, status: string, timeoutMs = 60_000) {
  await waitFor(`job ${id} ${status}`, async () => {
    const [row] = await ctx.sql`select status from jobs where id = ${id}`;
    return row?.status === status;
  }, timeoutMs);
  return getJob(id);
}

/**
 * The outbox relayed (what the writes so far cause is on its way) and a sweep that began after
 * that ended: what the engine would still do about those writes by itself is done.
 */
async function engineSettled() {
  await waitFor('the outbox published', async () => (await ctx.sql`select count(*)::int as n from outbox`)[0]!.n === 0);
  await suite.dispatcher.passBegunAfter('sweep');
}

describe('a job on a simulated machine', () => {
  let machine: { row: Record<string, any>; machineKey: string };

  beforeAll(async () => {
    machine = await ws.machine({ slots: 2 });
    await children.agent(ctx, ['--machine-key', machine.machineKey, '--duration', '300ms', '--progress-steps', '3', '--log-lines', '3']);
  });

  it('runs pending → running → completed and fills started_at, finished_at, logs, output, progress and metrics', async () => {
    const proc = await ws.process();
    const job = await trigger(proc.id, machine.row.id, { order: 42 });
    expect(job.status).toBe('pending');
    const running = await waitStatus(job.id, 'running');
    expect(running.started_at).not.toBeNull();
    const done = await waitStatus(job.id, 'completed');
    expect(done.finished_at).not.toBeNull();
    expect(new Date(done.finished_at).getTime()).toBeGreaterThanOrEqual(new Date(done.started_at).getTime());
    expect(done.error_message).toBeNull();
    expect(done.progress_percent).toBe(100);
    expect(done.logs).toMatch(/Inicio en la máquina/);
    expect(done.logs).toMatch(/línea de registro 3/);
    expect(done.output_data).toMatchObject({ simulated: true, machine: machine.row.name });
    const metrics = done.resource_metrics;
    for (const f of ['cpu_percent_avg', 'cpu_percent_peak', 'ram_mb_avg', 'ram_mb_peak', 'disk_read_mb', 'disk_write_mb', 'duration_seconds']) {
      expect(typeof metrics[f]).toBe('number');
    }
    expect(Number.isInteger(metrics.sample_count)).toBe(true);
    expect(metrics.cpu_percent_peak).toBeGreaterThanOrEqual(metrics.cpu_percent_avg);
  });

  it('records a failure with its error_message', async () => {
    const proc = await ws.process();
    const job = await trigger(proc.id, machine.row.id, { _sim: { outcome: 'fail', error_message: 'Factura ilegible' } });
    const failed = await waitStatus(job.id, 'failed');
    expect(failed.error_message).toBe('Factura ilegible');
    expect(failed.finished_at).not.toBeNull();
    expect(failed.output_data).toBeNull();
  });

  it('retries a failed job with auto_retry after retry_delay_seconds, up to max_retries', async () => {
    const proc = await ws.process({ auto_retry: true, max_retries: 2, retry_delay_seconds: 1 });
    const first = await trigger(proc.id, machine.row.id, { _sim: { outcome: 'fail' }, n: 1 });
    const jobs = await waitFor('three failed attempts', async () => {
      const rows = await ctx.sql`select * from jobs where process_id = ${proc.id} order by retry_count`;
      return rows.length === 3 && rows.every((r) => r.status === 'failed') ? rows : null;
    }, 60_000);
    expect(jobs.map((j) => j.retry_count)).toEqual([0, 1, 2]);
    expect(jobs[0]!.id).toBe(first.id);
    expect(jobs[1]!.parent_job_id).toBe(jobs[0]!.id);
    expect(jobs[2]!.parent_job_id).toBe(jobs[1]!.id);
    expect(jobs.slice(1).every((j) => j.source === 'retry')).toBe(true);
    expect(jobs[1]!.input_data).toEqual(jobs[0]!.input_data);
    // the delay is honoured: a retry never starts before its parent's end + retry_delay_seconds
    for (const i of [1, 2]) {
      expect(jobs[i]!.started_at.getTime()).toBeGreaterThanOrEqual(jobs[i - 1]!.finished_at.getTime() + 1000 - 5);
    }
    await engineSettled();
    const [{ n }] = await ctx.sql`select count(*)::int as n from jobs where process_id = ${proc.id}`;
    expect(n).toBe(3);
  });

  it('does not retry a failed job when the process has no auto_retry', async () => {
    const proc = await ws.process({ auto_retry: false, max_retries: 3, retry_delay_seconds: 0 });
    const job = await trigger(proc.id, machine.row.id, { _sim: { outcome: 'fail' } });
    await waitStatus(job.id, 'failed');
    await engineSettled();
    const [{ n }] = await ctx.sql`select count(*)::int as n from jobs where process_id = ${proc.id}`;
    expect(n).toBe(1);
  });

  it('ends a job that runs past timeout_seconds as timed_out', async () => {
    const proc = await ws.process({ timeout_seconds: 1 });
    // a run far longer than the wait: however late the timeout sweep comes, the run cannot end first
    const job = await trigger(proc.id, machine.row.id, { _sim: { duration_ms: 120_000 } });
    const out = await waitStatus(job.id, 'timed_out');
    expect(out.error_message).toMatch(/timeout_seconds \(1 s\)/);
    expect(out.finished_at).not.toBeNull();
  });

  it('chains: on success it triggers on_success_trigger_process_id with the output as input', async () => {
    const next = await ws.process();
    const first = await ws.process({ on_success_trigger_process_id: next.id });
    const job = await trigger(first.id, machine.row.id, { _sim: { output: { invoice: 'F-1' } } });
    const done = await waitStatus(job.id, 'completed');
    const chained = await waitFor('the chained job', async () => {
      const [row] = await ctx.sql`select * from jobs where parent_job_id = ${job.id}`;
      return row;
    });
    expect(chained.process_id).toBe(next.id);
    expect(chained.source).toBe('chain');
    expect(chained.input_data).toEqual(done.output_data);
    await waitStatus(chained.id, 'completed');
  });

  it('does not chain after a failure', async () => {
    const next = await ws.process();
    const first = await ws.process({ on_success_trigger_process_id: next.id });
    const job = await trigger(first.id, machine.row.id, { _sim: { outcome: 'fail' } });
    await waitStatus(job.id, 'failed');
    await engineSettled();
    const rows = await ctx.sql`select id from jobs where parent_job_id = ${job.id}`;
    expect(rows).toHaveLength(0);
  });

  it('stops a running job on its machine: it ends stopped', async () => {
    const proc = await ws.process();
    // a run far longer than the waits: only the stop can end it
    const job = await trigger(proc.id, machine.row.id, { _sim: { duration_ms: 120_000 } });
    await waitStatus(job.id, 'running');
    expect((await stop(job.id)).stop_requested).toBe(true);
    const stopped = await waitStatus(job.id, 'stopped');
    expect(stopped.logs).toMatch(/Detenido a petición/);
    expect(stopped.finished_at).not.toBeNull();
  });
});

describe('a machine without a running agent', () => {
  it('keeps a job pending while its machine is offline and runs it when the machine comes back', async () => {
    const machine = await ws.machine({ status: 'offline' });
    const proc = await ws.process();
    const job = await trigger(proc.id, machine.row.id);
    await engineSettled();
    const [pending] = await ctx.sql`select status from jobs where id = ${job.id}`;
    expect(pending!.status).toBe('pending');
    await children.agent(ctx, ['--machine-key', machine.machineKey, '--duration', '100ms']);
    await waitStatus(job.id, 'completed');
    const [m] = await ctx.sql`select status from machines where id = ${machine.row.id}`;
    expect(['online', 'busy']).toContain(m!.status);
  });

  it('stops a pending job at once and never runs it', async () => {
    const machine = await ws.machine({ status: 'offline' });
    const proc = await ws.process();
    const job = await trigger(proc.id, machine.row.id);
    expect((await stop(job.id)).status).toBe('stopped');
    await children.agent(ctx, ['--machine-key', machine.machineKey, '--duration', '100ms']);
    await waitFor('the machine online', async () => {
      const [m] = await ctx.sql`select status from machines where id = ${machine.row.id}`;
      return m!.status === 'online';
    });
    // a job triggered later on the same machine completing: the robot has read its queue past the stopped one
    const later = await trigger(proc.id, machine.row.id);
    await waitStatus(later.id, 'completed');
    const after = await getJob(job.id);
    expect(after.status).toBe('stopped');
    expect(after.started_at).toBeNull();
  });

  it('marks a job still unfinished at its SLA due time as breached, once, with an audit row', async () => {
    const machine = await ws.machine({ status: 'offline' });
    const proc = await ws.process({ sla_deadline_minutes: 1 });
    const job = await trigger(proc.id, machine.row.id);
    const [row] = await ctx.sql`select sla_due_at, sla_breached_at from jobs where id = ${job.id}`;
    expect(row!.sla_due_at).not.toBeNull();
    expect(row!.sla_breached_at).toBeNull();
    // time travel: the job's SLA is now due
    await ctx.sql`update jobs set sla_due_at = now() - interval '1 second' where id = ${job.id}`;
    await waitFor('the breach', async () => {
      const [r] = await ctx.sql`select sla_breached_at from jobs where id = ${job.id}`;
      return r!.sla_breached_at;
    });
    // a sweep that began after the breach was recorded would have recorded it again
    await suite.dispatcher.passBegunAfter('sweep');
    const audits = await ctx.sql`select * from audit_log where resource_id = ${job.id} and action = 'sla_breach'`;
    expect(audits).toHaveLength(1);
    expect(audits[0]!.source).toBe('dispatcher');
  });
});
