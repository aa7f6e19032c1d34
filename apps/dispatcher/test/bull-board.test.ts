import { machineQueueName } from '@svc/core';
import { seedUser, seedWorkspace } from '@svc/testing';
import { apiSuite, type ApiTestContext } from '@svc/testing/api';

/**
 * Bull Board at /admin/queues: an admin access token in the Authorization header, or the session
 * cookie the console gets for it (POST /admin/queues/session); the workspace's machine queues by name.
 */
const suite = apiSuite();
let ctx: ApiTestContext;
let ws: Awaited<ReturnType<typeof seedWorkspace>>;

beforeAll(async () => {
  ({ ctx } = suite);
  ws = await seedWorkspace(ctx.sql);
});

it('answers 401 without a token or session, and 403 for a member', async () => {
  const anon = await ctx.http.get('/admin/queues').set('Accept', 'application/json');
  expect(anon.status).toBe(401);
  expect(anon.body.error.code).toBe('UNAUTHORIZED');
  const member = await seedUser(ctx.sql, ws.tenant.id, { role: 'member' });
  const res = await ctx.http.get('/admin/queues/api/queues').set('Authorization', `Bearer ${member.token}`);
  expect(res.status).toBe(403);
});

it('serves the board page to an admin, and lists the workspace’s machine queues with readable names', async () => {
  const m = await ws.machine({ name: 'robot-facturas' });
  const other = await seedWorkspace(ctx.sql);
  await other.machine({ name: 'robot-ajeno' });
  // a job waiting on the machine's queue
  const proc = await ws.process();
  const trig = await ctx.http.post('/api/v1/jobs/trigger').set('X-API-Key', ws.key).send({ process_id: proc.id, machine_id: m.row.id });
  expect(trig.status).toBe(201);

  const page = await ctx.http.get('/admin/queues').set('Authorization', `Bearer ${ws.adminToken}`);
  expect(page.status).toBe(200);
  expect(page.text).toMatch(/<html/i);
  // its assets are served under the same path (relative to <base href>)
  const asset = /["'](static\/[^"']+\.(?:js|css))["']/.exec(page.text)?.[1];
  expect(asset).toBeDefined();
  const js = await ctx.http.get(`/admin/queues/${asset}`).set('Authorization', `Bearer ${ws.adminToken}`);
  expect(js.status).toBe(200);

  const res = await ctx.http.get('/admin/queues/api/queues').set('Authorization', `Bearer ${ws.adminToken}`);
  expect(res.status).toBe(200);
  const names = (res.body.queues as Array<{ displayName?: string; name: string; readOnlyMode: boolean; counts: Record<string, number> }>);
  const mine = names.find((q) => q.displayName === 'Machine robot-facturas');
  expect(mine).toBeDefined();
  expect(mine!.readOnlyMode).toBe(true);
  expect(Object.values(mine!.counts).reduce((a, b) => a + b, 0)).toBe(1);
  expect(names.some((q) => q.displayName?.includes('robot-ajeno'))).toBe(false);
});

/** The exchange: the admin's bearer token for the board's cookie; returns the `name=value` pair. */
async function boardCookie(token: string): Promise<string> {
  const res = await ctx.http.post('/admin/queues/session').set('Authorization', `Bearer ${token}`);
  expect(res.status).toBe(200);
  return res.headers['set-cookie']![0]!.split(';')[0]!;
}

it('exchanges an admin bearer token for a short-lived HttpOnly, SameSite=Strict cookie scoped to the board', async () => {
  const res = await ctx.http.post('/admin/queues/session').set('Authorization', `Bearer ${ws.adminToken}`);
  expect(res.status).toBe(200);
  expect(res.body.data.url).toBe('/admin/queues');
  expect(res.headers['cache-control']).toBe('no-store');
  const cookies = res.headers['set-cookie'] as unknown as string[];
  expect(cookies).toHaveLength(1);
  const [pair, ...attrs] = cookies[0]!.split(';').map((a) => a.trim());
  const [name, value] = pair!.split('=');
  expect(name).toBe('svc_board_session');
  // a random id, not the access token
  expect(value).not.toContain(ws.adminToken);
  expect(value!.length).toBeGreaterThanOrEqual(40);
  const lower = attrs.map((a) => a.toLowerCase());
  expect(lower).toContain('httponly');
  expect(lower).toContain('samesite=strict');
  expect(attrs).toContain('Path=/admin/queues');
  const maxAge = Number(/^max-age=(\d+)$/.exec(lower.find((a) => a.startsWith('max-age='))!)![1]);
  expect(maxAge).toBeGreaterThanOrEqual(60);
  expect(maxAge).toBeLessThanOrEqual(3600);
  // plain HTTP without a trusted proxy: Secure would only make the browser drop it
  expect(lower).not.toContain('secure');
  // Redis holds neither the cookie's id nor the token in clear
  const keys = await ctx.redis.keys(`${ctx.deps.keys.boardSessions}:*`);
  expect(keys.some((k) => k.includes(value!))).toBe(false);
  for (const k of keys) expect(await ctx.redis.get(k)).not.toContain(ws.adminToken);

  const page = await ctx.http.get('/admin/queues').set('Cookie', pair!);
  expect(page.status).toBe(200);
  expect(page.text).toMatch(/<html/i);
  const queues = await ctx.http.get('/admin/queues/api/queues').set('Cookie', pair!);
  expect(queues.status).toBe(200);
});

