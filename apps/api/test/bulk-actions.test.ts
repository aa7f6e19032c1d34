import { randomUUID } from 'node:crypto';
import { createSql } from '@svc/core';
import { BULK_ACTION_CHUNK } from '@svc/core/schemas';
import { seedApiKey, seedJob, seedUser, seedWorkspace, waitFor } from '@svc/testing';
import { apiClient, apiSuite, type ApiTestContext } from '@svc/testing/api';

/**
 * Bulk actions by filter through the real API, with a real dispatcher running the large ones in
 * the background (docs/decisions/bulk-actions.md). Chunks and crashes: packages/core/test/bulk-actions.test.ts.
 */
const suite = apiSuite({ dispatcher: true });
let ctx: ApiTestContext;
let ws: Awaited<ReturnType<typeof seedWorkspace>>;

beforeAll(async () => {
  ({ ctx } = suite);
  ws = await seedWorkspace(ctx.sql);
});

const key = () => ({ 'X-API-Key': ws.key });
/** An action's progress as an integrator reads it: through the typed client. */
const progressOf = (id: string) => apiClient(ctx, { apiKey: ws.key }).call('getBulkAction', { path: { action_id: id } });
const admin = () => ({ Authorization: `Bearer ${ws.adminToken}` });

async function items(queue: Record<string, unknown>, n: number, status: string, data: (i: number) => Record<string, unknown> = (i) => ({ n: i }), reference: (i: number) => string | null = () => null) {
  const rows = Array.from({ length: n }, (_, i) => ({ tenant_id: queue.tenant_id, queue_id: queue.id, status, data: data(i), reference: reference(i) }));
  for (let i = 0; i < rows.length; i += 1000) {
    await ctx.sql`insert into queue_item_records ${ctx.sql(rows.slice(i, i + 1000).map((r) => ({ ...r, data: ctx.sql.json(r.data as never) })) as never)}`;
  }
}

