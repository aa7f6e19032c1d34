import type { Sql } from '../db/sql';
import { ConflictError, NotFoundError, ValidationError, type FieldIssue } from '../errors';
import { recordAudit } from '../audit/audit';
import { API_KEY_PREFIX, issueSecret } from '../security/secrets';
import { checkIpEntry } from '../security/ip-allow';
import { SCOPES } from '../scopes';
import { validate } from '../validation/validate';
import { pageMeta, type PageMeta } from '../validation/formats';
import { deactivateApiKey, findApiKey, insertApiKey, listApiKeyRows, replaceApiKeySecret, type ApiKeyRow } from './repo';
import { CreateApiKeyBody, type ApiKeyResponse, type ApiKeyWithSecretResponse, type CreateApiKeyInput } from './schemas';
import { toApiKeyResponse, toApiKeyWithSecretResponse } from './serialize';
import type { ApiKeyChangeListener } from './invalidation';
import { es } from '../messages/server-messages';

/**
 * API key management (docs/decisions/api-keys.md). Each change is one transaction with its audit row; the
 * secret exists in clear only in the value returned by create and rotate (never stored, never
 * audited). After a change commits, `listener` is told so every API process drops its cache.
 */

/** Who is acting, for the audit log. `userId` null = an operator through the CLI. */
export interface ApiKeyActor {
  tenantId: string;
  userId: string | null;
  /** Where the change came from: `api` (settings endpoints) or `cli`. */
  source: string;
  requestId?: string | null;
  ip?: string | null;
}

function audit(actor: ApiKeyActor, action: string, row: ApiKeyRow, details: Record<string, unknown>) {
  return {
    tenantId: actor.tenantId,
    actorType: actor.userId ? ('user' as const) : ('system' as const),
    actorId: actor.userId,
    action,
    source: actor.source,
    resourceType: 'api_key',
    resourceId: row.id,
    details: { name: row.name, ...details },
    requestId: actor.requestId ?? null,
    ip: actor.ip ?? null,
  };
}

/** The rules a schema cannot state: a trimmed name, IP/CIDR syntax, an expiry in the future. */
function checkCreateRules(input: CreateApiKeyInput, now: Date): FieldIssue[] {
  const issues: FieldIssue[] = [];
  const issue = (loc: Array<string | number>, message: string, type: string) =>
    issues.push({ field: loc.join(' → '), message, loc, type });
  if (input.name.trim().length < 2) issue(['body', 'name'], es.auth.nameTooShort, 'min_length');
  input.allowed_ips?.forEach((entry, i) => {
    const why = checkIpEntry(entry);
    if (why) issue(['body', 'allowed_ips', i], why, 'ip_address');
  });
  if (input.expires_at && new Date(input.expires_at).getTime() <= now.getTime()) {
    issue(['body', 'expires_at'], es.auth.mustBeFutureDate, 'future_datetime');
  }
  return issues;
}

/** Validates the whole creation body (schema, then the rules above); 422 lists every problem. */
export function parseCreateApiKey(body: unknown, now = new Date()): CreateApiKeyInput {
  const input = validate(CreateApiKeyBody, body, 'body');
  const issues = checkCreateRules(input, now);
  if (issues.length > 0) throw new ValidationError(issues);
  return input;
}

export async function createApiKey(
  sql: Sql,
  listener: ApiKeyChangeListener,
  actor: ApiKeyActor,
  body: unknown,
): Promise<ApiKeyWithSecretResponse> {
  const input = parseCreateApiKey(body);
  const secret = issueSecret(API_KEY_PREFIX);
  const row = await sql.begin(async (tx) => {
    const created = await insertApiKey(tx, {
      tenantId: actor.tenantId,
      name: input.name.trim(),
      prefix: secret.prefix,
      keyHash: secret.hash,
      scopes: [...new Set(input.scopes)],
      environments: input.environments ?? null,
      allowedIps: input.allowed_ips ?? null,
      expiresAt: input.expires_at ? new Date(input.expires_at) : null,
      createdBy: actor.userId,
    });
    await recordAudit(
      tx,
      audit(actor, 'create_api_key', created, {
        prefix: created.prefix,
        scopes: created.scopes,
        environments: created.environments,
        allowed_ips: created.allowed_ips,
        expires_at: created.expires_at?.toISOString() ?? null,
      }),
    );
    return created;
  });
  // a process may have cached "no such key" for this hash; vanishingly unlikely, but cheap to clear
  await listener.invalidate({ id: row.id, hashes: [secret.hash.toString('hex')] });
  return toApiKeyWithSecretResponse(row, secret.value);
}

export async function rotateApiKey(
  sql: Sql,
  listener: ApiKeyChangeListener,
  actor: ApiKeyActor,
  keyId: string,
): Promise<ApiKeyWithSecretResponse> {
  const secret = issueSecret(API_KEY_PREFIX);
  const result = await sql.begin(async (tx) => {
    const replaced = await replaceApiKeySecret(tx, actor.tenantId, keyId, secret);
    if (!replaced) return null;
    await recordAudit(
      tx,
      audit(actor, 'rotate_api_key', replaced.row, { prefix: replaced.row.prefix }),
    );
    return replaced;
  });
  if (!result) {
    const existing = await findApiKey(sql, actor.tenantId, keyId);
    if (!existing) throw new NotFoundError();
    throw new ConflictError(es.auth.apiKeyRevokedCannotRotate);
  }
  await listener.invalidate({ id: keyId, hashes: [result.oldHash.toString('hex'), secret.hash.toString('hex')] });
  return toApiKeyWithSecretResponse(result.row, secret.value);
}

/** Idempotent: revoking a revoked key answers its record again (no second audit row). */
export async function revokeApiKey(
  sql: Sql,
  listener: ApiKeyChangeListener,
  actor: ApiKeyActor,
  keyId: string,
): Promise<ApiKeyResponse> {
  const row = await sql.begin(async (tx) => {
    const revoked = await deactivateApiKey(tx, actor.tenantId, keyId);
    if (revoked) await recordAudit(tx, audit(actor, 'revoke_api_key', revoked, { prefix: revoked.prefix }));
    return revoked;
  });
  if (!row) {
    const existing = await findApiKey(sql, actor.tenantId, keyId);
    if (!existing) throw new NotFoundError();
    return toApiKeyResponse(existing);
  }
  await listener.invalidate({ id: keyId, hashes: [row.key_hash.toString('hex')] });
  return toApiKeyResponse(row);
}

export async function listApiKeys(
  sql: Sql,
  tenantId: string,
  query: { page: number; limit: number },
): Promise<{ data: ApiKeyResponse[]; meta: PageMeta }> {
  const { rows, total } = await listApiKeyRows(sql, tenantId, { limit: query.limit, offset: (query.page - 1) * query.limit });
  return { data: rows.map(toApiKeyResponse), meta: pageMeta(query.page, query.limit, total) };
}

/** `available-scopes`: the scope catalogue (scope, description, group). */
export function availableScopes(): Array<{ scope: string; description: string; group: string }> {
  return SCOPES.map((s) => ({ scope: s.scope, description: s.description, group: s.group }));
}