it('refuses the exchange without an admin bearer token, and any other method on it', async () => {
  expect((await ctx.http.post('/admin/queues/session')).status).toBe(401);
  const member = await seedUser(ctx.sql, ws.tenant.id, { role: 'member' });
  const res = await ctx.http.post('/admin/queues/session').set('Authorization', `Bearer ${member.token}`);
  expect(res.status).toBe(403);
  expect(res.headers['set-cookie']).toBeUndefined();
  expect((await ctx.http.get('/admin/queues/session').set('Authorization', `Bearer ${ws.adminToken}`)).status).toBe(405);
  // a made-up cookie is no session
  const forged = await ctx.http.get('/admin/queues/api/queues').set('Cookie', 'svc_board_session=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA');
  expect(forged.status).toBe(401);
  expect(forged.body.error.code).toBe('UNAUTHORIZED');
});

it('no longer takes the token from the query string', async () => {
  for (const path of ['/admin/queues', '/admin/queues/api/queues']) {
    const res = await ctx.http.get(`${path}?token=${ws.adminToken}`);
    expect(res.status).toBe(401);
    expect(res.headers['set-cookie']).toBeUndefined();
    expect(res.headers.location).toBeUndefined();
  }
});

it('answers a browser without a session with a short page in Spanish pointing to the console', async () => {
  const res = await ctx.http.get('/admin/queues').set('Accept', 'text/html,application/xhtml+xml,*/*;q=0.8');
  expect(res.status).toBe(401);
  expect(res.headers['content-type']).toMatch(/^text\/html/);
  expect(res.text).toContain('Abra Bull Board desde la consola');
  expect(res.text).toContain('href="/console/"');
  expect(res.text).not.toMatch(/<script/i);
});

it('ends the session with its access token: revoked, user deactivated or no longer admin', async () => {
  // revoked by signing out of the console
  const revoked = await seedUser(ctx.sql, ws.tenant.id, { role: 'admin' });
  const c1 = await boardCookie(revoked.token);
  expect((await ctx.http.get('/admin/queues/api/queues').set('Cookie', c1)).status).toBe(200);
  expect((await ctx.http.post('/api/v1/auth/logout').set('Authorization', `Bearer ${revoked.token}`)).status).toBe(200);
  const after = await ctx.http.get('/admin/queues/api/queues').set('Cookie', c1);
  expect(after.status).toBe(401);
  expect((await ctx.http.get('/admin/queues').set('Cookie', c1)).status).toBe(401);

  const deactivated = await seedUser(ctx.sql, ws.tenant.id, { role: 'admin' });
  const c2 = await boardCookie(deactivated.token);
  await ctx.sql`update users set is_active = false where id = ${deactivated.user.id}`;
  expect((await ctx.http.get('/admin/queues/api/queues').set('Cookie', c2)).status).toBe(401);

  const demoted = await seedUser(ctx.sql, ws.tenant.id, { role: 'admin' });
  const c3 = await boardCookie(demoted.token);
  await ctx.sql`update users set role = 'member' where id = ${demoted.user.id}`;
  expect((await ctx.http.get('/admin/queues/api/queues').set('Cookie', c3)).status).toBe(403);
});

it('shows another workspace’s admin only that workspace’s queues', async () => {
  const mine = await ws.machine({ name: 'robot-propio' });
  const other = await seedWorkspace(ctx.sql);
  await other.machine({ name: 'robot-de-otro' });
  const cookie = await boardCookie(other.adminToken);
  const res = await ctx.http.get('/admin/queues/api/queues').set('Cookie', cookie);
  expect(res.status).toBe(200);
  const names = (res.body.queues as Array<{ displayName?: string; name: string }>);
  expect(names.some((q) => q.displayName === 'Machine robot-de-otro')).toBe(true);
  expect(names.some((q) => q.displayName?.includes('robot-propio') || q.name.includes(mine.row.id))).toBe(false);
  expect(JSON.stringify(res.body)).not.toContain(mine.row.id);
  // nor by naming it: the other workspace's board does not know this queue
  const mineName = machineQueueName(mine.row.id);
  const direct = await ctx.http.get(`/admin/queues/api/queues/${encodeURIComponent(mineName)}`).set('Cookie', cookie);
  expect(direct.status).toBe(404);
});

it('hides the Redis server’s details (version, memory, clients) from the board', async () => {
  await ws.machine({ name: 'robot-redis' });
  const cookie = await boardCookie(ws.adminToken);
  const version = /redis_version:(\S+)/.exec(await ctx.redis.info('server'))![1]!;
  const stats = await ctx.http.get('/admin/queues/api/redis/stats').set('Cookie', cookie);
  expect(stats.status).toBe(403);
  expect(JSON.stringify(stats.body)).not.toContain(version);
  expect(stats.body).not.toHaveProperty('memory');
  const queues = await ctx.http.get('/admin/queues/api/queues').set('Cookie', cookie);
  expect(queues.status).toBe(200);
  expect(queues.text).not.toContain(`"${version}"`);
  const page = await ctx.http.get('/admin/queues').set('Cookie', cookie);
  const uiConfig = JSON.parse(/<script id="__UI_CONFIG__" type="application\/json">([^<]*)<\/script>/.exec(page.text)![1]!);
  expect(uiConfig.hideRedisDetails).toBe(true);
});
