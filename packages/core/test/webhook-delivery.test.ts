import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createEngine, createLogger, type Engine, type Sql } from '@svc/core';
import { renderMetrics } from '@svc/core/observability';
import { checkWebhookUrl, isRefusedAddress, postWebhook, retryDelayMs, verifyWebhookSignature } from '@svc/core/internals';
import { TEST_ENCRYPTION_KEY, databaseSuite, sampleValue, seedJob, seedMachine, seedProcess, seedTenant, waitFor } from '@svc/testing';

/**
 * Webhook delivery in-process (docs/decisions/events.md): the SSRF guard checks the addresses a
 * host resolves to at every delivery, redirects are not followed, a delivery failing past the
 * give-up time is marked failed and its subscription disabled and audited. End to end with real
 * dispatchers: apps/dispatcher/test/webhooks.test.ts.
 */
const db = databaseSuite();
let sql: Sql;
const key = Buffer.from(TEST_ENCRYPTION_KEY, 'base64');
const logger = createLogger({ level: 'error', service: 'test' });
const open = { sealKey: key, allowInsecure: true, allowPrivateNetworks: true };
const strict = { sealKey: key, allowInsecure: true, allowPrivateNetworks: false };
let lenient: Engine;
let guarded: Engine;
let tenantId: string;
let processId: string;
let machineId: string;

/**
 * Answers every request with `status` — or with what `status(n)` says for the n-th (from 0) — and a
 * Location for redirects, recording what came.
 */
function receiver(status: number | ((n: number) => number), location?: string) {
  const got: string[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => { body += c; });
    req.on('end', () => {
      got.push(body);
      res.writeHead(typeof status === 'number' ? status : status(got.length - 1), location ? { Location: location } : {}).end();
    });
  });
  return {
    got,
    async start() {
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      return (server.address() as AddressInfo).port;
    },
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve); }),
  };
}

const actor = { actorType: 'user' as const, actorId: null, source: 'api' };

beforeAll(async () => {
  sql = db.sql;
  lenient = createEngine({ sql, logger, webhooks: open });
  guarded = createEngine({ sql, logger, webhooks: strict });
  tenantId = (await seedTenant(sql)).id;
  processId = (await seedProcess(sql, tenantId)).id;
  machineId = (await seedMachine(sql, tenantId)).row.id as string;
});

const jobCreated = () => seedJob(sql, tenantId, { process_id: processId, machine_id: machineId });
const deliveriesOf = (subscriptionId: string) =>
  sql<Array<{ status: string; attempts: number; last_status_code: number | null; last_error: string | null }>>`
    select status, attempts, last_status_code, last_error from webhook_deliveries where subscription_id = ${subscriptionId} order by event_xid, event_seq`;

/** Whether saving `url` is refused as a private address (the 422 on the field), private networks not allowed. */
function checkUrlRefusal(url: string): boolean {
  try {
    checkWebhookUrl(url, { allowInsecure: false, allowPrivateNetworks: false });
    return false;
  } catch {
    return true;
  }
}

