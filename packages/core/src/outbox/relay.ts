import type { Sql } from '../db/sql';
import { startChildSpan, tracingEnabled, type ChildSpan, type TraceCarrier } from '../tracing';
import { outboxPublished } from '../metrics/domain';
import { DbOutage, isConnectionError } from '../db/outage';
import type { DispatchJobRef, DispatchPort } from '../dispatch/port';
import type { Logger } from '../logger';
import type { Effect } from './effects';

/**
 * The outbox relay (docs/decisions/outbox.md): takes committed effects from the `outbox` table,
 * publishes them through a DispatchPort and deletes them, in one transaction. Rows are taken
 * `FOR UPDATE SKIP LOCKED`, so relays in several dispatcher replicas share the work without
 * waiting for each other; a publish that fails rolls the transaction back and the rows stay for
 * the next pass. A crash after the publish and before the commit publishes them again, which
 * every effect tolerates (see Effect).
 */

interface OutboxRow {
  id: number;
  kind: Effect['kind'];
  payload: Record<string, unknown>;
}

/** Rows a pass takes at most; a full pass is followed by another at once. */
const PASS_ROWS = 1000;

function asEffect(row: OutboxRow): Effect {
  const p = row.payload as never as Record<string, never>;
  if (row.kind === 'jobs-created') {
    const jobs = (p.jobs as unknown as Array<Record<string, unknown>>).map(
      (j): DispatchJobRef => ({
        id: j.id as string,
        tenant_id: j.tenant_id as string,
        machine_id: j.machine_id as string,
        priority: j.priority as number,
        sla_due_at: j.sla_due_at ? new Date(j.sla_due_at as string) : null,
        not_before: j.not_before ? new Date(j.not_before as string) : null,
        ...(typeof j.attempt === 'number' ? { attempt: j.attempt } : {}),
      }),
    );
    return { kind: 'jobs-created', jobs };
  }
  return { kind: row.kind, ...p } as Effect;
}

/**
 * Tracing on: the publication of each effect that carries its command's trace context is a span
 * of this dispatcher under it, and the jobs an effect creates continue from that span (their
 * BullMQ data carries it to the agent).
 */
export function traceEffects(effects: Effect[], carrierOf: (i: number) => TraceCarrier | undefined, attributesOf: (i: number) => Record<string, string | number>): ChildSpan[] {
  const spans: ChildSpan[] = [];
  effects.forEach((e, i) => {
    const carrier = carrierOf(i);
    const span = carrier && startChildSpan(`outbox publish ${e.kind}`, carrier, { 'svc.outbox.kind': e.kind, ...attributesOf(i) });
    if (!span) return;
    spans.push(span);
    if (e.kind === 'jobs-created') for (const j of e.jobs) j.trace = span.carrier;
  });
  return spans;
}

/** Nudges of one queue are folded into one per pass (they re-read Postgres anyway). */
export async function publishEffects(port: DispatchPort, effects: Effect[]): Promise<void> {
  const jobs: DispatchJobRef[] = [];
  const ready = new Map<string, { id: string; tenant_id: string }>();
  const failed = new Set<string>();
  const rest: Array<() => Promise<void>> = [];
  for (const e of effects) {
    switch (e.kind) {
      case 'jobs-created':
        jobs.push(...e.jobs);
        break;
      case 'queue-ready':
        ready.set(e.queue_id, { id: e.queue_id, tenant_id: e.tenant_id });
        break;
      case 'items-failed':
        failed.add(e.queue_id);
        break;
      case 'job-stop':
        rest.push(() => port.jobStopRequested({ id: e.job_id, machine_id: e.machine_id }));
        break;
      case 'job-input':
        rest.push(() => port.jobInputAnswered({ id: e.job_id, machine_id: e.machine_id }));
        break;
      case 'run-ended':
        rest.push(() => port.runEnded({ id: e.job_id, machine_id: e.machine_id }, e.reason));
        break;
      case 'machine-online':
        rest.push(() => port.machineOnline({ id: e.machine_id, tenant_id: e.tenant_id }));
        break;
      default: {
        const unknown: never = e;
        throw new Error(`unknown effect ${(unknown as { kind: string }).kind}`);
      }
    }
  }
  await Promise.all([
    jobs.length ? port.jobsCreated(jobs) : undefined,
    ...[...ready.values()].map((q) => port.queueItemsReady(q)),
    ...[...failed].map((id) => port.queueItemsFailed({ id })),
    ...rest.map((fn) => fn()),
  ]);
}

