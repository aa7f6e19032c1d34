import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEngine, createLogger, type Engine } from '@svc/core';
import { directoryArchive, type RecordArchive } from '@svc/core/internals';
import { databaseSuite, seedQueue, seedTenant } from '@svc/testing';

/**
 * An export's archived part over a manifest of many files (export/archived.ts): the manifest is
 * read a page at a time by keyset, files sharing an hour and a first end time included, and every
 * archived row comes out once, in manifest order.
 */
jest.setTimeout(60_000);
const db = databaseSuite();
let dir: string;
let archive: RecordArchive;
let engine: Engine;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-export-archived-'));
  archive = directoryArchive(dir);
  engine = createEngine({ sql: db.sql, logger: createLogger({ service: 'export-archived-test', level: 'error' }), recordArchive: archive });
});
afterAll(() => rm(dir, { recursive: true, force: true }));

async function text(stream: NodeJS.ReadableStream): Promise<string> {
  let out = '';
  for await (const chunk of stream) out += chunk.toString();
  return out;
}

it('reads every file of a manifest longer than a page, ties of hour and first end broken by key, each row once', async () => {
  const tenant = await seedTenant(db.sql);
  const queue = await seedQueue(db.sql, tenant.id);
  const qid = queue.id as string;
  const files = 1203;
  // the rows as retention archives them (to_jsonb of the row), then gone from the table
  await db.sql`
    insert into queue_item_records (tenant_id, queue_id, status, data, updated_at)
    select ${tenant.id}, ${qid}, 'completed', jsonb_build_object('f', g), '2026-01-01T00:00:00Z'::timestamptz + (g / 400) * interval '1 hour'
    from generate_series(1, ${files}) g`;
  const rows = await db.sql<Array<{ id: string; f: number; hour: Date; row: Record<string, unknown> }>>`
    select id, (data->>'f')::int as f, date_trunc('hour', updated_at) as hour, to_jsonb(i) as row from queue_item_records i where queue_id = ${qid}`;
  await db.sql`delete from queue_items where queue_id = ${qid}`;
  // keys in reverse of f within an hour, so only the key orders files that share hour and first end
  for (const r of rows) {
    const key = `${tenant.id}/queues/${qid}/${r.hour.toISOString().slice(0, 13)}/${String(10_000 - r.f).padStart(5, '0')}.ndjson.gz`;
    const { bytes } = await archive.put(key, [JSON.stringify(r.row)]);
    await db.sql`
      insert into archive_files (key, tenant_id, kind, queue_id, queue_name, hour, rows, bytes, first_ended_at, last_ended_at)
      values (${key}, ${tenant.id}, 'queue_items', ${qid}, ${queue.name as string}, ${r.hour}, 1, ${bytes}, ${r.hour}, ${r.hour})`;
  }
  const expected = (await db.sql<Array<{ f: number }>>`
    select (regexp_match(key, '(\\d+)\\.ndjson'))[1]::int as f from archive_files where queue_id = ${qid} order by hour, first_ended_at, key`)
    .map((r) => 10_000 - r.f);
  expect(new Set(expected).size).toBe(files);

  const body = await text(await engine.items.export({ id: qid, tenant_id: tenant.id, name: queue.name as string }, { include_archived: 'true' }, 'ndjson'));
  const out = body.split('\n').filter(Boolean).map((l) => JSON.parse(l) as { data: { f: number }; archived: boolean });
  expect(out.map((r) => r.data.f)).toEqual(expected);
  expect(out.every((r) => r.archived)).toBe(true);
});
