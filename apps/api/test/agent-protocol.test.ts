import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import WebSocket from 'ws';
import { connect, endJob, type Robot } from '@svc/agent';
import { renderMetrics } from '@svc/core/observability';
import { openRawWebSocket, sampleValue, seedWorkspace, selfSignedCertificate, startConnectProxy, startTcpProxy, waitFor } from '@svc/testing';
import { apiClient, createApiTestContext, type ApiTestContext } from '@svc/testing/api';
import { createAgentHub, type AgentHub } from '../src/agent/hub';
import { serveHub, type ServedHub } from './agent-hub-support';

/** How many robot connections this process's hubs ended for `reason`. */
const cutsFor = async (reason: string) => sampleValue((await renderMetrics()).body, 'svc_agent_connections_cut_total', { reason }) ?? 0;

/**
 * Robots that hold only their machine key (docs/agent-protocol.md): a job triggered through the
 * API runs on a robot connected over the machine protocol, a stop reaches it, its writes are
 * fenced and scoped to its machine, hostile messages get error replies, and a rotated key cuts
 * the connection.
 */
describe('the machine protocol', () => {
  let t: ApiTestContext;
  let hub: AgentHub;
  let server: http.Server;
  let base: string;
  const robots: Robot[] = [];

  beforeAll(async () => {
    t = await createApiTestContext({ machineOfflineAfterSeconds: 3 });
    hub = createAgentHub(t.deps);
    server = http.createServer(t.app.callback());
    hub.attach(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await Promise.all(robots.map((r) => r.close(1000)));
    await hub.close();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    await t.close();
  });

  const trigger = (key: string, body: Record<string, unknown>) =>
    t.http.post('/api/v1/jobs/trigger').set('X-API-Key', key).send(body);
  /** A job as an integrator reads it, through the typed client (@svc/client). */
  const jobOf = (key: string, id: string) => apiClient(t, { apiKey: key }).call('getJob', { path: { job_id: id } });

  it('runs a job triggered through the API on a robot that holds only its machine key, and stops one', async () => {
    const ws = await seedWorkspace(t.sql);
    const process_ = await ws.process();
    const machine = await ws.machine({ slots: 2 });
    const seen: string[] = [];
    const robot = connect({
      url: base,
      machineKey: machine.machineKey,
      onJob: async (ctx) => {
        seen.push(ctx.job.id);
        await ctx.progress(50, 'a mitad');
        await ctx.log('línea del robot');
        if (ctx.job.input?.wait) {
          await new Promise((_resolve, reject) => ctx.signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true }));
        }
        return { doubled: Number(ctx.job.input?.n ?? 0) * 2 };
      },
    });
    robots.push(robot);
    expect((await robot.ready).id).toBe(machine.row.id);

    const done = await trigger(ws.key, { process_id: process_.id, machine_id: machine.row.id, input_data: { n: 21 } });
    expect(done.status).toBe(201);
    const id = done.body.data.id as string;
    await waitFor('the job to complete', async () => (await jobOf(ws.key, id)).status === 'completed');
    const job = await jobOf(ws.key, id);
    expect(job.output_data).toEqual({ doubled: 42 });
    expect(job.progress_percent).toBe(50);
    const logs = await apiClient(t, { token: ws.adminToken }).call('readJobLogs', { path: { job_id: id } });
    expect(logs.logs).toContain('línea del robot');

    const long = await trigger(ws.key, { process_id: process_.id, machine_id: machine.row.id, input_data: { wait: true } });
    const longId = long.body.data.id as string;
    await waitFor('the robot to run it', async () => seen.includes(longId));
    expect((await t.http.post(`/api/v1/jobs/${longId}/stop`).set('X-API-Key', ws.key)).status).toBe(200);
    await waitFor('the job to end stopped', async () => (await jobOf(ws.key, longId)).status === 'stopped');
  });

  it('keeps the order of log lines a handler sends without waiting, the end\'s own lines last', async () => {
    const ws = await seedWorkspace(t.sql);
    const process_ = await ws.process();
    const machine = await ws.machine();
    const robot = connect({
      url: base,
      machineKey: machine.machineKey,
      onJob: async (ctx) => {
        for (let i = 1; i <= 40; i++) void ctx.log(`línea ${i}`);
        return endJob({ status: 'completed', output: { lines: 40 }, log: 'línea final\n' });
      },
    });
    robots.push(robot);
    await robot.ready;
    const done = await trigger(ws.key, { process_id: process_.id, machine_id: machine.row.id });
    const id = done.body.data.id as string;
    await waitFor('the job to complete', async () => (await jobOf(ws.key, id)).status === 'completed');
    const logs = await apiClient(t, { token: ws.adminToken }).call('readJobLogs', { path: { job_id: id } });
    expect(String(logs.logs).trim().split('\n')).toEqual([...Array.from({ length: 40 }, (_, i) => `línea ${i + 1}`), 'línea final']);
  });

  it('refuses a connection without a valid machine key before the upgrade, in the error envelope', async () => {
    for (const authorization of [undefined, 'Bearer svc_ak_not-a-machine-key', `Bearer svc_mk_${'x'.repeat(300)}`, 'Basic abc']) {
      const refused = await rawUpgradeStatus(base, authorization);
      expect([authorization, refused.line]).toEqual([authorization, expect.stringMatching(/^HTTP\/1\.1 401/)]);
    }
    const status = await rawUpgradeStatus(base, 'Bearer svc_mk_nope');
    expect(status.line).toMatch(/^HTTP\/1\.1 401/);
    expect(JSON.parse(status.body)).toMatchObject({ success: false, error: { code: 'UNAUTHORIZED' } });
    expect((await rawUpgradeStatus(base, undefined, '/api/v1/agent/elsewhere')).line).toMatch(/^HTTP\/1\.1 404/);
  });

  it('answers hostile messages with error replies, keeps the connection, and scopes jobs to the connection', async () => {
    const ws = await seedWorkspace(t.sql);
    const machine = await ws.machine();
    const sock = new WebSocket(`${base.replace('http', 'ws')}/api/v1/agent/connect`, { headers: { Authorization: `Bearer ${machine.machineKey}` } });
    const messages: Array<Record<string, unknown>> = [];
    sock.on('message', (d) => messages.push(JSON.parse(d.toString()) as Record<string, unknown>));
    await new Promise((resolve, reject) => { sock.once('open', resolve); sock.once('error', reject); });
    await waitFor('the welcome', async () => messages.some((m) => m.type === 'welcome'));
    const replyTo = async (re: number | null) => {
      await waitFor(`the reply to ${re}`, async () => messages.some((m) => m.type === 'reply' && m.re === re));
      return messages.find((m) => m.type === 'reply' && m.re === re) as { error?: { code: string; details?: unknown } };
    };
    sock.send('not json');
    expect((await replyTo(null)).error?.code).toBe('VALIDATION_ERROR');
    sock.send(JSON.stringify({ id: 1, type: 'job.unknown' }));
    expect((await replyTo(1)).error?.code).toBe('VALIDATION_ERROR');
    sock.send(JSON.stringify({ id: 2, type: 'job.progress', job_id: 'x\u0000', attempt: 'one' }));
    expect((await replyTo(2)).error?.code).toBe('VALIDATION_ERROR');
    let deep: unknown = {};
    for (let i = 0; i < 200; i++) deep = { a: deep };
    sock.send(JSON.stringify({ id: 3, type: 'job.finish', job_id: '00000000-0000-4000-8000-000000000000', attempt: 1, status: 'completed', output_data: deep }));
    expect((await replyTo(3)).error?.code).toMatch(/VALIDATION_ERROR|NOT_FOUND/);
    // a job of another machine (of another workspace) is as missing as one that does not exist
    const other = await seedWorkspace(t.sql);
    const otherJob = await t.sql`insert into jobs (tenant_id, process_id, machine_id, status, attempt, started_at)
      values (${other.tenant.id}, ${(await other.process()).id as string}, ${(await other.machine()).row.id as string}, 'running', 1, now()) returning id`;
    sock.send(JSON.stringify({ id: 4, type: 'job.finish', job_id: otherJob[0]!.id, attempt: 1, status: 'completed' }));
    expect((await replyTo(4)).error?.code).toBe('NOT_FOUND');
    const [row] = await t.sql`select status from jobs where id = ${otherJob[0]!.id as string}`;
    expect(row!.status).toBe('running');
    // what a robot reports is bounded, whatever fits in a message: each refused, naming the field
    const anyRun = { job_id: otherJob[0]!.id as string, attempt: 1 };
    const big = (bytes: number) => ({ blob: 'x'.repeat(bytes) });
    const oversized: Array<[Record<string, unknown>, string]> = [
      [{ type: 'heartbeat', running: [], host: { hostname: 'x'.repeat(5000) } }, 'message → host'],
      [{ type: 'job.progress', ...anyRun, resource_metrics: big(17 * 1024) }, 'message → resource_metrics'],
      [{ type: 'job.finish', ...anyRun, status: 'completed', output_data: big(257 * 1024) }, 'message → output_data'],
      [{ type: 'items.take', ...anyRun, take: 0, outcomes: [{ id: anyRun.job_id, attempt: 1, status: 'completed', result: big(257 * 1024) }] }, 'message → outcomes → 0 → result'],
    ];
    for (const [i, [message, field]] of oversized.entries()) {
      sock.send(JSON.stringify({ id: 30 + i, ...message }));
      const refused = (await replyTo(30 + i)).error as { code: string; details?: Array<{ field: string; message: string }> } | undefined;
      expect([field, refused?.code, refused?.details?.[0]?.field]).toEqual([field, 'VALIDATION_ERROR', field]);
      expect(refused?.details?.[0]?.message).toMatch(/demasiado grande: como máximo \d+ bytes/);
    }
    const [still] = await t.sql`select status, output_data from jobs where id = ${anyRun.job_id}`;
    expect(still).toEqual({ status: 'running', output_data: null });
    // the connection still works
    sock.send(JSON.stringify({ id: 5, type: 'heartbeat', running: [] }));
    expect((await replyTo(5)).error).toBeUndefined();
    sock.close();
  });

  it('a run its robot never acknowledged goes back at the bye and runs on the next robot; job.started is fenced and checked', async () => {
    const ws = await seedWorkspace(t.sql);
    const process_ = await ws.process();
    const machine = await ws.machine({ slots: 1 });
    const sock = new WebSocket(`${base.replace('http', 'ws')}/api/v1/agent/connect`, { headers: { Authorization: `Bearer ${machine.machineKey}` } });
    const messages: Array<Record<string, unknown>> = [];
    sock.on('message', (d) => messages.push(JSON.parse(d.toString()) as Record<string, unknown>));
    const closed = new Promise<number>((resolve) => sock.once('close', (code) => resolve(code)));
    await new Promise((resolve, reject) => { sock.once('open', resolve); sock.once('error', reject); });
    const replyTo = async (re: number) => {
      await waitFor(`the reply to ${re}`, async () => messages.some((m) => m.type === 'reply' && m.re === re));
      return messages.find((m) => m.type === 'reply' && m.re === re) as { result?: unknown; error?: { code: string } };
    };
    sock.send(JSON.stringify({ id: 1, type: 'heartbeat', fresh: true, running: [] }));
    expect((await replyTo(1)).error).toBeUndefined();
    const triggered = await trigger(ws.key, { process_id: process_.id, machine_id: machine.row.id });
    expect(triggered.status).toBe(201);
    const id = triggered.body.data.id as string;
    const start = await waitFor('the job.start', async () => messages.find((m) => m.type === 'job.start')) as { job: { id: string; attempt: number } };
    expect(start.job.id).toBe(id);

    const other = await seedWorkspace(t.sql);
    const otherJob = (await t.sql`insert into jobs (tenant_id, process_id, machine_id, status, attempt, started_at)
      values (${other.tenant.id}, ${(await other.process()).id as string}, ${(await other.machine()).row.id as string}, 'running', 1, now()) returning id`)[0]!.id as string;
    const refusals: Array<[Record<string, unknown>, string]> = [
      [{ job_id: id, attempt: start.job.attempt + 1 }, 'CONFLICT'],
      [{ job_id: otherJob, attempt: 1 }, 'NOT_FOUND'],
      [{ job_id: `${id}\u0000`, attempt: start.job.attempt }, 'VALIDATION_ERROR'],
      [{ job_id: id, attempt: '1' }, 'VALIDATION_ERROR'],
      [{ job_id: id }, 'VALIDATION_ERROR'],
    ];
    for (const [i, [fields, code]] of refusals.entries()) {
      sock.send(JSON.stringify({ id: 10 + i, type: 'job.started', ...fields }));
      expect([fields, (await replyTo(10 + i)).error?.code]).toEqual([fields, code]);
    }
    const [held] = await t.sql`select status, acknowledged_at from jobs where id = ${id}`;
    expect(held).toEqual({ status: 'running', acknowledged_at: null });

    // the robot leaves without acknowledging it (it was already leaving when the job.start came)
    sock.send(JSON.stringify({ id: 20, type: 'bye' }));
    expect((await replyTo(20)).result).toEqual({});
    expect(await closed).toBe(1000);
    const [after] = await t.sql`select j.status, j.attempt, j.started_at, m.status as machine_status from jobs j, machines m where j.id = ${id} and m.id = j.machine_id`;
    expect(after).toEqual({ status: 'pending', attempt: start.job.attempt, started_at: null, machine_status: 'offline' });

    // the next robot of the machine runs it, as a new attempt, and acknowledges it
    const ran: number[] = [];
    const robot = connect({ url: base, machineKey: machine.machineKey, onJob: async (ctx) => void ran.push(ctx.job.attempt) });
    robots.push(robot);
    await waitFor('the job completed', async () => (await jobOf(ws.key, id)).status === 'completed');
    expect(ran).toEqual([start.job.attempt + 1]);
    const [done] = await t.sql`select attempt, acknowledged_at from jobs where id = ${id}`;
    expect(done!.attempt).toBe(start.job.attempt + 1);
    expect(done!.acknowledged_at).toBeInstanceOf(Date);
  });

  it('cuts a connection off within a second of its key being rotated or its machine deactivated (4001); the old key opens nothing', async () => {
    const ws = await seedWorkspace(t.sql);
    const machine = await ws.machine();
    const cutBefore = await cutsFor('credential');
    const sock = new WebSocket(`${base.replace('http', 'ws')}/api/v1/agent/connect`, { headers: { Authorization: `Bearer ${machine.machineKey}` } });
    await new Promise((resolve, reject) => { sock.once('open', resolve); sock.once('error', reject); });
    const closed = new Promise<number>((resolve) => sock.once('close', (code) => resolve(code)));
    const rotated = await t.http.post(`/api/v1/settings/machines/${machine.row.id as string}/rotate-key`).set('Authorization', `Bearer ${ws.adminToken}`);
    expect(rotated.status).toBe(200);
    expect(await closed).toBe(4001);
    expect((await rawUpgradeStatus(base, `Bearer ${machine.machineKey}`)).line).toMatch(/^HTTP\/1\.1 401/);
    // the SDK gives up on a refused key instead of retrying for ever
    const refused = connect({ url: base, machineKey: machine.machineKey, onJob: async () => undefined });
    await expect(refused.ready).rejects.toMatchObject({ code: 'UNAUTHORIZED' });

    const second = await ws.machine();
    const other = new WebSocket(`${base.replace('http', 'ws')}/api/v1/agent/connect`, { headers: { Authorization: `Bearer ${second.machineKey}` } });
    await new Promise((resolve, reject) => { other.once('open', resolve); other.once('error', reject); });
    const otherClosed = new Promise<number>((resolve) => other.once('close', (code) => resolve(code)));
    await t.sql`update machines set is_active = false where id = ${second.row.id as string}`;
    expect(await otherClosed).toBe(4001);
    expect(await cutsFor('credential')).toBe(cutBefore + 2);
  });
});

