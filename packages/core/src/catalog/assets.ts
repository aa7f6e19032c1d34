import { Type, type TSchema } from '@sinclair/typebox';
import { inTransaction, type Queryable } from '../db/sql';
import { NotFoundError } from '../errors';
import { ENVIRONMENTS, type Environment } from '../scopes';
import { decrypt, encrypt } from '../security/secret-box';
import { validate } from '../validation/validate';
import { ASSET_VALUE_SCHEMAS, AssetCreate, AssetUpdate, type AssetType, type CatalogListQuery } from './schemas';
import { iso } from '../validation/iso-date';
import { pageWindow, toPage, type Page } from './paging';
import { presentColumns, uniqueName } from './record-rules';

/**
 * Assets: named values with one value per environment (docs/decisions/assets.md).
 * Plain values live in asset_values.value; credentials are AES-256-GCM sealed into
 * asset_values.secret with aad `${asset_id}:${environment}`, so a sealed value copied to another
 * row or environment does not decrypt. The management views never carry a password.
 */
export interface AssetRow {
  id: string;
  tenant_id: string;
  name: string;
  type: AssetType;
  description: string | null;
  is_active: boolean;
  created_at: Date;
  updated_at: Date;
}

interface AssetValueRow {
  asset_id: string;
  environment: Environment;
  value: unknown;
  secret: Buffer | null;
}

export interface Credential {
  username: string;
  password: string;
}
/** A value as stored and as read by an agent or the public API: credentials decrypted. */
export type AssetValue = string | number | boolean | Credential;
/** A value as the management API shows it. */
export type AssetValueView = string | number | boolean | { username: string; has_password: boolean };

export interface AssetRecord extends AssetRow {
  values: Record<Environment, AssetValueView | null>;
}

export function toAssetResponse(record: AssetRecord) {
  return {
    id: record.id,
    tenant_id: record.tenant_id,
    name: record.name,
    type: record.type,
    description: record.description,
    is_active: record.is_active,
    values: { dev: record.values.dev, staging: record.values.staging, production: record.values.production },
    created_at: iso(record.created_at),
    updated_at: iso(record.updated_at),
  };
}

const aadFor = (assetId: string, environment: Environment) => `${assetId}:${environment}`;

function openCredential(key: Buffer, row: AssetValueRow): Credential {
  try {
    return JSON.parse(decrypt(key, row.secret!, aadFor(row.asset_id, row.environment))) as Credential;
  } catch (cause) {
    throw new Error(`Credential of asset ${row.asset_id} (${row.environment}) could not be decrypted: is ASSET_ENCRYPTION_KEY the one it was sealed with?`, { cause });
  }
}

function plainValue(key: Buffer, row: AssetValueRow): AssetValue {
  return row.secret ? openCredential(key, row) : (row.value as AssetValue);
}

function viewOf(key: Buffer, row: AssetValueRow): AssetValueView {
  if (!row.secret) return row.value as AssetValueView;
  const { username, password } = openCredential(key, row);
  return { username, has_password: typeof password === 'string' && password.length > 0 };
}

/** One compiled schema per asset type; `body → values → <environment>` paths in errors. */
const VALUES_BY_TYPE = Object.fromEntries(
  (Object.entries(ASSET_VALUE_SCHEMAS) as Array<[AssetType, TSchema]>).map(([type, schema]) => [
    type,
    Type.Object({
      values: Type.Object(
        { dev: Type.Optional(schema), staging: Type.Optional(schema), production: Type.Optional(schema) },
        { additionalProperties: false },
      ),
    }),
  ]),
) as unknown as Record<AssetType, TSchema>;

type ValuesInput = Partial<Record<Environment, unknown>>;

/** Checks each non-null value against the type; null entries (removals) need no check. */
function checkValues(type: AssetType, values: ValuesInput): void {
  const present: ValuesInput = {};
  for (const env of ENVIRONMENTS) if (values[env] !== undefined && values[env] !== null) present[env] = values[env];
  validate(VALUES_BY_TYPE[type], { values: present }, 'body');
}

async function writeValues(sql: Queryable, key: Buffer, asset: AssetRow, values: ValuesInput): Promise<void> {
  for (const env of ENVIRONMENTS) {
    const v = values[env];
    if (v === undefined) continue;
    if (v === null) {
      await sql`delete from asset_values where asset_id = ${asset.id} and environment = ${env}`;
      continue;
    }
    const secret = asset.type === 'credential' ? encrypt(key, JSON.stringify(v), aadFor(asset.id, env)) : null;
    const value = asset.type === 'credential' ? null : sql.json(v as never);
    await sql`
      insert into asset_values (asset_id, environment, value, secret)
      values (${asset.id}, ${env}, ${value}, ${secret})
      on conflict (asset_id, environment) do update set value = excluded.value, secret = excluded.secret, updated_at = now()`;
  }
}

async function withValues(sql: Queryable, key: Buffer, rows: AssetRow[]): Promise<AssetRecord[]> {
  if (rows.length === 0) return [];
  const valueRows = await sql<AssetValueRow[]>`
    select asset_id, environment, value, secret from asset_values where asset_id = any(${rows.map((r) => r.id)}::uuid[])`;
  const byAsset = new Map<string, AssetRecord['values']>(rows.map((r) => [r.id, { dev: null, staging: null, production: null }]));
  for (const v of valueRows) byAsset.get(v.asset_id)![v.environment] = viewOf(key, v);
  return rows.map((r) => ({ ...r, values: byAsset.get(r.id)! }));
}

