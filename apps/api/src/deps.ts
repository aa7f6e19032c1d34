import { createApiKeyStore, type ApiKeyStore } from './auth/api-key-store';
import { createEngine, type Engine, createLogger, createRedis, createSql, redisKeys, type Config, type Logger, type Redis, type RedisKeys, type Sql } from '@svc/core';

/**
 * Everything a request handler may use; built once in main.ts (or by a test) and passed in. No
 * dispatch port: what a command causes is written to the outbox in its transaction, and the
 * dispatcher publishes it (docs/decisions/outbox.md).
 */
export interface ApiDeps {
  config: Config;
  sql: Sql;
  redis: Redis;
  keys: RedisKeys;
  logger: Logger;
  /** X-API-Key look-ups (cached, invalidated across processes) and last_used_at buffering; start()/close() it. */
  apiKeys: ApiKeyStore;
  /** The domain's commands (packages/core/src/engine.ts): handlers parse, call one and render. */
  engine: Engine;
}

export function buildDeps(config: Config, overrides: Partial<ApiDeps> = {}): ApiDeps {
  const sql = overrides.sql ?? createSql(config.databaseUrl, { max: 20 });
  const redis = overrides.redis ?? createRedis(config.redisUrl);
  const keys = redisKeys(config.redisPrefix);
  const logger = overrides.logger ?? createLogger({ level: config.logLevel, service: 'api' });
  const apiKeys =
    overrides.apiKeys ??
    createApiKeyStore({
      sql, redis, logger, channel: keys.apiKeyInvalidations, ttlMs: config.apiKeyCacheTtlMs, flushMs: config.lastUsedFlushMs,
    });
  return {
    config,
    sql,
    redis,
    keys,
    logger,
    apiKeys,
    // a key revoked or rotated here leaves every API process's cache at once
    engine: overrides.engine ?? createEngine({ sql, logger, apiKeyChanges: apiKeys }),
  };
}