/**
 * Connections that have not closed are not taken for alive, and a closed one acts on nothing: a
 * hub pinging often (MACHINE_PING_MS) cuts a client that answers no ping and keeps a healthy idle
 * one; a client that ignores the close frame after its key was rotated is destroyed and its
 * heartbeats count for nothing.
 */
describe('dead and revoked connections', () => {
  let t: ApiTestContext;
  let served: ServedHub;
  let hub: AgentHub;
  let base: string;

  beforeAll(async () => {
    t = await createApiTestContext({ machineOfflineAfterSeconds: 3, machinePingMs: 200 });
    served = await serveHub(t);
    ({ hub, url: base } = served);
  });
  afterAll(async () => {
    await served.close();
    await t.close();
  });

  const open = (key: string, options: WebSocket.ClientOptions = {}) => {
    const sock = new WebSocket(`${base.replace('http', 'ws')}/api/v1/agent/connect`, { headers: { Authorization: `Bearer ${key}` }, ...options });
    const messages: Array<Record<string, unknown>> = [];
    sock.on('message', (d) => messages.push(JSON.parse(d.toString()) as Record<string, unknown>));
    const closed = new Promise<number>((resolve) => sock.once('close', (code) => resolve(code)));
    return { sock, messages, closed, opened: new Promise((resolve, reject) => { sock.once('open', resolve); sock.once('error', reject); }) };
  };

  it('cuts a connection that answers no ping and keeps an idle one that does; the welcome names the ping period', async () => {
    const ws = await seedWorkspace(t.sql);
    const healthy = open((await ws.machine()).machineKey);
    const silent = open((await ws.machine()).machineKey, { autoPong: false });
    await Promise.all([healthy.opened, silent.opened]);
    await waitFor('both welcomed', async () => healthy.messages.length > 0 && silent.messages.length > 0);
    expect(healthy.messages[0]).toMatchObject({ type: 'welcome', ping_ms: 200 });
    expect(hub.size).toBe(2);
    let pings = 0;
    healthy.sock.on('ping', () => pings++);
    // destroyed, not closed: no close frame reaches a dead peer
    expect(await silent.closed).toBe(1006);
    await waitFor('the silent session released', async () => hub.size === 1);
    // many ping rounds later the healthy connection, which sent nothing but pongs, is still open
    await waitFor('ten pings answered', async () => pings >= 10, 30_000);
    expect(healthy.sock.readyState).toBe(WebSocket.OPEN);
    healthy.sock.close();
  });

  it('writes heartbeats that say nothing new together: one statement a period for every robot heard', async () => {
    const batches: number[] = [];
    const machines = { ...t.deps.engine.machines, liveness: (ids: readonly string[]) => {
      batches.push(ids.length);
      return t.deps.engine.machines.liveness(ids);
    } };
    const counted = await serveHub(t, { deps: { engine: { ...t.deps.engine, machines } } });
    const { url } = counted;
    try {
      const ws = await seedWorkspace(t.sql);
      const fleet = await Promise.all(Array.from({ length: 10 }, () => ws.machine({ status: 'offline' })));
      const robots = await Promise.all(fleet.map((m) => openRawWebSocket(url, '/api/v1/agent/connect', `Bearer ${m.machineKey}`, { answerPings: true })));
      const beat = async (n: number) => {
        robots.forEach((r) => r.sendText(JSON.stringify({ id: n, type: 'heartbeat', running: [], agent_version: 'v1' })));
        await waitFor(`heartbeat ${n} answered`, async () => robots.every((r) => r.messages.some((m) => m.re === n)));
      };
      // the first heartbeat of each connection is written at once: every machine online
      await beat(1);
      const ids = fleet.map((m) => m.row.id as string);
      const first = await t.sql`select id, status, last_heartbeat_at from machines where id = any(${ids}::uuid[])`;
      expect(first.map((r) => r.status)).toEqual(ids.map(() => 'online'));
      expect(batches).toEqual([]);
      // then three more each, saying nothing new: written by the flushes, many robots a statement
      for (const n of [2, 3, 4]) await beat(n);
      const before = new Map(first.map((r) => [r.id as string, (r.last_heartbeat_at as Date).getTime()]));
      await waitFor('every machine\'s heartbeat written again', async () => {
        const rows = await t.sql`select id, last_heartbeat_at from machines where id = any(${ids}::uuid[])`;
        return rows.every((r) => (r.last_heartbeat_at as Date).getTime() > before.get(r.id as string)!);
      });
      expect(batches.reduce((a, n) => a + n, 0)).toBeLessThan(30);
      expect(Math.max(...batches)).toBeGreaterThan(1);
      robots.forEach((r) => r.destroy());
    } finally {
      await counted.close();
    }
  });

  it('a client that ignores the close after its key was rotated is destroyed, and what it sends meanwhile is not acted upon', async () => {
    const ws = await seedWorkspace(t.sql);
    const machine = await ws.machine({ status: 'offline' });
    const raw = await openRawWebSocket(base, '/api/v1/agent/connect', `Bearer ${machine.machineKey}`, { answerPings: true });
    raw.sendText(JSON.stringify({ id: 1, type: 'heartbeat', running: [] }));
    await waitFor('the heartbeat answered', async () => raw.messages.some((m) => m.type === 'reply' && m.re === 1));
    const [before] = await t.sql`select status, last_heartbeat_at from machines where id = ${machine.row.id as string}`;
    expect(before!.status).toBe('online');
    const rotated = await t.http.post(`/api/v1/settings/machines/${machine.row.id as string}/rotate-key`).set('Authorization', `Bearer ${ws.adminToken}`);
    expect(rotated.status).toBe(200);
    const close = await waitFor('the close frame', async () => raw.frames.find((f) => f.opcode === 0x8));
    expect(close.payload.readUInt16BE(0)).toBe(4001);
    // it answers no close and goes on beating, asking, as if nothing happened
    let id = 2;
    const beating = setInterval(() => raw.sendText(JSON.stringify({ id: id++, type: 'heartbeat', running: [] })), 20);
    try {
      await waitFor('the server to destroy the connection', async () => raw.ended, 10_000);
    } finally {
      clearInterval(beating);
    }
    expect(id).toBeGreaterThan(5);
    expect(raw.messages.filter((m) => m.type === 'reply' && (m.re as number) > 1)).toEqual([]);
    const [after] = await t.sql`select last_heartbeat_at from machines where id = ${machine.row.id as string}`;
    expect(after!.last_heartbeat_at).toEqual(before!.last_heartbeat_at);
  });

  it('an acknowledged run\'s lease is renewed by the acknowledgement, as by a heartbeat', async () => {
    const ws = await seedWorkspace(t.sql);
    const process_ = await ws.process();
    const machine = await ws.machine({ slots: 1 });
    const c = open(machine.machineKey);
    await c.opened;
    c.sock.send(JSON.stringify({ id: 1, type: 'heartbeat', fresh: true, running: [] }));
    await waitFor('the heartbeat answered', async () => c.messages.some((m) => m.type === 'reply' && m.re === 1));
    const triggered = await t.http.post('/api/v1/jobs/trigger').set('X-API-Key', ws.key).send({ process_id: process_.id, machine_id: machine.row.id });
    expect(triggered.status).toBe(201);
    const start = await waitFor('the job.start', async () => c.messages.find((m) => m.type === 'job.start')) as { job: { id: string; attempt: number } };
    // a lease about to lapse: the acknowledgement gives it a whole lease again
    await t.sql`update jobs set lease_expires_at = now() + interval '100 milliseconds' where id = ${start.job.id}`;
    c.sock.send(JSON.stringify({ id: 2, type: 'job.started', job_id: start.job.id, attempt: start.job.attempt }));
    await waitFor('the acknowledgement', async () => c.messages.some((m) => m.type === 'reply' && m.re === 2));
    const [row] = await t.sql`select extract(epoch from lease_expires_at - now())::float8 as left_s from jobs where id = ${start.job.id}`;
    expect(row!.left_s).toBeGreaterThan(1.5);
    c.sock.close();
  });

  it('a robot whose server went silent (nothing closed) finds out by itself, opens another connection once the network heals, and keeps its run', async () => {
    const ws = await seedWorkspace(t.sql);
    const process_ = await ws.process();
    const machine = await ws.machine();
    // the shipped lease (30 s): a short silence must cost no run, however slow this host is
    const served = await serveHub(t, { deps: { config: { ...t.deps.config, machineOfflineAfterSeconds: 30 } } });
    const patient = served.hub;
    const relay = await startTcpProxy(Number(new URL(served.url).port));
    const warnings: Array<{ msg: string; meta?: Record<string, unknown> }> = [];
    let release!: () => void;
    const working = new Promise<void>((resolve) => (release = resolve));
    let started = 0;
    const robot = connect({
      url: relay.url,
      machineKey: machine.machineKey,
      logger: { info: () => undefined, warn: (msg, meta) => void warnings.push({ msg, meta: meta as Record<string, unknown> }) },
      onJob: async () => {
        started++;
        await working;
        return { ok: true };
      },
    });
    try {
      await robot.ready;
      const triggered = await t.http.post('/api/v1/jobs/trigger').set('X-API-Key', ws.key).send({ process_id: process_.id, machine_id: machine.row.id });
      const id = triggered.body.data.id as string;
      await waitFor('the robot working', async () => started === 1);
      relay.hold();
      // pings every 200 ms: silent for 2 × 200 ms + 1 s, the robot destroys its connection and tries again
      const lost = await waitFor('the robot to notice the silence', async () => warnings.find((w) => w.msg === 'connection lost'));
      expect(String(lost.meta?.reason)).toMatch(/nothing heard from the platform/);
      relay.release();
      await waitFor('connected again', async () => patient.size === 1 && warnings.some((w) => w.msg === 'connection lost') &&
        (await t.sql`select count(*)::int as n from jobs where id = ${id} and status = 'running'`)[0]!.n === 1);
      release();
      await waitFor('the run completed on the same robot', async () => (await t.sql`select status from jobs where id = ${id}`)[0]!.status === 'completed');
      expect(started).toBe(1);
      // a short silence cost no run
      expect(warnings.filter((w) => w.msg.startsWith('run aborted'))).toEqual([]);
    } finally {
      release();
      await robot.close(1000);
      await relay.close();
      await served.close();
    }
  });

  it('a run whose end waits on a silent connection is given up as lost in time, its end dropped, and the robot goes on', async () => {
    const ws = await seedWorkspace(t.sql);
    const process_ = await ws.process();
    const machine = await ws.machine();
    const relay = await startTcpProxy(Number(new URL(base).port));
    const ends: Array<{ status: string | null; lost: boolean | undefined }> = [];
    let held = false;
    const robot = connect({
      url: relay.url,
      machineKey: machine.machineKey,
      onJob: async () => {
        // the network goes silent while the run works; it ends, and its end cannot go out
        relay.hold();
        held = true;
        return { done: true };
      },
      onJobEnd: (_job, status, lost) => void ends.push({ status, lost }),
    });
    try {
      await robot.ready;
      const triggered = await t.http.post('/api/v1/jobs/trigger').set('X-API-Key', ws.key).send({ process_id: process_.id, machine_id: machine.row.id });
      expect(triggered.status).toBe(201);
      await waitFor('the network held', async () => held);
      // a 3-s lease: unconfirmed for 2 s, the run is lost there and then, its end dropped
      await waitFor('the run given up', async () => ends.length === 1);
      expect(ends).toEqual([{ status: null, lost: true }]);
      expect(robot.running).toBe(0);
      // once the network heals, the robot is back and beats on; the lost run's end never goes out
      relay.release();
      const id = triggered.body.data.id as string;
      await waitFor('a heartbeat through the healed network', async () => {
        const [m] = await t.sql`select last_heartbeat_at > now() - interval '500 milliseconds' as fresh from machines where id = ${machine.row.id as string}`;
        return m!.fresh;
      });
      const [job] = await t.sql`select status, output_data from jobs where id = ${id}`;
      expect(job).toEqual({ status: 'running', output_data: null });
    } finally {
      await robot.close(1000);
      await relay.close();
    }
  });

  it('a robot whose machine connected again from elsewhere stops instead of taking the connection back (4002)', async () => {
    const ws = await seedWorkspace(t.sql);
    const machine = await ws.machine();
    const first = connect({ url: base, machineKey: machine.machineKey, onJob: async () => undefined });
    await first.ready;
    const replacedBefore = await cutsFor('replaced');
    const second = connect({ url: base, machineKey: machine.machineKey, onJob: async () => undefined });
    await second.ready;
    expect(await first.refused).toEqual({ why: 'replaced', reason: expect.any(String) });
    expect(await cutsFor('replaced')).toBe(replacedBefore + 1);
    // the second one keeps the machine: the first does not come back to cut it off
    const beatAt = async () => ((await t.sql`select last_heartbeat_at from machines where id = ${machine.row.id as string}`)[0]!.last_heartbeat_at as Date).getTime();
    const refusedAt = await beatAt();
    await waitFor('the second robot to beat twice more', async () => (await beatAt()) > refusedAt && (await beatAt()) > refusedAt + 900);
    await expect(Promise.race([second.refused, Promise.resolve('still connected')])).resolves.toBe('still connected');
    await second.close(1000);
  });
});

