import { randomUUID } from 'node:crypto';
import type { Sql, Tx } from '../db/sql';
import type { Logger } from '../logger';
import { DbOutage } from '../db/outage';
import { recordAudit } from '../audit/audit';
import { eventBody, readEventsAfter } from '../events/feed';
import { signWebhook } from './sign';
import { openSecret, type WebhookSettings } from './subscriptions';
import { postWebhook, WebhookConnections, type AttemptResult } from './post';
import { countWebhookOutcome } from '../metrics/domain';
import { claimSubscriptions, releaseSubscription, type ClaimedSubscription } from './claim';
import { WEBHOOK_DELIVERY_STATUS_TRANSITIONS as T, deliveryStatusInSql, deliveryStatusSql } from './transitions';

/**
 * Webhook delivery, run by every dispatcher replica (docs/decisions/events.md). A replica takes a
 * subscription with work by a lease (a row update, committed: no transaction stays open during
 * the HTTP calls, which would hold the feed's horizon back) and sends the events after its cursor
 * in order: straight from the feed while the receiver answers (each written once, delivered,
 * after its attempt), as delivery rows behind a failure, where the first one not yet delivered
 * blocks the ones after it until it is delivered or given up. Another replica takes the subscription only once the
 * lease has lapsed, so each event is sent once unless a replica dies mid-send (at least once).
 *
 * Each subscription's turn runs on its own (docs/decisions/webhook-fairness.md): nothing waits for
 * another subscription's requests, the deliverer holds at most `maxInFlight` turns and a tenant at
 * most `perTenant` leases, and subscriptions are taken in turns across tenants (claim.ts), so one
 * tenant's slow or failing receivers cannot hold another tenant's deliveries back.
 */

export interface DelivererOptions {
  sql: Sql;
  logger: Logger;
  settings: WebhookSettings;
  /** first retry after about this long, doubling up to an hour, with jitter (10 s) */
  retryBaseMs?: number;
  /** a delivery failing for this long is given up; a subscription failing this long is disabled (24 h) */
  giveUpAfterMs?: number;
  /** how often subscriptions are looked at (1 s) */
  pollMs?: number;
  /** per request (10 s) */
  timeoutMs?: number;
  /** how long a replica holds a subscription (60 s) */
  leaseMs?: number;
  /** a subscription's turn ends after about this long, and it goes behind the others of its tenant (15 s) */
  turnMs?: number;
  /** turns this deliverer runs at once (32) */
  maxInFlight?: number;
  /** leases one tenant holds at once, over every replica (8) */
  perTenant?: number;
  /** the process's view of Postgres outages, shared so that one outage is one log line per process */
  outage?: DbOutage;
  /**
   * whether the deliverer's timer keeps the process alive: true in a process that lives only to
   * deliver; false (default) where it runs beside other work, which decides when the process ends
   */
  holdsProcessOpen?: boolean;
}

export interface WebhookDeliverer {
  start(): void;
  /** Takes the subscriptions with work (as many as the limits let) and waits for their turns (tests). */
  passOnce(): Promise<number>;
  close(): Promise<void>;
}

interface PendingDelivery {
  id: string;
  event_id: string;
  event_type: string;
  body: string;
  attempts: number;
  first_attempt_at: Date | null;
  next_attempt_at: Date;
  created_at: Date;
}

/** The columns of a PendingDelivery, for both reads of pending deliveries. */
const PENDING_COLUMNS = ['id', 'event_id', 'event_type', 'body', 'attempts', 'first_attempt_at', 'next_attempt_at', 'created_at'];

const EVENTS_PER_READ = 500;
/** In-order deliveries read at once: one query per page instead of one per event. */
const DELIVERIES_PER_READ = 100;
const MAX_BACKOFF_MS = 3_600_000;

/** The wait before attempt n+1 after n failures: exponential, capped at an hour, half of it jitter. */
export function retryDelayMs(baseMs: number, failures: number): number {
  const full = Math.min(baseMs * 2 ** Math.max(0, failures - 1), MAX_BACKOFF_MS);
  return Math.round(full / 2 + Math.random() * (full / 2));
}

