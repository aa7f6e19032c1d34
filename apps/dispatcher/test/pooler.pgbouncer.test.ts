import { spawn } from 'node:child_process';
import path from 'node:path';
import { createSql } from '@svc/core';
import { loadMigrations } from '@svc/core/internals';
import {
  Children, ROOT, createTestContext, databaseUrl, itemStatusCounts, pooledChildEnv, seedWorkspace, startApiProcess, startPgBouncer, testEnv,
  waitFor, type ApiProcess, type PrivatePgBouncer, type TestContext,
} from '@svc/testing';

/**
 * The platform behind PgBouncer in transaction mode (docs/decisions/pgbouncer.md): a real API,
 * dispatcher and agent-sim with DATABASE_URL at the pooler (DATABASE_POOLER=transaction) and
 * DATABASE_DIRECT_URL at Postgres. The pooler has fewer server sessions than the processes have
 * client connections, so their transactions keep meeting sessions other clients used before.
 */
jest.setTimeout(90_000);
let ctx: TestContext;
let pgb: PrivatePgBouncer;
let env: Record<string, string>;
let api: ApiProcess;
const children = new Children();
let ws: Awaited<ReturnType<typeof seedWorkspace>>;

beforeAll(async () => {
  ctx = await createTestContext();
  pgb = await startPgBouncer(ctx.databaseUrl, { poolSize: 5 });
  env = pooledChildEnv(ctx, pgb);
  api = await startApiProcess(env);
  children.dispatcher(ctx, env);
  ws = await seedWorkspace(ctx.sql);
});

afterAll(async () => {
  await children.stopAll();
  await api?.stop();
  await pgb?.stop();
  await ctx?.close();
});

