import postgres from 'postgres';
import { isConnectionError } from './outage';

export type Sql = postgres.Sql<Record<string, unknown>>;
/** A connection or a transaction: repository functions take either. */
export type Queryable = Sql | postgres.TransactionSql<Record<string, unknown>>;
export type Tx = postgres.TransactionSql<Record<string, unknown>>;

export interface SqlOptions {
  max?: number;
  /** Queries pipelined on one connection (postgres.js default 100). */
  maxPipeline?: number;
  onnotice?: (notice: postgres.Notice) => void;
}

export function createSql(url: string, options: SqlOptions = {}): Sql {
  const sql = postgres(url, {
    max: options.max ?? 10,
    ...(options.maxPipeline !== undefined ? { max_pipeline: options.maxPipeline } : {}),
    onnotice: options.onnotice ?? (() => undefined),
    // bigint counters come back as JS numbers; they stay far below 2^53.
    types: {
      bigint: { to: 20, from: [20], parse: (value: string) => Number(value), serialize: (value: number) => String(value) },
    },
    transform: { undefined: null },
    connection: { application_name: 'svc' },
    // How long a connection waits before it tries to reconnect after a failed attempt. postgres.js
    // grows it to 10–20 s while Postgres is down (3^n / 100 s) and keeps it until a connection
    // succeeds, so after a 10-second outage queries waited up to 20 s more for a server that was
    // already back. Capped at 2 s like the processes' own retries (db/outage.ts).
    backoff: reconnectDelaySeconds,
  }) as unknown as Sql;
  return withReservedTransactions(sql);
}

/** Seconds before the next attempt to connect after `failures` failed ones: 0.1 s doubling up to 2 s, jittered. */
export function reconnectDelaySeconds(failures: number): number {
  return Math.min(2, 0.05 * 2 ** failures) * (0.75 + Math.random() / 2);
}

type TxFn<T> = (tx: Tx) => T | Promise<T>;

/** The one field of postgres.js's internal connection object the wrapper uses (see below). */
interface PgConnection {
  onclose: ((err: Error) => void) | null;
}

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
    let dead = false;
    try {
      const hook = {
        onexecute: (c: PgConnection) => {
          link.connection = c;
          c.onclose = (err) => {
            link.lost = err;
          };
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
      if (link.connection) link.connection.onclose = null;
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
