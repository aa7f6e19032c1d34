import { createLogger, createPooledSql, type OutboxRelay, type Sql } from '@svc/core';
import { createOutboxRelay, noopDispatch, recordEffect, type DispatchPort } from '@svc/core/internals';
import { databaseSuite, seedQueue, seedTenant, startPgBouncer, waitFor, type PrivatePgBouncer } from '@svc/testing';

/**
 * The engine's pools through PgBouncer in transaction mode (docs/decisions/pgbouncer.md): no
 * statement relies on the server session it ran on, and LISTEN runs on Postgres itself.
 */
jest.setTimeout(60_000);
const db = databaseSuite();
const logger = createLogger({ service: 'pgbouncer-test', level: 'error' });
let pgb: PrivatePgBouncer;
let pooled: Sql;

beforeAll(async () => {
  pgb = await startPgBouncer(db.ctx.databaseUrl, { poolSize: 2 });
  pooled = createPooledSql({ url: pgb.pooledUrl(db.ctx.databaseUrl), pooler: 'transaction' }, { max: 8 });
});

afterAll(async () => {
  await pooled?.end({ timeout: 5 });
  await pgb?.stop();
});

describe('a pool behind PgBouncer in transaction mode', () => {
  it('prepares no statement: distinct statements, each run again, from many clients over two server sessions, none fails', async () => {
    // one client connection, so its statements can only meet different server sessions if the
    // pooler moves it between them (another pool keeps one of the two busy meanwhile)
    const single = createPooledSql({ url: pgb.pooledUrl(db.ctx.databaseUrl), pooler: 'transaction' }, { max: 1 });
    const errors: string[] = [];
    const singlePids = new Set<number>();
    const allPids = new Set<number>();
    try {
      // distinct texts: with named prepared statements each would be prepared on the session it first met
      const statement = (s: Sql, i: number) =>
        s<{ pid: number; x: number }[]>`select pg_backend_pid() as pid, ${i}::int + ${s.unsafe(String(i % 50))} as x`;
      for (let round = 0; round < 40 && (singlePids.size < 2 || round < 5); round++) {
        const busy = pooled.begin(async (tx) => {
          allPids.add((await tx<{ pid: number }[]>`select pg_backend_pid() as pid, pg_sleep(0.02)`)[0]!.pid);
        });
        const many = Array.from({ length: 100 }, (_, i) =>
          statement(pooled, i).then((r) => {
            expect(r[0]!.x).toBe(i + (i % 50));
            allPids.add(r[0]!.pid);
          }, (err: Error) => void errors.push(err.message)));
        const mine = Array.from({ length: 20 }, (_, i) =>
          statement(single, i).then((r) => void singlePids.add(r[0]!.pid), (err: Error) => void errors.push(err.message)));
        await Promise.all([busy, ...many, ...mine]);
      }
    } finally {
      await single.end({ timeout: 5 });
    }
    expect(errors).toEqual([]);
    expect(allPids.size).toBe(pgb.poolSize);
    // the one client connection ran the same statements on both server sessions
    expect(singlePids.size).toBe(2);
    expect(pooled.options.prepare).toBe(false);
  });

  it('the direct pool keeps its prepared statements', () => {
    expect(db.sql.options.prepare).toBe(true);
  });

  it('keeps a transaction on one server session until its COMMIT, and SET LOCAL inside it', async () => {
    const seen = await Promise.all(Array.from({ length: 12 }, () => pooled.begin(async (tx) => {
      await tx`set local statement_timeout = '5s'`;
      const [a] = await tx<{ pid: number; timeout: string }[]>`select pg_backend_pid() as pid, current_setting('statement_timeout') as timeout`;
      await tx`select pg_sleep(0.01)`;
      const [b] = await tx<{ pid: number }[]>`select pg_backend_pid() as pid`;
      return { same: a!.pid === b!.pid, timeout: a!.timeout };
    })));
    expect(seen.every((s) => s.same && s.timeout === '5s')).toBe(true);
    // SET LOCAL ended with its transaction: nothing leaks to the next client of the session
    const after = await Promise.all(Array.from({ length: 8 }, () => pooled<{ t: string }[]>`select current_setting('statement_timeout') as t`));
    expect(after.map((r) => r[0]!.t)).toEqual(Array(8).fill('0'));
  });
});

describe('the outbox relay behind PgBouncer', () => {
  let relay: OutboxRelay | null = null;
  afterEach(async () => {
    await relay?.close();
    relay = null;
  });

  it('hears NOTIFY on its direct connection: an effect committed through the pooler is published without a poll', async () => {
    const tenant = await seedTenant(db.sql);
    const queue = await seedQueue(db.sql, tenant.id);
    const ready: string[] = [];
    const port: DispatchPort = { ...noopDispatch, queueItemsReady: async (q) => void ready.push(q.id) };
    // no poll within the test: only the notification can start the pass that publishes
    relay = createOutboxRelay({ sql: pooled, listenSql: db.sql, port, logger, pollMs: 600_000, nudgeWindowMs: 0 });
    await relay.start();
    await relay.idle();
    await waitFor('the relay LISTENing on Postgres itself', async () => {
      const rows = await db.sql`
        select 1 from pg_stat_activity
        where datname = current_database() and pid <> pg_backend_pid() and query ilike 'listen%outbox%' and application_name = 'svc'`;
      return rows.length === 1;
    });
    await pooled.begin((tx) => recordEffect(tx, { kind: 'queue-ready', queue_id: queue.id as string, tenant_id: tenant.id }));
    await waitFor('the effect published', async () => ready.includes(queue.id as string), 20_000);
    // the relay publishes inside its transaction and deletes the row at its commit, a moment later
    await relay.idle();
    const left = await db.sql`select 1 from outbox where payload->>'queue_id' = ${queue.id as string}`;
    expect(left).toHaveLength(0);
  });
});
