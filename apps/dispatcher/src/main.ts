import { ConfigError, createDirectSql, createLogger, createPooledSql, databaseSettings, onShutdownSignals, parseConfig, startMetricsServer, startTracing, stopTracing } from '@svc/core';
import { createDeliveryThread } from './delivery-thread';
import { createDispatcher } from './dispatcher';

/** `node apps/dispatcher/dist/main.js`: configuration from the environment (see README). */
async function main(): Promise<void> {
  const config = parseConfig(process.env);
  startTracing(process.env, 'dispatcher');
  const logger = createLogger({ level: config.logLevel, service: 'dispatcher' });
  const sql = createPooledSql(databaseSettings(config), { max: 10 });
  // the outbox relay's LISTEN needs a session of its own (docs/decisions/pgbouncer.md)
  const directSql = createDirectSql(databaseSettings(config), sql);
  // webhooks go out from a thread of their own that yields the CPU to the rest (delivery-thread.ts)
  const dispatcher = createDispatcher({ config, sql, directSql, logger, deliverer: createDeliveryThread(logger) });
  // handlers before the start (and its "dispatcher started" line): a signal meanwhile drains once
  // the start is done instead of killing the process
  const started = dispatcher.start();
  const metrics = config.metricsPort === undefined
    ? null
    : startMetricsServer({ port: config.metricsPort, host: config.host, token: config.metricsToken, logger });
  onShutdownSignals(logger, async () => {
    await started.catch(() => undefined);
    await (await metrics?.catch(() => null))?.close();
    await dispatcher.close();
    await sql.end({ timeout: 5 });
    if (directSql !== sql) await directSql.end({ timeout: 5 });
    await stopTracing();
  });
  await Promise.all([started, metrics]);
}

main().catch((err) => {
  console.error(err instanceof ConfigError ? err.message : err);
  process.exit(1);
});
