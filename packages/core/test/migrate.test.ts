import { createTestContext, seedApiKey, seedTenant, type TestContext } from '@svc/testing';
import { migrate } from '@svc/core';
import { loadMigrations, touchApiKeys } from '@svc/core/internals';

describe('migrations', () => {
  let ctx: TestContext;
  beforeAll(async () => {
    ctx = await createTestContext();
  });
  afterAll(() => ctx.close());

  it('are numbered without gaps and all applied to the template', async () => {
    const files = loadMigrations();
    expect(files.map((m) => m.version)).toEqual(files.map((_, i) => i + 1));
    const rows = await ctx.sql<{ version: number }[]>`select version from schema_migrations order by version`;
    expect(rows.map((r) => r.version)).toEqual(files.map((m) => m.version));
  });

  it('applies nothing twice when run again, even concurrently', async () => {
    const results = await Promise.all([migrate(ctx.sql), migrate(ctx.sql)]);
    expect(results).toEqual([[], []]);
  });

  it('keeps exact per-status queue item counts through inserts, updates and deletes', async () => {
    const [tenant] = await ctx.sql`insert into tenants (name) values ('t') returning id`;
    const [queue] = await ctx.sql`insert into queues (tenant_id, name) values (${tenant!.id}, 'q') returning id`;
    await ctx.sql`insert into queue_item_records (tenant_id, queue_id, data)
      select ${tenant!.id}, ${queue!.id}, '{}'::jsonb from generate_series(1, 25)`;
    await ctx.sql`update queue_items set status = 'completed' where id in (select id from queue_items limit 10)`;
    await ctx.sql`delete from queue_items where id in (select id from queue_items where status = 'new' limit 5)`;
    const counts = await ctx.sql<{ status: string; n: number }[]>`
      select status, sum(n)::int as n from queue_item_counts where queue_id = ${queue!.id} group by status order by status`;
    expect(counts).toEqual([
      { status: 'completed', n: 10 },
      { status: 'new', n: 10 },
    ]);
  });

  it("holds every item to its queue's workspace, and deletes items with their workspace", async () => {
    const [a] = await ctx.sql`insert into tenants (name) values ('owner-a') returning id`;
    const [b] = await ctx.sql`insert into tenants (name) values ('owner-b') returning id`;
    const [queue] = await ctx.sql`insert into queues (tenant_id, name) values (${a!.id}, 'q') returning id`;
    // another workspace's id on an item of this queue is refused
    await expect(ctx.sql`insert into queue_item_records (tenant_id, queue_id, data) values (${b!.id}, ${queue!.id}, '{}')`)
      .rejects.toMatchObject({ code: '23503', constraint_name: 'queue_items_queue_tenant_fkey' });
    await ctx.sql`insert into queue_item_records (tenant_id, queue_id, data) values (${a!.id}, ${queue!.id}, '{}')`;
    await ctx.sql`delete from tenants where id = ${a!.id}`;
    const [{ n }] = await ctx.sql<{ n: number }[]>`select count(*)::int as n from queue_items where queue_id = ${queue!.id}`;
    expect(n).toBe(0);
    const [{ c }] = await ctx.sql<{ c: number }[]>`select count(*)::int as c from queue_item_counts where queue_id = ${queue!.id}`;
    expect(c).toBe(0);
  });

  it('keeps the last-use writes of API keys on their pages (HOT updates, no new index entries)', async () => {
    /*
     * What makes the write HOT is fixed by the schema: last_used_at is in no index (nor in an
     * index's expression or predicate) and pages keep room for the new version (fillfactor 70).
     */
    const [table] = await ctx.sql<{ options: string[] | null }[]>`select reloptions as options from pg_class where relname = 'api_keys' and relkind = 'r'`;
    expect(table!.options).toContain('fillfactor=70');
    const indexes = await ctx.sql<{ name: string; def: string }[]>`
      select c.relname as name, pg_get_indexdef(i.indexrelid) as def
      from pg_index i join pg_class c on c.oid = i.indexrelid where i.indrelid = 'api_keys'::regclass`;
    expect(indexes.length).toBeGreaterThan(0);
    expect(indexes.filter((ix) => ix.def.includes('last_used_at'))).toEqual([]);

    /*
     * And the write uses that room. One round over freshly written pages needs no pruning, so its
     * share of HOT updates does not depend on what else the cluster is doing (after that round,
     * staying HOT needs Postgres to prune the page, which it skips while a busy cluster's
     * checkpoint has the page pinned: a count of later rounds measures the host, not the schema).
     * Measured: 136 of 300 stay on their page with fillfactor 70; none with full pages (fillfactor 100).
     */
    const tenant = await seedTenant(ctx.sql);
    const keys = [];
    for (let i = 0; i < 300; i++) keys.push(await seedApiKey(ctx.sql, tenant.id));
    // the writes on one connection, whose statistics are sent on demand (else up to a second later)
    const conn = await ctx.sql.reserve();
    const stats = async () => {
      await conn`select pg_stat_force_next_flush()`;
      await conn`select 1`;
      const [row] = await ctx.sql<{ upd: number; hot: number }[]>`
        select n_tup_upd::int as upd, n_tup_hot_upd::int as hot from pg_stat_user_tables where relname = 'api_keys'`;
      return row!;
    };
    try {
      const before = await stats();
      const at = new Date(Date.UTC(2030, 0, 1));
      expect(await touchApiKeys(conn, keys.map((k) => ({ id: k.row.id, at })))).toBe(300);
      const after = await stats();
      expect(after.upd - before.upd).toBe(300);
      expect(after.hot - before.hot).toBeGreaterThanOrEqual(90);
    } finally {
      conn.release();
    }
  });
});
