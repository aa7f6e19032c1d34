import type { Queryable } from '../db/sql';
import { ConflictError, ValidationError } from '../errors';
import { es } from '../messages/server-messages';

/**
 * The rules every catalogue record's write follows: its name is unique in its tenant, what it
 * points at belongs to the same tenant, and a PATCH changes only the fields it names.
 */

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
