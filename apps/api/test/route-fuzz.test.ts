import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { DEFAULT_RATE_LIMIT, PLAN_FEATURES, rateLimitFor } from '@svc/core';
import { captureLog, seedApiKey, seedJob, seedMachine, seedProcess, seedQueue, seedTenant, seedUser, type CapturedLog } from '@svc/testing';
import { createApiTestContext, type ApiTestContext } from '@svc/testing/api';
import { routeCatalog, type RouteSpec } from '../src/http/route';
import { casesFor, fillPath, paramCandidates, paramNames, type FuzzCase, type Pool } from './route-fuzz-cases';

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

const REQUEST_TIMEOUT_MS = 10_000;
const CONCURRENCY = 4;

/**
 * Every declared route (routeCatalog), with a valid credential of its kind, gets a few dozen to
 * a few hundred hostile requests generated from its declaration: wrong types in every field,
 * U+0000 and lone surrogates in every string, key, path segment and query value, huge strings,
 * 10,000-deep values, malformed JSON, wrong content types and encodings, other workspaces' ids.
 * None may answer 5xx, hang, or log at error level; every error is the contract's envelope.
 */
describe('every route under hostile input', () => {
  let t: ApiTestContext;
  let log: CapturedLog;
  let server: http.Server;
  let agent: http.Agent;
  let port: number;
  let tenantId: string;
  let pool: Pool;

  beforeAll(async () => {
    // one source address per request (X-Forwarded-For) so per-IP limits leave the fuzz alone
    t = await createApiTestContext({ trustedProxyCount: 1 });
    log = captureLog(t.deps.logger);
    server = http.createServer(t.app.callback());
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
    agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
    tenantId = (await seedTenant(t.sql, { plan_features: [...PLAN_FEATURES] })).id;
    const otherTenantId = (await seedTenant(t.sql, { plan_features: [...PLAN_FEATURES] })).id;
    pool = { own: await seedWorkspace(tenantId), other: await seedWorkspace(otherTenantId) };
  });
  afterAll(async () => {
    log.stop();
    agent.destroy();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    await t.close();
  });

  /** One of each resource a route may name, made through the API where there is no fixture. */
  async function seedWorkspace(tenant: string): Promise<Pool['own']> {
    const admin = (await seedUser(t.sql, tenant, { role: 'admin' })).token;
    const created = async (path: string, body: unknown) => {
      const res = await send({ label: 'seed', path: `/api/v1${path}`, body: JSON.stringify(body), headers: { 'Content-Type': 'application/json' } }, 'post', { Authorization: `Bearer ${admin}` });
      expect(res.status).toBeLessThan(300);
      return JSON.parse(res.text).data as { id: string; name?: string };
    };
    const folder = await created('/settings/folders', { name: `folder-${tenant.slice(0, 8)}` });
    const asset = await created('/settings/assets', { name: `asset-${tenant.slice(0, 8)}`, type: 'text', values: { production: 'v', dev: 'd' } });
    const process = await seedProcess(t.sql, tenant);
    const machine = (await seedMachine(t.sql, tenant)).row;
    const queue = await seedQueue(t.sql, tenant);
    const job = await seedJob(t.sql, tenant, { process_id: process.id, machine_id: machine.id });
    const key = (await seedApiKey(t.sql, tenant)).row;
    const schedule = await created('/settings/schedules', { name: `schedule-${tenant.slice(0, 8)}`, process_id: process.id, cron: '0 3 * * *' });
    const webhook = await created('/settings/webhooks', { url: 'https://example.com/hook', event_types: ['*'] });
    const delivery = await created(`/settings/webhooks/${webhook.id}/test`, {});
    const item = await send(
      { label: 'seed', path: `/api/v1/queues/by-name/${queue.name}/items`, body: '{"data":{"seed":true}}', headers: { 'Content-Type': 'application/json' } },
      'post',
      { 'X-API-Key': (await seedApiKey(t.sql, tenant)).key },
    );
    return [
      { kind: 'process', id: process.id, name: process.name },
      { kind: 'machine', id: machine.id, name: machine.name },
      { kind: 'queue', id: queue.id, name: queue.name },
      { kind: 'item', id: JSON.parse(item.text).data.id },
      { kind: 'folder', id: folder.id, name: folder.name },
      { kind: 'asset', id: asset.id, name: asset.name },
      { kind: 'job', id: job.id },
      { kind: 'key', id: key.id },
      { kind: 'schedule', id: schedule.id, name: schedule.name },
      { kind: 'webhook', id: webhook.id },
      { kind: 'delivery', id: delivery.id },
    ];
  }

  let sourceAddress = 0;
  function send(c: FuzzCase, method: string, credential: Record<string, string>): Promise<Answer> {
    const n = ++sourceAddress;
    const headers: Record<string, string> = { ...credential, ...c.headers, 'X-Forwarded-For': `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}` };
    if (c.body !== undefined) headers['Content-Length'] = String(Buffer.byteLength(c.body));
    return new Promise((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port, agent, method: method.toUpperCase(), path: c.path, headers }, (res) => {
        // an event stream (GET /settings/events/stream) never ends: its head is the answer
        if (String(res.headers['content-type']).startsWith('text/event-stream')) {
          resolve({ status: res.statusCode!, headers: res.headers, text: '' });
          res.destroy();
          return;
        }
        const chunks: Buffer[] = [];
        res.on('data', (d: Buffer) => chunks.push(d));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
        res.on('close', () => {
          if (!res.complete) reject(new Error('the answer was cut off'));
        });
      });
      req.setTimeout(REQUEST_TIMEOUT_MS, () => req.destroy(new Error(`no answer within ${REQUEST_TIMEOUT_MS} ms`)));
      req.on('error', reject);
      req.end(c.body);
    });
  }

  /** Fresh credentials of a route's kind, each used below its rate limit, replaced after a 401. */
  function credentials(spec: RouteSpec) {
    const limit = spec.rateLimit ?? rateLimitFor(`${spec.method.toUpperCase()} ${spec.path}`) ?? DEFAULT_RATE_LIMIT;
    let current: Promise<Record<string, string>> | undefined;
    let uses = 0;
    const fresh = async (): Promise<Record<string, string>> => {
      if (spec.auth.kind === 'api_key') return { 'X-API-Key': (await seedApiKey(t.sql, tenantId)).key };
      if (spec.auth.kind === 'user') return { Authorization: `Bearer ${(await seedUser(t.sql, tenantId, { role: 'admin' })).token}` };
      return {};
    };
    return {
      next(): Promise<Record<string, string>> {
        // decided synchronously, so requests sent together share a credential and never exceed its limit
        if (!current || uses >= limit - 1) {
          current = fresh();
          uses = 0;
        }
        uses++;
        return current;
      },
      spent(): void {
        current = undefined; // e.g. logout revoked it
      },
      wrong(): Record<string, string> {
        return spec.auth.kind === 'api_key' ? { Authorization: 'Bearer svc_at_not-a-token' } : { 'X-API-Key': `svc_ak_${'x'.repeat(300)}` };
      },
    };
  }

  /**
   * Values for the route's path parameters naming resources of the caller, so that cases get
   * past the 404: the first combination a probe does not answer 404. The probe of a route with
   * a body sends malformed JSON, of one with a query an unknown parameter (both refused only
   * after the resource is found); other routes are probed with the request itself.
   */
  async function homeOf(spec: RouteSpec, creds: ReturnType<typeof credentials>): Promise<Record<string, string>> {
    let combos: Array<Record<string, string>> = [{}];
    for (const name of paramNames(spec)) combos = combos.flatMap((c) => paramCandidates(spec, name, pool).map((v) => ({ ...c, [name]: v })));
    if (combos.length === 1) return combos[0]!;
    for (const combo of combos) {
      const probe: FuzzCase = spec.body
        ? { label: 'probe', path: fillPath(spec, combo), body: '{', headers: { 'Content-Type': 'application/json' } }
        : { label: 'probe', path: fillPath(spec, combo, spec.query ? 'zz_probe=1' : '') };
      if ((await send(probe, spec.method, await creds.next())).status !== 404) return combo;
    }
    return combos[0]!;
  }

  /**
   * The order routes are fuzzed in: those that read resources by name first; then the rest;
   * then PATCH (it renames and deactivates), then DELETE — so what a route names still exists.
   */
  const phase = (spec: RouteSpec) => (spec.method === 'delete' ? 3 : spec.method === 'patch' ? 2 : spec.auth.kind === 'api_key' ? 0 : 1);

  it('answers every generated request without a 5xx, in the error envelope, logging nothing at error level', async () => {
    const specs = [...routeCatalog.values()];
    expect(specs.length).toBeGreaterThanOrEqual(45);
    specs.sort((a, b) => phase(a) - phase(b));

    const failures: string[] = [];
    const perRoute = new Map<string, number>();
    for (const spec of specs) {
      const route = `${spec.method.toUpperCase()} ${spec.path}`;
      const creds = credentials(spec);
      const home = await homeOf(spec, creds);
      const cases = casesFor(spec, home, pool);
      perRoute.set(route, cases.length);
      const run = async (c: FuzzCase) => {
        const credential = c.credential === 'none' ? {} : c.credential === 'wrong' ? creds.wrong() : await creds.next();
        let answer: Answer;
        try {
          answer = await send(c, spec.method, credential);
        } catch (err) {
          failures.push(`${route} [${c.label}]: ${(err as Error).message}`);
          return;
        }
        if (answer.status === 401 && c.credential === undefined && spec.auth.kind !== 'none') creds.spent();
        const problem = judge(answer);
        if (problem) failures.push(`${route} [${c.label}]: ${problem}`);
      };
      // a few at a time: while one waits on Postgres another is parsed
      for (let i = 0; i < cases.length; i += CONCURRENCY) await Promise.all(cases.slice(i, i + CONCURRENCY).map(run));
    }

    expect(failures).toEqual([]);
    expect(log.entries.map((e) => `${String(e.message)} ${JSON.stringify(e.err ?? '')}`.slice(0, 300))).toEqual([]);
    // every declared route was fuzzed, and the whole run is a few thousand requests
    expect([...perRoute.keys()].sort()).toEqual(specs.map((s) => `${s.method.toUpperCase()} ${s.path}`).sort());
    for (const [route, n] of perRoute) expect([route, n >= 20]).toEqual([route, true]);
    const total = [...perRoute.values()].reduce((a, b) => a + b, 0);
    expect(total).toBeGreaterThan(2000);
  }, 180_000);
});

/** What is wrong with an answer, or null: no 5xx; errors in the envelope with the request id. */
function judge(answer: Answer): string | null {
  if (answer.status >= 500) return `${answer.status} ${answer.text.slice(0, 200)}`;
  if (answer.status < 400) return null;
  let body: { success?: unknown; error?: { code?: unknown; message?: unknown; request_id?: unknown } };
  try {
    body = JSON.parse(answer.text);
  } catch {
    return `${answer.status} without a JSON body: ${answer.text.slice(0, 100)}`;
  }
  const e = body.error;
  if (body.success !== false || typeof e?.code !== 'string' || typeof e.message !== 'string') return `${answer.status} outside the envelope: ${answer.text.slice(0, 200)}`;
  if (!e.request_id || e.request_id !== answer.headers['x-request-id']) return `${answer.status} without its request id`;
  return null;
}
