import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cp, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createClient } from '@svc/client';
import { checkReadmeRobot, exitOf, robotConnected, seedWorkspace, startApiProcess, startTcpProxy, testSuite, waitFor, type RobotProcess } from '@svc/testing';

/**
 * The Python SDK's README: its example, exactly as printed there, runs as a robot process (Debian's
 * /usr/bin/python3 with its python3-websockets, the SDK on PYTHONPATH) that holds only SVC_URL and
 * its machine key, against an API process, and completes a job triggered through the public API
 * and the items of its queue. Then the timing rules: a Python robot whose network goes silent
 * gives its run up as lost before the platform may hand the job to another robot.
 */
const suite = testSuite();
jest.setTimeout(60_000);

/** The Python jest.config.js found with websockets (scripts/python.cjs): Debian's, with python3-websockets. */
const PYTHON = process.env.SVC_PYTHON ?? '/usr/bin/python3';
const SDK_DIR = path.join(__dirname, '..');

/** Fails (never skips) when the Python the SDK is tested with cannot import websockets. */
function requirePythonWebsockets(): void {
  const r = spawnSync(PYTHON, ['-c', 'import websockets'], { encoding: 'utf8' });
  if (r.error || r.status !== 0) {
    throw new Error(
      `${PYTHON} cannot import websockets (${r.error?.message ?? r.stderr.trim()}): ` +
        'install it with `apt-get install python3-websockets` (10.4 or later) to test the Python SDK',
    );
  }
}

function readmeRobot(): string {
  const readme = readFileSync(path.join(SDK_DIR, 'README.md'), 'utf8');
  const m = /<!-- python-robot-example -->\s*```python\n([\s\S]*?)```/.exec(readme);
  if (!m) throw new Error('sdk/python/README.md has no robot example');
  return m[1]!;
}

