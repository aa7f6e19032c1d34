import { randomUUID } from 'node:crypto';
import { sampleValue, seedWorkspace } from '@svc/testing';
import { apiSuite, type ApiTestContext } from '@svc/testing/api';

/**
 * The API's own metrics, in process: /metrics on the public port behind METRICS_TOKEN and not rate
 * limited, 429s counted by route template, odd methods and paths adding no series. (Scraping a
 * running platform and the work counters: apps/dispatcher/test/metrics.test.ts; without a token:
 * metrics-exposure.test.ts.)
 */
const TOKEN = `metrics-${randomUUID()}`;
const suite = apiSuite({ config: { metricsToken: TOKEN } });
let ctx: ApiTestContext;
let ws: Awaited<ReturnType<typeof seedWorkspace>>;

beforeAll(async () => {
  ({ ctx } = suite);
  ws = await seedWorkspace(ctx.sql);
});

async function metrics(): Promise<string> {
  const res = await ctx.http.get('/metrics').set('Authorization', `Bearer ${TOKEN}`);
  expect(res.status).toBe(200);
  expect(res.headers['content-type']).toMatch(/^text\/plain/);
  return res.text;
}

it('asks for the METRICS_TOKEN, and is not rate limited', async () => {
  expect((await ctx.http.get('/metrics')).status).toBe(401);
  expect((await ctx.http.get('/metrics').set('Authorization', 'Bearer whatever')).status).toBe(401);
  for (let i = 0; i < 3; i++) {
    const res = await ctx.http.get('/metrics').set('Authorization', `Bearer ${TOKEN}`);
    expect(res.status).toBe(200);
    expect(res.headers['x-ratelimit-limit']).toBeUndefined();
  }
  expect(await metrics()).toContain('# TYPE svc_http_requests_total counter');
});

it('counts rate-limit rejections by route template and method', async () => {
  const route = { route: '/api/v1/assets/by-name/:name', method: 'GET' };
  const before = sampleValue(await metrics(), 'svc_rate_limit_rejections_total', route) ?? 0;
  // the route allows 30 a minute: the 31st and 32nd are refused
  const statuses: number[] = [];
  for (let i = 0; i < 32; i++) statuses.push((await ctx.http.get(`/api/v1/assets/by-name/a${i}`).set('X-API-Key', ws.key)).status);
  expect(statuses.filter((s) => s === 429)).toHaveLength(2);
  const text = await metrics();
  expect(sampleValue(text, 'svc_rate_limit_rejections_total', route)).toBe(before + 2);
  expect(sampleValue(text, 'svc_http_requests_total', { ...route, status: '429' })).toBe(2);
  expect(sampleValue(text, 'svc_http_requests_total', { ...route, status: '404' })).toBe(30);
});

it('odd methods and paths share the OTHER and unmatched labels', async () => {
  const before = await metrics();
  const odd = { route: 'unmatched', method: 'OTHER', status: '501' };
  const ids = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
  for (const id of ids.slice(0, 3)) {
    const res = await ctx.http.get(`/x-${id}`.repeat(5));
    expect(res.status).toBe(404);
  }
  // a method Koa's router does not implement: 501, under the one OTHER label
  const res = await ctx.http.search(`/${ids[3]}`);
  expect(res.status).toBe(501);
  const after = await metrics();
  expect((sampleValue(after, 'svc_http_requests_total', { route: 'unmatched', method: 'GET', status: '404' }) ?? 0)
    - (sampleValue(before, 'svc_http_requests_total', { route: 'unmatched', method: 'GET', status: '404' }) ?? 0)).toBeGreaterThanOrEqual(3);
  expect((sampleValue(after, 'svc_http_requests_total', odd) ?? 0) - (sampleValue(before, 'svc_http_requests_total', odd) ?? 0)).toBe(1);
  for (const id of ids) expect(after).not.toContain(id);
});