export function createWebhookDeliverer(opts: DelivererOptions): WebhookDeliverer {
  const { sql, logger, settings } = opts;
  const retryBaseMs = opts.retryBaseMs ?? 10_000;
  const giveUpAfterMs = opts.giveUpAfterMs ?? 24 * 3_600_000;
  const pollMs = opts.pollMs ?? 1000;
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const leaseMs = opts.leaseMs ?? 60_000;
  // room for one more request before the lease ends, whatever turnMs says
  const turnMs = Math.min(opts.turnMs ?? 15_000, leaseMs - timeoutMs - 5000);
  const maxInFlight = opts.maxInFlight ?? 32;
  const perTenant = opts.perTenant ?? 8;
  const owner = randomUUID();
  const connections = new WebhookConnections();
  const outage = opts.outage ?? new DbOutage(logger);
  let timer: NodeJS.Timeout | null = null;
  let ticking: Promise<unknown> | null = null;
  let closed = false;
  /** the turns under way, by subscription */
  const turns = new Map<string, Promise<void>>();

  /** The events after the cursor become delivery rows (those of the subscribed types) and the cursor moves past them. */
  async function enqueue(sub: ClaimedSubscription): Promise<void> {
    const all = sub.event_types.includes('*');
    for (let reads = 0; reads < 20; reads++) {
      const events = await readEventsAfter(sql, sub.tenant_id, { xid: sub.cursor_xid, seq: sub.cursor_seq }, { types: null, limit: EVENTS_PER_READ });
      if (events.length === 0) return;
      const wanted = events.filter((e) => all || sub.event_types.includes(e.type));
      const last = events[events.length - 1]!;
      const rows = wanted.map((e) => ({
        event_id: e.id, event_type: e.type, xid: e.xid, seq: e.seq,
        body: eventBody(e),
      }));
      const moved = await sql.begin(async (tx) => {
        const res = await tx`
          update webhook_subscriptions set cursor_xid = ${last.xid}::text::xid8, cursor_seq = ${last.seq}::bigint
          where id = ${sub.id} and lease_owner = ${owner}`;
        if (res.count === 0) return false;
        if (rows.length) {
          await tx`
            insert into webhook_deliveries (tenant_id, subscription_id, event_id, event_type, event_xid, event_seq, body)
            select ${sub.tenant_id}, ${sub.id}, r.event_id, r.event_type, r.xid::xid8, r.seq, r.body
            from jsonb_to_recordset(${JSON.stringify(rows)}::text::jsonb) as r(event_id text, event_type text, xid text, seq bigint, body text)
            on conflict (subscription_id, event_xid, event_seq) where status = 'pending' do nothing`;
        }
        return true;
      });
      if (!moved) return;
      sub.cursor_xid = last.xid;
      sub.cursor_seq = last.seq;
      if (events.length < EVENTS_PER_READ) return;
    }
  }

  /** Successes not yet written (one statement per page instead of one per event). */
  interface Delivered { id: string; status_code: number | null; duration_ms: number }

  async function recordDelivered(done: Delivered[]): Promise<void> {
    if (done.length === 0) return;
    const rows = done.splice(0);
    await sql`
      update webhook_deliveries d set status = ${deliveryStatusSql(sql, T.deliver.to)}, attempts = d.attempts + 1, first_attempt_at = coalesce(d.first_attempt_at, now()),
        last_attempt_at = now(), last_status_code = r.status_code, last_error = null, last_duration_ms = r.duration_ms, updated_at = now()
      from jsonb_to_recordset(${JSON.stringify(rows)}::text::jsonb) as r(id uuid, status_code int, duration_ms int)
      where d.id = r.id and ${deliveryStatusInSql(sql, 'd.status', T.deliver.from)}`;
    countWebhookOutcome('delivered', rows.length);
  }

  /** Signs and posts one event's body. */
  function send(sub: ClaimedSubscription, eventId: string, eventType: string, body: string, secret: string): Promise<AttemptResult> {
    const timestamp = Math.floor(Date.now() / 1000);
    return postWebhook(sub.url, settings, {
      'svc-event-id': eventId,
      'svc-event-type': eventType,
      'svc-timestamp': String(timestamp),
      'svc-signature': signWebhook(secret, timestamp, body),
    }, body, timeoutMs, connections, sub.id);
  }

  /**
   * Sends one delivery and records its outcome. With `batch`, a success of a subscription that is
   * not failing is only noted there, to be written with the page's others (a crash before that
   * sends them again: at least once); anything else is written at once, after the batch.
   */
  async function attempt(sub: ClaimedSubscription, d: PendingDelivery, secret: string = openSecret(settings.sealKey, sub), batch?: Delivered[]): Promise<boolean> {
    const result = await send(sub, d.event_id, d.event_type, d.body, secret);
    if (result.ok && sub.failing_since === null && batch) {
      batch.push({ id: d.id, status_code: result.statusCode, duration_ms: result.durationMs });
      return true;
    }
    if (batch) await recordDelivered(batch);
    return recordOutcome(sub, d, result);
  }

  /** Writes one attempt's outcome: retry or give up, the subscription's failing state, disabling it. */
  async function recordOutcome(sub: ClaimedSubscription, d: Pick<PendingDelivery, 'id' | 'attempts' | 'first_attempt_at'>, result: AttemptResult): Promise<boolean> {
    if (result.ok && sub.failing_since === null) {
      // delivered, and the subscription was not failing: one statement
      await sql`
        update webhook_deliveries set status = ${deliveryStatusSql(sql, T.deliver.to)}, attempts = attempts + 1, first_attempt_at = coalesce(first_attempt_at, now()),
          last_attempt_at = now(), last_status_code = ${result.statusCode}, last_error = null,
          last_duration_ms = ${result.durationMs}, updated_at = now()
        where id = ${d.id} and ${deliveryStatusInSql(sql, 'status', T.deliver.from)}`;
      countWebhookOutcome('delivered', 1);
      return true;
    }
    const outcome = await sql.begin((tx) => writeOutcome(tx, sub, d, result)) as Outcome;
    return reportOutcome(sub, outcome);
  }

  type Outcome = 'delivered' | 'retry' | 'given_up' | 'disabled';

  /** The statements of an outcome, in the caller's transaction (metrics and logs after its commit: reportOutcome). */
  async function writeOutcome(tx: Tx, sub: ClaimedSubscription, d: Pick<PendingDelivery, 'id' | 'attempts' | 'first_attempt_at'>, result: AttemptResult): Promise<Outcome> {
    const firstAt = d.first_attempt_at ?? new Date();
    const givenUp = !result.ok && Date.now() - firstAt.getTime() >= giveUpAfterMs;
    // bound, as it always was: one statement for the three outcomes, all from `pending`
    const status = result.ok ? T.deliver.to : givenUp ? T.giveUp.to : T.retry.to;
    const next = new Date(Date.now() + retryDelayMs(retryBaseMs, d.attempts + 1));
    await tx`
      update webhook_deliveries set status = ${status}, attempts = attempts + 1, first_attempt_at = coalesce(first_attempt_at, now()),
        last_attempt_at = now(), last_status_code = ${result.statusCode}, last_error = ${result.error},
        last_duration_ms = ${result.durationMs}, next_attempt_at = ${next}, updated_at = now()
      where id = ${d.id} and ${deliveryStatusInSql(tx, 'status', T.retry.from)}`;
    if (result.ok) {
      await tx`update webhook_subscriptions set failing_since = null where id = ${sub.id} and failing_since is not null`;
      sub.failing_since = null;
      return 'delivered';
    }
    const [s] = await tx<Array<{ failing_since: Date; is_active: boolean; too_long: boolean }>>`
      update webhook_subscriptions set failing_since = coalesce(failing_since, now()) where id = ${sub.id}
      returning failing_since, is_active, failing_since <= now() - make_interval(secs => ${giveUpAfterMs / 1000}) as too_long`;
    // a later success in this pass must clear it (not the one-statement path above)
    if (s) sub.failing_since = s.failing_since;
    if (!s?.is_active || !s.too_long) return givenUp ? 'given_up' : 'retry';
    await tx`update webhook_subscriptions set is_active = false, disabled_reason = 'failing_24h', updated_at = now() where id = ${sub.id}`;
    await recordAudit(tx, {
      tenantId: sub.tenant_id, actorType: 'system', action: 'disable_webhook', source: 'dispatcher', resourceType: 'webhook',
      resourceId: sub.id, details: { reason: 'failing_24h', since: s.failing_since.toISOString() },
    });
    return 'disabled';
  }

  /** Counts a committed outcome; true when the deliveries after it may go. */
  function reportOutcome(sub: ClaimedSubscription, outcome: Outcome): boolean {
    countWebhookOutcome(outcome === 'disabled' ? 'subscription_disabled' : outcome, 1);
    if (outcome === 'disabled') {
      logger.warn('webhook subscription disabled after failing too long', { subscription_id: sub.id, tenant_id: sub.tenant_id });
      return false;
    }
    return outcome !== 'retry';
  }

  /**
   * The in-order deliveries already written (those behind a failure), a page at a time: the first
   * one not delivered (nor given up) stops the rest. True when none is left.
   */
  async function drainPending(sub: ClaimedSubscription, secret: string, until: number): Promise<boolean> {
    const batch: Delivered[] = [];
    try {
      for (;;) {
        if (closed || Date.now() >= until) return false;
        const page = await sql<PendingDelivery[]>`
          select ${sql(PENDING_COLUMNS)} from webhook_deliveries
          where subscription_id = ${sub.id} and status = 'pending' and in_order
          order by event_xid, event_seq limit ${DELIVERIES_PER_READ}`;
        for (const d of page) {
          if (d.next_attempt_at.getTime() > Date.now()) return false;
          if (closed || Date.now() >= until) return false;
          if (!(await attempt(sub, d, secret, batch))) return false;
        }
        await recordDelivered(batch);
        if (page.length < DELIVERIES_PER_READ) return true;
      }
    } finally {
      await recordDelivered(batch);
    }
  }

  /**
   * The healthy path: nothing is waiting behind a failure, so the events after the cursor are sent
   * straight from the feed and written once, after their attempt (delivered, in one statement per
   * page, with the cursor's move; without the body, which the event in the feed still holds: a
   * redelivery rebuilds it from there). The first failure becomes a pending delivery and stops the pass;
   * the events after it wait in the feed and are turned into deliveries at the next pass
   * (enqueue), where an operator sees them waiting. A crash before the write sends them again.
   */
  async function sendFromFeed(sub: ClaimedSubscription, initialSecret: string, until: number): Promise<void> {
    const all = sub.event_types.includes('*');
    let secret = initialSecret;
    while (!closed && Date.now() < until) {
      const events = await readEventsAfter(sql, sub.tenant_id, { xid: sub.cursor_xid, seq: sub.cursor_seq }, { types: null, limit: EVENTS_PER_READ, withSecretOf: sub.id });
      if (events.length === 0) return;
      const sealed = events[0]!.secret_sealed;
      // deleted meanwhile: nothing more to send; rotated meanwhile: the new secret from this page on
      if (!sealed) return;
      if (!sealed.equals(sub.secret_sealed)) {
        sub.secret_sealed = sealed;
        secret = openSecret(settings.sealKey, sub);
      }
      const delivered: Array<Record<string, unknown>> = [];
      let failure: { row: Record<string, unknown>; result: AttemptResult } | null = null;
      let handled = -1;
      for (let i = 0; i < events.length; i++) {
        const e = events[i]!;
        if (all || sub.event_types.includes(e.type)) {
          if (closed || Date.now() >= until) break;
          const body = eventBody(e);
          const result = await send(sub, e.id, e.type, body, secret);
          const row = { event_id: e.id, event_type: e.type, xid: e.xid, seq: e.seq, status_code: result.statusCode, duration_ms: result.durationMs };
          if (!result.ok) {
            failure = { row: { ...row, body }, result };
            handled = i;
            break;
          }
          delivered.push(row);
        }
        handled = i;
      }
      if (handled < 0) return;
      const upTo = events[handled]!;
      // a success ends a failing spell, even if this page then fails again: that failure starts a new one
      const clearFailing = delivered.length > 0 && sub.failing_since !== null;
      if (clearFailing) sub.failing_since = null;
      const failed = await sql.begin(async (tx) => {
        const res = await tx`
          update webhook_subscriptions set cursor_xid = ${upTo.xid}::text::xid8, cursor_seq = ${upTo.seq}::bigint
            ${clearFailing ? tx`, failing_since = null` : tx``}
          where id = ${sub.id} and lease_owner = ${owner}`;
        // the lease lapsed: whoever holds it now sends these again (at least once)
        if (res.count === 0) return false;
        if (delivered.length) {
          await tx`
            insert into webhook_deliveries (tenant_id, subscription_id, event_id, event_type, event_xid, event_seq,
              status, attempts, first_attempt_at, last_attempt_at, last_status_code, last_duration_ms)
            select ${sub.tenant_id}, ${sub.id}, r.event_id, r.event_type, r.xid::xid8, r.seq,
              ${deliveryStatusSql(tx, T.deliver.to)}, 1, now(), now(), r.status_code, r.duration_ms
            from jsonb_to_recordset(${JSON.stringify(delivered)}::text::jsonb)
              as r(event_id text, event_type text, xid text, seq bigint, status_code int, duration_ms int)`;
        }
        if (!failure) return null;
        // the failed event becomes a pending delivery with this attempt on it, in the same transaction
        const f = failure.row;
        const [row] = await tx<Array<{ id: string }>>`
          insert into webhook_deliveries (tenant_id, subscription_id, event_id, event_type, event_xid, event_seq, body)
          values (${sub.tenant_id}, ${sub.id}, ${f.event_id as string}, ${f.event_type as string}, ${f.xid as string}::text::xid8, ${f.seq as string}::bigint, ${f.body as string})
          on conflict (subscription_id, event_xid, event_seq) where status = 'pending' do nothing
          returning id`;
        // (a conflict cannot happen here: this path runs only while no in-order delivery is pending)
        return row ? writeOutcome(tx, sub, { id: row.id, attempts: 0, first_attempt_at: null }, failure.result) : null;
      }) as Outcome | null | false;
      if (failed === false) return;
      sub.cursor_xid = upTo.xid;
      sub.cursor_seq = upTo.seq;
      if (delivered.length) countWebhookOutcome('delivered', delivered.length);
      if (failure) {
        if (failed) reportOutcome(sub, failed);
        return;
      }
      if (handled < events.length - 1 || events.length < EVENTS_PER_READ) return;
    }
  }

  async function deliverFor(sub: ClaimedSubscription, until: number): Promise<void> {
    try {
      // tests and redeliveries: no order to keep
      const loose = await sql<PendingDelivery[]>`
        select ${sql(PENDING_COLUMNS)} from webhook_deliveries
        where subscription_id = ${sub.id} and status = 'pending' and not in_order and next_attempt_at <= now()
        order by created_at limit 20`;
      await Promise.all(loose.map((d) => attempt(sub, d)));
      const secret = openSecret(settings.sealKey, sub);
      const [blocked] = await sql`select 1 from webhook_deliveries where subscription_id = ${sub.id} and status = 'pending' and in_order limit 1`;
      if (blocked) {
        // behind a failure: the waiting events become deliveries, so the backlog shows in the list
        await enqueue(sub);
        if (!(await drainPending(sub, secret, until))) return;
      }
      await sendFromFeed(sub, secret, until);
    } finally {
      await releaseSubscription(sql, owner, sub.id).catch(() => undefined);
    }
  }

  function reportFailure(err: unknown): void {
    if (!outage.failed(err, 'webhook delivery')) logger.warn('webhook delivery failed', { err: (err as Error).message });
  }

  /**
   * Takes what the free slots allow and starts a turn for each, without waiting for them: a slow
   * receiver holds its own slot and nothing else. A turn cut short by its deadline probably left
   * work behind, so the loop looks again at once instead of after a poll.
   */
  async function fill(): Promise<Array<Promise<void>>> {
    const subs = await claimSubscriptions(sql, owner, { free: maxInFlight - turns.size, perTenant, leaseMs, running: [...turns.keys()] });
    return subs.map((sub) => {
      const until = Date.now() + turnMs;
      const turn = deliverFor(sub, until)
        .then(() => outage.ok(), reportFailure)
        .finally(() => {
          turns.delete(sub.id);
          if (Date.now() >= until) wake();
        });
      turns.set(sub.id, turn);
      return turn;
    });
  }

  function schedule(delayMs: number): void {
    if (closed) return;
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = null;
      ticking = fill()
        .then(() => outage.ok(), reportFailure)
        .finally(() => {
          ticking = null;
          schedule(pollMs);
        });
    }, delayMs);
    if (!opts.holdsProcessOpen) timer.unref?.();
  }

  /** A slot came free with work likely waiting: the next look is now (unless one is under way). */
  function wake(): void {
    if (timer && !ticking) schedule(0);
  }

  return {
    start: () => schedule(pollMs),
    async passOnce() {
      const started = await fill();
      await Promise.all(started);
      return started.length;
    },
    async close() {
      closed = true;
      if (timer) clearTimeout(timer);
      timer = null;
      if (ticking) await ticking;
      // each turn stops at its next request (10 s at most)
      await Promise.all(turns.values());
      await connections.close();
    },
  };
}
