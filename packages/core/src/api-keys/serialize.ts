import type { Environment } from '../scopes';
import type { ApiKeyRow } from './repo';
import type { ApiKeyResponse, ApiKeyWithSecretResponse } from './schemas';
import { iso } from '../validation/iso-date';

/** ApiKeyResponse: the only way an API key record leaves the system. Never includes the hash. */
export function toApiKeyResponse(row: ApiKeyRow): ApiKeyResponse {
  return {
    id: row.id,
    name: row.name,
    prefix: row.prefix,
    is_active: row.is_active,
    last_used_at: iso(row.last_used_at),
    expires_at: iso(row.expires_at),
    allowed_ips: row.allowed_ips,
    scopes: row.scopes,
    environments: row.environments as Environment[] | null,
    created_at: row.created_at.toISOString(),
  };
}

/** Creation and rotation only: the record plus the secret, shown this once. */
export function toApiKeyWithSecretResponse(row: ApiKeyRow, key: string): ApiKeyWithSecretResponse {
  return { ...toApiKeyResponse(row), key };
}
