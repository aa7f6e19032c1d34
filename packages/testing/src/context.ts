import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createRedis, createSql, parseConfig, type Config, type RedisClient, type Sql } from '@svc/core';
import type { RedisTarget } from '@svc/core/internals';
import { parseRedisTarget } from '@svc/core/internals';

/**
 * Test isolation: the global setup migrates one template database per run;
 * each test file clones it, and gets its own Redis key prefix under the run's prefix.
 * The global teardown drops every database and key of the run.
 */
export interface TestEnv {
  runId: string;
  adminUrl: string;
  templateDb: string;
  /** the run's single Redis server */
  redisUrl: string;
  /** where this test file's Redis is: the single server, or the run's cluster (useRedisCluster) */
  redisTarget: RedisTarget;
  redisPrefix: string;
}

/**
 * Runs the rest of this test file on the run's Redis Cluster (three primaries, started by
 * test/global-setup.ts) instead of the single server: every context, child process and private
 * Redis the file makes from then on. A `*.cluster.test.ts` file calls it and then requires the
 * test file it runs again, so the test bodies exist once (docs/decisions/redis-cluster.md).
 * jest gives each test file its own process.env, so the choice ends with the file.
 */
export function useRedisCluster(): void {
  process.env.SVC_TEST_REDIS = 'cluster';
}

/** Whether this test file runs on the run's Redis Cluster (useRedisCluster). */
export function onRedisCluster(): boolean {
  return process.env.SVC_TEST_REDIS === 'cluster';
}

/** The run's cluster as a target (its seed nodes come from the global setup). */
function runClusterTarget(): RedisTarget {
  const seeds = process.env.SVC_TEST_REDIS_CLUSTER_NODES;
  if (!seeds) {
    const why = process.env.SVC_TEST_REDIS_CLUSTER_ERROR;
    throw new Error(why
      ? `This test file runs on the run's Redis Cluster, which did not start: ${why}`
      : 'This test file runs on the run\'s Redis Cluster, which is not up: install redis-server (with redis-cli) and run it through jest (test/global-setup.ts starts the cluster).');
  }
  return parseRedisTarget({ REDIS_CLUSTER_NODES: seeds });
}

/**
 * Makes this test file's child processes (api, dispatcher, agent-sim, cli) reach Postgres through
 * the run's PgBouncer in transaction mode, as a deployment behind a pooler does
 * (docs/decisions/pgbouncer.md): queries pooled, LISTEN and migrations on DATABASE_DIRECT_URL.
 * Called by the `*.pgbouncer.test.ts` variants before they require the original test file. The
 * test's own connection (`ctx.sql`: seeding and inspection) stays direct.
 */
export function usePgBouncer(): void {
  process.env.SVC_TEST_PG = 'pgbouncer';
  afterAll(() => {
    // without the run's PgBouncer every context already failed, saying why (throughRunPgBouncer)
    if (!process.env.SVC_TEST_PGBOUNCER_PORT || pooledDatabases.size === 0) return;
    // proof that the processes did go through it: PgBouncer counted transactions on this file's databases
    expect(pooledTransactions([...pooledDatabases])).toBeGreaterThan(0);
  });
}

/** The databases this file reached through the run's PgBouncer. */
const pooledDatabases = new Set<string>();

/** Transactions PgBouncer has run on `databases` (its admin console's SHOW STATS, through psql). */
function pooledTransactions(databases: string[]): number {
  // the admin console speaks only the simple query protocol: psql, as the run's admin user (its admin_users)
  const user = decodeURIComponent(new URL(process.env.SVC_TEST_ADMIN_URL!).username || 'postgres');
  const out = execFileSync('psql', ['-h', '127.0.0.1', '-p', process.env.SVC_TEST_PGBOUNCER_PORT!, '-U', user, '-d', 'pgbouncer', '-A', '-F', '\t', '-c', 'SHOW STATS'], { encoding: 'utf8' });
  const [header, ...rows] = out.trim().split('\n');
  const cols = header!.split('\t');
  const db = cols.indexOf('database');
  const xacts = cols.indexOf('total_xact_count');
  return rows.map((r) => r.split('\t')).filter((r) => databases.includes(r[db]!)).reduce((n, r) => n + Number(r[xacts]), 0);
}

/** Whether this test file's processes go through the run's PgBouncer (usePgBouncer). */
export function onPgBouncer(): boolean {
  return process.env.SVC_TEST_PG === 'pgbouncer';
}

