import { CLI_ACTOR, createEngine, createLogger, type Engine, type Sql } from '@svc/core';
import { s3Archive, type RecordArchive } from '@svc/core/internals';
import { databaseSuite, seedQueue, seedTenant } from '@svc/testing';
import { startS3Server, type S3TestServer } from '@svc/testing/s3';

/**
 * The retention pass into an S3 bucket (docs/decisions/retention.md), on a real Postgres and a
 * private S3-compatible server (s3rver): archived rows are in the bucket once, deleted and listed
 * in the manifest; a put the store refuses leaves every row and the manifest as they were.
 */
const db = databaseSuite();
let sql: Sql;
let s3: S3TestServer;
let archive: RecordArchive;
let engine: Engine;
let tenantId: string;
const logger = createLogger({ service: 'retention-s3-test', level: 'error' });
const opened: RecordArchive[] = [];

function bucketArchive(server: S3TestServer, bucket = server.bucket): RecordArchive {
  const a = s3Archive({ bucket, prefix: 'svc/retention/', endpoint: server.endpoint, region: 'us-east-1', credentials: server.credentials });
  opened.push(a);
  return a;
}

beforeAll(async () => {
  sql = db.sql;
  s3 = await startS3Server();
  archive = bucketArchive(s3);
  engine = createEngine({ sql, logger, recordArchive: archive });
  tenantId = (await seedTenant(sql)).id;
});
afterAll(async () => {
  for (const a of opened) a.close?.();
  await s3.close();
});

async function archivingQueue() {
  const q = await seedQueue(sql, tenantId);
  await engine.catalog.save(CLI_ACTOR, tenantId, 'queue', { id: q.id as string }, { retention_completed_days: 0.0001, retention_action: 'archive' });
  return { id: q.id as string, tenant_id: tenantId, name: q.name as string };
}

/** `n` completed items that ended `agoSeconds` ago and earlier, one second apart. */
async function completed(queueId: string, n: number, agoSeconds: number): Promise<void> {
  await sql`
    insert into queue_item_records (tenant_id, queue_id, status, data, reference, priority, updated_at, processed_at)
    select ${tenantId}, ${queueId}, 'completed', jsonb_build_object('n', g), 'ref-' || g, 3,
           now() - make_interval(secs => ${agoSeconds}::float8 + g), now() - make_interval(secs => ${agoSeconds}::float8 + g)
    from generate_series(1, ${n}) g`;
}

const left = async (queueId: string) => (await sql<{ id: string }[]>`select id from queue_items where queue_id = ${queueId} order by id`).map((r) => r.id);

/** What the manifest lists of a queue, and the ids its files hold in the bucket. */
async function archived(queueId: string): Promise<{ files: number; rows: number; ids: string[] }> {
  const files = await engine.archive.list(tenantId, { queueId });
  const ids: string[] = [];
  for (const f of files) {
    const lines = await archive.get(f.key);
    expect(lines).toHaveLength(f.rows);
    ids.push(...lines!.map((l) => (JSON.parse(l) as { id: string }).id));
  }
  return { files: files.length, rows: files.reduce((n, f) => n + f.rows, 0), ids };
}

describe('the retention pass into an S3 bucket', () => {
  it('archives each expired item once, deletes it and lists its file in the manifest, across a killed batch', async () => {
    const q = await archivingQueue();
    await completed(q.id, 23, 7200);
    const ids = await left(q.id);

    // killed between the archive's put and the delete: the objects are written, nothing else
    await expect(engine.sweeps.retention({ batch: 10, afterArchive: () => { throw new Error('killed'); } })).rejects.toThrow('killed');
    expect(await left(q.id)).toEqual(ids);
    expect(await engine.archive.list(tenantId, { queueId: q.id })).toEqual([]);

    const done = await engine.sweeps.retention({ batch: 10 });
    expect(done.find((d) => d.target_id === q.id)).toMatchObject({ deleted: 23, archived: 23 });
    expect(await left(q.id)).toEqual([]);
    const a = await archived(q.id);
    expect(a.rows).toBe(23);
    expect([...a.ids].sort()).toEqual(ids);
    const [ev] = await sql<{ data: unknown }[]>`select data from events where type = 'queue.retention' and data->>'queue_id' = ${q.id}`;
    expect(ev!.data).toEqual({ queue_id: q.id, queue_name: q.name, deleted: 23, archived: 23, action: 'archive' });

    const restored = await engine.archive.restoreItems(q, new Date(Date.now() - 86_400_000), new Date());
    expect(restored).toBe(23);
  });

  it('a put into a bucket that does not exist leaves every row in place and the manifest untouched', async () => {
    const q = await archivingQueue();
    await completed(q.id, 6, 3600);
    const ids = await left(q.id);
    const wrong = createEngine({ sql, logger, recordArchive: bucketArchive(s3, 'no-such-bucket') });
    await expect(wrong.sweeps.retention()).rejects.toThrow(/bucket/i);
    expect(await left(q.id)).toEqual(ids);
    expect(await engine.archive.list(tenantId, { queueId: q.id })).toEqual([]);
    expect(await sql`select 1 from retention_progress where target_id = ${q.id} and (deleted > 0 or archived > 0)`).toEqual([]);

    await engine.sweeps.retention();
    expect(await left(q.id)).toEqual([]);
    expect((await archived(q.id)).ids.sort()).toEqual(ids);
  });

  it('a store that stopped answering fails the pass and leaves every row in place and the manifest untouched', async () => {
    const q = await archivingQueue();
    await completed(q.id, 4, 3600);
    const ids = await left(q.id);
    const gone = await startS3Server();
    const unreachable = createEngine({ sql, logger, recordArchive: bucketArchive(gone) });
    await gone.close();
    await expect(unreachable.sweeps.retention()).rejects.toThrow(/ECONNREFUSED|connect/i);
    expect(await left(q.id)).toEqual(ids);
    expect(await engine.archive.list(tenantId, { queueId: q.id })).toEqual([]);

    await engine.sweeps.retention();
    expect(await left(q.id)).toEqual([]);
    expect((await archived(q.id)).ids.sort()).toEqual(ids);
  });
});