/** A Python robot process with nothing of the platform's own environment: the base URL and the machine key. */
function spawnPythonRobot(code: string, url: string, machineKey: string, installed?: { python: string; dir: string }): RobotProcess {
  // from the sources (PYTHONPATH), or from an installed package in a folder of its own
  const proc = spawn(installed?.python ?? PYTHON, ['-B', '-c', code], {
    cwd: installed?.dir ?? SDK_DIR,
    env: { PATH: process.env.PATH ?? '', ...(installed ? {} : { PYTHONPATH: SDK_DIR }), SVC_URL: url, MACHINE_KEY: machineKey },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  proc.stdout!.on('data', (d) => (output += d.toString()));
  proc.stderr!.on('data', (d) => (output += d.toString()));
  return { proc, output: () => output };
}


it('the Python found has websockets (apt-get install python3-websockets), and the SDK\'s own tests pass (units, and the robot against a scripted platform)', () => {
  requirePythonWebsockets();
  const r = spawnSync(PYTHON, ['-B', '-m', 'unittest', 'discover', '-s', 'tests', '-t', '.'], { cwd: SDK_DIR, encoding: 'utf8', env: { PATH: process.env.PATH ?? '' }, timeout: 50_000 });
  if (r.status !== 0) throw new Error(`the Python unit tests failed${r.signal ? ` (${r.signal}: over 50 s)` : ''}:\n${r.stdout}\n${r.stderr}`);
});

/**
 * The package installed as a customer installs it: `pip install` of the folder into a new virtual
 * environment outside the repository (it sees the system's websockets; no index is reachable).
 * Its python runs code from that folder, importing the installed package, never the sources.
 */
async function installedPython(): Promise<{ python: string; dir: string }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'svc-python-'));
  const run = (cmd: string, args: string[]) => {
    const r = spawnSync(cmd, args, { cwd: dir, encoding: 'utf8', env: { PATH: process.env.PATH ?? '', PIP_NO_INDEX: '1', PIP_DISABLE_PIP_VERSION_CHECK: '1' }, timeout: 50_000 });
    if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (python3-venv installed?):\n${r.stdout}\n${r.stderr}`);
  };
  run(PYTHON, ['-m', 'venv', '--system-site-packages', path.join(dir, 'venv')]);
  const python = path.join(dir, 'venv', 'bin', 'python');
  // from a copy: pip builds in the folder it installs (build/, *.egg-info), which stays untouched
  const source = path.join(dir, 'svc-agent-source');
  await cp(SDK_DIR, source, { recursive: true, filter: (src) => !/(__pycache__|\.egg-info|[/\\]build|[/\\]test)$/.test(src) });
  run(python, ['-m', 'pip', 'install', '--no-index', source]);
  return { python, dir };
}

it('the README robot, pip-installed into a new virtual environment, runs a job triggered through the API and the items of its queue, with its key alone', async () => {
  requirePythonWebsockets();
  const installed = await installedPython();
  const code = readmeRobot();
  expect(code.split('\n').length).toBeLessThanOrEqual(30);
  try {
    await checkReadmeRobot(suite, (url, machineKey) => spawnPythonRobot(code, url, machineKey, installed), async (job) => {
      const logs = (await (await fetch(`${job.api}/api/v1/settings/jobs/${job.id}/logs`, { headers: { Authorization: `Bearer ${job.adminToken}` } })).json()) as { data?: { logs?: string }; logs?: string };
      expect(logs.data?.logs ?? logs.logs).toContain('running saludo');
    });
    // the simulator comes with the package: `python -m svc_agent.sim` from the installed copy
    const sim = spawnSync(installed.python, ['-B', '-m', 'svc_agent.sim', '--help'], { cwd: installed.dir, encoding: 'utf8', env: { PATH: process.env.PATH ?? '' }, timeout: 20_000 });
    expect({ status: sim.status, usage: sim.stderr.split('\n')[0] }).toEqual({ status: 2, usage: 'Usage: python3 -m svc_agent.sim --machine-key svc_mk_… [--machine-key …] [options]' });
  } finally {
    await rm(installed.dir, { recursive: true, force: true });
  }
}, 120_000); // a virtual environment and an install come first

/** A robot whose job works until it is cancelled, and says how each run ended. */
const SILENT_ROBOT = `
import asyncio, logging, os, signal, sys
from svc_agent import connect
logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(levelname)s %(message)s")

async def on_job(ctx):
    print(f"working {ctx.job.id}", flush=True)
    await asyncio.Event().wait()

def on_job_end(job, status, lost):
    print(f"ended {job.id} status={status} lost={lost}", flush=True)

async def main():
    robot = connect(os.environ["SVC_URL"], os.environ["MACHINE_KEY"], on_job, on_job_end=on_job_end)
    await robot.ready
    print("robot connected", flush=True)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    await stop.wait()
    await robot.close(1)

asyncio.run(main())
`;

it('a Python robot whose network went silent (nothing closed) gives its run up as lost before the lease lapses, and comes back once the network heals', async () => {
  requirePythonWebsockets();
  const ws = await seedWorkspace(suite.ctx.sql);
  const proc = await ws.process({ name: 'espera' });
  const machine = await ws.machine();
  // heartbeats every second, a 3-s lease, pings every 200 ms: unconfirmed for 2 s, a run is lost
  const platformEnv = { MACHINE_OFFLINE_AFTER_SECONDS: '3', MACHINE_PING_MS: '200' };
  const api = await startApiProcess(suite.ctx.childEnv, platformEnv);
  suite.children.dispatcher(suite.ctx, platformEnv);
  const relay = await startTcpProxy(Number(new URL(api.url).port));
  const robot = spawnPythonRobot(SILENT_ROBOT, relay.url, machine.machineKey);
  try {
    await robotConnected(robot);
    const res = await fetch(`${api.url}/api/v1/jobs/trigger`, {
      method: 'POST',
      headers: { 'X-API-Key': ws.key, 'Content-Type': 'application/json' },
      body: JSON.stringify({ process_id: proc.id, machine_id: machine.row.id }),
    });
    expect(res.status).toBe(201);
    const id = ((await res.json()) as { data: { id: string } }).data.id;
    await waitFor('the robot working', async () => robot.output().includes(`working ${id}`), 30_000);

    relay.hold();
    // silent for 2 × 200 ms + 1 s, the robot destroys its connection and tries again
    await waitFor('the robot to notice the silence', async () => /connection lost \(code 1006: nothing heard from the platform/.test(robot.output()));
    // unconfirmed for lease − heartbeat (2 s), the run is aborted there and then, and its end never sent
    await waitFor('the run given up as lost', async () => robot.output().includes(`ended ${id} status=None lost=True`));
    const unconfirmed = /run aborted: the platform has not confirmed it for too long \(job ([^,]+), attempt \d+, unconfirmed for (\d+) ms\)/.exec(robot.output());
    expect(unconfirmed?.[1]).toBe(id);
    // before the platform's 3-s lease could lapse
    expect(Number(unconfirmed?.[2])).toBeGreaterThan(2000);
    expect(Number(unconfirmed?.[2])).toBeLessThan(3000);

    // once the network heals, the robot is back and beats on; the lost run's end never went out
    relay.release();
    await waitFor('connected again', async () => (robot.output().match(/^INFO connected$/gm) ?? []).length >= 2, 30_000);
    await waitFor('a heartbeat through the healed network', async () => {
      const [m] = await suite.ctx.sql`select last_heartbeat_at > now() - interval '1 second' as fresh from machines where id = ${machine.row.id as string}`;
      return m!.fresh;
    });
    const [job] = await suite.ctx.sql`select status, output_data from jobs where id = ${id}`;
    expect(job!.output_data).toBeNull();
    expect(job!.status).not.toBe('completed');
    expect(job!.status).not.toBe('stopped');

    robot.proc.kill('SIGTERM');
    expect(await exitOf(robot.proc)).toBe(0);
  } catch (err) {
    throw new Error(`${(err as Error).message}\n--- the Python robot said ---\n${robot.output()}`);
  } finally {
    if (robot.proc.exitCode === null) robot.proc.kill('SIGKILL');
    await relay.close();
    await suite.children.stopAll();
    await api.stop();
  }
});

/** A robot that reads an asset and asks a person, or (with `wait`) works until it is stopped. */
const ASKING_ROBOT = `
import asyncio, os, signal
from svc_agent import connect

async def on_job(ctx):
    if (ctx.job.input or {}).get("wait"):
        print(f"waiting {ctx.job.id}", flush=True)
        try:
            await asyncio.Event().wait()
        finally:
            print(f"stopped {ctx.job.id} {ctx.stop_reason} {ctx.stopped.is_set()}", flush=True)
    url = await ctx.asset("erp-url")
    print(f"asking {ctx.job.id}", flush=True)
    answer = await ctx.ask_for_input("¿Aprobar?", choices=["sí", "no"])
    await ctx.log(f"respuesta: {answer}")
    return {"answer": answer, "url": url["value"]}

async def main():
    robot = connect(os.environ["SVC_URL"], os.environ["MACHINE_KEY"], on_job)
    await robot.ready
    print("robot connected", flush=True)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    await stop.wait()
    await robot.close()

asyncio.run(main())
`;

it('a Python robot reads an asset, asks a person and goes on with the answer, and a stop ends a job stopped', async () => {
  requirePythonWebsockets();
  const ws = await seedWorkspace(suite.ctx.sql);
  const proc = await ws.process({ name: 'pregunta' });
  const machine = await ws.machine();
  const api = await startApiProcess(suite.ctx.childEnv);
  suite.children.dispatcher(suite.ctx);
  const integrator = createClient({ baseUrl: api.url, apiKey: ws.key, retries: 0 });
  const admin = createClient({ baseUrl: api.url, token: ws.adminToken, retries: 0 });
  await admin.call('createAsset', { body: { name: 'erp-url', type: 'text', values: { production: 'https://erp' } } });
  const robot = spawnPythonRobot(ASKING_ROBOT, api.url, machine.machineKey);
  const statusOf = async (id: string) => (await suite.ctx.sql`select status from jobs where id = ${id}`)[0]!.status as string;
  try {
    await robotConnected(robot);
    const asked = await integrator.call('triggerJob', { body: { process_id: proc.id, machine_id: machine.row.id } });
    await waitFor('the robot asking', async () => robot.output().includes(`asking ${asked.id}`), 30_000);
    await waitFor('the job waiting for input', async () => (await statusOf(asked.id)) === 'waiting_input');
    expect((await admin.call('answerJobInput', { path: { job_id: asked.id }, body: { value: 'sí' } })).status).toBe('running');
    await waitFor('the job to complete', async () => (await statusOf(asked.id)) === 'completed');
    const done = await integrator.call('getJob', { path: { job_id: asked.id } });
    expect(done.output_data).toEqual({ answer: 'sí', url: 'https://erp' });

    const long = await integrator.call('triggerJob', { body: { process_id: proc.id, machine_id: machine.row.id, input_data: { wait: true } } });
    await waitFor('the robot working', async () => robot.output().includes(`waiting ${long.id}`), 30_000);
    await integrator.call('stopJob', { path: { job_id: long.id } });
    await waitFor('the job stopped', async () => (await statusOf(long.id)) === 'stopped');
    expect(robot.output()).toContain(`stopped ${long.id} stop True`);

    robot.proc.kill('SIGTERM');
    expect(await exitOf(robot.proc)).toBe(0);
  } catch (err) {
    throw new Error(`${(err as Error).message}\n--- the Python robot said ---\n${robot.output()}`);
  } finally {
    if (robot.proc.exitCode === null) robot.proc.kill('SIGKILL');
    await suite.children.stopAll();
    await api.stop();
  }
});

/** A robot that says when the platform turned it away for good, and then ends. */
const REFUSABLE_ROBOT = `
import asyncio, os
from svc_agent import connect

async def on_job(ctx):
    return {}

async def main():
    robot = connect(os.environ["SVC_URL"], os.environ["MACHINE_KEY"], on_job)
    await robot.ready
    print("robot connected", flush=True)
    refused = await robot.refused
    print(f"refused {refused['why']}", flush=True)

asyncio.run(main())
`;

it('a Python robot whose machine connected again from elsewhere stops for good instead of taking the connection back (4002)', async () => {
  requirePythonWebsockets();
  const ws = await seedWorkspace(suite.ctx.sql);
  const machine = await ws.machine();
  const api = await startApiProcess(suite.ctx.childEnv);
  const first = spawnPythonRobot(REFUSABLE_ROBOT, api.url, machine.machineKey);
  let second: ReturnType<typeof spawnPythonRobot> | undefined;
  try {
    await waitFor('the first robot to connect', async () => first.output().includes('robot connected'));
    second = spawnPythonRobot(REFUSABLE_ROBOT, api.url, machine.machineKey);
    await waitFor('the second robot to connect', async () => second!.output().includes('robot connected'));
    expect(await exitOf(first.proc)).toBe(0);
    expect(first.output()).toContain('refused replaced');
    // the second one keeps the machine: the first does not come back to cut it off
    const beatAt = async () => ((await suite.ctx.sql`select last_heartbeat_at from machines where id = ${machine.row.id as string}`)[0]!.last_heartbeat_at as Date).getTime();
    const refusedAt = await beatAt();
    await waitFor('the second robot to beat again', async () => (await beatAt()) > refusedAt, 20_000, 200);
    expect(second.output()).not.toContain('refused');
    expect(second.proc.exitCode).toBeNull();
  } catch (err) {
    throw new Error(`${(err as Error).message}\n--- the first robot said ---\n${first.output()}\n--- the second ---\n${second?.output() ?? ''}`);
  } finally {
    for (const r of [first, second]) if (r && r.proc.exitCode === null) r.proc.kill('SIGKILL');
    await api.stop();
  }
});
