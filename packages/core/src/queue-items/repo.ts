import { queueReadyEffectOfInserted } from '../outbox/effects';
import { itemAddedEventsOfInserted } from '../events/item-added';
import type { Queryable } from '../db/sql';
import { asStoredJsonb } from '../db/jsonb';
import type { QueueItemStatus } from './schemas';
import type { ExceptionType } from './exception-types';
import { EXPORT_CHUNK_BYTES, KEYSET_AT_SQL, type KeysetPosition, type KeysetRow } from '../export/stream';

/** A queue as the item endpoints need it: enough to scope writes and nudge the dispatcher. */
export interface QueueRef {
  id: string;
  tenant_id: string;
  name: string;
}

export interface QueueItemRow {
  id: string;
  tenant_id: string;
  queue_id: string;
  status: QueueItemStatus;
  priority: number;
  reference: string | null;
  deadline: Date | null;
  postpone: Date | null;
  data: Record<string, unknown>;
  result: Record<string, unknown> | null;
  retry_count: number;
  error_message: string | null;
  /** the kind of the item's last failure, kept like its error_message; null until it first fails */
  exception_type: ExceptionType | null;
  processed_by: string | null;
  created_at: Date;
  processed_at: Date | null;
  reviewed_by: string | null;
  reviewed_at: Date | null;
}

/**
 * What the API shows of an item (the contract's fields and the kind of its last failure), and
 * nothing else (no fencing columns). `data` is the
 * payload's, in `queue_item_payloads` (migration 0029): the view `queue_item_records` has all of
 * them; `queue_items` has ITEM_STATE_COLUMNS.
 */
export const ITEM_COLUMNS = [
  'id', 'tenant_id', 'queue_id', 'status', 'priority', 'reference', 'deadline', 'postpone', 'data', 'result', 'retry_count',
  'error_message', 'processed_by', 'created_at', 'processed_at', 'reviewed_by', 'reviewed_at', 'exception_type',
];
/** ITEM_COLUMNS of the item's own row, without its payload. */
export const ITEM_STATE_COLUMNS = ITEM_COLUMNS.filter((c) => c !== 'data');
/** ITEM_STATE_COLUMNS of the row aliased `qi`. */
export const QI_COLUMNS = ITEM_STATE_COLUMNS.map((c) => `qi.${c}`);

/**
 * The items of a queue whose payload contains `data` (`@>`, queue_item_payloads_data_idx), as a
 * condition on `queue_items.id`: the GIN index finds the payloads, the queue narrows them there.
 * Materialized, so that every plan (a prepared statement's generic one too, which cannot know
 * how many payloads match) finds the matches first: left free to, a generic plan walked the
 * queue's list in order and probed each item's payload, a second for a payload search that
 * matched a thousand items in a million (B5).
 */
export function payloadContainsSql(sql: Queryable, queueId: string, data: Record<string, unknown>, idColumn: 'id' | 'qi.id' = 'id') {
  return sql`${sql.unsafe(idColumn)} in (
    with matched as materialized (
      select p.id from queue_item_payloads p where p.queue_id = ${queueId} and p.data @> ${sql.json(data as never)})
    select id from matched)`;
}

export interface NewQueueItem {
  data: Record<string, unknown>;
  priority: number;
  reference: string | null;
  /** ISO 8601 text, parsed by Postgres (keeps microseconds and leap seconds) */
  deadline: string | null;
  postpone: string | null;
}

/**
 * What Postgres decides when it stores a new item — its id (when made there), its queue (when
 * found by name), its creation time, and the times as it parsed them; the rest of a new row is
 * what was sent and the columns' defaults (`freshItemRow`). The hot inserts return only these
 * (BENCHMARKS.md, B1); the item tests check the result against the row as read back.
 */
export const CHOSEN_ON_INSERT = ['id', 'queue_id', 'created_at', 'deadline', 'postpone'];

export type ChosenOnInsert = Pick<QueueItemRow, 'id' | 'queue_id' | 'created_at' | 'deadline' | 'postpone'>;

