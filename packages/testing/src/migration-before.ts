import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { createSql, migrate, type Sql } from '@svc/core';
import { loadMigrations } from '@svc/core/internals';
import { databaseUrl, testEnv } from './context';

export interface DatabaseBeforeMigration {
  /** the empty database, migrated by `migrateBefore()` to just before the migration under test */
  sql: Sql;
  /** applies every migration numbered below `version` */
  migrateBefore(): Promise<string[]>;
  close(): Promise<void>;
}

/**
 * A database of its own for a test of one migration on data that existed before it: empty until
 * `migrateBefore()`, then `migrate(sql)` applies the migration under test (and any after it).
 */
export function databaseBeforeMigration(version: number): DatabaseBeforeMigration {
  const env = testEnv();
  const dbName = `${env.templateDb.replace(/_tpl$/, '')}_m${version}_${randomBytes(4).toString('hex')}`;
  const admin = createSql(env.adminUrl, { max: 1 });
  const created = admin.unsafe(`create database "${dbName}"`);
  const sql = createSql(databaseUrl(env.adminUrl, dbName), { max: 2 });
  const dir = mkdtempSync(path.join(tmpdir(), `svc-m${version}-`));
  for (const m of loadMigrations()) if (m.version < version) writeFileSync(path.join(dir, `${m.name}.sql`), m.sql);
  return {
    sql,
    async migrateBefore() {
      await created;
      return migrate(sql, dir);
    },
    async close() {
      await sql.end({ timeout: 5 });
      await created.catch(() => undefined);
      await admin.unsafe(`drop database if exists "${dbName}" with (force)`);
      await admin.end();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
