import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEngine, createLogger } from '@svc/core';
import { directoryArchive, s3Archive } from '@svc/core/internals';
import { seedTenant } from '@svc/testing';
import { createApiTestContext, type ApiTestContext } from '@svc/testing/api';
import { startS3Server } from '@svc/testing/s3';
import { runCli, type Run } from './cli-harness';

/** `svc apply` with retention fields, `svc tenant update --job-retention-*` and `svc archive` (the real compiled CLI). */
jest.setTimeout(60_000);
let t: ApiTestContext;
let baseEnv: Record<string, string>;
let tenant: { id: string; name: string };
let dir: string;

const svc = (args: string[], env: Record<string, string | undefined> = {}): Promise<Run> => runCli(baseEnv, args, { env });
const json = (r: Run) => JSON.parse(r.stdout);
/** A workspace file with one queue that archives at once. */
const queueFile = async (name: string) => {
  const file = join(dir, `${name}.json`);
  await writeFile(file, JSON.stringify({ queues: [{ name, retention_completed_days: 0.0001, retention_action: 'archive' }] }));
  return file;
};

beforeAll(async () => {
  t = await createApiTestContext();
  baseEnv = { ...t.childEnv };
  tenant = (await seedTenant(t.sql)) as { id: string; name: string };
  dir = await mkdtemp(join(tmpdir(), 'svc-cli-archive-'));
});
afterAll(async () => {
  await t.close();
  await rm(dir, { recursive: true, force: true });
});

