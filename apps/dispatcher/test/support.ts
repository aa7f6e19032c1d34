import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createTestContext, seedApiKey, seedMachine, seedProcess, seedQueue, seedTenant, seedUser, type TestContext } from '@svc/core/testing';
import { createBullDispatch, type BullDispatch, type Sql } from '@svc/core';

/**
 * Shared by the dispatch engine's tests: real dispatcher, agent-sim and API processes spawned
 * from dist/ (build first: `npx tsc -b`; `npm test` does it), sharing the test's database and
 * Redis prefix through ctx.childEnv.
 */
export const ROOT = path.resolve(__dirname, '../../..');
export const DISPATCHER_MAIN = path.join(ROOT, 'apps/dispatcher/dist/main.js');
export const AGENT_MAIN = path.join(ROOT, 'apps/agent-sim/dist/main.js');
export const API_MAIN = path.join(ROOT, 'apps/api/dist/main.js');

/** Engine settings that make tests quick: fast sweeps, machines offline after 2 s. */
export const FAST_ENGINE_ENV = {
  MACHINE_OFFLINE_AFTER_SECONDS: '2',
  DISPATCH_SWEEP_MS: '200',
  DISPATCH_RECONCILE_MS: '500',
};

export interface Child {
  name: string;
  proc: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
  /** signal the process and wait for it to exit */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Every Children of this test file: a timed-out wait shows what their processes said. */
const everyChildren = new Set<Children>();

export class Children {
  private readonly all: Child[] = [];

  constructor() {
    everyChildren.add(this);
  }

  /** The children started so far (stopAll forgets them). */
  get started(): readonly Child[] {
    return this.all;
  }

  /** The end of each running child's output (warnings and errors at the tests' log level). */
  tails(chars = 2000): string {
    return this.all.map((c) => `--- ${c.name} (pid ${c.proc.pid}${c.proc.exitCode !== null ? `, exited ${c.proc.exitCode}` : ''}) ---\n${c.output().slice(-chars)}`).join('\n');
  }

