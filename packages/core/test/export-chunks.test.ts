import { createEngine, createLogger } from '@svc/core';
import { EXPORT_CHUNK_BYTES, EXPORT_CHUNK_ROWS, exportQueueItemsChunk, walkKeyset } from '@svc/core/internals';
import { databaseSuite, seedQueue, seedTenant } from '@svc/testing';

/**
 * The export's chunks (docs/decisions/export.md): bounded in rows and in the bytes of their JSON text, walked by
 * keyset to the end without a repeat or a gap, whatever their size.
 */
jest.setTimeout(60_000);
const db = databaseSuite();

async function text(stream: NodeJS.ReadableStream): Promise<string> {
  let out = '';
  for await (const chunk of stream) out += chunk.toString();
  return out;
}

describe('export chunks', () => {
  it('cut a chunk of large items at the byte bound, and the walk still reaches every item in order', async () => {
    const sql = db.ctx.sql;
    const tenant = await seedTenant(sql);
    const queue = (await seedQueue(sql, tenant.id)) as { id: string; tenant_id: string; name: string };
    // hex text barely compresses: each payload is stored at about its size
    const perItem = 700_000;
    const count = Math.ceil((3 * EXPORT_CHUNK_BYTES) / perItem);
    await sql`
      insert into queue_item_records (tenant_id, queue_id, data, created_at)
      select ${tenant.id}, ${queue.id},
             jsonb_build_object('i', g, 'blob', (select string_agg(md5(g::text || '-' || k), '') from generate_series(1, ${perItem / 32}) k)),
             now() - g * interval '1 second'
      from generate_series(1, ${count}) g`;
    const first = await exportQueueItemsChunk(sql, queue, {}, null, EXPORT_CHUNK_ROWS);
    expect(first.length).toBeGreaterThan(0);
    expect(first.length).toBeLessThan(count);
    const storedOf = async (ids: string[]) => Number((await sql`
      select coalesce(sum(octet_length(data::text)), 0)::bigint as n from queue_item_records where id = any(${ids}::uuid[])`)[0]!.n);
    // the chunk ends with the row that passed the bound: the rows before it are within it
    const ids = first.map((r) => r.id);
    expect(await storedOf(ids)).toBeGreaterThanOrEqual(EXPORT_CHUNK_BYTES);
    expect(await storedOf(ids.slice(0, -1))).toBeLessThan(EXPORT_CHUNK_BYTES);

    const chunks: number[] = [];
    const seen: number[] = [];
    for await (const rows of walkKeyset((after, limit) => exportQueueItemsChunk(sql, queue, {}, after, limit))) {
      chunks.push(rows.length);
      for (const r of rows) seen.push((r.data as { i: number }).i);
    }
    expect(chunks.length).toBeGreaterThan(2);
    expect(seen).toEqual(Array.from({ length: count }, (_, k) => k + 1));
  });

  it('bounds a chunk by its text, not its compressed storage: repetitive payloads that store small still cut it', async () => {
    const sql = db.ctx.sql;
    const tenant = await seedTenant(sql);
    const queue = (await seedQueue(sql, tenant.id)) as { id: string; tenant_id: string; name: string };
    // 2 MB of one repeated letter: Postgres stores each in a few KB
    const perItem = 2_000_000;
    const count = 12;
    await sql`
      insert into queue_item_records (tenant_id, queue_id, data, created_at)
      select ${tenant.id}, ${queue.id}, jsonb_build_object('i', g, 'blob', repeat('a', ${perItem})), now() - g * interval '1 second'
      from generate_series(1, ${count}) g`;
    const [stored] = await sql`select max(pg_column_size(data))::int as n from queue_item_records where queue_id = ${queue.id}`;
    expect(stored!.n).toBeLessThan(perItem / 10);
    const first = await exportQueueItemsChunk(sql, queue, {}, null, EXPORT_CHUNK_ROWS);
    // the bound's bytes plus at most the one row that passed it
    expect(first.length).toBe(Math.floor(EXPORT_CHUNK_BYTES / perItem) + 1);
  });

  it('walks rows sharing one created_at by id across chunk edges, and a one-row chunk size too', async () => {
    const sql = db.ctx.sql;
    const tenant = await seedTenant(sql);
    const queue = (await seedQueue(sql, tenant.id)) as { id: string; tenant_id: string; name: string };
    await sql`insert into queue_item_records (tenant_id, queue_id, data) select ${tenant.id}, ${queue.id}, jsonb_build_object('i', g) from generate_series(1, 25) g`;
    const expected = (await sql`select id from queue_items where queue_id = ${queue.id} order by created_at desc, id desc`).map((r) => r.id);
    for (const limit of [1, 7, 25, 1000]) {
      const ids: string[] = [];
      for await (const rows of walkKeyset((after, l) => exportQueueItemsChunk(sql, queue, {}, after, l), limit)) ids.push(...rows.map((r) => r.id));
      expect([limit, ids]).toEqual([limit, expected]);
    }
  });

  it('writes the engine\'s export as NDJSON and CSV, and an empty selection as nothing or a header', async () => {
    const sql = db.ctx.sql;
    const engine = createEngine({ sql, logger: createLogger({ service: 'export-test', level: 'error' }) });
    const tenant = await seedTenant(sql);
    const queue = (await seedQueue(sql, tenant.id)) as { id: string; tenant_id: string; name: string };
    await sql`insert into queue_item_records (tenant_id, queue_id, data, reference) values (${tenant.id}, ${queue.id}, ${sql.json({ a: 1 })}, '@sum')`;
    const nd = (await text(await engine.items.export(queue, {}, 'ndjson'))).split('\n');
    expect(nd).toHaveLength(2);
    expect(JSON.parse(nd[0]!)).toMatchObject({ reference: '@sum', data: { a: 1 } });
    const csv = (await text(await engine.items.export(queue, {}, 'csv', ['data', 'reference']))).split('\r\n');
    expect(csv).toEqual(['data,reference', '"{""a"":1}",\'@sum', '']);
    expect(await text(await engine.items.export(queue, { status: 'failed' }, 'ndjson'))).toBe('');
    expect(await text(await engine.items.export(queue, { status: 'failed' }, 'csv', ['data']))).toBe('data\r\n');
  });
});