describe('the SSRF guard', () => {
  it('refuses loopback, private, link-local, metadata and reserved addresses, and accepts public ones', () => {
    for (const a of ['127.0.0.1', '127.9.9.9', '10.0.0.1', '172.16.5.4', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '224.0.0.1',
      '::1', '::', 'fe80::1', 'fc00::1', 'fd12::1', '::ffff:10.0.0.1', '::ffff:127.0.0.1', 'not-an-ip']) {
      expect([a, isRefusedAddress(a)]).toEqual([a, true]);
    }
    for (const a of ['93.184.216.34', '8.8.8.8', '2606:4700:4700::1111']) expect([a, isRefusedAddress(a)]).toEqual([a, false]);
  });

  it('refuses the IPv6 forms that carry an IPv4 address (compatible, translated, 6to4, NAT64), whatever the address', () => {
    for (const a of ['::7f00:1', '::127.0.0.1', '::a00:1', '::808:808', '::ffff:0:7f00:1', '::ffff:0:808:808', '2002:7f00:1::', '2002:a00:1::1',
      '2002:808:808::1', '64:ff9b::7f00:1', '64:ff9b::808:808', '64:ff9b:1::7f00:1', '64:ff9b:1:ffff::1']) {
      expect([a, isRefusedAddress(a)]).toEqual([a, true]);
    }
    // the neighbours of those prefixes are ordinary addresses
    for (const a of ['2003::1', '2001:db9::1', '64:ff9a::1', '64:ff9b:2::1', '1::7f00:1']) expect([a, isRefusedAddress(a)]).toEqual([a, false]);
    // a URL literal is normalised by the URL parser (::127.0.0.1 becomes ::7f00:1) before it is checked
    for (const url of ['https://[::7f00:1]/', 'https://[::ffff:0:7f00:1]/', 'https://[2002:7f00:1::]/', 'https://[::127.0.0.1]/', 'https://[64:ff9b:1::a00:1]/']) {
      expect([url, checkUrlRefusal(url)]).toEqual([url, true]);
    }
  });

  it('checks what a name resolves to at delivery: localhost is refused and nothing is sent', async () => {
    const r = receiver(204);
    const port = await r.start();
    try {
      const res = await postWebhook(`http://localhost:${port}/x`, strict, {}, '{}', 5000);
      expect(res).toMatchObject({ ok: false, statusCode: null });
      expect(res.error).toBe('target address refused (private or local network)');
      const direct = await postWebhook(`http://127.0.0.1:${port}/x`, strict, {}, '{}', 5000);
      expect(direct.ok).toBe(false);
      expect(r.got).toEqual([]);
      // allowed when the server says so (tests, local development)
      expect((await postWebhook(`http://localhost:${port}/x`, open, {}, '{}', 5000)).ok).toBe(true);
      expect(r.got).toHaveLength(1);
    } finally {
      await r.close();
    }
  });

  it('a subscription saved while private networks were allowed is refused at delivery once they are not, and its error names no address', async () => {
    const r = receiver(204);
    const port = await r.start();
    try {
      // a literal address and a name that resolves inside: the admin learns that it was refused, not where it pointed
      for (const host of ['127.0.0.1', 'localhost']) {
        const sub = await lenient.events.webhooks.create(actor, tenantId, { url: `http://${host}:${port}/hook`, event_types: ['job.created'] });
        await jobCreated();
        const deliverer = guarded.events.deliverer({ retryBaseMs: 60_000 });
        await waitFor('an attempt', async () => {
          await deliverer.passOnce();
          return (await deliveriesOf(sub.id)).some((d) => d.attempts > 0);
        });
        await deliverer.close();
        const [d] = await deliveriesOf(sub.id);
        expect(d).toMatchObject({ status: 'pending', attempts: 1, last_status_code: null });
        expect(d!.last_error).toBe('target address refused (private or local network)');
        for (const leak of ['127.0.0.1', '::1', 'localhost', String(port)]) expect(d!.last_error).not.toContain(leak);
        // and the API shows the same text
        const [shown] = (await lenient.events.webhooks.deliveries(tenantId, sub.id, {})).data;
        expect(shown!.last_error).toBe(d!.last_error);
        await lenient.events.webhooks.delete(actor, tenantId, sub.id);
      }
      expect(r.got).toEqual([]);
    } finally {
      await r.close();
    }
  });
});

