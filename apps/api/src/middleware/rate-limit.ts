import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { RATE_LIMIT_WINDOW_SECONDS, RateLimitError, duplicateRedis, sha256Hex, type RedisClient } from '@svc/core';
import { rateLimitRejections } from '@svc/core/observability';
import type { ApiDeps } from '../deps';
import { BatchedWindowStore } from './rate-limit-store';
import type { Guard } from '../http/guard';

/**
 * The public rate limits (docs/decisions/rate-limits.md): fixed one-minute windows counted in Redis by
 * an atomic script, so every API replica shares one budget (the counts of one event-loop turn
 * go out as one script: BatchedWindowStore). The identity is the
 * SHA-256 of the X-API-Key value; on management routes, the access token; with no credential,
 * the source IP. Each route has its own budget (the route id is in the key, as a hash tag so a
 * route's counters live in one Redis Cluster slot). Runs after authentication (401 first) and
 * before IP, scope, plan, existence and validation checks (then 403, 404, 422), so rejected
 * requests still count.
 *
 * Headers on every limited response, success or error: X-RateLimit-Limit (the route's budget
 * per window), X-RateLimit-Remaining (left in the current window), X-RateLimit-Reset (Unix time,
 * in seconds, when the window ends); on 429 also Retry-After (seconds to wait).
 */
export function rateLimit(deps: ApiDeps, routeId: string, points: number): Guard {
  const limiter = new RateLimiterRedis({
    storeClient: new BatchedWindowStore(limiterClient(deps.redis), RATE_LIMIT_WINDOW_SECONDS),
    keyPrefix: `${deps.keys.rateLimit}:{${routeId}}`,
    points,
    duration: RATE_LIMIT_WINDOW_SECONDS,
    // Redis unreachable: count in this process rather than fail every request; the shared budget
    // comes back with Redis (each replica then allows at most `points` on its own meanwhile)
    insuranceLimiter: new RateLimiterMemory({ points, duration: RATE_LIMIT_WINDOW_SECONDS }),
  });
  const limitHeader = String(points);
  const [method, path] = routeId.split(' ');
  const rejections = rateLimitRejections.labels({ route: `/api/v1${path}`, method: method! });
  return async (ctx) => {
    const s = ctx.state;
    const identity = s.apiKey
      ? `k:${s.apiKey.keyHashHex}`
      : s.user
        ? `t:${s.user.tokenId}`
        : `ip:${sha256Hex(s.clientIp)}`;
    let res: RateLimiterRes;
    let limited = false;
    try {
      res = await limiter.consume(identity, 1);
    } catch (rejection) {
      if (!(rejection instanceof RateLimiterRes)) throw rejection;
      res = rejection;
      limited = true;
    }
    const remaining = String(Math.max(0, res.remainingPoints));
    const reset = String(Math.ceil((Date.now() + res.msBeforeNext) / 1000));
    if (limited) {
      rejections.inc();
      throw new RateLimitError(Math.max(1, Math.ceil(res.msBeforeNext / 1000)), {
        'X-RateLimit-Limit': limitHeader, 'X-RateLimit-Remaining': remaining, 'X-RateLimit-Reset': reset,
      });
    }
    // straight to Node: Koa's set() builds arrays per call (allocation profile of B1)
    ctx.res.setHeader('X-RateLimit-Limit', limitHeader);
    ctx.res.setHeader('X-RateLimit-Remaining', remaining);
    ctx.res.setHeader('X-RateLimit-Reset', reset);
  };
}

const limiterClients = new WeakMap<RedisClient, RedisClient>();

/**
 * The counters' own connection, auto-pipelined: the scripts of the limiters of every route of
 * one event-loop turn leave in one write (BENCHMARKS.md, B1). It is not
 * `deps.redis` itself because BullMQ shares that one and must not be auto-pipelined. It lives
 * and ends with `deps.redis`.
 */
export function limiterClient(redis: RedisClient): RedisClient {
  let client = limiterClients.get(redis);
  if (!client) {
    const c = duplicateRedis(redis, { enableAutoPipelining: true });
    c.on('error', () => undefined); // the limiter's insurance takes over; the base connection logs
    redis.once('end', () => c.disconnect());
    limiterClients.set(redis, c);
    client = c;
  }
  return client;
}
