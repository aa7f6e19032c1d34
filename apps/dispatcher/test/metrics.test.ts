import { randomUUID } from 'node:crypto';
import { labelValues, sampleValue, scrape, testSuite, waitFor } from '@svc/testing';
import { METRICS_TOKEN, useMetricsPlatform } from './metrics-platform';

/**
 * Prometheus metrics of a running platform (docs/decisions/observability.md): the API's
 * /metrics and the dispatcher's and agent's METRICS_PORT servers, behind METRICS_TOKEN; route
 * templates as labels; counters that move as the work happens; the state gauges read from
 * Postgres. The exposition's format is checked by promtool in metrics.promtool.test.ts.
 */
jest.setTimeout(120_000);
const suite = testSuite();
const p = useMetricsPlatform(suite);

const api = (path: string, init: RequestInit = {}) =>
  fetch(`${p.api.url}${path}`, { ...init, headers: { 'X-API-Key': p.ws.key, 'Content-Type': 'application/json', ...(init.headers ?? {}) } });

describe('scraping', () => {
  it('asks for the METRICS_TOKEN as a Bearer token on every process', async () => {
    const none = await fetch(p.urls.api);
    expect(none.status).toBe(401);
    expect(((await none.json()) as { error: { code: string } }).error.code).toBe('UNAUTHORIZED');
    const wrong = await fetch(p.urls.api, { headers: { authorization: 'Bearer nope' } });
    expect(wrong.status).toBe(401);
    for (const url of [p.urls.dispatcher, p.urls.agent]) {
      expect((await fetch(url)).status).toBe(401);
      expect((await fetch(url, { headers: { authorization: `Bearer ${METRICS_TOKEN}x` } })).status).toBe(401);
    }
    const ok = await fetch(p.urls.api, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  });

  it('the METRICS_PORT servers answer only GET /metrics, and hostile requests get a 4xx', async () => {
    const auth = { authorization: `Bearer ${METRICS_TOKEN}` };
    for (const url of [p.urls.dispatcher, p.urls.agent]) {
      const base = url.replace(/\/metrics$/, '');
      expect((await fetch(url, { method: 'POST', headers: auth, body: '{"a":1}' })).status).toBe(404);
      expect((await fetch(`${base}/metrics/x`, { headers: auth })).status).toBe(404);
      expect((await fetch(`${base}/${'a'.repeat(5000)}`, { headers: auth })).status).toBe(404);
      expect((await fetch(`${url}?%00=%ff`, { headers: auth })).status).toBe(200);
      expect((await fetch(url, { headers: { authorization: `Bearer ${'x'.repeat(8_000)}` } })).status).toBe(401);
      expect((await fetch(url, { headers: { authorization: `Bearer ${METRICS_TOKEN.toUpperCase()}` } })).status).toBe(401);
      expect((await fetch(url, { headers: { ...auth, 'x-huge': 'y'.repeat(40_000) } })).status).toBe(431);
    }
    // the API's /metrics with another tenant's credentials, or an API key, is no more open
    expect((await fetch(p.urls.api, { headers: { 'X-API-Key': p.ws.key } })).status).toBe(401);
    expect((await fetch(p.urls.api, { headers: { authorization: `Bearer ${p.ws.adminToken}` } })).status).toBe(401);
  });

  it("serves Node's default process metrics on every process", async () => {
    for (const url of Object.values(p.urls)) {
      const text = await scrape(url, METRICS_TOKEN);
      expect(sampleValue(text, 'process_resident_memory_bytes')).toBeGreaterThan(0);
      expect(text).toContain('# TYPE nodejs_eventloop_lag_seconds gauge');
    }
  });
});

describe('HTTP metrics', () => {
  it('label requests by route template; random paths all share the one unmatched label', async () => {
    const before = await scrape(p.urls.api, METRICS_TOKEN);
    const ids = [randomUUID(), randomUUID()];
    for (const id of ids) expect((await api(`/api/v1/jobs/${id}`)).status).toBe(404);
    const junk = [`/nope-${randomUUID()}`, `/api/v1/${randomUUID()}`, `/api/v1/jobs/${randomUUID()}/x/${randomUUID()}`];
    for (const path of junk) expect((await api(path)).status).toBe(404);
    const after = await scrape(p.urls.api, METRICS_TOKEN);
    const labels = { route: '/api/v1/jobs/:job_id', method: 'GET', status: '404' };
    expect((sampleValue(after, 'svc_http_requests_total', labels) ?? 0) - (sampleValue(before, 'svc_http_requests_total', labels) ?? 0)).toBe(2);
    const unmatched = { route: 'unmatched', method: 'GET', status: '404' };
    expect((sampleValue(after, 'svc_http_requests_total', unmatched) ?? 0) - (sampleValue(before, 'svc_http_requests_total', unmatched) ?? 0)).toBe(3);
    const routes = labelValues(after, 'svc_http_requests_total', 'route');
    for (const id of [...ids, ...junk]) expect(routes.some((r) => r.includes(id.replace(/^\//, '')))).toBe(false);
    expect(sampleValue(after, 'svc_http_request_duration_seconds_count', labels)).toBe(sampleValue(after, 'svc_http_requests_total', labels));
    // the X-API-Key was looked up once and then answered from the cache
    expect(sampleValue(after, 'svc_api_key_cache_lookups_total', { result: 'miss' })).toBeGreaterThanOrEqual(1);
    expect(sampleValue(after, 'svc_api_key_cache_lookups_total', { result: 'hit' })).toBeGreaterThan(sampleValue(before, 'svc_api_key_cache_lookups_total', { result: 'hit' }) ?? 0);
  });
});

describe('work metrics', () => {
  it('count a triggered job in the API (whose robot connection ran it) and the dispatcher', async () => {
    const proc = await p.ws.process();
    const agentBefore = await scrape(p.urls.api, METRICS_TOKEN);
    const res = await api('/api/v1/jobs/trigger', { method: 'POST', body: JSON.stringify({ process_id: proc.id, machine_id: p.machine.row.id }) });
    expect(res.status).toBe(201);
    const apiText = await scrape(p.urls.api, METRICS_TOKEN);
    expect(sampleValue(apiText, 'svc_http_requests_total', { route: '/api/v1/jobs/trigger', method: 'POST', status: '201' })).toBe(1);
    const completed = (t: string) => sampleValue(t, 'svc_jobs_ended_total', { status: 'completed' }) ?? 0;
    const agentAfter = await waitFor('the API counting the completed job', async () => {
      const t = await scrape(p.urls.api, METRICS_TOKEN);
      return completed(t) > completed(agentBefore) ? t : null;
    }, 45_000, 200);
    expect(sampleValue(agentAfter, 'svc_job_duration_seconds_count', { status: 'completed' })).toBeGreaterThanOrEqual(1);
    expect(sampleValue(agentAfter, 'svc_job_start_latency_seconds_count')).toBeGreaterThan(sampleValue(agentBefore, 'svc_job_start_latency_seconds_count') ?? 0);
    const dispatcher = await waitFor('the dispatcher publishing and sweeping', async () => {
      const t = await scrape(p.urls.dispatcher, METRICS_TOKEN);
      return (sampleValue(t, 'svc_outbox_published_total', { kind: 'jobs-created' }) ?? 0) >= 1
        && (sampleValue(t, 'svc_dispatcher_pass_seconds_count', { pass: 'sweep' }) ?? 0) >= 1
        && (sampleValue(t, 'svc_dispatcher_pass_seconds_count', { pass: 'reconcile' }) ?? 0) >= 1 ? t : null;
    }, 45_000, 200);
    expect(dispatcher).toContain('# TYPE svc_dispatcher_pass_seconds histogram');
  });

  it('count a trigger refused by the monthly quota', async () => {
    const proc = await p.ws.process();
    const before = sampleValue(await scrape(p.urls.api, METRICS_TOKEN), 'svc_quota_rejections_total') ?? 0;
    await suite.ctx.sql`update tenants set monthly_quota = 1, quota_used = 1 where id = ${p.ws.tenant.id}`;
    try {
      const res = await api('/api/v1/jobs/trigger', { method: 'POST', body: JSON.stringify({ process_id: proc.id, machine_id: p.machine.row.id }) });
      expect(res.status).toBe(429);
      expect(sampleValue(await scrape(p.urls.api, METRICS_TOKEN), 'svc_quota_rejections_total')).toBe(before + 1);
    } finally {
      await suite.ctx.sql`update tenants set monthly_quota = 10000, quota_used = 0 where id = ${p.ws.tenant.id}`;
    }
  });
});

describe('state gauges', () => {
  it("report a queue's items by tenant, queue and status, its oldest ready item, machines and the outbox", async () => {
    const queue = await p.ws.queue();
    for (let i = 0; i < 3; i++) {
      const res = await api(`/api/v1/queues/by-name/${encodeURIComponent(queue.name as string)}/items`, { method: 'POST', body: JSON.stringify({ data: { i } }) });
      expect(res.status).toBe(200);
    }
    const labels = { tenant: p.ws.tenant.name, queue: queue.name as string };
    const text = await waitFor('the machine online and the items counted', async () => {
      const t = await scrape(p.urls.api, METRICS_TOKEN);
      return sampleValue(t, 'svc_queue_items', { ...labels, status: 'new' }) === 3 && (sampleValue(t, 'svc_machines', { status: 'online' }) ?? 0) >= 1 ? t : null;
    }, 30_000, 200);
    expect(sampleValue(text, 'svc_queue_oldest_ready_item_age_seconds', labels)).toBeGreaterThanOrEqual(0);
    expect(sampleValue(text, 'svc_outbox_backlog')).toBeGreaterThanOrEqual(0);
    expect(sampleValue(text, 'svc_platform_state_up')).toBe(1);
    expect(sampleValue(text, 'svc_pg_connections', {}, true)).toBeGreaterThanOrEqual(1);
  });
});
