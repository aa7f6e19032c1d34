import net from 'node:net';
import postgres from 'postgres';
import { isConnectionError } from './outage';
import { tracingEnabled } from '../tracing';
import { withTracedStatements } from './traced-sql';

export type Sql = postgres.Sql<Record<string, unknown>>;
/** A connection or a transaction: repository functions take either. */
export type Queryable = Sql | postgres.TransactionSql<Record<string, unknown>>;
export type Tx = postgres.TransactionSql<Record<string, unknown>>;

export interface SqlOptions {
  max?: number;
  /** Queries pipelined on one connection (postgres.js default 100). */
  maxPipeline?: number;
  onnotice?: (notice: postgres.Notice) => void;
  /**
   * `transaction`: the URL is a pooler in transaction mode (db/pooler.ts). No named prepared
   * statements then: one prepared on a server session is missing from the next one.
   */
  pooler?: 'none' | 'transaction';
}

export function createSql(url: string, options: SqlOptions = {}): Sql {
  const max = options.max ?? 10;
  const behindPooler = options.pooler === 'transaction';
  const { sql, connections } = withConnections(max, () => postgres(url, {
    max,
    prepare: !behindPooler,
    ...(options.maxPipeline !== undefined ? { max_pipeline: options.maxPipeline } : {}),
    onnotice: options.onnotice ?? (() => undefined),
    // bigint counters come back as JS numbers; they stay far below 2^53.
    types: {
      bigint: { to: 20, from: [20], parse: (value: string) => Number(value), serialize: (value: number) => String(value) },
    },
    transform: { undefined: null },
    connection: behindPooler ? POOLER_STARTUP : { application_name: 'svc', ...STARTUP_PADDING },
    // How long a connection waits before it tries to reconnect after a failed attempt. postgres.js
    // grows it to 10–20 s while Postgres is down (3^n / 100 s) and keeps it until a connection
    // succeeds, so after a 10-second outage queries waited up to 20 s more for a server that was
    // already back. Capped at 2 s like the processes' own retries (db/outage.ts).
    backoff: reconnectDelaySeconds,
    socket: connectSocket,
  } as postgres.Options<Record<string, postgres.PostgresType>>) as unknown as Sql);
  const pool = withReservedTransactions(withSettledReserves(sql, connections));
  // tracing on (OTEL_EXPORTER_OTLP_ENDPOINT): a span per statement; off, the pool as it is
  return tracingEnabled() ? withTracedStatements(pool) : pool;
}

/**
 * postgres.js 3.4.9 loses track of a connection whose socket fails while statements are still
 * being sent on it (a restart or failover under load), in two ways:
 *
 * - The socket reports its error first (postgres.js fails the statements it has sent) and its
 *   close only later in the event loop. Meanwhile the pool still counts the connection as busy and
 *   sends more statements on it; at the close (an error close) postgres.js fails none of them,
 *   keeps them as "sent" into the next session and waits there for their answers: the connection
 *   and every statement given to it hang for good.
 * - It batches small writes behind one `setImmediate` flush and arms it only when none is armed.
 *   A close that comes before the flush cancels it but keeps the cancelled handle and the unsent
 *   bytes: the next startup message is appended behind them and never sent, and the connection
 *   waits for an answer to it (30 s, then again on every later attempt; a fast shutdown of the
 *   server waits for it too).
 *
 * So each connection gets a socket that reports an error only together with its close (nothing can
 * be sent in between, and what was sent is failed), and a startup message of over 1 KiB (a write
 * that large is sent at once and clears the stale flush); any stale bytes written ahead of the
 * startup message belong to statements already failed and are dropped.
 * See docs/decisions/postgres-outages.md, "A connection that never reconnects".
 */
const STARTUP_PADDING = { 'svc.startup_padding': '.'.repeat(1024) };
/**
 * PgBouncer refuses startup parameters it does not know ("unsupported startup parameter") unless
 * its operators list them in `ignore_startup_parameters`; it accepts `application_name`. So
 * behind a pooler the padding is trailing blanks of the application name (PgBouncer 1.18 does
 * not pass a name that long on: pooled server sessions have none).
 */
const POOLER_STARTUP = { application_name: `svc${' '.repeat(1024)}` };
/** protocol 3.0, the second field of a startup message */
const PROTOCOL_VERSION = 196608;