/** The whole row of an item just inserted, as a read would return it (data in jsonb's order). */
export function freshItemRow(tenantId: string, item: NewQueueItem, chosen: ChosenOnInsert): QueueItemRow {
  return {
    id: chosen.id,
    tenant_id: tenantId,
    queue_id: chosen.queue_id,
    status: 'new',
    priority: item.priority,
    reference: item.reference,
    deadline: chosen.deadline,
    postpone: chosen.postpone,
    data: asStoredJsonb(item.data),
    result: null,
    retry_count: 0,
    error_message: null,
    exception_type: null,
    processed_by: null,
    created_at: chosen.created_at,
    processed_at: null,
    reviewed_by: null,
    reviewed_at: null,
  };
}

export async function insertQueueItem(sql: Queryable, queue: QueueRef, item: NewQueueItem): Promise<QueueItemRow> {
  const [row] = await sql<QueueItemRow[]>`
    with src as (select gen_random_uuid() as id, ${sql.json(item.data as never)}::jsonb as data),
    ins as (
      insert into queue_items (id, tenant_id, queue_id, priority, reference, deadline, postpone)
      select src.id, ${queue.tenant_id}, ${queue.id}, ${item.priority}, ${item.reference},
             ${item.deadline}::text::timestamptz, ${item.postpone}::text::timestamptz
      from src
      returning ${sql(ITEM_STATE_COLUMNS)}),
    ${payloadsOfInserted(sql)},
    ${itemAddedEventsOfInserted(sql, 'item')},
    ${queueReadyEffectOfInserted(sql)}
    select ins.*, src.data from ins join src on src.id = ins.id`;
  return row!;
}

/**
 * The part of an item insert statement that stores the payloads of the rows the data-modifying
 * CTE `ins` inserted, from the CTE `src` (their `id` and `data`): `with src as (…), ins as (insert
 * … returning id, queue_id, …), ${payloadsOfInserted(sql)}, …`.
 */
export function payloadsOfInserted(sql: Queryable) {
  return sql`pl as (
    insert into queue_item_payloads (id, queue_id, data)
    select ins.id, ins.queue_id, src.data from ins join src on src.id = ins.id)`;
}

/**
 * One multi-row INSERT for a whole bulk (all-or-nothing by itself): the items travel as a
 * single JSON array parameter and are split by Postgres, so there is one parameter and one parse
 * whatever the size. Dates are parsed by Postgres, as for one item. Returns how many rows.
 */
export async function insertQueueItemsBulk(sql: Queryable, queue: QueueRef, items: ReadonlyArray<NewQueueItem>): Promise<number> {
  const [row] = await sql<Array<{ n: number }>>`
    with src as materialized (
      select gen_random_uuid() as id, e.n, e.value, e.value->'data' as data
      from jsonb_array_elements(${JSON.stringify(items)}::text::jsonb) with ordinality as e(value, n)),
    ins as (
      insert into queue_items (id, tenant_id, queue_id, priority, reference, deadline, postpone)
      select src.id, ${queue.tenant_id}, ${queue.id}, (src.value->>'priority')::int, src.value->>'reference',
             (src.value->>'deadline')::timestamptz, (src.value->>'postpone')::timestamptz
      from src
      order by src.n
      returning id, queue_id, tenant_id),
    ${payloadsOfInserted(sql)},
    ${itemAddedEventsOfInserted(sql, 'bulk')},
    ${queueReadyEffectOfInserted(sql)}
    select count(*)::int as n from ins`;
  return row!.n;
}

/**
 * One page of a queue, newest first. The page's ids come from an index-only scan of
 * queue_items_list_idx / queue_items_status_list_idx (deep offsets skip index entries, not heap
 * rows), of queue_items_reference_list_idx for one reference, or of
 * queue_items_exception_list_idx for one kind of failure; only the page's own rows are then read.
 */
export async function listQueueItems(
  sql: Queryable,
  queue: QueueRef,
  opts: QueueItemFilter & { limit: number; offset: number },
): Promise<QueueItemRow[]> {
  const ids = sql`select id, created_at from queue_items where queue_id = ${queue.id} ${itemFilterSql(sql, queue.id, opts)}
        order by created_at desc, id desc limit ${opts.limit} offset ${opts.offset}`;
  return sql<QueueItemRow[]>`
    with page as (${ids})
    select ${sql(QI_COLUMNS)}, p.data
    from page join queue_items qi on qi.id = page.id join queue_item_payloads p on p.id = page.id
    where qi.tenant_id = ${queue.tenant_id}
    order by page.created_at desc, page.id desc`;
}

