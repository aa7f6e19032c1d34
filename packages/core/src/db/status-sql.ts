import type { Queryable } from './sql';

/**
 * Statuses written into the SQL text, for every state machine with a transition table (jobs,
 * queue items, machines, bulk actions, webhook deliveries): one helper shape, built once per
 * entity from its one list of legal statuses.
 *
 * Why a literal and not a bound value: with `status = $n` only a custom plan (planned with the
 * value) can use a partial index whose predicate names a status (`queue_items_ready_idx`, the
 * partial indexes on `jobs`, `webhook_deliveries` …): a generic plan cannot prove the index
 * predicate, so Postgres re-plans such statements on every call. With the literal in the text
 * every plan, generic included, uses them. The statements that took their statuses from a
 * table kept the literal text they had before, so each prepared statement and its plans stayed
 * what they were.
 *
 * Why `unsafe` is safe here: the value never comes from a request. It must be one of the
 * entity's statuses (checked on every call: anything else throws instead of reaching SQL), and
 * those are checked once, when the helpers are built, to be lowercase letters and `_`, which
 * cannot end the quoted literal. A guard's column name is checked against `status` or
 * `<alias>.status`.
 */
export interface StatusSql<S extends string> {
  /** `'s'`: one status as an SQL string literal. */
  statusSql(sql: Queryable, status: S): ReturnType<Queryable['unsafe']>;
  /**
   * `<column> = 's'` for one status, `<column> in ('a', 'b')` for several: a transition's `from`
   * (or a status list) as a guard, written into the SQL text like statusSql.
   */
  statusInSql(sql: Queryable, column: string, statuses: readonly S[]): ReturnType<Queryable['unsafe']>;
}

/** The guard columns a caller may name: `status`, bare or under an alias. */
const STATUS_COLUMN = /^([a-z]\w*\.)?status$/;

/** The helpers of one entity (`entity` names it in errors: "Unknown job status …"). */
export function statusSqlFor<S extends string>(entity: string, statuses: readonly S[]): StatusSql<S> {
  const literals = new Map<string, string>(
    statuses.map((s) => {
      if (!/^[a-z_]+$/.test(s)) throw new Error(`${entity} status ${s} cannot be written into SQL text`);
      return [s, `'${s}'`];
    }),
  );
  const literal = (status: S): string => {
    const l = literals.get(status);
    if (!l) throw new Error(`Unknown ${entity} status ${String(status)}`);
    return l;
  };
  return {
    statusSql: (sql, status) => sql.unsafe(literal(status)),
    statusInSql: (sql, column, list) => {
      if (!STATUS_COLUMN.test(column)) throw new Error(`Not a ${entity} status column: ${column}`);
      if (list.length === 0) throw new Error(`${entity} statusInSql: no status`);
      const ls = list.map(literal);
      return sql.unsafe(ls.length === 1 ? `${column} = ${ls[0]}` : `${column} in (${ls.join(', ')})`);
    },
  };
}