class PromptCloseSocket extends net.Socket {
  private failure: unknown = null;
  private closeEmitted = false;
  private started = false;

  override emit(event: string | symbol, ...args: unknown[]): boolean {
    // a destroyed socket's close is on its way (Node emits the error first, the close a phase later)
    if (event === 'error' && this.destroyed && !this.closeEmitted) {
      this.failure ??= args[0];
      return true;
    }
    if (event === 'close') {
      this.closeEmitted = true;
      if (this.failure !== null && this.listenerCount('error') > 0) super.emit('error', this.failure);
    }
    return super.emit(event, ...args);
  }

  override write(data: unknown, ...rest: never[]): boolean {
    if (!this.started && Buffer.isBuffer(data)) {
      this.started = true;
      const at = startupMessageOffset(data);
      if (at > 0) data = data.subarray(at);
    }
    return super.write(data as Buffer, ...rest);
  }
}

/** Where the startup message that ends `buf` begins (0 when it is all of it or not found). */
function startupMessageOffset(buf: Buffer): number {
  for (let at = 0; at + 8 <= buf.length; at++) {
    if (buf.readUInt32BE(at) === buf.length - at && buf.readUInt32BE(at + 4) === PROTOCOL_VERSION) return at;
  }
  return 0;
}

/** postgres.js's `socket` option: connects to the URL's host (the platform names one) or Unix socket. */
function connectSocket(options: { host: string[]; port: number[]; path?: string | false }): net.Socket {
  const socket = new PromptCloseSocket();
  if (options.path) return socket.connect(options.path);
  const [host, port] = [options.host[0], options.port[0]];
  // postgres.js names the server in its connection errors from these
  Object.assign(socket, { host, port });
  return socket.connect(port, host);
}

/** Seconds before the next attempt to connect after `failures` failed ones: 0.1 s doubling up to 2 s, jittered. */
export function reconnectDelaySeconds(failures: number): number {
  return Math.min(2, 0.05 * 2 ** failures) * (0.75 + Math.random() / 2);
}

/** The fields of postgres.js's internal connection object that the wrappers below use. */
interface PgConnection {
  onclose: ((err: Error) => void) | null;
  /** set while reserved; with `release` set, postgres.js calls it at the next ReadyForQuery */
  reserved: ((() => void) & { release?: boolean }) | null;
  connect(initial?: unknown): void;
}

/** What postgres.js's `reserve()` queues while it waits for a connection. */
interface PendingReserve {
  reserve: (connection: PgConnection) => void;
  reject: (err: unknown) => void;
}

const isPendingReserve = (q: unknown): q is PendingReserve =>
  typeof q === 'object' && q !== null && typeof (q as PendingReserve).reserve === 'function' && !('strings' in q);

const isPgConnection = (c: unknown): c is PgConnection =>
  typeof c === 'object' && c !== null && ['connect', 'execute', 'terminate', 'end'].every((k) => typeof (c as Record<string, unknown>)[k] === 'function') && 'queue' in c;

/**
 * postgres.js keeps its connection objects private; `withSettledReserves` needs them from the
 * start, before any of them connects. postgres() builds them with one `Array.prototype.map` (after
 * its own logical-replication pool of one connection), synchronously: that call is watched for the
 * duration of postgres() only.
 */
function withConnections(max: number, create: () => Sql): { sql: Sql; connections: PgConnection[] } {
  const built: PgConnection[][] = [];
  const map = Array.prototype.map;
  Array.prototype.map = function (this: unknown[], ...args: Parameters<typeof map>) {
    const out = map.apply(this, args);
    if (out.length > 0 && out.every(isPgConnection)) built.push(out as PgConnection[]);
    return out;
  } as typeof map;
  let sql: Sql;
  try {
    sql = create();
  } finally {
    Array.prototype.map = map;
  }
  const connections = built.at(-1) ?? [];
  if (connections.length !== max) throw new Error('postgres.js did not build its connections as expected: its internals changed (see packages/core/src/db/sql.ts)');
  return { sql, connections };
}

