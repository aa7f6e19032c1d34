import type { Queryable } from '../db/sql';
import { payloadContainsSql } from '../queue-items/repo';
import {
  ITEM_ACTION_STATUSES, JOB_ACTION_STATUSES, type ItemActionFilter, type ItemActionName, type JobActionFilter, type JobActionName,
} from './schemas';

/**
 * Which rows a bulk action covers, as one WHERE clause shared by its dry run, its count and
 * every chunk, so the three can never disagree: the asked-for filter (or ids), narrowed to the
 * statuses the action can change and to rows created up to the action's snapshot.
 */
export interface BulkScope {
  tenantId: string;
  queueId: string | null;
  target: 'queue_items' | 'jobs';
  action: string;
  filter: Record<string, unknown> | null;
  ids: readonly string[] | null;
  /** rows created later are not part of the action (null: now, for a dry run) */
  snapshotAt: Date | null;
  /** a retry re-runs business failures too (the action's `include_business`) */
  includeBusiness: boolean;
}

function createdSql(sql: Queryable, f: { created_after?: string; created_before?: string }) {
  return sql`${f.created_after !== undefined ? sql`and created_at >= ${f.created_after}::timestamptz` : sql``}
    ${f.created_before !== undefined ? sql`and created_at < ${f.created_before}::timestamptz` : sql``}`;
}

function commonSql(sql: Queryable, s: BulkScope) {
  return sql`${s.ids ? sql`and id = any(${s.ids as string[]}::uuid[])` : sql``}
    ${s.snapshotAt ? sql`and created_at <= ${s.snapshotAt}` : sql``}`;
}

function itemScopeSql(sql: Queryable, s: BulkScope) {
  const f = (s.filter ?? {}) as ItemActionFilter;
  const statuses = ITEM_ACTION_STATUSES[s.action as ItemActionName] as readonly string[];
  const businessToo = s.action === 'retry' && s.includeBusiness;
  return sql`queue_id = ${s.queueId!} and tenant_id = ${s.tenantId}
    and (status = any(${statuses as string[]}::text[]) ${businessToo ? sql`or (status = 'failed' and exception_type = 'business')` : sql``})
    ${f.status !== undefined ? sql`and status = ${f.status}` : sql``}
    ${f.reference !== undefined ? sql`and reference = ${f.reference}` : sql``}
    ${f.exception_type !== undefined ? sql`and exception_type = ${f.exception_type}` : sql``}
    ${f.data !== undefined ? sql`and ${payloadContainsSql(sql, s.queueId!, f.data)}` : sql``}
    ${createdSql(sql, f)} ${commonSql(sql, s)}`;
}

function jobScopeSql(sql: Queryable, s: BulkScope) {
  const f = (s.filter ?? {}) as JobActionFilter;
  const statuses = JOB_ACTION_STATUSES[s.action as JobActionName] as readonly string[];
  return sql`tenant_id = ${s.tenantId} and status = any(${statuses as string[]}::text[])
    ${f.status !== undefined ? sql`and status = ${f.status}` : sql``}
    ${f.process_id !== undefined ? sql`and process_id = ${f.process_id}` : sql``}
    ${f.machine_id !== undefined ? sql`and machine_id = ${f.machine_id}` : sql``}
    ${f.input_data !== undefined ? sql`and input_data @> ${sql.json(f.input_data as never)}` : sql``}
    ${s.action === 'retry'
      // a queue's consumer runs are not retried (its items have the queue's retry policy), as automatically
      ? sql`and source <> 'queue' and not exists (select 1 from jobs c where c.parent_job_id = jobs.id and c.source = 'retry')
            ${s.includeBusiness ? sql`` : sql`and (status <> 'failed' or exception_type is distinct from 'business')`}`
      : sql``}
    ${createdSql(sql, f)} ${commonSql(sql, s)}`;
}

function table(sql: Queryable, s: BulkScope) {
  return s.target === 'jobs' ? sql`jobs` : sql`queue_items`;
}

function scopeSql(sql: Queryable, s: BulkScope) {
  return s.target === 'jobs' ? jobScopeSql(sql, s) : itemScopeSql(sql, s);
}

/** How many rows the action would change now. */
export async function countInScope(sql: Queryable, s: BulkScope): Promise<number> {
  const [row] = await sql<{ n: number }[]>`select count(*)::int as n from ${table(sql, s)} where ${scopeSql(sql, s)}`;
  return row!.n;
}

/** The keyset position after which the next chunk starts: created_at kept as text, to the microsecond. */
export interface BulkCursor {
  createdAt: string;
  id: string;
}

/**
 * The next rows in (created_at, id) order after the cursor, locked for the chunk's transaction:
 * a row another transaction holds is waited for rather than skipped, so none is passed over.
 */
export async function nextChunk(sql: Queryable, s: BulkScope, after: BulkCursor | null, limit: number): Promise<Array<{ id: string; cursor_at: string }>> {
  // the text keeps the microseconds a Date would drop; named apart so ORDER BY sorts the timestamp
  return sql<Array<{ id: string; cursor_at: string }>>`
    select id, created_at::text as cursor_at from ${table(sql, s)}
    where ${scopeSql(sql, s)}
      ${after ? sql`and (created_at, id) > (${after.createdAt}::timestamptz, ${after.id}::uuid)` : sql``}
    order by created_at, id
    limit ${limit}
    for update`;
}
