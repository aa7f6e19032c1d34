import postgres from 'postgres';

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
  }) as unknown as Sql;
  return withReservedTransactions(sql);
}

type TxFn<T> = (tx: Tx) => T | Promise<T>;

/**
 * postgres.js 3.4.9 can write a transaction's BEGIN on a pooled connection without reserving it
 * when BEGIN is pipelined onto a busy connection at the pipeline boundary (porsager/postgres
 * #1189, #823; fix unreleased). The transaction then fails with UNSAFE_TRANSACTION while the
 * server keeps it open and hands the connection to unrelated queries. So `begin` is replaced by
 * one that first reserves a connection and runs BEGIN/COMMIT on it; savepoints work as before.
 */
function withReservedTransactions(sql: Sql): Sql {
  const begin = async <T>(optionsOrFn: string | TxFn<T>, maybeFn?: TxFn<T>): Promise<T> => {
    const fn = (typeof optionsOrFn === 'function' ? optionsOrFn : maybeFn) as TxFn<T>;
    const options = typeof optionsOrFn === 'string' ? optionsOrFn.replace(/[^a-z ]/gi, '') : '';
    const conn = await sql.reserve();
    try {
      await conn.unsafe(`begin ${options}`);
      try {
        const result = await run(asTransaction(conn), fn);
        await conn`commit`;
        return result;
      } catch (err) {
        await conn`rollback`.catch(() => undefined);
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

function asTransaction(conn: postgres.ReservedSql<Record<string, unknown>>): Tx {
  let savepoints = 0;
  const tx = conn as unknown as Tx & { savepoint: unknown; prepare: unknown };
  tx.savepoint = async <T>(nameOrFn: string | TxFn<T>, maybeFn?: TxFn<T>): Promise<T> => {
    const fn = (typeof nameOrFn === 'function' ? nameOrFn : maybeFn) as TxFn<T>;
    const name = `s${savepoints++}${typeof nameOrFn === 'string' ? `_${nameOrFn.replace(/\W/g, '')}` : ''}`;
    await conn.unsafe(`savepoint ${name}`);
    try {
      const result = await run(tx, fn);
      await conn.unsafe(`release savepoint ${name}`);
      return result;
    } catch (err) {
      await conn.unsafe(`rollback to savepoint ${name}`);
      throw err;
    }
  };
  tx.prepare = () => {
    throw new Error('Two-phase commit is not used by this platform.');
  };
  return tx;
}
