import { apiClient, apiSuite, type ApiTestContext } from '@svc/testing/api';
import { seedUser, seedWorkspace, waitFor } from '@svc/testing';

/**
 * Job logs end to end (docs/decisions/job-logs.md): the in-process API, a real dispatcher with
 * LOG_RETENTION_DAYS=0 (archive as soon as a job ends) and a real agent. The log grows while the
 * job runs (each progress report appends its lines), and once the job ended the dispatcher's
 * sweep archives it: the JobResponse shows `logs: null` and the route reads it back whole.
 */
// the waits are liveness bounds for a loaded host: they return as soon as the work is done
jest.setTimeout(180_000);
const suite = apiSuite();
const { children } = suite;
let ctx: ApiTestContext;

beforeAll(() => ({ ctx } = suite));

it('a running job\'s log grows report by report, and once it ends it is archived and read back through the route', async () => {
  children.dispatcher(ctx, { LOG_RETENTION_DAYS: '0' });
  const ws = await seedWorkspace(ctx.sql);
  const proc = await ws.process();
  const machine = await ws.machine({ slots: 1 });
  // a second per report: a poll held up by a loaded host still sees most of them, and the run is
  // still going when the route is read
  await children.agent(ctx, ['--machine-key', machine.machineKey, '--duration', '6s', '--progress-steps', '6', '--log-lines', '12']);
  // reads as an integrator and a member make them, through the typed client (@svc/client)
  const integrator = apiClient(ctx, { apiKey: ws.key });
  const member = apiClient(ctx, { token: (await seedUser(ctx.sql, ws.tenant.id, { role: 'member' })).token });
  const logsOf = (id: string) => member.call('readJobLogs', { path: { job_id: id } });

  const id = (await integrator.call('triggerJob', { body: { process_id: proc.id, machine_id: machine.row.id } })).id;

  // what Postgres holds while the job runs, each distinct value once (polled, not through the rate-limited API)
  const seen: string[] = [];
  let readWhileRunning: Record<string, unknown> | null = null;
  await waitFor('the job ended', async () => {
    const [row] = await ctx.sql`select status, logs from jobs where id = ${id}`;
    if (row!.status === 'running' && row!.logs && seen.at(-1) !== row!.logs) {
      seen.push(row!.logs as string);
      if (!readWhileRunning && seen.length >= 2) readWhileRunning = await logsOf(id);
    }
    return row!.status !== 'pending' && row!.status !== 'running';
  }, 60_000, 40);

  // appended, never rewritten: each value seen starts with the one before, and more lines came each time
  expect(seen.length).toBeGreaterThanOrEqual(3);
  for (let i = 1; i < seen.length; i++) {
    expect(seen[i]!.startsWith(seen[i - 1]!)).toBe(true);
    expect(seen[i]!.length).toBeGreaterThan(seen[i - 1]!.length);
  }
  expect(readWhileRunning).toMatchObject({ job_id: id, status: 'running', archived: false, archive_key: null });
  expect(seen).toContain((readWhileRunning as unknown as { logs: string }).logs);

  // the dispatcher's sweep archives it (retention 0)
  await waitFor('the log archived', async () => {
    const [row] = await ctx.sql`select logs_archived from jobs where id = ${id}`;
    return row!.logs_archived === true;
  }, 60_000);
  const job = await integrator.call('getJob', { path: { job_id: id } });
  expect(job).toMatchObject({ status: 'completed', logs: null, logs_archived: true, logs_archive_key: `pg:job-logs/${ws.tenant.id}/${id}` });

  const read = await logsOf(id);
  const text = read.logs!;
  expect(read).toMatchObject({ job_id: id, status: 'completed', archived: true, archive_key: job.logs_archive_key, size_bytes: Buffer.byteLength(text), dropped_bytes: 0 });
  expect(text.startsWith(seen.at(-1)!)).toBe(true);
  const lines = text.trimEnd().split('\n');
  expect(lines[0]).toMatch(/Inicio en la máquina .*: proceso .*, intento 1$/);
  expect(lines.filter((l) => /línea de registro \d+$/.test(l)).map((l) => Number(/(\d+)$/.exec(l)![1]))).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
  expect(lines.at(-1)).toMatch(/Terminado correctamente$/);
});