export async function createAsset(sql: Queryable, key: Buffer, tenantId: string, input: unknown): Promise<AssetRecord> {
  const body = validate(AssetCreate, input);
  if (body.values) checkValues(body.type, body.values);
  const row = await uniqueName(sql, 'asset', body.name, (q) =>
    inTransaction(q, async (tx) => {
      const [asset] = await tx<AssetRow[]>`
        insert into assets (tenant_id, name, type, description, is_active)
        values (${tenantId}, ${body.name}, ${body.type}, ${body.description ?? null}, ${body.is_active ?? true})
        returning *`;
      await writeValues(tx, key, asset!, body.values ?? {});
      return asset!;
    }),
  );
  return (await withValues(sql, key, [row]))[0]!;
}

export async function findAsset(sql: Queryable, tenantId: string, id: string): Promise<AssetRow | null> {
  const [row] = await sql<AssetRow[]>`select * from assets where id = ${id} and tenant_id = ${tenantId}`;
  return row ?? null;
}

/** Another tenant's asset answers exactly like a missing one. */
export async function getAsset(sql: Queryable, key: Buffer, tenantId: string, id: string): Promise<AssetRecord> {
  const row = await findAsset(sql, tenantId, id);
  if (!row) throw new NotFoundError();
  return (await withValues(sql, key, [row]))[0]!;
}

export async function findAssetByName(sql: Queryable, key: Buffer, tenantId: string, name: string): Promise<AssetRecord | null> {
  const [row] = await sql<AssetRow[]>`select * from assets where tenant_id = ${tenantId} and name = ${name}`;
  return row ? (await withValues(sql, key, [row]))[0]! : null;
}

export async function listAssets(sql: Queryable, key: Buffer, tenantId: string, query: Partial<CatalogListQuery> = {}): Promise<Page<AssetRecord>> {
  const { page, limit, offset } = pageWindow(query);
  const active = query.is_active ?? null;
  const where = sql`tenant_id = ${tenantId} and (${active}::boolean is null or is_active = ${active})`;
  const [rows, [count]] = await Promise.all([
    sql<AssetRow[]>`select * from assets where ${where} order by name, id limit ${limit} offset ${offset}`,
    sql<{ total: number }[]>`select count(*)::int as total from assets where ${where}`,
  ]);
  return toPage(await withValues(sql, key, rows), page, limit, count!.total);
}

/**
 * Partial update. `values` merges per environment (a value sets it, null removes it, an absent
 * environment is kept); when `type` changes, environments not given in the same patch are
 * removed, since their values were of the old type.
 */
export async function updateAsset(sql: Queryable, key: Buffer, tenantId: string, id: string, patch: unknown): Promise<AssetRecord> {
  const body = validate(AssetUpdate, patch);
  const row = await uniqueName(sql, 'asset', body.name, (q) =>
    inTransaction(q, async (tx) => {
      const [current] = await tx<AssetRow[]>`select * from assets where id = ${id} and tenant_id = ${tenantId} for update`;
      if (!current) throw new NotFoundError();
      const type = body.type ?? current.type;
      const values: ValuesInput = { ...(body.values ?? {}) };
      checkValues(type, values);
      if (type !== current.type) for (const env of ENVIRONMENTS) if (values[env] === undefined) values[env] = null;
      const cols = presentColumns(body, ['name', 'type', 'description', 'is_active']);
      const [updated] = Object.keys(cols).length
        ? await tx<AssetRow[]>`update assets set ${tx(cols)}, updated_at = now() where id = ${id} returning *`
        : await tx<AssetRow[]>`update assets set updated_at = now() where id = ${id} returning *`;
      await writeValues(tx, key, updated!, values);
      return updated!;
    }),
  );
  return (await withValues(sql, key, [row]))[0]!;
}

/** An inactive asset keeps its values but is no longer readable through readAssetValue. */
export async function deactivateAsset(sql: Queryable, key: Buffer, tenantId: string, id: string): Promise<AssetRecord> {
  const [row] = await sql<AssetRow[]>`
    update assets set is_active = false, updated_at = now()
    where id = ${id} and tenant_id = ${tenantId} returning *`;
  if (!row) throw new NotFoundError();
  return (await withValues(sql, key, [row]))[0]!;
}

/**
 * An asset's stored credentials, decrypted, per environment: for comparing desired values with
 * what is stored (`svc apply`), never for showing. Reads of a value go through readAssetValue.
 */
export async function readStoredCredentials(sql: Queryable, key: Buffer, assetId: string): Promise<Map<Environment, Credential>> {
  const rows = await sql<AssetValueRow[]>`
    select asset_id, environment, value, secret from asset_values where asset_id = ${assetId} and secret is not null`;
  return new Map(rows.map((r) => [r.environment, openCredential(key, r)]));
}

export interface AssetRead {
  asset: AssetRow;
  environment: Environment;
  /** null when the asset has no value for that environment. */
  value: AssetValue | null;
}

/**
 * The value of an active asset of the tenant for one environment, credentials decrypted.
 * The only place a credential password leaves its ciphertext; callers audit the read.
 * Missing, inactive or another tenant's asset → NotFoundError.
 */
export async function readAssetValue(sql: Queryable, key: Buffer, tenantId: string, name: string, environment: Environment): Promise<AssetRead> {
  const [row] = await sql<(AssetRow & { v_asset_id: string | null; v_value: unknown; v_secret: Buffer | null })[]>`
    select a.*, v.asset_id as v_asset_id, v.value as v_value, v.secret as v_secret
    from assets a left join asset_values v on v.asset_id = a.id and v.environment = ${environment}
    where a.tenant_id = ${tenantId} and a.name = ${name} and a.is_active`;
  if (!row) throw new NotFoundError();
  const { v_asset_id, v_value, v_secret, ...asset } = row;
  const value = v_asset_id ? plainValue(key, { asset_id: asset.id, environment, value: v_value, secret: v_secret }) : null;
  return { asset, environment, value };
}
