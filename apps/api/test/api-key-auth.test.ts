import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { API_KEY_PREFIX, clientIp, createEngine, createLogger, type Sql } from '@svc/core';
import { issueSecret, sha256, touchApiKeys } from '@svc/core/internals';
import { killSubscriberNamed, seedApiKey, seedTenant, seedUser, startApiProcesses, type ApiProcess } from '@svc/testing';
import { createApp } from '@svc/api';
import { createApiKeyStore } from '../src/auth/api-key-store';
import { createApiTestContext, type ApiTestContext } from '@svc/testing/api';

/** The engine the key store reads through (its `auth` commands), over `sql`. */
const engineOn = (sql: Sql) => createEngine({ sql, logger: createLogger({ service: 'api-test', level: 'error' }) });
const MISSING = '00000000-0000-4000-8000-000000000000';
const past = () => new Date(Date.now() - 60_000);

/**
 * The cache's expiry and refresh-ahead read Date.now(): the tests of those windows move that clock
 * themselves (everything else, timers included, stays real), so a slow host cannot stretch a
 * window past its end.
 */
function withOwnClock(): { at: (ms: number) => void; restore: () => void } {
  const start = Date.now();
  jest.useFakeTimers({
    now: start,
    doNotFake: ['hrtime', 'nextTick', 'performance', 'queueMicrotask', 'setImmediate', 'clearImmediate', 'setInterval', 'clearInterval', 'setTimeout', 'clearTimeout'],
  });
  return { at: (ms) => jest.setSystemTime(start + ms), restore: () => jest.useRealTimers() };
}
const realPause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls until `ok`; the deadline is a liveness bound for a loaded host, it returns as soon as `ok` holds. */
async function eventually<T>(read: () => Promise<T>, ok: (v: T) => boolean, what: string, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await read();
    if (ok(v)) return v;
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('X-API-Key authentication', () => {
  let t: ApiTestContext;
  let tenant: string;
  beforeAll(async () => {
    t = await createApiTestContext();
    tenant = (await seedTenant(t.sql)).id;
  });
  afterAll(() => t.close());

  const processes = (key?: string) => {
    const req = t.http.get('/api/v1/processes/list');
    return key === undefined ? req : req.set('X-API-Key', key);
  };

  describe('failures, in the contract order and words', () => {
    it('answers 401 Credenciales inválidas without a key, with an unknown one and with a malformed one', async () => {
      const unknown = issueSecret(API_KEY_PREFIX).value;
      for (const key of [undefined, '', unknown, 'svc_at_an-access-token', 'x'.repeat(5000), `${API_KEY_PREFIX}${'a'.repeat(300)}`]) {
        const res = await processes(key);
        expect(res.status).toBe(401);
        expect(res.body.error).toMatchObject({ code: 'UNAUTHORIZED', message: 'Credenciales inválidas' });
      }
    });

    it('rejects a revoked key with 401 Credenciales inválidas, even when it is also expired', async () => {
      const { key } = await seedApiKey(t.sql, tenant, { is_active: false });
      expect((await processes(key)).body.error).toMatchObject({ code: 'UNAUTHORIZED', message: 'Credenciales inválidas' });
      const both = await seedApiKey(t.sql, tenant, { is_active: false, expires_at: past() });
      const res = await processes(both.key);
      expect(res.status).toBe(401);
      expect(res.body.error.message).toBe('Credenciales inválidas');
    });

    it('rejects an expired key with 401 API key expirada, before its IP or scope are looked at', async () => {
      const { key } = await seedApiKey(t.sql, tenant, { expires_at: past() });
      const res = await processes(key);
      expect(res.status).toBe(401);
      expect(res.body.error).toMatchObject({ code: 'UNAUTHORIZED', message: 'API key expirada' });
      const worse = await seedApiKey(t.sql, tenant, { expires_at: past(), allowed_ips: ['192.0.2.1'], scopes: ['jobs:read'] });
      const res2 = await processes(worse.key);
      expect(res2.status).toBe(401);
      expect(res2.body.error.message).toBe('API key expirada');
    });

    it('accepts a key whose expiry is still ahead', async () => {
      const { key } = await seedApiKey(t.sql, tenant, { expires_at: new Date(Date.now() + 3_600_000) });
      expect((await processes(key)).status).toBe(200);
    });

    it('answers 403 IP no autorizada before a missing scope', async () => {
      const { key } = await seedApiKey(t.sql, tenant, { allowed_ips: ['192.0.2.1'], scopes: ['jobs:read'] });
      const res = await processes(key);
      expect(res.status).toBe(403);
      expect(res.body.error).toMatchObject({ code: 'FORBIDDEN', message: 'IP no autorizada' });
    });

    it('answers 403 for a missing scope, naming it', async () => {
      const { key } = await seedApiKey(t.sql, tenant, { scopes: ['jobs:read', 'queues:read'] });
      const res = await processes(key);
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('FORBIDDEN');
      expect(res.body.error.message).toContain('processes:read');
      expect(res.body.error.details).toEqual({ required_scope: 'processes:read' });
    });

    it('is fail-closed: a key with no scopes reaches no scoped route', async () => {
      const { key } = await seedApiKey(t.sql, tenant, { scopes: [] });
      const calls = [
        t.http.get('/api/v1/processes/list'),
        t.http.get('/api/v1/machines/list'),
        t.http.get(`/api/v1/jobs/${MISSING}`),
        t.http.post(`/api/v1/jobs/${MISSING}/stop`),
        t.http.post('/api/v1/jobs/trigger').send({ process_id: MISSING }),
        t.http.get('/api/v1/assets/by-name/x'),
        t.http.get('/api/v1/queues/by-name/q/items'),
        t.http.post('/api/v1/queues/by-name/q/items').send({ data: {} }),
        t.http.post('/api/v1/queues/by-name/q/items/bulk').send({ items: [{}] }),
      ];
      for (const call of calls) {
        const res = await call.set('X-API-Key', key);
        expect([res.status, res.body.error.code]).toEqual([403, 'FORBIDDEN']);
      }
    });

    it('lets the webhook trigger through with any valid key (no scope), still behind allowed_ips', async () => {
      const open = await seedApiKey(t.sql, tenant, { scopes: [] });
      const res = await t.http.post(`/api/v1/webhooks/trigger/${MISSING}`).set('X-API-Key', open.key).send({ machine_id: MISSING });
      expect(res.status).toBe(404);
      const fenced = await seedApiKey(t.sql, tenant, { scopes: [], allowed_ips: ['192.0.2.1'] });
      const denied = await t.http.post(`/api/v1/webhooks/trigger/${MISSING}`).set('X-API-Key', fenced.key).send({ machine_id: MISSING });
      expect(denied.status).toBe(403);
      expect(denied.body.error.message).toBe('IP no autorizada');
    });
  });

  describe('client IP and allowed_ips', () => {
    it('uses the socket address and ignores X-Forwarded-For when no proxy is trusted', async () => {
      const local = await seedApiKey(t.sql, tenant, { allowed_ips: ['127.0.0.1'] });
      expect((await processes(local.key)).status).toBe(200); // the peer arrives as ::ffff:127.0.0.1 on a dual-stack socket
      expect((await processes(local.key).set('X-Forwarded-For', '203.0.113.9')).status).toBe(200);
      const remote = await seedApiKey(t.sql, tenant, { allowed_ips: ['203.0.113.9'] });
      const spoofed = await processes(remote.key).set('X-Forwarded-For', '203.0.113.9');
      expect(spoofed.status).toBe(403);
      expect(spoofed.body.error.message).toBe('IP no autorizada');
      const loopRange = await seedApiKey(t.sql, tenant, { allowed_ips: ['127.0.0.0/8'] });
      expect((await processes(loopRange.key)).status).toBe(200);
    });

    it('matches a client connected over IPv6 against IPv6 entries', async () => {
      const server = http.createServer(t.app.callback());
      await new Promise<void>((resolve) => server.listen(0, '::1', resolve));
      const { port } = server.address() as AddressInfo;
      const get = (key: string) => fetch(`http://[::1]:${port}/api/v1/processes/list`, { headers: { 'X-API-Key': key } });
      try {
        const v6 = await seedApiKey(t.sql, tenant, { allowed_ips: ['::1'] });
        expect((await get(v6.key)).status).toBe(200);
        const v6range = await seedApiKey(t.sql, tenant, { allowed_ips: ['::/127'] });
        expect((await get(v6range.key)).status).toBe(200);
        const v4only = await seedApiKey(t.sql, tenant, { allowed_ips: ['127.0.0.1'] });
        const res = await get(v4only.key);
        expect(res.status).toBe(403);
        expect(((await res.json()) as { error: { message: string } }).error.message).toBe('IP no autorizada');
      } finally {
        await new Promise((r) => server.close(r));
      }
    });

    it('denies every address when allowed_ips is an empty list (only possible through SQL)', async () => {
      const { key } = await seedApiKey(t.sql, tenant, { allowed_ips: [] });
      expect((await processes(key)).status).toBe(403);
    });

    describe('behind one trusted proxy', () => {
      let p: ApiTestContext;
      let ptenant: string;
      beforeAll(async () => {
        p = await createApiTestContext({ trustedProxyCount: 1 });
        ptenant = (await seedTenant(p.sql)).id;
      });
      afterAll(() => p.close());

      const via = async (allowed: string[], forwardedFor: string) => {
        const { key } = await seedApiKey(p.sql, ptenant, { allowed_ips: allowed });
        const res = await p.http.get('/api/v1/processes/list').set('X-API-Key', key).set('X-Forwarded-For', forwardedFor);
        return res.status;
      };

      it.each<[string, string[], string, number]>([
        ['an exact IPv4 address', ['203.0.113.7'], '203.0.113.7', 200],
        ['another IPv4 address', ['203.0.113.7'], '203.0.113.8', 403],
        ['an IPv4 CIDR range, inside', ['10.0.0.0/8'], '10.255.1.2', 200],
        ['an IPv4 CIDR range, outside', ['10.0.0.0/8'], '11.0.0.1', 403],
        ['a /32 range', ['198.51.100.4/32'], '198.51.100.4', 200],
        ['one of several entries', ['192.0.2.1', '2001:db8::/32', '10.0.0.0/8'], '10.0.0.9', 200],
        ['an exact IPv6 address', ['2001:db8::1'], '2001:db8::1', 200],
        ['an IPv6 address written out in full', ['2001:db8::1'], '2001:0db8:0000:0000:0000:0000:0000:0001', 200],
        ['another IPv6 address', ['2001:db8::1'], '2001:db8::2', 403],
        ['an IPv6 CIDR range, inside', ['2001:db8::/32'], '2001:db8:ffff::1', 200],
        ['an IPv6 CIDR range, outside', ['2001:db8::/32'], '2001:db9::1', 403],
        ['an IPv4-mapped IPv6 client against an IPv4 range', ['10.0.0.0/8'], '::ffff:10.1.2.3', 200],
        ['an IPv4-mapped IPv6 client against an IPv4 address', ['192.0.2.1'], '::ffff:192.0.2.1', 200],
        ['an IPv4 client against an IPv4-mapped range', ['::ffff:10.0.0.0/104'], '10.1.2.3', 200],
        ['an IPv4 client outside an IPv4-mapped range', ['::ffff:10.0.0.0/104'], '11.1.2.3', 403],
        ['an IPv4 client against an IPv4-mapped address', ['::ffff:192.0.2.1'], '192.0.2.1', 200],
        ['an IPv6 client against an IPv4-only list', ['0.0.0.0/0'], '2001:db8::1', 403],
        ['any IPv6 client against ::/0', ['::/0'], '2001:db8::1', 200],
      ])('%s (allowed_ips %j, client %s) → %d', async (_case, allowed, ip, expected) => {
        expect(await via(allowed, ip)).toBe(expected);
      });

      it('takes the client from the right of X-Forwarded-For, so a forged left entry changes nothing', async () => {
        expect(await via(['203.0.113.7'], '198.51.100.1, 203.0.113.7')).toBe(200);
        expect(await via(['198.51.100.1'], '198.51.100.1, 203.0.113.7')).toBe(403);
      });

      it('falls back to the socket address when X-Forwarded-For is absent or unusable', async () => {
        const { key } = await seedApiKey(p.sql, ptenant, { allowed_ips: ['127.0.0.1'] });
        expect((await p.http.get('/api/v1/processes/list').set('X-API-Key', key)).status).toBe(200);
        expect((await p.http.get('/api/v1/processes/list').set('X-API-Key', key).set('X-Forwarded-For', 'garbage')).status).toBe(200);
      });
    });

    it('clientIp counts trusted proxies from the right of X-Forwarded-For', () => {
      expect(clientIp('::ffff:10.0.0.1', undefined, 0)).toBe('10.0.0.1');
      expect(clientIp('10.0.0.1', '203.0.113.7', 0)).toBe('10.0.0.1');
      expect(clientIp('10.0.0.1', '203.0.113.7', 1)).toBe('203.0.113.7');
      expect(clientIp('10.0.0.1', 'forged, 203.0.113.7', 1)).toBe('203.0.113.7');
      expect(clientIp('10.0.0.2', 'forged, 203.0.113.7, 10.0.0.1', 2)).toBe('203.0.113.7');
      expect(clientIp('10.0.0.2', '203.0.113.7 ,  10.0.0.1', 2)).toBe('203.0.113.7');
      expect(clientIp('10.0.0.2', '2001:db8::5, 10.0.0.1', 2)).toBe('2001:db8::5');
      expect(clientIp('10.0.0.2', '::ffff:203.0.113.7, 10.0.0.1', 2)).toBe('203.0.113.7');
      // fewer hops than proxies: all were written by our proxies, the leftmost is the client
      expect(clientIp('10.0.0.2', '203.0.113.7', 2)).toBe('203.0.113.7');
      // an unusable entry never lets a client-written value through
      expect(clientIp('10.0.0.2', '203.0.113.7, not-an-ip', 1)).toBe('10.0.0.2');
      expect(clientIp('10.0.0.2', '', 1)).toBe('10.0.0.2');
    });
  });

  describe('last_used_at', () => {
    it('is null until the first use, then shows in Postgres and in the list within about a second', async () => {
      const admin = (await seedUser(t.sql, tenant, { role: 'admin' })).token;
      const { row, key } = await seedApiKey(t.sql, tenant);
      expect(row.last_used_at).toBeNull();
      const before = Date.now();
      expect((await processes(key)).status).toBe(200);
      const [used] = await eventually(
        () => t.sql`select last_used_at from api_keys where id = ${row.id}`,
        (rows) => rows[0]!.last_used_at !== null,
        'last_used_at written',
      );
      expect(used!.last_used_at.getTime()).toBeGreaterThanOrEqual(before - 1000);
      const listed = await t.http.get('/api/v1/settings/api-keys?limit=100').set('Authorization', `Bearer ${admin}`);
      const rec = listed.body.data.find((k: { id: string }) => k.id === row.id);
      expect(rec.last_used_at).toBe(used!.last_used_at.toISOString());
    });

    it('moves forward on later uses', async () => {
      const { row, key } = await seedApiKey(t.sql, tenant);
      await processes(key);
      const [first] = await eventually(() => t.sql`select last_used_at from api_keys where id = ${row.id}`, (r) => r[0]!.last_used_at !== null, 'first use');
      await new Promise((r) => setTimeout(r, 20));
      await processes(key);
      await eventually(
        () => t.sql`select last_used_at from api_keys where id = ${row.id}`,
        (r) => r[0]!.last_used_at.getTime() > first!.last_used_at.getTime(),
        'second use',
      );
    });

    it('buffers uses in memory instead of writing Postgres per request, and flushes them on close', async () => {
      const store = createApiKeyStore({
        engine: engineOn(t.sql), redis: t.redis, channel: t.deps.keys.apiKeyInvalidations, logger: createLogger({ service: 'api-test', level: 'error' }),
        ttlMs: 30_000, flushMs: 60_000,
      });
      await store.start();
      const app = createApp({ ...t.deps, apiKeys: store });
      const server = http.createServer(app.callback());
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const { port } = server.address() as AddressInfo;
      const a = await seedApiKey(t.sql, tenant);
      const b = await seedApiKey(t.sql, tenant);
      const read = () => t.sql`select last_used_at from api_keys where id in ${t.sql([a.row.id, b.row.id])}`;
      try {
        for (let i = 0; i < 10; i++) {
          for (const k of [a, b]) {
            const res = await fetch(`http://127.0.0.1:${port}/api/v1/processes/list`, { headers: { 'X-API-Key': k.key } });
            expect(res.status).toBe(200);
          }
        }
        // every use was answered, so every touch ran: both keys wait in memory, none was written
        expect(store.pendingUses).toBe(2);
        expect((await read()).map((r) => r.last_used_at)).toEqual([null, null]);
      } finally {
        await new Promise((r) => server.close(r));
        await store.close();
      }
      for (const r of await read()) expect(r.last_used_at).toBeInstanceOf(Date);
    });

    it('writes a batch of uses in one statement that never moves a time backwards', async () => {
      const a = await seedApiKey(t.sql, tenant);
      const b = await seedApiKey(t.sql, tenant);
      const later = new Date('2030-01-02T00:00:00Z');
      const earlier = new Date('2030-01-01T00:00:00Z');
      expect(await touchApiKeys(t.sql, [{ id: a.row.id, at: later }, { id: b.row.id, at: earlier }])).toBe(2);
      expect(await touchApiKeys(t.sql, [{ id: a.row.id, at: earlier }, { id: b.row.id, at: later }])).toBe(1);
      const rows = await t.sql`select id, last_used_at from api_keys where id in ${t.sql([a.row.id, b.row.id])}`;
      for (const r of rows) expect(r.last_used_at.toISOString()).toBe(later.toISOString());
    });
  });

  describe('the per-process cache', () => {
    const quiet = createLogger({ service: 'api-test', level: 'error' });
    const storeOn = (ttlMs = 30_000) =>
      createApiKeyStore({ engine: engineOn(t.sql), redis: t.redis, channel: t.deps.keys.apiKeyInvalidations, logger: quiet, ttlMs, flushMs: 100 });

    it('remembers a miss, and forgets it when another process announces the hash', async () => {
      const mine = storeOn();
      const theirs = storeOn();
      await mine.start();
      try {
        const secret = issueSecret(API_KEY_PREFIX);
        expect(await mine.lookup(secret.hash)).toBeNull();
        const [row] = await t.sql`
          insert into api_keys (tenant_id, name, prefix, key_hash, scopes)
          values (${tenant}, 'late', ${secret.prefix}, ${secret.hash}, ${['jobs:read']}) returning id`;
        expect(await mine.lookup(secret.hash)).toBeNull(); // the miss is cached
        await theirs.invalidate({ id: row!.id, hashes: [secret.hash.toString('hex')] });
        const found = await eventually(() => mine.lookup(secret.hash), (r) => r !== null, 'negative entry dropped');
        expect(found!.id).toBe(row!.id);
      } finally {
        await mine.close();
        await theirs.close();
      }
    });

    it('answers peek from memory only: unknown until looked up, then the row or the cached miss, unknown again once invalidated', async () => {
      const mine = storeOn();
      await mine.start();
      try {
        const { row, key } = await seedApiKey(t.sql, tenant);
        const hex = sha256(key).toString('hex');
        const missing = issueSecret(API_KEY_PREFIX).hash.toString('hex');
        expect(mine.peek(hex)).toBeUndefined();
        expect(mine.peek(missing)).toBeUndefined();
        const looked = await mine.lookup(hex);
        expect(looked!.id).toBe(row.id);
        expect(await mine.lookup(missing)).toBeNull();
        expect(mine.peek(hex)).toBe(looked);
        expect(mine.peek(missing)).toBeNull();
        await mine.invalidate({ id: row.id, hashes: [] });
        expect(mine.peek(hex)).toBeUndefined();
      } finally {
        await mine.close();
      }
    });

    it('serves a hit from memory until the key is invalidated by id', async () => {
      const mine = storeOn();
      const theirs = storeOn();
      await mine.start();
      try {
        const { row, key } = await seedApiKey(t.sql, tenant, { scopes: ['jobs:read'] });
        const hash = sha256(key);
        expect((await mine.lookup(hash))!.scopes).toEqual(['jobs:read']);
        await t.sql`update api_keys set scopes = ${['jobs:write']} where id = ${row.id}`;
        expect((await mine.lookup(hash))!.scopes).toEqual(['jobs:read']);
        await theirs.invalidate({ id: row.id, hashes: [] });
        await eventually(() => mine.lookup(hash), (r) => r!.scopes[0] === 'jobs:write', 'entry dropped by id');
      } finally {
        await mine.close();
        await theirs.close();
      }
    });

    it('stops caching while its subscription is down and starts again, empty, once it is back', async () => {
      const name = `apikey-sub-${Date.now().toString(36)}`;
      const mine = createApiKeyStore({
        engine: engineOn(t.sql), redis: t.redis, channel: t.deps.keys.apiKeyInvalidations, logger: quiet, ttlMs: 30_000, flushMs: 100, subscriberName: name,
      });
      const theirs = storeOn();
      await mine.start();
      try {
        const { row, key } = await seedApiKey(t.sql, tenant, { scopes: ['jobs:read'] });
        const hash = sha256(key);
        expect((await mine.lookup(hash))!.scopes).toEqual(['jobs:read']);
        await t.sql`update api_keys set scopes = ${['jobs:write']} where id = ${row.id}`;
        expect((await mine.lookup(hash))!.scopes).toEqual(['jobs:read']); // cached
        expect(await killSubscriberNamed(t.redis, name)).toBeGreaterThanOrEqual(1);
        // the cached entry is gone with the connection (an invalidation may have been missed)
        await eventually(() => mine.lookup(hash), (r) => r!.scopes[0] === 'jobs:write', 'cache dropped on disconnect');
        // back and subscribed: entries are cached again, and invalidations reach it again
        await eventually(
          async () => {
            // cached when a change behind its back does not show
            const first = (await mine.lookup(hash))!.scopes[0];
            const next = first === 'jobs:stop' ? 'jobs:write' : 'jobs:stop';
            await t.sql`update api_keys set scopes = ${[next]} where id = ${row.id}`;
            return (await mine.lookup(hash))!.scopes[0] === first;
          },
          (cached) => cached,
          'caching again after reconnect',
        );
        await t.sql`update api_keys set scopes = ${['assets:read']} where id = ${row.id}`;
        await theirs.invalidate({ id: row.id, hashes: [] });
        await eventually(() => mine.lookup(hash), (r) => r!.scopes[0] === 'assets:read', 'invalidation heard after reconnect');
      } finally {
        await mine.close();
        await theirs.close();
      }
    });

    it('reads a key in use again before its entry expires, answering from memory all along', async () => {
      const clock = withOwnClock();
      const store = createApiKeyStore({
        engine: engineOn(t.sql), redis: t.redis, channel: t.deps.keys.apiKeyInvalidations, logger: quiet, ttlMs: 3_000, refreshAheadMs: 1_000, flushMs: 100,
      });
      await store.start();
      try {
        // each read of Postgres shows the next scope, changed behind the store's back (no announcement)
        const scopes = ['jobs:read', 'jobs:write', 'jobs:stop', 'processes:read'];
        const { row, key } = await seedApiKey(t.sql, tenant, { scopes: [scopes[0]!] });
        const hex = sha256(key).toString('hex');
        const first = await store.lookup(hex);
        expect(first!.id).toBe(row.id);
        let held = 0; // the scope the entry answers with
        let heldSince = 0; // the clock when it first answered so (its entry was made at most a step earlier)
        await t.sql`update api_keys set scopes = ${[scopes[1]!]} where id = ${row.id}`;
        const seen: Array<string | null> = [];
        // steady use, a look every 20 ms of the store's clock, over two TTLs
        for (let now = 20; now <= 7_000; now += 20) {
          clock.at(now);
          let answer = store.peek(hex);
          /*
           * An entry made at heldSince - 20 or later starts its read ahead by heldSince + 2,000 and
           * expires after heldSince + 2,980: past that point the clock waits for the read (real
           * time, however slow the host), as a key in use would keep answering from memory.
           */
          for (let waited = 0; answer?.scopes[0] === scopes[held] && now >= heldSince + 2_000 && waited < 1_000; waited++) {
            await realPause(20);
            answer = store.peek(hex);
          }
          seen.push(answer === undefined ? null : answer!.scopes[0]!);
          if (answer?.scopes[0] === scopes[held + 1]) {
            held++;
            heldSince = now;
            if (held + 1 < scopes.length) await t.sql`update api_keys set scopes = ${[scopes[held + 1]!]} where id = ${row.id}`;
          }
        }
        expect(seen).not.toContain(null); // never a miss: the busy key never waits for Postgres
        expect(seen[0]).toBe('jobs:read'); // the fresh entry answers from memory
        // read again before each expiry: every change shows, in order
        expect([...new Set(seen)]).toEqual(scopes.slice(0, held + 1));
        expect(held).toBeGreaterThanOrEqual(2);
      } finally {
        await store.close();
        clock.restore();
      }
    });

    it('lets an unused entry expire, and does not read a cached miss ahead', async () => {
      const clock = withOwnClock();
      const store = createApiKeyStore({
        engine: engineOn(t.sql), redis: t.redis, channel: t.deps.keys.apiKeyInvalidations, logger: quiet, ttlMs: 1_000, negativeTtlMs: 1_000, refreshAheadMs: 500, flushMs: 100,
      });
      await store.start();
      try {
        const { key } = await seedApiKey(t.sql, tenant);
        const hex = sha256(key).toString('hex');
        const missing = issueSecret(API_KEY_PREFIX).hash.toString('hex');
        await store.lookup(hex);
        expect(await store.lookup(missing)).toBeNull();
        clock.at(700); // inside both entries' refresh windows
        expect(store.peek(missing)).toBeNull();
        clock.at(1_200);
        expect(store.peek(missing)).toBeUndefined(); // expired, not renewed
        expect(store.peek(hex)).toBeUndefined(); // never used in its window: expired too
      } finally {
        await store.close();
        clock.restore();
      }
    });

    it('answers many concurrent look-ups of different keys, each its own row or null, in a few statements', async () => {
      let statements = 0;
      // the real client, counting the statements the store sends through it
      const counted = new Proxy(t.sql, {
        apply(target, self, args) {
          statements++;
          return Reflect.apply(target as never, self, args);
        },
      });
      const store = createApiKeyStore({ engine: engineOn(counted), redis: t.redis, channel: t.deps.keys.apiKeyInvalidations, logger: quiet, ttlMs: 30_000, flushMs: 100 });
      await store.start();
      try {
        const keys = await Promise.all(Array.from({ length: 120 }, (_, i) => seedApiKey(t.sql, tenant, { is_active: i % 3 !== 0 })));
        const asked = [
          ...keys.map((k) => ({ hex: sha256(k.key).toString('hex'), id: k.row.id as string | null })),
          ...Array.from({ length: 60 }, () => ({ hex: issueSecret(API_KEY_PREFIX).hash.toString('hex'), id: null })),
        ].sort(() => Math.random() - 0.5);
        asked.push(asked[0]!, asked[1]!); // the same hash twice at once
        const answers = await Promise.all(asked.map((a) => store.lookup(a.hex)));
        expect(answers.map((r) => r?.id ?? null)).toEqual(asked.map((a) => a.id));
        expect(statements).toBeGreaterThan(0);
        expect(statements).toBeLessThanOrEqual(3);
      } finally {
        await store.close();
      }
    });

    it('reads Postgres every time before start() and after close()', async () => {
      const store = storeOn();
      const { row, key } = await seedApiKey(t.sql, tenant, { scopes: ['jobs:read'] });
      const hash = sha256(key);
      expect((await store.lookup(hash))!.id).toBe(row.id);
      await t.sql`update api_keys set scopes = ${['jobs:stop']} where id = ${row.id}`;
      expect((await store.lookup(hash))!.scopes).toEqual(['jobs:stop']);
      await store.start();
      await store.close();
      await t.sql`update api_keys set scopes = ${['jobs:read']} where id = ${row.id}`;
      expect((await store.lookup(hash))!.scopes).toEqual(['jobs:read']);
    });
  });

  describe('two API processes', () => {
    let a: ApiProcess;
    let b: ApiProcess;
    let admin: string;
    beforeAll(async () => {
      [a, b] = (await startApiProcesses(2, t.childEnv)) as [ApiProcess, ApiProcess];
      admin = (await seedUser(t.sql, tenant, { role: 'admin' })).token;
    });
    afterAll(async () => {
      await Promise.all([a?.stop(), b?.stop()]);
    });

    const use = (p: ApiProcess, key: string) => fetch(`${p.url}/api/v1/processes/list`, { headers: { 'X-API-Key': key } }).then((r) => r.status);
    const manage = (p: ApiProcess, method: string, path: string, body?: object) =>
      fetch(`${p.url}/api/v1/settings/api-keys${path}`, {
        method,
        headers: { Authorization: `Bearer ${admin}`, 'Content-Type': 'application/json' },
        body: body ? JSON.stringify(body) : undefined,
      }).then(async (r) => ({ status: r.status, body: (await r.json()) as { data: { id: string; key: string } } }));
    const primeBoth = async (key: string) => {
      for (const p of [a, b, a, b]) expect(await use(p, key)).toBe(200);
    };

    it('each cache a key: a change made behind their back shows only once it is announced', async () => {
      const { row, key } = await seedApiKey(t.sql, tenant, { scopes: ['processes:read'] });
      await primeBoth(key);
      await t.sql`update api_keys set scopes = ${['jobs:read']} where id = ${row.id}`;
      expect(await use(b, key)).toBe(200);
      await t.deps.apiKeys.invalidate({ id: row.id, hashes: [] });
      await eventually(() => use(b, key), (s) => s === 403, 'B dropped the entry');
      await eventually(() => use(a, key), (s) => s === 403, 'A dropped the entry');
    });

    it('rejects a key revoked through one process at once on the other', async () => {
      const created = await manage(a, 'POST', '', { name: 'replicated', scopes: ['processes:read'] });
      expect(created.status).toBe(201);
      const { id, key } = created.body.data;
      await primeBoth(key);
      expect((await manage(a, 'DELETE', `/${id}`)).status).toBe(200);
      expect(await use(b, key)).toBe(401);
      expect(await use(a, key)).toBe(401);
    });

    it('rejects the old value of a key rotated through one process at once on the other, and accepts the new one', async () => {
      const { key: oldKey, row } = await seedApiKey(t.sql, tenant, { scopes: ['processes:read'] });
      await primeBoth(oldKey);
      const rotated = await manage(b, 'POST', `/${row.id}/rotate`);
      expect(rotated.status).toBe(200);
      expect(await use(a, oldKey)).toBe(401);
      expect(await use(b, oldKey)).toBe(401);
      expect(await use(a, rotated.body.data.key)).toBe(200);
      expect(await use(b, rotated.body.data.key)).toBe(200);
    });

    it('hears revocations made by any process sharing the Redis prefix', async () => {
      const { key, row } = await seedApiKey(t.sql, tenant, { scopes: ['processes:read'] });
      await primeBoth(key);
      const res = await t.http.delete(`/api/v1/settings/api-keys/${row.id}`).set('Authorization', `Bearer ${admin}`);
      expect(res.status).toBe(200);
      expect(await use(a, key)).toBe(401);
      expect(await use(b, key)).toBe(401);
    });

    it('records last_used_at for keys used on a child process', async () => {
      const { key, row } = await seedApiKey(t.sql, tenant, { scopes: ['processes:read'] });
      expect(await use(b, key)).toBe(200);
      await eventually(() => t.sql`select last_used_at from api_keys where id = ${row.id}`, (r) => r[0]!.last_used_at !== null, 'flushed by B', 2000);
    });
  });
});
