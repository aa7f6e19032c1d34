// The raw baselines' Redis connection: the same server or Redis Cluster the platform uses
// (REDIS_CLUSTER_NODES wins over the URL, like packages/core/src/config.ts). Their queue names carry
// a hash tag, so each queue's keys share one cluster slot (docs/decisions/redis-cluster.md).
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const IORedis = require('ioredis');

export function rawConnection(url) {
  const password = process.env.REDIS_PASSWORD || undefined;
  const seeds = (process.env.REDIS_CLUSTER_NODES ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  if (!seeds.length) return new IORedis(url, { maxRetriesPerRequest: null, ...(password ? { password } : {}) });
  const nodes = seeds.map((s) => ({ host: s.slice(0, s.lastIndexOf(':')).replace(/^\[|\]$/g, ''), port: Number(s.slice(s.lastIndexOf(':') + 1)) }));
  return new IORedis.Cluster(nodes, { redisOptions: { maxRetriesPerRequest: null, ...(password ? { password } : {}) } });
}
