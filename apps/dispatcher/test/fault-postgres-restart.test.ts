import { createSql, isConnectionError, type Sql } from '@svc/core';
import {
  Children, assertNoItemProcessedTwiceAtOnce, clearStaleSessionErrors, freePort, itemStatusCounts, privateTestContext, readJournal, seedApiKey, seedWorkspace, sleep,
  startPrivatePostgres, tempFile, waitFor, waitForHttp, type PrivatePostgres, type TestContext,
} from '@svc/testing';

/**
 * Fault: Postgres goes away under load — a fast restart (every session terminated, the server
 * back within a second), a 10-second outage, a restart while a client streams bulk adds. The
 * API, the dispatcher and the agents are separate processes on a PRIVATE Postgres (never the
 * shared one). Each scenario ends with every item completed, no item processed by two consumers
 * at the same time (agents' journals), items added after the recovery processed, and every
 * consumer job completed (none ended by a lease or heartbeat sweep): nothing may stay stuck behind
 * a loop, worker or statement that died with the connection. See docs/decisions/postgres-outages.md.
 */
// generous: the waits below are liveness bounds that return as soon as the work is done, sized for a
// loaded CI host where six processes and a private Postgres share two cores
jest.setTimeout(240_000);
/**
 * The shipped lease (30 s): a robot keeps a run only while the platform confirmed it within
 * `lease − heartbeat` (docs/agent-protocol.md, "Ownership"), 25 s here; with the tests' 10-s lease
 * it would rightly give its runs up 6.7 s into the 10-s outage, since it cannot tell a platform
 * waiting for Postgres from a network gone silent.
 */
const SHIPPED_LEASE = { MACHINE_OFFLINE_AFTER_SECONDS: '30' };
let pg: PrivatePostgres;
let ctx: TestContext;
let base: string;
const children = new Children();

beforeAll(async () => {
  pg = await startPrivatePostgres();
  ctx = privateTestContext(pg);
  const apiPort = await freePort();
  children.api(ctx, apiPort, SHIPPED_LEASE);
  children.dispatcher(ctx, SHIPPED_LEASE);
  base = `http://127.0.0.1:${apiPort}`;
  await waitForHttp(`${base}/health`);
});
afterAll(async () => {
  await children.stopAll();
  await ctx?.close();
  pg?.destroy();
});

async function post(apiKey: string, path: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(base + path, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': apiKey, ...headers }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json().catch(() => null)) as any };
}

/** A queue consumed by up to four jobs on two machines (two slots each), its agents journaling. */
async function consumedQueue(seed: number) {
  await clearStaleSessionErrors(ctx.sql);
  const ws = await seedWorkspace(ctx.sql);
  const proc = await ws.process();
  const queue = await ws.queue({ consumer_process_id: proc.id, max_consumers: 4, max_retries: 3 });
  // offline until their agents heartbeat: a slow agent start is no silence to report
  const m1 = await ws.machine({ slots: 2, status: 'offline' });
  const m2 = await ws.machine({ slots: 2, status: 'offline' });
  const journal = tempFile('journal.jsonl');
  const args = ['--item-duration', '1-3ms', '--seed', String(seed), '--journal', journal];
  await children.agent(ctx, ['--machine-key', m1.machineKey, ...args], SHIPPED_LEASE);
  await children.agent(ctx, ['--machine-key', m2.machineKey, ...args], SHIPPED_LEASE);
  // both agents up (their first heartbeat names their version) before any work arrives
  await waitFor('both agents heartbeating', async () => {
    const [{ n }] = await ctx.sql`select count(*)::int as n from machines where id in (${m1.row.id}, ${m2.row.id}) and agent_version is not null`;
    return n === 2;
  }, 60_000);
  const bulk = (n: number, from: number, headers: Record<string, string> = {}, apiKey = ws.key) =>
    post(apiKey, `/api/v1/queues/by-name/${queue.name}/items/bulk`, { items: Array.from({ length: n }, (_, i) => ({ n: from + i })) }, headers);
  return { ws, queue, journal, bulk };
}

async function addAll(bulk: (n: number, from: number) => Promise<{ status: number }>, total: number): Promise<void> {
  for (let from = 0; from < total; from += 1000) expect((await bulk(Math.min(1000, total - from), from)).status).toBe(200);
}

const done = async (queueId: string) => (await itemStatusCounts(ctx.sql, queueId)).completed ?? 0;

/**
 * After the outage: every item completes, items added now are taken within seconds, nothing is
 * left running, and the journals show no item processed twice at once.
 */
async function expectRecovered(q: Awaited<ReturnType<typeof consumedQueue>>, total: number): Promise<void> {
  /*
   * Liveness, not speed: a few seconds of work are left once Postgres is back, the deadlines are
   * generous for a loaded host. Something stuck never finishes; a consumer rescued only by the
   * lease sweep (30 s) would show as a job not completed below.
   */
  await waitFor('every item added before the outage completed', async () => (await done(q.queue.id)) >= total, 60_000);
  await clearStaleSessionErrors(ctx.sql);
  expect((await q.bulk(200, total)).status).toBe(200);
  await waitFor('the items added after the recovery completed', async () => (await done(q.queue.id)) === total + 200, 60_000);
  const counts = await itemStatusCounts(ctx.sql, q.queue.id);
  expect(counts).toEqual({ completed: total + 200 });
  await waitFor('no consumer job left active', async () => {
    const [{ n }] = await ctx.sql`select count(*)::int as n from jobs where queue_id = ${q.queue.id} and status in ('pending', 'running')`;
    return n === 0;
  }, 60_000);
  // every consumer waited the outage out: none was ended for a heartbeat or a lease that Postgres
  // could not record meanwhile, none broke off
  const notCompleted = await ctx.sql`select status, error_message from jobs where queue_id = ${q.queue.id} and status <> 'completed'`;
  expect(notCompleted).toEqual([]);
  expect(assertNoItemProcessedTwiceAtOnce(readJournal(q.journal))).toBe(total + 200);
}

it('a fast restart (pg_ctl restart -m fast) at about 30 %: every item completes and new items are taken', async () => {
  const total = 3000;
  const q = await consumedQueue(11);
  await addAll(q.bulk, total);
  await waitFor('about 30 % done', async () => (await done(q.queue.id)) >= total * 0.3, 60_000);
  await pg.restartFast();
  await expectRecovered(q, total);
  // the restart is one warning per process, and nothing else went wrong (no loop or run died)
  for (const child of children.started) {
    const lines = child.output().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { level: string; message: string });
    const problems = lines.filter((l) => l.level === 'warn' || l.level === 'error');
    expect(problems.filter((l) => l.message !== 'Postgres unreachable: retrying with back-off until it answers')).toEqual([]);
    expect(problems.length).toBeLessThanOrEqual(1);
  }
});

