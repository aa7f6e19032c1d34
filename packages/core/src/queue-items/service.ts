import type postgres from 'postgres';
import type { Sql } from '../db/sql';
import type { Logger } from '../logger';
import { ConflictError, NotFoundError, ValidationError } from '../errors';
import { pageMeta, storableDate, type PageMeta } from '../validation/formats';
import {
  countQueueItems, countQueueItemsMatching, insertQueueItem, insertQueueItemsBulk, listQueueItems,
  type QueueItemRow, type QueueRef,
} from './repo';
import { BULK_MAX_ITEMS, type AddQueueItemInput, type AddQueueItemsBulkInput, type QueueItemListQuery } from './schemas';
import { findQueueByNameBatched, insertQueueItemBatched, insertQueueItemByNameBatched } from './batched-inserts';
import { es } from '../messages/server-messages';
import { parseContainmentFilter } from '../validation/containment-filter';
import type { DispatchPort } from '../dispatch/port';
import { nudgeQueueAtOnce } from '../outbox/at-once';

type Tx = postgres.TransactionSql<Record<string, unknown>>;

export interface QueueItemDeps {
  sql: Sql;
  logger?: Logger;
  /** where an add nudges its queue's dispatcher right after its commit (outbox/at-once.ts) */
  atOnce?: DispatchPort;
}

/**
 * The queue the item endpoints address: active, in the caller's tenant. Another tenant's queue
 * and a deactivated one answer exactly like a missing one (404).
 */
export async function getActiveQueueByName(sql: Sql, tenantId: string, name: string): Promise<QueueRef> {
  const queue = await findQueueByNameBatched(sql, tenantId, name);
  if (!queue || !queue.is_active) throw new NotFoundError(es.queues.queueNotFound);
  return { id: queue.id, tenant_id: queue.tenant_id, name: queue.name };
}


/**
 * Postgres refuses some JSON that JavaScript accepts: the `\u0000` character in a string (jsonb
 * cannot hold it) and absurd nesting. Those are the client's data, so they are 422s, not 500s.
 */
async function mapJsonErrors<T>(field: Array<string | number>, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === '22P05') throw ValidationError.single(field, es.queues.nulCharacter, 'json_null_char');
    if (code === '54001' || err instanceof RangeError) {
      throw ValidationError.single(field, es.validation.jsonTooDeep, 'json_too_deep');
    }
    throw err;
  }
}

function isReferenceClash(err: unknown): boolean {
  const e = err as { code?: string; constraint_name?: string };
  return e?.code === '23505' && e.constraint_name === 'queue_item_references_pkey';
}

/**
 * The database refused an add because its queue keeps references unique (migration 0030): the
 * answer names the item that holds the reference. Read after the refusal, only to explain it; the
 * rule itself is the primary key's.
 */
async function referenceTaken(sql: Sql, queueId: string, reference: string | null): Promise<ConflictError> {
  const [held] = await sql<Array<{ item_id: string }>>`
    select item_id from queue_item_references where queue_id = ${queueId} and reference = ${reference}`;
  return new ConflictError(es.queues.referenceTaken, { field: 'reference', reference, item_id: held?.item_id ?? null });
}

/**
 * A bulk refused for its references: which of its items clash, with a stored item (its id) or
 * with an earlier item of the same request (its index). Nothing of the bulk was written.
 */
async function referencesTakenInBulk(sql: Sql, queueId: string, items: ReadonlyArray<NewItem>): Promise<ConflictError> {
  const refs = [...new Set(items.map((i) => i.reference).filter((r): r is string => r !== null))];
  const stored = new Map((await sql<Array<{ reference: string; item_id: string }>>`
    select reference, item_id from queue_item_references where queue_id = ${queueId} and reference = any(${refs}::text[])`)
    .map((r) => [r.reference, r.item_id]));
  const firstAt = new Map<string, number>();
  const clashes: Array<{ index: number; reference: string; item_id?: string; same_as_index?: number }> = [];
  items.forEach(({ reference }, index) => {
    if (reference === null) return;
    const held = stored.get(reference);
    const first = firstAt.get(reference);
    if (held !== undefined) clashes.push({ index, reference, item_id: held });
    else if (first !== undefined) clashes.push({ index, reference, same_as_index: first });
    else firstAt.set(reference, index);
  });
  return new ConflictError(es.queues.referencesTakenInBulk(clashes.length), { indexes: clashes.map((c) => c.index), clashes });
}

export interface InTransaction<T> {
  /** Runs inside the insert's transaction, after the insert (e.g. to record an idempotent response). */
  inTransaction?: (tx: Tx, result: T) => Promise<void>;
}

type NewItem = ReturnType<typeof newItem>;

function newItem(input: AddQueueItemInput) {
  return {
    data: input.data as Record<string, unknown>,
    priority: input.priority ?? 3,
    reference: input.reference ?? null,
    deadline: storableDate(input.deadline, ['body', 'deadline']),
    postpone: storableDate(input.postpone, ['body', 'postpone']),
  };
}

