import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { verifyWebhookSignature } from '@svc/core/internals';
import { apiClient, apiSuite, type ApiTestContext } from '@svc/testing/api';
import { freePort, sampleValue, scrape, seedWorkspace, waitFor, waitForHttp, type Child } from '@svc/testing';

/**
 * Webhooks end to end (docs/decisions/events.md): the in-process API, a real dispatcher process
 * (DISPATCHER_ROLE=dispatch), two real deliverer processes (DISPATCHER_ROLE=deliver) and a real
 * HTTP receiver on loopback. Every event reaches the receiver once, in feed
 * order, signed; a receiver that is down gets everything, in order, once it is back; the test
 * event and a redelivery arrive; the feed and its stream replay from any cursor.
 */
jest.setTimeout(90_000);
const suite = apiSuite();
const { children } = suite;
let ctx: ApiTestContext;
let ws: Awaited<ReturnType<typeof seedWorkspace>>;
let queueName: string;

interface Received {
  headers: http.IncomingHttpHeaders;
  body: string;
  event: { id: string; type: string; data: Record<string, unknown> };
}

/** A webhook receiver on loopback that can go down and come back on the same port. */
class Receiver {
  received: Received[] = [];
  private server: http.Server | null = null;
  port = 0;

  async start(): Promise<void> {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        this.received.push({ headers: req.headers, body, event: JSON.parse(body) });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(this.port, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
  }

  async stop(): Promise<void> {
    const s = this.server;
    this.server = null;
    if (!s) return;
    s.closeAllConnections();
    await new Promise((resolve) => s.close(resolve));
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/hook`;
  }

  ofType(type: string): Received[] {
    return this.received.filter((r) => r.event.type === type);
  }
}

const receiver = new Receiver();
const deliverers: Array<{ child: Child; metrics: string }> = [];
let dispatcherMetrics = '';
const admin = () => ({ Authorization: `Bearer ${ws.adminToken}` });
/** Well-formed calls whose answers the tests read: through the typed client (@svc/client), as the console makes them. */
const api = () => apiClient(ctx, { token: ws.adminToken });
const deliveriesOf = (query: { status?: 'pending' | 'delivered' | 'failed'; limit?: number }) =>
  api().request('listWebhookDeliveries', { path: { id: subscriptionId }, query });
const subscription = () => api().call('getWebhook', { path: { id: subscriptionId } });

beforeAll(async () => {
  ({ ctx } = suite);
  ws = await seedWorkspace(ctx.sql);
  queueName = (await ws.queue()).name as string;
  await receiver.start();
  const env = { WEBHOOK_RETRY_BASE_MS: '200', WEBHOOK_POLL_MS: '100' };
  const dispatcherPort = await freePort();
  children.dispatcher(ctx, { ...env, DISPATCHER_ROLE: 'dispatch', METRICS_PORT: String(dispatcherPort) });
  dispatcherMetrics = `http://127.0.0.1:${dispatcherPort}/metrics`;
  // two deliverers: each event is still delivered once
  for (let i = 0; i < 2; i++) {
    const port = await freePort();
    deliverers.push({ child: children.dispatcher(ctx, { ...env, DISPATCHER_ROLE: 'deliver', METRICS_PORT: String(port) }), metrics: `http://127.0.0.1:${port}/metrics` });
  }
  await Promise.all([dispatcherMetrics, ...deliverers.map((d) => d.metrics)].map((m) => waitForHttp(m)));
});

afterAll(async () => {
  await receiver.stop();
});

async function addItems(n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    ids.push((await apiClient(ctx, { apiKey: ws.key }).call('addQueueItem', { path: { name: queueName }, body: { data: { i } } })).id);
  }
  return ids;
}

/** The ids of the item.added events of these items, as the receiver got them. */
const addedIds = (items: string[]) =>
  receiver.ofType('item.added').map((r) => (r.event.data.item_ids as string[])[0]!).filter((id) => items.includes(id));

let secret = '';
let subscriptionId = '';

