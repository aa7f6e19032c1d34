import { randomBytes } from 'node:crypto';
import { createRedis, createSql, parseConfig, type Config, type Redis, type Sql } from '@svc/core';

/**
 * Test isolation: the global setup migrates one template database per run;
 * each test file clones it, and gets its own Redis key prefix under the run's prefix.
 * The global teardown drops every database and key of the run.
 */
export interface TestEnv {
  runId: string;
  adminUrl: string;
  templateDb: string;
  redisUrl: string;
  redisPrefix: string;
}

export function testEnv(): TestEnv {
  const { SVC_TEST_RUN_ID, SVC_TEST_ADMIN_URL, SVC_TEST_TEMPLATE_DB, REDIS_URL } = process.env;
  if (!SVC_TEST_RUN_ID || !SVC_TEST_ADMIN_URL || !SVC_TEST_TEMPLATE_DB) {
    throw new Error('The test harness is not set up: run the suite with `npm test` (jest globalSetup prepares it).');
  }
  return {
    runId: SVC_TEST_RUN_ID,
    adminUrl: SVC_TEST_ADMIN_URL,
    templateDb: SVC_TEST_TEMPLATE_DB,
    redisUrl: REDIS_URL ?? 'redis://127.0.0.1:6379',
    redisPrefix: `svc-test-${SVC_TEST_RUN_ID}`,
  };
}

export function databaseUrl(adminUrl: string, database: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

export interface TestContext {
  sql: Sql;
  databaseUrl: string;
  redis: Redis;
  redisUrl: string;
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
    REDIS_URL: env.redisUrl,
    REDIS_PREFIX: redisPrefix,
    ASSET_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
    LOG_LEVEL: process.env.SVC_TEST_LOG_LEVEL ?? 'warn',
    NODE_ENV: 'test',
    // webhook receivers of tests listen on loopback over http (docs/decisions/events.md)
    WEBHOOK_ALLOW_INSECURE: 'true',
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
  };
  const config = { ...parseConfig(childEnv), ...options.configOverrides };
  const sql = createSql(url, { max: options.max });
  const redis = createRedis(env.redisUrl) as Redis;
  return {
    sql,
    databaseUrl: url,
    redis,
    redisUrl: env.redisUrl,
    redisPrefix,
    config,
    childEnv,
    async close() {
      await sql.end({ timeout: 5 });
      redis.disconnect();
    },
  };
}
