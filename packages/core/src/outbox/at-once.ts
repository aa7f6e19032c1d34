import type { Sql, Tx } from '../db/sql';
import type { DispatchPort } from '../dispatch/port';
import type { Logger } from '../logger';
import { outboxPublishedAtOnce } from '../metrics/domain';
import { effectsOfTransaction, type Effect } from './effects';
import { publishEffects } from './relay';

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
    const effects = recorded;
    void publishEffects(port, effects).then(
      () => effects.forEach((e) => outboxPublishedAtOnce.inc({ kind: e.kind })),
      (err: Error) => deps.logger?.debug('effects left to the outbox relay', { err: err.message }),
    );
  }
  return result as T;
}
