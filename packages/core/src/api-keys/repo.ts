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

export async function findApiKeyByHash(sql: Queryable, hash: Buffer): Promise<ApiKeyRow | null> {
  const [row] = await sql<ApiKeyRow[]>`select * from api_keys where key_hash = ${hash}`;
  return row ?? null;
}
