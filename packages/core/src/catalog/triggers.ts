import { Type, type Static } from '@sinclair/typebox';
import type { Queryable } from '../db/sql';
import { NotFoundError } from '../errors';
import { DateTime, Nullable, PageQuery, Uuid } from '../validation/formats';
import { validate } from '../validation/validate';
import { ActiveFilter } from './schemas';
import { assertSameTenant, presentColumns } from './record-rules';
import { iso } from '../validation/iso-date';
import { pageWindow, toPage, type Page } from './paging';

/**
 * Queue triggers (docs/decisions/triggers.md): what starts consumer jobs for a queue. A queue's
 * own consumer settings (`consumer_process_id`, `max_consumers`) are its default trigger, kept in
 * step with it by the database (migration 0011) whoever writes either side. The consumer decision
 * itself is dispatch/consumers.ts.
 */
export interface TriggerRow {
  id: string;
  tenant_id: string;
  type: 'queue';
  queue_id: string;
  process_id: string;
  machine_id: string | null;
  max_concurrent_jobs: number;
  min_items_to_start: number;
  is_active: boolean;
  is_queue_default: boolean;
  created_at: Date;
  updated_at: Date;
}

/** The largest `min_items_to_start`: a start decision counts at most this many ready items. */
export const MAX_MIN_ITEMS_TO_START = 10_000;

const strict = { additionalProperties: false } as const;
const TriggerType = Type.Literal('queue', { description: 'Only `queue` for now' });
const editable = {
  process_id: Uuid({ description: 'Process whose jobs take the queue\'s items; a process of the same workspace (else 422)' }),
  max_concurrent_jobs: Type.Integer({ minimum: 1, maximum: 100, default: 1, description: 'Most active (pending or running) jobs of this trigger at once' }),
  min_items_to_start: Type.Integer({
    minimum: 1, maximum: MAX_MIN_ITEMS_TO_START, default: 1,
    description: 'A job starts only while the queue has at least this many ready items',
  }),
  machine_id: Nullable(Uuid({
    description: 'Run its jobs on this machine (it may be attended); null: online unattended machines with free slots, least loaded first',
  })),
  is_active: Type.Boolean({ default: true }),
};
export const TriggerCreate = Type.Object({
  type: TriggerType,
  queue_id: Uuid({ description: 'A queue of the same workspace (else 422); fixed once created' }),
  process_id: editable.process_id,
  max_concurrent_jobs: Type.Optional(editable.max_concurrent_jobs),
  min_items_to_start: Type.Optional(editable.min_items_to_start),
  machine_id: Type.Optional(editable.machine_id),
  is_active: Type.Optional(editable.is_active),
}, strict);
export type TriggerCreate = Static<typeof TriggerCreate>;
const noDefault = <T extends object>(s: T) => { const c = { ...s } as Record<string, unknown>; delete c.default; return c as unknown as T; };
export const TriggerUpdate = Type.Object({
  process_id: Type.Optional(editable.process_id),
  max_concurrent_jobs: Type.Optional(noDefault(editable.max_concurrent_jobs)),
  min_items_to_start: Type.Optional(noDefault(editable.min_items_to_start)),
  machine_id: Type.Optional(editable.machine_id),
  is_active: Type.Optional(noDefault(editable.is_active)),
}, { ...strict, minProperties: 1 });
export type TriggerUpdate = Static<typeof TriggerUpdate>;
export const TriggerListQuery = Type.Object({ ...PageQuery, ...ActiveFilter, queue_id: Type.Optional(Uuid({ description: 'Only this queue\'s triggers' })) }, strict);
export type TriggerListQuery = Static<typeof TriggerListQuery>;
export const TriggerResponse = Type.Object({
  id: Uuid(),
  tenant_id: Uuid(),
  type: TriggerType,
  queue_id: Uuid(),
  process_id: Uuid(),
  machine_id: Nullable(Uuid()),
  max_concurrent_jobs: Type.Integer(),
  min_items_to_start: Type.Integer(),
  is_active: Type.Boolean(),
  is_queue_default: Type.Boolean({
    description: 'The trigger the queue\'s own `consumer_process_id` / `max_consumers` stand for: changing either side changes the other',
  }),
  created_at: DateTime(),
  updated_at: DateTime(),
});
export type TriggerResponse = Static<typeof TriggerResponse>;

