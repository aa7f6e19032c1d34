import { noopDispatch, type DispatchPort, createLogger, createRedis, createSql, redisKeys, type Config, type Logger, type Redis, type RedisKeys, type Sql } from '@svc/core';

/** Everything a request handler may use; built once in main.ts (or by a test) and passed in. */
export interface ApiDeps {
  config: Config;
  sql: Sql;
  redis: Redis;
  keys: RedisKeys;
  logger: Logger;
  /** Nudges the dispatch engine after a commit (see DispatchPort). */
  dispatch: DispatchPort;
}

export function buildDeps(config: Config, overrides: Partial<ApiDeps> = {}): ApiDeps {
  return {
    config,
    sql: overrides.sql ?? createSql(config.databaseUrl, { max: 20 }),
    redis: overrides.redis ?? createRedis(config.redisUrl),
    keys: redisKeys(config.redisPrefix),
    logger: overrides.logger ?? createLogger({ level: config.logLevel, service: 'api' }),
    // replaced by the BullMQ-backed port once the dispatch engine exists
    dispatch: overrides.dispatch ?? noopDispatch,
  };
}
