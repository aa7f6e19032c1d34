import type { Sql, Tx } from '../db/sql';
import type { DispatchPort } from '../dispatch/port';
import type { Logger } from '../logger';
import { outboxPublishedAtOnce } from '../metrics/domain';
import { effectsOfTransaction, type Effect } from './effects';
import { NUDGE_WINDOW_MS, publishEffects, traceEffects } from './relay';
import { currentTraceCarrier, tracingEnabled } from '../tracing';

export interface AtOnceDeps {
  sql: Sql;
  logger?: Logger;
  /**
   * Where effects go right after their commit (the process's BullMQ dispatch: the API's for the
   * commands someone waits on and its adds' nudges, the dispatcher's for the consumer jobs it
   * creates); absent, the outbox relay alone publishes them (docs/decisions/outbox.md).
   */
  atOnce?: DispatchPort;
}

/**
 * Runs `fn` in a transaction and, once it has committed, publishes the effects it recorded on
 * that transaction through `deps.atOnce` without waiting for the outbox relay: a triggered job,
 * a stop, an input answer or a queue's new consumer job reaches its robot one hop sooner. The outbox rows stay: the relay
 * publishes them again, which every effect tolerates, and publishes them alone when this process
 * dies after its commit or Redis refuses the publish here. The caller's answer does not wait for
 * the publish (a Redis that hangs delays the robot, never the request).
 */
export async function inTransactionPublishingAtOnce<T>(deps: AtOnceDeps, fn: (tx: Tx) => Promise<T>): Promise<T> {
  const recorded: Effect[] = [];
  const result = await deps.sql.begin(async (tx) => {
    if (deps.atOnce) effectsOfTransaction.set(tx, recorded);
    return fn(tx as Tx);
  });
  const port = deps.atOnce;
  if (port && recorded.length > 0) {
    const effects = recorded.map((e) => (e.kind === 'jobs-created' ? { ...e, jobs: e.jobs.map((j) => ({ ...j })) } : e));
    // tracing on: a publication span under the command's, which the jobs' runs continue (as the relay's)
    const trace = tracingEnabled() ? currentTraceCarrier() : undefined;
    const spans = trace ? traceEffects(effects, () => trace, () => ({ 'svc.outbox.at_once': 'true' })) : [];
    void publishEffects(port, effects).then(
      () => {
        spans.forEach((s) => s.end());
        effects.forEach((e) => outboxPublishedAtOnce.inc({ kind: e.kind }));
      },
      (err: Error) => {
        spans.forEach((s) => s.end(err));
        deps.logger?.debug('effects left to the outbox relay', { err: err.message });
      },
    );
  }
  return result as T;
}

/** queue id → when this process last nudged it at once (nudgeQueueAtOnce) */
const lastNudged = new Map<string, number>();

/**
 * After items were added and committed: the queue's `queue-ready` nudge goes to the dispatcher
 * right away, one outbox relay pass sooner, so that an idle queue's consumer starts sooner. At
 * most once per queue per NUDGE_WINDOW_MS in each process, as the relay folds its nudges: a queue
 * under thousands of adds a second costs the dispatcher a few nudges a second, and its consumers
 * already running take the items anyway. The add's statement recorded the same nudge in the
 * outbox, which the relay publishes too (the safety net: this process dying after its commit,
 * Redis refusing here, or a nudge folded here that the dispatcher had to see).
 */
export function nudgeQueueAtOnce(deps: Pick<AtOnceDeps, 'atOnce' | 'logger'>, queue: { id: string; tenant_id: string }): void {
  const port = deps.atOnce;
  if (!port) return;
  // a monotonic clock: a wall clock stepping back would hold a queue's nudges for as long
  const now = performance.now();
  const last = lastNudged.get(queue.id);
  if (last !== undefined && now - last < NUDGE_WINDOW_MS) return;
  lastNudged.set(queue.id, now);
  if (lastNudged.size > 10_000) for (const [id, at] of lastNudged) if (now - at >= NUDGE_WINDOW_MS) lastNudged.delete(id);
  port.queueItemsReady({ id: queue.id, tenant_id: queue.tenant_id }).then(
    () => outboxPublishedAtOnce.inc({ kind: 'queue-ready' }),
    (err: Error) => deps.logger?.debug('queue nudge left to the outbox relay', { err: err.message }),
  );
}