describe('retention from the CLI', () => {
  it('svc apply sets a queue\'s retention; applying twice changes nothing; a wrong value names the field', async () => {
    const file = join(dir, 'ws.json');
    await writeFile(file, JSON.stringify({ queues: [{ name: 'ret-q', retention_completed_days: 0.25, retention_failed_days: 10, retention_action: 'archive' }] }));
    const r = await svc(['apply', file, '--tenant', tenant.name, '--json']);
    expect(r.code).toBe(0);
    const [row] = await t.sql`select retention_completed_days, retention_failed_days, retention_action from queues where tenant_id = ${tenant.id} and name = 'ret-q'`;
    expect(row).toEqual({ retention_completed_days: 0.25, retention_failed_days: 10, retention_action: 'archive' });
    const again = await svc(['apply', file, '--tenant', tenant.name, '--json']);
    expect(again.code).toBe(0);
    expect(json(again).summary).toEqual({ created: 0, updated: 0, unchanged: 1 });

    await writeFile(file, JSON.stringify({ queues: [{ name: 'ret-q', retention_action: 'shred' }] }));
    const bad = await svc(['apply', file, '--tenant', tenant.name]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('retention_action');
  });

  it('svc tenant update sets the jobs retention; a negative value is refused naming the flag', async () => {
    const r = await svc(['tenant', 'update', tenant.name, '--job-retention-days', '14.5', '--job-retention-action', 'archive', '--json']);
    expect(r.code).toBe(0);
    expect(json(r)).toMatchObject({ job_retention_days: 14.5, job_retention_action: 'archive' });
    const bad = await svc(['tenant', 'update', tenant.name, '--job-retention-days', '-3']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('--job-retention-days');
  });

  it('svc archive list shows the manifest and restore brings the items back as new ones', async () => {
    const [q] = await t.sql<{ id: string }[]>`select id from queues where tenant_id = ${tenant.id} and name = 'ret-q'`;
    await t.sql`
      insert into queue_item_records (tenant_id, queue_id, status, data, updated_at)
      select ${tenant.id}, ${q!.id}, 'completed', jsonb_build_object('n', g), now() - interval '1 day'
      from generate_series(1, 6) g`;
    const engine = createEngine({ sql: t.sql, logger: createLogger({ service: 'cli-test', level: 'error' }), recordArchive: directoryArchive(dir) });
    await engine.sweeps.retention();
    expect(await t.sql`select 1 from queue_items where queue_id = ${q!.id}`).toHaveLength(0);

    const list = await svc(['archive', 'list', '--tenant', tenant.name, '--queue', 'ret-q', '--json']);
    expect(list.code).toBe(0);
    const files = json(list) as Array<{ rows: number; queue_name: string }>;
    expect(files.reduce((n, f) => n + f.rows, 0)).toBe(6);
    expect(files.every((f) => f.queue_name === 'ret-q')).toBe(true);

    const from = new Date(Date.now() - 3 * 86_400_000).toISOString();
    const to = new Date().toISOString();
    const noDir = await svc(['archive', 'restore', '--tenant', tenant.name, '--queue', 'ret-q', '--from', from, '--to', to]);
    expect(noDir.code).not.toBe(0);
    expect(noDir.stderr).toContain('ARCHIVE_DIR');
    const badDate = await svc(['archive', 'restore', '--tenant', tenant.name, '--queue', 'ret-q', '--from', 'yesterday', '--to', to], { ARCHIVE_DIR: dir });
    expect(badDate.code).not.toBe(0);
    expect(badDate.stderr).toContain('--from');

    const r = await svc(['archive', 'restore', '--tenant', tenant.name, '--queue', 'ret-q', '--from', from, '--to', to, '--json'], { ARCHIVE_DIR: dir });
    expect(r.code).toBe(0);
    expect(json(r)).toEqual({ queue_id: q!.id, restored: 6 });
    const back = await t.sql<{ status: string; n: number }[]>`select status, count(*)::int as n from queue_items where queue_id = ${q!.id} group by status`;
    expect(back).toEqual([{ status: 'new', n: 6 }]);
  });

  it('svc archive restore and sweep read an S3 bucket when ARCHIVE_S3_BUCKET names one; wrong archive settings are refused before anything runs', async () => {
    const s3 = await startS3Server();
    const archive = s3Archive({ bucket: s3.bucket, prefix: 'cli/', endpoint: s3.endpoint, region: 'us-east-1', credentials: s3.credentials });
    try {
      await svc(['apply', await queueFile('s3-q'), '--tenant', tenant.name]);
      const [q] = await t.sql<{ id: string }[]>`select id from queues where tenant_id = ${tenant.id} and name = 's3-q'`;
      await t.sql`
        insert into queue_item_records (tenant_id, queue_id, status, data, updated_at)
        select ${tenant.id}, ${q!.id}, 'completed', jsonb_build_object('s3', g), now() - interval '2 hours'
        from generate_series(1, 5) g`;
      const engine = createEngine({ sql: t.sql, logger: createLogger({ service: 'cli-test', level: 'error' }), recordArchive: archive });
      await engine.sweeps.retention();
      expect(await t.sql`select 1 from queue_items where queue_id = ${q!.id}`).toHaveLength(0);

      const from = new Date(Date.now() - 86_400_000).toISOString();
      const to = new Date().toISOString();
      const restore = ['archive', 'restore', '--tenant', tenant.name, '--queue', 's3-q', '--from', from, '--to', to, '--json'];
      const env = { ...s3.env, ARCHIVE_S3_PREFIX: 'cli' };

      const both = await svc(restore, { ...env, ARCHIVE_DIR: dir });
      expect(both.code).not.toBe(0);
      expect(both.stderr).toContain('ARCHIVE_DIR and ARCHIVE_S3_BUCKET are both set');
      const leaky = await svc(restore, { ...env, ARCHIVE_S3_ENDPOINT: `http://S3RVER:s3cr3t-v4lue@127.0.0.1:1` });
      expect(leaky.code).not.toBe(0);
      expect(leaky.stderr).toContain('ARCHIVE_S3_ENDPOINT must not carry credentials');
      expect(leaky.stderr).not.toContain('s3cr3t-v4lue');
      // the right bucket under another prefix holds none of the manifest's files: a broken archive, not an empty one
      const elsewhere = await svc(restore, { ...env, ARCHIVE_S3_PREFIX: 'other' });
      expect(elsewhere.code).not.toBe(0);
      expect(elsewhere.stderr).toContain('archive file missing');
      expect(await t.sql`select 1 from queue_items where queue_id = ${q!.id}`).toHaveLength(0);

      const r = await svc(restore, env);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect(json(r)).toEqual({ queue_id: q!.id, restored: 5 });
      const back = await t.sql<{ status: string; data: { s3: number } }[]>`select status, data from queue_item_records where queue_id = ${q!.id} order by (data->>'s3')::int`;
      expect(back).toEqual([1, 2, 3, 4, 5].map((n) => ({ status: 'new', data: { s3: n } })));

      // a killed batch's file, in no manifest row: svc archive sweep names it, then removes it
      const orphan = `${tenant.id}/queues/${q!.id}/2026-01-01T00/orphan.ndjson.gz`;
      await archive.put(orphan, ['{"orphan":true}']);
      const sweep = ['archive', 'sweep', '--older-than-hours', '0', '--json'];
      for (const hours of ['-1', 'abc', '1e3', '99999999']) {
        const bad = await svc(['archive', 'sweep', '--older-than-hours', hours], env);
        expect(bad.code).toBe(2);
        expect(bad.stderr).toContain('--older-than-hours');
      }
      const none = await svc(sweep, { ARCHIVE_S3_BUCKET: undefined });
      expect(none.code).toBe(2);
      expect(none.stderr).toContain('no archive is configured');
      const young = await svc(['archive', 'sweep', '--json'], env);
      expect(json(young)).toMatchObject({ orphans: [], removed: 0 });
      const dry = await svc([...sweep, '--dry-run'], env);
      expect(dry.code).toBe(0);
      expect(json(dry)).toMatchObject({ orphans: [orphan], removed: 0, dry_run: true });
      expect(await archive.get(orphan)).not.toBeNull();
      const swept = await svc(sweep, env);
      expect(json(swept)).toMatchObject({ orphans: [orphan], removed: 1, busy_scopes: 0 });
      expect(await archive.get(orphan)).toBeNull();
      const files = await t.sql<{ key: string }[]>`select key from archive_files where queue_id = ${q!.id}`;
      for (const f of files) expect(await archive.get(f.key)).not.toBeNull();
    } finally {
      archive.close();
      await s3.close();
    }
  });
});
