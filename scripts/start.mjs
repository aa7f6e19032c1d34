// `npm start`: zero-configuration start of the whole platform on this machine.
// Installs and builds, finds or starts Postgres and Redis, migrates, creates the demo workspace
// on first start, then runs the API, the dispatcher, the webhook deliverer and two simulated
// machines until Ctrl-C.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { APPS, robotEnv } from './apps.mjs';
import { ensureDatabase, ensureInstalledAndBuilt, ensureServices, ROOT, SetupError } from './services.mjs';

const DATA = path.join(ROOT, '.data');

function encryptionKey() {
  if (process.env.ASSET_ENCRYPTION_KEY) return process.env.ASSET_ENCRYPTION_KEY;
  // Generated once per checkout and kept out of git: asset credentials encrypted with it stay readable.
  const file = path.join(DATA, 'asset-encryption-key');
  mkdirSync(DATA, { recursive: true });
  if (!existsSync(file)) writeFileSync(file, randomBytes(32).toString('base64'), { mode: 0o600 });
  return readFileSync(file, 'utf8').trim();
}

/**
 * The token `/metrics` asks for on the API's port (its gauges name every workspace, so they are
 * never served anonymously there): METRICS_TOKEN when set, else one generated once into .data/.
 */
function metricsToken() {
  if (process.env.METRICS_TOKEN) return process.env.METRICS_TOKEN;
  const file = path.join(DATA, 'metrics-token');
  mkdirSync(DATA, { recursive: true });
  if (!existsSync(file)) writeFileSync(file, randomBytes(24).toString('base64url'), { mode: 0o600 });
  return readFileSync(file, 'utf8').trim();
}

/**
 * The demo admin's password is shown once, when `svc demo` creates the workspace; kept in .data/
 * (git-ignored, like the encryption key) by workspace id, so every later start against the same
 * database prints the console's sign-in, and a start against another database (a test's) never
 * prints a password that is not its own.
 */
function demoPassword(demo) {
  const file = path.join(DATA, 'demo-admin-passwords.json');
  let known = {};
  try {
    known = JSON.parse(readFileSync(file, 'utf8'));
  } catch {}
  if (demo.admin_password) {
    // the newest few: each test run of npm start creates a workspace of its own
    known = Object.fromEntries([...Object.entries(known).filter(([id]) => id !== demo.tenant_id), [demo.tenant_id, demo.admin_password]].slice(-10));
    mkdirSync(DATA, { recursive: true });
    writeFileSync(file, JSON.stringify(known, null, 2), { mode: 0o600 });
    return demo.admin_password;
  }
  return typeof known[demo.tenant_id] === 'string' ? known[demo.tenant_id] : null;
}

function banner(demo, baseUrl, metrics) {
  const password = demoPassword(demo);
  const key = demo.api_key ?? '<the key printed on first start, or run: npx svc demo --new-key>';
  const lines = [
    '',
    '──────────────────────────────────────────────────────────────────────────────',
    ` Platform running at ${baseUrl}   (Ctrl-C stops everything)`,
    ` Console:           ${baseUrl}/console`,
    password
      ? `                    sign in as ${demo.admin_email} / ${password}`
      : `                    sign in as ${demo.admin_email} (password shown on first start; npx svc user set-password ${demo.admin_email} sets one)`,
    ` Bull Board:        ${baseUrl}/admin/queues   (open it from the console: "Colas (Bull Board)")`,
    `                    scripts: -H 'Authorization: Bearer ${demo.access_token}'`,
    `                    (an admin access token, valid 12 h; npx svc token issue --email ${demo.admin_email} for another)`,
    ` OpenAPI:           ${baseUrl}/api/v1/openapi.json`,
    ` Metrics:           curl -s ${baseUrl}/metrics -H 'Authorization: Bearer ${metrics}'`,
    ` Demo workspace:    ${demo.tenant_name} — admin ${demo.admin_email}${password ? ` / ${password}` : ''}`,
    demo.api_key ? ` API key (shown once, every scope): ${demo.api_key}` : ' API key: printed on first start (npx svc demo --new-key issues another)',
    '',
    ' Try it:',
    '',
    `  curl -s -X POST ${baseUrl}/api/v1/queues/by-name/${demo.queue_name}/items \\`,
    `    -H 'X-API-Key: ${key}' -H 'Content-Type: application/json' \\`,
    `    -d '{"data": {"invoice": "INV-1001", "amount": 250.5}, "priority": 5, "reference": "INV-1001"}'`,
    '',
    `  curl -s ${baseUrl}/api/v1/queues/by-name/${demo.queue_name}/items?limit=5 -H 'X-API-Key: ${key}'`,
    '',
    `  curl -s -X POST ${baseUrl}/api/v1/jobs/trigger \\`,
    `    -H 'X-API-Key: ${key}' -H 'Content-Type: application/json' \\`,
    `    -d '{"process_id": "${demo.process_id}", "input_data": {"month": "2026-11"}}'`,
    '──────────────────────────────────────────────────────────────────────────────',
    '',
  ];
  console.log(lines.join('\n'));
}

