import net from 'node:net';
import { createSql, isConnectionError, type Sql } from '@svc/core';
import { createTestContext, type TestContext } from '@svc/testing';

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

  it('transactions waiting for a connection survive a refused connection attempt', async () => {
    // a server starting up refuses connections (FATAL 57P03); postgres.js 3.4.9 then rejected
    // the waiting reservation yet kept it queued (the next connection ready was handed to it
    // and lost), and a reconnecting connection dropped the reservation it reconnected for (it
    // never settled): fixed by the patch of postgres.js (patches/postgres+3.4.9.patch), which
    // packages/core/test/postgres-driver-patch.test.ts tests on the driver alone
    const target = new URL(ctx.databaseUrl);
    let accepted = 0;
    const proxy = net.createServer((client) => {
      const n = accepted++;
      client.on('error', () => undefined);
      if (n === 1) {
        const fields = Buffer.from('SFATAL\0VFATAL\0C57P03\0Mthe database system is starting up\0\0');
        const message = Buffer.concat([Buffer.from('E'), Buffer.alloc(4), fields]);
        message.writeUInt32BE(4 + fields.length, 1);
        client.once('data', () => client.end(message));
        return;
      }
      // the first attempt answers late, after the second was refused
      setTimeout(() => {
        const server = net.connect(Number(target.port || 5432), target.hostname);
        server.on('error', () => client.destroy());
        client.on('close', () => server.destroy());
        server.on('close', () => client.destroy());
        client.pipe(server).pipe(client);
      }, n === 0 ? 300 : 0);
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    const url = new URL(ctx.databaseUrl);
    url.host = `127.0.0.1:${(proxy.address() as net.AddressInfo).port}`;
    const sql = createSql(url.toString(), { max: 2 });
    /** two transactions holding both connections at once, neither hanging (a liveness bound of 20 s) */
    const both = async () => {
      let inside = 0;
      let allIn!: () => void;
      const barrier = new Promise<void>((r) => (allIn = r));
      // a refused attempt may fail a transaction with a connection error (callers try again),
      // but none may hang
      const tx = async (): Promise<void> => {
        try {
          await sql.begin(async (t) => {
            await t`select 1`;
            if (++inside === 2) allIn();
            await barrier;
          });
        } catch (err) {
          if (!isConnectionError(err)) throw err;
          return tx();
        }
      };
      let timer: NodeJS.Timeout | undefined;
      const hung = new Promise<string>((r) => (timer = setTimeout(() => r('hung'), 20_000)));
      try {
        return await Promise.race([Promise.all([tx(), tx()]).then(() => 'ok', (e: unknown) => String(e)), hung]);
      } finally {
        clearTimeout(timer);
        allIn();
      }
    };
    try {
      expect(await both()).toBe('ok');
      expect(await both()).toBe('ok');
      expect(accepted).toBeGreaterThanOrEqual(3);
    } finally {
      await sql.end({ timeout: 1 });
      proxy.close();
    }
  });

  describe('when the server ends the session of a transaction (a restart, a failover)', () => {
    // postgres.js 3.4.9 (porsager/postgres#1199, #1208): a statement on a reserved connection
    // whose session ended threw an uncaught TypeError from a timer (the process died) or never
    // settled, and releasing the connection left a dead one in the pool where queries hung
    const uncaught: Error[] = [];
    const onUncaught = (err: Error) => uncaught.push(err);
    let sql: Sql;
    let admin: Sql;
    beforeEach(() => {
      uncaught.length = 0;
      process.on('uncaughtException', onUncaught);
      sql = createSql(ctx.databaseUrl, { max: 2 });
      admin = createSql(ctx.databaseUrl, { max: 1 });
    });
    afterEach(async () => {
      process.off('uncaughtException', onUncaught);
      await Promise.all([sql.end({ timeout: 1 }), admin.end({ timeout: 1 })]);
    });

    /** settles within `ms` (a liveness bound for a loaded host), or says it hung */
    async function within<T>(p: Promise<T>, ms = 20_000): Promise<{ value: T } | { error: unknown } | { hung: true }> {
      let timer: NodeJS.Timeout | undefined;
      const hung = new Promise<{ hung: true }>((r) => {
        timer = setTimeout(() => r({ hung: true }), ms);
      });
      try {
        return await Promise.race([p.then((value) => ({ value }), (error: unknown) => ({ error })), hung]);
      } finally {
        clearTimeout(timer);
      }
    }

    // waits (up to 10 s) until the session is gone: on a busy host the signalled backend may not run
    // for a while, and the test's next statement must meet a dead session, not a dying one
    const terminate = (pid: number) => admin`select pg_terminate_backend(${pid}, 10000)`;

    async function expectPoolWorks(): Promise<void> {
      // more queries than connections: every one of them must be answered (one that lands on a
      // connection being re-opened may fail once, with a connection error, but none may hang)
      const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => within(sql`select ${i}::int as i`)));
      for (const a of answers) {
        expect('hung' in a).toBe(false);
        if ('error' in a) expect(isConnectionError(a.error)).toBe(true);
      }
      const tx = await within(sql.begin(async (t) => (await t`select 42::int as x`)[0]!.x));
      expect(tx).toEqual({ value: 42 });
    }

    it('between two statements: the next one fails with a connection error, the process and the pool live on', async () => {
      const res = await within(sql.begin(async (tx) => {
        const [{ pid }] = await tx`select pg_backend_pid() as pid`;
        await terminate(pid);
        await new Promise((r) => setTimeout(r, 200));
        await tx`insert into tx_probe (tag) values ('after-terminate')`;
      }));
      expect('error' in res && isConnectionError(res.error)).toBe(true);
      await expectPoolWorks();
      expect(uncaught).toEqual([]);
      expect(await ctx.sql`select 1 from tx_probe where tag = 'after-terminate'`).toHaveLength(0);
    });

    it('during a statement: the transaction fails with a connection error, nothing of it is kept, the pool lives on', async () => {
      const res = await within(sql.begin(async (tx) => {
        const [{ pid }] = await tx`select pg_backend_pid() as pid`;
        await tx`insert into tx_probe (tag) values ('terminated-mid-way')`;
        setTimeout(() => void terminate(pid).catch(() => undefined), 100);
        // far longer than the terminate can be late: the statement ends only by the session's end
        await tx`select pg_sleep(15)`;
      }));
      expect('error' in res && isConnectionError(res.error)).toBe(true);
      await expectPoolWorks();
      expect(uncaught).toEqual([]);
      expect(await ctx.sql`select 1 from tx_probe where tag = 'terminated-mid-way'`).toHaveLength(0);
    });

    it('a callback that swallows the connection error cannot go on in another session', async () => {
      const res = await within(sql.begin(async (tx) => {
        const [{ pid }] = await tx`select pg_backend_pid() as pid`;
        await tx`insert into tx_probe (tag) values ('first-half')`;
        setTimeout(() => void terminate(pid).catch(() => undefined), 100);
        await tx`select pg_sleep(15)`.catch(() => undefined);
        await tx`insert into tx_probe (tag) values ('second-half')`;
      }));
      expect('error' in res && isConnectionError(res.error)).toBe(true);
      await expectPoolWorks();
      expect(uncaught).toEqual([]);
      expect(await ctx.sql`select tag from tx_probe where tag in ('first-half', 'second-half')`).toHaveLength(0);
    });
  });
});
