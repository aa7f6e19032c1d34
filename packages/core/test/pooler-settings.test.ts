import { ConfigError, createDirectSql, createPooledSql, parseConfig, parseDatabaseSettings, DatabaseSettingsError } from '@svc/core';
import { DEFAULT_DATABASE_URL } from '@svc/core/internals';

/**
 * How the platform is told it runs behind a transaction pooler (db/pooler.ts,
 * docs/decisions/pgbouncer.md). Pure parsing, and pools that are built but never connect.
 */
const KEY = Buffer.alloc(32, 1).toString('base64');
const POOLED = 'postgres://app@pgbouncer.internal:6432/svc';
const DIRECT = 'postgres://app@db.internal:5432/svc';

describe('DATABASE_POOLER and DATABASE_DIRECT_URL', () => {
  it('default to no pooler, the direct URL being DATABASE_URL', () => {
    expect(parseDatabaseSettings({})).toEqual({ url: DEFAULT_DATABASE_URL, directUrl: DEFAULT_DATABASE_URL, pooler: 'none' });
    expect(parseDatabaseSettings({ DATABASE_URL: DIRECT, DATABASE_POOLER: '' })).toEqual({ url: DIRECT, directUrl: DIRECT, pooler: 'none' });
  });

  it('take a pooler in transaction mode with its direct URL', () => {
    expect(parseDatabaseSettings({ DATABASE_URL: POOLED, DATABASE_DIRECT_URL: DIRECT, DATABASE_POOLER: 'transaction' }))
      .toEqual({ url: POOLED, directUrl: DIRECT, pooler: 'transaction' });
    expect(parseConfig({ ASSET_ENCRYPTION_KEY: KEY, DATABASE_URL: POOLED, DATABASE_DIRECT_URL: DIRECT, DATABASE_POOLER: 'transaction' }))
      .toMatchObject({ databaseUrl: POOLED, databaseDirectUrl: DIRECT, databasePooler: 'transaction' });
  });

  it('refuse a transaction pooler without a direct URL, in one sentence', () => {
    const env = { ASSET_ENCRYPTION_KEY: KEY, DATABASE_URL: POOLED, DATABASE_POOLER: 'transaction' };
    expect(() => parseDatabaseSettings(env)).toThrow(DatabaseSettingsError);
    expect(() => parseConfig(env)).toThrow(new ConfigError(
      'DATABASE_POOLER=transaction needs DATABASE_DIRECT_URL: a connection to Postgres itself, not through the pooler, for LISTEN and migrations.',
    ));
  });

  it('refuse an unknown pooler mode (session mode needs no setting: it keeps sessions)', () => {
    for (const bad of ['session', 'Transaction', 'statement', 'yes']) {
      expect(() => parseConfig({ ASSET_ENCRYPTION_KEY: KEY, DATABASE_POOLER: bad })).toThrow(new ConfigError(`DATABASE_POOLER must be one of none, transaction, got "${bad}".`));
    }
  });
});

describe('the pools', () => {
  it('prepare statements directly, not behind a transaction pooler', async () => {
    const direct = createPooledSql({ url: DIRECT, pooler: 'none' }, { max: 1 });
    const pooled = createPooledSql({ url: POOLED, pooler: 'transaction' }, { max: 1 });
    try {
      expect(direct.options.prepare).toBe(true);
      expect(pooled.options.prepare).toBe(false);
    } finally {
      await Promise.all([direct.end(), pooled.end()]);
    }
  });

  it('share one pool for session work when nothing is in between, and open a direct one otherwise', async () => {
    const same = createPooledSql({ url: DIRECT, pooler: 'none' }, { max: 1 });
    const pooled = createPooledSql({ url: POOLED, pooler: 'transaction' }, { max: 1 });
    const direct = createDirectSql({ url: POOLED, directUrl: DIRECT, pooler: 'transaction' }, pooled);
    try {
      expect(createDirectSql({ url: DIRECT, directUrl: DIRECT, pooler: 'none' }, same)).toBe(same);
      expect(direct).not.toBe(pooled);
      expect(direct.options.prepare).toBe(true);
      expect(direct.options.host).toEqual(['db.internal']);
    } finally {
      await Promise.all([same.end(), pooled.end(), direct.end()]);
    }
  });
});