export interface PassOptions {
  /** queues whose nudges wait (their rows stay in the table) */
  deferQueues?: readonly string[];
  /** rows taken at most (PASS_ROWS) */
  limit?: number;
}

/**
 * One pass: takes up to `limit` effects (oldest first, none of `deferQueues`' nudges) that no
 * other relay holds, publishes and deletes them. Returns the effects published.
 */
export async function relayOnce(sql: Sql, port: DispatchPort, opts: PassOptions = {}): Promise<Effect[]> {
  const deferQueues = opts.deferQueues ?? [];
  return sql.begin(async (tx) => {
    const rows = await tx<OutboxRow[]>`
      delete from outbox where id in (
        select id from outbox
        ${deferQueues.length
          ? tx`where not (kind in ('queue-ready', 'items-failed') and payload->>'queue_id' = any(${deferQueues as string[]}::text[]))`
          : tx``}
        order by id limit ${opts.limit ?? PASS_ROWS}
        for update skip locked)
      returning id, kind, payload`;
    rows.sort((a, b) => a.id - b.id);
    const effects = rows.map(asEffect);
    const spans = tracingEnabled()
      ? traceEffects(effects, (i) => (rows[i]!.payload as { trace?: TraceCarrier }).trace, (i) => ({ 'svc.outbox.id': rows[i]!.id }))
      : null;
    try {
      await publishEffects(port, effects);
    } catch (err) {
      spans?.forEach((s) => s.end(err as Error));
      throw err;
    }
    spans?.forEach((s) => s.end());
    return effects;
  }).then((effects) => {
    for (const e of effects as Effect[]) outboxPublished.inc({ kind: e.kind });
    return effects;
  }) as Promise<Effect[]>;
}

/** Publishes every effect recorded so far (tests, and tools that run without a dispatcher). */
export async function drainOutbox(sql: Sql, port: DispatchPort, opts: Pick<PassOptions, 'limit'> = {}): Promise<number> {
  let total = 0;
  for (;;) {
    const n = (await relayOnce(sql, port, opts)).length;
    total += n;
    if (n === 0 || n < (opts.limit ?? PASS_ROWS)) return total;
  }
}

export interface OutboxRelayOptions {
  sql: Sql;
  /**
   * Where LISTEN runs (default `sql`): a session of its own on Postgres itself. Through a pooler in
   * transaction mode the LISTEN would stay on a server session the pooler lends to others.
   */
  listenSql?: Sql;
  port: DispatchPort;
  logger: Logger;
  /** the process's view of Postgres outages, shared so that one outage is one log line per process */
  outage?: DbOutage;
  /** Passes happen at least this often without a notification (missed NOTIFYs, a LISTEN reconnecting). */
  pollMs?: number;
  /**
   * A queue's nudges are published at most once per window; those that come within it stay in
   * the table and go at its end. Under thousands of item adds per second a queue thus costs the
   * dispatcher a few nudges per second, and consumers already running keep taking items anyway.
   */
  nudgeWindowMs?: number;
}

export interface OutboxRelay {
  start(): Promise<void>;
  /** A pass now (or right after the current one). */
  wake(): void;
  /** Resolves when no pass is running or due (tests). */
  idle(): Promise<void>;
  close(): Promise<void>;
}

export const OUTBOX_CHANNEL = 'outbox';
export const OUTBOX_POLL_MS = 2000;
export const NUDGE_WINDOW_MS = 100;

