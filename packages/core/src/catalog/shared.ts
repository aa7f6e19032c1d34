import type postgres from 'postgres';
import type { Queryable, Sql } from '../db/sql';
import { ConflictError, ValidationError } from '../errors';
import { pageMeta, type PageMeta } from '../validation/formats';
import { es } from '../messages/es';

/** Datetimes leave the system as ISO 8601 strings (one rule for every response). */
export function iso(value: Date | string): string;
export function iso(value: Date | string | null | undefined): string | null;
export function iso(value: Date | string | null | undefined): string | null {
  if (value === null || value === undefined) return null;
  return (value instanceof Date ? value : new Date(value)).toISOString();
}

export interface PageInput {
  page?: number;
  limit?: number;
}

export interface Page<T> {
  rows: T[];
  meta: PageMeta;
}

export function pageWindow(input: PageInput): { page: number; limit: number; offset: number } {
  const page = input.page ?? 1;
  const limit = input.limit ?? 20;
  return { page, limit, offset: (page - 1) * limit };
}

export function toPage<T>(rows: T[], page: number, limit: number, total: number): Page<T> {
  return { rows, meta: pageMeta(page, limit, total) };
}

type Tx = postgres.TransactionSql<Record<string, unknown>>;

/** A transaction on a connection, or a savepoint when the caller already holds one. */
export async function inTransaction<T>(sql: Queryable, fn: (tx: Tx) => Promise<T>): Promise<T> {
  if ('savepoint' in sql) return (await sql.savepoint(fn)) as T;
  return (await (sql as Sql).begin(fn)) as T;
}

function isUniqueViolation(err: unknown): err is { code: string; constraint_name?: string } {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === '23505';
}

/**
 * Runs an insert/update and turns the `(tenant_id, name)` unique violation into 409. The database
 * decides (no pre-check), so two concurrent creates of the same name cannot both succeed. Inside
 * a caller's transaction the statement runs under a savepoint, so a conflict does not abort the
 * caller's work (the CLI's apply goes on after a 409).
 */
export async function uniqueName<T>(sql: Queryable, resource: string, name: string | undefined, run: (q: Queryable) => Promise<T>): Promise<T> {
  try {
    return 'savepoint' in sql ? ((await sql.savepoint((sp) => run(sp))) as T) : await run(sql);
  } catch (err) {
    if (isUniqueViolation(err) && (err.constraint_name ?? '').endsWith('_tenant_id_name_key')) {
      throw new ConflictError(undefined, { resource, field: 'name', name });
    }
    throw err;
  }
}

/** Tables a catalogue record may point at; the reference must be a row of the same tenant. */
type RefTable = 'folders' | 'processes' | 'queues' | 'machines';

const REF_MESSAGES: Record<RefTable, string> = {
  folders: es.catalog.folderNotInWorkspace,
  processes: es.catalog.processNotInWorkspace,
  queues: es.catalog.queueNotInWorkspace,
  machines: es.catalog.machineNotInWorkspace,
};

export async function assertSameTenant(sql: Queryable, table: RefTable, tenantId: string, id: string | null | undefined, field: string): Promise<void> {
  if (id === null || id === undefined) return;
  const rows = table === 'folders'
    ? await sql`select 1 from folders where id = ${id} and tenant_id = ${tenantId}`
    : table === 'processes'
      ? await sql`select 1 from processes where id = ${id} and tenant_id = ${tenantId}`
      : table === 'queues'
        ? await sql`select 1 from queues where id = ${id} and tenant_id = ${tenantId}`
        : await sql`select 1 from machines where id = ${id} and tenant_id = ${tenantId}`;
  if (rows.length === 0) throw ValidationError.single(['body', field], REF_MESSAGES[table], 'reference');
}

/** Keeps only the keys the caller actually sent: a PATCH never touches what it did not name. */
export function presentColumns<T extends object>(patch: T, columns: ReadonlyArray<keyof T & string>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const c of columns) if (Object.prototype.hasOwnProperty.call(patch, c) && patch[c] !== undefined) out[c] = patch[c];
  return out;
}