  spawn(name: string, script: string, args: string[], env: Record<string, string>): Child {
    if (!existsSync(script)) throw new Error(`${script} is missing: build first (npx tsc -b)`);
    const proc = spawn(process.execPath, [script, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    const keep = (chunk: Buffer) => {
      out += chunk.toString();
      if (out.length > 200_000) out = out.slice(-100_000);
    };
    proc.stdout!.on('data', keep);
    proc.stderr!.on('data', keep);
    const exited = new Promise<number | null>((resolve) => proc.once('exit', (code, sig) => resolve(code ?? (sig ? -1 : null))));
    const child: Child = {
      name,
      proc,
      output: () => out,
      exited,
      async stop(signal = 'SIGTERM') {
        if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
        const timer = setTimeout(() => proc.kill('SIGKILL'), 15_000);
        const code = await exited;
        clearTimeout(timer);
        return code;
      },
    };
    this.all.push(child);
    return child;
  }

  dispatcher(ctx: TestContext, env: Record<string, string> = {}): Child {
    return this.spawn('dispatcher', DISPATCHER_MAIN, [], { ...ctx.childEnv, ...FAST_ENGINE_ENV, ...env });
  }

  agent(ctx: TestContext, args: string[], env: Record<string, string> = {}): Child {
    return this.spawn('agent-sim', AGENT_MAIN, args, { ...ctx.childEnv, ...FAST_ENGINE_ENV, ...env });
  }

  api(ctx: TestContext, port: number, env: Record<string, string> = {}): Child {
    return this.spawn('api', API_MAIN, [], { ...ctx.childEnv, ...FAST_ENGINE_ENV, PORT: String(port), ...env });
  }

  async stopAll(): Promise<void> {
    await Promise.all(this.all.map((c) => c.stop('SIGKILL')));
    this.all.length = 0;
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Polls until `probe` returns a truthy value; fails with `what` and the last value otherwise. */
export async function waitFor<T>(what: string, probe: () => Promise<T | null | undefined | false>, timeoutMs = 20_000, intervalMs = 50): Promise<T> {
  const until = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v) return v;
      last = v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > until) {
      const tails = [...everyChildren].map((c) => c.tails()).filter(Boolean).join('\n');
      throw new Error(`timed out waiting for ${what} (last: ${last instanceof Error ? last.message : JSON.stringify(last)})${tails ? `\nchild processes:\n${tails}` : ''}`);
    }
    await sleep(intervalMs);
  }
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

export async function waitForHttp(url: string, timeoutMs = 20_000): Promise<void> {
  await waitFor(`${url} to answer`, async () => {
    const res = await fetch(url).catch(() => null);
    return res?.ok ?? false;
  }, timeoutMs, 100);
}

export function tempFile(name: string): string {
  return path.join(mkdtempSync(path.join(os.tmpdir(), 'svc-dispatch-')), name);
}

/** A tenant with an admin, an API key with every scope, and helpers to add the rest. */
export async function seedWorkspace(sql: Sql) {
  const tenant = await seedTenant(sql);
  const admin = await seedUser(sql, tenant.id, { role: 'admin' });
  const apiKey = await seedApiKey(sql, tenant.id);
  return {
    tenant,
    adminToken: admin.token,
    adminEmail: admin.user.email as string,
    key: apiKey.key,
    process: (fields: Record<string, unknown> = {}) => seedProcess(sql, tenant.id, fields),
    machine: (fields: Record<string, unknown> = {}) => seedMachine(sql, tenant.id, fields),
    queue: (fields: Record<string, unknown> = {}) => seedQueue(sql, tenant.id, fields),
  };
}

export interface JournalEntry {
  t: number;
  pid: number;
  event: 'job-start' | 'job-end' | 'item-start' | 'item-end';
  job_id: string;
  machine_id: string;
  attempt: number;
  item_id?: string;
  outcome?: string;
  status?: string;
}

export function readJournal(file: string): JournalEntry[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as JournalEntry);
}

/**
 * From agents' journals: for every item, its processing intervals (start → end, or → the death
 * of its process when `deaths` says when a pid was killed). Throws when two intervals of one
 * item overlap, i.e. two machines (or two runs) processed it at the same time.
 */
export function assertNoItemProcessedTwiceAtOnce(entries: JournalEntry[], deaths: Record<number, number> = {}): number {
  const open = new Map<string, JournalEntry>();
  const intervals = new Map<string, Array<{ from: number; to: number; machine: string; attempt: number }>>();
  const push = (id: string, iv: { from: number; to: number; machine: string; attempt: number }) => {
    const list = intervals.get(id) ?? [];
    list.push(iv);
    intervals.set(id, list);
  };
  for (const e of [...entries].sort((a, b) => a.t - b.t)) {
    if (!e.item_id) continue;
    const k = `${e.item_id}/${e.pid}/${e.attempt}`;
    if (e.event === 'item-start') open.set(k, e);
    else if (e.event === 'item-end') {
      const s = open.get(k);
      open.delete(k);
      if (s) push(e.item_id, { from: s.t, to: e.t, machine: e.machine_id, attempt: e.attempt });
    }
  }
  for (const s of open.values()) push(s.item_id!, { from: s.t, to: deaths[s.pid] ?? Number.POSITIVE_INFINITY, machine: s.machine_id, attempt: s.attempt });
  for (const [id, list] of intervals) {
    list.sort((a, b) => a.from - b.from);
    for (let i = 1; i < list.length; i++) {
      if (list[i]!.from < list[i - 1]!.to) {
        throw new Error(`item ${id} processed twice at once: ${JSON.stringify(list[i - 1])} and ${JSON.stringify(list[i])}`);
      }
    }
  }
  return intervals.size;
}

/** Status counts of a queue's items, from the table itself. */
export async function itemStatusCounts(sql: Sql, queueId: string): Promise<Record<string, number>> {
  const rows = await sql<{ status: string; n: number }[]>`select status, count(*)::int as n from queue_items where queue_id = ${queueId} group by status`;
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

/**
 * A test file's context (its own database and Redis prefix), a BullDispatch on that prefix, and
 * the child processes the file starts: made in beforeAll, all stopped and closed in afterAll.
 */
export function processSuite() {
  const suite = { ctx: undefined as unknown as TestContext, bull: undefined as unknown as BullDispatch, children: new Children() };
  beforeAll(async () => {
    suite.ctx = await createTestContext();
    suite.bull = createBullDispatch({ redis: suite.ctx.redisUrl, prefix: suite.ctx.redisPrefix });
  });
  afterAll(async () => {
    await suite.children.stopAll();
    await suite.bull?.close();
    await suite.ctx?.close();
  });
  return suite;
}
