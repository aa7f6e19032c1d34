import {
  es, UnauthorizedError, ForbiddenError, hasScope, buildAllowList, checkIpEntry, ipAllowed, sha256Hex, API_KEY_PREFIX, type ApiKeyCredential, type Environment, type PlanFeature, type Scope,
} from '@svc/core';
import { apiKeyCacheLookups } from '@svc/core/observability';
import type { ApiDeps } from '../deps';
import type { ApiKeyPrincipal } from '../http/state';
import type { Guard } from '../http/guard';
import type { ApiKeyStore } from './api-key-store';
import type { AuthThrottle } from './throttle';

export type { ApiKeyStore } from './api-key-store';

/**
 * Step 1 of the key checks (docs/decisions/api-keys.md): the key exists, is active and has not expired (else 401). Missing,
 * unknown and revoked keys all answer `Credenciales inválidas`, so a caller learns nothing about
 * which keys exist; only a real, active key past its expiry is told `API key expirada`. A key not
 * in the cache is looked up only while the source address is within its failure budget (else
 * 429) and with a turn among the address's look-ups in flight; a refused key charges the address,
 * from the cache too (auth/throttle.ts).
 */
export function authenticateApiKey(store: ApiKeyStore, throttle: AuthThrottle): Guard {
  return (ctx) => {
    const presented = ctx.get('X-API-Key');
    // not shaped like one of our keys: no need to ask the store (or fill its negative cache)
    if (!presented || !presented.startsWith(API_KEY_PREFIX) || presented.length > 256) throw new UnauthorizedError();
    const hashHex = sha256Hex(presented);
    const ip = ctx.state.clientIp;
    const admit = (key: ApiKeyCredential | null): void => {
      if (!key || !key.is_active) throw new UnauthorizedError();
      if (key.expires_at && key.expires_at.getTime() <= Date.now()) throw new UnauthorizedError(es.auth.apiKeyExpired);
      store.touch(key.id);
      ctx.state.apiKey = principalOf(key, hashHex);
    };
    const cached = store.peek(hashHex);
    if (cached !== undefined) {
      cacheHits.inc();
      try {
        return admit(cached);
      } catch (err) {
        // refused from memory: no look-up to pay for, but a guess all the same
        throttle.failed(ip);
        throw err;
      }
    }
    cacheMisses.inc();
    // a key Postgres must be asked about: the address's failure budget answers first
    return throttle.beforeLookup(ip).then(async (address) => {
      try {
        admit(await store.lookup(hashHex));
        address.settle(true);
      } catch (err) {
        // a refused key charges the address; a failed look-up (Postgres away) does not
        address.settle(!(err instanceof UnauthorizedError));
        throw err;
      }
    });
  };
}

const cacheHits = apiKeyCacheLookups.labels({ result: 'hit' });
const cacheMisses = apiKeyCacheLookups.labels({ result: 'miss' });

/**
 * The caller a cached key row stands for, made once per row (the store hands out the same row
 * object while it caches it) and shared, read-only, by the requests that present that key.
 */
const principals = new WeakMap<ApiKeyCredential, Readonly<ApiKeyPrincipal>>();

function principalOf(key: ApiKeyCredential, keyHashHex: string): Readonly<ApiKeyPrincipal> {
  const known = principals.get(key);
  if (known && known.keyHashHex === keyHashHex) return known;
  const principal: Readonly<ApiKeyPrincipal> = Object.freeze({
    kind: 'api_key',
    keyId: key.id,
    tenantId: key.tenant_id,
    scopes: key.scopes ?? [],
    environments: (key.environments as Environment[] | null) ?? null,
    allowedIps: key.allowed_ips,
    keyHashHex,
  });
  principals.set(key, principal);
  return principal;
}

const allowLists = new Map<string, ReturnType<typeof buildAllowList>>();

/**
 * Step 2: the source IP is in allowed_ips when that list is set (else 403). Fail-closed: an
 * empty list (the API refuses to create one; only direct SQL could) admits no address.
 */
export function checkKeyIp(): Guard {
  return (ctx) => {
    const ips = ctx.state.apiKey?.allowedIps;
    if (ips) {
      const cacheKey = ips.join(',');
      let list = allowLists.get(cacheKey);
      if (!list) {
        // a malformed entry (possible only through direct SQL) matches nothing rather than failing
        list = buildAllowList(ips.filter((entry) => checkIpEntry(entry) === null));
        if (allowLists.size > 10_000) allowLists.clear();
        allowLists.set(cacheKey, list);
      }
      if (!ipAllowed(list, ctx.state.clientIp)) throw new ForbiddenError(es.auth.ipNotAllowed);
    }
  };
}

/** Step 3: the required scope is present; fail-closed (else 403). */
export function requireScope(scope: Scope): Guard {
  return (ctx) => {
    if (!hasScope(ctx.state.apiKey?.scopes, scope)) {
      throw new ForbiddenError(es.auth.missingScope(scope), { required_scope: scope });
    }
  };
}

/** The tenant's plan includes `feature` (else 403). */
export function requirePlanFeature(deps: ApiDeps, feature: PlanFeature): Guard {
  return async (ctx) => {
    await deps.engine.tenants.requireFeature(ctx.state.apiKey?.tenantId ?? ctx.state.user?.tenantId, feature);
  };
}