async function counts(queueId: string) {
  const rows = await ctx.sql<{ status: string; n: number }[]>`select status, count(*)::int as n from queue_items where queue_id = ${queueId} group by status`;
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

/** At least `n` statements of this database waiting for a row lock. */
async function lockWaiters(n: number): Promise<boolean> {
  const [row] = await ctx.sql`select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`;
  return row!.n >= n;
}

const act = (queueName: string, body: unknown, headers: Record<string, string> = key()) =>
  ctx.http.post(`/api/v1/queues/by-name/${encodeURIComponent(queueName)}/items/actions`).set(headers).send(body as object);

describe('POST /queues/by-name/{name}/items/actions', () => {
  it('answers a dry run with the count of what the action would change, and changes nothing', async () => {
    const q = await ws.queue();
    await items(q, 5, 'dead_letter', (i) => ({ customer: i < 3 ? 'ACME' : 'Other' }));
    await items(q, 2, 'completed', () => ({ customer: 'ACME' }));
    const res = await act(q.name, { action: 'redrive', filter: { data: { customer: 'ACME' } }, dry_run: true });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ dry_run: true, total: 3 });
    expect(await counts(q.id)).toEqual({ dead_letter: 5, completed: 2 });
    const [audit] = await ctx.sql`select count(*)::int as n from audit_log where tenant_id = ${ws.tenant.id} and resource_type = 'bulk_action' and details->>'queue_id' = ${q.id}`;
    expect(audit!.n).toBe(0);
  });

  it('ends a small action within the request, with one audit row holding its filter and count', async () => {
    const q = await ws.queue();
    await items(q, 4, 'dead_letter', (i) => ({ i }), (i) => (i % 2 ? 'odd' : 'even'));
    const res = await act(q.name, { action: 'set_priority', priority: 5, filter: { reference: 'odd', status: 'dead_letter' } });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ target: 'queue_items', queue_id: q.id, action: 'set_priority', status: 'completed', total: 2, done: 2, changed: 2, params: { priority: 5 } });
    const rows = await ctx.sql`select reference, priority from queue_items where queue_id = ${q.id}`;
    expect(rows.filter((r) => r.priority === 5).map((r) => r.reference)).toEqual(['odd', 'odd']);
    const audit = await ctx.sql`select action, actor_type, details from audit_log where resource_id = ${res.body.data.id}`;
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({ action: 'bulk_queue_items', actor_type: 'api_key', details: { action: 'set_priority', total: 2, filter: { reference: 'odd', status: 'dead_letter' } } });
  });

  it('acts on listed ids only, and ids of another queue match nothing', async () => {
    const q = await ws.queue();
    const other = await ws.queue();
    await items(q, 3, 'dead_letter');
    await items(other, 1, 'dead_letter');
    const [mine] = await ctx.sql`select id from queue_items where queue_id = ${q.id} limit 1`;
    const [theirs] = await ctx.sql`select id from queue_items where queue_id = ${other.id}`;
    const res = await act(q.name, { action: 'delete', ids: [mine!.id, theirs!.id] });
    expect(res.body.data).toMatchObject({ status: 'completed', total: 1, changed: 1, ids_count: 2, filter: null });
    expect(await counts(q.id)).toEqual({ dead_letter: 2 });
    expect(await counts(other.id)).toEqual({ dead_letter: 1 });
  });

  it(`runs a large action in the background in chunks of ${BULK_ACTION_CHUNK}, with progress to read`, async () => {
    const q = await ws.queue();
    const n = BULK_ACTION_CHUNK * 2 + 50;
    await items(q, n, 'dead_letter');
    const res = await act(q.name, { action: 'redrive', filter: { created_before: new Date(Date.now() + 60_000).toISOString() } });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ status: 'pending', total: n, done: 0 });
    const id = res.body.data.id as string;
    const seen = new Set<number>();
    const done = await waitFor('the dispatcher to finish the action', async () => {
      const a = await progressOf(id);
      seen.add(a.done);
      return a.status === 'completed' ? a : null;
    }, 60_000);
    expect(done).toMatchObject({ total: n, done: n, changed: n, finished_at: expect.any(String) });
    expect([...seen].every((d) => d % BULK_ACTION_CHUNK === 0 || d === n)).toBe(true);
    expect(await counts(q.id)).toEqual({ new: n });
  });

  it('cancels a running action before its next chunk, keeps what it did, and an ended one answers 409', async () => {
    const q = await ws.queue();
    const n = BULK_ACTION_CHUNK * 3;
    await items(q, n, 'dead_letter');
    // the oldest item is held by another transaction: the dispatcher's first chunk waits on it
    const holder = createSql(ctx.databaseUrl, { max: 1 });
    let release!: () => void;
    const released = new Promise<void>((resolve) => { release = resolve; });
    let held!: () => void;
    const isHeld = new Promise<void>((resolve) => { held = resolve; });
    const holding = holder.begin(async (tx) => {
      await tx`select id from queue_items where queue_id = ${q.id} order by created_at, id limit 1 for update`;
      held();
      await released;
    });
    try {
      await isHeld;
      const res = await act(q.name, { action: 'retry' });
      const id = res.body.data.id as string;
      await waitFor('the dispatcher to wait on the held item', () => lockWaiters(1));
      // the cancel waits for the chunk under way, which commits once the item is let go
      const cancelling = ctx.http.post(`/api/v1/bulk-actions/${id}/cancel`).set(key()).then((r) => r);
      await waitFor('the cancel to wait for the chunk', () => lockWaiters(2));
      release();
      const cancelled = await cancelling;
      expect(cancelled.status).toBe(200);
      expect(cancelled.body.data.cancel_requested).toBe(true);
      // the held chunk, and at most the one that took the freed row lock before the cancel did
      // (Postgres gives a released row to whichever asks first): nothing after the cancel's answer
      const done = cancelled.body.data.done as number;
      expect([BULK_ACTION_CHUNK, 2 * BULK_ACTION_CHUNK]).toContain(done);
      const ended = await waitFor('the action to end cancelled', async () => {
        const a = await progressOf(id);
        return a.status === 'cancelled' ? a : null;
      });
      expect(ended).toMatchObject({ total: n, done, changed: done });
      expect(await counts(q.id)).toEqual({ new: done, dead_letter: n - done });
      const again = await ctx.http.post(`/api/v1/bulk-actions/${id}/cancel`).set(key());
      expect(again.status).toBe(409);
      expect(again.body.error.message).toBe('La acción masiva ya ha finalizado (estado: cancelled)');
      const audit = await ctx.sql`select action from audit_log where resource_id = ${id} order by created_at, id`;
      expect(audit.map((a) => a.action)).toEqual(['bulk_queue_items', 'cancel_bulk_action']);
    } finally {
      release();
      await holding;
      await holder.end({ timeout: 1 });
    }
  });

  describe('hostile input', () => {
    it.each([
      ['both a filter and ids', { action: 'redrive', filter: {}, ids: [randomUUID()] }, 'ids', 'indique un filtro (filter) o una lista de ids (ids), no ambos'],
      ['an unknown action', { action: 'explode' }, 'action', undefined],
      ['set_priority without a priority', { action: 'set_priority' }, 'priority', 'obligatorio para la acción set_priority'],
      ['a priority for another action', { action: 'redrive', priority: 2 }, 'priority', 'no se admite con la acción redrive'],
      ['postpone without a date', { action: 'postpone' }, 'postpone', undefined],
      ['a priority out of range', { action: 'set_priority', priority: 9 }, 'priority', undefined],
      ['ids that are not UUIDs', { action: 'delete', ids: ['nope'] }, 'ids', undefined],
      ['too many ids', { action: 'delete', ids: Array.from({ length: 1001 }, () => randomUUID()) }, 'ids', undefined],
      ['an empty id list', { action: 'delete', ids: [] }, 'ids', undefined],
      ['an unknown filter field', { action: 'delete', filter: { colour: 'red' } }, 'filter', undefined],
      ['a reversed created range', { action: 'delete', filter: { created_after: '2026-02-01T00:00:00Z', created_before: '2026-01-01T00:00:00Z' } }, 'created_after', undefined],
      ['a date that is not one', { action: 'delete', filter: { created_after: 'yesterday' } }, 'created_after', undefined],
      ['a data filter that is not an object', { action: 'delete', filter: { data: [1] } }, 'data', undefined],
      ['a data filter past the size bound', { action: 'delete', filter: { data: { k: 'x'.repeat(3000) } } }, 'filter', undefined],
      ['NUL in the reference', { action: 'delete', filter: { reference: 'a\u0000b' } }, 'reference', undefined],
      ['a deeply nested data filter', { action: 'delete', filter: { data: JSON.parse('{"a":'.repeat(200) + '1' + '}'.repeat(200)) } }, 'data', undefined],
      ['dry_run as a string', { action: 'delete', dry_run: 'yes' }, 'dry_run', undefined],
    ])('%s → 422 naming the field, nothing recorded', async (_label, body, field, message) => {
      const q = await ws.queue();
      await items(q, 1, 'dead_letter');
      const res = await act(q.name, body);
      expect(res.status).toBe(422);
      expect(res.body.success).toBe(false);
      expect(res.body.error.code).toBe('VALIDATION_ERROR');
      const fields = (res.body.error.details as Array<{ field: string; message: string }>);
      expect(fields.some((d) => d.field.includes(field))).toBe(true);
      if (message) expect(fields.map((d) => d.message)).toContain(message);
      const [n] = await ctx.sql`select count(*)::int as n from bulk_actions where queue_id = ${q.id}`;
      expect(n!.n).toBe(0);
      expect(await counts(q.id)).toEqual({ dead_letter: 1 });
    });

    it('another workspace’s queue is 404, a key without queues:write 403, a revoked key 401', async () => {
      const other = await seedWorkspace(ctx.sql);
      const theirs = await other.queue();
      await items(theirs, 1, 'dead_letter');
      const res = await act(theirs.name, { action: 'delete' });
      expect(res.status).toBe(404);
      expect(res.body.error.message).toBe('Cola no encontrada');
      const q = await ws.queue();
      const reader = await seedApiKey(ctx.sql, ws.tenant.id, { scopes: ['queues:read'] });
      expect((await act(q.name, { action: 'delete' }, { 'X-API-Key': reader.key })).status).toBe(403);
      const revoked = await seedApiKey(ctx.sql, ws.tenant.id, { is_active: false });
      expect((await act(q.name, { action: 'delete' }, { 'X-API-Key': revoked.key })).status).toBe(401);
      expect(await counts(theirs.id)).toEqual({ dead_letter: 1 });
    });

    it('another workspace’s action cannot be read or cancelled, nor an action on jobs through a key', async () => {
      const other = await seedWorkspace(ctx.sql);
      const theirs = await other.queue();
      await items(theirs, BULK_ACTION_CHUNK + 1, 'dead_letter');
      const asked = await act(theirs.name, { action: 'retry' }, { 'X-API-Key': other.key });
      const id = asked.body.data.id as string;
      expect((await ctx.http.get(`/api/v1/bulk-actions/${id}`).set(key())).status).toBe(404);
      expect((await ctx.http.post(`/api/v1/bulk-actions/${id}/cancel`).set(key())).status).toBe(404);
      expect((await ctx.http.get(`/api/v1/settings/bulk-actions/${id}`).set(admin())).status).toBe(404);
      const jobs = await ctx.http.post('/api/v1/settings/jobs/actions').set(admin()).send({ action: 'stop', filter: { status: 'running' } });
      expect(jobs.status).toBe(200);
      expect((await ctx.http.get(`/api/v1/bulk-actions/${jobs.body.data.id}`).set(key())).status).toBe(404);
      expect((await ctx.http.get('/api/v1/bulk-actions/not-a-uuid').set(key())).status).toBe(422);
    });
  });
});

