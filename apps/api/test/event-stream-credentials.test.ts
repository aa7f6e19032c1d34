import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp, buildDeps } from '@svc/api';
import { createLogger } from '@svc/core';
import { seedTenant, seedUser } from '@svc/testing';
import { createApiTestContext, type ApiTestContext } from '@svc/testing/api';

/**
 * An event stream ends when its credential does (logout, revocation, expiry, deactivation, loss of
 * the admin role), and concurrent streams are capped per user and per workspace across replicas.
 */

interface OpenedStream {
  status: number;
  /** Resolves once the server ended the stream. */
  ended: Promise<void>;
  body(): string;
  abort(): void;
}

async function listen(app: ReturnType<typeof createApp>): Promise<{ base: string; server: http.Server }> {
  const server = http.createServer(app.callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

async function openStream(base: string, token: string): Promise<OpenedStream> {
  const ac = new AbortController();
  const res = await fetch(`${base}/api/v1/settings/events/stream`, { headers: { Authorization: `Bearer ${token}` }, signal: ac.signal });
  let text = '';
  const decoder = new TextDecoder();
  const reader = res.body!.getReader();
  const ended = (async () => {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      text += decoder.decode(value, { stream: true });
    }
  })();
  ended.catch(() => undefined);
  // the stream's first comment is written once the stream is admitted and watched
  if (res.status === 200) while (!text.includes(': events')) await new Promise((r) => setTimeout(r, 10));
  return { status: res.status, ended, body: () => text, abort: () => ac.abort() };
}

/** Resolves true when `p` settles within `ms`, false otherwise. */
async function within(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  const done = p.then(() => true, () => true);
  try {
    return await Promise.race([done, late]);
  } finally {
    clearTimeout(timer);
  }
}

describe('event streams and their credentials', () => {
  let t: ApiTestContext;
  let base: string;
  let server: http.Server;
  let tenantId: string;

  beforeAll(async () => {
    t = await createApiTestContext({ eventStreamsPerUser: 50, eventStreamsPerWorkspace: 500 });
    ({ base, server } = await listen(t.app));
    tenantId = (await seedTenant(t.sql)).id;
  });
  afterAll(async () => {
    await t.deps.streams.close();
    await new Promise((r) => server.close(r));
    await t.close();
  });

  it('ends the stream when its token logs out, and the token no longer opens one', async () => {
    const { token } = await seedUser(t.sql, tenantId, { role: 'admin' });
    const s = await openStream(base, token);
    expect(s.status).toBe(200);
    const out = await fetch(`${base}/api/v1/auth/logout`, { method: 'POST', headers: { Authorization: `Bearer ${token}` } });
    expect(out.status).toBe(200);
    expect(await within(s.ended, 5000)).toBe(true);
    expect((await openStream(base, token)).status).toBe(401);
  });

  it('ends the stream when its token is revoked by an operator', async () => {
    const { token, tokenId } = await seedUser(t.sql, tenantId, { role: 'admin' });
    const s = await openStream(base, token);
    await t.deps.engine.users.revokeToken(tokenId);
    expect(await within(s.ended, 5000)).toBe(true);
  });

  it('ends the stream when its user is deactivated', async () => {
    const { token, user } = await seedUser(t.sql, tenantId, { role: 'admin' });
    const s = await openStream(base, token);
    await t.deps.engine.users.deactivate(user.id as string);
    expect(await within(s.ended, 5000)).toBe(true);
  });

  it('ends every stream of a user an admin deactivates through the API, and the user gets 401 after', async () => {
    const admin = await seedUser(t.sql, tenantId, { role: 'admin' });
    const leaver = await seedUser(t.sql, tenantId, { role: 'admin' });
    const own = await t.deps.engine.users.issueToken(leaver.user.id as string, 3600);
    const streams = [await openStream(base, leaver.token), await openStream(base, own.token)];
    expect(streams.map((s) => s.status)).toEqual([200, 200]);
    const res = await fetch(`${base}/api/v1/settings/users/${leaver.user.id as string}`, { method: 'DELETE', headers: { Authorization: `Bearer ${admin.token}` } });
    expect(res.status).toBe(200);
    for (const s of streams) expect(await within(s.ended, 5000)).toBe(true);
    expect((await openStream(base, own.token)).status).toBe(401);
  });

  it('ends the stream when its token expires', async () => {
    const { token, tokenId } = await seedUser(t.sql, tenantId, { role: 'admin' });
    const s = await openStream(base, token);
    await t.sql`update access_tokens set expires_at = now() where id = ${tokenId}`;
    expect(await within(s.ended, 5000)).toBe(true);
  });

  it('ends the stream when its user loses the admin role, and keeps the others open', async () => {
    const demoted = await seedUser(t.sql, tenantId, { role: 'admin' });
    const other = await seedUser(t.sql, tenantId, { role: 'admin' });
    const s = await openStream(base, demoted.token);
    const kept = await openStream(base, other.token);
    await t.sql`update users set role = 'member' where id = ${demoted.user.id as string}`;
    expect(await within(s.ended, 5000)).toBe(true);
    // the check that ended the demoted admin's stream looked at this one too, and kept it
    expect(t.deps.streams.size).toBe(1);
    kept.abort();
  });
});

describe('event stream caps', () => {
  let t: ApiTestContext;
  let replica2: ReturnType<typeof buildDeps>;
  let a: { base: string; server: http.Server };
  let b: { base: string; server: http.Server };

  beforeAll(async () => {
    t = await createApiTestContext({ eventStreamsPerUser: 2, eventStreamsPerWorkspace: 3 });
    // a second API replica on the same Postgres and Redis
    replica2 = buildDeps(t.config, { sql: t.sql, redis: t.redis, logger: createLogger({ service: 'api-test', level: 'error' }) });
    a = await listen(t.app);
    b = await listen(createApp(replica2));
  });
  afterAll(async () => {
    await t.deps.streams.close();
    await replica2.streams.close();
    await new Promise((r) => a.server.close(r));
    await new Promise((r) => b.server.close(r));
    await replica2.apiKeys.close();
    await t.close();
  });

  it('caps streams per user and per workspace across replicas with a 429, and frees a slot when a stream ends', async () => {
    const tenant = await seedTenant(t.sql);
    const first = await seedUser(t.sql, tenant.id, { role: 'admin' });
    const second = await seedUser(t.sql, tenant.id, { role: 'admin' });
    const s1 = await openStream(a.base, first.token);
    const s2 = await openStream(b.base, first.token);
    expect([s1.status, s2.status]).toEqual([200, 200]);

    const overUser = await fetch(`${a.base}/api/v1/settings/events/stream`, { headers: { Authorization: `Bearer ${first.token}` } });
    expect(overUser.status).toBe(429);
    expect(overUser.headers.get('retry-after')).toMatch(/^\d+$/);
    const body = (await overUser.json()) as { success: boolean; error: { code: string; message: string; details: unknown } };
    expect(body).toMatchObject({ success: false, error: { code: 'RATE_LIMIT_EXCEEDED', details: { scope: 'user', limit: 2 } } });
    expect(body.error.message).toMatch(/usuario/);

    const s3 = await openStream(b.base, second.token);
    expect(s3.status).toBe(200);
    const overWorkspace = await fetch(`${b.base}/api/v1/settings/events/stream`, { headers: { Authorization: `Bearer ${second.token}` } });
    expect(overWorkspace.status).toBe(429);
    expect(await overWorkspace.json()).toMatchObject({ error: { details: { scope: 'workspace', limit: 3 } } });

    // another workspace has its own budget
    const other = await seedUser(t.sql, (await seedTenant(t.sql)).id, { role: 'admin' });
    const elsewhere = await openStream(a.base, other.token);
    expect(elsewhere.status).toBe(200);

    // the client leaves: its lease goes and the next stream is admitted
    s1.abort();
    let again: OpenedStream;
    do {
      again = await openStream(a.base, second.token);
      if (again.status !== 200) await new Promise((r) => setTimeout(r, 50));
    } while (again.status !== 200);
    expect(again.status).toBe(200);
    for (const s of [s2, s3, elsewhere, again]) s.abort();
  });
});

describe('a client that leaves before its stream starts, and a stream admitted during shutdown', () => {
  let t: ApiTestContext;
  let a: { base: string; server: http.Server };

  beforeAll(async () => {
    t = await createApiTestContext({ eventStreamsPerUser: 1, eventStreamsPerWorkspace: 1 });
    a = await listen(t.app);
  });
  afterAll(async () => {
    await new Promise((r) => a.server.close(r));
    await t.close();
  });

  const connections = () => new Promise<number>((resolve) => a.server.getConnections((_err, n) => resolve(n)));

  it('lets the lease of a client that left during the first read go, so the next stream is admitted', async () => {
    const tenant = await seedTenant(t.sql);
    const { token } = await seedUser(t.sql, tenant.id, { role: 'admin' });
    // the first read of the feed waits on this lock while the client goes away
    const lock = await t.sql.reserve();
    await lock`begin`;
    await lock`lock table events in access exclusive mode`;
    const ac = new AbortController();
    const request = fetch(`${a.base}/api/v1/settings/events/stream`, { headers: { Authorization: `Bearer ${token}` }, signal: ac.signal }).catch(() => null);
    for (;;) {
      const [{ n }] = await t.sql<{ n: number }[]>`
        select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and query ilike '%from events%'`;
      if (n > 0) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    ac.abort();
    await request;
    while ((await connections()) > 0) await new Promise((r) => setTimeout(r, 20));
    await lock`commit`;
    lock.release();

    // the cap is one stream: the next is admitted once the left one's lease is gone
    let next: OpenedStream;
    while ((next = await openStream(a.base, token)).status !== 200) await new Promise((r) => setTimeout(r, 50));
    expect(t.deps.streams.size).toBe(1);
    next.abort();
    while (t.deps.streams.size > 0) await new Promise((r) => setTimeout(r, 20));
  });

  it('ends at once a stream admitted after the registry closed for shutdown', async () => {
    const tenant = await seedTenant(t.sql);
    const { token } = await seedUser(t.sql, tenant.id, { role: 'admin' });
    await t.deps.streams.close();
    const res = await fetch(`${a.base}/api/v1/settings/events/stream`, { headers: { Authorization: `Bearer ${token}` } });
    expect(res.status).toBe(200);
    // the body ends at once, without a single event
    expect(await res.text()).toBe('');
    expect(t.deps.streams.size).toBe(0);
  });
});
