import { DbOutage, createEngine, delivererTimingsOf, webhookSettingsOf, type Config, type Logger, type Sql } from '@svc/core';

/**
 * A process that only delivers webhooks (`DISPATCHER_ROLE=deliver`, docs/decisions/events.md):
 * sized, replicated and CPU-limited by the operator like any other process, so deliveries never
 * take CPU from the dispatch work and the work never holds them back. Any number may run: each
 * subscription's turn is leased across them.
 */
export interface DelivererProcess {
  start(): void;
  close(): Promise<void>;
}

export function createDelivererProcess(deps: { config: Config; sql: Sql; logger: Logger }): DelivererProcess {
  const { config, sql, logger } = deps;
  const engine = createEngine({ sql, logger, webhooks: webhookSettingsOf(config) });
  const deliverer = engine.events.deliverer({ ...delivererTimingsOf(config), outage: new DbOutage(logger) });
  // the deliverer's timers do not hold a process open (it also runs inside a dispatcher); this
  // process lives for them, until close()
  let alive: NodeJS.Timeout | null = null;
  return {
    start() {
      alive = setInterval(() => undefined, 1 << 30);
      deliverer.start();
      logger.info('webhook deliverer started', { prefix: config.redisPrefix });
    },
    async close() {
      if (alive) clearInterval(alive);
      alive = null;
      await deliverer.close();
    },
  };
}
