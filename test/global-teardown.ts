import { createRedis, createSql } from '../packages/core/src';

/** Drops every database and Redis key this run created. */
export default async function globalTeardown(): Promise<void> {
  const runId = process.env.SVC_TEST_RUN_ID;
  const adminUrl = process.env.SVC_TEST_ADMIN_URL;
  if (!runId || !adminUrl) return;
  const admin = createSql(adminUrl, { max: 1 });
  try {
    const dbs = await admin<{ datname: string }[]>`
      select datname from pg_database where datname like ${`svc_test_${runId}_%`}`;
    // clones first, the template last (a template with clones still connected cannot be dropped)
    dbs.sort((a, b) => Number(a.datname.endsWith('_tpl')) - Number(b.datname.endsWith('_tpl')));
    for (const { datname } of dbs) {
      await admin.unsafe(`drop database if exists "${datname}" with (force)`);
    }
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
