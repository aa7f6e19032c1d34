import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { apiSuite, type ApiTestContext } from '@svc/testing/api';
import { freePort, seedWorkspace, waitFor, waitForHttp } from '@svc/testing';

/**
 * Webhook delivery is fair across workspaces (docs/decisions/webhook-fairness.md), end to end:
 * a real dispatcher process, the in-process API and one receiving host on loopback. One
 * dispatcher, because the unfairness was within one deliverer: a second, idle replica would
 * serve the other workspace whatever the first one does. One workspace has twenty receivers
 * that each take 9 s to answer; another workspace's receiver, on the same host, gets its event
 * before any slow one has answered. The slow ones still get theirs, once each, with no more
 * requests open at once than the per-tenant limit.
 */
jest.setTimeout(120_000);
const suite = apiSuite();
const { children } = suite;
let ctx: ApiTestContext;

const SLOW = 20;
const SLOW_ANSWER_MS = 9000;
/** the deliverer's default leases per tenant (packages/core/src/webhooks/deliver.ts) */
const PER_TENANT = 8;

/** One host for both workspaces (as when two customers use the same service): /slow/<n> answers after 9 s, /fast at once. */
class Host {
  slowPaths: string[] = [];
  slowOpen = 0;
  slowOpenMost = 0;
  slowAnswered = 0;
  /** what the fast receiver got, and how many slow answers had gone out by then */
  fast: Array<{ type: string; slowAnsweredBefore: number; slowOpen: number }> = [];
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => { body += c; });
    req.on('end', () => {
      if (req.url === '/fast') {
        this.fast.push({ type: (JSON.parse(body) as { type: string }).type, slowAnsweredBefore: this.slowAnswered, slowOpen: this.slowOpen });
        res.writeHead(204).end();
        return;
      }
      this.slowPaths.push(req.url!);
      this.slowOpen++;
      this.slowOpenMost = Math.max(this.slowOpenMost, this.slowOpen);
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        this.slowOpen--;
        this.slowAnswered++;
        res.writeHead(204).end();
      }, SLOW_ANSWER_MS);
      this.timers.add(timer);
    });
  });

  port = 0;

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
  }

  async stop(): Promise<void> {
    for (const t of this.timers) clearTimeout(t);
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

const host = new Host();

beforeAll(async () => {
  ({ ctx } = suite);
  await host.start();
});

afterAll(async () => {
  await host.stop();
});

it('twenty slow receivers of one workspace do not hold back another workspace\'s delivery', async () => {
  const slowWs = await seedWorkspace(ctx.sql);
  const fastWs = await seedWorkspace(ctx.sql);
  const subscribe = async (token: string, path: string) => {
    const res = await ctx.http.post('/api/v1/settings/webhooks').set({ Authorization: `Bearer ${token}` })
      .send({ url: `http://127.0.0.1:${host.port}${path}`, event_types: ['api_key.created'] });
    expect(res.status).toBe(201);
    return res.body.data.id as string;
  };
  const slowSubs: string[] = [];
  for (let i = 0; i < SLOW; i++) slowSubs.push(await subscribe(slowWs.adminToken, `/slow/${i}`));
  const fastSub = await subscribe(fastWs.adminToken, '/fast');

  // polling often
  const port = await freePort();
  children.dispatcher(ctx, { WEBHOOK_POLL_MS: '100', METRICS_PORT: String(port) });
  await waitForHttp(`http://127.0.0.1:${port}/metrics`);

  const newKey = async (token: string, name: string) => {
    const res = await ctx.http.post('/api/v1/settings/api-keys').set({ Authorization: `Bearer ${token}` }).send({ name, scopes: ['jobs:read'] });
    expect(res.status).toBe(201);
  };
  // the slow workspace's event goes to its twenty receivers, which hold their requests
  await newKey(slowWs.adminToken, 'slow-key');
  await waitFor('the slow receivers holding requests', async () => host.slowOpen > 0, 60_000);

  // then the other workspace's event: it arrives while the slow ones are still answering
  await newKey(fastWs.adminToken, 'fast-key');
  const [got] = await waitFor('the fast receiver got its event', async () => (host.fast.length ? host.fast : null), 60_000);
  expect(got).toEqual({ type: 'api_key.created', slowAnsweredBefore: 0, slowOpen: expect.any(Number) });
  expect(got!.slowOpen).toBeGreaterThan(0);

  // the slow ones all get it in the end, each once, never more at once than a tenant's share
  await waitFor('every slow receiver answered', async () => host.slowAnswered >= SLOW, 100_000);
  expect([...host.slowPaths].sort()).toEqual(Array.from({ length: SLOW }, (_, i) => `/slow/${i}`).sort());
  expect(host.slowOpenMost).toBeGreaterThan(1);
  expect(host.slowOpenMost).toBeLessThanOrEqual(PER_TENANT);
  await waitFor('every delivery recorded', async () => {
    const rows = await ctx.sql<Array<{ subscription_id: string; status: string; attempts: number }>>`
      select subscription_id, status, attempts from webhook_deliveries where subscription_id = any(${[...slowSubs, fastSub]}::uuid[])`;
    return rows.length === SLOW + 1 && rows.every((r) => r.status === 'delivered' && r.attempts === 1);
  });
  expect(host.fast).toHaveLength(1);
});
