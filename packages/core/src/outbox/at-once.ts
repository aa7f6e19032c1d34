import type { Sql, Tx } from '../db/sql';
import type { DispatchPort } from '../dispatch/port';
import type { Logger } from '../logger';
import { outboxPublishedAtOnce } from '../metrics/domain';
import { effectsOfTransaction, type Effect } from './effects';
import { publishEffects, traceEffects } from './relay';
import { currentTraceCarrier, tracingEnabled } from '../tracing';

export interface AtOnceDeps {
  sql: Sql;
  logger?: Logger;
  /**
   * Where the commands someone waits on publish their effects right after their commit (the API's
   * BullMQ dispatch); absent, the outbox relay alone publishes them (docs/decisions/outbox.md).
   */
  atOnce?: DispatchPort;
}

/**
 * Runs `fn` in a transaction and, once it has committed, publishes the effects it recorded on
 * that transaction through `deps.atOnce` without waiting for the outbox relay: a triggered job,
 * a stop or an input answer reaches its robot one hop sooner. The outbox rows stay: the relay
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
