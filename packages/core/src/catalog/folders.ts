import type { Queryable } from '../db/sql';
import { NotFoundError } from '../errors';
import { validate } from '../validation/validate';
import { FolderCreate, FolderUpdate, CatalogListQuery } from './schemas';
import { iso } from '../validation/iso-date';
import { pageWindow, toPage, type Page } from './paging';
import { presentColumns, uniqueName } from './record-rules';

/** Folders group processes. Management only: (sql, tenantId, input), inputs in API snake_case. */
export interface FolderRow {
  id: string;
  tenant_id: string;
  name: string;
  description: string | null;
  is_active: boolean;
  created_at: Date;
  updated_at: Date;
}

export function toFolderResponse(row: FolderRow) {
  return {
    id: row.id,
    tenant_id: row.tenant_id,
    name: row.name,
    description: row.description,
    is_active: row.is_active,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

export async function createFolder(sql: Queryable, tenantId: string, input: unknown): Promise<FolderRow> {
  const body = validate(FolderCreate, input);
  return uniqueName(sql, 'folder', body.name, async (q) => {
    const [row] = await q<FolderRow[]>`
      insert into folders (tenant_id, name, description, is_active)
      values (${tenantId}, ${body.name}, ${body.description ?? null}, ${body.is_active ?? true})
      returning *`;
    return row!;
  });
}

export async function findFolder(sql: Queryable, tenantId: string, id: string): Promise<FolderRow | null> {
  const [row] = await sql<FolderRow[]>`select * from folders where id = ${id} and tenant_id = ${tenantId}`;
  return row ?? null;
}

/** Another tenant's folder answers exactly like a missing one. */
export async function getFolder(sql: Queryable, tenantId: string, id: string): Promise<FolderRow> {
  const row = await findFolder(sql, tenantId, id);
  if (!row) throw new NotFoundError();
  return row;
}

export async function findFolderByName(sql: Queryable, tenantId: string, name: string): Promise<FolderRow | null> {
  const [row] = await sql<FolderRow[]>`select * from folders where tenant_id = ${tenantId} and name = ${name}`;
  return row ?? null;
}

export async function listFolders(sql: Queryable, tenantId: string, query: Partial<CatalogListQuery> = {}): Promise<Page<FolderRow>> {
  const { page, limit, offset } = pageWindow(query);
  const active = query.is_active ?? null;
  const [rows, [count]] = await Promise.all([
    sql<FolderRow[]>`
      select * from folders where tenant_id = ${tenantId} and (${active}::boolean is null or is_active = ${active})
      order by name, id limit ${limit} offset ${offset}`,
    sql<{ total: number }[]>`
      select count(*)::int as total from folders where tenant_id = ${tenantId} and (${active}::boolean is null or is_active = ${active})`,
  ]);
  return toPage(rows, page, limit, count!.total);
}

export async function updateFolder(sql: Queryable, tenantId: string, id: string, patch: unknown): Promise<FolderRow> {
  const body = validate(FolderUpdate, patch);
  const cols = presentColumns(body, ['name', 'description', 'is_active']);
  return uniqueName(sql, 'folder', body.name, async (q) => {
    const [row] = await q<FolderRow[]>`
      update folders set ${q(cols)}, updated_at = now()
      where id = ${id} and tenant_id = ${tenantId} returning *`;
    if (!row) throw new NotFoundError();
    return row;
  });
}

/** Deactivation keeps the row (and its name): processes in the folder keep pointing at it. */
export async function deactivateFolder(sql: Queryable, tenantId: string, id: string): Promise<FolderRow> {
  const [row] = await sql<FolderRow[]>`
    update folders set is_active = false, updated_at = now()
    where id = ${id} and tenant_id = ${tenantId} returning *`;
  if (!row) throw new NotFoundError();
  return row;
}
