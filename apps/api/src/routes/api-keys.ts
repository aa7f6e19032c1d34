import { Type } from '@sinclair/typebox';
import { availableScopes, type ApiKeyActor } from '@svc/core';
import {
  ApiKeyIdParams, ApiKeyListQuery, ApiKeyResponse, ApiKeyWithSecretResponse, AvailableScopeResponse, CreateApiKeyBody,
} from '@svc/core/schemas';
import type { AppRouter } from '../http/router';
import { routeGroup, type RouteContext } from '../http/route';
import { ok, paged } from '../http/respond';
import type { AppState } from '../http/state';

const ADMIN = { kind: 'user', admin: true } as const;
const TAGS = ['api-keys'];

function actor(state: AppState): ApiKeyActor {
  const user = state.user!;
  return { tenantId: user.tenantId, userId: user.userId, source: 'api', requestId: state.requestId, ip: state.clientIp };
}

/**
 * API key management: admin role, Bearer access token. Success statuses the
 * contract leaves open: 201 for creation, 200 for everything else (docs/decisions/api-keys.md).
 * The static `available-scopes` path is declared before the `:key_id` ones.
 */
export function apiKeyRoutes(rc: RouteContext): AppRouter {
  const { router, add } = routeGroup(rc, { tags: TAGS, auth: ADMIN });
  const { keys } = rc.deps.engine;

  add(
    {
      method: 'get',
      path: '/settings/api-keys/available-scopes',
      operationId: 'listApiKeyScopes',
      summary: 'The catalogue of scopes a key may carry',
      description: 'Each scope with its description and group.',
      response: Type.Array(AvailableScopeResponse),
    },
    (ctx) => ok(ctx, availableScopes()),
  );

  add(
    {
      method: 'post',
      path: '/settings/api-keys',
      operationId: 'createApiKey',
      summary: 'Create an API key',
      description:
        'Returns the record with the full secret in `key`, shown this once (only its SHA-256 is stored). ' +
        'Unknown body fields, a name under 2 characters, no scope or an unknown one, an environment other than ' +
        'dev/staging/production, an invalid IP or CIDR range, or an expiry not in the future → 422. Audited as `create_api_key`.',
      body: CreateApiKeyBody,
      response: ApiKeyWithSecretResponse,
      successStatus: 201,
      errors: [422],
    },
    async (ctx, input) => {
      ok(ctx, await keys.create(actor(ctx.state), input.body()), 201);
    },
  );

  add(
    {
      method: 'get',
      path: '/settings/api-keys',
      operationId: 'listWorkspaceApiKeys',
      summary: 'List the API keys of the workspace',
      description: 'Newest first, revoked keys included (`is_active` false). Never returns a secret.',
      query: ApiKeyListQuery,
      response: ApiKeyResponse,
      paged: true,
      errors: [422],
    },
    async (ctx, input) => {
      const { data, meta } = await keys.list(ctx.state.user!.tenantId, input.query());
      paged(ctx, data, meta);
    },
  );

  add(
    {
      method: 'post',
      path: '/settings/api-keys/:key_id/rotate',
      operationId: 'rotateApiKey',
      summary: 'Issue a new secret for a key',
      description:
        'Same record (id, name, scopes, IPs, environments, expiry); the old value stops working at once on every ' +
        'API process. Returns the new secret in `key`, once. A revoked key cannot be rotated (409). Audited as `rotate_api_key`.',
      params: ApiKeyIdParams,
      response: ApiKeyWithSecretResponse,
      errors: [404, 409, 422],
    },
    async (ctx, input) => {
      ok(ctx, await keys.rotate(actor(ctx.state), input.params().key_id));
    },
  );

  add(
    {
      method: 'delete',
      path: '/settings/api-keys/:key_id',
      operationId: 'revokeApiKey',
      summary: 'Revoke a key permanently',
      description:
        'Sets `is_active` false; the key stops working at once on every API process. Returns the record. ' +
        'Revoking a revoked key answers the record again. Audited as `revoke_api_key`.',
      params: ApiKeyIdParams,
      response: ApiKeyResponse,
      errors: [404, 422],
    },
    async (ctx, input) => {
      ok(ctx, await keys.revoke(actor(ctx.state), input.params().key_id));
    },
  );

  return router;
}
