import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLI_ACTOR, createEngine, createLogger, type Engine } from '@svc/core';
import { directoryArchive, loadQueueItemCounts } from '@svc/core/internals';
import {
  clearStaleSessionErrors, privateTestContext, seedQueue, seedTenant, startPrivatePostgres, type PrivatePostgres, type TestContext,
} from '@svc/testing';

/**
 * A retention pass whose Postgres restarts in the middle of a batch (docs/decisions/retention.md):
 * the batch under way dies with its transaction, the batches before it stay done, and the next
 * pass resumes; every item ends either still in its queue or deleted and in exactly one listed
 * archive file, and the counters agree with the table. A private server, since the test restarts it.
 */
let pg: PrivatePostgres;
let t: TestContext;
let engine: Engine;
let dir: string;

beforeAll(async () => {
  pg = await startPrivatePostgres();
  t = privateTestContext(pg);
  dir = await mkdtemp(join(tmpdir(), 'svc-archive-restart-'));
  engine = createEngine({ sql: t.sql, logger: createLogger({ service: 'retention-restart-test', level: 'error' }), recordArchive: directoryArchive(dir) });
}, 120_000);

afterAll(async () => {
  await t?.close();
  pg?.destroy();
  await rm(dir, { recursive: true, force: true });
});

it('a Postgres restart in the middle of a batch loses nothing: the next pass resumes and archives each item once', async () => {
  const tenantId = (await seedTenant(t.sql)).id as string;
  const q = await seedQueue(t.sql, tenantId);
  await engine.catalog.save(CLI_ACTOR, tenantId, 'queue', { id: q.id as string }, { retention_completed_days: 0.0001, retention_action: 'archive' });
  await t.sql`
    insert into queue_item_records (tenant_id, queue_id, status, data, updated_at, processed_at)
    select ${tenantId}, ${q.id}, 'completed', jsonb_build_object('n', g), now() - make_interval(secs => 3600 + g), now() - interval '1 hour'
    from generate_series(1, 2500) g`;
  const all = (await t.sql<{ id: string }[]>`select id from queue_items where queue_id = ${q.id as string}`).map((r) => r.id);

  let batches = 0;
  const killed = engine.sweeps.retention({
    batch: 500,
    // the third batch's archive is durable and its delete not yet sent when the server goes
    afterArchive: async () => {
      if (++batches === 3) await pg.restartFast();
    },
  });
  await expect(killed).rejects.toThrow();
  await clearStaleSessionErrors(t.sql);

  // the first two batches committed; the third's rows are all still there
  const [{ n: afterKill }] = await t.sql<{ n: number }[]>`select count(*)::int as n from queue_items where queue_id = ${q.id as string}`;
  expect(afterKill).toBe(1500);

  const resumed = await engine.sweeps.retention({ batch: 500 });
  expect(resumed.find((r) => r.target_id === q.id)).toEqual({ kind: 'queue_items', target_id: q.id, deleted: 1500, archived: 1500 });
  const [{ n: left }] = await t.sql<{ n: number }[]>`select count(*)::int as n from queue_items where queue_id = ${q.id as string}`;
  expect(left).toBe(0);

  // every item is in exactly one file the manifest lists
  const archive = directoryArchive(dir);
  const archived: string[] = [];
  for (const f of await engine.archive.list(tenantId, { queueId: q.id as string })) {
    for (const line of (await archive.get(f.key))!) archived.push((JSON.parse(line) as { id: string }).id);
  }
  expect(archived).toHaveLength(2500);
  expect(new Set(archived)).toEqual(new Set(all));

  const counts = (await loadQueueItemCounts(t.sql, [q.id as string])).get(q.id as string)!;
  expect(counts.total).toBe(0);
  // one event for what the killed pass removed before the restart and one for the resumed pass, together all of it
  const events = await t.sql<{ data: { deleted: number } }[]>`select data from events where type = 'queue.retention' and data->>'queue_id' = ${q.id as string}`;
  expect(events.reduce((a, e) => a + e.data.deleted, 0)).toBe(2500);
}, 120_000);