/** Adds one item (status new, retry_count 0); its queue-ready effect commits with it. */
export async function addItem(
  deps: QueueItemDeps,
  queue: QueueRef,
  input: AddQueueItemInput,
  opts: InTransaction<QueueItemRow> = {},
): Promise<QueueItemRow> {
  const item = newItem(input);
  const hook = opts.inTransaction;
  let row: QueueItemRow;
  try {
    row = await mapJsonErrors(['body', 'data'], () =>
      hook
        ? (deps.sql.begin(async (tx) => {
            const r = await insertQueueItem(tx, queue, item);
            await hook(tx, r);
            return r;
          }) as Promise<QueueItemRow>)
        : insertQueueItemBatched(deps.sql, queue, item),
    );
  } catch (err) {
    if (isReferenceClash(err)) throw await referenceTaken(deps.sql, queue.id, item.reference);
    throw err;
  }
  nudgeQueueAtOnce(deps, queue);
  return row;
}

/**
 * `addItem` for a queue addressed by name (the caller's tenant, active), when nothing else must
 * commit with it: the insert finds the queue itself, one statement instead of a look-up and an
 * insert (BENCHMARKS.md, B1). No such queue → 404, nothing written. A 422 of the item (a date
 * Postgres cannot store, JSON it refuses) is answered only for an existing queue: 404 comes first.
 */
export async function addItemToQueueNamed(deps: QueueItemDeps, tenantId: string, queueName: string, input: AddQueueItemInput): Promise<QueueItemRow> {
  let row: QueueItemRow | null;
  try {
    const item = newItem(input);
    row = await mapJsonErrors(['body', 'data'], () => insertQueueItemByNameBatched(deps.sql, tenantId, queueName, item));
  } catch (err) {
    if (err instanceof ValidationError) await getActiveQueueByName(deps.sql, tenantId, queueName);
    if (isReferenceClash(err)) throw await referenceTaken(deps.sql, (await getActiveQueueByName(deps.sql, tenantId, queueName)).id, input.reference ?? null);
    throw err;
  }
  if (!row) throw new NotFoundError(es.queues.queueNotFound);
  nudgeQueueAtOnce(deps, { id: row.queue_id, tenant_id: row.tenant_id });
  return row;
}

/**
 * Adds 1..1000 payloads as items (priority 3, nothing else): the API's bulk body.
 * Returns how many were added.
 */
export async function addItemsBulk(
  deps: QueueItemDeps,
  queue: QueueRef,
  input: AddQueueItemsBulkInput,
  opts: InTransaction<number> = {},
): Promise<number> {
  return addItemsMany(deps, queue, (input.items as Array<Record<string, unknown>>).map((data) => ({ data })), opts);
}

/**
 * Adds 1..1000 items, each with the fields of a single add (validated by the caller against
 * AddQueueItemBody), all or nothing: one multi-row INSERT, the statement of the API's bulk add
 * (`svc items import` sends a file's rows this way). A refused field names its item:
 * `body → items → <index> → deadline`. Returns how many were added.
 */
export async function addItemsMany(
  deps: QueueItemDeps,
  queue: QueueRef,
  inputs: ReadonlyArray<AddQueueItemInput>,
  opts: InTransaction<number> = {},
): Promise<number> {
  if (inputs.length < 1 || inputs.length > BULK_MAX_ITEMS) {
    throw ValidationError.single(['body', 'items'], es.validation.invalidValue, 'bulk_size');
  }
  const items = inputs.map((input, i) => {
    try {
      return newItem(input);
    } catch (err) {
      if (err instanceof ValidationError) {
        throw new ValidationError(err.issues.map((x) => {
          const loc = ['body', 'items', i, ...x.loc.slice(1)];
          return { ...x, loc, field: loc.join(' → ') };
        }));
      }
      throw err;
    }
  });
  const hook = opts.inTransaction;
  // a single statement is already its own all-or-nothing transaction: BEGIN/COMMIT round trips
  // are only paid when there is more to commit with it
  let added: number;
  try {
    added = await mapJsonErrors(['body', 'items'], () =>
      hook
        ? (deps.sql.begin(async (tx) => {
            const n = await insertQueueItemsBulk(tx, queue, items);
            await hook(tx, n);
            return n;
          }) as Promise<number>)
        : insertQueueItemsBulk(deps.sql, queue, items),
    );
  } catch (err) {
    if (isReferenceClash(err)) throw await referencesTakenInBulk(deps.sql, queue.id, items);
    throw err;
  }
  nudgeQueueAtOnce(deps, queue);
  return added;
}

/**
 * One page of the queue's items, newest first, with an exact `total` read from the per-status
 * counters (never count(*) over the queue).
 */
export async function listItems(sql: Sql, queue: QueueRef, query: QueueItemListQuery): Promise<{ rows: QueueItemRow[]; meta: PageMeta }> {
  const page = query.page ?? 1;
  const limit = query.limit ?? 20;
  const filter = { status: query.status, reference: query.reference, exception_type: query.exception_type, data: parseContainmentFilter(query.data, 'data') };
  const [rows, total] = await Promise.all([
    listQueueItems(sql, queue, { ...filter, limit, offset: (page - 1) * limit }),
    filter.data === undefined && filter.reference === undefined
      ? countQueueItems(sql, queue.id, query.status, query.exception_type)
      : countQueueItemsMatching(sql, queue.id, filter),
  ]);
  return { rows, meta: pageMeta(page, limit, total) };
}
