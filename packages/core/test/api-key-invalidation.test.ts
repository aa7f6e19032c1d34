import { acknowledgeApiKeyInvalidation, createRedis, decodeApiKeyInvalidation, publishApiKeyInvalidation } from '@svc/core';
import { createTestContext, keysOnEveryPrimary, type TestContext } from '@svc/testing';

describe('API key invalidation messages', () => {
  let ctx: TestContext;
  beforeAll(async () => {
    ctx = await createTestContext();
  });
  afterAll(() => ctx.close());

  it('resolves only after every subscribed process has applied the message', async () => {
    const channel = `${ctx.redisPrefix}:apikey:invalidate`;
    const applied: string[] = [];
    const subscribers = [0, 1].map((i) => {
      const sub = createRedis(ctx.redisTarget, { blocking: true });
      sub.on('message', (_c: string, raw: string) => {
        const msg = decodeApiKeyInvalidation(raw)!;
        // the second process is slow to apply it
        setTimeout(() => {
          applied.push(`p${i}:${msg.id}`);
          void acknowledgeApiKeyInvalidation(ctx.redis, msg);
        }, i === 1 ? 150 : 0);
      });
      return sub;
    });
    try {
      await Promise.all(subscribers.map((s) => s.subscribe(channel)));
      // a generous wait (the default is 1 s): it returns once both acknowledged, however slow the host
      const result = await publishApiKeyInvalidation(ctx.redis, channel, { id: 'k1', hashes: [] }, 20_000);
      expect(result).toEqual({ receivers: 2, acked: 2 });
      expect(applied.sort()).toEqual(['p0:k1', 'p1:k1']);
      expect(await keysOnEveryPrimary(ctx.redis, `${channel}:ack:*`)).toEqual([]);
    } finally {
      subscribers.forEach((s) => s.disconnect());
    }
  });

  it('gives up waiting after the timeout when a process never answers', async () => {
    const channel = `${ctx.redisPrefix}:apikey:silent`;
    const silent = createRedis(ctx.redisTarget, { blocking: true });
    try {
      await silent.subscribe(channel);
      const result = await publishApiKeyInvalidation(ctx.redis, channel, { id: 'k2', hashes: [] }, 100);
      expect(result).toEqual({ receivers: 1, acked: 0 });
    } finally {
      silent.disconnect();
    }
  });
});
