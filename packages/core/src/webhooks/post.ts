import type { LookupFunction } from 'node:net';
import type { Client } from 'undici';
import type { WebhookSettings } from './subscriptions';
import { RefusedTarget, resolveTarget } from './target';

/**
 * One webhook request on undici's HTTP/1.1 client (docs/decisions/events.md, "Throughput of one
 * subscription"): a request costs the deliverer about half the CPU of node:http's, and delivery
 * is one request per event.
 */

/**
 * undici, loaded on the first webhook request: a process that sends none (the API, the CLI, a
 * robot) does not pay for loading it at start.
 */
let undiciModule: typeof import('undici') | null = null;
function undici(): typeof import('undici') {
  undiciModule ??= require('undici') as typeof import('undici');
  return undiciModule;
}

export interface AttemptResult {
  ok: boolean;
  statusCode: number | null;
  error: string | null;
  durationMs: number;
}

interface CheckedAddress {
  address: string;
  family: number;
}

/** Past this many kept connections (subscriptions × origins), only the most recently used ones stay open. */
const MAX_CLIENTS = 64;
/** An idle kept connection is closed after this long (receivers often close theirs at 5 s). */
const KEEP_ALIVE_MS = 4000;

/**
 * A deliverer's kept connections: one client per subscription, receiver origin and checked
 * address, so that a kept connection always goes to an address that was checked, a name that now
 * resolves elsewhere gets a new connection to the new (checked) address, and a subscription never
 * waits behind another's request on a shared connection (a client is one connection: two tenants
 * whose receivers share a host would otherwise queue on it; docs/decisions/webhook-fairness.md).
 */
export class WebhookConnections {
  private readonly clients = new Map<string, Client>();

  client(url: URL, checked: CheckedAddress, scope = ''): Client {
    const key = `${scope}|${url.origin}|${checked.address}`;
    const found = this.clients.get(key);
    if (found && !found.destroyed && !found.closed) {
      // most recently used last: the first one is the one to close when there are too many
      this.clients.delete(key);
      this.clients.set(key, found);
      return found;
    }
    // the connection goes to the address just checked, whatever a second resolution would say
    const lookup: LookupFunction = (_host, opts, cb) => {
      if ((opts as { all?: boolean }).all) (cb as unknown as (e: null, a: CheckedAddress[]) => void)(null, [checked]);
      else cb(null, checked.address, checked.family);
    };
    const client = new (undici().Client)(url.origin, { connect: { lookup }, keepAliveTimeout: KEEP_ALIVE_MS, keepAliveMaxTimeout: KEEP_ALIVE_MS });
    client.on('connectionError', () => undefined);
    this.clients.set(key, client);
    if (this.clients.size > MAX_CLIENTS) {
      const [oldest, c] = this.clients.entries().next().value as [string, Client];
      this.clients.delete(oldest);
      void c.close().catch(() => undefined);
    }
    return client;
  }

  async close(): Promise<void> {
    const all = [...this.clients.values()];
    this.clients.clear();
    await Promise.all(all.map((c) => c.destroy().catch(() => undefined)));
  }
}

/**
 * One POST to the subscription's URL: the address checked first, no redirect followed, a hard
 * timeout over the whole exchange. Without `connections`, on a connection of its own; with them,
 * on the kept connection of `scope` (the subscription).
 */
export async function postWebhook(
  target: string,
  settings: WebhookSettings,
  headers: Record<string, string>,
  body: string,
  timeoutMs: number,
  connections?: WebhookConnections,
  scope?: string,
): Promise<AttemptResult> {
  const started = Date.now();
  const done = (r: Omit<AttemptResult, 'durationMs'>): AttemptResult => ({ ...r, durationMs: Date.now() - started });
  let url: URL;
  let checked: CheckedAddress;
  try {
    url = new URL(target);
    checked = await resolveTarget(url, settings);
  } catch (err) {
    return done({ ok: false, statusCode: null, error: err instanceof RefusedTarget ? err.message : `DNS: ${(err as Error).message}` });
  }
  const own = connections ? null : new WebhookConnections();
  const abort = new AbortController();
  const deadline = setTimeout(() => abort.abort(), timeoutMs);
  try {
    const res = await (connections ?? own!).client(url, checked, scope).request({
      method: 'POST',
      path: `${url.pathname}${url.search}`,
      headers: { ...headers, 'content-type': 'application/json', 'user-agent': 'svc-webhooks/1' },
      body,
      signal: abort.signal,
    });
    // the answer's body is read and dropped, so that the connection can carry the next request;
    // past 128 KiB the connection is closed instead, and the status still counts
    await res.body.dump().catch(() => undefined);
    const code = res.statusCode;
    return done({ ok: code >= 200 && code < 300, statusCode: code, error: code >= 300 && code < 400 ? 'redirect not followed' : null });
  } catch (err) {
    const message = abort.signal.aborted ? `timeout after ${timeoutMs} ms` : (err as Error).message;
    return done({ ok: false, statusCode: null, error: message.slice(0, 500) });
  } finally {
    clearTimeout(deadline);
    if (own) await own.close();
  }
}
