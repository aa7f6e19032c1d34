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
  const sql = postgres(url, {
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
  } as postgres.Options<Record<string, postgres.PostgresType>>) as unknown as Sql;
  const pool = withReservedTransactions(sql);
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

type TxFn<T> = (tx: Tx) => T | Promise<T>;

/**
 * postgres.js 3.4.9 can write a transaction's BEGIN on a pooled connection without reserving it
 * when BEGIN is pipelined onto a busy connection at the pipeline boundary (porsager/postgres
 * #1189, #823; fix unreleased). The transaction then fails with UNSAFE_TRANSACTION while the
 * server keeps it open and hands the connection to unrelated queries. So `begin` is replaced by
 * one that first reserves a connection (the public `reserve()`) and runs BEGIN/COMMIT on it;
 * savepoints work as before.
 *
 * When the session of that connection ends (a restart, a failover), the patched driver ends the
 * reservation (patches/postgres+3.4.9.patch, porsager/postgres #1199, #1208): its statements,
 * the ROLLBACK included, fail with the connection error and are sent nowhere, and its release
 * leaves the connection to the pool, which reconnects it. A COMMIT lost that way has an unknown
 * outcome; callers resolve it by their fencing rules (docs/decisions/postgres-outages.md).
 */
function withReservedTransactions(sql: Sql): Sql {
  const begin = async <T>(optionsOrFn: string | TxFn<T>, maybeFn?: TxFn<T>): Promise<T> => {
    const fn = (typeof optionsOrFn === 'function' ? optionsOrFn : maybeFn) as TxFn<T>;
    const options = typeof optionsOrFn === 'string' ? optionsOrFn.replace(/[^a-z ]/gi, '') : '';
    const conn = await sql.reserve();
    try {
      // queued now (execute), so that it goes ahead of the transaction's first statements on the
      // reserved connection, and not awaited first: a round trip less per transaction; a BEGIN
      // that fails fails the statements after it
      const begun = conn.unsafe(`begin ${options}`).execute();
      const tx = asTransaction(conn);
      try {
        const [, result] = await Promise.all([begun, run(tx, fn)]);
        await tx`commit`;
        return result;
      } catch (err) {
        await tx`rollback`.catch(() => undefined);
        throw err;
      }
    } finally {
      conn.release();
    }
  };
  (sql as unknown as { begin: typeof begin }).begin = begin;
  return sql;
}

async function run<T>(tx: Tx, fn: TxFn<T>): Promise<T> {
  const out = fn(tx) as unknown;
  return (Array.isArray(out) ? Promise.all(out) : out) as Promise<T>;
}

/** The reserved connection as a transaction: savepoints on it, no two-phase commit. */
function asTransaction(conn: postgres.ReservedSql<Record<string, unknown>>): Tx {
  let savepoints = 0;
  const savepoint = async <T>(nameOrFn: string | TxFn<T>, maybeFn?: TxFn<T>): Promise<T> => {
    const fn = (typeof nameOrFn === 'function' ? nameOrFn : maybeFn) as TxFn<T>;
    const name = `s${savepoints++}${typeof nameOrFn === 'string' ? `_${nameOrFn.replace(/\W/g, '')}` : ''}`;
    await conn.unsafe(`savepoint ${name}`);
    try {
      // a handle of its own, as postgres.js gives: what is recorded on it is not the transaction's (outbox/at-once.ts)
      const result = await run(new Proxy(conn, handler) as unknown as Tx, fn);
      await conn.unsafe(`release savepoint ${name}`);
      return result;
    } catch (err) {
      // after the session ended this fails at once with the connection error: the caller gets its own
      await conn.unsafe(`rollback to savepoint ${name}`).catch((e: unknown) => {
        if (!isConnectionError(e)) throw e;
      });
      throw err;
    }
  };
  const prepare = () => {
    throw new Error('Two-phase commit is not used by this platform.');
  };
  const handler: ProxyHandler<typeof conn> = {
    // `'savepoint' in tx` tells a transaction from a pool (inTransaction below)
    has(target, prop) {
      return prop === 'savepoint' || prop === 'prepare' || Reflect.has(target, prop);
    },
    get(target, prop, receiver) {
      if (prop === 'savepoint') return savepoint;
      if (prop === 'prepare') return prepare;
      return Reflect.get(target, prop, receiver);
    },
  };
  const tx = new Proxy(conn, handler) as unknown as Tx;
  return tx;
}

/** A transaction on a connection, or a savepoint when the caller already holds one. */
export async function inTransaction<T>(sql: Queryable, fn: (tx: Tx) => Promise<T>): Promise<T> {
  if ('savepoint' in sql) return (await sql.savepoint(fn)) as T;
  return (await (sql as Sql).begin(fn)) as T;
}