describe('settings: jobs and items of the workspace', () => {
  it('stops every pending job of a process, one job.stopped event each, and a member may read but not act', async () => {
    const p = await ws.process();
    const m = (await ws.machine()).row;
    const jobs = await Promise.all(Array.from({ length: 3 }, () => seedJob(ctx.sql, ws.tenant.id, { process_id: p.id, machine_id: m.id })));
    await seedJob(ctx.sql, ws.tenant.id, { process_id: p.id, machine_id: m.id, status: 'completed' });
    const dry = await ctx.http.post('/api/v1/settings/jobs/actions').set(admin()).send({ action: 'stop', filter: { process_id: p.id }, dry_run: true });
    expect(dry.body.data).toEqual({ dry_run: true, total: 3 });
    const res = await ctx.http.post('/api/v1/settings/jobs/actions').set(admin()).send({ action: 'stop', filter: { process_id: p.id } });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ target: 'jobs', status: 'completed', total: 3, changed: 3 });
    const statuses = await ctx.sql`select status from jobs where id = any(${jobs.map((j) => j.id as string)}::uuid[])`;
    expect(statuses.every((s) => s.status === 'stopped')).toBe(true);
    const [events] = await ctx.sql`select count(*)::int as n from events where type = 'job.stopped' and data->>'id' = any(${jobs.map((j) => j.id as string)}::text[])`;
    expect(events!.n).toBe(3);
    const audit = await ctx.sql`select action, actor_type from audit_log where resource_id = ${res.body.data.id}`;
    expect(audit).toEqual([{ action: 'bulk_jobs', actor_type: 'user' }]);

    const member = await seedUser(ctx.sql, ws.tenant.id, { role: 'member' });
    const asMember = { Authorization: `Bearer ${member.token}` };
    expect((await ctx.http.post('/api/v1/settings/jobs/actions').set(asMember).send({ action: 'stop' })).status).toBe(403);
    const read = await ctx.http.get(`/api/v1/settings/bulk-actions/${res.body.data.id}`).set(asMember);
    expect(read.status).toBe(200);
    expect(read.body.data.id).toBe(res.body.data.id);
  });

  it('retries failed jobs by filter once, and refuses another workspace’s process as a filter', async () => {
    const p = await ws.process();
    const m = (await ws.machine()).row;
    const failed = await seedJob(ctx.sql, ws.tenant.id, { process_id: p.id, machine_id: m.id, status: 'failed', input_data: { order: 7 } });
    const res = await ctx.http.post('/api/v1/settings/jobs/actions').set(admin()).send({ action: 'retry', filter: { input_data: { order: 7 } } });
    expect(res.body.data).toMatchObject({ status: 'completed', total: 1, changed: 1 });
    const [retry] = await ctx.sql`select status, input_data, retry_count from jobs where parent_job_id = ${failed.id}`;
    expect(retry).toMatchObject({ status: 'pending', input_data: { order: 7 }, retry_count: 1 });
    const again = await ctx.http.post('/api/v1/settings/jobs/actions').set(admin()).send({ action: 'retry', ids: [failed.id] });
    expect(again.body.data).toMatchObject({ total: 0, changed: 0, status: 'completed' });

    const other = await seedWorkspace(ctx.sql);
    const theirs = await other.process();
    const bad = await ctx.http.post('/api/v1/settings/jobs/actions').set(admin()).send({ action: 'stop', filter: { process_id: theirs.id } });
    expect(bad.status).toBe(422);
    expect(bad.body.error.details[0]).toMatchObject({ message: 'no es un proceso de este espacio de trabajo' });
  });

  it('acts on a queue of the workspace by id; another workspace’s queue is 404 before the body is read', async () => {
    const q = await ws.queue();
    await items(q, 2, 'dead_letter');
    const res = await ctx.http.post(`/api/v1/settings/queues/${q.id}/items/actions`).set(admin())
      .send({ action: 'postpone', postpone: '2030-01-01T00:00:00Z' });
    expect(res.body.data).toMatchObject({ status: 'completed', changed: 2 });
    const rows = await ctx.sql`select postpone from queue_items where queue_id = ${q.id}`;
    expect(rows.every((r) => (r.postpone as Date).toISOString() === '2030-01-01T00:00:00.000Z')).toBe(true);
    const other = await seedWorkspace(ctx.sql);
    const theirs = await other.queue();
    const res404 = await ctx.http.post(`/api/v1/settings/queues/${theirs.id}/items/actions`).set(admin()).send({ action: 'nonsense' });
    expect(res404.status).toBe(404);
  });
});

