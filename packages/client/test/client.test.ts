import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApiError, createClient, newIdempotencyKey, TimeoutError, type ClientOptions } from '@svc/client';
import { seedQueue, seedUser, seedWorkspace } from '@svc/testing';
import { createApiTestContext, type ApiTestContext } from '@svc/testing/api';

/**
 * @svc/client against a real API server (Postgres, Redis): typed calls answer their data, error
 * answers become ApiError with the request id, repeatable calls are retried (honouring
 * Retry-After) and a retried POST with its generated Idempotency-Key adds once, lists iterate
 * across pages and cursors, and each call has a timeout and an AbortSignal. Faults are injected
 * in the transport (`fetch`), the server is real.
 */
describe('@svc/client', () => {
  let t: ApiTestContext;
  let server: http.Server;
  let baseUrl: string;
  let ws: Awaited<ReturnType<typeof seedWorkspace>>;

  beforeAll(async () => {
    t = await createApiTestContext();
    server = http.createServer(t.app.callback());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    ws = await seedWorkspace(t.sql);
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    await t.close();
  });

  /** A transport that records each try and may answer or fail some tries itself before the server sees them. */
  function faultyFetch(fault: (n: number, request: Request) => Response | Error | 'lose-answer' | null) {
    const tries: Array<{ at: number; method: string; url: string; idempotencyKey: string | null }> = [];
    const fetchFn = async (request: Request): Promise<Response> => {
      const n = tries.length;
      tries.push({ at: Date.now(), method: request.method, url: request.url, idempotencyKey: request.headers.get('idempotency-key') });
      const f = fault(n, request);
      if (f instanceof Error) throw f;
      if (f instanceof Response) return f;
      const res = await fetch(request);
      // the server did the work; its answer is lost on the way back
      if (f === 'lose-answer') throw new TypeError('fetch failed: socket hang up');
      return res;
    };
    return { tries, fetch: fetchFn };
  }
  const client = (options: Partial<ClientOptions> = {}) => createClient({ baseUrl, apiKey: ws.key, ...options });

  it('calls operations by name with typed parameters and answers their data', async () => {
    const queue = await ws.queue();
    const c = client();
    const added = await c.call('addQueueItem', { path: { name: queue.name }, body: { data: { customer: 'ACME' }, reference: 'r-1', priority: 5 } });
    expect(added).toMatchObject({ queue_id: queue.id, status: 'new', priority: 5, reference: 'r-1', data: { customer: 'ACME' } });
    const bulk = await c.call('addQueueItems', { path: { name: queue.name }, body: { items: [{ n: 1 }, { n: 2 }] } });
    expect(bulk).toEqual({ added: 2 });
    const page = await c.request('listQueueItems', { path: { name: queue.name }, query: { data: JSON.stringify({ customer: 'ACME' }) } });
    expect(page.data.map((i) => i.id)).toEqual([added.id]);
    expect(page.meta).toEqual({ page: 1, limit: 20, total: 1, pages: 1 });
  });

  it('throws an ApiError with the code, the Spanish message, the details and the request id', async () => {
    const c = client();
    const missing = await c.call('addQueueItem', { path: { name: 'no-such-queue' }, body: { data: {} } }).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(ApiError);
    expect(missing).toMatchObject({ status: 404, code: 'NOT_FOUND', requestId: expect.any(String) });
    expect((missing as ApiError).message).toMatch(/cola/i);
    // the parsed answer stays on the error, for a caller that reads the envelope its own way (the console)
    expect((missing as ApiError).body).toMatchObject({ success: false, error: { code: 'NOT_FOUND', message: (missing as ApiError).message } });
    const queue = await ws.queue();
    const bad = (await c.call('addQueueItem', { path: { name: queue.name }, body: { data: 'x' as never } }).catch((e: unknown) => e)) as ApiError;
    expect([bad.status, bad.code]).toEqual([422, 'VALIDATION_ERROR']);
    expect(bad.details).toEqual(expect.arrayContaining([expect.objectContaining({ field: expect.stringMatching(/^body → data/) })]));
    // a key the platform does not know
    const stranger = await createClient({ baseUrl, apiKey: 'svc_ak_nope' }).call('listProcesses').catch((e: unknown) => e);
    expect(stranger).toMatchObject({ status: 401, code: 'UNAUTHORIZED' });
  });

  it('retries a POST whose answer was lost with the same generated Idempotency-Key: the item is added once', async () => {
    const queue = await ws.queue();
    const f = faultyFetch((n) => (n === 0 ? 'lose-answer' : null));
    const added = await client({ fetch: f.fetch }).call('addQueueItem', { path: { name: queue.name }, body: { data: { once: true } } });
    expect(f.tries).toHaveLength(2);
    expect(f.tries[0]!.idempotencyKey).toMatch(/^[0-9a-f-]{36}$/);
    expect(f.tries[1]!.idempotencyKey).toBe(f.tries[0]!.idempotencyKey);
    const [{ n }] = await t.sql`select count(*)::int as n from queue_items where queue_id = ${queue.id}`;
    expect(n).toBe(1);
    expect(added.data).toEqual({ once: true });
  });

  it('does not send again a POST that takes no Idempotency-Key when its answer is lost or it answers 503', async () => {
    const token = (await seedUser(t.sql, ws.tenant.id, { role: 'admin' })).token;
    const lost = faultyFetch(() => 'lose-answer');
    const err = await createClient({ baseUrl, token, fetch: lost.fetch }).call('createFolder', { body: { name: `f-${Date.now()}` } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TypeError);
    expect(lost.tries).toHaveLength(1);
    const unavailable = faultyFetch(() => new Response(JSON.stringify({ success: false, error: { code: 'INTERNAL_ERROR', message: 'x' } }), { status: 503 }));
    const e503 = await createClient({ baseUrl, token, fetch: unavailable.fetch }).call('createFolder', { body: { name: 'g' } }).catch((e: unknown) => e);
    expect([e503 instanceof ApiError && e503.status, unavailable.tries.length]).toEqual([503, 1]);
  });

  it('retries 429 after the Retry-After the server gave, and 5xx of a read, up to its retries', async () => {
    const limited = faultyFetch((n) => (n === 0 ? new Response(JSON.stringify({ success: false, error: { code: 'RATE_LIMIT_EXCEEDED', message: 'x' } }), {
      status: 429, headers: { 'Retry-After': '1', 'Content-Type': 'application/json' },
    }) : null));
    const processes = await client({ fetch: limited.fetch }).call('listProcesses');
    expect(Array.isArray(processes)).toBe(true);
    expect(limited.tries).toHaveLength(2);
    expect(limited.tries[1]!.at - limited.tries[0]!.at).toBeGreaterThanOrEqual(1000);

    const failing = faultyFetch(() => new Response('<html>bad gateway</html>', { status: 502 }));
    const err = (await client({ fetch: failing.fetch, retries: 2, maxRetryDelayMs: 10 }).call('listProcesses').catch((e: unknown) => e)) as ApiError;
    expect([err.status, err.code, failing.tries.length]).toEqual([502, 'HTTP_ERROR', 3]);
    expect(err.body).toBe('<html>bad gateway</html>');
  });

  it('honours a Retry-After given as an HTTP date, and reads both forms onto the ApiError', async () => {
    const limitedUntil = (retryAfter: string) => new Response(JSON.stringify({ success: false, error: { code: 'RATE_LIMIT_EXCEEDED', message: 'x' } }), {
      status: 429, headers: { 'Retry-After': retryAfter, 'Content-Type': 'application/json' },
    });
    // an IMF-fixdate 2 s ahead (whole seconds: at least 1 s from now)
    const dated = faultyFetch((n) => (n === 0 ? limitedUntil(new Date(Date.now() + 2000).toUTCString()) : null));
    await client({ fetch: dated.fetch }).call('listProcesses');
    expect(dated.tries).toHaveLength(2);
    expect(dated.tries[1]!.at - dated.tries[0]!.at).toBeGreaterThanOrEqual(1000);

    const errorOf = async (retryAfter: string) =>
      ((await client({ fetch: faultyFetch(() => limitedUntil(retryAfter)).fetch, retries: 0 }).call('listProcesses').catch((e: unknown) => e)) as ApiError)
        .retryAfterSeconds;
    const inAMinute = await errorOf(new Date(Date.now() + 60_000).toUTCString());
    expect(inAMinute).toBeGreaterThanOrEqual(59);
    expect(inAMinute).toBeLessThanOrEqual(60);
    // the obsolete forms HTTP still lets a server send (RFC 9110, 5.6.7)
    const at = new Date(Math.ceil(Date.now() / 1000) * 1000 + 30_000);
    const [day, date, month, year, time] = at.toUTCString().split(' ') as [string, string, string, string, string];
    const rfc850 = `${({ Sun: 'Sunday', Mon: 'Monday', Tue: 'Tuesday', Wed: 'Wednesday', Thu: 'Thursday', Fri: 'Friday', Sat: 'Saturday' } as Record<string, string>)[day.slice(0, 3)]}, ${date}-${month}-${year.slice(2)} ${time} GMT`;
    const asctime = `${day.slice(0, 3)} ${month} ${date.replace(/^0/, ' ')} ${time} ${year}`;
    for (const form of [rfc850, asctime]) {
      const seconds = await errorOf(form);
      expect([form, seconds! >= 29 && seconds! <= 31]).toEqual([form, true]);
    }
    expect(await errorOf('5')).toBe(5);
    // a date already past: no wait; what is neither form: as if absent
    expect(await errorOf('Thu, 01 Jan 1970 00:00:00 GMT')).toBe(0);
    for (const junk of ['soon', '1.5', '-1', '2026-01-01T00:00:00Z', 'Tue, 31 Feb 2026 00:00:00 GMT', 'Sun, 06 Nov 1994 08:49:37 UTC']) expect([junk, await errorOf(junk)]).toEqual([junk, null]);
  });

  it('iterates every element of a list, page after page, and of a cursor-paged list', async () => {
    const queue = (await seedQueue(t.sql, ws.tenant.id)) as { id: string; name: string };
    const c = client();
    await c.call('addQueueItems', { path: { name: queue.name }, body: { items: Array.from({ length: 5 }, (_, i) => ({ i })) } });
    const f = faultyFetch(() => null);
    const seen: unknown[] = [];
    for await (const item of client({ fetch: f.fetch }).list('listQueueItems', { path: { name: queue.name }, query: { limit: 2 } })) seen.push(item.data);
    expect(seen).toEqual([{ i: 4 }, { i: 3 }, { i: 2 }, { i: 1 }, { i: 0 }]);
    expect(f.tries.map((x) => new URL(x.url).searchParams.get('page'))).toEqual([null, '2', '3']);

    const admin = { token: (await seedUser(t.sql, ws.tenant.id, { role: 'admin' })).token };
    for (let i = 0; i < 3; i++) await createClient({ baseUrl, token: admin.token }).call('createFolder', { body: { name: `carpeta-${i}-${Date.now()}` } });
    const audit: string[] = [];
    const cursors = faultyFetch(() => null);
    const adminTraced = createClient({ baseUrl, token: admin.token, fetch: cursors.fetch });
    for await (const row of adminTraced.list('readAuditLog', { query: { limit: 1, resource_type: 'folder' } })) audit.push(String(row.resource_type));
    const [{ n }] = await t.sql`select count(*)::int as n from audit_log where tenant_id = ${ws.tenant.id} and resource_type = 'folder'`;
    expect(n).toBeGreaterThanOrEqual(3);
    expect(audit).toEqual(Array(n).fill('folder'));
    // one page of one row a request, the next asked with the cursor the last one gave
    expect(cursors.tries.slice(1).every((x) => new URL(x.url).searchParams.get('cursor'))).toBe(true);
  });

  it('gives up a try after its timeout (retrying a read), and stops at once when its signal aborts', async () => {
    // a server that never answers: each try ends only when its signal aborts
    const tries: Request[] = [];
    const never = async (request: Request): Promise<Response> => {
      tries.push(request);
      return new Promise((_resolve, reject) => request.signal.addEventListener('abort', () => reject(request.signal.reason), { once: true }));
    };
    const timedOut = await client({ fetch: never, timeoutMs: 50, retries: 1, maxRetryDelayMs: 10 }).call('listProcesses').catch((e: unknown) => e);
    expect(timedOut).toBeInstanceOf(TimeoutError);
    expect(tries).toHaveLength(2);

    tries.length = 0;
    const ctrl = new AbortController();
    const pending = client({ fetch: never, timeoutMs: 60_000 }).call('listProcesses', { signal: ctrl.signal }).catch((e: unknown) => e);
    await new Promise((r) => setTimeout(r, 20));
    ctrl.abort(new Error('ya no hace falta'));
    expect(await pending).toMatchObject({ message: 'ya no hace falta' });
    expect(tries).toHaveLength(1);
  });

  it('authenticates with a user\'s access token for the console\'s operations', async () => {
    const user = await seedUser(t.sql, ws.tenant.id, { role: 'member' });
    const session = await createClient({ baseUrl, token: user.token }).call('getSession');
    expect(session).toMatchObject({ email: user.user.email, role: 'member', token: { prefix: expect.stringMatching(/^svc_at_/) } });
    const denied = await createClient({ baseUrl, token: user.token }).call('createFolder', { body: { name: 'no' } }).catch((e: unknown) => e);
    expect(denied).toMatchObject({ status: 403, code: 'FORBIDDEN' });
  });
});

describe('newIdempotencyKey', () => {
  it('makes version-4 UUIDs without crypto.randomUUID (a browser page over plain HTTP)', () => {
    const original = globalThis.crypto.randomUUID;
    const keys = new Set<string>();
    try {
      Object.defineProperty(globalThis.crypto, 'randomUUID', { value: undefined, configurable: true });
      for (let i = 0; i < 100; i++) keys.add(newIdempotencyKey());
    } finally {
      Object.defineProperty(globalThis.crypto, 'randomUUID', { value: original, configurable: true });
    }
    expect(keys.size).toBe(100);
    for (const k of keys) expect(k).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });
});
