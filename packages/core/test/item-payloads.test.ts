import { migrate, type Sql } from '@svc/core';
import { databaseBeforeMigration, type DatabaseBeforeMigration } from '@svc/testing';

/**
 * An item's payload apart from its state (migration 0029, docs/decisions/item-payloads.md), on a
 * database that held items before it: every payload moves, the search finds them in their new
 * place, and whatever deletes items deletes their payloads.
 */
jest.setTimeout(60_000);

let db: DatabaseBeforeMigration;
let sql: Sql;

beforeAll(() => {
  db = databaseBeforeMigration(29);
  sql = db.sql;
});
afterAll(() => db.close());

const payloads = () => sql<Array<{ id: string; queue_id: string; data: unknown }>>`select id, queue_id, data from queue_item_payloads order by id`;

it('moves every payload of the items that exist, keeps them whole, and the search finds them there', async () => {
  await db.migrateBefore();
  const [tenant] = await sql`insert into tenants (name) values ('m29') returning id`;
  const [a] = await sql`insert into queues (tenant_id, name) values (${tenant!.id}, 'a') returning id`;
  const [b] = await sql`insert into queues (tenant_id, name) values (${tenant!.id}, 'b') returning id`;
  // as the table was: the payload in the item's row, in every status
  const items = await sql<Array<{ id: string; queue_id: string; data: unknown }>>`
    insert into queue_items (tenant_id, queue_id, status, data)
    select ${tenant!.id}, case when g % 2 = 0 then ${a!.id}::uuid else ${b!.id}::uuid end,
           (array['new', 'in_progress', 'completed', 'dead_letter'])[1 + g % 4],
           jsonb_build_object('n', g, 'nested', jsonb_build_object('deep', array[g, g + 1]), 'text', repeat('x', g))
    from generate_series(1, 40) g
    returning id, queue_id, data`;

  expect((await migrate(sql))[0]).toBe('0029_item_payloads');

  expect(await payloads()).toEqual([...items].sort((x, y) => (x.id < y.id ? -1 : 1)));
  const [{ column }] = await sql`select count(*)::int as column from information_schema.columns where table_name = 'queue_items' and column_name = 'data'`;
  expect(column).toBe(0);
  // the whole item, as it was
  const [whole] = await sql`select status, data from queue_item_records where id = ${items[5]!.id}`;
  expect(whole).toEqual({ status: 'completed', data: items[5]!.data });
  // the search's index is the payloads' own
  const found = await sql`select id from queue_item_payloads where queue_id = ${a!.id} and data @> '{"n": 6}'`;
  expect(found.map((r) => r.id)).toEqual([items[5]!.id]);
  const [{ indexdef }] = await sql`select indexdef from pg_indexes where indexname = 'queue_item_payloads_data_idx'`;
  expect(indexdef).toMatch(/gin \(data jsonb_path_ops\)/);
});

it('deletes the payloads of the items that go, whoever deletes them', async () => {
  const [tenant] = await sql`insert into tenants (name) values ('m29-deletes') returning id`;
  const [q] = await sql`insert into queues (tenant_id, name) values (${tenant!.id}, 'q') returning id`;
  const [other] = await sql`insert into queues (tenant_id, name) values (${tenant!.id}, 'other') returning id`;
  for (const queue of [q!, other!]) {
    await sql`insert into queue_item_records (tenant_id, queue_id, data) select ${tenant!.id}, ${queue.id}, jsonb_build_object('g', g) from generate_series(1, 10) g`;
  }
  const left = async (queueId: string) =>
    (await sql`select (select count(*)::int from queue_items where queue_id = ${queueId}) as items,
                      (select count(*)::int from queue_item_payloads where queue_id = ${queueId}) as payloads`)[0];
  expect(await left(q!.id)).toEqual({ items: 10, payloads: 10 });

  // a statement that deletes some items
  await sql`delete from queue_items where id in (select id from queue_item_records where queue_id = ${q!.id} and (data->>'g')::int <= 4)`;
  expect(await left(q!.id)).toEqual({ items: 6, payloads: 6 });
  // a queue deleted: its items go by cascade, and their payloads with them
  await sql`delete from queues where id = ${q!.id}`;
  expect(await left(q!.id)).toEqual({ items: 0, payloads: 0 });
  expect(await left(other!.id)).toEqual({ items: 10, payloads: 10 });
  // the workspace deleted
  await sql`delete from tenants where id = ${tenant!.id}`;
  expect(await left(other!.id)).toEqual({ items: 0, payloads: 0 });
});

it('takes a whole item through the view, with the columns\' defaults, and refuses one without its payload', async () => {
  const [tenant] = await sql`insert into tenants (name) values ('m29-view') returning id`;
  const [q] = await sql`insert into queues (tenant_id, name) values (${tenant!.id}, 'q') returning id`;
  const [row] = await sql`insert into queue_item_records (tenant_id, queue_id, data) values (${tenant!.id}, ${q!.id}, '{"k": "v"}') returning *`;
  expect(row).toMatchObject({ status: 'new', priority: 3, retry_count: 0, attempt: 0, data: { k: 'v' } });
  expect(row!.id).toMatch(/^[0-9a-f-]{36}$/);
  const [counted] = await sql`select sum(n)::int as n from queue_item_counts where queue_id = ${q!.id} and status = 'new'`;
  expect(counted!.n).toBe(1);
  await expect(sql`insert into queue_item_records (tenant_id, queue_id) values (${tenant!.id}, ${q!.id})`).rejects.toMatchObject({ code: '23502' });
  // nothing of the refused item was kept
  expect((await sql`select count(*)::int as n from queue_items where queue_id = ${q!.id}`)[0]!.n).toBe(1);
});
