import type { Queryable } from '../db/sql';
import { NotFoundError } from '../errors';
import { validate } from '../validation/validate';
import { iso } from '../validation/iso-date';
import { assertValidCron, nextTick, nextTicks } from '../schedules/cron';
import { ScheduleCreate, ScheduleUpdate, type MissedRuns, type ScheduleListQuery } from '../schedules/schemas';
import { pageWindow, toPage, type Page } from './paging';
import { assertSameTenant, presentColumns, uniqueName } from './record-rules';

/** A row of `schedules` (migrations/0010_schedules.sql). */
export interface ScheduleRow {
  id: string;
  tenant_id: string;
  name: string;
  description: string | null;
  process_id: string;
  cron: string;
  timezone: string;
  machine_id: string | null;
  input_data: Record<string, unknown> | null;
  priority: number;
  is_active: boolean;
  missed_runs: MissedRuns;
  next_run_at: Date | null;
  last_run_at: Date | null;
  last_job_id: string | null;
  last_error: string | null;
  last_error_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export function toScheduleResponse(row: ScheduleRow) {
  return {
    id: row.id,
    tenant_id: row.tenant_id,
    name: row.name,
    description: row.description,
    process_id: row.process_id,
    cron: row.cron,
    timezone: row.timezone,
    machine_id: row.machine_id,
    input_data: row.input_data,
    priority: row.priority,
    is_active: row.is_active,
    missed_runs: row.missed_runs,
    next_run_at: iso(row.next_run_at),
    last_run_at: iso(row.last_run_at),
    last_job_id: row.last_job_id,
    last_error: row.last_error,
    last_error_at: iso(row.last_error_at),
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

/** The next tick of an active schedule from now; a saved change never fires ticks of the past. */
function firstTick(cron: string, timezone: string, active: boolean): Date | null {
  return active ? nextTick(cron, timezone, new Date()) : null;
}

export async function createSchedule(sql: Queryable, tenantId: string, input: unknown): Promise<ScheduleRow> {
  const body = validate(ScheduleCreate, input);
  const timezone = body.timezone ?? 'UTC';
  assertValidCron(body.cron, timezone);
  await assertSameTenant(sql, 'processes', tenantId, body.process_id, 'process_id');
  // the named machine must be the tenant's (active or not: an inactive one refuses runs, recorded)
  await assertSameTenant(sql, 'machines', tenantId, body.machine_id, 'machine_id');
  const active = body.is_active ?? true;
  return uniqueName(sql, 'schedule', body.name, async (q) => {
    const [row] = await q<ScheduleRow[]>`
      insert into schedules (tenant_id, name, description, process_id, cron, timezone, machine_id, input_data, priority,
                             is_active, missed_runs, next_run_at)
      values (${tenantId}, ${body.name}, ${body.description ?? null}, ${body.process_id}, ${body.cron}, ${timezone},
              ${body.machine_id ?? null}, ${body.input_data == null ? null : q.json(body.input_data as never)}, ${body.priority ?? 3},
              ${active}, ${body.missed_runs ?? 'skip'}, ${firstTick(body.cron, timezone, active)})
      returning *`;
    return row!;
  });
}

export async function findSchedule(sql: Queryable, tenantId: string, id: string): Promise<ScheduleRow | null> {
  const [row] = await sql<ScheduleRow[]>`select * from schedules where id = ${id} and tenant_id = ${tenantId}`;
  return row ?? null;
}

/** Another tenant's schedule answers exactly like a missing one. */
export async function getSchedule(sql: Queryable, tenantId: string, id: string): Promise<ScheduleRow> {
  const row = await findSchedule(sql, tenantId, id);
  if (!row) throw new NotFoundError();
  return row;
}

export async function findScheduleByName(sql: Queryable, tenantId: string, name: string): Promise<ScheduleRow | null> {
  const [row] = await sql<ScheduleRow[]>`select * from schedules where tenant_id = ${tenantId} and name = ${name}`;
  return row ?? null;
}

export async function listSchedules(sql: Queryable, tenantId: string, query: Partial<ScheduleListQuery> = {}): Promise<Page<ScheduleRow>> {
  const { page, limit, offset } = pageWindow(query);
  const active = query.is_active ?? null;
  const processId = query.process_id ?? null;
  const where = sql`tenant_id = ${tenantId} and (${active}::boolean is null or is_active = ${active})
    and (${processId}::uuid is null or process_id = ${processId}::uuid)`;
  const [rows, [count]] = await Promise.all([
    sql<ScheduleRow[]>`select * from schedules where ${where} order by name, id limit ${limit} offset ${offset}`,
    sql<{ total: number }[]>`select count(*)::int as total from schedules where ${where}`,
  ]);
  return toPage(rows, page, limit, count!.total);
}

/**
 * A partial update. A new cron, time zone or activation recomputes `next_run_at` from now (a
 * reactivated schedule does not catch up on the ticks it had while inactive); any other change
 * keeps the tick already due. The row is locked so the fire loop never advances a tick computed
 * from the old expression after this commit.
 */
export async function updateSchedule(sql: Queryable, tenantId: string, id: string, patch: unknown): Promise<ScheduleRow> {
  const body = validate(ScheduleUpdate, patch);
  const [current] = await sql<ScheduleRow[]>`select * from schedules where id = ${id} and tenant_id = ${tenantId} for update`;
  if (!current) throw new NotFoundError();
  const cron = body.cron ?? current.cron;
  const timezone = body.timezone ?? current.timezone;
  if (body.cron !== undefined || body.timezone !== undefined) assertValidCron(cron, timezone);
  if (body.process_id !== undefined) await assertSameTenant(sql, 'processes', tenantId, body.process_id, 'process_id');
  if ('machine_id' in body) await assertSameTenant(sql, 'machines', tenantId, body.machine_id, 'machine_id');
  const cols = presentColumns(body, ['name', 'description', 'process_id', 'cron', 'timezone', 'machine_id', 'priority', 'is_active', 'missed_runs']);
  if ('input_data' in body) cols.input_data = body.input_data == null ? null : sql.json(body.input_data as never);
  const active = body.is_active ?? current.is_active;
  const retime = body.cron !== undefined || body.timezone !== undefined || (body.is_active !== undefined && body.is_active !== current.is_active);
  if (retime) cols.next_run_at = firstTick(cron, timezone, active);
  return uniqueName(sql, 'schedule', body.name, async (q) => {
    const [row] = await q<ScheduleRow[]>`
      update schedules set ${q(cols)}, updated_at = now()
      where id = ${id} and tenant_id = ${tenantId} returning *`;
    if (!row) throw new NotFoundError();
    return row;
  });
}

/** DELETE: the schedule stops firing; the row, its name and its jobs' schedule_id stay. */
export async function deactivateSchedule(sql: Queryable, tenantId: string, id: string): Promise<ScheduleRow> {
  const [row] = await sql<ScheduleRow[]>`
    update schedules set is_active = false, next_run_at = null, updated_at = now()
    where id = ${id} and tenant_id = ${tenantId} returning *`;
  if (!row) throw new NotFoundError();
  return row;
}

/** The next `count` ticks of a schedule from now (active or not: a preview of its expression). */
export async function previewSchedule(sql: Queryable, tenantId: string, id: string, count = 10) {
  const row = await getSchedule(sql, tenantId, id);
  return {
    schedule_id: row.id,
    cron: row.cron,
    timezone: row.timezone,
    runs: nextTicks(row.cron, row.timezone, new Date(), count).map((d) => d.toISOString()),
  };
}
