import type { Queryable } from '../db/sql';
import { NotFoundError, ValidationError } from '../errors';
import { validate } from '../validation/validate';
import { userSchemaProblem } from '../validation/user-schema/compile';
import { ProcessCreate, ProcessUpdate, type ProcessListQuery } from './schemas';
import { assertSameTenant, presentColumns, uniqueName } from './record-rules';
import { iso } from '../validation/iso-date';
import { pageWindow, toPage, type Page } from './paging';
import { es } from '../messages/server-messages';

/** A process (robot) of a tenant. */
export interface ProcessRow {
  id: string;
  tenant_id: string;
  name: string;
  description: string | null;
  release_id: string;
  folder_id: string | null;
  input_schema: Record<string, unknown> | null;
  timeout_seconds: number;
  max_retries: number;
  auto_retry: boolean;
  retry_delay_seconds: number;
  tags: string[] | null;
  sla_deadline_minutes: number | null;
  on_success_trigger_process_id: string | null;
  required_assets: string[];
  is_active: boolean;
  created_at: Date;
  updated_at: Date;
}

/** Exactly the fields of ProcessResponse (OpenAPI document), for the public list and management alike. */
export function toProcessResponse(row: ProcessRow) {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    release_id: row.release_id,
    folder_id: row.folder_id,
    input_schema: row.input_schema,
    timeout_seconds: row.timeout_seconds,
    max_retries: row.max_retries,
    auto_retry: row.auto_retry,
    retry_delay_seconds: row.retry_delay_seconds,
    tags: row.tags,
    sla_deadline_minutes: row.sla_deadline_minutes,
    on_success_trigger_process_id: row.on_success_trigger_process_id,
    required_assets: row.required_assets,
    is_active: row.is_active,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

/**
 * Checked when saved, by the API and `svc apply` alike: within the limits of admin-supplied schemas
 * and compiled exactly as the webhook trigger will compile it.
 */
function assertValidInputSchema(schema: unknown): void {
  if (schema === null || schema === undefined) return;
  const problem = userSchemaProblem(schema);
  if (problem) throw ValidationError.single(['body', 'input_schema', ...problem.path], problem.message, problem.type);
}

/**
 * A chain A → B → … → A would trigger jobs forever: refuse a successor whose own chain of
 * successors leads back to this process (a process may not chain to itself either).
 */
async function assertNoChainCycle(sql: Queryable, tenantId: string, processId: string, successorId: string | null | undefined): Promise<void> {
  if (!successorId) return;
  const [row] = await sql<{ cycle: boolean }[]>`
    with recursive chain (id, depth) as (
      select id, 0 from processes where id = ${successorId} and tenant_id = ${tenantId}
      union all
      select p.on_success_trigger_process_id, c.depth + 1
      from chain c join processes p on p.id = c.id
      where p.on_success_trigger_process_id is not null and c.depth < 1000
    )
    select exists (select 1 from chain where id = ${processId}) as cycle`;
  if (row!.cycle) {
    throw ValidationError.single(
      ['body', 'on_success_trigger_process_id'],
      es.catalog.chainCycle,
      'reference',
    );
  }
}

const JSON_COLUMNS = new Set(['input_schema']);

export async function createProcess(sql: Queryable, tenantId: string, input: unknown): Promise<ProcessRow> {
  const body = validate(ProcessCreate, input);
  assertValidInputSchema(body.input_schema);
  await assertSameTenant(sql, 'folders', tenantId, body.folder_id, 'folder_id');
  await assertSameTenant(sql, 'processes', tenantId, body.on_success_trigger_process_id, 'on_success_trigger_process_id');
  return uniqueName(sql, 'process', body.name, async (q) => {
    const [row] = await q<ProcessRow[]>`
      insert into processes (tenant_id, name, description, release_id, folder_id, input_schema, timeout_seconds, max_retries,
                             auto_retry, retry_delay_seconds, tags, sla_deadline_minutes, on_success_trigger_process_id,
                             required_assets, is_active)
      values (${tenantId}, ${body.name}, ${body.description ?? null}, ${body.release_id ?? q`gen_random_uuid()`},
              ${body.folder_id ?? null}, ${body.input_schema ? q.json(body.input_schema as never) : null},
              ${body.timeout_seconds ?? 3600}, ${body.max_retries ?? 0}, ${body.auto_retry ?? false},
              ${body.retry_delay_seconds ?? 60}, ${body.tags ?? null}, ${body.sla_deadline_minutes ?? null},
              ${body.on_success_trigger_process_id ?? null}, ${body.required_assets ?? []}, ${body.is_active ?? true})
      returning *`;
    return row!;
  });
}

export async function findProcess(sql: Queryable, tenantId: string, id: string): Promise<ProcessRow | null> {
  const [row] = await sql<ProcessRow[]>`select * from processes where id = ${id} and tenant_id = ${tenantId}`;
  return row ?? null;
}

/** Another tenant's process answers exactly like a missing one. */
export async function getProcess(sql: Queryable, tenantId: string, id: string): Promise<ProcessRow> {
  const row = await findProcess(sql, tenantId, id);
  if (!row) throw new NotFoundError();
  return row;
}

export async function findProcessByName(sql: Queryable, tenantId: string, name: string): Promise<ProcessRow | null> {
  const [row] = await sql<ProcessRow[]>`select * from processes where tenant_id = ${tenantId} and name = ${name}`;
  return row ?? null;
}

export async function listProcesses(sql: Queryable, tenantId: string, query: Partial<ProcessListQuery> = {}): Promise<Page<ProcessRow>> {
  const { page, limit, offset } = pageWindow(query);
  const active = query.is_active ?? null;
  const folder = query.folder_id ?? null;
  const where = sql`tenant_id = ${tenantId}
    and (${active}::boolean is null or is_active = ${active})
    and (${folder}::uuid is null or folder_id = ${folder})`;
  const [rows, [count]] = await Promise.all([
    sql<ProcessRow[]>`select * from processes where ${where} order by name, id limit ${limit} offset ${offset}`,
    sql<{ total: number }[]>`select count(*)::int as total from processes where ${where}`,
  ]);
  return toPage(rows, page, limit, count!.total);
}

export async function updateProcess(sql: Queryable, tenantId: string, id: string, patch: unknown): Promise<ProcessRow> {
  const body = validate(ProcessUpdate, patch);
  if ('input_schema' in body) assertValidInputSchema(body.input_schema);
  if ('folder_id' in body) await assertSameTenant(sql, 'folders', tenantId, body.folder_id, 'folder_id');
  if ('on_success_trigger_process_id' in body) {
    await assertSameTenant(sql, 'processes', tenantId, body.on_success_trigger_process_id, 'on_success_trigger_process_id');
    await assertNoChainCycle(sql, tenantId, id, body.on_success_trigger_process_id);
  }
  const cols = presentColumns(body, [
    'name', 'description', 'release_id', 'folder_id', 'input_schema', 'timeout_seconds', 'max_retries', 'auto_retry',
    'retry_delay_seconds', 'tags', 'sla_deadline_minutes', 'on_success_trigger_process_id', 'required_assets', 'is_active',
  ]);
  for (const c of JSON_COLUMNS) if (cols[c] !== undefined && cols[c] !== null) cols[c] = sql.json(cols[c] as never);
  return uniqueName(sql, 'process', body.name, async (q) => {
    const [row] = await q<ProcessRow[]>`
      update processes set ${q(cols)}, updated_at = now()
      where id = ${id} and tenant_id = ${tenantId} returning *`;
    if (!row) throw new NotFoundError();
    return row;
  });
}

/** Inactive processes leave the public list and refuse webhook triggers; their jobs stay readable. */
export async function deactivateProcess(sql: Queryable, tenantId: string, id: string): Promise<ProcessRow> {
  const [row] = await sql<ProcessRow[]>`
    update processes set is_active = false, updated_at = now()
    where id = ${id} and tenant_id = ${tenantId} returning *`;
  if (!row) throw new NotFoundError();
  return row;
}