describe('Idempotency-Key', () => {
  it('a repeated ask under the same key answers the first action again instead of recording a second', async () => {
    const q = await ws.queue();
    await items(q, 3, 'dead_letter');
    const headers = { ...key(), 'Idempotency-Key': `bulk-${randomUUID()}` };
    const first = await act(q.name, { action: 'redrive' }, headers);
    const again = await act(q.name, { action: 'redrive' }, headers);
    expect(again.status).toBe(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body.data).toEqual(first.body.data);
    const [n] = await ctx.sql`select count(*)::int as n from bulk_actions where queue_id = ${q.id}`;
    expect(n!.n).toBe(1);
    // the same key with another body is refused, as for every POST that takes one
    const other = await act(q.name, { action: 'delete' }, headers);
    expect(other.status).toBe(422);
  });
});

describe('dates Postgres cannot store', () => {
  it('year 0000 in a filter or a postponement is a 422, never a 500 or an action that cannot end', async () => {
    const q = await ws.queue();
    await items(q, 1, 'dead_letter');
    const bad = [
      { action: 'delete', filter: { created_after: '0000-01-01T00:00:00Z' } },
      { action: 'delete', filter: { created_before: '0000-06-01T00:00:00Z' }, dry_run: true },
      { action: 'postpone', postpone: '0000-01-01T00:00:00Z' },
    ];
    for (const body of bad) {
      const res = await act(q.name, body);
      expect(res.status).toBe(422);
      expect(res.body.error.details[0].message).toBe('la fecha está fuera del rango admitido (años 0001 a 9999)');
    }
    const jobs = await ctx.http.post('/api/v1/settings/jobs/actions').set(admin()).send({ action: 'stop', filter: { created_after: '0000-01-01T00:00:00Z' } });
    expect(jobs.status).toBe(422);
    const [n] = await ctx.sql`select count(*)::int as n from bulk_actions where queue_id = ${q.id}`;
    expect(n!.n).toBe(0);
  });
});

