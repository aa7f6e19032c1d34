import { createRedis, createSql } from '@svc/core';
import type { PrivatePgBouncer } from '../packages/testing/src/pgbouncer';
import type { PrivateRedisCluster } from '../packages/testing/src/private-servers';
import { RUN_CLUSTER, RUN_PGBOUNCER } from './global-setup';

/** Drops every database and Redis key this run created, and stops the run's Redis Cluster and PgBouncer. */
export default async function globalTeardown(): Promise<void> {
  // first: its server sessions would hold the run's databases open
  await (globalThis as Record<symbol, PrivatePgBouncer | undefined>)[RUN_PGBOUNCER]?.stop();
  // the cluster is the run's own: nothing in it to clean, it goes whole
  (globalThis as Record<symbol, PrivateRedisCluster | undefined>)[RUN_CLUSTER]?.destroy();
  const runId = process.env.SVC_TEST_RUN_ID;
  const adminUrl = process.env.SVC_TEST_ADMIN_URL;
  if (!runId || !adminUrl) return;
  // several at once: each DROP DATABASE waits for server-wide work (every backend letting go of the
  // database's files), about a second on a loaded host; one by one, the ~50 databases of a run
  // kept `npm test` waiting 40 s after its last test
  const admin = createSql(adminUrl, { max: 8 });
  try {
    const dbs = await admin<{ datname: string }[]>`
      select datname from pg_database where datname like ${`svc_test_${runId}_%`}`;
    const drop = (datname: string) => admin.unsafe(`drop database if exists "${datname}" with (force)`);
    // clones first, the template last (a template with clones still connected cannot be dropped)
    const template = dbs.filter((d) => d.datname.endsWith('_tpl'));
    await Promise.all(dbs.filter((d) => !d.datname.endsWith('_tpl')).map((d) => drop(d.datname)));
    for (const { datname } of template) await drop(datname);
  } finally {
    await admin.end();
  }
  const redis = createRedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `svc-test-${runId}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length) await redis.unlink(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}
