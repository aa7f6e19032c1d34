import type { Redis } from '@svc/core';

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

interface Waiting {
  key: string;
  points: string;
  resolve(result: IncrResult): void;
  reject(err: unknown): void;
}

type ScriptClient = Redis & { svcIncrWindows(numKeys: number, ...args: string[]): Promise<number[]> };

/**
 * The store client a RateLimiterRedis is given: it answers the limiter's one command,
 * `rlflxIncr([key, points, seconds, …])`, and sends the increments of every request of one
 * event-loop turn as one script (BENCHMARKS.md, B1: one script per request was ~15 µs of Redis
 * per request, most of it the per-call cost of a script). Each request still gets its own
 * count, exactly what its own script would have returned, since the scripts of one turn would
 * have run back to back anyway; the limiter keeps its rules (limit, 429, insurance limiter when
 * Redis fails: a failed script fails each of its requests, and each falls back on its own).
 *
 * Redis Cluster: one script may only touch keys of one slot. A limiter's keys share its route's
 * hash tag (`…:{POST /…}:…`), and each limiter has its own store client, so they always do.
 */
export class BatchedWindowStore {
  private pending: Waiting[] = [];
  private scheduled = false;
  private seconds = '';

  constructor(private readonly client: Redis) {
    if (!('svcIncrWindows' in client)) {
      client.defineCommand('svcIncrWindows', { lua: INCR_WINDOWS_LUA });
    }
  }

  /** Asked by rate-limiter-flexible for ioredis-like clients; its own script is not used. */
  defineCommand(): void {}

  /** rate-limiter-flexible's other operations (get, set, delete) go to the real client. */
  multi(...args: Parameters<Redis['multi']>): ReturnType<Redis['multi']> {
    return this.client.multi(...args);
  }

  del(...keys: string[]): Promise<number> {
    return this.client.del(...keys);
  }

  rlflxIncr(args: string[]): Promise<IncrResult> {
    const [key, points, seconds] = args as [string, string, string];
    return new Promise<IncrResult>((resolve, reject) => {
      // one window length per limiter, so one per batch; a different one starts its own batch
      if (this.pending.length > 0 && seconds !== this.seconds) this.flush();
      this.seconds = seconds;
      this.pending.push({ key, points, resolve, reject });
      if (this.pending.length >= MAX_KEYS_PER_SCRIPT) this.flush();
      else if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => {
          this.scheduled = false;
          this.flush();
        });
      }
    });
  }

  private flush(): void {
    const batch = this.pending;
    if (batch.length === 0) return;
    this.pending = [];
    const args: string[] = [this.seconds];
    const keys: string[] = [];
    for (const w of batch) {
      keys.push(w.key);
      args.push(w.points);
    }
    (this.client as ScriptClient).svcIncrWindows(keys.length, ...keys, ...args).then(
      (out) => batch.forEach((w, i) => w.resolve([Number(out[2 * i]), Number(out[2 * i + 1])])),
      (err: unknown) => batch.forEach((w) => w.reject(err)),
    );
  }
}
