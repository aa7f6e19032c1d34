import { execFile } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import WebSocket from 'ws';
import { renderMetrics } from '@svc/core/observability';
import { agentProtocolChecker, Children, ROOT, itemStatusCounts, openRawWebSocket, sampleValue, seedWorkspace, waitFor } from '@svc/testing';
import { apiClient, createApiTestContext, type ApiTestContext } from '@svc/testing/api';
import { connect } from '@svc/agent';
import { createAgentHub, type AgentHub } from '../src/agent/hub';
import { serveHub } from './agent-hub-support';

/** A sample of this process's metrics (the hubs of these tests run in it). */
const metric = async (name: string, labels: Record<string, string>) => sampleValue((await renderMetrics()).body, name, labels) ?? 0;

/**
 * The machine protocol's work beyond plain jobs (docs/agent-protocol.md): a consumer job's items
 * taken and settled over the socket (a repeated take hands back what the lost answer took), a
 * question asked and its answer pushed, assets read — each scoped to the robot's own runs, machine
 * and workspace, and each refusing hostile input in the error envelope.
 */
jest.setTimeout(60_000);

let t: ApiTestContext;
let hub: AgentHub;
let server: http.Server;
let base: string;
const children = new Children();

beforeAll(async () => {
  t = await createApiTestContext({ machineOfflineAfterSeconds: 6 });
  hub = createAgentHub(t.deps);
  server = http.createServer(t.app.callback());
  hub.attach(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  // consumer jobs are created by a dispatcher
  children.dispatcher(t);
});
afterAll(async () => {
  await children.stopAll();
  await hub.close();
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  await t.close();
});

/**
 * A robot driven message by message: its pushes and the replies to its requests. Every message
 * the server sends is read against docs/agent-protocol.schema.json (`protocol`), as a robot
 * written from that document would read it; one it does not describe fails the test (afterEach).
 */
async function rawRobot(machineKey: string, url = base) {
  const sock = new WebSocket(`${url.replace('http', 'ws')}/api/v1/agent/connect`, { headers: { Authorization: `Bearer ${machineKey}` } });
  const messages: Array<Record<string, any>> = [];
  const protocol = agentProtocolChecker();
  sock.on('message', (d) => {
    const message = JSON.parse(d.toString()) as Record<string, any>;
    try {
      protocol.server(message);
    } catch (err) {
      offProtocolSeen.push((err as Error).message);
    }
    messages.push(message);
  });
  await new Promise((resolve, reject) => { sock.once('open', resolve); sock.once('error', reject); });
  await waitFor('the welcome', async () => messages.some((m) => m.type === 'welcome'));
  let next = 1;
  const request = async (message: Record<string, unknown>): Promise<{ result?: any; error?: { code: string; message: string; details?: any } }> => {
    const id = next++;
    protocol.request({ id, ...message } as { id: number; type: string });
    sock.send(JSON.stringify({ id, ...message }));
    return waitFor(`the reply to ${String(message.type)} ${id}`, async () => messages.find((m) => m.type === 'reply' && m.re === id) ?? null);
  };
  const pushed = (type: string, pred: (m: Record<string, any>) => boolean = () => true) =>
    waitFor(`a ${type} push`, async () => messages.find((m) => m.type === type && pred(m)) ?? null);
  /** the reply to a message sent on the socket directly */
  const replyTo = (re: number) => waitFor(`the reply to ${re}`, async () => messages.find((m) => m.type === 'reply' && m.re === re) ?? null);
  // a fresh robot: it runs nothing from before
  expect((await request({ type: 'heartbeat', fresh: true, running: [] })).error).toBeUndefined();
  return { sock, messages, request, pushed, replyTo, protocol };
}

const offProtocolSeen: string[] = [];
beforeEach(() => {
  // a message that arrived after the previous test ended is not this test's
  offProtocolSeen.length = 0;
});
afterEach(() => {
  expect(offProtocolSeen.splice(0)).toEqual([]);
});

it('takes and settles a consumer job\'s items over the socket; a repeated take hands back what its lost answer took', async () => {
  const ws = await seedWorkspace(t.sql);
  const proc = await ws.process();
  const machine = await ws.machine();
  const robot = await rawRobot(machine.machineKey);
  const queue = await ws.queue({ consumer_process_id: proc.id, max_consumers: 1, max_retries: 0 });
  const added = await apiClient(t, { apiKey: ws.key }).call('addQueueItems', { path: { name: queue.name }, body: { items: [1, 2, 3, 4, 5].map((n) => ({ n })) } });
  expect(added).toEqual({ added: 5 });
  const start = await robot.pushed('job.start', (m) => m.job.queue_id === queue.id);
  const run = { job_id: start.job.id as string, attempt: start.job.attempt as number };

  const first = await robot.request({ type: 'items.take', ...run, outcomes: [], take: 2 });
  expect(first.result.items.map((i: any) => i.data.n)).toEqual([1, 2]);
  // its answer "lost": the robot asks again as a repeat, holding nothing
  const again = await robot.request({ type: 'items.take', ...run, outcomes: [], take: 1, repeat: true, held: [] });
  expect(again.result.released_unknown).toBe(2);
  expect(again.result.items.map((i: any) => i.data.n)).toEqual([1]);
  expect(await itemStatusCounts(t.sql, queue.id)).toEqual({ in_progress: 1, new: 4 });

  const item = again.result.items[0];
  // a stale outcome (an earlier attempt of the item) is not settled; the current one is
  const settled = await robot.request({
    type: 'items.take', ...run, take: 1,
    outcomes: [{ id: item.id, attempt: item.attempt - 1 > 0 ? item.attempt - 1 : 999, status: 'completed' }],
  });
  expect(settled.result.settled).toEqual([]);
  const held = settled.result.items[0];
  const done = await robot.request({
    type: 'items.take', ...run, take: 0,
    outcomes: [{ id: item.id, attempt: item.attempt, status: 'completed', result: { ok: true } }, { id: held.id, attempt: held.attempt, status: 'failed', error_message: 'no' }],
  });
  expect(done.result.settled).toEqual(expect.arrayContaining([{ id: item.id, status: 'completed' }, { id: held.id, status: 'failed' }]));
  // taken and handed back untouched
  const more = await robot.request({ type: 'items.take', ...run, outcomes: [], take: 2 });
  const back = await robot.request({ type: 'items.release', ...run, items: more.result.items.map((i: any) => ({ id: i.id, attempt: i.attempt })) });
  expect(back.result).toEqual({ released: 2 });
  expect((await robot.request({ type: 'jobs.waiting', ...run })).result).toEqual({ waiting: false });
  // the failed item goes through its queue's retry policy (none left: dead-lettered)
  const counts = { completed: 1, dead_letter: 1, new: 3 };
  await waitFor('the items settled', async () => JSON.stringify(await itemStatusCounts(t.sql, queue.id)) === JSON.stringify(counts));

  // hostile: wrong types, a NUL byte, too many outcomes, an attempt of another run, a job it does not hold
  const bad = [
    { type: 'items.take', ...run, outcomes: 'all', take: 1 },
    { type: 'items.take', ...run, outcomes: [], take: -1 },
    { type: 'items.take', ...run, outcomes: [], take: 101 },
    { type: 'items.take', ...run, outcomes: [], take: 1, held: ['x\u0000'] },
    { type: 'items.take', ...run, outcomes: Array.from({ length: 1001 }, () => ({ id: item.id, attempt: 1, status: 'completed' })), take: 0 },
    { type: 'items.release', ...run, items: [{ id: item.id }] },
  ];
  // text Postgres cannot store, anywhere in an outcome
  bad.push({ type: 'items.take', ...run, take: 0, outcomes: [{ id: item.id, attempt: item.attempt, status: 'completed', result: { note: 'a\u0000b' } }] } as never);
  bad.push({ type: 'items.take', ...run, take: 0, outcomes: [{ id: item.id, attempt: item.attempt, status: 'failed', error_message: '\ud800' }] } as never);
  for (const b of bad) expect([b.type, (await robot.request(b)).error?.code]).toEqual([b.type, 'VALIDATION_ERROR']);
  expect((await robot.request({ type: 'items.take', ...run, attempt: run.attempt + 1, outcomes: [], take: 1 })).error?.code).toBe('CONFLICT');
  const other = await seedWorkspace(t.sql);
  const [foreign] = await t.sql`insert into jobs (tenant_id, process_id, machine_id, queue_id, status, attempt, started_at)
    values (${other.tenant.id}, ${(await other.process()).id as string}, ${(await other.machine()).row.id as string},
            ${(await other.queue()).id as string}, 'running', 1, now()) returning id`;
  expect((await robot.request({ type: 'items.take', job_id: foreign!.id, attempt: 1, outcomes: [], take: 5 })).error?.code).toBe('NOT_FOUND');
  expect((await robot.request({ type: 'jobs.waiting', job_id: foreign!.id, attempt: 1 })).error?.code).toBe('NOT_FOUND');
  expect(await itemStatusCounts(t.sql, queue.id)).toEqual(counts);

  expect((await robot.request({ type: 'job.finish', ...run, status: 'completed' })).result).toEqual({ status: 'completed' });
  robot.sock.close();
});

it('asks a person over the socket: the job waits, the answer is pushed and read, a stop while it waits is told', async () => {
  const ws = await seedWorkspace(t.sql);
  const proc = await ws.process();
  const machine = await ws.machine();
  const robot = await rawRobot(machine.machineKey);
  // the API side as an integrator and an admin call it: through the typed client (@svc/client)
  const integrator = apiClient(t, { apiKey: ws.key });
  const admin = apiClient(t, { token: ws.adminToken });
  const trigger = async () => {
    const job = await integrator.call('triggerJob', { body: { process_id: proc.id, machine_id: machine.row.id } });
    const start = await robot.pushed('job.start', (m) => m.job.id === job.id);
    return { job_id: start.job.id as string, attempt: start.job.attempt as number };
  };
  const run = await trigger();
  const hostile = await robot.request({ type: 'job.input.ask', ...run, prompt: '', options: { choices: [] } });
  expect(hostile.error?.code).toBe('VALIDATION_ERROR');
  expect((await robot.request({ type: 'job.input.ask', ...run, prompt: '¿Aprobar?', options: { choices: ['sí', 'no'] } })).result).toEqual({ waiting: true });
  expect((await robot.request({ type: 'job.input.read', ...run })).result).toMatchObject({ status: 'waiting_input', answer: null });
  const answered = await admin.call('answerJobInput', { path: { job_id: run.job_id }, body: { value: 'sí' } });
  expect(answered.status).toBe('running');
  await robot.pushed('job.input', (m) => m.job_id === run.job_id);
  expect((await robot.request({ type: 'job.input.read', ...run })).result).toMatchObject({ status: 'running', answer: { value: 'sí' } });
  expect((await robot.request({ type: 'job.finish', ...run, status: 'completed' })).result).toEqual({ status: 'completed' });

  // a repeat of a question already asked finds it waiting; a stop while it waits ends the job stopped
  const second = await trigger();
  const ask = { type: 'job.input.ask', ...second, prompt: '¿Seguir?', options: { choices: ['sí'] } };
  expect((await robot.request(ask)).result).toEqual({ waiting: true });
  expect((await robot.request({ ...ask, repeat: true })).result).toEqual({ waiting: true });
  expect((await integrator.call('stopJob', { path: { job_id: second.job_id } })).stop_requested).toBe(true);
  await waitFor('the job stopped', async () => (await t.sql`select status from jobs where id = ${second.job_id}`)[0]!.status === 'stopped');
  expect((await robot.request({ type: 'job.input.read', ...second })).result).toMatchObject({ status: 'stopped' });
  robot.sock.close();
});

it('reads its workspace\'s assets for a run it holds, audits a credential read, and finds no other workspace\'s', async () => {
  const ws = await seedWorkspace(t.sql);
  const proc = await ws.process();
  const machine = await ws.machine();
  await apiClient(t, { token: ws.adminToken }).call('createAsset', {
    body: { name: 'erp-login', type: 'credential', values: { production: { username: 'bot', password: 'S3cret-Pw' }, staging: { username: 'qa', password: 'Qa-Pw' } } },
  });
  const other = await seedWorkspace(t.sql);
  await apiClient(t, { token: other.adminToken }).call('createAsset', { body: { name: 'only-theirs', type: 'text', values: { production: 'x' } } });

  const robot = await rawRobot(machine.machineKey);
  const job = await apiClient(t, { apiKey: ws.key }).call('triggerJob', { body: { process_id: proc.id, machine_id: machine.row.id } });
  const start = await robot.pushed('job.start', (m) => m.job.id === job.id);
  const run = { job_id: start.job.id as string, attempt: start.job.attempt as number };

  const read = await robot.request({ type: 'asset.get', ...run, name: 'erp-login' });
  expect(read.result).toEqual({ name: 'erp-login', type: 'credential', environment: 'production', value: { username: 'bot', password: 'S3cret-Pw' } });
  expect((await robot.request({ type: 'asset.get', ...run, name: 'erp-login', environment: 'staging' })).result.value).toEqual({ username: 'qa', password: 'Qa-Pw' });
  const [audit] = await t.sql`select actor_type, actor_id, details from audit_log where tenant_id = ${ws.tenant.id} and action = 'read_asset' order by id limit 1`;
  expect(audit).toMatchObject({ actor_type: 'machine', actor_id: machine.row.id, details: { name: 'erp-login', environment: 'production', job_id: run.job_id } });
  expect(JSON.stringify(audit)).not.toContain('S3cret-Pw');

  expect((await robot.request({ type: 'asset.get', ...run, name: 'only-theirs' })).error?.code).toBe('NOT_FOUND');
  expect((await robot.request({ type: 'asset.get', ...run, name: 'missing' })).error?.code).toBe('NOT_FOUND');
  for (const bad of [{ name: '' }, { name: 'x'.repeat(256) }, { name: 'erp-login', environment: 'prod' }, { name: 7 }]) {
    expect([bad, (await robot.request({ type: 'asset.get', ...run, ...bad })).error?.code]).toEqual([bad, 'VALIDATION_ERROR']);
  }
  // only for a run it holds
  expect((await robot.request({ type: 'asset.get', job_id: '00000000-0000-4000-8000-000000000000', attempt: 1, name: 'erp-login' })).error?.code).toBe('NOT_FOUND');
  // a machine limited to some environments reads only those, production by default when allowed
  await t.sql`update machines set environments = ${['staging']} where id = ${machine.row.id as string}`;
  const denied = await robot.request({ type: 'asset.get', ...run, name: 'erp-login', environment: 'production' });
  expect(denied.error).toMatchObject({ code: 'FORBIDDEN', details: { environment: 'production' } });
  expect(denied.error?.message).toBe('La máquina no tiene acceso al entorno production');
  expect((await robot.request({ type: 'asset.get', ...run, name: 'erp-login' })).result).toMatchObject({ environment: 'staging', value: { username: 'qa', password: 'Qa-Pw' } });
  await t.sql`update machines set environments = ${['staging', 'dev']} where id = ${machine.row.id as string}`;
  expect((await robot.request({ type: 'asset.get', ...run, name: 'erp-login' })).error).toMatchObject({ code: 'VALIDATION_ERROR' });
  await t.sql`update machines set environments = null where id = ${machine.row.id as string}`;
  // and only while it runs: once a stop was asked, no credential leaves the platform for it
  const reads = async () => (await t.sql`select count(*)::int as n from audit_log where tenant_id = ${ws.tenant.id} and action = 'read_asset'`)[0]!.n as number;
  const before = await reads();
  expect((await t.http.post(`/api/v1/jobs/${run.job_id}/stop`).set('X-API-Key', ws.key)).status).toBe(200);
  const stopped = await robot.request({ type: 'asset.get', ...run, name: 'erp-login' });
  expect(stopped.error).toMatchObject({ code: 'CONFLICT', details: { stop_requested: true } });
  expect(stopped.result).toBeUndefined();
  expect(await reads()).toBe(before);
  robot.sock.close();
});

it('bounds the requests a connection has in flight, stops reading a robot that leaves its replies unread, and cuts it', async () => {
  // hubs of their own with low bounds and no message rate to speak of: only the bound under test acts
  const inFlightHub = await serveHub(t, { messagesPerSecond: 1_000_000, maxInFlight: 8 });
  const unreadHub = await serveHub(t, { messagesPerSecond: 1_000_000, maxInFlight: 100_000, maxUnreadBytes: 256 * 1024 });
  // a robot's requests are not read while it leaves its replies unread; a silent robot is cut by the pings
  const pausingHub = await serveHub(t, {
    messagesPerSecond: 1_000_000, maxInFlight: 20, maxUnreadBytes: 1024 * 1024 * 1024, pauseReadingAboveBytes: 64 * 1024,
    deps: { config: { ...t.deps.config, machinePingMs: 1000, machineOfflineAfterSeconds: 120 } },
  });
  try {
    let url = inFlightHub.url;
    let bounded = inFlightHub.hub;
    const ws = await seedWorkspace(t.sql);
    const proc = await ws.process();
    const machine = await ws.machine();
    await apiClient(t, { token: ws.adminToken }).call('createAsset', { body: { name: 'big', type: 'text', values: { production: 'x'.repeat(10_000) } } });
    const sock = new WebSocket(`${url.replace('http', 'ws')}/api/v1/agent/connect`, { headers: { Authorization: `Bearer ${machine.machineKey}` } });
    const messages: Array<Record<string, any>> = [];
    sock.on('message', (d) => messages.push(JSON.parse(d.toString()) as Record<string, any>));
    await new Promise((resolve, reject) => { sock.once('open', resolve); sock.once('error', reject); });
    // 100 heartbeats at once, each a Postgres statement: past 8 in flight they are refused, not queued
    for (let i = 0; i < 100; i++) sock.send(JSON.stringify({ id: 1000 + i, type: 'heartbeat', running: [] }));
    await waitFor('every heartbeat answered', async () => messages.filter((m) => m.type === 'reply' && m.re >= 1000).length === 100);
    const refused = messages.filter((m) => m.type === 'reply' && m.error?.code === 'RATE_LIMIT_EXCEEDED');
    expect(refused.length).toBeGreaterThan(0);
    expect(refused[0]!.error).toMatchObject({ message: expect.stringContaining('sin responder'), details: { retry_after_ms: expect.any(Number) } });
    expect(messages.filter((m) => m.type === 'reply' && m.re >= 1000 && !m.error).length).toBeGreaterThan(0);
    expect(sock.readyState).toBe(WebSocket.OPEN);
    sock.close();
    await waitFor('the first connection gone', async () => bounded.size === 0);
    url = unreadHub.url;
    bounded = unreadHub.hub;

    const unreadCuts = await metric('svc_agent_connections_cut_total', { reason: 'unread' });
    // a robot that asks for 10-KB answers and never reads them: cut once they pile up in the API
    const raw = await openRawWebSocket(url, '/api/v1/agent/connect', `Bearer ${machine.machineKey}`);
    raw.sendText(JSON.stringify({ id: 1, type: 'heartbeat', fresh: true, running: [] }));
    await waitFor('the heartbeat answered', async () => raw.messages.some((m) => m.re === 1));
    const job = await apiClient(t, { apiKey: ws.key }).call('triggerJob', { body: { process_id: proc.id, machine_id: machine.row.id } });
    const start = await waitFor('the job.start', async () => raw.messages.find((m) => m.type === 'job.start' && (m.job as { id: string }).id === job.id)) as { job: { id: string; attempt: number } };
    expect(bounded.size).toBe(1);
    raw.pause();
    for (let i = 0; i < 4000 && !raw.ended && bounded.size > 0; i++) {
      raw.sendText(JSON.stringify({ id: 10 + i, type: 'asset.get', job_id: start.job.id, attempt: start.job.attempt, name: 'big' }));
      if (i % 200 === 199) await new Promise((r) => setTimeout(r, 20));
    }
    await waitFor('the connection cut', async () => bounded.size === 0);
    expect(await metric('svc_agent_connections_cut_total', { reason: 'unread' })).toBe(unreadCuts + 1);
    raw.destroy();

    // with no bound on unread bytes to speak of: the API stops reading the robot's requests once
    // its replies pile up past what the network holds, and the pings (unanswered, unread) cut it
    await apiClient(t, { token: ws.adminToken }).call('createAsset', { body: { name: 'secret', type: 'credential', values: { production: { username: 'u', password: 'p' } } } });
    const reads = async () => (await t.sql`select count(*)::int as n from audit_log where tenant_id = ${ws.tenant.id} and action = 'read_asset'`)[0]!.n as number;
    const quiet = await openRawWebSocket(pausingHub.url, '/api/v1/agent/connect', `Bearer ${machine.machineKey}`);
    quiet.sendText(JSON.stringify({ id: 1, type: 'heartbeat', running: [{ job_id: start.job.id, attempt: start.job.attempt, alive: true }] }));
    await waitFor('the heartbeat answered', async () => quiet.messages.some((m) => m.re === 1));
    quiet.pause();
    const ask = (name: string, n: number, from: number) => {
      for (let i = 0; i < n; i++) quiet.sendText(JSON.stringify({ id: from + i, type: 'asset.get', job_id: start.job.id, attempt: start.job.attempt, name }));
    };
    let next = 10;
    await waitFor('the robot no longer read', async () => {
      if (pausingHub.hub.paused === 1) return true;
      ask('big', 100, next);
      next += 100;
      return false;
    }, 60_000);
    expect(await metric('svc_agent_connections', { state: 'paused' })).toBe(1);
    const silentCuts = await metric('svc_agent_connections_cut_total', { reason: 'silent' });
    // credential reads (each audited) sent now are never read: more than may be in flight, so
    // some would be answered if they were
    ask('secret', 200, 1_000_000);
    await waitFor('the connection cut', async () => pausingHub.hub.size === 0);
    expect(await reads()).toBe(0);
    // cut as a silent one: its pongs were not read either
    expect(await metric('svc_agent_connections_cut_total', { reason: 'silent' })).toBe(silentCuts + 1);
    expect(await metric('svc_agent_connections', { state: 'paused' })).toBe(0);
    quiet.destroy();
  } finally {
    await inFlightHub.close();
    await unreadHub.close();
    await pausingHub.close();
  }
});

/** A raw robot on `url` for a new machine of `ws`, holding a job of `processId` triggered on it. */
async function robotWithRun(url: string, ws: Awaited<ReturnType<typeof seedWorkspace>>, processId: string) {
  const machine = await ws.machine();
  const robot = await rawRobot(machine.machineKey, url);
  await apiClient(t, { apiKey: ws.key }).call('triggerJob', { body: { process_id: processId, machine_id: machine.row.id } });
  const start = await robot.pushed('job.start');
  return { ...robot, run: { job_id: start.job.id as string, attempt: start.job.attempt as number } };
}

it('runs robots\' statements within the process\'s budget for robots, while heartbeats and the HTTP API go on', async () => {
  // a long lease: on a loaded host the run must not lapse (and be ended by the dispatcher) mid-test
  const budgeted = await serveHub(t, { robotDbConcurrency: 1, deps: { config: { ...t.deps.config, machineOfflineAfterSeconds: 120 } } });
  let beating: NodeJS.Timeout | undefined;
  try {
    const ws = await seedWorkspace(t.sql);
    const proc = await ws.process();
    await apiClient(t, { token: ws.adminToken }).call('createAsset', { body: { name: 'erp-url', type: 'text', values: { production: 'https://erp' } } });
    const { sock, messages, replyTo, run } = await robotWithRun(budgeted.url, ws, proc.id);
    const job = { id: run.job_id };
    // the robot holds its run and stays online (liveness only: no statement of the budget)
    sock.send(JSON.stringify({ id: 900, type: 'job.started', ...run }));
    expect((await replyTo(900)).error).toBeUndefined();
    let beat = 1000;
    beating = setInterval(() => sock.send(JSON.stringify({ id: beat++, type: 'heartbeat', running: [] })), 1000);
    // a progress report stuck on the job's row takes the whole budget
    let unlock!: () => void;
    const locked = new Promise<void>((resolve) => (unlock = resolve));
    budgeted.onClose(() => unlock());
    let rowLocked!: () => void;
    const lockTaken = new Promise<void>((resolve) => (rowLocked = resolve));
    const holding = t.sql.begin(async (tx) => {
      await tx`select id from jobs where id = ${job.id} for update`;
      rowLocked();
      await locked;
    });
    await lockTaken;
    sock.send(JSON.stringify({ id: 2, type: 'job.progress', ...run, progress_percent: 10 }));
    await waitFor('the report waiting for the row', async () => (await t.sql`select count(*)::int as n from pg_stat_activity
      where datname = current_database() and wait_event_type = 'Lock' and query like '%progress_percent%'`)[0]!.n === 1);
    // a read waits its turn; a heartbeat sent after it (batched, outside the budget) and the HTTP API do not
    sock.send(JSON.stringify({ id: 3, type: 'asset.get', ...run, name: 'erp-url' }));
    sock.send(JSON.stringify({ id: 4, type: 'heartbeat', running: [] }));
    expect((await replyTo(4)).error).toBeUndefined();
    expect((await apiClient(t, { apiKey: ws.key }).call('getJob', { path: { job_id: job.id } })).id).toBe(job.id);
    expect(messages.filter((m) => m.type === 'reply' && (m.re === 2 || m.re === 3))).toEqual([]);
    unlock();
    await holding;
    expect((await replyTo(2)).error).toBeUndefined();
    expect((await replyTo(3)).result).toMatchObject({ name: 'erp-url', value: 'https://erp' });
    sock.close();
  } finally {
    clearInterval(beating);
    await budgeted.close();
  }
});


it('paces each machine\'s statements: a robot asking as fast as it may waits its turns, and another robot\'s request does not wait behind them', async () => {
  const paced = await serveHub(t, { robotStatementsPerSecond: 4, deps: { config: { ...t.deps.config, machineOfflineAfterSeconds: 120 } } });
  try {
    const ws = await seedWorkspace(t.sql);
    const proc = await ws.process();
    await apiClient(t, { token: ws.adminToken }).call('createAsset', { body: { name: 'erp-url', type: 'text', values: { production: 'https://erp' } } });
    const greedy = await robotWithRun(paced.url, ws, proc.id);
    const other = await robotWithRun(paced.url, ws, proc.id);
    const answered = () => greedy.messages.filter((m) => m.type === 'reply' && m.re >= 100).length;
    // twelve reads at once: four a second are started, the rest wait their turn (none refused)
    for (let i = 0; i < 12; i++) greedy.sock.send(JSON.stringify({ id: 100 + i, type: 'asset.get', ...greedy.run, name: 'erp-url' }));
    await waitFor('the first turns answered', async () => answered() >= 1);
    other.sock.send(JSON.stringify({ id: 2, type: 'asset.get', ...other.run, name: 'erp-url' }));
    expect((await other.replyTo(2)).result).toMatchObject({ value: 'https://erp' });
    // a second's turns, or two if the other robot's answer came across a second's boundary
    expect(answered()).toBeLessThanOrEqual(8);
    await waitFor('every read answered', async () => answered() === 12, 15_000);
    const replies = greedy.messages.filter((m) => m.type === 'reply' && m.re >= 100);
    expect(replies.map((m) => m.error?.code ?? m.result.value)).toEqual(Array(12).fill('https://erp'));
    greedy.sock.close();
    other.sock.close();
  } finally {
    await paced.close();
  }
});

it('answers messages past the connection\'s rate RATE_LIMIT_EXCEEDED and keeps it open; a flood closes it (4008)', async () => {
  // a hub of its own with a low rate: the checks then hold however fast this host reads a socket
  const limited = createAgentHub(t.deps, { messagesPerSecond: 50 });
  const own = http.createServer(t.app.callback());
  limited.attach(own);
  await new Promise<void>((resolve) => own.listen(0, '127.0.0.1', resolve));
  const url = `ws://127.0.0.1:${(own.address() as AddressInfo).port}/api/v1/agent/connect`;
  try {
    const ws = await seedWorkspace(t.sql);
    const machine = await ws.machine();
    const sock = new WebSocket(url, { headers: { Authorization: `Bearer ${machine.machineKey}` } });
    const messages: Array<Record<string, any>> = [];
    sock.on('message', (d) => messages.push(JSON.parse(d.toString()) as Record<string, any>));
    await new Promise((resolve, reject) => { sock.once('open', resolve); sock.once('error', reject); });
    // 150 at once: however a second's boundary splits them, one second holds more than 50, none more than 200
    for (let i = 0; i < 150; i++) sock.send(JSON.stringify({ id: 100_000 + i, type: 'nope' }));
    await waitFor('every message answered', async () => messages.filter((m) => m.type === 'reply' && m.re >= 100_000).length === 150);
    const refused = messages.filter((m) => m.type === 'reply' && m.error?.code === 'RATE_LIMIT_EXCEEDED');
    expect(refused.length).toBeGreaterThan(0);
    expect(refused[0]!.error.details.retry_after_ms).toBeGreaterThan(0);
    expect(sock.readyState).toBe(WebSocket.OPEN);
    // the connection still works once the second has turned
    await new Promise((r) => setTimeout(r, 1100));
    sock.send(JSON.stringify({ id: 1, type: 'heartbeat', running: [] }));
    const beat = await waitFor('the heartbeat answered', async () => messages.find((m) => m.type === 'reply' && m.re === 1) ?? null);
    expect(beat.error).toBeUndefined();

    const floods = await metric('svc_agent_connections_cut_total', { reason: 'flood' });
    const closed = new Promise<number>((resolve) => sock.once('close', (code) => resolve(code)));
    for (let i = 0; i < 1000 && sock.readyState === WebSocket.OPEN; i++) sock.send(JSON.stringify({ id: 200_000 + i, type: 'nope' }));
    expect(await closed).toBe(4008);
    expect(await metric('svc_agent_connections_cut_total', { reason: 'flood' })).toBe(floods + 1);
  } finally {
    await limited.close();
    own.closeAllConnections();
    await new Promise((r) => own.close(r));
  }
});

it('reads a machine\'s queue only while it has work: jobs that waited, a new job, a delayed retry and a lost message each reach an idle robot', async () => {
  const lazy = createAgentHub(t.deps, { workerIdleMs: 300 });
  const own = http.createServer(t.app.callback());
  lazy.attach(own);
  await new Promise<void>((resolve) => own.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(own.address() as AddressInfo).port}`;
  const ws = await seedWorkspace(t.sql);
  const flaky = await ws.process({ auto_retry: true, max_retries: 1, retry_delay_seconds: 2 });
  const plain = await ws.process();
  const machine = await ws.machine({ slots: 2 });
  const trigger = async (processId: string) => {
    const res = await t.http.post('/api/v1/jobs/trigger').set('X-API-Key', ws.key).send({ process_id: processId, machine_id: machine.row.id });
    expect(res.status).toBe(201);
    return res.body.data.id as string;
  };
  const statusOf = async (id: string) => ((await t.sql`select status from jobs where id = ${id}`)[0]!.status as string);
  const idle = () => waitFor('the robot idle, its queue no longer read', async () => lazy.size === 1 && lazy.reading === 0);
  const robot = connect({
    url,
    machineKey: machine.machineKey,
    onJob: async (ctx) => {
      if (ctx.job.processId === flaky.id && ctx.job.retryCount === 0) throw new Error('primer intento falla');
      return { ok: true };
    },
  });
  try {
    // triggered before the robot is there: read when it comes
    const waited = await trigger(plain.id as string);
    await robot.ready;
    await waitFor('the job that waited to complete', async () => (await statusOf(waited)) === 'completed');
    await idle();
    // what wakes it: the message that the machine has work (published by whoever put jobs on its queue)
    const noWork = (await t.sql`select count(*)::int as n from jobs where machine_id = ${machine.row.id as string} and status = 'pending'`)[0]!.n;
    expect(noWork).toBe(0);
    await t.deps.redis.publish(t.deps.keys.machineWork, JSON.stringify({ machines: [{ machine_id: machine.row.id, at: 0 }] }));
    await waitFor('the queue read again', async () => lazy.reading === 1);
    await idle();

    // a new job wakes the idle robot's reading
    const fresh = await trigger(plain.id as string);
    await waitFor('the new job to complete', async () => (await statusOf(fresh)) === 'completed');

    // a retry two seconds later: the robot is idle again by then, and its reading starts on time
    const first = await trigger(flaky.id as string);
    await waitFor('the first attempt to fail', async () => (await statusOf(first)) === 'failed');
    await idle();
    const retry = await waitFor('the retry job', async () =>
      ((await t.sql`select id from jobs where parent_job_id = ${first}`)[0]?.id as string | undefined) ?? null);
    await waitFor('the retry to complete', async () => (await statusOf(retry)) === 'completed');

    // a job whose message was lost (written straight to Postgres, never put on the queue): the
    // dispatcher's reconciler puts it there and tells the API again
    await idle();
    const [lost] = await t.sql`insert into jobs (tenant_id, process_id, machine_id, status, source)
      values (${ws.tenant.id}, ${plain.id as string}, ${machine.row.id as string}, 'pending', 'manual') returning id`;
    await waitFor('the lost job to complete', async () => (await statusOf(lost!.id as string)) === 'completed');
  } finally {
    await robot.close();
    await lazy.close();
    own.closeAllConnections();
    await new Promise((r) => own.close(r));
  }
});

it('a robot written from the protocol document alone: a run from its start to its stop and the goodbye match it, and it matches the code', async () => {
  // the committed document is the one the definitions make (regenerate with the script when they change)
  const { stdout } = await promisify(execFile)(process.execPath, [path.join(ROOT, 'scripts/agent-protocol-document.mjs'), '--check'], { cwd: ROOT });
  expect(stdout).toMatch(/matches the protocol's definitions/);

  const ws = await seedWorkspace(t.sql);
  const proc = await ws.process();
  const machine = await ws.machine();
  const robot = await rawRobot(machine.machineKey);
  const integrator = apiClient(t, { apiKey: ws.key });
  const job = await integrator.call('triggerJob', { body: { process_id: proc.id, machine_id: machine.row.id, input_data: { invoice: 'INV-1' } } });
  const start = await robot.pushed('job.start', (m) => m.job.id === job.id);
  const run = { job_id: job.id, attempt: start.job.attempt as number };
  expect((await robot.request({ type: 'job.started', ...run })).result).toEqual({ stop_requested: false });
  expect((await robot.request({ type: 'job.progress', ...run, progress_percent: 40, log: { text: 'paso 1\n', seq: 1 } })).result).toEqual({ stop_requested: false });
  const beat = await robot.request({ type: 'heartbeat', running: [{ ...run, alive: true }], agent_version: 'written-from-the-document' });
  expect(beat.result.runs).toEqual([{ job_id: job.id, owned: true, stop_requested: false }]);
  await integrator.call('stopJob', { path: { job_id: job.id } });
  await robot.pushed('job.stop', (m) => m.job_id === job.id && m.reason === 'stop');
  expect((await robot.request({ type: 'job.finish', ...run, status: 'stopped', log: { text: 'parado\n', seq: 2 } })).result).toEqual({ status: 'stopped' });
  // an error reply of a well-formed request, and one of a message that is no request at all
  expect((await robot.request({ type: 'job.progress', ...run })).error?.code).toBe('NOT_FOUND'); // the run ended: the connection holds it no more
  expect((await robot.request({ type: 'job.unknown' })).error?.code).toBe('VALIDATION_ERROR');
  const closed = new Promise<number>((resolve) => robot.sock.once('close', (code) => resolve(code)));
  expect((await robot.request({ type: 'bye' })).result).toEqual({});
  expect(await closed).toBe(1000);
  expect(robot.protocol.checked()).toEqual(expect.arrayContaining([
    'push.welcome', 'push.job.start', 'push.job.stop', 'reply.error', 'reply.result',
    'request.heartbeat', 'request.job.started', 'request.job.progress', 'request.job.finish', 'request.bye',
    'result.heartbeat', 'result.job.started', 'result.job.progress', 'result.job.finish', 'result.bye',
  ]));
});