export function createOutboxRelay(opts: OutboxRelayOptions): OutboxRelay {
  const { sql, port, logger } = opts;
  const pollMs = opts.pollMs ?? OUTBOX_POLL_MS;
  const windowMs = opts.nudgeWindowMs ?? NUDGE_WINDOW_MS;
  const outage = opts.outage ?? new DbOutage(logger);
  /** queue id → when its last nudge went out */
  const lastNudge = new Map<string, number>();
  let running: Promise<void> | null = null;
  let again = false;
  let closed = false;
  let pollTimer: NodeJS.Timeout | null = null;
  let windowTimer: NodeJS.Timeout | null = null;
  let unlisten: (() => Promise<void>) | null = null;
  let publishFailing = false;

  function deferred(now: number): string[] {
    const out: string[] = [];
    for (const [queueId, at] of lastNudge) {
      if (now - at < windowMs) out.push(queueId);
      else lastNudge.delete(queueId);
    }
    return out;
  }

  function scheduleWindowEnd(): void {
    if (windowTimer || closed || lastNudge.size === 0) return;
    windowTimer = setTimeout(() => {
      windowTimer = null;
      wake();
    }, windowMs);
    windowTimer.unref?.();
  }

  async function pass(): Promise<void> {
    for (;;) {
      again = false;
      const now = Date.now();
      const skip = deferred(now);
      let effects: Effect[];
      try {
        effects = await relayOnce(sql, port, { deferQueues: skip });
        outage.ok();
        if (publishFailing) logger.info('outbox relay publishing again');
        publishFailing = false;
      } catch (err) {
        if (!outage.failed(err, 'outbox relay') && !publishFailing) {
          // Redis away: the rows stay, the poll tries again
          publishFailing = true;
          logger.warn('outbox relay could not publish; effects kept for the next pass', { err: (err as Error).message });
        }
        return;
      }
      for (const e of effects) if (e.kind === 'queue-ready' || e.kind === 'items-failed') lastNudge.set(e.queue_id, now);
      // rows of deferred queues may be waiting: look again when their window ends
      if (skip.length || effects.some((e) => e.kind === 'queue-ready' || e.kind === 'items-failed')) scheduleWindowEnd();
      if (closed || (!again && effects.length < PASS_ROWS)) return;
    }
  }

  function wake(): void {
    if (closed) return;
    if (running) {
      again = true;
      return;
    }
    running = pass().finally(() => {
      running = null;
      if (again && !closed) wake();
    });
  }

  /**
   * A notification names what its statement wrote (migration 0005): nudges of queues inside their
   * window wait for the window's end (already scheduled), so they wake nothing now.
   */
  function notified(payload: string): void {
    if (payload !== '') {
      const now = Date.now();
      const waiting = payload.split(',').every((entry) => {
        const at = entry.indexOf(':');
        const queueId = at > 0 ? entry.slice(at + 1) : null;
        const last = queueId ? lastNudge.get(queueId) : undefined;
        return last !== undefined && now - last < windowMs && windowTimer !== null;
      });
      if (waiting) return;
    }
    wake();
  }

  async function listen(): Promise<void> {
    try {
      const sub = await (opts.listenSql ?? sql).listen(OUTBOX_CHANNEL, (payload) => notified(payload), () => wake());
      unlisten = () => sub.unlisten();
    } catch (err) {
      // Postgres away at start: polling covers it, and the poll tries to listen again
      if (!isConnectionError(err)) logger.warn('outbox LISTEN failed', { err: (err as Error).message });
    }
  }

  function poll(): void {
    if (closed) return;
    pollTimer = setTimeout(() => {
      pollTimer = null;
      if (!unlisten) void listen();
      wake();
      poll();
    }, pollMs);
    pollTimer.unref?.();
  }

  return {
    async start() {
      await listen();
      wake();
      poll();
    },
    wake,
    async idle() {
      while (running) await running;
    },
    async close() {
      closed = true;
      if (pollTimer) clearTimeout(pollTimer);
      if (windowTimer) clearTimeout(windowTimer);
      if (running) await running.catch(() => undefined);
      if (unlisten) await unlisten().catch(() => undefined);
    },
  };
}