it('a subscription gets every event once, in feed order, signed, from two deliverers', async () => {
  const created = await api().call('createWebhook', { body: { url: receiver.url, event_types: ['item.added', 'api_key.created'], description: 'pruebas' } });
  secret = created.secret;
  subscriptionId = created.id;
  expect(secret).toMatch(/^whsec_/);
  const read = await subscription();
  expect(read).not.toHaveProperty('secret');
  expect(read.secret_prefix).toBe(secret.slice(0, 12));

  const items = await addItems(20);
  const key = await api().call('createApiKey', { body: { name: 'webhook-key', scopes: ['jobs:read'] } });
  await waitFor('every event at the receiver', async () => addedIds(items).length === 20 && receiver.ofType('api_key.created').length === 1, 45_000);

  // in the order of the feed, which is the order these adds committed
  expect(addedIds(items)).toEqual(items);
  const feed = await api().call('readEvents', { query: { types: 'item.added,api_key.created', limit: 500 } });
  // (the feed also holds the workspace's first key, created before the subscription)
  const feedIds = feed.map((e) => e.id);
  expect(receiver.received.map((r) => r.event.id)).toEqual(feedIds.slice(-receiver.received.length));
  // no secret in the event
  expect(JSON.stringify(receiver.ofType('api_key.created')[0]!.event)).not.toContain(key.key);

  for (const r of receiver.received) {
    expect(r.headers['svc-event-id']).toBe(r.event.id);
    expect(r.headers['svc-event-type']).toBe(r.event.type);
    expect(verifyWebhookSignature(secret, { timestamp: r.headers['svc-timestamp'] as string, signature: r.headers['svc-signature'] as string }, r.body)).toBe(true);
    // a tampered body or another secret does not verify
    expect(verifyWebhookSignature(secret, { timestamp: r.headers['svc-timestamp'] as string, signature: r.headers['svc-signature'] as string }, `${r.body} `)).toBe(false);
    expect(verifyWebhookSignature('whsec_other', { timestamp: r.headers['svc-timestamp'] as string, signature: r.headers['svc-signature'] as string }, r.body)).toBe(false);
  }

  const deliveries = await waitFor('deliveries recorded', async () => {
    const res = await deliveriesOf({ limit: 100 });
    return res.meta.total === 21 && res.data.every((d) => d.status === 'delivered') ? res.data : null;
  });
  expect(deliveries[0]).toMatchObject({ status: 'delivered', attempts: 1, last_status_code: 204, next_attempt_at: null });
  // once each, though two deliverers deliver
  const ids = receiver.received.map((r) => r.event.id);
  expect(new Set(ids).size).toBe(ids.length);
});

it('a receiver that is down gets every event, in order, once it is back', async () => {
  await receiver.stop();
  const before = receiver.received.length;
  const items = await addItems(8);
  const failing = await waitFor('a failed attempt', async () => {
    return (await deliveriesOf({ status: 'pending' })).data.find((d) => d.attempts >= 2) ?? null;
  }, 45_000);
  expect(failing.last_status_code).toBeNull();
  expect(failing.last_error).toEqual(expect.any(String));
  expect((await subscription()).failing_since).not.toBeNull();

  await receiver.start();
  await waitFor('the backlog delivered', async () => addedIds(items).length === 8, 60_000);
  expect(addedIds(items)).toEqual(items);
  expect(receiver.received.length - before).toBe(8);
  await waitFor('the subscription healthy again', async () =>
    (await subscription()).failing_since === null);
});

