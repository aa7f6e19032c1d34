import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLI_ACTOR, createEngine, createLogger, type Engine, type Sql } from '@svc/core';
import { directoryArchive, s3Archive, type RecordArchive } from '@svc/core/internals';
import { databaseSuite, seedQueue, seedTenant } from '@svc/testing';
import { startS3Server, type S3TestServer } from '@svc/testing/s3';

/**
 * The sweep of orphan archive files (retention/sweep.ts, `svc archive sweep`), on a directory and
 * on a bucket: files of killed batches that no manifest row lists go once they are old enough;
 * listed files, young files, files of a scope whose pass runs and files of another layout stay.
 */
const db = databaseSuite();
let sql: Sql;
let dir: string;
let s3: S3TestServer;
let tenantId: string;
const logger = createLogger({ service: 'archive-sweep-test', level: 'error' });
const opened: RecordArchive[] = [];
const DAY = 86_400_000;

beforeAll(async () => {
  sql = db.sql;
  dir = await mkdtemp(join(tmpdir(), 'svc-sweep-'));
  s3 = await startS3Server();
  tenantId = (await seedTenant(sql)).id;
});
afterAll(async () => {
  for (const a of opened) a.close?.();
  await s3.close();
  await rm(dir, { recursive: true, force: true });
});

const implementations: Array<[string, () => RecordArchive]> = [
  ['a directory', () => directoryArchive(dir)],
  ['an S3 bucket', () => {
    const a = s3Archive({ bucket: s3.bucket, prefix: 'sweep/', endpoint: s3.endpoint, region: 'us-east-1', credentials: s3.credentials });
    opened.push(a);
    return a;
  }],
];

describe.each(implementations)('the orphan sweep on %s', (_name, make) => {
  let archive: RecordArchive;
  let engine: Engine;
  beforeAll(() => {
    archive = make();
    engine = createEngine({ sql, logger, recordArchive: archive });
  });

  async function all(): Promise<string[]> {
    const keys: string[] = [];
    for await (const e of archive.list('')) keys.push(e.key);
    return keys.sort();
  }

  it('removes the files killed batches left, once old enough, and nothing the manifest lists', async () => {
    const q = await seedQueue(sql, tenantId);
    await engine.catalog.save(CLI_ACTOR, tenantId, 'queue', { id: q.id as string }, { retention_completed_days: 0.0001, retention_action: 'archive' });
    await sql`
      insert into queue_item_records (tenant_id, queue_id, status, data, updated_at)
      select ${tenantId}, ${q.id as string}, 'completed', jsonb_build_object('n', g), now() - make_interval(secs => 3600 + g)
      from generate_series(1, 9) g`;
    // killed batches of 4, then a pass in batches of 3: the first files are written for other row sets, so they are orphans
    await expect(engine.sweeps.retention({ batch: 4, afterArchive: () => { throw new Error('killed'); } })).rejects.toThrow('killed');
    await engine.sweeps.retention({ batch: 3 });
    const listed = (await engine.archive.list(tenantId, { queueId: q.id as string })).map((f) => f.key).sort();
    expect(listed.length).toBeGreaterThan(0);
    const foreign = 'not-ours/notes.txt';
    await archive.put(foreign, ['keep me']);
    const before = await all();
    const orphans = before.filter((k) => !listed.includes(k) && k !== foreign);
    expect(orphans.length).toBeGreaterThan(0);

    // young files stay
    expect((await engine.archive.sweepOrphans()).orphans).toEqual([]);
    // a dry run names them and removes nothing
    const dry = await engine.archive.sweepOrphans({ now: new Date(Date.now() + 2 * DAY), dryRun: true });
    expect(dry.orphans.sort()).toEqual(orphans);
    expect(await all()).toEqual(before);

    // while the queue's pass holds its lock, its files are left to the next sweep
    await sql.begin(async (tx) => {
      await tx`select pg_advisory_xact_lock(hashtextextended(${`retention:queue_items:${q.id as string}`}, 0))`;
      const busy = await engine.archive.sweepOrphans({ now: new Date(Date.now() + 2 * DAY) });
      expect(busy.busy).toBeGreaterThan(0);
      expect(busy.orphans.filter((k) => k.includes(q.id as string))).toEqual([]);
    });

    const swept = await engine.archive.sweepOrphans({ now: new Date(Date.now() + 2 * DAY) });
    expect(swept.orphans.sort()).toEqual(orphans);
    expect(await all()).toEqual([...listed, foreign].sort());
    // what the manifest lists still restores whole
    expect(await engine.archive.restoreItems({ id: q.id as string, tenant_id: tenantId, name: q.name as string }, new Date(Date.now() - DAY), new Date())).toBe(9);
    expect((await engine.archive.sweepOrphans({ now: new Date(Date.now() + 2 * DAY) })).orphans).toEqual([]);
  });
});