it('a 10-second outage at about 30 %: every item completes and new items are taken', async () => {
  const total = 3000;
  const q = await consumedQueue(12);
  await addAll(q.bulk, total);
  await waitFor('about 30 % done', async () => (await done(q.queue.id)) >= total * 0.3, 60_000);
  await pg.stop();
  await sleep(10_000);
  await pg.start();
  await expectRecovered(q, total);
});

it('a restart during a stream of bulk adds: every add answered 200 exactly once, every item completes', async () => {
  const q = await consumedQueue(13);
  const batches = 30;
  const size = 100;
  // bulk adds are limited to 20 a minute per API key: the stream spreads its batches over keys
  const apiKeys = await Promise.all(Array.from({ length: batches }, async () => (await seedApiKey(ctx.sql, q.ws.tenant.id)).key));
  let refused = 0;
  const stream = (async () => {
    for (let b = 0; b < batches; b++) {
      // a client that retries what failed, with the same Idempotency-Key: an add whose outcome it
      // never heard (the connection dropped mid-commit) is created once, not twice
      const key = `stream-${b}`;
      for (let tries = 0; ; tries++) {
        const res = await q.bulk(size, b * size, { 'idempotency-key': key }, apiKeys[b]).catch(() => ({ status: 0 }));
        if (res.status === 200) break;
        refused++;
        // a 409 says the first attempt's work is still in flight (the API retries it until Postgres
        // answers, on a loaded host for several seconds): the client keeps asking, up to ~90 s
        if (tries >= 300) throw new Error(`batch ${b} never added: last status ${res.status}\n${children.tails()}`);
        await sleep(300);
      }
      await sleep(20);
    }
  })();
  await waitFor('a third of the stream added', async () => {
    const c = await itemStatusCounts(ctx.sql, q.queue.id);
    return Object.values(c).reduce((a, n) => a + n, 0) >= (batches * size) / 3;
  }, 60_000);
  await pg.restartFast();
  await stream;
  // the restart did hit the stream: some adds failed and were sent again
  expect(refused).toBeGreaterThan(0);
  await expectRecovered(q, batches * size);
});

