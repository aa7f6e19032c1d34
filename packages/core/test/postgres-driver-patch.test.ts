import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import postgres from 'postgres';
import { createTestContext, type TestContext } from '@svc/testing';

/**
 * The platform's patch of postgres.js (patches/postgres+3.4.9.patch,
 * docs/decisions/postgres-driver-patch.md), tested on the driver itself: createSql is not used.
 */

const PATCH_MARKERS = ['svc-patch (porsager/postgres#1195)', 'svc-patch (porsager/postgres#1199, #1208)'];
const LIVENESS_MS = 10_000;

type Outcome<T> = { ok: T } | { err: unknown } | 'hung';

/** How `p` settled, or 'hung' when it did not within `ms` (a liveness bound, not a speed one). */
async function within<T>(p: Promise<T>, ms = LIVENESS_MS): Promise<Outcome<T>> {
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<'hung'>((r) => (timer = setTimeout(() => r('hung'), ms)));
  try {
    return await Promise.race([p.then((ok) => ({ ok }), (err: unknown) => ({ err })), hung]);
  } finally {
    clearTimeout(timer);
  }
}

const pidOf = async (sql: postgres.ReservedSql<Record<string, unknown>>): Promise<number> =>
  ((await sql`select pg_backend_pid() as pid`) as unknown as [{ pid: number }])[0].pid;

