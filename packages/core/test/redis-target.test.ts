import { ConfigError, parseConfig } from '@svc/core';
import { keySlot, parseRedisTarget } from '@svc/core/internals';

/** Where Redis is (docs/decisions/redis-cluster.md): pure parsing and slot arithmetic, no server. */
describe('REDIS_URL / REDIS_CLUSTER_NODES / REDIS_PASSWORD', () => {
  const env = { ASSET_ENCRYPTION_KEY: '0'.repeat(64) };

  it('uses REDIS_URL (or its default) without REDIS_CLUSTER_NODES', () => {
    expect(parseConfig(env).redis).toEqual({ mode: 'single', url: 'redis://127.0.0.1:6379' });
    expect(parseRedisTarget({ REDIS_URL: 'redis://10.0.0.5:6380', REDIS_PASSWORD: 's3cret' })).toEqual({ mode: 'single', url: 'redis://10.0.0.5:6380', password: 's3cret' });
  });

  it('takes the seed nodes of a cluster and then ignores REDIS_URL', () => {
    expect(parseRedisTarget({ REDIS_URL: 'redis://127.0.0.1:1', REDIS_CLUSTER_NODES: ' 10.0.0.1:7000, redis-b:7001,[::1]:7002 ', REDIS_PASSWORD: 'pw' })).toEqual({
      mode: 'cluster',
      nodes: [{ host: '10.0.0.1', port: 7000 }, { host: 'redis-b', port: 7001 }, { host: '::1', port: 7002 }],
      password: 'pw',
    });
    expect(parseRedisTarget({ REDIS_CLUSTER_NODES: ' , ' })).toEqual({ mode: 'single', url: 'redis://127.0.0.1:6379' });
  });

  it('refuses a seed that is not host:port with one sentence', () => {
    for (const bad of ['10.0.0.1', '10.0.0.1:', 'host:0', 'host:70000', 'host:port', 'a b:1', 'redis://h:1']) {
      expect(() => parseRedisTarget({ REDIS_CLUSTER_NODES: `127.0.0.1:7000,${bad}` })).toThrow(ConfigError);
    }
    expect(() => parseRedisTarget({ REDIS_CLUSTER_NODES: 'nohost' })).toThrow(/^REDIS_CLUSTER_NODES must be host:port pairs separated by commas \(got "nohost"\)\.$/);
  });
});

describe('keySlot', () => {
  it('is Redis Cluster\'s CRC16 slot, of the hash tag when there is one', () => {
    // values from CLUSTER KEYSLOT on Redis 7
    expect(keySlot('123456789')).toBe(12739);
    expect(keySlot('foo')).toBe(12182);
    expect(keySlot('svc:bull:{dispatch}:meta')).toBe(keySlot('dispatch'));
    expect(keySlot('a{}b')).toBe(keySlot('a{}b'));
    expect(keySlot('a{}b')).not.toBe(keySlot(''));
    expect(keySlot('{user1000}.following')).toBe(keySlot('{user1000}.followers'));
  });
});
