import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { installPacked, PUBLISHED_FILE, seedWorkspace, startApiProcess, testSuite, waitFor, type ApiProcess } from '@svc/testing';

/**
 * The package's README: its example, exactly as printed there, runs as a robot process that
 * holds only SVC_URL and its machine key, from the package packed and installed into an empty
 * folder outside the repository (as a customer installs it), against an API process, and
 * completes a job triggered through the public API and the items of its queue.
 */
const suite = testSuite();
jest.setTimeout(60_000);

function readmeRobot(): string {
  const readme = readFileSync(path.join(__dirname, '..', 'README.md'), 'utf8');
  const m = /<!-- robot-example -->\s*```js\n([\s\S]*?)```/.exec(readme);
  if (!m) throw new Error('packages/agent/README.md has no robot example');
  return m[1]!;
}

let packed: Awaited<ReturnType<typeof installPacked>>;
beforeAll(async () => {
  packed = await installPacked(['packages/agent']);
}, 120_000);
afterAll(() => packed?.remove());

it('packs its built code, its README and its licence, and nothing else', () => {
  const [{ name, files }] = packed.tarballs as [{ name: string; files: string[] }];
  expect(name).toBe('@svc/agent');
  expect(files).toEqual(expect.arrayContaining(['LICENSE', 'README.md', 'dist/index.d.ts', 'dist/index.js', 'package.json']));
  expect(files.filter((f) => !PUBLISHED_FILE.test(f))).toEqual([]);
});

it('the README robot, installed from the packed package, runs a job triggered through the API and the items of its queue, with its key alone', async () => {
  const code = readmeRobot();
  expect(code.split('\n').length).toBeLessThanOrEqual(30);
  const ws = await seedWorkspace(suite.ctx.sql);
  const proc = await ws.process({ name: 'saludo' });
  const machine = await ws.machine();
  const api: ApiProcess = await startApiProcess(suite.ctx.childEnv);
  // the dispatcher hands the triggered job to the machine's queue
  suite.children.dispatcher(suite.ctx);
  // nothing of the platform's own environment: the base URL and the machine key
  const robot = spawn(process.execPath, ['--input-type=module', '-e', code], {
    cwd: packed.dir,
    env: { PATH: process.env.PATH ?? '', SVC_URL: api.url, MACHINE_KEY: machine.machineKey },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  robot.stdout.on('data', (d) => (output += d.toString()));
  robot.stderr.on('data', (d) => (output += d.toString()));
  try {
    await waitFor('the robot to connect', async () => {
      if (robot.exitCode !== null) throw new Error(`the robot exited: ${output}`);
      return output.includes('robot connected');
    });
    const res = await fetch(`${api.url}/api/v1/jobs/trigger`, {
      method: 'POST',
      headers: { 'X-API-Key': ws.key, 'Content-Type': 'application/json' },
      body: JSON.stringify({ process_id: proc.id, machine_id: machine.row.id, input_data: { name: 'Ada' } }),
    });
    expect(res.status).toBe(201);
    const id = ((await res.json()) as { data: { id: string } }).data.id;
    const job = await waitFor('the job to complete', async () => {
      const r = (await (await fetch(`${api.url}/api/v1/jobs/${id}`, { headers: { 'X-API-Key': ws.key } })).json()) as { data: Record<string, unknown> };
      return r.data?.status === 'completed' ? r.data : null;
    }, 30_000, 500);
    expect(job.output_data).toEqual({ greeting: 'hola, Ada' });
    expect(job.progress_percent).toBe(100);

    // a queue this machine consumes: one item approved, one refused by the robot (no amount)
    const queue = await ws.queue({ consumer_process_id: proc.id, max_retries: 0 });
    const added = await fetch(`${api.url}/api/v1/queues/by-name/${queue.name}/items/bulk`, {
      method: 'POST',
      headers: { 'X-API-Key': ws.key, 'Content-Type': 'application/json' },
      body: JSON.stringify({ items: [{ amount: 250 }, { note: 'sin importe' }] }),
    });
    expect(added.status).toBe(200);
    const items = await waitFor('both items final', async () => {
      const rows = await suite.ctx.sql<Array<{ data: Record<string, unknown>; status: string; result: unknown; error_message: string | null; processed_by: string }>>`
        select data, status, result, error_message, processed_by from queue_item_records where queue_id = ${queue.id} order by created_at`;
      return rows.every((r) => r.status === 'completed' || r.status === 'failed' || r.status === 'dead_letter') ? rows : null;
    }, 30_000, 200);
    expect(items.map((i) => [i.status, i.result, i.error_message])).toEqual([['completed', { approved: true }, null], [expect.stringMatching(/failed|dead_letter/), null, 'sin importe']]);
    for (const i of items) expect(i.processed_by).toBe(machine.row.id);
    robot.kill('SIGTERM');
    expect(await new Promise((resolve) => robot.once('exit', resolve))).toBe(0);
    const [m] = await suite.ctx.sql`select status from machines where id = ${machine.row.id as string}`;
    expect(m!.status).toBe('offline');
  } finally {
    if (robot.exitCode === null) robot.kill('SIGKILL');
    await suite.children.stopAll();
    await api.stop();
  }
});
