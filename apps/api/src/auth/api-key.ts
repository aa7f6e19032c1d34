import type { Middleware } from 'koa';
import {
  UnauthorizedError, ForbiddenError, findApiKeyByHash, findTenant, hasScope, buildAllowList, ipAllowed, sha256,
  type ApiKeyRow, type Environment, type PlanFeature, type Scope,
} from '@svc/core';
import type { ApiDeps } from '../deps';
import type { AppState } from '../http/state';

/** Looks API keys up by hash. (Caching and last_used_at buffering live behind this seam.) */
export interface ApiKeyStore {
  lookup(hash: Buffer): Promise<ApiKeyRow | null>;
  /** Records a use of the key; last_used_at must become visible within a second. */
  touch(keyId: string): void;
}

export function sqlApiKeyStore(deps: ApiDeps): ApiKeyStore {
  return {
    lookup: (hash) => findApiKeyByHash(deps.sql, hash),
    touch: (keyId) => {
      void deps.sql`update api_keys set last_used_at = now() where id = ${keyId}`.catch((err) =>
        deps.logger.warn('last_used_at update failed', { err: err.message }),
      );
    },
  };
}

/** Step 1 of contract 5.1.4: the key exists, is active and has not expired (else 401). */
export function authenticateApiKey(store: ApiKeyStore): Middleware<AppState> {
  return async (ctx, next) => {
    const presented = ctx.get('X-API-Key');
    if (!presented) throw new UnauthorizedError();
    const hash = sha256(presented);
    const key = await store.lookup(hash);
    if (!key || !key.is_active) throw new UnauthorizedError();
    if (key.expires_at && key.expires_at.getTime() <= Date.now()) throw new UnauthorizedError('API key expirada');
    store.touch(key.id);
    ctx.state.apiKey = {
      kind: 'api_key',
      keyId: key.id,
      tenantId: key.tenant_id,
      scopes: key.scopes ?? [],
      environments: (key.environments as Environment[] | null) ?? null,
      allowedIps: key.allowed_ips,
      keyHashHex: hash.toString('hex'),
    };
    await next();
  };
}

const allowLists = new Map<string, ReturnType<typeof buildAllowList>>();

/** Step 2: the source IP is in allowed_ips when that list is set (else 403). */
export function checkKeyIp(): Middleware<AppState> {
  return async (ctx, next) => {
    const ips = ctx.state.apiKey?.allowedIps;
    if (ips && ips.length > 0) {
      const cacheKey = ips.join(',');
      let list = allowLists.get(cacheKey);
      if (!list) {
        list = buildAllowList(ips);
        if (allowLists.size > 10_000) allowLists.clear();
        allowLists.set(cacheKey, list);
      }
      if (!ipAllowed(list, ctx.state.clientIp)) throw new ForbiddenError('IP no autorizada');
    }
    await next();
  };
}

/** Step 3: the required scope is present; fail-closed (else 403). */
export function requireScope(scope: Scope): Middleware<AppState> {
  return async (ctx, next) => {
    if (!hasScope(ctx.state.apiKey?.scopes, scope)) {
      throw new ForbiddenError(`La API key no tiene el scope requerido: ${scope}`, { required_scope: scope });
    }
    await next();
  };
}

/** The tenant's plan includes `feature` (else 403). */
export function requirePlanFeature(deps: ApiDeps, feature: PlanFeature): Middleware<AppState> {
  return async (ctx, next) => {
    const tenantId = ctx.state.apiKey?.tenantId ?? ctx.state.user?.tenantId;
    const tenant = tenantId ? await findTenant(deps.sql, tenantId) : null;
    if (!tenant || !tenant.plan_features.includes(feature)) {
      throw new ForbiddenError(`El plan no incluye la funcionalidad ${feature}`, { feature });
    }
    await next();
  };
}
