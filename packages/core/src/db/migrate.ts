import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { createSql, type Queryable, type Sql } from './sql';

/** Numbered, forward-only migrations in packages/core/migrations (`0001_init.sql`, …). */
export const MIGRATIONS_DIR = path.join(__dirname, '..', '..', 'migrations');

// Any fixed number: every migrator in any process takes the same advisory lock.
const MIGRATION_LOCK_ID = 727_001;

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export function loadMigrations(dir = MIGRATIONS_DIR): Migration[] {
  return readdirSync(dir)
    .filter((f) => /^\d{4}_[\w-]+\.sql$/.test(f))
    .sort()
    .map((file) => ({
      version: Number(file.slice(0, 4)),
      name: file.replace(/\.sql$/, ''),
      sql: readFileSync(path.join(dir, file), 'utf8'),
    }));
}

/**
 * Applies pending migrations, each in its own transaction, under an advisory lock so that
 * several processes starting at once migrate exactly once. Returns the names applied.
 * The lock is a session's: `sql` must reach Postgres itself, never a pooler in transaction mode
 * (DATABASE_DIRECT_URL, docs/decisions/pgbouncer.md).
 */
export async function migrate(sql: Sql, dir = MIGRATIONS_DIR): Promise<string[]> {
  const migrations = loadMigrations(dir);
  const reserved = await sql.reserve();
  const applied: string[] = [];
  try {
    await reserved`select pg_advisory_lock(${MIGRATION_LOCK_ID})`;
    await reserved`
      create table if not exists schema_migrations (
        version integer primary key,
        name text not null,
        applied_at timestamptz not null default now()
      )`;
    const done = new Set((await reserved<{ version: number }[]>`select version from schema_migrations`).map((r) => r.version));
    for (const m of migrations) {
      if (done.has(m.version)) continue;
      await reserved`begin`;
      try {
        await reserved.unsafe(m.sql);
        await reserved`insert into schema_migrations (version, name) values (${m.version}, ${m.name})`;
        await reserved`commit`;
      } catch (err) {
        await reserved`rollback`;
        throw new Error(`Migration ${m.name} failed: ${(err as Error).message}`, { cause: err });
      }
      applied.push(m.name);
    }
  } finally {
    await reserved`select pg_advisory_unlock(${MIGRATION_LOCK_ID})`.catch(() => undefined);
    reserved.release();
  }
  return applied;
}

/** The highest migration applied to the database (0 before the first). */
export async function schemaVersion(sql: Queryable): Promise<number> {
  const [row] = await sql<{ version: number }[]>`select coalesce(max(version), 0)::int as version from schema_migrations`;
  return row!.version;
}

/**
 * Creates the database `url` names, through the server's `postgres` database, unless it exists
 * (a starter that lost the race to another one is not an error). For a fresh machine's first run:
 * the platform's processes expect the database and migrate it.
 */
export async function createDatabase(url: string): Promise<void> {
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.slice(1));
  target.pathname = '/postgres';
  const admin = createSql(target.toString(), { max: 1 });
  try {
    await admin.unsafe(`create database "${name.replace(/"/g, '""')}"`).catch((err: { code?: string }) => {
      if (err.code !== '42P04') throw err;
    });
  } finally {
    await admin.end({ timeout: 5 });
  }
}
