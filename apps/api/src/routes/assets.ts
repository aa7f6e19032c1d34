import { Type } from '@sinclair/typebox';
import {
  ASSET_TYPES, ENVIRONMENTS, ForbiddenError, NotFoundError, Nullable, Uuid, ValidationError, readAssetValue, recordAudit,
  type Environment, type Queryable,
} from '@svc/core';
import { createRouter, type AppRouter } from '../http/router';
import { addRoute, type RouteContext } from '../http/route';
import { ok } from '../http/respond';
import type { ApiKeyPrincipal } from '../http/state';

/** Rules: docs/decisions/assets-read.md. */
const EnvironmentSchema = Type.Unsafe<Environment>({
  type: 'string',
  enum: [...ENVIRONMENTS],
  description:
    'Environment to read. Default: production when the key may read it; else the key\'s only environment; ' +
    'a key limited to several non-production environments must choose (422).',
});

export const AssetReadParams = Type.Object({ name: Type.String({ minLength: 1, description: 'Asset name (unique per workspace)' }) });
export const AssetReadQuery = Type.Object({ environment: Type.Optional(EnvironmentSchema) }, { additionalProperties: false });

export const CredentialValue = Type.Object(
  { username: Type.String(), password: Type.String() },
  { title: 'CredentialValue', description: 'Credential, decrypted' },
);
export const AssetReadResponse = Type.Object(
  {
    id: Uuid(),
    name: Type.String(),
    type: Type.Unsafe<(typeof ASSET_TYPES)[number]>({ type: 'string', enum: [...ASSET_TYPES] }),
    description: Nullable(Type.String()),
    environment: EnvironmentSchema,
    value: Type.Union([Type.String(), Type.Integer(), Type.Boolean(), CredentialValue], {
      description: 'text → string, integer → integer, boolean → boolean, credential → {username, password}',
    }),
  },
  { title: 'AssetValueResponse' },
);

const isEnvironment = (v: unknown): v is Environment => typeof v === 'string' && (ENVIRONMENTS as readonly string[]).includes(v);

/** The environments a key may read: null = all; an empty list reads none (fail-closed). */
function readable(key: ApiKeyPrincipal): readonly Environment[] {
  return key.environments ?? ENVIRONMENTS;
}

function forbiddenEnvironment(env: Environment): ForbiddenError {
  return new ForbiddenError(`La API key no tiene acceso al entorno ${env}`, { environment: env });
}

/** The default when `environment` is absent; undefined when the key must choose. */
function defaultEnvironment(allowed: readonly Environment[]): Environment | undefined {
  if (allowed.includes('production')) return 'production';
  if (allowed.length === 1) return allowed[0];
  return undefined;
}

/** Existence only (no value read, nothing decrypted): for the 404-before-422 order when the query is invalid. */
async function activeAssetExists(sql: Queryable, tenantId: string, name: string): Promise<boolean> {
  const rows = await sql`select 1 from assets where tenant_id = ${tenantId} and name = ${name} and is_active`;
  return rows.length > 0;
}

export function assetRoutes(rc: RouteContext): AppRouter {
  const router = createRouter();
  // explicit type arguments: inferring params and query together is too deep for tsc (TS2589)
  addRoute<typeof AssetReadParams, typeof AssetReadQuery, undefined>(
    router,
    rc,
    {
      method: 'get',
      path: '/assets/by-name/:name',
      summary: 'Read an asset value by name',
      description:
        'The value of an active asset for one environment (query `environment`; see its default). A key limited to ' +
        'other environments gets 403 `La API key no tiene acceso al entorno <env>` before existence is checked. ' +
        'Credentials come back decrypted as `{username, password}`, and each credential read is written to the ' +
        'audit log (action `read_asset`, source `api`, never the value). An asset without a value for the ' +
        'environment answers 404.',
      tags: ['assets'],
      auth: { kind: 'api_key', scope: 'assets:read' },
      params: AssetReadParams,
      query: AssetReadQuery,
      response: AssetReadResponse,
      errors: [404],
    },
    async (ctx, input) => {
      const key = ctx.state.apiKey!;
      const allowed = readable(key);
      const { name } = input.params();
      const raw = ctx.query.environment;

      // 403: permissions before existence (401 → 429 → 403 → 404 → 422)
      if (isEnvironment(raw) && !allowed.includes(raw)) throw forbiddenEnvironment(raw);
      if (allowed.length === 0) throw new ForbiddenError('La API key no tiene acceso a ningún entorno');

      const chosen = raw === undefined ? defaultEnvironment(allowed) : isEnvironment(raw) ? raw : undefined;
      if (!chosen) {
        // 404 before 422: an unknown asset is reported as such even when the query is wrong too
        if (!(await activeAssetExists(rc.deps.sql, key.tenantId, name))) throw new NotFoundError();
        input.query(); // 422 for an invalid or unexpected parameter
        throw ValidationError.single(
          ['query', 'environment'],
          `Indica el entorno: la API key puede leer ${allowed.join(', ')}`,
          'missing',
        );
      }
      const read = await readAssetValue(rc.deps.sql, rc.deps.config.assetEncryptionKey, key.tenantId, name, chosen);
      input.query(); // the asset exists: now unexpected parameters are a 422
      if (read.value === null) throw new NotFoundError(`El asset ${name} no tiene valor en el entorno ${chosen}`);

      if (read.asset.type === 'credential') {
        // audited before the value leaves: no audit row, no credential
        await recordAudit(rc.deps.sql, {
          tenantId: key.tenantId,
          actorType: 'api_key',
          actorId: key.keyId,
          action: 'read_asset',
          source: 'api',
          resourceType: 'asset',
          resourceId: read.asset.id,
          details: { name: read.asset.name, type: read.asset.type, environment: chosen },
          requestId: ctx.state.requestId,
          ip: ctx.state.clientIp,
        });
      }
      ok(ctx, {
        id: read.asset.id,
        name: read.asset.name,
        type: read.asset.type,
        description: read.asset.description,
        environment: chosen,
        value: read.value,
      });
    },
  );
  return router;
}
