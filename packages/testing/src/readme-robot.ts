import type { ChildProcess } from 'node:child_process';
import { seedWorkspace } from './fixtures';
import { startApiProcess } from './processes';
import type { TestSuite } from './suites';
import { waitFor } from './wait';

/** A robot process started by a test, and what it printed so far. */
export interface RobotProcess {
  proc: ChildProcess;
  output(): string;
}

/** Resolves once the robot printed that it connected; fails as soon as it exits. */
export function robotConnected(robot: RobotProcess): Promise<boolean> {
  return waitFor('the robot to connect', async () => {
    if (robot.proc.exitCode !== null) throw new Error(`the robot exited: ${robot.output()}`);
    return robot.output().includes('robot connected');
  });
}

/** A process's exit code (or signal), once it has exited. */
export function exitOf(proc: ChildProcess): Promise<number | NodeJS.Signals | null> {
  return new Promise((resolve) => (proc.exitCode !== null ? resolve(proc.exitCode) : proc.once('exit', (code, signal) => resolve(code ?? signal))));
}

/**
 * What the READMEs' robots (packages/agent's and sdk/python's, the same robot in two languages)
 * are held to, each a process holding only the API's URL and its machine key: a job triggered
 * through the API completes with its greeting and its progress, a queue its machine consumes has
 * one item approved and one refused by the robot, and SIGTERM ends it (exit 0) with its machine
 * offline. `afterJob` checks more of the completed job.
 */
export async function checkReadmeRobot(
  suite: TestSuite,
  start: (url: string, machineKey: string) => RobotProcess,
  afterJob: (job: { id: string; api: string; adminToken: string }) => Promise<void> = async () => undefined,
): Promise<void> {
  const ws = await seedWorkspace(suite.ctx.sql);
  const proc = await ws.process({ name: 'saludo' });
  const machine = await ws.machine();
  const api = await startApiProcess(suite.ctx.childEnv);
  // the dispatcher hands the triggered job to the machine's queue
  suite.children.dispatcher(suite.ctx);
  const robot = start(api.url, machine.machineKey);
  try {
    await robotConnected(robot);
    const res = await fetch(`${api.url}/api/v1/jobs/trigger`, {
      method: 'POST',
      headers: { 'X-API-Key': ws.key, 'Content-Type': 'application/json' },
      body: JSON.stringify({ process_id: proc.id, machine_id: machine.row.id, input_data: { name: 'Ada' } }),
    });
    expect(res.status).toBe(201);
    const id = ((await res.json()) as { data: { id: string } }).data.id;
    const job = await waitFor('the job to complete', async () => {
      const r = (await (await fetch(`${api.url}/api/v1/jobs/${id}`, { headers: { 'X-API-Key': ws.key } })).json()) as { data: Record<string, unknown> };
      if (r.data?.status === 'failed') throw new Error(`the job failed: ${JSON.stringify(r.data)}`);
      return r.data?.status === 'completed' ? r.data : null;
    }, 30_000, 500);
    expect(job.output_data).toEqual({ greeting: 'hola, Ada' });
    expect(job.progress_percent).toBe(100);
    await afterJob({ id, api: api.url, adminToken: ws.adminToken });

    // a queue this machine consumes: one item approved, one refused by the robot (no amount)
    const queue = await ws.queue({ consumer_process_id: proc.id, max_retries: 0 });
    const added = await fetch(`${api.url}/api/v1/queues/by-name/${queue.name}/items/bulk`, {
      method: 'POST',
      headers: { 'X-API-Key': ws.key, 'Content-Type': 'application/json' },
      body: JSON.stringify({ items: [{ amount: 250 }, { note: 'sin importe' }] }),
    });
    expect(added.status).toBe(200);
    const items = await waitFor('both items final', async () => {
      const rows = await suite.ctx.sql<Array<{ status: string; result: unknown; error_message: string | null; processed_by: string }>>`
        select status, result, error_message, processed_by from queue_items where queue_id = ${queue.id} order by created_at`;
      return rows.length === 2 && rows.every((r) => r.status === 'completed' || r.status === 'failed' || r.status === 'dead_letter') ? rows : null;
    }, 30_000, 200);
    expect(items.map((i) => [i.status, i.result, i.error_message])).toEqual([['completed', { approved: true }, null], [expect.stringMatching(/failed|dead_letter/), null, 'sin importe']]);
    for (const i of items) expect(i.processed_by).toBe(machine.row.id);
    robot.proc.kill('SIGTERM');
    expect(await exitOf(robot.proc)).toBe(0);
    const [m] = await suite.ctx.sql`select status from machines where id = ${machine.row.id as string}`;
    expect(m!.status).toBe('offline');
  } catch (err) {
    throw new Error(`${(err as Error).message}\n--- the robot said ---\n${robot.output()}`);
  } finally {
    if (robot.proc.exitCode === null) robot.proc.kill('SIGKILL');
    await suite.children.stopAll();
    await api.stop();
  }
}
