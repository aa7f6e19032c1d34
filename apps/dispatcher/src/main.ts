import { ConfigError, createDirectSql, createLogger, createPooledSql, databaseSettings, onShutdownSignals, parseConfig } from '@svc/core';
import { startMetricsServer, startTracing, stopTracing } from '@svc/core/observability';
import { createDelivererProcess } from './deliverer';
import { createDispatcher } from './dispatcher';

/**
 * `node apps/dispatcher/dist/main.js`: configuration from the environment (see README).
 * DISPATCHER_ROLE says what this process runs: the dispatch work, webhook delivery, or both.
 */
async function main(): Promise<void> {
  const config = parseConfig(process.env);
  const deliverOnly = config.dispatcherRole === 'deliver';
  startTracing(process.env, deliverOnly ? 'deliverer' : 'dispatcher');
  const logger = createLogger({ level: config.logLevel, service: deliverOnly ? 'deliverer' : 'dispatcher' });
  const sql = createPooledSql(databaseSettings(config), { max: deliverOnly ? 4 : 10 });
  // the outbox relay's LISTEN needs a session of its own (docs/decisions/pgbouncer.md)
  const directSql = deliverOnly ? sql : createDirectSql(databaseSettings(config), sql);
  const work = deliverOnly ? createDelivererProcess({ config, sql, logger }) : createDispatcher({ config, sql, directSql, logger });
  // handlers before the start (and its "started" line): a signal meanwhile drains once the start
  // is done instead of killing the process
  const started = Promise.resolve(work.start());
  const metrics = config.metricsPort === undefined
    ? null
    : startMetricsServer({ port: config.metricsPort, host: config.host, token: config.metricsToken, logger });
  onShutdownSignals(logger, async () => {
    await started.catch(() => undefined);
    await (await metrics?.catch(() => null))?.close();
    await work.close();
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