/**
 * postgres.js 3.4.9's `reserve()` loses track of a waiting reservation when connections fail or
 * close while it waits (a restart under load; porsager/postgres #1195 describes the second way):
 *
 * - A reservation waits in the pool's queue, and when no connection is open it also becomes the
 *   startup "query" of a closed connection it connects. If that attempt fails (the server still
 *   refusing: 57P03, ECONNREFUSED; or the 57P01 of the connection's previous session, which
 *   postgres.js hands to the first answer of the new one), the reservation is rejected but stays
 *   in the queue. The next connection that becomes ready is handed to it: nobody holds that
 *   connection and it never comes back to the pool, which has one connection fewer until the
 *   server ends that session.
 * - A connection that closes while reservations wait takes the first one out of the queue as the
 *   startup query of its reconnection, and once connected drops it: that reservation never settles.
 *
 * So every connection hears what it is asked to connect for: a reservation still in the queue is
 * not given to the attempt (a placeholder is: the reservation is served by whichever connection is
 * ready first, as ever); one taken out of the queue is handed this connection when it is ready
 * (postgres.js's `reserved` callback, run at ReadyForQuery), or rejected if the attempt fails.
 * Requires `fetch_types` (the default): without it a ready connection with a reservation as its
 * startup query is not reported at all.
 * See docs/decisions/postgres-outages.md, "A connection that never reconnects".
 */
function withSettledReserves(sql: Sql, connections: PgConnection[]): Sql {
  const reserve = sql.reserve.bind(sql);
  let reserving = false;
  // reserve() picks a closed connection for a waiting reservation synchronously
  (sql as { reserve: () => ReturnType<typeof reserve> }).reserve = () => {
    reserving = true;
    try {
      return reserve();
    } finally {
      reserving = false;
    }
  };
  const placeholder: PendingReserve = { reserve: () => undefined, reject: () => undefined };
  for (const c of connections) {
    const connect = c.connect.bind(c);
    c.connect = (initial?: unknown) => {
      if (!isPendingReserve(initial)) return connect(initial);
      if (reserving) return connect(placeholder);
      const handOver = Object.assign(() => {
        c.reserved = null;
        initial.reserve(c);
      }, { release: true });
      c.reserved = handOver;
      return connect({
        reserve: placeholder.reserve,
        reject: (err: unknown) => {
          if (c.reserved === handOver) c.reserved = null;
          initial.reject(err);
        },
      } satisfies PendingReserve);
    };
  }
  return sql;
}

type TxFn<T> = (tx: Tx) => T | Promise<T>;

/**
 * postgres.js 3.4.9 can write a transaction's BEGIN on a pooled connection without reserving it
 * when BEGIN is pipelined onto a busy connection at the pipeline boundary (porsager/postgres
 * #1189, #823; fix unreleased). The transaction then fails with UNSAFE_TRANSACTION while the
 * server keeps it open and hands the connection to unrelated queries. So `begin` is replaced by
 * one that first reserves a connection and runs BEGIN/COMMIT on it; savepoints work as before.
 *
 * A reserved connection has defects of its own when its server session ends (a restart, a
 * failover: porsager/postgres #1199, #1208, unreleased): a statement sent on it afterwards throws
 * an uncaught TypeError from a timer (the process dies) or never settles, and releasing it puts
 * the dead connection back into the pool, where the next query hangs for good. So the wrapper
 * learns the connection object from BEGIN's `onexecute` hook (the one postgres.js's own `begin`
 * uses), hears its close through the pool's `onclose` callback, and after a close sends nothing
 * more on it: statements fail with the connection error, no ROLLBACK (the server already rolled
 * back), no release (the pool reconnects it by itself). A COMMIT lost that way has an unknown
 * outcome; callers resolve it by their fencing rules (docs/decisions/postgres-outages.md).
 */
