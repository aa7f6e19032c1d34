import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import {
  ConfigError, DatabaseSettingsError, createDirectSql, createEngine, recordArchiveFromConfig, createLogger, createPooledSql, createDatabase, migrate, parseArchiveSettings,
  parseDatabaseSettings, parseEncryptionKey, type DatabaseSettings, type Engine, type Sql,
} from '@svc/core';
import { CliError } from './errors';

/** The database when DATABASE_URL is not set: core's default (parseDatabaseSettings). */
export const DEFAULT_DATABASE_URL = parseDatabaseSettings({}).url;

/** The URL without its password, for messages. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(invalid DATABASE_URL)';
  }
}

function connectionProblem(err: unknown, url: string): CliError | null {
  const e = err as { code?: string; message?: string };
  const where = redactUrl(url);
  if (e.code === 'ECONNREFUSED' || e.code === 'ENOTFOUND' || e.code === 'EHOSTUNREACH' || e.code === 'CONNECT_TIMEOUT') {
    return new CliError(`cannot reach Postgres at ${where} (${e.code}): start it, or point DATABASE_URL at a running server`);
  }
  if (e.code === '28P01' || e.code === '28000') return new CliError(`Postgres refused the login for ${where}: ${e.message}`);
  return null;
}

function settingsOf(env: Record<string, string | undefined>): DatabaseSettings {
  let settings: DatabaseSettings;
  try {
    settings = parseDatabaseSettings(env);
  } catch (err) {
    throw err instanceof DatabaseSettingsError ? new CliError(err.message) : err;
  }
  for (const [name, value] of [['DATABASE_URL', settings.url], ['DATABASE_DIRECT_URL', settings.directUrl]]) {
    try {
      new URL(value!);
    } catch {
      throw new CliError(`${name} is not a valid URL (expected postgres://user@host:port/database)`);
    }
  }
  return settings;
}

/**
 * Connects to DATABASE_URL (default: local `svc` database), creates the database when it does
 * not exist yet, and applies pending migrations, so every command works on a fresh machine.
 * Behind a transaction pooler (DATABASE_POOLER=transaction) creating and migrating go through
 * DATABASE_DIRECT_URL: the migrations' advisory lock belongs to one session (docs/decisions/pgbouncer.md).
 */
export async function openDatabase(env: Record<string, string | undefined>): Promise<Sql> {
  const settings = settingsOf(env);
  const url = settings.directUrl;
  for (let attempt = 0; ; attempt++) {
    const sql = createPooledSql(settings, { max: 4 });
    const direct = createDirectSql(settings, sql, { max: 1 });
    try {
      await migrate(direct);
      if (direct !== sql) await direct.end({ timeout: 5 });
      return sql;
    } catch (err) {
      await sql.end({ timeout: 5 }).catch(() => undefined);
      if (direct !== sql) await direct.end({ timeout: 5 }).catch(() => undefined);
      const cause = (err as { cause?: unknown }).cause ?? err;
      if ((cause as { code?: string }).code === '3D000' && attempt === 0) {
        await createDatabase(url).catch((e) => {
          throw connectionProblem(e, url) ?? e;
        });
        continue;
      }
      throw connectionProblem(cause, url) ?? err;
    }
  }
}

/** Where `npm start` keeps the key it generated for this checkout (see scripts/start.mjs). */
export const CHECKOUT_KEY_FILE = path.resolve(__dirname, '..', '..', '..', '.data', 'asset-encryption-key');

/**
 * The asset encryption key: ASSET_ENCRYPTION_KEY, else the key `npm start` generated for this
 * checkout. Only commands that touch assets need it.
 */
export function assetKey(env: Record<string, string | undefined>, keyFile = CHECKOUT_KEY_FILE): Buffer {
  const raw = env.ASSET_ENCRYPTION_KEY || (existsSync(keyFile) ? readFileSync(keyFile, 'utf8').trim() : undefined);
  if (!raw) {
    throw new CliError(
      'assets need ASSET_ENCRYPTION_KEY (32 random bytes, base64), the same key the API runs with; npm start keeps one in .data/asset-encryption-key',
    );
  }
  try {
    // the API's rule: what the CLI seals under a published key in production, anyone could unseal
    return parseEncryptionKey(raw, env.NODE_ENV || 'development');
  } catch (err) {
    throw new CliError((err as Error).message);
  }
}

/**
 * The CLI's engine over an opened database: what every command calls. Silent (the CLI reports
 * through its output); no API key cache to tell (a key the CLI creates is in none); the asset
 * encryption key is read from `env` the first time an asset command needs it.
 */
export function createCliEngine(sql: Sql, env: Record<string, string | undefined>): Engine {
  let key: Buffer | undefined;
  let recordArchive: ReturnType<typeof recordArchiveFromConfig>;
  try {
    recordArchive = recordArchiveFromConfig(parseArchiveSettings(env));
  } catch (err) {
    throw err instanceof ConfigError ? new CliError(err.message) : err;
  }
  return createEngine({
    sql, logger: createLogger({ service: 'cli', silent: true }), assetKey: () => (key ??= assetKey(env)), recordArchive,
  });
}
