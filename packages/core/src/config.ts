import { DatabaseSettingsError, parseDatabaseSettings, type PoolerMode } from './db/pooler';

/**
 * Configuration is parsed once, at start-up, from an environment-like record passed in by the
 * app (core never reads process.env itself), and fails fast with one clear sentence.
 */

import type { RedisTarget } from './redis';

/** The longest ping period of robots' connections (MACHINE_PING_MS), and its default. */
export const MAX_MACHINE_PING_MS = 15_000;

/** What a dispatcher process runs (Config.dispatcherRole). */
export const DISPATCHER_ROLES = ['all', 'dispatch', 'deliver'] as const;
export type DispatcherRole = (typeof DISPATCHER_ROLES)[number];

export interface Config {
  nodeEnv: string;
  host: string;
  port: number;
  databaseUrl: string;
  /** Postgres itself for LISTEN and migrations (DATABASE_DIRECT_URL, else DATABASE_URL; db/pooler.ts). */
  databaseDirectUrl: string;
  /** DATABASE_POOLER: `transaction` when DATABASE_URL is PgBouncer in transaction mode. */
  databasePooler: PoolerMode;
  /** One Redis server (`REDIS_URL`) or the seed nodes of a Redis Cluster (`REDIS_CLUSTER_NODES`); `createRedis(config.redis)`. */
  redis: RedisTarget;
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
  /** how often the API pings each robot connection; one that answered nothing since the last ping is cut */
  machinePingMs: number;
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
  /** Dispatcher: how late a schedule's tick may still fire; older ticks were missed (docs/decisions/schedules.md). */
  scheduleMisfireGraceSeconds: number;
  /** Dispatcher: days after a job ends before its log moves to the archive (fractions allowed; 0 = at once). */
  logRetentionDays: number;
  /** Days the event feed keeps events (docs/decisions/events.md). */
  eventRetentionDays: number;
  /** Where retention archives items and jobs (docs/decisions/retention.md); null: scopes that archive wait. */
  archive: ArchiveSettings | null;
  /** Dispatcher: period of the retention pass. */
  retentionEveryMs: number;
  /** Dispatcher: the share of wall time the retention pass's batches may take (docs/decisions/retention.md). */
  retentionDuty: number;
  /** Webhooks to http:// URLs accepted (local development). */
  webhookAllowInsecure: boolean;
  /** Webhooks to loopback, private, link-local and metadata addresses accepted (tests, local development). */
  webhookAllowPrivateNetworks: boolean;
  /** Dispatcher: first webhook retry after about this long, doubling up to an hour. */
  webhookRetryBaseMs: number;
  /** Dispatcher: a webhook delivery failing this long is given up, a subscription failing this long disabled. */
  webhookGiveUpSeconds: number;
  /** Dispatcher: how often webhook subscriptions are looked at. */
  webhookPollMs: number;
  /**
   * What a dispatcher process runs: `dispatch` (the relay, sweeps and nudges), `deliver` (webhook
   * delivery only: the deliverer, scaled on its own) or `all` (both, one process for small setups).
   */
  dispatcherRole: DispatcherRole;
  /** Dispatcher and agent: serve GET /metrics on this port (unset: no metrics server). The API serves /metrics on its own port. */
  metricsPort?: number;
  /** When set, /metrics asks for `Authorization: Bearer <token>`. */
  metricsToken?: string;
  /** API: how long one read of the platform's state gauges from Postgres answers scrapes. */
  metricsStateTtlMs: number;
  /** API: queues with their own series in the queue gauges; the rest are summed into `_other`. */
  metricsMaxQueues: number;
  /** API: event streams open at once per user, and per workspace (across replicas). */
  eventStreamsPerUser: number;
  eventStreamsPerWorkspace: number;
  /** API: failed credential checks per source address and minute before its look-ups are refused (429). */
  authFailuresPerAddress: number;
  /** API: password verifications running at once in one process (the rest wait their turn). */
  passwordHashConcurrency: number;
  /**
   * CLAIM_FLOOR (docs/decisions/claim-floor.md): `on`, the take starts past each queue's claim
   * floor and the dispatcher keeps the floors; `auto` (the default), the dispatcher keeps them only
   * while a snapshot older than CLAIM_FLOOR_ENGAGE_S holds vacuum back, and the take reads past
   * them while there are any; `off`, never (a dispatcher removes them, so none is left to go stale).
   * Set it alike on the API and the dispatchers.
   */
  claimFloor: ClaimFloorMode;
  /** Dispatcher, CLAIM_FLOOR=auto: the age of the oldest snapshot from which the floors are kept (CLAIM_FLOOR_ENGAGE_S). */
  claimFloorEngageSeconds: number;
  /** Dispatcher: period of the claim floors' recomputation (CLAIM_FLOOR_EVERY_MS). */
  claimFloorEveryMs: number;
}

