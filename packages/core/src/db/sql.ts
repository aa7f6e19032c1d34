import postgres from 'postgres';

export type Sql = postgres.Sql<Record<string, unknown>>;
/** A connection or a transaction: repository functions take either (STYLE habit 7). */
export type Queryable = Sql | postgres.TransactionSql<Record<string, unknown>>;

export interface SqlOptions {
  max?: number;
  onnotice?: (notice: postgres.Notice) => void;
}

export function createSql(url: string, options: SqlOptions = {}): Sql {
  return postgres(url, {
    max: options.max ?? 10,
    onnotice: options.onnotice ?? (() => undefined),
    // bigint counters come back as JS numbers; they stay far below 2^53.
    types: {
      bigint: { to: 20, from: [20], parse: (value: string) => Number(value), serialize: (value: number) => String(value) },
    },
    transform: { undefined: null },
    connection: { application_name: 'svc' },
  }) as unknown as Sql;
}
