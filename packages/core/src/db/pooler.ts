import type { Config } from '../config';
import { createSql, type Sql, type SqlOptions } from './sql';

/**
 * How the platform reaches Postgres when a connection pooler may sit in front of it
 * (docs/decisions/pgbouncer.md).
 *
 * - `none`: DATABASE_URL is Postgres itself (or a pooler in session mode). Statements are
 *   prepared, as postgres.js does by default.
 * - `transaction`: DATABASE_URL is a pooler in transaction mode (PgBouncer `pool_mode =
 *   transaction`): consecutive transactions of one client connection may run on different server
 *   sessions, so nothing may rely on session state between them. Statements are not prepared, and
 *   what needs a session of its own (LISTEN, the migrations' advisory lock) uses
 *   DATABASE_DIRECT_URL.
 *
 * The mode is told, not detected: a pooler cannot be told apart from Postgres reliably from the
 * client side (PgBouncer answers `SHOW` only on its admin console), and a guess that is wrong
 * the other way silently loses the prepared statements' speed.
 */
export type PoolerMode = 'none' | 'transaction';

export const POOLER_MODES: readonly PoolerMode[] = ['none', 'transaction'];

export interface DatabaseSettings {
  /** the connection for queries and transactions (maybe a pooler) */
  url: string;
  /** a connection to Postgres itself, for session-bound work; DATABASE_URL when not set */
  directUrl: string;
  pooler: PoolerMode;
}

export class DatabaseSettingsError extends Error {}

export const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/svc';

/** DATABASE_URL, DATABASE_DIRECT_URL and DATABASE_POOLER from an environment-like record. */
export function parseDatabaseSettings(env: Record<string, string | undefined>): DatabaseSettings {
  const url = env.DATABASE_URL || DEFAULT_DATABASE_URL;
  const rawPooler = env.DATABASE_POOLER || 'none';
  if (!(POOLER_MODES as readonly string[]).includes(rawPooler)) {
    throw new DatabaseSettingsError(`DATABASE_POOLER must be one of ${POOLER_MODES.join(', ')}, got "${rawPooler}".`);
  }
  const pooler = rawPooler as PoolerMode;
  // through the pooler LISTEN hears nothing and the migrations' lock would be taken on one server
  // session and released on another: refuse to start rather than degrade silently
  if (pooler === 'transaction' && !env.DATABASE_DIRECT_URL) {
    throw new DatabaseSettingsError('DATABASE_POOLER=transaction needs DATABASE_DIRECT_URL: a connection to Postgres itself, not through the pooler, for LISTEN and migrations.');
  }
  return { url, directUrl: env.DATABASE_DIRECT_URL || url, pooler };
}

/** The settings a parsed Config holds. */
export function databaseSettings(config: Pick<Config, 'databaseUrl' | 'databaseDirectUrl' | 'databasePooler'>): DatabaseSettings {
  return { url: config.databaseUrl, directUrl: config.databaseDirectUrl, pooler: config.databasePooler };
}

/** The pool for queries: statements are prepared unless a transaction pooler is in between. */
export function createPooledSql(settings: Pick<DatabaseSettings, 'url' | 'pooler'>, options: Omit<SqlOptions, 'pooler'> = {}): Sql {
  return createSql(settings.url, { ...options, pooler: settings.pooler });
}

/**
 * A pool on the direct connection for session-bound work, or `pooled` itself when it already is
 * the direct connection (no pooler, no separate URL: one pool, as before).
 */
export function createDirectSql(settings: DatabaseSettings, pooled: Sql, options: Omit<SqlOptions, 'pooler'> = {}): Sql {
  if (settings.pooler === 'none' && settings.directUrl === settings.url) return pooled;
  return createSql(settings.directUrl, { max: 2, ...options });
}
