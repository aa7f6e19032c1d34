import { seedUser, seedWorkspace } from '@svc/testing';
import { apiSuite, type ApiTestContext } from '@svc/testing/api';

/** Bull Board at /admin/queues: admin access token only, the workspace's machine queues by name. */
const suite = apiSuite();
let ctx: ApiTestContext;
let ws: Awaited<ReturnType<typeof seedWorkspace>>;

beforeAll(async () => {
  ({ ctx } = suite);
  ws = await seedWorkspace(ctx.sql);
});

it('answers 401 without a token, and 403 for a member', async () => {
  const anon = await ctx.http.get('/admin/queues');
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

it('lets a browser in with ?token= once, through an HttpOnly cookie', async () => {
  const res = await ctx.http.get(`/admin/queues?token=${ws.adminToken}`);
  expect(res.status).toBe(302);
  expect(res.headers.location).toBe('/admin/queues');
  const cookie = res.headers['set-cookie']![0]!;
  expect(cookie).toMatch(/svc_board_token=.*httponly/i);
  const page = await ctx.http.get('/admin/queues/api/queues').set('Cookie', cookie.split(';')[0]!);
  expect(page.status).toBe(200);
});