async function main() {
  ensureInstalledAndBuilt();
  const { databaseUrl, redisUrl, stopStarted } = await ensureServices();
  await ensureDatabase(databaseUrl);
  const port = process.env.PORT || '3000';
  const env = {
    ...process.env,
    DATABASE_URL: databaseUrl,
    REDIS_URL: redisUrl,
    ASSET_ENCRYPTION_KEY: encryptionKey(),
    METRICS_TOKEN: metricsToken(),
    PORT: port,
    HOST: process.env.HOST || '127.0.0.1',
  };
  const svc = path.join(ROOT, 'packages', 'cli', 'bin', 'svc.js');
  // Migrates, then creates the demo workspace on first start; machine keys are re-issued each start.
  const res = spawnSync(process.execPath, [svc, 'demo', '--json'], { env, encoding: 'utf8' });
  if (res.status !== 0) throw new SetupError(`Setting up the demo workspace failed: ${(res.stderr || res.stdout).trim()}`);
  const demo = JSON.parse(res.stdout);

  // the platform's processes, then the robots: the robots start once the API is ready and stop
  // first, so none meets a closed port ("connection lost 1006") and each says goodbye to an API
  // that still answers (its machine goes offline at once, not when its heartbeats are missed)
  const children = [];
  const robots = [];
  // set before the first child starts: a child that dies early, or Ctrl-C while the platform is
  // still starting, must stop the others too (they run in process groups of their own)
  let stopping = false;
  const terminate = (list, killAfterMs) => Promise.all(list.map((c) => new Promise((resolve) => {
    if (c.exitCode !== null || c.signalCode !== null) return resolve();
    c.once('exit', resolve);
    c.kill('SIGTERM');
    setTimeout(() => c.kill('SIGKILL'), killAfterMs).unref();
  })));
  async function stop(code = 0) {
    if (stopping) return;
    stopping = true;
    console.log('\nStopping: the machines first (each says goodbye to the platform), then the API, the dispatcher and the deliverer …');
    // a robot drains its runs (up to 10 s) and then waits for the goodbye's answer (up to 10 s)
    await terminate(robots, 25_000);
    await terminate(children, 15_000);
    await stopStarted();
    console.log('Stopped.');
    process.exit(code);
  }
  process.on('exit', () => [...robots, ...children].forEach((c) => c.exitCode === null && c.kill('SIGKILL')));
  process.on('SIGINT', () => void stop(0));
  process.on('SIGTERM', () => void stop(0));

  const run = (name, app, args = [], childEnv = env, group = children) => {
    // own process group: Ctrl-C reaches only this supervisor, which drains the children in order
    const child = spawn(process.execPath, [...app.nodeArgs, path.join(ROOT, app.script), ...args], { env: childEnv, stdio: ['ignore', 'inherit', 'inherit'], detached: true });
    child.on('exit', (code, signal) => {
      if (!stopping) {
        console.error(`${name} exited (${signal ?? code}); stopping the platform.`);
        void stop(1);
      }
    });
    group.push(child);
  };
  run('api', APPS.api);
  run('dispatcher', APPS.dispatcher, [], { ...env, DISPATCHER_ROLE: 'dispatch' });
  // webhook delivery in a process of its own, as a deployment runs it (docs/decisions/events.md)
  run('deliverer', APPS.dispatcher, [], { ...env, DISPATCHER_ROLE: 'deliver' });
  const baseUrl = `http://${env.HOST}:${port}`;
  // the robots connect once the API answers /ready (200: it listens, Postgres and Redis answer)
  const readyBy = Date.now() + 60_000;
  let ready = false;
  while (!ready && Date.now() < readyBy && !stopping) {
    try {
      ready = (await fetch(`${baseUrl}/ready`)).status === 200;
    } catch {}
    if (!ready) await new Promise((r) => setTimeout(r, 200));
  }
  if (stopping) return;
  if (!ready) {
    console.error(`The API did not answer ${baseUrl}/ready within 60 s; stopping the platform.`);
    return void stop(1);
  }
  // the robots hold the platform's URL and their machine keys, nothing else of it (docs/agent-sim.md)
  // (nor the metrics settings: the robot would take the platform's metrics port)
  const agentEnv = Object.fromEntries(Object.entries(robotEnv(process.env)).filter(([k]) => !k.startsWith('METRICS_')));
  run('agent-sim', APPS.agent, [], { ...agentEnv, SVC_URL: baseUrl, AGENT_MACHINE_KEYS: demo.machines.map((m) => m.machine_key).join(',') }, robots);
  const until = Date.now() + 20_000;
  // the banner's trigger picks an online machine: print it once the robots have said hello, so
  // the commands work as soon as they are shown (a loaded host starts the robots last)
  if (!stopping && !(await machinesOnline(baseUrl, demo, until + 30_000))) {
    console.error('The simulated machines are not online yet: the trigger below answers NO_MACHINE_AVAILABLE until they are.');
  }
  if (!stopping) banner(demo, baseUrl, env.METRICS_TOKEN);
}

/** Waits until every demo machine is online (or busy), as the console's machine list shows them. */
async function machinesOnline(baseUrl, demo, deadline) {
  const names = new Set(demo.machines.map((m) => m.name));
  while (Date.now() < deadline) {
    try {
      const res = await fetch(`${baseUrl}/api/v1/settings/machines?limit=100`, { headers: { Authorization: `Bearer ${demo.access_token}` } });
      if (res.ok) {
        const { data } = await res.json();
        const up = data.filter((m) => names.has(m.name) && (m.status === 'online' || m.status === 'busy'));
        if (up.length === names.size) return true;
      }
    } catch {}
    await new Promise((r) => setTimeout(r, 250));
  }
  return false;
}

main().catch((err) => {
  console.error(err instanceof SetupError ? err.message : err);
  process.exit(1);
});
