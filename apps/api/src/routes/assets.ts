import { Type } from '@sinclair/typebox';
import { ENVIRONMENTS, type Environment } from '@svc/core';
import { ASSET_TYPES, Nullable, Uuid } from '@svc/core/schemas';
import { createRouter, type AppRouter } from '../http/router';
import { addRoute, type RouteContext } from '../http/route';
import { ok } from '../http/respond';

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

export function assetRoutes(rc: RouteContext): AppRouter {
  const router = createRouter();
  // explicit type arguments: inferring params and query together is too deep for tsc (TS2589)
  addRoute<typeof AssetReadParams, typeof AssetReadQuery, undefined>(
    router,
    rc,
    {
      method: 'get',
      path: '/assets/by-name/:name',
      operationId: 'readAsset',
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
      const read = await rc.deps.engine.catalog.assets.readWithKey(
        rc.deps.config.assetEncryptionKey,
        { tenantId: key.tenantId, keyId: key.keyId, environments: key.environments, requestId: ctx.state.requestId, ip: ctx.state.clientIp },
        { name: input.params().name, environment: ctx.query.environment, checkRequest: () => void input.query() },
      );
      ok(ctx, {
        id: read.asset.id,
        name: read.asset.name,
        type: read.asset.type,
        description: read.asset.description,
        environment: read.environment,
        value: read.value,
      });
    },
  );
  return router;
}
