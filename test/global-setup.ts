import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { createSql, migrate } from '@svc/core';
import { databaseUrl } from '../packages/testing/src/context';
import { startPgBouncer, type PrivatePgBouncer } from '../packages/testing/src/pgbouncer';
import { startPrivateRedisCluster, type PrivateRedisCluster } from '../packages/testing/src/private-servers';

/** The run's Redis Cluster, for the global teardown (the only reader of globals set here). */
export const RUN_CLUSTER = Symbol.for('svc.test.runRedisCluster');
/** The run's PgBouncer, likewise. */
export const RUN_PGBOUNCER = Symbol.for('svc.test.runPgBouncer');

/**
 * Migrates one template database for the whole run; each test file clones it. With redis-server
 * installed (jest.config.js says so), also starts the run's three-primary Redis Cluster: the
 * `*.cluster.test.ts` files run existing tests on it, each with its own key prefix
 * (packages/testing/src/context.ts, `useRedisCluster`). With pgbouncer installed, likewise starts
 * the run's PgBouncer in transaction mode in front of the run's Postgres, for the
 * `*.pgbouncer.test.ts` files (`usePgBouncer`).
 */
export default async function globalSetup(globalConfig?: JestGlobalConfig): Promise<void> {
  const base = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/svc';
  const adminUrl = databaseUrl(base, 'postgres');
  const runId = `${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;
  const templateDb = `svc_test_${runId}_tpl`;
  const admin = createSql(adminUrl, { max: 1 });
  try {
    await admin.unsafe(`create database "${templateDb}"`);
  } finally {
    await admin.end();
  }
  const sql = createSql(databaseUrl(adminUrl, templateDb), { max: 1 });
  try {
    await migrate(sql);
  } finally {
    await sql.end();
  }
  process.env.SVC_TEST_RUN_ID = runId;
  process.env.SVC_TEST_ADMIN_URL = adminUrl;
  process.env.SVC_TEST_TEMPLATE_DB = templateDb;
  if (process.env.SVC_PGBOUNCER && runsVariants(globalConfig, '.pgbouncer.test.ts')) {
    try {
      // a few server sessions per test database: each file's processes share them
      const pgb = await startPgBouncer(adminUrl, { poolSize: 4 });
      (globalThis as Record<symbol, PrivatePgBouncer>)[RUN_PGBOUNCER] = pgb;
      process.env.SVC_TEST_PGBOUNCER_PORT = String(pgb.port);
    } catch (err) {
      process.env.SVC_TEST_PGBOUNCER_ERROR = (err as Error).message;
    }
  }
  if (process.env.SVC_TEST_START_REDIS_CLUSTER === '1' && runsVariants(globalConfig, '.cluster.test.ts')) {
    try {
      const cluster = await startPrivateRedisCluster({ primaries: 3 });
      (globalThis as Record<symbol, PrivateRedisCluster>)[RUN_CLUSTER] = cluster;
      process.env.SVC_TEST_REDIS_CLUSTER_NODES = cluster.seeds;
    } catch (err) {
      // the rest of the suite runs; each cluster variant fails saying why (packages/testing/src/context.ts)
      process.env.SVC_TEST_REDIS_CLUSTER_ERROR = (err as Error).message;
    }
  }
}

/** What the global setup reads of jest's configuration (its own types are not a dependency). */
interface JestGlobalConfig {
  rootDir: string;
  testPathPatterns?: { isSet(): boolean; toExecutor(options: { rootDir: string }): { isMatch(absPath: string): boolean } };
}

/**
 * Whether this run may include a file ending in `suffix`: always for the whole suite; for
 * `npx jest <paths>` only when a path names one (a cluster costs a couple of seconds to start).
 */
function runsVariants(globalConfig: JestGlobalConfig | undefined, suffix: string): boolean {
  const patterns = globalConfig?.testPathPatterns;
  if (!globalConfig || !patterns?.isSet()) return true;
  const executor = patterns.toExecutor({ rootDir: globalConfig.rootDir });
  return testFilesEndingIn(globalConfig.rootDir, suffix).some((file) => executor.isMatch(file));
}

function testFilesEndingIn(rootDir: string, suffix: string): string[] {
  const files: string[] = [];
  for (const group of ['apps', 'packages']) {
    const base = path.join(rootDir, group);
    if (!existsSync(base)) continue;
    for (const workspace of readdirSync(base)) {
      const dir = path.join(base, workspace, 'test');
      if (!existsSync(dir)) continue;
      for (const name of readdirSync(dir)) if (name.endsWith(suffix)) files.push(path.join(dir, name));
    }
  }
  return files;
}