/**
 * What an item weighs as the API will hold and send it: its JSON as text. Not pg_column_size,
 * the stored size: a 2 MiB payload of repeated text is stored compressed in a few KiB, and a
 * bound on that would let one chunk hold hundreds of such payloads.
 */
const ITEM_SIZE_SQL = 'octet_length(p.data::text) + coalesce(octet_length(qi.result::text), 0) + coalesce(octet_length(qi.error_message), 0)';

/**
 * One chunk of a queue's export: the items after `after` in list order (created_at desc, id
 * desc) that pass the list's filter, each with its keyset position (export/stream.ts). The same
 * indexes as a page serve it, entered at the position instead of skipping an offset.
 */
export async function exportQueueItemsChunk(
  sql: Queryable,
  queue: QueueRef,
  filter: QueueItemFilter,
  after: KeysetPosition | null,
  limit: number,
): Promise<Array<QueueItemRow & KeysetRow>> {
  // the running size is computed in the order of the scan, row by row, and stops with its limit
  return sql<Array<QueueItemRow & KeysetRow>>`
    select ${sql(ITEM_COLUMNS)}, export_at, export_id from (
      select ${sql(QI_COLUMNS)}, p.data, ${sql.unsafe(KEYSET_AT_SQL)} as export_at, qi.id as export_id,
             ${sql.unsafe(ITEM_SIZE_SQL)} as export_size,
             sum(${sql.unsafe(ITEM_SIZE_SQL)}) over (order by qi.created_at desc, qi.id desc) as export_upto
      from queue_items qi join queue_item_payloads p on p.id = qi.id
      where qi.queue_id = ${queue.id} and qi.tenant_id = ${queue.tenant_id} ${itemFilterSql(sql, queue.id, filter, 'qi.id')}
        ${after ? sql`and (qi.created_at, qi.id) < (${after.at}::text::timestamptz, ${after.id}::uuid)` : sql``}
      order by qi.created_at desc, qi.id desc
      limit ${limit}) chunk
    where export_upto - export_size < ${EXPORT_CHUNK_BYTES}
    order by created_at desc, id desc`;
}

export interface QueueItemFilter {
  status?: QueueItemStatus;
  reference?: string;
  /** the kind of the item's last failure */
  exception_type?: ExceptionType;
  /** the object the items' data must contain (`@>`, queue_item_payloads_data_idx) */
  data?: Record<string, unknown>;
}

function itemFilterSql(sql: Queryable, queueId: string, f: QueueItemFilter, idColumn: 'id' | 'qi.id' = 'id') {
  return sql`${f.reference !== undefined ? sql`and reference = ${f.reference}` : sql``}
    ${f.status ? sql`and status = ${f.status}` : sql``}
    ${f.exception_type ? sql`and exception_type = ${f.exception_type}` : sql``}
    ${f.data !== undefined ? sql`and ${payloadContainsSql(sql, queueId, f.data, idColumn)}` : sql``}`;
}

/**
 * Exact number of a queue's items that pass a filter on their reference or data (and status): a
 * count over the rows an index finds (queue_items_reference_list_idx, queue_item_payloads_data_idx), as
 * many as match — a business key or a search by payload names a handful of items, not a queue's
 * worth (docs/decisions/operator-reads.md, docs/decisions/payload-search.md). Without either,
 * countQueueItems reads the counters instead.
 */
export async function countQueueItemsMatching(sql: Queryable, queueId: string, filter: QueueItemFilter): Promise<number> {
  const [row] = await sql<{ total: number }[]>`
    select count(*)::bigint as total from queue_items where queue_id = ${queueId} ${itemFilterSql(sql, queueId, filter)}`;
  return row!.total;
}

/**
 * Exact number of items in a queue (optionally of one status, of one kind of last failure)
 * without count(*): the sum of the sharded per-status counters that statement-level triggers
 * keep, each kind apart (migrations 0001 and 0031).
 */
export async function countQueueItems(sql: Queryable, queueId: string, status?: QueueItemStatus, exceptionType?: ExceptionType): Promise<number> {
  const counted = exceptionType === 'business' ? sql`business` : exceptionType === 'application' ? sql`application` : sql`n`;
  const [row] = await sql<{ total: number }[]>`
    select coalesce(sum(${counted}), 0)::bigint as total from queue_item_counts
    where queue_id = ${queueId} ${status ? sql`and status = ${status}` : sql``}`;
  return row!.total;
}
