/**
 * Configuration is parsed once, at start-up, from an environment-like record passed in by the
 * app (core never reads process.env itself), and fails fast with one clear sentence.
 */

export interface Config {
  nodeEnv: string;
  host: string;
  port: number;
  databaseUrl: string;
  redisUrl: string;
  /** Namespace for every Redis key and BullMQ queue of this deployment (or test run). */
  redisPrefix: string;
  /** 32-byte key for AES-256-GCM encryption of asset credentials. */
  assetEncryptionKey: Buffer;
  /** How many reverse proxies in front of the API append to X-Forwarded-For; 0 = use the socket. */
  trustedProxyCount: number;
  logLevel: string;
  accessTokenTtlSeconds: number;
  /** A machine with no heartbeat for this long is offline. */
  machineOfflineAfterSeconds: number;
  /** How long an authenticated API key stays in the per-process cache (revocations also clear it at once). */
  apiKeyCacheTtlMs: number;
  /** How often buffered last_used_at values are written to Postgres. */
  lastUsedFlushMs: number;
  /** Default monthly execution quota of a new tenant. */
  defaultMonthlyQuota: number;
  /** Dispatcher: period of the sweeps (timeouts, offline machines, item retries, consumer starts). */
  dispatchSweepMs: number;
  /** Dispatcher: period of the reconciler that re-adds pending jobs to BullMQ from Postgres. */
  dispatchReconcileMs: number;
}

export class ConfigError extends Error {}

type Env = Record<string, string | undefined>;

function int(env: Env, name: string, fallback: number, min = 0, max = Number.MAX_SAFE_INTEGER): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be an integer between ${min} and ${max}, got "${raw}".`);
  }
  return value;
}

function str(env: Env, name: string, fallback: string): string {
  const raw = env[name];
  return raw === undefined || raw === '' ? fallback : raw;
}

export function parseEncryptionKey(raw: string | undefined): Buffer {
  if (!raw) {
    throw new ConfigError(
      'ASSET_ENCRYPTION_KEY is not set: give it 32 random bytes in base64 (npm start creates one in .data/ for you).',
    );
  }
  const key = /^[0-9a-f]{64}$/i.test(raw) ? Buffer.from(raw, 'hex') : Buffer.from(raw, 'base64');
  if (key.length !== 32) {
    throw new ConfigError('ASSET_ENCRYPTION_KEY must be 32 bytes, as 64 hex characters or base64.');
  }
  return key;
}

export function parseConfig(env: Env): Config {
  return {
    nodeEnv: str(env, 'NODE_ENV', 'development'),
    host: str(env, 'HOST', '127.0.0.1'),
    port: int(env, 'PORT', 3000, 0, 65535),
    databaseUrl: str(env, 'DATABASE_URL', 'postgres://postgres@127.0.0.1:5432/svc'),
    redisUrl: str(env, 'REDIS_URL', 'redis://127.0.0.1:6379'),
    redisPrefix: str(env, 'REDIS_PREFIX', 'svc'),
    assetEncryptionKey: parseEncryptionKey(env.ASSET_ENCRYPTION_KEY),
    trustedProxyCount: int(env, 'TRUST_PROXY_COUNT', 0, 0, 10),
    logLevel: str(env, 'LOG_LEVEL', 'info'),
    accessTokenTtlSeconds: int(env, 'ACCESS_TOKEN_TTL_SECONDS', 12 * 3600, 60),
    machineOfflineAfterSeconds: int(env, 'MACHINE_OFFLINE_AFTER_SECONDS', 30, 1),
    apiKeyCacheTtlMs: int(env, 'API_KEY_CACHE_TTL_MS', 30_000, 0),
    lastUsedFlushMs: int(env, 'LAST_USED_FLUSH_MS', 500, 10, 60_000),
    defaultMonthlyQuota: int(env, 'DEFAULT_MONTHLY_QUOTA', 10_000, 0),
    dispatchSweepMs: int(env, 'DISPATCH_SWEEP_MS', 1000, 50, 60_000),
    dispatchReconcileMs: int(env, 'DISPATCH_RECONCILE_MS', 5000, 100, 600_000),
  };
}