/** Database `url` as reached through the run's PgBouncer (its port comes from the global setup). */
function throughRunPgBouncer(url: string): string {
  pooledDatabases.add(new URL(url).pathname.slice(1));
  const port = process.env.SVC_TEST_PGBOUNCER_PORT;
  if (!port) {
    const why = process.env.SVC_TEST_PGBOUNCER_ERROR;
    throw new Error(why
      ? `This test file runs behind the run's PgBouncer, which did not start: ${why}`
      : 'This test file runs behind the run\'s PgBouncer, which is not up: install pgbouncer and run it through jest (test/global-setup.ts starts it).');
  }
  const pooled = new URL(url);
  pooled.hostname = '127.0.0.1';
  pooled.port = port;
  return pooled.toString();
}

export function testEnv(): TestEnv {
  const { SVC_TEST_RUN_ID, SVC_TEST_ADMIN_URL, SVC_TEST_TEMPLATE_DB, REDIS_URL } = process.env;
  if (!SVC_TEST_RUN_ID || !SVC_TEST_ADMIN_URL || !SVC_TEST_TEMPLATE_DB) {
    throw new Error('The test harness is not set up: run the suite with `npm test` (jest globalSetup prepares it).');
  }
  const redisUrl = REDIS_URL ?? 'redis://127.0.0.1:6379';
  return {
    runId: SVC_TEST_RUN_ID,
    adminUrl: SVC_TEST_ADMIN_URL,
    templateDb: SVC_TEST_TEMPLATE_DB,
    redisUrl,
    redisTarget: onRedisCluster() ? runClusterTarget() : { mode: 'single', url: redisUrl },
    redisPrefix: `svc-test-${SVC_TEST_RUN_ID}`,
  };
}

/**
 * The environment that points a child process at `target`. For a cluster, REDIS_URL names
 * nothing that answers: a process that used it instead of the cluster would fail.
 */
export function redisChildEnv(target: RedisTarget): Record<string, string> {
  if (target.mode === 'single') return { REDIS_URL: target.url };
  return { REDIS_CLUSTER_NODES: target.nodes.map((n) => `${n.host}:${n.port}`).join(','), REDIS_URL: 'redis://127.0.0.1:9' };
}

export function databaseUrl(adminUrl: string, database: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

export interface TestContext {
  sql: Sql;
  databaseUrl: string;
  /** a client of the file's Redis: a `Cluster` on the run's cluster (useRedisCluster) */
  redis: RedisClient;
  redisTarget: RedisTarget;
  redisPrefix: string;
  config: Config;
  /** Environment for a child process (api, dispatcher, agent-sim) that must share this context. */
  childEnv: Record<string, string>;
  close(): Promise<void>;
}

export const TEST_ENCRYPTION_KEY = Buffer.alloc(32, 7).toString('base64');

/** A fresh database cloned from the run's template, and a fresh Redis prefix. */
export async function createTestContext(configOverrides: Partial<Config> = {}): Promise<TestContext> {
  const env = testEnv();
  const suffix = randomBytes(4).toString('hex');
  const dbName = `${env.templateDb.replace(/_tpl$/, '')}_${suffix}`;
  const admin = createSql(env.adminUrl, { max: 1 });
  try {
    await admin.unsafe(`create database "${dbName}" template "${env.templateDb}"`);
  } finally {
    await admin.end();
  }
  return contextOn(databaseUrl(env.adminUrl, dbName), `${env.redisPrefix}:${suffix}`, { max: 10, configOverrides });
}

/**
 * A test context on database `url` and Redis prefix `redisPrefix` of the run's Redis (a private
 * Postgres server's context is one too: packages/testing/src/private-servers.ts).
 */
export function contextOn(url: string, redisPrefix: string, options: { max: number; configOverrides?: Partial<Config> }): TestContext {
  const env = testEnv();
  const childEnv = {
    DATABASE_URL: url,
    ...(onPgBouncer() ? { DATABASE_URL: throughRunPgBouncer(url), DATABASE_DIRECT_URL: url, DATABASE_POOLER: 'transaction' } : {}),
    ...redisChildEnv(env.redisTarget),
    REDIS_PREFIX: redisPrefix,
    ASSET_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
    LOG_LEVEL: process.env.SVC_TEST_LOG_LEVEL ?? 'warn',
    NODE_ENV: 'test',
    // webhook receivers of tests listen on loopback over http (docs/decisions/events.md)
    WEBHOOK_ALLOW_INSECURE: 'true',
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    // the run's choice of take (docs/decisions/claim-floor.md) reaches the children and ctx.config
    ...(process.env.CLAIM_FLOOR ? { CLAIM_FLOOR: process.env.CLAIM_FLOOR } : {}),
  };
  const config = { ...parseConfig(childEnv), ...options.configOverrides };
  const sql = createSql(url, { max: options.max });
  const redis = createRedis(env.redisTarget);
  return {
    sql,
    databaseUrl: url,
    redis,
    redisTarget: env.redisTarget,
    redisPrefix,
    config,
    childEnv,
    async close() {
      await sql.end({ timeout: 5 });
      redis.disconnect();
    },
  };
}
