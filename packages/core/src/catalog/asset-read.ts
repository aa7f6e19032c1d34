import { recordAudit, type AuditEntry } from '../audit/audit';
import type { Queryable } from '../db/sql';
import { ConflictError, ForbiddenError, NotFoundError, ValidationError } from '../errors';
import { ENVIRONMENTS, type Environment } from '../scopes';
import { readAssetValue, type AssetRead, type AssetValue } from './assets';
import { es } from '../messages/server-messages';

/**
 * Reading an asset's value with an API key: the environment policy, the order of its refusals and
 * the audit of credential reads, as docs/decisions/assets-read.md decides them.
 */

/** The API key reading, and the request it came with (for the audit row). */
export interface AssetReader {
  tenantId: string;
  keyId: string;
  /** null = every environment; an empty list reads none (fail-closed). */
  environments: readonly Environment[] | null;
  requestId?: string | null;
  ip?: string | null;
}

export interface AssetReadRequest {
  name: string;
  /** The `environment` the client asked for, as it came (undefined when absent). */
  environment: unknown;
  /**
   * The transport's remaining request checks (a 422 for unexpected parameters), run once the
   * asset is known to exist: the error order puts 404 before 422.
   */
  checkRequest?(): void;
}

export type AssetValueRead = AssetRead & { value: AssetValue };

const isEnvironment = (v: unknown): v is Environment => typeof v === 'string' && (ENVIRONMENTS as readonly string[]).includes(v);

/** The default when no environment is asked for; undefined when the key must choose. */
function defaultEnvironment(allowed: readonly Environment[]): Environment | undefined {
  if (allowed.includes('production')) return 'production';
  if (allowed.length === 1) return allowed[0];
  return undefined;
}

/** Existence only (no value read, nothing decrypted). */
async function activeAssetExists(sql: Queryable, tenantId: string, name: string): Promise<boolean> {
  const rows = await sql`select 1 from assets where tenant_id = ${tenantId} and name = ${name} and is_active`;
  return rows.length > 0;
}

/**
 * The value of an active asset for one environment, read with an API key. Refusals, in the
 * contract's order: 403 for an environment the key may not read (before any look-up, so it tells
 * nothing about the workspace) or a key that reads none; 404 for a missing, inactive or other
 * workspace's asset; then `checkRequest`'s 422; 422 when the key must choose an environment; 404
 * when the asset has no value there. A credential read writes its audit row (never the value)
 * before the value is returned: no audit row, no credential.
 */
export async function readAssetWithKey(
  sql: Queryable,
  encryptionKey: Buffer,
  reader: AssetReader,
  req: AssetReadRequest,
): Promise<AssetValueRead> {
  const allowed = reader.environments ?? ENVIRONMENTS;
  const asked = req.environment;
  if (isEnvironment(asked) && !allowed.includes(asked)) {
    throw new ForbiddenError(es.catalog.environmentDenied(asked), { environment: asked });
  }
  if (allowed.length === 0) throw new ForbiddenError(es.catalog.noEnvironment);

  const chosen = asked === undefined ? defaultEnvironment(allowed) : isEnvironment(asked) ? asked : undefined;
  if (!chosen) {
    if (!(await activeAssetExists(sql, reader.tenantId, req.name))) throw new NotFoundError();
    req.checkRequest?.();
    throw ValidationError.single(['query', 'environment'], es.catalog.environmentRequired(allowed.join(', ')), 'missing');
  }
  const read = await readAssetValue(sql, encryptionKey, reader.tenantId, req.name, chosen);
  req.checkRequest?.();
  if (read.value === null) throw new NotFoundError(es.catalog.assetHasNoValue(req.name, chosen));

  await auditCredentialRead(sql, read, { actorType: 'api_key', actorId: reader.keyId, source: 'api', requestId: reader.requestId ?? null, ip: reader.ip ?? null });
  return { ...read, value: read.value };
}

/** A credential's read is audited (who, which asset and environment; never the value) before the value leaves. */
async function auditCredentialRead(
  sql: Queryable,
  read: AssetRead,
  by: Pick<AuditEntry, 'actorType' | 'actorId' | 'source' | 'requestId' | 'ip'>,
  extra: Record<string, unknown> = {},
): Promise<void> {
  if (read.asset.type !== 'credential') return;
  await recordAudit(sql, {
    tenantId: read.asset.tenant_id,
    ...by,
    action: 'read_asset',
    resourceType: 'asset',
    resourceId: read.asset.id,
    details: { name: read.asset.name, type: read.asset.type, environment: read.environment, ...extra },
  });
}

/**
 * The value of an active asset of the machine's workspace, read by one of its runs over the
 * machine protocol (docs/decisions/agent-protocol.md): `production` unless the run asks for
 * another environment; 404 for a missing, inactive or other workspace's asset, or one without a
 * value there; 409 when the run is not its job's running attempt any more (stopped, timed out,
 * lost) or a stop was asked for it; 403 for an environment the machine may not read (its
 * `environments`, chosen like an API key's: production when allowed, else its only one). A credential read writes its audit row (actor: the machine,
 * with the job) before the value is returned.
 */
export async function readAssetForMachine(
  sql: Queryable,
  encryptionKey: Buffer,
  reader: { tenantId: string; machineId: string; jobId: string; attempt: number },
  name: string,
  asked?: Environment,
): Promise<AssetValueRead> {
  // only while the run is the job's own and running: not after a stop, a timeout or a loss
  const [run] = await sql<Array<{ status: string; stop_requested: boolean; environments: Environment[] | null }>>`
    select j.status, j.stop_requested, m.environments from jobs j join machines m on m.id = j.machine_id
     where j.id = ${reader.jobId} and j.attempt = ${reader.attempt} and j.machine_id = ${reader.machineId}`;
  if (run?.stop_requested) throw new ConflictError(es.jobs.stopRequested, { stop_requested: true });
  if (run?.status !== 'running') throw new ConflictError(es.jobs.staleAttempt);
  // the machine's environments, as an API key's: production unless the machine may not read it
  const allowed = run.environments ?? ENVIRONMENTS;
  if (asked && !allowed.includes(asked)) throw new ForbiddenError(es.catalog.machineEnvironmentDenied(asked), { environment: asked });
  const environment = asked ?? defaultEnvironment(allowed);
  if (!environment) throw ValidationError.single(['message', 'environment'], es.catalog.machineEnvironmentRequired(allowed.join(', ')), 'missing');
  const read = await readAssetValue(sql, encryptionKey, reader.tenantId, name, environment);
  if (read.value === null) throw new NotFoundError(es.catalog.assetHasNoValue(name, environment));
  await auditCredentialRead(sql, read, { actorType: 'machine', actorId: reader.machineId, source: 'agent' }, { job_id: reader.jobId });
  return { ...read, value: read.value };
}