/** 'hung' when `p` neither resolves nor rejects within `ms` (a liveness bound, not a timing assert). */
async function settleWithin<T>(p: Promise<T>, ms: number): Promise<{ ok: true; value: T } | { ok: false; error: unknown } | 'hung'> {
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<'hung'>((r) => (timer = setTimeout(() => r('hung'), ms)));
  try {
    return await Promise.race([p.then((value) => ({ ok: true as const, value }), (error: unknown) => ({ ok: false as const, error })), hung]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Whether all the pool's `max` connections answered within `boundMs` (null), else what went
 * wrong: `max` transactions at once, each holding its connection until all have answered, so
 * every connection takes one (told apart by their server process). Connection errors are retried: the first statements after a
 * restart may still meet the old session's.
 */
async function connectionsNotAnswering(sql: Sql, max: number, boundMs: number): Promise<string | null> {
  const backends = new Set<number>();
  let allAnswered!: () => void;
  const barrier = new Promise<void>((r) => (allAnswered = r));
  const until = Date.now() + boundMs;
  const one = async () => {
    for (;;) {
      try {
        return await sql.begin(async (tx) => {
          const [{ pid }] = await tx`select pg_backend_pid() as pid`;
          backends.add(pid as number);
          if (backends.size === max) allAnswered();
          await Promise.race([barrier, sleep(boundMs)]);
        });
      } catch (err) {
        if (!isConnectionError(err) || Date.now() > until) throw err;
        await sleep(50);
      }
    }
  };
  const done = Promise.allSettled(Array.from({ length: max }, one));
  const settled = await settleWithin(done, boundMs + 1_000);
  allAnswered();
  if (backends.size === max) return null;
  const failures = settled !== 'hung' && settled.ok ? settled.value.filter((r) => r.status === 'rejected').map((r) => String(r.reason)) : [];
  return `${max - backends.size} of ${max} connections did not answer within ${boundMs / 1000} s${failures.length ? ` (${failures.join('; ')})` : ''}`;
}

/**
 * A pool whose busy connections lose their session again and again: each connection must come
 * back after every restart. postgres.js 3.4.9 left a connection that lost its socket with a write
 * still waiting for its flush unable to send its next startup message; it never answered again
 * (see docs/decisions/postgres-outages.md, "A connection that never reconnects").
 */
it('a connection pool under load survives repeated fast restarts', async () => {
  // its own pool, busy on every connection: statements pipelined behind others and transactions
  // (reserved connections) are in flight whenever the server ends the sessions
  const max = 10;
  const sql = createSql(pg.url, { max });
  let stopped = false;
  let paused = false;
  let answered = 0;
  const unexpected: unknown[] = [];
  const worker = async (w: number) => {
    for (let i = 0; !stopped; i++) {
      while (paused && !stopped) await sleep(20);
      try {
        if (i % 2 === 0) {
          const [{ n }] = await sql`select ${w}::int + ${i}::int as n`;
          expect(n).toBe(w + i);
        } else {
          await sql.begin(async (tx) => {
            const [{ v }] = await tx`select ${w}::int as v`;
            expect(v).toBe(w);
            await tx`select pg_backend_pid() as pid`;
          });
        }
        answered++;
      } catch (err) {
        if (!isConnectionError(err)) unexpected.push(err);
        await sleep(10);
      }
    }
  };
  const workers = Array.from({ length: 3 * max }, (_, w) => worker(w));
  const stalls: string[] = [];
  const progressed = async (what: string) => {
    const from = answered;
    await waitFor(what, async () => answered >= from + 200, 60_000).catch(() => stalls.push(`${what}: stuck at ${answered - from} answers`));
  };
  let restarting: Promise<void> = Promise.resolve();
  try {
    for (let n = 1; n <= 5 && stalls.length === 0; n++) {
      await progressed(`the load before restart ${n}`);
      restarting = pg.restartFast();
      // pg_ctl restart takes well under a second; the server waits for every session it started
      // to end, including one whose client never sends its startup message
      if ((await settleWithin(restarting, 60_000)) === 'hung') stalls.push(`restart ${n}: the server did not restart within 60 s`);
      await restarting;
      paused = true;
      // a connection may still wait out its reconnect back-off (up to 2 s) on a loaded machine; the
      // defect this guards against never answers at all
      const silent = await connectionsNotAnswering(sql, max, 60_000);
      if (silent) stalls.push(`after restart ${n}: ${silent}`);
      paused = false;
      await progressed(`the load after restart ${n}`);
    }
  } finally {
    stopped = true;
    await restarting.catch(() => undefined);
    await settleWithin(Promise.allSettled(workers), 5_000);
    await sql.end({ timeout: 1 });
  }
  expect(stalls).toEqual([]);
  expect(unexpected).toEqual([]);
}, 600_000);
