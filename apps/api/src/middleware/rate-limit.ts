import type { Middleware } from 'koa';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { RATE_LIMIT_WINDOW_SECONDS, RateLimitError, sha256Hex } from '@svc/core';
import type { ApiDeps } from '../deps';
import type { AppState } from '../http/state';

/**
 * Contract part 8: fixed one-minute windows in Redis (shared by every API replica), counted per
 * API key (SHA-256 of the X-API-Key value), per access token for management routes, per source
 * IP otherwise. The route id is part of the Redis key in a hash tag, so it works on Redis Cluster.
 */
export function rateLimit(deps: ApiDeps, routeId: string, points: number): Middleware<AppState> {
  const limiter = new RateLimiterRedis({
    storeClient: deps.redis,
    keyPrefix: `${deps.keys.rateLimit}:{${routeId}}`,
    points,
    duration: RATE_LIMIT_WINDOW_SECONDS,
  });
  return async (ctx, next) => {
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
    const resetSeconds = Math.max(1, Math.ceil(res.msBeforeNext / 1000));
    const headers = {
      'X-RateLimit-Limit': String(points),
      'X-RateLimit-Remaining': String(Math.max(0, res.remainingPoints)),
      'X-RateLimit-Reset': String(Math.ceil((Date.now() + res.msBeforeNext) / 1000)),
    };
    if (limited) throw new RateLimitError(resetSeconds, headers);
    ctx.set(headers);
    await next();
  };
}
