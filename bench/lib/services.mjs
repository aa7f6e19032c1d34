// The run's own database and Redis prefix: created and migrated at the start, dropped at the end.
import { core } from './core.mjs';
import { ensureDatabase } from '../../scripts/services.mjs';

export function dbUrl(baseUrl, database) {
  const u = new URL(baseUrl);
  u.pathname = `/${database}`;
  return u.toString();
}

/**
 * Creates `name` (dropping a leftover of the same name): migrated, or cloned from `template`
 * (each scenario gets a fresh copy of the run's migrated template). Returns its URL.
 */
export async function createBenchDatabase(baseUrl, name, { template } = {}) {
  const admin = core.createSql(dbUrl(baseUrl, 'postgres'), { max: 1 });
  try {
    await admin.unsafe(`drop database if exists "${name}" with (force)`);
    if (template) await admin.unsafe(`create database "${name}" template "${template}"`);
  } finally {
    await admin.end();
  }
  const url = dbUrl(baseUrl, name);
  if (!template) {
    await ensureDatabase(url);
    const sql = core.createSql(url, { max: 1 });
    try {
      await core.migrate(sql);
    } finally {
      await sql.end();
    }
  }
  return url;
}

export async function dropBenchDatabase(baseUrl, name) {
  const admin = core.createSql(dbUrl(baseUrl, 'postgres'), { max: 1 });
  try {
    await admin.unsafe(`drop database if exists "${name}" with (force)`);
  } finally {
    await admin.end();
  }
}

/**
 * A client of the Redis the platform uses: the Redis Cluster of REDIS_CLUSTER_NODES when set
 * (as every process reads it, packages/core/src/config.ts), else `redisUrl`; a target object
 * (a private server of B7, bench/lib/redis-servers.mjs) is used as it is.
 */
export function benchRedis(redisUrl) {
  if (typeof redisUrl === 'object') return core.createRedis(redisUrl);
  return core.createRedis(process.env.REDIS_CLUSTER_NODES ? core.parseRedisTarget(process.env) : redisUrl);
}

/** Deletes every Redis key under `prefix` (SCAN + UNLINK, bounded batches; on each cluster primary, key by key). */
export async function clearRedisPrefix(redisUrl, prefix) {
  const redis = benchRedis(redisUrl);
  try {
    await redis.ping(); // a cluster client knows its primaries once connected
    for (const node of core.primaries(redis)) {
      let cursor = '0';
      do {
        const [next, keys] = await node.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 2000);
        cursor = next;
        if (keys.length && core.isCluster(redis)) await Promise.all(keys.map((k) => node.unlink(k)));
        else if (keys.length) await node.unlink(...keys);
      } while (cursor !== '0');
    }
  } finally {
    redis.disconnect();
  }
}
