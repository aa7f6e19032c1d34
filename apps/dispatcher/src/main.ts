import { ConfigError, createLogger, createSql, onShutdownSignals, parseConfig } from '@svc/core';
import { createDispatcher } from './dispatcher';

/** `node apps/dispatcher/dist/main.js`: configuration from the environment (see README). */
async function main(): Promise<void> {
  const config = parseConfig(process.env);
  const logger = createLogger({ level: config.logLevel, service: 'dispatcher' });
  const sql = createSql(config.databaseUrl, { max: 10 });
  const dispatcher = createDispatcher({ config, sql, logger });
  // handlers before the start (and its "dispatcher started" line): a signal meanwhile drains once
  // the start is done instead of killing the process
  const started = dispatcher.start();
  onShutdownSignals(logger, async () => {
    await started.catch(() => undefined);
    await dispatcher.close();
    await sql.end({ timeout: 5 });
  });
  await started;
}

main().catch((err) => {
  console.error(err instanceof ConfigError ? err.message : err);
  process.exit(1);
});
