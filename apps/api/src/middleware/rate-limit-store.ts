import { Batcher, type RedisClient } from '@svc/core';

/**
 * rate-limiter-flexible's counting step, per key: add the points, read the window's time to live,
 * and start the window (its expiry) when the key is new. Here for any number of keys at once;
 * KEYS are the windows, ARGV[1] the window in seconds, ARGV[1 + i] the points for KEYS[i]. Keys
 * are handled in order, so a key that appears twice is counted twice, the second time after the
 * first. (Its own script also runs a `SET … NX` first; creating the key by INCRBY and giving it
 * its expiry at once is the same window, for a third fewer calls.)
 */
const INCR_WINDOWS_LUA = `
local secs = tonumber(ARGV[1])
local out = {}
for i, key in ipairs(KEYS) do
  local consumed = redis.call('incrby', key, ARGV[i + 1])
  local ttl = redis.call('pttl', key)
  if ttl == -1 then
    redis.call('expire', key, secs)
    ttl = 1000 * secs
  end
  out[2 * i - 1] = consumed
  out[2 * i] = ttl
end
return out`;

/** Keeps one script's run short: Redis serves nothing else while it runs. */
const MAX_KEYS_PER_SCRIPT = 500;

type IncrResult = [consumed: number, ttlMs: number];

interface Count {
  key: string;
  points: string;
}

type ScriptClient = RedisClient & { svcIncrWindows(numKeys: number, ...args: string[]): Promise<number[]> };

/**
 * The store client a RateLimiterRedis is given: it answers the limiter's one command,
 * `rlflxIncr([key, points, seconds, …])`, and sends the counts of concurrent requests as one
 * script (BENCHMARKS.md, B1: with one script per request, most of Redis's work per request was
 * the per-call cost of a script, and each wake-up of Redis took the CPU from the API). The counts
 * of one event-loop turn leave together, and while a script runs the next ones wait and leave
 * together after it (core's Batcher, one in flight): on an idle API a count goes out at once,
 * under load a script carries what arrived during the previous one. Each request still gets its
 * own count, exactly what its own script would have returned, since the scripts would have run
 * back to back anyway; the limiter keeps its rules (limit, 429, insurance limiter when Redis
 * fails: a failed script fails each of its requests, and each falls back on its own).
 *
 * Redis Cluster: one script may only touch keys of one slot. A limiter's keys share its route's
 * hash tag (`…:{POST /…}:…`), and each limiter has its own store client, so they always do.
 */
export class BatchedWindowStore {
  private readonly counts: Batcher<Count, IncrResult>;

  /** `windowSeconds`: the limiter's duration, the only window it ever asks this store to count. */
  constructor(private readonly client: RedisClient, windowSeconds: number) {
    if (!('svcIncrWindows' in client)) {
      client.defineCommand('svcIncrWindows', { lua: INCR_WINDOWS_LUA });
    }
    const seconds = String(windowSeconds);
    const run = (counts: Count[]) => this.incr(seconds, counts);
    this.counts = new Batcher({ runBatch: run, runOne: async (c) => (await run([c]))[0]!, maxBatch: MAX_KEYS_PER_SCRIPT, maxInFlight: 1 });
  }

  /** Asked by rate-limiter-flexible for ioredis-like clients; its own script is not used. */
  defineCommand(): void {}

  /** rate-limiter-flexible's other operations (get, set, delete) go to the real client. */
  multi(...args: Parameters<RedisClient['multi']>): ReturnType<RedisClient['multi']> {
    return this.client.multi(...args);
  }

  del(...keys: string[]): Promise<number> {
    return this.client.del(...keys);
  }

  /** `[key, points, seconds, …]`; seconds is always the limiter's window (consume, penalty, reward). */
  rlflxIncr(args: string[]): Promise<IncrResult> {
    const [key, points] = args as [string, string];
    return this.counts.run({ key, points });
  }

  private async incr(seconds: string, counts: Count[]): Promise<IncrResult[]> {
    const out = await (this.client as ScriptClient).svcIncrWindows(counts.length, ...counts.map((c) => c.key), seconds, ...counts.map((c) => c.points));
    return counts.map((_, i) => [Number(out[2 * i]), Number(out[2 * i + 1])]);
  }
}
