import type { Scope } from '@svc/core';
import { noopDispatch, type DispatchPort } from '@svc/core/internals';
import { seedApiKey, seedQueue, seedTenant } from '@svc/testing';
import { createApiTestContext, type ApiTestContext } from '@svc/testing/api';

/** Shared set-up of the queue-item test files: two tenants, each with a queue. */
export interface QueueWorld {
  tenantId: string;
  queue: { id: string; name: string };
  otherTenantId: string;
  otherQueue: { id: string; name: string };
  inactiveQueue: { id: string; name: string };
  /** A fresh key of the first tenant (rate limits count per key, so most tests take their own). */
  key(scopes?: Scope[]): Promise<string>;
  otherKey(scopes?: Scope[]): Promise<string>;
}

export async function queueWorld(t: ApiTestContext): Promise<QueueWorld> {
  const tenant = await seedTenant(t.sql);
  const other = await seedTenant(t.sql);
  const queue = await seedQueue(t.sql, tenant.id);
  const otherQueue = await seedQueue(t.sql, other.id);
  const inactiveQueue = await seedQueue(t.sql, tenant.id);
  await t.sql`update queues set is_active = false where id = ${inactiveQueue.id}`;
  return {
    tenantId: tenant.id,
    queue: { id: queue.id, name: queue.name },
    otherTenantId: other.id,
    otherQueue: { id: otherQueue.id, name: otherQueue.name },
    inactiveQueue: { id: inactiveQueue.id, name: inactiveQueue.name },
    key: async (scopes) => (await seedApiKey(t.sql, tenant.id, scopes ? { scopes } : {})).key,
    otherKey: async (scopes) => (await seedApiKey(t.sql, other.id, scopes ? { scopes } : {})).key,
  };
}

/**
 * The set-up of a file testing one POST route of a queue's items: a test context and a queue
 * world made once, the real dispatch port put back after each test (some tests put a recording
 * or failing one in its place), and `post` to the route of `pathOf(name)` with an optional key.
 */
export function postRouteSuite(pathOf: (name: string) => string) {
  const suite = {} as {
    t: ApiTestContext;
    w: QueueWorld;
    post(key: string | null, body: unknown, name?: string): ReturnType<ApiTestContext['http']['post']>;
  };
  let dispatch: DispatchPort;
  beforeAll(async () => {
    suite.t = await createApiTestContext();
    suite.w = await queueWorld(suite.t);
    dispatch = suite.t.deps.dispatch;
  });
  afterAll(() => suite.t.close());
  afterEach(() => {
    suite.t.deps.dispatch = dispatch;
  });
  suite.post = (key, body, name = suite.w.queue.name) => {
    const req = suite.t.http.post(pathOf(name));
    if (key !== null) req.set('X-API-Key', key);
    return req.send(body as object);
  };
  return suite;
}

export const itemsPath = (name: string) => `/api/v1/queues/by-name/${encodeURIComponent(name)}/items`;
export const bulkPath = (name: string) => `${itemsPath(name)}/bulk`;

/** The contract's 16 fields of a queue item, in order, then the kind of its last failure. */
export const QUEUE_ITEM_FIELDS = [
  'id', 'queue_id', 'status', 'priority', 'reference', 'deadline', 'postpone', 'data', 'result', 'retry_count',
  'error_message', 'processed_by', 'created_at', 'processed_at', 'reviewed_by', 'reviewed_at', 'exception_type',
];

export const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Every row of a queue straight from Postgres, oldest first. */
export async function itemsInDb(t: ApiTestContext, queueId: string) {
  return t.sql`select * from queue_item_records where queue_id = ${queueId} order by created_at, id`;
}

/** The exact counts by status, by count(*) — the reference the counters are checked against. */
export async function realCounts(t: ApiTestContext, queueId: string): Promise<Record<string, number>> {
  const rows = await t.sql<{ status: string; n: number }[]>`
    select status, count(*)::int as n from queue_items where queue_id = ${queueId} group by status`;
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

/** The trigger-maintained counters summed over shards, zero statuses left out. */
export async function counterCounts(t: ApiTestContext, queueId: string): Promise<Record<string, number>> {
  const rows = await t.sql<{ status: string; n: number }[]>`
    select status, sum(n)::int as n from queue_item_counts where queue_id = ${queueId} group by status having sum(n) <> 0`;
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

/** A DispatchPort that records queueItemsReady nudges (and what Postgres held at that moment). */
export function recordingDispatch(t: ApiTestContext): { port: DispatchPort; nudges: Array<{ queueId: string; rowsAtNudge: number }> } {
  const nudges: Array<{ queueId: string; rowsAtNudge: number }> = [];
  const port: DispatchPort = {
    ...noopDispatch,
    queueItemsReady: async (queue) => {
      // a different connection than the request's: only committed rows are visible
      const [row] = await t.sql<{ n: number }[]>`select count(*)::int as n from queue_items where queue_id = ${queue.id}`;
      nudges.push({ queueId: queue.id, rowsAtNudge: row!.n });
    },
  };
  return { port, nudges };
}

/** The error envelope minus the per-request id, for comparing two error answers. */
export function withoutRequestId(body: { error?: Record<string, unknown> }) {
  const { request_id: _ignored, ...error } = body.error ?? {};
  return { ...body, error };
}
