import { createSql } from '@svc/core';
import { createTestContext, type TestContext } from '@svc/core/testing';

describe('transactions through createSql', () => {
  let ctx: TestContext;
  beforeAll(async () => {
    ctx = await createTestContext();
    await ctx.sql`create table tx_probe (id serial primary key, tag text not null)`;
  });
  afterAll(() => ctx.close());

  it('never sends BEGIN on an unreserved connection, even at the pipeline boundary under load', async () => {
    // the conditions of porsager/postgres#823: a tiny pool and pipeline, busy connections,
    // plain queries and transactions racing for them
    const sql = createSql(ctx.databaseUrl, { max: 3, maxPipeline: 2 });
    try {
      await Promise.all([1, 2, 3].map(() => sql`select pg_sleep(0.02)`)); // all three connections open
      for (let round = 0; round < 10; round++) {
        const busy = [1, 2, 3].map(() => sql`select pg_sleep(0.05)`.execute());
        // one pipelined query per connection, so each BEGIN is the query that fills a pipeline
        const plain = Array.from({ length: 3 }, () => sql`select 1`.execute());
        const txs = Array.from({ length: 5 }, (_, i) =>
          sql.begin(async (tx) => {
            await tx`insert into tx_probe (tag) values (${`r${round}-t${i}`})`;
            const [state] = await tx`select now() = statement_timestamp() as autocommit`;
            return state!.autocommit;
          }),
        );
        const results = await Promise.all([...busy, ...plain, ...txs]);
        // inside a real transaction now() is the transaction start, earlier than the statement
        expect(results.slice(6)).toEqual([false, false, false, false, false]);
      }
      const [{ n }] = (await sql`select count(*)::int as n from tx_probe`) as unknown as [{ n: number }];
      expect(n).toBe(50);
      // no connection is left inside a transaction
      const open = await sql`select count(*)::int as n from pg_stat_activity where datname = current_database() and state like 'idle in transaction%'`;
      expect(open[0]!.n).toBe(0);
    } finally {
      await sql.end();
    }
  });

  it('rolls back the whole transaction on error and keeps savepoint semantics', async () => {
    await expect(
      ctx.sql.begin(async (tx) => {
        await tx`insert into tx_probe (tag) values ('rolled-back')`;
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    await ctx.sql.begin(async (tx) => {
      await tx`insert into tx_probe (tag) values ('kept')`;
      await expect(
        tx.savepoint(async (sp) => {
          await sp`insert into tx_probe (tag) values ('inner-rolled-back')`;
          throw new Error('inner');
        }),
      ).rejects.toThrow('inner');
      await tx.savepoint(async (sp) => sp`insert into tx_probe (tag) values ('inner-kept')`);
    });
    const tags = (await ctx.sql`select tag from tx_probe where tag not like 'r%' order by id`).map((r) => r.tag);
    expect(tags).toEqual(['kept', 'inner-kept']);
  });
});
