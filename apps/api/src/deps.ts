import { createApiKeyStore, type ApiKeyStore } from './auth/api-key-store';
import { createStreamRegistry, type StreamRegistry } from './http/streams';
import { createAuthThrottle, type AuthThrottle } from './auth/throttle';
import {
  DbOutage, createBullDispatch, createEngine, type BullDispatch, recordArchiveFromConfig, webhookSettingsOf, type Engine, createLogger, createRedis, createPooledSql, databaseSettings, redisKeys, type ApiKeyChangeListener, type Config, type Logger, type RedisClient, type RedisKeys, type Sql,
} from '@svc/core';

/**
 * Everything a request handler may use; built once in main.ts (or by a test) and passed in. What a
 * command causes is written to the outbox in its transaction and the dispatcher publishes it
 * (docs/decisions/outbox.md); a trigger, a stop and an input answer also publish theirs through
 * `atOnce` right after their commit, so that their robot hears of them one hop sooner.
 */
export interface ApiDeps {
  config: Config;
  sql: Sql;
  redis: RedisClient;
  keys: RedisKeys;
  logger: Logger;
  /** X-API-Key look-ups (cached, invalidated across processes) and last_used_at buffering; start()/close() it. */
  apiKeys: ApiKeyStore;
  /** The domain's commands (packages/core/src/engine.ts): handlers parse, call one and render. */
  engine: Engine;
  /** Failed credential checks and sign-ins per address and account: what refuses guessing before any look-up. */
  authThrottle: AuthThrottle;
  /** The long-lived reads (event streams): capped, and ended when their credential lapses; close() ends them. */
  streams: StreamRegistry;
  /** The process's view of Postgres outages: its background loops log an outage once, together. */
  outage: DbOutage;
  /** BullMQ and Redis publishes of the effects published at once (packages/core/src/outbox/at-once.ts); close() it. */
  atOnce: BullDispatch;
  /** The console's built files (apps/console/dist when absent), served at /console. */
  consoleDir?: string;
}

export function buildDeps(config: Config, overrides: Partial<ApiDeps> = {}): ApiDeps {
  const sql = overrides.sql ?? createPooledSql(databaseSettings(config), { max: 20 });
  const redis = overrides.redis ?? createRedis(config.redis);
  const keys = redisKeys(config.redisPrefix);
  const logger = overrides.logger ?? createLogger({ level: config.logLevel, service: 'api' });
  const outage = overrides.outage ?? new DbOutage(logger);
  // on the shared connection: machine queues are opened as jobs are triggered for them
  const atOnce = overrides.atOnce ?? createBullDispatch({ redis, prefix: config.redisPrefix, logger });
  // a key revoked or rotated here leaves every API process's cache at once; the store reads keys through the engine
  let apiKeys: ApiKeyStore | undefined = overrides.apiKeys;
  const keyChanges: ApiKeyChangeListener = { invalidate: (message) => apiKeys!.invalidate(message) };
  const engine = overrides.engine ??
    createEngine({
      sql, logger, atOnce, apiKeyChanges: keyChanges, webhooks: webhookSettingsOf(config), assetKey: config.assetEncryptionKey,
      claimFloor: config.claimFloor, claimFloorEveryMs: config.claimFloorEveryMs,
      // the exports read it back when asked for archived rows (docs/decisions/export.md)
      recordArchive: recordArchiveFromConfig(config.archive),
    });
  apiKeys ??= createApiKeyStore({
    engine, redis, logger, outage, channel: keys.apiKeyInvalidations, ttlMs: config.apiKeyCacheTtlMs, flushMs: config.lastUsedFlushMs,
  });
  const streams =
    overrides.streams ??
    createStreamRegistry({ engine, redis, keys, logger, perUser: config.eventStreamsPerUser, perWorkspace: config.eventStreamsPerWorkspace });
  const authThrottle =
    overrides.authThrottle ?? createAuthThrottle({ redis, keys, logger, failuresPerAddress: config.authFailuresPerAddress });
  return { config, sql, redis, keys, logger, apiKeys, engine, streams, authThrottle, outage, atOnce, consoleDir: overrides.consoleDir };
}