it('sends a test event and redelivers a delivery on request, signed', async () => {
  const test = await ctx.http.post(`/api/v1/settings/webhooks/${subscriptionId}/test`).set(admin());
  expect(test.status).toBe(202);
  const got = await waitFor('the test event', async () => receiver.ofType('webhook.test')[0] ?? null);
  expect(got.event.data).toEqual({ subscription_id: subscriptionId });
  expect(verifyWebhookSignature(secret, { timestamp: got.headers['svc-timestamp'] as string, signature: got.headers['svc-signature'] as string }, got.body)).toBe(true);

  const list = await deliveriesOf({ status: 'delivered', limit: 100 });
  const target = list.data.find((d) => d.event_type === 'api_key.created')!;
  const again = await ctx.http.post(`/api/v1/settings/webhooks/${subscriptionId}/deliveries/${target.id}/redeliver`).set(admin());
  expect(again.status).toBe(202);
  await waitFor('the redelivery', async () => receiver.ofType('api_key.created').length === 2);
  const [first, second] = receiver.ofType('api_key.created');
  // a delivery that succeeded at once keeps no body: the redelivery rebuilds it from the event, byte for byte
  expect(second!.body).toBe(first!.body);
  const [stored] = await ctx.sql`select body from webhook_deliveries where id = ${target.id}`;
  expect(stored!.body).toBeNull();
  // once the retention purged the event, there is nothing to send again
  await ctx.sql`delete from events where event_cursor(xid, seq) = ${first!.event.id}`;
  const gone = await ctx.http.post(`/api/v1/settings/webhooks/${subscriptionId}/deliveries/${target.id}/redeliver`).set(admin());
  expect(gone.status).toBe(404);
  expect(gone.body.error.message).toBe('El evento de esta entrega ya no se conserva (retención de eventos)');

  // rotating the secret: later deliveries are signed with the new one
  const fresh = (await api().call('rotateWebhookSecret', { path: { id: subscriptionId } })).secret;
  expect(fresh).not.toBe(secret);
  const [item] = await addItems(1);
  const newest = await waitFor('the next event', async () => receiver.ofType('item.added').find((r) => (r.event.data.item_ids as string[])[0] === item) ?? null);
  const sig = { timestamp: newest.headers['svc-timestamp'] as string, signature: newest.headers['svc-signature'] as string };
  expect([verifyWebhookSignature(fresh, sig, newest.body), verifyWebhookSignature(secret, sig, newest.body)]).toEqual([true, false]);
});

it('the feed replays from any cursor, and its stream resumes after Last-Event-ID', async () => {
  const all = await api().call('readEvents', { query: { limit: 500 } });
  expect(all.length).toBeGreaterThan(25);
  const mid = all[10]!.id;
  const rest = await api().request('readEvents', { query: { after: mid, limit: 5 } });
  expect(rest.data.map((e) => e.id)).toEqual(all.slice(11, 16).map((e) => e.id));
  expect(rest.meta.next_cursor).toBe(all[15]!.id);

  const server = ctx.app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  try {
    const port = (server.address() as AddressInfo).port;
    const abort = new AbortController();
    const res = await fetch(`http://127.0.0.1:${port}/api/v1/settings/events/stream`, {
      headers: { ...admin(), 'Last-Event-ID': all[all.length - 3]!.id }, signal: abort.signal,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const reader = res.body!.getReader();
    let text = '';
    await waitFor('the last two events on the stream', async () => {
      const { value } = await reader.read();
      text += Buffer.from(value ?? new Uint8Array()).toString('utf8');
      return (text.match(/^id: /gm) ?? []).length >= 2;
    });
    const ids = [...text.matchAll(/^id: ([0-9a-f]{32})$/gm)].map((m) => m[1]);
    expect(ids.slice(0, 2)).toEqual(all.slice(-2).map((e) => e.id));
    // and what happens next comes down the open stream
    const [item] = await addItems(1);
    await waitFor('the new event on the stream', async () => {
      const { value } = await reader.read();
      text += Buffer.from(value ?? new Uint8Array()).toString('utf8');
      return text.includes(item!);
    });
    abort.abort();
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

it('delivers only from the deliverer processes, and counts their attempts on their own /metrics', async () => {
  // every attempt that succeeded is one delivered row, counted by whichever deliverer made it
  const [{ n: delivered }] = await ctx.sql<Array<{ n: number }>>`select count(*)::int as n from webhook_deliveries where status = 'delivered'`;
  expect(delivered).toBeGreaterThan(25);
  await waitFor('the attempts counted', async () => {
    const counted = await Promise.all(deliverers.map(async (d) => sampleValue(await scrape(d.metrics), 'svc_webhook_deliveries_total', { outcome: 'delivered' }) ?? 0));
    return counted[0]! + counted[1]! === delivered;
  });
  // the dispatch-only process did its own work all along (it published the item adds' effects)
  // and delivered none of the events
  const dispatcher = await scrape(dispatcherMetrics);
  expect(sampleValue(dispatcher, 'svc_outbox_published_total', {}, true) ?? 0).toBeGreaterThan(0);
  expect(sampleValue(dispatcher, 'svc_webhook_deliveries_total', {}, true) ?? 0).toBe(0);
});
