import { createTestContext, type TestContext } from '@svc/testing';

/**
 * The platform's transactions (packages/core/src/db/sql.ts): BEGIN goes out ahead of the first
 * statement without a round trip of its own, and a savepoint hands its work a handle of its own.
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
  await ctx.sql`create table tx_probe (n int not null)`;
});
afterAll(() => ctx.close());

it('the first statement of a transaction runs inside it, however soon it is sent', async () => {
  const xids = await ctx.sql.begin(async (tx) => {
    const [a] = await tx`select pg_current_xact_id()::text as x`;
    const [b] = await tx`select pg_current_xact_id()::text as x`;
    return [a!.x, b!.x];
  });
  expect(xids[0]).toBe(xids[1]);
  // a first statement that writes is rolled back with the transaction
  await expect(ctx.sql.begin(async (tx) => {
    await tx`insert into tx_probe (n) values (1)`;
    await tx`select 1/0`;
  })).rejects.toThrow(/division by zero/);
  // the same when the first statements are sent together, without an await between them
  await expect(ctx.sql.begin((tx) => [tx`insert into tx_probe (n) values (2)`, tx`select 1/0`])).rejects.toThrow(/division by zero/);
  expect(await ctx.sql`select n from tx_probe`).toEqual([]);
  // a transaction whose work throws before any statement still ends, and the pool serves the next
  await expect(ctx.sql.begin(async () => {
    throw new Error('refused before any statement');
  })).rejects.toThrow('refused before any statement');
  const [{ ok }] = await ctx.sql`select true as ok`;
  expect(ok).toBe(true);
});

it('a savepoint runs in its transaction through a handle of its own, and rolls back alone', async () => {
  const seen = await ctx.sql.begin(async (tx) => {
    await tx`insert into tx_probe (n) values (3)`;
    let inner: unknown = null;
    await tx.savepoint(async (sp) => {
      inner = sp;
      await sp`insert into tx_probe (n) values (4)`;
      await sp`select 1/0`;
    }).catch(() => undefined);
    const [{ x }] = await tx`select count(*)::int as x from tx_probe`;
    return { same: inner === tx, x };
  });
  expect(seen).toEqual({ same: false, x: 1 });
  expect(await ctx.sql`select n from tx_probe`).toEqual([{ n: 3 }]);
});
