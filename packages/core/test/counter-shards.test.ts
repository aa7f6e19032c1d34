import { createSql, type Sql } from '@svc/core';
import { createTestContext, seedQueue, seedTenant, type TestContext } from '@svc/testing';

/**
 * The shards of the per-queue counters (migration 0016): a transaction writes a shard that no
 * other running transaction holds, keeps it for all its statements, and falls back to its
 * backend's shard only when every shard is held. Counts stay exact either way.
 */
let ctx: TestContext;
let tenantId: string;
const SHARDS = 16;
const LOCK_CLASS = 1668182386;

beforeAll(async () => {
  ctx = await createTestContext();
  tenantId = (await seedTenant(ctx.sql)).id;
});
afterAll(() => ctx.close());

async function counted(queueId: string): Promise<Array<{ shard: number; n: number }>> {
  return ctx.sql<Array<{ shard: number; n: number }>>`
    select shard::int, n::int from queue_item_counts where queue_id = ${queueId} and status = 'new' and n <> 0 order by shard`;
}

function insertItems(tx: Sql, queueId: string, n: number) {
  return tx`insert into queue_item_records (tenant_id, queue_id, data) select ${tenantId}, ${queueId}, '{}'::jsonb from generate_series(1, ${n})`;
}

/** The shard the transaction took, or null when it took none. */
async function shardOf(tx: Sql): Promise<number | null> {
  const [row] = await tx<Array<{ s: string | null }>>`select current_setting('svc.counter_shard', true) as s`;
  return row!.s ? Number(row!.s) : null;
}

it('gives two transactions open at once different shards, so neither waits for the other, and each keeps its own', async () => {
  const q = await seedQueue(ctx.sql, tenantId);
  const a = createSql(ctx.databaseUrl, { max: 1 });
  const b = createSql(ctx.databaseUrl, { max: 1 });
  try {
    let release!: () => void;
    const secondDone = new Promise<void>((resolve) => { release = resolve; });
    let holding!: () => void;
    const firstHolds = new Promise<void>((resolve) => { holding = resolve; });
    const shards: Record<string, Array<number | null>> = { a: [], b: [] };
    const first = a.begin(async (tx) => {
      await insertItems(tx as unknown as Sql, q.id, 3);
      shards.a.push(await shardOf(tx as unknown as Sql));
      holding();
      // still open, holding its counter rows, while the other writes the same queue and status
      await secondDone;
      await insertItems(tx as unknown as Sql, q.id, 4);
      shards.a.push(await shardOf(tx as unknown as Sql));
    });
    // the first has written its counter rows: from here a shared shard would make the second wait
    await firstHolds;
    await b.begin(async (tx) => {
      // on a shared shard this insert would wait for the first transaction's commit: refused instead
      await tx`set local lock_timeout = '2s'`;
      await insertItems(tx as unknown as Sql, q.id, 2);
      shards.b.push(await shardOf(tx as unknown as Sql));
    });
    release();
    await first;
    expect(shards.a[0]).toBe(shards.a[1]);
    expect(shards.a[0]).not.toBe(shards.b[0]);
    for (const s of [...shards.a, ...shards.b]) expect(s !== null && s >= 0 && s < SHARDS).toBe(true);
    const rows = await counted(q.id);
    expect(rows.reduce((sum, r) => sum + r.n, 0)).toBe(9);
    expect(rows.find((r) => r.shard === shards.a[0])?.n).toBe(7);
    expect(rows.find((r) => r.shard === shards.b[0])?.n).toBe(2);
  } finally {
    await Promise.all([a.end(), b.end()]);
  }
});

it('falls back to the backend\'s own shard when every shard is held, and still counts exactly', async () => {
  const q = await seedQueue(ctx.sql, tenantId);
  const holders = createSql(ctx.databaseUrl, { max: SHARDS });
  const writer = createSql(ctx.databaseUrl, { max: 1 });
  try {
    let release!: () => void;
    const done = new Promise<void>((resolve) => { release = resolve; });
    let held = 0;
    let allHeld!: () => void;
    const ready = new Promise<void>((resolve) => { allHeld = resolve; });
    const holding = Array.from({ length: SHARDS }, (_, s) => holders.begin(async (tx) => {
      await tx`select pg_advisory_xact_lock(${LOCK_CLASS}, ${s})`;
      if (++held === SHARDS) allHeld();
      await done;
    }));
    await ready;
    const [{ pid }] = await writer<Array<{ pid: number }>>`select pg_backend_pid() as pid`;
    let used: number | null = -1;
    await writer.begin(async (tx) => {
      await insertItems(tx as unknown as Sql, q.id, 5);
      used = await shardOf(tx as unknown as Sql);
    });
    release();
    await Promise.all(holding);
    // no shard was free: nothing was taken, nothing kept; the rows went to the pid's shard
    expect(used).toBeNull();
    expect(await counted(q.id)).toEqual([{ shard: pid % SHARDS, n: 5 }]);
  } finally {
    await Promise.all([holders.end(), writer.end()]);
  }
});