/**
 * A robot at a customer's site: the platform behind TLS with the customer's own certificate
 * authority, reached through the outbound proxy the site requires (given, or from HTTPS_PROXY).
 */
describe('a robot behind a proxy, on TLS with a private certificate authority', () => {
  let t: ApiTestContext;
  let served: ServedHub;
  let base: string;
  let cert: { key: string; cert: string };

  beforeAll(async () => {
    t = await createApiTestContext({ machineOfflineAfterSeconds: 3 });
    cert = selfSignedCertificate();
    served = await serveHub(t, { tls: cert });
    base = served.url;
  });
  afterAll(async () => {
    await served.close();
    await t.close();
  });

  const warnings = () => {
    const seen: Array<{ msg: string; meta?: Record<string, unknown> }> = [];
    return { seen, logger: { info: () => undefined, warn: (msg: string, meta?: object) => void seen.push({ msg, meta: meta as Record<string, unknown> }) } };
  };

  it('connects through the proxy given, trusting the CA given, and refuses a certificate it was not told to trust', async () => {
    const ws = await seedWorkspace(t.sql);
    const machine = await ws.machine();
    const proxy = await startConnectProxy();
    const untrusting = warnings();
    const refused = connect({ url: base, machineKey: machine.machineKey, proxy: null, logger: untrusting.logger, onJob: async () => undefined });
    const robot = connect({ url: base, machineKey: machine.machineKey, ca: cert.cert, proxy: proxy.url, onJob: async () => undefined });
    try {
      const lost = await waitFor('the untrusted certificate refused', async () => untrusting.seen.find((w) => w.msg === 'connection lost'));
      expect(String(lost.meta?.reason)).toMatch(/self.signed certificate/);
      await refused.close(0);
      expect((await robot.ready).id).toBe(machine.row.id);
      expect(proxy.tunnels).toContain(`127.0.0.1:${new URL(base).port}`);
    } finally {
      await robot.close(1000);
      await proxy.close();
    }
  });

  it('takes the proxy from HTTPS_PROXY unless NO_PROXY names the host, and refuses plain HTTP to another host', async () => {
    const ws = await seedWorkspace(t.sql);
    const machine = await ws.machine();
    const proxy = await startConnectProxy();
    const saved = { HTTPS_PROXY: process.env.HTTPS_PROXY, NO_PROXY: process.env.NO_PROXY };
    try {
      process.env.HTTPS_PROXY = proxy.url;
      process.env.NO_PROXY = 'example.internal';
      const robot = connect({ url: base, machineKey: machine.machineKey, ca: cert.cert, onJob: async () => undefined });
      await robot.ready;
      expect(proxy.tunnels).toHaveLength(1);
      await robot.close(1000);
      process.env.NO_PROXY = '127.0.0.1';
      const direct = connect({ url: base, machineKey: machine.machineKey, ca: cert.cert, onJob: async () => undefined });
      await direct.ready;
      expect(proxy.tunnels).toHaveLength(1);
      await direct.close(1000);
    } finally {
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
      await proxy.close();
    }
    expect(() => connect({ url: 'http://platform.example.com', machineKey: 'svc_mk_x', onJob: async () => undefined })).toThrow(/plain HTTP to another host/);
    expect(() => connect({ url: 'ftp://platform.example.com', machineKey: 'svc_mk_x', onJob: async () => undefined })).toThrow(/not an http\(s\) URL/);
  });
});

/** The status line and body of an upgrade request, read off a raw socket. */
async function rawUpgradeStatus(base: string, authorization?: string, path = '/api/v1/agent/connect'): Promise<{ line: string; body: string }> {
  const { port } = new URL(base);
  return new Promise((resolve, reject) => {
    const s = net.connect(Number(port), '127.0.0.1', () => {
      s.write(
        `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n` +
        `Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n${authorization ? `Authorization: ${authorization}\r\n` : ''}\r\n`,
      );
    });
    let text = '';
    s.on('data', (d) => (text += d.toString()));
    s.on('end', () => {
      const [head = '', body = ''] = text.split('\r\n\r\n');
      resolve({ line: head.split('\r\n')[0] ?? '', body });
    });
    s.on('error', reject);
  });
}
