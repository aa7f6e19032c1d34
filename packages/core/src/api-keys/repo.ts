import type { Queryable } from '../db/sql';

export interface ApiKeyRow {
  id: string;
  tenant_id: string;
  name: string;
  prefix: string;
  key_hash: Buffer;
  is_active: boolean;
  last_used_at: Date | null;
  expires_at: Date | null;
  allowed_ips: string[] | null;
  scopes: string[];
  environments: string[] | null;
  created_by: string | null;
  revoked_at: Date | null;
  rotated_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

/** Authentication look-up (unique index on key_hash). */
export async function findApiKeyByHash(sql: Queryable, hash: Buffer): Promise<ApiKeyRow | null> {
  const [row] = await sql<ApiKeyRow[]>`select * from api_keys where key_hash = ${hash}`;
  return row ?? null;
}

/**
 * Many authentication look-ups in one statement (the API's key cache batches the misses of one
 * event-loop turn): each hash's row, or null, in the order asked. Hashes in hex, as the cache
 * keeps them.
 */
export async function findApiKeysByHashes(sql: Queryable, hexes: string[]): Promise<Array<ApiKeyRow | null>> {
  const rows = await sql<ApiKeyRow[]>`
    select * from api_keys
    where key_hash = any(array(select decode(h, 'hex') from unnest(${hexes}::text[]) as h))`;
  const byHex = new Map(rows.map((r) => [r.key_hash.toString('hex'), r]));
  return hexes.map((h) => byHex.get(h.toLowerCase()) ?? null);
}

/** A key of the tenant; another tenant's key is answered exactly like a missing one. */
export async function findApiKey(sql: Queryable, tenantId: string, id: string): Promise<ApiKeyRow | null> {
  const [row] = await sql<ApiKeyRow[]>`select * from api_keys where id = ${id} and tenant_id = ${tenantId}`;
  return row ?? null;
}

export interface NewApiKey {
  tenantId: string;
  name: string;
  prefix: string;
  keyHash: Buffer;
  scopes: string[];
  environments: string[] | null;
  allowedIps: string[] | null;
  expiresAt: Date | null;
  createdBy: string | null;
}

export async function insertApiKey(sql: Queryable, k: NewApiKey): Promise<ApiKeyRow> {
  const [row] = await sql<ApiKeyRow[]>`
    insert into api_keys (tenant_id, name, prefix, key_hash, scopes, environments, allowed_ips, expires_at, created_by)
    values (${k.tenantId}, ${k.name}, ${k.prefix}, ${k.keyHash}, ${k.scopes}, ${k.environments}, ${k.allowedIps},
            ${k.expiresAt}, ${k.createdBy})
    returning *`;
  return row!;
}

/** Newest first, with the tenant's total (a tenant has few keys, so the count is cheap). */
export async function listApiKeyRows(
  sql: Queryable,
  tenantId: string,
  page: { limit: number; offset: number },
): Promise<{ rows: ApiKeyRow[]; total: number }> {
  const [rows, [count]] = await Promise.all([
    sql<ApiKeyRow[]>`
      select * from api_keys where tenant_id = ${tenantId}
      order by created_at desc, id desc
      limit ${page.limit} offset ${page.offset}`,
    sql<{ total: number }[]>`select count(*)::int as total from api_keys where tenant_id = ${tenantId}`,
  ]);
  return { rows, total: count!.total };
}

/**
 * Swaps the secret of an active key in one guarded statement: the old hash stops matching the
 * moment this commits. Returns the new row and the hash it replaced, or null when the key is
 * missing, another tenant's, or revoked.
 */
export async function replaceApiKeySecret(
  sql: Queryable,
  tenantId: string,
  id: string,
  secret: { prefix: string; hash: Buffer },
): Promise<{ row: ApiKeyRow; oldHash: Buffer } | null> {
  const [row] = await sql<(ApiKeyRow & { old_key_hash: Buffer })[]>`
    with old as (
      select id, key_hash from api_keys
      where id = ${id} and tenant_id = ${tenantId} and is_active
      for update
    )
    update api_keys k
    set key_hash = ${secret.hash}, prefix = ${secret.prefix}, rotated_at = now(), updated_at = now()
    from old
    where k.id = old.id
    returning k.*, old.key_hash as old_key_hash`;
  if (!row) return null;
  const { old_key_hash: oldHash, ...rest } = row;
  return { row: rest as ApiKeyRow, oldHash };
}

/** Deactivates an active key; null when it is missing, another tenant's, or already revoked. */
export async function deactivateApiKey(sql: Queryable, tenantId: string, id: string): Promise<ApiKeyRow | null> {
  const [row] = await sql<ApiKeyRow[]>`
    update api_keys
    set is_active = false, revoked_at = now(), updated_at = now()
    where id = ${id} and tenant_id = ${tenantId} and is_active
    returning *`;
  return row ?? null;
}

/**
 * Writes buffered last-use times in one statement. A time never moves backwards,
 * so two API replicas flushing in any order leave the latest one.
 */
export async function touchApiKeys(sql: Queryable, uses: ReadonlyArray<{ id: string; at: Date }>): Promise<number> {
  if (uses.length === 0) return 0;
  const ids = uses.map((u) => u.id);
  const ats = uses.map((u) => u.at.toISOString());
  const result = await sql`
    update api_keys k
    set last_used_at = t.at
    from unnest(${ids}::uuid[], ${ats}::timestamptz[]) as t(id, at)
    where k.id = t.id and (k.last_used_at is null or k.last_used_at < t.at)`;
  return result.count;
}
