import type { Queryable } from '../db/sql';
import type { Environment } from '../scopes';
import { NotFoundError } from '../errors';
import { issueSecret, MACHINE_KEY_PREFIX } from '../security/secrets';
import { validate } from '../validation/validate';
import { MachineCreate, MachineUpdate, type MachineKind, type MachineListQuery, type MachineStatus } from './schemas';
import { iso } from '../validation/iso-date';
import { pageWindow, toPage, type Page } from './paging';
import { presentColumns, uniqueName } from './record-rules';

/** A machine (robot host) of a tenant. Its agent authenticates with a machine key kept only as SHA-256. */
export interface MachineRow {
  id: string;
  tenant_id: string;
  name: string;
  description: string | null;
  machine_key_hash: Buffer;
  machine_key_prefix: string;
  slots: number;
  kind: MachineKind;
  is_active: boolean;
  /** environments whose assets its runs may read (null: every one) */
  environments: string[] | null;
  status: MachineStatus;
  running_jobs: number;
  last_heartbeat_at: Date | null;
  agent_version: string | null;
  host_info: Record<string, unknown> | null;
  created_at: Date;
  updated_at: Date;
}

/**
 * The machine record (docs/decisions/machine-record.md), shown by the management API and by
 * `GET /machines/list`. Never the key or its hash.
 */
export function toMachineResponse(row: MachineRow) {
  return {
    id: row.id,
    tenant_id: row.tenant_id,
    name: row.name,
    description: row.description,
    status: row.status,
    slots: row.slots,
    kind: row.kind,
    running_jobs: row.running_jobs,
    is_active: row.is_active,
    environments: row.environments as Environment[] | null,
    last_heartbeat_at: iso(row.last_heartbeat_at),
    agent_version: row.agent_version,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

/** A machine together with its key, which exists in clear only in this value. */
export interface MachineWithKey {
  row: MachineRow;
  machineKey: string;
}

export async function createMachine(sql: Queryable, tenantId: string, input: unknown): Promise<MachineWithKey> {
  const body = validate(MachineCreate, input);
  const secret = issueSecret(MACHINE_KEY_PREFIX);
  const row = await uniqueName(sql, 'machine', body.name, async (q) => {
    const [r] = await q<MachineRow[]>`
      insert into machines (tenant_id, name, description, slots, kind, is_active, environments, machine_key_hash, machine_key_prefix)
      values (${tenantId}, ${body.name}, ${body.description ?? null}, ${body.slots ?? 1}, ${body.kind ?? 'unattended'}, ${body.is_active ?? true},
              ${body.environments ?? null}, ${secret.hash}, ${secret.prefix})
      returning *`;
    return r!;
  });
  return { row, machineKey: secret.value };
}

/** Issues a new key; the old one stops matching at once (agents look keys up by hash). */
export async function rotateMachineKey(sql: Queryable, tenantId: string, id: string): Promise<MachineWithKey> {
  const secret = issueSecret(MACHINE_KEY_PREFIX);
  const [row] = await sql<MachineRow[]>`
    update machines set machine_key_hash = ${secret.hash}, machine_key_prefix = ${secret.prefix}, updated_at = now()
    where id = ${id} and tenant_id = ${tenantId} returning *`;
  if (!row) throw new NotFoundError();
  return { row, machineKey: secret.value };
}

export async function findMachine(sql: Queryable, tenantId: string, id: string): Promise<MachineRow | null> {
  const [row] = await sql<MachineRow[]>`select * from machines where id = ${id} and tenant_id = ${tenantId}`;
  return row ?? null;
}

/** Another tenant's machine answers exactly like a missing one. */
export async function getMachine(sql: Queryable, tenantId: string, id: string): Promise<MachineRow> {
  const row = await findMachine(sql, tenantId, id);
  if (!row) throw new NotFoundError();
  return row;
}

export async function findMachineByName(sql: Queryable, tenantId: string, name: string): Promise<MachineRow | null> {
  const [row] = await sql<MachineRow[]>`select * from machines where tenant_id = ${tenantId} and name = ${name}`;
  return row ?? null;
}

export type MachineName = Pick<MachineRow, 'id' | 'name' | 'is_active'>;

/** Every machine of a tenant, active or not, ordered by name, unpaged (the operators' queues board). */
export async function listMachineNames(sql: Queryable, tenantId: string): Promise<MachineName[]> {
  return sql<MachineName[]>`select id, name, is_active from machines where tenant_id = ${tenantId} order by name`;
}

export async function listMachines(sql: Queryable, tenantId: string, query: Partial<MachineListQuery> = {}): Promise<Page<MachineRow>> {
  const { page, limit, offset } = pageWindow(query);
  const active = query.is_active ?? null;
  const status = query.status ?? null;
  const where = sql`tenant_id = ${tenantId}
    and (${active}::boolean is null or is_active = ${active})
    and (${status}::text is null or status = ${status})`;
  const [rows, [count]] = await Promise.all([
    sql<MachineRow[]>`select * from machines where ${where} order by name, id limit ${limit} offset ${offset}`,
    sql<{ total: number }[]>`select count(*)::int as total from machines where ${where}`,
  ]);
  return toPage(rows, page, limit, count!.total);
}

export async function updateMachine(sql: Queryable, tenantId: string, id: string, patch: unknown): Promise<MachineRow> {
  const body = validate(MachineUpdate, patch);
  const cols = presentColumns(body, ['name', 'description', 'slots', 'kind', 'is_active', 'environments']);
  return uniqueName(sql, 'machine', body.name, async (q) => {
    const [row] = await q<MachineRow[]>`
      update machines set ${q(cols)}, updated_at = now()
      where id = ${id} and tenant_id = ${tenantId} returning *`;
    if (!row) throw new NotFoundError();
    return row;
  });
}

/** An inactive machine is never auto-selected; its key remains on record (rotate-key replaces it). */
export async function deactivateMachine(sql: Queryable, tenantId: string, id: string): Promise<MachineRow> {
  const [row] = await sql<MachineRow[]>`
    update machines set is_active = false, updated_at = now()
    where id = ${id} and tenant_id = ${tenantId} returning *`;
  if (!row) throw new NotFoundError();
  return row;
}