async function call(method: string, route: string, body?: unknown): Promise<{ status: number; data: any }> {
  const res = await fetch(`${api.url}${route}`, {
    method,
    headers: { 'X-API-Key': ws.key, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = (await res.json()) as { data?: unknown };
  return { status: res.status, data: json.data };
}

async function jobStatus(id: string, status: string, timeoutMs = 30_000): Promise<Record<string, any>> {
  return waitFor(`job ${id} ${status}`, async () => {
    const [row] = await ctx.sql`select * from jobs where id = ${id}`;
    return row?.status === status ? row : null;
  }, timeoutMs);
}

/** What would show a statement relying on its server session: none of it in any process's output. */
function expectNoSessionErrors(): void {
  for (const c of children.started) expect(c.output()).not.toMatch(/prepared statement|UNSAFE_TRANSACTION|advisory/i);
}

describe('processes behind PgBouncer in transaction mode', () => {
  it('adds items through the API and takes every one to completed by a consumer on an agent-sim machine', async () => {
    const machine = await ws.machine({ slots: 2 });
    const proc = await ws.process();
    const queue = await ws.queue({ consumer_process_id: proc.id, max_consumers: 2 });
    await children.agent(ctx, ['--machine-key', machine.machineKey, '--item-duration', '5ms'], env);
    const bulk = await call('POST', `/api/v1/queues/by-name/${queue.name}/items/bulk`, { items: Array.from({ length: 40 }, (_, i) => ({ n: i })) });
    expect(bulk.status).toBe(200);
    expect(bulk.data.added).toBe(40);
    const one = await call('POST', `/api/v1/queues/by-name/${queue.name}/items`, { data: { single: true }, reference: 'P-1' });
    expect(one.status).toBe(200);
    const counts = await waitFor('41 items completed', async () => {
      const c = await itemStatusCounts(ctx.sql, queue.id as string);
      return c.completed === 41 ? c : null;
    }, 45_000);
    expect(counts).toEqual({ completed: 41 });
    const items = await ctx.sql`select processed_by, attempt from queue_items where queue_id = ${queue.id as string}`;
    expect(items.every((it) => it.processed_by === machine.row.id && it.attempt === 1)).toBe(true);
    expectNoSessionErrors();
  });

  it('triggers a job that completes, and stops a running one', async () => {
    const machine = await ws.machine({ slots: 2 });
    await children.agent(ctx, ['--machine-key', machine.machineKey, '--duration', '200ms'], env);
    const proc = await ws.process();
    const done = await call('POST', '/api/v1/jobs/trigger', { process_id: proc.id, machine_id: machine.row.id, input_data: { order: 7 } });
    expect(done.status).toBe(201);
    const completed = await jobStatus(done.data.id, 'completed');
    expect(completed.output_data).toMatchObject({ simulated: true });

    const long = await call('POST', '/api/v1/jobs/trigger', { process_id: proc.id, machine_id: machine.row.id, input_data: { _sim: { duration_ms: 30_000 } } });
    expect(long.status).toBe(201);
    await jobStatus(long.data.id, 'running');
    const stop = await call('POST', `/api/v1/jobs/${long.data.id}/stop`);
    expect(stop.status).toBe(200);
    expect(stop.data.stop_requested).toBe(true);
    const stopped = await jobStatus(long.data.id, 'stopped', 20_000);
    expect(stopped.finished_at).not.toBeNull();
    expectNoSessionErrors();
  });

  it("runs the dispatcher's LISTEN on Postgres itself, not through the pooler", async () => {
    // direct sessions are named 'svc'; PgBouncer drops the pooled pools' padded name (db/sql.ts)
    const listeners = await waitFor('the dispatcher LISTENing', async () => {
      const rows = await ctx.sql<{ application_name: string }[]>`
        select application_name from pg_stat_activity
        where datname = current_database() and query ilike 'listen%outbox%'`;
      return rows.length > 0 ? rows : null;
    });
    expect(listeners.map((r) => r.application_name)).toEqual(['svc']);
    const pooledSessions = await ctx.sql`
      select 1 from pg_stat_activity where datname = current_database() and application_name <> 'svc' and backend_type = 'client backend'`;
    expect(pooledSessions.length).toBeGreaterThan(0);
    expect(pooledSessions.length).toBeLessThanOrEqual(pgb.poolSize);
  });
});

describe('svc migrate behind PgBouncer', () => {
  it('creates and migrates a database through DATABASE_DIRECT_URL, its advisory lock on a session of Postgres itself', async () => {
    const name = `${testEnv().templateDb.replace(/_tpl$/, '')}_mig${process.pid}`;
    const direct = databaseUrl(testEnv().adminUrl, name);
    const admin = createSql(testEnv().adminUrl, { max: 1 });
    const holder = createSql(direct, { max: 2 });
    try {
      await admin.unsafe(`create database "${name}"`);
      // the test holds the migrations' lock, so the CLI is seen waiting for it
      const held = await holder.reserve();
      await held`select pg_advisory_lock(727001)`;
      const cli = spawn(process.execPath, [path.join(ROOT, 'packages/cli/bin/svc.js'), 'migrate', '--json'], {
        env: { ...process.env, ...env, DATABASE_URL: pgb.pooledUrl(direct), DATABASE_DIRECT_URL: direct },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      let err = '';
      cli.stdout.on('data', (c: Buffer) => void (out += c.toString()));
      cli.stderr.on('data', (c: Buffer) => void (err += c.toString()));
      const exited = new Promise<number | null>((resolve) => cli.once('exit', (code) => resolve(code)));
      const waiting = await waitFor('the CLI waiting for the migrations lock', async () => {
        const rows = await holder<{ application_name: string }[]>`
          select application_name from pg_stat_activity
          where datname = current_database() and wait_event_type = 'Lock' and query ilike '%pg_advisory_lock%'`;
        return rows.length > 0 ? rows : null;
      });
      expect(waiting.map((r) => r.application_name)).toEqual(['svc']);
      await held`select pg_advisory_unlock(727001)`;
      held.release();
      expect({ code: await exited, err }).toEqual({ code: 0, err: '' });
      const latest = Math.max(...loadMigrations().map((m) => m.version));
      expect(JSON.parse(out)).toMatchObject({ schema_version: latest });
    } finally {
      await holder.end({ timeout: 5 });
      await admin.unsafe(`drop database if exists "${name}" with (force)`).catch(() => undefined);
      await admin.end({ timeout: 5 });
    }
  });
});
