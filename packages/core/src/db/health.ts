import type { Queryable } from './sql';

/** Postgres answers a statement (readiness checks); rejects with the connection's error when it does not. */
export async function pingDatabase(sql: Queryable): Promise<void> {
  await sql`select 1`;
}
