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

/** Deletes every Redis key under `prefix` (SCAN + UNLINK, bounded batches). */
export async function clearRedisPrefix(redisUrl, prefix) {
  const redis = core.createRedis(redisUrl);
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 2000);
      cursor = next;
      if (keys.length) await redis.unlink(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}