export function toTriggerResponse(row: TriggerRow) {
  return {
    id: row.id,
    tenant_id: row.tenant_id,
    type: row.type,
    queue_id: row.queue_id,
    process_id: row.process_id,
    machine_id: row.machine_id,
    max_concurrent_jobs: row.max_concurrent_jobs,
    min_items_to_start: row.min_items_to_start,
    is_active: row.is_active,
    is_queue_default: row.is_queue_default,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

async function assertReferences(sql: Queryable, tenantId: string, body: Partial<TriggerCreate>): Promise<void> {
  await assertSameTenant(sql, 'queues', tenantId, body.queue_id, 'queue_id');
  await assertSameTenant(sql, 'processes', tenantId, body.process_id, 'process_id');
  await assertSameTenant(sql, 'machines', tenantId, body.machine_id, 'machine_id');
}

/** A new trigger is never a queue's default one: that one is made by the queue's consumer settings. */
export async function createTrigger(sql: Queryable, tenantId: string, input: unknown): Promise<TriggerRow> {
  const body = validate(TriggerCreate, input);
  await assertReferences(sql, tenantId, body);
  const [row] = await sql<TriggerRow[]>`
    insert into triggers (tenant_id, type, queue_id, process_id, machine_id, max_concurrent_jobs, min_items_to_start, is_active)
    values (${tenantId}, ${body.type}, ${body.queue_id}, ${body.process_id}, ${body.machine_id ?? null},
            ${body.max_concurrent_jobs ?? 1}, ${body.min_items_to_start ?? 1}, ${body.is_active ?? true})
    returning *`;
  return row!;
}

export async function findTrigger(sql: Queryable, tenantId: string, id: string): Promise<TriggerRow | null> {
  const [row] = await sql<TriggerRow[]>`select * from triggers where id = ${id} and tenant_id = ${tenantId}`;
  return row ?? null;
}

/** Another tenant's trigger answers exactly like a missing one. */
export async function getTrigger(sql: Queryable, tenantId: string, id: string): Promise<TriggerRow> {
  const row = await findTrigger(sql, tenantId, id);
  if (!row) throw new NotFoundError();
  return row;
}

/** Oldest first (a queue's default trigger usually leads), optionally of one queue. */
export async function listTriggers(sql: Queryable, tenantId: string, query: Partial<TriggerListQuery> = {}): Promise<Page<TriggerRow>> {
  const { page, limit, offset } = pageWindow(query);
  const active = query.is_active ?? null;
  const queueId = query.queue_id ?? null;
  const where = sql`tenant_id = ${tenantId} and (${active}::boolean is null or is_active = ${active})
    and (${queueId}::uuid is null or queue_id = ${queueId})`;
  const [rows, [count]] = await Promise.all([
    sql<TriggerRow[]>`select * from triggers where ${where} order by created_at, id limit ${limit} offset ${offset}`,
    sql<{ total: number }[]>`select count(*)::int as total from triggers where ${where}`,
  ]);
  return toPage(rows, page, limit, count!.total);
}

export async function updateTrigger(sql: Queryable, tenantId: string, id: string, patch: unknown): Promise<TriggerRow> {
  const body = validate(TriggerUpdate, patch);
  await assertReferences(sql, tenantId, body);
  const cols = presentColumns(body, ['process_id', 'machine_id', 'max_concurrent_jobs', 'min_items_to_start', 'is_active']);
  const [row] = await sql<TriggerRow[]>`
    update triggers set ${sql(cols)}, updated_at = now()
    where id = ${id} and tenant_id = ${tenantId} returning *`;
  if (!row) throw new NotFoundError();
  return row;
}

/** Its running jobs finish; no new one starts. A default trigger's queue then shows no consumer. */
export async function deactivateTrigger(sql: Queryable, tenantId: string, id: string): Promise<TriggerRow> {
  const [row] = await sql<TriggerRow[]>`
    update triggers set is_active = false, updated_at = now()
    where id = ${id} and tenant_id = ${tenantId} returning *`;
  if (!row) throw new NotFoundError();
  return row;
}