export class ConfigError extends Error {}

function database(env: Env): Pick<Config, 'databaseUrl' | 'databaseDirectUrl' | 'databasePooler'> {
  try {
    const s = parseDatabaseSettings(env);
    return { databaseUrl: s.url, databaseDirectUrl: s.directUrl, databasePooler: s.pooler };
  } catch (err) {
    throw err instanceof DatabaseSettingsError ? new ConfigError(err.message) : err;
  }
}

type Env = Record<string, string | undefined>;

export const CLAIM_FLOOR_MODES = ['auto', 'on', 'off'] as const;
export type ClaimFloorMode = (typeof CLAIM_FLOOR_MODES)[number];

function int(env: Env, name: string, fallback: number, min = 0, max = Number.MAX_SAFE_INTEGER): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be an integer between ${min} and ${max}, got "${raw}".`);
  }
  return value;
}

function num(env: Env, name: string, fallback: number, min = 0, max = Number.MAX_SAFE_INTEGER): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be a number between ${min} and ${max}, got "${raw}".`);
  }
  return value;
}

function bool(env: Env, name: string): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '' || raw === '0' || raw === 'false') return false;
  if (raw === '1' || raw === 'true') return true;
  throw new ConfigError(`${name} must be true or false, got "${raw}".`);
}

function oneOf<T extends string>(env: Env, name: string, values: readonly T[], fallback: T): T {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if ((values as readonly string[]).includes(raw)) return raw as T;
  throw new ConfigError(`${name} must be one of ${values.join(', ')}, got "${raw}".`);
}

function str(env: Env, name: string, fallback: string): string {
  const raw = env[name];
  return raw === undefined || raw === '' ? fallback : raw;
}

/**
 * Keys anyone can read in this repository or its history: the fallback docker-compose.yml once
 * shipped (35 bytes, so also refused for its length), and every key made of one repeated byte
 * (the all-zero key of scripts/endpoint-table.mjs and of tests, the tests' fixed keys). What they
 * seal anyone can unseal, so they are accepted only where nothing real is sealed.
 */
const PUBLISHED_KEYS = ['ZGV2ZWxvcG1lbnQta2V5LWRvLW5vdC11c2UtaW4tcHJvZCE='].map((k) => Buffer.from(k, 'base64'));
/** NODE_ENV values under which a published key is tolerated (local try-outs, the test suite). */
const KEY_LENIENT_ENVS = ['development', 'test'];

function isPublishedKey(key: Buffer): boolean {
  return PUBLISHED_KEYS.some((k) => k.equals(key)) || (key.length > 0 && key.every((b) => b === key[0]));
}

/**
 * `nodeEnv` is the deployment's NODE_ENV (default `development`, like `parseConfig`): outside
 * `development` and `test` a published development key is refused (docs/decisions/operator-secrets.md).
 */
export function parseEncryptionKey(raw: string | undefined, nodeEnv: string): Buffer {
  if (!raw) {
    throw new ConfigError(
      'ASSET_ENCRYPTION_KEY is not set: give it 32 random bytes in base64 (npm start creates one in .data/ for you).',
    );
  }
  const key = /^[0-9a-f]{64}$/i.test(raw) ? Buffer.from(raw, 'hex') : Buffer.from(raw, 'base64');
  // before the length check: the compose file's old fallback is 35 bytes, and "a published
  // development key" is what the operator needs to hear about it
  if (!KEY_LENIENT_ENVS.includes(nodeEnv) && isPublishedKey(key)) {
    throw new ConfigError(
      `ASSET_ENCRYPTION_KEY is a published development key, refused with NODE_ENV=${nodeEnv}: give it 32 random bytes of your own (openssl rand -base64 32), or set NODE_ENV=development for a local try-out.`,
    );
  }
  if (key.length !== 32) {
    throw new ConfigError('ASSET_ENCRYPTION_KEY must be 32 bytes, as 64 hex characters or base64.');
  }
  return key;
}

/**
 * `REDIS_CLUSTER_NODES=host:port,host:port,…` (seed nodes; the client discovers the rest) selects a
 * Redis Cluster and then `REDIS_URL` is not used; `REDIS_PASSWORD` applies to either.
 */