it('gives up on a receiver that takes the request and never answers, at the timeout', async () => {
  const held: http.ServerResponse[] = [];
  const server = http.createServer((req, res) => {
    req.resume();
    held.push(res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const res = await postWebhook(`http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, open, {}, '{}', 300);
    expect(res).toMatchObject({ ok: false, statusCode: null, error: 'timeout after 300 ms' });
    expect(res.durationMs).toBeGreaterThanOrEqual(290);
    expect(res.durationMs).toBeLessThan(5000);
    expect(held).toHaveLength(1);
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

it('a large answer still counts by its status, and a kept connection carries the next events', async () => {
  const sockets = new Set<unknown>();
  const bodies: string[] = [];
  const server = http.createServer((req, res) => {
    sockets.add(req.socket);
    let body = '';
    req.on('data', (c) => { body += c; });
    req.on('end', () => {
      bodies.push(body);
      // the first answer is far larger than the deliverer reads: it drops that connection
      res.writeHead(200).end(bodies.length === 1 ? 'x'.repeat(1_000_000) : '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const sub = await lenient.events.webhooks.create(actor, tenantId, {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, event_types: ['job.created'],
  });
  const deliverer = lenient.events.deliverer({});
  try {
    const jobs = [await jobCreated(), await jobCreated(), await jobCreated()];
    await waitFor('three delivered', async () => {
      await deliverer.passOnce();
      return (await deliveriesOf(sub.id)).filter((d) => d.status === 'delivered').length === 3;
    }, 30_000);
    expect(bodies.map((b) => (JSON.parse(b) as { data: { id: string } }).data.id)).toEqual(jobs.map((j) => j.id));
    expect((await deliveriesOf(sub.id)).map((d) => [d.status, d.attempts, d.last_status_code])).toEqual([
      ['delivered', 1, 200], ['delivered', 1, 200], ['delivered', 1, 200],
    ]);
    // the first connection was dropped with its answer; the next two events shared one
    expect(sockets.size).toBe(2);
  } finally {
    await deliverer.close();
    await lenient.events.webhooks.delete(actor, tenantId, sub.id);
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

it('does not follow a redirect', async () => {
  const elsewhere = receiver(204);
  const elsewherePort = await elsewhere.start();
  const r = receiver(302, `http://127.0.0.1:${elsewherePort}/stolen`);
  const port = await r.start();
  try {
    const res = await postWebhook(`http://127.0.0.1:${port}/hook`, open, {}, '{"a":1}', 5000);
    expect(res).toMatchObject({ ok: false, statusCode: 302, error: 'redirect not followed' });
    expect(r.got).toEqual(['{"a":1}']);
    expect(elsewhere.got).toEqual([]);
  } finally {
    await r.close();
    await elsewhere.close();
  }
});

it('gives a failing delivery up after the give-up time, and disables and audits its subscription', async () => {
  const r = receiver(500);
  const port = await r.start();
  try {
    const sub = await lenient.events.webhooks.create(actor, tenantId, { url: `http://127.0.0.1:${port}/hook`, event_types: ['job.created'] });
    await jobCreated();
    await jobCreated();
    const counted = async (outcome: string) => sampleValue((await renderMetrics()).body, 'svc_webhook_deliveries_total', { outcome }) ?? 0;
    const before = { retry: await counted('retry'), disabled: await counted('subscription_disabled') };
    // 2 s of failing before giving up: room for retries even when a loaded host spaces the passes out
    const deliverer = lenient.events.deliverer({ retryBaseMs: 20, giveUpAfterMs: 2_000 });
    await waitFor('the subscription disabled', async () => {
      await deliverer.passOnce();
      return !(await lenient.events.webhooks.get(tenantId, sub.id)).is_active;
    }, 30_000);
    const ds = await deliveriesOf(sub.id);
    // in order: the first was retried until given up; the second never went before it
    expect(ds[0]).toMatchObject({ status: 'failed', last_status_code: 500 });
    expect(ds[0]!.attempts).toBeGreaterThan(1);
    expect(ds[1]!.status).not.toBe('delivered');
    const read = await lenient.events.webhooks.get(tenantId, sub.id);
    expect(read).toMatchObject({ is_active: false, disabled_reason: 'failing_24h' });
    const audit = await sql`select actor_type, action, source from audit_log where resource_id = ${sub.id} order by id`;
    expect(audit.map((a) => a.action)).toEqual(['create_webhook', 'disable_webhook']);
    expect(audit[1]).toMatchObject({ actor_type: 'system', source: 'dispatcher' });
    // the attempts are counted by outcome (svc_webhook_deliveries_total)
    expect(await counted('retry')).toBeGreaterThan(before.retry);
    expect(await counted('subscription_disabled')).toBe(before.disabled + 1);
    // disabled: nothing more is attempted
    const attempts = r.got.length;
    await deliverer.passOnce();
    expect(r.got.length).toBe(attempts);
    // an admin turns it back on: the rest goes out once the receiver answers
    await lenient.events.webhooks.update(actor, tenantId, sub.id, { is_active: true });
    expect((await lenient.events.webhooks.get(tenantId, sub.id)).failing_since).toBeNull();
  } finally {
    await r.close();
  }
});

it('a failure stops the healthy path: the waiting events show as pending behind it and go out in order, once, after it', async () => {
  // 204 until told to fail; every body recorded
  let failing = false;
  const r = receiver(() => (failing ? 503 : 204));
  const { got } = r;
  const port = await r.start();
  try {
    const sub = await lenient.events.webhooks.create(actor, tenantId, { url: `http://127.0.0.1:${port}/hook`, event_types: ['job.created'] });
    const deliverer = lenient.events.deliverer({ retryBaseMs: 1 });
    const idOf = (body: string) => (JSON.parse(body) as { data: { id: string } }).data.id;
    const first = await jobCreated();
    await waitFor('the first delivered', async () => {
      await deliverer.passOnce();
      return got.length === 1;
    }, 30_000);
    // written once, after its attempt: delivered, one attempt, with its answer
    expect(await deliveriesOf(sub.id)).toEqual([{ status: 'delivered', attempts: 1, last_status_code: 204, last_error: null }]);

    failing = true;
    const later = [await jobCreated(), await jobCreated(), await jobCreated()];
    await waitFor('the second attempted', async () => {
      await deliverer.passOnce();
      return got.length >= 2;
    }, 30_000);
    // the next pass finds the failure and turns the events behind it into pending deliveries
    await waitFor('the backlog written', async () => {
      await deliverer.passOnce();
      return (await deliveriesOf(sub.id)).length === 4;
    }, 30_000);
    const blocked = await deliveriesOf(sub.id);
    expect(blocked.map((d) => d.status)).toEqual(['delivered', 'pending', 'pending', 'pending']);
    expect(blocked[1]!.attempts).toBeGreaterThanOrEqual(1);
    expect(blocked[1]!.last_status_code).toBe(503);
    expect(blocked.slice(2).every((d) => d.attempts === 0)).toBe(true);
    // nothing after the failing one was sent
    expect(new Set(got.slice(1).map(idOf))).toEqual(new Set([later[0]!.id]));
    expect((await lenient.events.webhooks.get(tenantId, sub.id)).failing_since).not.toBeNull();

    failing = false;
    const last = await jobCreated();
    await waitFor('everything delivered', async () => {
      await deliverer.passOnce();
      return (await deliveriesOf(sub.id)).filter((d) => d.status === 'delivered').length === 5;
    }, 30_000);
    const answered = got.map(idOf);
    const delivered = [first, ...later, last].map((j) => j.id);
    // each delivered once, in order (the failing one also had its failed attempts before)
    expect(answered.filter((id, i) => answered.indexOf(id) === i)).toEqual(delivered);
    expect(answered.slice(answered.lastIndexOf(later[0]!.id))).toEqual(delivered.slice(1));
    expect((await deliveriesOf(sub.id)).map((d) => d.status)).toEqual(['delivered', 'delivered', 'delivered', 'delivered', 'delivered']);
    expect((await lenient.events.webhooks.get(tenantId, sub.id)).failing_since).toBeNull();
    await lenient.events.webhooks.delete(actor, tenantId, sub.id);
  } finally {
    await r.close();
  }
});

it('a success ends a failing spell even when the same pass then fails: the failure starts a new clock, nothing is disabled', async () => {
  // 204 for the first request, 503 after
  const r = receiver((n) => (n === 0 ? 204 : 503));
  const port = await r.start();
  try {
    const sub = await lenient.events.webhooks.create(actor, tenantId, { url: `http://127.0.0.1:${port}/hook`, event_types: ['job.created'] });
    // failing for longer than the give-up time already (say, a test event that kept failing)
    await sql`update webhook_subscriptions set failing_since = now() - interval '10 minutes' where id = ${sub.id}`;
    await jobCreated();
    await jobCreated();
    const deliverer = lenient.events.deliverer({ retryBaseMs: 60_000, giveUpAfterMs: 60_000 });
    await waitFor('both attempted', async () => {
      await deliverer.passOnce();
      return r.got.length >= 2;
    }, 30_000);
    const [read] = await sql<Array<{ is_active: boolean; recent: boolean }>>`
      select is_active, failing_since > now() - interval '1 minute' as recent from webhook_subscriptions where id = ${sub.id}`;
    expect(read).toEqual({ is_active: true, recent: true });
    expect((await deliveriesOf(sub.id)).map((d) => [d.status, d.attempts])).toEqual([['delivered', 1], ['pending', 1]]);
    await lenient.events.webhooks.delete(actor, tenantId, sub.id);
  } finally {
    await r.close();
  }
});

it('signs an event that committed after a rotation with the new secret, even inside a pass that began before it', async () => {
  // the pass sends a full page of 500; at its last request the secret is rotated and one more
  // event committed, which the same pass reads on its next page
  const got: Array<{ body: string; timestamp: string; signature: string }> = [];
  let rotated: Promise<string> | null = null;
  let subId = '';
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => { body += c; });
    req.on('end', async () => {
      got.push({ body, timestamp: req.headers['svc-timestamp'] as string, signature: req.headers['svc-signature'] as string });
      if (got.length === 500) {
        rotated = lenient.events.webhooks.rotateSecret(actor, tenantId, subId).then(async (r) => {
          await sql`insert into events (tenant_id, type, data) values (${tenantId}, 'webhook.rotation.probe', '{}'::jsonb)`;
          return r.secret;
        });
        await rotated;
      }
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const port = (server.address() as AddressInfo).port;
    const sub = await lenient.events.webhooks.create(actor, tenantId, { url: `http://127.0.0.1:${port}/hook`, event_types: ['*'] });
    subId = sub.id;
    await sql`insert into events (tenant_id, type, data) select ${tenantId}, 'webhook.rotation.page', '{}'::jsonb from generate_series(1, 500)`;
    const deliverer = lenient.events.deliverer({ retryBaseMs: 1 });
    // usually one pass; more when another database's open transaction holds the feed's horizon
    // back (the horizon is the server's), which ends a pass early
    await waitFor('the probe delivered', async () => {
      await deliverer.passOnce();
      return got.length >= 501;
    }, 30_000);
    expect(got.length).toBe(501);
    const fresh = await rotated!;
    const last = got[500]!;
    expect(JSON.parse(last.body).type).toBe('webhook.rotation.probe');
    const sig = { timestamp: last.timestamp, signature: last.signature };
    expect([verifyWebhookSignature(fresh, sig, last.body), verifyWebhookSignature(sub.secret, sig, last.body)]).toEqual([true, false]);
    await deliverer.close();
    await lenient.events.webhooks.delete(actor, tenantId, sub.id);
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

it('backs off exponentially with jitter, capped at an hour', () => {
  for (let n = 1; n <= 30; n++) {
    const full = Math.min(10_000 * 2 ** (n - 1), 3_600_000);
    const d = retryDelayMs(10_000, n);
    expect(d).toBeGreaterThanOrEqual(full / 2);
    expect(d).toBeLessThanOrEqual(full);
  }
});

it('keeps a pending delivery unique by its event, and a delivered one out of that key', async () => {
  const sub = await lenient.events.webhooks.create(actor, tenantId, { url: 'http://127.0.0.1:9/hook', event_types: ['job.created'] });
  await lenient.events.webhooks.update(actor, tenantId, sub.id, { is_active: false });
  const row = (status: string) => sql`
    insert into webhook_deliveries (tenant_id, subscription_id, event_id, event_type, event_xid, event_seq, status, body)
    values (${tenantId}, ${sub.id}, 'e1', 'job.created', '42'::xid8, 7, ${status}, '{}')`;
  await row('delivered');
  await row('delivered');
  await row('pending');
  await expect(row('pending')).rejects.toMatchObject({ code: '23505' });
  // outside the order (tests, redeliveries) a delivery has no position: any number may wait
  const loose = () => sql`
    insert into webhook_deliveries (tenant_id, subscription_id, event_id, event_type, in_order, body)
    values (${tenantId}, ${sub.id}, 'e1', 'job.created', false, '{}')`;
  await loose();
  await loose();
  expect((await deliveriesOf(sub.id)).map((d) => d.status).sort()).toEqual(['delivered', 'delivered', 'pending', 'pending', 'pending']);
  await lenient.events.webhooks.delete(actor, tenantId, sub.id);
});
