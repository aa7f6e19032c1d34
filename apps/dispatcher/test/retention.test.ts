import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { directoryArchive, s3Archive } from '@svc/core/internals';
import { seedQueue, seedTenant, type TestContext, processSuite, waitFor } from '@svc/testing';
import { startS3Server } from '@svc/testing/s3';

/**
 * The retention pass as a running dispatcher schedules it (docs/decisions/retention.md): with
 * ARCHIVE_DIR set, an archiving queue's expired items are written there, listed in the manifest and
 * deleted; live items stay; the counters agree with the table; one event tells the pass.
 */
jest.setTimeout(60_000);
const suite = processSuite();
const { children } = suite;
let ctx: TestContext;
let dir: string;

beforeAll(async () => {
  ({ ctx } = suite);
  dir = await mkdtemp(join(tmpdir(), 'svc-dispatcher-archive-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('a running dispatcher', () => {
  it('archives and deletes an archiving queue\'s expired items on its retention tick', async () => {
    const tenant = await seedTenant(ctx.sql);
    const queue = await seedQueue(ctx.sql, tenant.id);
    const qid = queue.id as string;
    await ctx.sql`update queues set retention_completed_days = 0.001, retention_action = 'archive' where id = ${qid}`;
    await ctx.sql`
      insert into queue_item_records (tenant_id, queue_id, status, data, updated_at)
      select ${tenant.id}, ${qid}, case when g <= 20 then 'completed' else 'new' end, jsonb_build_object('n', g), now() - interval '1 hour'
      from generate_series(1, 25) g`;

    children.dispatcher(ctx, { ARCHIVE_DIR: dir, RETENTION_EVERY_MS: '500' });
    const scheduler = await waitFor('the retention scheduler', () => suite.bull.dispatchQueue.getJobScheduler('retention'));
    expect(scheduler.every).toBe(500);

    await waitFor('the expired items gone', async () => {
      const [r] = await ctx.sql<Array<{ n: number }>>`select count(*)::int as n from queue_items where queue_id = ${qid}`;
      return r!.n === 5;
    });
    const left = await ctx.sql<Array<{ status: string }>>`select distinct status from queue_items where queue_id = ${qid}`;
    expect(left).toEqual([{ status: 'new' }]);
    const [counted] = await ctx.sql<Array<{ n: number }>>`select sum(n)::int as n from queue_item_counts where queue_id = ${qid}`;
    expect(counted!.n).toBe(5);

    const files = await ctx.sql<Array<{ key: string; rows: number }>>`select key, rows from archive_files where queue_id = ${qid}`;
    expect(files.reduce((n, f) => n + f.rows, 0)).toBe(20);
    const archive = directoryArchive(dir);
    const lines = (await Promise.all(files.map((f) => archive.get(f.key)))).flatMap((l) => l!);
    expect(lines.map((l) => (JSON.parse(l) as { data: { n: number } }).data.n).sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    const ev = await waitFor('the pass event', async () => {
      const rows = await ctx.sql<Array<{ data: { deleted: number } }>>`select data from events where type = 'queue.retention' and data->>'queue_id' = ${qid}`;
      return rows.length ? rows : null;
    });
    expect(ev.map((e) => e.data.deleted)).toEqual([20]);
  });

  it('archives into an S3 bucket when ARCHIVE_S3_BUCKET names one, and refuses to start with a directory too', async () => {
    // the previous test's dispatcher, archiving into the directory, must not take this queue's pass
    await children.stopAll();
    const s3 = await startS3Server();
    const archive = s3Archive({ bucket: s3.bucket, prefix: 'dispatcher/', endpoint: s3.endpoint, region: 'us-east-1', credentials: s3.credentials });
    try {
      const both = children.dispatcher(ctx, { ...s3.env, ARCHIVE_DIR: dir });
      expect(await both.exited).not.toBe(0);
      expect(both.output()).toContain('ARCHIVE_DIR and ARCHIVE_S3_BUCKET are both set');

      const tenant = await seedTenant(ctx.sql);
      const queue = await seedQueue(ctx.sql, tenant.id);
      const qid = queue.id as string;
      await ctx.sql`update queues set retention_completed_days = 0.001, retention_action = 'archive' where id = ${qid}`;
      await ctx.sql`
        insert into queue_item_records (tenant_id, queue_id, status, data, updated_at)
        select ${tenant.id}, ${qid}, 'completed', jsonb_build_object('n', g), now() - interval '1 hour'
        from generate_series(1, 12) g`;
      children.dispatcher(ctx, { ...s3.env, ARCHIVE_S3_PREFIX: 'dispatcher', RETENTION_EVERY_MS: '500' });
      await waitFor('the expired items gone', async () => {
        const [r] = await ctx.sql<Array<{ n: number }>>`select count(*)::int as n from queue_items where queue_id = ${qid}`;
        return r!.n === 0;
      });
      const files = await ctx.sql<Array<{ key: string; rows: number }>>`select key, rows from archive_files where queue_id = ${qid}`;
      const lines = (await Promise.all(files.map((f) => archive.get(f.key)))).flatMap((l) => l!);
      expect(lines.map((l) => (JSON.parse(l) as { data: { n: number } }).data.n).sort((a, b) => a - b)).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
    } finally {
      archive.close();
      await children.stopAll();
      await s3.close();
    }
  });
});