export function parseRedisTarget(env: Env): RedisTarget {
  const password = env.REDIS_PASSWORD ? { password: env.REDIS_PASSWORD } : {};
  const seeds = (env.REDIS_CLUSTER_NODES ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  if (seeds.length === 0) return { mode: 'single', url: str(env, 'REDIS_URL', 'redis://127.0.0.1:6379'), ...password };
  const nodes = seeds.map((seed) => {
    const m = /^(\[[0-9a-f:]+\]|[^\s:]+):(\d{1,5})$/i.exec(seed);
    const port = m ? Number(m[2]) : NaN;
    if (!m || port < 1 || port > 65535) {
      throw new ConfigError(`REDIS_CLUSTER_NODES must be host:port pairs separated by commas (got "${seed}").`);
    }
    return { host: m[1]!.replace(/^\[|\]$/g, ''), port };
  });
  return { mode: 'cluster', nodes, ...password };
}

/**
 * The retention archive (docs/decisions/retention.md): a directory (ARCHIVE_DIR) or an
 * S3-compatible bucket (ARCHIVE_S3_*), never both; `recordArchiveFromConfig` builds it.
 * Credentials are not settings here: the S3 client takes them from the AWS SDK's standard chain.
 */
export type ArchiveSettings =
  | { kind: 'directory'; dir: string }
  | { kind: 's3'; bucket: string; prefix: string; endpoint?: string; region: string };

const S3_SETTINGS = ['ARCHIVE_S3_PREFIX', 'ARCHIVE_S3_ENDPOINT', 'ARCHIVE_S3_REGION'] as const;

/** Fails on what would otherwise fail at the first archiving batch, in one sentence. */
export function parseArchiveSettings(env: Env): ArchiveSettings | null {
  const dir = env.ARCHIVE_DIR?.trim();
  const bucket = env.ARCHIVE_S3_BUCKET?.trim();
  if (dir && bucket) {
    throw new ConfigError('ARCHIVE_DIR and ARCHIVE_S3_BUCKET are both set: the retention archive is one directory or one bucket, unset one of them.');
  }
  if (!bucket) {
    const stray = S3_SETTINGS.find((n) => env[n]?.trim());
    if (stray) throw new ConfigError(`${stray} is set without ARCHIVE_S3_BUCKET: set the bucket too, or unset ${stray}.`);
    return dir ? { kind: 'directory', dir } : null;
  }
  // S3's bucket naming rules (the strict ones, that every S3-compatible store accepts)
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket) || bucket.includes('..')) {
    throw new ConfigError(`ARCHIVE_S3_BUCKET must be a bucket name (3 to 63 lowercase letters, digits, dots and hyphens), got ${JSON.stringify(bucket.slice(0, 100))}.`);
  }
  const rawPrefix = env.ARCHIVE_S3_PREFIX?.trim() ?? '';
  const prefix = rawPrefix.replace(/^\/+|\/+$/g, '');
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f\\]/.test(prefix) || (prefix !== '' && prefix.split('/').some((seg) => seg === '' || seg === '.' || seg === '..')) || Buffer.byteLength(prefix) > 200) {
    throw new ConfigError('ARCHIVE_S3_PREFIX must be up to 200 bytes of /-separated names, without control characters, backslashes, empty, "." or ".." parts.');
  }
  let endpoint: string | undefined;
  const rawEndpoint = env.ARCHIVE_S3_ENDPOINT?.trim();
  if (rawEndpoint) {
    let url: URL | null = null;
    try { url = new URL(rawEndpoint); } catch { /* reported below */ }
    // credentials in the URL would end up in logs and error messages: they come from the SDK's chain
    if (url && (url.username || url.password)) {
      throw new ConfigError('ARCHIVE_S3_ENDPOINT must not carry credentials: give them as AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY.');
    }
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.search || url.hash || (url.pathname !== '/' && url.pathname !== '')) {
      // the value itself is not repeated: a mistyped one may hold a secret (`key:secret@host`, `?secretKey=`)
      const wrong = !url ? 'it is not a URL' : url.protocol !== 'http:' && url.protocol !== 'https:' ? 'its scheme is not http or https'
        : url.search ? 'it has a query' : url.hash ? 'it has a fragment' : 'it has a path';
      throw new ConfigError(`ARCHIVE_S3_ENDPOINT must be an http(s)://host[:port] URL of an S3-compatible store: ${wrong}.`);
    }
    endpoint = url.origin;
  }
  // the SDK would read AWS_REGION by itself, but only at the first request: a missing region is
  // a start-up error here; a store of its own (an endpoint) rarely cares and gets us-east-1
  const region = env.ARCHIVE_S3_REGION?.trim() || env.AWS_REGION?.trim() || (endpoint ? 'us-east-1' : '');
  if (!region) throw new ConfigError('ARCHIVE_S3_REGION is not set: name the bucket\'s region (or set AWS_REGION).');
  if (!/^[a-z0-9-]{2,40}$/.test(region)) throw new ConfigError(`ARCHIVE_S3_REGION must be a region name such as eu-west-1, got ${JSON.stringify(region.slice(0, 100))}.`);
  return { kind: 's3', bucket, prefix: prefix ? `${prefix}/` : '', ...(endpoint ? { endpoint } : {}), region };
}

