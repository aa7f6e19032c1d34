import { ConfigError, createLogger, createSql, parseConfig } from '@svc/core';
import { createDispatcher } from './dispatcher';

/** `node apps/dispatcher/dist/main.js`: configuration from the environment (see README). */
async function main(): Promise<void> {
  const config = parseConfig(process.env);
  const logger = createLogger({ level: config.logLevel, service: 'dispatcher' });
  const sql = createSql(config.databaseUrl, { max: 10 });
  const dispatcher = createDispatcher({ config, sql, logger });
  await dispatcher.start();

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) {
      logger.warn('second signal: exiting now', { signal });
      process.exit(1);
    }
    stopping = true;
    logger.info('draining', { signal });
    await dispatcher.close();
    await sql.end({ timeout: 5 });
    logger.info('stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

main().catch((err) => {
  console.error(err instanceof ConfigError ? err.message : err);
  process.exit(1);
});
