import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ConfigError, parseConfig } from '@svc/core';

/**
 * A published development key is refused outside development and test
 * (docs/decisions/operator-secrets.md): pure parsing, no server.
 */
const ROOT = path.resolve(__dirname, '..', '..', '..');
/** The fallback docker-compose.yml used to ship. */
const COMPOSE_KEY = 'ZGV2ZWxvcG1lbnQta2V5LWRvLW5vdC11c2UtaW4tcHJvZCE=';
const PUBLISHED = {
  'the old docker-compose fallback': COMPOSE_KEY,
  'the all-zero key (base64)': Buffer.alloc(32).toString('base64'),
  'the all-zero key (hex)': '0'.repeat(64),
  "the tests' fixed key": Buffer.alloc(32, 7).toString('base64'),
  'a key of one repeated byte (hex)': 'ab'.repeat(32),
};

describe('ASSET_ENCRYPTION_KEY', () => {
  it.each(Object.entries(PUBLISHED))('refuses %s with NODE_ENV=production, in one sentence', (_, key) => {
    const parse = () => parseConfig({ ASSET_ENCRYPTION_KEY: key, NODE_ENV: 'production' });
    expect(parse).toThrow(ConfigError);
    expect(parse).toThrow(
      'ASSET_ENCRYPTION_KEY is a published development key, refused with NODE_ENV=production: give it 32 random bytes of your own (openssl rand -base64 32), or set NODE_ENV=development for a local try-out.',
    );
  });

  it('refuses them under any NODE_ENV other than development and test (staging too)', () => {
    for (const nodeEnv of ['staging', 'prod', 'Production']) {
      expect(() => parseConfig({ ASSET_ENCRYPTION_KEY: '0'.repeat(64), NODE_ENV: nodeEnv })).toThrow(/published development key/);
    }
  });

  it('accepts the 32-byte ones in development (also when NODE_ENV is unset) and in test', () => {
    for (const env of [{}, { NODE_ENV: 'development' }, { NODE_ENV: 'test' }]) {
      const config = parseConfig({ ...env, ASSET_ENCRYPTION_KEY: '0'.repeat(64) });
      expect(config.assetEncryptionKey.equals(Buffer.alloc(32))).toBe(true);
    }
  });

  it('still refuses the compose fallback in development, for its length', () => {
    expect(() => parseConfig({ ASSET_ENCRYPTION_KEY: COMPOSE_KEY })).toThrow('ASSET_ENCRYPTION_KEY must be 32 bytes, as 64 hex characters or base64.');
  });

  it('accepts a random key in production', () => {
    const key = randomBytes(32);
    expect(parseConfig({ ASSET_ENCRYPTION_KEY: key.toString('base64'), NODE_ENV: 'production' }).assetEncryptionKey.equals(key)).toBe(true);
    expect(parseConfig({ ASSET_ENCRYPTION_KEY: key.toString('hex'), NODE_ENV: 'production' }).assetEncryptionKey.equals(key)).toBe(true);
  });

  it('docker-compose.yml ships no key: the operator must give one', () => {
    const compose = readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8');
    const lines = compose.split('\n').filter((l) => /^\s*ASSET_ENCRYPTION_KEY:/.test(l));
    expect(lines).toHaveLength(1);
    // `${VAR:?message}`: compose stops with the message when the variable is unset or empty
    expect(lines[0]).toMatch(/^\s*ASSET_ENCRYPTION_KEY: \$\{ASSET_ENCRYPTION_KEY:\?[^}]+\}\s*$/);
    expect(compose).not.toContain(COMPOSE_KEY);
  });
});