describe('the patched postgres.js', () => {
  let ctx: TestContext;
  beforeAll(async () => {
    ctx = await createTestContext();
  });
  afterAll(() => ctx.close());

  it('is the version the patch is for, and every copy Node can load carries the patch', () => {
    // a lock file that moves postgres.js to another version, or an install that skipped
    // postinstall, must fail here rather than bring the defects back silently
    const main = require.resolve('postgres'); // what the compiled CommonJS code loads
    const root = path.resolve(path.dirname(main), '..', '..');
    const { version } = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string };
    expect(version).toBe('3.4.9');
    expect(fs.existsSync(path.join(__dirname, '..', '..', '..', 'patches', `postgres+${version}.patch`))).toBe(true);
    expect(main).toBe(path.join(root, 'cjs', 'src', 'index.js'));
    // cjs/ for require(), src/ for import
    for (const dir of ['cjs/src', 'src']) {
      const code = ['index.js', 'connection.js'].map((f) => fs.readFileSync(path.join(root, dir, f), 'utf8')).join('\n');
      expect(PATCH_MARKERS.map((marker) => [dir, marker, code.includes(marker)])).toEqual(PATCH_MARKERS.map((marker) => [dir, marker, true]));
    }
  });

  it('hands a waiting reservation the connection that reconnects for it (porsager/postgres#1195)', async () => {
    // unpatched, the reconnecting connection took the reservation out of the queue and dropped
    // it once connected: the caller never settled
    const sql = postgres(ctx.databaseUrl, { max: 1, onnotice: () => undefined });
    try {
      const holder = await sql.reserve();
      const before = await pidOf(holder);
      // the only connection is reserved: this one waits in the queue
      const waiting = sql.reserve();
      const settled = within(waiting);
      // the server ends the holder's session (a restart, a failover); the holder is not released:
      // its connection now belongs to the reconnection
      await ctx.sql`select pg_terminate_backend(${before})`;
      const outcome = await settled;
      expect(outcome).toHaveProperty('ok');
      const next = (outcome as { ok: postgres.ReservedSql<Record<string, unknown>> }).ok;
      expect(await pidOf(next)).not.toBe(before);
      next.release();
      // and the pool goes on serving
      expect(await within(sql`select 1 as one`.then((r) => r[0]!.one))).toEqual({ ok: 1 });
    } finally {
      await sql.end({ timeout: 1 });
    }
  });

  it('serves a reservation on a pool that does not fetch array types', async () => {
    // unpatched, a connection started for a reservation reported itself ready only after
    // fetching the array types: with fetch_types off it never did, and reserve() hung
    const sql = postgres(ctx.databaseUrl, { max: 1, fetch_types: false, onnotice: () => undefined });
    try {
      const outcome = await within(sql.reserve());
      expect(outcome).toHaveProperty('ok');
      const reserved = (outcome as { ok: postgres.ReservedSql<Record<string, unknown>> }).ok;
      expect(await reserved`select 1 as one`).toEqual([{ one: 1 }]);
      reserved.release();
    } finally {
      await sql.end({ timeout: 1 });
    }
  });

  it('never hands a connection to a reservation an earlier refused attempt gave up on', async () => {
    // A server starting up refuses connections (FATAL 57P03). Unpatched, the reservation whose
    // own attempt was refused was rejected yet stayed queued: the next connection ready was
    // handed to it and lost to the pool. And the reservation that the refused connection then
    // reconnected for was dropped (porsager/postgres#1195).
    const target = new URL(ctx.databaseUrl);
    let accepted = 0;
    let refusedClosed!: () => void;
    const refused = new Promise<void>((r) => (refusedClosed = r));
    const sockets = new Set<net.Socket>();
    const proxy = net.createServer((client) => {
      const n = accepted++;
      sockets.add(client);
      client.on('error', () => undefined);
      if (n === 1) {
        const fields = Buffer.from('SFATAL\0VFATAL\0C57P03\0Mthe database system is starting up\0\0');
        const message = Buffer.concat([Buffer.from('E'), Buffer.alloc(4), fields]);
        message.writeUInt32BE(4 + fields.length, 1);
        client.once('close', () => refusedClosed());
        client.once('data', () => client.end(message));
        return;
      }
      // the first attempt is answered only after the second was refused and closed
      void (n === 0 ? refused : Promise.resolve()).then(() => {
        const server = net.connect(Number(target.port || 5432), target.hostname);
        sockets.add(server);
        server.on('error', () => client.destroy());
        client.on('close', () => server.destroy());
        server.on('close', () => client.destroy());
        client.pipe(server).pipe(client);
      });
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    const url = new URL(ctx.databaseUrl);
    url.host = `127.0.0.1:${(proxy.address() as net.AddressInfo).port}`;
    const sql = postgres(url.toString(), { max: 2, onnotice: () => undefined });
    try {
      // each starts an attempt of its own: the first is held back, the second refused
      const [first, second] = await Promise.all([within(sql.reserve()), within(sql.reserve())]);
      expect(accepted).toBeGreaterThanOrEqual(3);
      // both are served: the refused attempt does not fail a reservation that can still wait
      expect([first !== 'hung' && 'ok' in first, second !== 'hung' && 'ok' in second]).toEqual([true, true]);
      const held = [first, second].map((o) => (o as { ok: postgres.ReservedSql<Record<string, unknown>> }).ok);
      const pids = await Promise.all(held.map(pidOf));
      expect(new Set(pids).size).toBe(2);
      for (const h of held) h.release();
      // no connection was lost to the pool: it can still hand out both at once
      const again = await Promise.all([within(sql.reserve()), within(sql.reserve())]);
      expect(again.map((o) => o !== 'hung' && 'ok' in o)).toEqual([true, true]);
      for (const o of again) (o as { ok: postgres.ReservedSql<Record<string, unknown>> }).ok.release();
    } finally {
      await sql.end({ timeout: 1 });
      for (const s of sockets) s.destroy();
      proxy.close();
    }
  });
  describe('when the session of a reserved connection ends (a restart, a failover)', () => {
    // unpatched (porsager/postgres#1199, #1208), a statement on the reserved connection was
    // written on the closed connection (an uncaught TypeError from a timer, which ends the
    // process) or into the next session, and release() put the dead connection back into the
    // pool, where the next query hung
    const uncaught: unknown[] = [];
    const onUncaught = (err: unknown) => uncaught.push(err);
    let sql: postgres.Sql<Record<string, unknown>>;
    let closes: Promise<void>;
    beforeEach(() => {
      uncaught.length = 0;
      process.on('uncaughtException', onUncaught);
      let closed!: () => void;
      closes = new Promise<void>((r) => (closed = r));
      // the driver's own close callback: the test goes on once the driver has seen the close
      sql = postgres(ctx.databaseUrl, { max: 1, onnotice: () => undefined, onclose: () => closed() });
    });
    afterEach(async () => {
      process.off('uncaughtException', onUncaught);
      await sql.end({ timeout: 1 });
    });

    /** a reserved connection whose session the server ended, once the driver saw the close */
    async function endedReservation(): Promise<{ reserved: postgres.ReservedSql<Record<string, unknown>>; pid: number }> {
      const reserved = await sql.reserve();
      const pid = await pidOf(reserved);
      await ctx.sql`select pg_terminate_backend(${pid}, 10000)`;
      expect(await within(closes)).toEqual({ ok: undefined });
      return { reserved, pid };
    }

    it('a statement on it fails with the connection error, in no other session', async () => {
      const { reserved } = await endedReservation();
      const outcome = await within(reserved`select pg_backend_pid() as pid`);
      expect(outcome).toHaveProperty('err');
      expect((outcome as { err: { code?: string } }).err.code).toBe('CONNECTION_CLOSED');
      expect(uncaught).toEqual([]);
    });

    it('releasing it leaves no dead connection in the pool', async () => {
      const { reserved, pid } = await endedReservation();
      reserved.release();
      const outcome = await within(sql`select pg_backend_pid() as pid`.then((r) => r[0]!.pid as number));
      expect(outcome).toHaveProperty('ok');
      expect((outcome as { ok: number }).ok).not.toBe(pid);
      expect(uncaught).toEqual([]);
    });
  });
});