describe('retrying jobs by hand', () => {
  it('leaves a queue’s consumer runs alone and counts each retry against the monthly quota', async () => {
    const other = await seedWorkspace(ctx.sql);
    await ctx.sql`update tenants set monthly_quota = 1 where id = ${other.tenant.id}`;
    const token = other.adminToken;
    const p = await other.process();
    const m = (await other.machine()).row;
    const consumer = await seedJob(ctx.sql, other.tenant.id, { process_id: p.id, machine_id: m.id, status: 'failed', source: 'queue' });
    const a = await seedJob(ctx.sql, other.tenant.id, { process_id: p.id, machine_id: m.id, status: 'failed' });
    const b = await seedJob(ctx.sql, other.tenant.id, { process_id: p.id, machine_id: m.id, status: 'failed' });
    const res = await ctx.http.post('/api/v1/settings/jobs/actions').set({ Authorization: `Bearer ${token}` }).send({ action: 'retry' });
    expect(res.body.data).toMatchObject({ status: 'completed', total: 2, done: 2, changed: 1 });
    const children = await ctx.sql`select parent_job_id from jobs where parent_job_id is not null and tenant_id = ${other.tenant.id}`;
    expect(children).toHaveLength(1);
    expect([a.id, b.id]).toContain(children[0]!.parent_job_id);
    expect(children[0]!.parent_job_id).not.toBe(consumer.id);
    const [tenant] = await ctx.sql`select quota_used from tenants where id = ${other.tenant.id}`;
    expect(tenant!.quota_used).toBe(1);
  });
});
