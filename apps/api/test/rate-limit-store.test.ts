import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { createRedis, duplicateRedis, type RedisClient } from '@svc/core';
import { createTestContext, type TestContext } from '@svc/testing';
import { BatchedWindowStore } from '../src/middleware/rate-limit-store';

/** What a consume answered: its count, or that it was refused (and its count). */
async function outcome(p: Promise<RateLimiterRes>): Promise<string> {
  try {
    return `ok ${(await p).consumedPoints}`;
  } catch (err) {
    if (err instanceof RateLimiterRes) return `429 ${err.consumedPoints}`;
    throw err;
  }
}

describe('BatchedWindowStore (rate-limit counts of one turn in one script)', () => {
  let t: TestContext;
  let client: RedisClient;
  let scripts: number[];
  beforeAll(async () => {
    t = await createTestContext();
    client = duplicateRedis(t.redis);
    // count the scripts that reach Redis (each still runs there)
    const script = (client as unknown as { svcIncrWindows?: unknown }).svcIncrWindows;
    expect(script).toBeUndefined();
    new BatchedWindowStore(client, 60);
    const real = (client as unknown as { svcIncrWindows: (...a: unknown[]) => Promise<unknown> }).svcIncrWindows.bind(client);
    (client as unknown as { svcIncrWindows: unknown }).svcIncrWindows = (...a: unknown[]) => {
      scripts.push((a[0] as number));
      return real(...a);
    };
  });
  beforeEach(() => {
    scripts = [];
  });
  afterAll(async () => {
    client.disconnect();
    await t.close();
  });

  const limiter = (prefix: string, points: number, store = new BatchedWindowStore(client, 60)) =>
    new RateLimiterRedis({ storeClient: store, keyPrefix: `${t.redisPrefix}:rl:{${prefix}}`, points, duration: 60 });

  it('counts the requests of one turn, of any keys, with one script, each exactly as alone', async () => {
    const rl = limiter('turn', 3);
    const keys = ['a', 'b', 'a', 'a', 'c', 'a', 'b'];
    const started = Date.now();
    const got = await Promise.all(keys.map((k) => outcome(rl.consume(k))));
    expect(scripts).toEqual([7]);
    expect(got).toEqual(['ok 1', 'ok 1', 'ok 2', 'ok 3', 'ok 1', '429 4', 'ok 2']);
    // the windows exist in Redis with the limiter's duration
    const ttl = await client.pttl(`${t.redisPrefix}:rl:{turn}:a`);
    // 60 s less what has passed since (however long a loaded host took)
    expect(ttl).toBeGreaterThanOrEqual(60_000 - (Date.now() - started) - 5);
    expect(ttl).toBeLessThanOrEqual(60_000);
    expect(await client.get(`${t.redisPrefix}:rl:{turn}:a`)).toBe('4');
  });

  it('continues the same windows in later turns, which keep their first expiry', async () => {
    const rl = limiter('later', 2);
    const first = await rl.consume('k');
    await new Promise((r) => setTimeout(r, 30));
    const later = await Promise.all([outcome(rl.consume('k')), outcome(rl.consume('k'))]);
    expect(first.consumedPoints).toBe(1);
    expect(later).toEqual(['ok 2', '429 3']);
    expect(scripts).toEqual([1, 2]);
    const ttl = await client.pttl(`${t.redisPrefix}:rl:{later}:k`);
    expect(ttl).toBeLessThanOrEqual(60_000 - 30);
  });

  it('sends at most 500 keys per script', async () => {
    const rl = limiter('many', 10);
    const got = await Promise.all(Array.from({ length: 1200 }, (_, i) => rl.consume(`k${i % 600}`)));
    expect(scripts).toEqual([500, 500, 200]);
    expect(got.filter((r) => r.consumedPoints === 2)).toHaveLength(600);
  });

  it('lets the limiter fall back on its insurance when Redis does not answer', async () => {
    const dead = createRedis('redis://127.0.0.1:1', { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0 });
    dead.on('error', () => undefined);
    try {
      const rl = new RateLimiterRedis({
        storeClient: new BatchedWindowStore(dead, 60),
        keyPrefix: 'unreachable',
        points: 2,
        duration: 60,
        insuranceLimiter: new RateLimiterMemory({ points: 2, duration: 60 }),
      });
      const got = await Promise.all([outcome(rl.consume('k')), outcome(rl.consume('k')), outcome(rl.consume('k'))]);
      expect(got).toEqual(['ok 1', 'ok 2', '429 3']);
    } finally {
      dead.disconnect();
    }
  });
});
