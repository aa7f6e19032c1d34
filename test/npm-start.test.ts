import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { createTestContext, freePort, TEST_ENCRYPTION_KEY, type TestContext } from '@svc/testing';

const ROOT = path.join(__dirname, '..');

/** Pids of the running processes whose environment holds `entry` (Linux /proc). */
function processesWithEnv(entry: string): number[] {
  const pids: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readFileSync(`/proc/${name}/environ`, 'latin1').split('\0').includes(entry)) pids.push(Number(name));
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return pids;
}

/** The `curl …` commands of the banner, each with its `\` continuation lines joined. */
function curlCommands(banner: string): string[] {
  const commands: string[] = [];
  let current: string | null = null;
  for (const raw of banner.split('\n')) {
    const line = raw.trim();
    if (current === null && line.startsWith('curl ')) current = '';
    if (current === null) continue;
    current += ` ${line.replace(/\\$/, '')}`;
    if (!line.endsWith('\\')) {
      commands.push(current.trim());
      current = null;
    }
  }
  return commands;
}

describe('npm start, as a newcomer uses it', () => {
  let ctx: TestContext;
  let child: ChildProcess;
  let output = '';

  beforeAll(async () => {
    ctx = await createTestContext();
  });
  afterAll(async () => {
    // npm start runs its API, dispatcher and agents in process groups of their own: a SIGKILL of
    // the supervisor would leave them running. SIGTERM makes it stop them; SIGKILL only as a last resort.
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      await exited;
      clearTimeout(timer);
    }
    await ctx.close();
  }, 60_000);

  it('starts the platform (a dispatcher and a webhook deliverer apart), prints three curl commands that work, completes 1,000 more items, shows Bull Board and the console with a working sign-in, and stops cleanly on Ctrl-C', async () => {
    const port = await freePort();
    child = spawn(process.execPath, [path.join(ROOT, 'scripts', 'start.mjs')], {
      cwd: ROOT,
      env: {
        ...process.env,
        ...ctx.childEnv,
        ASSET_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
        PORT: String(port),
        LOG_LEVEL: 'warn',
        MACHINE_OFFLINE_AFTER_SECONDS: '5',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (output += d.toString()));

    const until = Date.now() + 90_000;
    const bannerDone = () => output.includes('Try it:') && output.lastIndexOf('──────') > output.indexOf('Try it:');
    while (!bannerDone()) {
      if (Date.now() > until || child.exitCode !== null) throw new Error(`npm start did not print its banner:\n${output}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(output).toContain(`Platform running at http://127.0.0.1:${port}`);
    // webhook delivery runs in a process of its own, apart from the dispatch work
    const ours = new Set(processesWithEnv(`REDIS_PREFIX=${ctx.redisPrefix}`));
    for (const role of ['dispatch', 'deliver']) {
      expect([role, processesWithEnv(`DISPATCHER_ROLE=${role}`).filter((pid) => ours.has(pid)).length]).toEqual([role, 1]);
    }
    const commands = curlCommands(output);
    expect(commands).toHaveLength(3);

    const results = commands.map((cmd) => JSON.parse(execFileSync('bash', ['-c', cmd], { encoding: 'utf8', timeout: 20_000 })));
    // a failed command shows its answer
    expect(results.map((r, i) => (r.success === true ? true : { command: commands[i], answer: r }))).toEqual([true, true, true]);
    const [added, listed, triggered] = results;
    expect(added.data.status).toBe('new');
    expect(listed.data.map((i: { id: string }) => i.id)).toContain(added.data.id);
    expect(triggered.data.status).toBe('pending');

    // the simulated machines take the item and the job through to the end
    const key = /X-API-Key: (svc_ak_[\w-]+)/.exec(output)![1]!;
    const base = `http://127.0.0.1:${port}/api/v1`;
    let item: { status: string } | undefined;
    let job: { status: string } | undefined;
    const doneBy = Date.now() + 60_000;
    // once a second: both routes allow 60 a minute per key, and the watch below uses the list too
    // (a 429 is not an answer: the next look tries again)
    while (Date.now() < doneBy) {
      const itemsRes = await fetch(`${base}/queues/by-name/invoices/items?limit=100`, { headers: { 'X-API-Key': key } });
      const jobRes = await fetch(`${base}/jobs/${triggered.data.id}`, { headers: { 'X-API-Key': key } });
      if (itemsRes.ok) item = ((await itemsRes.json()) as { data: Array<{ id: string; status: string }> }).data.find((i) => i.id === added.data.id);
      if (jobRes.ok) job = ((await jobRes.json()) as { data: { status: string } }).data;
      if (item && job && ['completed', 'failed', 'dead_letter', 'pending_review'].includes(item.status) && ['completed', 'failed'].includes(job.status)) break;
      await new Promise((r) => setTimeout(r, 1_000));
    }
    expect(['completed', 'failed', 'dead_letter', 'pending_review']).toContain(item!.status);
    expect(['completed', 'failed']).toContain(job!.status);

    // as the issue tries it: 1,000 items with the printed key, watched until completed
    const bulk = await fetch(`${base}/queues/by-name/invoices/items/bulk`, {
      method: 'POST',
      headers: { 'X-API-Key': key, 'Content-Type': 'application/json' },
      body: JSON.stringify({ items: Array.from({ length: 1000 }, (_, i) => ({ invoice: `INV-${i}` })) }),
    });
    expect(((await bulk.json()) as { data: unknown }).data).toEqual({ added: 1000 });
    let completed = 0;
    // a liveness bound for a loaded host; one look every 1.5 s stays under the route's 60 a minute
    const allBy = Date.now() + 150_000;
    while (Date.now() < allBy && completed < 1001) {
      const res = await fetch(`${base}/queues/by-name/invoices/items?status=completed&limit=1`, { headers: { 'X-API-Key': key } });
      if (res.ok) completed = ((await res.json()) as { meta: { total: number } }).meta.total;
      await new Promise((r) => setTimeout(r, 1_500));
    }
    expect(completed).toBe(1001);

    // Bull Board answers with the admin token the banner printed (never in the URL), and refuses without it
    const boardUrl = /Bull Board: +(\S+)/.exec(output)![1]!;
    expect(boardUrl).toBe(`http://127.0.0.1:${port}/admin/queues`);
    const adminToken = /Authorization: Bearer (\S+?)'/.exec(output)![1]!;
    // a browser gets in through the console's exchange: bearer token → session cookie
    const exchange = await fetch(`${boardUrl}/session`, { method: 'POST', headers: { authorization: `Bearer ${adminToken}` } });
    expect(exchange.status).toBe(200);
    const cookie = exchange.headers.get('set-cookie')!.split(';')[0]!;
    const board = await fetch(boardUrl, { headers: { cookie } });
    expect(board.status).toBe(200);
    expect(await board.text()).toMatch(/<html/i);
    expect((await fetch(`http://127.0.0.1:${port}/admin/queues`)).status).toBe(401);
    expect((await fetch(`http://127.0.0.1:${port}/admin/queues?token=${adminToken}`)).status).toBe(401);

    // the console answers at the printed link, and the printed demo credentials sign in
    const consoleUrl = /Console: +(\S+)/.exec(output)![1]!;
    expect(consoleUrl).toBe(`http://127.0.0.1:${port}/console`);
    const page = await fetch(consoleUrl);
    expect(page.status).toBe(200);
    expect(await page.text()).toMatch(/<div id="root">/);
    const [, email, password] = /sign in as (\S+) \/ (\S+)/.exec(output)!;
    const login = await fetch(`${base}/auth/login`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ email, password }) });
    expect(login.status).toBe(200);
    expect(((await login.json()) as { data: { user: { role: string } } }).data.user.role).toBe('admin');

    child.kill('SIGINT');
    const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
    expect(code).toBe(0);
    expect(output).toContain('Stopped.');
    await expect(fetch(`http://127.0.0.1:${port}/health`)).rejects.toThrow();
    // the robots started once the API was ready (none found its port closed: "connection lost",
    // code 1006) and stopped before it, each goodbye answered: their machines are offline now,
    // not left online until the heartbeat sweep (which stopped with the platform)
    expect(output).not.toContain('connection lost');
    expect(output).not.toContain('did not acknowledge the bye');
    const machines = await ctx.sql<Array<{ name: string; status: string }>>`select name, status from machines order by name`;
    expect(machines.length).toBeGreaterThan(0);
    expect(machines.filter((m) => m.status !== 'offline')).toEqual([]);
  }, 400_000);

  it('stops every part and exits 1 when one part cannot start (its port is taken), leaving no process behind', async () => {
    // holds the port; a connection to it (npm start polling /ready) is dropped at once
    const taken = net.createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as net.AddressInfo).port;
    let out = '';
    try {
      const start = spawn(process.execPath, [path.join(ROOT, 'scripts', 'start.mjs')], {
        cwd: ROOT,
        env: { ...process.env, ...ctx.childEnv, ASSET_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY, PORT: String(port), LOG_LEVEL: 'warn' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      start.stdout!.on('data', (d: Buffer) => (out += d.toString()));
      start.stderr!.on('data', (d: Buffer) => (out += d.toString()));
      const code = await new Promise<number | null>((resolve) => start.once('exit', (c) => resolve(c)));
      expect({ code, out }).toEqual({ code: 1, out: expect.stringContaining('api exited (1); stopping the platform.') });
      expect(out).toContain('Stopped.');
      expect(out).not.toContain('Try it:');
      // the dispatcher and the agents ran in process groups of their own: none may outlive it
      expect(processesWithEnv(`REDIS_PREFIX=${ctx.redisPrefix}`)).toEqual([]);
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  }, 120_000);
});
