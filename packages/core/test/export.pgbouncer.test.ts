import { createEngine, createLogger, createPooledSql, type Sql } from '@svc/core';
import { databaseSuite, seedQueue, seedTenant, startPgBouncer, type PrivatePgBouncer } from '@svc/testing';

/**
 * An export through PgBouncer in transaction mode (docs/decisions/export.md): its chunks are
 * separate statements, so they may run on different server sessions, and none holds a
 * transaction or a cursor across them.
 */
jest.setTimeout(60_000);
const db = databaseSuite();
let pgb: PrivatePgBouncer;
let pooled: Sql;

beforeAll(async () => {
  pgb = await startPgBouncer(db.ctx.databaseUrl, { poolSize: 2 });
  pooled = createPooledSql({ url: pgb.pooledUrl(db.ctx.databaseUrl), pooler: 'transaction' }, { max: 1 });
});

afterAll(async () => {
  await pooled?.end({ timeout: 5 });
  await pgb?.stop();
});

it('exports every item in order, its chunks on whichever server session, while others use the pool', async () => {
  const engine = createEngine({ sql: pooled, logger: createLogger({ service: 'export-pgbouncer-test', level: 'error' }) });
  const tenant = await seedTenant(db.ctx.sql);
  const queue = (await seedQueue(db.ctx.sql, tenant.id)) as { id: string; tenant_id: string; name: string };
  await db.ctx.sql`
    insert into queue_item_records (tenant_id, queue_id, data, status)
    select ${tenant.id}, ${queue.id}, jsonb_build_object('i', g), case when g % 3 = 0 then 'completed' else 'new' end
    from generate_series(1, 7500) g`;
  const expected = (await db.ctx.sql`
    select id from queue_items where queue_id = ${queue.id} and status = 'new' order by created_at desc, id desc`).map((r) => r.id);
  // another client of the pooler keeps taking a server session with short transactions meanwhile
  const other = createPooledSql({ url: pgb.pooledUrl(db.ctx.databaseUrl), pooler: 'transaction' }, { max: 2 });
  let exporting = true;
  const pids = new Set<number>();
  const busy = (async () => {
    while (exporting) {
      await other.begin(async (tx) => {
        pids.add((await tx<{ pid: number }[]>`select pg_backend_pid() as pid`)[0]!.pid);
      });
    }
  })();
  let text = '';
  try {
    const stream = await engine.items.export(queue, { status: 'new' }, 'ndjson');
    for await (const chunk of stream) text += chunk.toString();
  } finally {
    exporting = false;
    await busy;
    await other.end({ timeout: 5 });
  }
  const ids = text.split('\n').filter(Boolean).map((l) => JSON.parse(l).id as string);
  expect(ids).toEqual(expected);
  expect(pids.size).toBeGreaterThan(0);
  expect(pooled.options.prepare).toBe(false);
});
