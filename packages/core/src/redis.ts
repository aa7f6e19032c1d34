import { Redis, type RedisOptions } from 'ioredis';

export type { Redis };

/**
 * Every Redis key and channel of a deployment lives under one prefix (a test run gets its own).
 * Names are built here only, so the layout is visible in one place.
 */
export function redisKeys(prefix: string) {
  return {
    prefix,
    /** BullMQ's own key prefix (queue names carry a hash tag per queue; see queues catalogue). */
    bull: `${prefix}:bull`,
    rateLimit: `${prefix}:rl`,
    /** Pub/sub channel: API key ids whose cached authentication must be dropped now. */
    apiKeyInvalidations: `${prefix}:apikey:invalidate`,
    /** Pub/sub channel: job ids whose stop was requested. */
    jobStops: `${prefix}:job:stop`,
    /** Set (NX) by dispatchers: its absence means Redis lost its data, so schedulers and queues are rebuilt. */
    dispatchEpoch: `${prefix}:dispatch:epoch`,
  };
}

export type RedisKeys = ReturnType<typeof redisKeys>;

/** `blocking` connections (BullMQ workers, subscribers) never give up on a command. */
export function createRedis(url: string, options: RedisOptions & { blocking?: boolean } = {}): Redis {
  const { blocking, ...rest } = options;
  return new Redis(url, {
    maxRetriesPerRequest: blocking ? null : 3,
    enableReadyCheck: true,
    lazyConnect: false,
    ...rest,
  });
}