function withReservedTransactions(sql: Sql): Sql {
  const begin = async <T>(optionsOrFn: string | TxFn<T>, maybeFn?: TxFn<T>): Promise<T> => {
    const fn = (typeof optionsOrFn === 'function' ? optionsOrFn : maybeFn) as TxFn<T>;
    const options = typeof optionsOrFn === 'string' ? optionsOrFn.replace(/[^a-z ]/gi, '') : '';
    const conn = await sql.reserve();
    const link: Link = { connection: null, lost: null };
    const onclose = (err: Error) => {
      link.lost = err;
    };
    let dead = false;
    try {
      const hook = {
        onexecute: (c: PgConnection) => {
          link.connection = c;
          c.onclose = onclose;
          return true;
        },
      } as never;
      await conn.unsafe(`begin ${options}`, [], hook);
      // the hook is skipped when BEGIN was written behind other callers' statements still in
      // flight on that connection (reserve can hand one out so); alone on it, a no-op is not
      if (!link.connection) await conn.unsafe('select 1', [], hook);
      if (!link.connection) {
        await conn`rollback`.catch(() => undefined);
        throw new Error('postgres.js did not hand over the connection of a transaction: its internals changed (see packages/core/src/db/sql.ts)');
      }
      const tx = asTransaction(conn, link);
      try {
        const result = await run(tx, fn);
        if (link.lost) throw link.lost;
        await tx`commit`;
        return result;
      } catch (err) {
        if (!(await sessionEnded(link, err))) await tx`rollback`.catch(() => undefined);
        throw err;
      }
    } catch (err) {
      dead = await sessionEnded(link, err);
      throw err;
    } finally {
      // once the session ended the pool reconnects the connection by itself, and another
      // transaction may already hold it with its own close callback
      if (link.connection?.onclose === onclose) link.connection.onclose = null;
      if (!dead) conn.release();
    }
  };
  (sql as unknown as { begin: typeof begin }).begin = begin;
  return sql;
}

interface Link {
  connection: PgConnection | null;
  /** set by the pool when the connection closed: nothing more may be sent on it */
  lost: Error | null;
}

/**
 * Whether the transaction's session is gone. A socket error reaches the statement before the
 * pool's close callback in some paths, so a connection error waits one turn of the event loop for
 * the close before deciding; a connection error that did not close this connection (it came from
 * elsewhere) leaves it alive, to be rolled back and released as usual.
 */
async function sessionEnded(link: Link, err: unknown): Promise<boolean> {
  if (link.lost) return true;
  if (!isConnectionError(err) || !link.connection) return false;
  await new Promise((resolve) => setImmediate(resolve));
  return link.lost !== null;
}

async function run<T>(tx: Tx, fn: TxFn<T>): Promise<T> {
  const out = fn(tx) as unknown;
  return (Array.isArray(out) ? Promise.all(out) : out) as Promise<T>;
}

/** The reserved connection as a transaction: refuses to build statements once its session ended. */
function asTransaction(conn: postgres.ReservedSql<Record<string, unknown>>, link: Link): Tx {
  const guard = () => {
    if (link.lost) throw link.lost;
  };
  const unsafe = (...args: Parameters<typeof conn.unsafe>) => {
    guard();
    return conn.unsafe(...args);
  };
  let savepoints = 0;
  const savepoint = async <T>(nameOrFn: string | TxFn<T>, maybeFn?: TxFn<T>): Promise<T> => {
    const fn = (typeof nameOrFn === 'function' ? nameOrFn : maybeFn) as TxFn<T>;
    const name = `s${savepoints++}${typeof nameOrFn === 'string' ? `_${nameOrFn.replace(/\W/g, '')}` : ''}`;
    await unsafe(`savepoint ${name}`);
    try {
      const result = await run(tx, fn);
      await unsafe(`release savepoint ${name}`);
      return result;
    } catch (err) {
      if (!link.lost) await unsafe(`rollback to savepoint ${name}`);
      throw err;
    }
  };
  const prepare = () => {
    throw new Error('Two-phase commit is not used by this platform.');
  };
  const tx = new Proxy(conn, {
    // a tagged template builds a statement (or a fragment of one): not on a dead session
    apply(target, thisArg, args: unknown[]) {
      guard();
      return Reflect.apply(target as unknown as (...a: unknown[]) => unknown, thisArg, args);
    },
    // `'savepoint' in tx` tells a transaction from a pool (catalog/shared.ts inTransaction)
    has(target, prop) {
      return prop === 'savepoint' || prop === 'prepare' || Reflect.has(target, prop);
    },
    get(target, prop, receiver) {
      if (prop === 'unsafe') return unsafe;
      if (prop === 'savepoint') return savepoint;
      if (prop === 'prepare') return prepare;
      return Reflect.get(target, prop, receiver);
    },
  }) as unknown as Tx;
  return tx;
}
