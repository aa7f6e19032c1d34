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
  // this process lives for the deliverer, until close()
  const deliverer = engine.events.deliverer({ ...delivererTimingsOf(config), outage: new DbOutage(logger), holdsProcessOpen: true });
  return {
    start() {
      deliverer.start();
      logger.info('webhook deliverer started', { prefix: config.redisPrefix });
    },
    close: () => deliverer.close(),
  };
}
