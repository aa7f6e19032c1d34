import { ValidationError } from '@svc/core';
import { addItemsBulk, addItemsMany } from '@svc/core/internals';
import { databaseSuite, seedQueue, seedTenant } from '@svc/testing';

/** The bulk insert with each item's own fields (`engine.items.addMany`, used by `svc items import`). */
const db = databaseSuite();

async function queue() {
  const t = await seedTenant(db.sql);
  const q = await seedQueue(db.sql, t.id);
  return { id: q.id as string, tenant_id: t.id, name: q.name as string };
}

describe('addItemsMany', () => {
  it('stores each item with its priority, reference and dates, in order, with one item.added event for the bulk', async () => {
    const q = await queue();
    const n = await addItemsMany({ sql: db.sql }, q, [
      { data: { i: 0 }, priority: 5, reference: 'r-0', deadline: '2030-01-01T00:00:00.123456Z', postpone: '2029-06-01T12:00:00+02:00' },
      { data: { i: 1 } },
      { data: { i: 2 }, reference: null, deadline: null },
    ]);
    expect(n).toBe(3);
    const rows = await db.sql`
      select priority, reference, deadline::text as deadline, postpone, data, status from queue_item_records where queue_id = ${q.id} order by created_at, id`;
    expect(rows).toEqual([
      { priority: 5, reference: 'r-0', deadline: '2030-01-01 00:00:00.123456+00', postpone: new Date('2029-06-01T10:00:00Z'), data: { i: 0 }, status: 'new' },
      { priority: 3, reference: null, deadline: null, postpone: null, data: { i: 1 }, status: 'new' },
      { priority: 3, reference: null, deadline: null, postpone: null, data: { i: 2 }, status: 'new' },
    ]);
    const events = await db.sql`select data from events where tenant_id = ${q.tenant_id} and type = 'item.added'`;
    expect(events.map((e) => e.data)).toEqual([{ queue_id: q.id, count: 3 }]);
  });

  it('names the item a refused date belongs to, and adds none of the bulk', async () => {
    const q = await queue();
    const err = await addItemsMany({ sql: db.sql }, q, [{ data: {} }, { data: {} }, { data: {}, postpone: '0000-01-01T00:00:00Z' }]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as ValidationError).issues.map((i) => i.field)).toEqual(['body → items → 2 → postpone']);
    const [{ n }] = await db.sql`select count(*)::int as n from queue_items where queue_id = ${q.id}`;
    expect(n).toBe(0);
  });

  it('refuses an empty bulk and one over 1000 items', async () => {
    const q = await queue();
    await expect(addItemsMany({ sql: db.sql }, q, [])).rejects.toBeInstanceOf(ValidationError);
    await expect(addItemsMany({ sql: db.sql }, q, Array.from({ length: 1001 }, () => ({ data: {} })))).rejects.toBeInstanceOf(ValidationError);
  });

  it('leaves the API bulk body as it was: payloads become items with the defaults', async () => {
    const q = await queue();
    expect(await addItemsBulk({ sql: db.sql }, q, { items: [{ a: 1 }, { b: 2 }] })).toBe(2);
    const rows = await db.sql`select priority, reference, deadline, postpone, data from queue_item_records where queue_id = ${q.id} order by created_at, id`;
    expect(rows).toEqual([
      { priority: 3, reference: null, deadline: null, postpone: null, data: { a: 1 } },
      { priority: 3, reference: null, deadline: null, postpone: null, data: { b: 2 } },
    ]);
  });
});
