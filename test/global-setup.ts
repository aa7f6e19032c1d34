import { randomBytes } from 'node:crypto';
import { createSql, migrate } from '../packages/core/src';
import { databaseUrl } from '../packages/testing/src/context';

/** Migrates one template database for the whole run; each test file clones it. */
export default async function globalSetup(): Promise<void> {
  const base = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/svc';
  const adminUrl = databaseUrl(base, 'postgres');
  const runId = `${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;
  const templateDb = `svc_test_${runId}_tpl`;
  const admin = createSql(adminUrl, { max: 1 });
  try {
    await admin.unsafe(`create database "${templateDb}"`);
  } finally {
    await admin.end();
  }
  const sql = createSql(databaseUrl(adminUrl, templateDb), { max: 1 });
  try {
    await migrate(sql);
  } finally {
    await sql.end();
  }
  process.env.SVC_TEST_RUN_ID = runId;
  process.env.SVC_TEST_ADMIN_URL = adminUrl;
  process.env.SVC_TEST_TEMPLATE_DB = templateDb;
}
