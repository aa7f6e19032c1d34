import type { Sql } from '@svc/core';

/** A statement a pool sent: its text and bound values. */
export interface SentStatement {
  text: string;
  params: unknown[];
}

/**
 * Runs `fn` and returns every statement `sql` sent meanwhile (postgres.js's `debug` hook), for
 * tests of what reaches Postgres: how many round trips, and what is written into the text.
 */
export async function recordStatements(sql: Sql, fn: () => Promise<unknown>): Promise<SentStatement[]> {
  const options = (sql as unknown as { options: { debug?: unknown } }).options;
  const seen: SentStatement[] = [];
  options.debug = (_conn: number, text: string, params: unknown[]) => seen.push({ text, params: [...params] });
  try {
    await fn();
  } finally {
    options.debug = undefined;
  }
  return seen;
}