export function parseConfig(env: Env): Config {
  const nodeEnv = str(env, 'NODE_ENV', 'development');
  return {
    nodeEnv,
    host: str(env, 'HOST', '127.0.0.1'),
    port: int(env, 'PORT', 3000, 0, 65535),
    ...database(env),
    redis: parseRedisTarget(env),
    redisPrefix: str(env, 'REDIS_PREFIX', 'svc'),
    assetEncryptionKey: parseEncryptionKey(env.ASSET_ENCRYPTION_KEY, nodeEnv),
    trustedProxyCount: int(env, 'TRUST_PROXY_COUNT', 0, 0, 10),
    logLevel: str(env, 'LOG_LEVEL', 'info'),
    accessTokenTtlSeconds: int(env, 'ACCESS_TOKEN_TTL_SECONDS', 12 * 3600, 60),
    machineOfflineAfterSeconds: int(env, 'MACHINE_OFFLINE_AFTER_SECONDS', 30, 1),
    machinePingMs: int(env, 'MACHINE_PING_MS', MAX_MACHINE_PING_MS, 100, MAX_MACHINE_PING_MS),
    apiKeyCacheTtlMs: int(env, 'API_KEY_CACHE_TTL_MS', 30_000, 0),
    lastUsedFlushMs: int(env, 'LAST_USED_FLUSH_MS', 500, 10, 60_000),
    defaultMonthlyQuota: int(env, 'DEFAULT_MONTHLY_QUOTA', 10_000, 0),
    dispatchSweepMs: int(env, 'DISPATCH_SWEEP_MS', 1000, 50, 60_000),
    dispatchReconcileMs: int(env, 'DISPATCH_RECONCILE_MS', 5000, 100, 600_000),
    scheduleMisfireGraceSeconds: int(env, 'SCHEDULE_MISFIRE_GRACE_SECONDS', 60, 1, 86_400),
    logRetentionDays: num(env, 'LOG_RETENTION_DAYS', 30, 0, 36_500),
    eventRetentionDays: num(env, 'EVENT_RETENTION_DAYS', 7, 0, 3650),
    archive: parseArchiveSettings(env),
    retentionEveryMs: int(env, 'RETENTION_EVERY_MS', 15_000, 100, 86_400_000),
    retentionDuty: num(env, 'RETENTION_DUTY', 0.25, 0.01, 1),
    webhookAllowInsecure: bool(env, 'WEBHOOK_ALLOW_INSECURE'),
    webhookAllowPrivateNetworks: bool(env, 'WEBHOOK_ALLOW_PRIVATE_NETWORKS'),
    webhookRetryBaseMs: int(env, 'WEBHOOK_RETRY_BASE_MS', 10_000, 10, 3_600_000),
    webhookGiveUpSeconds: int(env, 'WEBHOOK_GIVE_UP_SECONDS', 86_400, 1, 30 * 86_400),
    webhookPollMs: int(env, 'WEBHOOK_POLL_MS', 1000, 10, 60_000),
    dispatcherRole: oneOf(env, 'DISPATCHER_ROLE', DISPATCHER_ROLES, 'all'),
    metricsPort: env.METRICS_PORT ? int(env, 'METRICS_PORT', 0, 0, 65535) : undefined,
    metricsToken: env.METRICS_TOKEN || undefined,
    metricsStateTtlMs: int(env, 'METRICS_STATE_TTL_MS', 5000, 0, 600_000),
    metricsMaxQueues: int(env, 'METRICS_MAX_QUEUES', 200, 1, 10_000),
    eventStreamsPerUser: int(env, 'EVENT_STREAMS_PER_USER', 5, 1, 1000),
    eventStreamsPerWorkspace: int(env, 'EVENT_STREAMS_PER_WORKSPACE', 20, 1, 10_000),
    authFailuresPerAddress: int(env, 'AUTH_FAILURES_PER_ADDRESS', 60, 1, 1_000_000),
    passwordHashConcurrency: int(env, 'PASSWORD_HASH_CONCURRENCY', 2, 1, 64),
    claimFloor: oneOf(env, 'CLAIM_FLOOR', CLAIM_FLOOR_MODES, 'auto'),
    claimFloorEngageSeconds: int(env, 'CLAIM_FLOOR_ENGAGE_S', 30, 0, 86_400),
    claimFloorEveryMs: int(env, 'CLAIM_FLOOR_EVERY_MS', 1000, 100, 60_000),
  };
}
